"""einsum, tensordot, inner, vdot, chain_matmul, addmm and kin, cross, dist, cdist, det, inverse,
logdet, slogdet, matrix_power, the in-place comparisons and logical ops, gcd, lcm, ldexp, sinc,
is_nonzero and is_same_size against torch 2.13: values, dtypes, node names, gradients, errors."""
import warnings

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch 2.13 is the oracle of these cases")

_TORCH_DTYPES = {"f32": torch.float32, "f64": torch.float64, "i64": torch.int64, "bool": torch.bool}
_FG_DTYPES = {"f32": fg.float32, "f64": fg.float64, "i64": fg.int64, "bool": fg.bool}


def _array(shape, dtype="f64", seed=0):
    rng = np.random.default_rng(seed + 7 * len(shape) + int(np.prod(shape)))
    values = rng.standard_normal(shape)
    if dtype == "i64":
        return (values * 4).round().astype(np.int64)
    if dtype == "bool":
        return values > 0
    return values.astype(np.float32 if dtype == "f32" else np.float64)


def _inputs(specs, grad):
    """Torch's and fusegrad's tensors of the same values: specs are shapes or (shape, dtype)."""
    ts, fs = [], []
    for k, spec in enumerate(specs):
        shape, dtype = spec if isinstance(spec, tuple) and spec and isinstance(spec[-1], str) else (spec, "f64")
        a = _array(tuple(shape), dtype, seed=k)
        rg = grad and dtype in ("f32", "f64")
        ts.append(torch.tensor(a, dtype=_TORCH_DTYPES[dtype], requires_grad=rg))
        fs.append(fg.tensor(a, dtype=_FG_DTYPES[dtype], requires_grad=rg))
    return ts, fs


def _outcome(fn, lib, xs):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(lib, *xs), None
    except Exception as exc:  # noqa: BLE001  (the outcome compared)
        return None, exc


def _same_tensor(ours, theirs, rtol=1e-6, atol=1e-9):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(np.asarray(ours.detach().numpy(), dtype=np.float64),
                               theirs.detach().double().numpy(), rtol=rtol, atol=atol)


def check(fn, specs, grad=True, node=True, rtol=1e-6, atol=1e-9):
    """fn(lib, *tensors) on both libraries: the same outcome (an error's class and text), result,
    grad_fn name and gradients."""
    ts, fs = _inputs(specs, grad)
    theirs, te = _outcome(fn, torch, ts)
    ours, oe = _outcome(fn, fg, fs)
    if te is not None:
        assert oe is not None, f"torch raises {te!r}, fusegrad returns {ours!r}"
        # (torch's LinAlgError is torch._C._LinAlgError, fusegrad's its own class of that name)
        assert type(oe).__name__ == type(te).__name__ and str(oe) == str(te), f"{oe!r} != {te!r}"
        return
    assert oe is None, f"fusegrad raises {oe!r}"
    if isinstance(theirs, (bool, int, float)):
        assert ours == theirs and type(ours) is type(theirs)
        return
    if theirs.dtype == torch.float32:
        rtol, atol = max(rtol, 1e-4), max(atol, 1e-6)
    _same_tensor(ours, theirs, rtol, atol)
    if node and theirs.grad_fn is not None:
        assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__
    if theirs.requires_grad and theirs.dtype.is_floating_point:
        g = _array(tuple(theirs.shape), "f64", seed=99)
        try:
            theirs.backward(torch.tensor(g, dtype=theirs.dtype))
        except RuntimeError:
            return      # (torch's own backward fails: addr of mixed dtypes)
        ours.backward(fg.tensor(g, dtype=ours.dtype))
        for t, f in zip(ts, fs):
            if t.grad is None and f.grad is None:
                continue
            if t.grad is None or f.grad is None:       # (None and zeros alike)
                assert not np.any((t.grad if f.grad is None else f.grad).numpy())
            else:
                _same_tensor(f.grad, t.grad, rtol, atol)


