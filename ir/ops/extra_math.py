"""Further pointwise math users porting torch code reach for: lerp, addcmul, addcdiv, hypot,
logaddexp(2), xlogy, logit, erfc, deg2rad, rad2deg, sgn, signbit, nan_to_num, copysign,
asinh/acosh/atanh, heaviside and fmod; and repeat (torch's Tensor.repeat and tile).

Each op keeps torch's CPU formula (the branch of lerp at weight 0.5, logaddexp's max plus
log1p) and its backward formula from derivatives.yaml as the VJP, emitted in IR ops so that
create_graph differentiates it again. The user-level functions, their promotion and torch's
node names are in tracer/extra_functions.py.
"""
from __future__ import annotations

import math

import numpy as np

from .. import fma, rounded
from ..types import TensorType, bool_
from .elementwise import BOOL_SUBTRACTION, _infer_map, elementwise
from .registry import COMPOSITE, OTHER_THEN_SELF, NoDerivativeError, OpDef, register

_INV_LN2 = 1.0 / math.log(2.0)
_DEG2RAD = math.pi / 180.0
_RAD2DEG = 180.0 / math.pi


def _quiet(fn):
    def ref(*arrays, **attrs):
        with np.errstate(all="ignore"):
            return fn(*arrays, **attrs)
    ref.__name__ = fn.__name__
    return ref


def _isnan(e, x):
    return e.ne(x, x)


def _isinf(e, x):
    return e.eq(e.op("abs", x), math.inf)


# ------------------------------------------------------------------ lerp
# torch's CPU lerp (its vectorised kernel, lerp_vec, and the scalar one as GCC contracts it):
# fma(weight, end - self, self) where |weight| < 0.5, else fma(weight - 1, end - self, end),
# each rounded once; backward self: grad * (1 - weight), end: grad * weight,
# weight: grad * (end - self)
@_quiet
def _lerp_ref(a, b, w):
    dtype = np.result_type(a, b, w)
    a, b, w = (np.asarray(x, dtype) for x in (a, b, w))
    diff = b - a
    one = dtype.type(1)
    small = np.abs(w) < 0.5
    return np.asarray(np.where(small, fma.fma(w, diff, a, dtype), fma.fma(w - one, diff, b, dtype)), dtype)


def _lerp_decompose(e, xs, a):
    x, end, w = xs
    diff = e.sub(end, x)
    small = e.lt(e.op("abs", w), e.const(0.5, w))
    return [e.where(small, e.scaled_add(x, diff, w), e.scaled_add(end, diff, e.sub(w, e.const(1, w))))]


def _lerp_vjp(e, x, y, g, a, n):
    self_, end, w = x
    return [e.mul(g[0], e.sub(e.const(1, w), w)) if n[0] else None,
            e.mul(g[0], w) if n[1] else None,
            e.mul(g[0], e.sub(end, self_)) if n[2] else None]


register(OpDef("lerp", COMPOSITE, _infer_map("lerp", float_only=True), _lerp_ref, _lerp_vjp,
               decompose=_lerp_decompose, doc="lerp(self, end, weight): torch's linear interpolation",
               # (LerpBackward0 keeps a number weight: not saved; LerpBackward1 unpacks end, self, weight)
               extra={"scalar_attributes": (2,), "unpack_order": (("in", 1), ("in", 0), ("in", 2))}))


# ------------------------------------------------------------------ addcmul / addcdiv
# (the fourth operand is `value`, a 0-d constant of the operands' dtype)
def _addcmul_vjp(e, x, y, g, a, n):
    _, t1, t2, value = x
    return [g[0] if n[0] else None,
            e.mul(g[0], e.mul(t2, value)) if n[1] else None,
            e.mul(g[0], e.mul(t1, value)) if n[2] else None, None]


def _addcdiv_vjp(e, x, y, g, a, n):
    _, t1, t2, value = x
    return [g[0] if n[0] else None,
            e.mul(g[0], e.div(value, t2)) if n[1] else None,
            e.mul(e.neg(g[0]), e.div(e.mul(value, t1), e.mul(t2, t2))) if n[2] else None, None]


# torch's addcmul kernel, self + value * t1 * t2, contracted by GCC: fma(value * t1, t2, self)
elementwise("addcmul", _quiet(lambda s, t1, t2, v: fma.fma(v * t1, t2, s, s.dtype)), _addcmul_vjp,
            "fg_fma({3} * {1}, {2}, {0})", nondiff_inputs=(3,), extra={"unpack_order": (("in", 1), ("in", 2))},
            doc="addcmul(self, t1, t2, value): self + value * t1 * t2 (the last addition fused)")
