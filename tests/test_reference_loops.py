"""The reference computations' Numba loops (ir/reference_loops.py) against their NumPy forms.

Large float32 erfs (an eager erf or exact GELU, a reference run of a compiled call) take the
erf loop; its values must be erf64's rounded to float32, bit for bit. Running sums (cumsum
along the last dim) take the scan loop: NumPy's float64 cumsum's values, and torch's."""
import numpy as np
import pytest

import fusegrad as fg
from fusegrad.ir.reference_loops import erf_into
from fusegrad.ir.ops import erf_gelu
from fusegrad.ir.ops.erf_gelu import erf64

torch = pytest.importorskip("torch", reason="torch is the oracle for the GELU values")

EDGES = [0.0, -0.0, 0.46875, -0.46875, 4.0, -4.0, 27.0, -27.0, 26.99, 5e-45, -1e-40, 1e-30, 3.4e38, -3.4e38,
         np.inf, -np.inf, np.nan, 0.5, 3.999, 4.001, 1.0, -2.5]


def _float32_sweep():
    """Every 4099th float32 bit pattern (all exponents, both signs), the edges of the ranges
    (and their neighbours), and a dense normal sample."""
    bits = np.arange(0, 2 ** 32, 4099, dtype=np.uint64).astype(np.uint32).view(np.float32)
    edges = np.array(EDGES, np.float32)
    near = np.concatenate([np.nextafter(edges, np.float32(np.inf)), np.nextafter(edges, np.float32(-np.inf))])
    normal = (np.random.default_rng(0).standard_normal(200_000) * 3).astype(np.float32)
    return np.concatenate([bits, edges, near, normal])


def test_the_loop_gives_erf64_rounded_to_float32_bit_for_bit():
    x = _float32_sweep()
    out = np.empty_like(x)
    erf_into(x, out)
    with np.errstate(all="ignore"):
        expected = np.asarray(erf64(x), np.float32)
    np.testing.assert_array_equal(out.view(np.uint32)[~np.isnan(x)], expected.view(np.uint32)[~np.isnan(x)])
    assert np.isnan(out[np.isnan(x)]).all()


def test_large_float32_erf_takes_the_loop_and_small_or_float64_the_numpy_form(monkeypatch):
    calls = []
    real = erf_gelu.erf64
    monkeypatch.setattr(erf_gelu, "erf64", lambda x: calls.append(np.shape(x)) or real(x))
    monkeypatch.setattr(erf_gelu, "loop_pays", lambda size: True)
    big = np.random.default_rng(1).standard_normal((64, 200)).astype(np.float32)
    y = erf_gelu._erf_ref(big[:, ::2])                  # (a strided view: made contiguous)
    assert calls == []
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(y, np.asarray(real(big[:, ::2]), np.float32))
    erf_gelu._erf_ref(big[:2])
    erf_gelu._erf_ref(big.astype(np.float64))
    assert calls == [(2, 200), (64, 200)]


