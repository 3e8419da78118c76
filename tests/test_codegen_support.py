"""Shared helpers for the codegen / executor tests (this module has no tests).

`build` writes a program with the IR's Emitter, optionally followed by its
backward (ir.autodiff.backward, cotangents as extra inputs); `check` runs it
compiled and on the reference executor and compares.
"""
from __future__ import annotations

import numpy as np

from fusegrad.ir import Builder, DType, Emitter, Program, TensorType, backward, float32, run_program
from fusegrad.runtime.executor import compile_program


def build(fn, *types, grad: bool = False) -> Program:
    """Program with inputs of `types` ((shape, dtype) pairs, or shapes for float32)
    and outputs fn(e, *inputs). With grad=True the program also computes the
    gradients of its outputs (against cotangent inputs appended after the
    others) with respect to its floating-point inputs."""
    b = Builder()
    e = Emitter(b)
    xs = [b.input(_type(t)) for t in types]
    outs = fn(e, *xs)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    if grad:
        forward = list(b.program.instrs)
        seeds = [b.input(o.type) for o in outs]
        wrt = [x for x in xs if x.dtype.is_floating_point]
        grads = backward(b, forward, outs, seeds, wrt)
        outs = outs + [g for g in grads if g is not None]
    b.program.outputs = outs
    return b.program


def _type(t) -> TensorType:
    """A TensorType from a TensorType, a (shape, dtype) pair, or a shape (float32)."""
    if isinstance(t, TensorType):
        return t
    if len(t) == 2 and isinstance(t[1], DType):
        return TensorType(tuple(t[0]), t[1])
    return TensorType(tuple(t), float32)


def random_args(program: Program, rng, low=-2.0, high=2.0, positive=()):
    """One array per program input; inputs whose index is in `positive` are in [0.5, 2)."""
    args = []
    for k, v in enumerate(program.inputs):
        dt = v.dtype.np
        if v.dtype.name == "bool":
            a = rng.random(v.shape) < 0.5
        elif v.dtype.name == "int64":
            a = rng.integers(-3, 4, size=v.shape)
        elif k in positive:
            a = rng.uniform(0.5, 2.0, size=v.shape)
        else:
            a = rng.uniform(low, high, size=v.shape)
        args.append(np.asarray(a, dtype=dt))
    return args


def check(program: Program, args, rtol=2e-5, atol=2e-6):
    """Compiled outputs equal the reference executor's (values, shapes, dtypes)."""
    compiled = compile_program(program)
    got = compiled(list(args))
    failed = [s.compiled.failure for s in compiled.steps if getattr(s, "compiled", None) and s.compiled.failure]
    assert not failed, failed
    want = run_program(program, list(args))
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, (k, g.shape, w.shape)
        assert g.dtype == w.dtype, (k, g.dtype, w.dtype)
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"output {k}\n{compiled.explain()}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"output {k}\n{compiled.explain()}")
    return compiled
