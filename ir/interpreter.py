"""The reference executor: runs a program with each op's NumPy implementation.

Every compiled path is checked against this. `run_program` takes an `apply`
hook so the same walk can execute a program on other value kinds (the eager
engine runs backward programs on Tensors when `create_graph=True`).
"""
from __future__ import annotations

import numpy as np

from .ops import OPS
from .program import Instr, Program


def reference_apply(ins: Instr, args: list):
    """Run one instruction on NumPy arrays; always returns a tuple of arrays."""
    with np.errstate(all="ignore"):
        out = OPS[ins.op].ref(*args, **dict(ins.attrs))
    if not isinstance(out, tuple):
        out = (out,)
    return tuple(np.asarray(o, dtype=v.dtype.np) if not (isinstance(o, np.ndarray) and o.dtype == v.dtype.np)
                 else o for o, v in zip(out, ins.outputs))


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
