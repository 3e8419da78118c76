"""The order in which torch's TensorIterator lays out a result from its operands' strides.

A result torch allocates for an op that iterates its operands (elementwise ops, advanced
indexing) is dense, with its dims ordered by the operands' strides: torch's
`TensorIteratorBase::reorder_dimensions`. The tracer uses it for eager results and for the
layout a compiled call's outputs take; ops declare which operand strides it sees.
"""
from __future__ import annotations

import numpy as np


def iteration_order(shape: tuple, operand_strides: list) -> list:
    """The dims of a result of `shape`, slowest first. `operand_strides`: for each operand, its
    stride along each dim of the result (0 where it broadcasts). The first operand whose strides
    differ on two dims decides their order (the smaller stride is faster); a zero stride leaves
    the decision to the next operand; equal strides put the larger dim outside; ties keep the
    dims' order (an insertion sort from fastest, as torch's)."""
    ndim = len(shape)

    def should_swap(d0, d1) -> int:
        for strides in operand_strides:
            s0, s1 = strides[d0], strides[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 < s1:
                return -1
            if s0 > s1:
                return 1
            if shape[d0] > shape[d1]:
                return 1
        return 0
    perm = list(range(ndim - 1, -1, -1))          # fastest first
    for i in range(1, ndim):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return perm[::-1]                             # slowest first


def preserved_order(x: np.ndarray) -> list:
    """The dims of torch's clone(preserve_format) of `x`, slowest first: x's own order where it
    is dense, else infer_dense_strides' order of its strides, in which an expand's stride-0
    dims take no part (iteration_order of x alone gives both)."""
    return iteration_order(x.shape, [list(x.strides)])


def preserved_result_order(shape: tuple, arrays: list, attrs: dict) -> list:
    """OpDef.extra["result_order"] of the functional scatters, whose result is a preserved copy
    of their first operand (see preserved_copy): its order, traced too."""
    return preserved_order(arrays[0])


def preserved_copy(x: np.ndarray) -> np.ndarray:
    """A copy of `x` laid out as torch's clone(preserve_format), with which its functional
    scatters (index_put, diagonal_scatter...) start: x's very strides where it is dense (those of
    its size-1 dims too), else dense in preserved_order, where NumPy's copy would put an
    expand's stride-0 dims innermost (x.expand(3, 2) copied with strides (1, 3), torch's (2, 1))."""
    if x.ndim < 2 or min(x.strides) < 0:
        return np.array(x, copy=True)
    if dense(x):
        out = empty_with_strides(x.shape, x.strides, x.dtype)
    else:
        order = preserved_order(x)
        out = np.empty([x.shape[d] for d in order], x.dtype).transpose(np.argsort(order))
    out[...] = x
    return out


def dense(a: np.ndarray) -> bool:
    """torch's is_non_overlapping_and_dense: the elements fill a block of memory exactly, in
    some order of the dims (size-1 dims aside)."""
    expected = a.itemsize
    for stride, size in sorted((abs(st), n) for n, st in zip(a.shape, a.strides) if n != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def empty_with_strides(shape: tuple, strides: tuple, dtype) -> np.ndarray:
    """A new array of `shape` with these (non-negative, byte) strides of a dense layout, its
    size-1 dims' whatever they are (NumPy's own arrays give those the row-major stride)."""
    n = int(np.prod(shape, dtype=np.int64))
    return np.ndarray(shape, dtype, buffer=np.empty(max(n, 1), dtype), strides=strides)


def restrided(array: np.ndarray, strides: tuple) -> np.ndarray:
    """A view of dense `array` (non-negative strides) with these byte strides, which differ from
    its own on size-1 dims only. Its base is a NumPy array (as_strided's is a DummyArray,
    which the code that reads a result's .base, the buffer pool's, cannot take)."""
    order = sorted(range(array.ndim), key=lambda d: -array.strides[d])         # slowest first
    flat = array.transpose(order).reshape(-1)       # (a view: in memory order it is row-major)
    return np.ndarray(array.shape, array.dtype, buffer=flat, strides=strides)
