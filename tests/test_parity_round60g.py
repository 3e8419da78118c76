"""Round 60g of torch parity.

- nn.AdaptiveLogSoftmaxWithLoss (fusegrad/nn/adaptive.py): torch's submodules in torch's order,
  so after the same manual_seed the parameters are torch's; forward's (output, loss) named
  tuple, log_prob, predict, unbatched input, torch's errors and repr; values and gradients,
  eagerly and inside fg.compile.
- F.fractional_max_pool2d/3d (and their *_with_indices forms), nn.FractionalMaxPool2d/3d: the
  windows of torch's generate_intervals computed in the input's dtype, torch's NaN and tie rules,
  indices, gradients, node names, its checks and texts in its order, and the samples drawn from
  the global generator as torch's Python draws them (`rand(N, C, nd, dtype=input.dtype)`), so
  after the same manual_seed results are torch's; compiled calls equal eager ones.
"""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle")

import fusegrad as fg  # noqa: E402

# (torch's module makes a Linear of zero features where in_features // div_value**k is 0, and
# warns as it initialises it; fusegrad's warns alike)
pytestmark = pytest.mark.filterwarnings("ignore:Initializing zero-element tensors is a no-op")


def _volume(L, shape, seed=0, requires_grad=True, dtype="float32"):
    """A tensor of `shape` with distinct values (no ties in a window)."""
    n = int(np.prod(shape))
    values = [((k * 7919 + seed * 104729) % 1009) / 97.0 - 5.0 for k in range(n)]
    return L.tensor(values, dtype=getattr(L, dtype)).reshape(shape).requires_grad_(requires_grad)


def _samples(L, shape, seed=1, dtype="float32"):
    """Samples in [0, 1) of `shape`, the same numbers for both libraries."""
    n = int(np.prod(shape))
    values = [((k * 6007 + seed * 3001) % 997) / 997.0 for k in range(n)]
    return L.tensor(values, dtype=getattr(L, dtype)).reshape(shape)


def _outcome(call, L):
    """The call's results (dtype, shape, values, grad_fn name) and the gradients of the inputs it
    made (through a weighted sum of its float results), or its error's class and text."""
    made = []
    real_tensor = L.tensor

    def tensor(*args, **kwargs):
        t = real_tensor(*args, **kwargs)
        made.append(t)
        return t
    L.tensor = tensor
    try:
        try:
            out = call(L)
        finally:
            L.tensor = real_tensor
    except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
        return type(exc).__name__, str(exc)
    outs = out if isinstance(out, tuple) else (out,)
    results = [(str(o.dtype).split(".")[-1], tuple(o.shape), o.detach().reshape(-1).tolist(),
                type(o.grad_fn).__name__ if o.grad_fn is not None else None) for o in outs]
    floats = [o for o in outs if o.requires_grad]
    if floats:
        loss = sum((o * L.linspace(0.5, 2.0, o.numel(), dtype=o.dtype).reshape(o.shape)).sum() for o in floats)
        loss.backward()
    grads = [None if t.grad is None else t.grad.reshape(-1).tolist() for t in made if t.requires_grad]
    return results, grads


def _assert_same(got, expected, exact=True):
    if isinstance(expected[0], str):
        assert got == expected
        return
    assert isinstance(got[0], list), got
    assert [r[0:2] + r[3:] for r in got[0]] == [r[0:2] + r[3:] for r in expected[0]]
    for g, e in zip(got[0], expected[0]):
        if exact:
            np.testing.assert_array_equal(np.array(g[2]), np.array(e[2]))
        else:
            assert g[2] == pytest.approx(e[2], rel=1e-5, abs=1e-6, nan_ok=True)
    assert [g is None for g in got[1]] == [e is None for e in expected[1]]
    for g, e in zip(got[1], expected[1]):
        if e is not None:
            if exact:
                np.testing.assert_array_equal(np.array(g), np.array(e))
            else:
                assert g == pytest.approx(e, rel=1e-5, abs=1e-6)


# ---------------------------------------------------------------- fractional max pooling

def _x4(L, **kw):
    return _volume(L, (2, 3, 7, 8), **kw)


def _x5(L, **kw):
    return _volume(L, (2, 3, 5, 6, 7), **kw)


