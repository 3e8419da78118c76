"""Indexing: `t[0]`, `t[:, 1:3]`, `t[..., None]`, `t[idx]`, `t[mask]`, and `t[key] = value`.

A basic key is normalised into the IR's index form (("i", k) / ("s", start,
stop, step) per leading dim) plus the positions of new axes; integers are
checked against their dim with torch's IndexError text.

A key with advanced items (int tensors, lists, NumPy arrays, bool masks,
Python bools) is applied as torch applies it: the basic items first (a view:
selects, slices, new axes; each advanced item keeps its dim as a full slice),
then one `index_take` (getitem, IndexBackward0) or `index_put_at` (setitem,
IndexPutBackward0) over the dims the advanced items name. A k-d mask stands
for the k int arrays of its nonzero (a graph break inside a trace, where the
mask's value is data); a Python bool or 0-d mask is a new size-1 dim indexed
by [0] (True) or [] (False).
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np

from fusegrad.ir import OPS, TensorType, bool_, int64
from fusegrad.ir.ops import infer_types
from fusegrad.ir.ops.advanced_index import put_into
from fusegrad.ir.program import freeze_attrs
from fusegrad.ir.types import TORCH_SCALAR_NAMES
from fusegrad.ir.ops.movement import index_shape, to_numpy_index

from .dispatch import (_OVERLAP_MSG, _PARTIAL_OVERLAP, MASKED_FILL_EXPANDED, _check_no_partial_overlap, _full_slices,
                       _overlaps_itself, apply_op, write_aliased, writes_expanded_memory)
from .layout import detached_from, expanded_strides, torch_strides, traced_overlaps_itself, traced_partial_overlap, views_an_expand
from .node import hide_node
from .scalar_checks import check_scalar_fits, check_setitem_int, check_tensor_value_fits, written_number
from .grad_mode import is_grad_enabled
from .tensor import Tensor
from . import trace_state
from .user_frame import user_stacklevel

_INDEX_PUT_EXPANDED = ("Use of index_put_ on expanded tensors is deprecated. Please clone() the tensor before performing "
                       "this operation. This also applies to advanced indexing e.g. tensor[indices] = tensor")


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
        if isinstance(k, (Tensor, np.ndarray)):     # what _parse_item leaves: a float tensor or array
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if not (k is None or k is Ellipsis or isinstance(k, (slice, numbers.Integral))):
            kind = type(k).__name__ if type(k).__module__ == "builtins" else \
                f"{type(k).__module__.split('.')[0]}.{type(k).__name__}"      # as Python's tp_name: numpy.bool
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
                             "are valid indices (got " + kind + ")")
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
            if not -2 ** 63 <= i < 2 ** 63:
                raise ValueError("Overflow when unpacking long long")      # (torch's int64 unpacking)
            if not -size <= i < size:
                # torch names the index's position in the key, not the tensor's dim
                raise IndexError(f"index {i} is out of bounds for dimension {pos} with size {size}")
            items.append(("i", i % size))
            steps.append(("select", out_dim, i % size))
        dim += 1
    return tuple(items), steps


def _scalar_index(k):
    """A 0-d integer tensor or NumPy array indexes as its int (torch: a select, a view)."""
    if isinstance(k, Tensor):
        if k.dim() == 0 and k._dtype.category == 1:
            return int(k)
    elif isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype.kind in "iu":
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
    """`t[key]`. A basic key makes a view sharing memory with `t`, recorded as torch's chain
    of selects, slices and unsqueezes (in key order; the last one names the grad_fn); a key
    with advanced items makes a copy (IndexBackward0), see the module docstring."""
    key = _sequence_key(key)
    parsed = _advanced_key(key)
    if parsed is not None:
        view, starts = _advanced_view(t, parsed)
        indices, dims = _index_arrays(view, parsed, starts)
        return apply_op("index_take", [view, *_versioned(indices, parsed)], {"dims": dims}, "IndexBackward0")
    shape = tuple(t.shape)
    if t.dim() == 0:
        _check_0d_key(key)
    items, steps = _normalise(key, shape, bare_slice=isinstance(key, slice))
    if not steps:
        # (the empty index marks torch's alias, whose gradient passes on unchanged: see
        # ir/ops/movement.py _getitem_vjp; x[0:2] of two rows is a SliceBackward0 there)
        return apply_op("getitem", [t], {"index": ()}, "AliasBackward0")
    return _apply_steps(t, steps)


def _apply_steps(t: Tensor, steps) -> Tensor:
    """`t` seen through the basic steps of `_normalise`, in key order (views)."""
    out = t
    for step in steps:
        d = step[1]
        if step[0] == "new":
            new_shape = list(out.shape)
            new_shape.insert(d, 1)
            out = apply_op("reshape", [out], {"shape": tuple(new_shape), "inserted": d}, "UnsqueezeBackward0")
            continue
        item = ("i", step[2]) if step[0] == "select" else ("s",) + step[2:]
        index = tuple(("s", 0, s, 1) for s in out.shape[:d]) + (item,)
        out = apply_op("getitem", [out], {"index": index},
                       "SelectBackward0" if step[0] == "select" else "SliceBackward0")
    return out


def _check_value_overlap(region: np.ndarray, source: np.ndarray) -> None:
    """torch's overlap check of `t[key] = value` (value's memory `source`, the region written
    `region`), as its copy_to: a value of the region's shape is copied as it is; a 0-d one
    fills; any other drops all its leading 1s (slicePrefix1sSize) and is expanded to the
    region's shape, new dims with stride 0. Where that expand repeats no element (only
    size-1 dims were added: `b[0] = b` of a (1, 1) b) it is the same memory in other strides:
    torch's partial overlap. (An expand that repeats elements is too hard for torch to decide.)"""
    if source.shape == region.shape:
        _check_no_partial_overlap(region, [source])
        return
    if source.ndim == 0 or not region.size or not np.may_share_memory(region, source):
        return
    lead = 0
    while lead < source.ndim and source.shape[lead] == 1:
        lead += 1
    kept = source.reshape(source.shape[lead:])
    if kept.shape == region.shape:
        _check_no_partial_overlap(region, [kept])
        return
    strides = expanded_strides(kept, region.shape)
    if strides is not None and strides != tuple(torch_strides(region)):
        raise RuntimeError(_PARTIAL_OVERLAP)


