"""A transposing copy in tiles, by NumPy.

`np.copyto(out, array)` walks `out` in its memory order; where `array`'s fastest dim is another
one (a transpose), every element read touches a new cache line, and for long rows a new page: a
4096x1024 float32 transpose took 29 ms. Copied in square tiles over the two fastest dims, it
reads and writes whole cache lines: 4.5 ms (a [64, 1024, 64] permute's: 28 -> 6.7 ms). Eager
results laid out as torch's (tracer/layout.py) and a compiled program's copies made before
Numba is set up in the process (codegen/layout_copy.py) use it; a compiled call's copies
otherwise run in Numba tiles on the threads.
"""
from __future__ import annotations

import numpy as np

# Square tiles of this many elements a side: a 4096x1024 float32 transpose took 29 ms as one
# np.copyto (NumPy walks the destination in order and reads the source one element a cache
# line), 4.5 ms in 64x64 tiles; 32 and 128 a side are slower.
_TILE = 64
_TILED_MIN_ELEMENTS = 1 << 15


def _fastest_dim(array: np.ndarray) -> int | None:
    """The dim of `array` with the smallest nonzero stride among dims longer than 1."""
    dims = [d for d in range(array.ndim) if array.shape[d] > 1 and array.strides[d]]
    return min(dims, key=lambda d: abs(array.strides[d])) if dims else None


def blocked_copyto(out: np.ndarray, array: np.ndarray) -> None:
    """np.copyto(out, array), in tiles over the two arrays' fastest dims where these differ on
    a large array of the same shape and dtype: a transposing copy then reads and writes whole
    cache lines."""
    if array.size < _TILED_MIN_ELEMENTS or array.shape != out.shape or array.dtype != out.dtype:
        np.copyto(out, array)
        return
    d_out, d_in = _fastest_dim(out), _fastest_dim(array)
    if d_out is None or d_in is None or d_out == d_in:
        np.copyto(out, array)
        return
    index = [slice(None)] * array.ndim
    for i in range(0, array.shape[d_out], _TILE):
        index[d_out] = slice(i, i + _TILE)
        for j in range(0, array.shape[d_in], _TILE):
            index[d_in] = slice(j, j + _TILE)
            tile = tuple(index)
            out[tile] = array[tile]
