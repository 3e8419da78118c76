"""Creation functions: fg.tensor, fg.from_numpy, zeros/ones/full/empty,
randn/rand, arange, the *_like forms, and the global random generator."""
from __future__ import annotations

from array import array as _PythonArray
import warnings

import numpy as np

from fusegrad.ir import DType, bool_, float32, from_numpy_dtype, int64
from fusegrad.ir.types import PYTHON_TYPE_DTYPES, promote_types

from . import generator as random_generator, trace_state
from fusegrad.ir.fma import fma64
from fusegrad.ir.ops.reduce import torch_parallel_tasks
from .device import check_device
from .memory_format import contiguous_format, memory_format_arg, preserve_format
from .scalar_checks import check_int_parses, check_scalar_fits
from .functional import _shape_arg, missing_argument_texts, warn_once
from .layout import in_dense_order, layout_stand_in
from .tensor import Tensor, warn_scalar_conversion
from .parser_errors import is_int, type_name
from .user_frame import user_stacklevel


def manual_seed(seed: int) -> random_generator.Generator:
    """Seed fusegrad's random generator (rand, randn, randint, uniform_/normal_ and nn's
    initialisers), which then gives torch's numbers for the same seed (tracer/generator.py).
    As torch, the seed is taken as an integer (1.5 is 1) and a negative one wraps to 64
    bits; returns the generator."""
    seed = int(seed)
    if not -2 ** 63 <= seed < 2 ** 64:
        raise ValueError("Overflow when unpacking long long")
    return random_generator.DEFAULT.manual_seed(seed)


def initial_seed() -> int:
    """The seed the random generator started from (torch.initial_seed)."""
    return random_generator.DEFAULT.initial_seed()


def _flatten_tensors(data):
    """`data` with every Tensor replaced by its NumPy value (same nesting)."""
    if isinstance(data, Tensor):
        return data._concrete()
    if isinstance(data, (list, tuple)):
        return [_flatten_tensors(d) for d in data]
    return data


def as_array(data, dtype: DType | None) -> np.ndarray:
    """`data` as an owned NumPy array with torch.tensor's dtype inference and nesting rules.

    As torch: the shape follows the first element at each depth (a Tensor met there
    counts as one number); the dtype is the promotion of every element's (Python
    floats float32, ints int64, bools bool; NumPy values and tensors keep theirs)."""
    if isinstance(data, Tensor):
        array, inferred = np.array(data._concrete(), copy=True), data.dtype
    elif isinstance(data, np.ndarray):
        array = np.array(data, copy=True)
        inferred = from_numpy_dtype(array.dtype)
    else:
        if isinstance(data, (str, bytes)):
            raise TypeError(f"new(): invalid data type '{type_name(data)}'")
        sizes = _compute_sizes(data)
        try:
            inferred = _infer_dtype(data)
        except (RuntimeError, TypeError):
            if dtype is None:
                raise
            if 0 in sizes:
                return np.zeros(sizes, dtype.np)
            # torch infers no dtype where one is given: each element is stored as that dtype,
            # and the first that is no number raises there (_scalar; NumPy would store None
            # as nan and an object as True)
            _store_into(data, sizes, 0, [], not dtype.is_floating_point)
            raise
        if 0 in sizes:
            # torch stores no element of a tensor with none (`[[], [1]]` is a (2, 0) tensor):
            # nothing past the first element's sizes is checked, beyond the dtype inference
            return np.zeros(sizes, (dtype or inferred).np)
        if (dtype or inferred) is int64 or dtype is bool_:
            _check_indexable(data, (dtype or inferred) is int64)
        if dtype is int64 and inferred.is_floating_point:
            # torch checks each number: nan, inf or beyond int64 raises
            array = _store(data, sizes, np.float64)
            if array.size and not (np.isfinite(array).all() and array.min() >= -2.0 ** 63
                                   and array.max() < 2.0 ** 63):
                raise RuntimeError("value cannot be converted to type int64 without overflow")
        else:
            array = _store(data, sizes, (dtype or inferred).np)
    target = dtype or inferred
    with np.errstate(over="ignore"):        # 1e40 as float32 is inf, silently (torch)
        return np.array(array, dtype=target.np, order="C", copy=True)


_SEQUENCES = (list, tuple, range)


def _leaves(data):
    """The items of nested data that are no sequence, in order; a flat list of Python numbers
    is passed over whole (nothing in it fails the checks that walk the data)."""
    if isinstance(data, _SEQUENCES):
        if set(map(type, data)) <= _PLAIN_TYPES.keys():
            return
        for item in data:
            yield from _leaves(item)
    else:
        yield data


def _check_indexable(data, into_int64: bool) -> None:
    """torch stores a number into an integer or bool tensor through Python's index protocol,
    except a Python float: a float tensor or a NumPy float among the data is its TypeError,
    and into int64 a NumPy bool too (`fg.tensor([np.bool_(True), 1])`), the first one met."""
    for item in _leaves(data):
        if isinstance(item, Tensor):
            if item._dtype.is_floating_point:
                raise TypeError("only integer tensors of a single element can be converted to an index")
        elif isinstance(item, np.floating) and not isinstance(item, float) or \
                into_int64 and isinstance(item, np.bool_):
            raise TypeError(f"'numpy.{type(item).__name__}' object cannot be interpreted as an integer")


def _compute_sizes(data) -> tuple:
    """torch's compute_sizes: the lengths met following the first element at each depth."""
    sizes, obj = [], data
    while True:
        if isinstance(obj, np.ndarray):
            if obj.ndim == 0 and obj is not data:
                raise TypeError("len() of unsized object")
            sizes.extend(obj.shape)
            break
        if isinstance(obj, str):            # a string is a sequence of strings, forever
            if obj:
                raise ValueError("too many dimensions 'str'")
            sizes.append(0)
            break
        if not isinstance(obj, _SEQUENCES):
            break                           # a number, or a Tensor standing for one
        sizes.append(len(obj))
        if not obj:
            break
        obj = obj[0]
    return tuple(sizes)


_PLAIN_TYPES = {float: float32, int: int64, bool: bool_}


