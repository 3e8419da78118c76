"""torch.as_strided, as_strided_copy and as_strided_scatter (the ops: ir/ops/strided.py), and
the creation functions that lay out memory: empty_strided, empty_permuted, frombuffer.

`t.as_strided(size, stride, storage_offset=None)` views the memory `t` views with any sizes
and strides, from `storage_offset` (t's own by default), with torch's checks and texts. The
result is a view of t (AsStridedBackward0; `_base` is t's base, as torch's), and its gradient
is torch's: what reaches each position t covers, the rest dropped (positions shared by several
elements of an overlapping t split it evenly).

Eagerly the view is t's memory and may reach memory outside t's own elements (the rest of its
base), as torch's. Inside fg.compile a value is not always laid out in memory as torch's
tensor is, so a view there must read only positions t covers (else NotImplementedError), and
an in-place write through such a view anywhere (the memory of its base rewritten through t)
is refused likewise.
"""
from __future__ import annotations

import operator

from fusegrad.ir.ops.strided import covers

from .dispatch import apply_op
from .layout import contiguous_strides
from .functional import as_tensor, int_argument
from .parser_errors import ArgParser, function_texts, method_texts, type_name
from .tensor import Tensor

_ARGS = "tuple of ints size, tuple of ints stride, int? storage_offset = None"


def _int_tuple(value, fn: str, arg: str, pos: int) -> tuple:
    """A `tuple of ints` argument, or torch's parser TypeError."""
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be tuple of ints, not {type_name(value)}")
    for k, v in enumerate(value):
        if isinstance(v, bool) or not hasattr(v, "__index__"):
            raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be tuple of ints, but found element "
                            f"of type {type_name(v)} at pos {k}")
    return tuple(operator.index(v) for v in value)


def _listed(values) -> str:
    return "[" + ", ".join(map(str, values)) + "]"


def _geometry(t: Tensor, size, stride, storage_offset, fn: str, clone_of_overlap: bool = False) -> dict:
    """as_strided's attributes for a view of t, after torch's checks in torch's order.
    `clone_of_overlap` (as_strided_scatter): a t whose memory overlaps itself (an expand's)
    is taken as its contiguous clone, as torch's clone_preserve_strides does."""
    size = _int_tuple(size, fn, "size", 2)
    stride = _int_tuple(stride, fn, "stride", 3)
    overlapping = clone_of_overlap and any(n > 1 and s == 0 for n, s in zip(t.shape, t.stride()))
    own_offset = 0 if overlapping else t.storage_offset()
    offset = own_offset if storage_offset is None else int_argument(storage_offset, fn, "storage_offset", 4)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: {_listed(stride)}")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    if any(n < 0 for n in size):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={_listed(size)} and strides={_listed(stride)}")
    itemsize = t.element_size()
    needed = 0 if 0 in size else itemsize * (offset + 1 + sum((n - 1) * s for n, s in zip(size, stride)))
    in_stride = tuple(contiguous_strides(tuple(t.shape)) if overlapping else t.stride())
    outside = not covers(tuple(t.shape), in_stride, size, stride, offset - own_offset)
    if t._sym is None or overlapping:
        available = t.numel() * itemsize if overlapping else t.untyped_storage().nbytes()
        if needed > available:
            raise RuntimeError(f"setStorage: sizes {_listed(size)}, strides {_listed(stride)}, storage offset "
                               f"{offset}, and itemsize {itemsize} requiring a storage size of {needed} are out "
                               f"of bounds for storage of size {available}")
    return {"size": size, "stride": stride, "offset": offset - own_offset, "in_stride": in_stride,
            "storage_offset": None if storage_offset is None else offset, "outside": outside}


def as_strided(input, size, stride, storage_offset=None) -> Tensor:
    """torch.as_strided: a view of the memory `input` views with `size`, element `stride` and
    `storage_offset` (input's own by default) (AsStridedBackward0)."""
    t = as_tensor(input, "as_strided")
    geometry = _geometry(t, size, stride, storage_offset, "as_strided")
    if t._sym is not None and geometry["outside"]:
        raise NotImplementedError("fusegrad: as_strided inside fg.compile reading memory outside the elements of "
                                  "its input is not supported; call it outside the compiled function, or on the "
                                  "tensor that owns that memory")
    return apply_op("as_strided", [t], geometry, "AsStridedBackward0")


def as_strided_copy(input, size, stride, storage_offset=None) -> Tensor:
    """torch.as_strided_copy: as_strided's values in new row-major memory (AsStridedBackward0_copy)."""
    from .copy_functions import _copied
    t = as_tensor(input, "as_strided_copy")
    return _copied(t, as_strided(t, size, stride, storage_offset), "AsStridedBackward0_copy")


