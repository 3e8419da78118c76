"""Kernel rules for max_dim / min_dim (torch.max(x, dim)) and cat / stack.

max_dim and min_dim decompose into three reductions (the extremum, the first
position holding it, the value there); cat and stack into a select between
their operands, each read through a clamped shift (`pad_edge`). Their compiled
results must equal the reference executor's exactly (they only select
values: ties go to the first position, a NaN wins, a zero keeps its sign),
their schedules must run no reference step, and fg.compile'd functions using
them must match torch with no "no kernel rule" warning. Programs are few and
small: every distinct kernel costs a Numba compile.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import fusegrad as fg
from fusegrad.codegen import KERNEL, REFERENCE, schedule
from fusegrad.ir import bool_, float64, int64, run_program
from fusegrad.ir.ops.movement import MAX_CAT_OPERANDS
from test_codegen_support import build, check, random_args

# Values that make ties, NaNs, infinities and signed zeros likely.
SPECIAL = [-1.0, -0.0, 0.0, 2.0, 2.0, np.inf, -np.inf, np.nan]


def kinds(sched) -> list:
    return [s.kind for s in sched.steps]


def check_exact(program, args):
    """Compiled == reference exactly (NaN where NaN, the sign of every zero), with
    no reference step in the schedule and no RuntimeWarning."""
    assert REFERENCE not in kinds(schedule(program))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        compiled = check(program, args, rtol=0, atol=0)
        got = compiled(list(args))
    for g, w in zip(got, run_program(program, list(args))):
        g, w = np.asarray(g), np.asarray(w)
        if w.dtype.kind == "f":
            np.testing.assert_array_equal(np.signbit(g), np.signbit(w))
    return compiled


def extremum(e, x, op, axis, keepdim):
    """values * 3 (an elementwise neighbour, exact) and indices of max_dim / min_dim."""
    values, indices = e.op(op, x, axis=axis % max(len(x.shape), 1), keepdim=keepdim)
    return [e.mul(values, 3.0), indices]


# ------------------------------------------------------------------ max_dim / min_dim
def _rows_and_columns(e, x):
    return (extremum(e, x, "max_dim", -1, False) + extremum(e, x, "min_dim", 1, True) +
            extremum(e, x, "max_dim", 0, False))


ROWS_AND_COLUMNS = build(_rows_and_columns, (4, 6), grad=True)


@given(hnp.arrays(np.float32, (4, 6), elements=st.sampled_from(SPECIAL)))
def test_max_min_dim_ties_nan_and_signed_zeros(x):
    """One program (so one compile): max over the last dim (a row kernel), min with
    keepdim, max over the first dim (tail reductions); forward and backward."""
    args = random_args(ROWS_AND_COLUMNS, np.random.default_rng(0))
    check_exact(ROWS_AND_COLUMNS, [x] + args[1:])


@pytest.mark.parametrize("shape,op,axis,keepdim", [
    ((7,), "max_dim", -1, False),         # a reduction to one value
    ((3, 1, 4), "min_dim", 1, True),      # a size-1 reduced dim
    ((2, 3, 4), "max_dim", -2, False),    # a middle dim: tail reductions
    ((1, 5), "min_dim", -1, False),       # a size-1 kept dim
])
def test_max_min_dim_shapes(shape, op, axis, keepdim):
    p = build(lambda e, x: extremum(e, x, op, axis, keepdim), shape, grad=True)
    rng = np.random.default_rng(len(shape))
    args = random_args(p, rng)
    args[0] = rng.choice(np.float32([-1, 0, 1, 2]), size=shape)     # ties
    check_exact(p, args)


@pytest.mark.parametrize("dtype", [int64, bool_])
def test_max_min_dim_integer_and_bool(dtype):
    p = build(lambda e, x: [*e.op("max_dim", x, axis=1, keepdim=False), *e.op("min_dim", x, axis=1, keepdim=True)],
              ((4, 5), dtype))
    check_exact(p, random_args(p, np.random.default_rng(3)))


def test_max_dim_first_index_across_blocks():
    """A reduction to one value runs in blocks of 4096: the first of equal maxima
    (or the first NaN) is found across blocks."""
    p = build(lambda e, x: list(e.op("max_dim", x, axis=0, keepdim=False)), (10000,))
    x = np.zeros(10000, np.float32)
    x[[5000, 9000]] = 7.0
    check_exact(p, [x])
    x[[9500, 6000]] = np.nan
    check_exact(p, [x])


def test_max_dim_with_backward_is_one_kernel():
    """Along the last dim the three reductions are phases of one row kernel, and the
    backward (the gradient at each row's index) joins it."""
    p = build(lambda e, x: e.op("max_dim", e.mul(x, 2.0), axis=1, keepdim=False)[0], (5, 8), grad=True)
    sched = schedule(p)
    assert kinds(sched) == [KERNEL]
    assert sched.kernels[0].analysis.phases == 3


# ------------------------------------------------------------------ cat / stack
CAT_CASES = {
    "three_along_0": (lambda e, x, y, z: e.mul(e.op("cat", x, y, z, axis=0), 3.0), [(3, 4), (1, 4), (2, 4)]),
    "size1_dims": (lambda e, x, y: e.op("cat", x, y, axis=1), [(1, 2, 4), (1, 3, 4)]),
    "stack_middle": (lambda e, x, y, z: e.op("stack", x, y, z, axis=1), [(2, 3)] * 3),
    "stack_scalars": (lambda e, x, y: e.mul(e.op("stack", x, y, axis=0), 3.0), [(), ()]),
    "nested": (lambda e, x, y, z: e.op("cat", e.op("cat", x, e.mul(y, 3.0), axis=1), z, axis=1),
               [(2, 3), (2, 4), (2, 2)]),
    # A row sum read through a clamped shift cannot share the sum's kernel: a kernel of its own.
    "reduced_operand": (lambda e, x, y: e.op("cat", e.sum(x, (1,)), y, axis=0), [(3, 4), (2,)]),
    "float64": (lambda e, x, y: e.op("stack", x, y, axis=1), [((5,), float64), ((5,), float64)]),
}


@pytest.mark.parametrize("name", sorted(CAT_CASES))
def test_cat_stack_forward_and_backward(name):
    fn, types = CAT_CASES[name]
    p = build(fn, *types, grad=True)
    # values on a 1/8 grid, so that a sum (reduced_operand's) is exact in any order: a compiled
    # sum may be reassociated by LLVM, differently by the CPU's vector width
    args = [(np.round(a * 8) / 8).astype(a.dtype) for a in random_args(p, np.random.default_rng(len(name)))]
    check_exact(p, args)


@pytest.mark.parametrize("dtype", [int64, bool_])
def test_cat_stack_integer_and_bool(dtype):
    p = build(lambda e, x, y: [e.op("cat", x, y, axis=0), e.op("stack", x, x, y, axis=2)],
              ((2, 3), dtype), ((2, 3), dtype))
    check_exact(p, random_args(p, np.random.default_rng(4)))


def test_cat_fuses_with_its_producer_and_consumer():
    """exp(cat(tanh(x), y)): one kernel, each operand read in place."""
    p = build(lambda e, x, y: e.exp(e.op("cat", e.tanh(x), y, axis=1)), (3, 4), (3, 5))
    assert kinds(schedule(p)) == [KERNEL]
    check(p, random_args(p, np.random.default_rng(5)))


def test_cat_declines_past_the_operand_limit():
    """Too many operands: cat runs by reference, by design (no warning; explain() says why)."""
    n = MAX_CAT_OPERANDS + 1
    p = build(lambda e, *xs: e.op("cat", *xs, axis=0), *[(1, 2)] * n)
    steps = [s for s in schedule(p).steps if s.kind == REFERENCE]
    assert [s.instr.op for s in steps] == ["cat"] and not steps[0].missing_rule
    assert steps[0].why == "cat with these attributes has no decomposition; it runs by its reference implementation"
    assert REFERENCE not in kinds(schedule(build(lambda e, *xs: e.op("cat", *xs, axis=0), *[(1, 2)] * (n - 1))))


def test_cat_with_an_empty_operand_runs_by_reference_without_a_warning():
    p = build(lambda e, x, y: e.op("cat", x, y, axis=0), (0, 3), (2, 3))
    steps = schedule(p).steps
    assert [s.kind for s in steps] == [REFERENCE] and not steps[0].missing_rule


# ------------------------------------------------------------------ fg.compile vs torch
def _step(L, x, y):
    v, i = L.max(x, dim=-1)
    m, j = L.min(y, -2, keepdim=True)
    c = L.cat([x.tanh(), y * 2], dim=-2)
    s = L.stack([x, y], dim=-1)
    loss = (v * v).sum() + m.exp().sum() + (c * c).mean() + s.sin().sum()
    loss.backward()
    return loss, i, j, c, s


def _run(L, step, xa, ya):
    x, y = L.tensor(xa, requires_grad=True), L.tensor(ya, requires_grad=True)
    outs = step(L, x, y)
    return [o.detach().numpy() for o in outs] + [x.grad.numpy(), y.grad.numpy()]


def test_compiled_max_cat_stack_match_torch():
    """torch.max/min(x, dim) (ties and a NaN row), fg.cat and fg.stack with negative dims,
    .backward() inside fg.compile: torch's values and grads, and no RuntimeWarning."""
    torch = pytest.importorskip("torch", reason="torch is the oracle for these ops")
    rng = np.random.default_rng(6)
    xa, ya = rng.standard_normal((2, 3, 4)).astype(np.float32), rng.standard_normal((2, 3, 4)).astype(np.float32)
    xa[0, 1, [0, 2]] = 5.0                    # a tie: the first index wins
    ya[0, [0, 2], 1] = -5.0
    ya[1, 2, 3] = np.nan                      # a NaN wins min
    compiled = fg.compile(_step)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = _run(fg, compiled, xa, ya)
    want = _run(torch, _step, xa, ya)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert "reference" not in compiled.explain(fg, *[fg.tensor(a, requires_grad=True) for a in (xa, ya)])


def test_compiled_cat_reuses_kernels_for_a_new_batch_size():
    """cat's offsets are kernel arguments: another batch size compiles nothing."""
    f = fg.compile(lambda a, b: fg.cat([a * 2, b], 0).exp())
    f(fg.ones(5, 3), fg.ones(5, 3))
    before = fg.cache_info().kernels_compiled
    out = f(fg.ones(7, 3), fg.full((7, 3), 2.0))
    assert fg.cache_info().kernels_compiled == before
    np.testing.assert_allclose(out.numpy(), np.exp(np.full((14, 3), 2.0, np.float32)), rtol=1e-6)


def test_compiled_cat_and_stack_of_one_tensor_are_copies():
    """cat([x]) / stack([x]) return new memory, as in torch: writing to the result
    leaves x alone."""
    x = fg.ones(3)
    for fn in (lambda t: fg.cat([t]), lambda t: fg.stack([t])):
        out = fg.compile(fn)(x)
        out.add_(1)
        np.testing.assert_array_equal(x.numpy(), np.ones(3, np.float32))
        np.testing.assert_array_equal(out.numpy().ravel(), np.full(3, 2.0, np.float32))
