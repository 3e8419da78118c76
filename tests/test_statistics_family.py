"""torch's scans, order statistics and statistics (tracer/statistics.py) against torch:
values, dtypes, grad_fn names, gradients, errors, and a few compiled calls."""
import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch 2.13 is the oracle of these cases")

NAN = float("nan")
RNG = np.random.default_rng(0)


def _distinct(shape, dtype=np.float32):
    n = int(np.prod(shape))
    return (RNG.permutation(n).astype(np.float64) * 0.37 - 1.3).reshape(shape).astype(dtype)


def _lib_tensor(lib, a, grad):
    t = lib.tensor(a.copy())
    if grad and a.dtype.kind == "f":
        t.requires_grad_(True)
    return t


def _flat(r):
    if isinstance(r, (tuple, list)):
        return [u for v in r for u in _flat(v)]
    return [r]


def _kind(t):
    return str(t.dtype).split(".")[-1]


def compare(case, *arrays, grad=True, rtol=1e-5, atol=1e-6, check_type=True):
    """case(lib, *tensors) on torch and fusegrad: same results (values, dtypes, shapes,
    grad_fn names, named-tuple field names) and the same gradients of a weighted sum."""
    outs = {}
    for lib in (torch, fg):
        ins = [_lib_tensor(lib, a, grad) for a in arrays]
        try:
            r = case(lib, *ins)
        except Exception as exc:   # noqa: BLE001 - the error is the outcome compared
            outs[lib] = ("error", type(exc).__name__, str(exc))
            continue
        flat = _flat(r)
        info = (type(r).__name__ if check_type else None, getattr(r, "_fields", None) or
                [f for f in ("values", "indices", "min", "max") if hasattr(type(r), f)] if isinstance(r, tuple) else None)
        grads = None
        floats = [t for t in flat if t.requires_grad]
        if floats:
            total = sum((t * lib.tensor(np.linspace(0.5, 1.5, max(t.numel(), 1))[:t.numel()]
                                        .reshape(tuple(t.shape)).astype(_kind(t)))).sum() for t in floats)
            total.backward()
            grads = [None if t.grad is None else t.grad.detach().numpy().copy() for t in ins]
        outs[lib] = ("value", info, [(tuple(t.shape), _kind(t), None if t.grad_fn is None else type(t.grad_fn).__name__,
                                      t.detach().numpy().copy()) for t in flat], grads)
    theirs, ours = outs[torch], outs[fg]
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "error":
        assert ours == theirs
        return
    if check_type:
        assert ours[1][0] == theirs[1][0], (ours[1], theirs[1])
    for o, t in zip(ours[2], theirs[2]):
        assert o[:3] == t[:3], (o[:3], t[:3])
        np.testing.assert_allclose(o[3], t[3], rtol=rtol, atol=atol, equal_nan=True)
    assert len(ours[2]) == len(theirs[2])
    if theirs[3] is not None:
        for o, t in zip(ours[3], theirs[3]):
            assert (o is None) == (t is None)
            if o is not None:
                np.testing.assert_allclose(o, t, rtol=rtol, atol=atol, equal_nan=True)


SHAPES = [(5,), (3, 4), (2, 3, 4)]


# ------------------------------------------------------------------ scans
@pytest.mark.parametrize("shape", SHAPES + [()])
@pytest.mark.parametrize("op", ["cumprod", "cummax", "cummin", "logcumsumexp"])
def test_scans(shape, op):
    a = _distinct(shape)
    for dim in range(-len(shape) or 0, len(shape) or 1):
        compare(lambda lib, x: getattr(lib, op)(x, dim), a)
        compare(lambda lib, x: getattr(x, op)(dim=dim), a)


def test_cumprod_zeros_and_ints():
    a = np.array([[2., 0., 3., 0., 4.], [1., 2., 0., 5., 6.], [1.5, 2., 3., 4., 0.5], [0., 1., 2., 3., 4.]], np.float32)
    for dim in (0, 1):
        compare(lambda lib, x: lib.cumprod(x, dim), a)
    compare(lambda lib, x: lib.cumprod(x, 1, dtype=lib.float64), a)
    ints = np.array([[3, 1, 2], [0, 5, 5]])
    compare(lambda lib, x: lib.cumprod(x, 1), ints)
    compare(lambda lib, x: lib.cumprod(x > 1, 1), ints)
    compare(lambda lib, x: lib.cumprod(x, 2), ints)


