"""erf and GELU: erf's reference (Cody's rational approximations in float64) against
math.erf; erf, F.gelu (exact and tanh) and nn.GELU against torch: values, gradients (a
second derivative too), errors and repr; compiled against eager."""
from __future__ import annotations

import math

import numpy as np
import pytest

import fusegrad as fg
from fusegrad.ir.ops.erf_gelu import erf64

torch = pytest.importorskip("torch", reason="torch is the oracle")

RNG = np.random.default_rng(0)
X = np.concatenate([RNG.standard_normal(3000) * 3, [-30.0, -10.0, -5.0, -3.0, -1e-30, -0.0, 0.0, 1e-30, 3.0, 10.0,
                                                     30.0, -np.inf, np.nan]]).astype(np.float32)


def test_the_reference_erf_is_within_4_ulp_of_libm_in_float64():
    xs = np.concatenate([np.linspace(-8, 8, 20001), np.geomspace(1e-300, 30, 2000), -np.geomspace(1e-300, 30, 2000)])
    want = np.array([math.erf(v) for v in xs])
    ulps = np.abs(erf64(xs) - want) / np.spacing(np.abs(want))
    assert ulps.max() <= 4
    assert erf64(np.array([np.inf, -np.inf, -0.0])).tolist() == [1.0, -1.0, -0.0]
    assert np.isnan(erf64(np.array([np.nan]))[0])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_erf_matches_torch(dtype):
    ours = fg.erf(fg.tensor(X.astype(dtype))).numpy()
    theirs = torch.erf(torch.tensor(X.astype(dtype))).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=2e-7 if dtype == "float32" else 1e-15, atol=0, equal_nan=True)
    x = fg.tensor([0.5, -1.0], requires_grad=True)
    y = x.erf()
    assert type(y.grad_fn).__name__ == "ErfBackward0"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 / math.sqrt(math.pi) * np.exp(-np.array([0.25, 1.0])), rtol=1e-6)
    assert fg.erf(fg.tensor([1, 2])).dtype == fg.float32


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gelu_matches_torch(approximate, dtype):
    finite = X[np.isfinite(X)].astype(dtype)

    def run(lib):
        x = lib.tensor(finite, requires_grad=True)
        y = lib.nn.functional.gelu(x, approximate=approximate)
        (y * lib.tensor(np.linspace(-1, 1, finite.size).astype(dtype))).sum().backward()
        return y.detach().numpy(), x.grad.numpy(), type(y.grad_fn).__name__
    (oy, og, on), (ty, tg, tn) = run(fg), run(torch)
    assert on == tn == "GeluBackward0"
    # (torch's float32 erf is SLEEF's, an ulp from libm's, and x < -3 loses digits to 1 + erf: ~1e-6 absolute)
    np.testing.assert_allclose(oy, ty, rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(og, tg, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_second_derivative_matches_torch(approximate):
    def run(lib):
        x = lib.tensor([-2.0, -0.5, 0.0, 0.7, 1.5], requires_grad=True)
        (g,) = lib.autograd.grad(lib.nn.functional.gelu(x, approximate=approximate).sum(), x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)
        return g.detach().numpy(), h.numpy()
    for o, t in zip(run(fg), run(torch)):
        np.testing.assert_allclose(o, t, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_double_backward_is_torchs_gelu_backward_node(approximate):
    """A create_graph gradient records GeluBackwardBackward0 (torch's gelu_backward op), whose
    own gradients, to the incoming gradient and to x, match torch in float64, eager and compiled."""
    xs = np.linspace(-6, 6, 25)
    ws = np.cos(np.arange(25.0))

    def run(lib):
        x = lib.tensor(xs, requires_grad=True)
        w = lib.tensor(ws, requires_grad=True)
        (g,) = lib.autograd.grad((lib.nn.functional.gelu(x, approximate=approximate) * w).sum(), x,
                                 create_graph=True)
        hx, hw = lib.autograd.grad((g * g).sum(), [x, w])
        return type(g.grad_fn).__name__, g.detach().numpy(), hx.numpy(), hw.numpy()
    ours, theirs = run(fg), run(torch)
    assert ours[0] == theirs[0] == "GeluBackwardBackward0"
    for o, t in zip(ours[1:], theirs[1:]):
        np.testing.assert_allclose(o, t, rtol=1e-12, atol=1e-14)

    def second(x):
        return fg.grad(lambda v: fg.nn.functional.gelu(v, approximate=approximate).sum())(x).sum()
    compiled = fg.compile(fg.grad(second))(fg.tensor(xs)).numpy()
    eager = fg.grad(second)(fg.tensor(xs)).numpy()
    np.testing.assert_allclose(compiled, eager, rtol=1e-12, atol=1e-14)
    tx = torch.tensor(xs, requires_grad=True)
    (tg,) = torch.autograd.grad(torch.nn.functional.gelu(tx, approximate=approximate).sum(), tx, create_graph=True)
    np.testing.assert_allclose(eager, torch.autograd.grad(tg.sum(), tx)[0].numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("call", [lambda lib, x: lib.nn.functional.gelu(x, approximate="bad"),
                                  lambda lib, x: lib.nn.functional.gelu(x.long()),
                                  lambda lib, x: lib.nn.functional.gelu(x, "tanh")], ids=["approximate", "long", "positional"])
def test_gelu_errors_match_torch(call):
    def error(lib):
        with pytest.raises(Exception) as info:
            call(lib, lib.ones(3))
        return type(info.value).__name__, str(info.value)
    assert error(fg) == error(torch)


def test_module_repr_matches_torch():
    assert [repr(fg.nn.GELU()), repr(fg.nn.GELU("tanh"))] == [repr(torch.nn.GELU()), repr(torch.nn.GELU("tanh"))]


def test_compiled_gelu_and_erf_match_eager():
    x = fg.tensor(X[:3000], requires_grad=True)

    def loss(x):
        return (fg.nn.functional.gelu(x) * 2 + fg.nn.functional.gelu(x, approximate="tanh") + x.erf()).sum()
    eager = fg.value_and_grad(loss)(x)
    compiled = fg.compile(fg.value_and_grad(loss))(x)
    np.testing.assert_allclose(compiled[0].detach().numpy(), eager[0].detach().numpy(), rtol=1e-5)
    # (x < -3: 1 + erf cancels, an ulp of erff (libm in kernels) shows at ~1e-6 absolute)
    np.testing.assert_allclose(compiled[1].detach().numpy(), eager[1].detach().numpy(), rtol=1e-5, atol=3e-6)
