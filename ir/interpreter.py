"""The reference executor: runs a program with each op's NumPy implementation.

Every compiled path is checked against this. `run_program` takes an `apply`
hook so the same walk can execute a program on other value kinds (the eager
engine runs backward programs on Tensors when `create_graph=True`).
"""
from __future__ import annotations

import numpy as np

from . import threaded
from .buffers import MIN_POOLED_BYTES, POOL
from .ops import OPS, eager_form, eager_into_form
from .program import Instr, Program
from .rounded import UFUNC_TYPES
from .types import TensorType


# Floating-point warnings are silenced around reference ops (torch never warns
# about overflow or 0/0). np.errstate costs ~1 us to build and enter, a third of
# a small eager op, so the hot path sets NumPy's error-state context variable to
# a prebuilt "ignore all" state directly (what errstate.__enter__ does).
try:
    from numpy._core._ufunc_config import _extobj_contextvar as _FP_STATE, _make_extobj
    _QUIET = _make_extobj(all="ignore")
except (ImportError, AttributeError, TypeError):        # another NumPy layout: the public API
    _FP_STATE = _QUIET = None


def apply_ref(ref, arrays, attrs: dict, out_types) -> tuple:
    """`ref(*arrays, **attrs)` with floating-point warnings silenced; returns a tuple
    with one array per output type, of that type's dtype."""
    if type(ref) in UFUNC_TYPES and arrays and (arrays[0].size >= threaded.MIN_ELEMENTS or
                                              arrays[-1].size >= threaded.MIN_ELEMENTS) \
            and threaded.splittable(ref, arrays, out_types[0]):
        return (threaded.call(ref, arrays, out_types[0], _FP_STATE, _QUIET),)
    return _as_typed(_quiet(ref, *arrays, **attrs), out_types)


def apply_ref_small(ref, arrays, attrs: dict, want: np.dtype) -> np.ndarray:
    """`ref(*arrays, **attrs)` for one output of NumPy dtype `want`, on arrays too small
    to split over threads (the caller knows their sizes): `apply_ref` without its
    size checks and tuple, for eager dispatch of a signature seen before. (`_quiet` is
    written out here: its call and keyword packing are a tenth of a small eager op.)"""
    if _FP_STATE is not None:
        token = _FP_STATE.set(_QUIET)
        try:
            out = ref(*arrays, **attrs) if attrs else ref(*arrays)
        finally:
            _FP_STATE.reset(token)
    else:
        with np.errstate(all="ignore"):
            out = ref(*arrays, **attrs)
    if type(out) is np.ndarray and (out.dtype is want or out.dtype == want):
        return out
    if type(out) is tuple:              # a one-output op whose reference returns a tuple (custom_call)
        (out,) = out
    return np.asarray(out, dtype=want)


def apply_ref_into(into, arrays, out: np.ndarray, attrs=None) -> np.ndarray:
    """`into(out, *arrays, **attrs)` (an into_writer) with floating-point warnings silenced;
    returns `out`, which holds the result (a buffer of ir/buffers.py's pool)."""
    if _FP_STATE is not None:
        token = _FP_STATE.set(_QUIET)
        try:
            if attrs:
                into(out, *arrays, **attrs)
            else:
                into(out, *arrays)
        finally:
            _FP_STATE.reset(token)
    else:
        with np.errstate(all="ignore"):
            into(out, *arrays, **(attrs or {}))
    return out


_UFUNC_WRITERS: dict = {}


def into_writer(opdef, in_types, out_types, attrs, eager: bool = False):
    """How a reference writes its one result into given memory, when that result is large
    enough to come from the buffer pool (ir/buffers.py): the op table's `extra["ref_into"]`
    (out, *arrays, **attrs; for `eager` execution, the form lent for it: ops.eager_into_form),
    or, for a ufunc reference without attributes whose loop for these operand dtypes gives the
    output's dtype, the ufunc with `out=`. None otherwise."""
    if len(out_types) != 1 or out_types[0].numel * out_types[0].dtype.np.itemsize < MIN_POOLED_BYTES:
        return None
    into = eager_into_form(opdef) if eager else opdef.extra.get("ref_into")
    if into is not None:
        return into
    ref = opdef.ref
    if type(ref) not in UFUNC_TYPES or attrs or ref.nout != 1 or len(in_types) != ref.nin:
        return None
    try:
        resolved = ref.resolve_dtypes(tuple(t.dtype.np for t in in_types) + (None,))
    except (TypeError, AttributeError):          # no loop for these dtypes (it raises at the call)
        return None
    if resolved[-1] != out_types[0].dtype.np:
        return None
    writer = _UFUNC_WRITERS.get(ref)
    if writer is None:
        writer = _UFUNC_WRITERS[ref] = lambda out, *arrays, ufunc=ref: ufunc(*arrays, out=out)
    return writer