def _s2(L, n=2, c=3, d=2, **kw):
    return _samples(L, (n, c, d), **kw)


def _seeded(fn):
    """fn(L) after manual_seed(3): its samples drawn from the global generator."""
    def call(L):
        L.manual_seed(3)
        return fn(L)
    return call


def _F(L):
    return L.nn.functional


def _under_no_grad(L, fn):
    with L.no_grad():
        return fn()


_FRACTIONAL = [
    ("2d output_size", lambda L: _F(L).fractional_max_pool2d(_x4(L), 2, output_size=3, _random_samples=_s2(L))),
    ("2d indices", lambda L: _F(L).fractional_max_pool2d(_x4(L), (3, 2), output_size=(4, 5), return_indices=True,
                                                          _random_samples=_s2(L))),
    ("2d ratio", lambda L: _F(L).fractional_max_pool2d(_x4(L), 2, output_ratio=(0.5, 0.7), _random_samples=_s2(L))),
    ("2d float64", lambda L: _F(L).fractional_max_pool2d(_x4(L, dtype="float64"), 2, (3, 4), return_indices=True,
                                                          _random_samples=_s2(L, dtype="float64"))),
    ("2d unbatched", lambda L: _F(L).fractional_max_pool2d(_volume(L, (3, 9, 10)), 2, 4, return_indices=True,
                                                            _random_samples=_s2(L, 1))),
    ("2d more samples than batch", lambda L: _F(L).fractional_max_pool2d(_x4(L), 2, 3, _random_samples=_s2(L, 4))),
    ("2d output 1", lambda L: _F(L).fractional_max_pool2d(_x4(L), 2, 1, return_indices=True, _random_samples=_s2(L))),
    ("2d output 0", lambda L: _F(L).fractional_max_pool2d(_x4(L), 2, 0, return_indices=True, _random_samples=_s2(L))),
    ("2d whole input", lambda L: _F(L).fractional_max_pool2d(_x4(L), (7, 8), 1, return_indices=True, _random_samples=_s2(L))),
    ("2d kernel 1", lambda L: _F(L).fractional_max_pool2d(_x4(L), 1, (7, 8), return_indices=True, _random_samples=_s2(L))),
    ("2d kernel 0", lambda L: _F(L).fractional_max_pool2d(_x4(L, requires_grad=False), 0, 3, return_indices=True,
                                                           _random_samples=_s2(L))),
    ("2d kernel -1", lambda L: _F(L).fractional_max_pool2d(_x4(L, requires_grad=False), (2, -1), 3, return_indices=True,
                                                            _random_samples=_s2(L))),
    ("2d samples out of [0, 1)", lambda L: _F(L).fractional_max_pool2d(_x4(L), 2, 3, return_indices=True,
                                                                        _random_samples=_s2(L) * 7 - 3)),
    ("2d with_indices", lambda L: _F(L).fractional_max_pool2d_with_indices(_x4(L), 2, 3, _random_samples=_s2(L))),
    ("2d drawn", _seeded(lambda L: _F(L).fractional_max_pool2d(_x4(L), 2, 3, return_indices=True))),
    ("2d drawn float64", _seeded(lambda L: _F(L).fractional_max_pool2d(_x4(L, dtype="float64"), 2, (3, 5)))),
    ("2d drawn unbatched", _seeded(lambda L: _F(L).fractional_max_pool2d(_volume(L, (3, 9, 10)), 3, 4, return_indices=True))),
    ("2d drawn ratio", _seeded(lambda L: _F(L).fractional_max_pool2d(_x4(L), 2, output_ratio=[0.6, 0.5]))),
    ("2d empty batch", lambda L: _F(L).fractional_max_pool2d(_volume(L, (0, 2, 5, 5)), 2, 3, return_indices=True)),
    ("2d no sizes", lambda L: _F(L).fractional_max_pool2d(_x4(L), 2)),
    ("2d ratio float", lambda L: _F(L).fractional_max_pool2d(_x4(L), 2, output_ratio=0.5)),
    ("2d ratio triple", lambda L: _F(L).fractional_max_pool2d(_x4(L), 2, output_ratio=(0.5, 0.5, 0.5))),
    ("2d ratio above 1", lambda L: _F(L).fractional_max_pool2d(_x4(L), 2, output_ratio=(1.5, 0.5))),
    ("2d both sizes", lambda L: _F(L).fractional_max_pool2d(_x4(L), 2, 3, (0.5, 0.5), _random_samples=_s2(L))),
    ("2d kernel triple", lambda L: _F(L).fractional_max_pool2d(_x4(L), (2, 2, 2), 3, _random_samples=_s2(L))),
    ("2d kernel single", lambda L: _F(L).fractional_max_pool2d(_x4(L), (2,), 3, _random_samples=_s2(L))),
    ("2d output triple", lambda L: _F(L).fractional_max_pool2d(_x4(L), 2, (3, 3, 3), _random_samples=_s2(L))),
    ("2d kernel float", lambda L: _F(L).fractional_max_pool2d(_x4(L), 2.0, 3, _random_samples=_s2(L))),
    ("2d kernel float item", lambda L: _F(L).fractional_max_pool2d(_x4(L), (2.0, 2), 3, _random_samples=_s2(L))),
    ("2d kernel str item", lambda L: _F(L).fractional_max_pool2d(_x4(L), (2, "a"), 3, _random_samples=_s2(L))),
    ("2d kernel bool", lambda L: _F(L).fractional_max_pool2d(_x4(L), True, 3, _random_samples=_s2(L))),
    ("2d output None item", lambda L: _F(L).fractional_max_pool2d(_x4(L), 2, (None, 2), _random_samples=_s2(L))),
    ("2d samples list", lambda L: _F(L).fractional_max_pool2d(_x4(L), 2, 3, _random_samples=[[0.5]])),
    ("2d pool too high", lambda L: _F(L).fractional_max_pool2d(_x4(L), 2, 7, _random_samples=_s2(L))),
    ("2d pool too wide", lambda L: _F(L).fractional_max_pool2d(_x4(L), 2, (6, 8), _random_samples=_s2(L))),
    ("2d negative output", lambda L: _F(L).fractional_max_pool2d(_x4(L), 2, -1, _random_samples=_s2(L))),
    ("2d 2-d input drawn", lambda L: _F(L).fractional_max_pool2d(_volume(L, (7, 8)), 2, 3)),
    ("2d 2-d input", lambda L: _F(L).fractional_max_pool2d(_volume(L, (7, 8)), 2, 3, _random_samples=_s2(L))),
    ("2d 5-d input", lambda L: _F(L).fractional_max_pool2d(_volume(L, (1, 2, 3, 7, 8)), 2, 3,
                                                            _random_samples=_s2(L))),
    ("2d empty channels", lambda L: _F(L).fractional_max_pool2d(_volume(L, (2, 0, 5, 5)), 2, 3)),
    ("2d int64 drawn", lambda L: _F(L).fractional_max_pool2d(_x4(L, requires_grad=False).long(), 2, 3)),
    ("2d bool drawn", lambda L: _F(L).fractional_max_pool2d(_x4(L, requires_grad=False) > 0, 2, 3)),
    ("2d int64", lambda L: _F(L).fractional_max_pool2d(_x4(L, requires_grad=False).long(), 2, 3,
                                                        _random_samples=_s2(L).long())),
    ("2d samples dtype", lambda L: _F(L).fractional_max_pool2d(_x4(L), 2, 3, _random_samples=_s2(L).double())),
    ("2d samples 2-d", lambda L: _F(L).fractional_max_pool2d(_x4(L), 2, 3, _random_samples=_s2(L)[0])),
    ("2d samples short batch", lambda L: _F(L).fractional_max_pool2d(_x4(L), 2, 3, _random_samples=_s2(L, 1))),
    ("2d samples channels", lambda L: _F(L).fractional_max_pool2d(_x4(L), 2, 3, _random_samples=_s2(L, 2, 2))),
    ("2d samples last dim", lambda L: _F(L).fractional_max_pool2d(_x4(L), 2, 3, _random_samples=_s2(L, 2, 3, 3))),
    ("2d samples requiring grad", lambda L: _F(L).fractional_max_pool2d(
        _x4(L), 2, 3, _random_samples=_s2(L).requires_grad_())),
    ("2d samples requiring grad, int input", lambda L: _F(L).fractional_max_pool2d(
        _x4(L, requires_grad=False).long(), 2, 3, _random_samples=_s2(L).requires_grad_())),
    ("2d samples requiring grad under no_grad", lambda L: _under_no_grad(L, lambda: _F(L).fractional_max_pool2d(
        _x4(L), 2, 3, _random_samples=_s2(L).requires_grad_()))),
    ("2d list input", lambda L: _F(L).fractional_max_pool2d([1.0], 2, 3)),
    ("3d output_size", lambda L: _F(L).fractional_max_pool3d(_x5(L), 2, 3, _random_samples=_s2(L, d=3))),
    ("3d indices", lambda L: _F(L).fractional_max_pool3d(_x5(L), (1, 2, 3), (4, 3, 2), return_indices=True,
                                                          _random_samples=_s2(L, d=3))),
    ("3d ratio", lambda L: _F(L).fractional_max_pool3d(_x5(L), 2, output_ratio=0.5, _random_samples=_s2(L, d=3))),
    ("3d float64 unbatched", lambda L: _F(L).fractional_max_pool3d(
        _volume(L, (3, 5, 6, 7), dtype="float64"), 2, 2, return_indices=True, _random_samples=_s2(L, 1, d=3, dtype="float64"))),
    ("3d with_indices", lambda L: _F(L).fractional_max_pool3d_with_indices(_x5(L), 2, 2,
                                                                            _random_samples=_s2(L, d=3))),
    ("3d drawn", _seeded(lambda L: _F(L).fractional_max_pool3d(_x5(L), 2, (2, 3, 4), return_indices=True))),
    ("3d drawn ratio", _seeded(lambda L: _F(L).fractional_max_pool3d(_x5(L), 2, output_ratio=(0.5, 0.6, 0.7)))),
    ("3d ratio pair", lambda L: _F(L).fractional_max_pool3d(_x5(L), 2, output_ratio=(0.5, 0.5))),
    ("3d no sizes", lambda L: _F(L).fractional_max_pool3d(_x5(L), 2)),
    ("3d kernel pair", lambda L: _F(L).fractional_max_pool3d(_x5(L), (2, 2), 3, _random_samples=_s2(L, d=3))),
    ("3d output pair", lambda L: _F(L).fractional_max_pool3d(_x5(L), 2, (3, 3), _random_samples=_s2(L, d=3))),
    ("3d kernel 0", lambda L: _F(L).fractional_max_pool3d(_x5(L, requires_grad=False), (2, 0, 2), 3, return_indices=True,
                                                           _random_samples=_s2(L, d=3))),
    ("3d pool too long", lambda L: _F(L).fractional_max_pool3d(_x5(L), 2, (4, 3, 3), _random_samples=_s2(L, d=3))),
    ("3d time edge", lambda L: _F(L).fractional_max_pool3d(_x5(L), 2, (5, 3, 3), _random_samples=_s2(L, d=3))),
    ("3d width before height", lambda L: _F(L).fractional_max_pool3d(_x5(L), 2, (3, 5, 6),
                                                                      _random_samples=_s2(L, d=3))),
    ("3d height", lambda L: _F(L).fractional_max_pool3d(_x5(L), 2, (3, 5, 3), _random_samples=_s2(L, d=3))),
    ("3d 3-d input drawn", lambda L: _F(L).fractional_max_pool3d(_volume(L, (5, 6, 7)), 2, 2)),
    ("3d 3-d input", lambda L: _F(L).fractional_max_pool3d(_volume(L, (5, 6, 7)), 2, 2,
                                                            _random_samples=_s2(L, d=3))),
    ("3d empty depth", lambda L: _F(L).fractional_max_pool3d(_volume(L, (1, 2, 0, 4, 4)), 2, 2)),
    ("3d samples last dim", lambda L: _F(L).fractional_max_pool3d(_x5(L), 2, 3, _random_samples=_s2(L))),
    ("3d negative output", lambda L: _F(L).fractional_max_pool3d(_x5(L), 2, (-1, 2, 2), _random_samples=_s2(L, d=3))),
    ("3d output 0", lambda L: _F(L).fractional_max_pool3d(_x5(L), 2, 0, return_indices=True, _random_samples=_s2(L, d=3))),
    ("3d samples requiring grad", lambda L: _F(L).fractional_max_pool3d(
        _x5(L), 2, 3, _random_samples=_s2(L, d=3).requires_grad_())),
    ("FractionalMaxPool2d", lambda L: L.nn.FractionalMaxPool2d(2, output_size=(3, 4), return_indices=True,
                                                               _random_samples=_s2(L))(_x4(L))),
    ("FractionalMaxPool2d drawn", _seeded(lambda L: L.nn.FractionalMaxPool2d(3, output_ratio=0.5)(_x4(L)))),
    ("FractionalMaxPool3d", lambda L: L.nn.FractionalMaxPool3d(2, output_size=2,
                                                               _random_samples=_s2(L, d=3))(_x5(L))),
    ("FractionalMaxPool3d drawn", _seeded(lambda L: L.nn.FractionalMaxPool3d((1, 2, 2), output_ratio=(0.5, 0.5, 0.5),
                                                                             return_indices=True)(_x5(L)))),
]
_FRACTIONAL_NAMES = [name for name, _ in _FRACTIONAL]


