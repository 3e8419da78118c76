"""torch.nn's channel-wise and alpha dropout: dropout1d/2d/3d, alpha_dropout,
feature_alpha_dropout and their modules (Dropout1d/2d/3d, AlphaDropout, FeatureAlphaDropout).

All follow torch's _dropout_impl: a noise tensor drawn by bernoulli(1 - p) (one draw per
element, or per (sample, channel) for the feature variants, whose noise has shape (N, C, 1, ...)
and broadcasts), then `input * noise` (MulBackward0). Plain noise is divided by 1 - p; alpha
noise keeps SELU's mean and variance: with alpha = 1.7580993408473766 and
a = 1 / sqrt((alpha**2 * p + 1) * (1 - p)), the result is input * noise * a + b where
b = (noise - 1) * alpha * a + alpha * a * p (AddBackward0). fusegrad's random stream is not
torch's, so the masks differ from torch's for one seed; their statistics do not.
"""
from __future__ import annotations

import math
import warnings

import fusegrad as fg
from fusegrad.tracer.dispatch import result_cast_error
from fusegrad.tracer.functional import bernoulli_draws
from fusegrad.tracer.user_frame import user_stacklevel

from . import functional as F
from .layers import _DropoutNd

__all__ = ["dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
           "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]

_SELU_ALPHA = 1.7580993408473766


def _check_p(p) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout_impl(input, p: float, training: bool, inplace: bool, feature: bool, alpha: bool):
    """torch's at::native _dropout_impl<feature_dropout, alpha_dropout, inplace>."""
    F._check_tensor_args("dropout", input=input)
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        zero = fg.zeros((), dtype=input.dtype)
        return input.mul_(zero) if inplace else input * zero
    if feature:
        if input.dim() < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    else:
        shape = tuple(input.shape)
    if not input.dtype.is_floating_point:       # (torch's in-place arithmetic on the integer noise)
        raise result_cast_error("Float", F._dtype_name(input.dtype))
    # (torch's noise: empty_like(input), drawn in input's memory order, or for whole features a
    # fresh row-major tensor of one element per (sample, channel))
    noise = bernoulli_draws(fg.empty(shape, dtype=input.dtype) if feature else fg.empty_like(input), 1 - p,
                            row_major=False)
    if not alpha:
        noise = noise / (1 - p)
        return input.mul_(noise) if inplace else input * noise
    a = 1.0 / math.sqrt((_SELU_ALPHA * _SELU_ALPHA * p + 1) * (1 - p))
    shift = (noise - 1) * (_SELU_ALPHA * a) + _SELU_ALPHA * a * p
    noise = noise * a
    out = input.mul_(noise) if inplace else input * noise
    return out.add_(shift)


def _feature_dropout(input, p, training, inplace):
    return _dropout_impl(input, p, training, inplace, feature=True, alpha=False)


def _channel_dropout(input, p, training, inplace, batched: bool):
    """_feature_dropout of a batched input; an unbatched one is given a batch dim of one for
    the draw and loses it after (in place for inplace=True, as torch's)."""
    if batched:
        return _feature_dropout(input, p, training, inplace)
    input = input.unsqueeze_(0) if inplace else input.unsqueeze(0)
    result = _feature_dropout(input, p, training, inplace)
    return result.squeeze_(0) if inplace else result.squeeze(0)


def dropout1d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels of a (N, C, L) or unbatched (C, L) input with probability p, scaling
    the others by 1 / (1 - p) (torch.nn.functional.dropout1d)."""
    _check_p(p)
    dim = input.dim()
    if dim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {dim}D input. Note that dropout1d "
                           "exists to provide channel-wise dropout on inputs with 1 spatial dimension, a channel "
                           "dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _channel_dropout(input, p, training, inplace, batched=dim == 3)


def dropout2d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels of a (N, C, H, W) input with probability p, scaling the others by
    1 / (1 - p); a 3-d input is taken as (N, C, L) with torch's warning, other ranks warn as
    deprecated (torch.nn.functional.dropout2d)."""
    _check_p(p)
    dim = input.dim()
    if dim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {dim}-D input to dropout2d, which is deprecated and will result in an "
                      "error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D "
                      "inputs).", stacklevel=user_stacklevel())
    if dim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior "
                      "will change in a future release to interpret the input as one without a batch dimension, i.e. "
                      "shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using "
                      "dropout1d instead.", stacklevel=user_stacklevel())
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels of a (N, C, D, H, W) or unbatched (C, D, H, W) input with
    probability p, scaling the others by 1 / (1 - p) (torch.nn.functional.dropout3d)."""
    _check_p(p)
    dim = input.dim()
    if dim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {dim}-D input to dropout3d, which is deprecated and will result in an "
                      "error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 4D or 5D "
                      "inputs).", stacklevel=user_stacklevel())
    return _channel_dropout(input, p, training, inplace, batched=dim == 5)


def alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    """Dropout that keeps a SELU network's mean and variance: dropped elements take SELU's
    negative saturation value, then an affine map restores the statistics (see the module
    docstring; torch.nn.functional.alpha_dropout, off unless `training`)."""
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, feature=False, alpha=True)


def feature_alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    """alpha_dropout of whole channels (one draw per (sample, channel))."""
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, feature=True, alpha=True)


class Dropout1d(_DropoutNd):
    """F.dropout1d as a module (active in training mode only)."""

    def forward(self, input):
        """F.dropout1d(input, p, training, inplace)."""
        return dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """F.dropout2d as a module (active in training mode only)."""

    def forward(self, input):
        """F.dropout2d(input, p, training, inplace)."""
        return dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """F.dropout3d as a module (active in training mode only)."""

    def forward(self, input):
        """F.dropout3d(input, p, training, inplace)."""
        return dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """F.alpha_dropout as a module (active in training mode only)."""

    def forward(self, input):
        """F.alpha_dropout(input, p, training)."""
        return alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """F.feature_alpha_dropout as a module (active in training mode only)."""

    def forward(self, input):
        """F.feature_alpha_dropout(input, p, training)."""
        return feature_alpha_dropout(input, self.p, self.training)


dropout1d = F._accepting_arrays(dropout1d)
dropout2d = F._accepting_arrays(dropout2d)
dropout3d = F._accepting_arrays(dropout3d)
alpha_dropout = F._accepting_arrays(alpha_dropout)
feature_alpha_dropout = F._accepting_arrays(feature_alpha_dropout)
