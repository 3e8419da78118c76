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
from .ops.registry import OPAQUE, NoDerivativeError
from .passes import simplify
from .program import Builder, Instr, Program, Value, exact_attrs
from .verifier import free_values


def differentiated_inputs(ins) -> list:
    """The inputs of `ins` its VJP can give a gradient (all but OpDef.nondiff_inputs)."""
    skip = OPS[ins.op].nondiff_inputs
    return [v for i, v in enumerate(ins.inputs) if i not in skip] if skip else list(ins.inputs)


def active_values(instrs, outputs, wrt) -> set:
    """Ids of values that depend on some `wrt` value and that some output depends on through
    values that can carry a gradient."""
    # Plain loops: this runs on every backward, eager and traced.
    # (an input the op's VJP never differentiates, OpDef.nondiff_inputs, is on no path; nor is
    # an integer or bool value, such as max's indices used to index: no gradient flows there)
    reach = {v.id for v in wrt}
    for ins in instrs:
        opdef = OPS[ins.op]
        if opdef.vjp is None:
            continue
        skip = opdef.nondiff_inputs
        for i, v in enumerate(ins.inputs):
            if v.id in reach and i not in skip:
                nondiff = opdef.nondiff_outputs
                for k, out in enumerate(ins.outputs):
                    if k not in nondiff and out.type.dtype.is_floating_point:
                        reach.add(out.id)
                break
    useful = {v.id for v in outputs}
    for ins in reversed(instrs):
        opdef = OPS[ins.op]
        nondiff = opdef.nondiff_outputs
        for k, out in enumerate(ins.outputs):
            if out.id in useful and k not in nondiff:
                skip = opdef.nondiff_inputs
                for i, v in enumerate(ins.inputs):
                    if i not in skip and v.type.dtype.is_floating_point:
                        useful.add(v.id)
                break
    return reach & useful


def backward(builder: Builder, instrs, outputs, seeds, wrt, loc: str | None = None, active: set | None = None,
             reuse: bool = True, reads: dict | None = None, on_gradient: dict | None = None) -> list:
    """Append the VJP of `instrs` to `builder`.

    outputs/seeds: forward values and their cotangents (same shapes).
    Returns one gradient Value per `wrt` value, or None where no path exists.
    `active` is active_values(instrs, outputs, wrt) when the caller has it already.
    With `reuse`, an instruction whose signature was differentiated before gets
    a copy of its cached simplified VJP program (`VJPS`) instead of a new
    emission (the same instructions, without running the VJP rule, the
    emitter and the shape rules again).
    `reads` ({id(instr): an instruction like it}): the instruction as its VJP reads it, where
    a forward value it saved had its memory written since without a version bump (torch's
    `.data` writes: a node's saved tensor then holds the new values); gradients still flow to
    the instruction's own inputs.
    `on_gradient` ({value id: f(Value | None) -> Value | None}): where a value's gradient is complete (all its
    readers' contributions summed), f replaces it before the VJP of the instruction that made
    it reads it (a tensor hook: the caller's f may emit instructions of its own).
    """
    e = Emitter(builder, loc)
    if active is None:
        active = active_values(instrs, outputs, wrt)
    grads: dict[int, Value] = {}
    # A plain Builder (not an evaluating one) gets fan-out sums of one type appended directly:
    # this loop runs on every traced backward, once per differentiated instruction.
    plain = type(builder) is Builder

    def add_into(v: Value, g: Value):
        prev = grads.get(v.id)
        if prev is None:
            grads[v.id] = g
        elif plain and prev.type is g.type:
            grads[v.id] = builder.append_one("add", (prev, g), prev.type, (), e.loc)
        else:
            grads[v.id] = e.add(prev, g)

    for v, s in zip(outputs, seeds):
        if v.id in active:
            add_into(v, e.cast(e.sum_to(s, v.shape), v.dtype))

    keep = {v.id for v in wrt}
    for ins in reversed(instrs):
        # An output's gradient is complete here (its readers came later in the forward
        # order); after this VJP nothing reads it, so it is dropped (unless it is asked
        # for), which lets an evaluating builder free its array. (One output and one or
        # two inputs, the common cases, are written out.)
        outs = ins.outputs
        if len(outs) == 1:
            out_id = outs[0].id
            g = grads.get(out_id) if out_id in keep else grads.pop(out_id, None)
            if g is None:
                continue
            if on_gradient is not None and out_id in on_gradient:
                g = on_gradient[out_id](g)
                if out_id in keep:
                    grads[out_id] = g
            gs, given, seeds_in = [g], _GIVEN_ONE, [g]
        else:
            gs = [grads.get(v.id) if v.id in keep else grads.pop(v.id, None) for v in outs]
            if True not in [g is not None for g in gs]:
                continue
            if on_gradient is not None:
                # (each output's callback runs once its instruction does, with None for an
                # output that got no gradient, as torch's tensor hooks of a node that runs)
                gs = [on_gradient[v.id](g) if v.id in on_gradient else g for v, g in zip(outs, gs)]
                for v, g in zip(outs, gs):
                    if g is not None and v.id in keep:
                        grads[v.id] = g
            given = tuple([g is not None for g in gs])
            seeds_in = [g for g in gs if g is not None]
        ins_in = ins.inputs
        if len(ins_in) == 2:
            a, b = ins_in
            needs = (a.id in active, b.id in active)
        elif len(ins_in) == 1:
            needs = (ins_in[0].id in active,)
        else:
            needs = tuple([v.id in active for v in ins_in])
        if True not in needs:
            continue
        e.loc = ins.loc or loc
        read = reads.get(id(ins), ins) if reads else ins
        cached = None
        if reuse:
            in_types = (a.type, b.type) if len(ins_in) == 2 else tuple([v.type for v in ins_in])
            out_types = (outs[0].type,) if len(outs) == 1 else tuple([v.type for v in outs])
            try:
                cached = VJPS.get((ins.op, ins.attrs, in_types, out_types, needs, given))
            except TypeError:           # an unhashable attribute value: emit it afresh
                cached = None
        if cached is not None:
            contribs = cached.copy_into(builder, read, seeds_in, e.loc)
        else:
            contribs = _emit_vjp(e, read, gs, needs)
        for v, g in zip(ins_in, contribs):
            if g is not None:
                add_into(v, g)
    return [grads.get(v.id) for v in wrt]


