"""torch's scatter / index-update family against torch 2.13: scatter (src and value, reduce=),
scatter_add, scatter_reduce, index_add, index_copy, index_fill, masked_select, masked_scatter,
take, take_along_dim, count_nonzero, argwhere and the in-place forms (tracer/scattering.py,
ir/ops/scatter.py): values, dtypes, layouts, grad_fn names, gradients, error texts, compiled calls."""
import warnings

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch 2.13 is the oracle of these cases")

from parity_support import assert_same_outcome, lib_outcome  # noqa: E402

RS = np.random.RandomState(0)
X = RS.randn(3, 4).astype(np.float32)
S = RS.randn(2, 4).astype(np.float32)
BIG = RS.randn(5, 6).astype(np.float32)
SRC20 = RS.randn(20).astype(np.float32)
I = np.array([[0, 1, 2, 0], [2, 0, 1, 1]])
I1 = np.array([[1, 0, 3], [2, 2, 0]])       # along dim 1, shorter than self along dim 0
IA = np.array([0, 2])
M = np.array([True, False, True, True])
# ties and zeros, so that amax/amin share gradients and prod meets zeros
TIES = np.array([[1., 2., 0., 3.], [1., 5., 2., 0.], [4., 2., 2., 1.]], np.float32)
TSRC = np.array([[1., 2., 0., 3.], [4., 2., 0., 3.]], np.float32)


def _t(lib, a, grad=False):
    t = lib.tensor(np.asarray(a))
    return t.requires_grad_() if grad else t


# (name, f(lib, leaf) -> result): `leaf(array)` makes a leaf requiring grad
CASES = {
    "scatter": lambda L, g: L.scatter(g(X), 0, _t(L, I), g(S)),
    "scatter_dim1": lambda L, g: L.scatter(g(X), 1, _t(L, I1), g(BIG[:2, :3].copy())),
    "scatter_neg_dim": lambda L, g: g(X).scatter(-1, _t(L, I1), g(S[:, :3].copy())),
    "scatter_value": lambda L, g: L.scatter(g(X), 1, _t(L, I1), 2.5),
    "scatter_value_kw": lambda L, g: g(X).scatter(0, _t(L, I), value=-1),
    "scatter_add": lambda L, g: L.scatter_add(g(X), 0, _t(L, I), g(S)),
    "scatter_add_larger_src": lambda L, g: L.scatter_add(g(X), 0, _t(L, I), _t(L, BIG)),
    "index_add": lambda L, g: L.index_add(g(X), 0, _t(L, IA), g(S), alpha=2),
    "index_add_dup_dim1": lambda L, g: g(X).index_add(1, _t(L, np.array([3, 3, 0])), g(BIG[:3, :3].copy())),
    "index_copy": lambda L, g: L.index_copy(g(X), 0, _t(L, IA), g(S)),
    "index_copy_dim1": lambda L, g: g(X).index_copy(1, _t(L, np.array([3, 1])), g(BIG[:3, :2].copy())),
    "index_fill": lambda L, g: L.index_fill(g(X), 1, _t(L, IA), -1.0),
    "index_fill_neg": lambda L, g: L.index_fill(g(X), 0, _t(L, np.array([-1, 0])), 7),
    "index_fill_tensor": lambda L, g: L.index_fill(g(X), 1, _t(L, np.array([0, 2, 0])), g(np.float32(3))),
    "masked_select": lambda L, g: L.masked_select(g(X), _t(L, M)),
    "masked_select_broadcast": lambda L, g: L.masked_select(g(X[0].copy()), _t(L, np.array([[True], [False]]))),
    "masked_scatter": lambda L, g: L.masked_scatter(g(X), _t(L, M), g(SRC20)),
    "masked_scatter_broadcast": lambda L, g: g(X[0].copy()).masked_scatter(_t(L, np.array([[True], [False]])),
                                                                          g(SRC20[:6].reshape(2, 3).copy())),
    "take": lambda L, g: L.take(g(X), _t(L, np.array([[0, 5], [11, -1]]))),
    "take_repeated": lambda L, g: g(X).take(_t(L, np.array([3, 3, -9]))),
    "take_along_dim": lambda L, g: L.take_along_dim(g(X), _t(L, np.array([[0], [1], [2]])), 1),
    "take_along_dim_broadcast": lambda L, g: L.take_along_dim(g(X.reshape(3, 1, 4).copy()),
                                                              _t(L, np.array([[[0], [1]]])), 2),
    "take_along_dim_flat": lambda L, g: L.take_along_dim(g(X), _t(L, np.array([0, 5, 5]))),
    # a transposed self: the results are row-major, as torch's
    "scatter_add_transposed": lambda L, g: L.scatter_add(g(X.T.copy()).t(), 0, _t(L, I), g(S)),
    "index_add_transposed": lambda L, g: g(X.T.copy()).t().index_add(1, _t(L, np.array([2])), g(BIG[:3, :1].copy())),
    "scatter_reduce_transposed": lambda L, g: g(X.T.copy()).t().scatter_reduce(0, _t(L, I), g(S), "mean"),
}
for _r in ("sum", "prod", "mean", "amax", "amin"):
    for _inc in (True, False):
        CASES[f"scatter_reduce_{_r}_{_inc}"] = (
            lambda L, g, r=_r, inc=_inc: L.scatter_reduce(g(TIES), 0, _t(L, I), g(TSRC), r, include_self=inc))
