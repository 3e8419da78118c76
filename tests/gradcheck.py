"""Central finite differences along a random direction: the torch-free gradient oracle.

`check_grads(f, *args)` checks fusegrad's reverse mode for `f` at `args` the way
HIPS autograd's `check_grads` and JAX's `check_vjp` do: pick a random direction
`v` in the inputs and a random cotangent `u` on the output, and compare the
directional derivative of `<u, f(x)>` along `v`, estimated by central finite
differences in float64, with `sum_i <vjp_i(u), v_i>` from fusegrad's autograd.
With `order=2` it also checks the VJP itself (built with `create_graph=True`)
the same way, which exercises second derivatives.

Only NumPy and fusegrad are used, so these checks run without torch.
"""
from __future__ import annotations

import numpy as np

import fusegrad as fg


def _to_fg(array: np.ndarray, requires_grad: bool) -> "fg.Tensor":
    return fg.tensor(np.array(array, dtype=np.float64), dtype=fg.float64, requires_grad=requires_grad)


def _inner(out: "fg.Tensor", u: np.ndarray) -> float:
    """<u, out> as a Python float (works for 0-d outputs too)."""
    return float(np.sum(np.asarray(out.detach().numpy(), dtype=np.float64) * u))


def _numeric_directional(f, arrays, directions, u, eps) -> float:
    """(<u, f(x + eps v)> - <u, f(x - eps v)>) / (2 eps), evaluated without autograd."""
    plus = [_to_fg(a + eps * v, False) for a, v in zip(arrays, directions)]
    minus = [_to_fg(a - eps * v, False) for a, v in zip(arrays, directions)]
    return (_inner(f(*plus), u) - _inner(f(*minus), u)) / (2 * eps)


def _vjp(f, arrays, u, create_graph=False, inputs=None):
    """fusegrad's VJP of `f` at `arrays` with cotangent `u`; unused inputs give zeros."""
    if inputs is None:
        inputs = [_to_fg(a, True) for a in arrays]
    out = f(*inputs)
    zeros = [fg.zeros_like(x) for x in inputs]
    if not out.requires_grad:
        # Constant in every input (e.g. the VJP of a linear map): all gradients are zero.
        return zeros
    grads = fg.autograd.grad(out, inputs, grad_outputs=fg.tensor(u, dtype=fg.float64),
                             create_graph=create_graph, allow_unused=True)
    return [z if g is None else g for g, z in zip(grads, zeros)]


def check_grads(f, *args, order: int = 1, eps: float = 1e-6, rtol: float = 1e-5,
                atol: float = 1e-7, seed: int = 0) -> None:
    """Assert that fusegrad's gradients of `f` at `args` match central finite differences.

    `f` maps float64 fusegrad tensors (one per element of `args`, which are
    array-likes) to a fusegrad tensor of any shape. `order=2` also checks the
    derivative of the VJP (second-order reverse mode through `create_graph`).
    """
    rng = np.random.default_rng(seed)
    arrays = [np.array(a, dtype=np.float64) for a in args]
    out_shape = tuple(f(*[_to_fg(a, False) for a in arrays]).shape)
    u = rng.standard_normal(out_shape)
    directions = [rng.standard_normal(a.shape) for a in arrays]

    grads = _vjp(f, arrays, u)
    for g, a in zip(grads, arrays):
        assert tuple(g.shape) == a.shape, f"gradient shape {tuple(g.shape)} != argument shape {a.shape}"
    analytic = sum(float(np.sum(g.detach().numpy() * v)) for g, v in zip(grads, directions))
    numeric = _numeric_directional(f, arrays, directions, u, eps)
    scale = max(abs(analytic), abs(numeric))
    assert abs(analytic - numeric) <= atol + rtol * scale, (
        f"directional derivative: reverse mode gives {analytic!r}, finite differences {numeric!r}")

    if order >= 2:
        # The VJP contracted with a fixed random w is a scalar function of the
        # inputs; its own gradient must match finite differences too.
        w = [rng.standard_normal(a.shape) for a in arrays]

        def vjp_dot_w(*xs):
            if not all(x.requires_grad for x in xs):
                # Called by the finite differences: differentiate at fresh leaves.
                xs = [x.detach().requires_grad_() for x in xs]
            gs = _vjp(f, None, u, create_graph=True, inputs=list(xs))
            total = None
            for g, wi in zip(gs, w):
                term = (g * fg.tensor(wi, dtype=fg.float64)).sum()
                total = term if total is None else total + term
            return total

        check_grads(vjp_dot_w, *arrays, order=order - 1, eps=eps, rtol=rtol * 10, atol=atol * 10,
                    seed=seed + 1)
