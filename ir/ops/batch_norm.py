"""batch_norm and group_norm: torch's native_batch_norm and native_group_norm as composite ops
(one node each, NativeBatchNormBackward0 / NativeGroupNormBackward0), with their VJPs in IR ops.

batch_norm(x, weight, bias[, running_mean, running_var]; training, eps): x is (N, C, *), the
per-channel vectors have C elements. Training normalises each channel by the batch's mean and
biased variance; evaluation (the two running statistics given) by those statistics, which take
no gradient. The running statistics' update is the tracer's (fusegrad/nn/normalization.py).

group_norm(x, weight, bias; groups, eps): x (N, C, *) viewed as (N, groups, -1), each row
normalised by its own mean and biased variance, then scaled and shifted per channel.

Both compute in float64 in the reference and round once, as torch's CPU kernels accumulate in
double for float32.
"""
from __future__ import annotations

import numpy as np

from ..types import TensorType
from .registry import COMPOSITE, OpDef, register


def _infer(types, attrs):
    return [TensorType(types[0].shape, types[0].dtype)]


def _stat_axes(ndim: int) -> tuple:
    """The axes batch_norm reduces: all but the channel axis 1."""
    return (0,) + tuple(range(2, ndim))


def _channel_shape(shape) -> tuple:
    """The shape a per-channel vector takes to broadcast against x: (C, 1, ..., 1)."""
    return (shape[1],) + (1,) * (len(shape) - 2)


def _count(shape, axes) -> int:
    count = 1
    for a in axes:
        count *= shape[a]
    return count


