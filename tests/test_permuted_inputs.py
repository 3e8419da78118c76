"""Transposed arguments of a compiled program are read in their memory order
(runtime/permuted_inputs.py): a large input that is a dense transpose of contiguous
memory becomes `permute(memory)`, which the permute-sinking pass moves past the
kernels, so no transposing copy is made on the way in or out.

Oracles: the reference executor on the program as traced, torch for values and
strides through fg.compile, fusegrad's eager mode for gradients, and counts of
the executor's contiguous copies and of cache hits and misses.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fusegrad as fg
from fusegrad.codegen.layout_copy import MIN_COPY_ELEMENTS
from fusegrad.ir import run_program
from fusegrad.ir.verifier import verify
from fusegrad.runtime import executor
from fusegrad.runtime.executor import compile_program
from fusegrad.runtime.permuted_inputs import lift_permuted_inputs, memory_order
from test_codegen_support import build, random_args

try:
    import torch
except ImportError:          # torch is an optional oracle
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is the oracle for values and strides")


# ---------------------------------------------------------------------- which layouts
def test_memory_order_of_dense_transposes():
    a = np.zeros((3, 4, 5), np.float32)
    assert memory_order(a.T) == (2, 1, 0)
    assert memory_order(a.transpose(1, 2, 0)) == (2, 0, 1)
    assert np.transpose(a.transpose(1, 2, 0), memory_order(a.transpose(1, 2, 0))).flags.c_contiguous
    assert memory_order(a[0].T) == (1, 0)


@pytest.mark.parametrize("array", [
    np.zeros((3, 4), np.float32),                                   # row-major already
    np.zeros((3, 4), np.float32)[:, ::2].T,                         # a transpose with gaps
    np.broadcast_to(np.zeros((1, 4), np.float32), (3, 4)).T,        # an expand
    np.zeros((3, 4), np.float32)[::-1].T,                           # a negative stride
    np.zeros((5,), np.float32),                                     # one dimension
], ids=["c-order", "strided", "expanded", "flipped", "1-d"])
def test_memory_order_is_none_unless_one_contiguous_block_read_differently(array):
    assert memory_order(array) is None


# ---------------------------------------------------------------------- the rewrite
def test_a_large_transposed_input_becomes_a_permute_of_its_memory():
    side = 256
    program = build(lambda e, x, y: e.sum(e.mul(e.tanh(x), y), (0,)), (side, side), (side, side), grad=True)
    args = random_args(program, np.random.default_rng(0))
    args[0] = np.asfortranarray(args[0])
    lifted, lifted_args = lift_permuted_inputs(program, args)
    assert lifted.instrs[0].op == "permute" and lifted.instrs[0].params["dims"] == (1, 0)
    assert lifted.instrs[0].outputs[0] is program.inputs[0]         # its readers are unchanged
    assert lifted_args[0].flags.c_contiguous and np.shares_memory(lifted_args[0], args[0])
    assert lifted_args[1] is args[1] and lifted.inputs[1] is program.inputs[1]
    for got, want in zip(run_program(lifted, lifted_args), run_program(program, args)):
        np.testing.assert_array_equal(got, want)


def test_small_strided_and_contiguous_inputs_are_left_as_they_are():
    side = 64                                    # 4096 elements: below MIN_COPY_ELEMENTS
    assert side * side < MIN_COPY_ELEMENTS
    program = build(lambda e, x: e.exp(x), (side, side))
    args = [np.asfortranarray(random_args(program, np.random.default_rng(1))[0])]
    assert lift_permuted_inputs(program, args) == (program, args)
    big = build(lambda e, x: e.exp(x), (256, 256))
    rows = np.zeros((256, 512), np.float32)[:, ::2]
    for array in (rows, np.zeros((256, 256), np.float32)):
        assert lift_permuted_inputs(big, [array]) == (big, [array])


# ---------------------------------------------------------------------- through fg.compile
def _chain(x):
    return x.tanh() * x.sigmoid() + (x.abs() + 1.0).log()


def _count_copies(monkeypatch) -> list:
    copies = []
    original = executor.contiguous_copy

    def counting(array):
        copies.append(array.shape)
        return original(array)
    monkeypatch.setattr(executor, "contiguous_copy", counting)
    return copies


@needs_torch
@pytest.mark.parametrize("dims", [(1, 0), (2, 0, 1), (1, 2, 0)], ids=str)
def test_a_compiled_chain_on_a_transposed_argument_copies_nothing(dims, monkeypatch):
    rng = np.random.default_rng(2)
    memory = rng.standard_normal((64, 32, 24)[:len(dims)] if len(dims) == 3 else (256, 192)).astype(np.float32)
    arg = memory.transpose(dims)
    copies = _count_copies(monkeypatch)
    got = fg.compile(_chain)(fg.from_numpy(arg))
    want = _chain(torch.from_numpy(arg))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    assert got.stride() == want.stride()          # torch lays the result out as its operand
    assert copies == []
    assert np.array_equal(memory.transpose(dims), arg)      # the argument is not written


@needs_torch
def test_a_transposed_leaf_gets_torchs_gradient_and_layout():
    rng = np.random.default_rng(3)
    memory = rng.standard_normal((256, 160)).astype(np.float32)
    y = rng.standard_normal((160, 256)).astype(np.float32)

    def loss(x, y):
        return ((_chain(x) - x.mean(0, keepdim=True)) * y).softmax(-1).square().sum()
    x = fg.from_numpy(memory.T).requires_grad_()
    fg.compile(loss)(x, fg.tensor(y)).backward()
    xt = torch.from_numpy(memory.T.copy(order="K")).requires_grad_()
    assert xt.stride() == x.stride()
    loss(xt, torch.from_numpy(y)).backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-6)
    assert x.grad.stride() == xt.grad.stride()


def test_contiguous_and_transposed_arguments_have_their_own_cache_entries():
    rng = np.random.default_rng(4)
    memory = rng.standard_normal((200, 300)).astype(np.float32)
    f = fg.compile(fg.value_and_grad(lambda x: _chain(x).sum()))
    want_value, want_grad = fg.value_and_grad(lambda x: _chain(x).sum())(fg.from_numpy(memory.T.copy()))
    fg.clear_caches()
    counts = []
    for arg in (memory.T, memory.T.copy(), memory.T, memory.T.copy()):
        value, grad = f(fg.from_numpy(arg))
        info = fg.cache_info()
        counts.append((info.hits, info.misses))
        np.testing.assert_allclose(value.item(), want_value.item(), rtol=1e-5)
        np.testing.assert_allclose(grad.numpy(), want_grad.numpy(), rtol=1e-5, atol=1e-6)
    assert counts == [(0, 1), (0, 2), (1, 2), (2, 2)]


@needs_torch
def test_an_in_place_write_to_a_transposed_argument_reaches_its_memory():
    rng = np.random.default_rng(5)
    memory = rng.standard_normal((192, 256)).astype(np.float32)
    mine, theirs = memory.copy(), torch.from_numpy(memory.copy())

    def step(x):
        x.mul_(2).add_(x.exp().sum(0))
        return x @ x.t()[:, :8], x.t()
    got = fg.compile(step)(fg.from_numpy(mine.T))
    want = step(theirs.t())
    np.testing.assert_allclose(mine, theirs.numpy(), rtol=1e-5)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-4, atol=1e-3)
        assert g.stride() == w.stride()


# ---------------------------------------------------------------------- the output's layout
@needs_torch
def test_a_large_result_laid_out_as_torchs_is_copied_in_tiles(monkeypatch):
    """`x.t() * z` keeps its permute (z is read in order); torch lays the result out as x.t(),
    so the kernel's row-major result is copied column-major: in tiles (copy_into)."""
    from fusegrad.codegen import layout_copy
    tiled = []
    original = layout_copy._copy_in_tiles

    def counting(src, dst, pair):
        tiled.append((src.strides, dst.strides))
        return original(src, dst, pair)
    monkeypatch.setattr(layout_copy, "_copy_in_tiles", counting)
    rng = np.random.default_rng(6)
    a, b = (rng.standard_normal((256, 192)).astype(np.float32) for _ in range(2))
    c = rng.standard_normal((192, 256)).astype(np.float32)
    # (z full-sized and read in order; a broadcast column of y.t() instead is recomputed
    # unpermuted since the sinking pass learned broadcast cones, and needs no copy at all)
    fn = lambda x, y, z: (x.t() * z).tanh() + y.t()
    got = fg.compile(fn)(fg.tensor(a), fg.tensor(b), fg.tensor(c))
    want = fn(torch.tensor(a), torch.tensor(b), torch.tensor(c))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    assert got.stride() == want.stride() == (1, 192)
    assert ((256 * 4, 4), (4, 192 * 4)) in tiled           # row-major result -> column-major