def setitem(t: Tensor, key, value) -> None:
    """`t[key] = value`. A basic key is a functional index_put recorded as torch's CopySlices
    (a key that selects the whole tensor is torch's fill_ or copy_ of it); a key with advanced
    items is torch's index_put_ (IndexPutBackward0), see `_advanced_setitem`."""
    from .functional import _coerce
    from .inplace import copy_ as copy_into
    if not isinstance(value, (numbers.Number, np.generic, Tensor, np.ndarray)) or isinstance(value, np.str_) or \
            (isinstance(value, np.complexfloating) and not isinstance(value, complex)):
        # (a list, None, a dict, bytes, any other object: no number, no tensor; nor, to torch's
        # setitem, a NumPy complex that is no Python complex: np.complex64)
        kind = f"numpy.{type(value).__name__}" if isinstance(value, np.generic) else type(value).__name__
        raise TypeError(f"can't assign a {kind} to a torch.{TORCH_SCALAR_NAMES[t._dtype.name]}Tensor")
    if not isinstance(value, (Tensor, np.ndarray)):
        # torch makes a number into a tensor of t's dtype before it reads the key
        value = written_number(value, t._dtype)
        check_setitem_int(value)
        check_scalar_fits(value, t._dtype)
    key = _sequence_key(key)
    if key is True:         # torch: a copy into t.unsqueeze(0), as t[None] = value
        key = None
    elif key is False:      # torch: nothing is written, nothing checked
        return
    parsed = _advanced_key(key)
    if parsed is not None:
        _advanced_setitem(t, parsed, value)
        return
    if t.dim() == 0:
        _check_0d_key(key)
    items, steps = _normalise(key, tuple(t.shape))
    whole = not steps
    # torch copies into a whole tensor, filling it where the value is one number (but a 0-d one)
    fill = "FillBackward3" if t.dim() else "CopyBackwards"
    if isinstance(value, np.ndarray):
        value = Tensor._wrap(np.asarray(value))
    # torch copies a value of one or more dims into t[key] (copy_, with its overlap check) and
    # fills it with a 0-d one (no check)
    value_tensor = value if isinstance(value, Tensor) and value.dim() > 0 else None
    source = value_tensor._data if value_tensor is not None else None
    # torch's copy_to copies a value of t[key]'s shape, and fills t[key] with a 0-d one, checking
    # the written view before it asks for the value's history; any other value it views first
    # (asking for its history) and expands (checking its shape) before checking the view
    as_is = isinstance(value, Tensor) and (value.dim() == 0 or tuple(value.shape) == _view_shape(
        index_shape(tuple(t.shape), items), steps))
    if as_is:
        _check_written(t, key, whole)
    if isinstance(value, Tensor):
        name = fill if whole and value.dim() == 0 else "CopyBackwards" if whole else "CopySlices"
        value = _fit_value(value, index_shape(tuple(t.shape), items), steps, lambda v: _coerce(v, t._dtype))
    else:
        name = fill if whole else "CopySlices"
        value = np.asarray(value, dtype=t._dtype.np)
    if not as_is:
        _check_written(t, key, whole)
    if source is not None and t._sym is None:
        region = t._data if whole else t._data[to_numpy_index(items) + (Ellipsis,)]
        _check_value_overlap(region, source)
    elif value_tensor is not None and traced_partial_overlap(
            t, [value_tensor], region=lambda ids: ids if whole else ids[to_numpy_index(items) + (Ellipsis,)],
            broadcast_passes=True):
        raise RuntimeError(_PARTIAL_OVERLAP)     # (inside a trace, the same check on views of one tensor)
    if whole and value_tensor is not None and t._sym is None:
        from .inplace import copied_into_itself
        if copied_into_itself(t, value_tensor):
            return                  # (torch's copy_ of a tensor's own memory into it: no write)
    if whole and (_overlaps_itself(t._data) if t._sym is None else traced_overlaps_itself(t)):
        # torch copies into t itself, whose elements share memory (an expand): refused, even for
        # a number (only fill_ and zero_ of a number write through an expand)
        raise RuntimeError(_OVERLAP_MSG)
    if not whole and (_overlaps_itself(t._data) if t._sym is None else _views_an_expand_in_trace(t)):
        # t is an expand's view: write only the selected region, which may overlap nothing
        # (a.expand(2, 2, 3)[0] = v writes a), as torch's copy_ into t[key] does
        # (the value's overlap with the region was checked above, by setitem's rule)
        view = t[key]
        if isinstance(value, Tensor):
            if tuple(value.shape) != tuple(view.shape):
                # (the value fitted to the region, without the key's None axes: t[key] has them)
                value = apply_op("reshape", [value], {"shape": tuple(view.shape)}, "ViewBackward0")
                hide_node(value)
        else:
            value = Tensor._wrap(value)
        copy_into(view, value, operand_checked=True)
        return
    # The index decides what the gradient of t's old value is (see index_put's VJP): torch's
    # fill_ / copy_ of the whole tensor gives zeros_like(grad), which no later differentiation
    # reaches (an empty index); its CopySlices, also of a key that selects every element
    # through a new axis (t[None]), zeroes the region in the gradient itself (full slices)
    index = () if whole else items if items else _full_slices(tuple(t.shape))
    # torch writes a part through the view t[key], not t: a view t that needed no grad then
    # records nothing, so stays without its node (dispatch._make_view) though the write
    # gives its base a history, and its own in-place check still takes it for a leaf
    nodeless = not whole and t.__dict__.get("_nodeless", False) and not _needs_grad(t)
    apply_op("index_put", [t, value], {"index": index}, name, out=t)
    if nodeless:
        t.__dict__["_nodeless"] = True


