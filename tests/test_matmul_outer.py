"""A matmul contracting one element (`x[n, 1] @ y[1, m]`) is a broadcast multiply: bit for
bit the same values, computed by np.multiply eagerly and fused into kernels when compiled
(ir/ops/linalg.py, _is_outer). torch is the oracle where importable, else NumPy's matmul."""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg
from fusegrad.codegen import MATMUL_CALL, schedule
from test_codegen_support import build, check, random_args

try:
    import torch
except ImportError:          # torch is an optional oracle
    torch = None

SHAPES = [((5, 1), (1, 7)), ((3, 5, 1), (1, 4)), ((2, 1, 5, 1), (3, 1, 6)), ((0, 1), (1, 3)), ((4, 1), (1, 1))]


@pytest.mark.parametrize("sa,sb", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_values_are_matmuls_bit_for_bit(sa, sb, dtype):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(sa) * 10).astype(dtype)
    b = (rng.standard_normal(sb) * 10).astype(dtype)
    want = np.matmul(a, b) if torch is None else (torch.from_numpy(a) @ torch.from_numpy(b)).numpy()
    for got in (fg.matmul(fg.tensor(a), fg.tensor(b)), fg.compile(lambda x, y: x @ y)(fg.tensor(a), fg.tensor(b))):
        assert got.shape == want.shape and got.numpy().dtype == want.dtype
        np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.skipif(torch is None, reason="torch is the oracle for gradients and node names")
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_a_one_feature_linear_layer_trains_as_torchs(compiled):
    """nn.Linear(1, 8): addmm with one contracted element; value, grads and grad_fn names."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 1)).astype(np.float32)
    w = rng.standard_normal((8, 1)).astype(np.float32)
    bias = rng.standard_normal(8).astype(np.float32)

    def loss(lib, x, w, b):
        out = lib.nn.functional.linear(x, w, b)
        return out, (out.tanh() * out).sum()
    tw, tb = torch.tensor(w, requires_grad=True), torch.tensor(bias, requires_grad=True)
    t_out, t_loss = loss(torch, torch.tensor(x), tw, tb)
    t_loss.backward()
    fw, fb = fg.tensor(w, requires_grad=True), fg.tensor(bias, requires_grad=True)
    run = fg.compile(lambda *a: loss(fg, *a)) if compiled else (lambda *a: loss(fg, *a))
    f_out, f_loss = run(fg.tensor(x), fw, fb)
    f_loss.backward()
    if not compiled:                       # (a compiled call's outputs hang off its own node)
        assert type(f_out.grad_fn).__name__ == type(t_out.grad_fn).__name__
    np.testing.assert_allclose(f_loss.item(), t_loss.item(), rtol=1e-5)
    np.testing.assert_allclose(fw.grad.numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fb.grad.numpy(), tb.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_compiled_outer_product_fuses_into_a_kernel():
    """x[64, 1] @ w[1, 32] (a layer with one input feature) and its gradients run in kernels,
    with no BLAS call contracting one element, and match the reference."""
    program = build(lambda e, x, w: e.tanh(e.matmul(x, w)), (64, 1), (1, 32), grad=True)
    sched = schedule(program)
    assert not any(s.kind == MATMUL_CALL and s.instr.inputs[0].shape[-1] == 1 for s in sched.steps), \
        [s.kind for s in sched.steps]
    check(program, random_args(program, np.random.default_rng(2)))
