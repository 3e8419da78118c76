"""torch's lane sums of squares (its 2-norm over trailing dims), compiled by Numba.

ir/ops/reduce.py's `_torch_order_norm` reproduces torch's float32 2-norm bit for bit: per
row, lane j (of 8 float32 or 4 float64 lanes, a 256-bit vector) adds the squares of
elements j, j + lanes, j + 2 * lanes... in turn. NumPy does that as a reduction over the
steps of a transposed view, which for one long row is a loop of 8-element additions: the
norm of 2M float32 elements took 4.6-5 ms that way, 0.5 ms in these loops, which make the
same additions in the same order (each square rounded, then added: no contraction into a
fused multiply-add without fastmath), in one pass.

As ir/fma_jit.py's loops: importing this module compiles nothing; each loop compiles on its
first call and is cached on disk. `worth_compiling` decides when a call uses them: the first
Numba call of a process costs about 0.4 s (its target's set-up, even with the loop cached),
which a compiled program has already paid (its kernels) and an eager one pays only once
its norms have been long a few times.
"""
from __future__ import annotations

import numpy as np
from numba import njit

# Rows at least this long (elements per result times results) take the compiled loop.
JIT_FROM = 1 << 15
# An eager process takes it from its JIT_AFTER-th such norm (or at once if Numba is set up).
JIT_AFTER = 8
_LONG_CALLS = [0]


def _numba_ready() -> bool:
    """Whether this process has set up Numba's CPU target (a kernel ran): a further compiled
    loop then costs its own load only. (Read from Numba's registry; False if that changes.)"""
    try:
        from numba.core.registry import cpu_target
        return "_toplevel_target_context" in vars(cpu_target)
    except Exception:               # (another Numba's internals: count calls instead)
        return False


def worth_compiling(x: np.ndarray) -> bool:
    """Whether the lane sums of `x` (2-d, C-contiguous float32 or float64) take the loops."""
    if x.size < JIT_FROM or x.dtype.char not in "fd" or not x.flags.c_contiguous:
        return False
    _LONG_CALLS[0] += 1
    return _LONG_CALLS[0] >= JIT_AFTER or _numba_ready()


def lane_square_sums(x: np.ndarray) -> np.ndarray:
    """(rows, lanes) array: lane j of row r adds x[r, j + k * lanes] ** 2 over the whole steps k
    in turn, from 0 (`x`: a 2-d C-contiguous float32 array, 8 lanes, or float64, 4 lanes)."""
    if x.dtype == np.float32:
        out = np.empty((x.shape[0], 8), np.float32)
        _lane_square_sums_8(x, out)
    else:
        out = np.empty((x.shape[0], 4), np.float64)
        _lane_square_sums_4(x, out)
    return out


# (two loops with literal lane counts, so that each lane loop is one vector)
@njit(cache=True, nogil=True, error_model="numpy")
def _lane_square_sums_8(x, out):
    rows, count = x.shape
    whole = count - count % 8
    for r in range(rows):
        acc = np.zeros(8, x.dtype)
        for s in range(0, whole, 8):
            for j in range(8):
                v = x[r, s + j]
                acc[j] += v * v
        for j in range(8):
            out[r, j] = acc[j]


@njit(cache=True, nogil=True, error_model="numpy")
def _lane_square_sums_4(x, out):
    rows, count = x.shape
    whole = count - count % 4
    for r in range(rows):
        acc = np.zeros(4, x.dtype)
        for s in range(0, whole, 4):
            for j in range(4):
                v = x[r, s + j]
                acc[j] += v * v
        for j in range(4):
            out[r, j] = acc[j]
