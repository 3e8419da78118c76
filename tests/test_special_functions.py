"""torch's special functions (lgamma, digamma, polygamma, erfinv, mvlgamma, i0 and torch.special)
against torch 2.13: values over sweeps with poles, roots and edges, dtypes, node names, gradients,
in-place forms, errors, fg.compile; and their accuracy against mpmath where it is installed.

ACCURACY (measured with mpmath at 40 digits; see ir/ops/special.py): every function here is within
0.5 ulp of the exact value in float32 over the sweeps below (it is the float64 value rounded once).
torch's float32 values differ from the exact ones by more (its float32 digamma, trigamma and
zeta work in float32): the comparisons with torch use float32 tolerances.
"""
import math

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch 2.13 is the oracle of these cases")

EDGES = [0.0, -0.0, -1.0, -2.0, -2.5, -0.5, 0.5, 1.0, 2.0, 1.4616321, math.inf, -math.inf, math.nan, -1e-30, 1e-30,
         1e-8, 171.7, 30.0, 1e30, -1e30, -37.3, 3.0e5]


def _sweep(dtype, n=400, seed=0):
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.uniform(-20, 20, n), np.exp(rng.uniform(-20, 12, n)), -np.exp(rng.uniform(-20, 6, n)),
                        rng.uniform(0.9, 2.1, n), EDGES])
    return x.astype(dtype)


def _pair(values, dtype=np.float32, requires_grad=False):
    return (fg.tensor(values.astype(dtype), requires_grad=requires_grad),
            torch.tensor(values.astype(dtype), requires_grad=requires_grad))


def _close(ours, theirs, rtol, atol=0.0):
    a, b = ours.detach().numpy(), theirs.detach().numpy()
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


UNARY = {   # name: (fusegrad, torch, domain filter, float32 rtol, float64 rtol)
    "lgamma": (fg.lgamma, torch.lgamma, None, 2e-6, 1e-12),
    "digamma": (fg.digamma, torch.digamma, None, 2e-5, 1e-10),
    "erfinv": (fg.erfinv, torch.erfinv, lambda x: np.tanh(x / 3), 2e-6, 1e-13),
    "i0": (fg.i0, torch.i0, None, 2e-6, 1e-13),
    "i0e": (fg.special.i0e, torch.special.i0e, None, 2e-6, 1e-13),
    "i1": (fg.special.i1, torch.special.i1, None, 2e-6, 1e-13),
    "i1e": (fg.special.i1e, torch.special.i1e, None, 2e-6, 1e-13),
    "ndtri": (fg.special.ndtri, torch.special.ndtri, lambda x: 1 / (1 + np.exp(-x)), 2e-6, 1e-13),
    # (torch's rounding of x / sqrt 2 costs it 2 (x^2 / 2) ulp of log_ndtr for large x; fusegrad's is exact)
    "log_ndtr": (fg.special.log_ndtr, torch.special.log_ndtr, None, 5e-5, 1e-12),
    "entr": (fg.special.entr, torch.special.entr, None, 2e-6, 1e-13),
    "ndtr": (fg.special.ndtr, torch.special.ndtr, None, 2e-6, 1e-13),
}


