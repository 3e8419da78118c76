"""torch.special's Bessel functions, Airy's Ai, erfcx, the regularized incomplete gamma functions,
Hurwitz's zeta and the orthogonal polynomials (fusegrad/special.py is their public face).

The algorithms are torch 2.13's (aten/src/ATen/native/Math.h: Cephes' rational and Chebyshev
approximations for the Bessel functions and Ai, SciPy's igam/igamc with Temme's uniform asymptotic
series, Cephes' zeta, and the polynomials' three-term recurrences with torch's special cases), each
branch evaluated on the elements that take it, vectorised with NumPy (iterations run over the still
unconverged elements only). They run as references in compiled programs too (reference_only).

Precision. The Bessel functions, Ai, erfcx, igamma/igammac and zeta are evaluated in float64 and
rounded once to the operand's dtype (torch's zeta accumulates in double for float32 too). torch
evaluates the others in the operand's own precision, so its float32 values carry its float32
rounding (the asymptotic forms' cos(x - pi/4) of a rounded x, the series' cancellation near a
root): the differences are torch's float32 errors. Where float32 arithmetic makes torch's value
an overflow (I0, I1 past |x| = 88.72, where exp(|x|) is inf in float32) fusegrad gives torch's inf.
The polynomials are evaluated in the operand's dtype, as torch does, so that their overflows (and
the NaN that inf - inf makes of the recurrence past them) are torch's.

Measured against torch 2.13 over the grids of tests/test_special_functions_round60.py and wider ones
(|x| to 1e30, inf, NaN; worst case, outside NaN/inf, whose patterns match torch's everywhere measured):

    bessel_j0/j1/y0/y1   float64: absolute <= 2e-16 (j0, j1), 1.8e-15 (y0), 5.6e-16 (y1), i.e. <= 1 ulp
                         away from the zeros (283 ulp of a value near a zero); float32: within 4e-6
                         relative + 2e-6 absolute for |x| <= 316 (torch's float32 cos(x - pi/4));
                         at |x| = 1e10 torch's float32 values are off by up to 1.5e-5 absolute
    modified_bessel_i0   4 ulp (float32 and float64); i1 11 ulp (float32), 12 ulp (float64, x = -7.98)
    modified_bessel_k0   6 ulp (float32), 9 ulp (float64); k1 7 / 3 ulp; scaled k0 9 / 14 ulp;
                         scaled k1 4 / 4 ulp
    spherical_bessel_j0  1 ulp (float32), bit for bit (float64)
    airy_ai              float64 24 ulp (absolute 1.1e-16); float32 1.4e-4 absolute at x near -300
                         (torch's float32 sin/cos of 2|x|^1.5/3), 2e-6 relative elsewhere
    erfcx                float64 7 ulp; float32 53 ulp at x = -8.4 (torch's float32 exp(x^2)), <= 1 ulp
                         for x >= 0
    gammainc/gammaincc   float64 3.6e-12 relative (on values near 1e-207; 1e-15 on values above
                         1e-100); float32 1.2e-4 relative (torch's float32 series and continued
                         fraction), denormal results differ by their rounding
    zeta                 float64 2.7e-16 relative, float32 1 ulp
    polynomials          the recurrences: float64 1.3e-12 relative, float32 1.3e-6 relative for n <= 10
                         (torch's compiled loop contracts to FMAs); the cos/sin forms of |x| < 1 with
                         n up to 600: 2e-3 (float32) / 2e-13 (float64) absolute, torch's and NumPy's
                         cos of a large float32 argument differing

Where x is NaN and the polynomial's loop would run, torch returns an uninitialised value (0, inf or
NaN); fusegrad gives NaN. hermite_polynomial_h in float32: where torch's recurrence overflows to
+-inf fusegrad's reaches inf - inf, NaN (e.g. x = -2.5, n = 50).
"""
from __future__ import annotations

import math

import numpy as np

from .elementwise import _infer_map
from .registry import COMPOSITE, NoDerivativeNotImplementedError, OTHER_THEN_SELF, OpDef, register
from .special import _I0E_A, _I0E_B, _I1E_A, _I1E_B, _chbevl, _f64, erfc64, erfcx64, lgamma64

_SQ2OPI = 0.797884560802865355879892119868763737       # sqrt(2 / pi)
_PIO4 = 0.785398163397448309615660845819875721
_3PIO4 = 2.356194490192344928846982537459627163
_TWOOPI = 0.636619772367581343075535053490057448
_ONE_OVER_SQRT_PI = 0.56418958354775628694807945156


def _horner(z, coefficients):
    """sum c_i z^(n-i), coefficients highest first (torch's loops `p = p * z + C[i]` from 0)."""
    out = np.zeros_like(z)
    for c in coefficients:
        out = out * z + c
    return out


def _rounded(fn, dtype_aware=False):
    """The float64 function `fn` as a reference rounded once to the operand's dtype (no warnings);
    `dtype_aware`: fn also receives the operand's NumPy dtype."""
    def ref(*arrays):
        with np.errstate(all="ignore"):
            args = [_f64(a) for a in arrays]
            out = fn(*args, dtype=arrays[0].dtype) if dtype_aware else fn(*args)
            return np.asarray(out, dtype=arrays[0].dtype)
    ref.__name__ = fn.__name__
    return ref


# ------------------------------------------------------------------ Bessel J0, J1, Y0, Y1 (Cephes)
_J0_PP = (7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e+00,
          5.44725003058768775090e+00, 8.74716500199817011941e+00, 5.30324038235394892183e+00,
          9.99999999999999997821e-01)
_J0_PQ = (9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e+00,
          5.47097740330417105182e+00, 8.76190883237069594232e+00, 5.30605288235394617618e+00,
          1.00000000000000000218e+00)
_J0_QP = (-1.13663838898469149931e-02, -1.28252718670509318512e+00, -1.95539544257735972385e+01,
          -9.32060152123768231369e+01, -1.77681167980488050595e+02, -1.47077505154951170175e+02,
          -5.14105326766599330220e+01, -6.05014350600728481186e+00)
_J0_QQ = (6.43178256118178023184e+01, 8.56430025976980587198e+02, 3.88240183605401609683e+03,
          7.24046774195652478189e+03, 5.93072701187316984827e+03, 2.06209331660327847417e+03,
          2.42005740240291393179e+02)
_J0_RP = (-4.79443220978201773821e+09, 1.95617491946556577543e+12, -2.49248344360967716204e+14,
          9.70862251047306323952e+15)
_J0_RQ = (4.99563147152651017219e+02, 1.73785401676374683123e+05, 4.84409658339962045305e+07,
          1.11855537045356834862e+10, 2.11277520115489217587e+12, 3.10518229857422583814e+14,
          3.18121955943204943306e+16, 1.71086294081043136091e+18)
_J1_PP = (7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e+00,
          5.11207951146807644818e+00, 8.42404590141772420927e+00, 5.21451598682361504063e+00,
          1.00000000000000000254e+00)
_J1_PQ = (5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e+00,
          5.07386386128601488557e+00, 8.39985554327604159757e+00, 5.20982848682361821619e+00,
          9.99999999999999997461e-01)
_J1_QP = (5.10862594750176621635e-02, 4.98213872951233449420e+00, 7.58238284132545283818e+01,
          3.66779609360150777800e+02, 7.10856304998926107277e+02, 5.97489612400613639965e+02,
          2.11688757100572135698e+02, 2.52070205858023719784e+01)
_J1_QQ = (7.42373277035675149943e+01, 1.05644886038262816351e+03, 4.98641058337653607651e+03,
          9.56231892404756170795e+03, 7.99704160447350683650e+03, 2.82619278517639096600e+03,
          3.36093607810698293419e+02)
_J1_RP = (-8.99971225705559398224e+08, 4.52228297998194034323e+11, -7.27494245221818276015e+13,
          3.68295732863852883286e+15)
_J1_RQ = (6.20836478118054335476e+02, 2.56987256757748830383e+05, 8.35146791431949253037e+07,
          2.21511595479792499675e+10, 4.74914122079991414898e+12, 7.84369607876235854894e+14,
          8.95222336184627338078e+16, 5.32278620332680085395e+18)
_Y0_YP = (1.55924367855235737965e+04, -1.46639295903971606143e+07, 5.43526477051876500413e+09,
          -9.82136065717911466409e+11, 8.75906394395366999549e+13, -3.46628303384729719441e+15,
          4.42733268572569800351e+16, -1.84950800436986690637e+16)
_Y0_YQ = (1.04128353664259848412e+03, 6.26107330137134956842e+05, 2.68919633393814121987e+08,
          8.64002487103935000337e+10, 2.02979612750105546709e+13, 3.17157752842975028269e+15,
          2.50596256172653059228e+17)
_Y1_YP = (1.26320474790178026440e+09, -6.47355876379160291031e+11, 1.14509511541823727583e+14,
          -8.12770255501325109621e+15, 2.02439475713594898196e+17, -7.78877196265950026825e+17)
