"""Loss ops recorded as one node each, as torch records them (MseLossBackward0).

Each decomposes into the elementwise and reduce ops the scheduler fuses.
"""
from __future__ import annotations

import numpy as np

from ..types import TensorType
from .reduce import _total
from .registry import COMPOSITE, OpDef, register

REDUCTIONS = ("none", "mean", "sum")


# ------------------------------------------------------------------ mse_loss
# mse_loss(input, target; reduction) for operands of one shape and one floating
# dtype (nn.functional.mse_loss broadcasts and checks before it records this).
def _mse_infer(types, attrs):
    x, t = types
    if x.shape != t.shape or x.dtype is not t.dtype or not x.dtype.is_floating_point:
        raise TypeError(f"mse_loss: operands must share a shape and a floating dtype, got {x} and {t}")
    if attrs["reduction"] not in REDUCTIONS:
        raise ValueError(f"{attrs['reduction']} is not a valid value for reduction")
    return [x if attrs["reduction"] == "none" else TensorType((), x.dtype)]


def _mse_ref(x, t, reduction):
    d = x - t
    # summed in torch's order, as the sum op's reference (torch's mse_loss is bit for bit
    # its ((x - t) ** 2).sum() and .mean())
    return _reduced_ref(d * d, reduction)


def _mse_vjp(e, xs, ys, gs, attrs, needs):
    # torch's mse_loss_backward (below) for the input; the target's is the same with the
    # operands swapped, (target - input), not its negation (which would turn a zero
    # difference into -0.0).
    x, t = xs
    r = attrs["reduction"]
    gx = e.op("mse_loss_backward", gs[0], x, t, reduction=r) if needs[0] else None
    gt = e.op("mse_loss_backward", gs[0], t, x, reduction=r) if needs[1] else None
    return [gx, gt]


def _mse_decompose(e, xs, attrs):
    x, t = xs
    d = e.sub(x, t)
    return [_reduced(e, e.mul(d, d), attrs["reduction"])]


register(OpDef("mse_loss", COMPOSITE, _mse_infer, _mse_ref, _mse_vjp, decompose=_mse_decompose,
               # (reduction "none": the result takes the operands' layout, as torch's TensorIterator;
               # a reduced result is 0-d, which no layout rule touches)
               extra={"unpack_order": (("in", 0), ("in", 1)), "takes_operand_layout": True},  # torch's self, target
               doc="mse_loss(input, target; reduction): (input - target)**2, reduced"))


# mse_loss_backward(grad, input, target; reduction) = (2 / n if mean else 2) *
# (input - target) * grad, grad broadcast to the input's shape: torch's op, so that a
# create_graph gradient records MseLossBackwardBackward0 and differentiates by torch's rules.
def _mse_scale(numel: int, reduction) -> float:
    """d(loss)/d(diff**2) times 2: 2 / n for the mean over n elements, else 2."""
    return 2.0 / max(numel, 1) if reduction == "mean" else 2.0


def _mse_backward_infer(types, attrs):
    g, x, t = types
    if x != t or g.dtype is not x.dtype or g.shape not in ((), x.shape):
        raise TypeError(f"mse_loss_backward: expected a gradient of the loss's shape and operands of one type, "
                        f"got {g}, {x} and {t}")
    return [x]


def _mse_backward_ref(g, x, t, reduction):
    return ((x - t) * x.dtype.type(_mse_scale(x.size, reduction))) * g


def _expand_grad(e, g, x):
    """The loss's gradient broadcast to the input's shape."""
    return e.expand(e.reshape(g, (1,) * x.type.ndim), x.shape) if g.shape != x.shape else g


def _mse_backward_decompose(e, xs, attrs):
    g, x, t = xs
    return [e.mul(e.mul(e.sub(x, t), _mse_scale(x.type.numel, attrs["reduction"])), _expand_grad(e, g, x))]


def _mse_backward_vjp(e, xs, ys, gs, attrs, needs):
    # torch: grad_output -> mse_loss_backward(grad, self, target); self ->
    # mse_loss_double_backward(grad * grad_output) = 2 (/ n for mean) * grad * grad_output;
    # target -> its negation.
    g, x, t = xs
    r, gg = attrs["reduction"], gs[0]
    d_grad = e.op("mse_loss_backward", gg, x, t, reduction=r) if needs[0] else None
    double = e.mul(e.mul(gg, _expand_grad(e, g, x)), _mse_scale(x.type.numel, r)) if needs[1] or needs[2] else None
    return [d_grad, double if needs[1] else None, e.neg(double) if needs[2] else None]