def as_strided_scatter(input, src, size, stride, storage_offset=None) -> Tensor:
    """torch.as_strided_scatter: `input` copied (with the memory it views: torch's
    clone_preserve_strides) with the view's positions holding `src`, read back as input
    (AsStridedScatterBackward0): positions of the view beyond input's elements are dropped."""
    t = as_tensor(input, "as_strided_scatter")
    s = as_tensor(src, "as_strided_scatter", "src", 2)
    geometry = _geometry(t, size, stride, storage_offset, "as_strided_scatter", clone_of_overlap=True)
    if t.requires_grad and not t.is_contiguous():
        raise RuntimeError("!self.requires_grad() || self.is_contiguous() INTERNAL ASSERT FAILED at "
                           "\"/__w/pytorch/pytorch/aten/src/ATen/native/TensorShape.cpp\":4754, please report a "
                           "bug to PyTorch. as_strided_scatter is currently only supported for contiguous inputs")
    if tuple(s.shape) != geometry["size"]:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{_listed(s.shape)}, slice size = {_listed(geometry['size'])}")
    if s.dtype is not t.dtype:
        from .functional import cast
        s = cast(s, t.dtype)
    del geometry["outside"]
    return apply_op("as_strided_scatter", [t, s], geometry, "AsStridedScatterBackward0")


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad: bool = False,
                  pin_memory: bool = False) -> Tensor:
    """torch.empty_strided: a new tensor of `size` with element `stride`s over memory of just
    the size they need (fusegrad's holds zeros), as torch's."""
    import numpy as np
    from fusegrad.ir import float32
    from .creation import _dtype_arg, _grad_flag, _new
    from .device import check_device
    check_device(device)
    dtype = _dtype_arg("empty_strided", dtype) or float32
    requires_grad = _grad_flag("empty_strided", requires_grad)
    size = _int_tuple(size, "empty_strided", "size", 1)
    stride = _int_tuple(stride, "empty_strided", "stride", 2)
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of strides "
                           f"({len(stride)})")
    if any(n < 0 for n in size):
        negative = next(n for n in size if n < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {negative}: {_listed(size)}")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={_listed(size)} and strides={_listed(stride)}")
    elements = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    memory = np.zeros(elements, dtype.np)
    item = memory.itemsize
    array = np.ndarray(size, dtype.np, buffer=memory, strides=tuple(s * item for s in stride))
    return _new(array, requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad: bool = False,
                   pin_memory: bool = False) -> Tensor:
    """torch.empty_permuted: a new tensor of `size` whose memory is dense in the order
    `physical_layout` gives its dims (outermost first)."""
    size = _int_tuple(size, "empty_permuted", "size", 1)
    order = _int_tuple(physical_layout, "empty_permuted", "physical_layout", 2)
    if len(order) != len(size):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; i.e. "
                           f"len(size) = {len(size)} is not equal to len(physical_layout) = {len(order)}")
    if sorted(order) != list(range(len(size))):
        raise RuntimeError("Duplicate dim not allowed")
    stride, step = [0] * len(size), 1
    for d in reversed(order):
        stride[d] = step
        step *= max(size[d], 1)
    return empty_strided(size, tuple(stride), dtype=dtype, device=device, requires_grad=requires_grad)


def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0, requires_grad: bool = False) -> Tensor:
    """torch.frombuffer: a 1-d tensor over the memory of an object exposing the buffer protocol
    (sharing it: writes go through), `count` elements of `dtype` from byte `offset`."""
    import numpy as np
    from .creation import _grad_flag, _new
    requires_grad = _grad_flag("frombuffer", requires_grad)
    view = memoryview(buffer).cast("B")
    itemsize = np.dtype(dtype.np).itemsize
    length = view.nbytes - offset
    if offset < 0 or offset >= view.nbytes and view.nbytes:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
                         f"({view.nbytes} bytes) minus 1")
    if count <= 0 and length % itemsize:
        raise ValueError(f"buffer length ({length} bytes) after offset ({offset} bytes) must be a multiple of "
                         f"element size ({itemsize})")
    if count > 0 and count * itemsize > length:
        raise ValueError(f"requested buffer length ({count} * {itemsize} bytes) after offset ({offset} bytes) must "
                         f"not be greater than actual buffer length ({view.nbytes} bytes)")
    array = np.frombuffer(view, dtype.np, count=count if count > 0 else -1, offset=offset)
    if not array.flags.writeable:
        import warnings
        warnings.warn("The given buffer is not writable, and PyTorch does not support non-writable tensors. This "
                      "means you can write to the underlying (supposedly non-writable) buffer using the tensor. You "
                      "may want to copy the buffer to protect its data or make it writable before converting it to a "
                      "tensor. This type of warning will be suppressed for the rest of this program.", UserWarning,
                      stacklevel=2)
    return _new(array, requires_grad)


_FUNCTION = f"(Tensor input, {_ARGS})"
PUBLIC = {
    "empty_strided": empty_strided,
    "empty_permuted": empty_permuted,
    "frombuffer": frombuffer,
    "as_strided": function_texts(as_strided, ArgParser("as_strided", _FUNCTION)),
    "as_strided_copy": function_texts(as_strided_copy, ArgParser("as_strided_copy", f"(Tensor input, {_ARGS}, "
                                                                                     "*, Tensor out = None)")),
    "as_strided_scatter": function_texts(as_strided_scatter, ArgParser(
        "as_strided_scatter", f"(Tensor input, Tensor src, {_ARGS})")),
}
METHODS = {
    "as_strided": method_texts(as_strided, ArgParser("as_strided", f"({_ARGS})")),
    "as_strided_scatter": method_texts(as_strided_scatter, ArgParser("as_strided_scatter", f"(Tensor src, {_ARGS})")),
}


def install_methods() -> None:
    """Bind METHODS on Tensor."""
    for name, fn in METHODS.items():
        setattr(Tensor, name, fn)
