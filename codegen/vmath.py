"""Vectorisable scalar math for generated kernels: the `fg_*` names.

Numba lowers `math.exp`, `np.tanh`, ... to one scalar libm call per element,
and the llvmlite wheel has no vector math library (SVML), so a fused loop that
calls them never vectorises. The functions here are written without calls and
without branches in the hot path: range reduction, a polynomial, and special
values chosen with selects (`a if cond else b` over values already computed,
which LLVM turns into `select`), plus a few LLVM intrinsics (fmuladd, rint,
copysign, sqrt, bit casts) emitted by `@intrinsic` helpers. Every function
is compiled `forceinline` (LLVM `alwaysinline`), so it melts into the kernel
loop however large the loop body, and the loop vectoriser turns the whole
body into packed SIMD code. No fast-math flags are used: NaN, inf and signed
zeros keep IEEE semantics.

Each function keeps its argument's precision (float32 in, float32 result;
some evaluate in float64 inside, as the table says). Special values follow torch (see `codegen/libmath.py`, the libm
twin with identical semantics, for the list).

Algorithms and measured max errors in ulp. float32: distance to the float64
NumPy result rounded to float32, over all 2**32 inputs (`pytest -m slow`,
~25 min on 2 cores); pow over 2e6 random pairs. float64: real-valued error
against mpmath over ~60k random arguments per function (pow: 20k pairs with
|y*log x| <= 700).

===========  ==============================================================  ====  ====
function     algorithm                                                        f32   f64
===========  ==============================================================  ====  ====
fg_exp       k = rint(x/ln2), r = x - k*ln2 (Cody-Waite, two parts),          1     0.94
             e**r = 1 + r + r*r*Q(r) (minimax Q: degree 5 / 10), times 2**k
             as two exact factors (denormal results round once); on AVX-512
             LLVM's ldexp (one vscalefps), the same bits
fg_exp_small fg_exp for x <= 43 (where kernels know x <= 0: x - max(x), -|x|):   1     0.94
             the same bits, 2**k as (2**(k+64) built from bits) * 2**-64
fg_expm1     same reduction; 2*(2**(k-1)*(e**r - 1) + (2**(k-1) - 1/2)):      1     1.6
             exact for k = 0, no overflow of 2**k before the last doubling;
             2**(k-1) is a normal number for every clamped x, built from bits
fg_log       x = 2**e * m, m in [sqrt(1/2), sqrt(2)) (bit split; denormals    1     0.76
             prescaled), f = m-1, s = f/(2+f), log(1+f) = f - f*f/2 +
             s*(f*f/2 + s*s*P(s*s)) (minimax P: degree 2 / 7)
fg_log1p     u = 1+x and its rounding error c (TwoSum): log(u) + c/u          1     1.43
fg_tanh      |x| < 9/16: x + x**3*P(x*x) (minimax P: degree 4 / 10); else     1     0.74
             sign(x) * t/(t+2), t = expm1(2|x|), |x| clamped at 10 / 22,
             the rounding errors of t+2 (TwoSum) and of the quotient (FMA
             remainder) put back as one correction: one final rounding
fg_sigmoid   e = exp(-|x|): 1/(1+e) for x >= 0, e/(1+e) for x < 0, with       1     1.30
             the same correction for 1+e and the quotient; 0 where torch's
             e**-x overflows (x < -88.72 / -709.78), as torch's 1/(1 + inf)
fg_softplus  max(x, 0) + log1p(exp(-|x|))                                     2     1.67
fg_erf       float32, in float32: x + x*Q(x*x) for |x| < 1, else 1 - e**-(t*t)  1     libm
             * F(2/(2+t) - 1/2), t = min(|x|, 4), F ~ erfc(t)*e**(t*t) (least-
             squares fits, float32 coefficients: relative error 1.5e-9 /
             1.7e-8), t*t split exactly by an FMA residual.
             float64: libm, so a float64 loop using it does not vectorise
fg_exp2,     float32: the float64 functions here, rounded once: exp2 =        1     libm
fg_log2,     exp(x*ln2) (an integer x: 2**x exactly, so ties round as the
fg_log10,    exact value), log2/log10 = log(x)/ln2, /ln10, sinh =
fg_sinh,     (t + t/(t+1))/2 with t = expm1(|x|), cosh = (e + 1/e)/2, atanh
fg_cosh,     = log1p(2|x|/(1-|x|))/2, tan = fg_sin's reduction and sin/cos
fg_atanh,    polynomials, s/c or -c/s (|x| clamped at 100 where that keeps
fg_tan       float64 finite). Exact cases stay exact (tested). float64: libm.
fg_atan,     float32, in float64 rounded once: atan(|x|) reduced to |u| <=        1     libm
fg_asin,     tan(pi/8) (u = a, (a-1)/(a+1) + pi/4 or -1/a + pi/2, one
fg_acos,     division by selects), u + u**3*P(u*u) (relative error 2.9e-14);
fg_atan2     asin = atan(x/sqrt(1-x*x)), acos = 2*atan(sqrt((1-x)/(1+x))),
             atan2 with C99's signed zeros and infinities. float64: libm.
fg_erfc      float32, in float64 rounded once: 1 - (x + x*Q(x*x)) below 1/2,   1     libm
             else e**-(t*t) * F(2/(2+t) - c) (2 minus it for x < 0), F ~ erfcx
             (relative error 1.5e-13), t = min(|x|, 10.1). float64: libm.
fg_pow       float32: exp(y*log|x|) evaluated in float64, rounded once.       0*    1.25
             float64: log|x| as a double-double (s = f/(2+f) and 2s**3/3
             carried exactly, then TwoSums), y*log|x| with an FMA residual,
             exp of the pair. y = 1 and y = 2 give x and x*x exactly.
             C99 special cases (pow(x, 0) = 1, pow(-8, 1/3) = nan, ...).
fg_sqrt      llvm.sqrt (one instruction, correctly rounded)                   0     0.5
fg_sin/cos   float32: Payne-Hanek reduction in float64 without a table        1     libm
             (x times the four 29-bit pieces of 2/pi that matter at x's
             magnitude, summed mod 4 as a double-double) to x = k*pi/2 + r,
             k even for sin, odd for cos, |r| <= pi/2; then one odd
             polynomial of degree 11 in float64 and a sign (no quadrant
             select of two polynomials); valid over the whole float32 range.
             float64: libm (a table-free reduction would need ~40 pieces), so
             a float64 loop using sin/cos does not vectorise.
fg_sin_near  float32 |x| < NEAR_LIMIT (2**20): Cody-Waite, the same k from       1     0.71
/cos_near    x/pi, r = x - k*(p1 + p2 + p3) in float64 (p1, p2: 33-bit pieces
             of pi/2, exact products), then fg_sin/cos's polynomial:
             bit-identical to them there (tested), 2.7x faster (a float32 sin
             loop, AVX-512: 0.57-0.66 ns an element; 0.90 before the single
             polynomial, measured alternating in one process: 1.6x).
             float64: fdlibm's four pieces
             of pi/2, the remainder kept as a double-double by TwoSums (no
             branches), then FreeBSD msun's __kernel_sin/__kernel_cos; 12x
             NumPy's sin + cos on 4M values. Beyond the limit the result is
             wrong: codegen/trig_guard.py guards every use.
===========  ==============================================================  ====  ====

(*) no error found in the sample; the bound asserted is 1.

`fg_relu`, `fg_maximum`, `fg_minimum`, `fg_clamp` and `fg_sign` are exact
compare-and-select; they accept int64 and bool operands too, `fg_pow` accepts
int64 (exact wrap-around, torch's rules for negative exponents).

Requirements on the target: `llvm.rint` and `llvm.fma` are single vector
instructions on x86 with SSE4.1/FMA (and on ARMv8); elsewhere LLVM calls libm
for them, which is still correct but no longer vectorises. `llvm.fma` is used
only where an exact residual is needed (tanh, sigmoid, float64 pow);
everything else uses `llvm.fmuladd`, and the bounds above also hold with it
unfused (measured).
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from fusegrad.ir.fma_jit import llvm_fma

from . import libmath
from .libmath import overload_by_kind, python_entry
from .target import has_avx512
# Rounding division, remainder (libm's fmod) and shifts have no vectorised form, and fma is
# the hardware instruction in both: libmath's functions, overloads included, serve both
# math modules.
from .libmath import fg_div_floor, fg_div_trunc, fg_fma, fg_lshift, fg_remainder, fg_rshift  # noqa: F401

__all__ = list(libmath.__all__)


# --------------------------------------------------------------------- LLVM helpers
def _llvm_float(t: types.Float) -> ir.Type:
    return ir.FloatType() if t.bitwidth == 32 else ir.DoubleType()


def _call_llvm_intrinsic(builder, name: str, t: types.Float, args):
    fty = _llvm_float(t)
    fn = builder.module.declare_intrinsic(name, [fty], ir.FunctionType(fty, [fty] * len(args)))
    return builder.call(fn, args)


def _float_intrinsic(name: str, nargs: int):
    """A Numba intrinsic `f(x, ...)` calling LLVM's `name` on same-typed floats."""
    def typer(typingctx, *args):
        if len(args) != nargs or not isinstance(args[0], types.Float) or any(a != args[0] for a in args):
            return None

        def codegen(context, builder, sig, llargs):
            return _call_llvm_intrinsic(builder, name, sig.return_type, llargs)
        return args[0](*args), codegen

    # `intrinsic` reads the argument count from the typing function's signature.
    if nargs == 1:
        def fixed(typingctx, x):
            return typer(typingctx, x)
    elif nargs == 2:
        def fixed(typingctx, x, y):
            return typer(typingctx, x, y)
    else:
        def fixed(typingctx, x, y, z):
            return typer(typingctx, x, y, z)
    fixed.__name__ = fixed.__qualname__ = name.replace(".", "_")
    return intrinsic(fixed)


