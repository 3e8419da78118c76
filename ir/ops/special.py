"""torch's special functions: lgamma, digamma, polygamma, erfinv, mvlgamma, i0 (and torch.special's
i0e, i1, i1e, ndtri, log_ndtr, entr, xlog1py). The user-level functions are in
tracer/special_functions.py, the torch.special namespace in fusegrad/special.py.

Every function is evaluated in float64 with vectorised NumPy (no loop over elements) and rounded
once to the operand's dtype; the ops run by these references in compiled programs too
(reference_only: there are no vmath kernels for them). Measured against mpmath (40 digits) over
sweeps of 25,000 to 117,000 arguments per function (uniform and log-uniform, negative, near poles
and roots, tiny and huge), each also rounded to float32: every float32 result was within 0.5 ulp
(the float64 value rounded once); float64 relative errors:

    lgamma    Lanczos (g=7, n=9) above 2.5; below, lgamma(2 + z) = (1 - euler) z + sum (zeta(k) - 1)(-z)^k / k
              (|z| <= 0.5, so the roots 1 and 2 keep their relative accuracy), and the reflection
              formula for x <= -0.5: 2e-16 for x > -0.5, 2e-14 for x < 0 where |lgamma| > 0.1; at the
              negative roots the reflection's cancellation costs more (4e-13 at -2.4578)
    digamma   recurrence to x >= 10 (not 6: the asymptotic series to B16 is exact to 1e-17 there),
              the Taylor series about the positive root 1.4616... within 0.1 of it, reflection with
              cot(pi x) for x < 0: 3e-16 for x > 0, 1.3e-14 for x < 0 where |digamma| > 0.1 (6e-13
              at the negative roots)
    polygamma (-1)^(n+1) n! zeta(n + 1, x), Hurwitz's zeta by Euler-Maclaurin (direct terms to
              x >= n + 11, Bernoulli terms to B24); for x < 0 the reflection formula with the n-th
              derivative of cot as a polynomial in cot: 3e-15 (n = 1, 2, 3, 5)
    erfinv    Giles' single-precision approximation as the first guess, then Newton steps on erf
              (|y| <= 0.5) or on log erfc(x) = log erfcx(x) - x^2 (from 1 - |y|, exact there): 6e-16
    i0, i0e, i1, i1e   Cephes' Chebyshev series (torch's Math.h coefficients): 2e-15
    ndtri     Cephes' ndtri (torch's calc_ndtri): 1e-15
    log_ndtr  log(erfcx(-x / sqrt 2) / 2) - x^2 / 2 below -1, else log1p(-erfc(x / sqrt 2) / 2) on
              Cody's erfc (ir/ops/erf_gelu.py), exp(-x^2 / 2) split exactly: 8e-16
    mvlgamma  sum_j lgamma(x - j / 2) + p (p - 1) / 4 log(pi): 2e-15

torch 2.13 over the same kind of sweep (5,000 to 23,000 arguments): float32 max ulp error lgamma 1.3,
digamma 1e6 (near its root 1.4616, float32 arithmetic), polygamma(1) 5e4 (x < 0), polygamma(2) 53,
polygamma(5) 8, i0e 5, i1e 9, ndtri 3.3, log_ndtr 73, mvlgamma 2, erfinv 0.5; float64 relative:
lgamma 2e-16, digamma 1.4e-10, polygamma(1) 5e-10, polygamma(2) 8e-14, log_ndtr 1.3e-14, the others
about 1e-15. Tests compare with torch at tolerances that allow its errors.

torch's values at poles and edges are kept: lgamma is inf at 0 and the negative integers (and at
-inf); digamma(+-0) = -+inf, NaN at the negative integers; polygamma(n >= 1) is
(-1)^(n+1) inf at 0 and the negative integers; erfinv(+-1) = +-inf, NaN beyond; i0 and i1 are NaN
at +-inf (torch's exp(x) * ... / sqrt(x)). Where torch's values are rounding artifacts fusegrad
gives the limit instead: torch's polygamma(1, x) (its own trigamma) is finite at negative
integers (1.29e15 at -1 in float32), fusegrad's inf; torch's i0 and i1 overflow to inf for
|x| in (88.7, 89.4) in float32 and (709.8, 713.9) in float64, where fusegrad's values are finite.
(torch's NaN of polygamma(n >= 2, inf) and trigamma's NaN at -inf are kept.)
"""
from __future__ import annotations