@pytest.mark.parametrize("k", range(len(_FRACTIONAL)), ids=_FRACTIONAL_NAMES)
def test_fractional_max_pool_as_torch(k):
    call = _FRACTIONAL[k][1]
    _assert_same(_outcome(call, fg), _outcome(call, torch))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("size,kernel,out", [(7, 2, 3), (10, 3, 4), (31, 3, 10), (50, 2, 17), (13, 1, 12),
                                             (100, 4, 33), (9, 5, 2), (64, 2, 31)])
def test_fractional_windows_follow_torchs_rounding(size, kernel, out, dtype):
    """Many samples, near the points where a start changes, through the input's dtype's rounding:
    the indices are torch's (the windows of generate_intervals, computed as torch computes them)."""
    rng = np.random.default_rng(size * 100 + out)
    u = np.concatenate([rng.random(64), np.arange(1, 40) / 40.0, np.nextafter(np.arange(1, 40) / 40.0, 0),
                        [0.0, np.nextafter(1.0, 0)]])
    count = len(u)
    values = rng.standard_normal((1, count, size, size + 1))

    def outcome(L):
        x = L.tensor(values, dtype=getattr(L, dtype))
        s = L.tensor(np.stack([u, u[::-1]], -1)[None], dtype=getattr(L, dtype))
        return L.nn.functional.fractional_max_pool2d(x, kernel, (out, out), return_indices=True,
                                                     _random_samples=s)[1].numpy()
    np.testing.assert_array_equal(outcome(fg), outcome(torch))