def _near_roots(name, x):
    """Arguments where a function is near a root (relative differences there measure torch's rounding)."""
    if name == "lgamma":
        return (np.abs(x - 1) < 1e-2) | (np.abs(x - 2) < 1e-2) | (x < -2)
    if name == "digamma":
        return (np.abs(x - 1.4616321) < 5e-2) | (x < 0)
    return np.zeros(x.shape, bool)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_values_match_torch(name, dtype):
    ours_fn, torch_fn, domain, rtol32, rtol64 = UNARY[name]
    x = _sweep(dtype)
    if domain is not None:
        with np.errstate(all="ignore"):
            x = np.concatenate([domain(x[:-len(EDGES)]), np.array([0, -0.0, 1, -1, 0.5, 1.5, -1.5, math.nan, 1e-30])])
            x = x.astype(dtype)
    a, t = _pair(x, dtype)
    ours, theirs = ours_fn(a), torch_fn(t)
    o, th = ours.numpy(), theirs.numpy()
    assert o.dtype == th.dtype
    # the same infinities and NaNs
    if name in ("i0", "i1") and dtype == np.float32:
        # torch's float32 exp(|x|) overflows before its division by sqrt(|x|): inf from 88.7 up, not 89.4
        between = np.isinf(th) & np.isfinite(o)
        assert np.all(np.abs(x[between]) < 89.5) and np.all(np.abs(o[between]) > 1e37)
        th = np.where(between, o, th)
    np.testing.assert_array_equal(np.isnan(o), np.isnan(th))
    np.testing.assert_array_equal(np.where(np.isinf(th), th, 0), np.where(np.isinf(th), o, 0))
    keep = np.isfinite(th) & ~_near_roots(name, x)
    # (ndtr: torch's 1 + erf(x / sqrt 2) cancels below 0: absolute accuracy only)
    tiny = np.finfo(dtype).eps if name == "ndtr" else np.finfo(dtype).tiny * 1e3
    np.testing.assert_allclose(o[keep], th[keep], rtol=rtol32 if dtype == np.float32 else rtol64, atol=tiny)
    near = np.isfinite(th) & _near_roots(name, x)
    np.testing.assert_allclose(o[near], th[near], rtol=1e-4 if dtype == np.float32 else 1e-9, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 6])
def test_polygamma_matches_torch(n, dtype):
    x = _sweep(dtype, 200)
    x = x[np.abs(x) < 1e6]          # (torch's float32 zeta loses all digits beyond)
    a, t = _pair(x, dtype)
    o, th = fg.polygamma(n, a).numpy(), torch.polygamma(n, t).numpy()
    assert o.dtype == th.dtype
    pole = (x <= 0) & (x == np.floor(x))
    if n == 1:      # torch's trigamma is finite at the negative integers by rounding: fusegrad's inf
        pole_neg = pole & (x < 0) & np.isfinite(x)
        assert np.all(o[pole_neg] == np.inf)
        o, th, x = o[~pole_neg], th[~pole_neg], x[~pole_neg]
    np.testing.assert_array_equal(np.isnan(o), np.isnan(th))
    np.testing.assert_array_equal(np.where(np.isinf(th), th, 0), np.where(np.isinf(th), o, 0))
    keep = np.isfinite(th) & np.isfinite(o) & (np.abs(th) < np.finfo(dtype).max / 10)
    if n == 0:
        keep &= (np.abs(x - 1.4616321) > 5e-2) & (x > 0)       # (digamma: see test_values_match_torch)
    # torch's float32 polygamma works in float32 (its zeta near poles of negative x: a few 1e-5)
    # torch's float32 trigamma adds pi^2 / sin(pi x)^2 in float32 for x < 0: 1e-3 there
    rtol = (3e-4 if n >= 2 else 2e-5) if dtype == np.float32 else (1e-8 if n == 1 else 1e-10)
    if n == 1 and dtype == np.float32:
        keep &= x > 0
    near_negative_pole = (x < 0) & (np.abs(x - np.round(x)) < 0.02)
    np.testing.assert_allclose(o[keep & ~near_negative_pole], th[keep & ~near_negative_pole], rtol=rtol,
                               atol=np.finfo(dtype).tiny * 1e3)
    np.testing.assert_allclose(o[keep & near_negative_pole], th[keep & near_negative_pole], rtol=rtol * 50)


