"""Eager sums and means add in torch's CPU order (ir/ops/reduce.py, _torch_row_sums and
_torch_column_sums): bit for bit torch's, for full reductions and reductions over the trailing
or the leading dims of a row-major tensor, in float32 and float64, from a few elements to sums
torch splits among its threads."""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg
from fusegrad.ir import torch_order_jit
from fusegrad.ir.ops import reduce as R

torch = pytest.importorskip("torch", reason="torch's CPU sum is the oracle for the order of additions")

LENGTHS = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 127, 128, 129, 511, 512, 513, 2047, 2048,
           4100, 8192, 16385, 40000, 70001]


@pytest.fixture(autouse=True)
def _torchs_thread_count(monkeypatch):
    """The split of long sums follows the threads torch runs here (its count of physical
    cores may differ from ours on another machine; test_a_long_full_sum_is_split... checks
    the split itself)."""
    monkeypatch.setattr(R, "_torch_threads", torch.get_num_threads)


@pytest.fixture(autouse=True, params=["numpy", "numba"])
def _row_sums_by(request, monkeypatch):
    """Every case both ways: rows summed by the NumPy emulation of torch's cascade, and by
    ir/torch_order_jit.py's loops (which long rows take), forced here for short rows too."""
    monkeypatch.setattr(torch_order_jit, "worth_compiling", lambda rows: request.param == "numba")
    return request.param


_DEFAULT_THREADS = R._torch_threads        # (before the fixture replaces it)


def test_the_thread_count_is_torchs_default():
    """Our count of the threads torch splits a long sum among is torch's own."""
    assert _DEFAULT_THREADS() == torch.get_num_threads()


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("n", LENGTHS)
def test_full_sums_are_torchs_bit_for_bit(n, dtype):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4)).astype(dtype)
    for op in ("sum", "mean"):
        want = getattr(torch.from_numpy(x), op)().item()
        got = getattr(fg.from_numpy(x), op)().item()
        assert got == want, (op, got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_every_short_length_sums_as_torch(dtype):
    """Every length below 600: the short path's cases (loads left over after the groups of
    four or not, tail elements or not) and the first lengths past it."""
    rng = np.random.default_rng(7)
    for n in range(1, 600):
        a = (rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3, n)).astype(dtype)
        assert fg.from_numpy(a).sum().numpy().tobytes() == torch.from_numpy(a).sum().numpy().tobytes(), n