import math

import numpy as np

from .elementwise import _infer_map
from .erf_gelu import _C, _D, _ONE_OVER_SQRT_PI, _P, _Q, erf64
from .registry import COMPOSITE, OTHER_THEN_SELF, OpDef, register

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_LOG_PI = math.log(math.pi)
_SQRT_PI_2 = math.sqrt(math.pi) / 2
_SQRT_2PI = math.sqrt(2 * math.pi)

# Bernoulli numbers B2, B4, ..., B24
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798,
              -174611 / 330, 854513 / 138, -236364091 / 2730)


def _f64(x) -> np.ndarray:
    return np.array(x, dtype=np.float64, copy=True, ndmin=0)


def _rounded(fn):
    """The float64 function `fn` as a reference: evaluated on the operand in float64 and rounded
    once to its dtype, without floating-point warnings."""
    def ref(x, **attrs):
        with np.errstate(all="ignore"):
            return np.asarray(fn(_f64(x), **attrs), dtype=x.dtype)
    ref.__name__ = fn.__name__
    return ref


def _poly(coefficients, z):
    """sum c_i z^i, the coefficients lowest first (Horner)."""
    out = np.zeros_like(z) + coefficients[-1]
    for c in reversed(coefficients[:-1]):
        out = out * z + c
    return out


def _sin_pi(x):
    """sin(pi x), x reduced to [-1/2, 1/2] first (exact) so that pi x loses nothing."""
    n = np.round(x)
    r = x - n
    return np.where(np.fmod(n, 2) == 0, 1.0, -1.0) * np.sin(np.pi * r)


def _cot_pi(x):
    """cot(pi x) with x reduced to r in [-1/2, 1/2] (exact) and cos(pi r) = sin(pi (1/2 - |r|)) for
    |r| >= 1/4 (1/2 - |r| exact): no rounding of pi r shows near the zeros of cot."""
    r = x - np.round(x)
    a = np.abs(r)
    cos = np.where(a < 0.25, np.cos(np.pi * r), np.sin(np.pi * (0.5 - a)))
    return cos / np.sin(np.pi * r)


# ------------------------------------------------------------------ Hurwitz zeta
def hurwitz_zeta(s: float, q) -> np.ndarray:
    """zeta(s, q) = sum_k (q + k)^-s for s > 1 and q > 0 (float64): the terms up to q + k >=
    s + 10, then Euler-Maclaurin's tail with the Bernoulli terms to B24."""
    q = _f64(q)
    total = np.zeros_like(q)
    limit = s + 10.0
    small = q < limit
    while small.any():
        total += np.where(small, q ** -s, 0.0)
        q = np.where(small, q + 1.0, q)
        small = q < limit
    inv = 1.0 / q
    inv2 = inv * inv
    tail = q / (s - 1.0) + 0.5
    rising, power, factorial = s, inv, 2.0         # (s)_{2j-1}, q^-(2j-1), (2j)!
    for j, b in enumerate(_BERNOULLI, start=1):
        tail = tail + b / factorial * rising * power
        rising *= (s + 2 * j - 1) * (s + 2 * j)
        power = power * inv2
        factorial *= (2 * j + 1) * (2 * j + 2)
    return total + q ** -s * tail


# ------------------------------------------------------------------ lgamma
_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7)
_EULER = 0.57721566490153286061
# lgamma(2 + z) = (1 - euler) z + sum_{k >= 2} (zeta(k) - 1) (-z)^k / k, |z| <= 1/2: 30 terms
_LGAMMA2 = (0.0, 1.0 - _EULER) + tuple(float(hurwitz_zeta(k, 2.0)) * (-1.0) ** k / k for k in range(2, 32))