def test_fractional_nans_and_ties_as_torch():
    """A window's NaNs: torch's index is its last NaN's (`val > max || isnan(val)`); ties and
    -inf windows take the first position."""
    values = np.array([[[[1.0, np.nan, 2.0, np.nan, 0.0, 5.0],
                         [3.0, 3.0, -np.inf, -np.inf, np.nan, 1.0],
                         [3.0, 3.0, -np.inf, -np.inf, 2.0, 2.0],
                         [0.0, np.nan, np.nan, 4.0, 4.0, 4.0],
                         [1.0, 1.0, 2.0, 2.0, 2.0, 7.0]]]], np.float32)

    def outcome(L):
        x = L.tensor(values, requires_grad=True)
        s = L.tensor([[[0.3, 0.6]]])
        y, i = L.nn.functional.fractional_max_pool2d(x, 2, (3, 4), return_indices=True, _random_samples=s)
        y.sum().backward()
        return y.detach().numpy(), i.numpy(), x.grad.numpy()
    for g, e in zip(outcome(fg), outcome(torch)):
        np.testing.assert_array_equal(g, e)


def test_fractional_modules_as_torch():
    def reprs(L):
        nn = L.nn
        mods = [nn.FractionalMaxPool2d(2, output_size=3), nn.FractionalMaxPool2d((2, 3), output_ratio=(0.5, 0.25)),
                nn.FractionalMaxPool3d(2, output_ratio=0.5, return_indices=True),
                nn.FractionalMaxPool2d(2, 3, _random_samples=_s2(L))]
        return ([repr(m) for m in mods], [(m.kernel_size, m.output_size, m.output_ratio, m.return_indices)
                                          for m in mods],
                [sorted(name for name, _ in m.named_buffers()) for m in mods])
    assert reprs(fg) == reprs(torch)

    def errors(L):
        nn = L.nn
        calls = [lambda: nn.FractionalMaxPool2d(2), lambda: nn.FractionalMaxPool3d(2),
                 lambda: nn.FractionalMaxPool2d(2, 3, 0.5), lambda: nn.FractionalMaxPool2d(2, output_ratio=1.0),
                 lambda: nn.FractionalMaxPool2d(2, output_ratio=(0.5, 1.5)),
                 lambda: nn.FractionalMaxPool2d(2, output_ratio=(0.5,)),
                 lambda: nn.FractionalMaxPool3d(2, output_ratio=(0.5, 0.5, 0.0)),
                 lambda: nn.FractionalMaxPool3d(0, output_size=2), lambda: nn.FractionalMaxPool3d((2, -1, 2), 2),
                 lambda: nn.FractionalMaxPool2d(0, output_size=2)]
        out = []
        for c in calls:
            try:
                out.append(repr(c()))
            except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
                out.append((type(exc).__name__, str(exc)))
        return out
    assert errors(fg) == errors(torch)