# ------------------------------------------------------------------ einsum
EINSUM = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ii->i", [(3, 3)]), ("ij->", [(3, 4)]), ("ij->ji", [(3, 4)]),
    ("ij", [(3, 4)]), ("ji", [(3, 4)]), ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]), ("i,j", [(2,), (3,)]),
    ("bi,i->b", [(2, 1), (3,)]), ("i,i->i", [(1,), (3,)]), ("...,...->...", [(2, 1), (3,)]), ("i->", [(0,)]),
    ("ij->j", [(0, 3)]), ("iij->j", [(2, 2, 3)]), ("ijj...->...", [(2, 3, 3, 1)]), ("i->...i", [(2,)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("ii", [(3, 3)]),
    ("iji->j", [(3, 2, 3)]), ("ab,cd->abcd", [(2, 3), (4, 5)]), ("i,i", [(4,), (4,)]), ("", [()]), ("->", [()]),
    ("...ii->...i", [(2, 3, 3)]), ("ij,ij->ij", [(2, 3), (2, 3)]), ("Ba,aB", [(2, 3), (3, 2)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]), ("ijk,jil->kl", [(2, 3, 4), (3, 2, 5)]),
    ("i...,...j->ij...", [(2, 3, 4), (3, 4, 5)]), (" i j , j k -> i k ", [(3, 4), (4, 5)]),
    ("ij,jk->ik", [((3, 4), "i64"), ((4, 5), "i64")]), ("ij->", [((3, 4), "bool")]),
    ("i,j", [((2,), "bool"), ((3,), "bool")]),
    # torch's errors
    ("ij,jk", [(3, 4)]), ("ij,jk->ik", [(3, 4), (4, 5), (4, 5)]), ("ijk,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk->iz", [(3, 4), (4, 5)]), ("ij,jk->ii", [(3, 4), (4, 5)]), ("ij,kk->ik", [(3, 4), (4, 5)]),
    ("ij,jk->i1", [(3, 4), (4, 5)]), ("i1,jk->i", [(3, 4), (4, 5)]), ("ij,j.k->ik", [(3, 4), (4, 5)]),
    ("i...j...,jk->ik", [(3, 4), (4, 5)]), ("ij,jk->ik->", [(3, 4), (4, 5)]), ("ij,jk->ik", [(3, 4), (3, 5)]),
    ("ij,jk->ik", [(3, 4), ((4, 5), "f32")]), ("ij,jk->ik", [((3, 4), "bool"), ((4, 5), "bool")]),
    ("ii->i", [(2, 3)]), ("...,...->...", [(2, 2), (3,)]), ("...,...", [(2, 3), (4, 5, 3)]), ("i.->i", [(2,)]),
    ("ij...k->i", [(2, 3)]), ("i->..", [(2,)]), ("i->......", [(2,)]), ("ij,jk->ik", [(3, 4)]),
]


@pytest.mark.parametrize("equation,specs", EINSUM)
def test_einsum(equation, specs):
    check(lambda lib, *xs: lib.einsum(equation, *xs), specs, node=False)


def test_einsum_forms_and_view():
    check(lambda lib, a, b: lib.einsum("ij,jk", [a, b]), [(3, 4), (4, 5)], node=False)
    check(lambda lib, a, b: lib.einsum(a, [0, 1], b, [1, 2], [0, 2]), [(3, 4), (4, 5)], node=False)
    check(lambda lib, a: lib.einsum(a, [Ellipsis, 1]), [(3, 4)], node=False)
    check(lambda lib, a: lib.einsum("i", a, 3), [(3,)])
    check(lambda lib, a: lib.einsum(3, a), [(3,)])
    check(lambda lib, a: lib.einsum("i"), [(3,)])
    x = fg.arange(9.0).reshape(3, 3)
    d = fg.einsum("ii->i", x)           # a view, as torch's
    x[1, 1] = 100.0
    assert d.tolist() == [0.0, 100.0, 8.0]


# ------------------------------------------------------------------ tensordot, inner, vdot, chain_matmul
@pytest.mark.parametrize("specs,dims", [
    ([(3,), (3,)], 1), ([(2, 3), (3,)], 1), ([(3,), (2,)], 0), ([(2, 3), (3, 4)], 0), ([(2, 3), (2, 3)], 2),
    ([(2, 3), (2, 3)], ([0, 1], [0, 1])), ([(2, 3), (2, 3)], -1), ([(2, 3), (2, 3)], 3),
    ([(2, 3), (2, 3)], ([0], [0, 1])), ([(2, 3), ((2, 3), "f32")], 1), ([(2, 3), (2, 3)], ([1], [0])),
    ([(2, 3), (2, 3)], ([1], [5])), ([(2, 3), (2, 3)], ([1, 1], [1, 1])), ([(2, 3), (2, 3)], "a"),
    ([(2, 1), (3, 3)], ([1], [0])), ([(2, 3), (2, 3)], [[1], [1]]), ([(2, 3), (2, 3)], (1, 1)),
    ([(4, 2, 3), (3, 2, 5)], ([1, 2], [1, 0])), ([((2, 3), "i64"), ((3, 2), "i64")], 1),
])
def test_tensordot(specs, dims):
    check(lambda lib, a, b: lib.tensordot(a, b, dims), specs, node=False)


@pytest.mark.parametrize("specs", [[(3,), (3,)], [(2, 3), (3,)], [(3,), (4,)], [(2, 3), (4, 5)], [(), (4, 5)],
                                   [(2, 3), (4, 3)], [(3,), ((3,), "f32")]])
def test_inner(specs):
    check(lambda lib, a, b: lib.inner(a, b), specs, node=False)
    check(lambda lib, a, b: a.inner(b), specs, node=False)


@pytest.mark.parametrize("specs", [[(3,), (3,)], [(3,), (4,)], [(2, 3), (3,)], [(3,), ((3,), "f32")],
                                   [((3,), "i64"), ((3,), "i64")], [((3,), "bool"), ((3,), "bool")], [(0,), (0,)]])
def test_vdot(specs):
    check(lambda lib, a, b: lib.vdot(a, b), specs)


@pytest.mark.parametrize("specs", [[(3, 4)], [], [(3, 4), (3,)], [(3, 4), (3, 4)], [(3, 4), ((4, 3), "f32")],
                                   [(3, 4), (4, 5), (5, 2)], [(3, 4), (4, 5), (5, 6), (6, 2)], [(9, 2), (2, 8), (8, 1)]])
def test_chain_matmul(specs):
    check(lambda lib, *ms: lib.chain_matmul(*ms), specs, node=len(specs) == 1)


def test_chain_matmul_warns():
    with pytest.warns(UserWarning, match="torch.chain_matmul is deprecated"):
        fg.tracer.functional._WARNED_ONCE.discard(fg.tracer.linalg_functions._CHAIN_MATMUL_WARNING)
        fg.chain_matmul(fg.ones(2, 2), fg.ones(2, 2))


# ------------------------------------------------------------------ addmm and kin
PRODUCTS = [
    ("addmm", [(5,), (3, 4), (4, 5)], {}), ("addmm", [(3, 5), (3, 4), (4, 5)], {"beta": 0.5, "alpha": 2}),
    ("addmm", [(2, 5), (3, 4), (4, 5)], {}), ("addmm", [(5,), (3, 4), (3, 5)], {}), ("addmm", [(5,), (3,), (4, 5)], {}),
    ("addmm", [(5,), (3, 4), (4,)], {}), ("addmm", [((5,), "f32"), (3, 4), (4, 5)], {}),
    ("addmm", [(5,), ((3, 4), "f32"), (4, 5)], {}), ("addmm", [(5,), (3, 4), ((4, 5), "f32")], {}),
    ("addmm", [((5,), "i64"), ((3, 4), "i64"), ((4, 5), "i64")], {"beta": 0.5, "alpha": 2.5}),
    ("addmm", [((5,), "bool"), ((3, 4), "bool"), ((4, 5), "bool")], {}), ("addmm", [(3, 5), (3, 4), (4, 5)], {"beta": 0}),
    ("addmv", [(3,), (3, 4), (4,)], {}), ("addmv", [(1,), (3, 4), (4,)], {"beta": 2, "alpha": -1}),
    ("addmv", [(), (3, 4), (4,)], {}), ("addmv", [(2,), (3, 4), (4,)], {}), ("addmv", [(3,), (3, 4), (5,)], {}),
    ("addmv", [(3,), (3,), (4,)], {}), ("addmv", [(3,), (3, 4), (4, 1)], {}),
    ("addmv", [(3,), (3, 4), ((4,), "f32")], {}), ("addmv", [((3,), "f32"), (3, 4), (4,)], {}),
    ("addmv", [((3,), "i64"), ((3, 4), "i64"), ((4,), "i64")], {"beta": 0.5, "alpha": 1.7}),
    ("addr", [(3, 4), (3,), (4,)], {}), ("addr", [(4,), (3,), (4,)], {"beta": 3, "alpha": 0.5}),
    ("addr", [(2, 4), (3,), (4,)], {}), ("addr", [(3, 4), (3, 1), (4,)], {}), ("addr", [(3, 4), (3,), ((4,), "f32")], {}),
    ("addr", [((3, 4), "f32"), (3,), (4,)], {}), ("addr", [((3, 4), "i64"), ((3,), "i64"), ((4,), "i64")], {}),
    ("addr", [((3, 4), "i64"), ((3,), "i64"), ((4,), "i64")], {"beta": 0.5}),
    ("addr", [((3, 4), "i64"), ((3,), "i64"), ((4,), "i64")], {"alpha": 1.5}),
    ("addr", [((3, 4), "bool"), ((3,), "bool"), ((4,), "bool")], {"beta": 0}),
    ("addr", [((3, 4), "bool"), ((3,), "bool"), ((4,), "bool")], {"beta": 2}),
    ("baddbmm", [(2, 3, 5), (2, 3, 4), (2, 4, 5)], {}), ("baddbmm", [(5,), (2, 3, 4), (2, 4, 5)], {"alpha": 3}),
    ("baddbmm", [(2, 3, 5), (2, 3, 4), (3, 4, 5)], {}), ("baddbmm", [(2, 3, 5), (2, 3, 4), (2, 3, 5)], {}),
    ("baddbmm", [(2, 2, 5), (2, 3, 4), (2, 4, 5)], {}), ("baddbmm", [((2, 3, 5), "f32"), (2, 3, 4), (2, 4, 5)], {}),
    ("baddbmm", [(2, 3, 5), (2, 3, 4), ((2, 4, 5), "f32")], {}),
    ("baddbmm", [((1,), "bool"), ((2, 3, 4), "bool"), ((2, 4, 5), "bool")], {}),
    ("addbmm", [(3, 5), (2, 3, 4), (2, 4, 5)], {"beta": 0.25, "alpha": 2}), ("addbmm", [(5,), (2, 3, 4), (2, 4, 5)], {}),
    ("addbmm", [(3, 5), (2, 3, 4), (3, 4, 5)], {}), ("addbmm", [(3, 5), (2, 3, 4), (2, 3, 5)], {}),
    ("addbmm", [(2, 5), (2, 3, 4), (2, 4, 5)], {}), ("addbmm", [((3, 5), "f32"), (2, 3, 4), (2, 4, 5)], {}),
    ("addbmm", [((3, 5), "i64"), ((2, 3, 4), "i64"), ((2, 4, 5), "i64")], {"beta": 2}),
]


@pytest.mark.parametrize("name,specs,kwargs", PRODUCTS)
def test_products_with_a_term(name, specs, kwargs):
    check(lambda lib, *xs: getattr(lib, name)(*xs, **kwargs), specs)
    check(lambda lib, b, *xs: getattr(b, name)(*xs, **kwargs), specs)


@pytest.mark.parametrize("name,specs,kwargs", [
    ("addmm_", [(3, 5), (3, 4), (4, 5)], {"beta": 2}), ("addmm_", [(5,), (3, 4), (4, 5)], {}),
    ("addmm_", [(1, 5), (3, 4), (4, 5)], {}), ("addmv_", [(3,), (3, 4), (4,)], {"alpha": 2}),
    ("addmv_", [(1,), (3, 4), (4,)], {}), ("addr_", [(3, 4), (3,), (4,)], {}), ("addr_", [(4,), (3,), (4,)], {}),
    ("baddbmm_", [(2, 3, 5), (2, 3, 4), (2, 4, 5)], {}), ("baddbmm_", [(5,), (2, 3, 4), (2, 4, 5)], {}),
    ("addbmm_", [(3, 5), (2, 3, 4), (2, 4, 5)], {"beta": 0}),
])
def test_products_in_place(name, specs, kwargs):
    def fn(lib, b, *xs):
        b = b * 1.0          # (a non-leaf: its history continues)
        out = getattr(b, name)(*xs, **kwargs)
        assert out is b and b._version == 1
        return out
    check(fn, specs)
    ts, fs = _inputs(specs, True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        getattr(fs[0], name)(*fs[1:], **kwargs)


# ------------------------------------------------------------------ cross, dist, cdist
@pytest.mark.parametrize("specs,dim", [([(3,), (3,)], None), ([(4, 3), (4, 3)], 1), ([(3, 4), (3, 4)], None),
                                       ([(3, 3), (3, 3)], -1), ([(2, 3), (1, 3)], 1), ([(2, 4), (2, 4)], 1),
                                       ([(2, 3), (3,)], 1), ([(3,), ((3,), "f32")], 0), ([(2, 3), (2, 3)], 2),
                                       ([((3,), "i64"), ((3,), "i64")], 0)])
def test_cross(specs, dim):
    if dim is None:
        check(lambda lib, a, b: lib.cross(a, b), specs)
    check(lambda lib, a, b: lib.cross(a, b, dim=dim), specs)
    check(lambda lib, a, b: a.cross(b, dim), specs)


@pytest.mark.parametrize("p", [2, 1, 0, 3, 0.5, float("inf"), -float("inf")])
def test_dist(p):
    # (p = 0: torch's backward fails, "Expected a proper Tensor but got None")
    check(lambda lib, a, b: lib.dist(a, b, p), [(3, 4), (4,)], grad=p != 0)
    check(lambda lib, a, b: a.dist(b, p=p), [(2, 3), (2, 3)], grad=p != 0)


def test_dist_errors():
    check(lambda lib, a, b: lib.dist(a, b), [((3,), "i64"), ((3,), "i64")])
    check(lambda lib, a, b: lib.dist(a, b), [(3,), (4,)])


@pytest.mark.parametrize("specs,p", [([(4, 3), (5, 3)], 2.0), ([(2, 4, 3), (2, 5, 3)], 1.0), ([(4, 3), (5, 3)], 0.0),
                                     ([(4, 3), (5, 3)], float("inf")), ([(4, 3), (5, 3)], 3.0),
                                     ([(3,), (5, 3)], 2.0), ([(4, 3), (5, 2)], 2.0), ([(4, 3), (5, 3)], -1.0),
                                     ([((4, 3), "i64"), ((5, 3), "i64")], 2.0)])
def test_cdist(specs, p):
    check(lambda lib, a, b: lib.cdist(a, b, p=p), specs)


# ------------------------------------------------------------------ det, inverse, logdet, slogdet, matrix_power
@pytest.mark.parametrize("name", ["det", "inverse", "logdet"])
@pytest.mark.parametrize("specs", [[(3, 3)], [(2, 4, 4)], [(2, 3)], [(3,)], [((2, 2), "i64")], [(0, 0)],
                                   [((3, 3), "f32")]])
def test_determinant_family(name, specs):
    check(lambda lib, a: getattr(lib, name)(a), specs, rtol=1e-5)
    check(lambda lib, a: getattr(a, name)(), specs, rtol=1e-5)


@pytest.mark.parametrize("specs", [[(3, 3)], [(2, 4, 4)], [(2, 3)], [((2, 2), "i64")]])
def test_slogdet(specs):
    check(lambda lib, a: lib.slogdet(a)[1], specs, rtol=1e-5)
    check(lambda lib, a: lib.slogdet(a).sign, specs, grad=False)


def test_singular_matrices():
    singular = [[1.0, 2.0], [2.0, 4.0]]
    check(lambda lib, a: lib.inverse(lib.tensor(singular)), [()])
    check(lambda lib, a: lib.inverse(lib.stack([lib.eye(2), lib.tensor(singular)])), [()])
    check(lambda lib, a: lib.inverse(lib.zeros(3, 3)), [()])
    check(lambda lib, a: lib.logdet(-lib.eye(3)), [()])

    def det_grad(lib, a):
        x = lib.tensor(singular, requires_grad=True)
        lib.det(x).backward()
        return x.grad
    check(det_grad, [()])


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 7, -1, -2, -3])
def test_matrix_power(n):
    check(lambda lib, a: lib.matrix_power(a, n), [(3, 3)], node=n > 1, rtol=1e-5)
    check(lambda lib, a: a.matrix_power(n), [(2, 3, 3)], node=n > 1, rtol=1e-5)
    check(lambda lib, a: lib.matrix_power(a, n), [((2, 2), "i64")])


