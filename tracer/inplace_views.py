"""torch's in-place view ops: `Tensor.unsqueeze_(dim)`, `squeeze_(dim)`, `t_()` and
`transpose_(dim0, dim1)` change the tensor's own shape and strides (its memory stays), return
it, bump its version by one and make it the output of torch's node (UnsqueezeBackward1,
SqueezeBackward3/4/5, TBackward1, TransposeBackward1), whose gradient is the view op's.

Eager only: inside fg.compile they raise NotImplementedError (a traced value's shape is
fixed when recorded; use the out-of-place forms there)."""
from __future__ import annotations

import numpy as np

from fusegrad.ir.ops import normalize_dim
from fusegrad.ir.program import freeze_attrs

from . import trace_state
from .dispatch import _memory_owner, apply_op, set_history
from .functional import _numpy_spellings
from .grad_mode import is_grad_enabled
from .inplace import check_inplace
from .node import SHAPES_CHANGED
from .tensor import Tensor


def _compiled_refusal(fn: str) -> NotImplementedError:
    return NotImplementedError(f"Tensor.{fn}() (an in-place view op) is not supported inside fg.compile: use the "
                               f"out-of-place form (x = x.{fn[:-1]}(...)) there")


def _rebind(t: Tensor, op: str, attrs: dict, name: str, fn: str) -> Tensor:
    """Give `t` the metadata of the view op (op, attrs) of itself, as torch's in-place view ops."""
    if trace_state.current() is not None:
        raise _compiled_refusal(fn)
    check_inplace(t)
    before = tuple(t.shape)
    view = apply_op(op, [t], attrs, name)
    t._data = view._data
    t._vbox[0] += 1
    if t._base is not None:
        # (still a view of the same base, one step further along its chain)
        t._view_chain = view._view_chain
        t._view_version = t._vbox[0]
    else:
        # views of t made before keep reading their memory: dispatch.relaid_chain puts the
        # inverse of this op ahead of their chains
        inverse = ("permute", freeze_attrs({"dims": tuple(int(d) for d in np.argsort(attrs["dims"]))})) \
            if op == "permute" else ("reshape", freeze_attrs({"shape": before}))
        t.__dict__.setdefault("_relayouts", []).append((t._vbox[0],) + inverse)
    if view._grad_fn is not None and is_grad_enabled():
        set_history(t, view._grad_fn, view._output_nr)
    elif t._grad_fn is not None and tuple(view.shape) != tuple(t._grad_fn.out_types[t._output_nr].shape):
        SHAPES_CHANGED[0] = True        # (its node keeps the old shape: the engine reconciles them)
    return t


@_numpy_spellings
def unsqueeze_(self: Tensor, dim) -> Tensor:
    """Insert a size-1 dim at `dim`, in place (UnsqueezeBackward1)."""
    from .functional import _int_arg
    dim = _int_arg("unsqueeze_", "dim", 1, dim)
    shape = list(self.shape)
    shape.insert(normalize_dim(dim, self.dim() + 1), 1)
    return _rebind(self, "reshape", {"shape": tuple(shape)}, "UnsqueezeBackward1", "unsqueeze_")


_MISSING = object()


@_numpy_spellings
def squeeze_(self: Tensor, *dims, dim=_MISSING) -> Tensor:
    """Drop size-1 dims in place: all of them (SqueezeBackward3), `dim` (SqueezeBackward4) or
    those among a tuple of dims (SqueezeBackward5)."""
    from .functional import _check_squeeze_dim, _dims, _int_list_tensor
    if dims:
        if dim is not _MISSING or len(dims) > 1:
            dim = dims if len(dims) > 1 else dims[0]
            if dim is not dims[0] and len(dims) > 1 and not isinstance(dims[0], int):
                raise TypeError("squeeze_(): bad arguments")
        else:
            dim = dims[0]
    dim = _int_list_tensor(dim)
    if dim is not _MISSING:
        try:
            _check_squeeze_dim(dim, method=True)
        except TypeError as exc:
            raise TypeError(str(exc).replace("squeeze()", "squeeze_()")) from None
    shape = tuple(self.shape)
    if dim is _MISSING:
        new, name = tuple(s for s in shape if s != 1), "SqueezeBackward3"
    else:
        axes = () if isinstance(dim, (tuple, list)) and not dim else _dims(dim, self.dim(), "squeeze")
        new = tuple(s for i, s in enumerate(shape) if not (i in axes and s == 1))
        name = "SqueezeBackward5" if isinstance(dim, (tuple, list)) else "SqueezeBackward4"
    return _rebind(self, "reshape", {"shape": new}, name, "squeeze_")


