"""Permutes sink past elementwise ops and reductions (ir/permute_sinking.py), and
large strided operands reach kernels as contiguous copies (codegen/layout_copy.py).

Oracles: the reference executor on the program before the pass (random programs
from hypothesis, and the compiled executor on a few of them), NumPy's own copy for
the tiled copy, and torch for the strides of a compiled `x.t() * 2`.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fusegrad as fg
from fusegrad.codegen import VIEW, schedule
from fusegrad.codegen.decompose import decompose_composites
from fusegrad.codegen.layout_copy import MIN_COPY_ELEMENTS, contiguous_copy, needs_copy
from fusegrad.ir import run_program
from fusegrad.ir.passes import simplify
from fusegrad.ir.permute_sinking import sink_permutes
from fusegrad.ir.verifier import verify
from test_codegen_support import build, check, random_args

try:
    import torch
except ImportError:          # torch is an optional oracle
    torch = None


def _permute(e, x, dims):
    return e.op("permute", x, dims=tuple(dims))


def _ops(program):
    return [ins.op for ins in program.instrs]


# ---------------------------------------------------------------------- the pass, by example
def test_a_chain_over_a_permuted_input_runs_unpermuted_and_its_sum_needs_no_permute():
    """W1's chain with its backward on x.permute(2, 0, 1): no permute is left, since the
    sum reduces everything and the gradient comes back as the permute's own VJP."""
    program = build(lambda e, x: e.sum(e.add(e.mul(e.tanh(y := _permute(e, x, (2, 0, 1))), e.sigmoid(y)),
                                              e.exp(e.neg(e.mul(y, y)))), (0, 1, 2)),
                    (4, 5, 6), grad=True)
    assert "permute" in _ops(program)
    sunk = simplify(sink_permutes(decompose_composites(program)))      # as the scheduler runs it
    verify(sunk)
    assert "permute" not in _ops(sunk), sunk
    args = random_args(program, np.random.default_rng(0))
    for got, want in zip(run_program(sunk, args), run_program(program, args)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_returned_elementwise_result_is_the_permute_of_the_unpermuted_loop():
    program = build(lambda e, x: e.mul(_permute(e, x, (1, 0)), 2.0), (3, 5))
    sunk = sink_permutes(program)
    assert _ops(sunk) == ["const", "mul", "permute"], sunk
    assert sunk.instrs[1].inputs[0] is program.inputs[0]


def test_a_full_sized_operand_read_in_order_keeps_the_permute():
    """x.t() * y with y [5, 3]: sinking would read y transposed instead, so nothing moves."""
    program = build(lambda e, x, y: e.mul(_permute(e, x, (1, 0)), y), (3, 5), (5, 3))
    assert _ops(sink_permutes(program)) == ["permute", "mul"]


def test_a_reduction_of_a_permute_reduces_the_matching_axes():
    """sum over axis 2 of x.permute(2, 0, 1) is x summed over axis 1, then permuted (1, 0);
    returned, it is copied (cast), since torch's reduction results are contiguous."""
    program = build(lambda e, x: e.sum(_permute(e, x, (2, 0, 1)), (2,)), (3, 4, 5))
    sunk = sink_permutes(program)
    assert _ops(sunk) == ["sum", "permute", "cast"], sunk
    assert sunk.instrs[0].params == {"axes": (1,), "keepdim": False}
    assert sunk.instrs[1].params == {"dims": (1, 0)}


def test_a_single_element_broadcast_moves_with_the_loop():
    """The backward's seed, expand(reshape(g, (1, 1)), shape), is re-expanded to the unpermuted shape."""
    program = build(lambda e, x, g: e.mul(_permute(e, x, (1, 0)),
                                          e.expand(e.reshape(g, (1, 1)), (5, 3))), (3, 5), ())
    sunk = sink_permutes(program)
    verify(sunk)
    mul = next(ins for ins in sunk.instrs if ins.op == "mul")
    assert mul.inputs[0] is program.inputs[0] and mul.outputs[0].shape == (3, 5)


def test_a_broadcast_cone_is_recomputed_unpermuted():
    """A mean's gradient over a permuted axis, expand(reshape(m, (3, 4, 1))) / 5, read beside
    permute(x): recomputed as expand(reshape(m, (3, 1, 4))) / 5 (a reshape: only a size-1 dim
    moves), so the add runs over x as laid out, and values are the reference's."""
    def fn(e, x, m):
        v = _permute(e, x, (0, 2, 1))
        b = e.div(e.expand(e.reshape(m, (3, 4, 1)), (3, 4, 5)), 5.0)
        return e.mul(e.add(v, b), v)
    program = build(fn, (3, 5, 4), (3, 4))
    sunk = sink_permutes(program)
    verify(sunk)
    add = next(ins for ins in sunk.instrs if ins.op == "add")
    assert add.inputs[0] is program.inputs[0] and add.outputs[0].shape == (3, 5, 4), sunk
    assert _ops(sunk)[-1] == "permute" and _ops(sunk).count("permute") == 1, sunk
    args = random_args(program, np.random.default_rng(0))
    for got, want in zip(run_program(sunk, args), run_program(program, args)):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    check(program, args)


def test_a_cone_that_would_read_across_keeps_the_permute():
    """b = expand(m [4, 5]) beside permute(x): unpermuted it would read m transposed, so the
    add reads the permute instead."""
    def fn(e, x, m):
        return e.add(_permute(e, x, (0, 2, 1)), e.expand(e.reshape(m, (1, 4, 5)), (3, 4, 5)))
    program = build(fn, (3, 5, 4), (4, 5))
    sunk = sink_permutes(program)
    add = next(ins for ins in sunk.instrs if ins.op == "add")
    assert add.inputs[0] is not program.inputs[0] and add.outputs[0].shape == (3, 4, 5), sunk


def test_a_softmax_over_a_permuted_input_runs_unpermuted():
    """softmax(x.t(), -1): the keepdim max and sum broadcast back over the permuted values;
    both are permuted alike, so the whole softmax runs over x as laid out (one permute left,
    for the operand y read in order)."""
    def fn(e, x, y):
        v = _permute(e, x, (1, 0))
        z = e.exp(e.sub(v, e.op("amax", v, axes=(1,), keepdim=True)))
        return e.sum(e.mul(e.div(z, e.sum(z, (1,), keepdim=True)), y), (0, 1))
    program = build(fn, (6, 5), (5, 6), grad=True)
    sunk = simplify(sink_permutes(decompose_composites(program)))
    verify(sunk)
    ops = _ops(sunk)
    first_permute = ops.index("permute")
    assert "amax" in ops[:first_permute] and ops[:first_permute].count("sum") == 1, sunk
    args = random_args(program, np.random.default_rng(0))
    for got, want in zip(run_program(sunk, args), run_program(program, args)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_program_without_permutes_is_returned_as_it_is():
    program = build(lambda e, x: e.tanh(x), (3, 4))
    assert sink_permutes(program) is program


# ---------------------------------------------------------------------- random programs
SHAPE = (2, 3, 4)
UNARY = ["neg", "tanh", "exp", "abs", "sigmoid"]
BINARY = ["add", "mul", "sub", "maximum"]


@st.composite
def _programs(draw):
    """A random program over x [2, 3, 4] permuted, with elementwise ops against the same
    permute, 0-d values, broadcast single elements or operands in order, reductions of
    random axes (keepdim or not) and permutes of permutes; returns (build fn, types)."""
    steps = draw(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 50), st.integers(0, 50)),
                          min_size=1, max_size=8))
    dims = draw(st.permutations(range(3)))

    def fn(e, x, s, y):
        values = [_permute(e, x, dims)]
        for kind, a, b in steps:
            v = values[a % len(values)]
            if kind < 3:
                out = e.op(UNARY[(a + b) % len(UNARY)], v)
            elif kind < 5:
                # (of v's shape, or broadcast to it: a keepdim reduction of v, as softmax's)
                same = [w for w in values if w.type.ndim == v.type.ndim
                        and all(m == n or m == 1 for m, n in zip(w.shape, v.shape))]
                w = same[b % len(same)]
                out = e.op(BINARY[b % len(BINARY)], *((v, w) if a % 2 else (w, v)))
            elif kind == 5:
                out = e.op(BINARY[b % len(BINARY)], v, s)
            elif kind == 6:
                one = e.reshape(s, (1,) * v.type.ndim)
                out = e.mul(v, e.expand(one, v.shape) if b % 2 else one)
            elif kind == 7:
                # an operand in memory order of v's own shape (refuses to sink when v is permuted)
                out = e.add(v, e.expand(e.reshape(e.sum(y, (0, 1, 2)), (1,) * v.type.ndim), v.shape)
                            if v.shape != y.shape else y)
            elif kind == 8 and v.type.ndim > 0:
                axes = sorted({a % v.type.ndim, b % v.type.ndim})[: 1 + a % 2]
                out = e.op(["sum", "amax", "amin"][b % 3], v, axes=tuple(axes), keepdim=bool(b % 2))
            elif kind == 9 and v.type.ndim > 1:
                perms = list(itertools.permutations(range(v.type.ndim)))
                out = _permute(e, v, perms[b % len(perms)])
            else:
                out = e.neg(v)
            values.append(out)
        return values[-2:]
    return fn, [SHAPE, (), tuple(SHAPE[d] for d in dims)]