def _copy_cases():
    rng = np.random.default_rng(7)
    big = rng.standard_normal((48, 40, 36)).astype(np.float32)
    for src_order in ((0, 1, 2), (2, 1, 0), (1, 2, 0)):
        for dst_order in ((0, 1, 2), (2, 0, 1), (0, 2, 1)):
            src = np.ascontiguousarray(big.transpose(src_order)).transpose(np.argsort(src_order))
            yield src, dst_order
    yield rng.standard_normal((300, 200)).astype(np.float64).T, (0, 1)
    yield rng.standard_normal((2, 3, 64, 300)).astype(np.float32), (0, 1, 3, 2)
    yield rng.standard_normal((10, 20)).astype(np.float32), (1, 0)          # small: NumPy's copy


@pytest.mark.parametrize("src,dst_order", list(_copy_cases()),
                         ids=lambda p: f"{p.shape}{p.strides}" if isinstance(p, np.ndarray) else str(p))
def test_copy_into_is_numpys_copy(src, dst_order):
    from fusegrad.codegen.layout_copy import copy_into
    dst = np.empty([src.shape[d] for d in dst_order], src.dtype).transpose(np.argsort(dst_order))
    copy_into(dst, src)
    np.testing.assert_array_equal(dst, src)


# ---------------------------------------------------------------------- random programs
BIG = (16, 40, 64)                        # 40960 elements: above MIN_COPY_ELEMENTS
_UNARY = ["neg", "tanh", "exp", "abs", "sigmoid"]
_BINARY = ["add", "mul", "sub", "maximum"]


