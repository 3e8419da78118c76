"""Reference scalar math for generated kernels: the `fg_*` names over libm.

Each function here has the same name, signature and special-value semantics
as its twin in `codegen/vmath.py`, but computes with `math`/NumPy calls. Numba
lowers those to scalar libm calls, so a loop using them never vectorises;
this module exists to switch vector math off and compare (speed, and results
up to the few ulp that vmath documents).

Semantics follow torch (the project's oracle):

* `fg_maximum`/`fg_minimum`/`fg_clamp` propagate NaN from any operand; on a tie
  the first operand is returned (so signed zeros follow torch's scalar path).
* `fg_relu(nan)` is nan, `fg_relu(-0.0)` is -0.0.
* `fg_sign(nan)` is 0 and `fg_sign(-0.0)` is +0 (torch, unlike NumPy's nan/-0).
* `fg_pow` is C99 `pow` for floats (pow(x, 0) = 1, pow(1, y) = 1, negative base
  with a non-integer exponent = nan); for integers it is exact wrap-around
  int64 arithmetic, and a negative exponent gives 1, +-1 or 0 like torch.
* `fg_sigmoid` is torch's 1/(1 + e**-x) where that is 0 (x below
  `SIGMOID_ZERO`, where e**-x overflows) and e**x/(1 + e**x) above, without
  the rounding of e**-x; `fg_softplus` is log(1 + e**x) without torch's
  `threshold` cut-off; `fg_log1p` of a denormal is x (C99; torch gives 0).

Functions take scalars of one dtype and return that dtype: float32 or
float64; also int64 for `fg_pow`, and int64 or bool for `fg_maximum`,
`fg_minimum`, `fg_clamp`, `fg_sign` and `fg_relu`. A second/third operand of
another numeric type is converted to the first operand's type, never down a
category (an int exponent of a float base is fine; a float one of an int base
is a typing error). Called from plain Python they run their jitted version.

The overloads are built by `overload_by_kind`, which both math modules use.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
from numba import njit, types
from numba.extending import overload

from fusegrad.ir.fma_jit import llvm_fma

__all__ = [
    "fg_exp", "fg_exp_small", "fg_expm1", "fg_log", "fg_log1p", "fg_tanh", "fg_sigmoid", "fg_softplus",
    "fg_erf", "fg_erfc",
    "fg_exp2", "fg_log2", "fg_log10", "fg_sinh", "fg_cosh", "fg_atanh", "fg_tan",
    "fg_atan", "fg_asin", "fg_acos", "fg_atan2",
    "fg_sqrt", "fg_sin", "fg_cos", "fg_sin_near", "fg_cos_near", "fg_pow", "fg_relu",
    "fg_maximum", "fg_minimum", "fg_clamp", "fg_sign", "fg_div_floor", "fg_div_trunc",
    "fg_remainder", "fg_lshift", "fg_rshift", "fg_to_int64", "fg_fma",
]


# --------------------------------------------------------------------- machinery
def _kind(t) -> str | None:
    if isinstance(t, types.Float):
        return "f32" if t.bitwidth == 32 else "f64"
    if isinstance(t, types.Boolean):
        return "bool"
    if isinstance(t, types.Integer):
        return "int"
    return None


def _numpy_type(t):
    """The NumPy scalar type that stores Numba scalar type `t`."""
    return np.bool_ if isinstance(t, types.Boolean) else getattr(np, t.name)


def overload_by_kind(stub: Callable, make: Callable, kinds=("f32", "f64")) -> None:
    """Register a Numba overload for `stub`, built per dtype by `make(np_type)`.

    Implementations name their arguments (x), (x, y) or (x, lo, hi), as
    the stubs do. The first argument's type decides the implementation ("f32", "f64", "int"
    or "bool", among `kinds`); `make` receives that type's NumPy scalar type so
    that it can type its constants (a bare Python float constant would turn
    float32 arithmetic into float64). Other arguments must be numeric and are
    converted to the first argument's type before the implementation runs.
    """
    impls: dict = {}

    def implementation(first):
        key = first.name
        if key not in impls:
            impls[key] = make(_numpy_type(first))
        return impls[key]

    nargs = stub.__code__.co_argcount

    def select(*args):
        if _kind(args[0]) not in kinds:
            return None
        if all(a == args[0] for a in args[1:]):
            return implementation(args[0])
        # Mixed operands: convert the others to the first operand's type, but
        # never down a category (bool < int < float), which would lose values.
        rank = _RANK[_kind(args[0])]
        if any(_kind(a) is None or _RANK[_kind(a)] > rank for a in args[1:]):
            return None
        conv = _numpy_type(args[0])
        if nargs == 2:
            return lambda x, y: stub(x, conv(y))
        return lambda x, lo, hi: stub(x, conv(lo), conv(hi))

    # Numba wants the typing function's signature to match the implementation's.
    if nargs == 1:
        overload(stub, jit_options=_JIT_OPTIONS)(lambda x: select(x))
    elif nargs == 2:
        overload(stub, jit_options=_JIT_OPTIONS)(lambda x, y: select(x, y))
    else:
        overload(stub, jit_options=_JIT_OPTIONS)(lambda x, lo, hi: select(x, lo, hi))


# NumPy's error model: float division by zero gives inf/nan instead of raising
# (no zero test, no branch). forceinline marks the compiled function LLVM
# `alwaysinline`, so it melts into the calling loop however big the loop body
# gets: a call left in a loop would stop it from vectorising.
_JIT_OPTIONS = {"error_model": "numpy", "forceinline": True}
_RANK = {"bool": 0, "int": 1, "f32": 2, "f64": 2}


def python_entry(stub: Callable, *args):
    """Run `stub`'s jitted implementation from plain Python (one dispatcher per stub)."""
    jitted = _ENTRIES.get(stub)
    if jitted is None:
        call = stub
        if len(args) == 1:
            jitted = njit(lambda x: call(x))
        elif len(args) == 2:
            jitted = njit(lambda x, y: call(x, y))
        else:
            jitted = njit(lambda x, y, z: call(x, y, z))
        _ENTRIES[stub] = jitted
    return jitted(*args)


