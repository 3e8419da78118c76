"""fg.autograd.gradcheck and gradgradcheck: torch.autograd's finite-difference checks.

`gradcheck(func, inputs)` compares, for every output that requires grad and every input that
does, the Jacobian reverse mode gives (one `autograd.grad` per output element) with central
finite differences (each input element moved by +-eps in place, through `.data`, so no version
counter moves), as torch's slow mode does: `|analytical - numerical| <= atol + rtol *
|numerical|` everywhere, else `GradcheckError` (a RuntimeError) with torch's text, or False
with `raise_exception=False`. `gradgradcheck` runs gradcheck on the function that maps the
inputs and cotangents to the first derivatives (taken with create_graph=True).

torch's further checks (batched gradients, forward mode, undefined gradients, fast mode) are
not made; their flags are accepted.
"""
from __future__ import annotations

import warnings

import numpy as np

from fusegrad.ir.types import float64
from fusegrad.tracer.creation import rand, zeros_like
from fusegrad.tracer.grad_mode import no_grad
from fusegrad.tracer.tensor import Tensor
from fusegrad.tracer.user_frame import user_stacklevel

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]


class GradcheckError(RuntimeError):
    """A gradient check failed (torch.autograd.gradcheck.GradcheckError)."""


def _as_tuple(x) -> tuple:
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _differentiable(outputs) -> list:
    """The outputs that require grad (integer results and detached ones take no part)."""
    return [o for o in _as_tuple(outputs) if isinstance(o, Tensor) and o.requires_grad]


def _numerical_jacobians(func, inputs: tuple, wrt: list, n_outputs: list, eps: float) -> list:
    """Per input in `wrt`: per output, the (input numel, output numel) float64 Jacobian by central
    differences; the input's element is moved in its own memory (through .data, so no version
    counter moves) and restored."""
    jacobians = []
    for t in wrt:
        rows = [np.zeros((t.numel(), n)) for n in n_outputs]
        memory = t.data
        for j in range(t.numel()):
            index = np.unravel_index(j, tuple(t.shape)) if t.dim() else ()
            original = memory[index].item()
            values = []
            for step in (eps, -eps):
                with no_grad():
                    memory[index] = original + step
                values.append([np.asarray(o.detach().numpy(), np.float64).reshape(-1)
                               for o in _differentiable(func(*inputs))])
            with no_grad():
                memory[index] = original
            for k, (plus, minus) in enumerate(zip(*values)):
                rows[k][j] = (plus - minus) / (2 * eps)
        jacobians.append(rows)
    return jacobians


def _analytical_jacobians(outputs: list, wrt: list) -> list:
    """Per input, per output: the (input numel, output numel) Jacobian, one reverse pass per
    output element (autograd.grad with a one-hot cotangent)."""
    from fusegrad.autograd import grad
    jacobians = [[np.zeros((t.numel(), o.numel())) for o in outputs] for t in wrt]
    for k, o in enumerate(outputs):
        for m in range(o.numel()):
            cotangent = zeros_like(o)
            with no_grad():
                cotangent[np.unravel_index(m, tuple(o.shape)) if o.dim() else ()] = 1
            grads = grad(o, wrt, cotangent, retain_graph=True, allow_unused=True)
            for i, g in enumerate(grads):
                if g is not None:
                    jacobians[i][k][:, m] = np.asarray(g.detach().numpy(), np.float64).reshape(-1)
    return jacobians


def _jacobian_text(jacobian: np.ndarray) -> str:
    return repr(Tensor._wrap(np.ascontiguousarray(jacobian)))


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0, check_undefined_grad: bool = True,
              check_grad_dtypes: bool = False, check_batched_grad: bool = False,
              check_batched_forward_grad: bool = False, check_forward_ad: bool = False,
              check_backward_ad: bool = True, fast_mode: bool = False, masked=None) -> bool:
    """torch.autograd.gradcheck: whether reverse mode's Jacobian of `func` at `inputs` (a
    tensor or a tuple; the ones that require grad are checked, best in float64) matches
    central finite differences within `atol + rtol * |numerical|`; raises GradcheckError
    with both Jacobians otherwise (returns False with `raise_exception=False`)."""
    inputs = _as_tuple(inputs)
    wrt = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    if not wrt:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of them "
                         "have requires_grad=True.")
    for k, t in enumerate(inputs):
        if isinstance(t, Tensor) and t.requires_grad and t.dtype is not float64:
            warnings.warn(f"Input #{k} requires gradient and is not a double precision floating point or complex. "
                          "This check will likely fail if all the inputs are not of double precision floating "
                          "point or complex. ", UserWarning, stacklevel=user_stacklevel())
    outputs = _differentiable(func(*inputs))
    if not outputs:
        return True
    numerical = _numerical_jacobians(func, inputs, wrt, [o.numel() for o in outputs], eps)
    analytical = _analytical_jacobians(outputs, wrt)
    for i in range(len(wrt)):
        for k in range(len(outputs)):
            a, n = analytical[i][k], numerical[i][k]
            if not np.all(np.abs(a - n) <= atol + rtol * np.abs(n)):
                if not raise_exception:
                    return False
                raise GradcheckError(f"Jacobian mismatch for output {k} with respect to input {i},\n"
                                     f"numerical:{_jacobian_text(n)}\nanalytical:{_jacobian_text(a)}\n")
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True,
                  nondet_tol: float = 0.0, check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
                  check_batched_grad: bool = False, check_fwd_over_rev: bool = False,
                  check_rev_over_rev: bool = True, fast_mode: bool = False, masked: bool = False) -> bool:
    """torch.autograd.gradgradcheck: gradcheck of the map from (inputs, cotangents) to the
    first derivatives of `func` (autograd.grad with create_graph=True), which checks second
    derivatives; the cotangents are `grad_outputs`, or uniform in [-1, 1) from fusegrad's
    generator, requiring grad."""
    from fusegrad.autograd import grad
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        outputs = _differentiable(func(*inputs))
        grad_outputs = tuple((rand(tuple(o.shape), dtype=o.dtype) * 2 - 1).requires_grad_() for o in outputs)
    grad_outputs = _as_tuple(grad_outputs)
    count = len(grad_outputs)

    def first_derivatives(*args):
        given, cotangents = args[:-count], args[-count:]
        outputs = _differentiable(func(*given))
        wrt = tuple(x for x in given if isinstance(x, Tensor) and x.requires_grad)
        grads = grad(outputs, wrt, cotangents, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivatives, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
