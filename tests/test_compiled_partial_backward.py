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


SEPARATE_BACKWARDS = {
    "outputs on separate paths": lambda L, a: ((a * a).sum(), (a * 3).sum()),
    "outputs sharing a value that saves its output": lambda L, a: (lambda b: ((b * 2).sum(), (b * b).sum()))(a.exp()),
    "outputs sharing a product by a constant": lambda L, a: (lambda b: ((b * 2).sum(), (b + 1).sum()))(a * 2),
    "an output reusing another's saved input": lambda L, a: ((a * a).sum(), (a * a * a).sum()),
}


@pytest.mark.parametrize("case", SEPARATE_BACKWARDS)
def test_outputs_backpropagated_one_at_a_time(case):
    """y1.backward(); y2.backward() on a compiled call's outputs: the second runs where the first
    freed none of what it needs (eagerly each output has its own nodes), raises torch's
    'second time' error where it did; a third backward through y1 raises, as in torch."""
    def run(L, compiled):
        body = SEPARATE_BACKWARDS[case]
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y1, y2 = (fg.compile(lambda a: body(fg, a)) if compiled else (lambda a: body(L, a)))(x)
        y1.backward()
        second = _outcome_of(lambda: y2.backward())
        third = _outcome_of(lambda: y1.backward())
        return second, third, np.round(x.grad.numpy(), 5).tolist()
    assert run(fg, True) == run(torch, False)


def _outcome_of(fn):
    try:
        fn()
    except RuntimeError as error:
        return str(error).split(" (")[0]
    return "ran"
