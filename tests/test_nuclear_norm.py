"""norm(p='nuc'): the sum of singular values (ir/ops/linalg.py's svd op, run by reference
through LAPACK) against torch's linalg.matrix_norm: values, gradients, node names and errors,
eager and compiled."""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle for the nuclear norm")


@pytest.mark.parametrize("shape,dim,keepdim", [((2, 3), None, False), ((3, 2), None, True),
                                              ((2, 3, 4), (1, 2), False), ((2, 3, 4), (2, 0), True),
                                              ((4, 4), (-1, -2), False)])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_nuclear_norm_values_gradients_and_nodes_are_torchs(shape, dim, keepdim, compiled):
    x = np.random.default_rng(29).standard_normal(shape).astype(np.float32)
    results = []
    for L in (torch, fg):
        t = L.tensor(x, requires_grad=True)
        fn = (lambda t: t.norm(p="nuc", dim=dim, keepdim=keepdim))
        y = (fg.compile(fn) if (L is fg and compiled) else fn)(t)
        (y * y).sum().backward()
        results.append((y.detach().numpy(), t.grad.numpy(), None if compiled else y.grad_fn.name()))
    (want, want_grad, want_node), (got, got_grad, got_node) = results
    assert got.shape == want.shape and got_node == want_node
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("code", ["L.ones(3).norm(p='nuc')", "L.ones(2, 3, 4).norm(p='nuc')",
                                  "L.ones(2, 3).norm(p='nuc', dim=(0, 0))", "L.ones(2, 3).norm(p='nuc', dim=1)"])
def test_nuclear_norm_errors_are_torchs(code):
    with pytest.raises(Exception) as theirs:
        eval(code, {"L": torch})
    with pytest.raises(type(theirs.value)) as ours:
        eval(code, {"L": fg})
    assert str(ours.value) == str(theirs.value)
