"""The reference executor: runs a program with each op's NumPy implementation.

Every compiled path is checked against this. `run_program` takes an `apply`
hook so the same walk can execute a program on other value kinds (the eager
engine runs backward programs on Tensors when `create_graph=True`).
"""
from __future__ import annotations

import numpy as np

from . import threaded
from .ops import OPS
from .program import Instr, Program


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
    if type(ref) is np.ufunc and arrays and (arrays[0].size >= threaded.MIN_ELEMENTS or
                                              arrays[-1].size >= threaded.MIN_ELEMENTS) \
            and threaded.splittable(ref, arrays, out_types[0]):
        return (threaded.call(ref, arrays, out_types[0], _FP_STATE, _QUIET),)
    if _FP_STATE is not None:
        token = _FP_STATE.set(_QUIET)
        try:
            out = ref(*arrays, **attrs)
        finally:
            _FP_STATE.reset(token)
    else:
        with np.errstate(all="ignore"):
            out = ref(*arrays, **attrs)
    return _as_typed(out, out_types)


def apply_ref_small(ref, arrays, attrs: dict, want: np.dtype) -> np.ndarray:
    """`ref(*arrays, **attrs)` for one output of NumPy dtype `want`, on arrays too small
    to split over threads (the caller knows their sizes): `apply_ref` without its
    size checks and tuple, for eager dispatch of a signature seen before."""
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
    owned: set = set()              # ids of values a ufunc step of this run made, no view taken
    for ins, free in zip(instrs, frees):
        ref = OPS[ins.op].ref
        args = [env[v.id] for v in ins.inputs]
        if type(ref) is np.ufunc and ref.nout == 1 and not ins.attrs:
            out_type = ins.outputs[0].type
            into = None
            if out_type.numel >= REUSE_MIN_ELEMENTS:
                for v in ins.inputs:
                    if v.id in owned and v.id in free and v.type is out_type:
                        into = env[v.id]
                        break
            outs = _quiet(_large_ufunc, ref, args, (out_type,), into)
            owned.add(ins.outputs[0].id)
        else:
            outs = apply_ref(ref, args, dict(ins.attrs), [v.type for v in ins.outputs])
            owned.difference_update(v.id for v in ins.inputs)   # the result may be a view of them
        for v, o in zip(ins.outputs, outs):
            env[v.id] = o
        for vid in free:
            del env[vid]
    return [env[v.id] for v in program.outputs]


def _quiet(fn, *args):
    """fn(*args) with floating-point warnings silenced (as `apply_ref`)."""
    if _FP_STATE is not None:
        token = _FP_STATE.set(_QUIET)
        try:
            return fn(*args)
        finally:
            _FP_STATE.reset(token)
    with np.errstate(all="ignore"):
        return fn(*args)


class StraightLine:
    """A program lowered for running many times.

    `run_program` looks up each op, rebuilds its attributes and keys values by
    id on every run; that is most of the cost of a program of a few ops on a
    handful of elements. Here it is done once: each step holds its reference
    function, attribute dict, output types and the slots of a flat list that
    its arguments and results live in, and instructions that read only
    constants (`const`, and anything computed from constants alone) are run
    once, here, with read-only results. On large arrays, a step whose reference
    is a NumPy ufunc writes into the array of an argument that dies there, when
    an earlier ufunc step of the same run made it (so nothing else holds it)
    and its type is the result's: one allocation and one pass over memory
    fewer. The program must read nothing but its inputs.
    """

    __slots__ = ("n_inputs", "template", "steps", "output_slots")

    def __init__(self, program: Program):
        slots: dict = {v.id: k for k, v in enumerate(program.inputs)}
        template: list = [None] * len(slots)
        folded: set = set()             # slots holding values computed here, once
        types: dict = {}                # slot -> static type
        planned = []                    # (ref, attrs, out_types, arg_slots, out_slots, ufunc)
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
                results = apply_ref(opdef.ref, [template[k] for k in arg_slots], attrs, out_types)
                for k, r in zip(out_slots, results):
                    r.flags.writeable = False       # shared by every run
                    template[k] = r
                    folded.add(k)
            else:
                ufunc = isinstance(opdef.ref, np.ufunc) and opdef.ref.nout == 1 and not attrs
                planned.append((opdef.ref, attrs, out_types, arg_slots, out_slots, ufunc))
        self.n_inputs = len(program.inputs)
        self.template = template
        self.output_slots = tuple(slots[v.id] for v in program.outputs)
        self.steps = tuple(_with_reuse(planned, types, set(self.output_slots)))

    def __call__(self, args) -> list:
        """The program's outputs for `args` (one array per input), with
        floating-point warnings silenced as in `apply_ref`."""
        if len(args) != self.n_inputs:
            raise ValueError(f"program takes {self.n_inputs} inputs, got {len(args)}")
        env = self.template.copy()
        env[:self.n_inputs] = args
        if _FP_STATE is not None:
            token = _FP_STATE.set(_QUIET)
            try:
                self._steps(env)
            finally:
                _FP_STATE.reset(token)
        else:
            with np.errstate(all="ignore"):
                self._steps(env)
        return [env[k] for k in self.output_slots]

    def _steps(self, env: list) -> None:
        for ref, attrs, out_types, arg_slots, out_slots, into in self.steps:
            args = [env[k] for k in arg_slots]
            if into is None:
                results = _as_typed(ref(*args, **attrs), out_types)
            else:
                results = _large_ufunc(ref, args, out_types, env[into] if into >= 0 else None)
            for k, r in zip(out_slots, results):
                env[k] = r


def _large_ufunc(ufunc, arrays, out_types, out) -> tuple:
    """A large ufunc step of a StraightLine, into `out` (a dying intermediate) or a new
    array; in row blocks on threads where `threaded` may split it."""
    if threaded.splittable(ufunc, arrays, out_types[0]):
        return (threaded.call(ufunc, arrays, out_types[0], _FP_STATE, _QUIET, out=out),)
    return _as_typed(ufunc(*arrays) if out is None else ufunc(*arrays, out=out), out_types)


# Below this many elements a result is not worth reusing (the check costs more than
# the allocation it saves).
REUSE_MIN_ELEMENTS = 1 << 14


def _with_reuse(planned, types: dict, outputs: set):
    """Each planned step with `into`: None for a plain step; for a ufunc step on at least
    REUSE_MIN_ELEMENTS elements, the slot of a dying intermediate it may write into, or
    -1 for a new array (`_large_ufunc`). An intermediate qualifies if a ufunc step of
    the run made it and no other kind of step read it (so no view of it is alive)."""
    last_use: dict = {}
    for j, (_, _, _, arg_slots, _, _) in enumerate(planned):
        for k in arg_slots:
            last_use[k] = j
    fresh: set = set()              # slots a ufunc step of the run made (no one else holds them)
    steps = []
    for j, (ref, attrs, out_types, arg_slots, out_slots, ufunc) in enumerate(planned):
        into = None
        if ufunc and out_types[0].numel >= REUSE_MIN_ELEMENTS:
            into = -1
            for k in arg_slots:
                if k in fresh and last_use[k] == j and k not in outputs and types[k] is out_types[0]:
                    into = k
                    break
        if ufunc:
            fresh.update(out_slots)
        else:
            # Any other step may return a view of what it reads (reshape, expand, getitem):
            # that memory is no longer the run's alone, so it is never written into.
            fresh.difference_update(arg_slots)
        steps.append((ref, attrs, out_types, arg_slots, out_slots, into))
    return steps