def _lgamma_lanczos(x):
    # (x - 1/2) (log t - 1) - g + log A(x) + log(2 pi) / 2, t = x + g - 1/2: no overflow before lgamma's
    a = np.full_like(x, _LANCZOS[0])
    for i, c in enumerate(_LANCZOS[1:], start=1):
        a = a + c / (x + (i - 1))
    t = x + (_LANCZOS_G - 0.5)
    return (x - 0.5) * (np.log(t) - 1.0) - _LANCZOS_G + np.log(a) + _HALF_LOG_2PI


def lgamma64(x):
    """log|Gamma(x)| in float64 (torch's values: inf at 0, the negative integers and +-inf)."""
    x = _f64(x)
    # (each range evaluated on arguments clamped into it, then selected)
    large = _lgamma_lanczos(np.maximum(x, 2.5))
    z2 = np.clip(x - 2.0, -0.5, 0.5)                        # [1.5, 2.5]
    z1 = np.clip(x - 1.0, -0.5, 0.5)                        # [0.5, 1.5): lgamma(x + 1) - log x
    z0 = np.clip(x, -0.5, 0.5)                              # (-0.5, 0.5): lgamma(x + 2) - log(x (x + 1))
    series = np.where(x >= 1.5, _poly(_LGAMMA2, z2),
                      np.where(x >= 0.5, _poly(_LGAMMA2, z1) - np.log(np.clip(x, 0.5, 1.5)),
                               _poly(_LGAMMA2, z0) - np.log1p(z0) - np.log(np.abs(z0))))
    # x <= -0.5: log(pi / |sin(pi x)|) - lgamma(1 - x), 1 - x >= 1.5
    reflected_x = np.maximum(1.0 - x, 1.5)
    reflected_arg = np.where(reflected_x >= 2.5, _lgamma_lanczos(np.maximum(reflected_x, 2.5)),
                             _poly(_LGAMMA2, np.clip(reflected_x - 2.0, -0.5, 0.5)))
    reflected = _LOG_PI - np.log(np.abs(_sin_pi(np.minimum(x, -0.5)))) - reflected_arg
    out = np.where(x > 2.5, large, np.where(x > -0.5, series, reflected))
    pole = (x == np.floor(x)) & (x <= 0)
    return np.where(pole | np.isinf(x), np.inf, out)


# ------------------------------------------------------------------ digamma
_DIGAMMA_ROOT, _DIGAMMA_ROOT_LO = 1.4616321449683622, 9.549995429965697e-17
# digamma about its positive root: sum_k psi^(k)(root) / k! d^k = sum_k (-1)^(k+1) zeta(k + 1, root) d^k
_DIGAMMA_TAYLOR = (0.0,) + tuple((-1.0) ** (k + 1) * float(hurwitz_zeta(k + 1, _DIGAMMA_ROOT)) for k in range(1, 17))
# the asymptotic series' B_2k / (2k), k = 1..8
_DIGAMMA_ASYMPTOTIC = tuple(b / (2 * k) for k, b in enumerate(_BERNOULLI[:8], start=1))


def _digamma_positive(x):
    """digamma for x > 0 (x finite)."""
    y, acc = x.copy(), np.zeros_like(x)
    small = y < 10.0
    while small.any():
        acc -= np.where(small, 1.0 / y, 0.0)
        y = np.where(small, y + 1.0, y)
        small = y < 10.0
    inv2 = 1.0 / (y * y)
    series = _poly((0.0,) + _DIGAMMA_ASYMPTOTIC, inv2)
    out = acc + np.log(y) - 0.5 / y - series
    d = (x - _DIGAMMA_ROOT) - _DIGAMMA_ROOT_LO
    return np.where(np.abs(d) < 0.1, _poly(_DIGAMMA_TAYLOR, d), out)


