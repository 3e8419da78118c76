"""Parity round 11: create_graph gradients against torch 2.13, eagerly and inside fg.compile.

- a gradient of another dtype than its output (float32 ones for a float64 output) is cast
  as the first op of the gradient's history, as torch's validate_outputs does;
- a create_graph gradient that reads nothing requiring grad (d(2x)/dx) is a plain tensor
  inside fg.compile too (it carried the compiled call's history).
"""
from __future__ import annotations

import warnings

import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")
from parity_support import assert_same  # noqa: E402


def _name(t):
    return None if t.grad_fn is None else t.grad_fn.name()


# --------------------------------------------------------------------- seeds of another dtype
@pytest.mark.parametrize("out_dtype,seed_dtype", [("float64", "float32"), ("float32", "float64")])
def test_autograd_grad_create_graph_casts_the_seed(out_dtype, seed_dtype):
    def run(lib):
        x = lib.tensor([1.0, 2.0, -0.5], dtype=getattr(lib, out_dtype), requires_grad=True)
        v = lib.tensor([0.5, 3.0, 2.0], dtype=getattr(lib, seed_dtype), requires_grad=True)
        (g,) = lib.autograd.grad(x * x, x, v, create_graph=True)
        (g * x).sum().backward()
        return g, x.grad, v.grad

    for ours, theirs in zip(run(fg), run(torch)):
        assert_same(ours, theirs)
    assert _name(run(fg)[0]) == _name(run(torch)[0])


def test_backward_create_graph_with_a_float32_gradient_of_a_float64_output():
    def run(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # torch's reference-cycle warning
            (x * x).backward(lib.ones(2), create_graph=True)
        return x.grad

    ours, theirs = run(fg), run(torch)
    assert_same(ours, theirs)
    assert _name(ours) == _name(theirs) == "torch::autograd::CopyBackwards"
    assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__ == "CopyBackwards"


def test_compiled_create_graph_seed_of_another_dtype():
    def f(lib, x, v):
        (g,) = lib.autograd.grad(x * x, x, v, create_graph=True)
        (g * x).sum().backward()
        return g

    def make(lib):
        return (lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True),
                lib.tensor([0.5, 3.0], requires_grad=True))

    (x, v), (tx, tv) = make(fg), make(torch)
    g = fg.compile(lambda a, b: f(fg, a, b))(x, v)
    tg = f(torch, tx, tv)
    for ours, theirs in ((g, tg), (x.grad, tx.grad), (v.grad, tv.grad)):
        assert_same(ours, theirs)


# --------------------------------------------------------------------- gradients that read nothing requiring grad
def _linear_grad(lib, x):
    (g,) = lib.autograd.grad((x * 2).sum(), x, create_graph=True)
    return g


def _quadratic_grad(lib, x):
    (g,) = lib.autograd.grad((x * x).sum(), x, create_graph=True)
    return g


def _transform_grad(lib, x):
    grad = fg.grad if lib is fg else torch.func.grad
    return grad(lambda t: (t * 3).sum())(x)


@pytest.mark.parametrize("fn", [_linear_grad, _quadratic_grad, _transform_grad])
@pytest.mark.parametrize("compiled", [False, True])
def test_create_graph_gradient_requires_grad_as_torch(fn, compiled):
    x, tx = fg.tensor([1.0, 2.0], requires_grad=True), torch.tensor([1.0, 2.0], requires_grad=True)
    call = fg.compile(lambda a: fn(fg, a)) if compiled else (lambda a: fn(fg, a))
    ours, theirs = call(x), fn(torch, tx)
    assert_same(ours, theirs)
    assert ours.requires_grad == theirs.requires_grad
    assert (ours.grad_fn is None) == (theirs.grad_fn is None)
    if not compiled:
        assert _name(ours) == _name(theirs)
    if theirs.requires_grad:            # and it differentiates on, as torch's does
        ours.sum().backward()
        theirs.sum().backward()
        assert_same(x.grad, tx.grad)


# --------------------------------------------------------------------- backward(create_graph=True)'s warning
_WARNING_SCRIPT = """
import warnings
import {lib} as lib
warnings.simplefilter("always")
x = lib.ones(2, requires_grad=True)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    lib.autograd.grad((x * x).sum(), x, create_graph=True)      # no warning: autograd.grad
    for _ in range(2):
        (x * x).sum().backward(create_graph=True)
        x.grad = None
print(len(caught), caught[0].category.__name__, str(caught[0].message).split(" (Triggered")[0])
"""


def test_backward_create_graph_warns_once_a_process_as_torch():
    """torch's TORCH_WARN_ONCE about the parameter/.grad reference cycle: backward() only,
    the first time in a process (so each library runs in a fresh interpreter)."""
    import subprocess
    import sys
    outputs = [subprocess.run([sys.executable, "-c", _WARNING_SCRIPT.format(lib=lib)], capture_output=True,
                              text=True, timeout=120, check=True).stdout for lib in ("fusegrad", "torch")]
    assert outputs[0] == outputs[1]
    assert outputs[0].startswith("1 UserWarning Using backward() with create_graph=True will create a reference cycle")
