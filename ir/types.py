"""Abstract values of the IR: dtypes, tensor types and torch's type promotion.

A value in a program carries only its abstract type (shape and dtype), as in a
jaxpr. Promotion follows torch: categories bool < integer < floating; tensors
with dimensions decide the result unless a 0-d tensor or a Python scalar is of
a higher category, and a Python float only lifts to the default float dtype
(float32), never to float64.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True, eq=False)
class DType:
    """A fusegrad dtype; one instance per dtype, compared by identity."""

    name: str          # torch's name: "float32"
    short: str         # printer's name: "f32"
    np: np.dtype       # the NumPy dtype that stores it
    category: int      # 0 bool, 1 integer, 2 floating

    is_floating_point: bool = field(init=False)    # category == 2 (a plain attribute: read on every op)

    def __post_init__(self):
        object.__setattr__(self, "is_floating_point", self.category == 2)

    @property
    def itemsize(self) -> int:
        """torch's dtype.itemsize: bytes per element."""
        return self.np.itemsize

    @property
    def is_signed(self) -> bool:
        """torch's dtype.is_signed: every dtype but bool."""
        return self.category != 0

    @property
    def is_complex(self) -> bool:
        """torch's dtype.is_complex: False (fusegrad has no complex dtype)."""
        return False

    def __repr__(self) -> str:
        return f"fg.{self.name}"

    def __reduce__(self):
        return (from_name, (self.name,))


# torch's class is torch.dtype: type(fg.float32).__name__ and the texts Python writes about
# an instance ("'dtype' object is not callable") name it so.
DType.__name__ = DType.__qualname__ = "dtype"
DType.__module__ = "fusegrad"

bool_ = DType("bool", "bool", np.dtype(np.bool_), 0)
int64 = DType("int64", "i64", np.dtype(np.int64), 1)
float32 = DType("float32", "f32", np.dtype(np.float32), 2)
float64 = DType("float64", "f64", np.dtype(np.float64), 2)

ALL_DTYPES = (bool_, int64, float32, float64)
DEFAULT_FLOAT = float32
_BY_NAME = {d.name: d for d in ALL_DTYPES}
# torch's legacy tensor type names (what t.type() returns and its error texts print), by
# dtype name; its expand errors name bool by the backend type instead.
TORCH_TYPE_NAMES = {"float32": "torch.FloatTensor", "float64": "torch.DoubleTensor", "int64": "torch.LongTensor",
                    "bool": "torch.BoolTensor"}
EXPAND_TYPE_NAMES = {**TORCH_TYPE_NAMES, "bool": "CPUBoolType"}   # (and its version-counter errors)
# torch's scalar type names, by dtype name ("result type Float can't be cast to ...").
TORCH_SCALAR_NAMES = {"float32": "Float", "float64": "Double", "int64": "Long", "bool": "Bool"}
# The dtype torch reads a Python type as, where one is given as a dtype (`t.to(float)`, `dtype=int`)
PYTHON_TYPE_DTYPES = {float: float64, int: int64, bool: bool_}
_BY_NP = {d.np: d for d in ALL_DTYPES}
# NumPy dtypes that have no fusegrad dtype of their own map to the nearest one.
_NP_FALLBACK = {
    np.dtype(np.float16): float32,
    np.dtype(np.int8): int64, np.dtype(np.int16): int64, np.dtype(np.int32): int64,
    np.dtype(np.uint8): int64, np.dtype(np.uint16): int64, np.dtype(np.uint32): int64,
}


def from_name(name: str) -> DType:
    """The dtype named `name` ("float32", ...); also how dtypes unpickle."""
    return _BY_NAME[name]


