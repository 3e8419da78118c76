"""tracer/misc_functions.py against torch: values, dtypes, grad_fn names, gradients, errors."""
import warnings

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch 2.13 is the oracle of these cases")

from parity_support import assert_same, same_error  # noqa: E402

RNG = np.random.default_rng(0)
X34 = RNG.standard_normal((3, 4)).astype(np.float32)
X44 = RNG.standard_normal((4, 4)).astype(np.float32)
V4 = RNG.standard_normal(4).astype(np.float32)


def leaf(lib, a):
    return lib.tensor(a, requires_grad=True)


def check_grad(make, inputs, rtol=1e-4, atol=1e-5, node=True):
    """make(lib, *leaves) on both; same value, grad_fn name and gradients of sum(out * w)."""
    outs = {}
    for lib in (torch, fg):
        leaves = [leaf(lib, a) for a in inputs]
        out = make(lib, *leaves)
        w = lib.tensor(np.linspace(0.5, 1.5, max(out.numel(), 1)).reshape(tuple(out.shape)).astype(
            np.float32 if out.dtype in (torch.float32, fg.float32) else np.float64))
        (out * w).sum().backward()
        outs[lib] = out, [t.grad for t in leaves]
    (ours, og), (theirs, tg) = outs[fg], outs[torch]
    assert_same(ours, theirs, rtol, atol)
    if node:
        assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__
    for a, b in zip(og, tg):
        if b is None:
            assert a is None or not a.abs().sum().item()
        else:
            assert_same(a, b, rtol, atol)


@pytest.mark.parametrize("invert", [False, True])
def test_isin(invert):
    for e, t in [([1, 2, 3, 4], [2, 5]), ([[1., 2.], [3., 4.]], [4]), ([1, 2], [2.0, 1.5]), ([1, 2], [])]:
        ours = fg.isin(fg.tensor(e), fg.tensor(t, dtype=None if t else fg.int64), invert=invert)
        theirs = torch.isin(torch.tensor(e), torch.tensor(t, dtype=None if t else torch.int64), invert=invert)
        assert_same(ours, theirs)
    assert_same(fg.isin(fg.tensor([1, 2]), 2), torch.isin(torch.tensor([1, 2]), 2))
    assert_same(fg.isin(2, fg.tensor([1, 2])), torch.isin(2, torch.tensor([1, 2])))


@pytest.mark.parametrize("kw", [dict(bins=4), dict(bins=3, range=(-1., 1.)), dict(bins=5, density=True),
                                dict(bins=4, weight=True)])
def test_histogram(kw):
    data = RNG.standard_normal(50).astype(np.float32)
    w = RNG.random(50).astype(np.float32)
    res = {}
    for lib in (torch, fg):
        k = dict(kw)
        if k.get("weight"):
            k["weight"] = lib.tensor(w)
        res[lib] = lib.histogram(lib.tensor(data), **k)
    assert_same(res[fg].hist, res[torch].hist, 1e-5, 1e-5)
    assert_same(res[fg].bin_edges, res[torch].bin_edges)
    edges = [-2., 0., 0.5, 3.]
    assert_same(fg.histogram(fg.tensor(data), fg.tensor(edges))[0], torch.histogram(torch.tensor(data), torch.tensor(edges))[0])
    same_error(lambda lib: lib.histogram(lib.arange(3), 3))


@pytest.mark.parametrize("shape", [(3, 5), (6,), (1, 4)])
@pytest.mark.parametrize("correction", [1, 0])
def test_cov_corrcoef(shape, correction):
    a = RNG.standard_normal(shape).astype(np.float32)
    check_grad(lambda lib, x: lib.cov(x, correction=correction), [a])
    if shape != (1, 4) or True:
        check_grad(lambda lib, x: lib.corrcoef(x), [a], node=False)
    n = shape[-1]
    fw, aw = np.arange(1, n + 1), RNG.random(n).astype(np.float32)
    ours = fg.cov(fg.tensor(a), fweights=fg.tensor(fw), aweights=fg.tensor(aw), correction=correction)
    theirs = torch.cov(torch.tensor(a), fweights=torch.tensor(fw), aweights=torch.tensor(aw), correction=correction)
    assert_same(ours, theirs)
    assert_same(fg.cov(fg.arange(4)), torch.cov(torch.arange(4)))
    same_error(lambda lib: lib.cov(lib.zeros(2, 3, 4)))