def t_(self: Tensor) -> Tensor:
    """Transpose a 0-d to 2-d tensor in place (TBackward1)."""
    if self.dim() > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
    return _rebind(self, "permute", {"dims": tuple(reversed(range(self.dim())))}, "TBackward1", "t_")


def transpose_(self: Tensor, dim0, dim1) -> Tensor:
    """Swap dims `dim0` and `dim1` in place (TransposeBackward1)."""
    from .functional import _int_arg
    dim0 = _int_arg("transpose_", "dim0", 1, dim0)
    dim1 = _int_arg("transpose_", "dim1", 2, dim1)
    n = self.dim()
    d0, d1 = normalize_dim(dim0, n), normalize_dim(dim1, n)
    dims = list(range(n))
    if n:
        dims[d0], dims[d1] = dims[d1], dims[d0]
    return _rebind(self, "permute", {"dims": tuple(dims)}, "TransposeBackward1", "transpose_")


def resize_(self: Tensor, *sizes, memory_format=None) -> Tensor:
    """torch's Tensor.resize_: `self` takes the shape `sizes` (ints, or one tuple), row-major
    over its memory from where it starts; memory it lacks is added (new elements hold zeros
    here, garbage in torch), and then no longer shared with tensors that viewed the old one.
    Its version moves unless the shape is unchanged, as torch's. A view resized stays over
    its base's memory, no longer a view to autograd. Refused: a tensor that requires grad
    (torch's error), inside fg.compile."""
    from .functional import _shape_arg
    from .memory_format import memory_format_arg
    if not sizes:
        raise TypeError('resize_() missing 1 required positional arguments: "size"')
    shape = tuple(_shape_arg(sizes, "resize_", "size"))
    memory_format_arg("resize_", memory_format)
    if trace_state.current() is not None:
        raise NotImplementedError("Tensor.resize_() is not supported inside fg.compile")
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if any(n < 0 for n in shape):
        raise RuntimeError("numel: integer multiplication overflow")
    if shape == tuple(self.shape):
        return self
    numel = int(np.prod(shape, dtype=np.int64))
    offset = self.storage_offset()
    root = _memory_owner(self._data)
    flat = root.reshape(-1) if root.flags.c_contiguous else None
    if flat is None or offset + numel > flat.size:
        # (more memory than the tensor has: a new block, the old contents first)
        grown = np.zeros(offset + numel, self._data.dtype)
        old = self.untyped_storage().nbytes() // self._data.itemsize
        if flat is not None:
            grown[:min(old, flat.size)] = flat[:min(old, flat.size)]
        flat = grown
    self._data = flat[offset:offset + numel].reshape(shape)
    self._vbox[0] += 1
    self.__dict__.pop("_layout", None)
    if self._base is not None:
        # (a view resized: still over its base's memory, sharing its version counter, but no
        # view op of the base describes it now; it has no history to regenerate, as it cannot
        # require grad)
        self._base = None
        for key in ("_view_chain", "_view_version", "_view_node", "_no_grad_view"):
            self.__dict__.pop(key, None)
    return self


def resize_as_(self: Tensor, the_template, memory_format=None) -> Tensor:
    """torch's Tensor.resize_as_: resize_ to the template's shape."""
    return resize_(self, tuple(the_template.shape), memory_format=memory_format)


def install() -> None:
    """Bind the methods on Tensor (where it has none of that name)."""
    for fn in (unsqueeze_, squeeze_, t_, transpose_, resize_, resize_as_):
        if not hasattr(Tensor, fn.__name__):
            setattr(Tensor, fn.__name__, fn)


install()
