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
from fusegrad.tracer.creation import empty, zeros_like
from fusegrad.tracer.functional import stack
from fusegrad.tracer.engine import backward, explain
from fusegrad.tracer.grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
from fusegrad.tracer.custom_function import Function, FunctionCtx, once_differentiable  # noqa: F401  (custom functions)
from fusegrad.tracer.tensor import Size, Tensor
from fusegrad.tracer.parser_errors import type_name
from fusegrad.tracer.user_frame import user_stacklevel

__all__ = ["backward", "grad", "explain", "Function", "FunctionCtx", "no_grad", "enable_grad", "set_grad_enabled",
           "inference_mode", "grad_mode",
           "gradcheck", "gradgradcheck", "GradcheckError", "Variable", "detect_anomaly", "set_detect_anomaly"]


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
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                      "gradient for other parts of the graph, please use torch.autograd.backward.",
                      FutureWarning, stacklevel=user_stacklevel())
    # (as torch: the outputs are made a tuple first; anything but a tensor is iterated, so a
    # float raises "'float' object is not iterable", before the inputs are looked at)
    outputs_tuple = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
    if isinstance(inputs, (Tensor, engine.GradientEdge)):
        inputs_tuple = (inputs,)        # (a GradientEdge is a tuple itself: one input, as torch's)
    elif type(inputs) is dict:
        inputs_tuple = tuple(inputs.values())
    elif isinstance(inputs, Mapping):
        raise TypeError(f"`inputs` argument to `grad()` must be a dict, not {type_name(inputs)}. "
                        "Other Mapping types are not supported.")
    else:
        inputs_tuple = tuple(inputs)
    if len(inputs_tuple) == 0:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    for out in outputs_tuple:
        if not isinstance(out, Tensor):
            raise AssertionError("Expected output to be a torch.Tensor")      # torch's check and text
    outputs = outputs if isinstance(outputs, Tensor) else outputs_tuple     # (an iterator is read once)
    if is_grads_batched:
        result = _batched_grad(outputs, list(inputs_tuple), grad_outputs, retain_graph, create_graph, allow_unused)
    else:
        result = engine.grad(outputs, list(inputs_tuple), grad_outputs, retain_graph, create_graph,
                             allow_unused=allow_unused)
    if materialize_grads:
        result = tuple(g if g is not None else zeros_like(x, requires_grad=create_graph)
                       for g, x in zip(result, inputs_tuple))
    if type(inputs) is dict:
        return dict(zip(inputs.keys(), result))
    return result


def _batched_grad(outputs, inputs: list, grad_outputs, retain_graph, create_graph: bool, allow_unused: bool):
    """`grad` with is_grads_batched=True: the first dim of each grad_output is a batch of
    vectors, and each input's result has that batch dim in front. torch maps the backward
    over the batch with vmap; this runs it once per vector (retaining the graph between
    them) and stacks the results: the same values, and differentiable under create_graph."""
    outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    seeds = [grad_outputs] if isinstance(grad_outputs, Tensor) else \
        [None] * len(outs) if grad_outputs is None else list(grad_outputs)
    if len(seeds) != len(outs):         # (the engine's own text for the lengths)
        return engine.grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused=allow_unused)
    for k, (out, seed) in enumerate(zip(outs, seeds)):
        if seed is None:
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            raise ValueError("vmap(vjp, in_dims=0, ...)(<inputs>): Got in_dim=0 for some input, but that input is "
                             "a Tensor of dimensionality 0 so expected in_dim to satisfy 0 <= in_dim < 0.")
        if not isinstance(seed, Tensor) or seed.dim() == 0 or tuple(seed.shape[1:]) != tuple(out.shape):
            shape = Size(seed.shape[1:]) if isinstance(seed, Tensor) else type_name(seed)
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each grad_output as the batch "
                "dimension. The sizes of the remaining dimensions are expected to match the shape of "
                f"corresponding output, but a mismatch was detected: grad_output[{k}] has a shape of {shape!r} "
                f"and output[{k}] has a shape of {Size(out.shape)!r}. If you only want some tensors in "
                "`grad_output` to be considered batched, consider using vmap.")
    sizes = [seed.shape[0] for seed in seeds]
    if len(set(sizes)) > 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    batch = sizes[0]
    keep = create_graph if retain_graph is None else retain_graph
    rows = [engine.grad(outputs, inputs, [seed[b] for seed in seeds], True if b < batch - 1 else keep,
                        create_graph, allow_unused=allow_unused) for b in range(batch)]
    if not rows:                        # (an empty batch: no backward runs)
        return tuple(zeros_like(x).unsqueeze(0)[:0] for x in inputs)
    return tuple(None if column[0] is None else stack(list(column)) for column in zip(*rows))


from fusegrad import autograd_functional as functional  # noqa: E402  (torch.autograd.functional)
from fusegrad import autograd_graph as graph  # noqa: E402  (torch.autograd.graph: saved-tensor hooks, Node)
from fusegrad import autograd_forward_ad as forward_ad  # noqa: E402  (torch.autograd.forward_ad: dual tensors)
from fusegrad.autograd_gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: E402
from fusegrad.autograd_anomaly import detect_anomaly, set_detect_anomaly  # noqa: E402


class _VariableMeta(type):
    """isinstance(t, Variable) holds for every tensor, as torch's."""

    def __instancecheck__(cls, instance) -> bool:
        return isinstance(instance, Tensor)


class Variable(metaclass=_VariableMeta):
    """torch.autograd.Variable (deprecated): `Variable(t, requires_grad=False)` is a tensor over
    t's memory without its history (t.detach()) that requires grad as asked; `Variable()` an
    empty float32 tensor."""

    def __new__(cls, data=None, requires_grad: bool = False, volatile: bool = False):
        if data is None:
            return empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type_name(data)}")
        return data.detach().requires_grad_(requires_grad)