def digamma64(x):
    """digamma(x) in float64, with torch's values: -+inf at +-0, NaN at the negative integers and -inf."""
    x = _f64(x)
    negative = x < 0
    positive = _digamma_positive(np.where(negative, 1.0 - x, np.where(x > 0, x, 1.0)))
    out = np.where(negative, positive - np.pi * _cot_pi(x), positive)
    out = np.where(x == 0, np.copysign(np.inf, -x), out)
    out = np.where(negative & (x == np.floor(x)), np.nan, out)
    return np.where(x == np.inf, np.inf, np.where(np.isnan(x), x, out))


# ------------------------------------------------------------------ polygamma
def _cot_derivative(n: int) -> tuple:
    """The n-th derivative of cot as a polynomial in cot (coefficients lowest first):
    C_0 = c, C_(k+1) = -(1 + c^2) C_k'(c)."""
    poly = np.array([0.0, 1.0])
    for _ in range(n):
        derivative = np.polynomial.polynomial.polyder(poly)
        poly = -np.polynomial.polynomial.polymul([1.0, 0.0, 1.0], derivative)
    return tuple(poly)


def polygamma64(x, n: int):
    """polygamma(n, x) in float64 (n >= 0), with torch's values at poles and infinities."""
    x = _f64(x)
    if n == 0:
        return digamma64(x)
    sign = 1.0 if n % 2 else -1.0
    factorial = math.exp(math.lgamma(n + 1.0))
    negative = x < 0
    positive_x = np.where(negative, 1.0 - x, np.where(x > 0, x, 1.0))
    value = sign * factorial * hurwitz_zeta(n + 1.0, np.where(np.isfinite(positive_x), positive_x, 1.0))
    # x < 0: psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi^(n+1) cot^(n)(pi x)
    cot = _cot_pi(x)
    reflected = (-1.0) ** n * value - np.pi ** (n + 1) * _poly(_cot_derivative(n), cot)
    out = np.where(negative, reflected, value)
    pole = (x <= 0) & (x == np.floor(x))
    out = np.where(pole, sign * np.inf, out)
    # torch: its trigamma is NaN at -inf and 0 at inf; its zeta NaN at inf
    if n == 1:
        out = np.where(x == -np.inf, np.nan, np.where(x == np.inf, 0.0, out))
    else:
        out = np.where(x == np.inf, np.nan, out)
    return np.where(np.isnan(x), np.nan, out)


# ------------------------------------------------------------------ erfc, erfcx (Cody's, erf_gelu's coefficients)
def _erfcx_cody(y):
    """exp(y^2) erfc(y) for y > 0.46875 (Cody's two outer ranges)."""
    num, den = _C[8] * y, y
    for c, d in zip(_C[:7], _D[:7]):
        num, den = (num + c) * y, (den + d) * y
    middle = (num + _C[7]) / (den + _D[7])
    inverse = 1.0 / (y * y)
    num, den = _P[5] * inverse, inverse
    for p, q in zip(_P[:4], _Q[:4]):
        num, den = (num + p) * inverse, (den + q) * inverse
    large = (_ONE_OVER_SQRT_PI - inverse * (num + _P[4]) / (den + _Q[4])) / y
    return np.where(y <= 4.0, middle, large)


def erfcx64(x):
    """exp(x^2) erfc(x) for x >= 0 (float64)."""
    y = np.maximum(x, 0.46875)
    return np.where(x > 0.46875, _erfcx_cody(y), np.exp(x * x) * (1.0 - erf64(x)))


def erfc64(x):
    """erfc(x) in float64 (Cody's ranges; erfc(-x) = 2 - erfc(x))."""
    y = np.abs(x)
    x16 = np.trunc(y * 16.0) / 16.0                   # (erf_gelu's exact splitting of exp(-y^2))
    outer = np.exp(-x16 * x16) * np.exp(-(y - x16) * (y + x16)) * _erfcx_cody(np.maximum(y, 0.46875))
    outer = np.where(y >= 27.3, 0.0, outer)
    out = np.where(y <= 0.46875, 1.0 - erf64(np.minimum(y, 0.5)), outer)
    return np.where(x < 0, 2.0 - out, out)