elementwise("addcdiv", _quiet(lambda s, t1, t2, v: np.asarray(s + v * t1 / t2, s.dtype)), _addcdiv_vjp,
            "({0} + {3} * {1} / {2})", float_only=True, nondiff_inputs=(3,),
            extra={"unpack_order": (("in", 1), ("in", 2))},          # torch's tensor1, tensor2
            doc="addcdiv(self, t1, t2, value): self + value * t1 / t2")


# ------------------------------------------------------------------ hypot, logaddexp, logaddexp2
def _hypot_vjp(e, x, y, g, a, n):
    # torch: self: grad * self / result; other: grad * other / result
    return [e.div(e.mul(g[0], x[0]), y[0]) if n[0] else None,
            e.div(e.mul(g[0], x[1]), y[0]) if n[1] else None]


elementwise("hypot", _quiet(np.hypot), _hypot_vjp, "np.hypot({0}, {1})", float_only=True,
            extra={"unpack_order": (("in", 1), ("out", 0), ("in", 0))},   # torch's other, result, self
            doc="hypot(a, b): sqrt(a**2 + b**2) without overflow")


def _logaddexp_ref(base2: bool):
    @_quiet
    def ref(a, b, bool_operand=False):
        dtype = np.result_type(a, b)
        m = np.maximum(a, b)
        d = -np.abs(a - b)
        tail = np.log1p(np.exp2(d)) * dtype.type(_INV_LN2) if base2 else np.log1p(np.exp(d))
        out = np.where(np.isinf(a) & (a == b), a, m + tail)
        return np.asarray(out, dtype)
    return ref


def _logaddexp_decompose(base2: bool):
    # torch's CPU kernel: a where a is infinite and a == b, else max(a, b) + log1p(exp(-|a - b|))
    # (logaddexp2: log1p(exp2(-|a - b|)) / ln 2)
    def decompose(e, xs, attrs):
        a, b = xs
        d = e.neg(e.op("abs", e.sub(a, b)))
        tail = e.mul(e.op("log1p", e.op("exp2", d)), _INV_LN2) if base2 else e.op("log1p", e.exp(d))
        same_inf = e.logical_and(_isinf(e, a), e.eq(a, b))
        return [e.where(same_inf, a, e.add(e.maximum(a, b), tail))]
    return decompose


def _logaddexp_vjp(base2: bool):
    # torch: self: grad / (1 + exp(other - self)); other: grad / (1 + exp(self - other))
    # (logaddexp2: pow(2, ...) for exp). With a bool operand (the attribute `bool_operand`, set
    # by the tracer: the IR sees it cast to float) torch's subtraction raises when it runs.
    def vjp(e, x, y, g, a, n):
        if a.get("bool_operand"):
            raise NoDerivativeError(BOOL_SUBTRACTION)
        def part(p, q):
            d = e.sub(p, q)
            return e.div(g[0], e.add(e.op("exp2", d) if base2 else e.exp(d), 1))
        return [part(x[1], x[0]) if n[0] else None, part(x[0], x[1]) if n[1] else None]
    return vjp


for _name, _base2 in (("logaddexp", False), ("logaddexp2", True)):
    register(OpDef(_name, COMPOSITE, _infer_map(_name, float_only=True), _logaddexp_ref(_base2),
                   _logaddexp_vjp(_base2), decompose=_logaddexp_decompose(_base2),
                   doc=f"{_name}(a, b): log{'2' if _base2 else ''}({'2' if _base2 else 'e'}**a + "
                       f"{'2' if _base2 else 'e'}**b), torch's formula"))
del _name, _base2


# ------------------------------------------------------------------ xlogy
@_quiet
def _xlogy_ref(x, y):
    # torch: NaN where y is NaN, 0 where x == 0, else x * log(y)
    log = rounded.log(np.asarray(y)) if y.dtype.kind == "f" else np.log(y)
    return np.asarray(np.where(np.isnan(y), np.nan, np.where(x == 0, 0, x * log)), x.dtype)


def _xlogy_decompose(e, xs, a):
    x, y = xs
    return [e.where(_isnan(e, y), math.nan, e.where(e.eq(x, 0), 0, e.mul(x, e.log(y))))]