register(OpDef("mse_loss_backward", COMPOSITE, _mse_backward_infer, _mse_backward_ref, _mse_backward_vjp,
               decompose=_mse_backward_decompose,
               doc="mse_loss_backward(grad, input, target; reduction): mse_loss's VJP, as torch's op"))


# ------------------------------------------------------------------ binary cross-entropy
# Both take operands of one shape and one floating dtype, with an optional elementwise
# weight (and pos_weight for the logits form) that nn.functional has already broadcast,
# cast and checked as torch does. One node each, as torch records them.
def _bce_infer(name: str, n_required: int):
    def infer(types, attrs):
        first = types[0]
        expected = n_required + int(attrs.get("weighted", False)) + int(attrs.get("pos_weighted", False))
        if len(types) != expected or any(t != first for t in types) or not first.dtype.is_floating_point:
            raise TypeError(f"{name}: expected {expected} operands of one shape and one floating dtype, "
                            f"got {', '.join(str(t) for t in types)}")
        if attrs["reduction"] not in REDUCTIONS:
            raise ValueError(f"{attrs['reduction']} is not a valid value for reduction")
        return [first if attrs["reduction"] == "none" else TensorType((), first.dtype)]
    return infer


def _reduced_ref(losses, reduction):
    """The elementwise losses reduced as torch's apply_loss_reduction: .sum() (in torch's
    order, as the sum op's reference) or .mean() (sum / n)."""
    if reduction == "none":
        return losses
    total = _total(losses, tuple(range(losses.ndim)), False)
    if reduction == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):      # (the mean of nothing is NaN)
            return np.asarray(np.true_divide(total, losses.size, dtype=losses.dtype))
    return np.asarray(total, dtype=losses.dtype)


def _reduced(e, losses, reduction):
    """_reduced_ref in IR ops."""
    axes = tuple(range(losses.type.ndim))
    if reduction == "mean":
        return e.op("mean", losses, axes=axes, keepdim=False)
    return e.sum(losses, axes) if reduction == "sum" else losses


def _weights(xs, attrs):
    """(weight, pos_weight) among a loss's operands after the first two (None where absent)."""
    rest = list(xs[2:])
    weight = rest.pop(0) if attrs.get("weighted") else None
    pos_weight = rest.pop(0) if attrs.get("pos_weighted") else None
    return weight, pos_weight


def _scaled_grad(e, grad, g, x, weight, reduction):
    """An elementwise gradient times the loss's gradient (broadcast), the weight and, for the
    mean, 1 / numel: torch's order in its *_backward functions."""
    grad = e.mul(grad, _expand_grad(e, g, x))
    if weight is not None:
        grad = e.mul(grad, weight)
    return e.div(grad, float(x.type.numel)) if reduction == "mean" else grad


# binary_cross_entropy_with_logits(input, target[, weight][, pos_weight]; reduction, weighted,
# pos_weighted), as torch's kernel composes it:
#   loss = (1 - target) * input - log_sigmoid(input) * ((pos_weight - 1) * target + 1), times weight,
# with log_sigmoid(x) = min(x, 0) - log1p(exp(-|x|)) (no overflow at any x).
def _log_sigmoid_ref(x):
    return np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))


def _bce_logits_ref(x, t, *weights, reduction, weighted=False, pos_weighted=False):
    weight, pos_weight = _weights((x, t) + weights, {"weighted": weighted, "pos_weighted": pos_weighted})
    with np.errstate(all="ignore"):
        log_sigmoid = _log_sigmoid_ref(x)
        if pos_weight is not None:
            log_sigmoid = log_sigmoid * ((pos_weight - 1) * t + 1)
        losses = (1 - t) * x - log_sigmoid
        if weight is not None:
            losses = losses * weight
    return _reduced_ref(losses.astype(x.dtype, copy=False), reduction)


