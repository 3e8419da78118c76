"""Variance and standard deviation over axes (torch.var / torch.std), with a correction
(Bessel's by default): composites a kernel computes as a mean, then a sum of squared
deviations, and whose VJPs are torch's var_backward and std_backward."""
from __future__ import annotations

import numpy as np

from ..types import float64
from .reduce import SELF_THEN_RESULT, _infer_reduce, grad_keepdim
from .registry import COMPOSITE, OpDef, register


def reduced_count(shape, axes) -> int:
    """How many elements each result reduces."""
    count = 1
    for ax in axes:
        count *= shape[ax]
    return count


def _var_wide(x, axes, correction, keepdim):
    """The variance in double, not rounded: as torch's CPU kernel accumulates a float32
    variance in double; divided by max(0, n - correction), so no degrees of freedom give
    inf or NaN."""
    wide = x.astype(np.float64)         # (a copy, which the deviations then overwrite)
    if wide.size:
        wide -= wide.mean(axis=axes, keepdims=True)
        np.multiply(wide, wide, out=wide)
    total = np.sum(wide, axis=axes, keepdims=keepdim)
    dof = max(0.0, reduced_count(x.shape, axes) - correction)
    return np.true_divide(total, dof) if x.size else np.full(total.shape, np.nan)


def _var_ref(x, axes, correction, keepdim):
    return np.asarray(_var_wide(x, axes, correction, keepdim), dtype=x.dtype)


def _std_ref(x, axes, correction, keepdim):
    return np.asarray(np.sqrt(_var_wide(x, axes, correction, keepdim)), dtype=x.dtype)


def _var_grad(e, g, x, axes, correction, keepdim):
    """torch's var_backward: 2 / (n - correction) * g * (x - mean); with no degrees of freedom
    over all elements, g * (NaN where x is the mean, else inf). Over some dims torch does not
    clamp: a correction past n gives a negative factor, one equal to n an infinite one."""
    n = reduced_count(x.shape, axes)
    centred = e.sub(x, e.div(e.sum(x, axes, keepdim=True), n))
    grad = grad_keepdim(e, g, x, axes, keepdim)     # (broadcast: x's layout decides the gradient's)
    dof = n - correction
    if dof <= 0 and len(axes) == len(x.shape):
        return e.mul(grad, e.where(e.eq(centred, 0), float("nan"), e.add(e.zeros_like(centred), float("inf"))))
    return e.mul(e.mul(grad, 2.0 / dof if dof != 0 else float("inf")), centred)


def _var_vjp(e, x, y, g, a, n):
    return [_var_grad(e, g[0], x[0], a["axes"], a["correction"], a["keepdim"])]


def _std_vjp(e, x, y, g, a, n):
    # torch's std_backward: var_backward of g / (2 std), 0 where std is 0
    per_var = e.where(e.eq(y[0], 0), 0, e.div(g[0], e.mul(y[0], 2)))
    return [_var_grad(e, per_var, x[0], a["axes"], a["correction"], a["keepdim"])]


def _wide_var(e, x, a):
    """The variance in float64 (x's dtype when it is float64): its mean, deviations, squares
    and sum taken in double and divided there, as the reference and torch's CPU kernel
    accumulate. A float32 mean rounds by up to half an ulp of the data, so squared deviations
    from it miss the variance of data far from zero (1e6 + 0.1 * k: 20% off), and float32
    squares of deviations past 1.8e19 overflow (torch's std of +-1e20 is finite)."""
    axes = a["axes"]
    n = reduced_count(x.shape, axes)
    wide = x if x.dtype is float64 else e.cast(x, float64)
    centred = e.sub(wide, e.div(e.sum(wide, axes, keepdim=True), n))
    return e.div(e.sum(e.mul(centred, centred), axes, a["keepdim"]), max(0.0, n - a["correction"]))


def _var_decompose(e, xs, a):
    x = xs[0]
    var = _wide_var(e, x, a)
    return [var if x.dtype is float64 else e.cast(var, x.dtype)]


def _std_decompose(e, xs, a):
    x = xs[0]
    std = e.sqrt(_wide_var(e, x, a))        # (rounded once, as the reference)
    return [std if x.dtype is float64 else e.cast(std, x.dtype)]


register(OpDef("var", COMPOSITE, _infer_reduce, _var_ref, _var_vjp, decompose=_var_decompose,
               doc="var(x; axes, correction, keepdim): sum of squared deviations / (n - correction)",
               extra={"row_major_result": True}))
register(OpDef("std", COMPOSITE, _infer_reduce, _std_ref, _std_vjp, decompose=_std_decompose,
               doc="std(x; axes, correction, keepdim): the square root of var",
               extra={"row_major_result": True, **SELF_THEN_RESULT}))