_fmuladd = _float_intrinsic("llvm.fmuladd", 3)   # a*b + c, fused where the target has FMA
_fma = llvm_fma                                   # a*b + c rounded once: exact product residuals
_rint = _float_intrinsic("llvm.rint", 1)         # round to nearest even
_copysign = _float_intrinsic("llvm.copysign", 2)  # |x| with the sign bit of y
_sqrt = _float_intrinsic("llvm.sqrt", 1)         # IEEE square root


def _format(t: types.Float):
    """(int type, mantissa bits, exponent bias) of float type `t`."""
    if t.bitwidth == 32:
        return ir.IntType(32), 23, 127
    return ir.IntType(64), 52, 1023


def _ldexp_intrinsic(name: str, doc: str, scale):
    """An intrinsic `name(p, k)`: p * 2**k for an integral-valued float k, one rounding. A NaN
    k is replaced by 0 first (fptosi of NaN would be poison). On AVX-512 it is LLVM's ldexp,
    one instruction (vscalefps): the same correctly rounded result, in 3 vector operations
    where the bit-built factors take 5 to 9 (measured: a loop of float32 exp 12-14% faster).
    Elsewhere `scale(builder, p, k as an integer, (int type, mantissa bits, bias), float type)`
    builds the product."""
    def typer(typingctx, p, k):
        if not (isinstance(p, types.Float) and p == k):
            return None

        def codegen(context, builder, sig, args):
            pv, kv = args
            fty = _llvm_float(sig.return_type)
            kv = builder.select(builder.fcmp_ordered("==", kv, kv), kv, fty(0.0))
            if has_avx512():
                i32 = ir.IntType(32)
                ldexp = builder.module.declare_intrinsic("llvm.ldexp", [fty, i32], ir.FunctionType(fty, [fty, i32]))
                return builder.call(ldexp, [pv, builder.fptosi(kv, i32)])
            form = _format(sig.return_type)
            return scale(builder, pv, builder.fptosi(kv, form[0]), form, fty)
        return p(p, p), codegen
    typer.__name__ = typer.__qualname__ = name
    typer.__doc__ = doc
    return intrinsic(typer)


def _two_factors(builder, pv, ki, form, fty):
    ity, mant, bias = form
    k1 = builder.ashr(ki, ity(1))
    k2 = builder.sub(ki, k1)
    s1 = builder.bitcast(builder.shl(builder.add(k1, ity(bias)), ity(mant)), fty)
    s2 = builder.bitcast(builder.shl(builder.add(k2, ity(bias)), ity(mant)), fty)
    return builder.fmul(builder.fmul(pv, s1), s2)


_ldexp_k = _ldexp_intrinsic("_ldexp_k", """p * 2**k for an integral-valued float k with |k| < 2*(bias+1).

    2**k is applied as two factors 2**(k//2) and 2**(k - k//2), each a normal number built
    from its bits, so the result rounds once (overflow to inf and gradual underflow are
    correct).""", _two_factors)


# The offset of _ldexp_small_k's one constructed factor: 2**(k + 64) is a normal number for
# every k a clamped exp of an argument up to SMALL_EXP_LIMIT gives (float32: k in [-150, 63];
# float64: k in [-1076, 959]).
_SMALL_K_SHIFT = 64


def _shifted_factor(builder, pv, ki, form, fty):
    ity, mant, bias = form
    scale = builder.bitcast(builder.shl(builder.add(ki, ity(bias + _SMALL_K_SHIFT)), ity(mant)), fty)
    return builder.fmul(builder.fmul(pv, scale), fty(2.0 ** -_SMALL_K_SHIFT))


_ldexp_small_k = _ldexp_intrinsic("_ldexp_small_k", """p * 2**k for an integral-valued float k with
    -(bias + 63) <= k <= 63 (an exp whose argument is at most SMALL_EXP_LIMIT):
    (p * 2**(k + 64)) * 2**-64, the first product exact, so the result rounds once: the bits
    of _ldexp_k's two factors in 5 operations where they take 9 (a float32 exp loop ~15%
    faster).""", _shifted_factor)


@intrinsic
def _pow2_k(typingctx, k):
    """2**k for an integral-valued float k in the normal exponent range (float32: -126..127),
    built from its bits (3 operations); a NaN k gives 2**0."""
    if not isinstance(k, types.Float):
        return None

    def codegen(context, builder, sig, args):
        (kv,) = args
        ity, mant, bias = _format(sig.return_type)
        fty = _llvm_float(sig.return_type)
        kv = builder.select(builder.fcmp_ordered("==", kv, kv), kv, fty(0.0))
        return builder.bitcast(builder.shl(builder.add(builder.fptosi(kv, ity), ity(bias)), ity(mant)), fty)
    return k(k), codegen


@intrinsic
def _split_log(typingctx, x):
    """(m, e) with x = m * 2**e, m in [sqrt(1/2), sqrt(2)), for finite x > 0.

    Denormals are scaled up by 2**(mantissa bits + 2) first. Other inputs give
    unspecified (but defined) values; callers select their special cases.
    """
    if not isinstance(x, types.Float):
        return None

    def codegen(context, builder, sig, args):
        (xv,) = args
        ft = sig.args[0]
        ity, mant, bias = _format(ft)
        fty = _llvm_float(ft)
        width = ft.bitwidth
        tiny = builder.fcmp_ordered("<", xv, fty(2.0 ** (1 - bias)))
        scale = mant + 2
        xv = builder.select(tiny, builder.fmul(xv, fty(2.0 ** scale)), xv)
        eadj = builder.select(tiny, fty(-scale), fty(0.0))
        ix = builder.bitcast(xv, ity)
        # Offset by the bits of sqrt(1/2): the exponent field of ix - off is
        # e, the remaining bits put m in [sqrt(1/2), sqrt(2)).
        off = int(np.array(np.sqrt(0.5), dtype=f"f{width // 8}").view(f"i{width // 8}"))
        tmp = builder.sub(ix, ity(off))
        e = builder.fadd(builder.sitofp(builder.ashr(tmp, ity(mant)), fty), eadj)
        expmask = ((1 << width) - 1) ^ ((1 << mant) - 1)
        m = builder.bitcast(builder.sub(ix, builder.and_(tmp, ity(expmask))), fty)
        tup = context.get_value_type(sig.return_type)
        return builder.insert_value(builder.insert_value(ir.Constant(tup, ir.Undefined), m, 0), e, 1)
    return types.UniTuple(x, 2)(x), codegen


