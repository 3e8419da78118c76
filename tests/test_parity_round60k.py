"""Parity with torch: geqrf, linalg.householder_product (orgqr), ormqr and
nn.utils.parametrizations.orthogonal (values, gradients, node names, errors, compile)."""
import numpy as np
import pytest

import fusegrad as fg
from fusegrad.nn.utils.parametrizations import orthogonal as fg_orthogonal

torch = pytest.importorskip("torch", reason="torch is the oracle")

SHAPES = [(3, 3), (5, 3), (3, 5), (2, 4, 4), (2, 3, 6, 2), (4, 1), (1, 4), (0, 3), (2, 0, 3)]
TALL = [(3, 3), (5, 3), (2, 4, 4), (2, 3, 6, 2), (4, 1), (3, 0)]


def _fg(t, requires_grad=False):
    return fg.tensor(t.detach().numpy().copy(), requires_grad=requires_grad)


def _close(f, t, tol=1e-10):
    f = f.detach().numpy() if hasattr(f, "detach") else np.asarray(f)
    t = t.detach().numpy()
    assert f.shape == t.shape
    np.testing.assert_allclose(f, t, rtol=tol, atol=tol)


def _error(fn):
    try:
        fn()
    except Exception as e:           # noqa: BLE001  (the class and the text are compared)
        return type(e).__name__, str(e)
    return None


def _randn(*shape, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, dtype=dtype, generator=g)


# ------------------------------------------------------------------ geqrf
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_geqrf_values(shape, dtype):
    x = _randn(*shape, dtype=dtype)
    a, tau = torch.geqrf(x)
    fa, ftau = fg.geqrf(_fg(x))
    tol = 1e-10 if dtype is torch.float64 else 2e-5
    _close(fa, a, tol)
    _close(ftau, tau, tol)
    assert str(fa.dtype).split(".")[-1] == str(a.dtype).split(".")[-1]
    ma, mtau = _fg(x).geqrf()
    _close(ma, a, tol)
    _close(mtau, tau, tol)


def test_geqrf_zero_columns_give_zero_tau():
    x = torch.tensor([[0.0, 1.0], [0.0, 2.0], [0.0, 3.0]], dtype=torch.float64)
    a, tau = torch.geqrf(x)
    fa, ftau = fg.geqrf(_fg(x))
    _close(fa, a)
    _close(ftau, tau)
    assert float(ftau[0]) == 0.0


def test_geqrf_result_type_and_node():
    x = _randn(4, 3)
    result = fg.geqrf(_fg(x, True))
    assert type(result).__name__ == "geqrf" and result[0] is result.a and result[1] is result.tau
    assert type(result.a.grad_fn).__name__ == "GeqrfBackward0"
    assert result.a.grad_fn is result.tau.grad_fn
    t = torch.geqrf(x.clone().requires_grad_())
    expected = _error(lambda: t.a.sum().backward())
    assert _error(lambda: result.a.sum().backward()) == expected
    assert expected == ("NotImplementedError", "the derivative for 'geqrf' is not implemented.")


# ------------------------------------------------------------------ householder_product
def _factors(shape, k=None, dtype=torch.float64, seed=0):
    a, tau = torch.geqrf(_randn(*shape, dtype=dtype, seed=seed))
    return a, tau if k is None else tau[..., :k]


@pytest.mark.parametrize("shape", TALL)
@pytest.mark.parametrize("fewer", [0, 1])
def test_householder_product_values_and_gradients(shape, fewer):
    a, tau = _factors(shape)
    if fewer and tau.shape[-1]:
        tau = tau[..., :-1]
    ta, ttau = a.clone().requires_grad_(), tau.clone().requires_grad_()
    q = torch.linalg.householder_product(ta, ttau)
    g = _randn(*q.shape, seed=1)
    q.backward(g)
    fa, ftau = _fg(a, True), _fg(tau, True)
    fq = fg.linalg.householder_product(fa, ftau)
    _close(fq, q)
    assert type(fq.grad_fn).__name__ == type(q.grad_fn).__name__ == "LinalgHouseholderProductBackward0"
    fq.backward(_fg(g))
    if q.numel() == 0 or tau.numel() == 0:      # (torch: no gradient of empty operands)
        assert ta.grad is None and ttau.grad is None
        assert fa.grad is None and ftau.grad is None
        return
    _close(fa.grad, ta.grad)
    _close(ftau.grad, ttau.grad)


