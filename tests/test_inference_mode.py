"""Inference tensors (made eagerly inside fg.inference_mode) against torch 2.13: is_inference(),
and torch's errors for an in-place write, requires_grad_() and saving one for backward
outside inference_mode."""
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch")
from parity_support import outcome  # noqa: E402  (after the skip)

# Each gets x (a leaf that requires grad), y = x * 2 and z = ones(2), both made in inference_mode.
CASES = {
    "y.is_inference": lambda L, x, y, z: y.is_inference(),
    "z.is_inference": lambda L, x, y, z: z.is_inference(),
    "x.is_inference": lambda L, x, y, z: x.is_inference(),
    "view-of-y": lambda L, x, y, z: (y[0].is_inference(), y.view(2).is_inference(), y.detach().is_inference()),
    "op-on-y-outside": lambda L, x, y, z: ((y * 1).is_inference(), y.clone().is_inference(), y.relu().is_inference()),
    "add_": lambda L, x, y, z: y.add_(1),
    "zero_": lambda L, x, y, z: y.zero_(),
    "setitem": lambda L, x, y, z: y.__setitem__(0, 1.0),
    "view-mul_": lambda L, x, y, z: y.view(2).mul_(2),
    "copy_-under-no_grad": lambda L, x, y, z: _under_no_grad(L, lambda: z.copy_(x)),
    "requires_grad_": lambda L, x, y, z: y.requires_grad_(),
    "requires_grad_-false": lambda L, x, y, z: y.requires_grad_(False).is_inference(),
    "saved-by-mul": lambda L, x, y, z: x * y,
    "not-saved-by-add": lambda L, x, y, z: _backward(L, (x + y).sum(), x),
    "mse_loss-target": lambda L, x, y, z: L.nn.functional.mse_loss(x * 1, y),
    "no-grad-op": lambda L, x, y, z: L.exp(y).requires_grad,
    "inside-again": lambda L, x, y, z: _inside(L, lambda: y.add_(1).tolist()),
}


def _under_no_grad(L, fn):
    with L.no_grad():
        return fn()


def _inside(L, fn):
    with L.inference_mode():
        return fn()


def _backward(L, loss, x):
    loss.backward()
    return x.grad.tolist()


def _run(lib, name):
    x = lib.ones(2, requires_grad=True)
    with lib.inference_mode():
        y, z = x * 2, lib.ones(2)
    result = CASES[name](lib, x, y, z)
    return result.tolist() if isinstance(result, (fg.Tensor, torch.Tensor)) else result


@pytest.mark.parametrize("name", sorted(CASES))
def test_inference_tensors_as_torchs(name):
    assert outcome(lambda: _run(fg, name)) == outcome(lambda: _run(torch, name))


@pytest.mark.parametrize("body", ["mul", "add"])
def test_a_compiled_call_refuses_to_save_an_inference_tensor(body):
    """Eagerly the op that would save it raises; the compiled call raises torch's text too."""
    def f(a, b):
        return (a * b).sum() if body == "mul" else (a + b).sum()

    def run(lib, fn):
        x = lib.ones(2, requires_grad=True)
        with lib.inference_mode():
            y = x * 2
        fn(x, y).backward()
        return x.grad.tolist()
    assert outcome(lambda: run(fg, fg.compile(f))) == outcome(lambda: run(torch, f))


@pytest.mark.parametrize("case", ["alone", "with-an-outside-leaf"])
def test_grad_of_an_inference_tensor_argument(case):
    """torch.func wraps an inference tensor as any argument (its gradient computes); where the
    caller's level also differentiates (x requires grad), its node saves the inference tensor
    and raises."""
    def run(lib):
        grad = torch.func.grad if lib is torch else fg.grad
        x = lib.tensor([0.5, 1.0], requires_grad=True)
        with lib.inference_mode():
            v = x * 2
        if case == "alone":
            return grad(lambda u: (u * u).sum())(v).tolist()
        return grad(lambda u, w: (u * w).sum(), argnums=1)(x, v).tolist()
    assert outcome(lambda: run(fg)) == outcome(lambda: run(torch))
