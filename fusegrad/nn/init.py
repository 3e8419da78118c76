"""In-place initialisers (torch.nn.init) drawing from fusegrad's RNG.

Each fills a tensor under `no_grad`, so it works on leaf Parameters that require
grad. The distributions, their bounds and the numbers drawn follow torch:
after the same `fg.manual_seed` / `torch.manual_seed`, a layer starts from
torch's weights (the generator is torch's, tracer/generator.py).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

import fusegrad as fg
from fusegrad.tracer.user_frame import user_stacklevel

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "zeros_", "ones_", "eye_",
           "dirac_", "kaiming_uniform_", "kaiming_normal_", "xavier_uniform_", "xavier_normal_", "orthogonal_",
           "sparse_", "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"]


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


def dirac_(tensor, groups: int = 1):
    """Fill a 3-, 4- or 5-d (convolution weight) tensor with the Dirac delta: zeros, and a 1 at
    the kernel's centre (index size // 2 in each spatial dim) of [g * out_per_group + d, d] for
    each group g and d < min(out_per_group, in_channels), so the convolution passes its input
    channels through; torch's errors for other ranks and for dim 0 not divisible by groups."""
    dimensions = tensor.dim()
    if dimensions not in [3, 4, 5]:
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_chans_per_grp = sizes[0] // groups
    centre = tuple(size // 2 for size in sizes[2:])
    value = np.zeros(sizes, dtype=tensor.dtype.np)
    for g in range(groups):
        for d in range(min(out_chans_per_grp, sizes[1])):
            value[(g * out_chans_per_grp + d, d) + centre] = 1
    return _fill(tensor, fg.tensor(value))


def orthogonal_(tensor, gain: float = 1, generator=None):
    """Fill `tensor` (2 or more dims, viewed as rows x the rest) with a (semi-)orthogonal
    matrix times `gain`, as torch: N(0, 1) draws (torch's numbers after the same seed), the
    Q of their reduced QR (of the transpose where rows < cols), each column's sign set by
    R's diagonal. The QR is LAPACK's, through NumPy (a graph break inside fg.compile)."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with fg.no_grad():
        flattened = tensor.new_empty((rows, cols)).normal_(0, 1, generator=generator).numpy()
    if rows < cols:
        flattened = flattened.T
    q, r = np.linalg.qr(flattened)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    with fg.no_grad():
        tensor.view(q.shape).copy_(fg.tensor(np.ascontiguousarray(q, dtype=tensor.dtype.np)))
        tensor.mul_(gain)
    return tensor


def sparse_(tensor, sparsity: float, std: float = 0.01, generator=None):
    """Fill a 2-d tensor with N(0, std**2) draws, then zero ceil(sparsity * rows) elements of
    each column, at the first rows of a `randperm(rows)` per column drawn from the global
    generator (as torch's, which ignores `generator` there)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    with fg.no_grad():
        tensor.normal_(0, std, generator=generator)
        mask = np.zeros((rows, cols), dtype=bool)
        for col_idx in range(cols):
            mask[fg.randperm(rows).numpy()[:num_zeros], col_idx] = True
        tensor.masked_fill_(fg.tensor(mask), 0)
    return tensor


def _make_deprecate(meth):
    """torch's deprecated alias without the trailing underscore: warns (FutureWarning), then calls `meth`."""
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.", FutureWarning,
                      stacklevel=2)
        return meth(*args, **kwargs)
    deprecated_init.__doc__ = f"`{old_name}` is deprecated: use `{new_name}` (same arguments)."
    deprecated_init.__name__ = old_name
    return deprecated_init


uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)
