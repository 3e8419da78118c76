"""In-place initialisers (torch.nn.init) drawing from fusegrad's RNG.

Each fills a tensor under `no_grad`, so it works on leaf Parameters that require
grad. The distributions, their bounds and the numbers drawn follow torch:
after the same `fg.manual_seed` / `torch.manual_seed`, a layer starts from
torch's weights (the generator is torch's, tracer/generator.py).
"""
from __future__ import annotations

import math
import warnings

import fusegrad as fg
from fusegrad.tracer.user_frame import user_stacklevel

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "zeros_", "ones_", "eye_",
           "kaiming_uniform_", "kaiming_normal_", "xavier_uniform_", "xavier_normal_"]


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for a nonlinearity (torch's table)."""
    linear_fns = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d", "sigmoid")
    if nonlinearity in linear_fns:
        return 1                # (an int, as torch's)
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _fill(tensor, value):
    with fg.no_grad():
        tensor.copy_(value)
    return tensor


def uniform_(tensor, a: float = 0.0, b: float = 1.0, generator=None):
    """Fill `tensor` with U(a, b) samples (from `generator`, else the global one); returns it."""
    with fg.no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean: float = 0.0, std: float = 1.0, generator=None):
    """Fill `tensor` with N(mean, std**2) samples (from `generator`, else the global one); returns it."""
    with fg.no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0, generator=None):
    """Fill `tensor` with N(mean, std**2) samples truncated to [a, b]: torch 2.13's algorithm and
    numbers. Where the interval holds over 0.3 of the mass, normal draws of the whole tensor, and
    redraws of the whole tensor kept where a value was outside; otherwise uniform proposals on
    [a, b] accepted by log(U) <= the log density over its peak, redrawn in whole-tensor rounds."""
    draws = {"generator": generator}

    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0
    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values "
                      "may be incorrect.", stacklevel=user_stacklevel())
    with fg.no_grad():
        p = norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std)
        if p > 0.3:
            # (the bounds as the tensor's dtype holds them, as torch's rejection mask compares)
            lo, hi = (float(tensor.dtype.np.type(v)) for v in (a, b))
            result = tensor.normal_(mean, std, **draws)
            while True:
                mask = (result < lo) | (result > hi)
                if not mask.any():
                    break
                result = fg.where(mask, fg.empty_like(result).normal_(mean, std, **draws), result)
            if tensor is not result:
                tensor.copy_(result)
        else:
            mode = max(a, min(mean, b))
            log_peak = -0.5 * ((mode - mean) / std) ** 2
            candidates = fg.empty_like(tensor)
            accept_buf = fg.empty_like(tensor)
            tensor.uniform_(a, b, **draws)
            candidates.copy_(tensor)
            candidates.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak)
            pending = accept_buf.uniform_(**draws).log_().gt(candidates)
            if pending.any():
                result = tensor
                while True:
                    candidates.uniform_(a, b, **draws)
                    result = fg.where(pending, candidates, result)
                    candidates.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak)
                    pending = fg.where(pending, accept_buf.uniform_(**draws).log_().gt(candidates), pending)
                    if not pending.any():
                        break
                tensor.copy_(result)
        return tensor


def constant_(tensor, val: float):
    """Fill `tensor` with `val`; returns it."""
    with fg.no_grad():
        tensor.fill_(val)
    return tensor


def zeros_(tensor):
    """Fill `tensor` with 0; returns it."""
    return constant_(tensor, 0.0)


def ones_(tensor):
    """Fill `tensor` with 1; returns it."""
    return constant_(tensor, 1.0)


def _calculate_fan_in_and_fan_out(tensor) -> tuple[int, int]:
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = 1
    for size in tensor.shape[2:]:
        receptive *= size
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def kaiming_uniform_(tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None):
    """He initialisation: U(-bound, bound), bound = gain * sqrt(3 / fan)."""
    if tensor.numel() == 0:
        # torch warns and leaves a zero-element tensor alone
        warnings.warn("Initializing zero-element tensors is a no-op", UserWarning, stacklevel=user_stacklevel())
        return tensor
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))
    return uniform_(tensor, -bound, bound, generator)


def _calculate_correct_fan(tensor, mode: str) -> int:
    """fan_in or fan_out of `tensor`, as `mode` (any case) names, with torch's error text."""
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def kaiming_normal_(tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None):
    """He initialisation: N(0, std**2), std = gain / sqrt(fan)."""
    if tensor.numel() == 0:
        warnings.warn("Initializing zero-element tensors is a no-op", UserWarning, stacklevel=user_stacklevel())
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def xavier_normal_(tensor, gain: float = 1.0, generator=None):
    """Glorot initialisation: N(0, std**2), std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def eye_(tensor):
    """Fill a 2-d tensor with the identity matrix (ones on the diagonal)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, fg.eye(*tensor.shape, dtype=tensor.dtype))


def xavier_uniform_(tensor, gain: float = 1.0, generator=None):
    """Glorot initialisation: U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)
