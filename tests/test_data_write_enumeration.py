"""Writes through `.data` around saved tensors, enumerated, eager and compiled, against torch.

A tensor `x` (a leaf, the caller's non-leaf, a view of one, a view of a leaf made without
grad) is written through an alias before an op that saves it or views of it (`x.t() @ x`,
`x[0] * x`, ...), then under no_grad through `x.data`, a view's `.data` or a detach(), and
after the call through `x.data` (no version bump: the backward reads the new memory, as
torch's saved tensors are that memory) or in place (torch's version error). torch is the
oracle for the loss, every gradient and the error. The full product (2880 cases) found the
compiled corners fixed in round 46; a second family writes through detach()es and views (2400
cases, which found the overlap check's corner there). The regular run takes one saved use of
each, the slow marker a deterministic sample of each whole product.
"""
from __future__ import annotations

import itertools
import random

import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle for .data writes around saved tensors")

from parity_support import without_node_name  # noqa: E402

TARGETS = ["leaf", "nonleaf", "view", "leafview"]
BEFORE = ["", "x.data.mul_(2.0)", "x.detach().add_(1.0)", "x.data[0].fill_(0.25)", "x.t().data.mul_(-1.0)"]
USES = ["t = x.t() @ x", "t = x[0] * x", "t = x.sigmoid()", "t = x.pow(2)", "t = x.t().exp() * x.t()",
        "t = (x * 2.0)[1]"]
NO_GRAD = ["", "x.data.mul_(2.0)", "x.t().data.add_(1.0)", "x.data[1] = 3.0", "x.detach().t()[0].zero_()",
           "x[0].data.fill_(0.5)"]
AFTER = ["", "x.data.add_(1.0)", "x.mul_(2.0)", "x.detach()[1].mul_(3.0)"]
# (a second family: writes through detach()es and views of x, other saved views)
BEFORE_2 = ["", "x.detach().mul_(2.0)", "x.detach()[0].fill_(0.25)", "x.detach().t().mul_(-1.0)",
            "x.unsqueeze(0).data.add_(1.0)"]
USES_2 = ["t = x.t() @ x", "t = x[:, 0] * x", "t = x.unsqueeze(0).tanh()", "t = x.reshape(4) * x.flatten()",
          "t = x.expand(3, 2, 2).sum(0) * x"]
NO_GRAD_2 = ["", "x.detach().mul_(2.0)", "x[:, 1].data.add_(1.0)", "x.unsqueeze(0)[0, 1] = 3.0",
             "x.view(4).data.zero_()", "x.detach().t().add_(x.detach())"]
AFTER_2 = ["", "x.data.add_(1.0)", "x.add_(2.0)", "x.detach()[:, 0].mul_(3.0)"]


def _outcome(L, compiled: bool, target: str, before: str, use: str, no_grad: str, after: str):
    s = L.tensor([[-1.5, -0.5], [0.25, 0.5]], requires_grad=True)
    if target == "leaf":
        x0 = s
    elif target == "nonleaf":
        x0 = s * 1
    elif target == "view":
        x0 = (s * 1).view(2, 2)
    else:
        with L.no_grad():
            x0 = s * 1
        x0 = x0.requires_grad_()[0:2]
    source = "def f(x):\n"
    source += "".join(f"    {line}\n" for line in (before, use) if line)
    if no_grad:
        source += f"    with L.no_grad():\n        {no_grad}\n"
    source += "    return t.sum()\n"
    namespace = {"L": L}
    exec(source, namespace)
    try:
        out = (fg.compile(namespace["f"]) if compiled else namespace["f"])(x0)
    except RuntimeError as error:
        return "call", without_node_name(str(error)) if compiled else str(error)
    try:
        if after:
            with L.no_grad():
                exec(after, {"x": x0})
        out.backward()
    except RuntimeError as error:
        # (a compiled call's saved values are named by its own node: README)
        return "backward", without_node_name(str(error)) if compiled else str(error), s.tolist()
    grad = None if s.grad is None else [round(v, 4) for row in s.grad.tolist() for v in row]
    return round(out.item(), 4), grad, s.tolist()


def _check(case):
    want = _outcome(torch, False, *case)
    for compiled in (False, True):
        expected = want if not compiled or want[0] != "backward" else (want[0], without_node_name(want[1]), want[2])
        assert _outcome(fg, compiled, *case) == expected, ("compiled" if compiled else "eager", case)


@pytest.mark.parametrize("case", list(itertools.product(TARGETS, ["", "x.data.mul_(2.0)"], ["t = x.t() @ x"],
                                                        NO_GRAD[:3] + NO_GRAD[5:], AFTER)), ids=str)
def test_data_writes_around_a_saved_transpose_match_torch(case):
    _check(case)


_EVERY = sorted(itertools.product(TARGETS, BEFORE, USES, NO_GRAD, AFTER))
_EVERY_2 = sorted(itertools.product(TARGETS, BEFORE_2, USES_2, NO_GRAD_2, AFTER_2))


@pytest.mark.slow
@pytest.mark.parametrize("case", random.Random(46).sample(_EVERY, 400), ids=str)
def test_data_writes_around_saved_tensors_match_torch(case):
    _check(case)


@pytest.mark.parametrize("case", list(itertools.product(["view", "nonleaf"], ["", "x.detach().mul_(2.0)"],
                                                        ["t = x[:, 0] * x"], NO_GRAD_2, ["", "x.add_(2.0)"])),
                         ids=str)
def test_detach_and_view_writes_around_a_saved_column_match_torch(case):
    _check(case)


@pytest.mark.slow
@pytest.mark.parametrize("case", random.Random(47).sample(_EVERY_2, 300), ids=str)
def test_detach_and_view_writes_around_saved_tensors_match_torch(case):
    _check(case)