@pytest.mark.parametrize("p", [1, 2, 4])
def test_mvlgamma_matches_torch(p):
    x = np.concatenate([np.linspace(-3.3, 40, 97), [math.inf, math.nan, 0.0, 1.0]]).astype(np.float32)
    a, t = _pair(x)
    _close(fg.mvlgamma(a, p), torch.mvlgamma(t, p), rtol=1e-5, atol=1e-5)
    _close(fg.special.multigammaln(a, p=p), torch.special.multigammaln(t, p=p), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("values", [[1, 2, 3], [True, False]])
def test_integer_and_bool_operands_compute_in_float32(values):
    for ours, theirs in ((fg.lgamma, torch.lgamma), (fg.digamma, torch.digamma), (fg.erfinv, torch.erfinv),
                         (fg.i0, torch.i0), (fg.special.i1e, torch.special.i1e), (fg.special.ndtri, torch.special.ndtri),
                         (fg.special.entr, torch.special.entr), (fg.special.ndtr, torch.special.ndtr),
                         (lambda v: fg.polygamma(1, v), lambda v: torch.polygamma(1, v))):
        _close(ours(fg.tensor(values)), theirs(torch.tensor(values)), rtol=1e-6)


def test_empty_and_zero_dim():
    for shape in ((0,), (2, 0), ()):
        x = np.full(shape, 0.75, np.float32)
        a, t = _pair(x)
        for ours, theirs in ((fg.lgamma, torch.lgamma), (fg.erfinv, torch.erfinv),
                             (lambda v: fg.polygamma(2, v), lambda v: torch.polygamma(2, v)),
                             (lambda v: fg.mvlgamma(v + 2, 3), lambda v: torch.mvlgamma(v + 2, 3))):
            _close(ours(a), theirs(t), rtol=1e-6)


# ------------------------------------------------------------------ node names and gradients
GRADIENTS = [
    ("lgamma", lambda m, x: m.lgamma(x), [0.3, 1.7, -2.5, 7.0]),
    ("digamma", lambda m, x: m.digamma(x), [0.3, 1.7, -2.5, 7.0]),
    ("polygamma0", lambda m, x: m.polygamma(0, x), [0.3, 1.7, -2.5, 7.0]),
    ("polygamma2", lambda m, x: m.polygamma(2, x), [0.3, 1.7, -2.5, 7.0]),
    ("erfinv", lambda m, x: m.erfinv(x), [0.3, -0.7, 0.99, 0.0]),
    ("mvlgamma", lambda m, x: m.mvlgamma(x, 3), [1.3, 1.7, 2.5, 7.0]),
    ("i0", lambda m, x: m.i0(x), [0.3, -1.7, 9.5, 0.0]),
    ("i0e", lambda m, x: m.special.i0e(x), [0.3, -1.7, 9.5, 0.0]),
    ("i1", lambda m, x: m.special.i1(x), [0.3, -1.7, 9.5, 0.0]),
    ("i1e", lambda m, x: m.special.i1e(x), [0.3, -1.7, 9.5, 0.0]),
    ("ndtri", lambda m, x: m.special.ndtri(x), [0.3, 0.01, 0.9, 0.5]),
    ("log_ndtr", lambda m, x: m.special.log_ndtr(x), [0.3, -3.0, -30.0, 4.0]),
    ("entr", lambda m, x: m.special.entr(x), [0.3, 2.0, 0.0, 7.0]),
    ("ndtr", lambda m, x: m.special.ndtr(x), [0.3, -2.0, 0.0, 7.0]),
    ("expit", lambda m, x: m.special.expit(x), [0.3, -2.0, 0.0, 7.0]),
    ("gammaln", lambda m, x: m.special.gammaln(x), [0.3, 1.7, -2.5, 7.0]),
    ("psi", lambda m, x: m.special.psi(x), [0.3, 1.7, -2.5, 7.0]),
    ("xlog1py", lambda m, x: m.special.xlog1py(x, x * 2), [0.3, 1.7, 0.0, 7.0]),
    ("xlog1py_number", lambda m, x: m.special.xlog1py(2.0, x), [0.3, 1.7, 0.0, 7.0]),
    ("xlog1py_other_number", lambda m, x: m.special.xlog1py(x, 3.0), [0.3, 1.7, 0.0, 7.0]),
    ("xlogy", lambda m, x: m.special.xlogy(x, x + 1), [0.3, 1.7, 0.0, 7.0]),
    ("round", lambda m, x: m.special.round(x), [0.3, 1.7, 0.0, 7.0]),
    ("logit", lambda m, x: m.special.logit(x, eps=0.1), [0.3, 0.7, 0.05, 0.5]),
    ("softmax", lambda m, x: m.special.softmax(x, 0), [0.3, 0.7, 0.05, 0.5]),
    ("log_softmax", lambda m, x: m.special.log_softmax(x, -1), [0.3, 0.7, 0.05, 0.5]),
    ("logsumexp", lambda m, x: m.special.logsumexp(x, 0), [0.3, 0.7, 0.05, 0.5]),
    ("sinc", lambda m, x: m.special.sinc(x), [0.3, 0.7, 0.0, 0.5]),
    ("exp2", lambda m, x: m.special.exp2(x), [0.3, 0.7, 0.0, 0.5]),
    ("expm1", lambda m, x: m.special.expm1(x), [0.3, 0.7, 0.0, 0.5]),
    ("log1p", lambda m, x: m.special.log1p(x), [0.3, 0.7, 0.0, 0.5]),
    ("erf", lambda m, x: m.special.erf(x), [0.3, 0.7, 0.0, 0.5]),
    ("erfc", lambda m, x: m.special.erfc(x), [0.3, 0.7, 0.0, 0.5]),
    ("special_erfinv", lambda m, x: m.special.erfinv(x), [0.3, 0.7, 0.0, 0.5]),
    ("special_polygamma", lambda m, x: m.special.polygamma(1, x), [0.3, 0.7, 3.0, 0.5]),
    ("special_i0", lambda m, x: m.special.i0(x), [0.3, 0.7, 3.0, 0.5]),
]


def _names(node, depth=3):
    if node is None or depth == 0:
        return None
    return (type(node).__name__, tuple(_names(f, depth - 1) for f, _ in node.next_functions))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,fn,values", GRADIENTS, ids=[g[0] for g in GRADIENTS])
def test_gradients_and_nodes_match_torch(name, fn, values, dtype):
    a, t = _pair(np.array(values), dtype, requires_grad=True)
    ours, theirs = fn(fg, a), fn(torch, t)
    assert _names(ours.grad_fn) == _names(theirs.grad_fn)
    _close(ours, theirs, rtol=1e-5 if dtype == np.float32 else 1e-10, atol=1e-7)
    weights = np.linspace(0.5, 1.5, ours.numel()).reshape(tuple(ours.shape)).astype(dtype)
    (ours * fg.tensor(weights)).sum().backward()
    (theirs * torch.tensor(weights)).sum().backward()
    _close(a.grad, t.grad, rtol=1e-5 if dtype == np.float32 else 1e-9, atol=1e-6)


@pytest.mark.parametrize("name,fn", [("lgamma", lambda m, x: m.lgamma(x)), ("erfinv", lambda m, x: m.erfinv(x)),
                                     ("i0", lambda m, x: m.i0(x)), ("i1", lambda m, x: m.special.i1(x)),
                                     ("mvlgamma", lambda m, x: m.mvlgamma(x + 2, 2)),
                                     ("polygamma", lambda m, x: m.polygamma(1, x))])
def test_second_order_gradients(name, fn):
    values = np.array([0.3, 0.45, -0.6, 0.8])
    a, t = _pair(values, np.float64, requires_grad=True)
    (ga,) = fg.autograd.grad(fn(fg, a).sum(), a, create_graph=True)
    (gt,) = torch.autograd.grad(fn(torch, t).sum(), t, create_graph=True)
    _close(ga, gt, rtol=1e-9)
    (ha,) = fg.autograd.grad(ga.sum(), a)
    (ht,) = torch.autograd.grad(gt.sum(), t)
    _close(ha, ht, rtol=1e-7)


# ------------------------------------------------------------------ methods and in-place forms
@pytest.mark.parametrize("method,args", [("lgamma", ()), ("digamma", ()), ("erfinv", ()), ("i0", ()),
                                         ("polygamma", (2,)), ("mvlgamma", (2,))])
def test_methods_and_in_place(method, args):
    values = np.array([0.3, 0.7, 0.9, 0.2], np.float32)
    a, t = _pair(values, requires_grad=True)
    _close(getattr(a, method)(*args), getattr(t, method)(*args), rtol=1e-5)
    ya, yt = a * 1 + 1, t * 1 + 1
    ra, rt = getattr(ya, method + "_")(*args), getattr(yt, method + "_")(*args)
    assert ra is ya and rt is yt
    assert type(ya.grad_fn).__name__ == type(yt.grad_fn).__name__
    _close(ya, yt, rtol=1e-5)
    ya.sum().backward()
    yt.sum().backward()
    _close(a.grad, t.grad, rtol=1e-5)


def test_module_level_i0_():
    a, t = _pair(np.array([0.5, 2.0]))
    fg.i0_(a)
    torch.i0_(t)
    _close(a, t, rtol=1e-6)


# ------------------------------------------------------------------ errors
def _same_error(fn):
    with pytest.raises(Exception) as theirs:
        fn(torch)
    with pytest.raises(type(theirs.value)) as ours:
        fn(fg)
    ours_text, theirs_text = str(ours.value), str(theirs.value)
    if "invalid combination" in theirs_text:
        ours_text, theirs_text = ours_text.split(" - got")[0], theirs_text.split(" - got")[0]
    assert ours_text == theirs_text


@pytest.mark.parametrize("call", [
    lambda m: m.polygamma(-1, m.tensor([1.5])),
    lambda m: m.polygamma(1.5, m.tensor([1.5])),
    lambda m: m.polygamma(True, m.tensor([1.5])),
    lambda m: m.polygamma(1, 1.5),
    lambda m: m.tensor([1.5]).polygamma(-1),
    lambda m: m.tensor([1.5]).polygamma_(-1),
    lambda m: m.tensor([1, 2]).polygamma_(1),
    lambda m: m.tensor([True]).polygamma_(1),
    lambda m: m.mvlgamma(m.tensor([1.5]), 0),
    lambda m: m.mvlgamma(m.tensor([1.5]), 1.5),
    lambda m: m.mvlgamma(m.tensor([1.5])),
    lambda m: m.mvlgamma(1.5, 1),
    lambda m: m.mvlgamma(m.tensor([True]), 1),
    lambda m: m.tensor([1, 2]).mvlgamma_(1),
    lambda m: m.tensor([1, 2]).mvlgamma_(0),
    lambda m: m.tensor([1, 2]).lgamma_(),
    lambda m: m.tensor([True]).digamma_(),
    lambda m: m.tensor([1, 2]).erfinv_(),
    lambda m: m.i0_(m.tensor([1, 2])),
    lambda m: m.lgamma(1.0),
    lambda m: m.lgamma(m.tensor([1.0]), 2),
    lambda m: m.special.gammaln(1.0),
    lambda m: m.special.i1(1.0),
    lambda m: m.special.expit(1.0),
    lambda m: m.special.polygamma(1.0, m.tensor([1.0])),
    lambda m: m.special.multigammaln(m.tensor([1.0]), 1.5),
    lambda m: m.special.multigammaln(m.tensor([1.0]), 0),
    lambda m: m.special.xlog1py(2.0, 3.0),
    lambda m: m.special.softmax(m.tensor([1.0])),
    lambda m: m.special.logsumexp(m.tensor([1.0])),
    lambda m: m.special.round(m.tensor([1.0]), 1),
])
def test_errors_match_torch(call):
    _same_error(call)


# ------------------------------------------------------------------ fg.compile
def test_compiled_matches_eager():
    def f(x, p):
        return (fg.lgamma(x + 1) * fg.digamma(x + 2) + fg.polygamma(2, x + 0.5) + fg.erfinv(p) + fg.i0(x)
                + fg.special.i1e(x) + fg.special.ndtri(p) + fg.special.log_ndtr(x) + fg.mvlgamma(x + 2, 2)
                + fg.special.xlog1py(x, p) + fg.special.entr(p) + fg.special.ndtr(x)).sum()

    x = fg.tensor(np.linspace(0.1, 3.0, 12, dtype=np.float32), requires_grad=True)
    p = fg.tensor(np.linspace(0.05, 0.95, 12, dtype=np.float32), requires_grad=True)
    eager = f(x, p)
    eager.backward()
    gx, gp = x.grad.numpy().copy(), p.grad.numpy().copy()
    x.grad = p.grad = None
    compiled = fg.compile(f)
    out = compiled(x, p)
    out.backward()
    np.testing.assert_allclose(out.item(), eager.item(), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-5)
    np.testing.assert_allclose(p.grad.numpy(), gp, rtol=1e-5)
    vg = fg.value_and_grad(lambda v: fg.lgamma(v).sum())
    value, grad = fg.compile(vg)(fg.tensor([0.5, 2.5, 7.0]))
    np.testing.assert_allclose(grad.numpy(), torch.digamma(torch.tensor([0.5, 2.5, 7.0])).numpy(), rtol=1e-6)


# ------------------------------------------------------------------ accuracy against mpmath
def _mp_sweep():
    rng = np.random.default_rng(1)
    with np.errstate(all="ignore"):
        return np.concatenate([rng.uniform(-30, 30, 300), np.exp(rng.uniform(-30, 30, 300)),
                               -np.exp(rng.uniform(-30, 8, 200)), rng.uniform(1.3, 2.1, 100)])


def _accuracy_cases(mp):
    from fusegrad.ir.ops import special as S
    with np.errstate(all="ignore"):
        p = 1 / (1 + np.exp(-_mp_sweep() / 2))
    return [
        ("lgamma", S.lgamma64, lambda v: mp.re(mp.loggamma(v)), _mp_sweep()),
        ("digamma", S.digamma64, mp.digamma, _mp_sweep()),
        ("polygamma3", lambda v: S.polygamma64(v, 3), lambda v: mp.polygamma(3, v), _mp_sweep()[:500]),
        ("erfinv", S.erfinv64, mp.erfinv, np.tanh(_mp_sweep() / 4)),
        ("i0", S.i0_64, lambda v: mp.besseli(0, v), _mp_sweep()[:600]),
        ("i1e", S.i1e64, lambda v: mp.besseli(1, v) * mp.exp(-abs(v)), _mp_sweep()),
        ("ndtri", S.ndtri64, lambda v: mp.sqrt(2) * mp.erfinv(2 * v - 1), p[(p > 1e-9) & (p < 0.99)]),
        ("log_ndtr", S.log_ndtr64, lambda v: mp.log(mp.ncdf(v)) if v < 0 else mp.log1p(-mp.ncdf(-v)),
         _mp_sweep()[:600]),
    ]


def test_accuracy_against_mpmath():
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 40
    for name, ours, exact, x in _accuracy_cases(mp):
        x32 = x.astype(np.float32)
        ref = np.array([float(exact(mp.mpf(float(v)))) for v in x32])
        with np.errstate(all="ignore"):
            got = ours(x32.astype(np.float64)).astype(np.float32)
        ok = np.isfinite(ref) & (np.abs(ref) > 1e-37) & (np.abs(ref) < 1e38)
        ulp = np.spacing(np.abs(ref[ok]).astype(np.float32)).astype(np.float64)
        err = np.abs(got[ok] - ref[ok]) / ulp
        assert err.max() <= 1.0, (name, x32[ok][np.argmax(err)], err.max())
