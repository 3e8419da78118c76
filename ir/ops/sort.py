"""torch.sort and torch.topk: `sort(x; axis, descending, k)` -> (values, indices) along
one axis, the first `k` of them (topk) or all (k None).

Order as torch's: NaN counts as the largest value (last ascending, first descending); ties
keep their positions' order (torch's `stable=True`; its default sort may order ties
otherwise, so their indices are not compared in fusegrad's tests). The gradient scatters
the values' gradient back to the places they came from (torch's SortBackward0 and
TopkBackward0: zeros with grad scattered along the axis at the indices). Runs by its NumPy
reference in compiled programs (no kernel rule).
"""
from __future__ import annotations

import numpy as np

from ..iteration_order import preserved_order
from ..types import TensorType, int64
from .registry import MOVEMENT, OpDef, register


def _infer(types, attrs):
    x = types[0]
    shape = list(x.shape)
    if attrs["k"] is not None and shape:
        shape[attrs["axis"]] = attrs["k"]
    return [TensorType(tuple(shape), x.dtype), TensorType(tuple(shape), int64)]


def sort_order(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """The indices that sort `x` along `axis` as torch's stable sort does (NaN largest)."""
    if x.dtype.kind == "f":
        nan = np.isnan(x)
        # (lexsort: the last key is the primary one; both keys stable)
        if descending:
            keys = (np.where(nan, 0, -x.astype(np.float64)), ~nan)
        else:
            keys = (np.where(nan, 0, x), nan)
        moved = [np.moveaxis(k, axis, -1) for k in keys]
        return np.moveaxis(np.lexsort(moved, axis=-1), -1, axis)
    if descending:
        # (a bool or int64 key reversed without overflow: -INT64_MIN wraps, ~x does not)
        key = ~x if x.dtype.kind == "i" else ~x.astype(bool)
        return np.argsort(key, axis=axis, kind="stable")
    return np.argsort(x, axis=axis, kind="stable")


def _ref(x, axis, descending, k):
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    order = sort_order(x, axis, descending)
    if k is not None:
        order = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, order, axis=axis), order.astype(np.int64)


def _vjp(e, x, y, g, a, n):
    if not n[0]:
        return [None]
    if not x[0].shape:
        return [g[0]]
    return [e.op("scatter_add", e.zeros_like(x[0]), y[1], g[0], axis=a["axis"])]


def _result_order(shape, arrays, attrs) -> list:
    """torch's sort lays its values and indices out as clone(preserve_format) lays out x (its
    meta function: x's strides where x is dense, else infer_dense_strides); topk row-major."""
    return preserved_order(arrays[0]) if attrs.get("k") is None else list(range(len(shape)))


register(OpDef("sort", MOVEMENT, _infer, _ref, _vjp, reference_only=True, nondiff_outputs=(1,),
               doc="sort(x; axis, descending, k) -> (values, indices): sorted along axis, the first k (topk) or all",
               extra={"result_order": _result_order}))
