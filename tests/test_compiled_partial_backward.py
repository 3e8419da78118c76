"""A backward from some of a compiled call's outputs checks only what those outputs reach.

A compiled call's outputs share one CompiledFunctionBackward node, but torch's engine checks
a saved tensor's version only when the backward reaches the node that saved it. So a
backward from one output must not raise for a value saved only for another output that an
in-place write changed (inside the call, or after it), and must still raise for a value it
does need. torch eager is the oracle.
"""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch eager is the oracle for version-counter errors")


def written_inside(L, x):
    t = x ** 2                      # saves x for t's gradient only
    with L.no_grad():
        x.mul_(2)
    return (x * 2).sum(), t


def written_after(L, x):
    t2 = x[2, 0]
    return x.sum(0).tanh().sum(), t2 ** 2      # t2 ** 2 saves a view of x


def used_by_both(L, x):
    t = x.exp()                     # saves its output, which both outputs' gradients read
    return (t * 2).sum(), (t * t).sum()


CASES = {
    "written inside, backward from the other output": (written_inside, 0, False),
    "written inside, backward from the output that saved it": (written_inside, 1, False),
    "written after, backward from the other output": (written_after, 0, True),
    "written after, backward from the output that saved it": (written_after, 1, True),
    "saved for both outputs, written after": (used_by_both, 0, True),
}


def _outcome(L, compiled, case):
    body, which, write_after = CASES[case]
    x = L.ones(3, 2, requires_grad=True) if body is not written_inside else L.ones(3) * 1
    if body is written_inside:
        x = x.detach().requires_grad_(True)
    fn = fg.compile(lambda x: body(fg, x)) if compiled else (lambda x: body(L, x))
    out = fn(x)
    if write_after:
        with L.no_grad():
            x.add_(1.5)
    try:
        out[which].sum().backward()
    except RuntimeError as error:
        return "error", str(error).split(":")[0]
    return "grad", x.grad.numpy().copy()


@pytest.mark.parametrize("case", CASES)
def test_a_backward_checks_only_what_it_reaches(case):
    want = _outcome(torch, False, case)
    got = _outcome(fg, True, case)
    assert got[0] == want[0], (got, want)
    if want[0] == "grad":
        np.testing.assert_allclose(got[1], want[1], rtol=1e-5)
    else:
        assert got[1] == want[1]
