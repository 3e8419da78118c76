"""Simplifying passes over programs: each takes a Program and returns one."""
from __future__ import annotations

from .program import Program


def dead_code_elimination(program: Program) -> Program:
    """Drop instructions none of whose outputs reach a program output."""
    live = {v.id for v in program.outputs}
    kept = []
    for ins in reversed(program.instrs):
        if any(v.id in live for v in ins.outputs):
            kept.append(ins)
            live.update(v.id for v in ins.inputs)
    kept.reverse()
    return Program(program.inputs, kept, program.outputs)


def common_subexpression_elimination(program: Program) -> Program:
    """Merge instructions with the same op, inputs and attributes."""
    seen: dict = {}
    alias: dict = {}
    out_instrs = []
    for ins in program.instrs:
        inputs = tuple(alias.get(v.id, v) for v in ins.inputs)
        key = (ins.op, tuple(v.id for v in inputs), ins.attrs)
        try:
            hash(key)
        except TypeError:
            key = None
        if key is not None and key in seen:
            for old, new in zip(ins.outputs, seen[key].outputs):
                alias[old.id] = new
            continue
        if inputs != ins.inputs:
            ins = type(ins)(ins.op, inputs, ins.outputs, ins.attrs, ins.loc)
        if key is not None:
            seen[key] = ins
        out_instrs.append(ins)
    outputs = [alias.get(v.id, v) for v in program.outputs]
    return Program(program.inputs, out_instrs, outputs)


def simplify(program: Program) -> Program:
    """CSE then DCE."""
    return dead_code_elimination(common_subexpression_elimination(program))