def test_matrix_power_errors():
    check(lambda lib, a: lib.matrix_power(a, 2), [(2, 3)])
    check(lambda lib, a: lib.matrix_power(a, 2), [(3,)])
    check(lambda lib, a: lib.matrix_power(a, 2.0), [(3, 3)])
    check(lambda lib, a: lib.matrix_power(a, 2), [((2, 2), "bool")])
    check(lambda lib, a: lib.matrix_power(a, 0), [((2, 2), "bool")])


# ------------------------------------------------------------------ in-place comparisons and logical ops
COMPARISONS = ["eq_", "ne_", "lt_", "le_", "gt_", "ge_", "greater_", "greater_equal_", "less_", "less_equal_",
               "not_equal_"]


@pytest.mark.parametrize("name", COMPARISONS)
@pytest.mark.parametrize("dtype", ["f64", "i64", "bool"])
def test_comparisons_in_place(name, dtype):
    def with_number(lib, a):
        y = a * 1 if dtype == "f64" else a.clone()
        return getattr(y, name)(0.25)

    def with_tensor(lib, a, b):
        y = a * 1 if dtype == "f64" else a.clone()
        out = getattr(y, name)(b)
        assert out is y and y._version == 1
        return out
    # (torch records EqBackward1 on an integer self where other requires grad: fusegrad's integer
    # tensors have no history)
    check(with_number, [((3, 4), dtype)], node=dtype == "f64")
    check(with_tensor, [((3, 4), dtype), (4,)], node=dtype == "f64")
    check(with_tensor, [((3, 4), dtype), (2, 3, 4)])       # (the broadcast shape is not self's)
    check(lambda lib, a: getattr(a, name)(1), [((3,), "f64")])     # (a leaf that requires grad)