_Y1_YQ = (5.94301592346128195359e+02, 2.35564092943068577943e+05, 7.34811944459721705660e+07,
          1.87601316108706159478e+10, 3.88231277496238566008e+12, 6.20557727146953693363e+14,
          6.87141087355300489866e+16, 3.97270608116560655612e+18)


def _far(x, pp, pq, qp, qq, phase, sine):
    """Cephes' asymptotic form for x > 5: (P cos(x - phase) - 5/x Q sin(x - phase)) sqrt(2/pi) / sqrt(x)
    (for Y: P sin + 5/x Q cos)."""
    w = 5.0 / x
    z = w * w
    p = _horner(z, pp) / _horner(z, pq)
    q = _horner(z, qp) / _horner(z, qq)
    xn = x - phase
    if sine:
        value = p * np.sin(xn) + w * q * np.cos(xn)
    else:
        value = p * np.cos(xn) - w * q * np.sin(xn)
    return value * _SQ2OPI / np.sqrt(x)


def bessel_j0_64(x):
    """J0(x) (float64): Cephes' rational form on |x| <= 5, the asymptotic form beyond."""
    x = np.abs(x)
    near_x = np.minimum(x, 5.0)
    z = near_x * near_x
    near = (z - 5.78318596294678452118e+00) * (z - 3.04712623436620863991e+01) * _horner(z, _J0_RP) / \
        _horner(z, _J0_RQ)
    near = np.where(near_x < 1e-5, 1.0 - z / 4.0, near)
    return np.where(x <= 5.0, near, _far(np.maximum(x, 5.0), _J0_PP, _J0_PQ, _J0_QP, _J0_QQ, _PIO4, False))


def bessel_j1_64(x):
    """J1(x) (float64; odd)."""
    a = np.abs(x)
    near_x = np.minimum(a, 5.0)
    z = near_x * near_x
    near = _horner(z, _J1_RP) / _horner(z, _J1_RQ) * near_x * (z - 1.46819706421238932572e+01) * \
        (z - 4.92184563216946036703e+01)
    out = np.where(a <= 5.0, near, _far(np.maximum(a, 5.0), _J1_PP, _J1_PQ, _J1_QP, _J1_QQ, _3PIO4, False))
    return np.where(x < 0, -out, np.where(x == 0, x, out))


def bessel_y0_64(x):
    """Y0(x) (float64): -inf at 0, NaN below."""
    near_x = np.clip(x, 1e-300, 5.0)
    z = near_x * near_x
    near = _horner(z, _Y0_YP) / _horner(z, _Y0_YQ) + _TWOOPI * np.log(near_x) * bessel_j0_64(near_x)
    near = np.where(x == 0, -np.inf, np.where(x < 0, np.nan, near))
    return np.where(x <= 5.0, near, _far(np.maximum(x, 5.0), _J0_PP, _J0_PQ, _J0_QP, _J0_QQ, _PIO4, True))


def bessel_y1_64(x):
    """Y1(x) (float64): -inf at 0, NaN below."""
    near_x = np.clip(x, 1e-300, 5.0)
    z = near_x * near_x
    near = near_x * (_horner(z, _Y1_YP) / _horner(z, _Y1_YQ)) + \
        _TWOOPI * (bessel_j1_64(near_x) * np.log(near_x) - 1.0 / near_x)
    near = np.where(x == 0, -np.inf, np.where(x < 0, np.nan, near))
    return np.where(x <= 5.0, near, _far(np.maximum(x, 5.0), _J1_PP, _J1_PQ, _J1_QP, _J1_QQ, _3PIO4, True))


# ------------------------------------------------------------------ modified Bessel functions (Cephes)
# (the I0 and I1 series are i0e's and i1e's: ir/ops/special.py)
_I0_A, _I0_B, _I1_A, _I1_B = _I0E_A, _I0E_B, _I1E_A, _I1E_B
_K0_A = (1.37446543561352307156e-16, 4.25981614279661018399e-14, 1.03496952576338420167e-11,
         1.90451637722020886025e-09, 2.53479107902614945675e-07, 2.28621210311945178607e-05,
         1.26461541144692592338e-03, 3.59799365153615016266e-02, 3.44289899924628486886e-01,
         -5.35327393233902768720e-01)
_K0_B = (5.30043377268626276149e-18, -1.64758043015242134646e-17, 5.21039150503902756861e-17,
         -1.67823109680541210385e-16, 5.51205597852431940784e-16, -1.84859337734377901440e-15,
         6.34007647740507060557e-15, -2.22751332699166985548e-14, 8.03289077536357521100e-14,
         -2.98009692317273043925e-13, 1.14034058820847496303e-12, -4.51459788337394416547e-12,
         1.85594911495471785253e-11, -7.95748924447710747776e-11, 3.57739728140030116597e-10,
         -1.69753450938905987466e-09, 8.57403401741422608519e-09, -4.66048989768794782956e-08,
         2.76681363944501510342e-07, -1.83175552271911948767e-06, 1.39498137188764993662e-05,
         -1.28495495816278026384e-04, 1.56988388573005337491e-03, -3.14481013119645005427e-02,
         2.44030308206595545468e+00)
_K1_A = (-7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13,
         -1.41148839263352776110e-10, -2.21338763073472585583e-08, -2.43340614156596823496e-06,
         -1.73028895751305206302e-04, -6.97572385963986435018e-03, -1.22611180822657148235e-01,
         -3.53155960776544875667e-01, 1.52530022733894777053e+00)
_K1_B = (-5.75674448366501715755e-18, 1.79405087314755922667e-17, -5.68946255844285935196e-17,
         1.83809354436663880070e-16, -6.05704724837331885336e-16, 2.03870316562433424052e-15,
         -7.01983709041831346144e-15, 2.47715442448130437068e-14, -8.97670518232499435011e-14,
         3.34841966607842919884e-13, -1.28917396095102890680e-12, 5.13963967348173025100e-12,
         -2.12996783842756842877e-11, 9.21831518760500529508e-11, -4.19035475934189648750e-10,
         2.01504975519703286596e-09, -1.03457624656780970260e-08, 5.74108412545004946722e-08,
         -3.50196060308781257119e-07, 2.40648494783721712015e-06, -1.93619797416608296024e-05,
         1.95215518471351631108e-04, -2.85781685962277938680e-03, 1.03923736576817238437e-01,
         2.72062619048444266945e+00)
_FLOAT32_LOG_MAX = float(np.log(np.finfo(np.float32).max))


def _exp_overflows(a, dtype):
    """Where torch's exp(|x|) in the operand's dtype is inf (float32: |x| > 88.72): its I0 and I1 are inf."""
    return a > (_FLOAT32_LOG_MAX if np.dtype(dtype) == np.float32 else 709.782712893384)


def modified_bessel_i0_64(x, dtype=np.float64):
    """I0(x) (float64; torch's inf where its exp(|x|) overflows in the operand's dtype)."""
    a = np.abs(x)
    near = np.exp(a) * _chbevl(np.minimum(a, 8.0) / 2.0 - 2.0, _I0_A)
    far_x = np.maximum(a, 8.0)
    far = np.exp(a) * _chbevl(32.0 / far_x - 2.0, _I0_B) / np.sqrt(far_x)
    out = np.where(a <= 8.0, near, far)
    return np.where(_exp_overflows(a, dtype) & ~np.isinf(a), np.inf, out)


def modified_bessel_i1_64(x, dtype=np.float64):
    """I1(x) (float64; odd)."""
    a = np.abs(x)
    near_x = np.minimum(a, 8.0)
    near = _chbevl(near_x / 2.0 - 2.0, _I1_A) * near_x * np.exp(a)
    far_x = np.maximum(a, 8.0)
    far = np.exp(a) * _chbevl(32.0 / far_x - 2.0, _I1_B) / np.sqrt(far_x)
    out = np.where(a <= 8.0, near, far)
    out = np.where(_exp_overflows(a, dtype) & ~np.isinf(a), np.inf, out)
    return np.where(x < 0, -out, out)


def _k_near(x, order):
    """K0 or K1 on (0, 2]: Cephes' Chebyshev series in x^2 - 2 plus the log(x/2) I term."""
    x = np.clip(x, 1e-300, 2.0)
    if order == 0:
        return _chbevl(x * x - 2.0, _K0_A) - np.log(0.5 * x) * modified_bessel_i0_64(x)
    return np.log(0.5 * x) * modified_bessel_i1_64(x) + _chbevl(x * x - 2.0, _K1_A) / x


def _k_far_scaled(x, order):
    """exp(x) K(x) on (2, inf)."""
    x = np.maximum(x, 2.0)
    return _chbevl(8.0 / x - 2.0, _K0_B if order == 0 else _K1_B) / np.sqrt(x)


def _k(order, scaled):
    def fn(x):
        near = _k_near(x, order)
        if scaled:
            out = np.where(x <= 2.0, near * np.exp(np.minimum(x, 2.0)), _k_far_scaled(x, order))
        else:
            out = np.where(x <= 2.0, near, np.exp(-x) * _k_far_scaled(x, order))
        return np.where(x == 0, np.inf, np.where(x < 0, np.nan, out))
    fn.__name__ = f"{'scaled_' if scaled else ''}modified_bessel_k{order}_64"
    return fn


