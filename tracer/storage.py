"""torch's storages, as far as code inspects them: Tensor.untyped_storage() and the deprecated
Tensor.storage() describe the memory a tensor views (its start, size in bytes or elements, its
bytes or values), so that `a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()`
tells whether two tensors share memory, as in torch. A storage is a read-only description:
fusegrad has no storage objects that tensors are built on, so there is no set_ or resize of one.

The storage of a tensor starts where its storage_offset() counts from (the memory owner's
start, or a NumPy view's start for fg.from_numpy of a view, as torch) and ends at the end of
the memory owner. The same memory gives the same storage object while one is alive (`is`, as
torch's).
"""
from __future__ import annotations

import ctypes
import warnings
import weakref

import numpy as np

from .tensor import Tensor, _memory_of

_LIVE: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()
_TYPED_WARNED = [False]


class UntypedStorage:
    """torch.UntypedStorage of a tensor's memory: data_ptr(), nbytes(), size() and len() (in
    bytes), element_size() (1), device, tolist() (the bytes), indexing, is_shared()."""

    def __init__(self, root: np.ndarray, start: int, nbytes: int) -> None:
        self._root = root               # (keeps the memory alive while the storage is)
        self._start, self._nbytes = start, nbytes

    def data_ptr(self) -> int:
        """The address of the storage's first byte."""
        return self._start

    def nbytes(self) -> int:
        """The storage's size in bytes."""
        return self._nbytes

    def size(self) -> int:
        """The storage's size in bytes (an untyped storage's elements are bytes)."""
        return self._nbytes

    def __len__(self) -> int:
        return self._nbytes

    def element_size(self) -> int:
        """1: an untyped storage's elements are bytes."""
        return 1

    @property
    def device(self):
        """The CPU, where every fusegrad tensor lives."""
        from .device import device
        return device("cpu")

    def is_shared(self) -> bool:
        """False: fusegrad's memory is never in shared memory."""
        return False

    def tolist(self) -> list:
        """The storage's bytes, as ints."""
        return list(ctypes.string_at(self._start, self._nbytes)) if self._nbytes else []

    def __getitem__(self, index):
        return self.tolist()[index]

    def __iter__(self):
        return iter(self.tolist())

    def __repr__(self) -> str:
        values = "\n ".join(str(v) for v in self.tolist())      # (as torch's: " \n" when empty)
        return f" {values}\n[fg.storage.UntypedStorage(device=cpu) of size {self._nbytes}]"


class TypedStorage:
    """torch.TypedStorage (Tensor.storage(), deprecated in torch, which warns once): the
    untyped storage read as elements of the tensor's dtype; size() and len() count elements."""

    def __init__(self, untyped: UntypedStorage, dtype) -> None:
        self._untyped, self.dtype = untyped, dtype

    def untyped(self) -> UntypedStorage:
        """The storage's bytes (Tensor.untyped_storage())."""
        return self._untyped

    def data_ptr(self) -> int:
        """The address of the storage's first element."""
        return self._untyped.data_ptr()

    def nbytes(self) -> int:
        """The storage's size in bytes."""
        return self._untyped.nbytes()

    def element_size(self) -> int:
        """Bytes per element of the dtype."""
        return self.dtype.itemsize

    def size(self) -> int:
        """The number of elements."""
        return self._untyped.nbytes() // self.dtype.itemsize

    def __len__(self) -> int:
        return self.size()

    @property
    def device(self):
        """The CPU."""
        return self._untyped.device

    def is_shared(self) -> bool:
        """False: fusegrad's memory is never in shared memory."""
        return False

    def _values(self) -> np.ndarray:
        n = self.size()
        if n == 0:
            return np.empty(0, self.dtype.np)
        buffer = (ctypes.c_char * (n * self.dtype.itemsize)).from_address(self.data_ptr())
        return np.frombuffer(buffer, dtype=self.dtype.np, count=n)

    def tolist(self) -> list:
        """The storage's elements, as Python numbers."""
        return self._values().tolist()

    def __getitem__(self, index):
        return self.tolist()[index]

    def __iter__(self):
        return iter(self.tolist())

    def __repr__(self) -> str:
        values = "\n ".join(str(v) for v in self.tolist())
        return f" {values}\n[fg.storage.TypedStorage(dtype={self.dtype!r}, device=cpu) of size {self.size()}]"


def untyped_storage(t: Tensor) -> UntypedStorage:
    """torch's Tensor.untyped_storage(): the storage of the memory `t` views (see the module)."""
    array = t._concrete()
    root = _memory_of(array)[0]
    start = array.ctypes.data - t.storage_offset() * array.itemsize
    end = root.ctypes.data + root.nbytes if root.size else start
    key = (id(root), start)
    found = _LIVE.get(key)
    if found is None or found._root is not root:
        found = _LIVE[key] = UntypedStorage(root, start, max(end - start, 0))
    return found


def typed_storage(t: Tensor) -> TypedStorage:
    """torch's Tensor.storage(), with its deprecation warning (once a process)."""
    if not _TYPED_WARNED[0]:
        _TYPED_WARNED[0] = True
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the "
                      "only storage class. This should only matter to you if you are using storages directly.  To "
                      "access UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()",
                      UserWarning, stacklevel=3)
    return TypedStorage(untyped_storage(t), t.dtype)


def is_set_to(t: Tensor, other) -> bool:
    """torch's Tensor.is_set_to(other): the same memory, offset, sizes and strides."""
    if not isinstance(other, Tensor):
        from .parser_errors import type_name
        raise TypeError(f"is_set_to(): argument 'tensor' (position 1) must be Tensor, not {type_name(other)}")
    return (untyped_storage(t) is untyped_storage(other) and t.storage_offset() == other.storage_offset()
            and tuple(t.shape) == tuple(other.shape) and t.stride() == other.stride())
