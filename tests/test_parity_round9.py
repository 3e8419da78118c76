"""Parity round 9: differences from torch 2.13 found by a sweep of the API contract.

Each test runs the same code on torch and fusegrad and compares values, printed forms and
exception texts, eagerly and (where the call can be traced) inside fg.compile.
"""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")


# --------------------------------------------------------------------- signed zeros
@pytest.mark.parametrize("name", ["maximum", "minimum"])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_maximum_and_minimum_return_the_first_operand_on_a_tie(name, compiled):
    """torch returns the first operand when the two are equal, so the sign of a zero follows it
    (NumPy's maximum returns the second); NaN still propagates from either side."""
    a = [-0.0, 0.0, -0.0, 0.0, float("nan"), 1.0]
    b = [0.0, -0.0, -0.0, 0.0, 1.0, float("nan")]
    theirs = getattr(torch, name)(torch.tensor(a), torch.tensor(b)).numpy()
    fn = getattr(fg, name)
    ours = (fg.compile(fn) if compiled else fn)(fg.tensor(a), fg.tensor(b)).numpy()
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))