@intrinsic
def _horner(typingctx, x, coeffs):
    """coeffs[0] + x*(coeffs[1] + x*(...)) with fmuladd; coeffs a constant tuple."""
    if not (isinstance(x, types.Float) and isinstance(coeffs, types.UniTuple) and coeffs.dtype == x):
        return None

    def codegen(context, builder, sig, args):
        xv, cv = args
        n = sig.args[1].count
        fty = _llvm_float(sig.args[0])
        fn = builder.module.declare_intrinsic("llvm.fmuladd", [fty], ir.FunctionType(fty, [fty] * 3))
        acc = builder.extract_value(cv, n - 1)
        for i in range(n - 2, -1, -1):
            acc = builder.call(fn, [acc, xv, builder.extract_value(cv, i)])
        return acc
    return x(x, coeffs), codegen


# --------------------------------------------------------------------- constants
# Minimax coefficients (discrete Remez exchange in 50-digit mpmath, relative
# error), rounded to the target precision.
# (e**r - 1 - r) / r**2 on |r| <= ln2/2: relative error 2**-28.5 / 2**-58.4.
_EXPQ = {
    np.float32: (0.5000000013387559, 0.16666666532286162, 0.04166646544713991,
                 0.008333360725260157, 0.0013933606535751636, 0.00019857803006790648),
    np.float64: (0.5, 0.1666666666666667, 0.041666666666666616, 0.008333333333326162,
                 0.0013888888888917979, 0.00019841269874740892, 2.480158724571213e-05,
                 2.755725548873075e-06, 2.755734962886635e-07, 2.5105184246605478e-08,
                 2.088937729227716e-09),
}
# (2*atanh(s) - 2*s) / s**3 as a polynomial in z = s*s, s <= 3 - 2*sqrt(2):
# relative error 2**-21.8 / 2**-58.2 (the term is ~1% of log(1+f)).
_LOGP = {
    np.float32: (0.6666668515612614, 0.39988741142041634, 0.29581549535114415),
    np.float64: (0.6666666666666666, 0.40000000000000885, 0.28571428570798085,
                 0.22222222392927168, 0.18181795513928312, 0.15386246410997043,
                 0.1326859704054669, 0.13088435811930427),
}
# (tanh(x) - x)/x**3 in z = x*x on |x| < 9/16: relative error of tanh
# 2**-29.5 / 2**-59.9.
_TANH_SPLIT = 0.5625
_TANHP = {
    np.float32: (-0.3333331388863481, 0.13332452286835106, -0.053837431523838034,
                 0.021007463763843305, -0.006179816029216827),
    np.float64: (-0.33333333333333276, 0.13333333333323133, -0.05396825396172439,
                 0.0218694883272766, -0.008863231637199416, 0.0035920822502218076,
                 -0.0014554796430500626, 0.0005881836525467142, -0.00023271622582641174,
                 8.236093628825082e-05, -1.890396602587723e-05),
}
# ln2 = LN2_HI + LN2_LO with LN2_HI short enough that k*LN2_HI is exact.
_LN2_HI = {np.float32: 0.693359375, np.float64: 6.93147180369123816490e-01}
_LN2_LO = {np.float32: -2.12194440e-4, np.float64: 1.90821492927058770002e-10}
# exp clamps its argument into [lo, hi]: beyond, the result is already 0 or inf.
_EXP_RANGE = {np.float32: (-104.0, 89.0), np.float64: (-746.0, 710.0)}
# expm1(x) = -1 below lo; tanh(x) = sign(x) for |x| >= TANH_SAT.
_EXPM1_LO = {np.float32: -30.0, np.float64: -40.0}
_EXPM1_TINY = {np.float32: 2.0 ** -25, np.float64: 2.0 ** -54}
_TANH_SAT = {np.float32: 10.0, np.float64: 22.0}
# sigmoid(x) = 0 below these: torch computes 1/(1 + e**-x), which is 0 once e**-x
# overflows (the largest x with a finite e**x, negated); shared with libmath.
_SIGMOID_ZERO = libmath.SIGMOID_ZERO


# Helpers shared by several functions: always inlined by LLVM, and with
# NumPy's error model, so that a division never grows a zero check.
_helper = njit(error_model="numpy", forceinline=True)


def _typed(ft, values):
    return tuple(ft(v) for v in values)


# --------------------------------------------------------------------- exp family
def _reduce_exp(ft):
    """x -> (k, r) with x = k*ln2 + r, |r| <= ln2/2 (x already clamped)."""
    log2e = ft(1.4426950408889634)
    ln2_hi = ft(_LN2_HI[ft])
    ln2_lo = ft(_LN2_LO[ft])

    @_helper
    def reduce(x):
        k = _rint(x * log2e)
        r = _fmuladd(-k, ln2_hi, x)
        return k, _fmuladd(-k, ln2_lo, r)
    return reduce


def _make_exp(ft):
    lo, hi = (ft(v) for v in _EXP_RANGE[ft])
    q = _typed(ft, _EXPQ[ft])
    one = ft(1)
    reduce = _reduce_exp(ft)

    def impl(x):
        # Clamps written so that NaN passes through (comparisons with NaN are false).
        x = hi if x > hi else x
        x = lo if x < lo else x
        k, r = reduce(x)
        p = one + _fmuladd(r * r, _horner(r, q), r)
        return _ldexp_k(p, k)
    return impl


# fg_exp_small's domain: x <= SMALL_EXP_LIMIT (rint(x / ln2) <= 63, see _ldexp_small_k).
SMALL_EXP_LIMIT = 43.0


def _make_exp_small(ft):
    """fg_exp's bits for x <= SMALL_EXP_LIMIT (or NaN): the upper clamp and the wide scaling
    are not needed there."""
    lo = ft(_EXP_RANGE[ft][0])
    q = _typed(ft, _EXPQ[ft])
    one = ft(1)
    reduce = _reduce_exp(ft)

    def impl(x):
        x = lo if x < lo else x
        k, r = reduce(x)
        p = one + _fmuladd(r * r, _horner(r, q), r)
        return _ldexp_small_k(p, k)
    return impl


def _make_expm1(ft):
    lo, hi = ft(_EXPM1_LO[ft]), ft(_EXP_RANGE[ft][1])
    q = _typed(ft, _EXPQ[ft])
    half, one = ft(0.5), ft(1)
    two = ft(2)
    tiny = ft(_EXPM1_TINY[ft])
    reduce = _reduce_exp(ft)

    def impl(x):
        xc = hi if x > hi else x
        xc = lo if xc < lo else xc
        k, r = reduce(xc)
        p = _fmuladd(r * r, _horner(r, q), r)            # e**r - 1
        s = _pow2_k(k - one)                              # 2**(k-1): normal for every k here
        y = two * _fmuladd(s, p, s - half)                # 2**k * (p + 1) - 1
        # expm1(x) rounds to x for tiny |x|; also keeps -0.0 and denormals exact.
        return x if abs(x) < tiny else y
    return impl


