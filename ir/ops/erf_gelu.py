"""erf and gelu. NumPy has no erf: the reference evaluates W. J. Cody's rational
Chebyshev approximations (1969; the SPECFUN CALERF ranges |x| <= 0.46875, <= 4 and
beyond) in float64, within 4 ulp of libm's double erf and so correctly rounded to
float32; kernels call codegen's fg_erf (float32: vectorised, within 1 ulp; float64: libm's).
gelu follows torch's formulas, exact ('none': x/2 * (1 + erf(x/sqrt 2))) and 'tanh'; its
gradient is torch's gelu_backward op, whose own gradient is torch's gelu_double_backward.
Eager execution runs codegen's loops for float32 erf, gelu and gelu_backward
(codegen/eager_loops.py, lent through EAGER_FORMS); the references here stay the oracle."""
from __future__ import annotations

import math

import numpy as np

from ..torch_order_jit import LOOP_FROM, by_row_blocks, loop_pays
from .elementwise import _infer_map, elementwise
from .registry import COMPOSITE, OpDef, register

_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02, 3.20937758913846947e03,
      1.85777706184603153e-1)
_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03, 2.84423683343917062e03)
_C = (5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01, 2.98635138197400131e02,
      8.81952221241769090e02, 1.71204761263407058e03, 2.05107837782607147e03, 1.23033935479799725e03,
      2.15311535474403846e-8)
_D = (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02, 1.62138957456669019e03,
      3.29079923573345963e03, 4.36261909014324716e03, 3.43936767414372164e03, 1.23033935480374942e03)
_P = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1, 1.60837851487422766e-2,
      6.58749161529837803e-4, 1.63153871373020978e-2)
_Q = (2.56852019228982242e00, 1.87295284992346725e00, 5.27905102951428412e-1, 6.05183413124413191e-2,
      2.33520497626869185e-3)
_ONE_OVER_SQRT_PI = 5.6418958354775628695e-1


def erf64(x) -> np.ndarray:
    """erf of `x` in float64 (Cody's three ranges; NaN stays NaN, erf(+-inf) = +-1)."""
    x = np.asarray(x, np.float64)
    y = np.abs(x)
    with np.errstate(all="ignore"):
        xsq = x * x                                     # |x| <= 0.46875: x * P(x^2) / Q(x^2)
        num, den = _A[4] * xsq, xsq
        for a, b in zip(_A[:3], _B[:3]):
            num, den = (num + a) * xsq, (den + b) * xsq
        small = x * (num + _A[3]) / (den + _B[3])
        num, den = _C[8] * y, y                          # |x| <= 4: erfc = e^-x^2 * P(|x|) / Q(|x|)
        for c, d in zip(_C[:7], _D[:7]):
            num, den = (num + c) * y, (den + d) * y
        middle = (num + _C[7]) / (den + _D[7])
        inverse = 1.0 / (y * y)                          # beyond: erfc = e^-x^2 / |x| * (1/sqrt(pi) + ...)
        num, den = _P[5] * inverse, inverse
        for p, q in zip(_P[:4], _Q[:4]):
            num, den = (num + p) * inverse, (den + q) * inverse
        large = (_ONE_OVER_SQRT_PI - inverse * (num + _P[4]) / (den + _Q[4])) / y
        # e^-x^2 as e^-(x16^2) * e^-((y - x16)(y + x16)), x16 = y rounded down to 1/16: exact splitting
        x16 = np.trunc(y * 16.0) / 16.0
        erfc = np.exp(-x16 * x16) * np.exp(-(y - x16) * (y + x16)) * np.where(y <= 4.0, middle, large)
        erfc = np.where(y >= 27.0, 0.0, erfc)
        result = np.where(y <= 0.46875, small, np.copysign(1.0 - erfc, x))
    return np.where(np.isnan(x), np.nan, result)


def _erf_ref(x):
    x = np.asarray(x)
    # (float32 only: the loop's float64 values may differ from NumPy's in the last bits, where
    # libm's exp and NumPy's differ, which rounding to float32 never shows: tests sweep it)
    if x.size >= LOOP_FROM and x.dtype == np.float32 and loop_pays(x.size):
        from ..reference_loops import erf_into
        return by_row_blocks(erf_into, np.ascontiguousarray(x).reshape(-1)).reshape(x.shape)
    return np.asarray(erf64(x), dtype=x.dtype)


# torch's erf backward: grad * 2/sqrt(pi) * exp(-x^2)
elementwise("erf", _erf_ref, lambda e, x, y, g, a, n: [e.mul(e.mul(g[0], 2.0 / math.sqrt(math.pi)),
                                                             e.exp(e.neg(e.mul(x[0], x[0]))))],
            "fg_erf({0})", float_only=True)

_SQRT1_2 = 1 / math.sqrt(2.0)
_KAPPA = 0.044715
_BETA = math.sqrt(2.0) * (2.0 / math.sqrt(math.pi)) * 0.5       # sqrt(2 / pi), torch's kBeta
_ALPHA = (2.0 / math.sqrt(math.pi)) * _SQRT1_2 * 0.5            # 1 / sqrt(2 pi), torch's kAlpha


def _gelu_ref(x, approximate):
    # In x's dtype, operation by operation as torch's kernel (for x < -2 the exact form
    # subtracts nearly equal numbers: torch's float32 values carry that rounding)
    t = x.dtype.type
    if approximate == "tanh":
        inner = t(_BETA) * (x + t(_KAPPA) * (x * x * x))
        return np.asarray(t(0.5) * x * (t(1) + np.tanh(inner)), dtype=x.dtype)
    return np.asarray(x * t(0.5) * (t(1) + _erf_ref(x * t(_SQRT1_2))), dtype=x.dtype)