def test_a_purely_eager_process_takes_the_loops_after_a_million_elements(monkeypatch):
    from fusegrad.ir import torch_order_jit
    monkeypatch.setattr(torch_order_jit, "numba_set_up", lambda: False)
    monkeypatch.setattr(torch_order_jit, "_LOOP_ELEMENTS", [0])
    assert not torch_order_jit.loop_pays(1 << 19)
    assert torch_order_jit.loop_pays(1 << 19)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_eager_gelu_of_a_large_tensor_matches_torch(approximate):
    x = np.random.default_rng(2).standard_normal((256, 300)).astype(np.float32) * 4
    w = fg.tensor(x, requires_grad=True)
    tw = torch.tensor(x, requires_grad=True)
    y = fg.nn.functional.gelu(w, approximate=approximate)
    ty = torch.nn.functional.gelu(tw, approximate=approximate)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=2e-6, atol=2e-6)  # (cancellation below -2: absolute)
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=2e-6, atol=5e-6)  # (1 - t*t as t saturates)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(64, 100), (4, 5, 300), (5000,), (3, 4096)])
@pytest.mark.parametrize("reverse", [False, True])
def test_running_sums_loop_matches_numpys_float64_cumsum_and_torch(monkeypatch, dtype, shape, reverse):
    from fusegrad.ir.ops import more_math
    monkeypatch.setattr(more_math, "loop_pays", lambda size: True)
    rng = np.random.default_rng(8)
    x = rng.standard_normal(shape).astype(dtype)
    x.flat[0] = -0.0                    # (a sum starts from +0: torch's first result is +0)
    x.flat[7] = np.nan if x.size > 100 else x.flat[7]
    wide = np.flip(np.cumsum(np.flip(x, -1), -1, dtype=np.float64), -1) if reverse else \
        np.cumsum(x, -1, dtype=np.float64)
    expected = np.ascontiguousarray(wide + 0, dtype)
    got = more_math._cumsum_ref(x, -1, reverse)
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))
    t = torch.tensor(x)
    theirs = (t.flip(-1).cumsum(-1).flip(-1) if reverse else t.cumsum(-1)).numpy()
    np.testing.assert_array_equal(got, theirs)


def test_eager_cumsum_and_its_gradient_match_torch():
    x = np.random.default_rng(9).standard_normal((40, 300)).astype(np.float32)
    w, tw = fg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (w.cumsum(-1) * fg.tensor(x)).sum().backward()
    (tw.cumsum(-1) * torch.tensor(x)).sum().backward()
    np.testing.assert_array_equal(w.cumsum(1).detach().numpy(), tw.cumsum(1).detach().numpy())
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_scatter_add_loop_is_np_add_at_and_torch_bit_for_bit(monkeypatch, dtype, axis):
    """Scatter-adds of 4096 values or more take ir/reference_loops.py's add_at_flat: np.add.at's
    additions in its order (duplicates included), so its bits and torch's scatter_add_'s, for
    an index smaller than the result on other dims too."""
    from fusegrad.ir.ops import gather
    from fusegrad.ir import reference_loops
    monkeypatch.setattr(gather, "loop_pays", lambda size: True)
    calls = []
    real = reference_loops.add_at_flat
    monkeypatch.setattr(reference_loops, "add_at_flat", lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(10)
    x = (rng.standard_normal((12, 30, 40)) * 100).astype(dtype)
    index = rng.integers(0, x.shape[axis], (10, 28, 40))
    src = (rng.standard_normal((11, 30, 40)) * 1e3).astype(dtype)
    got = gather._scatter_add_ref(x, index, src, axis)
    want = x.copy()
    np.add.at(want, gather._region(x.shape, index, axis), src[:10, :28, :40])
    assert calls == [1]
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    theirs = torch.tensor(x).scatter_add(axis, torch.tensor(index), torch.tensor(src)).numpy()
    np.testing.assert_array_equal(got.view(np.uint8), theirs.view(np.uint8))



@pytest.mark.parametrize("view", ["transpose", "permute"])
def test_gather_backward_of_a_strided_view_takes_the_loop_and_matches_torch(monkeypatch, view):
    """The scatter-add loop adds into a row-major copy of a transposed result (a copy of a
    transposed x keeps its layout): the gradient of a gather from x.t() is torch's."""
    from fusegrad.ir.ops import gather
    monkeypatch.setattr(gather, "loop_pays", lambda size: True)
    rng = np.random.default_rng(12)
    data = rng.standard_normal((30, 40, 20))
    index = rng.integers(0, 20, (20, 40, 30)) if view == "permute" else rng.integers(0, 30, (40, 30, 20))
    grads = []
    for lib in (fg, torch):
        x = lib.tensor(data, requires_grad=True)
        v = x.permute(2, 1, 0) if view == "permute" else x.transpose(0, 1)
        axis = 2 if view == "permute" else 1
        w = lib.tensor(np.cos(np.arange(index.size, dtype=np.float64)).reshape(index.shape))
        (v.gather(axis, lib.tensor(index)) * w).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
