"""The Numba loops of codegen/eager_loops.py, in a module of their own, imported on first use
(defining a Numba function starts Numba's code generator; see ir/reference_loops.py)."""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from fusegrad.ir.torch_cpu import block_elements

from .accumulate import fg_acc_max
from .libmath import fg_div_floor, fg_fma, fg_remainder
from .noalias import SUPPORTED as _NOALIAS_SUPPORTED
from .vmath import fg_erf, fg_erfc, fg_exp, fg_exp_small, fg_expm1

_HALF = np.float32(0.5)
_ONE = np.float32(1.0)
# torch's block of float32 elements on this machine (ir/torch_cpu.py; a constant of the compiled
# loops: Numba's cache keys them by the CPU, whose vector width decides it)
_FLOAT32_BLOCK = block_elements(np.float32)
_MINUS_HALF = np.float32(-0.5)
# the float32 constants of gelu's and gelu_backward's decompositions (ir/ops/erf_gelu.py):
# x * sqrt(1/2), and 1/sqrt(2 pi), pdf's factor
_SQRT1_2 = np.float32(1 / math.sqrt(2.0))
_ALPHA = np.float32(1 / math.sqrt(2 * math.pi))
# njit's noalias option (codegen/noalias.py) for the loops that write over arrays the caller
# checked share no memory; none where this Numba lacks it
_NOALIAS = {"noalias": True} if _NOALIAS_SUPPORTED else {}


@njit(cache=True, nogil=True, error_model="numpy")
def erf_into(x, out):
    """out[i] = fg_erf(x[i]) (float32: vectorised, within 1 ulp; float64: libm's erf)."""
    for i in range(x.shape[0]):
        out[i] = fg_erf(x[i])


@njit(cache=True, nogil=True, error_model="numpy")
def erfc_into(x, out):
    """out[i] = fg_erfc(x[i]) (float32: vectorised, within 1 ulp; float64: libm's erfc, the
    reference's bits)."""
    for i in range(x.shape[0]):
        out[i] = fg_erfc(x[i])


@njit(cache=True, nogil=True, error_model="numpy")
def gelu_into(x, out):
    """out[i] = x[i]*0.5 * (fg_erf(x[i]*sqrt(1/2)) + 1), in float32, in a compiled kernel's order."""
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = (v * _HALF) * (fg_erf(v * _SQRT1_2) + _ONE)


@njit(cache=True, nogil=True, error_model="numpy")
def gelu_backward_into(grad, x, out):
    """out[i] = grad[i] * (cdf + x[i] * pdf) at x[i], in float32, in a compiled kernel's order:
    cdf = (fg_erf(x*sqrt(1/2)) + 1) * 0.5, pdf = fg_exp(x*x * -0.5) * 1/sqrt(2 pi)."""
    for i in range(x.shape[0]):
        v = x[i]
        cdf = (fg_erf(v * _SQRT1_2) + _ONE) * _HALF
        pdf = fg_exp((v * v) * _MINUS_HALF) * _ALPHA
        out[i] = grad[i] * (cdf + v * pdf)


@njit(cache=True, nogil=True, error_model="numpy")
def leaky_relu_into(x, out, slope):
    """out[i] = x[i] where x[i] > 0, else x[i] * slope (torch's; the reference's bits)."""
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = v if v > 0 else v * slope


@njit(cache=True, nogil=True, error_model="numpy")
def leaky_relu_backward_into(grad, x, out, slope):
    """out[i] = grad[i] where x[i] > 0, else grad[i] * slope (the reference's bits)."""
    for i in range(x.shape[0]):
        out[i] = grad[i] if x[i] > 0 else grad[i] * slope


@njit(cache=True, nogil=True, error_model="numpy")
def elu_into(x, out, alpha):
    """out[i] = x[i] where x[i] >= 0, else fg_expm1(x[i]) * alpha (a compiled kernel's bits)."""
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = v if v >= 0 else fg_expm1(v) * alpha


@njit(cache=True, nogil=True, error_model="numpy")
def silu_into(x, out):
    """out[i] = x[i] / (fg_exp(-x[i]) + 1) (a compiled kernel's bits)."""
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = v / (fg_exp(-v) + _ONE)


