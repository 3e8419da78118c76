"""Round 38 of torch parity (findings of a probe of fg.grad / value_and_grad / compile and of
the eager engine against torch 2.13): a function that returns its differentiated argument
gives the caller that very tensor (torch.func unwraps its wrapper to it); empty containers
are arguments with empty gradients; a gradient summed from several contributions is laid
out as torch's add lays it out."""
import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch 2.13 is the oracle of these cases")
func = pytest.importorskip("torch.func", reason="torch.func is the oracle of fg.grad")


def _arguments(L):
    """(a leaf that requires grad, a non-leaf made from it, a tensor without grad)."""
    leaf = L.tensor(3.0, requires_grad=True)
    return leaf, leaf * 2, L.tensor(4.0)


@pytest.mark.parametrize("which", [0, 1, 2])
@pytest.mark.parametrize("compiled", [False, True])
def test_returning_the_argument_gives_back_the_callers_tensor(which, compiled):
    """torch.func.grad_and_value(lambda x: x)(x)'s value is x itself, history and all; so is
    an aux that is the argument. fusegrad returned a detached copy, so that
    `value.backward()` raised "element 0 of tensors does not require grad"."""
    def identity(x):
        return x

    def with_aux(x):
        return x * 1, x

    x = _arguments(fg)[which]
    tx = _arguments(torch)[which]
    transform = fg.value_and_grad(identity)
    transform = fg.compile(transform) if compiled else transform
    value, grad = transform(x)
    grad_t, value_t = func.grad_and_value(identity)(tx)
    assert value is x and (value_t is tx)
    assert float(grad) == float(grad_t) == 1.0
    (_, aux), _ = fg.value_and_grad(with_aux, has_aux=True)(x)
    _, aux_t = func.grad(with_aux, has_aux=True)(tx)
    assert aux is x and aux_t is tx


def test_the_returned_argument_keeps_its_history_for_backward():
    leaf, x, _ = _arguments(fg)
    value, _ = fg.value_and_grad(lambda t: t)(x)
    value.backward()
    assert leaf.grad.item() == 2.0          # as torch: d(2 * leaf)/d leaf


def test_empty_containers_have_empty_gradients():
    """torch.func 2.13 and JAX return empty gradients for empty containers; fusegrad raised
    "`inputs` argument to `grad()` cannot be empty"."""
    for empty in ([], (), {}):
        assert fg.grad(lambda d: fg.tensor(1.0))(empty) == func.grad(lambda d: torch.tensor(1.0))(empty) == empty


LAYOUTS = {
    "transposed": lambda L: L.ones(2, 3).t(),
    "permuted": lambda L: L.ones(3, 4, 2).permute(2, 0, 1),
    "expanded": lambda L: L.ones(3, 1).expand(3, 4),
}
FUNCTIONS = {
    "a * a": lambda a: (a * a).sum(),
    "a * 2": lambda a: (a * 2).sum(),
    "a + a": lambda a: (a + a).sum(),
    "exp + sin": lambda a: (a.exp() + a.sin()).sum(),
    "mean of a * a": lambda a: (a * a).mean(),
    "exp * a[0]": lambda a: (a.exp() * a[0]).sum(),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("function", FUNCTIONS)
def test_a_summed_gradient_has_torchs_strides(layout, function):
    """Two contributions laid out as a transposed input sum to a transposed gradient in
    torch (its add follows its operands); fusegrad's sum was row-major."""
    f = FUNCTIONS[function]
    a = LAYOUTS[layout](fg).requires_grad_()
    ta = LAYOUTS[layout](torch).requires_grad_()
    ours = fg.autograd.grad(f(a), a)[0]
    theirs = torch.autograd.grad(f(ta), ta)[0]
    assert ours.stride() == theirs.stride()
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
