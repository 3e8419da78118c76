"""Helpers that generated kernels call for reductions.

`fg_acc_add` is a float addition that LLVM may reassociate. A reduction loop
`acc = fg_acc_add(acc, x)` therefore vectorises (several partial sums that
are added at the end, a blocked summation), while every other operation in
the kernel keeps strict IEEE semantics: the fast-math flag is set on this
one instruction only, and stays on it when LLVM inlines the call.
Accumulators are float64, so float32 sums keep about 1e-9 relative accuracy.
"""
from __future__ import annotations

from numba import njit


@njit(fastmath={"reassoc"}, error_model="numpy", nogil=True)
def fg_acc_add(acc, x):
    """acc + x, reassociable."""
    return acc + x
