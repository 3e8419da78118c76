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
for such arguments, and an op with `extra["sign"]` says, from what is known of its operands,
when its result is at most 0 (-1) or at least 0 (1) everywhere, NaN aside: sub for
`x - amax(x, keepdim=True)`, neg of a value at least 0, mul of a value by itself or of two
values of known signs, and abs, relu, sqrt and exp, never negative. So `exp(-(x * x))`
(a Gaussian) and `exp(-abs(x))` (log-sigmoid, BCE with logits) take the form too. Nothing
else changes: the form's reference is the op's own, so a step run by reference gives the
same values.
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
    signs: dict = {}            # value id -> -1 (at most 0) or 1 (at least 0), where known

    def sign_of(v):
        return signs.get(v.id)
    instrs, changed = [], False
    for ins in program.instrs:
        form = OPS[ins.op].extra.get("nonpositive_form")
        if form is not None and sign_of(ins.inputs[0]) == -1:
            ins = Instr(form, ins.inputs, ins.outputs, ins.attrs, ins.loc)
            changed = True
        instrs.append(ins)
        rule = OPS[ins.op].extra.get("sign")
        if rule is not None and ins.outputs[0].dtype.is_floating_point:
            sign = rule(ins, sign_of, producer)
            if sign:
                signs[ins.outputs[0].id] = sign
        for v in ins.outputs:
            producer[v.id] = ins
    return Program(program.inputs, instrs, list(program.outputs)) if changed else program