@pytest.mark.parametrize("dim", [-1, 0])
def test_trapezoid_family(dim):
    check_grad(lambda lib, y: lib.trapezoid(y, dim=dim), [X34])
    check_grad(lambda lib, y: lib.trapezoid(y, dx=0.5, dim=dim), [X34])
    xs = np.sort(RNG.random(X34.shape[dim])).astype(np.float32)
    check_grad(lambda lib, y: lib.trapezoid(y, lib.tensor(xs), dim=dim), [X34])
    check_grad(lambda lib, y: lib.trapz(y, lib.tensor(xs), dim=dim), [X34])
    check_grad(lambda lib, y: lib.cumulative_trapezoid(y, dim=dim), [X34])
    check_grad(lambda lib, y: lib.cumulative_trapezoid(y, lib.tensor(xs), dim=dim), [X34])
    check_grad(lambda lib, y: lib.cumulative_trapezoid(y, dx=2.0, dim=dim), [X34])
    assert_same(fg.trapezoid(fg.arange(4)), torch.trapezoid(torch.arange(4)))
    assert_same(fg.trapezoid(fg.zeros(3, 0)), torch.trapezoid(torch.zeros(3, 0)))


@pytest.mark.parametrize("N,increasing", [(None, False), (3, True), (5, False), (1, False)])
def test_vander(N, increasing):
    # (torch 2.13's own vander backward raises a version error: values and node names only)
    ours, theirs = fg.vander(leaf(fg, V4), N=N, increasing=increasing), torch.vander(leaf(torch, V4), N=N,
                                                                                    increasing=increasing)
    assert_same(ours, theirs)
    assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__
    assert_same(fg.vander(fg.tensor([1, 2, 3]), N, increasing), torch.vander(torch.tensor([1, 2, 3]), N, increasing))
    same_error(lambda lib: lib.vander(lib.zeros(2, 2)))


def test_unravel_index_and_combinations():
    for idx, shape in [([0, 5, 7, -1, -7], (2, 3)), (4, (2, 3)), ([[3, 1]], (4,))]:
        ours, theirs = fg.unravel_index(fg.tensor(idx), shape), torch.unravel_index(torch.tensor(idx), shape)
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert_same(a, b)
    same_error(lambda lib: lib.unravel_index(lib.tensor([1.]), (2, 3)))
    for r, rep in [(2, False), (3, False), (2, True), (0, False), (5, False)]:
        assert_same(fg.combinations(fg.tensor([1, 5, 7, 9]), r, rep), torch.combinations(torch.tensor([1, 5, 7, 9]), r, rep))
    check_grad(lambda lib, x: lib.combinations(x, 2, True), [V4])
    same_error(lambda lib: lib.combinations(lib.zeros(2, 2)))