@settings(max_examples=150, deadline=None)
@given(_programs(), st.booleans())
def test_random_programs_compute_the_same_after_sinking(case, grad):
    fn, types = case
    program = build(fn, *types, grad=grad)
    sunk = sink_permutes(program)
    verify(sunk)
    args = random_args(program, np.random.default_rng(1))
    for k, (got, want) in enumerate(zip(run_program(sunk, args), run_program(program, args))):
        assert got.shape == want.shape and got.dtype == want.dtype, k
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"output {k}\n{program}\n{sunk}")


@settings(max_examples=6, deadline=None)
@given(_programs())
def test_random_programs_compiled_match_the_reference(case):
    """A few of them compiled (each distinct kernel costs a Numba compile)."""
    fn, types = case
    program = build(fn, *types, grad=True)
    check(program, random_args(program, np.random.default_rng(2)), rtol=1e-4, atol=1e-5)


def test_the_scheduled_kernel_reads_a_permuted_input_in_order():
    """No tiling and no transposed index: the loops follow x's memory."""
    program = build(lambda e, x: e.sum(e.tanh(_permute(e, x, (2, 0, 1))), (0, 1, 2)), (4, 5, 6), grad=True)
    sched = schedule(program)
    assert all(ins.op != "permute" for k in sched.kernels for ins in k.instrs)
    check(program, random_args(program, np.random.default_rng(3)))


