"""Parity round 8: differences from torch 2.13 found by a sweep of the API contract.

Each test runs the same code on torch and fusegrad and compares values, memory layouts,
printed forms and exception texts.
"""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")


def _outcome(fn):
    """fn()'s result as comparable data, or its exception's class name and text."""
    try:
        return fn()
    except Exception as exc:     # noqa: BLE001 (the exception is the outcome)
        return type(exc).__name__, str(exc)


# --------------------------------------------------------------------- result layouts
LAYOUTS = {
    "sum over a permute's dim": lambda L: L.arange(24.).reshape(2, 3, 4).permute(2, 0, 1).sum(1),
    "mean of a transpose": lambda L: L.arange(24.).reshape(2, 3, 4).transpose(0, 2).mean(0),
    "amax of a permute": lambda L: L.arange(24.).reshape(2, 3, 4).permute(2, 0, 1).amax(1),
    "norm of a permute": lambda L: L.arange(24.).reshape(2, 3, 4).permute(2, 0, 1).norm(dim=1),
    "max values of a permute": lambda L: L.arange(24.).reshape(2, 3, 4).permute(2, 0, 1).max(1)[0],
    "max indices of a permute": lambda L: L.arange(24.).reshape(2, 3, 4).permute(2, 0, 1).max(1)[1],
    "cat of transposes": lambda L: L.cat([L.arange(6.).reshape(2, 3).t()] * 2),
    "stack of transposes": lambda L: L.stack([L.arange(6.).reshape(2, 3).t()] * 2),
    "sum of a large permute": lambda L: L.arange(2. * 300 * 400).reshape(2, 300, 400).permute(2, 0, 1).sum(1),
}


@pytest.mark.parametrize("case", LAYOUTS)
def test_reductions_cat_and_stack_allocate_row_major_results(case):
    """torch allocates these results row-major whatever the input's layout (NumPy followed the
    input's order, so .view(-1) of them raised where torch's works)."""
    def run(lib):
        y = LAYOUTS[case](lib)
        return y.stride(), y.is_contiguous(), y.view(-1).numpy().tolist()
    assert run(fg) == run(torch)
