"""Contiguous copies of strided operands, made before a kernel reads them.

Generated kernels index their operands by loop counters, and Numba compiles one
specialisation for C-contiguous arrays and one for any other layout ('A'). In the
'A' form every load computes its address from run-time strides, so LLVM does not
vectorise the loop at all, even where the innermost stride happens to be one
element: W1's chain on a [4096, 1024] float32 argument took 5.8 ms contiguous and
48-50 ms as `x.t()`, `x[:, ::2]` or `x[:, :1024]` of a wider array (measured
2026-11-30). Copying such an operand first costs one pass over it (2 ms for the
slices) and lets the kernel run its vectorised form.

A transposed operand (its contiguous axis is not the last one) is copied in tiles of
TILE_ROWS x TILE_COLUMNS: a plain row-by-row copy (NumPy's) touches a new cache line,
and for long rows a new page, on every element. Measured (2026-12-04, helpers paused;
float32 `x.t()` copies, median of 11) for x of [1024, 4096] / [4096, 1024] / [2048, 2048] /
[512, 8192] / [1000, 3000]: NumPy 24-30 ms on the first three; 8 x 8 tiles 10.2 / 9.6 /
8.0 / 5.2 / 3.1 ms; 64 x 32 tiles 4.4 / 4.5 / 4.4 / 4.6 / 2.2 ms (the plain copy of the
same 16 MiB: 1.1 ms). An earlier run had put 8 x 8 at 4.3-5.5 ms on the first shape; on
this run 64 x 32 was within 10% of the best of 20 tilings on every shape, 8 x 8 never.

On an AMD EPYC (2026-12-06, AVX2, 32 KiB 8-way L1) 64 x 32 tiles took 14-16 ms on the
first three shapes: a tile's 32 source rows lie a power of two apart, so all of them fall
into one 8-way cache set and evict each other. Tiles 8 elements wide keep to 8 rows: 128 x 8
took 7.0 / 4.9 / 7.3 / 3.6 ms there (256 x 8 and 512 x 8 the same within noise; 8 x 8 in
256 x 256 blocks 6.0 / 5.3 / 8.3 / 5.9). The copy is scalar code (loads and stores one
element at a time), so a large one runs in row blocks on the threads (ir/threaded.py).

Later on that machine (2026-12-07, one thread, min of 9): the inner loop over a tile's 8
columns with a constant trip count (the partial tile at the end of a row copied apart)
took 2.6-3.0 ms on the first four shapes with 128-1024 rows a tile, against 4.0-4.7 ms
for 128 x 8 bounded by `min(n1, t1 + 8)`; 16 or 32 columns took 4.4-9.7 ms. 256 rows:
2.6-2.8 ms on the first four, 2.1 on [1000, 3000].
"""
from __future__ import annotations

import numpy as np
from numba import njit

from fusegrad.ir import threaded
from fusegrad.ir.blocked_copy import blocked_copyto
from fusegrad.ir.buffers import POOL
from fusegrad.ir.torch_order_jit import numba_set_up

TILE_ROWS, TILE_COLUMNS = 256, 8     # (rows of the destination, elements along its contiguous axis)
# Until Numba is set up in the process, a copy in tiles is NumPy's (ir/blocked_copy.py: a
# [64, 1024, 64] permute took 29 ms in 256 x 256 blocks of its last two axes, each spanning
# the leading one, 6.7 in its tiles): the first call of `_tiled_copy` pays Numba's set-up
# (about 0.4 s: its typing registries, and the scipy import its BLAS check makes), which a
# first call on the reference executor (runtime/tiered.py) must not wait for. W4's first call
# took 0.44 s so, of which 0.4 were a [256, 784] weight gradient's row-major copy.
# Below this many elements a strided read costs less than the call and the copy.
MIN_COPY_ELEMENTS = 1 << 15


@njit(cache=True, nogil=True)
def _tiled_copy(src, dst):
    """dst[k, i, j] = src[k, i, j] in TILE_ROWS x TILE_COLUMNS tiles of (i, j); src's fast axis is i."""
    lead, n0, n1 = src.shape
    whole = n1 - n1 % TILE_COLUMNS
    for k in range(lead):
        for t0 in range(0, n0, TILE_ROWS):
            e0 = min(n0, t0 + TILE_ROWS)
            for t1 in range(0, whole, TILE_COLUMNS):
                for i0 in range(t0, e0):
                    # (a constant trip count, which LLVM unrolls: with `min(n1, t1 + 8)` as its
                    # bound the same tiles took 1.7x as long, module docstring)
                    for j in range(TILE_COLUMNS):
                        dst[k, i0, t1 + j] = src[k, i0, t1 + j]
            for i0 in range(t0, e0):
                for i1 in range(whole, n1):
                    dst[k, i0, i1] = src[k, i0, i1]


