"""Random programs of views and in-place ops (writes through views made before or after
their base changed, setitem, views of views, transposes), eager and compiled, against torch.

Each program is built from a seed; torch is the oracle for the value, the gradient and
whether (and with which error) it fails. Compiled runs are checked where torch succeeds
(inside fg.compile a saved tensor's version and a view's strides are not checked, so a
program torch rejects may run there). The compiled sweep compiles a program per seed and
is marked slow.
"""
from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle for view and in-place semantics")

STEPS = [
    "y = y * 1.5", "y = y.tanh()", "y = y + y", "y.add_(1)", "y.mul_(0.5)", "y[0].add_(2)", "y[:, 1:].mul_(3)",
    "y.t()[0].sub_(1)", "v = y[1]", "v.add_(5)", "y = y.exp() * 0.1", "y[0, 0] = 3.", "y = y.reshape(3, 2).t()",
    "y = y.clone()", "v = y.t()", "w = y.view(6)", "w[2] = -1.", "y = y.sigmoid()", "y = y.relu() + v.sum() * 0.01",
]


def program(seed: int):
    rng = random.Random(seed)
    lines = ["y = a * 1", "v = y[0]", "w = y.view(6)"] + [rng.choice(STEPS) for _ in range(rng.randint(3, 10))]
    lines.append("return (y * y).sum() + (v * v).sum() + (w * w).sum()")
    namespace: dict = {}
    exec("def f(a):\n    " + "\n    ".join(lines), namespace)
    return namespace["f"], "\n".join(lines)


def outcome(lib, fn):
    """('ok', value, grad) or ('error', class name, the text's start)."""
    a = lib.tensor(np.arange(6, dtype=np.float32).reshape(2, 3) / 3, requires_grad=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(a)
            out.backward()
    except Exception as exc:  # noqa: BLE001 - the class and text are what is compared
        return ("error", type(exc).__name__, str(exc)[:60])
    return ("ok", out.item(), a.grad.numpy().copy())


def assert_same(want, got, source):
    assert want[0] == got[0], f"torch: {want}\nfusegrad: {got}\n{source}"
    if want[0] == "error":
        assert want[1:] == got[1:], source
    else:
        np.testing.assert_allclose(got[1], want[1], rtol=1e-4, err_msg=source)
        np.testing.assert_allclose(got[2], want[2], rtol=1e-4, atol=1e-4, err_msg=source)


@pytest.mark.parametrize("seed", range(120))
def test_eager_views_and_inplace_match_torch(seed):
    fn, source = program(seed)
    assert_same(outcome(torch, fn), outcome(fg, fn), source)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(60))
def test_compiled_views_and_inplace_match_torch(seed):
    fn, source = program(seed)
    want = outcome(torch, fn)
    if want[0] == "ok":
        assert_same(want, outcome(fg, fg.compile(fn)), source)
