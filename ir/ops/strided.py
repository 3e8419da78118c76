"""torch.as_strided: a view with any sizes, strides and offset into the memory a tensor views.

A tensor's elements sit at *storage positions* (element offsets in the memory it views,
counted from its own first element): `sum(i_d * stride_d)` for index i. as_strided reads the
positions `offset + sum(j_d * stride_d)` of the result's index j, relative to the same first
element. The ops carry both geometries as attributes: the input's strides (`in_stride`, the
strides torch gives it) and the result's `size`, `stride` and `offset`.

  `as_strided(x; size, stride, offset, in_stride, storage_offset, outside)`: the view
      (AsStridedBackward0): a NumPy view of x's memory where x is laid out as in_stride says,
      else the positions gathered from x's elements. `outside`: the view reads positions x
      does not cover (memory of x's base beyond x), which only x's memory has: the tracer
      allows it eagerly only (tracer/strided.py). `storage_offset` is the offset the call
      gave (None or absolute), kept for the node's `_saved_storage_offset`; `offset` is the
      relative one the op uses.
  `strided_transfer(g; src_*, dst_*, count_src, count_dst)`: zeros over the positions of both
      geometries, g added at the `src` positions, read back at the `dst` positions: as_strided's
      gradient (torch's as_strided_backward: from the result's geometry to the input's, each
      input element's gradient divided by the number of elements sharing its position where
      the input overlaps itself) and, swapped, that gradient's own adjoint.
  `as_strided_scatter(x, v; <as_strided's attributes>)`: x with the positions of the view
      holding v, functionally (torch.as_strided_scatter: positions x does not cover are
      dropped), and `as_strided_put`, the same as the write-back of a write through the view
      (tracer.dispatch), which refuses a view reaching beyond x: eagerly that write changed
      memory outside x, which the recorded write would not show.
"""
from __future__ import annotations

import numpy as np

from ..iteration_order import preserved_copy, preserved_result_order
from ..types import TensorType
from .movement import memory_view
from .registry import MOVEMENT, OpDef, register


def storage_positions(shape: tuple, strides: tuple, offset: int = 0) -> np.ndarray:
    """The storage position of each element of a tensor of `shape` and element `strides`
    whose first element sits at `offset` (an int64 array of `shape`)."""
    positions = np.full(tuple(shape), offset, np.int64)
    for d, (n, s) in enumerate(zip(shape, strides)):
        step = np.arange(n, dtype=np.int64) * s
        positions += step.reshape((n,) + (1,) * (len(shape) - d - 1))
    return positions


def covers(in_shape: tuple, in_stride: tuple, size: tuple, stride: tuple, offset: int) -> bool:
    """Whether every position the view (size, stride, offset) reads is one of the input's."""
    wanted = storage_positions(size, stride, offset)
    if not wanted.size:
        return True
    return bool(np.isin(wanted, storage_positions(in_shape, in_stride)).all())


def _counts(positions: np.ndarray, lo: int, length: int) -> np.ndarray:
    """How many elements of a geometry sit at each storage position (lo .. lo + length)."""
    return np.bincount((positions - lo).reshape(-1), minlength=length)


def _span(*position_arrays) -> tuple:
    """(lowest position, number of positions up to the highest) over non-empty arrays."""
    present = [p for p in position_arrays if p.size]
    if not present:
        return 0, 0
    lo = min(int(p.min()) for p in present)
    return lo, max(int(p.max()) for p in present) - lo + 1


def _storage_of(x: np.ndarray, in_stride, size, stride, offset) -> tuple:
    """x's elements laid out at their storage positions (zeros where x has none), over the span
    of both geometries, and the indices in it of x's positions and of the view's."""
    in_pos, out_pos = storage_positions(x.shape, in_stride), storage_positions(size, stride, offset)
    lo, length = _span(in_pos, out_pos)
    storage = np.zeros(length, x.dtype)
    storage[in_pos - lo] = x
    return storage, in_pos - lo, out_pos - lo


# --------------------------------------------------------------------- as_strided
def _as_strided_infer(types, attrs):
    return [TensorType(tuple(attrs["size"]), types[0].dtype)]


def _direct_view(x: np.ndarray, size: tuple, stride: tuple, offset: int, in_stride: tuple):
    """The view over x's memory, where x is laid out as `in_stride` says (eagerly, a tensor's
    own memory), else None."""
    item = x.itemsize
    if any(n > 1 and s != t * item for n, s, t in zip(x.shape, x.strides, in_stride)):
        return None
    return memory_view(x, tuple(size), tuple(s * item for s in stride), offset * item)


def _as_strided_ref(x, size, stride, offset, in_stride, storage_offset=None, outside=False):
    view = _direct_view(x, size, stride, offset, in_stride)
    if view is not None:
        return view
    if outside:
        raise RuntimeError("as_strided: the memory beyond the input this view reads is not available here")
    storage, _, out_at = _storage_of(x, in_stride, size, stride, offset)
    return storage[out_at]


def _geometry(a) -> dict:
    return {"size": tuple(a["size"]), "stride": tuple(a["stride"]), "offset": a["offset"],
            "in_stride": tuple(a["in_stride"]), "storage_offset": a.get("storage_offset")}