def spherical_bessel_j0_64(x):
    """sin(x) / x (float64): torch's Taylor polynomial below |x| = 1/2, 0 at +-inf."""
    z = x * x
    taylor = 1.0 + z * (-1.0 / 6.0 + z * (1.0 / 120.0 + z * (-1.0 / 5040.0 + z * (
        1.0 / 362880.0 + z * (-1.0 / 39916800.0 + z * (1.0 / 6227020800.0))))))
    out = np.where(np.abs(x) < 0.5, taylor, np.sin(x) / x)
    return np.where(np.isinf(x), 0.0, out)


# ------------------------------------------------------------------ Airy Ai (Cephes)
_AI_AN = (3.46538101525629032477e-01, 1.20075952739645805542e+01, 7.62796053615234516538e+01,
          1.68089224934630576269e+02, 1.59756391350164413639e+02, 7.05360906840444183113e+01,
          1.40264691163389668864e+01, 9.99999999999999995305e-01)
_AI_AD = (5.67594532638770212846e-01, 1.47562562584847203173e+01, 8.45138970141474626562e+01,
          1.77318088145400459522e+02, 1.64234692871529701831e+02, 7.14778400825575695274e+01,
          1.40959135607834029598e+01, 1.00000000000000000470e+00)
_AI_AFN = (-1.31696323418331795333e-01, -6.26456544431912369773e-01, -6.93158036036933542233e-01,
           -2.79779981545119124951e-01, -4.91900132609500318020e-02, -4.06265923594885404393e-03,
           -1.59276496239262096340e-04, -2.77649108155232920844e-06, -1.67787698489114633780e-08)
_AI_AFD = (1.33560420706553243746e+01, 3.26825032795224613948e+01, 2.67367040941499554804e+01,
           9.18707402907259625840e+00, 1.47529146771666414581e+00, 1.15687173795188044134e-01,
           4.40291641615211203805e-03, 7.54720348287414296618e-05, 4.51850092970580378464e-07)
_AI_AGN = (1.97339932091685679179e-02, 3.91103029615688277255e-01, 1.06579897599595591108e+00,
           9.39169229816650230044e-01, 3.51465656105547619242e-01, 6.33888919628925490927e-02,
           5.85804113048388458567e-03, 2.82851600836737019778e-04, 6.98793669997260967291e-06,
           8.11789239554389293311e-08, 3.41551784765923618484e-10)
_AI_AGD = (9.30892908077441974853e+00, 1.98352928718312140417e+01, 1.55646628932864612953e+01,
           5.47686069422975497931e+00, 9.54293611618961883998e-01, 8.64580826352392193095e-02,
           4.12656523824222607191e-03, 1.01259085116509135510e-04, 1.17166733214413521882e-06,
           4.91834570062930015649e-09)


def airy_ai_64(x):
    """Ai(x) (float64): the asymptotic forms below -2.09 and from 2.09, the Maclaurin series between;
    0 above 103.892, NaN at +-inf (torch's)."""
    # x < -2.09
    neg = np.minimum(x, -2.09)
    zeta = -2.0 * neg * np.sqrt(-neg) / 3.0
    z = 1.0 / zeta
    z2 = z * z
    afn, afd = _horner(z2, _AI_AFN), _horner(z2, _AI_AFD)
    agn, agd = _horner(z2, _AI_AGN), _horner(z2, _AI_AGD)
    t = zeta + 0.25 * np.pi
    low = 5.64189583547756286948e-01 / np.sqrt(np.sqrt(-neg)) * (np.sin(t) * (1.0 + z2 * afn / afd) -
                                                                 np.cos(t) * (z * agn / agd))
    # x >= 2.09
    pos = np.maximum(x, 2.09)
    zeta = 2.0 * pos * np.sqrt(pos) / 3.0
    inverse = 1.0 / zeta
    high = 5.64189583547756286948e-01 * (_horner(inverse, _AI_AN) / _horner(inverse, _AI_AD)) / \
        (2.0 * np.sqrt(np.sqrt(pos)) * np.exp(zeta))
    # |x| < 2.09: f and g, the series of the two solutions, to float64's epsilon
    m = np.clip(x, -2.09, 2.09)
    f, g = np.ones_like(m), m.copy()
    mm, nn, k = np.ones_like(m), m.copy(), 1.0
    cube = m * m * m
    for _ in range(60):
        mm = mm * cube
        k += 1.0
        mm = mm / k
        nn = nn * cube
        k += 1.0
        nn = nn / k
        mm = mm / k
        f = f + mm
        k += 1.0
        nn = nn / k
        g = g + nn
        if not np.any(np.abs(mm / f) > np.finfo(np.float64).eps):
            break
    middle = 0.355028053887817239260 * f - 0.258819403792806798405 * g
    out = np.where(x < -2.09, low, np.where(x >= 2.09, high, middle))
    out = np.where(x > 103.892, 0.0, out)
    return np.where(np.isinf(x), np.nan, out)


# ------------------------------------------------------------------ erfcx
def erfcx_full64(x):
    """exp(x^2) erfc(x) for all x (float64): Cody's for x >= 0; 2 exp(x^2) - erfcx(-x) below, as
    torch's (2 exp(x^2) alone below -6.1, inf below -26.7)."""
    a = np.abs(x)
    positive = erfcx64(a)
    e = np.exp(x * x)
    negative = np.where(x < -26.7, np.inf, np.where(x < -6.1, 2.0 * e, 2.0 * e - positive))
    return np.where(np.isnan(x), x, np.where(x >= 0, positive, negative))


# ------------------------------------------------------------------ zeta (Cephes, as torch's)
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
           1.8152105401943546773e17, -7.1661652561756670113e18)
_MACHEP = 1.11022302462515654042E-16


def zeta64(x, q):
    """Hurwitz's zeta(x, q) (float64), Cephes' algorithm as torch runs it: inf at x == 1, NaN for
    x < 1, inf at q a non-positive integer, NaN for q < 0 with x not an integer."""
    x, q = np.broadcast_arrays(x, q)
    shape = x.shape
    x, q = x.ravel().astype(np.float64), q.ravel().astype(np.float64)
    out = np.full(x.shape, np.nan)
    special = (x == 1) | (x < 1) | ((q <= 0) & ((q == np.floor(q)) | (x != np.floor(x)))) | np.isnan(x) | np.isnan(q)
    out[x == 1] = np.inf
    out[(x != 1) & ~(x < 1) & (q <= 0) & (q == np.floor(q))] = np.inf
    idx = np.nonzero(~special)[0]
    xs, qs = x[idx], q[idx]
    s = qs ** -xs
    a = qs.copy()
    b = np.zeros_like(s)
    i = 0
    live = np.arange(idx.size)                  # positions (in idx) still summing directly
    while live.size:
        i += 1
        xl = xs[live]
        a[live] += 1.0
        b[live] = a[live] ** -xl
        s[live] += b[live]
        bl, sl = b[live], s[live]
        converged = (-_MACHEP * sl < bl) & (bl < _MACHEP * sl)
        out[idx[live[converged]]] = sl[converged]
        keep = ~converged & ((i < 9) | (a[live] <= 9.0))
        tail = live[~converged & ~keep]
        if tail.size:
            out[idx[tail]] = _zeta_tail(xs[tail], a[tail], b[tail], s[tail])
        live = live[keep]
    return out.reshape(shape)


def _zeta_tail(x, a0, b, s):
    """Euler-Maclaurin's tail of zeta after the direct terms (torch's loop of 12 Bernoulli terms)."""
    w = a0
    s = s + b * w / (x - 1.0) - 0.5 * b
    a = np.ones_like(s)
    k = 0.0
    done = np.zeros(s.shape, bool)
    for coefficient in _ZETA_A:
        a = a * (x + k)
        b = b / w
        t = a * b / coefficient
        s = np.where(done, s, s + t)
        done |= np.abs(t / s) < _MACHEP
        k += 1.0
        a = a * (x + k)
        b = b / w
        k += 1.0
    return s


# ------------------------------------------------------------------ igamma, igammac (SciPy's, as torch's)
_LANCZOS_NUM = (0.006061842346248906525783753964555936883222, 0.5098416655656676188125178644804694509993,
                19.51992788247617482847860966235652136208, 449.9445569063168119446858607650988409623,
                6955.999602515376140356310115515198987526, 75999.29304014542649875303443598909137092,
                601859.6171681098786670226533699352302507, 3481712.15498064590882071018964774556468,
                14605578.08768506808414169982791359218571, 43338889.32467613834773723740590533316085,
                86363131.28813859145546927288977868422342, 103794043.1163445451906271053616070238554,
                56906521.91347156388090791033559122686859)
_LANCZOS_DEN = (1., 66., 1925., 32670., 357423., 2637558., 13339535., 45995730., 105258076., 150917976.,
                120543840., 39916800., 0.)
_LANCZOS_G = 6.024680040776729583740234375
_MAXLOG = 7.09782712893383996843E2
_MAXITER = 2000