CASES["scatter_reduce_method_dim1"] = lambda L, g: g(X).scatter_reduce(1, _t(L, I1), g(S[:, :3].copy()), "amax")


def _run(lib, case):
    leaves = []

    def leaf(a):
        t = _t(lib, a, grad=True)
        leaves.append(t)
        return t
    return case(lib, leaf), leaves


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_nodes_and_gradients(name):
    theirs, their_leaves = _run(torch, CASES[name])
    ours, our_leaves = _run(fg, CASES[name])
    assert tuple(ours.shape) == tuple(theirs.shape) and str(ours.dtype)[3:] == str(theirs.dtype)[6:]
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6, atol=1e-6)
    assert ours.stride() == theirs.stride()
    assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__
    assert [type(n).__name__ if n else None for n, _ in ours.grad_fn.next_functions] == \
        [type(n).__name__ if n else None for n, _ in theirs.grad_fn.next_functions]
    w = np.random.RandomState(1).randn(*theirs.shape).astype(np.float32)
    (theirs * torch.tensor(w)).sum().backward()
    (ours * fg.tensor(w)).sum().backward()
    for o, t in zip(our_leaves, their_leaves):
        assert (o.grad is None) == (t.grad is None)
        if t.grad is not None:
            np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_double_backward_of_scatter_reduce_and_index_add():
    def f(L):
        x, s = _t(L, TIES + 1, True), _t(L, TSRC + 1, True)
        y = L.scatter_reduce(x, 0, _t(L, I), s, "prod") + L.index_add(x, 0, _t(L, np.array([1, 1])), s * s)
        gx, gs = L.autograd.grad(y.sum(), [x, s], create_graph=True)
        (gx.square().sum() + gs.square().sum()).backward()
        return x.grad, s.grad
    for o, t in zip(f(fg), f(torch)):
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", ["int64", "bool", "float64"])
def test_other_dtypes(dtype):
    a = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    s = (np.arange(8).reshape(2, 4) % 2 * 5 - 1).astype(dtype)
    cases = [
        lambda L: L.scatter(_t(L, a), 0, _t(L, I), _t(L, s)),
        lambda L: L.scatter(_t(L, a), 0, _t(L, I), 7.5 if dtype != "bool" else True),
        lambda L: L.scatter_add(_t(L, a), 0, _t(L, I), _t(L, s)),
        lambda L: L.index_add(_t(L, a), 0, _t(L, IA), _t(L, s), alpha=2.5 if dtype == "int64" else 1),
        lambda L: L.index_copy(_t(L, a), 1, _t(L, np.array([3, 0])), _t(L, a[:, :2].copy())),
        lambda L: L.index_fill(_t(L, a), 0, _t(L, IA), 2.7),
        lambda L: L.masked_select(_t(L, a), _t(L, M)),
        lambda L: L.masked_scatter(_t(L, a), _t(L, M), _t(L, np.resize(s, 20))),
        lambda L: L.take(_t(L, a), _t(L, np.array([1, -2]))),
        lambda L: L.count_nonzero(_t(L, a), (0, -1)),
        lambda L: L.argwhere(_t(L, a)),
    ]
    for r in ("sum", "prod", "mean", "amax", "amin"):
        for inc in (True, False):
            cases.append(lambda L, r=r, inc=inc: L.scatter_reduce(_t(L, a), 0, _t(L, I), _t(L, s), r,
                                                                  include_self=inc))
    for r in ("add", "multiply"):
        cases.append(lambda L, r=r: L.scatter(_t(L, a), 0, _t(L, I), _t(L, s), reduce=r))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k, case in enumerate(cases):
            ours, theirs = lib_outcome(fg, case), lib_outcome(torch, case)
            assert_same_outcome(ours, theirs, rtol=1e-12), k