def _make_sigmoid(ft):
    one = ft(1)
    zero = ft(0)
    underflow = ft(_SIGMOID_ZERO[ft])

    def impl(x):
        e = fg_exp_small(-abs(x))
        num = one if x >= zero else e           # sigmoid = num / (1 + e)
        d = one + e
        d_err = e - (d - one)                   # 1 + e = d + d_err exactly (Fast2Sum)
        q = num / d
        rem = _fma(-q, d, num)                  # num - q*d, exact
        inv_d = q if x >= zero else one - q     # 1/d to ~2**-24, enough for a correction
        # num/(d + d_err) = q + (rem - q*d_err)/(d + d_err): one final rounding.
        y = _fmuladd(rem - q * d_err, inv_d, q)
        return zero if x < underflow else y             # torch's 1/(1 + inf)
    return impl


def _make_tanh(ft):
    sat = ft(_TANH_SAT[ft])
    split = ft(_TANH_SPLIT)
    p = _typed(ft, _TANHP[ft])
    one, two = ft(1), ft(2)

    def impl(x):
        a = abs(x)
        # Small |x|: odd minimax polynomial (expm1 there loses to cancellation).
        z = x * x
        small = _fmuladd(x * z, _horner(z, p), x)
        a = sat if a > sat else a                         # tanh(sat) rounds to 1 exactly
        t = fg_expm1(a + a)
        d = t + two
        v = d - t                                         # TwoSum: t + 2 = d + d_err exactly
        d_err = (t - (d - v)) + (two - v)
        inv_d = one / d
        q = t * inv_d                                     # ~t/d; the correction absorbs its error
        rem = _fma(-q, d, t)                              # t - q*d, exact
        # t/(d + d_err) = q + (rem - q*d_err)/(d + d_err): one final rounding.
        y = _fmuladd(rem - q * d_err, inv_d, q)
        return _copysign(small if a < split else y, x)   # copysign keeps tanh(-0.0) = -0.0
    return impl


# --------------------------------------------------------------------- log family
def _log_kernel(ft):
    """x -> (hi, lo): e*ln2_hi and the rest of log(x), for finite x > 0."""
    p = _typed(ft, _LOGP[ft])
    ln2_hi = ft(_LN2_HI[ft])
    ln2_lo = ft(_LN2_LO[ft])
    one, two, half = ft(1), ft(2), ft(0.5)

    @_helper
    def kernel(x):
        m, e = _split_log(x)
        f = m - one
        s = f / (two + f)
        z = s * s
        hfsq = half * f * f
        rest = s * (hfsq + z * _horner(z, p)) + e * ln2_lo
        return e * ln2_hi, f - (hfsq - rest)
    return kernel


def _make_log(ft):
    kernel = _log_kernel(ft)
    zero = ft(0)
    inf = ft(np.inf)
    nan = ft(np.nan)

    def impl(x):
        hi, lo = kernel(x)
        y = hi + lo
        y = y if x > zero else (-inf if x == zero else nan)
        return x if x == inf else y
    return impl


def _make_log1p(ft):
    one = ft(1)
    zero = ft(0)
    inf = ft(np.inf)

    def impl(x):
        u = one + x
        # TwoSum: c is the exact rounding error of 1 + x.
        v = u - one
        c = (one - (u - v)) + (x - v)
        y = fg_log(u) + c / u
        y = x if x == zero else y                         # keeps -0.0
        y = -inf if u == zero else y                      # log1p(-1): c/u would be 0/0
        return x if x == inf else y
    return impl


def _make_softplus(ft):
    zero = ft(0)

    def impl(x):
        return (x if x > zero else zero) + fg_log1p(fg_exp_small(-abs(x)))
    return impl


# --------------------------------------------------------------------- erf
# float32 erf in float32 (least-squares fits in float64, coefficients rounded to float32 one
# at a time with the rest refitted):
#   |x| < 1:  x + x*Q(x*x), Q ~ erf(x)/x - 1 (relative error of erf 1.5e-9; the correction
#             is at most 16% of x, so its rounding barely reaches the result)
#   |x| >= 1: 1 - e**-(t*t) * F(t - 2.5), t = min(|x|, 4), F ~ erfc(t)*e**(t*t) (erfcx,
#             0.43 to 0.14; fitted for its error in erf, 6e-10); t*t is split exactly (FMA
#             residual), e**-(t*t) = e**-hi * (1 - lo), and the last step 1 - e*F is one FMA.
#             erfc <= 0.16 there: its errors reach erf scaled down (erf(t) rounds to 1 in
#             float32 from t = 3.92). No division, no branch: the loop vectorises.
_ERF_SMALL = (0.12837916612625122, -0.3761262595653534, 0.1128358244895935, -0.026853643357753754,
              0.005187962669879198, -0.0008006793214008212, 7.842288323445246e-05)
_ERFCX = (0.21080638468265533, -0.07434917241334915, 0.02492864988744259, -0.008005429059267044,
          0.0025134989991784096, -0.0006472784443758428, 0.00023752852575853467,
          -0.00012218888150528073, -5.1717965106945485e-05, -2.699950709939003e-05)


def _make_erf(ft):
    if ft is not np.float32:
        return libmath.make_libm_unary(math.erf)(ft)      # float64: libm's (a call per element)
    small_q = _typed(ft, _ERF_SMALL)
    erfcx_p = _typed(ft, _ERFCX)
    one, four, mid = ft(1), ft(4), ft(2.5)

    def impl(x):
        t = abs(x)
        small = _fmuladd(x, _horner(x * x, small_q), x)      # (keeps erf(-0.0) = -0.0, and NaN)
        c = t if t < four else four                          # (erf(4) already rounds to 1)
        hi = c * c
        lo = _fma(c, c, -hi)
        e = fg_exp_small(-hi)
        scaled = _fmuladd(-e, lo, e)
        big = _copysign(_fma(-scaled, _horner(c - mid, erfcx_p), one), x)
        return big if t >= one else small
    return impl


# --------------------------------------------------------------------- float32 in float64
# exp2, log2, log10, sinh, cosh, atanh and tan of a float32 x: evaluated in float64 by the
# float64 functions above (each within 2 float64 ulp), then rounded once to float32. The
# float64 error, ~2**-51 relative, reaches the float32 result only when the exact value lies
# that close to a float32 rounding boundary; exact cases stay exact (exp2 of an integer, log2
# of a power of two, log10 of a power of ten: the float64 value is within 2**-50 of them).
# float64 x: libm's (a call per element).
_INV_LN2_64 = 1.4426950408889634
_INV_LN10_64 = 0.4342944819032518
_LN2_64 = 0.6931471805599453
# |x| beyond which float32 sinh/cosh overflow (89.42) and atanh's argument is done: clamped,
# so that the float64 intermediates stay finite
_HYPERBOLIC_CLAMP = 100.0


def _make_exp2(ft):
    if ft is not np.float32:
        return libmath.make_libm_unary(np.exp2)(ft)

    def impl(x):
        d = np.float64(x)
        y = fg_exp(d * _LN2_64)
        # An integer x gives 2**x exactly (float64 holds it), so that a float32 tie rounds as
        # the exact value does: exp2(-150) = 2**-150 is half the least denormal, and 0.
        k = -1100.0 if d < -1100.0 else (1100.0 if d > 1100.0 else d)
        return np.float32(_ldexp_k(1.0, k) if _rint(d) == d else y)
    return impl


def _make_log_scaled(numpy_fn, scale):
    def make(ft):
        if ft is not np.float32:
            return libmath.make_libm_unary(numpy_fn)(ft)

        def impl(x):
            return np.float32(fg_log(np.float64(x)) * scale)
        return impl
    return make


def _make_sinh(ft):
    if ft is not np.float32:
        return libmath.make_libm_unary(np.sinh)(ft)

    def impl(x):
        d = np.float64(x)
        a = abs(d)
        a = _HYPERBOLIC_CLAMP if a > _HYPERBOLIC_CLAMP else a   # (NaN stays NaN)
        t = fg_expm1(a)
        # sinh(a) = (e**a - e**-a)/2 = (t + t/(t + 1))/2: no cancellation for small a
        return np.float32(_copysign(0.5 * (t + t / (t + 1.0)), d))
    return impl