@pytest.mark.parametrize("shape, dims", [
    ((3, 7), (1,)), ((4, 37), (-1,)), ((2, 3, 45), (2,)), ((2, 3, 45), (1, 2)), ((5, 16, 9), None),
    ((6, 1, 600), (-1,)), ((37, 53), None), ((2, 40000), (1,)),
])
def test_trailing_and_full_reductions_of_tensors(shape, dims):
    rng = np.random.default_rng(len(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    for op in ("sum", "mean"):
        want = getattr(torch.from_numpy(x), op)(*(() if dims is None else (dims,))).numpy()
        got = getattr(fg.from_numpy(x), op)(*(() if dims is None else (dims,))).numpy()
        np.testing.assert_array_equal(got, want)


def test_a_transposed_tensor_sums_in_memory_order():
    x = np.random.default_rng(1).standard_normal((37, 53)).astype(np.float32)
    assert fg.from_numpy(x).t().sum().item() == torch.from_numpy(x).t().sum().item()


def test_printed_sums_and_signed_zeros():
    assert repr(fg.full((10,), 0.1).sum()) == "tensor(1.0000)" == repr(torch.full((10,), 0.1).sum())
    assert repr(fg.tensor([-0.0, -0.0]).sum()) == repr(torch.tensor([-0.0, -0.0]).sum()) == "tensor(0.)"


def test_a_long_full_sum_is_split_as_among_torchs_threads(monkeypatch):
    """torch splits a full sum of more than 32768 elements among its threads (its chunks'
    sums added in turn): the emulation follows the thread count torch uses."""
    x = np.random.default_rng(7).standard_normal(100_000).astype(np.float32)
    before = torch.get_num_threads()
    try:
        for threads in (1, 2, 3):
            torch.set_num_threads(threads)
            monkeypatch.setattr(R, "_torch_threads", lambda threads=threads: threads)
            assert fg.from_numpy(x).sum().item() == torch.from_numpy(x).sum().item(), threads
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("n, step", [(17, 2), (1000, 3), (5000, 2), (40000, 2), (100001, 3)])
def test_a_strided_vector_sums_as_torchs_scalar_path(n, step):
    """A 1-D operand whose elements are not adjacent (t[::2]): torch sums it element by element,
    four partial sums at a time (split among threads when long), not by vectors."""
    base = np.random.default_rng(n).standard_normal(n * step).astype(np.float32)
    want = torch.from_numpy(base)[::step].sum().item()
    assert fg.from_numpy(base)[::step].sum().item() == want
    assert fg.from_numpy(base)[::step].mean().item() == torch.from_numpy(base)[::step].mean().item()


LEADING = [((3, 5), (0,)), ((17, 8), (0,)), ((64, 5), (0,)), ((40, 9), (0,)), ((300, 33), (0,)),
           ((33, 100), (0,)), ((64, 256), (0,)), ((1000, 1000), (0,)), ((526, 77), (0,)), ((2000, 17), (0,)),
           ((4096, 40), (0,)), ((100000, 4), (0,)), ((40000, 1), (0,)), ((8, 30, 17), (0,)), ((8, 30, 17), (0, 1)),
           ((2552, 121), (0,)), ((100, 7, 1), (0, 1)), ((16, 16), (0,)),
           ((2, 40), (0,)), ((15, 70), (0,)), ((257, 36), (0,)), ((4097, 20), (0,)), ((70000, 9), (0,))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("shape, dims", LEADING, ids=str)
def test_leading_dim_reductions_are_torchs_bit_for_bit(shape, dims, dtype):
    """A batch dim summed away (a bias gradient, mean(0)): torch sums groups of four vectors of
    columns down a cascade and each column left over as four interleaved partial sums, its
    columns split among threads at 128-byte boundaries when large."""
    x = (np.random.default_rng(sum(shape)).standard_normal(shape) * 10).astype(dtype)
    for op in ("sum", "mean"):
        want = getattr(torch.from_numpy(x), op)(dims).numpy()
        np.testing.assert_array_equal(getattr(fg.from_numpy(x), op)(dims).numpy(), want)


def test_a_wide_leading_sum_splits_its_columns_as_among_torchs_threads(monkeypatch):
    x = np.random.default_rng(8).standard_normal((2000, 77)).astype(np.float32)
    before = torch.get_num_threads()
    try:
        for threads in (1, 2, 3):
            torch.set_num_threads(threads)
            monkeypatch.setattr(R, "_torch_threads", lambda threads=threads: threads)
            np.testing.assert_array_equal(fg.from_numpy(x).sum(0).numpy(), torch.from_numpy(x).sum(0).numpy())
    finally:
        torch.set_num_threads(before)


def test_a_bias_gradient_is_torchs_bit_for_bit():
    data = np.random.default_rng(9).standard_normal((300, 40)).astype(np.float32)
    grads = []
    for lib in (torch, fg):
        bias = lib.zeros(40, requires_grad=True)
        ((lib.from_numpy(data) + bias) ** 2).sum().backward()
        grads.append(bias.grad.numpy())
    np.testing.assert_array_equal(grads[1], grads[0])


@pytest.mark.parametrize("shape", [(1, 1 << 20), (1, (1 << 20) + 77), (64, 20000), (3, 70001)])
def test_long_rows_by_threads_are_the_loops_rows(shape):
    """Rows (and a long row's chunks) summed on threads at once give each one's sum as one
    thread does: the same loop over the same elements."""
    x = np.random.default_rng(shape[1]).standard_normal(shape).astype(np.float32)
    lanes = 8
    whole = torch_order_jit.row_sums(x, lanes, False)
    one = np.array([torch_order_jit.row_sums(x[r:r + 1], lanes, False)[0] for r in range(shape[0])])
    np.testing.assert_array_equal(whole, one)
    if shape[0] == 1:
        parts = torch_order_jit.chunk_sums(x, shape[1] // 3 + 1, lambda part: torch_order_jit.row_sums(part, lanes, False))
        expected = [torch_order_jit.row_sums(x[:, lo:lo + shape[1] // 3 + 1], lanes, False)
                    for lo in range(0, shape[1], shape[1] // 3 + 1)]
        for got, want in zip(parts, expected):
            np.testing.assert_array_equal(got, want)
    want = torch.from_numpy(x).sum(-1).numpy()
    np.testing.assert_array_equal(fg.from_numpy(x).sum(-1).numpy(), want)