def _lanczos_sum_expg_scaled(a):
    # ratevl: in 1/a (coefficients reversed) above 1, so that nothing overflows; the degrees are equal
    big = np.abs(a) > 1
    y = np.where(big, 1.0 / a, a)
    num_fwd, den_fwd = _horner(y, _LANCZOS_NUM), _horner(y, _LANCZOS_DEN)
    num_rev, den_rev = _horner(y, _LANCZOS_NUM[::-1]), _horner(y, _LANCZOS_DEN[::-1])
    return np.where(big, num_rev / den_rev, num_fwd / den_fwd)


def _igam_fac(a, x):
    """x^a exp(-x) / Gamma(a), SciPy's igam_fac."""
    ax = a * np.log(x) - x - lgamma64(a)
    direct = np.where(ax < -_MAXLOG, 0.0, np.exp(ax))
    fac = a + _LANCZOS_G - 0.5
    res = np.sqrt(fac / math.e) / _lanczos_sum_expg_scaled(a)
    small = (a < 200) & (x < 200)
    num = x - a - _LANCZOS_G + 0.5
    numfac = num / fac
    res = res * np.where(small, np.exp(a - x) * (x / fac) ** a,
                         np.exp(a * (np.log1p(numfac) - numfac) + x * (0.5 - _LANCZOS_G) / fac))
    return np.where(np.abs(a - x) > 0.4 * np.abs(a), direct, res)


def _igam_series(a, x):
    """igam by DLMF 8.11.4."""
    ax = _igam_fac(a, x)
    r, c, ans = a.copy(), np.ones_like(a), np.ones_like(a)
    live = np.nonzero(ax != 0)[0]
    for _ in range(_MAXITER):
        if not live.size:
            break
        r[live] += 1.0
        c[live] *= x[live] / r[live]
        ans[live] += c[live]
        live = live[~(c[live] <= _MACHEP * ans[live])]
    return np.where(ax == 0, 0.0, ans * ax / a)


def _igamc_series(a, x):
    """igamc by DLMF 8.7.3."""
    fac, total = np.ones_like(a), np.zeros_like(a)
    live = np.arange(a.size)
    for n in range(1, _MAXITER):
        if not live.size:
            break
        fac[live] *= -x[live] / n
        term = fac[live] / (a[live] + n)
        total[live] += term
        live = live[~(np.abs(term) <= _MACHEP * np.abs(total[live]))]
    logx = np.log(x)
    return -np.expm1(a * logx - lgamma64(1 + a)) - np.exp(a * logx - lgamma64(a)) * total


def _igamc_continued_fraction(a, x):
    """igamc by DLMF 8.9.2."""
    big, biginv = 4.503599627370496e15, 2.22044604925031308085e-16
    ax = _igam_fac(a, x)
    y = 1.0 - a
    z = x + y + 1.0
    c = np.zeros_like(a)
    pkm2, qkm2, pkm1, qkm1 = np.ones_like(a), x.copy(), x + 1.0, z * x
    ans = pkm1 / qkm1
    live = np.nonzero(ax != 0)[0]
    for _ in range(_MAXITER):
        if not live.size:
            break
        c[live] += 1.0
        y[live] += 1.0
        z[live] += 2.0
        yc = y[live] * c[live]
        pk = pkm1[live] * z[live] - pkm2[live] * yc
        qk = qkm1[live] * z[live] - qkm2[live] * yc
        nonzero = qk != 0
        r = np.where(nonzero, pk / np.where(nonzero, qk, 1.0), 0.0)
        t = np.where(nonzero, np.abs((ans[live] - r) / r), 1.0)
        ans[live] = np.where(nonzero, r, ans[live])
        pkm2[live], pkm1[live], qkm2[live], qkm1[live] = pkm1[live], pk, qkm1[live], qk
        scale = np.where(np.abs(pk) > big, biginv, 1.0)
        for arr in (pkm2, pkm1, qkm2, qkm1):
            arr[live] *= scale
        live = live[~(t <= _MACHEP)]
    return np.where(ax == 0, 0.0, ans * ax)


def _igam_asymptotic(a, x, igam: bool):
    """igam / igamc by Temme's uniform expansion (DLMF 8.12.3 / 8.12.4) for large a near x."""
    sgn = -1.0 if igam else 1.0
    lam = x / a
    sigma = (x - a) / a
    root = np.sqrt(-2 * (np.log1p(sigma) - sigma))
    eta = np.where(lam > 1, root, np.where(lam < 1, -root, 0.0))
    res = 0.5 * erfc64(sgn * eta * np.sqrt(a / 2))
    total = np.zeros_like(a)
    afac = np.ones_like(a)
    absoldterm = np.full_like(a, np.inf)
    live = np.ones(a.shape, bool)
    for k in range(25):
        d = _TEMME[k]
        ck = np.full_like(a, d[0])
        inner = np.ones(a.shape, bool)
        power = np.ones_like(a)
        for n in range(1, 25):
            power = power * eta
            ckterm = d[n] * power
            ck = np.where(inner, ck + ckterm, ck)
            inner &= ~(np.abs(ckterm) < _MACHEP * np.abs(ck))
            if not inner.any():
                break
        term = ck * afac
        absterm = np.abs(term)
        live &= ~(absterm > absoldterm)
        total = np.where(live, total + term, total)
        live &= ~(absterm < _MACHEP * np.abs(total))
        absoldterm = np.where(live, absterm, absoldterm)
        afac = afac / a
        if not live.any():
            break
    # (torch's 2 pi is c10::pi<float>'s, widened)
    return res + sgn * np.exp(-0.5 * a * eta * eta) * total / np.sqrt(2 * float(np.float32(np.pi)) * a)


def _masked(out, mask, fn, *arrays):
    """out[mask] = fn(*(array[mask]))."""
    if mask.any():
        out[mask] = fn(*(arr[mask] for arr in arrays))


def _asymptotic_region(a, x):
    with np.errstate(all="ignore"):
        ratio = np.abs(x - a) / a
        return ((a > 20) & (a < 200) & (ratio < 0.3)) | ((a > 200) & (ratio < 4.5 / np.sqrt(a)))


def _igammac_regular(a, x):
    """igammac for finite a > 0, x > 0 (torch's calc_igammac after its boundary cases)."""
    out = np.empty_like(a)
    asym = _asymptotic_region(a, x)
    with np.errstate(all="ignore"):
        small_x_ratio = np.where(x <= 0.5, -0.4 / np.log(x) < a, x * 1.1 < a)
    by_igam = ~asym & (((x > 1.1) & (x < a)) | ((x <= 1.1) & small_x_ratio))
    by_fraction = ~asym & (x > 1.1) & ~(x < a)
    by_series = ~asym & ~by_igam & ~by_fraction
    _masked(out, asym, lambda a_, x_: _igam_asymptotic(a_, x_, False), a, x)
    _masked(out, by_igam, lambda a_, x_: 1.0 - _igam_series(a_, x_), a, x)
    _masked(out, by_fraction, _igamc_continued_fraction, a, x)
    _masked(out, by_series, _igamc_series, a, x)
    return out


def _igamma_regular(a, x):
    out = np.empty_like(a)
    asym = _asymptotic_region(a, x)
    complement = ~asym & (x > 1.0) & (x > a)
    series = ~asym & ~complement
    _masked(out, asym, lambda a_, x_: _igam_asymptotic(a_, x_, True), a, x)
    _masked(out, complement, lambda a_, x_: 1.0 - _igammac_regular(a_, x_), a, x)
    _masked(out, series, _igam_series, a, x)
    return out


def _incomplete_gamma(lower: bool):
    def fn(a, x):
        a, x = np.broadcast_arrays(a, x)
        shape = a.shape
        a, x = a.ravel().astype(np.float64), x.ravel().astype(np.float64)
        # torch's boundary values (SciPy's), in its order
        nan, zero_a, zero_x = (x < 0) | (a < 0), a == 0, x == 0
        inf_a, inf_x = np.isinf(a), np.isinf(x)
        lower_edge = np.where(nan, np.nan, np.where(zero_a, np.where(x > 0, 1.0, np.nan), np.where(
            zero_x, 0.0, np.where(inf_a, np.where(inf_x, np.nan, 0.0), np.where(inf_x, 1.0, np.nan)))))
        edge = nan | zero_a | zero_x | inf_a | inf_x | np.isnan(a) | np.isnan(x)
        out = np.where(lower, lower_edge, np.where(np.isnan(lower_edge), np.nan, 1.0 - lower_edge)).astype(np.float64)
        _masked(out, ~edge, _igamma_regular if lower else _igammac_regular, a, x)
        return out.reshape(shape)
    fn.__name__ = "igamma64" if lower else "igammac64"
    return fn


igamma64 = _incomplete_gamma(True)
igammac64 = _incomplete_gamma(False)