# ------------------------------------------------------------------ erfinv
_GILES_CENTRAL = (1.50140941, 0.246640727, -0.00417768164, -0.00125372503, 0.00021858087, -4.39150654e-06,
                  -3.5233877e-06, 3.43273939e-07, 2.81022636e-08)
_GILES_TAIL = (2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773, -0.00367342844,
               0.00134934322, 0.000100950558, -0.000200214257)


def erfinv64(y):
    """erfinv(y) in float64: Giles' approximation (single precision) as the guess, then Newton's
    steps on erf for |y| <= 1/2, on log erfc(x) = log erfcx(x) - x^2 for the tail (from 1 - |y|,
    exact there); +-inf at +-1, NaN beyond."""
    y = _f64(y)
    a = np.abs(y)
    q = np.where(a < 1.0, 1.0 - a, 0.5)               # exact for a >= 1/2
    w = -np.log(q * (1.0 + np.minimum(a, 1.0)))
    guess = np.where(w < 5.0, _poly(_GILES_CENTRAL, w - 2.5),
                     _poly(_GILES_TAIL, np.sqrt(np.maximum(w, 5.0)) - 3.0)) * np.minimum(a, 1.0)
    central = np.minimum(guess, 0.5)
    for _ in range(2):
        central = central - (erf64(central) - a) * _SQRT_PI_2 * np.exp(central * central)
    tail = np.maximum(guess, 0.45)
    log_q = np.log(q)
    for _ in range(5):
        ratio = erfcx64(tail)
        tail = tail + (np.log(ratio) - tail * tail - log_q) * ratio * _SQRT_PI_2
    out = np.where(a <= 0.5, central, tail)
    out = np.where(a == 1.0, np.inf, np.where(a > 1.0, np.nan, out))
    return np.where(y == 0, y, np.copysign(out, y))


# ------------------------------------------------------------------ modified Bessel functions (Cephes)
_I0E_A = (-4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
          1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
          -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
          9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
          -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
          1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
          -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
          1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
          -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
          1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1)
_I0E_B = (-7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
          3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
          1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
          -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
          7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
          -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
          3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
          2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
          8.04490411014108831608E-1)
_I1E_A = (2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
          -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
          3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
          -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
          9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7,
          -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5,
          4.78156510755005422638E-5, -1.61760815825896745588E-4, 5.12285956168575772895E-4,
          -1.51357245063125314899E-3, 4.15642294431288815669E-3, -1.05640848946261981558E-2,
          2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1,
          -1.76416518357834055153E-1, 2.52587186443633654823E-1)
_I1E_B = (7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17,
          -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16,
          -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
          4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13,
          -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11,
          3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10,
          -3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
          -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3,
          7.78576235018280120474E-1)


def _chbevl(y, coefficients):
    """Cephes' chbevl: the Chebyshev series sum' c_i T_i(y / 2), coefficients highest first."""
    b0, b1, b2 = np.full_like(y, coefficients[0]), np.zeros_like(y), np.zeros_like(y)
    for c in coefficients[1:]:
        b2, b1 = b1, b0
        b0 = y * b1 - b2 + c
    return 0.5 * (b0 - b2)


def _scaled_bessel(x, a, b, times_x):
    """Cephes' exp(-|x|) I(|x|): series A over [0, 8] (times |x| for I1), B beyond."""
    y = np.abs(x)
    near = _chbevl(np.minimum(y, 8.0) / 2.0 - 2.0, a)
    if times_x:
        near = near * y
    far = _chbevl(32.0 / np.maximum(y, 8.0) - 2.0, b) / np.sqrt(np.maximum(y, 8.0))
    return np.where(y <= 8.0, near, np.where(np.isinf(y), 0.0, far))