def _make_cosh(ft):
    if ft is not np.float32:
        return libmath.make_libm_unary(np.cosh)(ft)

    def impl(x):
        a = abs(np.float64(x))
        a = _HYPERBOLIC_CLAMP if a > _HYPERBOLIC_CLAMP else a
        e = fg_exp(a)
        return np.float32(0.5 * e + 0.5 / e)
    return impl


def _make_atanh(ft):
    if ft is not np.float32:
        return libmath.make_libm_unary(np.arctanh)(ft)

    def impl(x):
        d = np.float64(x)
        a = abs(d)
        # atanh(a) = log1p(2a/(1 - a))/2; 1 - a is exact for a float32 a in float64; a = 1
        # gives log1p(inf) = inf, a > 1 log1p(< -1) = NaN
        return np.float32(_copysign(0.5 * fg_log1p((a + a) / (1.0 - a)), d))
    return impl


# --------------------------------------------------------------------- erfc
# float32 erfc in float64, rounded once (the result can be a float32 denormal, a normal float64:
# one rounding there too): |x| < 1/2: 1 - (x + x*Q(x*x)) (least-squares, relative error of erf
# 9e-14); |x| >= 1/2: e**-(t*t) * F(2/(2 + t) - c), t = min(|x|, 10.1), F ~ erfcx (least
# squares over [1/2, 10.1], relative error 1.5e-13; erfc(10.06) is below the least float32
# denormal's half), t*t exact in float64; 2 minus that for x <= -1/2.
_ERFC_SMALL64 = (0.12837916709540803, -0.37612638899124334, 0.11283791412523847, -0.026866108764979257,
                 0.005223269749648323, -0.0008506554423292098, 0.00010819978082428552)
_ERFCX64 = (0.24085559906014734, 0.8213887395159517, 0.9338554816086599, 0.6270139644449498,
            0.07888938286780751, -0.21748229263614477, -0.06935400212953838, 0.12316257377102294,
            0.025440966314145108, -0.09320520715713695, 0.01597125939474684, 0.0686250245214406,
            -0.049284539297614664, -0.033057630053045566, 0.04963112481225443)
_ERFCX64_MID = 0.4826446280991736
_ERFC_CLAMP = 10.1


def _make_erfc(ft):
    if ft is not np.float32:
        return libmath.make_libm_unary(math.erfc)(ft)      # float64: libm's (a call per element)

    def impl(x):
        d = np.float64(x)
        t = abs(d)
        small = 1.0 - _fmuladd(d, _horner(d * d, _ERFC_SMALL64), d)    # (NaN stays NaN)
        c = t if t < _ERFC_CLAMP else _ERFC_CLAMP
        tail = fg_exp_small(-(t * t)) * _horner(2.0 / (2.0 + c) - _ERFCX64_MID, _ERFCX64)   # (+-inf: 0)
        big = 2.0 - tail if d < 0.0 else tail
        return np.float32(big if t >= 0.5 else small)
    return impl


# --------------------------------------------------------------------- pow
def _pow_special(ft):
    """The C99 cases of pow around `core(|x|, y)`, which handles x >= 0."""
    zero, one, two, half = ft(0), ft(1), ft(2), ft(0.5)
    inf = ft(np.inf)
    nan = ft(np.nan)

    @_helper
    def finish(x, y, r):
        y_int = _rint(y) == y
        y_odd = y_int and _rint(y * half) != y * half
        negative = _copysign(one, x) < zero
        r = -r if (negative and y_odd) else r
        # Negative finite base, non-integer exponent: nan (-0 and -inf are fine).
        r = nan if (x < zero and x != -inf and not y_int) else r
        # |x| = 1 with y = +-inf would be inf*0 = nan: C99 says 1.
        r = one if (abs(x) == one and abs(y) == inf) else r
        # Exactly rounded squares and identities (pow(3, 2) == 9 exactly).
        r = x if y == one else (x * x if y == two else r)
        return one if (y == zero or x == one) else r
    return finish


def _make_pow32(ft):
    finish = _pow_special(ft)

    def impl(x, y):
        # In float64 the product y*log|x| carries ~29 spare bits: one rounding.
        a = np.float64(abs(x))
        r = ft(fg_exp(np.float64(y) * fg_log(a)))
        return finish(x, y, r)
    return impl


# (2*atanh(s) - 2*s - 2*s**3/3) / s**5 in z = s*s: relative error 2**-50.4, and
# the term is below 2**-14 of log(1+f), so pow's log is good to ~2**-64.
_LOG_DD_P = (0.4000000000000003, 0.2857142857133782, 0.22222222271403214, 0.18181808199843408,
             0.15385578189199575, 0.13285846920115307, 0.12914960309586399)
_TWO_THIRDS = (0.6666666666666666, 3.700743415417188e-17)     # 2/3 as a double-double


def _make_log_dd():
    """float64 x > 0 (finite) -> (h, l): log(x) = h + l to ~2**-64 relative.

    log(1+f) = 2s + 2s**3/3 + s**5*P(s*s) with s = f/(2+f) carried as a
    double-double, the first two terms exactly, then e*ln2 added with TwoSum.
    """
    p = _LOG_DD_P
    c_hi, c_lo = _TWO_THIRDS
    ln2_hi = _LN2_HI[np.float64]
    ln2_lo = _LN2_LO[np.float64]

    @_helper
    def log_dd(x):
        m, e = _split_log(x)
        f = m - 1.0
        d_hi = 2.0 + f
        d_lo = f - (d_hi - 2.0)                          # 2 + f = d_hi + d_lo exactly
        s_hi = f / d_hi
        s_lo = (_fma(-s_hi, d_hi, f) - s_hi * d_lo) / d_hi
        z_hi = s_hi * s_hi
        z_lo = _fma(s_hi, s_hi, -z_hi) + 2.0 * s_hi * s_lo
        # t = 2/3 * s**3 as a double-double (u = s**3 first).
        u_hi = z_hi * s_hi
        u_lo = _fma(z_hi, s_hi, -u_hi) + (z_lo * s_hi + z_hi * s_lo)
        t_hi = c_hi * u_hi
        t_lo = _fma(c_hi, u_hi, -t_hi) + (c_lo * u_hi + c_hi * u_lo)
        tail = z_hi * z_hi * s_hi * _horner(z_hi, p)
        # Sum e*ln2_hi (exact) + 2*s_hi + t_hi with TwoSums; the rest is small.
        a = e * ln2_hi
        h = a + 2.0 * s_hi
        bb = h - a
        lo = (a - (h - bb)) + (2.0 * s_hi - bb)
        h2 = h + t_hi
        bb = h2 - h
        lo += (h - (h2 - bb)) + (t_hi - bb)
        lo += 2.0 * s_lo + t_lo + tail + e * ln2_lo
        hi = h2 + lo
        return hi, lo - (hi - h2)
    return log_dd


_log_dd = _make_log_dd()


def _make_pow64(ft):
    finish = _pow_special(ft)
    lo, hi = (ft(v) for v in _EXP_RANGE[ft])
    q = _typed(ft, _EXPQ[ft])
    one, zero = ft(1), ft(0)
    inf = ft(np.inf)
    reduce = _reduce_exp(ft)

    def impl(x, y):
        a = abs(x)
        lh, ll = _log_dd(a)
        # log(0) = -inf; log(inf) = inf and NaN pass through.
        lh = lh if (a > zero and a != inf) else (a if a != zero else -inf)
        ll = ll if (a > zero and a != inf) else zero
        # y * log|a| = ph + pl (the FMA gives ph's rounding error exactly).
        ph = y * lh
        pl = _fma(y, lh, -ph) + y * ll
        # exp(ph + pl): pl joins the reduced argument, unless ph is clamped (its
        # result is 0 or inf anyway, and pl, up to |y| * 2**-53, could be huge).
        pl = pl if (ph > lo and ph < hi) else zero
        xc = hi if ph > hi else ph
        xc = lo if xc < lo else xc
        k, r = reduce(xc)
        r = r + pl
        p = one + _fmuladd(r * r, _horner(r, q), r)
        return finish(x, y, _ldexp_k(p, k))
    return impl