# ------------------------------------------------------------------ orthogonal polynomials (operand dtype)
def _degree(n):
    """torch's static_cast<int64_t>(n): truncation; NaN, inf and values past int64 read as negative
    (x86's conversion gives INT64_MIN there), which every polynomial maps to 0."""
    if n.dtype.kind in "iu":
        return n.astype(np.int64)
    finite = np.isfinite(n) & (np.abs(n) < 2.0 ** 63)
    return np.where(finite, np.trunc(np.where(finite, n, 0)), -1).astype(np.int64)


def _recur(x, n, need, q0, step, first_k: int, last_k, stop_on_nan=True):
    """The three-term recurrence of torch's loops, on the elements `need` selects: p = 1, q = q0,
    then for k = first_k .. last_k(n) (inclusive) r = step(k, p, q); stopping where q is NaN
    (torch's `!isnan(q)`). Returns r (the last value computed)."""
    T = x.dtype.type
    idx = np.nonzero(need.ravel())[0]
    xs, ns = x.ravel()[idx], n.ravel()[idx]
    p = np.ones_like(xs)
    q = np.array(q0(xs), dtype=x.dtype)          # (a copy: q0 may return xs itself)
    r = np.zeros_like(xs)
    stop = last_k(ns)
    live = np.arange(idx.size)
    k = first_k
    while live.size:
        live = live[stop[live] >= k]
        if stop_on_nan:
            live = live[~np.isnan(q[live])]
        if not live.size:
            break
        rl = step(T(k), xs[live], p[live], q[live])
        r[live] = rl
        p[live] = q[live]
        q[live] = rl
        k += 1
    out = np.zeros(x.size, x.dtype)
    out[idx] = r
    # where x is NaN torch's loop stops before its first step and returns an uninitialised r
    # (whatever a register held: 0, inf or NaN); fusegrad gives NaN there
    out[idx[np.isnan(xs)]] = np.nan
    return out.reshape(x.shape)


def _poly_ref(fn):
    def ref(x, n):
        x, n = np.broadcast_arrays(x, n)
        with np.errstate(all="ignore"):
            out = fn(np.array(x), _degree(np.asarray(n)))
        return np.asarray(out, dtype=x.dtype)
    ref.__name__ = fn.__name__
    return ref


def _sel(x, *pairs, default):
    """np.select over (condition, value) pairs, in x's dtype."""
    out = np.broadcast_to(np.asarray(default, dtype=x.dtype), x.shape)
    for condition, value in reversed(pairs):
        out = np.where(condition, np.asarray(value).astype(x.dtype, copy=False), out)
    return np.asarray(out, dtype=x.dtype)


def chebyshev_t(x, n):
    T = x.dtype.type
    one = T(1)
    unit = np.abs(x) == one
    trig = (n > 6) & (np.abs(x) < one)
    need = (n >= 2) & ~unit & ~trig
    rec = _recur(x, n, need, lambda v: v, lambda k, v, p, q: (v + v) * q - p, 2, lambda m: m)
    return _sel(x, (n < 0, 0), (unit, np.where((x > 0) | (n % 2 == 0), one, -one)),
                (trig, np.cos(n.astype(x.dtype) * np.arccos(x))), (n == 0, one), (n == 1, x), default=rec)


def chebyshev_u(x, n):
    T = x.dtype.type
    one = T(1)
    unit = np.abs(x) == one
    trig = (n > 8) & (np.abs(x) < one)
    need = (n >= 2) & ~unit & ~trig
    rec = _recur(x, n, need, lambda v: v + v, lambda k, v, p, q: (v + v) * q - p, 2, lambda m: m)
    n1 = (n + 1).astype(x.dtype)
    theta = np.arccos(x)
    s = np.sin(theta)
    trig_value = np.where(s != 0, np.sin(n1 * theta) / s, n1 * np.cos(n1 * theta) / x)
    return _sel(x, (n < 0, 0), (unit, np.where((x > 0) | (n % 2 == 0), n1, -n1)), (trig, trig_value),
                (n == 0, one), (n == 1, x + x), default=rec)


def chebyshev_v(x, n):
    T = x.dtype.type
    one = T(1)
    unit = np.abs(x) == one
    trig = (n > 8) & (np.abs(x) < one)
    need = (n >= 2) & ~unit & ~trig
    rec = _recur(x, n, need, lambda v: v + v - T(1), lambda k, v, p, q: (v + v) * q - p, 2, lambda m: m)
    odd = (n + n + 1).astype(x.dtype)
    signed = np.where(n % 2 == 0, odd, -odd)
    theta = np.arccos(x)
    half = theta / T(2)
    trig_value = np.where(np.sin(half) != one, np.cos((n.astype(x.dtype) + T(0.5)) * theta) / np.cos(half), signed)
    return _sel(x, (n < 0, 0), (unit, np.where(x > 0, one, signed)), (trig, trig_value), (n == 0, one),
                (n == 1, x + x - one), default=rec)


def chebyshev_w(x, n):
    T = x.dtype.type
    one = T(1)
    unit = np.abs(x) == one
    trig = (n > 8) & (np.abs(x) < one)
    need = (n >= 2) & ~unit & ~trig
    rec = _recur(x, n, need, lambda v: v + v + T(1), lambda k, v, p, q: (v + v) * q - p, 2, lambda m: m)
    odd = (n + n + 1).astype(x.dtype)
    unit_value = np.where(x > 0, odd, np.where(n % 2 == 0, one, -one))
    theta = np.arccos(x)
    half = theta / T(2)
    trig_value = np.where(np.cos(half) != one, np.sin((n.astype(x.dtype) + T(0.5)) * theta) / np.sin(half),
                          unit_value)
    return _sel(x, (n < 0, 0), (unit, unit_value), (trig, trig_value), (n == 0, one), (n == 1, x + x + one),
                default=rec)


def _shifted(x, n, limit, q0_of_y, trig_of, x1_value, x0_value, n1_value):
    """The shifted Chebyshev polynomials: those of y = 2x - 1, with torch's cases at x = 1 and 0."""
    T = x.dtype.type
    one = T(1)
    y = x + x - one
    trig = (n > limit) & (np.abs(y) < one)
    at1, at0 = x == one, x == 0
    need = (n >= 2) & ~at1 & ~at0 & ~trig
    rec = _recur(x, n, need, lambda v: q0_of_y(v + v - one),
                 lambda k, v, p, q: ((v + v - one) + (v + v - one)) * q - p, 2, lambda m: m)
    return _sel(x, (n < 0, 0), (at1, x1_value), (at0, x0_value), (trig, trig_of(y)), (n == 0, one),
                (n == 1, n1_value(y)), default=rec)


def shifted_chebyshev_t(x, n):
    one = x.dtype.type(1)
    return _shifted(x, n, 6, lambda y: y, lambda y: np.cos(n.astype(x.dtype) * np.arccos(y)), one,
                    np.where(n % 2 == 0, one, -one), lambda y: y)


def shifted_chebyshev_u(x, n):
    n1 = (n + 1).astype(x.dtype)

    def trig(y):
        theta = np.arccos(y)
        s = np.sin(theta)
        return np.where(s != 0, np.sin(n1 * theta) / s, n1 * np.cos(n1 * theta) / y)
    return _shifted(x, n, 6, lambda y: y + y, trig, n1, np.where(n % 2 == 0, n1, -n1), lambda y: y + y)


def shifted_chebyshev_v(x, n):
    T = x.dtype.type
    one = T(1)
    odd = (n + n + 1).astype(x.dtype)
    signed = np.where(n % 2 == 0, odd, -odd)

    def trig(y):
        theta = np.arccos(y)
        half = theta / T(2)
        return np.where(np.sin(half) != one, np.cos((n.astype(x.dtype) + T(0.5)) * theta) / np.cos(half), signed)
    return _shifted(x, n, 6, lambda y: y + y - one, trig, one, signed, lambda y: y + y - one)


def shifted_chebyshev_w(x, n):
    T = x.dtype.type
    one = T(1)
    odd = (n + n + 1).astype(x.dtype)
    parity = np.where(n % 2 == 0, one, -one)

    def trig(y):
        theta = np.arccos(y)
        half = theta / T(2)
        return np.where(np.cos(half) != one, np.sin((n.astype(x.dtype) + T(0.5)) * theta) / np.sin(half), parity)
    return _shifted(x, n, 4, lambda y: y + y + one, trig, odd, parity, lambda y: y + y + one)


def hermite_h(x, n):
    T = x.dtype.type
    limit = 128 if x.dtype == np.float32 else 512
    need = (n >= 2) & (n <= limit)
    # torch's `for (k = 2; k < n + n; k += 2) r = (x + x) q - k p`: the m-th step has k = 2m
    rec = _recur(x, n, need, lambda v: v + v, lambda k, v, p, q: (v + v) * q - T(2) * k * p, 1,
                 lambda m: m - 1, stop_on_nan=False)
    return _sel(x, (n < 0, 0), (n == 0, T(1)), (n == 1, x + x), (n > limit, np.nan), default=rec)


def hermite_he(x, n):
    T = x.dtype.type
    limit = 128 if x.dtype == np.float32 else 512
    need = (n >= 2) & (n <= limit)
    rec = _recur(x, n, need, lambda v: v, lambda k, v, p, q: v * q - k * p, 1, lambda m: m - 1, stop_on_nan=False)
    return _sel(x, (n < 0, 0), (n == 0, T(1)), (n == 1, x), (n > limit, np.nan), default=rec)