def test_cumprod_double_backward():
    a = np.array([[2., 0., 3., 0.5], [1., 2., 0.7, 5.]], np.float64)
    got = {}
    for lib in (torch, fg):
        x = lib.tensor(a, requires_grad=True)
        y = lib.cumprod(x, 1)
        w = lib.tensor(np.arange(8.).reshape(2, 4) / 3)
        (g,) = (torch.autograd.grad if lib is torch else fg.autograd.grad)((y * w).sum(), x, create_graph=True)
        (g * g).sum().backward()
        got[lib] = (g.detach().numpy(), x.grad.numpy())
    for o, t in zip(got[fg], got[torch]):
        np.testing.assert_allclose(o, t, rtol=1e-10, atol=1e-12)


def test_cummax_ties_and_nan():
    a = np.array([1., NAN, 3., NAN, 0., 1., 1.], np.float32)
    compare(lambda lib, x: lib.cummax(x, 0), a)
    compare(lambda lib, x: lib.cummin(x, 0), a)
    ints = np.array([[3, 1, 3, 2], [0, 5, 5, 7]])
    compare(lambda lib, x: lib.cummax(x, 1), ints)
    compare(lambda lib, x: lib.cummin(x > 1, 1), ints)


def test_logcumsumexp_infinities_and_errors():
    a = np.array([-np.inf, -np.inf, 1., np.inf, 2.], np.float32)
    compare(lambda lib, x: lib.logcumsumexp(x, 0), a, grad=False)
    compare(lambda lib, x: lib.logcumsumexp(x, 0), np.array([1, 2]))


# ------------------------------------------------------------------ nansum / nanmean
@pytest.mark.parametrize("args", [(), (0,), (1, True), ((0, 1),), (-1,)])
def test_nansum_nanmean(args):
    a = _distinct((3, 4))
    a[0, 1] = a[2, 3] = NAN
    a[:, 2] = NAN
    compare(lambda lib, x: lib.nansum(x, *args), a)
    compare(lambda lib, x: lib.nanmean(x, *args), a)
    compare(lambda lib, x: x.nansum(*args), a)
    ints = np.arange(12).reshape(3, 4)
    compare(lambda lib, x: lib.nansum(x, *args), ints)
    compare(lambda lib, x: lib.nanmean(x, *args), ints)
    compare(lambda lib, x: lib.nansum(x, *args, dtype=lib.float64), ints)


# ------------------------------------------------------------------ median, mode, kthvalue
@pytest.mark.parametrize("shape", SHAPES + [(4, 0), ()])
def test_median_family(shape):
    a = _distinct(shape)
    for fn in ("median", "nanmedian"):
        compare(lambda lib, x: getattr(lib, fn)(x), a)
        for dim in range(-1, max(len(shape), 1)):
            for keepdim in (False, True):
                compare(lambda lib, x: getattr(lib, fn)(x, dim, keepdim), a)
                compare(lambda lib, x: getattr(x, fn)(dim, keepdim=keepdim), a)
    for dim in range(-1, max(len(shape), 1)):
        compare(lambda lib, x: lib.mode(x, dim), a)
        for k in (1, 2, 3):
            compare(lambda lib, x: lib.kthvalue(x, k, dim, True), a)


