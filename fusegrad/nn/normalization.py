"""torch.nn's normalisation layers: batch_norm, instance_norm, group_norm, rms_norm,
local_response_norm and their modules (BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d, GroupNorm,
RMSNorm, LocalResponseNorm).

batch_norm and group_norm are one composite op each (ir/ops/batch_norm.py: torch's
NativeBatchNormBackward0 / NativeGroupNormBackward0 nodes); instance_norm is torch's
batch_norm of the input viewed as (1, N * C, *) (ViewBackward0 of NativeBatchNormBackward0);
rms_norm and local_response_norm are torch's compositions of elementwise ops and a mean.
The running statistics are updated in place, under no_grad, as torch's kernel updates them:
momentum * batch statistic + (1 - momentum) * running, the variance unbiased, in float64.
"""
from __future__ import annotations

import warnings

import numpy as np

import fusegrad as fg
from fusegrad.tracer.dispatch import apply_op

from . import functional as F
from . import init
from .module import Module, Parameter

__all__ = ["batch_norm", "instance_norm", "group_norm", "rms_norm", "local_response_norm",
           "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
           "GroupNorm", "RMSNorm", "LocalResponseNorm"]


def _verify_batch_size(size, text: str) -> None:
    """torch's check that batch statistics see more than one value per channel."""
    prod = size[0]
    for s in size[2:]:
        prod *= s
    if prod == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {text}")


