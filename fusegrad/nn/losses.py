"""torch.nn's further losses and distances: the functional forms (smooth_l1_loss, huber_loss,
kl_div, cosine_similarity, pairwise_distance, cosine_embedding_loss, margin_ranking_loss,
hinge_embedding_loss, soft_margin_loss, poisson_nll_loss, gaussian_nll_loss,
triplet_margin_loss, multilabel_soft_margin_loss, multi_margin_loss) and their modules.

torch computes smooth_l1_loss, huber_loss, soft_margin_loss and multi_margin_loss in one node
of their own (SmoothL1LossBackward0, ...): each is one op here (ir/ops/nn_activations.py),
the reduction inside it. The others torch composes of public ops, in C++ or Python; so does
this, op for op, so that grad_fn names and `next_functions` match. Reductions take torch's
'none' | 'mean' | 'sum' and the deprecated size_average/reduce flags where torch's do.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

import fusegrad as fg
from fusegrad.ir.ops import normalize_dim
from fusegrad.ir.types import promote_types
from fusegrad.tracer.dispatch import apply_op, result_cast_error
from fusegrad.tracer.functional import cast
from fusegrad.tracer.user_frame import user_stacklevel

from .functional import (_REDUCTIONS, _accepting_arrays, _broadcast_pair, _check_reduction, _check_tensor_args,
                         _dtype_name, _legacy_reduction, _not_differentiable, l1_loss)
from .activations import logsigmoid
from .layers import _Loss
from .module import Module

__all__ = ["smooth_l1_loss", "huber_loss", "kl_div", "cosine_similarity", "pairwise_distance",
           "cosine_embedding_loss", "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
           "poisson_nll_loss", "gaussian_nll_loss", "triplet_margin_loss", "multilabel_soft_margin_loss",
           "multi_margin_loss",
           "SmoothL1Loss", "HuberLoss", "KLDivLoss", "CosineSimilarity", "PairwiseDistance",
           "CosineEmbeddingLoss", "MarginRankingLoss", "HingeEmbeddingLoss", "SoftMarginLoss", "PoissonNLLLoss",
           "GaussianNLLLoss", "TripletMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss"]


def _reduction(size_average, reduce, reduction: str) -> str:
    """torch's `_Reduction.legacy_get_enum` / `get_enum`: the reduction, checked."""
    return _check_reduction(_legacy_reduction(size_average, reduce, reduction))


def _reduce(loss, reduction: str):
    """torch's apply_loss_reduction: loss.mean(), loss.sum() or the loss itself."""
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _warn_sizes(input, target) -> None:
    if tuple(target.size()) != tuple(input.size()):
        warnings.warn(f"Using a target size (torch.Size({list(target.shape)})) that is different to the input size "
                      f"(torch.Size({list(input.shape)})). This will likely lead to incorrect results due to "
                      "broadcasting. Please ensure they have the same size.", UserWarning, stacklevel=user_stacklevel())


def _float_pair(kernel: str, input, target) -> tuple:
    """Both operands in their promoted floating dtype (torch's TensorIterator), or torch's
    error for integers."""
    dtype = promote_types(input.dtype, target.dtype)
    if not dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_dtype_name(dtype)}'")
    return cast(input, dtype, implicit=True), cast(target, dtype, implicit=True)


# ---------------------------------------------------------------- elementwise losses