def _make_pow(ft):
    if issubclass(ft, np.integer):
        return libmath.make_int_pow(ft)
    return _make_pow32(ft) if ft is np.float32 else _make_pow64(ft)


def _make_sqrt(ft):
    return lambda x: _sqrt(x)


# --------------------------------------------------------------------- sin / cos
# 2/pi = sum of _TWO_OVER_PI[i], consecutive 29-bit pieces: x * piece is exact
# in float64 for any float32 x (24 + 29 bits).
_TWO_OVER_PI = (0.636619770899415, 1.4681663246252086e-09, 2.2760100671971816e-18,
                5.8812147387730434e-27, 1.0346868700836215e-35, 3.783256351091319e-45,
                3.720474878517739e-53)
# (sin(r) - r)/r**3 and (cos(r) - 1 + r*r/2)/r**4 in z = r*r, |r| <= pi/4:
# relative errors 2**-32.4 and 2**-34.0 (float64 arithmetic for float32 results).
_SINP = (-0.16666666663814964, 0.008333331862775356, -0.00019840081492758347, 2.7249349777031514e-06)
_COSP = (0.04166666666429911, -0.001388888766540775, 2.4800597445817902e-05, -2.7300634205817904e-07)

# |x| thresholds where the first useful piece moves on (x = M*2**E, M < 2**24,
# piece i matters once E - 29*(i+1) < 2).
_B1, _B2, _B3 = 2.0 ** 54, 2.0 ** 83, 2.0 ** 112


@_helper
def _two_over_pi_mod4(x):
    """float64 x (a float32 value) -> (h, lo): x*(2/pi) mod 4 as the double-double h + lo,
    |h| <~ 2 (+ a few 2**-29), accurate to ~2**-80 absolute for any float32 x.

    Payne-Hanek without a table: the product is accumulated from the four pieces of 2/pi
    that matter at x's magnitude (chosen with compares, so the loop stays vectorisable).
    Pieces before them contribute multiples of 4, pieces after them less than 2**-80. Each
    product is exact; the sum is kept as a double-double.
    """
    c = _TWO_OVER_PI
    a = abs(x)
    # First useful piece: 0 below 2**54, then one more per 29 bits of exponent.
    c0 = c[0] if a < _B1 else (c[1] if a < _B2 else (c[2] if a < _B3 else c[3]))
    c1 = c[1] if a < _B1 else (c[2] if a < _B2 else (c[3] if a < _B3 else c[4]))
    c2 = c[2] if a < _B1 else (c[3] if a < _B2 else (c[4] if a < _B3 else c[5]))
    c3 = c[3] if a < _B1 else (c[4] if a < _B2 else (c[5] if a < _B3 else c[6]))
    p0 = x * c0
    p1 = x * c1
    t0 = _fmuladd(-4.0, _rint(p0 * 0.25), p0)            # p mod 4, exact
    t1 = _fmuladd(-4.0, _rint(p1 * 0.25), p1)
    h = t0 + t1                                           # TwoSum
    v = h - t0
    lo = (t0 - (h - v)) + (t1 - v)
    h = _fmuladd(-4.0, _rint(h * 0.25), h)
    t2 = x * c2
    h2 = h + t2                                           # TwoSum
    v = h2 - h
    lo += (h - (h2 - v)) + (t2 - v) + x * c3
    return h2, lo


@_helper
def _reduce_quadrant(x):
    """float64 x (a float32 value) -> (r, n): x = (4j + n)*pi/2 + r, |r| <~ pi/4, r accurate
    to ~2**-80 absolute for any float32 x (_two_over_pi_mod4). fg_tan's reduction."""
    h2, lo = _two_over_pi_mod4(x)
    q = _rint(h2)
    f = (h2 - q) + lo
    n = q + 4.0 if q < 0.0 else q
    return f * 1.5707963267948966, n


@_helper
def _reduce_half_turns(x, shift):
    """float64 x (a float32 value) -> (r, odd): x = k*pi/2 + r with k = 2m + shift the nearest
    integer of shift's parity (0: sin, 1: cos), |r| <~ pi/2, and odd = whether m is odd; then
    sin(x) = (-1)**m sin(r) and cos(x) = (-1)**(m+1) sin(r). Any float32 x (Payne-Hanek)."""
    h2, lo = _two_over_pi_mod4(x)
    m = _rint((h2 - shift) * 0.5)
    f = (h2 - _fmuladd(2.0, m, shift)) + lo
    return f * 1.5707963267948966, _fmuladd(-2.0, _rint(m * 0.5), m) != 0.0


# pi/2 = _PIO2_1 + _PIO2_2 + _PIO2_3 (+ 1e-37): the first two have 33 significant bits,
# so k * piece is exact in float64 for |k| < 2**20.
_PIO2_1, _PIO2_2, _PIO2_3 = 1.5707963267341256, 6.077100506303966e-11, 2.0222662487959506e-21
NEAR_LIMIT = 2.0 ** 20       # fg_sin_near/fg_cos_near are exact below this |x| (float32)


@_helper
def _reduce_half_turns_near(x, shift):
    """float64 x (a float32 value, |x| < NEAR_LIMIT) -> (r, odd) as _reduce_half_turns'.

    Cody-Waite: |k| = |2m + shift| < 2**20, so x - k*_PIO2_1 and the next product are exact
    and r is accurate to ~2**-80 absolute (k * 1e-37 and one rounding of the last product),
    as _reduce_half_turns' r; the float32 results agree bit for bit (tested on a sample:
    they could differ only where a result lies within ~2**-52 of a float32 rounding
    boundary)."""
    m = _rint(_fmuladd(x, 0.3183098861837907, -0.5 * shift))      # x/pi - shift/2
    k = _fmuladd(2.0, m, shift)
    r = _fmuladd(-k, _PIO2_1, x)
    r = _fmuladd(-k, _PIO2_2, r)
    r = _fmuladd(-k, _PIO2_3, r)
    return r, _fmuladd(-2.0, _rint(m * 0.5), m) != 0.0


# sin(r) = r + r*z*P(z) in z = r*r for |r| <= pi/2: relative error 2**-35.3 (a near-minimax
# fit, checked with mpmath on 20001 points; float64 arithmetic for float32 results).
_SIN_HALF_TURN = (-0.16666666626150523, 0.0083333311086327, -0.00019840868213100583, 2.7525384563985854e-06,
                  -2.3888911388786572e-08)


def _make_sincos32(cosine: bool, reduce=_reduce_half_turns):
    """float32 sin or cos: the argument reduced to |r| <= pi/2 around a multiple of pi
    (sin) or an odd multiple of pi/2 (cos), then one odd polynomial and a sign. (Reducing to
    |r| <= pi/4 by quadrant needs both a sine and a cosine polynomial and a select of four:
    a sin loop took 3.7 ms on 4M values, this one 2.4.)"""
    shift = 1.0 if cosine else 0.0
    sp = _SIN_HALF_TURN

    def impl(x):
        r, odd = reduce(np.float64(x), shift)
        if cosine:
            odd = not odd               # cos(x) = (-1)**(m+1) sin(r)
        z = r * r
        s = _fmuladd(r * z, _horner(z, sp), r)
        y = np.float32(-s if odd else s)
        return x if (x == 0 and not cosine) else y        # sin(-0.0) = -0.0
    return impl


# pi/2 in four pieces for float64 near forms (fdlibm's pio2_1, pio2_2, pio2_3: 33 bits each,
# then pio2_3t): n * piece is exact for |n| < 2**20, and the four carry ~150 bits of pi/2.
_PIO2_64 = (1.57079632673412561417e+00, 6.07710050630396597660e-11, 2.02226624871116645580e-21,
            8.47842766036889956997e-32)
