"""Eager sums and means add in torch's CPU order (ir/ops/reduce.py, _torch_row_sums): bit for
bit torch's, for full reductions and reductions over the trailing dims of a row-major tensor,
in float32 and float64, from a few elements to full sums torch splits among its threads."""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg
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