def _group_shape(shape, groups: int) -> tuple:
    rest = 1
    for size in shape[1:]:
        rest *= size
    return (shape[0], groups, rest // groups if groups else 0)


# ---- NumPy references ------------------------------------------------------

def _bn_ref(x, weight, bias, *stats, training, eps):
    if not x.size:
        return np.empty(x.shape, x.dtype)
    wide = x.astype(np.float64)
    cshape = _channel_shape(x.shape)
    if training:
        axes = _stat_axes(x.ndim)
        mean = wide.mean(axis=axes, keepdims=True)
        wide -= mean
        var = np.square(wide).mean(axis=axes, keepdims=True)
    else:
        wide -= stats[0].astype(np.float64).reshape(cshape)
        var = stats[1].astype(np.float64).reshape(cshape)
    wide /= np.sqrt(var + eps)
    wide *= weight.astype(np.float64).reshape(cshape)
    wide += bias.astype(np.float64).reshape(cshape)
    return wide.astype(x.dtype)


def _gn_ref(x, weight, bias, groups, eps):
    if not x.size:
        return np.empty(x.shape, x.dtype)
    wide = x.astype(np.float64).reshape(_group_shape(x.shape, groups))
    wide -= wide.mean(axis=2, keepdims=True)
    wide /= np.sqrt(np.square(wide).mean(axis=2, keepdims=True) + eps)
    wide = wide.reshape(x.shape)
    cshape = _channel_shape(x.shape)
    wide *= weight.astype(np.float64).reshape(cshape)
    wide += bias.astype(np.float64).reshape(cshape)
    return wide.astype(x.dtype)


# ---- IR forms (decompositions and VJPs) --------------------------------------

def _moments(e, x, axes, count, eps):
    """(centred, rstd) of x over `axes` (rstd in keepdim shape), biased variance."""
    centred = e.sub(x, e.div(e.sum(x, axes, keepdim=True), count))
    var = e.div(e.sum(e.mul(centred, centred), axes, keepdim=True), count)
    return centred, e.div(e.const(1, var), e.sqrt(e.add(var, eps)))


def _bn_xhat(e, xs, a):
    """(xhat, rstd) of batch_norm's input, in its shape."""
    x = xs[0]
    cshape = _channel_shape(x.shape)
    if a["training"]:
        axes = _stat_axes(len(x.shape))
        centred, rstd = _moments(e, x, axes, _count(x.shape, axes), a["eps"])
    else:
        centred = e.sub(x, e.reshape(xs[3], cshape))
        var = e.reshape(xs[4], cshape)
        rstd = e.div(e.const(1, var), e.sqrt(e.add(var, a["eps"])))
    return e.mul(centred, rstd), rstd


def _affine(e, xhat, weight, bias, shape):
    cshape = _channel_shape(shape)
    return e.add(e.mul(xhat, e.reshape(weight, cshape)), e.reshape(bias, cshape))


def _bn_decompose(e, xs, a):
    xhat, _ = _bn_xhat(e, xs, a)
    return [_affine(e, xhat, xs[1], xs[2], xs[0].shape)]


def _normalized_grad(e, dxhat, xhat, rstd, axes, count):
    """The gradient through x -> (x - mean) * rstd over `axes`, given d/dxhat."""
    mean_d = e.div(e.sum(dxhat, axes, keepdim=True), count)
    mean_dx = e.div(e.sum(e.mul(dxhat, xhat), axes, keepdim=True), count)
    return e.mul(rstd, e.sub(e.sub(dxhat, mean_d), e.mul(xhat, mean_dx)))


def _param_grads(e, g, xhat, n, shape):
    axes = _stat_axes(len(shape))
    gw = e.sum(e.mul(g, xhat), axes) if n[1] else None
    gb = e.sum(g, axes) if n[2] else None
    return gw, gb


def _bn_vjp(e, xs, ys, gs, a, n):
    x, weight = xs[0], xs[1]
    g = gs[0]
    xhat, rstd = _bn_xhat(e, xs, a)
    gx = None
    if n[0]:
        dxhat = e.mul(g, e.reshape(weight, _channel_shape(x.shape)))
        if a["training"]:
            axes = _stat_axes(len(x.shape))
            gx = _normalized_grad(e, dxhat, xhat, rstd, axes, _count(x.shape, axes))
        else:
            gx = e.mul(dxhat, rstd)
    gw, gb = _param_grads(e, g, xhat, n, x.shape)
    return [gx, gw, gb] + [None] * (len(xs) - 3)


def _gn_xhat(e, x, a):
    gshape = _group_shape(x.shape, a["groups"])
    grouped = e.reshape(x, gshape)
    centred, rstd = _moments(e, grouped, (2,), gshape[2], a["eps"])
    return e.mul(centred, rstd), rstd, gshape


def _gn_decompose(e, xs, a):
    x, weight, bias = xs
    xhat, _, _ = _gn_xhat(e, x, a)
    return [_affine(e, e.reshape(xhat, x.shape), weight, bias, x.shape)]


def _gn_vjp(e, xs, ys, gs, a, n):
    x, weight, _ = xs
    g = gs[0]
    xhat_g, rstd, gshape = _gn_xhat(e, x, a)
    gx = None
    if n[0]:
        dxhat = e.reshape(e.mul(g, e.reshape(weight, _channel_shape(x.shape))), gshape)
        gx = e.reshape(_normalized_grad(e, dxhat, xhat_g, rstd, (2,), gshape[2]), x.shape)
    gw, gb = _param_grads(e, g, e.reshape(xhat_g, x.shape), n, x.shape)
    return [gx, gw, gb]


register(OpDef("batch_norm", COMPOSITE, _infer, _bn_ref, _bn_vjp, decompose=_bn_decompose,
               nondiff_inputs=(3, 4),
               doc="batch_norm(x, weight, bias[, running_mean, running_var]; training, eps): per-channel "
                   "normalisation by the batch's (training) or the running statistics, scale, shift",
               extra={"node": "NativeBatchNormBackward0", "row_major_result": True}))

register(OpDef("group_norm", COMPOSITE, _infer, _gn_ref, _gn_vjp, decompose=_gn_decompose,
               doc="group_norm(x, weight, bias; groups, eps): normalise each (sample, group), then scale "
                   "and shift per channel",
               extra={"node": "NativeGroupNormBackward0", "row_major_result": True}))