@njit(cache=True, nogil=True, error_model="numpy")
def elu_backward_into(grad, x, out, alpha):
    """out[i] = (grad[i] * alpha) * fg_exp(x[i]) where x[i] <= 0, else grad[i] (elu's gradient
    from its input). A NaN x takes torch's formula for its place (ir/ops/activations.py
    _elu_backward_ref): the scaled NaN in the whole blocks of torch's vectorised loop, the
    gradient in the tail (codegen/eager_loops.py lends this loop for contiguous operands, of
    fewer elements than torch splits among threads)."""
    n = x.shape[0]
    whole = n // _FLOAT32_BLOCK * _FLOAT32_BLOCK
    for i in range(whole):
        v = x[i]
        out[i] = grad[i] if v > 0 else (grad[i] * alpha) * fg_exp(v)
    for i in range(whole, n):
        v = x[i]
        out[i] = (grad[i] * alpha) * fg_exp(v) if v <= 0 else grad[i]


@njit(cache=True, nogil=True, error_model="numpy")
def fmod_into(a, b, out):
    """out[i] = fmod(a[i], b[i]) (C's, exact: the reference's bits)."""
    for i in range(a.shape[0]):
        out[i] = np.fmod(a[i], b[i])


@njit(cache=True, nogil=True, error_model="numpy")
def remainder_into(a, b, out):
    """out[i] = torch's remainder of floats (fg_remainder, the reference's formula and bits)."""
    for i in range(a.shape[0]):
        out[i] = fg_remainder(a[i], b[i])


@njit(cache=True, nogil=True, error_model="numpy")
def div_floor_into(a, b, out):
    """out[i] = torch's floor division of floats (fg_div_floor, the reference's formula and bits)."""
    for i in range(a.shape[0]):
        out[i] = fg_div_floor(a[i], b[i])


@njit(cache=True, nogil=True, error_model="numpy")
def lerp_into(a, b, w, out):
    """out[i] = torch's lerp: fma(w, b - a, a) where |w| < 0.5, else fma(w - 1, b - a, b), each
    rounded once (the hardware FMA: the reference's bits)."""
    one = np.ones(1, a.dtype)[0]            # (in the arrays' dtype: a bare 1 would widen float32)
    for i in range(a.shape[0]):
        x, y, t = a[i], b[i], w[i]
        d = y - x
        out[i] = fg_fma(t, d, x) if abs(t) < 0.5 else fg_fma(t - one, d, y)


@njit(cache=True, nogil=True, error_model="numpy")
def rsqrt_into(x, out):
    """out[i] = 1 / sqrt(x[i]), two correctly rounded operations (the reference's bits)."""
    one = np.ones(1, x.dtype)[0]
    for i in range(x.shape[0]):
        out[i] = one / np.sqrt(x[i])


