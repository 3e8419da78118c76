"""Loss ops recorded as one node each, as torch records them (MseLossBackward0).

Each decomposes into the elementwise and reduce ops the scheduler fuses.
"""
from __future__ import annotations

import numpy as np

from ..types import TensorType
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
    losses = d * d
    if reduction == "mean":
        return np.asarray(np.mean(losses, dtype=x.dtype))
    if reduction == "sum":
        return np.asarray(np.sum(losses, dtype=x.dtype))
    return losses


def _mse_vjp(e, xs, ys, gs, attrs, needs):
    # torch's mse_loss_backward: (2 / n if mean else 2) * (input - target) * grad.
    x, t = xs
    scale = 2.0 / max(x.type.numel, 1) if attrs["reduction"] == "mean" else 2.0
    grad = gs[0] if attrs["reduction"] == "none" else e.expand(e.reshape(gs[0], (1,) * x.type.ndim), x.shape)
    gx = e.mul(e.mul(e.sub(x, t), scale), grad)
    return [gx if needs[0] else None, e.neg(gx) if needs[1] else None]


def _mse_decompose(e, xs, attrs):
    x, t = xs
    d = e.sub(x, t)
    losses = e.mul(d, d)
    axes = tuple(range(x.type.ndim))
    if attrs["reduction"] == "mean":
        return [e.op("mean", losses, axes=axes, keepdim=False)]
    if attrs["reduction"] == "sum":
        return [e.sum(losses, axes)]
    return [losses]


register(OpDef("mse_loss", COMPOSITE, _mse_infer, _mse_ref, _mse_vjp, decompose=_mse_decompose,
               doc="mse_loss(input, target; reduction): (input - target)**2, reduced"))