def _to_input(e, g, x, a):
    """A gradient at the view's positions moved to x's (torch's as_strided_backward)."""
    return e.op("strided_transfer", g, src_shape=tuple(a["size"]), src_stride=tuple(a["stride"]),
                src_offset=a["offset"], dst_shape=tuple(x.shape), dst_stride=tuple(a["in_stride"]),
                dst_offset=0, count_src=False, count_dst=True)


def _to_view(e, g, x, a):
    """Values at x's positions read at the view's (0 where x has none)."""
    return e.op("strided_transfer", g, src_shape=tuple(x.shape), src_stride=tuple(a["in_stride"]),
                src_offset=0, dst_shape=tuple(a["size"]), dst_stride=tuple(a["stride"]),
                dst_offset=a["offset"], count_src=True, count_dst=False)


register(OpDef("as_strided", MOVEMENT, _as_strided_infer, _as_strided_ref,
               lambda e, x, y, g, a, n: [_to_input(e, g[0], x[0], a)], view=True,
               doc="as_strided(x; size, stride, offset, in_stride, storage_offset, outside): torch.as_strided, "
                   "positions relative to x's first element (a view)",
               extra={"write_back": "as_strided_put"}))


# --------------------------------------------------------------------- its gradient
def _transfer_infer(types, attrs):
    if tuple(types[0].shape) != tuple(attrs["src_shape"]):
        raise ValueError(f"strided_transfer: {types[0]} does not have the shape {tuple(attrs['src_shape'])}")
    return [TensorType(tuple(attrs["dst_shape"]), types[0].dtype)]


def _transfer_ref(g, src_shape, src_stride, src_offset, dst_shape, dst_stride, dst_offset, count_src, count_dst):
    src = storage_positions(src_shape, src_stride, src_offset)
    dst = storage_positions(dst_shape, dst_stride, dst_offset)
    lo, length = _span(src, dst)
    storage = np.zeros(length, g.dtype)
    values = np.asarray(g)
    if count_src and src.size:
        values = values / _counts(src, lo, length)[src - lo].astype(g.dtype)
    if src.size:
        np.add.at(storage, (src - lo).reshape(-1), values.reshape(-1))
    out = storage[dst - lo] if dst.size else np.zeros(tuple(dst_shape), g.dtype)
    if count_dst and dst.size:
        # (torch's as_strided_backward where the input overlaps itself: each of the elements
        # sharing a position gets an equal part of its gradient)
        out = out / _counts(dst, lo, length)[dst - lo].astype(g.dtype)
    return np.ascontiguousarray(out, g.dtype)


def _transfer_vjp(e, x, y, g, a, n):
    return [e.op("strided_transfer", g[0], src_shape=tuple(a["dst_shape"]), src_stride=tuple(a["dst_stride"]),
                 src_offset=a["dst_offset"], dst_shape=tuple(a["src_shape"]), dst_stride=tuple(a["src_stride"]),
                 dst_offset=a["src_offset"], count_src=a["count_dst"], count_dst=a["count_src"])]


register(OpDef("strided_transfer", MOVEMENT, _transfer_infer, _transfer_ref, _transfer_vjp, reference_only=True,
               doc="strided_transfer(g; src_shape, src_stride, src_offset, dst_shape, dst_stride, dst_offset, "
                   "count_src, count_dst): g added into zeros at the src positions, read at the dst positions "
                   "(as_strided's gradient)",
               extra={"reference_why": "a scatter-add over storage positions"}))


# --------------------------------------------------------------------- writes through the view
def _scatter_infer(types, attrs):
    x, v = types
    if tuple(v.shape) != tuple(attrs["size"]) or v.dtype is not x.dtype:
        raise ValueError(f"as_strided_scatter: {v} is not the view of {x}")
    return [x]


def _put_infer(types, attrs):
    if attrs.get("outside"):
        raise NotImplementedError("fusegrad: a write through an as_strided view that reaches memory outside "
                                  "the tensor it was taken from is not supported (take the view of that "
                                  "memory's base)")
    return _scatter_infer(types, attrs)


def _scatter_ref(x, v, size, stride, offset, in_stride, storage_offset=None, outside=False):
    storage, in_at, out_at = _storage_of(x, in_stride, size, stride, offset)
    storage[out_at] = v
    out = preserved_copy(x)
    out[...] = storage[in_at]
    return out


def _scatter_vjp(op):
    def vjp(e, x, y, g, a, n):
        gx = e.op(op, g[0], e.zeros_like(x[1]), **_geometry(a)) if n[0] else None
        return [gx, _to_view(e, g[0], x[0], a) if n[1] else None]
    return vjp


for _name, _infer in (("as_strided_scatter", _scatter_infer), ("as_strided_put", _put_infer)):
    register(OpDef(_name, MOVEMENT, _infer, _scatter_ref, _scatter_vjp(_name), reference_only=True,
                   doc=f"{_name}(x, v; size, stride, offset, in_stride, storage_offset): x with the "
                       "as_strided view's positions holding v, functionally",
                   extra={"reference_why": "a strided write", "result_order": preserved_result_order}))