def _live_axes(array: np.ndarray) -> list:
    """The axes of size > 1 and stride not 0 (those a loop actually moves along)."""
    return [d for d in range(array.ndim) if array.shape[d] > 1 and array.strides[d] != 0]


def _fastest_axis(array: np.ndarray, live: list | None = None):
    """The live axis (see _live_axes) with the smallest stride, or None."""
    live = _live_axes(array) if live is None else live
    return min(live, key=lambda d: abs(array.strides[d])) if live else None


def _transposed_pair(array: np.ndarray):
    """(fastest axis, last axis) among the axes of size > 1 and stride not 0, when they differ
    (a loop in index order reads the array transposed); else None."""
    live = _live_axes(array)
    if len(live) < 2:
        return None
    fast = _fastest_axis(array, live)
    return None if fast == live[-1] else (fast, live[-1])


def reads_across_memory(array: np.ndarray) -> bool:
    """Is `array`'s fastest-varying axis (of size > 1, stride not 0) other than its last such
    axis? A loop in index order then reads it transposed."""
    return _transposed_pair(array) is not None


def needs_copy(array: np.ndarray) -> bool:
    """Would a kernel read `array` faster from a C-contiguous copy? (Large and not C-contiguous.)"""
    return not array.flags.c_contiguous and array.size >= MIN_COPY_ELEMENTS


def contiguous_copy(array: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of `array`, tiled where its fastest axis is not the last one."""
    # From the buffer pool: a fresh 16 MiB array costs ~2 ms of page faults each call.
    out = POOL.empty(array.shape, array.dtype)
    pair = _transposed_pair(array)
    if pair is None:
        np.copyto(out, array)                     # rows read in order: NumPy's copy is fine
        return out
    _copy_in_tiles(array, out, pair)
    return out


def copy_into(dst: np.ndarray, src: np.ndarray) -> None:
    """dst[...] = src, in tiles where the two are large and their fastest axes differ (a
    row-major kernel result given the column-major layout torch gives an elementwise op
    of a transpose): NumPy's copyto then writes one element a page (1024 x 1024 float32:
    7.7 ms against 2.4 tiled)."""
    if src.size >= MIN_COPY_ELEMENTS and src.shape == dst.shape:
        src_fast, dst_fast = _fastest_axis(src), _fastest_axis(dst)
        if src_fast is not None and dst_fast is not None and src_fast != dst_fast:
            _copy_in_tiles(src, dst, (src_fast, dst_fast))
            return
    np.copyto(dst, src)


def _copy_in_tiles(src: np.ndarray, dst: np.ndarray, pair: tuple) -> None:
    """dst[...] = src in TILE x TILE tiles of the two axes `pair`: (src's fast one, dst's)."""
    # Bring the pair to the end; every other axis stays in order in front.
    order = [d for d in range(src.ndim) if d not in pair] + list(pair)
    src, dst = src.transpose(order), dst.transpose(order)
    if not numba_set_up():
        blocked_copyto(dst, src)
        return
    if src.ndim == 2:
        rows = src.shape[0]
        if src.size >= threaded.MIN_ELEMENTS and rows >= 2 * TILE_ROWS and threaded.thread_count() > 1:
            # (row blocks of whole tiles, one per thread: each writes its own rows of dst)
            tiles = -(-rows // TILE_ROWS)
            threaded.by_rows(lambda lo, hi: _tiled_copy(src[None, lo * TILE_ROWS:hi * TILE_ROWS],
                                                        dst[None, lo * TILE_ROWS:hi * TILE_ROWS]), tiles)
            return
        _tiled_copy(src[None], dst[None])
    else:
        for index in np.ndindex(*src.shape[:-3]):
            slab_src, slab_dst = src[index], dst[index]
            lead = slab_src.shape[0]
            if slab_src.size >= threaded.MIN_ELEMENTS and lead >= 2 and threaded.thread_count() > 1:
                # (blocks of the leading axis, one per thread: a [64, 1024, 64] permute's copy
                # took 6.4 ms on one thread)
                threaded.by_rows(lambda lo, hi: _tiled_copy(slab_src[lo:hi], slab_dst[lo:hi]), lead)
            else:
                _tiled_copy(slab_src, slab_dst)

