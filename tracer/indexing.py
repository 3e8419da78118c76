"""Basic indexing: `t[0]`, `t[:, 1:3]`, `t[..., None]`, and `t[idx] = value`.

A key is normalised into the IR's index form (("i", k) / ("s", start, stop,
step) per leading dim) plus the positions of new axes; integers are checked
against their dim with torch's IndexError text.
"""
from __future__ import annotations

import numbers

import numpy as np

from .dispatch import apply_op
from .grad_mode import is_grad_enabled
from .tensor import Tensor


def _normalise(key, shape):
    """(index items, output positions of None, name of the last effective step)."""
    if not isinstance(key, tuple):
        key = (key,)
    key = tuple(_scalar_index(k) for k in key)
    for k in key:
        if isinstance(k, str):
            raise TypeError("new(): invalid data type 'str'")
        if isinstance(k, (Tensor, np.ndarray, list)) or (isinstance(k, bool)):
            raise NotImplementedError("advanced indexing (tensor, list or bool indices) is not supported by "
                                      "fusegrad; use basic indices, slices, None and ...")
        if not (k is None or k is Ellipsis or isinstance(k, (slice, numbers.Integral))):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
                             "are valid indices (got " + type(k).__name__ + ")")
    real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if real > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    items, new_axes, name = [], [], None
    dim, out_dim = 0, 0
    for k in key:
        if k is Ellipsis:
            skip = len(shape) - real
            for _ in range(skip):
                items.append(("s", 0, shape[dim], 1))
                dim += 1
                out_dim += 1
            if name is None and skip == 0:
                name = "AliasBackward0"
            continue
        if k is None:
            new_axes.append(out_dim)
            out_dim += 1
            name = "UnsqueezeBackward0"
            continue
        size = shape[dim]
        if isinstance(k, slice):
            if k.step == 0:
                raise ValueError("slice step cannot be zero")
            if k.step is not None and k.step < 0:
                raise ValueError("step must be greater than zero")
            start, stop, step = k.indices(size)
            stop = max(stop, start)
            items.append(("s", start, stop, step))
            if (start, stop, step) != (0, size, 1) or name is None:
                name = "SliceBackward0"
            out_dim += 1
        else:
            i = int(k)
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {size}")
            items.append(("i", i % size))
            name = "SelectBackward0"
        dim += 1
    if name is None:
        name = "AliasBackward0"
    return tuple(items), new_axes, name


def _scalar_index(k):
    """A 0-d integer tensor indexes as its int (torch: a select, a view); a
    floating tensor is no index at all."""
    if isinstance(k, Tensor):
        if k._dtype.is_floating_point:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if k.dim() == 0 and k._dtype.category == 1:
            return int(k)
    return k


def getitem(t: Tensor, key) -> Tensor:
    """`t[key]` for basic keys: a view sharing memory with `t`."""
    shape = tuple(t.shape)
    if t.dim() == 0 and key is not None and key is not Ellipsis and key != ():
        if isinstance(key, slice):
            raise IndexError("slice() cannot be applied to a 0-dim tensor.")
        if isinstance(key, tuple) and any(k is not None and k is not Ellipsis for k in key):
            raise IndexError("too many indices for tensor of dimension 0")   # b[0, None], b[..., 0]
        if isinstance(key, int) and not isinstance(key, bool) and key != 0:
            # torch checks the bound first (as if the 0-d tensor were an empty dim 0)
            raise IndexError(f"index {key} is out of bounds for dimension 0 with size 0")
        if not (isinstance(key, tuple) and all(k is None or k is Ellipsis for k in key)):
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
    items, new_axes, name = _normalise(key, shape)
    out = t
    effective = [(d, item) for d, item in enumerate(items) if item[0] == "i" or item[1:] != (0, shape[d], 1)]
    if not effective and not new_axes:
        out = apply_op("getitem", [t], {"index": items}, name)
    # One select or slice per indexed dim, as torch records them (SelectBackward0 -> SelectBackward0).
    removed = 0
    for d, item in effective:
        d -= removed
        index = tuple(("s", 0, s, 1) for s in out.shape[:d]) + (item,)
        out = apply_op("getitem", [out], {"index": index}, "SelectBackward0" if item[0] == "i" else "SliceBackward0")
        removed += item[0] == "i"
    if new_axes:
        new_shape = list(out.shape)
        for pos in new_axes:
            new_shape.insert(pos, 1)
        out = apply_op("reshape", [out], {"shape": tuple(new_shape)}, "UnsqueezeBackward0")
    return out


def setitem(t: Tensor, key, value) -> None:
    """`t[key] = value`: a functional index_put recorded as torch's CopySlices."""
    from .functional import _coerce
    from .inplace import check_inplace
    items, new_axes, _ = _normalise(key, tuple(t.shape))
    if new_axes:
        raise NotImplementedError("None in an assignment index is not supported by fusegrad")
    if isinstance(value, (list, tuple, str)) or value is None:
        kind = {"float32": "Float", "float64": "Double", "int64": "Long", "bool": "Bool"}[t._dtype.name]
        raise TypeError(f"can't assign a {type(value).__name__} to a torch.{kind}Tensor")
    if isinstance(value, Tensor):
        value = _coerce(value, t._dtype)
    elif isinstance(value, np.ndarray):
        value = _coerce(Tensor._wrap(np.asarray(value)), t._dtype)
    else:
        value = np.asarray(value, dtype=t._dtype.np)
    if t._grad_fn is None and t._requires_grad and t._sym is None and is_grad_enabled():
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    check_inplace(t)
    apply_op("index_put", [t, value], {"index": items}, "CopySlices", out=t)