def _needs_grad(t: Tensor) -> bool:
    """Whether t requires grad as it is, its base's history included, asking for no node."""
    return t._requires_grad or (t._base is not None and t._base._requires_grad)


def _views_an_expand_in_trace(t: Tensor) -> bool:
    """Whether traced `t` is an expand's memory: a view through an expand, or a detach() (or
    .data) of one made in the call (`(x * 1).expand(3, 3).detach()[1, 0] = 5` writes one
    element, which every row shares)."""
    return views_an_expand(detached_from(t))


def _check_written(t: Tensor, key, whole: bool) -> None:
    """torch's checks of the tensor `t[key] = value` writes: a view made under no_grad, a leaf
    (through a view of it unless whole), a part of split/unbind (through t[key]), t itself."""
    from .inplace import check_inplace
    from .dispatch import no_grad_view_error
    if t._no_grad_view and is_grad_enabled():
        # torch writes through t[key], a view (named by its node) of a view made under no_grad
        raise no_grad_view_error(t if whole else t[key])
    if whole and t._multi_output is not None and is_grad_enabled() and (t._requires_grad or t._base._requires_grad):
        check_inplace(t)        # (torch's check_inplace: a part's error before the leaf checks)
    transform_input = t.__dict__.get("_transform_input", False)       # (see inplace.check_inplace)
    if t._requires_grad and is_grad_enabled() and (t.is_leaf or transform_input):
        # (traced too: a leaf written under no_grad)
        through = "" if whole and (t._base is None or transform_input) else "a view of "
        raise RuntimeError(f"{through}a leaf Variable that requires grad is being used in an in-place operation.")
    if not whole and is_grad_enabled() and _needs_grad(t):
        t.__dict__.pop("_nodeless", None)   # (torch writes through t[key], whose node reads t's)
    if not whole and t._multi_output is not None and t._requires_grad and is_grad_enabled():
        # a part of split/unbind: torch writes through t[key], and the error names that view's
        # node ("Output 0 of Select"), not the split
        check_inplace(t[key])
    check_inplace(t)