def _infer_dtype(obj) -> DType:
    """torch's infer_scalar_type: one element's dtype, or the promotion of a sequence's."""
    plain = _PLAIN_TYPES.get(type(obj))
    if plain is not None:
        return plain
    if isinstance(obj, Tensor):
        return obj.dtype
    if isinstance(obj, (np.ndarray, np.generic)) and obj.dtype.kind in "biuf":
        return from_numpy_dtype(obj.dtype)
    if isinstance(obj, int):            # an int subclass (bool cannot be subclassed; np.bool_ is above)
        return int64
    if isinstance(obj, float):
        return float32
    if isinstance(obj, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type_name(obj)}'")
    if isinstance(obj, _SEQUENCES):
        if not obj:
            return float32
        kinds = set(map(type, obj))         # fast path: a flat list of Python numbers
        if kinds <= _PLAIN_TYPES.keys():
            found = [_PLAIN_TYPES[k] for k in kinds]
        else:
            found = [_infer_dtype(item) for item in obj]
        result = found[0]
        for d in found[1:]:
            result = promote_types(result, d)
        return result
    raise RuntimeError(f"Could not infer dtype of {type(obj).__name__}")


def _store(data, sizes: tuple, np_dtype) -> np.ndarray:
    """The values of `data` as an array of shape `sizes` (torch's recursive_store): NumPy
    reads well-formed nesting at once; anything else is walked for torch's errors."""
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            array = np.array(_flatten_tensors(data), dtype=np_dtype)
        if array.shape == sizes:
            return array
    except OverflowError:
        raise ValueError("Overflow when unpacking long long") from None
    except (ValueError, TypeError):
        pass
    values: list = []
    _store_into(data, sizes, 0, values, np.dtype(np_dtype).kind in "iub")
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            return np.array(values, dtype=np_dtype).reshape(sizes)
    except OverflowError:
        raise ValueError("Overflow when unpacking long long") from None


def _store_into(obj, sizes: tuple, dim: int, out: list, integral: bool = False) -> None:
    if dim == len(sizes):
        out.append(_scalar(obj, integral))
        return
    if isinstance(obj, Tensor):
        obj = obj._concrete()
    if isinstance(obj, np.ndarray) and obj.ndim > 0:
        items = list(obj)
    elif isinstance(obj, _SEQUENCES):
        items = obj
    else:
        raise TypeError("not a sequence")
    if len(items) != sizes[dim]:
        raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got {len(items)})")
    for item in items:
        _store_into(item, sizes, dim + 1, out, integral)


def _scalar(obj, integral: bool = False):
    """One number where torch stores a scalar (a one-element tensor gives its value); anything
    else raises the TypeError of torch's conversion to the element type (`integral`: int64 or
    bool, which Python's index protocol converts)."""
    if isinstance(obj, Tensor):
        if obj.numel() != 1:
            if integral:        # (torch's conversion to an int64 or bool element: __index__)
                raise TypeError("only integer tensors of a single element can be converted to an index")
            raise ValueError("only one element tensors can be converted to Python scalars")
        return obj._concrete().reshape(()).item()
    if isinstance(obj, np.ndarray):
        return obj.reshape(()).item() if obj.size == 1 else float(obj)   # float() raises NumPy's error
    if isinstance(obj, (_SEQUENCES, str, bytes)) or not isinstance(obj, (int, float, np.generic)):
        if integral:
            raise TypeError(f"'{type(obj).__name__}' object cannot be interpreted as an integer")
        raise TypeError(f"must be real number, not {type_name(obj)}")
    return obj


@missing_argument_texts
def tensor(data, *, dtype: DType | None = None, requires_grad: bool = False, device=None) -> Tensor:
    """A new leaf tensor copying `data` (nested lists, numbers, arrays or tensors)."""
    return copied_tensor(data, dtype, requires_grad, device, warn_of_tensor=True)


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def copied_tensor(data, dtype, requires_grad, device, warn_of_tensor: bool) -> Tensor:
    """fg.tensor's work; `warn_of_tensor` False where the caller warned in its own words
    (Tensor.new_tensor)."""
    if type(data) is list and dtype is None and device is None and type(requires_grad) is bool and data \
            and all([type(x) is float for x in data]) and -_FLOAT32_MAX <= min(data) and max(data) <= _FLOAT32_MAX:
        # (a flat list of Python floats within float32's range, `fg.tensor([0.5, 2.0])`, the
        # common call: as_array's inference and checks would find a float32 vector; a NaN
        # first fails the range test and takes that path, one later is skipped by min/max,
        # which still find the largest numbers)
        t = Tensor._wrap(np.array(data, dtype=np.float32))
        if requires_grad:
            t._set_requires_grad(True)
        return t
    check_device(device)
    if isinstance(data, (bytearray, memoryview, _PythonArray)):
        data = data.tolist() if isinstance(data, memoryview) else list(data)   # (torch: its items)
    if isinstance(data, (list, tuple)) and data and isinstance(data[0], np.ndarray):
        warn_once("Creating a tensor from a list of numpy.ndarrays is extremely slow. Please consider converting "
                  "the list to a single numpy.ndarray with numpy.array() before converting to a tensor.")
    if isinstance(data, Tensor) and warn_of_tensor:
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than torch.tensor(sourceTensor).",
                      UserWarning, stacklevel=user_stacklevel())
    if isinstance(data, np.ndarray):
        _check_no_negative_strides(data)
    elif isinstance(data, _SEQUENCES) and _holds_a_tensor_requiring_grad(data):
        warn_scalar_conversion()
    array = as_array(data, _dtype_arg("tensor", dtype))
    if isinstance(data, np.ndarray) and array.shape == data.shape:
        array = in_dense_order(array, data)         # torch keeps a dense array's layout
    elif isinstance(data, Tensor) and array.shape == tuple(data.shape):
        array = in_dense_order(array, layout_stand_in(data))    # (and a tensor's: its detach().clone())
    t = Tensor._wrap(array)
    if _grad_flag("tensor", requires_grad, none_allowed=False):
        _require_grad(t)
    return t


def _holds_a_tensor_requiring_grad(data) -> bool:
    """Whether nested data holds a tensor that requires grad (torch.tensor reads each such one
    as a number, with its warning)."""
    return any(isinstance(item, Tensor) and item._requires_grad for item in _leaves(data))


def _check_no_negative_strides(array: np.ndarray) -> None:
    if any(stride < 0 for stride in array.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with negative "
                         "strides are not currently supported. (You can probably work around this by making a "
                         "copy of your array  with array.copy().) ")


