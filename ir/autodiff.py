"""Reverse mode: emit the backward of a list of forward instructions as IR.

Only instructions on a path from a `wrt` value to an output are
differentiated (a subgraph that needs no gradient costs nothing), VJPs are
applied in reverse order, fan-out is summed, and each gradient is brought to
its input's shape by `Emitter.sum_to`, the one place broadcasting is undone.
"""
from __future__ import annotations

from .emit import Emitter
from .interpreter import StraightLine
from .ops import OPS
from .passes import simplify
from .program import Builder, Instr, Program, Value
from .verifier import free_values


def active_values(instrs, outputs, wrt) -> set:
    """Ids of values that depend on some `wrt` value and that some output depends on."""
    # Plain loops: this runs on every backward, eager and traced.
    reach = {v.id for v in wrt}
    for ins in instrs:
        opdef = OPS[ins.op]
        if opdef.vjp is None:
            continue
        for v in ins.inputs:
            if v.id in reach:
                nondiff = opdef.nondiff_outputs
                for k, out in enumerate(ins.outputs):
                    if k not in nondiff:
                        reach.add(out.id)
                break
    useful = {v.id for v in outputs}
    for ins in reversed(instrs):
        for out in ins.outputs:
            if out.id in useful:
                for v in ins.inputs:
                    useful.add(v.id)
                break
    return reach & useful


def backward(builder: Builder, instrs, outputs, seeds, wrt, loc: str | None = None, active: set | None = None) -> list:
    """Append the VJP of `instrs` to `builder`.

    outputs/seeds: forward values and their cotangents (same shapes).
    Returns one gradient Value per `wrt` value, or None where no path exists.
    `active` is active_values(instrs, outputs, wrt) when the caller has it already.
    """
    e = Emitter(builder, loc)
    if active is None:
        active = active_values(instrs, outputs, wrt)
    grads: dict[int, Value] = {}

    def accumulate(v: Value, g: Value):
        if g.shape != v.shape:
            g = e.sum_to(g, v.shape)
        g = e.cast(g, v.dtype)
        prev = grads.get(v.id)
        grads[v.id] = g if prev is None else e.add(prev, g)

    for v, s in zip(outputs, seeds):
        if v.id in active:
            accumulate(v, s)

    keep = {v.id for v in wrt}
    for ins in reversed(instrs):
        # An output's gradient is complete here (its readers came later in the forward
        # order); after this VJP nothing reads it, so it is dropped (unless it is asked
        # for), which lets an evaluating builder free its array.
        gs = [grads.get(v.id) if v.id in keep else grads.pop(v.id, None) for v in ins.outputs]
        if all(g is None for g in gs):
            continue
        needs = [v.id in active for v in ins.inputs]
        if not any(needs):
            continue
        opdef = OPS[ins.op]
        gs = [e.zeros_like(v) if g is None and k not in opdef.nondiff_outputs else g
              for k, (v, g) in enumerate(zip(ins.outputs, gs))]
        e.loc = ins.loc or loc
        contribs = opdef.vjp(e, list(ins.inputs), list(ins.outputs), gs, dict(ins.attrs), needs)
        for v, need, g in zip(ins.inputs, needs, contribs):
            if need and g is not None:
                accumulate(v, g)
    return [grads.get(v.id) for v in wrt]


class InstrVjp:
    """The backward of one instruction signature, ready to run on arrays.

    For engines that walk a recorded graph node by node (the eager engine).
    `run(args)` evaluates `vjp_program`: args are the forward values its
    emission read, in the order it first read them (`reads`: ("in", i) for the
    instruction's input i, ("out", k) for its output k), then the given
    cotangents in output order; it returns the gradients of the inputs that
    need one, summed to the input's shape and cast to its dtype.
    `grad_index[i]` is input i's position among them, or None.
    """

    __slots__ = ("reads", "grad_index", "run")

    def __init__(self, reads, grad_index, run):
        self.reads = reads
        self.grad_index = grad_index
        self.run = run


def vjp_program(op: str, attrs: tuple, in_types: tuple, out_types: tuple, needs: tuple, given: tuple):
    """(program, reads, grad_index): the backward of `op(attrs)` on inputs of
    `in_types` as a standalone program, for the inputs flagged in `needs`,
    given cotangents for the outputs flagged in `given` (the others are zero).
    Emitted by `backward`, so it is exactly what a whole-graph backward emits
    for this instruction, then simplified. `reads` lists every forward value
    the emission read, even one simplification drops, so the values an engine
    checks (saved-tensor versions) are those an evaluating emission reads.
    See `InstrVjp` for the program's inputs and outputs."""
    xs = [Value(t) for t in in_types]
    ys = [Value(t) for t in out_types]
    seeds = [Value(t) for t, g in zip(out_types, given) if g]
    b = Builder(Program(seeds))
    grads = emit_instr_vjp(b, Instr(op, xs, ys, attrs), needs, given, seeds)
    b.program.outputs = [g for g in grads if g is not None]
    forward_reads = free_values(b.program)
    program = simplify(b.program)
    program.inputs = forward_reads + seeds
    where = {x.id: ("in", i) for i, x in enumerate(xs)}
    where.update({y.id: ("out", k) for k, y in enumerate(ys)})
    grad_index, position = [None] * len(xs), 0
    for i, g in enumerate(grads):
        if g is not None:
            grad_index[i] = position
            position += 1
    return program, tuple(where[v.id] for v in forward_reads), tuple(grad_index)


def instr_vjp(op: str, attrs: tuple, in_types: tuple, out_types: tuple, needs: tuple, given: tuple) -> InstrVjp:
    """`vjp_program` simplified and lowered to a StraightLine, ready to run many
    times. The program itself is not kept: a cache of these would otherwise
    hold Values and Instrs that every garbage collection scans."""
    program, reads, grad_index = vjp_program(op, attrs, in_types, out_types, needs, given)
    return InstrVjp(reads, grad_index, StraightLine(program))


def emit_instr_vjp(builder: Builder, ins: Instr, needs: tuple, given: tuple, seeds: list) -> list:
    """Emit the backward of the one instruction `ins` (whose inputs are distinct
    values) into `builder`: `seeds` are the cotangents of the outputs flagged
    in `given`; returns, per input, its gradient (summed to its shape, cast to
    its dtype), or None where it needs none or gets none."""
    wrt = [x for x, need in zip(ins.inputs, needs) if need]
    grads = iter(backward(builder, [ins], [y for y, g in zip(ins.outputs, given) if g], seeds, wrt))
    return [next(grads) if need else None for need in needs]
