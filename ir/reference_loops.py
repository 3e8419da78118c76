"""Reference computations NumPy does slowly, as Numba loops for large arrays (the policy:
torch_order_jit.loop_pays): erf, cumsum, scatter-add (np.add.at's order) and max pooling.

erf: the reference erf of float32 values (ir/ops/erf_gelu.py's erf64: Cody's three ranges in
float64) as a loop. NumPy evaluates every range's polynomial for every element (about 60
float64 passes: a reference erf or exact GELU of 1M float32 elements took ~0.2 s). Here each
element evaluates its own range, with the same float64 operations in the same order; the
exponentials are libm's (NumPy's may differ from them in the last bit of a double, which
float32 results never see). (Eager execution runs codegen's faster forms instead:
codegen/eager_loops.py.)

cumsum: torch's running sum of each row in double, each result rounded once (NumPy's
float64 cumsum of a float32 row converts it first: 40 ms for 4M elements, torch 5).

In a module of its own, imported on first use, as ir/torch_order_loops.py (see there:
defining a Numba function starts Numba's code generator)."""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .ops.erf_gelu import _A, _B, _C, _D, _ONE_OVER_SQRT_PI, _P, _Q


@njit(nogil=True, error_model="numpy", inline="always")
def _erf(x):
    """erf64's value for one float64 `x` (see erf64 for the ranges)."""
    if x != x:
        return x
    y = abs(x)
    if y <= 0.46875:
        xsq = x * x
        num, den = _A[4] * xsq, xsq
        for k in range(3):
            num, den = (num + _A[k]) * xsq, (den + _B[k]) * xsq
        return x * (num + _A[3]) / (den + _B[3])
    if y >= 27.0:
        return math.copysign(1.0, x)
    if y <= 4.0:
        num, den = _C[8] * y, y
        for k in range(7):
            num, den = (num + _C[k]) * y, (den + _D[k]) * y
        tail = (num + _C[7]) / (den + _D[7])
    else:
        inverse = 1.0 / (y * y)
        num, den = _P[5] * inverse, inverse
        for k in range(4):
            num, den = (num + _P[k]) * inverse, (den + _Q[k]) * inverse
        tail = (_ONE_OVER_SQRT_PI - inverse * (num + _P[4]) / (den + _Q[4])) / y
    x16 = math.trunc(y * 16.0) / 16.0
    erfc = math.exp(-x16 * x16) * math.exp(-(y - x16) * (y + x16)) * tail
    return math.copysign(1.0 - erfc, x)


@njit(cache=True, nogil=True, error_model="numpy")
def erf_into(x, out):
    """out[i] = erf(x[i]) rounded once to out's dtype (1-d arrays of one length)."""
    for i in range(x.shape[0]):
        out[i] = _erf(np.float64(x[i]))


@njit(cache=True, nogil=True, error_model="numpy")
def running_sums_into(x, out, reverse):
    """out[r, i]: the sum of x[r, :i + 1] (x[r, i:] when `reverse`) added in turn in float64
    from +0, rounded once to out's dtype (2-d C-contiguous arrays of one shape)."""
    n = x.shape[1]
    for r in range(x.shape[0]):
        acc = 0.0
        if reverse:
            for i in range(n - 1, -1, -1):
                acc += np.float64(x[r, i])
                out[r, i] = acc
        else:
            for i in range(n):
                acc += np.float64(x[r, i])
                out[r, i] = acc


@njit(cache=True, nogil=True, error_model="numpy")
def add_at_flat(out, targets, values):
    """out[targets[i]] += values[i] for each i in turn (1-d arrays): np.add.at's additions in
    its order, so its bits (torch's scatter_add_ on the CPU adds in the same order)."""
    for i in range(targets.shape[0]):
        out[targets[i]] += values[i]


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _inside(origin, step, kernel, size):
    """The kernel offsets [lo, hi) whose position origin + offset * step lies in [0, size)."""
    lo = 0
    if origin < 0:
        lo = (-origin + step - 1) // step
    hi = kernel
    if origin + (kernel - 1) * step >= size:
        hi = (size - origin + step - 1) // step
    return lo, max(lo, hi)


@njit(cache=True, nogil=True, error_model="numpy")
def max_pool_planes(x, kernel, stride, padding, dilation, out, values, indices):
    """torch's CPU max pool of each plane of x (planes, D, H, W) into values and flat
    indices (planes, *out): from -inf at the window's first position inside the plane, each
    greater value, and each NaN (so the last NaN wins), replaces the maximum in the window's
    order."""
    planes, depth, height, width = x.shape
    for p in range(planes):
        for od in range(out[0]):
            d0 = od * stride[0] - padding[0]
            a_lo, a_hi = _inside(d0, dilation[0], kernel[0], depth)
            for oh in range(out[1]):
                h0 = oh * stride[1] - padding[1]
                b_lo, b_hi = _inside(h0, dilation[1], kernel[1], height)
                for ow in range(out[2]):
                    w0 = ow * stride[2] - padding[2]
                    c_lo, c_hi = _inside(w0, dilation[2], kernel[2], width)
                    best_index = ((d0 + a_lo * dilation[0]) * height + h0 + b_lo * dilation[1]) * width \
                        + w0 + c_lo * dilation[2]
                    best = -np.inf
                    for a in range(a_lo, a_hi):
                        d = d0 + a * dilation[0]
                        for b in range(b_lo, b_hi):
                            h = h0 + b * dilation[1]
                            row = (d * height + h) * width
                            for c in range(c_lo, c_hi):
                                w = w0 + c * dilation[2]
                                v = x[p, d, h, w]
                                if v > best or v != v:
                                    best = v
                                    best_index = row + w
                    values[p, od, oh, ow] = best
                    indices[p, od, oh, ow] = best_index