_SHARED_DTYPES = (np.float32, np.float64, np.int64, np.bool_)
def from_numpy(*args, **kwargs) -> Tensor:
    """from_numpy(array): a tensor sharing memory with `array`. fusegrad has no int32, int16,
    int8, uint8, uint16, uint32 or float16 dtype: such an array becomes an int64 / float32
    copy, with a warning that its memory is not shared."""
    if kwargs:
        raise TypeError("torch._VariableFunctionsClass.from_numpy() takes no keyword arguments")
    if len(args) != 1:
        raise TypeError(f"torch._VariableFunctionsClass.from_numpy() takes exactly one argument ({len(args)} given)")
    return _from_numpy(args[0])


def _from_numpy(array: np.ndarray) -> Tensor:
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type_name(array)})")
    dtype = from_numpy_dtype(array.dtype)
    if not array.flags.writeable and trace_state.current() is None:
        # (once, as torch's; inside a compiled call a traced value's numpy() is a read-only
        # snapshot: see tests/test_traced_interop.py; torch's array there is writable memory)
        warn_once("The given NumPy array is not writable, and PyTorch does not support non-writable tensors. "
                  "This means writing to this tensor will result in undefined behavior. You may want to copy "
                  "the array to protect its data or make it writable before converting it to a tensor. This "
                  "type of warning will be suppressed for the rest of this program.")
    if array.dtype not in _SHARED_DTYPES:
        warnings.warn(f"fusegrad has no {array.dtype.name} dtype: from_numpy made a {dtype.name} copy of the array, "
                      "which does not share its memory", UserWarning, stacklevel=user_stacklevel())
    # (over a view: the tensor shares the memory, not the array object, whose shape, dtype or
    # flags the caller may set later)
    return wrap_array(array.view())


def wrap_array(array: np.ndarray) -> Tensor:
    """from_numpy without its warning, for arrays passed where a tensor is taken (an operand,
    a compiled function's argument), where sharing memory is not what was asked for."""
    _check_no_negative_strides(array)
    trace = trace_state.current()
    if trace is not None:           # Python may write the array between the traced ops
        trace.expose(array)
    if array.dtype not in _SHARED_DTYPES:
        return Tensor._wrap(array.astype(from_numpy_dtype(array.dtype).np))
    t = Tensor._wrap(array, from_numpy_dtype(array.dtype))
    if array.base is not None:
        # its storage starts at this array's memory (torch.from_numpy's), not at the array it
        # views: Tensor.storage_offset
        t.__dict__["_storage_start"] = array.ctypes.data
    return t


_GENERATOR_SIGNATURES = (
    " * (tuple of ints size, *, torch.Generator generator, Tensor out = None, torch.dtype dtype = None, "
    "torch.layout layout = None, torch.device device = None, bool pin_memory = False, bool requires_grad = False)\n"
    " * (tuple of ints size, *, Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, "
    "torch.device device = None, bool pin_memory = False, bool requires_grad = False)\n")


_GENERATOR_FUNCTIONS = ("randn", "rand")


def _invalid_generator_call(fn: str, size: tuple, *keywords: str) -> TypeError:
    """torch's argument-parser error for randn/rand called with arguments no overload takes."""
    got = ", ".join([type_name(s) for s in size] + list(keywords))
    return TypeError(f"{fn}() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                     + _GENERATOR_SIGNATURES)


def _size(size, fn: str = "empty", keywords: bool = True) -> tuple:
    """The shape given to a creation function as `*size` (ints, or one tuple/list of
    ints), with torch's errors for anything else."""
    for s in size:
        if type(s) is not int or s < 0 or s >= 2 ** 63:
            break
    else:
        if size:            # plain sizes (fg.randn(3)): nothing to parse or check
            return size
    if not size:        # torch: `size` is a required argument (() or [] make a 0-d tensor)
        if not keywords:    # randn()/rand() with no arguments at all
            raise TypeError(f"{fn}() received an invalid combination of arguments - got (), but expected one of:\n"
                            + _GENERATOR_SIGNATURES)
        raise TypeError(f'{fn}() missing 1 required positional arguments: "size"')
    too_many = (lambda: _invalid_generator_call(fn, size)) if fn in _GENERATOR_FUNCTIONS else None
    return _checked(_shape_arg(size, fn, "size", too_many), fn)


def _size_keyword(size: tuple, kw: dict, fn: str) -> tuple:
    """`*size` merged with torch's `size=` keyword (`fg.zeros(size=(2, 3))`); a `device=`
    keyword must name the CPU."""
    if not kw:
        return size
    if "device" in kw:
        kw = dict(kw)
        check_device(kw.pop("device"))
        if not kw:
            return size
    unexpected = next((k for k in kw if k != "size"), None)
    if unexpected is not None:
        raise TypeError(f"{fn}() got an unexpected keyword argument '{unexpected}'")
    if size:
        if fn in _GENERATOR_FUNCTIONS:
            raise _invalid_generator_call(fn, size, "size=tuple")
        raise TypeError(f"{fn}() got multiple values for argument 'size'")
    value = kw["size"]
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"{fn}(): argument 'size' must be tuple of ints, not {type_name(value)}")
    return (value,)


def _checked(out: tuple, fn: str) -> tuple:
    """`out` if no size is negative or over int64; torch's error otherwise."""
    for k, s in enumerate(out):
        if s >= 2 ** 63:
            raise TypeError(f"{fn}(): argument 'size' failed to unpack the object at pos {k + 1} with error "
                            '"Overflow when unpacking long long')       # (torch's text goes on with a C++ trace)
        if s < 0:
            if fn == "zeros":
                raise RuntimeError("zeros: Dimension size must be non-negative.")
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"[{', '.join(map(str, out))}]")
    return out


def legacy_array(args: tuple, dtype: DType, fn: str, mismatch=None) -> np.ndarray:
    """The memory of torch's legacy constructor forms (Tensor(...), Tensor.new(...),
    FloatTensor(...)) in `dtype`: `()` empty, `(t,)` t's own memory (`mismatch(t)` is raised
    where t's dtype differs; None: any dtype is taken), ints or a Size: zeros of that shape
    (torch leaves them uninitialised), `(data,)` a copy of a sequence or array; torch's
    TypeError otherwise."""
    from .tensor import Size, Tensor
    if not args:
        return np.zeros((0,), dtype.np)
    if len(args) == 1 and isinstance(args[0], Tensor):
        if mismatch is not None and args[0]._dtype is not dtype:
            raise mismatch(args[0])
        return args[0]._concrete()
    if isinstance(args[0], Size) or all(type(a) is int for a in args):
        return np.zeros(_checked(tuple(args[0]) if isinstance(args[0], Size) else args, fn), dtype.np)
    if len(args) == 1 and isinstance(args[0], str):
        raise TypeError("new(): invalid data type 'str'")
    if len(args) == 1 and isinstance(args[0], (list, tuple, np.ndarray)):
        return as_array(args[0], dtype)
    raise TypeError(f"new(): data must be a sequence (got {type_name(args[0])})")


