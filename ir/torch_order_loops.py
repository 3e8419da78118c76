"""The Numba loops of ir/torch_order_jit.py (see there), in a module of their own: defining
a Numba function starts Numba's code generator, so this module is imported only when a
loop is about to run, after codegen/target.py has chosen the target features."""
from __future__ import annotations

import numpy as np
from numba import njit

ILP = 4                 # row_sum's interleaved partial sums
LEVELS = 4              # multi_row_sum's cascade levels


@njit(nogil=True, error_model="numpy", inline="always")
def _lane_square_sums(x, out, lanes):
    """out[r, j]: the squares of x[r, j], x[r, j + lanes]... over the whole steps, added in
    turn from 0 (each square rounded, then added)."""
    acc = np.empty(lanes, x.dtype)
    whole = x.shape[1] - x.shape[1] % lanes
    for r in range(x.shape[0]):
        acc[:] = 0
        for s in range(0, whole, lanes):
            for j in range(lanes):
                v = x[r, s + j]
                acc[j] += v * v
        for j in range(lanes):
            out[r, j] = acc[j]


# (entry points with literal lane counts, so that each lane loop is one vector)
@njit(cache=True, nogil=True, error_model="numpy")
def lane_square_sums_8(x, out):
    _lane_square_sums(x, out, 8)


@njit(cache=True, nogil=True, error_model="numpy")
def lane_square_sums_4(x, out):
    _lane_square_sums(x, out, 4)


# ---------------------------------------------------------------------- sums (SumKernel.cpp)


@njit(nogil=True, error_model="numpy", inline="always")
def _row_sum_into(x, r, start, width, size, acc, partial):
    """ATen's row_sum of row r of x from element `start`: `size` loads of `width` adjacent
    elements; the `width` lanes of its result into `partial[0]`. `acc` ((LEVELS, ILP, width)
    scratch) holds multi_row_sum's cascade over loads taken ILP at a time."""
    size_ilp = size // ILP
    power = 4
    if size_ilp > 2:                 # max(4, CeilLog2(size_ilp) / LEVELS)
        log2 = 0
        m = size_ilp - 1
        while m > 0:
            log2 += 1
            m >>= 1
        power = max(4, log2 // LEVELS)
    step = 1 << power
    mask = step - 1
    acc[:] = 0
    i = 0
    while i + step <= size_ilp:
        for _ in range(step):
            base = start + i * ILP * width
            for k in range(ILP):
                for lane in range(width):
                    acc[0, k, lane] += x[r, base + k * width + lane]
            i += 1
        for level in range(1, LEVELS):
            for k in range(ILP):
                for lane in range(width):
                    acc[level, k, lane] += acc[level - 1, k, lane]
                    acc[level - 1, k, lane] = 0
            if i & (mask << (level * power)):
                break
    while i < size_ilp:
        base = start + i * ILP * width
        for k in range(ILP):
            for lane in range(width):
                acc[0, k, lane] += x[r, base + k * width + lane]
        i += 1
    for level in range(1, LEVELS):
        for k in range(ILP):
            for lane in range(width):
                acc[0, k, lane] += acc[level, k, lane]
    for lane in range(width):
        partial[lane] = acc[0, 0, lane]
    for load in range(size_ilp * ILP, size):      # the loads past the last ILP group: to the first
        for lane in range(width):
            partial[lane] += x[r, start + load * width + lane]
    for k in range(1, ILP):
        for lane in range(width):
            partial[lane] += acc[0, k, lane]


@njit(cache=True, nogil=True, error_model="numpy")
def scalar_row_sums(x, out):
    """Each row summed one element a load (row_sum of width 1), then 0 added (a -0.0 sum is 0.0)."""
    acc = np.empty((LEVELS, ILP, 1), x.dtype)
    partial = np.empty(1, x.dtype)
    zero = np.zeros(1, x.dtype)[0]
    for r in range(x.shape[0]):
        _row_sum_into(x, r, 0, 1, x.shape[1], acc, partial)
        out[r] = partial[0] + zero


@njit(nogil=True, error_model="numpy", inline="always")
def _vector_row_sums(x, out, lanes):
    """vectorized_inner_sum: row_sum over the whole vectors, then from 0 the tail elements and
    then the lanes, in turn."""
    acc = np.empty((LEVELS, ILP, lanes), x.dtype)
    partial = np.empty(lanes, x.dtype)
    zero = np.zeros(1, x.dtype)[0]
    n = x.shape[1]
    loads = n // lanes
    for r in range(x.shape[0]):
        _row_sum_into(x, r, 0, lanes, loads, acc, partial)
        total = zero
        for k in range(loads * lanes, n):
            total += x[r, k]
        for lane in range(lanes):
            total += partial[lane]
        out[r] = total


@njit(cache=True, nogil=True, error_model="numpy")
def vector_row_sums_8(x, out):
    _vector_row_sums(x, out, 8)


@njit(cache=True, nogil=True, error_model="numpy")
def vector_row_sums_4(x, out):
    _vector_row_sums(x, out, 4)


# ---------------------------------------------------------------------- running sums
@njit(cache=True, nogil=True, error_model="numpy")
def running_sums(x, out):
    for r in range(x.shape[0]):
        acc = x[r, 0]
        for k in range(1, x.shape[1]):
            acc += x[r, k]
        out[r] = acc
