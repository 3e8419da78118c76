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
def _level_power(loads):
    """multi_row_sum's level_power for `loads` loads: max(4, CeilLog2(loads) / LEVELS)."""
    if loads <= 2:
        return 4
    log2 = 0
    m = loads - 1
    while m > 0:
        log2 += 1
        m >>= 1
    return max(4, log2 // LEVELS)


@njit(nogil=True, error_model="numpy", inline="always")
def _cascade_down(x, start, width, loads, ilp, acc):
    """multi_row_sum down the rows of x's columns [start, start + width): load i is rows
    i * ilp ... i * ilp + ilp - 1, partial sum k of column c is acc[0, k, c] at the end (acc:
    (LEVELS, ilp, width) scratch). The inner loops run along 1-d slices, which LLVM
    vectorises (indexing x[row, start + c] in the loop kept it scalar: 4x slower).
    _row_sum_into makes the same cascade along a row; a row could be summed here, as the
    columns of a (loads // ILP, ILP * lanes) view, with the same bits, but its accumulators,
    32 wide and reloaded each step, ran no faster on long rows and 2.5x slower on rows of
    128 elements (the per-row set-up), so rows keep their own loop."""
    power = _level_power(loads)
    step = 1 << power
    mask = step - 1
    acc[:] = 0
    i = 0
    while i + step <= loads:
        for _ in range(step):
            for k in range(ilp):
                _add_into(acc[0, k], x[i * ilp + k, start:start + width])
            i += 1
        for level in range(1, LEVELS):
            for k in range(ilp):
                _add_into(acc[level, k], acc[level - 1, k])
                acc[level - 1, k] = 0
            if i & (mask << (level * power)):
                break
    while i < loads:
        for k in range(ilp):
            _add_into(acc[0, k], x[i * ilp + k, start:start + width])
        i += 1
    for level in range(1, LEVELS):
        for k in range(ilp):
            _add_into(acc[0, k], acc[level, k])


@njit(nogil=True, error_model="numpy", inline="always")
def _add_into(total, values):
    """total[c] += values[c] for each c (1-d arrays of one length)."""
    for c in range(total.shape[0]):
        total[c] += values[c]


@njit(nogil=True, error_model="numpy", inline="always")
def _row_sum_into(x, r, start, width, size, acc, partial):
    """ATen's row_sum of row r of x from element `start`: `size` loads of `width` adjacent
    elements; the `width` lanes of its result into `partial[0]`. `acc` ((LEVELS, ILP, width)
    scratch) holds multi_row_sum's cascade over loads taken ILP at a time."""
    size_ilp = size // ILP
    power = _level_power(size_ilp)
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


# ---------------------------------------------------------------------- column sums
@njit(cache=True, nogil=True, error_model="numpy")
def column_sums(x, start, stop, lanes, out):
    """The sums of x's columns [start, stop) into out[0 : stop - start], as one of torch's
    threads sums them (vectorized_outer_sum): the columns in whole groups (of four vectors
    of `lanes` columns, or of four columns when fewer than `lanes`) by multi_row_sum down
    the rows; each column left over by row_sum (four interleaved partial sums of the rows,
    the rows past the last four added to the first, then the other three to it); 0 added
    last (a sum of -0.0s is 0.0)."""
    rows = x.shape[0]
    group = ILP * lanes if stop - start >= lanes else ILP
    grouped = (stop - start) // group * group
    zero = np.zeros(1, x.dtype)[0]
    if grouped:
        acc = np.empty((LEVELS, 1, grouped), x.dtype)
        _cascade_down(x, start, grouped, rows, 1, acc)
        for c in range(grouped):
            out[c] = acc[0, 0, c] + zero
    rest = stop - start - grouped
    if rest:
        acc = np.empty((LEVELS, ILP, rest), x.dtype)
        loads = rows // ILP
        _cascade_down(x, start + grouped, rest, loads, ILP, acc)
        for row in range(loads * ILP, rows):
            _add_into(acc[0, 0], x[row, start + grouped:stop])
        for c in range(rest):
            total = acc[0, 0, c]
            for k in range(1, ILP):
                total += acc[0, k, c]
            out[grouped + c] = total + zero


# ---------------------------------------------------------------------- running sums
@njit(cache=True, nogil=True, error_model="numpy")
def running_sums(x, out):
    for r in range(x.shape[0]):
        acc = x[r, 0]
        for k in range(1, x.shape[1]):
            acc += x[r, k]
        out[r] = acc