def _dtype_arg(fn: str, dtype) -> DType | None:
    """`dtype` if it is None or a dtype; the Python types float, int and bool stand for float64,
    int64 and bool, as in torch; torch's TypeError otherwise (a string would fail deep inside
    NumPy)."""
    if dtype is not None and not isinstance(dtype, DType):
        python_type = PYTHON_TYPE_DTYPES.get(dtype) if isinstance(dtype, type) else None
        if python_type is None:
            raise TypeError(f"{fn}(): argument 'dtype' must be torch.dtype, not {type_name(dtype)}")
        return python_type
    return dtype


_PARSER_OVERLOADED = ("randn", "rand", "arange", "randint", "linspace", "eye")


def _grad_flag(fn: str, requires_grad, none_allowed: bool = True) -> bool:
    """`requires_grad` as a bool, or torch's TypeError for anything else (1, "yes"); None is
    False for the factories whose parser takes an optional bool."""
    if requires_grad is None and none_allowed:
        return False
    if type(requires_grad) is bool:
        return requires_grad
    kind = type_name(requires_grad)         # (torch's parser refuses NumPy's bool too: "numpy.bool")
    if fn in _PARSER_OVERLOADED:
        raise TypeError(f"{fn}() received an invalid combination of arguments - got (..., requires_grad={kind}), "
                        f"but expected one of:")
    raise TypeError(f"{fn}(): argument 'requires_grad' must be bool, not {kind}")


def _new(array: np.ndarray, requires_grad: bool) -> Tensor:
    t = Tensor._wrap(array)
    if requires_grad:
        if not t._dtype.is_floating_point:
            _require_grad(t)                # raises torch's error
        t._set_requires_grad(True)
    return t


def _require_grad(t: Tensor) -> None:
    if not t.dtype.is_floating_point:
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    t._set_requires_grad(True)


def _allocated(shape: tuple, dtype, make) -> np.ndarray:
    """`make()`, which allocates an array of `shape` and NumPy `dtype`, with torch's errors for
    a tensor too large: its byte count overflowing int64, or the allocation failing (NumPy's
    MemoryError names its own sizes; torch's RuntimeError, the tensor's bytes)."""
    numel = _numel(shape)
    if numel < 1 << 20:                 # (small: nothing to check, no allocation to fail)
        return make()
    nbytes = numel * np.dtype(dtype).itemsize
    if nbytes >= 2 ** 63:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}")
    try:
        return make()
    except MemoryError:
        raise RuntimeError(f"[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate "
                           f"memory: you tried to allocate {nbytes} bytes. Error code 12 (Cannot allocate memory)"
                           ) from None


def filled(numpy_fn, size, kw, fn: str, dtype, requires_grad: bool) -> Tensor:
    """zeros / ones / empty (and Tensor.new_*): `numpy_fn(shape, dtype)` of the parsed size,
    with `fn`'s name in the errors."""
    requires_grad = _grad_flag(fn, requires_grad)
    size = _size_keyword(size, kw, fn)
    dtype = (_dtype_arg(fn, dtype) or float32).np
    shape = _size(size, fn)
    return _new(_allocated(shape, dtype, lambda: numpy_fn(shape, dtype=dtype)), requires_grad)


def zeros(*size, dtype: DType | None = None, requires_grad: bool = False, **kw) -> Tensor:
    """A tensor of zeros (float32 unless `dtype` says otherwise)."""
    return filled(np.zeros, size, kw, "zeros", dtype, requires_grad)


def ones(*size, dtype: DType | None = None, requires_grad: bool = False, **kw) -> Tensor:
    """A tensor of ones (float32 unless `dtype` says otherwise)."""
    return filled(np.ones, size, kw, "ones", dtype, requires_grad)


def empty(*size, dtype: DType | None = None, requires_grad: bool = False, memory_format=None, **kw) -> Tensor:
    """An uninitialised tensor (fusegrad's holds zeros: NumPy's calloc costs no more), row-major
    (`memory_format` None or fg.contiguous_format; torch refuses preserve_format here)."""
    if memory_format_arg("empty", memory_format) is preserve_format:
        raise RuntimeError("unsupported memory format Preserve")
    return filled(np.zeros, size, kw, "empty", dtype, requires_grad)


@missing_argument_texts
def full(size, fill_value, *, dtype: DType | None = None, requires_grad: bool = False, device=None) -> Tensor:
    """A tensor of `size` filled with `fill_value` (its dtype inferred as torch: bool,
    int64 for integers, else float32)."""
    check_device(device)
    dtype = _dtype_arg("full", dtype)
    requires_grad = _grad_flag("full", requires_grad)
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not {type_name(size)}")
    if isinstance(fill_value, Tensor) and fill_value.dim() == 0 and not fill_value.requires_grad:
        fill_value = fill_value.item()      # (torch's parser reads a 0-d tensor without grad as a number)
    if not isinstance(fill_value, (int, float, np.number, np.bool_)):
        raise TypeError(f"full(): argument 'fill_value' (position 2) must be Number, not {type_name(fill_value)}")
    check_int_parses(fill_value)
    if dtype is None:
        # (a NumPy bool is no Python bool to torch's parser: a number, of the default dtype)
        dtype = (bool_ if isinstance(fill_value, bool) else
                 int64 if isinstance(fill_value, (int, np.integer)) else float32)
    check_scalar_fits(fill_value, dtype)
    shape = _size((size,), "full")
    with np.errstate(over="ignore", invalid="ignore"):
        return _new(_allocated(shape, dtype.np, lambda: np.full(shape, fill_value, dtype=dtype.np)), requires_grad)


def scalar_tensor(s, *, dtype: DType | None = None, device=None) -> Tensor:
    """torch.scalar_tensor: a 0-d tensor holding number `s`, float32 unless `dtype` says
    otherwise (an int or bool number too, unlike `tensor`)."""
    check_device(device)
    dtype = _dtype_arg("scalar_tensor", dtype)
    if isinstance(s, Tensor) and s.dim() == 0 and not s.requires_grad:
        s = s.item()
    if not isinstance(s, (int, float, np.number, np.bool_)):
        raise TypeError(f"scalar_tensor(): argument 's' (position 1) must be Number, not {type_name(s)}")
    return full((), s, dtype=float32 if dtype is None else dtype)


