"""torch's top-level forms of nn.functional's ops (torch.dropout, torch.kl_div, torch.batch_norm,
torch.embedding...): their aten signatures, which are not F's.

- Every argument is checked by torch's argument parser first (tracer/parser_errors.py's
  ArgParser over torch's printed signature), so a wrong type raises torch's TypeError text:
  `torch.dropout(x, 0.5)` misses `train`, `torch.kl_div(a, b, 'mean')` is refused (a
  reduction is an int here: 0 'none', 1 'mean', 2 'sum', any other int no reduction, as
  torch's apply_loss_reduction).
- The checks F does in Python and aten does not are left out (torch.batch_norm of one value
  per channel, torch.triplet_margin_loss of a margin <= 0, torch.kl_div's 'mean' warning);
  those aten does are kept, with its texts (torch.dropout's p: a RuntimeError, F's a ValueError;
  torch.constant_pad_nd's pad).
- torch.embedding takes the weight first and padding_idx -1 for none (only a row in range is
  kept from the gradient).
- torch.max_pool1d_with_indices and torch.adaptive_max_pool1d return (values, indices).
- The Tensor methods hardshrink, prelu, pinverse and matrix_exp are set on fg.Tensor here.
"""
from __future__ import annotations

import functools

from fusegrad.tracer.parser_errors import ArgParser, no_arguments
from fusegrad.tracer.tensor import Tensor

from fusegrad import linalg as _linalg
from fusegrad.nn import activations as _activations
from fusegrad.nn import dropout as _dropout
from fusegrad.nn import functional as F
from fusegrad.nn import losses as _losses
from fusegrad.nn import normalization as _normalization
from fusegrad.nn import padding as _padding
from fusegrad.nn import pooling as _pooling

__all__ = ["max_pool1d_with_indices", "adaptive_max_pool1d", "channel_shuffle", "native_channel_shuffle",
           "dropout", "dropout_", "alpha_dropout", "alpha_dropout_", "feature_dropout", "feature_dropout_",
           "feature_alpha_dropout", "feature_alpha_dropout_", "binary_cross_entropy_with_logits",
           "cosine_embedding_loss", "margin_ranking_loss", "hinge_embedding_loss", "triplet_margin_loss",
           "poisson_nll_loss", "kl_div", "batch_norm", "instance_norm", "rms_norm", "embedding",
           "constant_pad_nd", "pinverse", "matrix_exp"]

_REDUCTION_ENUM = {1: "mean", 2: "sum"}
# torch's Python binding takes a left-out reduction as 0, not its schema's 1 (Mean):
# torch.kl_div(a, b) is unreduced, torch.kl_div(a, b, 1) the mean
_NONE = 0


def _reduction(value: int) -> str:
    """An aten reduction int as F's name: 1 'mean', 2 'sum', any other 'none' (apply_loss_reduction)."""
    return _REDUCTION_ENUM.get(int(value), "none")


def _aten(signature: str):
    """The function, its arguments checked first by torch's parser for `signature` (its
    TypeError texts); its name is the parser's."""
    def wrap(fn):
        parser = ArgParser(fn.__name__, signature)

        @functools.wraps(fn)
        def parsed(*args, **kwargs):
            error = parser.error(args, kwargs)
            if error is not None:
                raise error
            return fn(*args, **kwargs)
        return parsed
    return wrap


# ---------------------------------------------------------------- pooling and shuffling

@_aten("(Tensor input, int[1] kernel_size, int[1]? stride = None, int[1] padding = 0, int[1] dilation = 1, "
       "bool ceil_mode = False)")
def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """torch.max_pool1d_with_indices: (values, indices) of a 1-d max pool (torch's C++ checks)."""
    return _pooling.max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)


@_aten("(Tensor input, int[1] output_size)")
def adaptive_max_pool1d(input, output_size):
    """torch.adaptive_max_pool1d: (values, indices), where F's returns the values alone."""
    return _pooling.adaptive_max_pool1d(input, output_size, True)


@_aten("(Tensor input, int groups)")
def channel_shuffle(input, groups):
    """torch.channel_shuffle (F.channel_shuffle: ChannelShuffleBackward0)."""
    return _padding.channel_shuffle(input, groups)