def _fractional_step(L, x, samples, nd):
    F = L.nn.functional
    fn = F.fractional_max_pool2d if nd == 2 else F.fractional_max_pool3d
    y, i = fn(x, 2, 3, return_indices=True, _random_samples=samples)
    (y * y).sum().backward()
    return y, i


@pytest.mark.parametrize("drawn", [False, True], ids=["given samples", "drawn samples"])
@pytest.mark.parametrize("nd", [2, 3])
def test_fractional_compiled_matches_eager(nd, drawn):
    """Forward and backward of fractional_max_pool inside fg.compile equal eager fusegrad's
    (and torch's): with the samples given, and drawn inside the call after a manual_seed (a
    second call draws anew, as eager)."""
    shape = (2, 3, 7, 8) if nd == 2 else (2, 3, 5, 6, 7)
    compiled = fg.compile(_fractional_step)
    for seed in (3, 11):
        results = []
        for L, fn in ((torch, _fractional_step), (fg, _fractional_step), (fg, compiled)):
            x = _volume(L, shape)
            samples = None if drawn else _samples(L, (2, 3, nd), seed)
            L.manual_seed(seed)
            y, i = fn(L, x, samples, nd)
            results.append((y.detach().numpy(), i.numpy(), x.grad.numpy()))
        for got in results[1:]:
            for g, e in zip(got, results[0]):
                np.testing.assert_array_equal(g, e)


