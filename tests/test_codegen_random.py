"""Compiled vs reference on broadcasting patterns and on random programs.

The broadcasting cases pair 0-d, (n,), (1,n), (m,1), (m,n) and rank-3
operands, forward and backward (whose gradients sum over the broadcast dims).
The hypothesis programs chain 1-30 random ops over operands drawn from the
same shapes, with or without their backward. Shapes are few on purpose:
every distinct kernel costs a Numba compile.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fusegrad.ir.ops import broadcast_shapes
from test_codegen_support import build, check, random_args

PAIRS = [((), (3, 4)), ((4,), (3, 4)), ((1, 4), (3, 1)), ((3, 1), (3, 4)), ((), ()), ((1, 1), (4,)),
         ((2, 1, 4), (3, 1)), ((2, 3, 4), (1, 4))]


@pytest.mark.parametrize("sa,sb", PAIRS)
def test_broadcasting_forward_and_backward(sa, sb):
    p = build(lambda e, a, b: [e.mul(e.add(a, b), e.tanh(b)), e.where(e.gt(a, b), a, e.neg(b))], sa, sb, grad=True)
    check(p, random_args(p, np.random.default_rng(len(sa) * 7 + len(sb))))


SHAPES = [(), (4,), (1, 4), (3, 1), (3, 4)]
UNARY = ["neg", "tanh", "sigmoid", "sin", "cos", "abs", "relu"]
BINARY = ["add", "sub", "mul", "maximum", "minimum"]


def _apply(e, kind, arg, xs):
    """Apply one random op (described by `kind`, `arg`) to values from `xs`."""
    a = xs[arg[0] % len(xs)]
    b = xs[arg[1] % len(xs)]
    if kind < len(UNARY):
        return e.op(UNARY[kind], a)
    kind -= len(UNARY)
    if kind < len(BINARY):
        return e.op(BINARY[kind], a, b)
    kind -= len(BINARY)
    if kind == 0:
        return e.div(a, e.add(e.op("abs", b), 1.0))
    if kind == 1:
        return e.where(e.gt(a, b), a, b)
    if kind == 2:
        return e.exp(e.tanh(a))
    # Reductions keep their dims so that every value broadcasts against every other.
    axis = arg[2] % max(len(a.shape), 1)
    if not a.shape:
        return e.neg(a)
    if kind == 3:
        return e.sum(a, (axis,), keepdim=True)
    if kind == 4:
        return e.amax(a, (axis,), keepdim=True)
    if kind == 5:
        return e.op("mean", a, axes=(axis,), keepdim=True)
    if kind == 6:
        return e.op("softmax", a, axis=axis)
    # a total (kept dims: none) beside sums over one axis, read by values of their shapes
    return e.sum(a, tuple(range(len(a.shape))), keepdim=True)


N_KINDS = len(UNARY) + len(BINARY) + 8


def apply_ops(e, ops, xs) -> list:
    """The inputs followed by the value of each random op (`_apply`), applied in turn."""
    values = list(xs)
    for kind, arg in ops:
        values.append(_apply(e, kind, arg, values))
    return values

programs = st.tuples(
    st.lists(st.sampled_from(SHAPES), min_size=1, max_size=3),
    st.lists(st.tuples(st.integers(0, N_KINDS - 1), st.tuples(st.integers(0, 63), st.integers(0, 63),
                                                              st.integers(0, 3))), min_size=1, max_size=30),
    st.booleans(),
    st.integers(0, 2 ** 16),
)


@settings(max_examples=12, deadline=None)
@given(programs)
def test_random_programs(spec):
    shapes, ops, grad, seed = spec

    def body(e, *xs):
        values = apply_ops(e, ops, xs)
        picked = [values[-1], values[len(values) // 2], values[len(values) // 3]] if len(values) > 2 else [values[-1]]
        return list({v.id: v for v in picked}.values())
    p = build(body, *shapes, grad=grad)
    for v in p.outputs:
        assert broadcast_shapes(v.shape, (3, 4)) == (3, 4)
    check(p, random_args(p, np.random.default_rng(seed)), rtol=1e-4, atol=1e-5)


# Kernels with several reductions of one value (a total, column sums, row sums) and
# values that read their results: each such value is written in the epilogue of the
# reductions it reads, looping over its own dims (c * total once went into the total's
# epilogue, which loops over nothing, and wrote one element).
epilogue_programs = st.tuples(
    st.sampled_from([(2, 2), (3, 2), (4, 5), (1, 3)]),
    st.lists(st.sampled_from(UNARY), max_size=3),
    st.lists(st.tuples(st.sampled_from(["total", "columns", "rows", "c*total", "columns*total", "rows*total",
                                        "c*columns"]), st.sampled_from(BINARY)), min_size=1, max_size=4),
    st.integers(0, 2 ** 16),
)


@settings(max_examples=10, deadline=None)
@given(epilogue_programs)
def test_random_values_reading_reductions(spec):
    shape, unary, reads, seed = spec

    def body(e, x, b, c, r):
        d = e.add(x, b)
        for name in unary:
            d = e.op(name, d)
        total, columns, rows = e.sum(e.mul(d, d), (0, 1)), e.sum(d, (0,)), e.sum(e.mul(d, x), (1,))
        found = {"total": total, "columns": columns, "rows": rows}
        outs = []
        for what, op in reads:
            if "*" not in what:
                outs.append(found[what])
                continue
            left, right = what.split("*")
            outs.append(e.op(op, c if left == "c" else found[left], found[right]))
        outs.append(e.mul(r, total))
        return list({v.id: v for v in outs}.values())
    p = build(body, shape, shape[1:], shape[1:], shape[:1])
    check(p, random_args(p, np.random.default_rng(seed)), rtol=1e-4, atol=1e-5)


# Programs around BLAS calls: values that a matmul reads are in memory, so cheap
# elementwise values computed from them may be recomputed by a later kernel (fusion
# rule 5) instead of written; these check that against the reference, with backward.
CHEAP = ["relu", "neg", "abs", "le0", "mul2", "where"]
matmul_programs = st.tuples(
    st.lists(st.tuples(st.sampled_from(CHEAP + ["tanh", "exp"]), st.integers(0, 15)), min_size=2, max_size=8),
    st.lists(st.integers(0, 15), min_size=1, max_size=3),
    st.integers(0, 2 ** 16),
)


def _cheap(e, kind, a, b):
    if kind == "le0":
        return e.where(e.le(a, 0), e.mul(a, 0), b)
    if kind == "mul2":
        return e.mul(a, 2.0)
    if kind == "where":
        return e.where(e.gt(a, b), a, b)
    return e.op(kind, a)


@settings(max_examples=10, deadline=None)
@given(matmul_programs)
def test_random_programs_around_matmuls(spec):
    ops, products, seed = spec

    def body(e, x, w):
        values = [x, e.matmul(x, w)]
        for step, (kind, pick) in enumerate(ops):
            a, b = values[pick % len(values)], values[-1]
            values.append(_cheap(e, kind, a, b))
            if step < len(products):
                values.append(e.matmul(values[products[step] % len(values)], w))
        return e.sum(e.mul(values[-1], values[len(values) // 2]), (0, 1))
    p = build(body, (6, 6), (6, 6), grad=True)
    check(p, random_args(p, np.random.default_rng(seed), low=-1.0, high=1.0), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("reduce", ["amax", "sum", "softmax"])
@pytest.mark.parametrize("shape,axis", [((2, 1, 3), 1), ((3, 1), 1), ((1, 4), 0)])
def test_value_stored_and_reduced_over_a_size_one_dim(reduce, shape, axis):
    """A value the kernel stores and also reduces over a size-1 dim: no inner loops separate
    the phases then, so a later phase must not read the store back before it is written
    (found by the API fuzzer: compiled max(dim=1) of exp(x) gave -inf)."""
    def body(e, x):
        y = e.exp(x)
        if reduce == "softmax":
            r = e.op("softmax", y, axis=axis)
        else:
            r = e.op(reduce, y, axes=(axis,), keepdim=False)
        return [y, r, e.mul(e.sum(y, (axis,), keepdim=True), y)]
    p = build(body, shape)
    check(p, random_args(p, np.random.default_rng(3)))