_ENTRIES: dict = {}


# --------------------------------------------------------------------- public names
def fg_exp(x):
    """e**x."""
    return python_entry(fg_exp, x)


def fg_exp_small(x):
    """e**x for x <= 43 (vmath's cheaper form of fg_exp there; here libm's exp)."""
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


def fg_erf(x):
    """The error function (libm's erf/erff)."""
    return python_entry(fg_erf, x)


def fg_erfc(x):
    """The complementary error function (libm's erfc/erfcf)."""
    return python_entry(fg_erfc, x)


def fg_exp2(x):
    """2**x (libm's exp2/exp2f)."""
    return python_entry(fg_exp2, x)


def fg_log2(x):
    """Base-2 logarithm (libm's log2/log2f)."""
    return python_entry(fg_log2, x)


def fg_log10(x):
    """Base-10 logarithm (libm's log10/log10f)."""
    return python_entry(fg_log10, x)


def fg_sinh(x):
    """Hyperbolic sine (libm's sinh/sinhf)."""
    return python_entry(fg_sinh, x)


def fg_cosh(x):
    """Hyperbolic cosine (libm's cosh/coshf)."""
    return python_entry(fg_cosh, x)


def fg_atanh(x):
    """Inverse hyperbolic tangent (libm's atanh/atanhf)."""
    return python_entry(fg_atanh, x)


def fg_tan(x):
    """Tangent (libm's tan/tanf)."""
    return python_entry(fg_tan, x)


def fg_atan(x):
    """Arctangent (libm's atan/atanf)."""
    return python_entry(fg_atan, x)


def fg_asin(x):
    """Arcsine (libm's asin/asinf)."""
    return python_entry(fg_asin, x)


def fg_acos(x):
    """Arccosine (libm's acos/acosf)."""
    return python_entry(fg_acos, x)


def fg_atan2(x, y):
    """atan2(x, y), the angle of the point (y, x) (libm's atan2/atan2f; np.arctan2's order)."""
    return python_entry(fg_atan2, x, y)


def fg_softplus(x):
    """log(1 + e**x), without overflow for large x."""
    return python_entry(fg_softplus, x)


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
    """Sine, for the code generator's guarded kernels (codegen/trig_guard.py); libm's here."""
    return python_entry(fg_sin_near, x)


def fg_cos_near(x):
    """Cosine, for the code generator's guarded kernels (codegen/trig_guard.py); libm's here."""
    return python_entry(fg_cos_near, x)


def fg_pow(x, y):
    """x**y with torch's semantics (C99 pow for floats, wrap-around for integers)."""
    return python_entry(fg_pow, x, y)


def fg_relu(x):
    """max(x, 0) keeping NaN (relu(nan) = nan)."""
    return python_entry(fg_relu, x)


def fg_to_int64(x):
    """x as int64, as torch's CPU cast: a float outside int64's range (inf, nan, |x| >= 2**63)
    is INT64_MIN (the x86 conversion's value; LLVM's cast leaves it undefined)."""
    return python_entry(fg_to_int64, x)