def _drawn_from(fn: str, size: tuple, kw: dict) -> random_generator.Generator:
    """The generator a `generator=` keyword names (removed from `kw`), else the global one."""
    generator = kw.pop("generator", None)
    gen = random_generator.chosen(generator)
    if gen is None:
        raise _invalid_generator_call(fn, size, f"generator={type_name(generator)}")
    return gen


def randn(*size, dtype: DType | None = None, requires_grad: bool = False, **kw) -> Tensor:
    """Standard normal samples (float32 unless `dtype` says float64), from the global
    generator or a `generator=` one."""
    if not kw and dtype is None and (requires_grad is False or requires_grad is True):
        n = _plain_numel(size)
        if n:                               # fg.randn(3): nothing to parse or check
            return _new(random_generator.DEFAULT.normal(n, np.float32).reshape(size), requires_grad)
    gen = _drawn_from("randn", size, kw) if kw else random_generator.DEFAULT
    size = _size_keyword(size, kw, "randn")
    dtype = _sample_dtype_arg("randn", size, dtype)
    requires_grad = _grad_flag("randn", requires_grad)
    shape = _size(size, "randn", dtype is not None or requires_grad or bool(kw))
    d = _random_dtype(dtype, "normal_kernel_cpu", _numel(shape))
    values = _allocated(shape, d.np, lambda: gen.normal(_numel(shape), d.np))
    return _new(values.reshape(shape), requires_grad)


def rand(*size, dtype: DType | None = None, requires_grad: bool = False, **kw) -> Tensor:
    """Uniform samples in [0, 1) (float32 unless `dtype` says float64), from the global
    generator or a `generator=` one."""
    if not kw and dtype is None and (requires_grad is False or requires_grad is True):
        n = _plain_numel(size)
        if n:                               # fg.rand(3): nothing to parse or check
            return _new(random_generator.DEFAULT.uniform(n, np.float32).reshape(size), requires_grad)
    gen = _drawn_from("rand", size, kw) if kw else random_generator.DEFAULT
    size = _size_keyword(size, kw, "rand")
    dtype = _sample_dtype_arg("rand", size, dtype)
    requires_grad = _grad_flag("rand", requires_grad)
    shape = _size(size, "rand", dtype is not None or requires_grad or bool(kw))
    d = _random_dtype(dtype, "check_uniform_bounds", _numel(shape))
    values = _allocated(shape, d.np, lambda: gen.uniform(_numel(shape), d.np))
    return _new(values.reshape(shape), requires_grad)


def _plain_numel(size: tuple) -> int:
    """The element count of `*size` given as one or more plain ints making a small tensor (one
    that no allocation check concerns); 0 for anything else, which takes the parsing path."""
    if not size:
        return 0                            # (randn(): torch's argument error)
    n = 1
    for s in size:
        if type(s) is not int or s < 0:
            return 0
        n *= s
    return n if n < 1 << 20 else 0


def _numel(shape) -> int:
    n = 1
    for size in shape:
        n *= size
    return n




def _sample_dtype_arg(fn: str, size: tuple, dtype) -> DType | None:
    """randn/rand's `dtype`: a dtype that is none is no overload's, so torch's parser reports the
    call (`got (int, dtype=str)`) where the other factories name the argument."""
    try:
        return _dtype_arg(fn, dtype)
    except TypeError:
        raise _invalid_generator_call(fn, size, f"dtype={type_name(dtype)}") from None


def _random_dtype(dtype: DType | None, kernel: str, numel: int) -> DType:
    """randn/rand sample floating point only: torch's error names the kernel that refuses
    (random_generator.check_sample_dtype)."""
    d = dtype or float32
    random_generator.check_sample_dtype(d, kernel, numel)
    return d


_NO_SIZE = object()



def _randint_arguments(args, low, high, size):
    """(low, high, size, position of size) of a randint call, bound as torch binds its two
    overloads: (high, size) unless `low` is given, as a keyword or a third positional."""
    n, given = len(args), (low, high, size)
    if low is _NO_SIZE and (n == 3 or n == 2 and size is not _NO_SIZE or n == 1 and high is not _NO_SIZE):
        names = ("low", "high", "size")         # randint(low, high, size)
    elif low is _NO_SIZE:
        names = ("high", "size")                # randint(high, size)
    else:
        names = ()                              # randint(low=..., high=..., size=...): keywords only
    bound = dict(zip(("low", "high", "size"), given))
    if n > len(names) or any(bound[name] is not _NO_SIZE for name in names[:n]):
        raise TypeError("randint(): bad argument")     # (worded by tracer/parser_errors.py)
    bound.update(zip(names, args))
    if bound["high"] is _NO_SIZE or bound["size"] is _NO_SIZE:
        raise TypeError("randint(): bad argument")
    explicit_low = bound["low"] is not _NO_SIZE
    return (bound["low"] if explicit_low else 0), bound["high"], bound["size"], (3 if explicit_low else 2)


def randint(*args, low=_NO_SIZE, high=_NO_SIZE, size=_NO_SIZE, dtype: DType | None = None, device=None,
            generator=None, requires_grad: bool = False) -> Tensor:
    """torch.randint(high, size) or randint(low, high, size): integers uniform in [low, high),
    from the global generator or `generator`. The bounds and the size may be keywords
    (`randint(high=4, size=(3,))`, `randint(7, size=(4,))`), as torch's."""
    check_device(device)
    gen = random_generator.required(generator, "randint")
    dtype = _dtype_arg("randint", dtype)
    requires_grad = _grad_flag("randint", requires_grad)
    low, high, size, position = _randint_arguments(args, low, high, size)
    if not (is_int(low) and is_int(high)):
        raise TypeError("randint(): bad argument")     # (worded by tracer/parser_errors.py)
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"randint(): argument 'size' (position {position}) must be tuple of ints, not "
                        f"{type(size).__name__}")
    shape = _size((size,), "randint")
    if not low < high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    if dtype is bool_:                  # (torch's check_from_to_in_range)
        if not 0 <= low <= 1:
            raise RuntimeError("from is out of bounds for bool")
        if not 0 <= high - 1 <= 1:
            raise RuntimeError("to - 1 is out of bounds for bool")
    out = (dtype or int64).np
    values = _allocated(shape, out, lambda: gen.integers(int(low), int(high), _numel(shape)))
    return _new(values.reshape(shape).astype(out), requires_grad)