def _errors():
    x, s = X, S
    return {
        "float_index": lambda L: L.scatter(_t(L, x), 0, _t(L, I.astype(np.float32)), _t(L, s)),
        "oob": lambda L: L.scatter(_t(L, x), 0, _t(L, I + 1), _t(L, s)),
        "negative": lambda L: L.scatter(_t(L, x), 0, _t(L, I - 1), 1.0),
        "dim_oob": lambda L: L.scatter(_t(L, x), 2, _t(L, I), _t(L, s)),
        "dim_oob_neg": lambda L: L.scatter_add(_t(L, x), -3, _t(L, I), _t(L, s)),
        "ndim_self": lambda L: L.scatter(_t(L, x), 0, _t(L, I[0]), _t(L, s)),
        "ndim_src": lambda L: L.scatter(_t(L, x), 0, _t(L, I), _t(L, np.float32(2))),
        "index_larger_than_src": lambda L: L.scatter(_t(L, x), 0, _t(L, np.zeros((3, 4), np.int64)), _t(L, s)),
        "index_larger_than_self": lambda L: L.scatter(_t(L, x), 0, _t(L, np.zeros((2, 5), np.int64)), 1.0),
        "dtype": lambda L: L.scatter(_t(L, x), 0, _t(L, I), _t(L, s.astype(np.float64))),
        "dtype_add": lambda L: L.scatter_add(_t(L, x), 0, _t(L, I), _t(L, s.astype(np.float64))),
        "dtype_reduce": lambda L: L.scatter_reduce(_t(L, x), 0, _t(L, I), _t(L, s.astype(np.float64)), "sum"),
        "reduce_bad": lambda L: L.scatter(_t(L, x), 0, _t(L, I), _t(L, s), reduce="max"),
        "scatter_reduce_bad": lambda L: L.scatter_reduce(_t(L, x), 0, _t(L, I), _t(L, s), "foo"),
        "scatter_reduce_oob": lambda L: L.scatter_reduce(_t(L, x), 0, _t(L, I + 1), _t(L, s), "amax"),
        "scatter_reduce_mean_bool": lambda L: L.scatter_reduce(_t(L, x > 0), 0, _t(L, I), _t(L, s > 0), "mean"),
        "index_add_float_index": lambda L: L.index_add(_t(L, x), 0, _t(L, IA.astype(np.float32)), _t(L, s)),
        "index_add_2d_index": lambda L: L.index_add(_t(L, x), 0, _t(L, IA.reshape(2, 1)), _t(L, s)),
        "index_add_oob": lambda L: L.index_add(_t(L, x), 0, _t(L, IA + 1), _t(L, s)),
        "index_add_count": lambda L: L.index_add(_t(L, x), 0, _t(L, IA), _t(L, BIG[:3, :4].copy())),
        "index_add_shape": lambda L: L.index_add(_t(L, x), 0, _t(L, IA), _t(L, BIG[:2, :5].copy())),
        "index_add_dtype": lambda L: L.index_add(_t(L, x), 0, _t(L, IA), _t(L, s.astype(np.float64))),
        "index_copy_float_index": lambda L: L.index_copy(_t(L, x), 0, _t(L, IA.astype(np.float32)), _t(L, s)),
        "index_copy_oob": lambda L: L.index_copy(_t(L, x), 0, _t(L, IA - 1), _t(L, s)),
        "index_copy_count": lambda L: L.index_copy(_t(L, x), 0, _t(L, IA), _t(L, BIG[:3, :4].copy())),
        "index_copy_slices": lambda L: L.index_copy(_t(L, x), 0, _t(L, IA), _t(L, BIG[:2, :5].copy())),
        "index_copy_ndim": lambda L: L.index_copy(_t(L, x), 0, _t(L, IA), _t(L, s.reshape(2, 4, 1))),
        "index_copy_dtype": lambda L: L.index_copy(_t(L, x), 0, _t(L, IA), _t(L, s.astype(np.float64))),
        "index_copy_2d": lambda L: L.index_copy(_t(L, x), 0, _t(L, IA.reshape(2, 1)), _t(L, s)),
        "index_fill_float_index": lambda L: L.index_fill(_t(L, x), 0, _t(L, IA.astype(np.float32)), 1.0),
        "index_fill_oob": lambda L: L.index_fill(_t(L, x), 0, _t(L, IA - 4), 1.0),
        "index_fill_dim_oob": lambda L: L.index_fill(_t(L, x), 2, _t(L, IA), 1.0),
        "index_fill_2d": lambda L: L.index_fill(_t(L, x), 0, _t(L, IA.reshape(2, 1)), 1.0),
        "index_fill_1d_value": lambda L: L.index_fill(_t(L, x), 0, _t(L, IA), _t(L, np.ones(1, np.float32))),
        "masked_select_mask_dtype": lambda L: L.masked_select(_t(L, x), _t(L, M.astype(np.float32))),
        "masked_select_shape": lambda L: L.masked_select(_t(L, x), _t(L, np.ones(3, bool))),
        "masked_scatter_few": lambda L: L.masked_scatter(_t(L, x), _t(L, M), _t(L, SRC20[:5].copy())),
        "masked_scatter_dtype": lambda L: L.masked_scatter(_t(L, x), _t(L, M), _t(L, np.arange(20))),
        "masked_scatter_mask_dtype": lambda L: L.masked_scatter(_t(L, x), _t(L, M.astype(np.int64)), _t(L, SRC20)),
        "masked_scatter__expand": lambda L: _t(L, x[0].copy()).masked_scatter_(_t(L, np.ones((2, 1), bool)),
                                                                              _t(L, SRC20)),
        "take_oob": lambda L: L.take(_t(L, x), _t(L, np.array([12]))),
        "take_oob_neg": lambda L: L.take(_t(L, x), _t(L, np.array([-13]))),
        "take_float": lambda L: L.take(_t(L, x), _t(L, np.array([1.0]))),
        "take_empty": lambda L: L.take(_t(L, np.zeros(0, np.float32)), _t(L, np.array([0]))),
        "tad_ndim": lambda L: L.take_along_dim(_t(L, x), _t(L, np.array([0])), 0),
        "tad_float": lambda L: L.take_along_dim(_t(L, x), _t(L, np.array([[0.0]])), 0),
        "tad_broadcast": lambda L: L.take_along_dim(_t(L, x), _t(L, np.array([[0, 1]])), 0),
        "tad_dim_oob": lambda L: L.take_along_dim(_t(L, x), _t(L, np.array([[0]])), 2),
        "tad_flat_negative": lambda L: L.take_along_dim(_t(L, x), _t(L, np.array([-1]))),
        "tad_flat_transposed": lambda L: L.take_along_dim(_t(L, x).t(), _t(L, np.array([1]))),
        "cnz_dim_oob": lambda L: L.count_nonzero(_t(L, x), 2),
        "cnz_repeated": lambda L: L.count_nonzero(_t(L, x), (0, 0)),
        # torch's argument-parser texts
        "parser_scatter": lambda L: L.scatter(_t(L, x), 0, [0], 1.0),
        "parser_scatter_": lambda L: _t(L, x).scatter_(0, [0], 1.0),
        "parser_scatter_method_value": lambda L: _t(L, x).scatter(0, _t(L, I), "a"),
        "parser_index_fill": lambda L: L.index_fill(_t(L, x), 0, _t(L, IA), "a"),
        "parser_index_fill_": lambda L: _t(L, x).index_fill_(0, _t(L, IA), "a"),
        "parser_count_nonzero": lambda L: L.count_nonzero(_t(L, x), 1.5),
        "parser_count_nonzero_method": lambda L: _t(L, x).count_nonzero(1.5),
        "parser_scatter_add": lambda L: L.scatter_add(_t(L, x), 0, [0], _t(L, s)),
        "parser_take": lambda L: L.take(_t(L, x), [0]),
        "parser_masked_select": lambda L: L.masked_select(_t(L, x), [True]),
        "parser_scatter_reduce": lambda L: L.scatter_reduce(_t(L, x), 0, _t(L, I), _t(L, s), 3),
    }


