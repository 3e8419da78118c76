"""Tensor.bernoulli_, F.dropout and nn.Dropout: torch's numbers after the same manual_seed
(its CPU bernoulli draws a double uniform per element), torch's results, grad_fn names
and errors, eager and inside fg.compile."""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")
from parity_support import assert_same_outcome, lib_outcome as outcome  # noqa: E402


def seeded(f):
    def g(L):
        L.manual_seed(7)
        return f(L)
    return g
A = np.random.default_rng(0).standard_normal((4, 33)).astype(np.float32)
def grad_of(L, f):
    x = L.tensor(A, requires_grad=True); y = f(L, x); (y * y).sum().backward(); return x.grad
CASES = {
 "bern": lambda L: L.ones(100).bernoulli_(0.3), "bern int": lambda L: L.arange(50).bernoulli_(0.5), "bern bool": lambda L: L.ones(50, dtype=L.bool).bernoulli_(0.5),
 "bern p>1": lambda L: L.ones(3).bernoulli_(1.5), "bern p<0": lambda L: L.ones(3).bernoulli_(-0.5), "bern leaf": lambda L: L.ones(3, requires_grad=True).bernoulli_(0.5),
 "bern nonleaf": lambda L: (L.ones(3, requires_grad=True) * 1).bernoulli_(0.5), "bern T": lambda L: L.zeros(5, 7).t().bernoulli_(0.5), "bern 64": lambda L: L.zeros(70, dtype=L.float64).bernoulli_(0.9),
 "drop": lambda L: L.nn.functional.dropout(L.tensor(A, requires_grad=True), 0.3), "drop eval": lambda L: L.nn.functional.dropout(L.tensor(A), 0.3, training=False),
 "drop p0": lambda L: L.nn.functional.dropout(L.tensor(A, requires_grad=True)*1, 0.), "drop p1": lambda L: L.nn.functional.dropout(L.tensor(A, requires_grad=True), 1.),
 "drop inplace": lambda L: L.nn.functional.dropout(L.tensor(A, requires_grad=True) * 1, 0.5, inplace=True), "drop bad p": lambda L: L.nn.functional.dropout(L.tensor(A), 1.5),
 "drop list": lambda L: L.nn.functional.dropout([1.], 0.5), "drop int": lambda L: L.nn.functional.dropout(L.arange(4), 0.5), "drop f64": lambda L: L.nn.functional.dropout(L.tensor(A).double(), 0.25),
 "drop T": lambda L: L.nn.functional.dropout(L.tensor(A).t(), 0.25), "module": lambda L: L.nn.Dropout(0.2)(L.tensor(A)), "module eval": lambda L: L.nn.Dropout(0.2).eval()(L.tensor(A)),
 "module bad": lambda L: L.nn.Dropout(-0.1), "drop grad": lambda L: grad_of(L, lambda L, x: L.nn.functional.dropout(x, 0.4)),
 "seq": lambda L: L.nn.Sequential(L.nn.Linear(33, 5), L.nn.Dropout(0.5), L.nn.ReLU())(L.tensor(A)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    # (the Linear before the dropout in "seq" rounds its products as BLAS does: ulps)
    assert_same_outcome(outcome(fg, seeded(CASES[name])), outcome(torch, seeded(CASES[name])),
                        atol=1e-6 if name == "seq" else 0)


def test_eval_mode_and_p_zero_return_the_input_itself():
    x = fg.ones(3, requires_grad=True)
    assert fg.nn.functional.dropout(x, 0.3, training=False) is x
    assert fg.nn.functional.dropout(x, 0.0) is x
    assert fg.nn.Dropout(0.3).eval()(x) is x


def test_repr_matches_torch():
    for args in [(), (0.2,), (0.2, True)]:
        assert repr(fg.nn.Dropout(*args)) == repr(torch.nn.Dropout(*args))


def test_compiled_dropout_draws_torchs_mask():
    step = fg.compile(lambda x: fg.nn.functional.dropout(x, 0.5) * 2)
    fg.manual_seed(3)
    ours = step(fg.tensor(A)).numpy()
    torch.manual_seed(3)
    theirs = (torch.nn.functional.dropout(torch.tensor(A), 0.5) * 2).numpy()
    np.testing.assert_array_equal(ours, theirs)


P = np.random.default_rng(0).uniform(0, 1, 50).astype(np.float32)
TENSOR_P_CASES = {
    "bernoulli_(tensor)": lambda L: L.empty(50).bernoulli_(L.tensor(P)),
    "bernoulli(input)": lambda L: L.bernoulli(L.tensor(P)),
    "bernoulli(input, p)": lambda L: L.bernoulli(L.tensor(P), 0.3),
    "broadcast p": lambda L: L.zeros(4, 3).bernoulli_(L.tensor([0.1, 0.9, 0.5])),
    "float64 p": lambda L: L.bernoulli(L.tensor(P).double()),
    "grad_fn": lambda L: L.bernoulli(L.tensor([0.1, 0.9], requires_grad=True)),
    "p not broadcastable": lambda L: L.zeros(2, 3).bernoulli_(L.tensor([0.1, 0.9])),
    "integer p": lambda L: L.bernoulli(L.tensor([1, 0])),
}


@pytest.mark.parametrize("seed", [0, 3])
@pytest.mark.parametrize("name", list(TENSOR_P_CASES))
def test_bernoulli_with_tensor_probabilities_matches_torch(name, seed):
    """torch's bernoulli with a tensor of probabilities draws a float uniform per element."""
    def seeded_case(lib):
        lib.manual_seed(seed)
        return TENSOR_P_CASES[name](lib)
    assert_same_outcome(outcome(fg, seeded_case), outcome(torch, seeded_case))