_ARANGE_SIGNATURES = (
    " * (Number end, *, Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, torch.device device = "
    "None, bool pin_memory = False, bool requires_grad = False)\n"
    " * (Number start, Number end, *, torch.dtype dtype = None, torch.layout layout = None, torch.device device = None, "
    "bool pin_memory = False, bool requires_grad = False)\n"
    " * (Number start, Number end, Number step = 1, *, Tensor out = None, torch.dtype dtype = None, torch.layout layout "
    "= None, torch.device device = None, bool pin_memory = False, bool requires_grad = False)\n")


def _invalid_arange_call(got: str) -> TypeError:
    return TypeError(f"arange() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                     + _ARANGE_SIGNATURES)


_ABSENT = object()          # an argument arange was not given (None is a bad one, as torch says)


def _int64_overflow(v: int):
    """torch's errors for a Python int argument beyond int64: its Scalar parser tries an unsigned
    64-bit int for a large one (which arange then cannot convert), and refuses the rest."""
    if v < 0:
        raise OverflowError("can't convert negative int to unsigned")
    if v >= 1 << 64:
        raise OverflowError("int too big to convert")
    raise RuntimeError("value cannot be converted to type int64_t without overflow")


def arange(first=_ABSENT, /, end=_ABSENT, step=_ABSENT, *, start=_ABSENT, dtype: DType | None = None,
           requires_grad: bool = False, device=None) -> Tensor:
    """torch.arange: `arange(end)`, `arange(start, end, step=1)` or the keywords `start=`, `end=`,
    `step=`; int64 for integer arguments, else float32. An integer dtype truncates the
    arguments first, as torch does (`arange(0, 5, 1.5, dtype=fg.int64)` is 0..4)."""
    check_device(device)
    dtype = _dtype_arg("arange", dtype)
    requires_grad = _grad_flag("arange", requires_grad)
    if dtype is bool_:
        raise NotImplementedError('"arange_cpu" not implemented for \'Bool\'')
    if first is not _ABSENT and start is not _ABSENT:
        raise TypeError("arange() got multiple values for argument 'start'")
    start = first if first is not _ABSENT else start
    if end is _ABSENT:                  # one number: the end
        if first is _ABSENT:
            if start is not _ABSENT:    # arange(start=2)
                raise TypeError('arange() missing 1 required positional arguments: "end"')
            raise _invalid_arange_call("")
        if step is not _ABSENT:         # arange(5, step=2): the one-number form takes no step
            raise _invalid_arange_call(f"{type(first).__name__}, step={type(step).__name__}")
        start, end = 0, first
    elif start is _ABSENT:
        if step is not _ABSENT:         # arange(end=5, step=2)
            raise _invalid_arange_call(f"step={type(step).__name__}, end={type(end).__name__}, ")
        start = 0
    step = 1 if step is _ABSENT else step
    # (a 0-d tensor is a Number to torch's parser; another tensor is refused below)
    start, end, step = (v.item() if isinstance(v, Tensor) and v.dim() == 0 else v for v in (start, end, step))
    for name, v in (("end", end), ("start", start), ("step", step)):
        if not isinstance(v, (int, float, np.number, np.bool_)):
            raise TypeError(f"arange(): argument '{name}' (position {1 if name == 'end' and first is end else 2}) "
                            f"must be Number, not {type_name(v)}")
        if isinstance(v, int) and not -(1 << 63) <= v < (1 << 63):
            _int64_overflow(v)
    _check_range(start, end, step)
    if dtype is None:
        dtype = int64 if all(isinstance(v, (int, np.integer)) for v in (start, end, step)) else float32
    elif not dtype.is_floating_point:
        start, end, step = int(start), int(end), int(step)
        if step == 0:
            raise ValueError("step must be nonzero")
    size = np.ceil((end - start) / step)        # (in double, as torch)
    if size > 9223372036854775807.0:            # beyond int64: torch's check before allocating
        raise RuntimeError("invalid size, possible overflow?")
    n = max(0, int(size))
    if dtype.is_floating_point:
        return _new(_allocated((n,), dtype.np, lambda: _floating_range(float(start), float(step), n, dtype.np)),
                    requires_grad)
    values = _allocated((n,), dtype.np, lambda: start + step * np.arange(n, dtype=np.int64))
    return _new(values.astype(dtype.np), requires_grad)



_RANGE_DEPRECATED = ("torch.range is deprecated and will be removed in a future release because its behavior is "
                     "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                     "[start, end).")


def range_(start=_ABSENT, end=_ABSENT, step=1, *, dtype: DType | None = None, requires_grad: bool = False,
           device=None) -> Tensor:
    """torch.range (fg.range; deprecated, with torch's warning): start, start + step, ... up to
    and including `end`, float32 whatever the arguments' types unless `dtype` says otherwise.
    As torch's kernel, a value is start + i * step worked in double (int64 for an integer
    dtype, which truncates the arguments first) and there are trunc((end - start) / step) + 1."""
    check_device(device)
    dtype = _dtype_arg("range", dtype) or float32
    requires_grad = _grad_flag("range", requires_grad)
    if end is _ABSENT:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    start, end, step = (v.item() if isinstance(v, Tensor) and v.dim() == 0 else v for v in (start, end, step))
    for position, (name, v) in enumerate((("start", start), ("end", end), ("step", step)), 1):
        if not isinstance(v, (int, float, np.number, np.bool_)):
            raise TypeError(f"range(): argument '{name}' (position {position}) must be Number, not {type_name(v)}")
    warnings.warn(_RANGE_DEPRECATED, UserWarning, stacklevel=user_stacklevel())     # (once the call parsed)
    if dtype is bool_:
        raise NotImplementedError('"range_cpu" not implemented for \'Bool\'')
    if not dtype.is_floating_point:
        if not all(np.isfinite(v) for v in (start, end, step)):
            raise RuntimeError(f"unsupported range: {_scalar_str(start)} -> {_scalar_str(end)}")
        start, end, step = int(start), int(end), int(step)
    _check_range(start, end, step)
    if dtype.is_floating_point:
        n = int((float(end) - float(start)) / float(step) + 1)
        make = lambda: (float(start) + np.arange(n, dtype=np.float64) * float(step)).astype(dtype.np)  # noqa: E731
    else:
        n = (end - start) // step + 1 if step > 0 else (start - end) // -step + 1
        make = lambda: start + step * np.arange(n, dtype=np.int64)  # noqa: E731
    return _new(_allocated((n,), dtype.np, make), requires_grad)


def _check_range(start, end, step) -> None:
    """torch's checks of arange's and range's numbers: a step that is not 0 or NaN, finite
    bounds, and a step that goes from start toward end."""
    if not (step > 0 or step < 0):               # 0 or NaN
        raise RuntimeError("step must be nonzero")
    if not (np.isfinite(start) and np.isfinite(end)):
        raise RuntimeError(f"unsupported range: {_scalar_str(start)} -> {_scalar_str(end)}")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")

def _floating_range(start: float, step: float, n: int, out: np.dtype) -> np.ndarray:
    """torch's floating arange, bit for bit: its CPU kernel computes in double, one fused
    multiply-add a value, and is vectorised (vectors of 32 bytes: 8 float32 or 4 float64) over
    blocks of two vectors, in which element j of a vector is its first element, rounded to
    the result's dtype, plus j * step; the elements after the last whole block are
    start + i * step. (arange(-1, 1, 0.1) has -2.98e-09 where the exact value is 0.)
    A range of GRAIN_SIZE (32768) elements or more is split among torch's threads
    (at::parallel_for), and each chunk starts its blocks at its own first element."""
    result = np.empty(n, out)
    tasks = torch_parallel_tasks(n)
    chunk = -(-n // tasks) if n else 0
    for begin in range(0, n, max(chunk, 1)):
        _range_chunk(result, begin, min(n, begin + chunk), start, step, out)
    return result


def _range_chunk(result: np.ndarray, begin: int, end: int, start: float, step: float, out: np.dtype) -> None:
    """One thread's part of _floating_range, result[begin:end], worked as (vectors, lanes) in
    blocks of _RANGE_BLOCK elements, so that a long range's float64 temporaries stay small
    (arange(0, 1, 1e-7) took 2.5 s in one pass)."""
    lanes = 32 // np.dtype(out).itemsize
    whole = begin + ((end - begin) // (2 * lanes)) * 2 * lanes      # the elements of whole blocks
    lane = np.arange(lanes, dtype=np.float64)
    for first_index in range(begin, whole, _RANGE_BLOCK):
        stop = min(whole, first_index + _RANGE_BLOCK)
        firsts = np.arange(first_index, stop, lanes, dtype=np.float64)      # each vector's first index
        first = fma64(step, firsts, start).astype(out).astype(np.float64)
        result[first_index:stop] = fma64(step, lane[None, :], first[:, None]).reshape(-1)
    if whole < end:
        result[whole:end] = fma64(step, np.arange(whole, end, dtype=np.float64), start)


_RANGE_BLOCK = 1 << 16          # (a multiple of every vector block: 2 * 8 lanes)


def _scalar_str(x) -> str:
    """A number as torch prints a Scalar in messages (1.0 as 1, inf, nan)."""
    return f"{x:g}" if isinstance(x, float) else str(x)


_LINSPACE_FORMS = "".join(
    f" * ({a} start, {b} end, int steps, *, Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, "
    f"torch.device device = None, bool pin_memory = False, bool requires_grad = False)\n"
    for a, b in (("Tensor", "Tensor"), ("Number", "Tensor"), ("Tensor", "Number"), ("Number", "Number")))


def linspace(start, end, steps, *extra, dtype: DType | None = None, requires_grad: bool = False,
             device=None) -> Tensor:
    """`steps` evenly spaced values from `start` to `end` inclusive (0-d tensors stand for
    numbers; `dtype` is keyword-only, as torch's parser has it)."""
    check_device(device)
    if isinstance(steps, Tensor) and steps.dim() == 0 and steps._dtype is int64:
        steps = int(steps.item())       # (an integer 0-d tensor is an int to torch's parser)
    if extra or isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        got = ", ".join(type_name(v) for v in (start, end, steps) + extra)
        raise TypeError(f"linspace() received an invalid combination of arguments - got ({got}), but expected one "
                        f"of:\n{_LINSPACE_FORMS}")
    dtype = _dtype_arg("linspace", dtype)
    requires_grad = _grad_flag("linspace", requires_grad)
    if dtype is bool_:
        raise NotImplementedError('"linspace_cpu" not implemented for \'Bool\'')
    for name, v in (("start", start), ("end", end)):
        if isinstance(v, Tensor) and v.dim() != 0:
            raise RuntimeError(f"linspace only supports 0-dimensional start and end tensors, but got {name} with "
                               f"{v.dim()} dimension(s).")
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    start, end = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    out = (dtype or float32).np
    return _new(_allocated((steps,), out, lambda: _torch_linspace(start, end, steps, out)), requires_grad)


def _torch_linspace(start, end, steps: int, out: np.dtype) -> np.ndarray:
    """torch's linspace, as its CPU kernel computes it: the step in the result's dtype (double for
    integers), the first half counted up from start and the second down from end. (Its
    linspace(-1, 1, 11) has -1.49e-08 where the exact value is 0, and prints so.)"""
    out = np.dtype(out)
    if steps <= 1:
        return np.full(steps, start).astype(out)
    as_type = out.type if out.kind == "f" else (lambda v: np.float64(int(v)))
    first, last = as_type(start), as_type(end)
    step = (last - first) / as_type(steps - 1)
    # Each value is one fused multiply-add, rounded once, in the step's precision.
    i = np.arange(steps, dtype=np.float64)
    up = i < steps // 2
    step = float(step)
    values = fma64(np.where(up, step, -step), np.where(up, i, steps - 1 - i),
                   np.where(up, float(first), float(last)))
    return values.astype(out)


def eye(n, m=_NO_SIZE, *, dtype: DType | None = None, requires_grad: bool = False, device=None) -> Tensor:
    """An n x m (n x n) matrix with ones on the diagonal (torch's keywords: dtype and the
    others by name only)."""
    for v in (n, m):
        if v is not _NO_SIZE and not is_int(v):
            raise TypeError("eye(): bad argument")     # (worded by tracer/parser_errors.py)
    m = None if m is _NO_SIZE else m
    check_device(device)
    dtype = _dtype_arg("eye", dtype)
    requires_grad = _grad_flag("eye", requires_grad)
    for name, v in (("n", n), ("m", m)):
        if v is not None and v < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
    out = (dtype or float32).np
    return _new(_allocated((n, n if m is None else m), out, lambda: np.eye(n, m, dtype=out)), requires_grad)


def _like_source(t, fn: str) -> Tensor:
    """The tensor a *_like function copies shape and dtype from: a Tensor, or a NumPy array
    (accepted wherever a tensor is); torch's TypeError for anything else."""
    if isinstance(t, Tensor):
        return t
    if isinstance(t, np.ndarray):
        return Tensor._wrap(np.zeros(t.shape, dtype=from_numpy_dtype(t.dtype).np))
    raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not {type_name(t)}")


def _like_layout(result: Tensor, source: Tensor, memory_format=None) -> Tensor:
    """`result` (row-major, of source's shape) with source's strides where source's elements
    fill their memory densely (torch's memory_format=torch.preserve_format, the default); as
    it is for contiguous_format."""
    if memory_format is contiguous_format:      # (checked by the caller: memory_format_arg)
        return result
    if source._data is not None:
        result._data = in_dense_order(result._data, source._data)
    else:       # traced: the layout its view chain, or the op that made it, gives it
        result._data = in_dense_order(result._data, layout_stand_in(source))
    return result


def _check_like_keywords(fn: str, kw: dict) -> None:
    """A `*_like` takes `device=` besides its named keywords (not `size=`, which its maker
    would): torch's text names the `*_like` function."""
    unexpected = next((k for k in kw if k != "device"), None)
    if unexpected is not None:
        raise TypeError(f"{fn}() got an unexpected keyword argument '{unexpected}'")


def _like(fn):
    def like(input, *, dtype: DType | None = None, requires_grad: bool = False, memory_format=None, **kw):
        t = _like_source(input, fn.__name__ + "_like")
        _check_like_keywords(fn.__name__ + "_like", kw)
        memory_format_arg(fn.__name__ + "_like", memory_format)      # (before dtype, in torch's order)
        dtype = _dtype_arg(fn.__name__ + "_like", dtype)
        requires_grad = _grad_flag(fn.__name__ + "_like", requires_grad)
        return _like_layout(fn(tuple(t.shape), dtype=dtype or t.dtype, requires_grad=requires_grad, **kw), t,
                            memory_format)
    # (its keywords are keyword-only, as torch's: Python's text names it)
    like.__name__ = like.__qualname__ = fn.__name__ + "_like"
    like.__doc__ = f"`{fn.__name__}` with another tensor's shape and dtype."
    return missing_argument_texts(like)


zeros_like = _like(zeros)
ones_like = _like(ones)
empty_like = _like(empty)


def _random_like(fn, fill):
    """randn_like / rand_like: an empty tensor laid out as the source (preserve_format), then
    filled in memory order as torch's kernels fill it; `fill(array)` writes the samples."""
    def like(input, *, dtype: DType | None = None, requires_grad: bool = False, memory_format=None, generator=None,
             **kw):
        t = _like_source(input, fn.__name__ + "_like")
        gen = _drawn_from(fn.__name__ + "_like", (t,), {"generator": generator})
        _check_like_keywords(fn.__name__ + "_like", kw)
        memory_format_arg(fn.__name__ + "_like", memory_format)
        dtype = _dtype_arg(fn.__name__ + "_like", dtype)
        requires_grad = _grad_flag(fn.__name__ + "_like", requires_grad)
        result = _like_layout(empty(tuple(t.shape), dtype=dtype or t.dtype, **kw), t, memory_format)
        _random_dtype(result.dtype, "normal_kernel_cpu" if fn is randn else "check_uniform_bounds", result.numel())
        if result.numel():
            fill(result._data, gen)
        if requires_grad:
            _require_grad(result)
        return result
    like.__name__ = like.__qualname__ = fn.__name__ + "_like"
    like.__doc__ = f"`{fn.__name__}` with another tensor's shape, dtype and layout."
    return like


def _fill_normal(array: np.ndarray, gen) -> None:
    random_generator.fill(array, gen.normal(array.size, array.dtype, contiguous=array.flags.c_contiguous))


def _fill_uniform(array: np.ndarray, gen) -> None:
    random_generator.fill(array, gen.uniform(array.size, array.dtype))


randn_like = _random_like(randn, _fill_normal)
rand_like = _random_like(rand, _fill_uniform)


def randint_like(input, low=_NO_SIZE, high=_NO_SIZE, *, dtype: DType | None = None, requires_grad: bool = False,
                 memory_format=None, generator=None, device=None) -> Tensor:
    """torch.randint_like(input, high) or (input, low, high): integers uniform in [low, high)
    with input's shape, dtype (a float input gives floats) and layout, drawn as randint's
    (`high` may be a 0-d tensor, torch's Tensor overload)."""
    check_device(device)
    if high is _NO_SIZE:
        low, high = 0, low
        if isinstance(high, Tensor):
            if high.dim() != 0:
                raise RuntimeError("high must be a scalar tensor and on CPU")
            high = int(high.item())
    if not (is_int(low) and is_int(high)):
        raise TypeError("randint_like(): bad argument")     # (worded by tracer/parser_errors.py)
    t = _like_source(input, "randint_like")
    memory_format_arg("randint_like", memory_format)
    gen = random_generator.required(generator, "randint_like")
    dtype = _dtype_arg("randint_like", dtype) or t.dtype
    requires_grad = _grad_flag("randint_like", requires_grad)
    if not low < high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    result = _like_layout(empty(tuple(t.shape), dtype=dtype), t, memory_format)
    if result.numel():
        random_generator.fill(result._data, gen.integers(int(low), int(high), result.numel()).astype(dtype.np))
    if requires_grad:
        _require_grad(result)
    return result


@missing_argument_texts
def full_like(input, fill_value, *, dtype: DType | None = None, requires_grad: bool = False, device=None,
              memory_format=None) -> Tensor:
    """`full` with another tensor's shape and dtype (laid out as a dense input, torch's default
    preserve_format, or row-major with memory_format=contiguous_format)."""
    check_device(device)
    t = _like_source(input, "full_like")
    memory_format_arg("full_like", memory_format)
    dtype = _dtype_arg("full_like", dtype)
    requires_grad = _grad_flag("full_like", requires_grad)
    if not isinstance(fill_value, (Tensor, int, float, np.number, np.bool_)):
        raise TypeError(f"full_like(): argument 'fill_value' (position 2) must be Number, not "
                        f"{type(fill_value).__name__}")
    return _like_layout(full(tuple(t.shape), fill_value, dtype=dtype or t.dtype, requires_grad=requires_grad), t,
                        memory_format)