def test_householder_product_generic_tau_and_float32():
    # tau not from geqrf (not an orthogonal product): the gradient formula holds for any tau
    a, tau = _randn(5, 3, seed=2), _randn(3, seed=3)
    ta, ttau = a.clone().requires_grad_(), tau.clone().requires_grad_()
    q = torch.linalg.householder_product(ta, ttau)
    q.pow(2).sum().backward()
    fa, ftau = _fg(a, True), _fg(tau, True)
    fq = fg.linalg.householder_product(fa, ftau)
    fq.pow(2).sum().backward()
    _close(fq, q)
    _close(fa.grad, ta.grad)
    _close(ftau.grad, ttau.grad)
    a32, tau32 = _factors((2, 6, 4), dtype=torch.float32)
    _close(fg.linalg.householder_product(_fg(a32), _fg(tau32)), torch.linalg.householder_product(a32, tau32), 2e-5)


def test_householder_product_aliases():
    a, tau = _factors((4, 3))
    q = torch.linalg.householder_product(a, tau)
    _close(fg.orgqr(_fg(a), _fg(tau)), q)
    _close(_fg(a).orgqr(_fg(tau)), q)
    fa = _fg(a, True)
    assert type(fg.orgqr(fa, _fg(tau)).grad_fn).__name__ == "LinalgHouseholderProductBackward0"


def test_householder_product_double_backward():
    a, tau = _factors((4, 3))
    ta, ttau = a.clone().requires_grad_(), tau.clone().requires_grad_()
    ga, gt = torch.autograd.grad(torch.linalg.householder_product(ta, ttau).sin().sum(), (ta, ttau),
                                 create_graph=True)
    (ga.pow(2).sum() + gt.pow(2).sum()).backward()
    fa, ftau = _fg(a, True), _fg(tau, True)
    fga, fgt = fg.autograd.grad(fg.linalg.householder_product(fa, ftau).sin().sum(), (fa, ftau),
                                create_graph=True)
    _close(fga, ga)
    _close(fgt, gt)
    (fga.pow(2).sum() + fgt.pow(2).sum()).backward()
    _close(fa.grad, ta.grad, 1e-9)
    _close(ftau.grad, ttau.grad, 1e-9)


# ------------------------------------------------------------------ ormqr
ORMQR_SHAPES = [(4, 3), (3, 3), (3, 5), (2, 4, 4), (2, 5, 2)]


@pytest.mark.parametrize("shape", ORMQR_SHAPES)
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
def test_ormqr_values_and_gradients(shape, left, transpose):
    a, tau = _factors(shape)
    m = shape[-2]
    c = _randn(*shape[:-2], m, 3, seed=4) if left else _randn(*shape[:-2], 3, m, seed=4)
    ta, ttau, tc = (v.clone().requires_grad_() for v in (a, tau, c))
    r = torch.ormqr(ta, ttau, tc, left, transpose)
    g = _randn(*r.shape, seed=5)
    r.backward(g)
    fa, ftau, fc = _fg(a, True), _fg(tau, True), _fg(c, True)
    fr = fg.ormqr(fa, ftau, fc, left=left, transpose=transpose)
    _close(fr, r)
    assert type(fr.grad_fn).__name__ == type(r.grad_fn).__name__ == "OrmqrBackward0"
    fr.backward(_fg(g))
    _close(fa.grad, ta.grad)
    _close(ftau.grad, ttau.grad)
    _close(fc.grad, tc.grad)
    _close(_fg(a).ormqr(_fg(tau), _fg(c), left, transpose), r)