def test_view_scatters():
    check_grad(lambda lib, x, s: lib.select_scatter(x, s, 0, 1), [X34, V4])
    check_grad(lambda lib, x, s: lib.select_scatter(x, s, 1, -1), [X34, V4[:3]])
    check_grad(lambda lib, x, s: lib.slice_scatter(x, s, 1, 0, 4, 2), [X34, X34[:, :2]])
    check_grad(lambda lib, x, s: lib.slice_scatter(x, s, 0, 1), [X34, X34[:2]])
    check_grad(lambda lib, x, s: lib.slice_scatter(x, s, 1, -3, 100), [X34, X34[:, :3]])
    check_grad(lambda lib, x, s: lib.diagonal_scatter(x, s), [X34, V4[:3]])
    check_grad(lambda lib, x, s: lib.diagonal_scatter(x, s, 1), [X34, V4[:3]])
    check_grad(lambda lib, x, s: x.diagonal_scatter(s, -1, 1, 0), [X34, V4[:3]])
    same_error(lambda lib: lib.select_scatter(lib.zeros(3, 4), lib.zeros(3), 0, 1))
    same_error(lambda lib: lib.select_scatter(lib.zeros(3, 4), lib.zeros(4), 0, 5))
    same_error(lambda lib: lib.slice_scatter(lib.zeros(3, 4), lib.zeros(3, 3), 1))
    same_error(lambda lib: lib.diagonal_scatter(lib.zeros(3, 4), lib.zeros(4)))


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_and_put(accumulate):
    check_grad(lambda lib, x, v: lib.index_put(x, (lib.tensor([0, 2]),), v, accumulate), [X34, V4])
    check_grad(lambda lib, x, v: x.index_put((lib.tensor([0, 2, 0]), lib.tensor([1, 3, 1])), v, accumulate=accumulate),
               [X34, V4[:3]] if accumulate else [X34, V4[:1]])
    check_grad(lambda lib, x, v: lib.index_put(x, (lib.tensor([[True, False, True, False]] * 3),), v, accumulate),
               [X34, V4[:1]])
    check_grad(lambda lib, x, v: lib.put(x, lib.tensor([[0, 11], [-1, 5]]), v, accumulate), [X34, X44[:2, :2]])
    written = {}
    for lib in (torch, fg):
        t = lib.zeros(3, 4)
        t.index_put_((lib.tensor([1]),), lib.tensor(2.0), accumulate=accumulate)
        t.put_(lib.tensor([0, 0]), lib.tensor([1.0, 3.0]), accumulate=accumulate)
        written[lib] = t
    assert_same(written[fg], written[torch])
    same_error(lambda lib: lib.put(lib.zeros(3, 4), lib.tensor([20]), lib.tensor([1.])))
    same_error(lambda lib: lib.put(lib.zeros(3, 4), lib.tensor([2, 3]), lib.tensor([1.])))


