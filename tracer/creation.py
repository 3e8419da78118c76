"""Creation functions: fg.tensor, fg.from_numpy, zeros/ones/full/empty,
randn/rand, arange, the *_like forms, and the global random generator."""
from __future__ import annotations

import numpy as np

from fusegrad.ir import DType, bool_, float32, from_numpy_dtype, int64

from . import trace_state
from .tensor import Tensor

_rng = [np.random.default_rng()]


def manual_seed(seed: int):
    """Seed fusegrad's random generator (randn, rand and nn's initialisers). As torch, the
    seed is taken as an integer (1.5 is 1) and a negative one wraps to 64 bits."""
    seed = int(seed)
    if not -2 ** 63 <= seed < 2 ** 64:
        raise ValueError("Overflow when unpacking long long")
    _rng[0] = np.random.default_rng(seed % 2 ** 64)
    return _rng[0]


def generator() -> np.random.Generator:
    return _rng[0]


def _flatten_tensors(data):
    if isinstance(data, Tensor):
        return data._concrete()
    if isinstance(data, (list, tuple)):
        return [_flatten_tensors(d) for d in data]
    return data


def as_array(data, dtype: DType | None) -> np.ndarray:
    """`data` as an owned NumPy array with torch's dtype inference (Python floats -> float32)."""
    if isinstance(data, np.ndarray):
        array = np.array(data, copy=True)
        inferred = from_numpy_dtype(array.dtype)
    else:
        if isinstance(data, (str, bytes)) or data is None:
            raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
        try:
            array = np.array(_flatten_tensors(data))
        except ValueError:
            _check_ragged(data, 0)
            raise
        if array.dtype == object or array.dtype.kind in "USV":
            raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
        inferred = from_numpy_dtype(array.dtype) if array.dtype.kind in "biu" else (
            float32 if array.dtype.kind == "f" and not _has_float64_scalars(data) else from_numpy_dtype(array.dtype))
        if array.dtype.kind == "b":
            inferred = bool_
    target = dtype or inferred
    with np.errstate(over="ignore"):        # 1e40 as float32 is inf, silently (torch)
        return np.array(array, dtype=target.np, order="C", copy=True)


def _check_ragged(data, dim: int) -> None:
    """torch's ValueError for nested sequences of unequal lengths."""
    if not isinstance(data, (list, tuple)) or not data:
        return
    first = data[0]
    expect = len(first) if isinstance(first, (list, tuple)) else None
    for item in data:
        got = len(item) if isinstance(item, (list, tuple)) else None
        if expect is not None and got != expect:
            raise ValueError(f"expected sequence of length {expect} at dim {dim + 1} (got {got if got is not None else 'scalar'})")
        _check_ragged(item, dim + 1)


def _has_float64_scalars(data) -> bool:
    # NumPy float64 scalars keep float64 (as in torch); Python floats don't.
    return isinstance(data, np.floating) and data.dtype == np.float64


def tensor(data, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    """A new leaf tensor copying `data` (nested lists, numbers, arrays or tensors)."""
    t = Tensor._wrap(as_array(data, dtype))
    if requires_grad:
        _require_grad(t)
    return t


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with `array`."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    trace = trace_state.current()
    if trace is not None:           # Python may write the array between the traced ops
        trace.expose(array)
    return Tensor._wrap(array, from_numpy_dtype(array.dtype)) if array.dtype in (
        np.float32, np.float64, np.int64, np.bool_) else Tensor._wrap(array.astype(from_numpy_dtype(array.dtype).np))


_GENERATOR_SIGNATURES = (
    " * (tuple of ints size, *, torch.Generator generator, Tensor out = None, torch.dtype dtype = None, "
    "torch.layout layout = None, torch.device device = None, bool pin_memory = False, bool requires_grad = False)\n"
    " * (tuple of ints size, *, Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, "
    "torch.device device = None, bool pin_memory = False, bool requires_grad = False)\n")


def _size(size, fn: str = "empty", keywords: bool = True) -> tuple:
    """The shape given to a creation function as `*size` (ints, or one tuple/list of
    ints), with torch's errors for anything else."""
    if not size:        # torch: `size` is a required argument (() or [] make a 0-d tensor)
        if not keywords:    # randn()/rand() with no arguments at all
            raise TypeError(f"{fn}() received an invalid combination of arguments - got (), but expected one of:\n"
                            + _GENERATOR_SIGNATURES)
        raise TypeError(f'{fn}() missing 1 required positional arguments: "size"')
    if len(size) == 1 and not isinstance(size[0], (tuple, list)):
        d = _dim_size(size[0])
        if d is None:
            raise TypeError(f"{fn}(): argument 'size' (position 1) must be tuple of ints, not "
                            f"{type(size[0]).__name__}")
        return _checked((d,), fn)
    items = size[0] if len(size) == 1 else size
    out = []
    for s in items:
        d = _dim_size(s, bools=bool(out))           # torch takes a bool after the first size
        if d is None and not out:
            if len(size) > 1:
                raise TypeError(f"{fn}() takes 1 positional argument but {len(size)} were given")
            raise TypeError(f"{fn}(): argument 'size' (position 1) must be tuple of ints, but found element "
                            f"of type {type(s).__name__} at pos 0")
        if d is None:
            raise TypeError(f"{fn}(): argument 'size' failed to unpack the object at pos {len(out) + 1} with "
                            f'error "type must be tuple of ints,but got {type(s).__name__}"')
        out.append(d)
    return _checked(tuple(out), fn)


def _checked(out: tuple, fn: str) -> tuple:
    """`out` if no size is negative; torch's error otherwise."""
    for s in out:
        if s < 0:
            if fn == "zeros":
                raise RuntimeError("zeros: Dimension size must be non-negative.")
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"[{', '.join(map(str, out))}]")
    return out