def test_ormqr_float32_and_empty():
    a, tau = _factors((5, 3), dtype=torch.float32)
    c = _randn(5, 2, dtype=torch.float32)
    _close(fg.ormqr(_fg(a), _fg(tau), _fg(c)), torch.ormqr(a, tau, c), 2e-5)
    for a, tau, c in ((torch.randn(0, 3), torch.randn(0), torch.randn(0, 2)),
                      (torch.randn(4, 0), torch.randn(0), torch.randn(4, 2)),
                      (torch.randn(4, 3), torch.randn(3), torch.randn(4, 0))):
        _close(fg.ormqr(_fg(a), _fg(tau), _fg(c)), torch.ormqr(a, tau, c))


# ------------------------------------------------------------------ errors
def _r(*shape, dtype=torch.float32):
    return torch.ones(*shape, dtype=dtype)


ERROR_CASES = [
    ("geqrf", (_r(3),), {}),
    ("geqrf", (_r(3, 3, dtype=torch.int64),), {}),
    ("geqrf", (_r(3, 3, dtype=torch.bool),), {}),
    ("householder_product", (_r(3), _r(3)), {}),
    ("householder_product", (_r(3, 4), _r(3)), {}),
    ("householder_product", (_r(4, 3), _r(4)), {}),
    ("householder_product", (_r(4, 3), _r(2, 3)), {}),
    ("householder_product", (_r(2, 4, 3), _r(3, 3)), {}),
    ("householder_product", (_r(2, 4, 3), _r(2)), {}),
    ("householder_product", (_r(2, 4, 3), _r(3, 4)), {}),
    ("householder_product", (_r(4, 3), _r(3, dtype=torch.float64)), {}),
    ("householder_product", (_r(4, 3, dtype=torch.int64), _r(3, dtype=torch.int64)), {}),
    ("householder_product", (_r(4, 3, dtype=torch.int64), _r(3)), {}),
    ("orgqr", (_r(4, 3), _r(4)), {}),
    ("ormqr", (_r(3), _r(3), _r(3, 3)), {}),
    ("ormqr", (_r(4, 3), _r(3), _r(3)), {}),
    ("ormqr", (_r(4, 3), _r(4), _r(4, 2)), {}),
    ("ormqr", (_r(4, 3), _r(2), _r(4, 2)), {}),
    ("ormqr", (_r(4, 3), _r(3), _r(3, 2)), {}),
    ("ormqr", (_r(4, 3), _r(3), _r(2, 3)), {"left": False}),
    ("ormqr", (_r(4, 3), _r(2), _r(2, 4)), {"left": False}),
    ("ormqr", (_r(4, 3), _r(5), _r(3, 2)), {}),
    ("ormqr", (_r(4, 3), _r(2, 2), _r(4, 2)), {}),
    ("ormqr", (_r(4, 3), _r(2, 3), _r(4, 2)), {}),
    ("ormqr", (_r(2, 4, 3), _r(3, 3), _r(2, 4, 2)), {}),
    ("ormqr", (_r(2, 4, 3), _r(2, 3), _r(3, 4, 2)), {}),
    ("ormqr", (_r(2, 4, 3), _r(2, 3), _r(4, 2)), {}),
    ("ormqr", (_r(4, 3), _r(3), _r(2, 4, 2)), {}),
    ("ormqr", (_r(4, 3), _r(3, dtype=torch.float64), _r(4, 2)), {}),
    ("ormqr", (_r(4, 3), _r(3), _r(4, 2, dtype=torch.float64)), {}),
    ("ormqr", (_r(4, 3, dtype=torch.int64), _r(3, dtype=torch.int64), _r(4, 2, dtype=torch.int64)), {}),
    ("ormqr", (_r(4, 3, dtype=torch.int64), _r(3), _r(4, 2)), {}),
]


@pytest.mark.parametrize("name,args,kwargs", ERROR_CASES)
def test_errors(name, args, kwargs):
    torch_fn = torch.linalg.householder_product if name == "householder_product" else getattr(torch, name)
    fg_fn = fg.linalg.householder_product if name == "householder_product" else getattr(fg, name)
    expected = _error(lambda: torch_fn(*args, **kwargs))
    assert expected is not None
    assert _error(lambda: fg_fn(*(_fg(a) for a in args), **kwargs)) == expected