@pytest.mark.parametrize("name", ["logical_and_", "logical_or_", "logical_xor_", "logical_not_"])
@pytest.mark.parametrize("dtype", ["f64", "i64", "bool"])
def test_logical_in_place(name, dtype):
    def fn(lib, a, b):
        y = a * 1 if dtype == "f64" else a.clone()
        before = y.grad_fn
        out = getattr(y, name)() if name == "logical_not_" else getattr(y, name)(b)
        assert out is y and y._version == 1 and (before is None) == (y.grad_fn is None)
        return out
    check(fn, [((3, 4), dtype), ((4,), "f64")], node=False)
    if name != "logical_not_":
        check(lambda lib, a: getattr(a, name)(1), [((3,), dtype)])
        check(lambda lib, a, b: getattr(a.clone(), name)(b), [((3,), dtype), ((2, 3), dtype)])


def test_logical_in_place_on_a_leaf():
    for lib in (torch, fg):     # torch records nothing and refuses nothing
        x = lib.tensor([0.0, 1.5, 2.0], requires_grad=True)
        x.logical_and_(lib.tensor([1.0, 1.0, 0.0]))
        assert x.tolist() == [0.0, 1.0, 0.0] and x.grad_fn is None and x.requires_grad


# ------------------------------------------------------------------ gcd, lcm, ldexp, sinc, predicates
@pytest.mark.parametrize("name", ["gcd", "lcm"])
def test_gcd_lcm(name):
    pairs = (lambda lib: lib.tensor([0, 4, -6, 9, 0, 7]), lambda lib: lib.tensor([0, 6, 4, -12, 5, 7]))
    check(lambda lib, _: getattr(lib, name)(pairs[0](lib), pairs[1](lib)), [()])
    check(lambda lib, _: getattr(pairs[0](lib), name + "_")(pairs[1](lib)), [()])
    check(lambda lib, _: getattr(lib, name + "_")(pairs[0](lib), pairs[1](lib)), [()])
    check(lambda lib, a, b: getattr(lib, name)(a, b), [(3,), (3,)])
    check(lambda lib, a, b: getattr(lib, name)(a, b), [((3,), "bool"), ((3,), "bool")])


