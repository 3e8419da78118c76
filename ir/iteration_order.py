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


def preserved_copy(x: np.ndarray) -> np.ndarray:
    """A copy of `x` laid out as torch's clone(preserve_format), with which its functional
    scatters (index_put, diagonal_scatter...) start: x's own strides where they are dense
    (NumPy's order="K" copy keeps them), else dense in iteration_order of x's strides, in which
    an expand's stride-0 dims take no part (NumPy's copy puts them innermost: x.expand(3, 2)
    copied with strides (1, 3), torch's (2, 1))."""
    if x.ndim < 2 or 0 not in x.strides:
        return np.array(x, copy=True)
    order = iteration_order(x.shape, [list(x.strides)])
    out = np.empty([x.shape[d] for d in order], x.dtype).transpose(np.argsort(order))
    out[...] = x
    return out