def _as_typed(out, out_types) -> tuple:
    """A reference's result as a tuple of arrays of the output types' dtypes
    (NumPy returns scalars for 0-d results, and may widen dtypes)."""
    if type(out) is not tuple:          # one output (most ops): no comprehension
        want = out_types[0].dtype.np
        return (out if type(out) is np.ndarray and (out.dtype is want or out.dtype == want)
                else np.asarray(out, dtype=want),)
    return tuple([o if type(o) is np.ndarray and (o.dtype is t.dtype.np or o.dtype == t.dtype.np)
                  else np.asarray(o, dtype=t.dtype.np) for o, t in zip(out, out_types)])


def reference_apply(ins: Instr, args: list):
    """Run one instruction on NumPy arrays; always returns a tuple of arrays."""
    return apply_ref(OPS[ins.op].ref, args, dict(ins.attrs), [v.type for v in ins.outputs])


def run_program(program: Program, args, apply=reference_apply, env: dict | None = None) -> list:
    """Evaluate `program` on `args` (one per program input).

    `env` may pre-bind free values by id (a backward program's references to
    forward values). Returns the outputs in order.
    """
    env = {} if env is None else env
    if len(args) != len(program.inputs):
        raise ValueError(f"program takes {len(program.inputs)} inputs, got {len(args)}")
    for v, a in zip(program.inputs, args):
        env[v.id] = a
    for ins in program.instrs:
        try:
            vals = [env[v.id] for v in ins.inputs]
        except KeyError as exc:
            raise RuntimeError(f"internal error: {ins.op} reads an unbound value {exc}") from None
        outs = apply(ins, vals)
        for v, o in zip(ins.outputs, outs):
            env[v.id] = o
    return [env[v.id] for v in program.outputs]


def run_freeing(program: Program, env: dict) -> list:
    """run_program for a program run once (a compiled call's reference path): each value
    is dropped once its last reader has run, so peak memory is the live values, not all
    of them; instructions whose outputs `env` already holds (computed at a graph break)
    are skipped; and a large ufunc step writes into an argument that dies there when an
    earlier ufunc step of this run made it and nothing else read it (as StraightLine
    does): each fresh array of millions of elements costs its page faults on first
    touch, which on a first call is as much as the arithmetic."""
    instrs = [ins for ins in program.instrs if ins.outputs[0].id not in env]
    last = {}
    for n, ins in enumerate(instrs):
        for v in ins.inputs:
            last[v.id] = n
    for v in program.outputs:
        last[v.id] = len(instrs)
    frees = [[] for _ in instrs]
    for vid, n in last.items():
        if n < len(instrs):
            frees[n].append(vid)
    refs = [OPS[ins.op].ref for ins in instrs]
    types = {v.id: v.type for ins in instrs for v in ins.outputs}
    targets = _reuse_targets([(_is_plain_ufunc(ref, ins.attrs), ins.outputs[0].type,
                               [v.id for v in ins.inputs], [v.id for v in ins.outputs])
                              for ref, ins in zip(refs, instrs)],
                             types, {v.id for v in program.outputs})
    for ins, ref, free, into in zip(instrs, refs, frees, targets):
        args = [env[v.id] for v in ins.inputs]
        if into is None:
            outs = apply_ref(ref, args, dict(ins.attrs), [v.type for v in ins.outputs])
        else:
            outs = _quiet(_large_ufunc, ref, args, (ins.outputs[0].type,), env[into] if into != -1 else None)
        for v, o in zip(ins.outputs, outs):
            env[v.id] = o
        for vid in free:
            del env[vid]
    return [env[v.id] for v in program.outputs]


def _quiet(call, /, *args, **kwargs):
    """call(*args, **kwargs) with NumPy's floating-point warnings silenced (torch never warns
    about overflow or 0/0). `call` is positional-only: references take keywords (`fn=`)."""
    if _FP_STATE is not None:
        token = _FP_STATE.set(_QUIET)
        try:
            return call(*args, **kwargs)
        finally:
            _FP_STATE.reset(token)
    with np.errstate(all="ignore"):
        return call(*args, **kwargs)