def _log_sigmoid(e, x):
    return e.sub(e.op("minimum", x, e.const(0, x)), e.op("log1p", e.exp(e.neg(e.op("abs", x)))))


def _bce_logits_decompose(e, xs, attrs):
    x, t = xs[:2]
    weight, pos_weight = _weights(xs, attrs)
    log_sigmoid = _log_sigmoid(e, x)
    if pos_weight is not None:
        log_sigmoid = e.mul(log_sigmoid, e.add(e.mul(e.sub(pos_weight, 1), t), 1))
    losses = e.sub(e.mul(e.sub(1, t), x), log_sigmoid)
    if weight is not None:
        losses = e.mul(losses, weight)
    return [_reduced(e, losses, attrs["reduction"])]


def _bce_logits_vjp(e, xs, ys, gs, attrs, needs):
    # torch's binary_cross_entropy_with_logits_backward and its _target_backward:
    #   input:  (pos_weight * target + 1 - target) * sigmoid(input) - pos_weight * target
    #           (sigmoid(input) - target without pos_weight)
    #   target: log_sigmoid(-input) - pos_weight * log_sigmoid(input)   (-input without)
    x, t = xs[:2]
    weight, pos_weight = _weights(xs, attrs)
    g, r = gs[0], attrs["reduction"]
    grads = [None] * len(xs)
    if needs[0]:
        if pos_weight is not None:
            pt = e.mul(pos_weight, t)
            grad = e.sub(e.mul(e.sub(e.add(pt, 1), t), e.sigmoid(x)), pt)
        else:
            grad = e.sub(e.sigmoid(x), t)
        grads[0] = _scaled_grad(e, grad, g, x, weight, r)
    if needs[1]:
        if pos_weight is not None:
            grad = e.sub(_log_sigmoid(e, e.neg(x)), e.mul(_log_sigmoid(e, x), pos_weight))
        else:
            grad = e.neg(x)
        grads[1] = _scaled_grad(e, grad, g, x, weight, r)
    return grads


register(OpDef("bce_with_logits", COMPOSITE, _bce_infer("bce_with_logits", 2), _bce_logits_ref, _bce_logits_vjp,
               decompose=_bce_logits_decompose, nondiff_inputs=(2, 3), extra={"takes_operand_layout": True},
               doc="bce_with_logits(input, target[, weight][, pos_weight]; reduction, weighted, pos_weighted): "
                   "binary cross-entropy of sigmoid(input) against target, reduced"))


# binary_cross_entropy(input, target[, weight]; reduction, weighted) of probabilities, as
# torch's kernel: (target - 1) * max(log1p(-input), -100) - target * max(log(input), -100),
# times weight (the log's clamp keeps a 0 or 1 input finite). Input and target values in
# [0, 1] are the caller's check (they are data).
def _bce_ref(p, t, *weights, reduction, weighted=False):
    with np.errstate(all="ignore"):
        losses = (t - 1) * np.maximum(np.log1p(-p), p.dtype.type(-100)) - t * np.maximum(np.log(p),
                                                                                          p.dtype.type(-100))
        if weighted:
            losses = losses * weights[0]
    return _reduced_ref(losses.astype(p.dtype, copy=False), reduction)


def _bce_decompose(e, xs, attrs):
    p, t = xs[:2]
    log_q = e.maximum(e.op("log1p", e.neg(p)), e.const(-100, p))
    log_p = e.maximum(e.log(p), e.const(-100, p))
    losses = e.sub(e.mul(e.sub(t, 1), log_q), e.mul(t, log_p))
    if attrs.get("weighted"):
        losses = e.mul(losses, xs[2])
    return [_reduced(e, losses, attrs["reduction"])]


_BCE_EPSILON = 1e-12        # torch's clamp of the input gradient's denominator


def _bce_vjp(e, xs, ys, gs, attrs, needs):
    # torch's binary_cross_entropy_backward: (input - target) / max((1 - input) * input, 1e-12);
    # and binary_cross_entropy_target_backward: -logit(input) = -log(input / (1 - input))
    p, t = xs[:2]
    weight = xs[2] if attrs.get("weighted") else None
    g, r = gs[0], attrs["reduction"]
    grads = [None] * len(xs)
    if needs[0]:
        denominator = e.maximum(e.mul(e.sub(1, p), p), e.const(_BCE_EPSILON, p))
        grads[0] = _scaled_grad(e, e.div(e.sub(p, t), denominator), g, p, weight, r)
    if needs[1]:
        grads[1] = _scaled_grad(e, e.neg(e.log(e.div(p, e.sub(1, p)))), g, p, weight, r)
    return grads