def test_median_nans_ties_ints():
    a = np.array([[4., NAN, 3., NAN, 1.], [2., 2., 2., 5., 1.], [NAN, NAN, NAN, NAN, NAN]], np.float32)
    for fn in ("median", "nanmedian"):
        compare(lambda lib, x: getattr(lib, fn)(x), a)
        compare(lambda lib, x: getattr(lib, fn)(x[:2]), a)
        compare(lambda lib, x: getattr(lib, fn)(x[:2], 1), a)
        # (a row of NaNs: NaN; torch's index there is whichever NaN its partial sort leaves)
        assert np.isnan(getattr(fg, fn)(fg.tensor(a), 1)[0][2].item())
    compare(lambda lib, x: lib.kthvalue(x, 4, 1), a[:1])
    ints = np.array([[3, 1, 2, 8], [0, 5, 6, 4]])
    for fn in ("median", "nanmedian", "mode"):
        compare(lambda lib, x: getattr(lib, fn)(x, 1), ints)
    compare(lambda lib, x: lib.median(x), ints)
    compare(lambda lib, x: lib.median(x > 1), ints)
    compare(lambda lib, x: lib.median(x, 5), ints)
    compare(lambda lib, x: lib.kthvalue(x, 5), ints)
    compare(lambda lib, x: lib.kthvalue(x, 0), ints)
    # mode: the smallest of the most frequent values, at its last position
    compare(lambda lib, x: lib.mode(x), np.array([3., 1., 3., 1., 2.], np.float32))
    compare(lambda lib, x: lib.mode(x, 0), np.array([[1., 3.], [3., 3.], [1., 2.], [4., 2.]], np.float32))
    # ties of the median value share the gradient (no dim)
    compare(lambda lib, x: lib.median(x), np.array([2., 1., 2., 3., 2.], np.float32))


# ------------------------------------------------------------------ quantile
@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("fn", ["quantile", "nanquantile"])
def test_quantile(fn, interpolation):
    a = _distinct((3, 5))
    b = a.copy()
    b[0, 1] = b[2, 0] = b[2, 3] = NAN
    for data in (a, b):
        for q in (0.0, 0.3, 0.5, 1.0):
            compare(lambda lib, x: getattr(lib, fn)(x, q, interpolation=interpolation), data)
            compare(lambda lib, x: getattr(lib, fn)(x, q, dim=1, interpolation=interpolation), data)
            compare(lambda lib, x: getattr(x, fn)(q, 0, True, interpolation=interpolation), data)
        compare(lambda lib, x: getattr(lib, fn)(x, lib.tensor([0.25, 0.5, 0.9]), dim=0, keepdim=True,
                                                interpolation=interpolation), data)
        compare(lambda lib, x: getattr(lib, fn)(x, lib.tensor([0.25, 0.9]), interpolation=interpolation), data)


def test_quantile_errors():
    a = _distinct((2, 3))
    for case in (lambda lib, x: lib.quantile(x, 1.5), lambda lib, x: lib.quantile(x, lib.tensor([1.5])),
                 lambda lib, x: lib.quantile(x, lib.tensor([0.5], dtype=lib.float64)),
                 lambda lib, x: lib.quantile(x, 0.5, interpolation="foo"),
                 lambda lib, x: lib.quantile(x[:0], 0.5), lambda lib, x: lib.quantile(x, lib.zeros(2, 2)),
                 lambda lib, x: lib.quantile(x.long(), 0.5), lambda lib, x: lib.quantile(x, 0.5, dim=2)):
        compare(case, a, grad=False)


# ------------------------------------------------------------------ var_mean, std_mean, aminmax
@pytest.mark.parametrize("fn", ["var_mean", "std_mean"])
def test_var_std_mean(fn):
    a = _distinct((3, 4))
    for kwargs in ({}, {"dim": 1}, {"dim": (0, 1), "keepdim": True}, {"dim": 0, "correction": 0},
                   {"dim": 1, "unbiased": False}):
        compare(lambda lib, x: getattr(lib, fn)(x, **kwargs), a)
    compare(lambda lib, x: getattr(lib, fn)(x, 1), np.arange(6).reshape(2, 3))
    # one output's gradient alone
    compare(lambda lib, x: getattr(lib, fn)(x, 1)[0], a, check_type=False)
    compare(lambda lib, x: getattr(lib, fn)(x, 1)[1], a, check_type=False)


def test_aminmax():
    a = np.array([[3., 1., 3.], [0., 5., 5.]], np.float32)
    compare(lambda lib, x: lib.aminmax(x), a)
    compare(lambda lib, x: lib.aminmax(x, dim=1), a)
    compare(lambda lib, x: x.aminmax(dim=0, keepdim=True), a)
    compare(lambda lib, x: lib.aminmax(x, dim=-1)[1], a, check_type=False)
    compare(lambda lib, x: lib.aminmax(x), np.array([[3, 1], [0, 5]]))
    compare(lambda lib, x: lib.aminmax(x), np.zeros((0,), np.float32))
    compare(lambda lib, x: lib.aminmax(x, dim=0), np.array(2.5, np.float32))
    for lib in (fg, torch):
        r = lib.aminmax(lib.tensor([1., 2.]))
        assert float(r.min) == 1 and float(r.max) == 2


