"""torch.nn.utils (its rnn submodule: rnn.py): gradient clipping (`clip_grad_norm_`, `clip_grad_value_`) and its
`parameters_to_vector` / `vector_to_parameters`; parametrizations (parametrize.py, parametrizations.py: weight and
spectral normalisation) and their older hook forms (norm_hooks.py); module fusion (fusion.py).

Both scale or clamp each parameter's `.grad` in place under `no_grad` with
public Tensor ops and never read a value back (the clip coefficient is
clamped, not compared), so a compiled training step traces them as ops.
"""
from __future__ import annotations

import math
import types
import warnings

import fusegrad as fg
from fusegrad.tracer.tensor import Tensor
from fusegrad.tracer.user_frame import user_stacklevel

from ..module import typename
from . import fusion, rnn  # noqa: E402,F401  (torch.nn.utils.rnn: pad_sequence, unpad_sequence)
from . import stateless  # noqa: E402,F401  (torch.nn.utils.stateless: functional_call, deprecated)
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights  # noqa: F401
from . import parametrizations, parametrize  # noqa: E402,F401  (torch.nn.utils.parametrize / parametrizations)
from .norm_hooks import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm  # noqa: F401

__all__ = ["rnn", "fusion", "clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm", "parameters_to_vector", "vector_to_parameters", "skip_init", "fuse_conv_bn_eval",
           "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights", "parametrize", "parametrizations",
           "weight_norm", "remove_weight_norm", "spectral_norm", "remove_spectral_norm"]


def _as_list(parameters) -> list:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """The `norm_type`-norm of all `tensors` together (as if concatenated into one vector)."""
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return fg.tensor(0.0)
    with fg.no_grad():
        if norm_type == math.inf:
            # max |x| written as ops with kernels (a compiled norm(inf) runs by reference)
            total = fg.stack([t.abs().max() for t in tensors]).max()
        else:
            total = fg.stack([t.norm(norm_type) for t in tensors]).norm(norm_type)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None) -> Tensor:
    """Scale the gradients in place so that their total norm is at most `max_norm`; returns the
    total norm before clipping (torch's formula: coef = max_norm / (norm + 1e-6), clamped at 1)."""
    is_generator = isinstance(parameters, types.GeneratorType)
    parameters = _as_list(parameters)
    if is_generator and not parameters:
        warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=user_stacklevel())
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None) -> Tensor:
    """torch's deprecated alias of clip_grad_norm_ (it warns, as torch's)."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def skip_init(module_cls, *args, **kwargs):
    """torch.nn.utils.skip_init: an instance of `module_cls` whose parameters were not initialised
    (their values are unspecified; fusegrad's hold the default initialisation), drawing no random
    numbers: the global generator's state is as before the call, as torch's (which builds the
    module on the meta device)."""
    import inspect
    from ..module import Module
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    state = fg.get_rng_state()
    try:
        return module_cls(*args, **kwargs)
    finally:
        fg.set_rng_state(state)


def clip_grads_with_norm_(parameters, max_norm: float, total_norm: Tensor, foreach=None) -> None:
    """Scale the gradients in place by max_norm / (total_norm + 1e-6), clamped at 1 (torch's
    clip_grads_with_norm_: clip_grad_norm_ with the total norm given)."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if grads:
        with fg.no_grad():
            coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
            for g in grads:
                g.mul_(coef)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient in place to [-clip_value, clip_value]."""
    clip_value = float(clip_value)
    with fg.no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)


def parameters_to_vector(parameters) -> Tensor:
    """The parameters flattened and concatenated into one vector (with their history), as torch's."""
    return fg.cat([param.view(-1) for param in parameters])


def vector_to_parameters(vec, parameters) -> None:
    """Copy consecutive slices of `vec` into the parameters' data, as torch's (through `.data`:
    no history, and each parameter then shares vec's memory)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {typename(vec)}")
    pointer = 0
    for param in parameters:
        count = param.numel()
        param.data = vec[pointer:pointer + count].view_as(param).data
        pointer += count