@_aten("(Tensor input, int groups)")
def native_channel_shuffle(input, groups):
    """torch.native_channel_shuffle: channel_shuffle's values, no derivative (NotImplemented)."""
    return _padding.native_channel_shuffle(input, groups)


# ---------------------------------------------------------------- dropout

def _check_p(p) -> None:
    if p < 0 or p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")


_DROPOUT = "(Tensor input, float p, bool train)"


@_aten(_DROPOUT)
def dropout(input, p, train):
    """torch.dropout(input, p, train): F.dropout's draws; a p outside [0, 1] is a RuntimeError."""
    _check_p(p)
    return F.dropout(input, p, train)


@_aten(_DROPOUT)
def dropout_(input, p, train):
    """torch.dropout_(input, p, train): F.dropout(..., inplace=True)."""
    _check_p(p)
    return F.dropout(input, p, train, True)


@_aten(_DROPOUT)
def alpha_dropout(input, p, train):
    """torch.alpha_dropout(input, p, train): F.alpha_dropout's draws."""
    _check_p(p)
    return _dropout._dropout_impl(input, p, train, False, feature=False, alpha=True)


@_aten(_DROPOUT)
def alpha_dropout_(input, p, train):
    """torch.alpha_dropout_(input, p, train): alpha_dropout in place."""
    _check_p(p)
    return _dropout._dropout_impl(input, p, train, True, feature=False, alpha=True)


@_aten(_DROPOUT)
def feature_dropout(input, p, train):
    """torch.feature_dropout(input, p, train): whole (sample, channel) slices dropped (F.dropout2d's
    draws, of an input of any rank from 2)."""
    _check_p(p)
    return _dropout._dropout_impl(input, p, train, False, feature=True, alpha=False)


@_aten(_DROPOUT)
def feature_dropout_(input, p, train):
    """torch.feature_dropout_(input, p, train): feature_dropout in place."""
    _check_p(p)
    return _dropout._dropout_impl(input, p, train, True, feature=True, alpha=False)


@_aten(_DROPOUT)
def feature_alpha_dropout(input, p, train):
    """torch.feature_alpha_dropout(input, p, train): F.feature_alpha_dropout's draws."""
    _check_p(p)
    return _dropout._dropout_impl(input, p, train, False, feature=True, alpha=True)


@_aten(_DROPOUT)
def feature_alpha_dropout_(input, p, train):
    """torch.feature_alpha_dropout_(input, p, train): feature_alpha_dropout in place."""
    _check_p(p)
    return _dropout._dropout_impl(input, p, train, True, feature=True, alpha=True)


# ---------------------------------------------------------------- losses (reduction an int)

@_aten("(Tensor input, Tensor target, Tensor? weight = None, Tensor? pos_weight = None, int reduction = 1)")
def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=_NONE):
    """torch.binary_cross_entropy_with_logits (aten: reduction an int)."""
    return F._bce_with_logits(input, target, weight, _reduction(reduction), pos_weight)


@_aten("(Tensor input1, Tensor input2, Tensor target, float margin = 0., int reduction = 1)")
def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=_NONE):
    """torch.cosine_embedding_loss (aten: reduction an int)."""
    return _losses.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


@_aten("(Tensor input1, Tensor input2, Tensor target, float margin = 0., int reduction = 1)")
def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=_NONE):
    """torch.margin_ranking_loss (aten: reduction an int; no check of the dims, which F's
    Python does)."""
    return _losses._reduce((-target * (input1 - input2) + margin).clamp_min_(0), _reduction(reduction))


@_aten("(Tensor input, Tensor target, float margin = 1., int reduction = 1)")
def hinge_embedding_loss(input, target, margin=1.0, reduction=_NONE):
    """torch.hinge_embedding_loss (aten: reduction an int)."""
    return _losses.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


@_aten("(Tensor anchor, Tensor positive, Tensor negative, float margin = 1., float p = 2., float eps = 1e-06, "
       "bool swap = False, int reduction = 1)")
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction=_NONE):
    """torch.triplet_margin_loss (aten: reduction an int; any margin, which F's Python checks)."""
    return _losses._triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, _reduction(reduction))


