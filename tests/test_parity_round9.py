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


# --------------------------------------------------------------------- transforms inside fg.compile
def _closure_grads(lib, grad, compile_fn, x_values, w_values):
    """grad of f(x) = sum(x * w * x) closing over w (requires grad), then a backward through
    the gradient: (gradient, its requires_grad, w.grad)."""
    w = lib.tensor(w_values, requires_grad=True)
    x = lib.tensor(x_values)
    g = compile_fn(grad(lambda x: (x * w * x).sum()))(x)
    requires = g.requires_grad
    g.sum().backward()
    return g.detach().numpy(), requires, w.grad.numpy()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_grad_keeps_the_history_of_a_closed_over_tensor(compiled):
    """torch.func.grad of a function closing over a tensor that requires grad returns a
    gradient with history to it; fg.compile(fg.grad(f)) returned a plain value, so a later
    backward raised (or, in a training step, the closed-over weight got no gradient)."""
    from torch.func import grad as torch_grad
    theirs = _closure_grads(torch, torch_grad, lambda f: f, [3., 4.], [1., 2.])
    ours = _closure_grads(fg, fg.grad, fg.compile if compiled else (lambda f: f), [3., 4.], [1., 2.])
    np.testing.assert_allclose(ours[0], theirs[0])
    assert ours[1] is theirs[1] is True
    np.testing.assert_allclose(ours[2], theirs[2])


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_value_and_grad_keeps_history_only_where_a_closed_over_tensor_is_read(compiled):
    from torch.func import grad_and_value
    wrap = fg.compile if compiled else (lambda f: f)
    w, tw = fg.tensor([1., 2.], requires_grad=True), torch.tensor([1., 2.], requires_grad=True)
    x, tx = fg.tensor([3., 4.]), torch.tensor([3., 4.])
    value, grad = wrap(fg.value_and_grad(lambda x: (x * w).sum()))(x)
    their_grad, their_value = grad_and_value(lambda x: (x * tw).sum())(tx)
    assert (value.requires_grad, grad.requires_grad) == (their_value.requires_grad, their_grad.requires_grad) \
        == (True, True)
    (value + grad.sum()).backward()
    (their_value + their_grad.sum()).backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy())
    # a function that reads no such tensor: plain values
    value, grad = wrap(fg.value_and_grad(lambda x: (x * x).sum()))(x)
    assert (value.requires_grad, grad.requires_grad, value.grad_fn, grad.grad_fn) == (False, False, None, None)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("shape", [(2,), ()], ids=["vector", "0-d"])
def test_backward_called_on_a_leaf_itself_fills_its_grad(compiled, shape):
    """w.backward(v) of a leaf w: w.grad = v (a compiled call left it None)."""
    def step(lib, w):
        w.backward(lib.ones(shape) * 2 if shape else None)
        return w

    wrap = fg.compile if compiled else (lambda f: f)
    w = fg.ones(shape, requires_grad=True)
    wrap(lambda w: step(fg, w))(w)
    tw = torch.ones(shape, requires_grad=True)
    step(torch, tw)
    np.testing.assert_array_equal(w.grad.numpy(), tw.grad.numpy())


def test_backward_of_a_leaf_made_inside_a_compiled_call():
    def f():
        s = fg.tensor(2., requires_grad=True)
        s.backward()
        return s.grad
    assert fg.compile(f)().item() == f().item() == 1.0