# ------------------------------------------------------------------ fmax, fmin, msort
@pytest.mark.parametrize("fn", ["fmax", "fmin"])
def test_fmax_fmin(fn):
    a = np.array([[1., NAN, 3., NAN], [2., 2., -1., 4.]], np.float32)
    b = np.array([[2., 1., NAN, NAN], [2., 0., 5., 4.]], np.float32)
    compare(lambda lib, x, y: getattr(lib, fn)(x, y), a, b)
    compare(lambda lib, x, y: getattr(x, fn)(y[0]), a, b)
    compare(lambda lib, x, y: getattr(lib, fn)(x, y.long()), a, b.clip(0, 3).astype(np.float32))
    compare(lambda lib, x, y: getattr(lib, fn)(x, y), np.array([3, 1]), np.array([2, 2]))
    compare(lambda lib, x, y: getattr(lib, fn)(x, 2), a, b)


def test_msort():
    for shape in ((4,), (3, 2), ()):
        compare(lambda lib, x: lib.msort(x), _distinct(shape))
        compare(lambda lib, x: x.msort(), _distinct(shape))


# ------------------------------------------------------------------ unique family, counting
def test_unique():
    a = np.array([[3., 1., 2.], [0., 5., 5.], [3., 1., 2.]], np.float32)
    for kwargs in ({}, {"return_inverse": True}, {"return_counts": True},
                   {"return_inverse": True, "return_counts": True, "sorted": False},
                   {"dim": 0, "return_inverse": True, "return_counts": True}, {"dim": 1}):
        compare(lambda lib, x: lib.unique(x, **kwargs), a, grad=False)
        compare(lambda lib, x: x.unique(**kwargs), np.array([[2, 1], [1, 7]]), grad=False)
    for kwargs in ({}, {"return_inverse": True, "return_counts": True}, {"dim": 0, "return_counts": True}):
        compare(lambda lib, x: lib.unique_consecutive(x, **kwargs), np.array([1, 1, 2, 2, 3, 1, 1, 2]), grad=False)
        compare(lambda lib, x: lib.unique_consecutive(x, **kwargs), a, grad=False)
    for lib in (torch, fg):
        x = lib.tensor([1., 2., 2.], requires_grad=True)
        assert type(lib.unique(x).grad_fn).__name__ == "Unique2Backward0"
        with pytest.raises(Exception, match="the derivative for '_unique2' is not implemented."):
            lib.unique(x).sum().backward()


def test_bincount_histc():
    idx = np.array([1, 1, 4, 0])
    compare(lambda lib, x: lib.bincount(x), idx)
    compare(lambda lib, x: lib.bincount(x, minlength=7), idx)
    compare(lambda lib, x: x.bincount(lib.tensor([0.5, 1., 2., 3.])), idx)
    compare(lambda lib, x: lib.bincount(x, lib.tensor([0.5, 1., 2., 3.], dtype=lib.float64)), idx)
    compare(lambda lib, x: lib.bincount(x, lib.tensor([5, 1, 2, 3])), idx)
    compare(lambda lib, x: lib.bincount(x[:0]), idx)
    compare(lambda lib, x: lib.bincount(x - 2), idx)
    compare(lambda lib, x: lib.bincount(x.reshape(2, 2)), idx)
    compare(lambda lib, x: lib.bincount(x.float()), idx)
    for lib in (torch, fg):
        r = lib.bincount(lib.tensor([0, 1]), weights=lib.tensor([1., 2.], requires_grad=True))
        assert type(r.grad_fn).__name__ == "NotImplemented"
        with pytest.raises(RuntimeError, match="derivative for aten::bincount is not implemented"):
            r.sum().backward()
    v = np.array([1., 2., 1., 4., 0.5, 3.], np.float32)
    for args in ((4, 0, 3), (4,), (5, 1, 1), (3, 3, 1), (4, 0, 0)):
        compare(lambda lib, x: lib.histc(x, *args), v)
    compare(lambda lib, x: lib.histc(x, 4), np.ones(3, np.float32))
    compare(lambda lib, x: lib.histc(x, 4), np.array([1, 2]))
    compare(lambda lib, x: x.histc(bins=6, min=-1, max=5), v.astype(np.float64))