def make_to_int64(ft):
    """The int64 cast for scalar type `ft`: a select, so that loops using it vectorise."""
    if issubclass(ft, np.floating):
        limit, lowest = ft(2.0 ** 63), np.int64(-2 ** 63)
        return lambda x: np.int64(x) if (x < limit and x >= -limit) else lowest
    return lambda x: np.int64(x)


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


def fg_div_floor(x, y):
    """torch's floor division of floats (c10's div_floor_floating; x / y where y == 0)."""
    return python_entry(fg_div_floor, x, y)


def fg_div_trunc(x, y):
    """torch's division rounded toward zero, trunc(x / y), of floats."""
    return python_entry(fg_div_trunc, x, y)


def fg_remainder(x, y):
    """torch's remainder of floats: fmod(x, y), plus y where their signs differ."""
    return python_entry(fg_remainder, x, y)


def fg_lshift(x, y):
    """torch's int64 x << y: 0 for a count outside [0, 64)."""
    return python_entry(fg_lshift, x, y)


def fg_rshift(x, y):
    """torch's int64 x >> y: x >> 63 (the sign) for a count outside [0, 63)."""
    return python_entry(fg_rshift, x, y)


def fg_fma(x, y, z):
    """x * y + z rounded once for floats (LLVM's fma: the hardware instruction, which
    vectorises); integers wrap around."""
    return python_entry(fg_fma, x, y, z)


# --------------------------------------------------------------------- implementations
# Factories: `make_*(ft)` returns the implementation for operands of NumPy
# scalar type `ft` (np.float32, np.float64, np.int64, np.bool_). The public
# ones are shared with vmath (compare-and-select code already vectorises).

def make_libm_unary(fn):
    """A factory for `overload_by_kind`: for every scalar type, an implementation calling `fn` (from `math`)."""
    def make(ft):
        return lambda x: fn(x)
    return make


# The largest x with a finite e**x, negated: below it torch's e**-x overflows and its
# sigmoid, 1/(1 + e**-x), is 0 (the eager reference computes the same formula).
SIGMOID_ZERO = {np.float32: -88.72283172607422, np.float64: -709.782712893384}


def _make_sigmoid(ft):
    one = ft(1)
    zero = ft(0)
    underflow = ft(SIGMOID_ZERO[ft])

    def impl(x):
        e = math.exp(-abs(x))
        r = one / (one + e)
        r = r if x >= 0 else e * r
        return zero if x < underflow else r
    return impl


def _make_softplus(ft):
    zero = ft(0)

    def impl(x):
        return (x if x > zero else zero) + math.log1p(math.exp(-abs(x)))
    return impl


def _make_pow(ft):
    if issubclass(ft, np.integer):
        return make_int_pow(ft)

    def impl(x, y):
        return math.pow(x, y)
    return impl


def make_int_pow(ft):
    """The integer power x**y for integer type `ft`, by repeated squaring in `ft`.
    A negative exponent gives 0 except for bases 1 and -1, as torch does."""
    one = ft(1)
    zero = ft(0)

    def impl(x, y):
        if y < zero:
            # torch: only 1 and -1 have integer reciprocals; everything else is 0.
            if x == one:
                return one
            if x == -one:
                return one if y % 2 == zero else -one
            return zero
        result = one
        base = x
        e = y
        while e > zero:
            if e & one:
                result = ft(result * base)
            base = ft(base * base)
            e >>= one
        return result
    return impl


def make_relu(ft):
    """The relu implementation for scalar type `ft`: x, or 0 where x < 0."""
    zero = ft(0)
    return lambda x: zero if x < zero else x


def make_maximum(ft):
    """The maximum implementation for scalar type `ft`; for floats NaN propagates, as torch's maximum."""
    if issubclass(ft, np.floating):
        return lambda x, y: x if (x >= y or x != x) else y
    return lambda x, y: x if x >= y else y


def make_minimum(ft):
    """The minimum implementation for scalar type `ft`; for floats NaN propagates, as torch's minimum."""
    if issubclass(ft, np.floating):
        return lambda x, y: x if (x <= y or x != x) else y
    return lambda x, y: x if x <= y else y


def _make_clamp(ft):
    def impl(x, lo, hi):
        return fg_minimum(fg_maximum(x, lo), hi)
    return impl


def make_sign(ft):
    """The sign implementation for scalar type `ft`: -1, 0 or 1 (bool: x itself); NaN gives 0."""
    if ft is np.bool_:
        return lambda x: x
    one = ft(1)
    zero = ft(0)
    return lambda x: one if x > zero else (-one if x < zero else zero)


