"""torch.var / torch.std: the three overloads, values (float32 rounded once from double, as
torch's kernel), degrees-of-freedom warnings, errors, and gradients (torch's var_backward
and std_backward) eager and compiled, against torch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")
nan = float("nan")


def _outcome(lib, case):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            r = case(lib)
        except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
            result = ("error", type(exc).__name__, str(exc))
        else:
            result = ("tensor", r.detach().numpy(), str(r.dtype).split(".")[-1],
                      None if r.grad_fn is None else type(r.grad_fn).__name__)
    return result, [str(w.message).split(" (Triggered internally")[0] for w in caught]


A = (np.random.default_rng(1).standard_normal((3, 4, 5)) * 3 + 10).astype(np.float32)


def X(lib):
    """A (3, 4, 5) leaf of mean 10 and deviation 3."""
    return lib.tensor(A, requires_grad=True)


CASES = {
 "var": lambda L: X(L).var(), "var0": lambda L: X(L).var(0), "var t": lambda L: X(L).var((0, 2)), "var -1 kd": lambda L: X(L).var(-1, keepdim=True),
 "var unb F": lambda L: X(L).var(unbiased=False), "var corr0": lambda L: X(L).var(correction=0), "var True": lambda L: X(L).var(True), "var False": lambda L: X(L).var(False),
 "var 0 True": lambda L: X(L).var(0, True), "var 1 F T": lambda L: X(L).var(1, False, True), "fn var kd": lambda L: L.var(X(L), 1, keepdim=True),
 "std": lambda L: X(L).std(), "std 1 c2": lambda L: X(L).std(1, correction=2), "std list": lambda L: X(L).std([0, 1]),
 "int": lambda L: L.arange(3).var(), "bool": lambda L: L.ones(2, dtype=L.bool).std(),
 "one": lambda L: L.ones(1).var(), "one std": lambda L: L.ones(1, requires_grad=True).std(0),
 "empty": lambda L: L.ones(0).var(), "empty dim": lambda L: L.ones(0, 3).var(0), "empty dim1": lambda L: L.ones(0, 3).var(1),
 "both": lambda L: X(L).var(dim=0, unbiased=True, correction=1), "dim5": lambda L: X(L).var(5), "dimf": lambda L: X(L).var(0.5),
 "corr 1.5": lambda L: X(L).var(correction=1.5), "dup": lambda L: X(L).var((0, 0)), "str": lambda L: L.var(X(L), 'a'),
 "f64": lambda L: X(L).double().std(2), "0d": lambda L: L.tensor(3.0).var(), "0d c0": lambda L: L.tensor(3.0, requires_grad=True).std(correction=0),
 "kd int": lambda L: X(L).var(0, keepdim=1),
}
GRADIENT_CASES = {
 "g var": lambda x: x.var(), "g var0": lambda x: x.var(0), "g var kd": lambda x: x.var((0, 2), keepdim=True), "g std": lambda x: x.std(1),
 "g std c0": lambda x: x.std(correction=0), "g var c big": lambda x: x.var(2, correction=5), "g std all": lambda x: x.std(),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    (ours, our_warnings), (theirs, their_warnings) = _outcome(fg, CASES[name]), _outcome(torch, CASES[name])
    assert our_warnings == their_warnings
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "tensor":
        assert ours[1].shape == theirs[1].shape and ours[2:] == theirs[2:], (ours, theirs)
        np.testing.assert_allclose(ours[1], theirs[1], rtol=2e-7, atol=0, equal_nan=True)
    elif "invalid combination" in theirs[2]:
        assert ours[1] == theirs[1] and ours[2].split(" - got")[0] == theirs[2].split(" - got")[0]
    else:
        assert ours == theirs


def _gradient(lib, fn):
    """x.grad of sum(fn(x) * w) for a fixed random weight w of fn(x)'s shape."""
    x = X(lib)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # ("g var c big" has no degrees of freedom: torch warns)
        y = fn(x)
    w = np.random.default_rng(5).standard_normal(tuple(y.shape)).astype(np.float32)
    (y * lib.tensor(w)).sum().backward()
    return x.grad.numpy()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("name", list(GRADIENT_CASES))
def test_gradients_match_torch(name, compiled):
    fn = GRADIENT_CASES[name]
    np.testing.assert_allclose(_gradient(fg, fg.compile(fn) if compiled else fn), _gradient(torch, fn),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("kwargs", [{}, {"dim": 0}, {"correction": 0}], ids=str)
@pytest.mark.parametrize("values", [[2.0], [2.0, 2.0, 2.0]], ids=["one element", "constant"])
def test_degenerate_gradients_match_torch(op, kwargs, values):
    """No degrees of freedom (NaN gradients) and a zero deviation (std's gradient is 0 there)."""
    def grad(lib):
        x = lib.tensor(values, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            getattr(x, op)(**kwargs).backward()
        return x.grad.numpy()
    np.testing.assert_array_equal(grad(fg), grad(torch))
