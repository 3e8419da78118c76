"""fg.autograd: `backward` and `grad`, as torch.autograd.

`grad` is torch.autograd.grad's public signature over the engine's
`tracer.engine.grad`: it reads the arguments as torch does (a dict of inputs
gives a dict back, `allow_unused=None` follows `materialize_grads`), raises
torch's errors for an empty `inputs` and contradictory flags, and
materializes unused gradients as torch does (zeros that require grad under
`create_graph`). The grad-mode managers live here too, as in torch.autograd.
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping

from fusegrad.tracer import engine
from fusegrad.tracer import grad_mode  # noqa: F401  (torch.autograd.grad_mode)
from fusegrad.tracer.creation import zeros_like
from fusegrad.tracer.engine import backward, explain
from fusegrad.tracer.grad_mode import enable_grad, no_grad, set_grad_enabled
from fusegrad.tracer.custom_function import Function, FunctionCtx  # noqa: F401  (custom functions)
from fusegrad.tracer.tensor import Tensor
from fusegrad.tracer.parser_errors import type_name
from fusegrad.tracer.user_frame import user_stacklevel

__all__ = ["backward", "grad", "explain", "Function", "FunctionCtx", "no_grad", "enable_grad", "set_grad_enabled", "grad_mode"]


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph: bool = False,
         only_inputs: bool = True, allow_unused: bool | None = None, is_grads_batched: bool = False,
         materialize_grads: bool = False):
    """The gradients of `outputs` with respect to `inputs`, as a tuple (a dict when
    `inputs` is a dict); no `.grad` is touched.

    `grad_outputs` holds the vector of the vector-Jacobian product (needed for
    outputs of more than one element); `create_graph=True` makes the results
    differentiable; an input that no output depends on raises unless
    `allow_unused` (its result is None) or `materialize_grads` (zeros).
    """
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    if is_grads_batched:
        raise NotImplementedError("fg.autograd.grad does not support is_grads_batched=True")
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                      "gradient for other parts of the graph, please use torch.autograd.backward.",
                      FutureWarning, stacklevel=user_stacklevel())
    if isinstance(inputs, Tensor):
        inputs_tuple = (inputs,)
    elif type(inputs) is dict:
        inputs_tuple = tuple(inputs.values())
    elif isinstance(inputs, Mapping):
        raise TypeError(f"`inputs` argument to `grad()` must be a dict, not {type_name(inputs)}. "
                        "Other Mapping types are not supported.")
    else:
        inputs_tuple = tuple(inputs)
    if len(inputs_tuple) == 0:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    # (as torch: anything but a tensor is iterated, so a float raises "'float' object is not iterable")
    for out in ([outputs] if isinstance(outputs, Tensor) else tuple(outputs)):
        if not isinstance(out, Tensor):
            raise AssertionError("Expected output to be a torch.Tensor")      # torch's check and text
    result = engine.grad(outputs, list(inputs_tuple), grad_outputs, retain_graph, create_graph,
                         allow_unused=allow_unused)
    if materialize_grads:
        result = tuple(g if g is not None else zeros_like(x, requires_grad=create_graph)
                       for g, x in zip(result, inputs_tuple))
    if type(inputs) is dict:
        return dict(zip(inputs.keys(), result))
    return result