def _view_shape(region: tuple, steps) -> tuple:
    """The shape of `t[key]`: the region's, with the key's None axes."""
    target = list(region)
    for step in steps:
        if step[0] == "new":
            target.insert(step[1], 1)
    return tuple(target)


def _fit_value(value: Tensor, region: tuple, steps, cast) -> Tensor:
    """The value of `t[key] = value` in the region's shape, as torch's copy_ takes it: `cast`
    to t's dtype, leading size-1 dims dropped, then broadcast to `t[key]`'s shape (the key's
    None axes included; torch's expand errors, which name the value's own type)."""
    shape = tuple(value.shape)
    while shape and shape[0] == 1:
        shape = shape[1:]
    target = _view_shape(region, steps)
    if shape != target:
        OPS["expand"].infer([TensorType(shape, value.dtype)], {"shape": target})    # (raises)
    value = cast(value)
    # torch's copy_to: a value of t[key]'s shape is copied as it is, a 0-d one fills t[key]
    # (its node is the value's own), any other is viewed without its leading 1s (always a
    # ViewBackward0) and expanded; the region's reshape is ours alone (node.hide_node)
    if tuple(value.shape) != target:
        if value.dim() == 0:
            value = apply_op("expand", [value], {"shape": target}, "ExpandBackward0")
            hide_node(value)
        else:
            value = apply_op("reshape", [value], {"shape": shape}, "ViewBackward0")
            if shape != target:
                value = apply_op("expand", [value], {"shape": target}, "ExpandBackward0")
    if target != region:
        value = apply_op("reshape", [value], {"shape": region}, "ViewBackward0")
        hide_node(value)
    return value


# ================================================================ advanced indexing
class _Index:
    """An advanced item: one int64 index array (a Tensor or a NumPy array) for one dim."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class _Mask:
    """An advanced item: a bool mask (Tensor or NumPy array) over as many dims as it has;
    a 0-d one (a Python bool too) indexes a new size-1 dim. `byte`: made from a uint8 index,
    torch's deprecated byte mask."""
    __slots__ = ("value", "ndim", "byte")

    def __init__(self, value, byte: bool = False):
        self.value = value
        self.ndim = value.dim() if isinstance(value, Tensor) else value.ndim
        self.byte = byte