# fdlibm's (FreeBSD msun's) __kernel_sin / __kernel_cos coefficients, |r| <= pi/4: < 1 ulp.
_SIN64 = (-1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04,
          2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10)
_COS64 = (4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05,
          -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11)


@_helper
def _reduce_near64(x):
    """float64 x, |x| < NEAR_LIMIT -> (hi, lo, n): x = (4j + n)*pi/2 + hi + lo, the remainder
    a double-double with |hi| <~ pi/4, n in {0, 1, 2, 3}.

    Cody-Waite with fdlibm's pieces, branch-free: k = rint(x*2/pi) < 2**20, so every
    k * piece is exact and x - k*piece_1 is exact (Sterbenz); the next two pieces are
    subtracted with TwoSums and the last piece's product joins the error terms. The
    remainder is good to ~2**-100 relative even where x is closest to a multiple of pi/2."""
    p = _PIO2_64
    k = _rint(x * 0.6366197723675814)
    r = x - k * p[0]
    a = k * p[1]
    s = r - a                                   # TwoSum(r, -a)
    b = s - r
    e = (r - (s - b)) + (-a - b)
    c = k * p[2]
    s2 = s - c                                  # TwoSum(s, -c)
    b = s2 - s
    e2 = (s - (s2 - b)) + (-c - b)
    tail = (e + e2) - k * p[3]
    hi = s2 + tail                              # FastTwoSum (|s2| >= |tail|)
    lo = tail - (hi - s2)
    q = k - 4.0 * _rint(k * 0.25)               # k mod 4, in [-2, 2]
    return hi, lo, (q + 4.0 if q < 0.0 else q)


@_helper
def _sin_kernel64(x, y):
    """sin(x + y) for a double-double |x + y| <= pi/4 (fdlibm's __kernel_sin, iy = 1)."""
    sp = _SIN64
    z = x * x
    w = z * z
    r = sp[1] + z * (sp[2] + z * sp[3]) + z * w * (sp[4] + z * sp[5])
    v = z * x
    return x - ((z * (0.5 * y - v * r) - y) - v * sp[0])


@_helper
def _cos_kernel64(x, y):
    """cos(x + y) for a double-double |x + y| <= pi/4 (FreeBSD msun's __kernel_cos)."""
    cp = _COS64
    z = x * x
    w = z * z
    r = z * (cp[0] + z * (cp[1] + z * cp[2])) + w * w * (cp[3] + z * (cp[4] + z * cp[5]))
    hz = 0.5 * z
    w = 1.0 - hz
    return w + (((1.0 - w) - hz) + (z * r - x * y))


def _make_sincos64_near(cosine: bool):
    shift = 1.0 if cosine else 0.0

    def impl(x):
        hi, lo, n = _reduce_near64(x)
        n = n + shift
        n = n - 4.0 if n >= 4.0 else n
        s = _sin_kernel64(hi, lo)
        c = _cos_kernel64(hi, lo)
        y = s if n == 0.0 else (c if n == 1.0 else (-s if n == 2.0 else -c))
        return x if (x == 0 and not cosine) else y        # sin(-0.0) = -0.0
    return impl


def _make_sin(ft):
    # float64 stays on libm: a table-free full-range reduction needs ~40 pieces.
    return _make_sincos32(False) if ft is np.float32 else libmath.make_libm_unary(math.sin)(ft)


def _make_cos(ft):
    return _make_sincos32(True) if ft is np.float32 else libmath.make_libm_unary(math.cos)(ft)


def _make_sin_near(ft):
    return _make_sincos32(False, _reduce_half_turns_near) if ft is np.float32 else _make_sincos64_near(False)


def _make_cos_near(ft):
    return _make_sincos32(True, _reduce_half_turns_near) if ft is np.float32 else _make_sincos64_near(True)


def _make_tan(ft):
    if ft is not np.float32:
        return libmath.make_libm_unary(np.tan)(ft)
    sp = _SINP
    cp = _COSP

    def impl(x):
        # fg_sin's reduction (the whole float32 range) and polynomials, then one quotient
        r, n = _reduce_quadrant(np.float64(x))
        z = r * r
        s = _fmuladd(r * z, _horner(z, sp), r)
        c = _fmuladd(z * z, _horner(z, cp), 1.0 - 0.5 * z)
        odd = n == 1.0 or n == 3.0
        y = np.float32((-c if odd else s) / (s if odd else c))
        return x if x == 0 else y                                # tan(-0.0) = -0.0
    return impl


# --------------------------------------------------------------------- inverse trigonometric
# float32 atan, asin, acos and atan2, in float64 rounded once (as the functions above): atan of
# a >= 0 reduces to |u| <= tan(pi/8) by u = a, (a - 1)/(a + 1) + pi/4 or -1/a + pi/2 (one
# division, chosen by selects), then u + u**3*P(u*u) (least-squares fit, relative error
# 2.9e-14); asin(x) = atan(x/sqrt(1 - x*x)), acos(x) = 2*atan(sqrt((1 - x)/(1 + x))), their
# differences of float32 values exact in float64; atan2 takes C99's signed zeros and
# infinities by selects. float64: libm's.
_ATANP64 = (-0.33333333331857623, 0.19999999705655275, -0.14285694483841122, 0.11110469185003717,
            -0.0907936405535532, 0.07570028029970241, -0.058961782211147576, 0.030966619159549347)
_TAN_PI_8 = 0.41421356237309503
_TAN_3PI_8 = 2.414213562373095
_PI_4 = 0.7853981633974483
_PI_2 = 1.5707963267948966
_PI = 3.141592653589793


@_helper
def _atan_nonneg64(a):
    """atan(a) of a float64 a >= 0 (+inf: pi/2; NaN stays NaN)."""
    mid = a > _TAN_PI_8
    far = a > _TAN_3PI_8
    num = -1.0 if far else (a - 1.0 if mid else a)
    den = a if far else (a + 1.0 if mid else 1.0)
    u = num / den
    z = u * u
    return (_PI_2 if far else (_PI_4 if mid else 0.0)) + _fmuladd(u * z, _horner(z, _ATANP64), u)


def _make_atan(ft):
    if ft is not np.float32:
        return libmath.make_libm_unary(np.arctan)(ft)

    def impl(x):
        d = np.float64(x)
        return np.float32(_copysign(_atan_nonneg64(abs(d)), d))
    return impl


def _make_asin(ft):
    if ft is not np.float32:
        return libmath.make_libm_unary(np.arcsin)(ft)

    def impl(x):
        d = np.float64(x)
        a = abs(d)
        # |x| = 1: a/0 = inf, atan pi/2; |x| > 1: sqrt of a negative, NaN
        return np.float32(_copysign(_atan_nonneg64(a / _sqrt(1.0 - a * a)), d))
    return impl


def _make_acos(ft):
    if ft is not np.float32:
        return libmath.make_libm_unary(np.arccos)(ft)

    def impl(x):
        d = np.float64(x)
        # x = -1: sqrt(2/0) = inf, 2 * pi/2; |x| > 1 (and -inf): a negative ratio or NaN, NaN
        return np.float32(2.0 * _atan_nonneg64(_sqrt((1.0 - d) / (1.0 + d))))
    return impl


def _make_atan2(ft):
    if ft is not np.float32:
        return lambda x, y: np.arctan2(x, y)

    # (the stubs name the operands x, y: here x is the ordinate, y the abscissa)
    def impl(x, y):
        dy, dx = np.float64(x), np.float64(y)
        ay, ax = abs(dy), abs(dx)
        q = _atan_nonneg64(ay / ax)
        q = _PI_4 if (ay == np.inf and ax == np.inf) else q        # (inf/inf)
        q = 0.0 if (ay == 0.0 and ax == 0.0) else q                 # (0/0)
        r = _PI - q if _copysign(1.0, dx) < 0.0 else q             # x < 0 or -0.0: the left half
        return np.float32(_copysign(r, dy))
    return impl


