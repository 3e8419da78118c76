"""Checks a program's SSA invariants: inputs and instruction outputs defined
once, every use after its definition (or a declared free value), and every
annotated type equal to what the op's rule recomputes."""
from __future__ import annotations

from .ops import OPS
from .program import Program


class VerifyError(AssertionError):
    """A program broke an IR invariant (a compiler bug, never a user error)."""


def verify(program: Program, free=()) -> None:
    """Raise VerifyError if `program` is malformed; `free` are values bound from outside."""
    defined = {v.id for v in free}
    for v in program.inputs:
        if v.id in defined:
            raise VerifyError(f"input {v} defined twice")
        defined.add(v.id)
    for k, ins in enumerate(program.instrs):
        if ins.op not in OPS:
            raise VerifyError(f"instruction {k}: unknown op {ins.op!r}")
        for v in ins.inputs:
            if v.id not in defined:
                raise VerifyError(f"instruction {k} ({ins.op}) uses {v} before its definition")
        expect = OPS[ins.op].infer([v.type for v in ins.inputs], dict(ins.attrs))
        got = [v.type for v in ins.outputs]
        if list(expect) != got:
            raise VerifyError(f"instruction {k} ({ins.op}): annotated {got}, rule gives {list(expect)}")
        for v in ins.outputs:
            if v.id in defined:
                raise VerifyError(f"instruction {k} ({ins.op}) redefines {v}")
            defined.add(v.id)
    for v in program.outputs:
        if v.id not in defined:
            raise VerifyError(f"output {v} is never defined")


def free_values(program: Program) -> list:
    """Values the program reads but neither takes as input nor defines."""
    defined = {v.id for v in program.inputs}
    free, seen = [], set()
    for ins in program.instrs:
        for v in ins.inputs:
            if v.id not in defined and v.id not in seen:
                seen.add(v.id)
                free.append(v)
        defined.update(v.id for v in ins.outputs)
    for v in program.outputs:
        if v.id not in defined and v.id not in seen:
            seen.add(v.id)
            free.append(v)
    return free
