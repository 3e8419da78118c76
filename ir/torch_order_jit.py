"""torch's summation orders for long rows, compiled by Numba: sums and norms.

ir/ops/reduce.py reproduces torch's CPU sums bit for bit in NumPy (`_torch_row_sums`: the
cascade of ATen's SumKernel.cpp, row_sum over multi_row_sum) and its 2-norm
(`_torch_order_norm`). NumPy can only emulate the cascade with reductions over short axes:
an eager `x.sum()` of 4M float32 elements took 4.7 ms, torch's 0.3. `row_sums` here runs
the cascade itself as ATen writes it, each addition in ATen's order (tests compare it with
the NumPy emulation, which tests compare with torch).

`running_sums` adds each row in element order (binary_kernel_reduce's, the norms other
than the trailing 2-norm), as np.add.accumulate did, without writing every partial sum:
the 1-norm of each row of a [4096, 1024] float32 took 16 ms that way, 3 ms so.

For the 2-norm over trailing dims (`_torch_order_norm`): per
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
it has summed many long rows (as ir/fma.py's JIT_AFTER).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from . import threaded

# Rows at least this long (elements per result times results) take the compiled loop.
JIT_FROM = 1 << 15
# An eager process takes them from its JIT_AFTER-th long row (or at once if Numba is set up):
# setting Numba up costs about 0.3 s a process (1.5 s more the first time on a machine, to
# compile the loops, then cached on disk), which 64 long sums repay (4 ms each on 4M float32).
JIT_AFTER = 64
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


# ---------------------------------------------------------------------- sums (SumKernel.cpp)
ILP = 4                 # row_sum's interleaved partial sums
LEVELS = 4              # multi_row_sum's cascade levels


def row_sums(rows: np.ndarray, lanes: int, strided: bool) -> np.ndarray:
    """The sum of each row of `rows` (a C-contiguous (count, n) float32 or float64 array) in
    torch's order for one task: `_torch_row_sums` without its split among threads, which
    the caller makes (`lanes`: elements per 256-bit vector; `strided`: the row's elements
    were not adjacent in memory, summed one load at a time)."""
    out = np.empty(rows.shape[0], rows.dtype)
    if strided or rows.shape[1] < lanes:
        loop = _scalar_row_sums
    else:
        loop = _vector_row_sums_8 if lanes == 8 else _vector_row_sums_4
    if rows.shape[0] > 1 and rows.size >= threaded.MIN_ELEMENTS and threaded.may_split():
        # (each row's sum is the same wherever it runs: blocks of rows on threads, as the
        # loops release the GIL, where torch splits its rows among its threads too)
        threaded.by_rows(lambda lo, hi: loop(rows[lo:hi], out[lo:hi]), rows.shape[0])
    else:
        loop(rows, out)
    return out


def chunk_sums(row: np.ndarray, chunk: int, sums) -> list:
    """`sums` (row_sums with its lanes and flag given, or running_sums) of each `chunk`
    elements of `row` (a C-contiguous (1, n) array): the parts of a long full sum that
    torch's threads add up, computed on threads at once where allowed."""
    starts = range(0, row.shape[1], chunk)
    parts = [None] * len(starts)

    def block(lo, hi):
        for k in range(lo, hi):
            parts[k] = sums(row[:, starts[k]:starts[k] + chunk])
    if len(parts) > 1 and row.size >= threaded.MIN_ELEMENTS and threaded.may_split():
        threaded.by_rows(block, len(parts))
    else:
        block(0, len(parts))
    return parts


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
def _scalar_row_sums(x, out):
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
def _vector_row_sums_8(x, out):
    _vector_row_sums(x, out, 8)


@njit(cache=True, nogil=True, error_model="numpy")
def _vector_row_sums_4(x, out):
    _vector_row_sums(x, out, 4)


# ---------------------------------------------------------------------- running sums
def running_sums(rows: np.ndarray) -> np.ndarray:
    """Each row of `rows` (a 2-d float32 or float64 array, rows of at least one element) added
    up in element order: np.add.accumulate(rows, axis=1)[:, -1], without its partial sums
    (binary_kernel_reduce's order: torch's norms other than the trailing 2-norm)."""
    out = np.empty(rows.shape[0], rows.dtype)
    if rows.shape[0] > 1 and rows.size >= threaded.MIN_ELEMENTS and threaded.may_split():
        threaded.by_rows(lambda lo, hi: _running_sums(rows[lo:hi], out[lo:hi]), rows.shape[0])
    else:
        _running_sums(rows, out)
    return out


@njit(cache=True, nogil=True, error_model="numpy")
def _running_sums(x, out):
    for r in range(x.shape[0]):
        acc = x[r, 0]
        for k in range(1, x.shape[1]):
            acc += x[r, k]
        out[r] = acc