def _native_batch_norm(input, weight, bias, running_mean, running_var, training: bool, momentum: float,
                       eps: float):
    """torch.batch_norm (at::batch_norm): the native checks, one batch_norm op, and in training
    the in-place update of the running statistics that are given."""
    F._check_tensor_args("batch_norm", input=input)
    if input.numel() == 0:
        # at::_batch_norm_impl_index's empty input, before any check: a clone, times weight[0]
        # and plus bias[0] where given (CloneBackward0 / MulBackward0 / AddBackward0; select's
        # IndexError for an empty weight), the running statistics left alone
        out = input.clone()
        if weight is not None:
            out = out * fg.select(weight, 0, 0)
        if bias is not None:
            out = out + fg.select(bias, 0, 0)
        return out
    channels = input.size(1)
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if t is not None:
            if t.numel() != channels:
                raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()}")
        elif not training:
            raise RuntimeError(f"{name} must be defined in evaluation mode")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != channels:
            raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()}")
    if (running_mean is None) != (running_var is None):
        # (batch_norm_cpu's check, after the size checks and before the dtype checks)
        raise ValueError("running_mean and running_var must either both be None or neither be None")
    F._check_parameter_dtypes(input, [t for t in (weight, bias, running_mean, running_var) if t is not None])
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"batch_norm\" not implemented for '{F._dtype_name(input.dtype)}'")
    dtype = input.dtype.np

    def per_channel(t, fill):
        # (torch's node saves the tensor itself: a view of it would be named as a view when an
        # in-place change of it stops the backward)
        if t is None:
            return fill(channels, dtype)
        return t if tuple(t.shape) == (channels,) else t.reshape(channels)
    operands = [input, per_channel(weight, np.ones), per_channel(bias, np.zeros)]
    if not training:
        operands += [running_mean.detach().reshape(channels), running_var.detach().reshape(channels)]
    out = apply_op("batch_norm", operands, {"training": bool(training), "eps": float(eps)},
                   "NativeBatchNormBackward0")
    if training and (running_mean is not None or running_var is not None) and input.numel():
        axes = [0] + list(range(2, input.dim()))
        with fg.no_grad():
            wide = input.detach().double()
            for stat, value in ((running_mean, lambda: wide.mean(axes)),
                                (running_var, lambda: wide.var(axes, correction=1))):
                if stat is not None:
                    updated = value() * momentum + stat.double().reshape(channels) * (1 - momentum)
                    stat.copy_(updated.reshape(stat.shape))
    return out


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5):
    """Normalise each channel (dim 1) of `input` by the batch's mean and biased variance when
    `training` (updating `running_mean`/`running_var` in place, when given, with `momentum`
    and the unbiased variance), else by the running statistics; then scale by `weight` and
    shift by `bias` (NativeBatchNormBackward0, as torch)."""
    if training:
        _verify_batch_size(input.size(), F._torch_size(input))
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    elif eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    return _native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats: bool = True, momentum: float = 0.1, eps: float = 1e-5):
    """Normalise each (sample, channel) of `input` over its spatial dims, as torch's
    at::instance_norm: batch_norm of the input viewed as (1, N * C, *) with the per-channel
    vectors repeated N times, viewed back (ViewBackward0); running statistics, when given,
    take the batch average of the per-instance update."""
    if use_input_stats:
        size = input.size()
        prod = 1
        for s in size[2:]:
            prod *= s
        if prod == 1:
            raise ValueError("Expected more than 1 spatial element when training, got input size "
                             f"{F._torch_size(input)}")
    return _instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def _instance_norm(input, running_mean, running_var, weight, bias, use_input_stats: bool, momentum: float,
                   eps: float):
    """torch's at::instance_norm (torch.instance_norm): instance_norm without F's Python check of
    the spatial size."""
    # (one statistic without the other is batch_norm's ValueError, after its size checks and
    # skipped for an empty input, as at::instance_norm leaves it to at::batch_norm)
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
    n, c = input.size(0), input.size(1)
    shape = (1, n * c) + tuple(input.shape[2:])
    reshaped = input.contiguous().view(*shape)

    def repeated(t):
        return None if t is None else t.repeat(n)
    mean_, var_ = repeated(running_mean), repeated(running_var)
    out = _native_batch_norm(reshaped, repeated(weight), repeated(bias), mean_, var_, use_input_stats,
                             momentum, eps)
    with fg.no_grad():
        for stat, copy in ((running_mean, mean_), (running_var, var_)):
            if stat is not None:
                stat.copy_(copy.view(n, c).mean(0))
    return out.view(*input.shape)


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5):
    """Normalise each sample's `num_groups` groups of channels by their own mean and biased
    variance, then scale and shift per channel (NativeGroupNormBackward0, as torch)."""
    F._check_tensor_args("group_norm", input=input)
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    size = list(input.size())
    _verify_batch_size([size[0] * size[1] // num_groups, num_groups] + size[2:],
                       str([size[0] * size[1] // num_groups, num_groups] + size[2:]))
    channels = size[1]
    if channels % num_groups != 0:
        raise RuntimeError("Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {size} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != channels):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, "
                               f"but got {name} of shape {list(t.shape)} and input of shape {size}")
    F._check_parameter_dtypes(input, [t for t in (weight, bias) if t is not None])
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"group_norm\" not implemented for '{F._dtype_name(input.dtype)}'")
    dtype = input.dtype.np
    operands = [input, weight if weight is not None else np.ones(channels, dtype),
                bias if bias is not None else np.zeros(channels, dtype)]
    return apply_op("group_norm", operands, {"groups": int(num_groups), "eps": float(eps)},
                    "NativeGroupNormBackward0")


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """input * rsqrt(mean(input**2 over the trailing `normalized_shape` dims) + eps), times
    `weight`, as torch's composite (MulBackward0 of RsqrtBackward0 ...); eps None is the
    machine epsilon of the input's dtype (torch's default)."""
    F._check_tensor_args("rms_norm", input=input)
    if isinstance(normalized_shape, (int, np.integer)) and not isinstance(normalized_shape, bool):
        normalized_shape = (normalized_shape,)
    shape = tuple(int(s) for s in normalized_shape)
    if not shape:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           "element, but got normalized_shape = []")
    if input.dim() < len(shape) or tuple(input.shape[input.dim() - len(shape):]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*{', '.join(map(str, shape))}], but got input of size{list(input.shape)}")
    if weight is not None and tuple(weight.shape) != shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got weight of shape "
                           f"{list(weight.shape)} and normalized_shape = {list(shape)}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"rms_norm\" not implemented for '{F._dtype_name(input.dtype)}'")
    if eps is None:
        eps = float(np.finfo(input.dtype.np).eps)
    dims = tuple(range(-len(shape), 0))
    scale = input.pow(2).mean(dims, keepdim=True).add(eps).rsqrt()
    result = input.mul(scale)
    result = result if weight is None else result.mul(weight)
    # torch's composite ends in .contiguous(): a result laid out as a permuted input is (a
    # CloneBackward0 over the last mul), a row-major one is itself
    return result.contiguous()


def local_response_norm(input, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
    """input / (k + alpha * avg of input**2 over a window of `size` channels) ** beta, the
    window zero-padded (size // 2 before, (size - 1) // 2 after) and averaged over `size` as
    torch's avg_pool (counting the padding); DivBackward0 as torch. The window's sum is taken
    by adding `size` shifted slices of the padded squares."""
    F._check_tensor_args("local_response_norm", input=input)
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input.mul(input)
    channels = input.shape[1]
    before, after = size // 2, (size - 1) // 2
    rest = tuple(input.shape[2:])
    parts = [fg.zeros((input.shape[0], pad) + rest, dtype=input.dtype) for pad in (before,) if pad]
    parts.append(div)
    if after:
        parts.append(fg.zeros((input.shape[0], after) + rest, dtype=input.dtype))
    padded = fg.cat(parts, 1) if len(parts) > 1 else div
    window = padded.narrow(1, 0, channels)
    for shift in range(1, size):
        window = window + padded.narrow(1, shift, channels)
    div = (window / size).mul(alpha).add(k).pow(beta)
    return input / div


# ---- modules -----------------------------------------------------------------

def _affine_parameters(module, size: int, affine: bool, bias: bool, dtype, device) -> None:
    """A normalisation's `weight` and `bias` Parameters of `size` elements (uninitialised: its
    reset_parameters fills them), or None for each it lacks: both without `affine`, the
    bias without `bias` (torch's _NormBase and GroupNorm)."""
    module.register_parameter("weight", Parameter(fg.empty(size, dtype=dtype, device=device)) if affine else None)
    module.register_parameter("bias", Parameter(fg.empty(size, dtype=dtype, device=device))
                              if affine and bias else None)


class _NormBase(Module):
    """torch's _NormBase: weight (ones) and bias (zeros) when `affine`; running_mean (zeros),
    running_var (ones) and num_batches_tracked (int64 0) buffers when `track_running_stats`."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _affine_parameters(self, num_features, affine, bias, dtype, device)
        if track_running_stats:
            self.register_buffer("running_mean", fg.zeros(num_features, dtype=dtype, device=device))
            self.register_buffer("running_var", fg.ones(num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", fg.tensor(0, dtype=fg.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    _version = 2        # (torch's: version 2 added num_batches_tracked)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        """torch's: a state dict from before version 2 (or without metadata: a dict built by
        hand) may lack num_batches_tracked, which then keeps its value."""
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = self.num_batches_tracked if self.num_batches_tracked is not None \
                    else fg.tensor(0, dtype=fg.int64)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def reset_running_stats(self) -> None:
        """Zero running_mean and num_batches_tracked, fill running_var with ones."""
        if self.track_running_stats:
            with fg.no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """Reset the running statistics, weight to ones and bias to zeros."""
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input) -> None:
        raise NotImplementedError

    def extra_repr(self) -> str:
        """torch's: "3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True"."""
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    def forward(self, input):
        """F.batch_norm with the batch's statistics in training (counting the batch in
        num_batches_tracked; momentum None: the cumulative average, 1 / num_batches_tracked,
        a value read, so a graph break inside fg.compile) or the running ones in eval mode."""
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with fg.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked)
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return batch_norm(input, self.running_mean if keep else None, self.running_var if keep else None,
                          self.weight, self.bias, use_batch, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of a (N, C) or (N, C, L) input (torch.nn.BatchNorm1d)."""

    def _check_input_dim(self, input) -> None:
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of a (N, C, H, W) input (torch.nn.BatchNorm2d)."""

    def _check_input_dim(self, input) -> None:
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of a (N, C, D, H, W) input (torch.nn.BatchNorm3d)."""

    def _check_input_dim(self, input) -> None:
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class _InstanceNorm(_NormBase):
    _no_batch_dim = 0

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input_dim(self, input) -> None:
        low = self._no_batch_dim
        if input.dim() not in (low, low + 1):
            raise ValueError(f"expected {low}D or {low + 1}D input (got {input.dim()}D input)")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        """torch's: a state dict without metadata holding running statistics for a module that
        tracks none (a checkpoint from before torch 0.4) is an error naming them; they are dropped."""
        if local_metadata.get("version", None) is None and not self.track_running_stats:
            keys = [prefix + name for name in ("running_mean", "running_var") if prefix + name in state_dict]
            if keys:
                error_msgs.append(
                    "Unexpected running stats buffer(s) {names} for {klass} with track_running_stats=False. If "
                    "state_dict is a checkpoint saved before 0.4.0, this may be expected because {klass} does not "
                    "track running stats by default since 0.4.0. Please remove these keys from state_dict. If the "
                    "running stats are actually needed, instead set track_running_stats=True in {klass} to enable "
                    "them. See the documentation of {klass} for details.".format(
                        names=" and ".join(f'"{k}"' for k in keys), klass=type(self).__name__))
                for key in keys:
                    state_dict.pop(key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def _apply_instance_norm(self, input):
        return instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                             self.training or not self.track_running_stats,
                             self.momentum if self.momentum is not None else 0.0, self.eps)

    def forward(self, input):
        """F.instance_norm (an unbatched input gains a batch dim for it); torch's error (affine)
        or warning when the channel count differs from num_features."""
        self._check_input_dim(input)
        feature_dim = input.dim() - self._no_batch_dim
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features"
                                 f" ({self.num_features}), but got: {input.size(feature_dim)}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can silence this "
                          "warning by not passing in num_features, which is not used because affine=False",
                          stacklevel=2)
        if input.dim() == self._no_batch_dim:
            return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)
        return self._apply_instance_norm(input)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of a (N, C, L) or (C, L) input (torch.nn.InstanceNorm1d)."""
    _no_batch_dim = 2


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of a (N, C, H, W) or (C, H, W) input (torch.nn.InstanceNorm2d)."""
    _no_batch_dim = 3


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of a (N, C, D, H, W) or (C, D, H, W) input (torch.nn.InstanceNorm3d)."""
    _no_batch_dim = 4


class GroupNorm(Module):
    """Group normalisation (F.group_norm) with per-channel weight (ones) and bias (zeros)."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine_parameters(self, num_channels, affine, bias, dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight to ones, bias to zeros."""
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        """F.group_norm(input, num_groups, weight, bias, eps)."""
        return group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        """torch's: "2, 4, eps=1e-05, affine=True, bias=True"."""
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """RMS normalisation over the trailing `normalized_shape` dims (F.rms_norm) with an
    elementwise weight (ones) unless elementwise_affine=False; eps None: the dtype's epsilon."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        if isinstance(normalized_shape, (int, np.integer)):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(fg.empty(self.normalized_shape, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight to ones."""
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x):
        """F.rms_norm(x, normalized_shape, weight, eps)."""
        return rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        """torch's: "(4,), eps=None, elementwise_affine=True"."""
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class LocalResponseNorm(Module):
    """F.local_response_norm as a module."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        """F.local_response_norm(input, size, alpha, beta, k)."""
        return local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        """torch's: "2, alpha=0.0001, beta=0.75, k=1.0"."""
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


batch_norm = F._accepting_arrays(batch_norm)
instance_norm = F._accepting_arrays(instance_norm)
group_norm = F._accepting_arrays(group_norm)
rms_norm = F._accepting_arrays(rms_norm)
local_response_norm = F._accepting_arrays(local_response_norm)