@pytest.mark.parametrize("wrap", [False, True])
@pytest.mark.parametrize("shape", [(3, 3), (7, 3), (3, 5), (3, 3, 3)])
def test_fill_diagonal_(shape, wrap):
    results = []
    base = RNG.standard_normal(shape).astype(np.float32)
    for lib in (torch, fg):
        x = lib.tensor(base, requires_grad=True)
        y = x.clone()
        y.fill_diagonal_(7.5, wrap=wrap)
        y.sum().backward()
        results.append((y, x.grad, type(y.grad_fn).__name__))
    assert_same(results[1][0], results[0][0])
    assert_same(results[1][1], results[0][1])
    assert results[1][2] == results[0][2]
    same_error(lambda lib: lib.zeros(3).fill_diagonal_(1))
    same_error(lambda lib: lib.zeros(3, 4, 5).fill_diagonal_(1))


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(reduce, include_self):
    src = RNG.standard_normal((3, 4)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_grad(lambda lib, x, s: x.index_reduce(0, lib.tensor([0, 2, 0]), s, reduce, include_self=include_self),
                   [X34, src])
        same_error(lambda lib: lib.zeros(3, 4).index_reduce(0, lib.tensor([0]), lib.zeros(1, 4), "sum"))


@pytest.mark.parametrize("p,dim,maxnorm", [(2, 0, 1.0), (1, 1, 0.5), (3, -1, 2.0), (float("inf"), 0, 0.3),
                                           (2, 1, 100.0)])
def test_renorm(p, dim, maxnorm):
    check_grad(lambda lib, x: lib.renorm(x, p, dim, maxnorm), [X34])
    written = {}
    for lib in (torch, fg):
        written[lib] = lib.tensor(X34.copy()).renorm_(p, dim, maxnorm)
    assert_same(written[fg], written[torch])
    same_error(lambda lib: lib.zeros(3, 4).renorm(0, 0, 1.))
    same_error(lambda lib: lib.zeros(3, 4).renorm(2, 0, -1.))
    same_error(lambda lib: lib.zeros(3).renorm(2, 0, 1.))


def test_frexp_nextafter():
    data = np.array([0.0, 1.0, -3.5, 1e-3, 1e30, np.inf, -np.inf, np.nan, 1e-40], np.float32)
    m, e = fg.frexp(fg.tensor(data))
    tm, te = torch.frexp(torch.tensor(data))
    assert_same(m, tm)
    assert e.dtype is fg.int64 and np.array_equal(e.numpy(), te.numpy().astype(np.int64))
    check_grad(lambda lib, x: lib.frexp(x).mantissa, [X34])
    assert type(fg.frexp(fg.ones(2, requires_grad=True))[0].grad_fn).__name__ == "FrexpBackward0"
    same_error(lambda lib: lib.frexp(lib.arange(3)))
    a, b = X34, X34[::-1].copy()
    ours, theirs = fg.nextafter(fg.tensor(a), fg.tensor(b)), torch.nextafter(torch.tensor(a), torch.tensor(b))
    assert np.array_equal(ours.numpy(), theirs.numpy())
    assert_same(fg.nextafter(fg.tensor(a), fg.tensor(1.0, dtype=fg.float64)),
                torch.nextafter(torch.tensor(a), torch.tensor(1.0, dtype=torch.float64)))
    y = fg.nextafter(fg.tensor(a, requires_grad=True), fg.tensor(b))
    assert type(y.grad_fn).__name__ == "NextafterBackward0"


def test_small_ones():
    check_grad(lambda lib, x: x.narrow_copy(1, 1, 2), [X34])
    assert_same(fg.narrow_copy(fg.tensor(X34), 0, -2, 2), torch.narrow_copy(torch.tensor(X34), 0, -2, 2))
    t = fg.tensor(X34)
    c = t.narrow_copy(1, 0, 2)
    c[0, 0] = 100.0
    assert t[0, 0].item() != 100.0
    same_error(lambda lib: lib.zeros(3, 4).narrow_copy(1, 3, 2))
    e = fg.ones(2, dtype=fg.float64).new_empty_strided((2, 3), (1, 2))
    assert tuple(e.shape) == (2, 3) and e.stride() == (1, 2) and e.dtype is fg.float64
    for lib in (torch, fg):
        x = lib.tensor(X34.copy())
        assert x.swapaxes_(0, 1) is x and tuple(x.shape) == (4, 3)
        assert x.swapdims_(0, 1) is x and tuple(x.shape) == (3, 4)
        assert x.conj() is x and x.resolve_conj() is x and x.resolve_neg() is x
        assert not x.is_conj() and not x.is_neg() and not lib.is_conj(x)
    data = [[0, 1], [2, 0]]
    for size, fill in [(4, -1), (1, 7), (0, -1)]:
        assert_same(fg.nonzero_static(fg.tensor(data), size=size, fill_value=fill),
                    torch.nonzero_static(torch.tensor(data), size=size, fill_value=fill))
    same_error(lambda lib: lib.nonzero_static(lib.zeros(2), size=-1))


def test_compiled_matches_eager():
    def f(x, s):
        y = fg.select_scatter(x, s, 0, 1) + fg.diagonal_scatter(x, s[:3])
        z = fg.renorm(y, 2, 0, 1.0) + fg.cov(x)[0:1].sum() + fg.trapezoid(x, dim=0).sum()
        return (z * z).sum() + fg.frexp(x).mantissa.sum() + x.index_put((fg.tensor([0, 2]),), s).sum()

    x, s = fg.tensor(X34, requires_grad=True), fg.tensor(V4, requires_grad=True)
    eager_value = f(x, s)
    eager_value.backward()
    eager = (x.grad.numpy().copy(), s.grad.numpy().copy())
    x.grad = s.grad = None
    value = fg.compile(f)(x, s)
    value.backward()
    np.testing.assert_allclose(value.item(), eager_value.item(), rtol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), eager[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(s.grad.numpy(), eager[1], rtol=1e-4, atol=1e-5)
