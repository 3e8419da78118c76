"""The reference executor: runs a program with each op's NumPy implementation.

Every compiled path is checked against this. `run_program` takes an `apply`
hook so the same walk can execute a program on other value kinds (the eager
engine runs backward programs on Tensors when `create_graph=True`).
"""
from __future__ import annotations

import numpy as np

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
    _FP_STATE = None


def apply_ref(ref, arrays, attrs: dict, out_types) -> tuple:
    """`ref(*arrays, **attrs)` with floating-point warnings silenced; returns a tuple
    with one array per output type, of that type's dtype."""
    if _FP_STATE is not None:
        token = _FP_STATE.set(_QUIET)
        try:
            out = ref(*arrays, **attrs)
        finally:
            _FP_STATE.reset(token)
    else:
        with np.errstate(all="ignore"):
            out = ref(*arrays, **attrs)
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
