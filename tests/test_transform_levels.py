"""fg.grad / fg.value_and_grad results as the caller's level sees them (torch.func's
unwrapping), and the version checks of what their graphs saved, eager and compiled, against
torch 2.13 (torch.func.grad / grad_and_value)."""
import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch")
from parity_support import outcome, value_and_grad_of  # noqa: E402  (after the skip)

MODES = ["eager", "compiled"]


def _grad(lib, f, argnums, has_aux=False):
    return (fg.grad if lib is fg else torch.func.grad)(f, argnums=argnums, has_aux=has_aux)


def _run(lib, mode, f, *args):
    return (fg.compile(f) if lib is fg and mode == "compiled" else f)(*args)


def _both(case, mode):
    """case(lib, mode) on torch, then fusegrad: their outcomes (value, or error class and text)."""
    return outcome(lambda: case(torch, mode)), outcome(lambda: case(fg, mode))


def _value_then_write_operand(lib, mode, argnums):
    """The value of value_and_grad over (u * w).sum(), where u has history and only w (no
    history) is differentiated, then u written in place, then a backward to u's history."""
    def f(x0, x1):
        v0 = x0 * x1
        value = value_and_grad_of(lib, lambda u, w: (u * w).sum(), argnums)(v0, x0)[0]
        v0.mul_(2)
        return value
    x0, x1 = lib.tensor([0.5, -1.5]), lib.tensor([2.0, 3.0], requires_grad=True)
    _run(lib, mode, f, x0, x1).backward()
    return x1.grad.tolist()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("argnums", [1, (0, 1)])
def test_value_keeps_no_saved_operand_of_the_transforms_own_leaf(mode, argnums):
    """torch.func records the value's op at the caller's level too, where the transform's leaf
    for x0 needs no gradient: that node saves only x0, so writing u afterwards is no error
    (fusegrad's node, recorded with both operands requiring grad, raised the version error)."""
    theirs, ours = _both(lambda lib, m: _value_then_write_operand(lib, m, argnums), mode)
    assert theirs == [0.25, 2.25]
    assert ours == theirs


def _aux_of(lib, mode, aux_body):
    def f(x0, x1):
        return _grad(lib, lambda u, w: ((u * u * w).sum(), aux_body(u, w)), 0, has_aux=True)(x0, x1)[1]
    x0, x1 = lib.tensor([0.5, 1.5]), lib.tensor([2.0, 3.0], requires_grad=True)
    aux = _run(lib, mode, f, x0, x1)
    found = [aux.requires_grad, aux.is_leaf]
    if aux.requires_grad:
        aux.sum().backward()
        found.append(x1.grad.tolist())
    return found


@pytest.mark.parametrize("mode", MODES)
def test_aux_of_the_differentiated_argument_alone_has_no_history(mode):
    """aux = u * 2 of the differentiated u (x0 needs no grad) is a plain tensor, as torch.func's,
    though another argument requires grad (it came back with requires_grad and a MulBackward0)."""
    theirs, ours = _both(lambda lib, m: _aux_of(lib, m, lambda u, w: u * 2), mode)
    assert theirs == [False, True]
    assert ours == theirs


@pytest.mark.parametrize("mode", MODES)
def test_aux_reading_a_tensor_from_outside_keeps_that_history(mode):
    theirs, ours = _both(lambda lib, m: _aux_of(lib, m, lambda u, w: u * w), mode)
    assert theirs == [True, False, [0.5, 1.5]]
    assert ours == theirs


def _gradient_then_write_argument(lib, mode, body, argnums, pick):
    """A gradient whose history saved a computed argument v, then v written in place, then a
    backward through that gradient."""
    def f(x):
        v = x * 2
        g = pick(_grad(lib, body, argnums)(v, x))
        v.mul_(2)
        return g
    x = lib.tensor([0.5, -1.5], requires_grad=True)
    _run(lib, mode, f, x).sum().backward()
    return x.grad.tolist()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("body, argnums, pick", [
    (lambda u, w: (u * u * w).sum(), 0, lambda g: g),
    (lambda u, w: (u / (w.abs() + 1)).sum(), (0, 1), lambda g: g[1]),
    (lambda u, w: (u / (w.abs() + 1)).sum(), 1, lambda g: g),
], ids=["u*u*w", "div-both", "div-w"])
def test_writing_a_differentiated_argument_after_the_transform_raises(mode, body, argnums, pick):
    """The version error names the argument by its own history ("output 0 of Mul"), as torch's
    (inside fg.compile the gradient was silently computed from the old value; eagerly the text
    had no ", which is output 0 of Mul,")."""
    theirs, ours = _both(lambda lib, m: _gradient_then_write_argument(lib, m, body, argnums, pick), mode)
    assert theirs[0] == "RuntimeError" and "which is output 0 of Mul, is at version 1" in theirs[1]
    assert ours == theirs