def _dim_size(s, bools: bool = False):
    """One size as an int (ints, NumPy integers, 0-d integer tensors), else None."""
    if isinstance(s, Tensor):
        return int(s.item()) if s.dim() == 0 and s.dtype is int64 else None
    if isinstance(s, bool) and not bools:
        return None
    if isinstance(s, (int, np.integer)):
        return int(s)
    return None


def _new(array: np.ndarray, requires_grad: bool) -> Tensor:
    t = Tensor._wrap(array)
    if requires_grad:
        _require_grad(t)
    return t


def _require_grad(t: Tensor) -> None:
    if not t.dtype.is_floating_point:
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    t.requires_grad_(True)


def zeros(*size, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    return _new(np.zeros(_size(size, "zeros"), dtype=(dtype or float32).np), requires_grad)


def ones(*size, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    return _new(np.ones(_size(size, "ones"), dtype=(dtype or float32).np), requires_grad)


def empty(*size, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    return _new(np.zeros(_size(size, "empty"), dtype=(dtype or float32).np), requires_grad)


def full(size, fill_value, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    """A tensor of `size` filled with `fill_value` (its dtype inferred as torch: bool,
    int64 for integers, else float32)."""
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not {type(size).__name__}")
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if not isinstance(fill_value, (int, float, np.number, np.bool_)):
        raise TypeError(f"full(): argument 'fill_value' (position 2) must be Number, not {type(fill_value).__name__}")
    if dtype is None:
        dtype = (bool_ if isinstance(fill_value, (bool, np.bool_)) else
                 int64 if isinstance(fill_value, (int, np.integer)) else float32)
    with np.errstate(over="ignore", invalid="ignore"):
        return _new(np.full(_size((size,), "full"), fill_value, dtype=dtype.np), requires_grad)


def randn(*size, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    """Standard normal samples (float32 unless `dtype` says float64)."""
    shape = _size(size, "randn", dtype is not None or requires_grad)
    d = _random_dtype(dtype, "normal_kernel_cpu")
    return _new(_rng[0].standard_normal(shape).astype(d.np), requires_grad)


def rand(*size, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    """Uniform samples in [0, 1) (float32 unless `dtype` says float64)."""
    shape = _size(size, "rand", dtype is not None or requires_grad)
    d = _random_dtype(dtype, "check_uniform_bounds")
    return _new(_rng[0].random(shape).astype(d.np), requires_grad)


_TORCH_SCALAR_NAMES = {"int64": "Long", "bool": "Bool"}


def _random_dtype(dtype: DType | None, kernel: str) -> DType:
    """randn/rand sample floating point only: torch's error names the kernel that refuses."""
    d = dtype or float32
    if not d.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_TORCH_SCALAR_NAMES.get(d.name, d.name)}\'')
    return d


def randint(low, high=None, size=(), dtype: DType | None = None) -> Tensor:
    if high is None:
        low, high = 0, low
    return _new(_rng[0].integers(low, high, size=_size((size,))).astype((dtype or int64).np), False)


def arange(start, end=None, step=1, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    """torch.arange: int64 for integer arguments, else float32."""
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    if end is None:
        start, end = 0, start
    if not (step > 0 or step < 0):               # 0 or NaN
        raise RuntimeError("step must be nonzero")
    if not (np.isfinite(start) and np.isfinite(end)):
        raise RuntimeError(f"unsupported range: {_scalar_str(start)} -> {_scalar_str(end)}")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype is None:
        dtype = int64 if all(isinstance(v, (int, np.integer)) for v in (start, end, step)) else float32
    n = max(0, int(np.ceil((end - start) / step)))
    values = start + step * np.arange(n, dtype=np.float64 if dtype.is_floating_point else np.int64)
    return _new(values.astype(dtype.np), requires_grad)


def _scalar_str(x) -> str:
    """A number as torch prints a Scalar in messages (1.0 as 1, inf, nan)."""
    return f"{x:g}" if isinstance(x, float) else str(x)


def linspace(start, end, steps, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    return _new(np.linspace(start, end, steps).astype((dtype or float32).np), requires_grad)


def eye(n, m=None, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    return _new(np.eye(n, m, dtype=(dtype or float32).np), requires_grad)


def _like(fn):
    def like(t, dtype: DType | None = None, requires_grad: bool = False, **kw):
        return fn(tuple(t.shape), dtype=dtype or t.dtype, requires_grad=requires_grad, **kw)
    like.__name__ = fn.__name__ + "_like"
    like.__doc__ = f"`{fn.__name__}` with another tensor's shape and dtype."
    return like


zeros_like = _like(zeros)
ones_like = _like(ones)
empty_like = _like(empty)
randn_like = _like(randn)
rand_like = _like(rand)


def full_like(t, fill_value, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    return full(tuple(t.shape), fill_value, dtype=dtype or t.dtype, requires_grad=requires_grad)
