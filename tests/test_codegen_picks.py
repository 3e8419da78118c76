"""Masked row reductions that read one element (codegen/picks.py).

nll_loss's picked log-probability and per-sample weight, and max/min(dim)'s values,
are reductions of a select against the position along the reduced dim. A row kernel
reads that one element at its position instead of accumulating the select over the
row. These tests check that the kernels do read it directly (the generated source)
and that the result is the reference executor's for every kind of position: in the
row, ignored (-1, ignore_index), out of range, on NaN and infinite rows, and for
float32, float64, int64 and bool values.
"""
from __future__ import annotations

import numpy as np
import pytest

from fusegrad.codegen import generate, schedule
from fusegrad.codegen import picks
from fusegrad.ir import bool_, float64, int64, run_program
from test_codegen_support import build, check, random_args


def _row_kernel_source(program) -> str:
    kernels = [k for k in schedule(program).kernels if k.axes]
    assert kernels, "no row kernel"
    return "\n".join(generate(k, "fusegrad.codegen.vmath").functions[0][2] for k in kernels)


def _cross_entropy(reduction="mean", weighted=False, ignore_index=-100):
    def body(e, logits, target, classes, *weight):
        log_probs = e.op("log_softmax", logits, axis=1)
        return e.op("nll_loss", log_probs, target, classes, *weight, reduction=reduction,
                    ignore_index=ignore_index)
    return body


def _nll_args(program, rng, n, c, targets=None):
    args = random_args(program, rng, low=-4, high=4)
    args[1] = np.asarray(rng.integers(0, c, n) if targets is None else targets, dtype=np.int64)
    args[2] = np.arange(c, dtype=np.int64)
    return args


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("policy", ["never", "always"])
def test_cross_entropy_reads_the_target_logit_directly(monkeypatch, reduction, weighted, policy):
    monkeypatch.setenv("FUSEGRAD_PARALLEL", policy)
    n, c = 37, 130
    types = [(n, c), ((n,), int64), ((c,), int64)] + ([(c,)] if weighted else [])
    program = build(_cross_entropy(reduction, weighted), *types, grad=True)
    text = _row_kernel_source(program)
    # the picked log-probability (and weight): one read per row at the clamped target
    assert "np.uintp(min(max(" in text and "< n1 else" in text, text
    rng = np.random.default_rng(0)
    targets = rng.integers(0, c, n)
    targets[::5] = -100                              # ignored rows
    args = _nll_args(program, rng, n, c, targets)
    if weighted:
        args[3] = rng.uniform(0.1, 2.0, c).astype(np.float32)
    check(program, args, rtol=1e-5, atol=1e-6)


def test_ignored_and_out_of_row_positions_give_the_identity():
    # ignore_index 3 is a real class: the rows targeting it are skipped; the kernel's
    # position for them is -1 and must not read outside the row (clamped), and a row
    # whose position is past the end reads nothing either.
    n, c = 9, 6
    program = build(_cross_entropy("none", ignore_index=3), (n, c), ((n,), int64), ((c,), int64), grad=True)
    rng = np.random.default_rng(1)
    args = _nll_args(program, rng, n, c, [0, 3, 5, 3, 1, 2, 4, 3, 0])
    check(program, args)


@pytest.mark.parametrize("row", ["nan", "inf", "-inf", "ties", "negative zero"])
@pytest.mark.parametrize("extremum", ["max_dim", "min_dim"])
def test_max_and_min_dim_values_are_read_at_their_index(row, extremum):
    n, c = 6, 40
    program = build(lambda e, x: list(e.op(extremum, x, axis=1, keepdim=False)), (n, c))
    text = _row_kernel_source(program)
    assert "np.uintp(min(max(" in text, text
    x = np.random.default_rng(2).uniform(-3, 3, (n, c)).astype(np.float32)
    special = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf, "ties": 3.0, "negative zero": -0.0}[row]
    x[1, 7] = special
    x[3, [2, 30]] = special
    x[4, :] = special                    # a whole row of it
    compiled = check(program, [x])
    # the value is the element at the index, so even the sign of a zero is the reference's
    np.testing.assert_array_equal(np.signbit(compiled([x])[0]), np.signbit(run_program(program, [x])[0]))


@pytest.mark.parametrize("dtype", [float64, int64, bool_])
def test_max_dim_values_of_other_dtypes(dtype):
    program = build(lambda e, x: list(e.op("max_dim", x, axis=1, keepdim=True)), ((5, 33), dtype))
    check(program, random_args(program, np.random.default_rng(3)))


def test_a_position_that_varies_along_the_row_is_not_picked():
    # where(x_int == i, v, 0) summed over the row, with the compared value varying along
    # the row: several elements may match, so it stays an accumulation.
    def body(e, v, k):
        hit = e.eq(k, e.op("iota", shape=(4, 50), axis=1, dtype=int64))
        return e.sum(e.where(hit, v, 0), (1,))
    program = build(body, (4, 50), ((4, 50), int64))
    assert "np.uintp(min(max(" not in _row_kernel_source(program)
    args = random_args(program, np.random.default_rng(4))
    args[1] = np.random.default_rng(5).integers(0, 50, (4, 50))
    check(program, args)


def test_a_non_identity_fallback_is_not_picked():
    # sum(where(t == i, v, 1)) adds 1 for every other element: not a read of one element.
    def body(e, v, t):
        hit = e.eq(e.reshape(t, (4, 1)), e.op("iota", shape=(1, 50), axis=1, dtype=int64))
        return e.sum(e.where(hit, v, 1), (1,))
    program = build(body, (4, 50), ((4,), int64))
    assert "np.uintp(min(max(" not in _row_kernel_source(program)
    args = random_args(program, np.random.default_rng(6))
    args[1] = np.array([0, 49, 50, -1])
    check(program, args)


def test_match_requires_an_iota_along_the_reduced_dim():
    # The position compared along the *outer* dim (iota axis 0) reads a column per row:
    # not one element per row of the reduced dim.
    def body(e, v, t):
        hit = e.eq(e.reshape(t, (1, 50)), e.op("iota", shape=(4, 1), axis=0, dtype=int64))
        return e.sum(e.where(hit, v, 0), (1,))
    program = build(body, (4, 50), ((50,), int64))
    assert "np.uintp(min(max(" not in _row_kernel_source(program)
    args = random_args(program, np.random.default_rng(7))
    args[1] = np.random.default_rng(8).integers(0, 4, 50)
    check(program, args)
    assert picks.Picked(None) != picks.Picked(None)      # positions are compared by identity