def i0e64(x):
    """exp(-|x|) I0(x) (float64)."""
    return _scaled_bessel(_f64(x), _I0E_A, _I0E_B, False)


def i1e64(x):
    """exp(-|x|) I1(x) (float64; odd)."""
    x = _f64(x)
    out = _scaled_bessel(x, _I1E_A, _I1E_B, True)
    return np.where(x < 0, -out, out)


def _unscaled(scaled, x):
    # exp(|x|) in two halves (finite results up to |x| = 713.9); NaN at +-inf, as torch's exp(x) / sqrt(x)
    half = np.exp(np.abs(x) / 2.0)
    return np.where(np.isinf(x), np.nan, scaled * half * half)


def i0_64(x):
    """I0(x), the modified Bessel function of the first kind of order 0 (float64)."""
    x = _f64(x)
    return _unscaled(i0e64(x), x)


def i1_64(x):
    """I1(x), of order 1 (float64)."""
    x = _f64(x)
    return _unscaled(i1e64(x), x)


# ------------------------------------------------------------------ ndtri (Cephes), log_ndtr
_NDTRI_P0 = (-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
             1.39312609387279679503E1, -1.23916583867381258016E0)
_NDTRI_Q0 = (1.0, 1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
             -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1,
             1.59056225126211695515E1, -1.18331621121330003142E0)
_NDTRI_P1 = (4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
             4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
             -1.40256079171354495875E-1, -3.50424626827848203418E-2, -8.57456785154685413611E-4)
_NDTRI_Q1 = (1.0, 1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
             1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
             -3.80806407691578277194E-2, -9.33259480895457427372E-4)
_NDTRI_P2 = (3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
             1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
             3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9)
_NDTRI_Q2 = (1.0, 6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
             2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
             2.89247864745380683936E-6, 6.79019408009981274425E-9)
_EXP_M2 = 0.13533528323661269189


def _polevl(z, coefficients):
    """Cephes' polevl: coefficients highest first."""
    return _poly(tuple(reversed(coefficients)), z)


def ndtri64(p):
    """The quantile of the standard normal distribution (Cephes' ndtri, float64): -inf at 0,
    inf at 1, NaN outside [0, 1]."""
    p = _f64(p)
    upper = p > 1.0 - _EXP_M2
    y = np.where(upper, 1.0 - p, p)
    c = np.clip(y, _EXP_M2, 1.0 - _EXP_M2) - 0.5            # |p - 1/2| <= 3/8
    c2 = c * c
    central = (c + c * (c2 * _polevl(c2, _NDTRI_P0) / _polevl(c2, _NDTRI_Q0))) * _SQRT_2PI
    t = np.sqrt(-2.0 * np.log(np.clip(y, 1e-300, _EXP_M2)))
    z = 1.0 / t
    x1 = np.where(t < 8.0, z * _polevl(z, _NDTRI_P1) / _polevl(z, _NDTRI_Q1),
                  z * _polevl(z, _NDTRI_P2) / _polevl(z, _NDTRI_Q2))
    tail = t - np.log(t) / t - x1
    tail = np.where(upper, tail, -tail)
    out = np.where(y > _EXP_M2, central, tail)
    out = np.where(p == 0, -np.inf, np.where(p == 1, np.inf, out))
    return np.where((p < 0) | (p > 1) | np.isnan(p), np.nan, out)


def log_ndtr64(x):
    """log of the standard normal CDF (float64): torch's two branches, on Cody's erfc and erfcx."""
    x = _f64(x)
    t = np.maximum(-x, 1.0) * math.sqrt(0.5)               # x < -1: log(erfcx(-x / sqrt 2) / 2) - x^2 / 2
    low = np.log(erfcx64(t) / 2.0) - x * x * 0.5
    # (above 0.66, erfc(x / sqrt 2) = exp(-x^2 / 2) erfcx(x / sqrt 2) with x^2 split exactly as in
    # erf_gelu: x / sqrt 2's rounding would cost 2 t^2 ulp of exp(-t^2))
    y = np.clip(x, 0.66, 40.0)                              # (erfc(40 / sqrt 2) = 0)
    y16 = np.trunc(y * 16.0) / 16.0
    upper = np.exp(-y16 * y16 * 0.5) * np.exp(-(y - y16) * (y + y16) * 0.5) * _erfcx_cody(y * math.sqrt(0.5))
    high = np.log1p(-np.where(x > 0.66, upper, erfc64(x * math.sqrt(0.5))) / 2.0)
    return np.where(x < -1.0, low, high)


