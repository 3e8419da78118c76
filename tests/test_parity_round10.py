"""Parity round 10: differences from torch 2.13 found by sweeps of realistic scripts and of
numerics at boundary points.

Each test runs the same code on torch and fusegrad and compares values, printed forms and
exception texts, eagerly and (where the call can be traced) inside fg.compile.
"""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")


# --------------------------------------------------------------------- .grad written in place by a compiled call
def _grad_layouts(lib):
    """(parameter, existing .grad) pairs whose layouts differ (a transposed or strided .grad,
    or a transposed parameter), with the .grad's base when it is a view of a bigger tensor."""
    w1 = lib.ones(3, 2, requires_grad=True)
    w1.grad = lib.zeros(2, 3).t()
    w2 = lib.ones(3, 2, requires_grad=True)
    base = lib.zeros(3, 4)
    w2.grad = base[:, ::2]
    w3 = lib.ones(2, 3).t().detach().requires_grad_()
    w3.grad = lib.zeros(3, 2)
    return [w1, w2, w3], base


def _step(params):
    for w in params:
        (w * 2).sum().backward()


def _step_with_zero_grad(params):
    for w in params:
        w.grad.zero_()
        (w * 3).sum().backward()


# (the strided .grad's write runs by reference, with fusegrad's one-time note)
@pytest.mark.filterwarnings("ignore:fusegrad. index_put with these attributes:RuntimeWarning")
@pytest.mark.parametrize("step", [_step, _step_with_zero_grad], ids=["backward", "zero_grad then backward"])
def test_a_compiled_backward_accumulates_into_an_existing_grad_of_another_layout(step):
    """torch's AccumulateGrad adds into an existing .grad in place, whatever its layout; a
    compiled call wrote the sum into the old memory but left .grad on a new array of zeros."""
    theirs, their_base = _grad_layouts(torch)
    step(theirs)
    ours, our_base = _grad_layouts(fg)
    fg.compile(step)(ours)
    for t, o in zip(theirs, ours):
        np.testing.assert_array_equal(o.grad.numpy(), t.grad.numpy())
        assert o.grad.stride() == t.grad.stride()
    np.testing.assert_array_equal(our_base.numpy(), their_base.numpy())