def test_bucketize_searchsorted():
    bounds = np.array([1, 3, 5, 7, 9])
    vals = np.array([[1, 5], [3, 10]])
    for right in (False, True):
        compare(lambda lib, b, v: lib.bucketize(v, b, right=right), bounds, vals)
        compare(lambda lib, b, v: lib.searchsorted(b, v, right=right), bounds, vals)
        compare(lambda lib, b, v: lib.bucketize(3, b, right=right), bounds, vals)
    rows = np.array([[1, 3, 5, 7, 9], [2, 4, 6, 8, 10]])
    compare(lambda lib, b, v: lib.searchsorted(b, v), rows, np.array([[3, 6, 9], [3, 6, 9]]))
    compare(lambda lib, b, v: lib.searchsorted(b, v, side="right"), rows, np.array([[3, 6, 9], [3, 6, 9]]))
    compare(lambda lib, b, v: lib.searchsorted(b, v, side="left", right=True), bounds, vals)
    compare(lambda lib, b, v: lib.searchsorted(b, v), rows[:1], np.array([[3, 6, 9], [1, 2, 3]]))
    compare(lambda lib, b, v: lib.bucketize(v, b), rows, vals)
    compare(lambda lib, b, v: lib.searchsorted(b, v, sorter=lib.tensor([0, 2, 4, 3, 1])),
            np.array([1, 9, 3, 7, 5]), np.array([3, 6, 9]))
    compare(lambda lib, b, v: lib.searchsorted(b, v), np.array([1., 3., 5., NAN], np.float32),
            np.array([3., 6., NAN], np.float32), grad=False)


def test_logspace():
    for args, kwargs in (((0, 2, 5), {}), ((0, 2, 5), {"base": 2}), ((0, 2, 3), {"dtype": fg.int64}),
                         ((-1, 3.5, 7), {"dtype": fg.float64}), ((1, 2, 1), {}), ((1, 2, 0), {})):
        ours = fg.logspace(*args, **kwargs)
        theirs = torch.logspace(*args, **{k: (torch.int64 if v is fg.int64 else torch.float64 if v is fg.float64
                                              else v) for k, v in kwargs.items()})
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


# ------------------------------------------------------------------ fg.compile
def test_compiled_matches_eager():
    a = _distinct((3, 4)).astype(np.float32)

    def f(x):
        values, _ = fg.cummax(x, 1)
        lo, hi = fg.aminmax(x, dim=0)
        var, mean = fg.var_mean(x, 1)
        return (fg.cumprod(x, 1).sum() + values.sum() + fg.logcumsumexp(x, 0).sum() + fg.median(x)
                + fg.median(x, 1)[0].sum() + fg.nansum(x) + fg.quantile(x, 0.3, dim=1).sum()
                + fg.fmax(x, x * 0.5).sum() + (hi - lo).sum() + var.sum() + mean.sum() + fg.kthvalue(x, 2)[0].sum())
    compiled = fg.compile(f)
    for scale in (1.0, -2.0):
        x1 = fg.tensor(a * scale, requires_grad=True)
        x2 = fg.tensor(a * scale, requires_grad=True)
        y1, y2 = f(x1), compiled(x2)
        np.testing.assert_allclose(y2.detach().numpy(), y1.detach().numpy(), rtol=1e-5)
        y1.backward()
        y2.backward()
        np.testing.assert_allclose(x2.grad.numpy(), x1.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_compiled_value_dependent_shapes():
    def f(x):
        return fg.unique(x) * 2, fg.bincount(x.long()), fg.histc(x, 3), fg.searchsorted(fg.tensor([1., 2.]), x)
    compiled = fg.compile(f)
    for data in ([1., 2., 2., 5.], [0., 0., 3.]):
        ours, eager = compiled(fg.tensor(data)), f(fg.tensor(data))
        for o, e in zip(ours, eager):
            np.testing.assert_array_equal(o.numpy(), e.numpy())