# ------------------------------------------------------------------ orthogonal
def _linear_pair(in_features, out_features, seed=0):
    torch.manual_seed(seed)
    t = torch.nn.Linear(in_features, out_features)
    f = fg.nn.Linear(in_features, out_features)
    f.weight.data = _fg(t.weight)
    f.bias.data = _fg(t.bias)
    return t, f


def _register(t, f, seed, *args, **kwargs):
    torch.manual_seed(seed)
    torch.nn.utils.parametrizations.orthogonal(t, *args, **kwargs)
    fg.manual_seed(seed)
    fg_orthogonal(f, *args, **kwargs)


@pytest.mark.parametrize("features", [(3, 3), (3, 5), (5, 3)])
@pytest.mark.parametrize("orthogonal_map", [None, "matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("use_trivialization", [True, False])
def test_orthogonal_linear(features, orthogonal_map, use_trivialization):
    t, f = _linear_pair(*features)
    _register(t, f, 7, orthogonal_map=orthogonal_map, use_trivialization=use_trivialization)
    assert type(f).__name__ == type(t).__name__ == "ParametrizedLinear"
    _close(f.weight, t.weight, 1e-6)
    _close(f.parametrizations.weight.original, t.parametrizations.weight.original, 1e-6)
    assert sorted(dict(f.named_buffers())) == sorted(dict(t.named_buffers()))
    if use_trivialization:
        _close(f.parametrizations.weight[0].base, t.parametrizations.weight[0].base, 1e-6)
    assert type(f.weight.grad_fn).__name__ == type(t.weight.grad_fn).__name__
    x = _randn(2, features[0], dtype=torch.float32, seed=3)
    y = t(x)
    fy = f(_fg(x))
    _close(fy, y, 1e-5)
    y.tanh().sum().backward()
    fy.tanh().sum().backward()
    _close(f.parametrizations.weight.original.grad, t.parametrizations.weight.original.grad, 1e-5)
    _close(f.bias.grad, t.bias.grad, 1e-5)
    assert str(f) == str(t)


@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 3, 5), (3, 3, 3)])
@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
def test_orthogonal_batched_double(shape, orthogonal_map):
    w = _randn(*shape, seed=11)
    t, f = torch.nn.Module(), fg.nn.Module()
    t.register_parameter("w", torch.nn.Parameter(w.clone()))
    f.register_parameter("w", fg.nn.Parameter(_fg(w)))
    _register(t, f, 5, "w", orthogonal_map=orthogonal_map)
    _close(f.w, t.w, 1e-10)
    t.w.pow(3).sum().backward()
    f.w.pow(3).sum().backward()
    _close(f.parametrizations.w.original.grad, t.parametrizations.w.original.grad, 1e-9)


@pytest.mark.parametrize("features", [(4, 4), (4, 6), (6, 4)])
@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("use_trivialization", [True, False])
def test_orthogonal_assignment(features, orthogonal_map, use_trivialization):
    t, f = _linear_pair(*features, seed=1)
    _register(t, f, 2, orthogonal_map=orthogonal_map, use_trivialization=use_trivialization)
    out, inp = features[1], features[0]
    value = torch.linalg.qr(_randn(max(out, inp), min(out, inp), dtype=torch.float32, seed=9))[0]
    if out < inp:
        value = value.mT.contiguous()
    torch.manual_seed(4)
    fg.manual_seed(4)
    expected = _error(lambda: setattr(t, "weight", value))
    assert _error(lambda: setattr(f, "weight", _fg(value))) == expected
    if expected is None:
        _close(f.weight, t.weight, 1e-5)
        _close(f.parametrizations.weight.original, t.parametrizations.weight.original, 1e-5)
        if use_trivialization:
            _close(f.parametrizations.weight[0].base, t.parametrizations.weight[0].base, 1e-5)
    # a matrix that is not orthogonal (square: the QR's Q with a positive diagonal)
    other = _randn(out, inp, dtype=torch.float32, seed=10)
    torch.manual_seed(5)
    fg.manual_seed(5)
    expected = _error(lambda: setattr(t, "weight", other))
    assert _error(lambda: setattr(f, "weight", _fg(other))) == expected
    if expected is None:
        _close(f.weight, t.weight, 1e-5)


