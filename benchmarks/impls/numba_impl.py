"""A hand-fused Numba loop for W1: one pass computes each element's value contribution and gradient.

It uses Numba's default math (`math.exp`, `np.tanh`: scalar libm calls), which
is what a plain generated kernel gets; `parallel=True` splits the loop over
NUMBA_NUM_THREADS threads like the other frameworks' two threads.  Only W1 has
a hand-fused loop: the other workloads show as "-" in this column.
"""
import math

import numba
import numpy as np

_ONE = np.float32(1)
_TWO = np.float32(2)


@numba.njit(parallel=True, error_model="numpy", cache=False)
def _w1_fused(x, grad):
    total = 0.0  # float64 partial sums per thread: accurate over 4M float32 terms
    for i in numba.prange(x.size):
        xi = x[i]
        t = np.tanh(xi)
        s = _ONE / (_ONE + math.exp(-xi))
        e = math.exp(-xi * xi)
        total += t * s + e
        grad[i] = (_ONE - t * t) * s + t * s * (_ONE - s) - _TWO * xi * e
    return total


def w1(data):
    x = data["x"]

    def run():
        grad = np.empty_like(x)
        return np.float32(_w1_fused(x, grad)), grad
    return run