def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0):
    """0.5 * d**2 / beta where |d| < beta, else |d| - 0.5 * beta, d = input - target (one
    SmoothL1LossBackward0 node; beta=0 is torch's l1_loss). Shapes broadcast, with torch's warning."""
    _warn_sizes(input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    input, target = _broadcast_pair(input, target)
    if beta == 0.0:
        return l1_loss(input, target, reduction=reduction)
    reduction = _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    input, target = _float_pair("smooth_l1_cpu", input, target)
    return apply_op("smooth_l1_loss", [input, target], {"reduction": reduction, "beta": float(beta)},
                    "SmoothL1LossBackward0")


def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0, weight=None):
    """0.5 * d**2 where |d| < delta, else delta * (|d| - 0.5 * delta) (one HuberLossBackward0
    node); `weight` (input's shape) multiplies the unreduced losses, as torch's Python does."""
    _warn_sizes(input, target)
    input, target = _broadcast_pair(input, target)
    if weight is not None and tuple(weight.size()) != tuple(input.size()):
        raise ValueError("Weights and input must have the same size.")
    if weight is None:
        reduction = _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    input, target = _float_pair("huber_cpu", input, target)
    loss = apply_op("huber_loss", [input, target], {"reduction": reduction if weight is None else "none",
                                                    "delta": float(delta)}, "HuberLossBackward0")
    if weight is None:
        return loss
    loss = loss * weight
    if reduction not in _REDUCTIONS:
        raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """log(1 + exp(-target * input)) (one SoftMarginLossBackward0 node; no gradient for the
    target). The target broadcasts to the input's shape and the loss has the input's dtype, as
    torch's in-place kernel computes it."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_tensor_args("soft_margin_loss", input=input, target=target)
    _not_differentiable("soft_margin_loss", target=target)
    if not input.dtype.is_floating_point:
        raise result_cast_error(_dtype_name(promote_types(input.dtype, target.dtype)) if
                                target.dtype.is_floating_point else "Float", _dtype_name(input.dtype))
    if tuple(target.shape) != tuple(input.shape):
        target = target.expand(input.shape)
    target = cast(target, input.dtype, implicit=True)
    return apply_op("soft_margin_loss", [input, target], {"reduction": reduction}, "SoftMarginLossBackward0")


def kl_div(input, target, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False):
    """KL divergence of log-probabilities `input` from `target` (probabilities, or
    log-probabilities with log_target): target * (log(target) - input) as torch composes it
    (xlogy(target, target) - target * input), reduced; 'batchmean' divides the sum by the batch
    size, 'mean' by every element (with torch's warning)."""
    if size_average is not None or reduce is not None:
        reduction = enum = _legacy_reduction(size_average, reduce, reduction)
    else:
        if reduction == "mean":
            warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                          "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                          "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                          UserWarning, stacklevel=user_stacklevel())
        enum = "sum" if reduction == "batchmean" else _check_reduction(reduction)
    reduced = _kl_div(input, target, enum, log_target)
    if reduction == "batchmean" and input.dim() != 0:
        reduced = reduced / input.size()[0]
    return reduced


def _kl_div(input, target, reduction: str, log_target: bool):
    """torch's C++ kl_div (torch.kl_div): the pointwise terms as torch composes them, reduced by
    'none', 'mean' or 'sum'."""
    _check_tensor_args("kl_div", input=input, target=target)
    if not (input.dtype.is_floating_point and target.dtype.is_floating_point):
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        output = target.exp() * (target - input)
    else:
        output = fg.xlogy(target, target) - target * input
    return _reduce(output, reduction)


# ---------------------------------------------------------------- distances