@pytest.mark.parametrize("name", sorted(_errors()))
def test_bad_inputs_raise_torchs_errors(name):
    case = _errors()[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs, ours = lib_outcome(torch, case), lib_outcome(fg, case)
    assert theirs[0] == "error", theirs
    assert_same_outcome(ours, theirs)


def test_src_larger_than_index_gradient_raises_torchs_error():
    for lib in (torch, fg):
        x, src = _t(lib, X, True), _t(lib, BIG, True)
        y = lib.scatter(x * 1, 0, _t(lib, I), src)
        with pytest.raises(RuntimeError, match=r"Function ScatterBackward0 returned an invalid gradient at index 1 - "
                                               r"got \[2, 4\] but expected shape compatible with \[5, 6\]"):
            y.sum().backward()


def test_reduce_keyword_has_no_derivative():
    for lib in (torch, fg):
        x = _t(lib, X, True) * 1
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = lib.scatter(x, 0, _t(lib, I), _t(lib, S), reduce="add")
        if lib is fg:       # (torch warns once a process)
            assert "The reduce argument of torch.scatter with Tensor src is deprecated" in str(caught[0].message)
        assert type(y.grad_fn).__name__ == "NotImplemented"
        with pytest.raises(RuntimeError, match="^derivative for aten::scatter is not implemented$"):
            y.sum().backward()
        z = x.clone().scatter_(0, _t(lib, I), 2.0, reduce="multiply")
        with pytest.raises(RuntimeError, match="^derivative for aten::scatter_ is not implemented$"):
            z.sum().backward()


IN_PLACE = {
    "scatter_": lambda L, t, g: t.scatter_(0, _t(L, I), g(S)),
    "scatter_value": lambda L, t, g: t.scatter_(0, _t(L, I), 1.5),
    "scatter_add_": lambda L, t, g: t.scatter_add_(0, _t(L, I), g(S)),
    "scatter_reduce_": lambda L, t, g: t.scatter_reduce_(0, _t(L, I), g(S), "amax", include_self=False),
    "index_add_": lambda L, t, g: t.index_add_(0, _t(L, IA), g(S), alpha=-0.5),
    "index_copy_": lambda L, t, g: t.index_copy_(0, _t(L, IA), g(S)),
    "index_fill_": lambda L, t, g: t.index_fill_(1, _t(L, IA), 2.0),
    "index_fill_tensor": lambda L, t, g: t.index_fill_(1, _t(L, IA), g(np.float32(2))),
    "masked_scatter_": lambda L, t, g: t.masked_scatter_(_t(L, M), g(SRC20)),
}


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_in_place_forms(name):
    case = IN_PLACE[name]
    results = {}
    for lib in (torch, fg):
        leaf = _t(lib, X, True)
        with pytest.raises(RuntimeError) as error:
            case(lib, leaf, lambda a: _t(lib, a))
        results.setdefault("leaf", []).append(str(error.value))
        # on a non-leaf, and on a view of one (CopySlices): values, node, version, gradients
        x, others = _t(lib, X, True), []

        def g(a):
            others.append(_t(lib, a, True))
            return others[-1]
        y = x * 2
        version = y._version
        out = case(lib, y, g)
        assert out is y and y._version > version
        base = x * 1
        view = base[:, :]
        case(lib, view, g)
        (y.sum() + (base * base).sum()).backward()
        results.setdefault("values", []).append((y.detach().numpy(), base.detach().numpy()))
        results.setdefault("nodes", []).append((type(y.grad_fn).__name__, type(base.grad_fn).__name__))
        results.setdefault("grads", []).append([x.grad.numpy()] + [o.grad.numpy() for o in others])
    theirs, ours = zip(*results.values())
    assert ours[0] == theirs[0] == "a leaf Variable that requires grad is being used in an in-place operation."
    for o, t in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(o, t, rtol=1e-6)
    assert ours[2] == theirs[2]
    for o, t in zip(ours[3], theirs[3]):
        np.testing.assert_allclose(o, t, rtol=1e-5, atol=1e-6)


def test_saved_values_version_checks():
    for lib in (torch, fg):
        x = _t(lib, X, True) * 1
        y = lib.scatter_reduce(x, 0, _t(lib, I), _t(lib, S), "sum")
        x.add_(1)
        with pytest.raises(RuntimeError, match="one of the variables needed for gradient computation has been modified"):
            y.sum().backward()
        x = _t(lib, X, True) * 1
        y = lib.scatter(x, 0, _t(lib, I), _t(lib, S))
        x.add_(1)
        y.sum().backward()      # (ScatterBackward0 saves the index only)


def test_zero_dim_and_empty():
    cases = [
        lambda L: L.scatter(_t(L, np.float32(1)), 0, _t(L, np.int64(0)), _t(L, np.float32(5))),
        lambda L: L.scatter(_t(L, np.float32(1)), 0, _t(L, np.array([0])), _t(L, np.array([5.0], np.float32))),
        lambda L: L.scatter(_t(L, X), 0, _t(L, np.zeros(0, np.int64)), _t(L, S)),
        lambda L: L.index_add(_t(L, np.float32(1)), 0, _t(L, np.array([0])), _t(L, np.float32(5))),
        lambda L: L.index_copy(_t(L, X), 0, _t(L, np.int64(1)), _t(L, np.ones((1, 4), np.float32))),
        lambda L: L.index_fill(_t(L, np.float32(1)), 0, _t(L, np.array([0])), 5.0),
        lambda L: L.masked_select(_t(L, np.float32(1)), _t(L, np.bool_(True))),
        lambda L: L.take(_t(L, np.float32(3)), _t(L, np.int64(0))),
        lambda L: L.take(_t(L, np.zeros(0, np.float32)), _t(L, np.zeros((0, 3), np.int64))),
        lambda L: L.take_along_dim(_t(L, np.float32(3)), _t(L, np.int64(0)), 0),
        lambda L: L.count_nonzero(_t(L, np.float32(2)), 0),
        lambda L: L.count_nonzero(_t(L, np.array([np.nan, 0], np.float32))),
        lambda L: L.argwhere(_t(L, np.float32(0))),
    ]
    for k, case in enumerate(cases):
        assert_same_outcome(lib_outcome(fg, case), lib_outcome(torch, case)), k


def test_compiled_matches_eager():
    def f(x, s, index, mask):
        a = fg.scatter_reduce(x, 0, index, s, "amax", include_self=False)
        b = x.index_add(1, fg.tensor([3, 0]), s.t()[:3, :2] * 2, alpha=0.5)
        c = fg.masked_scatter(x, mask, s.reshape(-1).repeat(3))
        d = x.take(index) * s
        e = fg.scatter(x, 0, index, s) + x.scatter(1, index[:, :3], 1.0)
        return (a * b).sum() + c.sum() + d.square().sum() + (e * e).sum()

    compiled = fg.compile(f)
    mask = fg.tensor(M)
    for _ in range(2):
        results = []
        for fn in (f, compiled):
            x, s = fg.tensor(TIES, requires_grad=True), fg.tensor(TSRC, requires_grad=True)
            y = fn(x, s, fg.tensor(I), mask)
            y.backward()
            results.append((y.item(), x.grad.numpy(), s.grad.numpy()))
        (ye, gxe, gse), (yc, gxc, gsc) = results
        assert abs(ye - yc) <= 1e-4 * abs(ye)
        np.testing.assert_allclose(gxc, gxe, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(gsc, gse, rtol=1e-5, atol=1e-6)


def test_compiled_index_errors_and_masked_select():
    @fg.compile
    def bad(x, index):
        return fg.scatter_add(x, 0, index, x[:2])

    with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 0 with size 3"):
        bad(fg.tensor(X), fg.tensor(I + 1))

    @fg.compile
    def picked(x, mask):
        return fg.masked_select(x * 2, mask).sum()

    x = fg.tensor(X, requires_grad=True)
    picked(x, fg.tensor(M)).backward()
    t = torch.tensor(X, requires_grad=True)
    torch.masked_select(t * 2, torch.tensor(M)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())
