"""torch.autograd.function.once_differentiable (tracer/custom_function.py) against torch: the
backward runs under no_grad; a create_graph backward whose gradients require grad gives results
of an `Error` node, whose backward raises torch's error."""
import importlib

import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle")

import fusegrad as fg  # noqa: E402


def _scenario(T):
    once_differentiable = importlib.import_module(T.__name__ + ".autograd.function").once_differentiable
    log = []

    class Square(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            x, = ctx.saved_tensors
            log.append(("grad mode in backward", T.is_grad_enabled()))
            return 2 * x * g

    def attempt(step):
        try:
            step()
        except RuntimeError as error:
            log.append(("raised", str(error)))

    x = T.tensor([1., 2.], requires_grad=True)
    g, = T.autograd.grad(Square.apply(x).sum(), x, create_graph=True)
    log.append((g.tolist(), g.grad_fn, g.requires_grad))
    attempt(lambda: g.sum().backward())
    z = x * 1
    g, = T.autograd.grad(Square.apply(z), z, T.ones(2, requires_grad=True), create_graph=True)
    log.append((g.tolist(), type(g.grad_fn).__name__, g.grad_fn.name()))
    attempt(lambda: g.sum().backward())
    x.grad = None
    Square.apply(x).sum().backward()
    log.append(x.grad.tolist())
    return log


def test_as_torch():
    log = _scenario(fg)
    assert log == _scenario(torch)
    assert ("raised", "trying to differentiate twice a function that was marked with @once_differentiable") in log