def _xlogy_vjp(e, x, y, g, a, n):
    # torch 2.13: self: xlogy(grad, other) with 0 where self == 0 and other <= 0 (log(other)
    # where self is 0 and other is positive); other: grad * self / other
    return [e.where(e.logical_and(e.eq(x[0], 0), e.le(x[1], 0)), 0, e.op("xlogy", g[0], x[1])) if n[0] else None,
            e.div(e.mul(g[0], x[0]), x[1]) if n[1] else None]


register(OpDef("xlogy", COMPOSITE, _infer_map("xlogy", float_only=True), _xlogy_ref, _xlogy_vjp,
               decompose=_xlogy_decompose, doc="xlogy(x, y): x * log(y), 0 where x == 0 (NaN where y is)",
               extra={"unpack_order": OTHER_THEN_SELF}))


# ------------------------------------------------------------------ logit
@_quiet
def _logit_ref(x, eps):
    if eps is not None and eps >= 0:
        # torch's x < lo ? lo : (x > hi ? hi : x): for eps > 0.5 (lo > hi) not np.clip's hi
        lo, hi = x.dtype.type(eps), x.dtype.type(1 - eps)      # (1 - eps in double, as torch's)
        x = np.where(x < lo, lo, np.where(x > hi, hi, x))
    return np.asarray(rounded.log(np.asarray(x / (x.dtype.type(1) - x))), x.dtype)


def _logit_decompose(e, xs, a):
    x, eps = xs[0], a["eps"]
    if eps is not None and eps >= 0:
        lo, hi = e.const(eps, x), e.const(1 - eps, x)
        x = e.where(e.lt(x, lo), lo, e.where(e.gt(x, hi), hi, x))    # (NaN stays NaN)
    return [e.log(e.div(x, e.sub(e.const(1, x), x)))]


def _logit_vjp(e, x, y, g, a, n):
    # torch's logit_backward: grad / (x * (1 - x)); outside [0, 1] NaN without eps, and
    # outside [eps, 1 - eps] zero with it
    xv, eps = x[0], a["eps"]
    grad = e.div(g[0], e.mul(xv, e.sub(e.const(1, xv), xv)))
    if eps is None or eps < 0:
        lo, hi, fill = e.const(0, xv), e.const(1, xv), math.nan
    else:
        lo, hi, fill = e.const(eps, xv), e.const(1 - eps, xv), 0
    return [e.where(e.lt(xv, lo), fill, e.where(e.gt(xv, hi), fill, grad))]


register(OpDef("logit", COMPOSITE, _infer_map("logit", float_only=True), _logit_ref, _logit_vjp,
               decompose=_logit_decompose, doc="logit(x; eps): log(x / (1 - x)), x clamped to [eps, 1 - eps]"))


# ------------------------------------------------------------------ erfc
def _erfc_ref(x):
    wide = np.frompyfunc(math.erfc, 1, 1)(np.asarray(x, np.float64))
    return np.asarray(np.asarray(wide, np.float64), x.dtype)


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
# torch: -2 / sqrt(pi) * exp(-self**2) * grad
elementwise("erfc", _erfc_ref,
            lambda e, x, y, g, a, n: [e.mul(e.mul(e.exp(e.neg(e.mul(x[0], x[0]))), -_TWO_OVER_SQRT_PI), g[0])],
            "fg_erfc({0})", float_only=True, doc="the complementary error function, 1 - erf(x) (libm's)")


# ------------------------------------------------------------------ deg2rad / rad2deg
for _name, _factor in (("deg2rad", _DEG2RAD), ("rad2deg", _RAD2DEG)):
    register(OpDef(_name, COMPOSITE, _infer_map(_name, float_only=True),
                   (lambda f: lambda x: np.asarray(x * x.dtype.type(f), x.dtype))(_factor),
                   (lambda f: lambda e, x, y, g, a, n: [e.mul(g[0], f)])(_factor),
                   decompose=(lambda f: lambda e, xs, a: [e.mul(xs[0], f)])(_factor),
                   doc=f"{_name}(x): x times {_factor!r} in x's dtype"))
del _name, _factor