# torch (as NumPy before it) reads a short non-tuple sequence as a tuple of indices when an
# item of it is a tensor, a sequence, a slice, ... or None: x[[0, [1, 2]]] is x[0, [1, 2]].
_TUPLE_LIKE_ITEMS = (Tensor, list, tuple, np.ndarray, slice, type(Ellipsis), type(None))
_MAX_TUPLE_LIKE = 32
_BASIC_KEYS = frozenset({int, slice, type(None), type(Ellipsis)})


_SEQUENCE_AS_TUPLE = ("Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed "
                      "in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted "
                      "as tensor index, x[torch.tensor(seq)], which will result either in an error or a different "
                      "result")


_BYTE_MASK = "indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead."
_INT64_RANGE = range(-2 ** 63, 2 ** 63)


def _sequence_key(key):
    """A list key that torch reads as a tuple of indices, as that tuple (with torch's
    deprecation warning)."""
    if type(key) is list and len(key) < _MAX_TUPLE_LIKE and any(isinstance(k, _TUPLE_LIKE_ITEMS) for k in key):
        warnings.warn(_SEQUENCE_AS_TUPLE, UserWarning, stacklevel=user_stacklevel())
        return tuple(key)
    if isinstance(key, str):
        # (a str is a sequence to torch's check, which warns before the index is refused)
        warnings.warn(_SEQUENCE_AS_TUPLE, UserWarning, stacklevel=user_stacklevel())
    return key


def _advanced_key(key):
    """The key as a list of items with its advanced items parsed (_Index, _Mask), or None
    when it has none (a basic key)."""
    if type(key) in _BASIC_KEYS:        # the common keys, without parsing (getitem is hot)
        return None
    items = [_parse_item(k) for k in (key if isinstance(key, tuple) else (key,))]
    if not any(isinstance(k, (_Index, _Mask)) for k in items):
        return None
    return items


def _parse_item(k):
    """One item of a key: an advanced item parsed, a 0-d integer index as its int (torch
    selects with it), anything else as it is (`_normalise` checks it)."""
    if isinstance(k, Tensor):
        if k._dtype is bool_:
            return _Mask(k)
        if k._dtype.category == 1:
            return int(k) if k.dim() == 0 else _Index(k)
        return k
    if isinstance(k, bool):         # a Python bool only: torch rejects NumPy's bool scalar
        return _Mask(np.asarray(k))
    if isinstance(k, np.ndarray):
        if k.dtype == np.bool_:
            return _Mask(k)
        if k.dtype == np.uint8:
            return _byte_mask(k)
        if k.ndim == 0:
            return int(k) if k.dtype.kind in "iu" else k
        # torch reads any other array as a sequence of numbers: a long index (0.5 is 0)
        return _Index(k.astype(np.int64))
    if isinstance(k, (list, tuple)):
        a = _sequence_array(k)
        if a.dtype == np.uint8:         # (NumPy uint8 scalars only: torch's tensor of them)
            return _byte_mask(a)
        return _Mask(a) if a.dtype == np.bool_ else _Index(a.astype(np.int64))
    if isinstance(k, range):        # a sequence of ints (x[range(n), target], as a tutorial writes)
        return _Index(np.arange(k.start, k.stop, k.step, dtype=np.int64))
    return k


def _byte_mask(a: np.ndarray) -> "_Mask":
    """A uint8 index: torch's deprecated byte mask, nonzero meaning True (its warning comes
    when the mask is read: _index_arrays)."""
    return _Mask(a != 0, byte=True)