# ---------------------------------------------------------------------- through fg.compile
def test_a_mean_over_a_permuted_axis_differentiates_in_memory_order():
    """(y * y.mean(-1, keepdim=True)).sum() for y = sigmoid(x.permute(0, 2, 1)): its backward's
    mean gradient is a broadcast cone, recomputed unpermuted, so no kernel operand is copied
    across (three 1M-element transposed copies before); value and gradient as eager."""
    def loss(x):
        y = x.permute(0, 2, 1).sigmoid()
        return (y * y.mean(-1, keepdim=True)).sum()
    x = np.random.default_rng(7).standard_normal((16, 64, 1024)).astype(np.float32)
    compiled = fg.compile(fg.value_and_grad(loss))
    assert "copied contiguous" not in compiled.explain(x)
    value, grad = compiled(x)
    want_value, want_grad = fg.value_and_grad(loss)(x)
    np.testing.assert_allclose(value.item(), want_value.item(), rtol=1e-5)
    np.testing.assert_allclose(grad.numpy(), want_grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(torch is None, reason="torch is the oracle for strides")
@pytest.mark.parametrize("make,dims", [
    (lambda x: x.t() * 2, None),
    (lambda x: (x.permute(2, 0, 1).exp() + 1).sum(-1), (2, 0, 1)),
    (lambda x: x.permute(1, 2, 0).tanh().sum(1, keepdim=True), (1, 2, 0)),
], ids=["t-mul", "permute-sum-last", "permute-sum-keepdim"])
def test_compiled_results_have_torch_values_and_strides(make, dims):
    rng = np.random.default_rng(4)
    shape = (5, 7) if dims is None else (3, 5, 7)
    a = rng.standard_normal(shape).astype(np.float32)
    got = fg.compile(make)(fg.tensor(a))
    want = make(torch.tensor(a))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    assert got.stride() == want.stride()
    assert got.is_contiguous() == want.is_contiguous()


def test_compiled_gradient_through_a_permute_matches_eager():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)

    def loss(x):
        return (x.permute(2, 0, 1).sigmoid() * 3 - x.permute(2, 0, 1)).amax(0).sum()
    got = fg.compile(fg.grad(loss))(fg.tensor(a))
    want = fg.grad(loss)(fg.tensor(a))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------- strided operands
def _layouts():
    rng = np.random.default_rng(6)
    base = rng.standard_normal((6, 8, 10))
    for dtype in (np.float32, np.float64, np.int64, np.bool_):
        b = (base > 0) if dtype is np.bool_ else base.astype(dtype)
        yield b.transpose(2, 0, 1)
        yield b.transpose(1, 2, 0)
        yield b[:, ::2, 1:]
        yield b[::-1, :, ::3].transpose(0, 2, 1)
        yield b[0].T
        yield b[:, :, :1].transpose(2, 1, 0)
        yield np.broadcast_to(b[:1], b.shape)
    big = rng.standard_normal((3, 5, 7, 11)).astype(np.float32)
    yield big.transpose(3, 1, 0, 2)
    yield big.transpose(0, 3, 2, 1)[:, 1:, ::2]


@pytest.mark.parametrize("array", list(_layouts()), ids=lambda a: f"{a.dtype}{a.shape}{a.strides}")
def test_contiguous_copy_is_numpys_copy(array):
    got = contiguous_copy(array)
    assert got.flags.c_contiguous and got.dtype == array.dtype
    np.testing.assert_array_equal(got, np.ascontiguousarray(array))
    assert not np.shares_memory(got, array)