def _gelu_decompose(e, xs, a):
    x = xs[0]
    if a["approximate"] == "tanh":
        inner = e.mul(e.add(x, e.mul(e.mul(e.mul(x, x), x), _KAPPA)), _BETA)
        return [e.mul(e.mul(x, 0.5), e.add(e.op("tanh", inner), 1))]
    return [e.mul(e.mul(x, 0.5), e.add(e.op("erf", e.mul(x, _SQRT1_2)), 1))]


def _gelu_vjp(e, x, y, g, a, n):
    # torch's gelu_backward(grad, self, approximate), as its op: a create_graph gradient records
    # GeluBackwardBackward0 and differentiates by torch's double-backward formula
    return [e.op("gelu_backward", g[0], x[0], approximate=a["approximate"])]


def _gelu_backward_decompose(e, xs, a):
    grad, xv = xs
    if a["approximate"] == "tanh":
        # torch's gelu_backward, tanh: 0.5 * (1 + t) + 0.5 x (1 - t^2) * beta * (1 + 3 kappa x^2)
        x_sq = e.mul(xv, xv)
        t = e.op("tanh", e.mul(e.add(xv, e.mul(e.mul(x_sq, xv), _KAPPA)), _BETA))
        left_derivative = e.mul(e.add(t, 1), 0.5)
        right_derivative = e.mul(e.mul(e.mul(e.mul(xv, 0.5), e.sub(1, e.mul(t, t))), _BETA),
                                 e.add(e.mul(x_sq, 3 * _KAPPA), 1))
        return [e.mul(grad, e.add(left_derivative, right_derivative))]
    # none: grad * (cdf + x * pdf), cdf = (1 + erf(x / sqrt 2)) / 2, pdf = exp(-x^2 / 2) / sqrt(2 pi)
    cdf = e.mul(e.add(e.op("erf", e.mul(xv, _SQRT1_2)), 1), 0.5)
    pdf = e.mul(e.exp(e.mul(e.mul(xv, xv), -0.5)), _ALPHA)
    return [e.mul(grad, e.add(cdf, e.mul(xv, pdf)))]


def _gelu_backward_ref(grad, x, approximate):
    # The decomposition's operations in order, in the result's dtype
    dtype = np.result_type(grad, x)
    t = dtype.type
    x = x.astype(dtype, copy=False)
    if approximate == "tanh":
        x_sq = x * x
        th = np.tanh((x + x_sq * x * t(_KAPPA)) * t(_BETA))
        left = (th + t(1)) * t(0.5)
        right = x * t(0.5) * (t(1) - th * th) * t(_BETA) * (x_sq * t(3 * _KAPPA) + t(1))
        return np.asarray(grad * (left + right), dtype=dtype)
    cdf = (_erf_ref(x * t(_SQRT1_2)) + t(1)) * t(0.5)
    pdf = np.exp(x * x * t(-0.5)) * t(_ALPHA)
    return np.asarray(grad * (cdf + x * pdf), dtype=dtype)


def _gelu_backward_vjp(e, x, y, g, a, n):
    # torch: grad_output -> gelu_backward(grad, self, approximate); self ->
    # gelu_double_backward(grad, grad_output, self, approximate) = grad * grad_output * gelu''(self)
    grad, xv = x
    first = e.op("gelu_backward", g[0], xv, approximate=a["approximate"]) if n[0] else None
    second = None
    if n[1]:
        if a["approximate"] == "tanh":
            # f = x/2, g = 1 - tanh(inner)^2, h = beta (1 + 3 kappa x^2): gelu' = f'gh + (f g h)',
            # gelu'' = 2 f'gh + f h g' + f g h', g' = -2 g tanh(inner) h (torch's 2 sech * -sech tanh * h)
            x_sq = e.mul(xv, xv)
            th = e.op("tanh", e.mul(e.add(xv, e.mul(e.mul(x_sq, xv), _KAPPA)), _BETA))
            f = e.mul(xv, 0.5)
            gg = e.sub(1, e.mul(th, th))
            h = e.mul(e.add(e.mul(x_sq, 3 * _KAPPA), 1), _BETA)
            f_prime_gh = e.mul(e.mul(gg, h), 0.5)
            g_prime_fh = e.mul(e.mul(f, h), e.mul(e.mul(e.mul(gg, th), h), -2.0))
            h_prime_fg = e.mul(e.mul(f, gg), e.mul(xv, 6 * _KAPPA * _BETA))
            second_derivative = e.add(e.add(e.add(f_prime_gh, f_prime_gh), g_prime_fh), h_prime_fg)
        else:
            x_sq = e.mul(xv, xv)
            pdf = e.mul(e.exp(e.mul(x_sq, -0.5)), _ALPHA)
            second_derivative = e.sub(e.mul(pdf, 2.0), e.mul(x_sq, pdf))
        second = e.mul(e.mul(g[0], grad), second_derivative)
    return [first, second]


register(OpDef("gelu_backward", COMPOSITE, _infer_map("gelu_backward", float_only=True), _gelu_backward_ref,
               _gelu_backward_vjp, decompose=_gelu_backward_decompose,
               doc="gelu_backward(grad, self; approximate): gelu's gradient, torch's formulas"))


register(OpDef("gelu", COMPOSITE, _infer_map("gelu", float_only=True), _gelu_ref, _gelu_vjp,
               decompose=_gelu_decompose, doc="gelu(x; approximate): torch's GELU, exact ('none') or 'tanh'"))