class StraightLine:
    """A program lowered for running many times.

    `run_program` looks up each op, rebuilds its attributes and keys values by
    id on every run; that is most of the cost of a program of a few ops on a
    handful of elements. Here it is done once: each step holds its eager form
    (the op's reference, or a faster form lent to eager execution: ops.eager_form),
    attribute dict, output types and the slots of a flat list that its arguments
    and results live in, and instructions that read only constants (`const`, and
    anything computed from constants alone) are run once, here, with read-only
    results. On large arrays, a step whose reference is a NumPy ufunc writes into
    the array of an argument that dies there, when an earlier ufunc step of the
    same run made it (so nothing else holds it) and its type is the result's: one
    allocation and one pass over memory fewer. The program must read nothing but
    its inputs.
    """

    __slots__ = ("n_inputs", "template", "steps", "output_slots", "single")

    def __init__(self, program: Program):
        slots: dict = {v.id: k for k, v in enumerate(program.inputs)}
        template: list = [None] * len(slots)
        folded: set = set()             # slots holding values computed here, once
        types: dict = {}                # slot -> static type
        planned = []                    # (ref, attrs, out_types, arg_slots, out_slots, pooled writer)
        in_types = {k: v.type for k, v in enumerate(program.inputs)}
        for ins in program.instrs:
            opdef = OPS[ins.op]
            attrs = dict(ins.attrs)
            out_types = tuple(v.type for v in ins.outputs)
            try:
                arg_slots = tuple(slots[v.id] for v in ins.inputs)
            except KeyError as exc:
                raise RuntimeError(f"internal error: {ins.op} reads an unbound value {exc}") from None
            out_slots = tuple(range(len(template), len(template) + len(ins.outputs)))
            for v, k in zip(ins.outputs, out_slots):
                slots[v.id] = k
                types[k] = v.type
            template.extend([None] * len(out_slots))
            if all(k in folded for k in arg_slots):
                results = apply_ref(eager_form(opdef), [template[k] for k in arg_slots], attrs, out_types)
                for k, r in zip(out_slots, results):
                    r.flags.writeable = False       # shared by every run
                    template[k] = r
                    folded.add(k)
            else:
                writer = into_writer(opdef, [in_types[k] if k in in_types else types[k] for k in arg_slots],
                                     out_types, attrs, eager=True)
                if writer is not None and opdef.pointwise:
                    writer = _InMemoryOrder(writer)
                planned.append((eager_form(opdef), attrs, out_types, arg_slots, out_slots, writer))
        self.n_inputs = len(program.inputs)
        self.template = template
        self.output_slots = tuple(slots[v.id] for v in program.outputs)
        targets = _reuse_targets([(_is_plain_ufunc(ref, attrs), out_types[0], arg_slots, out_slots)
                                  for ref, attrs, out_types, arg_slots, out_slots, _ in planned],
                                 types, set(self.output_slots))
        self.steps = tuple(step + (into,) for step, into in zip(planned, targets))
        # One step with one output and no buffer reuse (most eager nodes' VJPs: g * 2,
        # g * x): run without the slot list (a tenth of a small node's backward).
        self.single = None
        if len(self.steps) == 1 and len(self.steps[0][4]) == 1 and self.steps[0][6] is None:
            ref, attrs, out_types, arg_slots, (out_slot,), writer, _ = self.steps[0]
            # `direct`: it reads only its inputs and returns only its result (a small node's
            # g * 2, g * x): no slot lists to build on the hot path
            direct = all(k < self.n_inputs for k in arg_slots) and self.output_slots == (out_slot,)
            self.single = (ref, attrs, out_types, arg_slots, out_slot, writer, out_types[0].dtype.np, direct)

    def __call__(self, args) -> list:
        """The program's outputs for `args` (one array per input), with
        floating-point warnings silenced as in `apply_ref`."""
        if len(args) != self.n_inputs:
            raise ValueError(f"program takes {self.n_inputs} inputs, got {len(args)}")
        if self.single is not None:
            ref, attrs, out_types, arg_slots, out_slot, writer, want, direct = self.single
            if direct and writer is None:   # the common case: a small node's g * 2
                if len(arg_slots) == 2:
                    return [apply_ref_small(ref, [args[arg_slots[0]], args[arg_slots[1]]], attrs, want)]
                return [apply_ref_small(ref, [args[k] for k in arg_slots], attrs, want)]
            n, template = self.n_inputs, self.template
            arrays = [args[k] if k < n else template[k] for k in arg_slots]
            if writer is not None:          # a large result: into a pooled buffer
                result = pooled_result(writer, arrays, out_types[0], attrs)
            else:
                result = apply_ref_small(ref, arrays, attrs, want)
            return [result if k == out_slot else args[k] if k < n else template[k] for k in self.output_slots]
        env = self.template.copy()
        env[:self.n_inputs] = args
        _quiet(self._steps, env)
        return [env[k] for k in self.output_slots]

    def _steps(self, env: list) -> None:
        for ref, attrs, out_types, arg_slots, out_slots, writer, into in self.steps:
            args = [env[k] for k in arg_slots]
            if into is None and writer is not None:     # a large result: into a pooled buffer
                results = (pooled_result(writer, args, out_types[0], attrs, quiet=False),)
            elif into is None:
                results = _as_typed(ref(*args, **attrs), out_types)
            else:
                results = _large_ufunc(ref, args, out_types, env[into] if into >= 0 else None)
            for k, r in zip(out_slots, results):
                env[k] = r


