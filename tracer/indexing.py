"""Basic indexing: `t[0]`, `t[:, 1:3]`, `t[..., None]`, and `t[idx] = value`.

A key is normalised into the IR's index form (("i", k) / ("s", start, stop,
step) per leading dim) plus the positions of new axes; integers are checked
against their dim with torch's IndexError text.
"""
from __future__ import annotations

import numbers

import numpy as np

from fusegrad.ir.ops.movement import index_shape

from .dispatch import apply_op
from .grad_mode import is_grad_enabled
from .tensor import Tensor


def _normalise(key, shape, bare_slice: bool = False):
    """(index items over the input's dims, the steps torch takes in key order).

    Steps are ("new", out_dim), ("select", out_dim, i) and ("slice", out_dim, start, stop, step);
    a slice that keeps its whole dim takes no step (torch's slice optimisation, which a bare
    `t[a:b]` key turns off)."""
    if not isinstance(key, tuple):
        key = (key,)
    key = tuple(_scalar_index(k) for k in key)
    # torch counts the indexed dims before it looks at what the indices are
    real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if real > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    for k in key:
        if isinstance(k, str):
            raise TypeError("new(): invalid data type 'str'")
        if isinstance(k, Tensor) and k._dtype.is_floating_point:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if isinstance(k, (Tensor, np.ndarray, list)) or (isinstance(k, bool)):
            raise NotImplementedError("advanced indexing (tensor, list or bool indices) is not supported by "
                                      "fusegrad; use basic indices, slices, None and ...")
        if not (k is None or k is Ellipsis or isinstance(k, (slice, numbers.Integral))):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
                             "are valid indices (got " + type(k).__name__ + ")")
    items, steps = [], []
    dim, out_dim = 0, 0
    for pos, k in enumerate(key):
        if k is Ellipsis:
            # every ellipsis skips the dims no index names (torch allows several)
            for _ in range(len(shape) - real):
                if dim < len(shape):
                    items.append(("s", 0, shape[dim], 1))
                dim += 1
                out_dim += 1
            continue
        if k is None:
            steps.append(("new", out_dim))
            out_dim += 1
            continue
        size = shape[dim] if dim < len(shape) else 0
        if isinstance(k, slice):
            if k.step == 0:
                raise ValueError("slice step cannot be zero")
            if k.step is not None and k.step < 0:
                raise ValueError("step must be greater than zero")
            start, stop, step = k.indices(size)
            stop = max(stop, start)
            items.append(("s", start, stop, step))
            keeps_all = k.start in (None, 0) and step == 1 and (k.stop is None or k.stop >= size)
            if bare_slice or not keeps_all:
                steps.append(("slice", out_dim, start, stop, step))
            out_dim += 1
        else:
            i = int(k)
            if not -size <= i < size:
                # torch names the index's position in the key, not the tensor's dim
                raise IndexError(f"index {i} is out of bounds for dimension {pos} with size {size}")
            items.append(("i", i % size))
            steps.append(("select", out_dim, i % size))
        dim += 1
    return tuple(items), steps


def _scalar_index(k):
    """A 0-d integer tensor indexes as its int (torch: a select, a view)."""
    if isinstance(k, Tensor):
        if k.dim() == 0 and k._dtype.category == 1:
            return int(k)
    return k


def _check_0d_key(key) -> None:
    """torch's errors for a bare int or slice key on a 0-d tensor (other keys go the general way)."""
    if isinstance(key, slice):
        _normalise(key, (0,))       # torch checks the step first
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    if isinstance(key, numbers.Integral) and not isinstance(key, bool):
        if key != 0:
            # torch checks the bound first (as if the 0-d tensor were an empty dim 0)
            raise IndexError(f"index {key} is out of bounds for dimension 0 with size 0")
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                         "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")


def getitem(t: Tensor, key) -> Tensor:
    """`t[key]` for basic keys: a view sharing memory with `t`, recorded as torch's chain of
    selects, slices and unsqueezes (in key order; the last one names the grad_fn)."""
    shape = tuple(t.shape)
    if t.dim() == 0:
        _check_0d_key(key)
    items, steps = _normalise(key, shape, bare_slice=isinstance(key, slice))
    if not steps:
        return apply_op("getitem", [t], {"index": items}, "AliasBackward0")
    out = t
    for step in steps:
        d = step[1]
        if step[0] == "new":
            new_shape = list(out.shape)
            new_shape.insert(d, 1)
            out = apply_op("reshape", [out], {"shape": tuple(new_shape)}, "UnsqueezeBackward0")
            continue
        item = ("i", step[2]) if step[0] == "select" else ("s",) + step[2:]
        index = tuple(("s", 0, s, 1) for s in out.shape[:d]) + (item,)
        out = apply_op("getitem", [out], {"index": index},
                       "SelectBackward0" if step[0] == "select" else "SliceBackward0")
    return out


def setitem(t: Tensor, key, value) -> None:
    """`t[key] = value`: a functional index_put recorded as torch's CopySlices (a key that
    selects the whole tensor is torch's fill_ or copy_ of it)."""
    from .functional import _coerce
    from .inplace import check_inplace
    if isinstance(value, (list, tuple, str)) or value is None:
        kind = {"float32": "Float", "float64": "Double", "int64": "Long", "bool": "Bool"}[t._dtype.name]
        raise TypeError(f"can't assign a {type(value).__name__} to a torch.{kind}Tensor")
    if t.dim() == 0:
        _check_0d_key(key)
    items, steps = _normalise(key, tuple(t.shape))
    whole = not steps
    # torch copies into a whole tensor, filling it where the value is one number (but a 0-d one)
    fill = "FillBackward3" if t.dim() else "CopyBackwards"
    if isinstance(value, np.ndarray):
        value = Tensor._wrap(np.asarray(value))
    if isinstance(value, Tensor):
        name = fill if whole and value.dim() == 0 else "CopyBackwards" if whole else "CopySlices"
        value = _fit_value(_coerce(value, t._dtype), index_shape(tuple(t.shape), items), steps)
    else:
        name = fill if whole else "CopySlices"
        value = np.asarray(value, dtype=t._dtype.np)
    # torch checks the value's shape first, then the leaf (through a view of it unless whole)
    if t._grad_fn is None and t._requires_grad and t._sym is None and is_grad_enabled():
        through = "" if whole else "a view of "
        raise RuntimeError(f"{through}a leaf Variable that requires grad is being used in an in-place operation.")
    check_inplace(t)
    apply_op("index_put", [t, value], {"index": items}, name, out=t)


def _fit_value(value: Tensor, region: tuple, steps) -> Tensor:
    """The value of `t[key] = value` in the region's shape, as torch's copy_ takes it: leading
    size-1 dims dropped, then broadcast to `t[key]`'s shape (the key's None axes included;
    torch's expand errors)."""
    shape = tuple(value.shape)
    while shape and shape[0] == 1:
        shape = shape[1:]
    if shape != tuple(value.shape):
        value = apply_op("reshape", [value], {"shape": shape}, "ViewBackward0")
    target = list(region)
    for step in steps:
        if step[0] == "new":
            target.insert(step[1], 1)
    target = tuple(target)
    if shape != target:
        value = apply_op("expand", [value], {"shape": target}, "ExpandBackward0")
    if target != region:
        value = apply_op("reshape", [value], {"shape": region}, "ViewBackward0")
    return value