# --------------------------------------------------------------------- public names
def fg_exp(x):
    """e**x."""
    return python_entry(fg_exp, x)


def fg_exp_small(x):
    """e**x for x <= SMALL_EXP_LIMIT (43): fg_exp's bits, cheaper (kernels use it where the
    argument is known not to be positive: x - max(x), -|x|)."""
    return python_entry(fg_exp_small, x)


def fg_expm1(x):
    """e**x - 1, accurate near 0."""
    return python_entry(fg_expm1, x)


def fg_log(x):
    """Natural logarithm (log(0) = -inf, log(x < 0) = nan)."""
    return python_entry(fg_log, x)


def fg_log1p(x):
    """log(1 + x), accurate near 0."""
    return python_entry(fg_log1p, x)


def fg_tanh(x):
    """Hyperbolic tangent."""
    return python_entry(fg_tanh, x)


def fg_sigmoid(x):
    """1 / (1 + e**-x), without overflow for large |x|."""
    return python_entry(fg_sigmoid, x)


def fg_softplus(x):
    """log(1 + e**x), without overflow for large x."""
    return python_entry(fg_softplus, x)


def fg_erf(x):
    """The error function (float32: vectorisable, in float32; float64: libm's erf)."""
    return python_entry(fg_erf, x)


def fg_erfc(x):
    """The complementary error function (float32: vectorisable, in float64 rounded once;
    float64: libm's erfc, a call per element)."""
    return python_entry(fg_erfc, x)


def fg_exp2(x):
    """2**x (float32: vectorisable, in float64 rounded once; float64: libm's)."""
    return python_entry(fg_exp2, x)


def fg_log2(x):
    """Base-2 logarithm (float32: vectorisable, in float64 rounded once; float64: libm's)."""
    return python_entry(fg_log2, x)


def fg_log10(x):
    """Base-10 logarithm (float32: vectorisable, in float64 rounded once; float64: libm's)."""
    return python_entry(fg_log10, x)


def fg_sinh(x):
    """Hyperbolic sine (float32: vectorisable, in float64 rounded once; float64: libm's)."""
    return python_entry(fg_sinh, x)


def fg_cosh(x):
    """Hyperbolic cosine (float32: vectorisable, in float64 rounded once; float64: libm's)."""
    return python_entry(fg_cosh, x)


def fg_atanh(x):
    """Inverse hyperbolic tangent (float32: vectorisable, in float64 rounded once; float64: libm's)."""
    return python_entry(fg_atanh, x)


def fg_tan(x):
    """Tangent (float32: vectorisable, fg_sin's reduction, in float64 rounded once; float64: libm's)."""
    return python_entry(fg_tan, x)


def fg_atan(x):
    """Arctangent (float32: vectorisable, in float64 rounded once; float64: libm's)."""
    return python_entry(fg_atan, x)


def fg_asin(x):
    """Arcsine (float32: vectorisable, in float64 rounded once; float64: libm's)."""
    return python_entry(fg_asin, x)


def fg_acos(x):
    """Arccosine (float32: vectorisable, in float64 rounded once; float64: libm's)."""
    return python_entry(fg_acos, x)


def fg_atan2(x, y):
    """atan2(x, y), the angle of the point (y, x), with C99's special cases (np.arctan2's order;
    float32: vectorisable, in float64 rounded once; float64: libm's)."""
    return python_entry(fg_atan2, x, y)


def fg_sqrt(x):
    """Square root (sqrt(-0.0) = -0.0, sqrt(x < 0) = nan)."""
    return python_entry(fg_sqrt, x)


def fg_sin(x):
    """Sine."""
    return python_entry(fg_sin, x)


def fg_cos(x):
    """Cosine."""
    return python_entry(fg_cos, x)


def fg_sin_near(x):
    """Sine of |x| < NEAR_LIMIT (float32; float64: libm's, any x); see codegen/trig_guard.py."""
    return python_entry(fg_sin_near, x)


def fg_cos_near(x):
    """Cosine of |x| < NEAR_LIMIT (float32; float64: libm's, any x); see codegen/trig_guard.py."""
    return python_entry(fg_cos_near, x)


def fg_pow(x, y):
    """x**y with torch's semantics (C99 pow for floats, wrap-around for integers)."""
    return python_entry(fg_pow, x, y)


def fg_relu(x):
    """max(x, 0) keeping NaN (relu(nan) = nan)."""
    return python_entry(fg_relu, x)


def fg_maximum(x, y):
    """The larger operand; NaN if either is NaN."""
    return python_entry(fg_maximum, x, y)


def fg_minimum(x, y):
    """The smaller operand; NaN if either is NaN."""
    return python_entry(fg_minimum, x, y)


def fg_clamp(x, lo, hi):
    """minimum(maximum(x, lo), hi): hi wins when lo > hi; NaN propagates."""
    return python_entry(fg_clamp, x, lo, hi)


def fg_sign(x):
    """-1, 0 or 1 in x's dtype; torch's sign(nan) = 0."""
    return python_entry(fg_sign, x)


def fg_to_int64(x):
    """x as int64; a float outside int64's range (inf, nan) is INT64_MIN, as torch's CPU cast."""
    return python_entry(fg_to_int64, x)


def _make_clamp(ft):
    def impl(x, lo, hi):
        return fg_minimum(fg_maximum(x, lo), hi)
    return impl


overload_by_kind(fg_exp, _make_exp)
overload_by_kind(fg_exp_small, _make_exp_small)
overload_by_kind(fg_expm1, _make_expm1)
overload_by_kind(fg_log, _make_log)
overload_by_kind(fg_log1p, _make_log1p)
overload_by_kind(fg_tanh, _make_tanh)
overload_by_kind(fg_sigmoid, _make_sigmoid)
overload_by_kind(fg_softplus, _make_softplus)
overload_by_kind(fg_erf, _make_erf)
overload_by_kind(fg_erfc, _make_erfc)
overload_by_kind(fg_exp2, _make_exp2)
overload_by_kind(fg_log2, _make_log_scaled(np.log2, _INV_LN2_64))
overload_by_kind(fg_log10, _make_log_scaled(np.log10, _INV_LN10_64))
overload_by_kind(fg_sinh, _make_sinh)
overload_by_kind(fg_cosh, _make_cosh)
overload_by_kind(fg_atanh, _make_atanh)
overload_by_kind(fg_tan, _make_tan)
overload_by_kind(fg_atan, _make_atan)
overload_by_kind(fg_asin, _make_asin)
overload_by_kind(fg_acos, _make_acos)
overload_by_kind(fg_atan2, _make_atan2)
overload_by_kind(fg_sqrt, _make_sqrt)
overload_by_kind(fg_sin, _make_sin)
overload_by_kind(fg_cos, _make_cos)
overload_by_kind(fg_sin_near, _make_sin_near)
overload_by_kind(fg_cos_near, _make_cos_near)
overload_by_kind(fg_pow, _make_pow, ("f32", "f64", "int"))
# Compare-and-select functions are already vectorisable: share libmath's.
overload_by_kind(fg_relu, libmath.make_relu, ("f32", "f64", "int", "bool"))
overload_by_kind(fg_maximum, libmath.make_maximum, ("f32", "f64", "int", "bool"))
overload_by_kind(fg_minimum, libmath.make_minimum, ("f32", "f64", "int", "bool"))
overload_by_kind(fg_clamp, _make_clamp, ("f32", "f64", "int", "bool"))
overload_by_kind(fg_sign, libmath.make_sign, ("f32", "f64", "int", "bool"))
overload_by_kind(fg_to_int64, libmath.make_to_int64, ("f32", "f64", "int", "bool"))
