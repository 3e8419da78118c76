"""Differential tests: every op of the table, compiled vs the reference executor.

Each case is a small program (forward, and forward + backward where the op
is differentiable); the compiled outputs must equal `run_program`'s within
float32 tolerance. Shapes broadcast (3,4) against (4,) so every kernel also
exercises broadcast loads; test_codegen_broadcast.py covers the patterns.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fusegrad.codegen import REFERENCE, schedule
from fusegrad.codegen.kernel_source import generate
from fusegrad.ir import bool_, float32, float64, int64
from fusegrad.ir.ops.movement import index_shape
from test_codegen_support import build, check, random_args

M, N = (3, 4), (4,)
F64 = ((3, 4), float64)

BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "pow"]
UNARY = ["neg", "exp", "sin", "cos", "tanh", "sigmoid", "relu", "abs"]
POSITIVE_UNARY = ["log", "sqrt"]


def test_binary_ops():
    """All binary arithmetic ops, forward and backward, (3,4) against (4,)."""
    rng = np.random.default_rng(1)
    p = build(lambda e, x, y: [e.op(name, x, y) for name in BINARY], M, N, grad=True)
    check(p, random_args(p, rng, positive=(0, 1)), rtol=1e-4)


def test_binary_ops_signed():
    rng = np.random.default_rng(2)
    p = build(lambda e, x, y: [e.op(name, x, y) for name in BINARY if name not in ("div", "pow")], N, M,
              grad=True)
    check(p, random_args(p, rng))


def test_unary_ops():
    """All unary math ops, forward and backward."""
    rng = np.random.default_rng(3)
    p = build(lambda e, x, q: [e.op(name, x) for name in UNARY] + [e.op(name, q) for name in POSITIVE_UNARY],
              M, M, grad=True)
    check(p, random_args(p, rng, positive=(1,)))


def test_unary_float64_and_sign():
    rng = np.random.default_rng(4)
    p = build(lambda e, x: [e.tanh(e.exp(x)), e.sign(x), e.sigmoid(x)], F64, grad=True)
    check(p, random_args(p, rng), rtol=1e-12, atol=1e-13)


def test_clamp_where():
    rng = np.random.default_rng(5)
    p = build(lambda e, x, lo, hi, c: [e.op("clamp", x, lo, hi), e.where(c, x, lo)],
              M, N, ((1, 4), float32), ((3, 1), bool_), grad=True)
    args = random_args(p, rng)
    args[2] = (args[1] + np.float32(1.5)).reshape(1, 4)   # hi > lo mostly
    check(p, args)


def test_comparisons_and_logic():
    rng = np.random.default_rng(6)

    def body(e, x, y, a, b):
        return [e.lt(x, y), e.le(x, y), e.gt(x, y), e.ge(x, y), e.eq(x, y), e.ne(x, y),
                e.logical_and(a, b), e.op("logical_not", a), e.logical_and(e.lt(x, y), a)]
    p = build(body, M, N, ((3, 4), bool_), ((4,), bool_))
    args = random_args(p, rng)
    args[0] = np.round(args[0]).astype(np.float32)   # ties for eq / le / ge
    args[1] = np.round(args[1]).astype(np.float32)
    check(p, args)


def test_casts():
    rng = np.random.default_rng(7)

    def body(e, x, i, b):
        return [e.cast(x, float64), e.cast(e.mul(x, 3.0), int64), e.cast(b, float32), e.cast(i, float32),
                e.cast(x, bool_), e.add(e.cast(i, float64), e.cast(x, float64))]
    p = build(body, M, ((3, 4), int64), ((4,), bool_), grad=True)
    args = random_args(p, rng)
    args[0][0, 0] = 0.0
    check(p, args)


def test_integer_arithmetic():
    rng = np.random.default_rng(8)

    def body(e, i, j):
        return [e.add(i, j), e.mul(i, j), e.sub(i, j), e.maximum(i, j), e.op("abs", i), e.neg(i),
                e.sum(i, (1,)), e.amax(i, (0,)), e.op("relu", i), e.sign(i), e.where(e.gt(i, j), i, j)]
    p = build(body, ((3, 4), int64), ((4,), int64))
    check(p, random_args(p, rng))


def test_const_and_iota():
    rng = np.random.default_rng(9)

    def body(e, x):
        k = e.op("iota", shape=(3, 4), axis=1, dtype=int64)
        r = e.op("iota", shape=(3, 4), axis=0, dtype=float32)
        return [e.add(x, e.const(2.5, x)), e.mul(e.cast(k, float32), x), e.add(r, x),
                e.const(7.0, float32, (2, 2)), e.op("iota", shape=(5,), axis=0, dtype=int64)]
    p = build(body, M, grad=True)
    check(p, random_args(p, rng))


def test_iotas_reference_is_a_broadcast_of_one_range():
    """Not a materialised index array: a max's gradient compares it with the argmax, which read
    32 MiB for a [4096, 1024] int64 iota (eager x.max(1) value-and-grad 10.4 -> 8 ms)."""
    from fusegrad.ir.ops import OPS
    got = OPS["iota"].ref(shape=(3, 4, 5), axis=1, dtype=int64)
    np.testing.assert_array_equal(got, np.broadcast_to(np.arange(4).reshape(1, 4, 1), (3, 4, 5)))
    assert got.dtype == np.int64 and got.strides == (0, 8, 0) and not got.flags.writeable


REDUCTIONS = [((1,), False), ((0,), True), ((0, 1), False)]


def test_reductions():
    """sum, amax and amin over trailing, leading and all axes, forward and backward."""
    rng = np.random.default_rng(10)
    p = build(lambda e, x: [e.op(op, e.mul(x, x), axes=axes, keepdim=keepdim)
                            for op in ("sum", "amax", "amin") for axes, keepdim in REDUCTIONS], (5, 6), grad=True)
    check(p, random_args(p, rng))


def test_reduction_nan_propagates():
    p = build(lambda e, x: [e.amax(x, (1,)), e.op("amin", x, axes=(0,), keepdim=False), e.sum(x, (1,))], (3, 4))
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    x[1, 2] = np.nan
    check(p, [x])


def test_composites():
    rng = np.random.default_rng(11)

    def body(e, x):
        return [e.op("mean", x, axes=(1,), keepdim=True), e.op("norm", x, p=2, axes=(0,), keepdim=False),
                e.op("norm", x, p=1, axes=(0, 1), keepdim=False), e.op("softmax", x, axis=1),
                e.op("log_softmax", x, axis=0)]
    p = build(body, (5, 6), grad=True)
    check(p, random_args(p, rng))


def test_variance_and_standard_deviation():
    rng = np.random.default_rng(12)

    def body(e, x):
        return [e.op("var", x, axes=(1,), correction=1.0, keepdim=True), e.op("std", x, axes=(0,), correction=0.0,
                                                                             keepdim=False),
                e.op("var", x, axes=(0, 1), correction=2.0, keepdim=False), e.op("std", x, axes=(1,), correction=1.0,
                                                                              keepdim=False)]
    p = build(body, (5, 6), grad=True)
    check(p, random_args(p, rng), rtol=1e-4)


@pytest.mark.parametrize("bias_shape", [(5,), (1,), ()], ids=str)
def test_addmm_and_mse_loss(bias_shape):
    """The one-node ops of nn.functional.linear and mse_loss, forward and backward, through
    their decompositions (no reference step) against their NumPy references."""
    rng = np.random.default_rng(15)

    def body(e, bias, x, w, t):
        y = e.op("addmm", bias, x, e.permute(w, (1, 0)))
        return [e.op("mse_loss", e.tanh(y), t, reduction=r) for r in ("mean", "sum", "none")]
    p = build(body, bias_shape, (4, 3), (5, 3), (4, 5), grad=True)
    assert REFERENCE not in [step.kind for step in schedule(p).steps]
    check(p, random_args(p, rng), rtol=1e-4, atol=1e-6)


def test_softplus_and_leaky_relu_backward_ops():
    """softplus's and leaky_relu's gradients are torch's backward ops (softplus_backward,
    leaky_relu_backward), and those ops' own gradients (a create_graph backward's): each
    through its decomposition in a kernel against the NumPy references, with inputs past
    softplus's threshold (x * beta > 3) and on both sides of leaky_relu's kink."""
    rng = np.random.default_rng(23)

    def body(e, x, slope, g):
        return [e.op("softplus", x, beta=2.0, threshold=3.0), e.op("leaky_relu", x, slope),
                e.op("softplus_backward", g, x, beta=2.0, threshold=3.0), e.op("leaky_relu_backward", g, x, slope)]
    p = build(body, M, (), M, grad=True)
    assert {"softplus_backward", "leaky_relu_backward", "sigmoid_backward"} <= {ins.op for ins in p.instrs}
    assert REFERENCE not in [step.kind for step in schedule(p).steps]
    check(p, random_args(p, rng, low=-3.0, high=3.0))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("rows", [7, None], ids=["2d", "1d"])
def test_nll_loss_and_its_backward_op(reduction, weighted, rows):
    """nll_loss's gradient is the nll_loss_backward op: its NumPy reference (zeros and a
    scatter) equals its decomposition in a kernel, with ignored targets (-1 of -3..3)."""
    rng = np.random.default_rng(19)
    lp_shape, t_shape = ((rows, 4), (rows,)) if rows else ((4,), ())

    def body(e, lp, target, *weight):
        classes = e.op("iota", shape=(4,), axis=0, dtype=int64)
        return [e.op("nll_loss", e.tanh(lp), target, classes, *weight, reduction=reduction, ignore_index=-1)]
    types = [lp_shape, (t_shape, int64)] + ([(4,)] if weighted else [])
    p = build(body, *types, grad=True)
    assert "nll_loss_backward" in {ins.op for ins in p.instrs}
    assert REFERENCE not in [step.kind for step in schedule(p).steps]
    args = random_args(p, rng)
    args[1] = np.clip(args[1], -1, 3)
    check(p, args, rtol=1e-5, atol=1e-6)


def test_fallback_ops_run_by_reference():
    rng = np.random.default_rng(12)

    def body(e, x, y):
        vals, idx = e.op("max_dim", x, axis=1, keepdim=False)
        cat = e.op("cat", x, y, axis=0)
        st = e.op("stack", x, y, axis=1)
        put = e.op("index_put", x, e.const(0.0, x), index=(("i", 1),))
        norm3 = e.op("norm", x, p=3, axes=(1,), keepdim=False)
        return [e.mul(vals, 2.0), idx, e.exp(cat), st, e.add(put, 1.0), norm3]
    p = build(body, M, M, grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        compiled = check(p, random_args(p, rng, positive=(0, 1)), rtol=1e-4)
    assert "reference" in compiled.explain()


class _Twice:
    """A custom_call function object (ir/ops/custom.py): y = 2 * x, opaque to codegen."""
    vjp_fn = None

    def __init__(self, t):
        self.out_types = [t]

    def run(self, x):
        return (2 * x,)


def test_opaque_custom_call_runs_by_reference():
    rng = np.random.default_rng(18)
    p = build(lambda e, x: e.exp(e.op("custom_call", e.tanh(x), fn=_Twice(x.type))), M)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        compiled = check(p, random_args(p, rng))
    assert [getattr(s, "step", None) and s.step.kind or "kernel" for s in compiled.steps] == \
        ["kernel", "reference", "kernel"]


def test_movement():
    rng = np.random.default_rng(13)

    def body(e, x, z):
        t = e.permute(e.tanh(x), (1, 0))                      # (4, 3), in kernel
        r = e.reshape(e.exp(x), (3, 1, 4))                     # size-1 insert: index arithmetic
        g = e.reshape(e.mul(x, 2.0), (2, 6))                   # general reshape: a view
        s = e.op("getitem", e.sin(x), index=(("s", 0, 3, 2), ("i", 1)))
        w = e.expand(e.reshape(z, (1, 4)), (3, 4))
        return [e.add(t, 1.0), e.mul(r, 3.0), e.sub(g, 1.0), e.exp(s), e.mul(w, x), e.permute(x, (1, 0))]
    p = build(body, M, N, grad=True)
    check(p, random_args(p, rng))


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
                                   ((2, 3, 4), (4, 5))])
def test_matmul(sa, sb):
    rng = np.random.default_rng(14)
    p = build(lambda e, a, b: e.tanh(e.matmul(e.op("relu", a), b)), sa, sb, grad=True)
    check(p, random_args(p, rng), rtol=1e-4, atol=1e-5)


def test_empty_tensors():
    """Zero-size dims: loops that do not run, sums of nothing, composites of nothing."""
    rng = np.random.default_rng(15)
    p = build(lambda e, x, y: [e.sum(x, (0,)), e.sum(x, (0, 1)), e.exp(x), e.sum(y, (1,)),
                               e.op("softmax", y, axis=1)], (0, 3), (4, 0))
    check(p, random_args(p, rng))


def test_integer_and_bool_reductions():
    rng = np.random.default_rng(16)

    def body(e, i, b):
        return [e.sum(i, (0,)), e.sum(i, (0, 1)), e.amax(i, (1,), keepdim=True),
                e.op("amin", i, axes=(0,), keepdim=False), e.amax(b, (0,)), e.op("amin", b, axes=(1,), keepdim=False)]
    p = build(body, ((4, 3), int64), ((4, 3), bool_))
    check(p, random_args(p, rng))


def test_rank3_reductions_float64():
    """Tail reductions over leading and middle axes of a rank-3 space, with gradients."""
    rng = np.random.default_rng(17)
    p = build(lambda e, x: [e.sum(x, (0, 2)), e.sum(x, (1,), keepdim=True), e.amax(x, (0,)),
                            e.op("log_softmax", x, axis=2)], ((3, 4, 5), float64), grad=True)
    check(p, random_args(p, rng), rtol=1e-12, atol=1e-12)


INDEX_PUT_CASES = [  # (x shape, index, value shape): copy_/fill_ (empty index), ints, step-1 slices, mixes
    ((4, 5), (), (4, 5)), ((4, 5), (), ()), ((4, 5), (("i", 2),), (5,)), ((4, 5), (("s", 1, 3, 1),), (2, 5)),
    ((4, 5), (("s", 0, 4, 1), ("s", 1, 4, 1)), (4, 3)), ((4, 5), (("i", 0), ("s", 2, 5, 1)), (3,)),
    ((4, 5), (("s", 1, 3, 1), ("i", 4)), (2,)), ((3, 4, 5), (("i", 1), ("s", 1, 3, 1)), (2, 5)),
    ((4, 5), (("s", 1, 3, 1),), ()), ((4, 5), (("i", 3), ("i", 2)), ()),
    # strided slices: v spread over every step-th place, ending on the last place or before it
    # (a place past the last element's reads the clamped last element, and is outside)
    ((4, 5), (("s", 0, 4, 2),), (2, 5)), ((7, 3), (("s", 1, 7, 4),), (2, 3)), ((7, 3), (("s", 0, 3, 2),), (2, 3)),
    ((6, 7), (("s", 1, 6, 2), ("s", 0, 7, 3)), (3, 3)), ((3, 7, 2), (("i", 2), ("s", 2, 7, 2)), (3, 2)),
    ((3, 8, 2), (("s", 0, 3, 1), ("s", 7, 8, 3)), (3, 1, 2)), ((5, 9), (("s", 0, 5, 1), ("s", 3, 9, 5)), ()),
    ((4, 5), (("s", 1, 4, 2), ("i", 3)), (1,))]


@pytest.mark.parametrize("shape,index,value_shape", INDEX_PUT_CASES, ids=str)
def test_index_put_fuses(shape, index, value_shape):
    """t[index] = v (and copy_/fill_/zero_) is a select in a kernel, forward and backward,
    strided slices included."""
    p = build(lambda e, x, v: e.op("index_put", e.tanh(x), v, index=index), shape, value_shape, grad=True)
    assert REFERENCE not in [s.kind for s in schedule(p).steps]
    check(p, random_args(p, np.random.default_rng(16)))


def test_index_put_of_a_strided_slice_reads_its_value_spread():
    """Along a strided dim, v is read at (place - start) // step, clamped (pad_edge's step):
    the kernel's index arithmetic, with no division by a kernel argument."""
    p = build(lambda e, x, v: e.op("index_put", x, v, index=(("s", 0, 4, 1), ("s", 1, 9, 3))), (4, 9), (4, 3))
    assert REFERENCE not in [s.kind for s in schedule(p).steps]
    [kernel] = schedule(p).kernels
    assert "(max(i1 - 1, 0) // 3)" in generate(kernel, "fusegrad.codegen.vmath").functions[0][2]
    check(p, random_args(p, np.random.default_rng(17)))