def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8):
    """sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps)) along `dim`, as torch's C++: each norm
    cloned and clamped in place without grad (so the gradient is that of the unclamped norm,
    torch's), the operands broadcast; integer operands are converted to the common float dtype."""
    _check_tensor_args("cosine_similarity", x1=x1, x2=x2)
    common = promote_types(x1.dtype, x2.dtype)
    if not common.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is {_dtype_name(common)}")
    x1 = x1 if x1.dtype.is_floating_point else x1.to(common)
    x2 = x2 if x2.dtype.is_floating_point else x2.to(common)
    x1, x2 = _broadcast_pair(x1, x2)
    n1 = x1.norm(2, dim, keepdim=True).clone()
    n2 = x2.norm(2, dim, keepdim=True).clone()
    with fg.no_grad():
        n1.clamp_min_(eps)
        n2.clamp_min_(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
    """||x1 - x2 + eps||_p over the last dim, as torch's C++ (SubBackward0, AddBackward1, then
    torch's at::norm: NormBackward1)."""
    _check_tensor_args("pairwise_distance", x1=x1, x2=x2)
    diff = x1 - x2 + eps
    if diff.dim() == 0:
        return diff.norm(p)
    axis = normalize_dim(max(x1.dim(), x2.dim()) - 1, diff.dim())
    return apply_op("norm", [diff], {"p": float(p), "axes": (axis,), "keepdim": bool(keepdim)}, "NormBackward1")


# ---------------------------------------------------------------- embedding and ranking losses

def cosine_embedding_loss(input1, input2, target, margin: float = 0, size_average=None, reduce=None,
                          reduction: str = "mean"):
    """1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where it is -1 (0 elsewhere),
    cos = <x1, x2> / sqrt((|x1|^2 + 1e-12) (|x2|^2 + 1e-12)), composed as torch's C++ composes it."""
    reduction = _reduction(size_average, reduce, reduction)
    targ_dim = target.dim()
    if targ_dim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if targ_dim == 1 and not (input1.dim() == 2 and input2.dim() == 2):
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    if targ_dim == 0 and not (input1.dim() == 1 and input2.dim() == 1):
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    epsilon = 1e-12
    prod_sum = (input1 * input2).sum(targ_dim)
    mag_square1 = (input1 * input1).sum(targ_dim) + epsilon
    mag_square2 = (input2 * input2).sum(targ_dim) + epsilon
    denom = (mag_square1 * mag_square2).sqrt_()
    cos = prod_sum / denom
    zeros = fg.zeros_like(cos)
    pos = 1 - cos
    neg = (cos - margin).clamp_min_(0)
    output = fg.where(target == 1, pos, zeros) + fg.where(target == -1, neg, zeros)
    return _reduce(output, reduction)


def margin_ranking_loss(input1, input2, target, margin: float = 0, size_average=None, reduce=None,
                        reduction: str = "mean"):
    """max(0, -target * (input1 - input2) + margin), as torch composes it."""
    reduction = _reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: torch.Size({list(input1.shape)}), input2: torch.Size({list(input2.shape)}), "
                           f"target: torch.Size({list(target.shape)}) ")
    return _reduce((-target * (input1 - input2) + margin).clamp_min_(0), reduction)


def hinge_embedding_loss(input, target, margin: float = 1.0, size_average=None, reduce=None,
                         reduction: str = "mean"):
    """input where target is not -1 plus max(0, margin - input) where target is not 1, as torch
    composes it."""
    reduction = _reduction(size_average, reduce, reduction)
    zeros = fg.zeros_like(input)
    margin_clamp = (margin - input).clamp_min_(0)
    output = fg.where(target != 1, margin_clamp, zeros) + fg.where(target != -1, input, zeros)
    return _reduce(output, reduction)


