"""torch's summation orders for long rows, compiled by Numba: sums and norms.

ir/ops/reduce.py reproduces torch's CPU sums bit for bit in NumPy (`_torch_row_sums`: the
cascade of ATen's SumKernel.cpp, row_sum over multi_row_sum) and its 2-norm
(`_torch_order_norm`). NumPy can only emulate the cascade with reductions over short axes:
an eager `x.sum()` of 4M float32 elements took 4.7 ms, torch's 0.3. `row_sums` here runs
the cascade itself as ATen writes it, each addition in ATen's order (tests compare it with
the NumPy emulation, which tests compare with torch).

`column_sums` sums columns (a batch dim summed away: a bias gradient, mean(0)) as
vectorized_outer_sum does: multi_row_sum down the rows, its accumulators one row wide, so
each addition is a vector along the row (a (512, 256) float32 took 81 us in NumPy, 32).

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

As ir/fma_jit.py's loops, the loops live in their own module (ir/torch_order_loops.py),
imported on first use: making a Numba function starts Numba's code generator, whose target
features codegen/target.py sets when fusegrad is imported (ir/ is imported before it: an
import here had kernels compiled for 256-bit vectors, W3 1.86 -> 2.45 ms). Each loop
compiles on its first call and is cached on disk. `worth_compiling` decides when a call
uses them: the first Numba call of a process costs about 0.4 s (its typing context's
set-up, even with the loop cached), which a compiled program has already paid (its
kernels) and an eager one pays only once it has summed many long rows (as ir/fma.py's
JIT_AFTER).
"""
from __future__ import annotations

import numpy as np

from . import threaded

# Sums of this many elements (per result times results) take the compiled loops where Numba
# is set up in the process: the NumPy emulation costs 15-60 us a call however short (a bias
# gradient of (64, 128) took 16 us, its row sums 43), a loop's call a few. (Below 512 one row
# is _short_torch_sum's few NumPy calls; a row of 512-1023 float32 took 21-25 us emulated,
# 7 in the loop.)
SHORT_FROM = 1 << 9
# An eager process that has not set Numba up takes them only for long sums (JIT_FROM elements),
# from its JIT_AFTER-th: setting Numba up costs about 0.3 s a process (1.5 s more the first
# time on a machine, to compile the loops, then cached on disk), which 64 long sums repay
# (4 ms each on 4M float32) and short ones, saving microseconds, do not.
JIT_FROM = 1 << 15
JIT_AFTER = 64
_LONG_CALLS = [0]
_READY: list = []


def numba_set_up() -> bool:
    """Whether this process has compiled or loaded a Numba function (a kernel ran): its typing
    context then holds its registries, whose set-up is most of a first call's cost, and a
    further loop costs its own load only. (Read from Numba's internals, without creating
    anything; False where they differ: calls are counted instead.)"""
    if _READY:
        return True
    try:
        from numba.core.registry import cpu_target
        typing = vars(cpu_target).get("_toplevel_typing_context")
        ready = typing is not None and bool(vars(typing).get("_registries"))
    except Exception:
        return False
    if ready:
        _READY.append(True)         # (set up once, for the rest of the process)
    return ready


def worth_compiling(x: np.ndarray) -> bool:
    """Whether the sums of `x` (2-d) take the loops here: it is C-contiguous float32 or
    float64 of at least SHORT_FROM elements, and Numba is set up in the process, or it is
    long (JIT_FROM) and this is the JIT_AFTER-th long call."""
    if x.size < SHORT_FROM or x.dtype.char not in "fd" or not x.flags.c_contiguous:
        return False
    if numba_set_up():
        return True
    if x.size < JIT_FROM:
        return False
    _LONG_CALLS[0] += 1
    return _LONG_CALLS[0] >= JIT_AFTER


# A reference computation over this many elements or more runs in its Numba loop
# (ir/reference_loops.py: erf, cumsum, scatter-add) where that pays (loop_pays).
LOOP_FROM = 1 << 12
# A purely eager process sets Numba up for those loops, and for the eager forms codegen lends
# (codegen/eager_loops.py), once their NumPy forms have covered this many elements (a fraction
# of a second of them).
LOOPS_AFTER_ELEMENTS = 1 << 20
_LOOP_ELEMENTS = [0]


def loop_pays(size: int) -> bool:
    """Whether a computation over `size` elements runs in its Numba loop (the reference's, of
    LOOP_FROM elements or more: the caller checks; or an eager form's): where Numba is set up,
    or once a purely eager process's such calls have covered LOOPS_AFTER_ELEMENTS."""
    if numba_set_up():
        return True
    _LOOP_ELEMENTS[0] += size
    return _LOOP_ELEMENTS[0] >= LOOPS_AFTER_ELEMENTS