_GIVEN_ONE = (True,)


def _emit_vjp(e: Emitter, ins: Instr, gs: list, needs: tuple) -> list:
    """Run `ins`'s VJP rule (zeros for outputs without a cotangent); per input, its
    gradient summed to its shape and cast to its dtype, or None."""
    opdef = OPS[ins.op]
    if not opdef.extra.get("vjp_takes_missing"):    # (an op whose rule tells a missing one from zero)
        gs = [e.zeros_like(v) if g is None and k not in opdef.nondiff_outputs else g
              for k, (v, g) in enumerate(zip(ins.outputs, gs))]
    try:
        contribs = opdef.vjp(e, list(ins.inputs), list(ins.outputs), gs, dict(ins.attrs), list(needs))
    except NoDerivativeError as exc:
        # torch's class (the subclass is for saved_slots' probe), marked so that a compiled
        # call can defer it to the backward that would run through this op, as torch does
        error = (NotImplementedError if isinstance(exc, NotImplementedError) else RuntimeError)(str(exc))
        error.no_derivative = True
        raise error from None
    return [e.cast(e.sum_to(g, v.shape), v.dtype) if need and g is not None else None
            for v, need, g in zip(ins.inputs, needs, contribs)]


class InstrVjp:
    """The backward of one instruction signature as a standalone, simplified program.

    `program`'s inputs are the forward values its emission read, in the order it
    first read them (`reads`: ("in", i) for the instruction's input i, ("out", k)
    for its output k), then the given cotangents in output order; its outputs are
    the gradients of the inputs that need one, summed to the input's shape and
    cast to its dtype. `grad_index[i]` is input i's position among them, or None.
    `backward` copies the program into a larger one (`copy_into`); an engine that
    walks a recorded graph node by node runs it on arrays (`run`, a StraightLine
    built on first use).
    """

    __slots__ = ("program", "reads", "grad_index", "_run", "_plan")

    def __init__(self, program, reads, grad_index):
        self.program = program
        self.reads = reads
        self.grad_index = grad_index
        self._run = None
        self._plan = None           # (steps, result slots): built by the first copy_into

    def run(self, args) -> list:
        """The program's outputs for arrays `args` (reads, then cotangents)."""
        if self._run is None:
            self._run = StraightLine(self.program)
        return self._run(args)

    def copy_into(self, builder: Builder, ins: Instr, seeds: list, loc: str | None) -> list:
        """Append the program to `builder` for the instruction `ins` of this
        signature and the given cotangents; per input of `ins`, its gradient or None."""
        plan = self._plan if self._plan is not None else self._make_plan()
        steps, results = plan
        ins_in, ins_out = ins.inputs, ins.outputs
        vals = [ins_in[index] if kind == "in" else ins_out[index] for kind, index in self.reads]
        vals += seeds
        for op, args, out_types, attrs in steps:
            if len(out_types) == 1:
                operands = (vals[args[0]], vals[args[1]]) if len(args) == 2 else tuple([vals[k] for k in args])
                vals.append(builder.append_one(op, operands, out_types[0], attrs, loc))
            else:
                vals += builder.append(op, [vals[k] for k in args], out_types, attrs, loc)
        return [None if k is None else vals[k] for k in results]

    def _make_plan(self) -> tuple:
        """The program as slot numbers, for copying it without a dict of values: slots are
        its inputs (reads, then cotangents), then each instruction's outputs in order."""
        program = self.program
        slot = {v.id: k for k, v in enumerate(program.inputs)}
        steps = []
        for step in program.instrs:
            args = tuple(slot[v.id] for v in step.inputs)
            for v in step.outputs:
                slot[v.id] = len(slot)
            steps.append((step.op, args, tuple(v.type for v in step.outputs), step.attrs))
        results = tuple(None if k is None else slot[program.outputs[k].id] for k in self.grad_index)
        self._plan = (tuple(steps), results)
        return self._plan