def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average=None, reduce=None, reduction: str = "mean"):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)), d the pairwise_distance (with
    `swap`, the smaller of d(anchor, negative) and d(positive, negative)), as torch composes it."""
    reduction = _reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    return _triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction)


def _triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction: str):
    """torch's C++ triplet_margin_loss (torch.triplet_margin_loss: any margin)."""
    a_dim, p_dim, n_dim = anchor.dim(), positive.dim(), negative.dim()
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and negative {n_dim}D inputs")
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = fg.min(dist_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(fg.clamp_min(margin + dist_pos - dist_neg, 0), reduction)


# ---------------------------------------------------------------- likelihood losses

def poisson_nll_loss(input, target, log_input: bool = True, full: bool = False, size_average=None,
                     eps: float = 1e-8, reduce=None, reduction: str = "mean"):
    """exp(input) - target * input (log_input), else input - target * log(input + eps); `full`
    adds Stirling's term where target > 1. As torch composes it."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not a valid value for reduction")
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss += stirling.masked_fill(target <= 1, 0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
    """0.5 * (log(var) + (input - target)**2 / var) (+ 0.5 * log(2 pi) when full), `var` clamped
    at eps without grad; var a float, of the input's shape, or one dim short or one size-1 dim
    (homoscedastic), as torch's Python. (A negative var is found by reading its values.)"""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * fg.ones_like(input)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if tuple(var.size()) != tuple(input.size()):
        if tuple(input.size())[:-1] == tuple(var.size()):
            var = var.unsqueeze(-1)
        elif input.dim() == var.dim() and sum(y for x, y in zip(input.size(), var.size()) if x != y) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with fg.no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss += 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


# ---------------------------------------------------------------- multi-class margin losses

def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction: str = "mean"):
    """-(target * logsigmoid(x) + (1 - target) * logsigmoid(-x)), times `weight`, averaged over
    the classes (the last dim), then reduced over the samples; as torch's Python."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(dim=class_dim) / input.size(class_dim)
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


def _margin_loss_layout(input) -> tuple:
    """(input dims, samples, classes) of a multi(label) margin loss's input, after torch's check of
    its shape: a non-empty (C) or (N, C), or a 0-d input (one sample of one class)."""
    ndim = input.dim()
    if not ((ndim == 2 and input.shape[1] != 0) or (ndim == 1 and input.shape[0] != 0) or ndim == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    return ndim, input.shape[0] if ndim == 2 else 1, input.shape[-1] if ndim else 1


def multi_margin_loss(input, target, p: int = 1, margin: float = 1.0, weight=None, size_average=None, reduce=None,
                      reduction: str = "mean"):
    """Multi-class hinge loss: for each sample, the sum over classes i != y of
    max(0, margin - x[y] + x[i]) ** p (times weight[y]), divided by the class count (one
    MultiMarginLossBackward0 node). Input (N, C), (C,) or 0-d; target int64 class indices
    (torch's errors for its shape, dtype and range; the range check reads the targets).
    A (C,) or 0-d input is taken as one row: its node's inputs are views (ViewBackward0), where
    torch's take it directly. An empty batch gives NaN ('mean') or 0 ('sum'), where torch
    returns an uninitialised value."""
    reduction = _reduction(size_average, reduce, reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    _check_tensor_args("multi_margin_loss", input=input, target=target)
    ndim, nframe, dim = _margin_loss_layout(input)
    if target.dim() > 1 or target.numel() != nframe:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{nframe}], but got {list(target.shape)}. "
                           f"Input has shape {list(input.shape)}.")
    if weight is not None and weight.numel() != dim:
        raise RuntimeError(f"inconsistent weight size, expected {dim} but got {list(weight.shape)}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"multi_margin_loss_cpu_kernel\" not implemented for '{_dtype_name(input.dtype)}'")
    if target.dtype != fg.int64:
        raise RuntimeError(f"expected scalar type Long but found {_dtype_name(target.dtype)}")
    if weight is not None:
        if weight.dtype != input.dtype:
            raise RuntimeError(f"expected scalar type {_dtype_name(input.dtype)} but found {_dtype_name(weight.dtype)}")
        _not_differentiable("multi_margin_loss", weight=weight)
    if target.numel():
        values = np.asarray(target._concrete())
        if values.min() < 0 or values.max() >= dim:
            raise RuntimeError("target out of range")
    rows = input if ndim == 2 else input.reshape(1, dim)
    operands = [rows, target.reshape(nframe), fg.arange(dim)] + ([weight] if weight is not None else [])
    out = apply_op("multi_margin_loss", operands,
                   {"p": int(p), "margin": float(margin), "reduction": reduction}, "MultiMarginLossBackward0")
    return out.reshape(target.shape) if reduction == "none" and ndim < 2 else out


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """For each sample, the sum over its targets j (the target row's classes before its first -1)
    and every class i not among them of max(0, 1 - x[j] + x[i]), over the number of classes
    (one MultilabelMarginLossBackward0 node); input (C) or (N, C), target of the input's shape.
    torch's checks and texts, in its order."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_tensor_args("multilabel_margin_loss", input=input, target=target)
    ndim, nframe, dim = _margin_loss_layout(input)
    if not (target.dim() <= 1 and target.numel() == dim if ndim <= 1 else
            target.dim() == 2 and tuple(target.shape) == tuple(input.shape)):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    if input.numel() and not input.dtype.is_floating_point:
        raise NotImplementedError("\"multilabel_margin_loss_forward_out_frame\" not implemented for "
                                  f"'{_dtype_name(input.dtype)}'")
    if input.numel() and target.dtype != fg.int64:
        raise RuntimeError(f"expected scalar type Long but found {_dtype_name(target.dtype)}")
    if target.numel():
        values = np.asarray(target._concrete())
        if values.min() < -1 or values.max() >= dim:
            raise RuntimeError("argument #2 'target' is out of range")
    if not input.dtype.is_floating_point:       # (an empty integer input: torch returns before its dtype's check)
        input = input.to(fg.float32)
    # how often each class is among a sample's targets (the entries before the first -1)
    rows = target.reshape(nframe, dim)
    listed = fg.cumprod((rows >= 0).to(fg.int64), 1)
    counts = ((rows.unsqueeze(2) == fg.arange(dim).reshape(1, 1, dim)) * listed.unsqueeze(2)).sum(1)
    x = input if ndim else input.reshape(1)
    counts = counts.to(input.dtype).reshape(x.shape)
    return apply_op("multilabel_margin_loss", [x, counts], {"reduction": reduction}, "MultilabelMarginLossBackward0")


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean"):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)), d the `distance_function`
    (pairwise_distance by default; with `swap`, the smaller of d(anchor, negative) and
    d(positive, negative)), reduced; torch's Python, check for check."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a_dim, p_dim, n_dim = anchor.ndim, positive.ndim, negative.ndim
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and negative {n_dim}D inputs")
    if distance_function is None:
        distance_function = pairwise_distance
    dist_pos = distance_function(anchor, positive)
    dist_neg = distance_function(anchor, negative)
    if swap:
        dist_neg = fg.minimum(dist_neg, distance_function(positive, negative))
    loss = fg.clamp_min(margin + dist_pos - dist_neg, 0)
    if reduction == "sum":
        return fg.sum(loss)
    if reduction == "mean":
        return fg.mean(loss)
    return loss


__all__ += ["multilabel_margin_loss", "triplet_margin_with_distance_loss", "MultiLabelMarginLoss",
            "TripletMarginWithDistanceLoss"]

for _name in __all__:
    if _name[0].islower():
        globals()[_name] = _accepting_arrays(globals()[_name])
del _name


# ---------------------------------------------------------------- modules

class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class SmoothL1Loss(_Loss):
    """F.smooth_l1_loss as a module."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        """F.smooth_l1_loss with this module's reduction and beta."""
        return smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """F.huber_loss as a module."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        """F.huber_loss with this module's reduction and delta."""
        return huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(_Loss):
    """F.kl_div as a module."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        """F.kl_div with this module's reduction and log_target."""
        return kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class SoftMarginLoss(_Loss):
    """F.soft_margin_loss as a module."""

    def forward(self, input, target):
        """F.soft_margin_loss with this module's reduction."""
        return soft_margin_loss(input, target, reduction=self.reduction)


class CosineSimilarity(Module):
    """F.cosine_similarity along `dim` as a module (torch prints no options)."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        """F.cosine_similarity of x1 and x2."""
        return cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """F.pairwise_distance as a module (torch prints no options)."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        """F.pairwise_distance of x1 and x2."""
        return pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class _MarginLoss(_Loss):
    _default_margin = 0.0

    def __init__(self, margin: float | None = None, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = self._default_margin if margin is None else margin


class CosineEmbeddingLoss(_MarginLoss):
    """F.cosine_embedding_loss as a module."""

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(margin, size_average, reduce, reduction)

    def forward(self, input1, input2, target):
        """F.cosine_embedding_loss with this module's margin and reduction."""
        return cosine_embedding_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class MarginRankingLoss(_MarginLoss):
    """F.margin_ranking_loss as a module."""

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(margin, size_average, reduce, reduction)

    def forward(self, input1, input2, target):
        """F.margin_ranking_loss with this module's margin and reduction."""
        return margin_ranking_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class HingeEmbeddingLoss(_MarginLoss):
    """F.hinge_embedding_loss as a module."""

    def __init__(self, margin: float = 1.0, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(margin, size_average, reduce, reduction)

    def forward(self, input, target):
        """F.hinge_embedding_loss with this module's margin and reduction."""
        return hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """F.poisson_nll_loss as a module."""

    def __init__(self, log_input: bool = True, full: bool = False, size_average=None, eps: float = 1e-8,
                 reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        """F.poisson_nll_loss with this module's options."""
        return poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full, eps=self.eps,
                                reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """F.gaussian_nll_loss as a module."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(None, None, reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        """F.gaussian_nll_loss with this module's options."""
        return gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """F.triplet_margin_loss as a module (torch checks the margin in forward)."""

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                 size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead")
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        """F.triplet_margin_loss with this module's options."""
        return triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps,
                                   swap=self.swap, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """F.multilabel_soft_margin_loss as a module; `weight` is kept as a buffer."""

    def forward(self, input, target):
        """F.multilabel_soft_margin_loss with this module's weight and reduction."""
        return multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """F.multi_margin_loss as a module; `weight` is kept as a buffer."""

    def __init__(self, p: int = 1, margin: float = 1.0, weight=None, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if p != 1 and p != 2:
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got {weight.dim()}D instead")
        self.p, self.margin = p, margin

    def forward(self, input, target):
        """F.multi_margin_loss with this module's options."""
        return multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                 reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """F.multilabel_margin_loss as a module."""

    def forward(self, input, target):
        """F.multilabel_margin_loss with this module's reduction."""
        return multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """F.triplet_margin_with_distance_loss as a module; without a distance_function it holds a
    PairwiseDistance() submodule, as torch's (its repr shows it)."""

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean") -> None:
        super().__init__(size_average=None, reduce=None, reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} "
                             "instead")
        self.distance_function = distance_function if distance_function is not None else PairwiseDistance()
        self.margin, self.swap = margin, swap

    def forward(self, anchor, positive, negative):
        """F.triplet_margin_with_distance_loss with this module's options."""
        return triplet_margin_with_distance_loss(anchor, positive, negative, distance_function=self.distance_function,
                                                 margin=self.margin, swap=self.swap, reduction=self.reduction)


# ---------------------------------------------------------------- CTC loss
# torch's ctc_loss (aten/src/ATen/native/LossCTC.cpp, ctc_loss_impl): an unbatched input is
# unsqueezed (UnsqueezeBackward0), the targets taken as int64, one CtcLossBackward0 node
# (ir/ops/ctc.py), then where(loss == inf, 0, loss) for zero_infinity (WhereBackward0) and the
# reduction: 'mean' divides each loss by its target length clamped to at least 1
# (DivBackward0) before the batch mean, 'none' squeezes an unbatched result back.
from fusegrad.tracer.parser_errors import ArgParser, is_int  # noqa: E402

_CTC_PARSER = ArgParser(
    "ctc_loss",
    "(Tensor log_probs, Tensor targets, tuple of ints input_lengths, tuple of ints target_lengths, int blank = 0, "
    "int reduction = at::Reduction::Mean, bool zero_infinity = False)",
    "(Tensor log_probs, Tensor targets, Tensor input_lengths, Tensor target_lengths, int blank = 0, "
    "int reduction = at::Reduction::Mean, bool zero_infinity = False)")
_CTC_PARAMETERS = ("log_probs", "targets", "input_lengths", "target_lengths", "blank", "reduction", "zero_infinity")
_REDUCTION_ENUM = {"none": 0, "mean": 1, "sum": 2}


def _ctc_bind(args: tuple, kwargs: dict) -> dict:
    """torch.ctc_loss's arguments as torch's parser binds them to one of its two overloads
    (lengths both int lists, or both tensors), or its TypeError. (Our own reading, not
    ArgParser.error's: torch takes no one-element tensor for an `int[]` length list.)"""
    def refused() -> TypeError:
        return TypeError(_CTC_PARSER._invalid_combination(args, kwargs))

    if len(args) > len(_CTC_PARAMETERS):
        raise refused()
    bound = dict(zip(_CTC_PARAMETERS, args))
    for key, value in kwargs.items():
        if key not in _CTC_PARAMETERS or key in bound:
            raise refused()
        bound[key] = value
    if any(name not in bound for name in _CTC_PARAMETERS[:4]):
        raise refused()
    bound = {"blank": 0, "reduction": 1, "zero_infinity": False, **bound}
    fine = (isinstance(bound["log_probs"], fg.Tensor) and isinstance(bound["targets"], fg.Tensor)
            and is_int(bound["blank"]) and is_int(bound["reduction"])
            and isinstance(bound["zero_infinity"], (bool, np.bool_)))
    lengths = bound["input_lengths"], bound["target_lengths"]
    int_lists = all(isinstance(x, (tuple, list)) and all(is_int(v) for v in x) for x in lengths)
    tensors = all(isinstance(x, fg.Tensor) for x in lengths)
    if not fine or not (int_lists or tensors):
        raise refused()
    bound["lengths_are_tensors"] = tensors
    return bound


def _ctc_lengths(lengths, name: str, are_tensors: bool):
    """The lengths as a 1-d int64 tensor of their own (torch copies them into an int list:
    a later write of the caller's tensor changes nothing torch's node saved)."""
    if not are_tensors:
        return fg.tensor([int(v) for v in lengths], dtype=fg.int64)
    if lengths.dtype.is_floating_point or lengths.dtype == fg.bool:
        raise RuntimeError(f"{name} must be integral")
    return lengths.to(fg.int64).reshape(-1).clone()


def _ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity,
              lengths_are_tensors):
    """torch's ctc_loss_impl on bound arguments (`reduction` torch's enum: 1 mean, 2 sum, else none)."""
    input_lengths = _ctc_lengths(input_lengths, "input_lengths", lengths_are_tensors)
    target_lengths = _ctc_lengths(target_lengths, "target_lengths", lengths_are_tensors)
    batched = log_probs.dim() == 3
    if not batched:
        log_probs = log_probs.unsqueeze(1)
    loss = apply_op("ctc_loss", [log_probs, targets.to(fg.int64), input_lengths, target_lengths],
                    {"blank": int(blank), "zero_infinity": bool(zero_infinity)}, "CtcLossBackward0")
    if zero_infinity:
        loss = fg.where(loss == math.inf, fg.zeros((), dtype=loss.dtype), loss)
    if reduction == 1:
        return (loss / target_lengths.to(loss.dtype).clamp_min(1)).mean()
    if reduction == 2:
        return loss.sum()
    return loss if batched else loss.squeeze(0)


def aten_ctc_loss(*args, **kwargs):
    """torch.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1,
    zero_infinity=False): F.ctc_loss with torch's integer reduction (0 none, 1 mean, 2 sum; any
    other number is 'none'). The lengths are both int lists or both tensors (torch's two overloads)."""
    return _ctc_loss(**_ctc_bind(args, kwargs))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank: int = 0, reduction: str = "mean",
             zero_infinity: bool = False):
    """The Connectionist Temporal Classification loss, as torch's CPU kernel computes it:
    log_probs (T, N, C) or unbatched (T, C), float32 or float64 (log_softmax's output: the
    gradient assumes it); targets padded (N, S) or concatenated 1-d, of any dtype (taken as
    int64); input_lengths and target_lengths both tensors or both sequences of ints. Each
    sample's loss is -log of the summed probability of its alignments (inf where none exists;
    zero_infinity=True zeroes those losses and their gradients); 'mean' divides each loss by
    its target length (at least 1) before the batch mean."""
    enum = _REDUCTION_ENUM[_check_reduction(reduction)]
    return aten_ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, enum, zero_infinity)


aten_ctc_loss = _accepting_arrays(aten_ctc_loss)
ctc_loss = _accepting_arrays(ctc_loss)
__all__ += ["ctc_loss", "CTCLoss"]


class CTCLoss(_Loss):
    """F.ctc_loss as a module."""

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        """F.ctc_loss with this module's blank, reduction and zero_infinity."""
        return ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                        self.zero_infinity)