def test_only_large_strided_operands_are_copied():
    big = np.zeros((2, MIN_COPY_ELEMENTS), np.float32)
    assert needs_copy(big.T)
    assert not needs_copy(big)
    assert not needs_copy(big[:, :100].T)                       # small: a strided read is cheaper


def test_a_kernel_gets_a_large_strided_argument_contiguous():
    """A transposed argument (as fg.compile lifts `x.t()`) reaches the kernel C-contiguous, so
    Numba runs its vectorised form; values are the reference's."""
    program = build(lambda e, x: e.sum(e.mul(e.tanh(x), x), (0, 1)), (256, 256), grad=True)
    args = random_args(program, np.random.default_rng(7))
    args[0] = np.asfortranarray(args[0])
    compiled = check(program, args, rtol=1e-4, atol=1e-4)
    kernels = [s.compiled for s in compiled.steps if getattr(s, "compiled", None)]
    layouts = {a.layout for k in kernels for sig in k.dispatcher(False).signatures for a in sig
               if hasattr(a, "layout")}
    assert layouts == {"C"}, layouts


@pytest.mark.parametrize("side,copied", [(256, True), (64, False)], ids=["large: copied", "small: read inline"])
def test_a_large_transposed_input_read_by_a_reduction_is_a_view_step_copied_in_tiles(side, copied):
    """(x.t() * y).sum() keeps its permute (y is full-sized). A large x becomes a view step,
    which the executor copies contiguous before the kernel reads it; a small one is read
    through the permute inline."""
    program = build(lambda e, x, y: e.sum(e.mul(_permute(e, x, (1, 0)), y), (0, 1)), (side, side), (side, side),
                    grad=True)
    sched = schedule(program)
    views = [s for s in sched.steps if s.kind == VIEW and s.instr.inputs[0] is program.inputs[0]]
    assert bool(views) == copied, [s.kind for s in sched.steps]
    compiled = check(program, random_args(program, np.random.default_rng(8)), rtol=1e-4, atol=1e-4)
    if copied:
        kernels = [s.compiled for s in compiled.steps if getattr(s, "compiled", None)]
        assert {a.layout for k in kernels for sig in k.dispatcher(False).signatures for a in sig
                if hasattr(a, "layout")} == {"C"}


def test_an_intermediate_read_across_its_memory_is_copied_once_for_every_kernel():
    """softmax over axis 0 of x (in memory order), then multiplied by y laid out the other
    way: the permute of the softmax is a view step the executor copies contiguous once, in
    tiles, and every kernel reading it gets that copy (C layout); values are the reference's."""
    def fn(e, x, y):
        z = e.exp(e.sub(x, e.op("amax", x, axes=(0,), keepdim=True)))
        t = _permute(e, e.div(z, e.sum(z, (0,), keepdim=True)), (1, 0))
        return [e.sum(e.mul(t, y), (0, 1)), e.mul(e.add(t, y), y)]
    program = build(fn, (128, 300), (300, 128))
    sched = schedule(program)
    copied = [s for s in sched.steps if s.kind == VIEW and s.copied]
    assert len(copied) == 1 and copied[0].instr.op == "permute", [(s.kind, s.why) for s in sched.steps]
    readers = [k for k in sched.kernels if any(v is copied[0].instr.outputs[0] for ins in k.instrs
                                                for v in ins.inputs)]
    assert len(readers) >= 1
    compiled = check(program, random_args(program, np.random.default_rng(9)), rtol=1e-5, atol=1e-6)
    kernels = [s.compiled for s in compiled.steps if getattr(s, "compiled", None)]
    assert {a.layout for k in kernels for sig in k.dispatcher(False).signatures for a in sig
            if hasattr(a, "layout")} == {"C"}
    small = build(fn, (8, 12), (12, 8))            # small: read through the permute inline
    assert not any(s.kind == VIEW for s in schedule(small).steps)


@pytest.mark.skipif(torch is None, reason="torch is the oracle for values and strides")
def test_large_transposed_results_come_back_in_torch_layout():
    """A row-major value a sunk permute left transposed (x.t().contiguous().tanh()), and a
    gradient computed transposed for a contiguous leaf, are copied row-major (in tiles)."""
    rng = np.random.default_rng(10)
    a = rng.standard_normal((300, 200)).astype(np.float32)
    b = rng.standard_normal((200, 300)).astype(np.float32)
    got = fg.compile(lambda x: x.t().contiguous().tanh())(fg.tensor(a))
    want = torch.tensor(a).t().contiguous().tanh()
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    assert got.stride() == want.stride() and got.is_contiguous()

    def step(x, y):
        (x.t() * y).sin().sum().backward()
    x, y = fg.tensor(a, requires_grad=True), fg.tensor(b)
    fg.compile(step)(x, y)
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b)
    step(tx, ty)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert x.grad.stride() == tx.grad.stride()