class _InMemoryOrder:
    """An elementwise op's into_writer, marked to write in its operands' memory order
    (pooled_result)."""

    __slots__ = ("writer",)

    def __init__(self, writer):
        self.writer = writer


def pooled_result(writer, arrays, out_type: TensorType, attrs, quiet: bool = True) -> np.ndarray:
    """`writer`'s result (an into_writer) in a buffer of the pool, with floating-point warnings
    silenced unless the caller has (`quiet` False). An elementwise op's (_InMemoryOrder) over
    operands laid out otherwise (a transpose) is written in their memory order, into a result
    laid out so too, as threaded.call does: row-major it read them one element a page (a
    backward's tanh'(y) of a transpose, 4M elements: 70 -> 3 ms)."""
    shape, order = out_type.shape, None
    if type(writer) is _InMemoryOrder:
        writer = writer.writer
        order = threaded.memory_order(shape, arrays)
        if order is not None:
            arrays, shape = threaded.permuted_operands(arrays, shape, order), tuple([shape[d] for d in order])
    out = POOL.empty(shape, out_type.dtype.np)
    if quiet:
        apply_ref_into(writer, arrays, out, attrs)
    else:
        writer(out, *arrays, **attrs)
    return out if order is None else out.transpose(np.argsort(order))


def ufunc_into(ufunc, arrays, out_type: TensorType, out: np.ndarray) -> np.ndarray:
    """`ufunc(*arrays, out=out)` with floating-point warnings silenced, in row blocks on
    threads where `threaded` may split it; returns `out`."""
    if threaded.splittable(ufunc, arrays, out_type):
        return threaded.call(ufunc, arrays, out_type, _FP_STATE, _QUIET, out=out)
    return apply_ref_into(lambda into, *xs: ufunc(*xs, out=into), arrays, out)


def ufunc_result(ufunc, arrays, out_type: TensorType) -> np.ndarray:
    """`ufunc(*arrays)` with floating-point warnings silenced, in row blocks on threads where
    `threaded` may split it, looping in the operands' memory order (a result laid out as a
    transposed operand is)."""
    return _quiet(_large_ufunc, ufunc, arrays, (out_type,), None)[0]


def _large_ufunc(ufunc, arrays, out_types, out) -> tuple:
    """A large ufunc step of a StraightLine, into `out` (a dying intermediate) or a new
    array; in row blocks on threads where `threaded` may split it."""
    if threaded.splittable(ufunc, arrays, out_types[0]):
        return (threaded.call(ufunc, arrays, out_types[0], _FP_STATE, _QUIET, out=out),)
    return _as_typed(ufunc(*arrays) if out is None else ufunc(*arrays, out=out), out_types)


# Below this many elements a result is not worth reusing (the check costs more than
# the allocation it saves).
REUSE_MIN_ELEMENTS = 1 << 14


def _reuse_targets(steps, types: dict, keep: set) -> list:
    """Where each step may put its result: None for a step that is not a large ufunc step,
    -1 for a new array, or the key of an argument to write into. `steps`: (is a one-output
    ufunc without attributes, output type, argument keys, output keys) per step; `types`: key
    -> type; `keep`: keys never written into (the program's outputs). An argument qualifies
    if it dies at the step, has the result's type, was made by an earlier ufunc step (so
    nothing else holds its array) and no other kind of step read it (reshape, expand or
    getitem may have returned a view of it that is still alive)."""
    last_use: dict = {}
    for j, (_, _, arg_keys, _) in enumerate(steps):
        for k in arg_keys:
            last_use[k] = j
    fresh: set = set()
    targets = []
    for j, (ufunc, out_type, arg_keys, out_keys) in enumerate(steps):
        into = None
        if ufunc and out_type.numel >= REUSE_MIN_ELEMENTS:
            into = -1
            for k in arg_keys:
                if k in fresh and last_use[k] == j and k not in keep and types[k] is out_type:
                    into = k
                    break
        if ufunc:
            fresh.update(out_keys)
        else:
            fresh.difference_update(arg_keys)
        targets.append(into)
    return targets


def _is_plain_ufunc(ref, attrs) -> bool:
    """A one-output NumPy ufunc called without attributes: it can write into a given array."""
    return type(ref) in UFUNC_TYPES and ref.nout == 1 and not attrs