def vjp_program(op: str, attrs: tuple, in_types: tuple, out_types: tuple, needs: tuple, given: tuple) -> InstrVjp:
    """The backward of `op(attrs)` on inputs of `in_types` as a standalone
    program, for the inputs flagged in `needs`, given cotangents for the outputs
    flagged in `given` (the others are zero). Emitted by `backward`'s own rule
    for one instruction, then simplified. Its `reads` lists every forward value
    the emission read, even one simplification drops, so the values an engine
    checks (saved-tensor versions) are those an evaluating emission reads."""
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
    return InstrVjp(program, tuple(where[v.id] for v in forward_reads), tuple(grad_index))


def emit_instr_vjp(builder: Builder, ins: Instr, needs: tuple, given: tuple, seeds: list) -> list:
    """Emit the backward of the one instruction `ins` (whose inputs are distinct
    values) into `builder` by its VJP rule: `seeds` are the cotangents of the
    outputs flagged in `given`; returns, per input, its gradient (summed to its
    shape, cast to its dtype), or None where it needs none or gets none."""
    wrt = [x for x, need in zip(ins.inputs, needs) if need]
    grads = iter(backward(builder, [ins], [y for y, g in zip(ins.outputs, given) if g], seeds, wrt,
                          reuse=False))
    return [next(grads) if need else None for need in needs]


class VjpCache:
    """The VJP program of each instruction signature (op, attributes, input and
    output types, which inputs need a gradient, which outputs have one).

    `get` returns None for a signature seen for the first time (the caller then
    emits or evaluates its VJP directly); from its second time on, its program
    is built once (`vjp_program`) and reused. (A program with new shapes on every
    call would otherwise pay to build and keep programs that never run again.)
    Bounded: when full, it starts over."""

    _SEEN_ONCE = object()

    def __init__(self, capacity: int = 4096):
        self.capacity = capacity
        self.entries: dict = {}
        self.hits = self.misses = self.built = 0

    def get(self, key) -> InstrVjp | None:
        """The InstrVjp of signature `key` (vjp_program's arguments), or None."""
        if OPS[key[0]].group == OPAQUE:
            # An opaque op's attribute is a per-call object (a compiled call's backward):
            # a cache entry would only keep it, and the arrays it saved, alive.
            return None
        signature, exact = key, exact_attrs(key[1])
        if exact is not key[1]:                 # (-0.0 is not 0.0: exact_attrs)
            key = (key[0], exact) + tuple(key[2:])
        entry = self.entries.get(key)
        if entry is not None and entry is not self._SEEN_ONCE:
            self.hits += 1
            return entry
        self.misses += 1
        if len(self.entries) >= self.capacity:
            self.entries.clear()
        if entry is None:
            self.entries[key] = self._SEEN_ONCE
            return None
        self.built += 1
        entry = self.entries[key] = vjp_program(*signature)
        return entry

    def clear(self) -> None:
        """Forget every signature and zero the counters."""
        self.entries.clear()
        self.hits = self.misses = self.built = 0


VJPS = VjpCache()