# The row sums below are reassociated (lanes, then a tree) so that they vectorise: float64
# sums of float32 or float64 values, within a few float64 ulp of the references' pairwise sums.
@njit(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc"})
def _row_sum(x, row):
    """The sum of x[row] in float64."""
    total = 0.0
    for i in range(x.shape[1]):
        total += np.float64(x[row, i])
    return total


@njit(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc"})
def _row_squared_deviations(x, row, centre):
    """The sum of (x[row, i] - centre) ** 2 in float64."""
    total = 0.0
    for i in range(x.shape[1]):
        d = np.float64(x[row, i]) - centre
        total += d * d
    return total


@njit(cache=True, nogil=True, error_model="numpy")
def layer_norm_into(x, out, weight, bias, eps):
    """Each row of x (rows, n) normalised as ir/ops/normalization.py's reference does, in
    float64 rounded once: (x - mean) / sqrt(biased variance + eps) * weight + bias."""
    n = x.shape[1]
    for row in range(x.shape[0]):
        mean = _row_sum(x, row) / n
        std = np.sqrt(_row_squared_deviations(x, row, mean) / n + eps)
        for i in range(n):
            value = (np.float64(x[row, i]) - mean) / std
            out[row, i] = value * np.float64(weight[i]) + np.float64(bias[i])


@njit(cache=True, nogil=True, error_model="numpy")
def _row_max(x, row):
    """The largest value of x[row], NaN if it holds one (a row holding one gets NaN results all
    the same), by fg_acc_max: LLVM's maximum, which vectorises as a reduction. 16 running maxima
    kept in an array took 2.6 ms over 8192x512 float32, this 0.9 (a single compare-and-select
    maximum does not vectorise at all: 5.9 against 1.5 ms over 2048x2048)."""
    best = x[row, 0]
    for i in range(x.shape[1]):
        best = fg_acc_max(best, x[row, i])
    return best


# The exponentials' sums add up in x's dtype over chunks of CHUNK elements (one partial sum per
# vector lane: LLVM reassociates them), each chunk's sum in float64, as compiled kernels sum
# (codegen/kernel_source.py): a float64 add per element halves the loop's vector width (the
# sum of fg_exp over 8192x512 float32: 2.95 ms so, 1.57 in chunks). `zero` is 0 in x's dtype.
# (kernel_source.CHUNK's value, written here: these functions are cached on disk, and Numba's
# cache of a function does not see a change of a global it imports from another module.)
CHUNK = 1024


@njit(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc"})
def _exp_sum(x, row, shift, zero):
    """The sum of fg_exp(x[row] - shift), in chunks (see CHUNK), as a float64."""
    n, total = x.shape[1], 0.0
    for lo in range(0, n, CHUNK):
        part = zero
        for i in range(lo, min(n, lo + CHUNK)):
            part += fg_exp(x[row, i] - shift)
        total += np.float64(part)
    return total


@njit(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc"})
def _exp_sum_below_max(x, row, shift, zero):
    """_exp_sum where `shift` is the row's maximum: every x[row] - shift is <= 0 (or NaN), so
    fg_exp_small gives fg_exp's bits, cheaper."""
    n, total = x.shape[1], 0.0
    for lo in range(0, n, CHUNK):
        part = zero
        for i in range(lo, min(n, lo + CHUNK)):
            part += fg_exp_small(x[row, i] - shift)
        total += np.float64(part)
    return total


@njit(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc"})
def _exp_into_and_sum(x, row, shift, out, zero):
    """fg_exp(x[row] - shift) written into out[row], `shift` the row's maximum (fg_exp_small:
    see _exp_sum_below_max); returns their sum, in chunks (see CHUNK)."""
    n, total = x.shape[1], 0.0
    for lo in range(0, n, CHUNK):
        part = zero
        for i in range(lo, min(n, lo + CHUNK)):
            e = fg_exp_small(x[row, i] - shift)
            out[row, i] = e
            part += e
        total += np.float64(part)
    return total


@njit(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc"})
def _row_dot(a, b, row):
    """The sum in float64 of a[row] * b[row], each product rounded in the arrays' dtype."""
    total = 0.0
    for i in range(a.shape[1]):
        total += np.float64(a[row, i] * b[row, i])
    return total


@njit(cache=True, nogil=True, error_model="numpy")
def _in_dtype_of(x, value):
    """`value` (a float64) rounded to x's dtype."""
    cell = np.empty(1, x.dtype)
    cell[0] = value
    return cell[0]


@njit(cache=True, nogil=True, error_model="numpy")
def softmax_rows_into(x, out):
    """out[r] = exp(x[r] - max) * (1 / sum), each row of x (rows, n) as the reference computes it
    in x's dtype (the vectorised exp; the sum in chunks, see CHUNK, rounded once; its reciprocal
    rounded once, as torch's last-dim softmax)."""
    zero = _in_dtype_of(x, 0.0)
    one = _in_dtype_of(x, 1.0)
    for row in range(x.shape[0]):
        total = _exp_into_and_sum(x, row, _row_max(x, row), out, zero)
        scale = one / _in_dtype_of(x, total)
        for i in range(x.shape[1]):
            out[row, i] = out[row, i] * scale


@njit(cache=True, nogil=True, error_model="numpy")
def log_softmax_rows_into(x, out):
    """out[r] = (x[r] - max) - log(sum of exp(x[r] - max)), each row as the reference does it."""
    zero = _in_dtype_of(x, 0.0)
    for row in range(x.shape[0]):
        shift = _row_max(x, row)
        log_total = np.log(_in_dtype_of(x, _exp_sum_below_max(x, row, shift, zero)))
        for i in range(x.shape[1]):
            out[row, i] = (x[row, i] - shift) - log_total


@njit(cache=True, nogil=True, error_model="numpy")
def softmax_backward_rows_into(grad, y, out):
    """out[r] = (grad[r] - sum(grad[r] * y[r])) * y[r], as the reference (the sum in float64)."""
    for row in range(y.shape[0]):
        dot = _in_dtype_of(y, _row_dot(grad, y, row))
        for i in range(y.shape[1]):
            out[row, i] = (grad[row, i] - dot) * y[row, i]


@njit(cache=True, nogil=True, error_model="numpy")
def log_softmax_backward_rows_into(grad, y, out):
    """out[r] = grad[r] - exp(y[r]) * sum(grad[r]), as the reference (the sum in float64)."""
    for row in range(y.shape[0]):
        total = _in_dtype_of(y, _row_sum(grad, row))
        for i in range(y.shape[1]):
            out[row, i] = grad[row, i] - fg_exp(y[row, i]) * total


@njit(cache=True, nogil=True, error_model="numpy")
def logsumexp_rows_into(x, out):
    """out[r] = log(sum of exp(x[r] - m)) + m, m the row's maximum (0 where it is infinite), as
    the reference computes it (the vectorised exp; the sum in chunks, see CHUNK)."""
    zero = _in_dtype_of(x, 0.0)
    for row in range(x.shape[0]):
        shift = _row_max(x, row)
        if shift == np.inf or shift == -np.inf:
            shift = zero
        out[row] = np.log(_in_dtype_of(x, _exp_sum(x, row, shift, zero))) + shift


@njit(inline="always")
def _adam_element(pi, gi, mi, vi, previous, decay, weight, weight_minus_one, beta2, one_minus_beta2,
                  sqrt_bias_correction2, eps, neg_step_size, decoupled, maximize, l2, lerp_low, amsgrad):
    """One element's Adam/AdamW step: ir/ops/optim_update.py's _adam_ref operation for
    operation, each rounded in the dtype, its FMAs the hardware's (the reference's bits).
    Returns (param, exp_avg, exp_avg_sq, the second moment used: the running maximum's update
    under amsgrad, else exp_avg_sq)."""
    if decoupled:
        pi = pi * decay
    if maximize:
        gi = -gi
    if l2:
        gi = fg_fma(pi, decay, gi)
    diff = gi - mi
    mn = fg_fma(weight, diff, mi) if lerp_low else fg_fma(weight_minus_one, diff, gi)
    vn = fg_fma(one_minus_beta2 * gi, gi, vi * beta2)
    second = vn
    # (amsgrad: np.maximum's, the first NaN, else the larger, the first of equal ones)
    if amsgrad and (previous != previous or (vn == vn and previous >= vn)):
        second = previous
    denom = np.sqrt(second) / sqrt_bias_correction2 + eps
    return pi + (mn * neg_step_size) / denom, mn, vn, second


@njit(cache=True, nogil=True, error_model="numpy", **_NOALIAS)
def adam_update_in_place(p, g, m, v, mx, decay, weight, beta2, one_minus_beta2, sqrt_bias_correction2, eps,
                         neg_step_size, decoupled, maximize, l2, lerp_low, amsgrad):
    """_adam_element of each element over the arrays themselves (p, m, v and, under amsgrad,
    mx), which share no memory with each other or with g (the caller checks: `noalias`, so the
    loop vectorises with no run-time overlap test; written through the outputs' own arguments
    it ran scalar, 2.4x as long, where a written array was also read through another).
    `decay`: the decay factor (decoupled) or the L2 weight decay (l2); `mx`: unread without
    amsgrad."""
    weight_minus_one = weight - np.ones(1, p.dtype)[0]
    for i in range(p.shape[0]):
        previous = mx[i] if amsgrad else p[i]
        p[i], m[i], v[i], second = _adam_element(
            p[i], g[i], m[i], v[i], previous, decay, weight, weight_minus_one, beta2, one_minus_beta2,
            sqrt_bias_correction2, eps, neg_step_size, decoupled, maximize, l2, lerp_low, amsgrad)
        if amsgrad:
            mx[i] = second


@njit(inline="always")
def _sgd_element(pi, gi, bi, weight_decay, momentum, one_minus_dampening, nesterov_momentum, neg_lr,
                 maximize, decays, has_momentum, dampening, nesterov):
    """One element's SGD step: ir/ops/optim_update.py's _sgd_ref operation for operation, each
    rounded in the dtype, its FMAs the hardware's (the reference's bits). Returns (param,
    momentum buffer: `bi` unchanged without momentum)."""
    if maximize:
        gi = -gi
    if decays:
        gi = fg_fma(pi, weight_decay, gi)
    if not has_momentum:
        return fg_fma(gi, neg_lr, pi), bi
    b = bi * momentum
    b = fg_fma(gi, one_minus_dampening, b) if dampening else b + gi
    step = fg_fma(b, nesterov_momentum, gi) if nesterov else b
    return fg_fma(step, neg_lr, pi), b


@njit(cache=True, nogil=True, error_model="numpy", **_NOALIAS)
def sgd_update_in_place(p, g, buf, weight_decay, momentum, one_minus_dampening, nesterov_momentum, neg_lr,
                        maximize, decays, has_momentum, dampening, nesterov):
    """_sgd_element of each element over p and (with momentum) buf themselves, which share no
    memory with each other or with g (the caller checks; see adam_update_in_place)."""
    for i in range(p.shape[0]):
        bi = buf[i] if has_momentum else p[i]
        p[i], b = _sgd_element(p[i], g[i], bi, weight_decay, momentum, one_minus_dampening, nesterov_momentum,
                               neg_lr, maximize, decays, has_momentum, dampening, nesterov)
        if has_momentum:
            buf[i] = b