@st.composite
def _programs(draw):
    """(build fn, memory order of x, of y): a random program of elementwise ops, reductions and
    permutes over two [16, 40, 64] inputs, each given as a permute of contiguous memory."""
    steps = draw(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 50), st.integers(0, 50)),
                          min_size=1, max_size=7))
    orders = draw(st.permutations(range(3))), draw(st.permutations(range(3)))

    def fn(e, x, y):
        values = [x, y]
        for kind, a, b in steps:
            v = values[a % len(values)]
            if kind < 2:
                out = e.op(_UNARY[(a + b) % len(_UNARY)], v)
            elif kind < 4:
                same = [w for w in values if w.shape == v.shape]
                out = e.op(_BINARY[b % len(_BINARY)], v, same[b % len(same)])
            elif kind == 4 and v.type.ndim > 0:
                axes = sorted({a % v.type.ndim, b % v.type.ndim})[: 1 + a % 2]
                out = e.op(["sum", "amax"][b % 2], v, axes=tuple(axes), keepdim=bool(b % 2))
            elif kind == 5 and v.type.ndim > 1:
                perms = list(itertools.permutations(range(v.type.ndim)))
                out = e.op("permute", v, dims=perms[b % len(perms)])
            else:
                out = e.mul(v, v)
            values.append(out)
        return values[-2:]
    return fn, orders


def _permuted_args(program, orders, seed):
    """The program's arguments, each the transpose of a contiguous array by `orders[k]`."""
    args = random_args(program, np.random.default_rng(seed))
    for k, order in enumerate(orders):            # (the cotangents after them stay row-major)
        memory = np.ascontiguousarray(args[k].transpose(order))
        args[k] = memory.transpose(np.argsort(order))
    return args


@settings(max_examples=60, deadline=None)
@given(_programs(), st.booleans())
def test_random_programs_on_lifted_inputs_compute_what_they_did(case, grad):
    fn, orders = case
    program = build(fn, BIG, BIG, grad=grad)
    args = _permuted_args(program, orders, 1)
    lifted, lifted_args = lift_permuted_inputs(program, args)
    verify(lifted)
    assert all(a.flags.c_contiguous for a in lifted_args[:2])
    for got, want in zip(run_program(lifted, lifted_args), run_program(program, args)):
        np.testing.assert_array_equal(got, want)


@settings(max_examples=4, deadline=None)
@given(_programs())
def test_random_programs_on_lifted_inputs_compiled_match_the_reference(case):
    """A few compiled (each distinct kernel costs a Numba compile), through the executor that
    fg.compile calls, with its values checked against the reference on the traced program."""
    fn, orders = case
    program = build(fn, BIG, BIG, grad=True)
    args = _permuted_args(program, orders, 2)
    lifted, lifted_args = lift_permuted_inputs(program, args)
    got = compile_program(lifted)(list(lifted_args))
    for g, w in zip(got, run_program(program, args)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