# ------------------------------------------------------------------ sgn, signbit
# sgn of a real tensor is sign; torch's sgn_backward of a real tensor is a zero tensor (it saves
# self and the result)
register(OpDef("sgn", COMPOSITE, _infer_map("sgn"),
               lambda x: np.asarray(np.where(np.isnan(x), 0, np.sign(x)), x.dtype) if x.dtype.kind == "f"
               else np.sign(x).astype(x.dtype),
               lambda e, x, y, g, a, n: [e.zeros_reading(x[0], x[0], y[0])],
               decompose=lambda e, xs, a: [e.sign(xs[0])], doc="sgn(x): sign(x) for real x"))
elementwise("signbit", np.signbit, None, "np.signbit({0})", result=bool_, float_only=True,
            doc="signbit(x): whether x's sign bit is set (-0.0 and -nan included)")


# ------------------------------------------------------------------ angle
# The argument of a real number: pi below 0, else 0 (-0.0 and -inf included as torch: 0 and pi),
# NaN kept; torch's angle_backward of a real tensor is zeros (its node saves self).
def _angle_ref(x):
    return np.asarray(np.where(np.isnan(x), x, np.where(x < 0, math.pi, 0)), x.dtype)


register(OpDef("angle", COMPOSITE, _infer_map("angle", float_only=True), _angle_ref,
               lambda e, x, y, g, a, n: [e.zeros_reading(x[0], x[0])],
               decompose=lambda e, xs, a: [e.where(_isnan(e, xs[0]), xs[0],
                                                   e.where(e.lt(xs[0], 0), e.const(math.pi, xs[0]), 0))],
               doc="angle(x): the argument of a real x, pi below 0, else 0 (NaN stays NaN)"))


# ------------------------------------------------------------------ nan_to_num
@_quiet
def _nan_to_num_ref(x, nan, posinf, neginf):
    return np.nan_to_num(x, copy=True, nan=x.dtype.type(nan), posinf=x.dtype.type(posinf),
                         neginf=x.dtype.type(neginf))


def _nan_to_num_decompose(e, xs, a):
    # (the tracer passes the replacements as floats of x's dtype)
    x, nan, posinf, neginf = xs[0], a["nan"], a["posinf"], a["neginf"]
    out = e.where(e.eq(x, math.inf), posinf, e.where(e.eq(x, -math.inf), neginf, x))
    return [e.where(_isnan(e, x), nan, out)]


def _nan_to_num_vjp(e, x, y, g, a, n):
    # torch: grad * at::isfinite(self)
    finite = e.logical_and(e.eq(x[0], x[0]), e.op("logical_not", _isinf(e, x[0])))
    return [e.mul(g[0], e.cast(finite, g[0].dtype))]


register(OpDef("nan_to_num", COMPOSITE, _infer_map("nan_to_num", float_only=True), _nan_to_num_ref,
               _nan_to_num_vjp, decompose=_nan_to_num_decompose,
               doc="nan_to_num(x; nan, posinf, neginf): those values for NaN, inf and -inf"))


# ------------------------------------------------------------------ copysign
def _copysign_vjp(e, x, y, g, a, n):
    # torch's copysign_tensor_self_backward: grad * (result / self), 0 where self == 0;
    # other: zeros
    ratio = e.where(e.eq(x[0], 0), 0, e.div(y[0], x[0]))
    return [e.mul(g[0], ratio) if n[0] else None, e.zeros_like(x[1]) if n[1] else None]


elementwise("copysign", np.copysign, _copysign_vjp, "np.copysign({0}, {1})", float_only=True,
            doc="copysign(a, b): |a| with b's sign")


# ------------------------------------------------------------------ inverse hyperbolic functions
def _square_plus(e, x, c):
    return e.add(e.mul(x, x), c)


# asinh: grad * (self**2 + 1).rsqrt(); acosh: grad * (self**2 - 1).rsqrt(); atanh: grad / (1 - self**2)
elementwise("asinh", rounded.RoundedUfunc(np.arcsinh),
            lambda e, x, y, g, a, n: [e.mul(g[0], e.op("rsqrt", _square_plus(e, x[0], 1)))], "np.arcsinh({0})",
            float_only=True)
elementwise("acosh", rounded.RoundedUfunc(np.arccosh),
            lambda e, x, y, g, a, n: [e.mul(g[0], e.op("rsqrt", _square_plus(e, x[0], -1)))], "np.arccosh({0})",
            float_only=True)
elementwise("atanh", rounded.RoundedUfunc(np.arctanh),
            lambda e, x, y, g, a, n: [e.mul(g[0], e.div(1, e.sub(1, e.mul(x[0], x[0]))))], "fg_atanh({0})",
            float_only=True)


