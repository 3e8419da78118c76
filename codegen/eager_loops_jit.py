"""The Numba loops of codegen/eager_loops.py, in a module of their own, imported on first use
(defining a Numba function starts Numba's code generator; see ir/reference_loops.py)."""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .vmath import fg_erf, fg_exp, fg_expm1

_HALF = np.float32(0.5)
_ONE = np.float32(1.0)
_MINUS_HALF = np.float32(-0.5)
# the float32 constants of gelu's and gelu_backward's decompositions (ir/ops/erf_gelu.py):
# x * sqrt(1/2), and 1/sqrt(2 pi), pdf's factor
_SQRT1_2 = np.float32(1 / math.sqrt(2.0))
_ALPHA = np.float32(1 / math.sqrt(2 * math.pi))


@njit(cache=True, nogil=True, error_model="numpy")
def erf_into(x, out):
    """out[i] = fg_erf(x[i]) (1-d float32 arrays of one length)."""
    for i in range(x.shape[0]):
        out[i] = fg_erf(x[i])


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
    """out[i] = x[i] where x[i] > 0, else fg_expm1(x[i]) * alpha (a compiled kernel's bits)."""
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = v if v > 0 else fg_expm1(v) * alpha


@njit(cache=True, nogil=True, error_model="numpy")
def silu_into(x, out):
    """out[i] = x[i] / (fg_exp(-x[i]) + 1) (a compiled kernel's bits)."""
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = v / (fg_exp(-v) + _ONE)


@njit(cache=True, nogil=True, error_model="numpy")
def elu_backward_into(grad, x, out, alpha):
    """out[i] = (grad[i] * alpha) * fg_exp(x[i]) where x[i] <= 0, else grad[i] (elu's gradient
    from its input, a compiled kernel's bits)."""
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = (grad[i] * alpha) * fg_exp(v) if v <= 0 else grad[i]