def _leaf_made_in_the_call_dies(lib, mode):
    def g(x):
        v1 = x * 2
        v2 = v1.detach().requires_grad_(True)       # shares v1's version counter
        v3 = v2.cosh()                              # saves v2
        v1.exp2_()
        return v3                                   # v2 itself dies here
    out = _run(lib, mode, g, lib.tensor(np.array([[0.5, -1.0], [1.5, 0.25]], dtype=np.float32)))
    out.sum().backward()
    return out.requires_grad


@pytest.mark.parametrize("mode", MODES)
def test_a_leaf_made_in_the_call_that_died_still_checks_what_was_saved_for_it(mode):
    """torch's graph keeps the dead leaf's AccumulateGrad, so backward() runs CoshBackward0 and
    raises; the compiled call's backward reached no input and computed silently."""
    theirs, ours = _both(_leaf_made_in_the_call_dies, mode)
    assert theirs[0] == "RuntimeError" and theirs[1].startswith("one of the variables needed")
    assert ours == theirs


def _gradient_reading_a_leaf_made_in_the_call(lib, mode, write):
    def f(x):
        w0 = x * 1
        w = w0.detach().requires_grad_()        # a leaf made in the call, over w0's memory
        v = w * 2
        if write:
            w0.mul_(2)                          # the leaf's memory written through w0
        return _grad(lib, lambda u, s: (u * s).sum(), 0)(w0, v), w
    g, w = _run(lib, mode, f, lib.tensor([1.0, 2.0]))
    g.sum().backward()
    return g.tolist(), g.requires_grad, w.grad.tolist()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("write", [False, True])
def test_gradient_keeps_history_through_a_leaf_whose_memory_was_written(mode, write):
    """d/du (u * s).sum() = s = w * 2 reads the leaf w: it keeps that history for the caller
    (fg.compile dropped it once w's memory was written: its value was no longer the one the
    leaf was made with, and the backward raised "does not require grad")."""
    theirs, ours = _both(lambda lib, m: _gradient_reading_a_leaf_made_in_the_call(lib, m, write), mode)
    assert theirs == ([2.0, 4.0], True, [2.0, 2.0])
    assert ours == theirs


def _grad_of_a_history_that_saved_a_written_leaf(lib, second):
    x = lib.tensor([0.5, 1.0, 2.0, 3.0], requires_grad=True)
    y = x.sin()                         # saves x at version 0
    with lib.no_grad():
        x.mul_(1.5)                     # x at version 1
    g = _grad(lib, lambda u, w: (u * w).sum(), 0)(y.sum(), x if second == "x" else x.detach())
    return round(g.item(), 5), g.requires_grad


@pytest.mark.parametrize("second", ["x", "x.detach()"])
def test_a_node_reading_a_leaf_at_its_new_version_is_no_version_error(second):
    """d/du (u * w).sum() reads w = x at version 1; SinBackward0 below u saved x at version 0,
    but the gradient to u does not go there: no error (the create_graph backward bound both
    reads of x to the first node's saved copy, and raised)."""
    assert outcome(lambda: _grad_of_a_history_that_saved_a_written_leaf(fg, second)) == \
        outcome(lambda: _grad_of_a_history_that_saved_a_written_leaf(torch, second))


def _mixed_dtype_gradient_then_write(lib, mode):
    def f(x, y):
        g = _grad(lib, lambda u, w: (u / (w.abs() + 1)).sum(), 1)(x, y)     # saves u, promoted to float64
        with lib.no_grad():
            x.mul_(1.5)
        return g
    x = lib.tensor([0.5, 1.0], requires_grad=True)
    y = lib.tensor([2.0, -3.0], dtype=lib.float64, requires_grad=True)
    _run(lib, mode, f, x, y).sum().backward()
    return y.grad.tolist()


@pytest.mark.parametrize("mode", MODES)
def test_a_promoted_operand_in_a_gradients_history_is_version_checked(mode):
    """The create_graph backward promotes the float32 u again for float64 w: that copy stands
    for u (torch's nodes save u itself), so writing x after the call raises at backward
    (eagerly the copy had a counter of its own and the backward read the new x silently)."""
    theirs, ours = _both(_mixed_dtype_gradient_then_write, mode)
    assert theirs[0] == "RuntimeError" and "[torch.FloatTensor [2]] is at version 1; expected version 0" in theirs[1]
    assert ours == theirs
