"""torch's Tensor methods that run Python on each element, and the shared-memory flags.

`t.apply_(fn)` replaces each element by `fn(element)`; `t.map_(other, fn)` by `fn(element,
other's element)` (other broadcast to t's shape). Both work on t's memory, element by element
in its memory order (so an expand's shared memory takes the last value), refuse a tensor that
requires grad with torch's text, convert results as torch's do (int(), bool(), float()), and
leave the version counter as it was, as torch's (they are not tracked writes). Eager only.

`t.share_memory_()` returns t: fusegrad runs in one process, so its memory is already
"shared" with every user of it; `is_shared()` is then True, as torch's. Also the small ones:
`as_subclass` (an alias of another Tensor class), `to_dense` (t itself), `pin_memory` (no
accelerator: torch's error), `_is_view`.
"""
from __future__ import annotations

import builtins
import numbers

import numpy as np

from . import trace_state
from .tensor import Tensor


def _check(t: Tensor, name: str) -> None:
    if trace_state.current() is not None or t._data is None:
        raise NotImplementedError(f"fusegrad: Tensor.{name}() runs Python on each element; it is not supported "
                                  "inside fg.compile")
    if t._requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead.")


def _converter(t: Tensor):
    """What torch makes of a callable's result for t's dtype."""
    kind = t._data.dtype.kind

    def convert(value):
        if not isinstance(value, (numbers.Number, np.generic)) or isinstance(value, complex):
            raise TypeError(f"must be real number, not {type(value).__name__}")
        return bool(value) if kind == "b" else int(value) if kind == "i" else float(value)
    return convert


def _rewrite(t: Tensor, fn, others=()) -> Tensor:
    """Each element of t's memory replaced by fn(element, *the others' elements), converted to
    t's dtype as torch's; fn must be callable (the methods' argument is named `callable`, as
    torch's, hence builtins.callable)."""
    from .dispatch import READ_ONLY_MEMORY, _writable_memory
    if not builtins.callable(fn):
        raise TypeError(f"'{type(fn).__name__}' object is not callable")
    target = _writable_memory(t._data)
    if target is None:
        raise RuntimeError(READ_ONLY_MEMORY)
    convert = _converter(t)
    for index in np.ndindex(target.shape):
        target[index] = convert(fn(target[index].item(), *[other[index].item() for other in others]))
    return t


def apply_(self: Tensor, callable) -> Tensor:
    """torch's Tensor.apply_: each element replaced by callable(element) (a Python number)."""
    _check(self, "apply_")
    return _rewrite(self, callable)


def map_(self: Tensor, tensor, callable) -> Tensor:
    """torch's Tensor.map_: each element replaced by callable(element, tensor's element), tensor
    broadcast to self's shape."""
    from .functional import as_tensor, expand
    _check(self, "map_")
    other = expand(as_tensor(tensor, "map_"), tuple(self.shape))._data
    return _rewrite(self, callable, (other,))


def share_memory_(self: Tensor) -> Tensor:
    """torch's Tensor.share_memory_: a no-op here (one process); is_shared() is True after it."""
    self.__dict__["_shared"] = True
    return self


def as_subclass(self: Tensor, cls) -> Tensor:
    """torch's Tensor.as_subclass: an alias of this tensor (AliasBackward0 where it has
    history or requires grad) whose class is `cls`, a subclass of Tensor."""
    from .dispatch import apply_op
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass(): argument 'cls' must be a subclass of torch.Tensor, not "
                        f"{cls.__name__ if isinstance(cls, type) else type(cls).__name__}")
    alias = apply_op("reshape", [self], {"shape": tuple(self.shape)}, "AliasBackward0")
    alias.__class__ = cls
    return alias


def to_dense(self: Tensor, dtype=None, *, masked_grad=None) -> Tensor:
    """torch's Tensor.to_dense: a strided tensor (every fusegrad tensor) is returned as is
    (cast where `dtype` is given)."""
    return self if dtype is None else self.to(dtype)


def pin_memory(self: Tensor, device=None) -> Tensor:
    """torch's Tensor.pin_memory: pinned memory needs an accelerator, which fusegrad has none of."""
    raise RuntimeError("Cannot access accelerator device when none is available.")


def _is_view(self: Tensor) -> bool:
    """torch's Tensor._is_view: whether this tensor is a view of another (has a _base)."""
    return self._base is not None


METHODS = {"apply_": apply_, "map_": map_, "share_memory_": share_memory_, "_is_view": _is_view,
           "as_subclass": as_subclass, "to_dense": to_dense, "pin_memory": pin_memory}


def install() -> None:
    """Bind the methods on Tensor (Tensor.is_shared reads share_memory_'s flag)."""
    for name, fn in METHODS.items():
        if name not in Tensor.__dict__:
            setattr(Tensor, name, fn)
