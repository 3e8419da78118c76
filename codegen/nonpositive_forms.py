"""Cheaper forms of ops whose argument is known to be at most 0.

Softmax, log_softmax, logsumexp and cross-entropy decompose into `exp(x - amax(x))`: the
argument is never positive, and vmath's `fg_exp_small` gives `fg_exp`'s bits there with
less work (its 2**k scaling needs one built factor, not two; tested bit for bit over every
float32 up to 43, its domain). This pass, run by the scheduler after decomposition,
rewrites such an op into the form its op table entry names:

    m = amax[axes=(1,) keepdim=True] x          m = amax[axes=(1,) keepdim=True] x
    d = sub x m                          ->     d = sub x m
    e = exp d                                   e = exp_small d

The op table states both sides: an op with `extra["nonpositive_form"]` (exp) has a form
for such arguments, and an op with `extra["at_most_zero"]` (sub) says, from its operands'
producers, when its result is at most 0 (or NaN) everywhere. Nothing else changes: the
reference of the form is the op's own, so a step run by reference gives the same values.
"""
from __future__ import annotations

from fusegrad.ir import Instr, Program
from fusegrad.ir.ops import OPS


def nonpositive_forms(program: Program) -> Program:
    """`program` with each op that has a nonpositive form, applied to a value known to be at
    most 0, replaced by that form (the same program object when there is none)."""
    if not any("nonpositive_form" in OPS[ins.op].extra for ins in program.instrs):
        return program
    producer: dict = {}
    instrs, changed = [], False
    for ins in program.instrs:
        form = OPS[ins.op].extra.get("nonpositive_form")
        if form is not None and _at_most_zero(ins.inputs[0], producer):
            ins = Instr(form, ins.inputs, ins.outputs, ins.attrs, ins.loc)
            changed = True
        instrs.append(ins)
        for v in ins.outputs:
            producer[v.id] = ins
    return Program(program.inputs, instrs, list(program.outputs)) if changed else program


def _at_most_zero(v, producer: dict) -> bool:
    """Whether every element of value `v` is known to be <= 0 or NaN (its producer's rule)."""
    ins = producer.get(v.id)
    if ins is None:
        return False
    rule = OPS[ins.op].extra.get("at_most_zero")
    return rule is not None and rule(ins, producer)