def mvlgamma64(x, p: int):
    """The multivariate log-gamma function of dimension p: sum_j lgamma(x - j / 2) + p (p - 1) / 4 log pi."""
    x = _f64(x)
    out = np.full_like(x, p * (p - 1) / 4 * _LOG_PI)
    for j in range(p):
        out = out + lgamma64(x - j / 2)
    return out


# ------------------------------------------------------------------ entr, xlog1py (in the operands' dtype)
def _entr_ref(x):
    with np.errstate(all="ignore"):
        out = -x * np.log(x)
    return np.asarray(np.where(x > 0, out, np.where(x == 0, 0, np.where(x < 0, -np.inf, x))), x.dtype)


def _xlog1py_ref(x, y):
    with np.errstate(all="ignore"):
        out = x * np.log1p(y)
    return np.asarray(np.where(np.isnan(y), np.nan, np.where(x == 0, 0, out)), x.dtype)


# ------------------------------------------------------------------ the ops
def _declare(name, ref, vjp, doc, node=None, unpack_order=None):
    extra = {"reference_why": f"{name}: float64 NumPy series and rational approximations (no vmath kernel)"}
    if unpack_order:
        extra["unpack_order"] = unpack_order
    if node:
        extra["node"] = node
    register(OpDef(name, COMPOSITE, _infer_map(name, float_only=True), ref, vjp, reference_only=True,
                   extra=extra, doc=doc))


def _lgamma_vjp(e, x, y, g, a, n):
    # torch: grad * digamma(self)
    return [e.mul(g[0], e.op("digamma", x[0]))]


def _digamma_vjp(e, x, y, g, a, n):
    # torch: grad * polygamma(1, self)
    return [e.mul(g[0], e.op("polygamma", x[0], n=1))]


def _polygamma_vjp(e, x, y, g, a, n):
    # torch: grad * polygamma(n + 1, self)
    return [e.mul(g[0], e.op("polygamma", x[0], n=a["n"] + 1))]


def _erfinv_vjp(e, x, y, g, a, n):
    # torch: 0.5 * sqrt(pi) * exp(self.erfinv().pow(2)) * grad (it saves self, not the result)
    r = e.op("erfinv", x[0])
    return [e.mul(e.mul(e.exp(e.mul(r, r)), _SQRT_PI_2), g[0])]


def _mvlgamma_vjp(e, x, y, g, a, n):
    # torch's mvlgamma_backward: grad * sum_j digamma(self - j / 2)
    total = None
    for j in range(a["p"]):
        term = e.op("digamma", e.sub(x[0], j / 2) if j else x[0])
        total = term if total is None else e.add(total, term)
    return [e.mul(g[0], total)]


def _i0e_vjp(e, x, y, g, a, n):
    # torch: grad * (special_i1e(self) - self.sgn() * result)
    return [e.mul(g[0], e.sub(e.op("i1e", x[0]), e.mul(e.sign(x[0]), y[0])))]


