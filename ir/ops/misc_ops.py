"""frexp, nextafter and renorm (tracer/misc_functions.py): ops of their own, as torch records
each as one node (FrexpBackward0, NextafterBackward0, RenormBackward0).

- frexp(x) -> (mantissa, exponent): NumPy's frexp; the exponent is int64 (torch's is int32,
  a dtype fusegrad lacks) and carries no gradient; the mantissa's gradient is g / 2**exponent.
- nextafter(a, b): the next float after a towards b; torch's gradient passes to a where a != b.
- renorm(x; p, axis, maxnorm): each slice along `axis` whose p-norm exceeds maxnorm scaled to
  norm maxnorm (factor maxnorm / (norm + 1e-7), torch's); its VJP is torch's renorm_backward.
"""
from __future__ import annotations

import numpy as np

from ..types import TensorType, int64
from .elementwise import elementwise
from .registry import MOVEMENT, OTHER_THEN_SELF, OpDef, register


# --------------------------------------------------------------------- frexp
def _frexp_infer(types, attrs):
    x = types[0]
    return [x, TensorType(x.shape, int64)]


def _frexp_ref(x):
    mantissa, exponent = np.frexp(x)
    return mantissa.astype(x.dtype, copy=False), exponent.astype(np.int64)


def _frexp_vjp(e, x, y, g, a, n):
    if not n[0] or g[0] is None:
        return [None]
    # torch's formula: grad / exponent.exp2()
    return [e.div(g[0], e.op("exp2", e.cast(y[1], x[0].dtype)))]


register(OpDef("frexp", MOVEMENT, _frexp_infer, _frexp_ref, _frexp_vjp, reference_only=True, nondiff_outputs=(1,),
               doc="frexp(x) -> (mantissa, exponent): x = mantissa * 2**exponent, 0.5 <= |mantissa| < 1",
               extra={"node": "FrexpBackward0", "reference_why": "NumPy's frexp"}))


# --------------------------------------------------------------------- nextafter
def _nextafter_vjp(e, x, y, g, a, n):
    # torch's NextafterBackward0: the gradient passes to self where self != other (NaN
    # included), zero where they are equal (0 and -0 too: the result is other, whatever self
    # does); none to other
    return [e.where(e.ne(x[0], x[1]), g[0], 0), e.zeros_like(x[1])]


elementwise("nextafter", np.nextafter, _nextafter_vjp, "np.nextafter({0}, {1})", float_only=True,
            doc="nextafter(a, b): the next representable value after a towards b",
            # (torch's node saves both operands, which its formula does not read, and unpacks
            # other first: a write of either before the backward raises)
            extra={"node": "NextafterBackward0", "always_saves": (("in", 0), ("in", 1)),
                   "unpack_order": OTHER_THEN_SELF})


# --------------------------------------------------------------------- renorm
def _renorm_infer(types, attrs):
    return [types[0]]


def _reduced_axes(ndim: int, axis: int) -> tuple:
    return tuple(d for d in range(ndim) if d != axis)


def _norms(x, p, axes):
    a = np.abs(x)
    if p == np.inf:
        return np.max(a, axis=axes, keepdims=True) if a.size else np.zeros((1,) * x.ndim, x.dtype)
    return np.power(np.sum(np.power(a, p), axis=axes, keepdims=True), 1.0 / p).astype(x.dtype)


def _renorm_ref(x, p, axis, maxnorm):
    norm = _norms(x, p, _reduced_axes(x.ndim, axis))
    factor = np.where(norm > maxnorm, x.dtype.type(maxnorm) / (norm + x.dtype.type(1e-7)), x.dtype.type(1))
    return (x * factor).astype(x.dtype, copy=False)


def _renorm_vjp(e, x, y, g, a, n):
    if not n[0]:
        return [None]
    xv, gv = x[0], g[0]
    p, maxnorm, axes = a["p"], a["maxnorm"], _reduced_axes(len(xv.shape), a["axis"])
    absolute = e.op("abs", xv)
    if p == np.inf:
        norm = e.amax(absolute, axes, keepdim=True)
    else:
        norm = e.pow(e.sum(e.pow(absolute, e.const(p, xv)), axes, keepdim=True), e.const(1.0 / p, xv))
    dot = e.sum(e.mul(xv, gv), axes, keepdim=True)
    zero, one = e.const(0, xv), e.const(1, xv)
    if p == 1:
        nb = e.mul(e.sign(xv), dot)
    elif p == np.inf:
        hit = e.cast(e.eq(absolute, norm), xv.dtype)
        count = e.sum(hit, axes, keepdim=True)
        nb = e.div(e.mul(e.mul(e.sign(xv), hit), dot), count)
    else:
        scaled = e.mul(e.mul(xv, e.pow(absolute, e.const(p - 2, xv))), dot) if p != 2 else e.mul(xv, dot)
        denominator = e.pow(norm, e.const(p - 1, xv)) if p != 2 else norm
        nb = e.where(e.eq(norm, zero), zero, e.div(scaled, denominator))
    invnorm = e.div(one, e.add(norm, e.const(1e-7, xv)))
    factor = e.mul(invnorm, e.const(maxnorm, xv))
    inner = e.sub(e.mul(factor, gv), e.mul(e.mul(factor, invnorm), nb))
    return [e.where(e.gt(norm, e.const(maxnorm, xv)), inner, gv)]


register(OpDef("renorm", MOVEMENT, _renorm_infer, _renorm_ref, _renorm_vjp, reference_only=True,
               doc="renorm(x; p, axis, maxnorm): slices along axis with p-norm above maxnorm scaled to maxnorm",
               extra={"node": "RenormBackward0", "reference_why": "a per-slice norm and scale",
                      "row_major_result": True}))     # (torch's structured renorm allocates it so)