def _sequence_array(seq) -> np.ndarray:
    """A nested sequence index as torch's indexing_tensor_from_data reads it (all bools make
    a mask, anything else a long index), with its errors: the items' types first, then the
    shape that the first item at each depth sets."""
    stack = [seq]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, str):
            raise TypeError("new(): invalid data type 'str'")
        elif not isinstance(item, (numbers.Number, np.generic, Tensor, np.ndarray)):
            raise RuntimeError(f"Could not infer dtype of {type(item).__name__}")
        elif type(item) is int and item not in _INT64_RANGE:
            raise ValueError("Overflow when unpacking long long")      # (torch reads the list as longs)
    sizes, level = [], seq
    while isinstance(level, (list, tuple)):
        sizes.append(len(level))
        level = level[0] if level else None
    _check_nesting(seq, sizes, 0)
    return np.asarray(seq)


def _check_nesting(seq, sizes, depth: int) -> None:
    if len(seq) != sizes[depth]:
        raise ValueError(f"expected sequence of length {sizes[depth]} at dim {depth} (got {len(seq)})")
    for item in seq:
        nested = isinstance(item, (list, tuple))
        if depth + 1 < len(sizes):
            if not nested:
                raise TypeError("not a sequence")
            _check_nesting(item, sizes, depth + 1)
        elif nested:
            raise TypeError(f"'{type(item).__name__}' object cannot be interpreted as an integer")


def _advanced_view(t: Tensor, items):
    """(the view of `t` the basic items make, each advanced item's first dim in it). Each
    advanced item stands as full slices over its dims there (a 0-d mask as a new axis)."""
    basic = []
    for k in items:
        if isinstance(k, _Index):
            basic.append(slice(None))
        elif isinstance(k, _Mask):
            basic.extend([slice(None)] * k.ndim if k.ndim else [None])
        else:
            basic.append(k)
    _, steps = _normalise(tuple(basic), tuple(t.shape))
    view = _apply_steps(t, steps) if steps else t
    return view, _advanced_dims(items, t.dim())


def _index_arrays(view: Tensor, items, starts):
    """(the int64 index arrays, the dims of `view` they index): a k-d mask gives the k arrays
    of its nonzero (reading its value: a graph break inside a trace), a 0-d one [0] or []."""
    indices, dims = [], []
    for k, d in zip((k for k in items if isinstance(k, (_Index, _Mask))), starts):
        if isinstance(k, _Index):
            indices.append(k.value)
            dims.append(d)
            continue
        mask = k.value._concrete() if isinstance(k.value, Tensor) else k.value
        if k.byte and mask.ndim:
            warnings.warn(_BYTE_MASK, UserWarning, stacklevel=user_stacklevel())
        if mask.ndim == 0:
            indices.append(np.zeros(1 if mask else 0, np.int64))
            dims.append(d)
            continue
        _check_mask(mask.shape, tuple(view.shape), d)
        for j, nz in enumerate(np.nonzero(mask)):
            indices.append(nz.astype(np.int64, copy=False))
            dims.append(d + j)
    return indices, tuple(dims)


def _versioned(indices: list, items) -> list:
    """The index arrays, those of a mask tensor's nonzero as tensors sharing its version
    counter: torch's node saves the mask itself, so writing it in place before the backward
    raises torch's error, naming the mask (see saved_checks._raise_modified). Eagerly only:
    inside a trace the mask's value was read as data."""
    masks = [k.value for k in items if isinstance(k, _Mask) and isinstance(k.value, Tensor) and k.value.dim()]
    if not masks or trace_state.current() is not None:
        return indices
    out, k = list(indices), 0
    for item in (k for k in items if isinstance(k, (_Index, _Mask))):
        if isinstance(item, _Mask) and isinstance(item.value, Tensor) and item.value.dim():
            for _ in range(item.value.dim()):      # (a k-d mask: the k arrays of its nonzero)
                stand_in = Tensor._wrap(out[k])
                stand_in._vbox = item.value._vbox
                stand_in.__dict__["_index_of"] = item.value
                out[k] = stand_in
                k += 1
        else:
            k += 1                              # (an index, or a 0-d mask: one array)
    return out


