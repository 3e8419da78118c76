"""Rewrite ops that have a `decompose` rule (composites: mean, norm, softmax, ...;
any other op may declare one too) into simpler ops.

Each `decompose` rule emits the same computation in elementwise, reduce and
movement ops, which the scheduler knows how to fuse.
A rule that returns None (say, `norm` with p=3) leaves the instruction in
place; the scheduler then runs it with its reference implementation.
"""
from __future__ import annotations

from fusegrad.ir import Builder, Emitter, Instr, Program
from fusegrad.ir.ops import OPS


def decompose_composites(program: Program) -> Program:
    """A program equal to `program` with every decomposable composite op expanded.

    Outputs keep their positions; values defined by a decomposed instruction
    are replaced by the values its rule returns (rules may emit composites
    again, which are expanded in turn).
    """
    if not any(OPS[ins.op].decompose is not None for ins in program.instrs):
        return program
    alias: dict[int, object] = {}

    def resolve(v):
        # A rule's result may itself be the output of a composite expanded later: follow the chain.
        while v.id in alias:
            v = alias[v.id]
        return v

    out = Program(program.inputs, [], [])
    pending = list(reversed(program.instrs))   # a stack, so expansions run next, in order
    while pending:
        ins = pending.pop()
        inputs = tuple(resolve(v) for v in ins.inputs)
        opdef = OPS[ins.op]
        # An empty operand stays composite: the reference handles it (softmax of
        # nothing is nothing; its decomposition's max of nothing would raise).
        if opdef.decompose is not None and all(v.type.numel for v in inputs):
            scratch = Program()
            results = opdef.decompose(Emitter(Builder(scratch), ins.loc), list(inputs), dict(ins.attrs))
            if results is not None and [r.type for r in results] == [v.type for v in ins.outputs]:
                for old, new in zip(ins.outputs, results):
                    alias[old.id] = new
                pending.extend(reversed(scratch.instrs))
                continue
        if inputs != ins.inputs:
            ins = Instr(ins.op, inputs, ins.outputs, ins.attrs, ins.loc)
        out.instrs.append(ins)
    out.outputs = [resolve(v) for v in program.outputs]
    return out
