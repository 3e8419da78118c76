"""torch's fixed-rank products (mm, bmm, mv, dot, outer), the value tests (isnan, isinf,
isfinite, isclose, allclose, equal), square and logical_or/xor: values, dtypes, grad_fn
names and error texts against torch, eager and inside fg.compile."""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")
from parity_support import assert_same_outcome, lib_outcome as outcome  # noqa: E402

nan, inf = float("nan"), float("inf")


CASES = {
 "mm": lambda L: L.mm(L.ones(2,3,requires_grad=True), L.ones(3,4)),
 "mm m": lambda L: L.ones(2,3).mm(L.ones(3,4)),
 "mm 1d": lambda L: L.mm(L.ones(3), L.ones(3,4)),
 "mm 1d b": lambda L: L.mm(L.ones(2,3), L.ones(3)),
 "mm size": lambda L: L.mm(L.ones(2,3), L.ones(2,3)),
 "mm dtype": lambda L: L.mm(L.ones(2,3), L.ones(3,2,dtype=L.float64)),
 "mm int": lambda L: L.mm(L.ones(2,3,dtype=L.int64), L.ones(3,2,dtype=L.int64)),
 "mm num": lambda L: L.mm(L.ones(2,3), 2),
 "mm empty": lambda L: L.mm(L.ones(0,3), L.ones(3,2)),
 "bmm": lambda L: L.bmm(L.ones(2,2,3,requires_grad=True), L.ones(2,3,4)),
 "bmm 2d": lambda L: L.bmm(L.ones(2,3), L.ones(3,4)),
 "bmm 2d b": lambda L: L.bmm(L.ones(2,2,3), L.ones(3,4)),
 "bmm batch": lambda L: L.bmm(L.ones(2,2,3), L.ones(3,3,4)),
 "bmm k": lambda L: L.bmm(L.ones(2,2,3), L.ones(2,4,4)),
 "bmm dtype": lambda L: L.bmm(L.ones(2,2,3), L.ones(2,3,4,dtype=L.float64)),
 "mv": lambda L: L.mv(L.ones(2,3,requires_grad=True), L.arange(3.)),
 "mv size": lambda L: L.mv(L.ones(2,3), L.ones(4)),
 "mv vv": lambda L: L.mv(L.ones(3), L.ones(3)),
 "mv mm": lambda L: L.mv(L.ones(2,3), L.ones(3,3)),
 "mv dtype": lambda L: L.mv(L.ones(2,3), L.ones(3,dtype=L.float64)),
 "dot": lambda L: L.dot(L.arange(3.,requires_grad=True), L.arange(3.)),
 "dot m": lambda L: L.arange(3.).dot(L.arange(3.)),
 "dot size": lambda L: L.dot(L.ones(3), L.ones(4)),
 "dot 2d": lambda L: L.dot(L.ones(2,2), L.ones(2,2)),
 "dot dtype": lambda L: L.dot(L.ones(3), L.ones(3, dtype=L.float64)),
 "dot int": lambda L: L.dot(L.arange(3), L.arange(3)),
 "outer": lambda L: L.outer(L.arange(3.,requires_grad=True), L.arange(2.)),
 "outer int f": lambda L: L.outer(L.arange(3), L.arange(2.)),
 "outer 2d": lambda L: L.outer(L.ones(2,2), L.ones(2)),
 "outer 2d b": lambda L: L.outer(L.ones(2), L.ones(2,2)),
 "isnan": lambda L: L.isnan(L.tensor([1., nan, inf, -inf], requires_grad=True)),
 "isinf": lambda L: L.isinf(L.tensor([1., nan, inf, -inf])),
 "isfinite": lambda L: L.isfinite(L.tensor([1., nan, inf, -inf], dtype=L.float64)),
 "isnan int": lambda L: L.isnan(L.tensor([1, 2])),
 "isinf int": lambda L: L.isinf(L.tensor([1, 2])),
 "isfinite bool": lambda L: L.isfinite(L.tensor([True])),
 "isnan num": lambda L: L.isnan(1.0),
 "isnan m": lambda L: L.tensor([nan]).isnan(),
 "square": lambda L: L.square(L.tensor([1., -2.], requires_grad=True)),
 "square int": lambda L: L.square(L.tensor([3])),
 "square bool": lambda L: L.square(L.tensor([True])),
 "square m": lambda L: L.tensor([3.]).square(),
 "square num": lambda L: L.square(2.0),
 "isclose": lambda L: L.isclose(L.tensor([nan, inf, -inf, 1.0, 1e-9, 0.]), L.tensor([nan, inf, inf, 1.0+1e-6, 0., 1e-7])),
 "isclose eqnan": lambda L: L.isclose(L.tensor([nan, 1.]), L.tensor([nan, 2.]), equal_nan=True),
 "isclose int": lambda L: L.isclose(L.tensor([1, 2, 100000]), L.tensor([1, 3, 100001])),
 "isclose bool": lambda L: L.isclose(L.tensor([True, False]), L.tensor([True, True])),
 "isclose tol": lambda L: L.isclose(L.tensor([1., 1.1]), L.tensor([1.05, 1.]), rtol=0.1, atol=0.),
 "isclose zero tol": lambda L: L.isclose(L.tensor([1., 1.1]), L.tensor([1., 1.]), rtol=0, atol=0),
 "isclose rtol<0": lambda L: L.isclose(L.ones(2), L.ones(2), rtol=-1),
 "isclose atol<0": lambda L: L.isclose(L.ones(2), L.ones(2), atol=-0.5),
 "isclose dtype": lambda L: L.isclose(L.ones(2), L.ones(2, dtype=L.float64)),
 "isclose bcast": lambda L: L.isclose(L.ones(2,3), L.ones(3)),
 "isclose bad": lambda L: L.isclose(L.ones(2,3), L.ones(4)),
 "isclose num": lambda L: L.isclose(L.ones(2), 1.0),
 "allclose": lambda L: L.allclose(L.ones(2,3), L.ones(3)),
 "allclose f": lambda L: L.allclose(L.ones(2,3), L.ones(3)*1.01),
 "allclose m": lambda L: L.ones(2).allclose(L.ones(2)),
 "allclose num": lambda L: L.allclose(L.ones(2), 1.0),
 "allclose m num": lambda L: L.ones(2).allclose(1.0),
 "allclose dtype": lambda L: L.allclose(L.ones(2), L.ones(2, dtype=L.float64)),
 "allclose nan": lambda L: L.allclose(L.tensor([nan]), L.tensor([nan]), equal_nan=True),
 "equal": lambda L: L.equal(L.ones(2), L.ones(2)),
 "equal shape": lambda L: L.equal(L.ones(2), L.ones(3)),
 "equal dtype": lambda L: L.equal(L.ones(2), L.ones(2, dtype=L.float64)),
 "equal int": lambda L: L.equal(L.tensor([1, 2]), L.tensor([1., 2.])),
 "equal nan": lambda L: L.equal(L.tensor([nan]), L.tensor([nan])),
 "equal num": lambda L: L.equal(L.ones(2), 1),
 "equal m num": lambda L: L.ones(2).equal(1),
 "logical_or": lambda L: L.logical_or(L.tensor([0., 1, 2, 0]), L.tensor([0, 0, 1, 3])),
 "logical_or num": lambda L: L.logical_or(L.tensor([0.]), 1.0),
 "logical_or m": lambda L: L.tensor([0.]).logical_or(L.tensor([1])),
 "logical_xor": lambda L: L.logical_xor(L.tensor([0., 1, 2, 0]), L.tensor([0, 0, 1, 3])),
 "logical_and num": lambda L: L.logical_and(L.tensor([0.]), 1.0),
 "logical_and m num": lambda L: L.tensor([0.]).logical_and(1.0),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    assert_same_outcome(outcome(fg, CASES[name]), outcome(torch, CASES[name]))


def leafgrad(L, make):
    x = L.arange(6.).reshape(2,3).requires_grad_()
    v = L.tensor(1.5, requires_grad=True)
    y = make(L, x, v); (y * L.arange(y.numel(), dtype=y.dtype).reshape(y.shape)).sum().backward()
    return L.stack([x.grad.reshape(-1), v.grad.reshape(1).expand(6)])
M = lambda L: L.tensor([True, False, True])
MASKED_FILL_CASES = {
 "basic": lambda L: L.arange(6.).reshape(2,3).requires_grad_().masked_fill(M(L), 0.5),
 "fn": lambda L: L.masked_fill(L.arange(6.).reshape(2,3), M(L), 2),
 "tensor value": lambda L: L.arange(6.).reshape(2,3).masked_fill(M(L), L.tensor(1.5, requires_grad=True)),
 "long mask": lambda L: L.arange(3.).masked_fill(M(L).long(), 0.5),
 "float mask": lambda L: L.arange(3.).masked_fill(M(L).float(), 0.5),
 "1d value": lambda L: L.arange(3.).masked_fill(M(L), L.tensor([1., 2.])),
 "bad bcast": lambda L: L.arange(6.).reshape(2,3).masked_fill(L.ones(4, dtype=L.bool), 1.),
 "grow": lambda L: L.arange(6.).reshape(2,3).masked_fill(L.ones(2,2,3, dtype=L.bool), 1.),
 "int x": lambda L: L.arange(3).masked_fill(M(L), 2.5),
 "int x tv": lambda L: L.arange(3).masked_fill(M(L), L.tensor(2.5)),
 "bool x": lambda L: L.ones(3, dtype=L.bool).masked_fill(M(L), 0),
 "str": lambda L: L.arange(3.).masked_fill(M(L), 'a'),
 "list mask": lambda L: L.arange(3.).masked_fill([True, False, True], 1.),
 "nan": lambda L: L.arange(3.).masked_fill(M(L), nan),
 "inplace": lambda L: L.arange(3.).masked_fill_(M(L), 7.),
 "inplace leaf": lambda L: L.arange(3.).requires_grad_().masked_fill_(M(L), 7.),
 "inplace grow": lambda L: L.ones(3).masked_fill_(L.ones(2,3, dtype=L.bool), 1.),
 "inplace nonleaf": lambda L: (L.arange(3.).requires_grad_() * 1).masked_fill_(M(L), 7.),
 "kw": lambda L: L.arange(3.).masked_fill(mask=M(L), value=1.),
 "grads": lambda L: leafgrad(L, lambda L, x, v: x.masked_fill(M(L), v)),
 "grads2": lambda L: leafgrad(L, lambda L, x, v: (x * 2).masked_fill_(M(L), v)),
 "grads4": lambda L: leafgrad(L, lambda L, x, v: x.masked_fill(L.tensor([[[True,False,False],[True,True,False]],[[False]*3,[True]*3]]), v)),
}


@pytest.mark.parametrize("name", list(MASKED_FILL_CASES))
def test_masked_fill_matches_torch(name):
    assert_same_outcome(outcome(fg, MASKED_FILL_CASES[name]), outcome(torch, MASKED_FILL_CASES[name]))


@pytest.mark.parametrize("value", [1.5, "tensor"])
def test_masked_fill_next_functions_match_torch(value):
    def names(lib):
        x = lib.arange(6.).reshape(2, 3).requires_grad_()
        fill = lib.tensor(1.5, requires_grad=True) if value == "tensor" else value
        node = x.masked_fill(lib.tensor([True, False, True]), fill).grad_fn
        return type(node).__name__, [type(n).__name__ for n, _ in node.next_functions]
    assert names(fg) == names(torch)


def _products(lib, a, b, v, w):
    y = lib.bmm(a, b).sum() + lib.mm(a[0], b[1]).sum() + lib.mv(a[1], v).sum() + lib.dot(v, v)
    y = y + lib.outer(w, v).square().sum() + a[0].mm(b[0]).sum() + a.masked_fill(a > 0.5, 0.25).sum()
    y = y + (a * 1).masked_fill_(a < 0, lib.tensor(2.0)).sum()
    return y + lib.isnan(a).sum() + lib.isclose(a, a * 1.000001).sum() + lib.isinf(a).sum() + lib.isfinite(a).sum()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_gradients_match_torch(compiled):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((2, 3, 4), (2, 4, 5), (4,), (3,))]

    def run(lib, fn):
        xs = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(*xs)
        out.backward()
        return [out.detach().numpy()] + [x.grad.numpy() for x in xs]

    fn = lambda *xs: _products(fg, *xs)                          # noqa: E731
    ours = run(fg, fg.compile(fn) if compiled else fn)
    theirs = run(torch, lambda *xs: _products(torch, *xs))
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=1e-5, atol=1e-5)


def test_isclose_is_traced_inside_compile():
    close = fg.compile(lambda a, b: fg.isclose(a, b, rtol=0.1))
    a, b = fg.tensor([1.0, 2.0, nan]), fg.tensor([1.05, 3.0, nan])
    np.testing.assert_array_equal(close(a, b).numpy(), [True, False, False])
    assert close.last_run.path.startswith("compiled kernels")
