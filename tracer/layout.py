"""Memory layout of tensors for the rules that depend on it (stride(), is_contiguous(),
view(), contiguous()), including traced tensors, which have no memory yet: a fresh traced
value is laid out contiguously, and a view made inside the call has the layout its view
chain gives its base's, as eagerly."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .tensor import Tensor


def _contiguous_strides(shape: tuple) -> tuple:
    """Row-major element strides of `shape` (a size-0 dim counts as 1)."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.insert(0, step)
        step *= max(n, 1)
    return tuple(strides)


def strides_of(t: Tensor) -> tuple:
    """The element strides of tensor `t`, traced or not (see `layout_stand_in`)."""
    if t._data is not None:
        return tuple(b // t._data.itemsize for b in t._data.strides)
    return layout_stand_in(t).strides


def layout_stand_in(t: Tensor) -> np.ndarray:
    """An int8 array of `t`'s shape whose byte strides are `t`'s element strides: its memory
    layout, for the rules that depend on it (view(), contiguous()) without reading values.

    A traced tensor has no memory yet: a fresh value is laid out contiguously, and a view
    made inside the call (t.T, t[0], t.expand...) has the layout its view chain gives its
    base's, as eagerly (torch's `x.t().stride()` is (1, 3))."""
    shape = t._value_shape()
    if t._data is not None:
        return _strided_stand_in(shape, strides_of(t))
    if t._base is None or not t._view_chain:
        return _strided_stand_in(shape, _contiguous_strides(shape))
    from fusegrad.ir import OPS     # (ir is below tracer; imported here to keep this module light)
    base = layout_stand_in(t._base)
    if any(s < 0 for s in base.strides):
        return _strided_stand_in(shape, _contiguous_strides(shape))
    # Replay the chain's NumPy references: metadata-only views of the stand-in.
    for op, attrs in t._view_chain:
        base = OPS[op].ref(base, **dict(attrs))
    if base.shape != shape:         # a chain the stand-in cannot replay: a fresh value's layout
        return _strided_stand_in(shape, _contiguous_strides(shape))
    return base


def _strided_stand_in(shape: tuple, strides: tuple) -> np.ndarray:
    """An int8 array of `shape` with these element strides (negative ones made contiguous)."""
    if any(s < 0 for s in strides):
        strides = _contiguous_strides(shape)
    # The buffer spans every addressed element, so even a reference that copied stays in bounds;
    # np.empty does not touch its pages.
    extent = 1 + sum((n - 1) * s for n, s in zip(shape, strides) if n > 0)
    return np.lib.stride_tricks.as_strided(np.empty(max(extent, 1), np.int8), shape, strides)


def is_contiguous(shape: tuple, strides: tuple) -> bool:
    """torch's rule: row-major without gaps, any stride on a dim of size 1; empty is contiguous."""
    if any(n == 0 for n in shape):
        return True
    expected = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1:
            if s != expected:
                return False
            expected *= n
    return True