register(OpDef("binary_cross_entropy", COMPOSITE, _bce_infer("binary_cross_entropy", 2), _bce_ref, _bce_vjp,
               decompose=_bce_decompose, nondiff_inputs=(2,), extra={"takes_operand_layout": True},
               doc="binary_cross_entropy(input, target[, weight]; reduction, weighted): the binary "
                   "cross-entropy of probabilities `input` against `target`, reduced"))


# ------------------------------------------------------------------ nll_loss
# nll_loss(log_probs, target, classes[, weight]; reduction, ignore_index) for
# log_probs of shape (N, C) or (C,) and int64 class indices (N,) or (): torch's
# NllLossBackward0 (cross_entropy's node after LogSoftmaxBackward0). Targets are
# checked against the class count by the caller (their values are data). As a
# gather is not a kernel op, the picked value is a masked sum over the classes
# (a one-hot select). For (N, C) log-probabilities the one-hot compares each
# target with the position along the classes (an iota): a row kernel then reads
# the picked value (and weight) at the target instead of summing the select
# (codegen/picks.py; W3's kernel ~14% faster serially), and the gradient's
# one-hot compares with the loop counter. `classes` is arange(C), an operand
# that (C,) log-probabilities compare with (a vector load).
def _nll_infer(types, attrs):
    lp, target, classes = types[0], types[1], types[2]
    if lp.ndim not in (1, 2) or target.shape != lp.shape[:-1] or not lp.dtype.is_floating_point or \
            target.dtype.is_floating_point or classes.shape != lp.shape[-1:] or classes.dtype is not target.dtype \
            or (len(types) == 4 and types[3].shape != lp.shape[-1:]):
        raise TypeError(f"nll_loss: expected (N, C) or (C,) log-probabilities, class indices of the batch "
                        f"shape, arange(C) and a (C,) weight, got {', '.join(str(t) for t in types)}")
    if attrs["reduction"] not in REDUCTIONS:
        raise ValueError(f"{attrs['reduction']} is not a valid value for reduction")
    return [TensorType(target.shape if attrs["reduction"] == "none" else (), lp.dtype)]


def _picked_weights(weight, safe, valid, dtype):
    """The class weight of each valid target (0 at ignored ones; all of them are ignored where
    there are no classes, else the bounds check raised)."""
    if weight is None:
        return valid.astype(dtype)
    return weight[safe] * valid if weight.size else np.zeros(valid.shape, weight.dtype)


def _nll_ref(log_probs, target, classes, weight=None, *, reduction, ignore_index):
    valid = target != ignore_index
    safe = np.where(valid, target, 0)
    if log_probs.shape[-1]:
        picked = np.take_along_axis(log_probs, safe[..., None], axis=-1)[..., 0]
    else:                   # no classes: every target is ignored (torch: mean nan, sum 0)
        picked = np.zeros(target.shape, log_probs.dtype)
    w_t = _picked_weights(weight, safe, valid, picked.dtype)
    # An ignored position reads nothing (a -inf there is no NaN) and loses +0, as torch's.
    losses = np.where(valid, -(w_t * picked), 0)
    if reduction == "none":
        return losses.astype(log_probs.dtype)
    total = np.sum(losses, dtype=log_probs.dtype) + log_probs.dtype.type(0)    # (a sum from +0, as torch's)
    if reduction == "sum":
        return np.asarray(total)
    return np.asarray(total / np.sum(w_t, dtype=log_probs.dtype), dtype=log_probs.dtype)