_FLOAT = ("f32", "f64")
def make_div_floor(ft):
    """ir/ops/division.py's float formula, one element at a time."""
    one, half, zero = ft(1), ft(0.5), ft(0)

    def impl(x, y):
        if y == zero:
            return x / y
        mod = ft(np.fmod(x, y))
        div = (x - mod) / y
        if mod != zero and (y < zero) != (mod < zero):
            div = div - one
        if div == zero:
            return ft(np.copysign(zero, x / y))
        floordiv = np.floor(div)
        return floordiv + one if div - floordiv > half else floordiv
    return impl


def make_div_trunc(ft):
    """x / y rounded toward zero (torch.div rounding_mode='trunc'), for float type `ft`."""
    def impl(x, y):
        return np.trunc(x / y)
    return impl


def make_remainder(ft):
    """Python's (and torch's) x % y: the result takes the sign of y (np.fmod takes x's)."""
    zero = ft(0)

    def impl(x, y):
        mod = ft(np.fmod(x, y))
        return mod + y if mod != zero and (y < zero) != (mod < zero) else mod
    return impl


def make_lshift(ft):
    """x << y as torch computes it on int64: a shift by a negative count or by 64 or more gives 0."""
    zero = ft(0)

    def impl(x, y):
        valid = y >= 0 and y < 64
        return (x << (y if valid else zero)) if valid else zero
    return impl


def make_rshift(ft):
    """x >> y as torch computes it on int64: a shift out of [0, 63) shifts by 63 (the sign fills)."""
    def impl(x, y):
        return x >> (y if (y >= 0 and y < 63) else ft(63))
    return impl


def make_fma(ft):
    """x * y + z: one rounding for floats (torch's add with alpha, lerp and addcmul are FMAs)."""
    if np.issubdtype(ft, np.floating):
        return lambda x, lo, hi: llvm_fma(x, lo, hi)
    return lambda x, lo, hi: x * lo + hi


_NUMERIC = ("f32", "f64", "int")
_ALL = ("f32", "f64", "int", "bool")

overload_by_kind(fg_exp, make_libm_unary(math.exp))
overload_by_kind(fg_exp_small, make_libm_unary(math.exp))
overload_by_kind(fg_expm1, make_libm_unary(math.expm1))
overload_by_kind(fg_log, make_libm_unary(math.log))
overload_by_kind(fg_log1p, make_libm_unary(math.log1p))
overload_by_kind(fg_tanh, make_libm_unary(math.tanh))
overload_by_kind(fg_sigmoid, _make_sigmoid)
overload_by_kind(fg_softplus, _make_softplus)
overload_by_kind(fg_erf, make_libm_unary(math.erf))
overload_by_kind(fg_erfc, make_libm_unary(math.erfc))
# (NumPy's ufuncs on scalars: Numba calls libm's function for the scalar's type)
overload_by_kind(fg_exp2, make_libm_unary(np.exp2))
overload_by_kind(fg_log2, make_libm_unary(np.log2))
overload_by_kind(fg_log10, make_libm_unary(np.log10))
overload_by_kind(fg_sinh, make_libm_unary(np.sinh))
overload_by_kind(fg_cosh, make_libm_unary(np.cosh))
overload_by_kind(fg_atanh, make_libm_unary(np.arctanh))
overload_by_kind(fg_tan, make_libm_unary(np.tan))
overload_by_kind(fg_atan, make_libm_unary(np.arctan))
overload_by_kind(fg_asin, make_libm_unary(np.arcsin))
overload_by_kind(fg_acos, make_libm_unary(np.arccos))
overload_by_kind(fg_atan2, lambda ft: lambda x, y: np.arctan2(x, y))
overload_by_kind(fg_sqrt, make_libm_unary(math.sqrt))
overload_by_kind(fg_sin, make_libm_unary(math.sin))
overload_by_kind(fg_cos, make_libm_unary(math.cos))
overload_by_kind(fg_sin_near, make_libm_unary(math.sin))
overload_by_kind(fg_cos_near, make_libm_unary(math.cos))
overload_by_kind(fg_pow, _make_pow, _NUMERIC)
overload_by_kind(fg_relu, make_relu, _ALL)
overload_by_kind(fg_to_int64, make_to_int64, _ALL)
overload_by_kind(fg_maximum, make_maximum, _ALL)
overload_by_kind(fg_minimum, make_minimum, _ALL)
overload_by_kind(fg_clamp, _make_clamp, _ALL)
overload_by_kind(fg_sign, make_sign, _ALL)
overload_by_kind(fg_div_floor, make_div_floor)
overload_by_kind(fg_div_trunc, make_div_trunc)
overload_by_kind(fg_remainder, make_remainder)
overload_by_kind(fg_lshift, make_lshift, ("int",))
overload_by_kind(fg_rshift, make_rshift, ("int",))
overload_by_kind(fg_fma, make_fma, _NUMERIC)