def by_row_blocks(loop, rows: np.ndarray, *args) -> np.ndarray:
    """`loop(rows[lo:hi], out[lo:hi], *args)` over blocks of `rows` (on threads at once where
    large: in_blocks); returns `out`, of rows' shape and dtype. (One row per element for a
    1-d array.)"""
    return sliced_blocks(loop, (rows,), np.empty(rows.shape, rows.dtype), *args)


def sliced_blocks(loop, operands: tuple, out: np.ndarray, *args) -> np.ndarray:
    """`loop(*(a[lo:hi] for a in operands), out[lo:hi], *args)` over blocks of the rows of
    `out` and of the operands (as long as it), on threads at once where large; returns `out`."""
    in_blocks(lambda lo, hi: loop(*[a[lo:hi] for a in operands], out[lo:hi], *args), len(out), out.size)
    return out


def lane_square_sums(x: np.ndarray) -> np.ndarray:
    """(rows, lanes) array: lane j of row r adds x[r, j + k * lanes] ** 2 over the whole steps k
    in turn, from 0 (`x`: a 2-d C-contiguous float32 array, 8 lanes, or float64, 4 lanes)."""
    from . import torch_order_loops as loops
    if x.dtype == np.float32:
        out = np.empty((x.shape[0], 8), np.float32)
        loops.lane_square_sums_8(x, out)
    else:
        out = np.empty((x.shape[0], 4), np.float64)
        loops.lane_square_sums_4(x, out)
    return out


def row_sums(rows: np.ndarray, lanes: int, strided: bool) -> np.ndarray:
    """The sum of each row of `rows` (a C-contiguous (count, n) float32 or float64 array) in
    torch's order for one task: `_torch_row_sums` without its split among threads, which
    the caller makes (`lanes`: elements per 256-bit vector; `strided`: the row's elements
    were not adjacent in memory, summed one load at a time)."""
    from . import torch_order_loops as loops
    out = np.empty(rows.shape[0], rows.dtype)
    if strided or rows.shape[1] < lanes:
        loop = loops.scalar_row_sums
    else:
        loop = loops.vector_row_sums_8 if lanes == 8 else loops.vector_row_sums_4
    in_blocks(lambda lo, hi: loop(rows[lo:hi], out[lo:hi]), rows.shape[0], rows.size)
    return out


def in_blocks(block, count: int, size: int) -> None:
    """`block(lo, hi)` over [0, count): in blocks on threads at once where the work (`size`
    elements) is large and threads are allowed, else in one call. Each row's (or chunk's)
    sum is the same wherever it runs: the loops release the GIL, and torch splits its rows
    among its threads too."""
    if count > 1 and size >= threaded.MIN_ELEMENTS and threaded.may_split():
        threaded.by_rows(block, count)
    else:
        block(0, count)


def chunk_sums(row: np.ndarray, chunk: int, sums) -> list:
    """`sums` (row_sums with its lanes and flag given, or running_sums) of each `chunk`
    elements of `row` (a C-contiguous (1, n) array): the parts of a long full sum that
    torch's threads add up, computed on threads at once where allowed."""
    starts = range(0, row.shape[1], chunk)
    parts = [None] * len(starts)

    def block(lo, hi):
        for k in range(lo, hi):
            parts[k] = sums(row[:, starts[k]:starts[k] + chunk])
    in_blocks(block, len(parts), row.size)
    return parts


def column_sums(x: np.ndarray, chunks: list, lanes: int) -> np.ndarray:
    """The sum of each column of `x` (a C-contiguous 2-d float32 or float64 array) in torch's
    order: each (begin, end) of `chunks` (the columns one of torch's threads sums; together
    all the columns) as _torch_column_chunk says (`lanes`: elements per 256-bit vector)."""
    from . import torch_order_loops as loops
    out = np.empty(x.shape[1], x.dtype)

    def block(lo, hi):
        for begin, end in chunks[lo:hi]:
            loops.column_sums(x, begin, end, lanes, out[begin:end])
    in_blocks(block, len(chunks), x.size)
    return out


def running_sums(rows: np.ndarray) -> np.ndarray:
    """Each row of `rows` (a 2-d float32 or float64 array, rows of at least one element) added
    up in element order: np.add.accumulate(rows, axis=1)[:, -1], without its partial sums
    (binary_kernel_reduce's order: torch's norms other than the trailing 2-norm)."""
    from . import torch_order_loops as loops
    out = np.empty(rows.shape[0], rows.dtype)
    in_blocks(lambda lo, hi: loops.running_sums(rows[lo:hi], out[lo:hi]), rows.shape[0], rows.size)
    return out