@pytest.mark.parametrize("specs", [[(3, 4), ((4,), "i64")], [(3, 4), (3, 4)], [((3,), "i64"), ((3,), "i64")],
                                   [((3,), "f32"), ((3,), "i64")], [((3,), "f32"), (3,)], [(3,), (4,)]])
def test_ldexp(specs):
    check(lambda lib, a, b: lib.ldexp(a, b), specs)
    check(lambda lib, a, b: (a * 1).ldexp_(b) if a.is_floating_point() else a.ldexp_(b), specs)


@pytest.mark.parametrize("dtype", ["f64", "f32", "i64"])
def test_sinc(dtype):
    check(lambda lib, a: lib.sinc(a), [((3, 4), dtype)])
    check(lambda lib, a: lib.sinc(a * 0), [((3,), dtype)])
    check(lambda lib, a: (a * 1).sinc_() if dtype != "i64" else a.sinc_(), [((3, 4), dtype)])


def test_predicates():
    for values in ([1.5], [0.0], [[True]], [], [1, 2]):
        check(lambda lib, _: lib.is_nonzero(lib.tensor(values)), [()])
        check(lambda lib, _: lib.tensor(values).is_nonzero(), [()])
    check(lambda lib, a, b: lib.is_same_size(a, b), [(2, 3), (2, 3)])
    check(lambda lib, a, b: a.is_same_size(b), [(2, 3), (3, 2)])


