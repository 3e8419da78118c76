"""torch.gather along one axis, its gradient scatter_add, and torch.flip.

`gather(x, index; axis)`: out[i][j][k] = x[i][index[i][j][k]][k] for axis 1 (the index's shape
is the result's; along the other axes it may be shorter than x, not longer). `scatter_add(x,
index, src; axis)` adds src into a copy of x at those places, duplicates adding. A 0-d x or
index counts as one element along the axis, as torch's. Both run by their NumPy reference in
compiled programs (no kernel rule); an index outside its axis raises torch's RuntimeError when
they run (negative indices too: gather does not wrap them).
"""
from __future__ import annotations

import numpy as np

from ..torch_order_jit import LOOP_FROM, loop_pays
from ..types import TensorType, int64
from .registry import MOVEMENT, OpDef, register


def _as_1d(a: np.ndarray) -> np.ndarray:
    return a.reshape(1) if a.ndim == 0 else a


def _check_index(index: np.ndarray, size: int, axis: int) -> None:
    if index.size and (index.min() < 0 or index.max() >= size):
        bad = index.ravel()[np.argmax(((index < 0) | (index >= size)).ravel())]
        raise RuntimeError(f"index {int(bad)} is out of bounds for dimension {axis} with size {size}")


def _region(shape: tuple, index: np.ndarray, axis: int) -> tuple:
    """The NumPy key of the places `index` names: index along `axis`, an arange elsewhere."""
    key = []
    for k, n in enumerate(index.shape):
        if k == axis:
            key.append(index)
        else:
            key.append(np.arange(n).reshape((-1,) + (1,) * (index.ndim - 1 - k)))
    return tuple(key)


def _gather_infer(types, attrs):
    x, index = types
    if index.dtype is not int64:
        raise TypeError("gather: index must be int64 (the tracer checks torch's error first)")
    return [TensorType(index.shape, x.dtype)]


def _gather_ref(x, index, axis, saves_input=True):
    xa, ia = _as_1d(x), _as_1d(index)
    if ia.size == 0:
        return np.zeros(index.shape, x.dtype)
    vector = _repeated_vector(ia, xa.shape, axis)
    if vector is not None:
        # index_select's gather (its index a vector expanded over x's other axes): whole
        # slices taken at once, where the key of every element cost 14x (2048 rows of 1024)
        _check_index(vector, xa.shape[axis], axis)
        return np.take(xa, vector, axis=axis).reshape(index.shape)
    _check_index(ia, xa.shape[axis], axis)
    return np.ascontiguousarray(xa[_region(xa.shape, ia, axis)]).reshape(index.shape)


def _repeated_vector(index: np.ndarray, shape: tuple, axis: int):
    """The 1-d index along `axis` where `index` spans x's `shape` on every other axis and
    repeats one vector there (stride 0: an expand's view), else None."""
    if index.ndim != len(shape):
        return None
    for k, n in enumerate(index.shape):
        if k != axis and (n != shape[k] or (n > 1 and index.strides[k] != 0)):
            return None
    return index[tuple(slice(None) if k == axis else 0 for k in range(index.ndim))]



def _gather_vjp(e, x, y, g, a, n):
    # torch's gather_backward: zeros of self's shape with grad scattered (added) into them;
    # GatherBackward0 saves self (a later in-place change of it raises), index_select's node
    # only its sizes (attribute saves_input)
    zeros = e.zeros_reading(x[0], x[0]) if a.get("saves_input", True) else e.zeros_like(x[0])
    return [e.op("scatter_add", zeros, x[1], g[0], axis=a["axis"]) if n[0] else None, None]


def _scatter_add_infer(types, attrs):
    return [types[0]]