def _advanced_dims(items, ndim: int) -> list:
    """The dim of the basic view at which each advanced item starts (walking the key as
    `_normalise` does: ints drop their dim, new axes and 0-d masks add one)."""
    real = sum(1 if not isinstance(k, _Mask) else k.ndim for k in items if k is not None and k is not Ellipsis)
    out, dims = 0, []
    for k in items:
        if k is Ellipsis:
            out += ndim - real
        elif isinstance(k, _Mask):
            dims.append(out)
            out += max(k.ndim, 1)
        elif isinstance(k, _Index):
            dims.append(out)
            out += 1
        elif k is None or isinstance(k, slice):
            out += 1
    return dims


def _check_mask(mask_shape: tuple, shape: tuple, start: int) -> None:
    for j, m in enumerate(mask_shape):
        if m != shape[start + j]:
            raise IndexError(f"The shape of the mask {_dims(mask_shape)} at index {j} does not match the shape of "
                             f"the indexed tensor {_dims(shape)} at index {start + j}")


def _dims(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _advanced_setitem(t: Tensor, items, value) -> None:
    """`t[key] = value` for a key with advanced items: torch's index_put_ on the view the
    basic items make (IndexPutBackward0; CopySlices on `t` when that view is not `t`)."""
    from .inplace import check_inplace
    view, starts = _advanced_view(t, items)
    check_inplace(view)        # (torch's autograd checks first: before overlaps, before the mask is read)
    # (torch writes a one-element value through a bool mask by masked_fill_, where the mask is
    # the key's one tensor index; with another (t[mask, mask], t[mask, idx]) by index_put_)
    one_value = value.numel() == 1 if isinstance(value, Tensor) else np.size(value) == 1
    tensor_items = [item for item in items if isinstance(item, _Index)
                    or isinstance(item, _Mask) and not isinstance(item.value, (bool, np.bool_))]
    by_masked_fill = one_value and len(tensor_items) == 1 and isinstance(tensor_items[0], _Mask) and \
        tensor_items[0].ndim > 0
    if by_masked_fill and tensor_items[0].byte:
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype unsigned char")
    if not isinstance(value, Tensor):
        # a number takes the tensor's dtype (2.5 into a long tensor is 2, as torch); so does a
        # NumPy array (torch takes none; basic setitem casts it too), a tensor must match
        value = np.asarray(value, dtype=t._dtype.np)
    elif by_masked_fill:
        # torch writes a one-element value through a bool mask by masked_fill_, which casts it
        # (and reads it as a number first: a 0-d view of t is fine)
        if value._dtype is not t._dtype:
            from .functional import cast
            check_tensor_value_fits(value, t._dtype)
            value = cast(value, t._dtype)
    elif view._data is not None and value._data is not None:
        # index_put_ refuses a value sharing memory with what it writes, even all of it (v[[1, 0]] = v)
        _check_no_partial_overlap(view._data, [value._data], full_too=True)
    elif traced_partial_overlap(view, [value]):
        raise RuntimeError(_PARTIAL_OVERLAP)     # (inside a trace: views of one tensor)
    indices, dims = _index_arrays(view, items, starts)
    if writes_expanded_memory(view, value):
        # torch 2.13 still writes through an expand here (each memory location takes the last
        # value written to any of its replicas), with a deprecation warning per kernel
        warnings.warn(_INDEX_PUT_EXPANDED, UserWarning, stacklevel=user_stacklevel())
        if by_masked_fill:
            warnings.warn(MASKED_FILL_EXPANDED, UserWarning, stacklevel=user_stacklevel())
        value_dtype = value.dtype if isinstance(value, Tensor) else view.dtype
        value = value._concrete() if isinstance(value, Tensor) else value
        attrs = {"dims": dims, "accumulate": False}
        types = (TensorType(tuple(view.shape), view.dtype), TensorType(value.shape, value_dtype),
                 *[TensorType(i.shape, int64) for i in indices])
        infer_types(OPS["index_put_at"], types, attrs, freeze_attrs(attrs))      # torch's shape checks
        write_aliased(view, lambda memory: put_into(memory, value, indices, dims))
        return
    apply_op("index_put_at", [view, value, *_versioned(indices, items)], {"dims": dims, "accumulate": False},
             "IndexPutBackward0", out=view)