# ------------------------------------------------------------------ heaviside
def _heaviside_ref(x, values, no_derivative=None):
    step = (x > 0).astype(x.dtype)
    return np.asarray(np.where(x == 0, values, step), x.dtype)


def _heaviside_decompose(e, xs, a):
    x, v = xs
    if x.dtype is bool_:
        return [e.where(x, x, v)]
    return [e.where(e.eq(x, 0), v, e.cast(e.gt(x, 0), x.dtype))]


def _heaviside_vjp(e, x, y, g, a, n):
    # (torch records a NotImplemented node: the tracer passes the attribute no_derivative)
    raise NoDerivativeError(f"derivative for aten::{a.get('no_derivative', 'heaviside')} is not implemented")


register(OpDef("heaviside", COMPOSITE, _infer_map("heaviside"), _heaviside_ref, _heaviside_vjp,
               decompose=_heaviside_decompose, doc="heaviside(x, values): 0, values or 1 by the sign of x"))


# ------------------------------------------------------------------ fmod
def _fmod_ref(a, b):
    if a.dtype.kind != "f":
        if np.any(b == 0) and all(np.broadcast_shapes(a.shape, np.shape(b))):
            raise RuntimeError("ZeroDivisionError")
        return np.fmod(a, b)
    with np.errstate(all="ignore"):
        return np.fmod(a, b)


def _fmod_check_now(in_types, arrays, attrs) -> None:
    if arrays[1] is not None and not in_types[1].dtype.is_floating_point:
        if np.any(arrays[1] == 0) and all(np.broadcast_shapes(in_types[0].shape, np.shape(arrays[1]))):
            raise RuntimeError("ZeroDivisionError")


def _fmod_vjp(e, x, y, g, a, n):
    # torch: self: grad; other: -grad * self.div(other, rounding_mode="trunc")
    return [g[0] if n[0] else None, e.neg(e.mul(g[0], e.op("div_trunc", x[0], x[1]))) if n[1] else None]


elementwise("fmod", _fmod_ref, _fmod_vjp, "np.fmod({0}, {1})",
            bool_error=NotImplementedError("\"fmod_cpu\" not implemented for 'Bool'"),
            extra={"kernel_floats_only": True, "check_now": _fmod_check_now, "unpack_order": OTHER_THEN_SELF,
                   "value_checks": lambda ins: not ins.inputs[1].dtype.is_floating_point},
            doc="fmod(a, b): C's fmod, the sign of the dividend (integers: a zero divisor raises)")


# ------------------------------------------------------------------ repeat
def _repeat_infer(types, attrs):
    x, reps = types[0], attrs["repeats"]
    shape = (1,) * (len(reps) - x.ndim) + tuple(x.shape)
    return [TensorType(tuple(r * s for r, s in zip(reps, shape)), x.dtype)]


def _repeat_ref(x, repeats):
    if not repeats:
        return np.array(x, copy=True)
    shape = (1,) * (len(repeats) - x.ndim) + x.shape
    return np.ascontiguousarray(np.tile(x.reshape(shape), repeats))


def _interleaved(repeats, shape):
    """(r0, s0, r1, s1, ...): the shape a repeat's result splits into."""
    return tuple(v for pair in zip(repeats, shape) for v in pair)


def _repeat_decompose(e, xs, a):
    x, reps = xs[0], a["repeats"]
    shape = (1,) * (len(reps) - x.type.ndim) + tuple(x.shape)
    spread = e.reshape(x, _interleaved((1,) * len(reps), shape))
    out = e.expand(spread, _interleaved(reps, shape))
    return [e.reshape(out, tuple(r * s for r, s in zip(reps, shape)))]


def _repeat_vjp(e, x, y, g, a, n):
    # torch's repeat_backward: the gradient split into (repeat, size) pairs, summed over the
    # repeats, then back to the input's shape
    reps, xs = a["repeats"], tuple(x[0].shape)
    shape = (1,) * (len(reps) - len(xs)) + xs
    split = e.reshape(g[0], _interleaved(reps, shape))
    return [e.reshape(e.sum(split, tuple(range(0, 2 * len(reps), 2))), xs)]


register(OpDef("repeat", COMPOSITE, _repeat_infer, _repeat_ref, _repeat_vjp, decompose=_repeat_decompose,
               doc="repeat(x; repeats): x tiled `repeats` times along each dim (torch's Tensor.repeat)"))
