"""Large kernels: the prange variants, and accurate reductions.

Above executor.PARALLEL_MIN_ELEMENTS a kernel runs its parallel variant:
blocks of rows (or of elements, for a reduction to one value) whose partial
results are combined at the end. Sums accumulate in float64, so a float32
sum of millions of elements matches the float64 sum within 1e-5 relative.
"""
from __future__ import annotations

import numpy as np

from fusegrad.runtime import executor
from fusegrad.runtime.executor import compile_program
from test_codegen_support import build, check, random_args


def test_float32_sum_of_millions_is_accurate():
    n = 1 << 22
    p = build(lambda e, x: [e.sum(x, (0,)), e.op("mean", e.mul(x, x), axes=(0,), keepdim=False)], (n,))
    x = (np.random.default_rng(0).random(n) + 100.0).astype(np.float32)   # large common offset
    compiled = compile_program(p)
    total, mean_sq = compiled([x])
    x64 = x.astype(np.float64)
    assert abs(float(total) - x64.sum()) <= 1e-5 * x64.sum()
    assert abs(float(mean_sq) - (x64 * x64).mean()) <= 1e-5 * (x64 * x64).mean()
    assert any(step.parallel for step in compiled.steps if hasattr(step, "parallel"))


def test_parallel_row_kernel_with_tail_reductions(monkeypatch):
    """Softmax rows plus a sum over the batch axis (a tail reduction accumulated per
    block of rows): the parallel variant equals the reference and the serial variant."""
    p = build(lambda e, x, w: [e.op("softmax", e.mul(x, w), axis=1), e.sum(e.tanh(x), (0,))], (1024, 300), (300,))
    args = random_args(p, np.random.default_rng(1))
    parallel = check(p, args, rtol=1e-5, atol=1e-4)     # sums of 1024 values of either sign
    assert [s.parallel for s in parallel.steps] == [True]
    monkeypatch.setattr(executor, "PARALLEL_MIN_ELEMENTS", 1 << 40)
    serial_program = build(lambda e, x, w: [e.op("softmax", e.mul(x, w), axis=1), e.sum(e.tanh(x), (0,))],
                           (1024, 301), (301,))
    args2 = random_args(serial_program, np.random.default_rng(1))
    serial = check(serial_program, args2, rtol=1e-5, atol=1e-4)
    assert [s.parallel for s in serial.steps] == [False]