def _nll_parts(e, xs, attrs):
    """(one-hot of the valid targets over the classes, per-sample weight, valid) in IR ops."""
    lp, target, classes = xs[0], xs[1], xs[2]
    valid = e.ne(target, e.const(attrs["ignore_index"], target))
    safe = e.where(valid, target, e.const(-1, target))       # -1 matches no class
    if lp.type.ndim == 2:
        n, c = lp.shape
        one_hot = e.eq(e.reshape(safe, (n, 1)), e.op("iota", shape=(1, c), axis=1, dtype=target.dtype))
    else:
        one_hot = e.eq(safe, classes)
    if len(xs) == 4:
        weight = xs[3] if lp.type.ndim == 1 else e.reshape(xs[3], (1, lp.shape[1]))
        w_t = e.sum(e.where(one_hot, weight, 0), (lp.type.ndim - 1,))
    else:
        w_t = e.cast(valid, lp.dtype)
    return one_hot, w_t, valid


def _nll_vjp(e, xs, ys, gs, attrs, needs):
    grad = e.op("nll_loss_backward", gs[0], *xs, reduction=attrs["reduction"], ignore_index=attrs["ignore_index"])
    return [grad if needs[0] else None] + [None] * (len(xs) - 1)


# nll_loss_backward(grad, log_probs, target, classes[, weight]; reduction, ignore_index):
# nll_loss's VJP, as torch's op (a create_graph gradient records NllLossBackwardBackward0,
# linked to log_probs). Kernels see its decomposition (a one-hot select, which
# codegen/picks.py reads as a compare with the loop counter); its reference writes zeros
# and scatters the per-sample values (a select over every element costs ~3x as much).
def _nll_backward_infer(types, attrs):
    g, rest = types[0], types[1:]
    want = _nll_infer(rest, attrs)[0]
    if g != want:
        raise TypeError(f"nll_loss_backward: expected a gradient of type {want}, got {g}")
    return [rest[0]]


def _nll_backward_into(out, g, log_probs, target, classes, weight=None, *, reduction, ignore_index):
    valid = target != ignore_index
    safe = np.where(valid, target, 0)
    if weight is not None:
        w_t = _picked_weights(weight, safe, valid, out.dtype)
    if reduction == "mean":
        total = np.sum(w_t, dtype=out.dtype) if weight is not None else out.dtype.type(np.count_nonzero(valid))
        g = g / total
    per_sample = -(g * w_t) if weight is not None else -np.broadcast_to(g, target.shape)
    out.fill(0)
    if out.ndim == 2:
        rows = np.flatnonzero(valid)
        out[rows, safe[rows]] = per_sample[rows]
    elif valid:
        out[safe] = per_sample
    return out


def _nll_backward_ref(g, log_probs, *rest, **attrs):
    return _nll_backward_into(np.empty_like(log_probs), g, log_probs, *rest, **attrs)


def _nll_backward_decompose(e, xs, attrs):
    g, lp = xs[0], xs[1]
    one_hot, w_t, _ = _nll_parts(e, xs[1:], attrs)
    if attrs["reduction"] == "mean":
        g = e.div(g, e.sum(w_t, tuple(range(w_t.type.ndim))))
    if attrs["reduction"] != "none":
        g = e.expand(e.reshape(g, (1,) * w_t.type.ndim), w_t.shape)
    per_sample = e.neg(e.mul(g, w_t)) if len(xs) == 5 else e.neg(g)
    if lp.type.ndim == 2:
        per_sample = e.reshape(per_sample, (lp.shape[0], 1))
    return [e.where(one_hot, e.expand(per_sample, lp.shape), 0)]


def _nll_backward_vjp(e, xs, ys, gs, attrs, needs):
    # torch: grad_output -> nll_loss(grad, target, weight, ...); self -> zeros
    gg = gs[0]
    d_grad = e.op("nll_loss", gg, *xs[2:], reduction=attrs["reduction"], ignore_index=attrs["ignore_index"]) \
        if needs[0] else None
    return [d_grad, e.zeros_like(xs[1]) if needs[1] else None] + [None] * (len(xs) - 2)


def _nll_decompose(e, xs, attrs):
    lp = xs[0]
    one_hot, w_t, valid = _nll_parts(e, xs, attrs)
    picked = e.sum(e.where(one_hot, lp, 0), (lp.type.ndim - 1,))
    losses = e.neg(e.mul(w_t, picked)) if len(xs) == 4 else e.neg(picked)
    if attrs["reduction"] == "none":
        return [e.where(valid, losses, 0)]          # an ignored position loses +0, as torch's
    total = e.sum(losses, tuple(range(losses.type.ndim)))
    if attrs["reduction"] == "sum":
        return [total]
    return [e.div(total, e.sum(w_t, tuple(range(w_t.type.ndim))))]