# ------------------------------------------------------------------ compiled
def test_compiled_matches_eager():
    def f(a, b, m, v):
        y = fg.einsum("ij,jk->ik", a, b) + fg.addmv(v, a, b[:, 0], beta=0.5)[:, None]
        y = fg.addmm(y, a, b, alpha=2.0) + fg.tensordot(a, b, 1) + fg.sinc(y)
        return (y.sum() + fg.det(m) + fg.slogdet(m)[1] + fg.inverse(m).sum()
                + fg.cross(m, m.flip(0), dim=1).sum() + fg.cdist(a, b.T).sum() + fg.dist(a, a * 2))
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in ((3, 4), (4, 5), (3, 3), (3,))]
    arrays[2] += 3 * np.eye(3)
    eager = [fg.tensor(x, requires_grad=True) for x in arrays]
    traced = [fg.tensor(x, requires_grad=True) for x in arrays]
    f(*eager).backward()
    compiled = fg.compile(f)
    value = compiled(*traced)
    value.backward()
    np.testing.assert_allclose(value.item(), f(*eager).item(), rtol=1e-10)
    for e, t in zip(eager, traced):
        np.testing.assert_allclose(t.grad.numpy(), e.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_second_derivatives():
    def grad2(lib, m):
        x = m.clone().detach().requires_grad_(True)
        (g,) = torch.autograd.grad(lib.det(x) + lib.inverse(x).sum(), x, create_graph=True) if lib is torch \
            else fg.autograd.grad(lib.det(x) + lib.inverse(x).sum(), x, create_graph=True)
        return g.sum()
    check(grad2, [(3, 3)], node=False, rtol=1e-6)
