"""Vector norms add up in torch's order (ir/ops/reduce.py, _torch_order_norm).

torch's float32 norm sums in float32: the 2-norm over trailing dims in 8 lanes, the others in
one running sum per result (split among threads for one long result). A 1e6-element norm is
then about 1e-5 off the exact value, more than assert_close allows between torch and an
exact sum; fusegrad reproduces the order, eagerly and in compiled programs (where a norm
over that many elements runs by reference), bit for bit.
"""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg
from fusegrad.ir import torch_order_jit

# (leading or middle dims with kept dims after them, (5000, 3) dim 0 to (2, 3, 700, 5) dims
# (1, 2), add up without moving the reduced dims last: each result's running sum in order)
CASES = [((300000,), None), ((40000,), None), ((3, 5000), 1), ((3, 5000), -1), ((5000, 3), 0),
         ((20, 30, 40), (0, 2)), ((6, 7, 4096), (1, 2)), ((3000, 64), 0), ((8, 2100, 16), 1),
         ((2, 3, 700, 5), (1, 2)), ((2100, 1), 0)]


@pytest.mark.parametrize("lanes_by", ["numpy", "numba"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("p", [2, 1], ids=["p2", "p1"])
@pytest.mark.parametrize("shape, dim", CASES, ids=[f"{s}-{d}" for s, d in CASES])
def test_norms_are_torchs_bit_for_bit(shape, dim, p, dtype, lanes_by, monkeypatch):
    """Lane sums (the trailing 2-norm) and running sums (the others) by NumPy and by
    ir/torch_order_jit.py's compiled loops alike."""
    torch = pytest.importorskip("torch", reason="torch is the oracle for its summation order")
    monkeypatch.setattr(torch_order_jit, "worth_compiling", lambda m: lanes_by == "numba")
    x = (np.random.default_rng(7).standard_normal(shape) * 3).astype(dtype)
    ours = fg.tensor(x).norm(p=p, dim=dim).numpy()
    theirs = torch.tensor(x).norm(p=p, dim=dim).numpy()
    assert ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)


def test_long_float32_norm_keeps_torchs_rounding_error():
    """The exact 2-norm is not torch's: the float32 lanes' rounding is reproduced."""
    x = np.random.default_rng(0).standard_normal(1 << 20).astype(np.float32)
    exact = np.sqrt(np.sum(x.astype(np.float64) ** 2))
    ours = fg.tensor(x).norm().item()
    assert abs(ours - exact) / exact > 1e-6          # (float32 lanes over 131072 steps each)
    lanes = np.add.reduce((x * x).reshape(-1, 8), axis=0, dtype=np.float32)   # each lane in turn
    assert ours == np.sqrt(np.add.accumulate(lanes, dtype=np.float32)[-1])


def test_compiled_long_norm_runs_the_same_order_and_says_so():
    x = fg.tensor(np.random.default_rng(1).standard_normal((300, 700)).astype(np.float32))
    norm = fg.compile(lambda t: t.norm())
    assert norm(x).item() == x.norm().item()
    text = norm.explain(x)
    assert "norm over 210000 elements per result sums them in torch's order" in text
    columns = fg.compile(lambda t: t.norm(p=1, dim=0))
    tall = fg.tensor(np.random.default_rng(3).standard_normal((4096, 3)).astype(np.float32))
    np.testing.assert_array_equal(columns(tall).numpy(), tall.norm(p=1, dim=0).numpy())


def test_gradient_through_a_long_norm():
    torch = pytest.importorskip("torch", reason="torch is the oracle")
    x = np.random.default_rng(2).standard_normal((4, 4096)).astype(np.float32)
    ours = fg.tensor(x, requires_grad=True)
    fg.compile(lambda t: t.norm(dim=1).sum())(ours).backward()
    theirs = torch.tensor(x, requires_grad=True)
    theirs.norm(dim=1).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_lane_sums_take_the_compiled_loop_for_long_rows_once_numba_is_set_up(monkeypatch):
    """Short rows stay in NumPy; a long one takes the loop once Numba's target is set up in the
    process (a compiled kernel ran), or from the JIT_AFTER-th long norm."""
    long, short = np.ones((2, torch_order_jit.JIT_FROM // 2), np.float32), np.ones((3, 100), np.float32)
    assert not torch_order_jit.worth_compiling(short)
    assert not torch_order_jit.worth_compiling(long[:, ::2])          # (not contiguous)
    monkeypatch.setattr(torch_order_jit, "numba_set_up", lambda: False)
    monkeypatch.setattr(torch_order_jit, "_LONG_CALLS", [0])
    assert [torch_order_jit.worth_compiling(long) for _ in range(torch_order_jit.JIT_AFTER)] == \
        [False] * (torch_order_jit.JIT_AFTER - 1) + [True]
    monkeypatch.setattr(torch_order_jit, "_LONG_CALLS", [0])
    monkeypatch.setattr(torch_order_jit, "numba_set_up", lambda: True)
    assert torch_order_jit.worth_compiling(long)


def test_lane_sums_with_inf_and_nan_match_numpys():
    x = np.random.default_rng(4).standard_normal((3, 40000)).astype(np.float32)
    x[0, 5], x[1, 17], x[2, 8] = np.inf, np.nan, 3e19            # (a square overflowing to inf)
    whole = x[:, :40000 // 8 * 8]
    with np.errstate(over="ignore", invalid="ignore"):
        expected = np.add.reduce((whole * whole).reshape(3, -1, 8), axis=1, dtype=np.float32)
    np.testing.assert_array_equal(torch_order_jit.lane_square_sums(x), expected)