def test_fractional_compiled_backward_outside_the_call():
    """A compiled call returning the pooled values: the backward after it (its node) gives
    eager's gradient."""
    def f(x, s):
        return fg.nn.functional.fractional_max_pool2d(x, (2, 3), (4, 3), _random_samples=s) * 1.5
    x1, x2 = _volume(fg, (2, 3, 9, 8)), _volume(fg, (2, 3, 9, 8))
    s = _samples(fg, (2, 3, 2), 5)
    y1, y2 = f(x1, s), fg.compile(f)(x2, s)
    np.testing.assert_array_equal(y1.detach().numpy(), y2.detach().numpy())
    (y1 * 3).sum().backward()
    (y2 * 3).sum().backward()
    np.testing.assert_array_equal(x1.grad.numpy(), x2.grad.numpy())


def test_fractional_second_order_gradient_as_torch():
    """A gradient taken with create_graph differentiates again: its gradient is torch's (the
    first gradient's scatter gathered back at the indices)."""
    def outcome(L):
        x = _volume(L, (2, 3, 7, 8))
        y = L.nn.functional.fractional_max_pool2d(x, 2, (3, 4), _random_samples=_samples(L, (2, 3, 2)))
        g, = L.autograd.grad((y * y * y).sum(), x, create_graph=True)
        (g * g).sum().backward()
        return g.detach().numpy(), x.grad.numpy()
    for g, e in zip(outcome(fg), outcome(torch)):
        np.testing.assert_allclose(g, e, rtol=1e-6)