@_aten("(Tensor input, Tensor target, bool log_input, bool full, float eps, int reduction)")
def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """torch.poisson_nll_loss: every argument required (aten: reduction an int)."""
    return _losses.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


@_aten("(Tensor input, Tensor target, int reduction = 1, *, bool log_target = False)")
def kl_div(input, target, reduction=_NONE, *, log_target=False):
    """torch.kl_div (aten: reduction an int; 'mean' without F's warning, no 'batchmean')."""
    return _losses._kl_div(input, target, _reduction(reduction), log_target)


# ---------------------------------------------------------------- normalization, embedding, padding

@_aten("(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, "
       "float momentum, float eps, bool cudnn_enabled)")
def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    """torch.batch_norm: at::batch_norm, without F's Python checks (batch size, eps)."""
    return _normalization._native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
                                             eps)


@_aten("(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, "
       "bool use_input_stats, float momentum, float eps, bool cudnn_enabled)")
def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    """torch.instance_norm: at::instance_norm, without F's check of the spatial size."""
    return _normalization._instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum,
                                         eps)


@_aten("(Tensor input, tuple of ints normalized_shape, Tensor? weight = None, float? eps = None)")
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """torch.rms_norm (F.rms_norm)."""
    return _normalization.rms_norm(input, normalized_shape, weight, eps)


@_aten("(Tensor weight, Tensor indices, int padding_idx = -1, bool scale_grad_by_freq = False, "
       "bool sparse = False)")
def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """torch.embedding(weight, indices, ...): the weight first; padding_idx a row in range keeps
    that row's gradient zero, any other value (-1 by default) none."""
    rows = weight.size(0) if weight.dim() else 0
    padding = padding_idx if 0 <= padding_idx < rows else None
    return F.embedding(indices, weight, padding, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


@_aten("(Tensor input, tuple of ints pad, Number value = 0)")
def constant_pad_nd(input, pad, value=0):
    """torch.constant_pad_nd: F.pad(..., 'constant', value), with aten's checks and texts of the pad."""
    if len(pad) % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)}")
    if len(pad) // 2 > input.dim():
        raise RuntimeError(f"Length of pad should be no more than twice the number of dimensions of the input. Pad "
                           f"length is {len(pad)}while the input has {input.dim()}dimensions.")
    return _padding.pad(input, pad, "constant", value)


# ---------------------------------------------------------------- linear algebra

@_aten("(Tensor input, float rcond = 1e-15)")
def pinverse(input, rcond=1e-15):
    """torch.pinverse: linalg.pinv with `rcond` as the relative tolerance (LinalgPinvBackward0)."""
    return _linalg.pinv(input, rtol=rcond)


@_aten("(Tensor input)")
def matrix_exp(input):
    """torch.matrix_exp: linalg.matrix_exp (LinalgMatrixExpBackward0)."""
    return _linalg.matrix_exp(input)


# ---------------------------------------------------------------- Tensor methods

def _method(name: str, signature: str, fn):
    """fn(self, ...) as Tensor.<name>, its arguments after self checked by torch's parser."""
    parser = ArgParser(name, signature)

    def method(self, *args, **kwargs):
        error = parser.error(args, kwargs)
        if error is not None:
            raise error
        return fn(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"torch.Tensor.{name}: {fn.__doc__.splitlines()[0] if fn.__doc__ else name}"
    return method


for _name, _signature, _fn in (
        ("hardshrink", "(Number lambd = 0.5)", _activations.hardshrink),
        ("prelu", "(Tensor weight)", _activations.prelu),
        ("pinverse", "(float rcond = 1e-15)", pinverse)):
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _method(_name, _signature, _fn))
del _name, _signature, _fn
if not hasattr(Tensor, "matrix_exp"):
    Tensor.matrix_exp = no_arguments(lambda self: _linalg.matrix_exp(self), "matrix_exp")
    Tensor.matrix_exp.__doc__ = "torch.Tensor.matrix_exp: linalg.matrix_exp of the tensor (LinalgMatrixExpBackward0)."
