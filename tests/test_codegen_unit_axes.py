"""Reductions over axes of size 1, fused with other reductions (codegen): compiled results
and gradients against the reference (eager) results and torch.

A reduction over a unit axis reduces nothing; rewritten away before scheduling (the
reductions' `rewrite` rule in ir/ops/reduce.py, applied again after decomposition), it can
no longer meet the bug the random-program sweep found: fused into a row kernel after
another reduction, it read a per-row scalar of the wrong row (x - x.sum(1, keepdim=True)
of a (3, 1, 2) x; softmax over a unit dim's backward).
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import fusegrad as fg

REDUCTIONS = {
    "sum": lambda t, d: t.sum(d, keepdim=True),
    "max": lambda t, d: t.max(d, keepdim=True)[0],
    "mean": lambda t, d: t.mean(d, keepdim=True),
    "log_softmax": lambda t, d: t.log_softmax(d),
    "softmax": lambda t, d: t.softmax(d),
}

CASES = [(shape, d1, d2, r1, r2)
         for shape in [(3, 1, 2), (1, 1, 3), (2, 1, 1, 3)]
         for d1, d2 in itertools.permutations(range(len(shape)), 2)
         if shape[d1] == 1 or shape[d2] == 1
         for r1, r2 in [("sum", "sum"), ("max", "mean"), ("log_softmax", "sum"), ("softmax", "max")]]


def _two_reductions(t, d1, d2, r1, r2):
    z = t * REDUCTIONS[r1](t, d1)
    return z - REDUCTIONS[r2](z, d2)


@pytest.mark.parametrize("shape,d1,d2,r1,r2", CASES[::3], ids=str)
def test_two_fused_reductions_over_unit_axes(shape, d1, d2, r1, r2):
    x = np.random.default_rng(len(shape) + d1 + 3 * d2).standard_normal(shape).astype(np.float32)
    weights = np.arange(1, x.size + 1, dtype=np.float32).reshape(shape)

    def value_and_grad(t):
        y = _two_reductions(t, d1, d2, r1, r2)
        (y * fg.tensor(weights)).sum().backward()
        return y

    results = []
    for call in (value_and_grad, fg.compile(value_and_grad)):
        t = fg.tensor(x, requires_grad=True)
        results.append((call(t).detach().numpy(), t.grad.numpy()))
    (want, want_grad), (got, got_grad) = results
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-4, atol=1e-4)


def test_the_sweeps_smallest_case_against_torch():
    torch = pytest.importorskip("torch", reason="torch is the oracle")
    x = [[[1.0, 2.0]], [[3.0, 4.0]], [[5.0, 6.0]]]

    def f(t):
        z = t * t.sum(2, keepdim=True)
        return z - z.sum(1, keepdim=True)
    np.testing.assert_array_equal(fg.compile(f)(fg.tensor(x)).numpy(), f(torch.tensor(x)).numpy())


@pytest.mark.parametrize("keepdim", [True, False])
def test_a_reduction_over_unit_and_other_axes_is_rewritten_to_the_others(keepdim):
    from fusegrad.codegen import schedule
    from test_codegen_support import build
    p = build(lambda e, x: e.op("sum", e.exp(x), axes=(0, 2), keepdim=keepdim), (1, 4, 5))
    sums = [ins for ins in schedule(p).program.instrs if ins.op == "sum"]
    assert [dict(ins.attrs)["axes"] for ins in sums] == [(2,)]