def laguerre_l(x, n):
    T = x.dtype.type
    one = T(1)
    need = (n >= 2) & (x != 0)
    rec = _recur(x, n, need, lambda v: one - v, lambda k, v, p, q: (((k + k) + (one - v)) * q - k * p) / (k + one),
                 1, lambda m: m - 1)
    return _sel(x, (n < 0, 0), (x == 0, one), (n == 0, one), (n == 1, one - x), default=rec)


def legendre_p(x, n):
    T = x.dtype.type
    one = T(1)
    unit = np.abs(x) == one
    need = (n >= 2) & ~unit
    rec = _recur(x, n, need, lambda v: v, lambda k, v, p, q: ((k + k + one) * v * q - k * p) / (k + one), 1,
                 lambda m: m - 1)
    return _sel(x, (n < 0, 0), (unit, np.where((x > 0) | (n % 2 == 0), one, -one)), (n == 0, one), (n == 1, x),
                default=rec)


# ------------------------------------------------------------------ the ops
def _declare(name, ref, vjp=None, doc="", node=None, unpack_order=None):
    extra = {"reference_why": f"{name}: float64 NumPy series, rational approximations and recurrences "
                              "(no vmath kernel)"}
    if node:
        extra["node"] = node
    if unpack_order:
        extra["unpack_order"] = unpack_order
    # torch records no node for the functions without a derivative formula: the result does not
    # require grad (nondiff_outputs), and backward through it is torch's "does not require grad"
    register(OpDef(name, COMPOSITE, _infer_map(name, float_only=True), ref, vjp, reference_only=True,
                   nondiff_outputs=() if vjp else (0,), extra=extra, doc=doc))


def _erfcx_vjp(e, x, y, g, a, n):
    # torch: (2 * self * result - 2 / sqrt(pi)) * grad
    return [e.mul(e.sub(e.mul(e.mul(x[0], 2.0), y[0]), 2.0 / math.sqrt(math.pi)), g[0])]


def _igamma_vjp(upper: bool):
    # torch: other: grad * exp((self - 1) * log(other) - other - lgamma(self)) (negated for igammac);
    # self: not_implemented("igamma: input")
    def vjp(e, x, y, g, a, n):
        if n[0]:
            raise NoDerivativeNotImplementedError(
                f"the derivative for '{'igammac' if upper else 'igamma'}: input' is not implemented.")
        s, other = x
        density = e.exp(e.sub(e.sub(e.mul(e.sub(s, 1.0), e.log(other)), other), e.op("lgamma", s)))
        gradient = e.mul(g[0], density)
        return [None, e.neg(gradient) if upper else gradient]
    return vjp


def _zeta_vjp(e, x, y, g, a, n):
    # torch: other: grad * -self * special_zeta(self + 1., other); self: not_implemented("zeta")
    if n[0]:
        raise NoDerivativeNotImplementedError("the derivative for 'zeta' is not implemented.")
    s, q = x
    return [None, e.mul(e.mul(g[0], e.neg(s)), e.op("zeta", e.add(s, 1.0), q))]


_UNARY = {
    "bessel_j0": (bessel_j0_64, "J0(x), the Bessel function of the first kind of order 0"),
    "bessel_j1": (bessel_j1_64, "J1(x), the Bessel function of the first kind of order 1"),
    "bessel_y0": (bessel_y0_64, "Y0(x), the Bessel function of the second kind of order 0"),
    "bessel_y1": (bessel_y1_64, "Y1(x), the Bessel function of the second kind of order 1"),
    "modified_bessel_k0": (_k(0, False), "K0(x), the modified Bessel function of the second kind, order 0"),
    "modified_bessel_k1": (_k(1, False), "K1(x), the modified Bessel function of the second kind, order 1"),
    "scaled_modified_bessel_k0": (_k(0, True), "exp(x) K0(x)"),
    "scaled_modified_bessel_k1": (_k(1, True), "exp(x) K1(x)"),
    "spherical_bessel_j0": (spherical_bessel_j0_64, "sin(x) / x, the spherical Bessel function j0"),
    "airy_ai": (airy_ai_64, "Ai(x), the Airy function of the first kind"),
}
for _name, (_fn, _doc) in _UNARY.items():
    _declare(_name, _rounded(_fn), doc=_doc)
_declare("modified_bessel_i0", _rounded(modified_bessel_i0_64, dtype_aware=True),
         doc="I0(x), the modified Bessel function of the first kind of order 0")
_declare("modified_bessel_i1", _rounded(modified_bessel_i1_64, dtype_aware=True),
         doc="I1(x), the modified Bessel function of the first kind of order 1")
_declare("erfcx", _rounded(erfcx_full64), _erfcx_vjp, "erfcx(x): exp(x^2) erfc(x)", node="SpecialErfcxBackward0")
_declare("igamma", _rounded(igamma64), _igamma_vjp(False), "igamma(a, x): the regularized lower incomplete gamma",
         node="IgammaBackward0", unpack_order=OTHER_THEN_SELF)
_declare("igammac", _rounded(igammac64), _igamma_vjp(True), "igammac(a, x): the regularized upper incomplete gamma",
         node="IgammacBackward0", unpack_order=OTHER_THEN_SELF)
_declare("zeta", _rounded(zeta64), _zeta_vjp, "zeta(x, q): Hurwitz's zeta function", node="SpecialZetaBackward0",
         unpack_order=OTHER_THEN_SELF)

POLYNOMIALS = {
    "chebyshev_polynomial_t": chebyshev_t, "chebyshev_polynomial_u": chebyshev_u,
    "chebyshev_polynomial_v": chebyshev_v, "chebyshev_polynomial_w": chebyshev_w,
    "shifted_chebyshev_polynomial_t": shifted_chebyshev_t, "shifted_chebyshev_polynomial_u": shifted_chebyshev_u,
    "shifted_chebyshev_polynomial_v": shifted_chebyshev_v, "shifted_chebyshev_polynomial_w": shifted_chebyshev_w,
    "hermite_polynomial_h": hermite_h, "hermite_polynomial_he": hermite_he,
    "laguerre_polynomial_l": laguerre_l, "legendre_polynomial_p": legendre_p,
}
for _name, _fn in POLYNOMIALS.items():
    _declare(_name, _poly_ref(_fn), doc=f"{_name}(x, n): torch's recurrence in the operand's dtype")