def from_numpy_dtype(dt) -> DType:
    """The fusegrad dtype that stores NumPy dtype `dt` (TypeError if none does)."""
    try:
        found = _BY_NP.get(dt)                  # dt is usually an np.dtype already (hot path)
    except TypeError:
        found = None
    if found is not None:
        return found
    dt = np.dtype(dt)
    if dt in _BY_NP:
        return _BY_NP[dt]
    if dt in _NP_FALLBACK:
        return _NP_FALLBACK[dt]
    if not dt.isnative:         # (torch's text: from_numpy, tensor and as_tensor alike)
        raise ValueError("given numpy array has byte order different from the native byte order. Conversion "
                         "between byte orders is currently not supported.")
    if dt in (np.dtype(np.uint64), np.dtype(np.complex64), np.dtype(np.complex128)):
        # (torch has these; its text would list them as supported)
        raise TypeError(f"can't convert np.ndarray of type numpy.{dt.type.__name__}: fusegrad has no {dt.name} dtype "
                        "(its dtypes are float32, float64, int64 and bool; arrays of narrower integers and of "
                        "float16 convert to int64 and float32)")
    raise TypeError(f"can't convert np.ndarray of type numpy.{dt.type.__name__}. The only supported types are: "
                    "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint64, uint32, "
                    "uint16, uint8, and bool.")


def _higher(a: DType, b: DType) -> DType:
    """The promoted dtype of two tensors' dtypes (torch.promote_types)."""
    if a is b:
        return a
    if a.category != b.category:
        return a if a.category > b.category else b
    return a if a.itemsize >= b.itemsize else b


def promote_types(a: DType, b: DType) -> DType:
    """torch.promote_types."""
    return _higher(a, b)


# Operand kinds for result_type: torch gives dimensioned tensors priority over
# 0-d tensors, and 0-d tensors over Python scalars, within one category.
DIMMED, ZERO_DIM, SCALAR = 0, 1, 2


def scalar_dtype(x) -> DType:
    """The dtype a Python scalar would have as a tensor (bool, int64, float32)."""
    if isinstance(x, (bool, np.bool_)):
        return bool_
    if isinstance(x, (int, np.integer)):
        return int64
    return DEFAULT_FLOAT


def result_type(operands) -> DType:
    """torch.result_type over (dtype, kind) pairs, kind one of DIMMED, ZERO_DIM, SCALAR."""
    best = [None, None, None]
    for dtype, kind in operands:
        best[kind] = dtype if best[kind] is None else _higher(best[kind], dtype)
    result = None
    for kind in (DIMMED, ZERO_DIM, SCALAR):
        d = best[kind]
        if d is None:
            continue
        if result is None:
            result = d
        elif d.category > result.category:
            # A lower-priority operand only matters when it lifts the category;
            # a Python float lifts to the default dtype, not to float64.
            result = DEFAULT_FLOAT if (kind == SCALAR and d.category == 2) else d
    return result


class TensorType:
    """The abstract value of an IR variable: a static shape and a dtype.

    Interned: `TensorType(shape, dtype)` returns the one instance for that pair,
    so types compare and hash by identity (in C). The tracer keys its caches of
    shape rules on tuples of types, once per traced op."""

    __slots__ = ("shape", "dtype", "__weakref__")
    _interned: dict = {}

    def __new__(cls, shape, dtype):
        key = (shape, dtype)
        try:
            t = cls._interned.get(key)
        except TypeError:                       # a list (or other unhashable sequence) of sizes
            key = (tuple(shape), dtype)
            t = cls._interned.get(key)
        if t is None:
            t = object.__new__(cls)
            object.__setattr__(t, "shape", tuple(key[0]))
            object.__setattr__(t, "dtype", dtype)
            t = cls._interned.setdefault(key, t)
        return t

    def __setattr__(self, name, value):
        raise AttributeError(f"TensorType is immutable (cannot set {name!r})")

    def __reduce__(self):
        return (TensorType, (self.shape, self.dtype))

    def __repr__(self) -> str:
        return f"TensorType(shape={self.shape!r}, dtype={self.dtype!r})"

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    @property
    def numel(self) -> int:
        """The number of elements (the product of the shape; 1 for a 0-d type)."""
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __str__(self) -> str:
        return f"{self.dtype.short}[{','.join(str(s) for s in self.shape)}]"