def _i1_vjp(scaled: bool):
    # torch's i1_backward / i1e_backward: grad * (i0(x) - result / x), i0e(x) - result * (sgn(x) + 1 / x)
    # for i1e; 1/2 where |x| <= eps (x replaced by eps there, as torch's safe_self)
    def vjp(e, x, y, g, a, n):
        xv = x[0]
        eps = float(np.finfo(np.float32 if xv.dtype.name == "float32" else np.float64).eps)
        not_tiny = e.gt(e.op("abs", xv), eps)
        safe = e.where(not_tiny, xv, e.const(eps, xv))
        inverse = e.div(1.0, safe)
        if scaled:
            gradx = e.sub(e.op("i0e", safe), e.mul(y[0], e.add(e.sign(safe), inverse)))
        else:
            gradx = e.sub(e.op("i0", safe), e.mul(y[0], inverse))
        return [e.mul(g[0], e.where(not_tiny, gradx, e.const(0.5, xv)))]
    return vjp


def _ndtri_vjp(e, x, y, g, a, n):
    # torch: grad * sqrt(2 pi) * exp(result^2 / 2)
    return [e.mul(e.mul(g[0], _SQRT_2PI), e.exp(e.mul(e.mul(y[0], y[0]), 0.5)))]


def _log_ndtr_vjp(e, x, y, g, a, n):
    # torch: grad / sqrt(2 pi) * exp(-(result + self^2 / 2))
    return [e.mul(e.div(g[0], _SQRT_2PI), e.exp(e.neg(e.add(y[0], e.mul(e.mul(x[0], x[0]), 0.5)))))]


def _entr_vjp(e, x, y, g, a, n):
    # torch: grad * -(1 + log(self))
    return [e.mul(g[0], e.neg(e.add(e.log(x[0]), 1.0)))]


def _xlog1py_vjp(e, x, y, g, a, n):
    # torch: self: xlog1py(grad, other) with 0 where self == 0 and other <= -1; other: grad * self / (other + 1)
    xv, other = x
    first = None
    if n[0]:
        first = e.where(e.logical_and(e.eq(xv, 0), e.le(other, -1)), 0, e.op("xlog1py", g[0], other))
    second = e.div(e.mul(g[0], xv), e.add(other, 1)) if n[1] else None
    return [first, second]


_declare("lgamma", _rounded(lgamma64), _lgamma_vjp, "lgamma(x): log|Gamma(x)|")
_declare("digamma", _rounded(digamma64), _digamma_vjp, "digamma(x): Gamma'(x) / Gamma(x)")
_declare("polygamma", _rounded(polygamma64), _polygamma_vjp, "polygamma(x; n): the n-th derivative of digamma")
_declare("erfinv", _rounded(erfinv64), _erfinv_vjp, "erfinv(y): the inverse of erf on (-1, 1)")
_declare("mvlgamma", _rounded(mvlgamma64), _mvlgamma_vjp, "mvlgamma(x; p): the multivariate log-gamma function")
_declare("i0", _rounded(i0_64), lambda e, x, y, g, a, n: [e.mul(g[0], e.op("i1", x[0]))],
         "i0(x): the modified Bessel function of the first kind, order 0")
_declare("i0e", _rounded(i0e64), _i0e_vjp, "i0e(x): exp(-|x|) i0(x)", node="SpecialI0EBackward0")
_declare("i1", _rounded(i1_64), _i1_vjp(False), "i1(x): the modified Bessel function of the first kind, order 1",
         node="SpecialI1Backward0")
_declare("i1e", _rounded(i1e64), _i1_vjp(True), "i1e(x): exp(-|x|) i1(x)", node="SpecialI1EBackward0")
_declare("ndtri", _rounded(ndtri64), _ndtri_vjp, "ndtri(p): the standard normal quantile",
         node="SpecialNdtriBackward0")
_declare("log_ndtr", _rounded(log_ndtr64), _log_ndtr_vjp, "log_ndtr(x): log of the standard normal CDF",
         node="SpecialLogNdtrBackward0")
_declare("entr", _entr_ref, _entr_vjp, "entr(x): -x log x, 0 at 0, -inf below", node="SpecialEntrBackward0")
_declare("xlog1py", _xlog1py_ref, _xlog1py_vjp, "xlog1py(x, y): x * log1p(y), 0 where x == 0 (NaN where y is)",
         node="SpecialXlog1PyBackward0", unpack_order=OTHER_THEN_SELF)