# Temme's coefficients d[k][n] of the uniform asymptotic expansion (torch's table, SciPy's igam.h)
_TEMME = (
    (-3.3333333333333333e-1, 8.3333333333333333e-2, -1.4814814814814815e-2, 1.1574074074074074e-3,
     3.527336860670194e-4, -1.7875514403292181e-4, 3.9192631785224378e-5, -2.1854485106799922e-6,
     -1.85406221071516e-6, 8.296711340953086e-7, -1.7665952736826079e-7, 6.7078535434014986e-9,
     1.0261809784240308e-8, -4.3820360184533532e-9, 9.1476995822367902e-10, -2.551419399494625e-11,
     -5.8307721325504251e-11, 2.4361948020667416e-11, -5.0276692801141756e-12, 1.1004392031956135e-13,
     3.3717632624009854e-13, -1.3923887224181621e-13, 2.8534893807047443e-14, -5.1391118342425726e-16,
     -1.9752288294349443e-15),
    (-1.8518518518518519e-3, -3.4722222222222222e-3, 2.6455026455026455e-3, -9.9022633744855967e-4,
     2.0576131687242798e-4, -4.0187757201646091e-7, -1.8098550334489978e-5, 7.6491609160811101e-6,
     -1.6120900894563446e-6, 4.6471278028074343e-9, 1.378633446915721e-7, -5.752545603517705e-8,
     1.1951628599778147e-8, -1.7543241719747648e-11, -1.0091543710600413e-9, 4.1627929918425826e-10,
     -8.5639070264929806e-11, 6.0672151016047586e-14, 7.1624989648114854e-12, -2.9331866437714371e-12,
     5.9966963656836887e-13, -2.1671786527323314e-16, -4.9783399723692616e-14, 2.0291628823713425e-14,
     -4.13125571381061e-15),
    (4.1335978835978836e-3, -2.6813271604938272e-3, 7.7160493827160494e-4, 2.0093878600823045e-6,
     -1.0736653226365161e-4, 5.2923448829120125e-5, -1.2760635188618728e-5, 3.4235787340961381e-8,
     1.3721957309062933e-6, -6.298992138380055e-7, 1.4280614206064242e-7, -2.0477098421990866e-10,
     -1.4092529910867521e-8, 6.228974084922022e-9, -1.3670488396617113e-9, 9.4283561590146782e-13,
     1.2872252400089318e-10, -5.5645956134363321e-11, 1.1975935546366981e-11, -4.1689782251838635e-15,
     -1.0940640427884594e-12, 4.6622399463901357e-13, -9.905105763906906e-14, 1.8931876768373515e-17,
     8.8592218725911273e-15),
    (6.4943415637860082e-4, 2.2947209362139918e-4, -4.6918949439525571e-4, 2.6772063206283885e-4,
     -7.5618016718839764e-5, -2.3965051138672967e-7, 1.1082654115347302e-5, -5.6749528269915966e-6,
     1.4230900732435884e-6, -2.7861080291528142e-11, -1.6958404091930277e-7, 8.0994649053880824e-8,
     -1.9111168485973654e-8, 2.3928620439808118e-12, 2.0620131815488798e-9, -9.4604966618551322e-10,
     2.1541049775774908e-10, -1.388823336813903e-14, -2.1894761681963939e-11, 9.7909989511716851e-12,
     -2.1782191880180962e-12, 6.2088195734079014e-17, 2.126978363279737e-13, -9.3446887915174333e-14,
     2.0453671226782849e-14),
    (-8.618882909167117e-4, 7.8403922172006663e-4, -2.9907248030319018e-4, -1.4638452578843418e-6,
     6.6414982154651222e-5, -3.9683650471794347e-5, 1.1375726970678419e-5, 2.5074972262375328e-10,
     -1.6954149536558306e-6, 8.9075075322053097e-7, -2.2929348340008049e-7, 2.956794137544049e-11,
     2.8865829742708784e-8, -1.4189739437803219e-8, 3.4463580499464897e-9, -2.3024517174528067e-13,
     -3.9409233028046405e-10, 1.8602338968504502e-10, -4.356323005056618e-11, 1.2786001016296231e-15,
     4.6792750266579195e-12, -2.1492464706134829e-12, 4.9088156148096522e-13, -6.3385914848915603e-18,
     -5.0453320690800944e-14),
    (-3.3679855336635815e-4, -6.9728137583658578e-5, 2.7727532449593921e-4, -1.9932570516188848e-4,
     6.7977804779372078e-5, 1.419062920643967e-7, -1.3594048189768693e-5, 8.0184702563342015e-6,
     -2.2914811765080952e-6, -3.252473551298454e-10, 3.4652846491085265e-7, -1.8447187191171343e-7,
     4.8240967037894181e-8, -1.7989466721743515e-14, -6.3061945000135234e-9, 3.1624176287745679e-9,
     -7.8409242536974293e-10, 5.1926791652540407e-15, 9.3589442423067836e-11, -4.5134262161632782e-11,
     1.0799129993116827e-11, -3.661886712685252e-17, -1.210902069055155e-12, 5.6807435849905643e-13,
     -1.3249659916340829e-13),
    (5.3130793646399222e-4, -5.9216643735369388e-4, 2.7087820967180448e-4, 7.9023532326603279e-7,
     -8.1539693675619688e-5, 5.6116827531062497e-5, -1.8329116582843376e-5, -3.0796134506033048e-9,
     3.4651553688036091e-6, -2.0291327396058604e-6, 5.7887928631490037e-7, 2.338630673826657e-13,
     -8.8286007463304835e-8, 4.7435958880408128e-8, -1.2545415020710382e-8, 8.6496488580102925e-14,
     1.6846058979264063e-9, -8.5754928235775947e-10, 2.1598224929232125e-10, -7.6132305204761539e-16,
     -2.6639822008536144e-11, 1.3065700536611057e-11, -3.1799163902367977e-12, 4.7109761213674315e-18,
     3.6902800842763467e-13),
    (3.4436760689237767e-4, 5.1717909082605922e-5, -3.3493161081142236e-4, 2.812695154763237e-4,
     -1.0976582244684731e-4, -1.2741009095484485e-7, 2.7744451511563644e-5, -1.8263488805711333e-5,
     5.7876949497350524e-6, 4.9387589339362704e-10, -1.0595367014026043e-6, 6.1667143761104075e-7,
     -1.7562973359060462e-7, -1.2974473287015439e-12, 2.695423606288966e-8, -1.4578352908731271e-8,
     3.887645959386175e-9, -3.8810022510194121e-17, -5.3279941738772867e-10, 2.7437977643314845e-10,
     -6.9957960920705679e-11, 2.5899863874868481e-17, 8.8566890996696381e-12, -4.403168815871311e-12,
     1.0865561947091654e-12),
    (-6.5262391859530942e-4, 8.3949872067208728e-4, -4.3829709854172101e-4, -6.969091458420552e-7,
     1.6644846642067548e-4, -1.2783517679769219e-4, 4.6299532636913043e-5, 4.5579098679227077e-9,
     -1.0595271125805195e-5, 6.7833429048651666e-6, -2.1075476666258804e-6, -1.7213731432817145e-11,
     3.7735877416110979e-7, -2.1867506700122867e-7, 6.2202288040189269e-8, 6.5977038267330006e-16,
     -9.5903864974256858e-9, 5.2132144922808078e-9, -1.3991589583935709e-9, 5.382058999060575e-16,
     1.9484714275467745e-10, -1.0127287556389682e-10, 2.6077347197254926e-11, -5.0904186999932993e-18,
     -3.3721464474854592e-12),
    (-5.9676129019274625e-4, -7.2048954160200106e-5, 6.7823088376673284e-4, -6.4014752602627585e-4,
     2.7750107634328704e-4, 1.8197008380465151e-7, -8.4795071170685032e-5, 6.105192082501531e-5,
     -2.1073920183404862e-5, -8.8585890141255994e-10, 4.5284535953805377e-6, -2.8427815022504408e-6,
     8.7082341778646412e-7, 3.6886101871706965e-12, -1.5344695190702061e-7, 8.862466778790695e-8,
     -2.5184812301826817e-8, -1.0225912098215092e-14, 3.8969470758154777e-9, -2.1267304792235635e-9,
     5.7370135528051385e-10, -1.887749850169741e-19, -8.0931538694657866e-11, 4.2382723283449199e-11,
     -1.1002224534207726e-11),
    (1.3324454494800656e-3, -1.9144384985654775e-3, 1.1089369134596637e-3, 9.932404122642299e-7,
     -5.0874501293093199e-4, 4.2735056665392884e-4, -1.6858853767910799e-4, -8.1301893922784998e-9,
     4.5284402370562147e-5, -3.127053674781734e-5, 1.044986828530338e-5, 4.8435226265680926e-11,
     -2.1482565873456258e-6, 1.329369701097492e-6, -4.0295693092101029e-7, -1.7567877666323291e-13,
     7.0145043163668257e-8, -4.040787734999483e-8, 1.1474026743371963e-8, 3.9642746853563325e-18,
     -1.7804938269892714e-9, 9.7480262548731646e-10, -2.6405338676507616e-10, 5.794875163403742e-18,
     3.7647749553543836e-11),
    (1.579727660730835e-3, 1.6251626278391582e-4, -2.0633421035543276e-3, 2.1389686185689098e-3,
     -1.0108559391263003e-3, -3.9912705529919201e-7, 3.6235025084764691e-4, -2.8143901463712154e-4,
     1.0449513336495887e-4, 2.1211418491830297e-9, -2.5779417251947842e-5, 1.7281818956040463e-5,
     -5.6413773872904282e-6, -1.1024320105776174e-11, 1.1223224418895175e-6, -6.8693396379526735e-7,
     2.0653236975414887e-7, 4.6714772409838506e-14, -3.5609886164949055e-8, 2.0470855345905963e-8,
     -5.8091738633283358e-9, -1.332821287582869e-16, 9.0354604391335133e-10, -4.9598782517330834e-10,
     1.3481607129399749e-10),
    (-4.0725121195140166e-3, 6.4033628338080698e-3, -4.0410161081676618e-3, -2.183732802866233e-6,
     2.1740441801254639e-3, -1.9700440518418892e-3, 8.3595469747962458e-4, 1.9445447567109655e-8,
     -2.5779387120421696e-4, 1.9009987368139304e-4, -6.7696499937438965e-5, -1.4440629666426572e-10,
     1.5712512518742269e-5, -1.0304008744776893e-5, 3.304517767401387e-6, 7.9829760242325709e-13,
     -6.4097794149313004e-7, 3.8894624761300056e-7, -1.1618347644948869e-7, -2.816808630596451e-15,
     1.9878012911297093e-8, -1.1407719956357511e-8, 3.2355857064185555e-9, 4.1759468293455945e-20,
     -5.0423112718105824e-10),
    (-5.9475779383993003e-3, -5.4016476789260452e-4, 8.7910413550767898e-3, -9.8576315587856125e-3,
     5.0134695031021538e-3, 1.2807521786221875e-6, -2.0626019342754683e-3, 1.7109128573523058e-3,
     -6.7695312714133799e-4, -6.9011545676562133e-9, 1.8855128143995902e-4, -1.3395215663491969e-4,
     4.6263183033528039e-5, 4.0034230613321351e-11, -1.0255652921494033e-5, 6.612086372797651e-6,
     -2.0913022027253008e-6, -2.0951775649603837e-13, 3.9756029041993247e-7, -2.3956211978815887e-7,
     7.1182883382145864e-8, 8.925574873053455e-16, -1.2101547235064676e-8, 6.9350618248334386e-9,
     -1.9661464453856102e-9),
    (1.7402027787522711e-2, -2.9527880945699121e-2, 2.0045875571402799e-2, 7.0289515966903407e-6,
     -1.2375421071343148e-2, 1.1976293444235254e-2, -5.4156038466518525e-3, -6.3290893396418616e-8,
     1.8855118129005065e-3, -1.473473274825001e-3, 5.5515810097708387e-4, 5.2406834412550662e-10,
     -1.4357913535784836e-4, 9.9181293224943297e-5, -3.3460834749478311e-5, -3.5755837291098993e-12,
     7.1560851960630076e-6, -4.5516802628155526e-6, 1.4236576649271475e-6, 1.8803149082089664e-14,
     -2.6623403898929211e-7, 1.5950642189595716e-7, -4.7187514673841102e-8, -6.5107872958755177e-17,
     7.9795091026746235e-9),
    (3.0249124160905891e-2, 2.4817436002649977e-3, -4.9939134373457022e-2, 5.9915643009307869e-2,
     -3.2483207601623391e-2, -5.7212968652103441e-6, 1.5085251778569354e-2, -1.3261324005088445e-2,
     5.5515262632426148e-3, 3.0263182257030016e-8, -1.7229548406756723e-3, 1.2893570099929637e-3,
     -4.6845138348319876e-4, -1.830259937893045e-10, 1.1449739014822654e-4, -7.7378565221244477e-5,
     2.5625836246985201e-5, 1.0766165333192814e-12, -5.3246809282422621e-6, 3.349634863064464e-6,
     -1.0381253128684018e-6, -5.608909920621128e-15, 1.9150821930676591e-7, -1.1418365800203486e-7,
     3.3654425209171788e-8),
    (-9.9051020880159045e-2, 1.7954011706123486e-1, -1.2989606383463778e-1, -3.1478872752284357e-5,
     9.0510635276848131e-2, -9.2828824411184397e-2, 4.4412112839877808e-2, 2.7779236316835888e-7,
     -1.7229543805449697e-2, 1.4182925050891573e-2, -5.6214161633747336e-3, -2.39598509186381e-9,
     1.6029634366079908e-3, -1.1606784674435773e-3, 4.1001337768153873e-4, 1.8365800754090661e-11,
     -9.5844256563655903e-5, 6.3643062337764708e-5, -2.076250624489065e-5, -1.1806020912804483e-13,
     4.2131808239120649e-6, -2.6262241337012467e-6, 8.0770620494930662e-7, 6.0125912123632725e-16,
     -1.4729737374018841e-7),
    (-1.9994542198219728e-1, -1.5056113040026424e-2, 3.6470239469348489e-1, -4.6435192311733545e-1,
     2.6640934719197893e-1, 3.4038266027147191e-5, -1.3784338709329624e-1, 1.276467178337056e-1,
     -5.6213828755200985e-2, -1.753150885483011e-7, 1.9235592956768113e-2, -1.5088821281095315e-2,
     5.7401854451350123e-3, 1.0622382710310225e-9, -1.5335082692563998e-3, 1.0819320643228214e-3,
     -3.7372510193945659e-4, -6.6170909729031985e-12, 8.4263617380909628e-5, -5.5150706827483479e-5,
     1.7769536448348069e-5, 3.8827923210205533e-14, -3.53513697488768e-6, 2.1865832130045269e-6,
     -6.6812849447625594e-7),
    (7.2438608504029431e-1, -1.3918010932653375, 1.0654143352413968, 1.876173868950258e-4,
     -8.2705501176152696e-1, 8.9352433347828414e-1, -4.4971003995291339e-1, -1.6107401567546652e-6,
     1.9235590165271091e-1, -1.6597702160042609e-1, 6.8882222681814333e-2, 1.3910091724608687e-8,
     -2.146911561508663e-2, 1.6228980898865892e-2, -5.9796016172584256e-3, -1.1287469112826745e-10,
     1.5167451119784857e-3, -1.0478634293553899e-3, 3.5539072889126421e-4, 8.1704322111801517e-13,
     -7.7773013442452395e-5, 5.0291413897007722e-5, -1.6035083867000518e-5, 1.2469354315487605e-14,
     3.1369106244517615e-6),
    (1.6668949727276811, 1.165462765994632e-1, -3.3288393225018906, 4.4692325482864037,
     -2.6977693045875807, -2.600667859891061e-4, 1.5389017615694539, -1.4937962361134612,
     6.8881964633233148e-1, 1.3077482004552385e-6, -2.5762963325596288e-1, 2.1097676102125449e-1,
     -8.3714408359219882e-2, -7.7920428881354753e-9, 2.4267923064833599e-2, -1.7813678334552311e-2,
     6.3970330388900056e-3, 4.9430807090480523e-11, -1.5554602758465635e-3, 1.0561196919903214e-3,
     -3.5277184460472902e-4, 9.3002334645022459e-14, 7.5285855026557172e-5, -4.8186515569156351e-5,
     1.5227271505597605e-5),
    (-6.6188298861372935, 1.3397985455142589e+1, -1.0789350606845146e+1, -1.4352254537875018e-3,
     9.2333694596189809, -1.0456552819547769e+1, 5.5105526029033471, 1.2024439690716742e-5,
     -2.5762961164755816, 2.3207442745387179, -1.0045728797216284, -1.0207833290021914e-7,
     3.3975092171169466e-1, -2.6720517450757468e-1, 1.0235252851562706e-1, 8.4329730484871625e-10,
     -2.7998284958442595e-2, 2.0066274144976813e-2, -7.0554368915086242e-3, 1.9402238183698188e-12,
     1.6562888105449611e-3, -1.1082898580743683e-3, 3.654545161310169e-4, -5.1290032026971794e-11,
     -7.6340103696869031e-5),
    (-1.7112706061976095e+1, -1.1208044642899116, 3.7131966511885444e+1, -5.2298271025348962e+1,
     3.3058589696624618e+1, 2.4791298976200222e-3, -2.061089403411526e+1, 2.088672775145582e+1,
     -1.0045703956517752e+1, -1.2238783449063012e-5, 4.0770134274221141, -3.473667358470195,
     1.4329352617312006, 7.1359914411879712e-8, -4.4797257159115612e-1, 3.4112666080644461e-1,
     -1.2699786326594923e-1, -2.8953677269081528e-10, 3.3125776278259863e-2, -2.3274087021036101e-2,
     8.0399993503648882e-3, -1.177805216235265e-9, -1.8321624891071668e-3, 1.2108282933588665e-3,
     -3.9479941246822517e-4),
    (7.389033153567425e+1, -1.5680141270402273e+2, 1.322177542759164e+2, 1.3692876877324546e-2,
     -1.2366496885920151e+2, 1.4620689391062729e+2, -8.0365587724865346e+1, -1.1259851148881298e-4,
     4.0770132196179938e+1, -3.8210340013273034e+1, 1.719522294277362e+1, 9.3519707955168356e-7,
     -6.2716159907747034, 5.1168999071852637, -2.0319658112299095, -4.9507215582761543e-9,
     5.9626397294332597e-1, -4.4220765337238094e-1, 1.6079998700166273e-1, -2.4733786203223402e-8,
     -4.0307574759979762e-2, 2.7849050747097869e-2, -9.4751858992054221e-3, 6.419922235909132e-6,
     2.1250180774699461e-3),
    (2.1216837098382522e+2, 1.3107863022633868e+1, -4.9698285932871748e+2, 7.3121595266969204e+2,
     -4.8213821720890847e+2, -2.8817248692894889e-2, 3.2616720302947102e+2, -3.4389340280087117e+2,
     1.7195193870816232e+2, 1.4038077378096158e-4, -7.52594195897599e+1, 6.651969984520934e+1,
     -2.8447519748152462e+1, -7.613702615875391e-7, 9.5402237105304373, -7.5175301113311376,
     2.8943997568871961, -4.6612194999538201e-7, -8.0615149598794088e-1, 5.8483006570631029e-1,
     -2.0845408972964956e-1, 1.4765818959305817e-4, 5.1000433863753019e-2, -3.3066252141883665e-2,
     1.5109265210467774e-2),
    (-9.8959643098322368e+2, 2.1925555360905233e+3, -1.9283586782723356e+3, -1.5925738122215253e-1,
     1.9569985945919857e+3, -2.4072514765081556e+3, 1.3756149959336496e+3, 1.2920735237496668e-3,
     -7.525941715948055e+2, 7.3171668742208716e+2, -3.4137023466220065e+2, -9.9857390260608043e-6,
     1.3356313181291573e+2, -1.1276295161252794e+2, 4.6310396098204458e+1, -7.9237387133614756e-6,
     -1.4510726927018646e+1, 1.1111771248100563e+1, -4.1690817945270892, 3.1008219800117808e-3,
     1.1220095449981468, -7.6052379926149916e-1, 3.6262236505085254e-1, 2.216867741940747e-1,
     4.8683443692930507e-1),
)
assert len(_TEMME) == 25 and all(len(row) == 25 for row in _TEMME)