# ---------------------------------------------------------------- AdaptiveLogSoftmaxWithLoss

def _asm(L, in_features=8, n_classes=10, cutoffs=(3, 6), **kw):
    L.manual_seed(0)
    return L.nn.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, list(cutoffs), **kw)


def _asm_forward(L, targets, batched=True, **kw):
    m = _asm(L, **kw)
    rows = len(targets) if batched else 1
    x = _volume(L, (rows, m.in_features) if batched else (m.in_features,), 4) * 0.3
    x.retain_grad()
    t = L.tensor(targets if batched else targets[0])
    out = m(x, t)
    return out, m, x


def _asm_outcome(L, targets, batched=True, **kw):
    """(name of the result type, its fields, output and loss values and nodes, the gradients of
    the input and every parameter), or the error."""
    try:
        out, m, x = _asm_forward(L, targets, batched, **kw)
    except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
        return type(exc).__name__, str(exc)
    (out.output.sum() * 0.5 + out.loss).backward()
    grads = [None if p.grad is None else p.grad.numpy().tolist() for p in m.parameters()]
    return (type(out).__name__, out._fields, tuple(out.output.shape), out.output.detach().numpy().tolist(),
            out.loss.item(), type(out.output.grad_fn).__name__, type(out.loss.grad_fn).__name__,
            x.grad.numpy().tolist(), grads)


_ASM_CASES = [
    ("mixed", dict(targets=[0, 4, 9, 2, 7, 5])),
    ("shortlist only", dict(targets=[0, 1, 2, 1])),
    ("one cluster only", dict(targets=[6, 9, 7])),
    ("one row", dict(targets=[8])),
    ("unbatched", dict(targets=[4], batched=False)),
    ("unbatched shortlist", dict(targets=[1], batched=False)),
    ("div_value 2, head bias", dict(targets=[0, 4, 9, 2, 7, 5], div_value=2.0, head_bias=True)),
    ("three clusters", dict(targets=[0, 3, 5, 11, 19, 14, 2], in_features=16, n_classes=20, cutoffs=(2, 5, 12))),
    ("target too large", dict(targets=[0, 10, 3])),
    ("target negative", dict(targets=[-1, 4, 3])),
]


@pytest.mark.parametrize("k", range(len(_ASM_CASES)), ids=[n for n, _ in _ASM_CASES])
def test_adaptive_log_softmax_forward_as_torch(k):
    kw = _ASM_CASES[k][1]
    got, expected = _asm_outcome(fg, **kw), _asm_outcome(torch, **kw)
    if isinstance(expected[0], str) and len(expected) == 2 and expected[0].endswith("Error"):
        assert got == expected
        return
    assert got[:3] == expected[:3] and got[5:7] == expected[5:7]
    assert got[3] == pytest.approx(expected[3], rel=1e-5, abs=1e-6)
    assert got[4] == pytest.approx(expected[4], rel=1e-5)
    assert np.allclose(got[7], expected[7], rtol=1e-4, atol=1e-6)
    assert [g is None for g in got[8]] == [e is None for e in expected[8]]
    for g, e in zip(got[8], expected[8]):
        if e is not None:
            assert np.allclose(np.array(g), np.array(e), rtol=1e-4, atol=1e-6)


def _asm_error_calls(L):
    m = _asm(L)
    x2, x1 = _volume(L, (3, 8)), _volume(L, (8,))
    return [
        lambda: L.nn.AdaptiveLogSoftmaxWithLoss(8, 10, []),
        lambda: L.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [6, 3]),
        lambda: L.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [0, 3]),
        lambda: L.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 10]),
        lambda: L.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 3]),
        lambda: L.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 5.5]),
        lambda: m(x2, L.tensor([1, 2])),
        lambda: m(x1, L.tensor([1, 2, 3, 4, 5, 6, 7, 8])),
        lambda: m(_volume(L, (3, 8, 1)), L.tensor([1, 2, 3])),
        lambda: m(x2, L.tensor(1)),
        lambda: m(x2, L.tensor([[1, 2, 3]])),
        lambda: m(x2, L.tensor([1, 12, 3])),
        lambda: m(x1, L.tensor(-3)),
        lambda: m(_volume(L, (3, 5)), L.tensor([1, 2, 3])),
    ]