def _scatter_add_ref(x, index, src, axis):
    out = np.array(_as_1d(x), copy=True)
    ia = _as_1d(index)
    if ia.size == 0:                # (an empty index, of any rank as torch's: nothing added)
        return out.reshape(x.shape)
    values = _as_1d(src)[tuple(slice(0, n) for n in ia.shape)]
    vector = _repeated_vector(ia, out.shape, axis)
    if vector is not None:
        _check_index(vector, out.shape[axis], axis)
        add_slices(np.moveaxis(out, axis, 0), vector, np.moveaxis(values, axis, 0))
        return out.reshape(x.shape)
    _check_index(ia, out.shape[axis], axis)
    region = _region(out.shape, ia, axis)
    if values.size >= LOOP_FROM and out.dtype.kind in "fiu" and loop_pays(values.size):
        # np.add.at's additions, in its order (the index's row-major order), one at a time in
        # a Numba loop: the same bits, ~10x as fast (a [2048, 2048] gather's backward: 113 ms)
        from ..reference_loops import add_at_flat
        targets = np.ravel_multi_index(np.broadcast_arrays(*region), out.shape).reshape(-1)
        # (the targets count in row-major order: a copy of a transposed x keeps its layout, so
        # the loop adds into a row-major copy, copied back)
        flat = np.ascontiguousarray(out)
        add_at_flat(flat.reshape(-1), targets, np.ascontiguousarray(values).reshape(-1))
        if flat is not out:
            out[...] = flat
    else:
        np.add.at(out, region, values)
    return out.reshape(x.shape)


def add_slices(out: np.ndarray, vector: np.ndarray, values: np.ndarray) -> None:
    """out[vector[i]] += values[i] for each i in turn (torch's index_add_, index_select's
    backward), whole slices at once: in rounds, the k-th occurrence of each index in the
    k-th, so each slice takes its additions in order (np.add.at of 2048 rows of 1024: 32 ms)."""
    order = np.argsort(vector, kind="stable")
    ordered = vector[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    rank = np.empty(len(vector), np.int64)
    rank[order] = np.arange(len(vector)) - np.repeat(starts, np.diff(np.r_[starts, len(vector)]))
    for k in range(int(rank.max()) + 1 if len(vector) else 0):
        picked = np.flatnonzero(rank == k)
        out[vector[picked]] += values[picked]


def _scatter_add_vjp(e, x, y, g, a, n):
    # torch's scatter_add backward: self gets grad as it is, src grad.gather(dim, index)
    return [g[0] if n[0] else None, None, e.op("gather", g[0], x[1], axis=a["axis"]) if n[2] else None]


def _check_now(first: int):
    """The bounds check, run by the tracer where the index's values are known when recorded."""
    def check(in_types, arrays, attrs):
        x, index = in_types[0], arrays[first]
        if index is not None:
            _check_index(_as_1d(index), (x.shape or (1,))[attrs["axis"]], attrs["axis"])
    return check


register(OpDef("gather", MOVEMENT, _gather_infer, _gather_ref, _gather_vjp, reference_only=True,
               nondiff_inputs=(1,), doc="gather(x, index; axis): torch.gather (a copy)",
               extra={"value_checks": True, "check_now": _check_now(1),
                      "reference_why": "a gather through an index array"}))
register(OpDef("scatter_add", MOVEMENT, _scatter_add_infer, _scatter_add_ref, _scatter_add_vjp,
               reference_only=True, nondiff_inputs=(1,),
               doc="scatter_add(x, index, src; axis): torch.scatter_add (duplicates adding)",
               extra={"value_checks": True, "check_now": _check_now(1),
                      "reference_why": "a scatter through an index array"}))


# --------------------------------------------------------------------- flip
def _flip_ref(x, axes):
    # always a copy (np.flip over size-1 dims is a view of x), laid out as x (torch's empty_like)
    out = np.empty_like(x)
    np.copyto(out, np.flip(x, axes) if axes else x)
    return out


register(OpDef("flip", MOVEMENT, lambda types, attrs: [types[0]], _flip_ref,
               lambda e, x, y, g, a, n: [e.op("flip", g[0], axes=a["axes"])], reference_only=True,
               doc="flip(x; axes): x reversed along axes (a copy, as torch.flip)",
               # (torch's flip allocates empty_like(x): x.t().flip(0) has x.t()'s strides)
               extra={"reference_why": "a reversal (no kernel rule)", "takes_operand_layout": True}))