def test_orthogonal_errors():
    t, f = _linear_pair(3, 3)
    for args, kwargs in ((("weight", "foo"), {}), (("bias",), {}), (("xx",), {}), (("weight", 3), {})):
        expected = _error(lambda: torch.nn.utils.parametrizations.orthogonal(t, *args, **kwargs))
        assert expected is not None
        assert _error(lambda: fg_orthogonal(f, *args, **kwargs)) == expected
    _register(t, f, 0)
    expected = _error(lambda: setattr(t, "weight", torch.eye(4)))
    assert expected[0] == "ValueError"
    assert _error(lambda: setattr(f, "weight", fg.eye(4))) == expected


def test_orthogonal_compiled_matches_eager():
    t, f = _linear_pair(4, 4, seed=3)
    _register(t, f, 3)
    x = _randn(5, 4, dtype=torch.float32, seed=6)

    def step(inp):
        return f(inp).tanh().sum()

    compiled = fg.compile(step)
    eager = step(_fg(x))
    eager.backward()
    eager_grad = f.parametrizations.weight.original.grad.detach().numpy().copy()
    f.parametrizations.weight.original.grad = None
    for _ in range(2):
        result = compiled(_fg(x))
        np.testing.assert_allclose(result.detach().numpy(), eager.detach().numpy(), rtol=1e-6, atol=1e-6)
    result.backward()
    np.testing.assert_allclose(f.parametrizations.weight.original.grad.detach().numpy(), eager_grad,
                               rtol=1e-5, atol=1e-6)
    y = t(x).tanh().sum()
    _close(eager, y, 1e-5)


def test_orthogonal_householder_compiled_matches_eager():
    t, f = _linear_pair(3, 5, seed=4)
    _register(t, f, 4, orthogonal_map="householder", use_trivialization=False)
    x = _randn(2, 3, dtype=torch.float32, seed=7)

    def step(inp):
        return f(inp).sum()

    eager = step(_fg(x))
    compiled = fg.compile(step)
    for _ in range(2):
        np.testing.assert_allclose(compiled(_fg(x)).detach().numpy(), eager.detach().numpy(), rtol=1e-6, atol=1e-6)
    _close(eager, t(x).sum(), 1e-5)


def test_ormqr_empty_gradients():
    for shapes in (((0, 3), (0,), (0, 2)), ((4, 0), (0,), (4, 2)), ((4, 3), (3,), (4, 0))):
        tv = [_randn(*s, seed=i).requires_grad_() for i, s in enumerate(shapes)]
        fv = [_fg(v, True) for v in tv]
        torch.ormqr(*tv).sum().backward()
        fg.ormqr(*fv).sum().backward()
        for f, t in zip(fv, tv):
            assert (f.grad is None) == (t.grad is None)
            if t.grad is not None:
                _close(f.grad, t.grad)


def test_saved_result_version_checks():
    # torch's nodes save the result too: writing it in place breaks the backward, with torch's text
    def run(lib, which):
        a, tau = lib.geqrf(lib.ones(4, 3) + lib.eye(4, 3))
        a.requires_grad_()
        tau.requires_grad_()
        if which == "householder_product":
            out = lib.linalg.householder_product(a, tau)
        else:
            out = lib.ormqr(a, tau, lib.ones(4, 2, requires_grad=True))
        with lib.no_grad():
            out.add_(1)
        return _error(lambda: out.sum().backward())

    for which in ("householder_product", "ormqr"):
        expected = run(torch, which)
        assert expected is not None and "modified by an inplace operation" in expected[1]
        assert run(fg, which) == expected