def _count_error_calls() -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return len(_asm_error_calls(torch))


@pytest.mark.parametrize("k", range(_count_error_calls()))
def test_adaptive_log_softmax_errors_as_torch(k):
    def outcome(L):
        try:
            _asm_error_calls(L)[k]()
        except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
            return type(exc).__name__, str(exc)
        return "no error"
    assert outcome(fg) == outcome(torch)


def test_adaptive_log_softmax_module_as_torch():
    """Its repr, attributes, parameter names, shapes and initial values after the same seed."""
    def describe(L):
        out = []
        for kw in (dict(), dict(div_value=2.0, head_bias=True),
                   dict(in_features=16, n_classes=20, cutoffs=(2, 5, 12), div_value=1.5)):
            m = _asm(L, **kw)
            out.append((repr(m), m.cutoffs, m.shortlist_size, m.n_clusters, m.head_size, m.div_value,
                        [(name, tuple(p.shape), p.detach().numpy().tolist()) for name, p in m.named_parameters()]))
        return out
    got, expected = describe(fg), describe(torch)
    for g, e in zip(got, expected):
        assert g[:6] == e[:6]
        assert [(n, s) for n, s, _ in g[6]] == [(n, s) for n, s, _ in e[6]]
        for (_, _, gv), (_, _, ev) in zip(g[6], e[6]):
            np.testing.assert_allclose(np.array(gv), np.array(ev), rtol=1e-6, atol=1e-7)


def _asm_with_head(L, rows_to_cluster):
    """The module with a head whose best entry is the last cluster for `rows_to_cluster` of the
    rows of an identity-like input: predict's three branches."""
    m = _asm(L)
    x = L.eye(4, 8)
    with L.no_grad():
        w = L.zeros(5, 8)
        for r in range(4):
            w[4 if r in rows_to_cluster else r % 3, r] = 5.0
        m.head.weight.copy_(w)
    return m, x


@pytest.mark.parametrize("rows", [(), (0, 1, 2, 3), (1, 3)], ids=["all shortlist", "none", "some"])
def test_adaptive_log_softmax_log_prob_and_predict_as_torch(rows):
    def outcome(L):
        m, x = _asm_with_head(L, rows)
        xr = x.clone().requires_grad_()
        lp = m.log_prob(xr)
        (lp * L.linspace(0.1, 1.0, lp.numel()).reshape(lp.shape)).sum().backward()
        return (lp.detach().numpy(), type(lp.grad_fn).__name__, m.predict(x).numpy(), str(m.predict(x).dtype),
                xr.grad.numpy(), m.tail[1][0].weight.grad.numpy())
    got, expected = outcome(fg), outcome(torch)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-5, atol=1e-6)
    assert got[1] == expected[1]
    np.testing.assert_array_equal(got[2], expected[2])
    assert got[3].split(".")[-1] == expected[3].split(".")[-1]
    np.testing.assert_allclose(got[4], expected[4], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(got[5], expected[5], rtol=1e-4, atol=1e-6)


def test_adaptive_log_softmax_compiled_matches_eager():
    """A training step (forward, loss, backward) inside fg.compile: output, loss and every
    gradient equal eager's, on two batches with different clusters present."""
    def step(m, x, t):
        out = m(x, t)
        out.loss.backward()
        return out.output, out.loss
    compiled = fg.compile(step)
    for targets in ([0, 4, 9, 2, 7, 5], [1, 8, 8, 0]):
        eager_m, compiled_m = _asm(fg, div_value=2.0), _asm(fg, div_value=2.0)
        x = _volume(fg, (len(targets), 8), 2, requires_grad=False)
        t = fg.tensor(targets)
        want, got = step(eager_m, x, t), compiled(compiled_m, x, t)
        np.testing.assert_allclose(got[0].detach().numpy(), want[0].detach().numpy(), rtol=1e-6)
        assert got[1].item() == pytest.approx(want[1].item(), rel=1e-6)
        for p, q in zip(compiled_m.parameters(), eager_m.parameters()):
            assert (p.grad is None) == (q.grad is None)
            if q.grad is not None:
                np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-7)