def test_a_cast_to_int64_of_an_inf_or_nan_made_in_the_kernel_is_torchs_int64_min():
    """LLVM's float-to-int conversion of inf or nan is undefined (it gave -105); torch's CPU
    cast gives INT64_MIN, and so does the reference (NumPy's astype on x86)."""
    import fusegrad as fg
    x = np.array([1.5, -2.7, np.inf, -np.inf, np.nan, 3e19, -1e30, 7.0], np.float32)
    want = (x * 1).astype(np.int64)
    got = fg.compile(lambda t: (t * 1).long())(fg.tensor(x)).numpy()
    np.testing.assert_array_equal(got, want)
    assert got[2] == np.iinfo(np.int64).min
    logs = fg.compile(lambda t: fg.log(t).long())(fg.tensor([False, True])).numpy()
    np.testing.assert_array_equal(logs, [np.iinfo(np.int64).min, 0])


@st.composite
def _boxes(draw):
    """(x shape, normalised basic index, value shape) with strided slices among the index."""
    shape = tuple(draw(st.lists(st.integers(1, 9), min_size=1, max_size=3)))
    index = []
    for size in shape[:draw(st.integers(1, len(shape)))]:
        if draw(st.booleans()) and size > 1:
            start = draw(st.integers(0, size - 1))
            index.append(("s", start, draw(st.integers(start + 1, size)), draw(st.integers(1, 4))))
        else:
            index.append(("i", draw(st.integers(0, size - 1))))
    target = index_shape(shape, tuple(index))
    value = target[draw(st.integers(0, len(target))):]          # a suffix broadcasts
    return shape, tuple(index), tuple(1 if draw(st.booleans()) and s > 1 else s for s in value)


@settings(max_examples=12, deadline=None, derandomize=True)
@given(_boxes())
def test_index_put_of_random_boxes_matches_the_reference(case):
    """Random boxes of integers and slices with steps: the select's kernel, forward and
    backward, against the reference executor."""
    shape, index, value_shape = case
    p = build(lambda e, x, v: e.op("index_put", e.tanh(x), v, index=index), shape, value_shape, grad=True)
    assert REFERENCE not in [s.kind for s in schedule(p).steps]
    check(p, random_args(p, np.random.default_rng(19)))