register(OpDef("nll_loss", COMPOSITE, _nll_infer, _nll_ref, _nll_vjp, decompose=_nll_decompose,
               doc="nll_loss(log_probs, target, classes[, weight]; reduction, ignore_index): -log_probs[target], "
                   "reduced"))
register(OpDef("nll_loss_backward", COMPOSITE, _nll_backward_infer, _nll_backward_ref, _nll_backward_vjp,
               decompose=_nll_backward_decompose, extra={"ref_into": _nll_backward_into},
               doc="nll_loss_backward(grad, log_probs, target, classes[, weight]; reduction, ignore_index): "
                   "nll_loss's VJP, as torch's op"))


# ------------------------------------------------------------------ nll_loss_nd
# nll_loss_nd(log_probs, target, classes[, weight]; reduction, ignore_index) for
# (N, C, d1, ...) log-probabilities and (N, d1, ...) class indices, the classes along
# dim 1: torch's NllLoss2DBackward0 (cross_entropy of images). It is nll_loss on the
# classes-last rows (a permute, then a reshape to (N*d1*..., C)): its reference, its
# decomposition and its VJP all compute it so. One op, so that autograd records one
# node linked to log_probs, as torch's.
def _rows_order(ndim: int) -> tuple:
    return (0,) + tuple(range(2, ndim)) + (1,)


def _nll_nd_infer(types, attrs):
    lp, target = types[0], types[1]
    if lp.ndim < 3 or target.shape != (lp.shape[0],) + lp.shape[2:]:
        raise TypeError(f"nll_loss_nd: expected (N, C, d1, ...) log-probabilities and (N, d1, ...) class "
                        f"indices, got {', '.join(str(t) for t in types)}")
    rows = target.numel
    _nll_infer([TensorType((rows, lp.shape[1]), lp.dtype), TensorType((rows,), target.dtype)] + list(types[2:]),
               attrs)
    return [TensorType(target.shape if attrs["reduction"] == "none" else (), lp.dtype)]


def _nll_nd_ref(log_probs, target, classes, weight=None, **attrs):
    rows = np.transpose(log_probs, _rows_order(log_probs.ndim)).reshape(target.size, log_probs.shape[1])
    out = _nll_ref(rows, target.reshape(-1), classes, weight, **attrs)
    return out.reshape(target.shape) if attrs["reduction"] == "none" else out


def _as_rows(e, log_probs, target):
    rows = target.type.numel
    permuted = e.op("permute", log_probs, dims=_rows_order(log_probs.type.ndim))
    return e.reshape(permuted, (rows, log_probs.shape[1])), e.reshape(target, (rows,))


def _nll_nd_decompose(e, xs, attrs):
    rows, target = _as_rows(e, xs[0], xs[1])
    out = e.op("nll_loss", rows, target, *xs[2:], **attrs)
    return [e.reshape(out, xs[1].shape) if attrs["reduction"] == "none" else out]


def _nll_nd_vjp(e, xs, ys, gs, attrs, needs):
    if not needs[0]:
        return [None] * len(xs)
    log_probs, order = xs[0], _rows_order(xs[0].type.ndim)
    rows, target = _as_rows(e, log_probs, xs[1])
    g = e.reshape(gs[0], target.shape) if attrs["reduction"] == "none" else gs[0]
    grad_rows = e.op("nll_loss_backward", g, rows, target, *xs[2:], **attrs)
    permuted = e.reshape(grad_rows, tuple(log_probs.shape[k] for k in order))
    return [e.op("permute", permuted, dims=tuple(int(k) for k in np.argsort(order)))] + [None] * (len(xs) - 1)


register(OpDef("nll_loss_nd", COMPOSITE, _nll_nd_infer, _nll_nd_ref, _nll_nd_vjp, decompose=_nll_nd_decompose,
               doc="nll_loss_nd(log_probs, target, classes[, weight]; reduction, ignore_index): nll_loss with "
                   "the classes along dim 1 of (N, C, d1, ...)"))
