"""Binds the functional forms to `Tensor` as methods and operators, in one
explicit table (no namespace wrapping at import time: grep finds them here)."""
from __future__ import annotations

import re
import warnings

import numpy as np

from fusegrad.ir import bool_, float32, float64, from_numpy_dtype, int64
from fusegrad.ir.ops import broadcast_shapes
from fusegrad.ir.types import TORCH_SCALAR_NAMES, TORCH_TYPE_NAMES, DType

from . import creation
from . import functional as F
from . import extra_functions, gathering, indexing, inplace, math_functions, moments, parser_errors, predicates, products, sorting, splitting
from . import statistics  # (cumprod, median, quantile, unique...: statistics.METHODS)
from . import shape_functions  # (diagonal, trace, roll, unfold, repeat_interleave...: shape_functions.METHODS)
from . import scattering  # (scatter, scatter_add, scatter_reduce, index_add/copy/fill, masked_scatter...: scattering.METHODS)
from . import linalg_functions  # (inner, addmm, cross, det, eq_, logical_and_, gcd, sinc...: linalg_functions.METHODS)
from . import special_functions  # (lgamma, digamma, polygamma, erfinv, mvlgamma, i0 and their in-place forms)
from . import complex_functions  # (angle, isreal; the properties real and imag)
from . import sampling  # (multinomial)
from . import misc_functions  # (histogram, cov, index_put_, put_, renorm, frexp, narrow_copy...: misc_functions.METHODS)
from .dispatch import MASKED_FILL_EXPANDED, apply_op, result_cast_error, write_aliased, writes_expanded_memory
from .tensor import Tensor, read_only
from .memory_format import memory_format_arg
from .parser_errors import type_name
from .scalar_checks import written_number
from .user_frame import user_stacklevel


def _reflected(fn):
    def method(self, other):
        return fn(other, self)
    return method


def _tensor_other(fn):
    """A method whose `other` must be a tensor: torch names it argument 'other' (position 1)."""
    def method(self, other):
        return fn(self, F.as_tensor(other, fn.__name__, "other", 1))
    method.__name__ = fn.__name__
    return method


_MISSING_ARGUMENTS = re.compile(r"^(\w+)\(\) missing \d+ required positional arguments?: ('\w+'.*)$")   # Python's
_EXTRA_ARGUMENTS = re.compile(r"^(\w+)\(\) takes (?:from (\d+) to )?(\d+) positional arguments? but (\d+) (?:was|were) given$")


def _without_self(found) -> TypeError:
    """Python's "takes 2 positional arguments but 3 were given" for a method, in torch's
    count, which leaves self out ("takes 1 positional argument but 2 were given")."""
    name, low, high, given = found.group(1), found.group(2), int(found.group(3)) - 1, int(found.group(4)) - 1
    if low is not None:
        return TypeError(f"{name}() takes from {int(low) - 1} to {high} positional arguments but {given} were given")
    return TypeError(f"{name}() takes {high} positional argument{'' if high == 1 else 's'} but {given} "
                     f"{'was' if given == 1 else 'were'} given")


def _counted_from_self(fn):
    """`fn` bound as a method: torch counts a method's arguments after self, so `x.add(None)`
    names argument 'other' at position 1 where `torch.add(x, None)` says position 2."""
    prefix = f"{fn.__name__}(): argument '"

    def method(self, *args, **kwargs):
        try:
            return fn(self, *args, **kwargs)
        except TypeError as exc:
            text = str(exc)
            missing = _MISSING_ARGUMENTS.match(text)
            if missing is not None and missing.group(1) == fn.__name__:
                # Python's binding text (x.transpose(0)), in torch's parser's words
                raise F.missing_arguments_error(fn.__name__, re.findall(r"'(\w+)'", missing.group(2))) from None
            extra = _EXTRA_ARGUMENTS.match(text)
            if extra is not None and extra.group(1) == fn.__name__:
                raise _without_self(extra) from None
            found = F.ARGUMENT_POSITION.match(text) if text.startswith(prefix) else None
            if found is None or found.group(2) == "1":
                raise
            shifted = f"(position {int(found.group(2)) - 1})"
            raise TypeError(text[:found.start(2) - len("(position ")] + shifted + text[found.end(2) + 1:]) from None
    method.__name__, method.__doc__ = fn.__name__, fn.__doc__
    return method


def _array_rdiv(self, other):
    """`other / self`. For a NumPy array `other`, torch's __rtruediv__ computes
    `self.reciprocal() * other`, which NumPy finishes (and wraps as a tensor): the result
    dtype is NumPy's promotion of the array's with the reciprocal's (an int64 array over a
    float32 tensor: float64; a float32 array over an int64 tensor, whose reciprocal is
    float32: float32), the reciprocal rounded in its own dtype first."""
    if isinstance(other, np.ndarray):
        reciprocal = F.reciprocal(self)
        dtype = np.result_type(other.dtype, reciprocal._dtype.np)
        return F.mul(reciprocal.to(from_numpy_dtype(dtype)), F.as_tensor(other.astype(dtype, copy=False)))
    return F.rdiv(self, other)


def _python_method(fn):
    """A method torch defines in Python (torch/_tensor.py): Python's own argument errors name it
    `Tensor.<name>()`."""
    prefix = f"{fn.__name__}() got an unexpected keyword argument"

    def method(self, *args, **kwargs):
        try:
            return fn(self, *args, **kwargs)
        except TypeError as exc:
            if str(exc).startswith(prefix):
                raise TypeError("Tensor." + str(exc)) from None
            raise
    method.__name__, method.__doc__ = fn.__name__, fn.__doc__
    return method


_norm_with_arguments = _python_method(F.norm)


def _tensor_norm_binding(self, p="fro", dim=None, keepdim=False, dtype=None) -> None:
    """torch's Tensor.norm signature (a Python method): calling it raises Python's TypeError,
    in torch's words, for arguments it cannot bind."""


_tensor_norm_binding.__name__, _tensor_norm_binding.__qualname__ = "norm", "Tensor.norm"


def _norm(self, *args, **kwargs) -> Tensor:
    """t.norm(...); the call with no arguments, a loop's stopping test, skips the argument
    checks' layers (its eager cost is a few microseconds, most of it the op itself)."""
    if not args and not kwargs and type(self) is Tensor and self._dtype.is_floating_point:
        return F.whole_norm(self)
    _tensor_norm_binding(self, *args, **kwargs)
    if len(args) == 4 and "dtype" not in kwargs:
        # (torch's Tensor.norm(p, dim, keepdim, dtype) takes dtype in 4th place, where
        # torch.norm has it keyword-only)
        *args, kwargs["dtype"] = args
    return _norm_with_arguments(self, *args, **kwargs)


def _binary_operator(fn, scalars: bool = True, reflected: bool = False, arrays_reflected: bool = False,
                     numpy_dtype: str | None = None):
    """`t op other`. A reflected operator (`other op t`) refuses NumPy arrays, as torch's do:
    with `Tensor.__array_priority__` NumPy defers to it, and `array + t` is then a TypeError;
    except where torch's takes them (`arrays_reflected`: `array / t` is a tensor).
    `numpy_dtype` ("promote", or "true" for true division): an arithmetic operator whose
    result dtype with a NumPy array operand is NumPy's (see _numpy_promoted)."""
    arrays = () if reflected and not arrays_reflected else (np.ndarray,)

    def method(self, other):
        t = type(other)
        if t is Tensor or (scalars and (t is float or t is int)):     # the common cases first
            return fn(self, other)
        ok = isinstance(other, (Tensor, *arrays)) or (scalars and F._is_scalar(other)) or \
            (isinstance(other, complex) and fn.__name__ in ("eq", "ne"))       # (t == 1j: all False)
        if not ok:
            return NotImplemented
        if numpy_dtype is not None and isinstance(other, np.ndarray):
            self, other = _numpy_promoted(self, other, numpy_dtype == "true")
        return fn(self, other)
    method.__name__ = fn.__name__
    return method


def _without_modulo(power):
    """`t ** other`, refusing Python's three-argument pow(t, e, m) as torch's does (NotImplemented:
    "unsupported operand type(s) for ** or pow(): 'Tensor', 'int', 'int'")."""
    def method(self, other, modulo=None):
        return NotImplemented if modulo is not None else power(self, other)
    method.__name__ = power.__name__
    return method


_NUMPY_DTYPES = {np.dtype(d.np): d for d in (float32, float64, int64, bool_)}


def _numpy_promoted(self, other: np.ndarray, true_division: bool):
    """`t op array` as torch computes it: torch's operator declines the array (its argument
    parser takes no ndarray), so NumPy's reflected operator computes it and Tensor.__array_wrap__
    makes the result a tensor. Its dtype is NumPy's promotion, not torch's: a 0-d float64
    array or an int64 one over a float32 tensor gives float64, and int / int is float64.
    Both operands are cast to that dtype first (a dtype fusegrad lacks, such as uint8:
    unchanged, fusegrad's own promotion then)."""
    dtype = np.result_type(self._dtype.np, other.dtype)
    if true_division and dtype.kind in "biu":
        dtype = np.dtype(np.float64)
    target = _NUMPY_DTYPES.get(dtype)
    if target is None:
        return self, other
    if self._dtype is not target:
        self = F.cast(self, target)
    return self, other.astype(dtype, copy=False)




def _bitwise(name: str, on_bools, op: str | None = None):
    """`t & o`, `t | o`, `t ^ o`, `t << o`, `t >> o`: on integers IR op `op` (`name` by default);
    on bools the logical op `on_bools(a, b)` builds from the logical and comparison ops, or
    torch's NotImplementedError where there is none (shifts); on floats that error too."""
    op = op or name

    def fn(input, other) -> Tensor:             # (torch's keywords)
        F._need_a_tensor(name, input, other)
        a, b = input, other
        swap = not isinstance(a, Tensor)        # `True & t`: promote with the tensor first
        ops, dtype = F._promoted([b, a] if swap else [a, b], name)
        if dtype is bool_ and on_bools is not None:
            return on_bools(*(ops[::-1] if swap else ops))
        if dtype is bool_ or dtype.is_floating_point:
            # (torch's TensorIterator broadcasts the operands before the kernel checks the dtype)
            broadcast_shapes(*[np.shape(x) for x in ops])
            raise NotImplementedError(f'"{op}_cpu" not implemented for \'{TORCH_SCALAR_NAMES[dtype.name]}\'')
        return apply_op(op, ops[::-1] if swap else ops, None, None)
    fn.__name__ = name
    return fn


bitwise_left_shift = _bitwise("bitwise_left_shift", None, "lshift")
bitwise_right_shift = _bitwise("bitwise_right_shift", None, "rshift")
bitwise_and = _bitwise("bitwise_and", F.logical_and)
bitwise_or = _bitwise("bitwise_or", lambda a, b: F.logical_not(F.logical_and(F.logical_not(a), F.logical_not(b))))
bitwise_xor = _bitwise("bitwise_xor", F.ne)


def _bitwise_inplace(fn, name: str):
    """`t &= o` and the other in-place bitwise ops: the out-of-place result, written into t
    (torch's shape and result-type checks first: `bool_t <<= 1` is a Long result)."""
    def method(self, other):
        inplace.check_inplace(self)
        other = F.parsed_operand(other)
        if isinstance(other, (Tensor, bool, int, float, np.number)):
            # torch's TensorIterator checks the result's shape and type against t before the
            # kernel's dtype dispatch: `int_t &= 2.5` cannot hold a Float result (not "not
            # implemented for 'Float'"), `t0d &= t2` is a shape error
            shape = broadcast_shapes(tuple(self.shape), tuple(other.shape) if isinstance(other, Tensor) else ())
            inplace.check_result_fits(self, shape, F.result_type([F._kind(self), F._kind(other)]))
        result = fn(self, other)
        inplace.check_result_fits(self, tuple(result.shape), result._dtype)
        return inplace.copy_(self, result)
    method.__name__ = name
    method.__doc__ = f"In-place `{fn.__name__}`."
    return method


def _invert(self) -> Tensor:
    """`~t`: logical not of bools, `-t - 1` (two's complement, exact) of integers."""
    if self._dtype is bool_:
        return F.logical_not(self)
    if self._dtype.is_floating_point:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return F.sub(F.neg(self), 1)


# ------------------------------------------------------------ argument checks of in-place methods
# torch checks these before writing; without them a bad operand was silently converted (a
# None fill became NaN, an integer tensor took a float result truncated).

def _float_result(fn, op: str):
    """A unary in-place op whose result is floating point (exp_, log_, ...): an integer or
    bool tensor cannot hold it; neg_ of a bool is torch's negation error."""
    def method(self) -> Tensor:
        if op == "neg" and self._dtype is bool_:
            F.neg(self)                             # raises torch's text
        if op != "neg" and not self._dtype.is_floating_point:
            raise result_cast_error("Float", TORCH_SCALAR_NAMES[self._dtype.name])
        return fn(self)
    method.__name__, method.__doc__ = fn.__name__, fn.__doc__
    return method


# torch's casts and legacy type names to dtypes fusegrad does not have (its four: float32,
# float64, int64, bool): a clear error naming the dtype, where Python's AttributeError or
# torch's "invalid type" text would say nothing of it
_MISSING_DTYPES = {"int": "int32", "half": "float16", "short": "int16", "char": "int8", "byte": "uint8",
                   "bfloat16": "bfloat16", "cfloat": "complex64", "cdouble": "complex128"}
_MISSING_TYPE_NAMES = {"IntTensor": "int32", "HalfTensor": "float16", "ShortTensor": "int16", "CharTensor": "int8",
                       "ByteTensor": "uint8", "BFloat16Tensor": "bfloat16"}
FOUR_DTYPES = "float32 (fg.float), float64 (fg.double), int64 (fg.long) and bool"


def _missing_dtype(what: str, dtype_name: str) -> NotImplementedError:
    return NotImplementedError(f"fusegrad has no {dtype_name} dtype ({what}); its dtypes are {FOUR_DTYPES}")


def _missing_cast_method(name: str, dtype_name: str):
    """`t.int()` and its kin, for a dtype fusegrad does not have: its clear error."""
    def method(self, *args, **kwargs):
        raise _missing_dtype(f"Tensor.{name}() casts to it", dtype_name)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"torch's cast to {dtype_name}, which fusegrad does not have: raises NotImplementedError."
    return method


def _cast_method(name: str, dtype):
    """`t.float()` and its kin: a cast, taking only torch's keyword memory_format (accepted;
    a cast result keeps a dense tensor's layout as torch's preserve_format does)."""
    def method(self, *args, memory_format=None):
        if args:
            raise TypeError(f"{name}() takes 0 positional arguments but {len(args)} "
                            f"{'was' if len(args) == 1 else 'were'} given")
        if memory_format is not None:
            memory_format_arg(name, memory_format)
        return F.cast(self, dtype)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"This tensor as {dtype.name} (itself when it already is)."
    return method


def _subtract(self, other, *number_alpha, alpha=1) -> Tensor:
    """torch's Tensor.subtract: sub, whose overloads are (Tensor other, *, Number alpha) and
    (Number other, Number alpha), without sub's deprecated alpha-first one."""
    if number_alpha:
        if len(number_alpha) > 1 or not F._is_scalar(other):
            raise TypeError("subtract(): bad arguments")     # (worded by tracer/parser_errors.py)
        # (torch's sub(Tensor, Scalar other, Scalar alpha) overload: SubBackward1)
        return F.subtract_scaled(self, other, number_alpha[0], "SubBackward1")
    return F.sub(self, other, alpha=alpha)


_subtract.__name__ = _subtract.__qualname__ = "subtract"


def _where(self, condition, other):
    """`self` where `condition`, else `other` (torch's Tensor.where(condition, other))."""
    return F.where(condition, self, other)


def _alpha_first_method(fn):
    """t.add / t.sub: fn as a method (_counted_from_self), whose deprecated overload
    `t.add(Number alpha, other)` warns in the method's words."""
    counted = _counted_from_self(fn)

    def method(self, *args, **kwargs):
        if len(args) == 2 and not kwargs and F.number_operand(args[0]):
            other, alpha = F._alpha_first(fn.__name__, args[0], args[1:], 1, method=True)
            return counted(self, other, alpha=alpha)
        return counted(self, *args, **kwargs)
    method.__name__, method.__doc__ = fn.__name__, fn.__doc__
    return method


def _checked_other(fn):
    """A binary in-place op (add_, mul_, ...): `other` is a tensor, an array or a number, and
    an integer tensor takes no negative integer power."""
    is_pow = fn.__name__ == "pow_"
    name = fn.__name__
    takes_alpha = name in ("add_", "sub_")
    other_name = "exponent" if is_pow else "other"

    def method(self, *args, **kwargs) -> Tensor:
        # torch's parser: (Tensor other, *, Number alpha = 1) for add_/sub_, (other) otherwise
        if len(args) == 1 and not kwargs:
            other, alpha = args[0], 1               # (the common call)
        else:
            if len(args) == 2 and takes_alpha and not kwargs and F.number_operand(args[0]):
                # torch's deprecated add_(Number alpha, Tensor other), with its warning
                other, alpha = F._alpha_first(name, args[0], args[1:], 1, method=True)
                return method(self, other, alpha=alpha)
            if len(args) > 1:
                raise TypeError(f"{name}() takes 1 positional argument but {len(args)} were given")
            for key in kwargs:
                if key not in (other_name, "alpha") or (key == "alpha" and not takes_alpha) or \
                        (key == other_name and args):
                    raise TypeError(f"{name}() got an unexpected keyword argument '{key}'")
            if not args and other_name not in kwargs:
                raise TypeError(f"{name}() received an invalid combination of arguments - got (), but expected "
                                f"(Tensor other{', *, Number alpha = 1' if takes_alpha else ''})")
            other = args[0] if args else kwargs[other_name]
            alpha = kwargs.get("alpha", 1)
        if type(other) is not Tensor and not (isinstance(other, (Tensor, np.ndarray)) or F._is_scalar(other)):
            raise TypeError(f"{fn.__name__}(): argument 'other' (position 1) must be Tensor, not "
                            f"{type(other).__name__}")
        if isinstance(other, np.ndarray):
            other = F.as_tensor(other)      # (an array is a tensor: a bool one is checked as one)
        if is_pow and not self._dtype.is_floating_point and F._is_scalar(other) \
                and not isinstance(other, (bool, np.bool_)) and float(other).is_integer() and other < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        if is_pow and self._dtype is int64 and type(other) is int and other >= F._INT64_WRAPS:
            raise RuntimeError("value cannot be converted to type int64_t without overflow")
        if is_pow and self._dtype is bool_ and isinstance(other, Tensor) and other._dtype is bool_:
            raise NotImplementedError("\"pow\" not implemented for 'Bool'")     # (a bool result)
        return fn(self, other, alpha)
    method.__name__, method.__doc__ = fn.__name__, fn.__doc__
    return method


_ROUNDED_DIVS = {mode: _checked_other(inplace.binary_inplace("div_" + mode, "DivBackward2", "div_"))
                 for mode in ("trunc", "floor")}
_TRUE_DIV_ = _checked_other(inplace.binary_inplace("div", "DivBackward0"))
_TRUE_DIV_MODE_ = _checked_other(inplace.binary_inplace("div", "DivBackward2"))    # (rounding_mode=None given)


def _div_(self, other, *, rounding_mode=F.OMITTED) -> Tensor:
    """In-place division; `rounding_mode` "trunc" or "floor" rounds the quotient, as div()."""
    if rounding_mode is F.OMITTED:
        return _TRUE_DIV_(self, other)
    if rounding_mode is None:
        return _TRUE_DIV_MODE_(self, other)
    if rounding_mode not in _ROUNDED_DIVS:
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                           f"'{rounding_mode}'")
    return _ROUNDED_DIVS[rounding_mode](self, other)


def _clamp_(self, min=None, max=None) -> Tensor:
    """In-place clamp (tracer/inplace.py clamp_), its bounds read as clamp's (F.parsed_operand)."""
    return inplace.clamp_(self, F.parsed_operand(min), F.parsed_operand(max))


def _masked_fill_(self, mask, value) -> Tensor:
    """In place: `value` where `mask` is True (mask broadcast to self's shape)."""
    inplace.check_inplace(self)
    if isinstance(value, Tensor) and value.dim() == 0:
        try:
            inplace.check_operand_overlap(self, value)
        except RuntimeError:
            value = value.clone()   # (torch reads a 0-d value as a number first: v[0] of v is fine)
    a, mask, value, name = F.masked_fill_operands(self, mask, value, "masked_fill_")
    inplace.check_result_fits(self, broadcast_shapes(tuple(self.shape), tuple(mask.shape)), self._dtype)
    if writes_expanded_memory(self, value):
        # torch 2.13 still fills an expand's memory (a location takes the value if any of its
        # replicas is masked), with a deprecation warning
        warnings.warn(MASKED_FILL_EXPANDED, UserWarning, stacklevel=user_stacklevel())
        filled = value._concrete() if isinstance(value, Tensor) else value
        write_aliased(self, lambda memory: np.copyto(memory, filled, where=mask._concrete()))
        return self
    apply_op("masked_fill", [self, mask, value], None, name, out=self)
    return self


def _fill_(self, value) -> Tensor:
    """Set every element to `value`, a number or a 0-d tensor (anything else: torch's TypeError)."""
    if isinstance(value, np.ndarray):
        value = F.as_tensor(value)      # (NumPy arrays are accepted wherever a tensor is: API.md)
    value = written_number(value, self._dtype)
    if not (isinstance(value, Tensor) or F._is_scalar(value)):
        raise parser_errors.METHODS["fill_"].refusal((value,), {})
    return inplace.fill_(self, value)


def _copy_(self, other, non_blocking: bool = False) -> Tensor:
    """Copy `other` (torch's keyword) into self: a tensor (or an array) broadcast to self's shape, or a number
    (torch takes one and fills with it)."""
    src = other
    if not isinstance(src, (Tensor, np.ndarray)) and not F._is_scalar(src):
        raise TypeError(f"copy_(): argument 'other' (position 1) must be Tensor, not {type_name(src)}")
    if not isinstance(non_blocking, (bool, np.bool_)):      # (checked before a number fills)
        raise TypeError(f"copy_(): argument 'non_blocking' (position 2) must be bool, not "
                        f"{type_name(non_blocking)}")
    if F._is_scalar(src) and not isinstance(src, np.ndarray):
        # torch wraps the number in a 0-d tensor (a float as a double) and copies it: CopyBackwards
        src = Tensor._wrap(np.asarray(src, np.float64 if isinstance(src, (float, np.floating))
                                      else F.scalar_dtype(src).np))
    inplace.check_inplace(self)             # (torch's leaf errors come before the copy's shape check,
    if inplace.copied_into_itself(self, src):
        return self
    inplace.check_write_overlaps(self, src)     # and its memory checks too)
    shape = broadcast_shapes(tuple(self.shape), tuple(np.shape(src)))
    if shape != tuple(self.shape):          # src has more dims or larger sizes than self
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape {list(shape)}")
    return inplace.copy_(self, src)


def _float_argument(fn: str, name: str, position: int, value) -> float:
    if isinstance(value, Tensor) and value.numel() == 1:
        return value.item()
    if isinstance(value, (bool, np.bool_)) or not F._is_scalar(value):
        raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be float, not {type_name(value)}")
    return float(value) if not isinstance(value, (int, np.integer)) else int(value)


def _random_arguments(fn: str, names: tuple, defaults: tuple, args, kwargs) -> list:
    """torch's parse of uniform_(from, to) / normal_(mean, std): positions or keywords
    (`from` is a Python keyword: `t.uniform_(**{"from": 0})`), numbers only."""
    unknown = [k for k in kwargs if k not in names and k != "generator"]
    if unknown:
        raise TypeError(f"{fn}() got an unexpected keyword argument '{unknown[0]}'")
    if len(args) > len(names):
        raise TypeError(f"{fn}() takes from 0 to {len(names)} positional arguments but {len(args)} were given")
    values = list(args) + [kwargs.get(n, d) for n, d in zip(names[len(args):], defaults[len(args):])]
    return [_float_argument(fn, n, k + 1, v) for k, (n, v) in enumerate(zip(names, values))]


def _uniform_(self, *args, **kwargs) -> Tensor:
    """Fill with samples of U[from, to) (default [0, 1)), torch's numbers for fg.manual_seed's seed
    (or for a `generator=`'s)."""
    return inplace.uniform_(self, *_random_arguments("uniform_", ("from", "to"), (0.0, 1.0), args, kwargs),
                            kwargs.get("generator"))


_RANDOM_SIGNATURES = ("\n * (*, torch.Generator generator = None)\n * (int from, int to, *, torch.Generator generator = "
                      "None)\n * (int to, *, torch.Generator generator = None)\n")


def _random_(self, *args, generator=None, **kwargs) -> Tensor:
    """torch's random_(), random_(to) and random_(from, to): integers uniform in [from, to),
    without bounds the dtype's exact integers (see inplace.random_), torch's numbers."""
    def integer(v, optional=False):
        return (v is None and optional) or (isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)))
    low = high = None
    if len(args) == 2 and not kwargs:
        (low, high), name = args, "RandomBackward0"
    elif len(args) == 1 and set(kwargs) <= {"to"}:
        (low, high), name = ((args[0], kwargs["to"]), "RandomBackward0") if kwargs else ((0, args[0]), "RandomBackward1")
    elif not args and "from" in kwargs and "to" in kwargs and len(kwargs) == 2:
        low, high, name = kwargs["from"], kwargs.get("to"), "RandomBackward0"
    elif not args and set(kwargs) <= {"to"}:
        (low, high), name = ((0, kwargs["to"]), "RandomBackward1") if kwargs else ((None, None), "RandomBackward2")
    else:
        name = None
    if name is None or not (low is None and high is None or integer(low) and integer(high, name == "RandomBackward0")):
        # (torch's parser lists keywords each followed by ", ")
        got = ", ".join(type_name(v) for v in args) + (", " if args and kwargs else "") + \
            "".join(f"{k}={type_name(v)}, " for k, v in kwargs.items())
        raise TypeError(f"random_() received an invalid combination of arguments - got ({got}), but expected one of:"
                        + _RANDOM_SIGNATURES)
    return inplace.random_(self, low, high, generator, name)


def _normal_(self, *args, **kwargs) -> Tensor:
    """Fill with samples of N(mean, std**2) (default N(0, 1)), torch's numbers for fg.manual_seed's seed
    (or for a `generator=`'s)."""
    return inplace.normal_(self, *_random_arguments("normal_", ("mean", "std"), (0.0, 1.0), args, kwargs),
                           kwargs.get("generator"))


_NO_DEFAULT = object()


def _distribution_fill(fill, name: str, params: tuple, defaults: tuple):
    """Tensor.<name>(*params, generator=None): the in-place fill `fill(self, *numbers, gen)`
    with torch's parse of its numbers (a parameter without default is required)."""
    required = sum(d is _NO_DEFAULT for d in defaults)

    def method(self, *args, **kwargs):
        if len(args) > len(params):
            takes = f"from {required} to {len(params)} positional arguments" if required < len(params) else \
                f"{len(params)} positional argument{'s' if len(params) > 1 else ''}"
            raise TypeError(f"{name}() takes {takes} but {len(args)} were given")
        given = list(args) + [kwargs.get(n, d) for n, d in zip(params[len(args):], defaults[len(args):])]
        missing = [n for n, v in zip(params, given) if v is _NO_DEFAULT]
        if missing:
            raise TypeError(f'{name}() missing {len(missing)} required positional arguments: "{missing[0]}"')
        return fill(self, *_random_arguments(name, params, tuple(given), (), kwargs), kwargs.get("generator"))
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"torch's Tensor.{name}: {fill.__doc__}"
    return method


_DISTRIBUTION_FILLS = {
    "exponential_": _distribution_fill(inplace.exponential_, "exponential_", ("lambd",), (1.0,)),
    "geometric_": _distribution_fill(inplace.geometric_, "geometric_", ("p",), (_NO_DEFAULT,)),
    "cauchy_": _distribution_fill(inplace.cauchy_, "cauchy_", ("median", "sigma"), (0.0, 1.0)),
    "log_normal_": _distribution_fill(inplace.log_normal_, "log_normal_", ("mean", "std"), (1.0, 2.0)),
}


# ------------------------------------------------------------ new_* constructors
# A new tensor with this one's dtype unless told otherwise (torch's Tensor.new_zeros etc.).

def _new_of_size(make, name: str, what: str):
    """torch's Tensor.new_<name>: NumPy's `make` of `size` with this tensor's dtype unless
    `dtype` is given (texts under its own name: torch's new_zeros(-1) is no zeros(-1))."""
    def new(self, *size, dtype=None, requires_grad: bool = False, **kw) -> Tensor:
        return creation.filled(make, size, kw, f"new_{name}", dtype or self.dtype, requires_grad)
    new.__name__ = f"new_{name}"
    new.__doc__ = f"torch's Tensor.{new.__name__}: {what} of `size`, with this tensor's dtype unless `dtype` is given."
    return new


new_zeros = _new_of_size(np.zeros, "zeros", "zeros")
new_ones = _new_of_size(np.ones, "ones", "ones")
new_empty = _new_of_size(np.zeros, "empty", "uninitialised memory")


def new_full(self, size, fill_value, dtype=None, requires_grad: bool = False) -> Tensor:
    """torch's Tensor.new_full: `fill_value` everywhere in `size`, with this tensor's dtype unless `dtype` is given."""
    return creation.full(size, fill_value, dtype=dtype or self.dtype, requires_grad=requires_grad)


def new_tensor(self, data, dtype=None, requires_grad: bool = False) -> Tensor:
    """torch's Tensor.new_tensor: a copy of `data`, with this tensor's dtype unless `dtype` is given.
    From a Tensor it warns, as torch, to use detach().clone() instead."""
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than "
                      "tensor.new_tensor(sourceTensor).", UserWarning, stacklevel=user_stacklevel())
    return creation.copied_tensor(data, dtype or self.dtype, requires_grad, None, warn_of_tensor=False)


# ------------------------------------------------------------ whole-tensor comparisons (Python bools)


# torch's Tensor.type(str) names ("torch.FloatTensor"), also spelled with fg. or fusegrad.
_TYPE_BY_NAME = {module + legacy.split(".", 1)[1]: from_numpy_dtype(np.dtype(dtype_name))
                 for dtype_name, legacy in TORCH_TYPE_NAMES.items() for module in ("torch.", "fg.", "fusegrad.")}


def _type(self, dtype=None, non_blocking: bool = False):
    """`t.type()` names the tensor type; `t.type(dtype or name)` casts."""
    if dtype is None:
        return TORCH_TYPE_NAMES[self.dtype.name]
    if isinstance(dtype, str):
        if dtype not in _TYPE_BY_NAME:
            missing = _MISSING_TYPE_NAMES.get(dtype.rsplit(".", 1)[-1]) if dtype.startswith("torch.") else None
            if missing is not None:
                raise _missing_dtype(f"type '{dtype}'", missing)
            raise ValueError(f"invalid type: '{dtype}'")
        dtype = _TYPE_BY_NAME[dtype]
    elif isinstance(dtype, type):
        from .legacy_types import _LegacyTensorType
        if not isinstance(dtype, _LegacyTensorType):
            raise ValueError(f"invalid type: '{dtype.__name__}'")
        dtype = dtype.dtype             # (fg.DoubleTensor ...: tracer/legacy_types.py)
    elif not isinstance(dtype, DType):
        raise TypeError("dtype must be a type, str, or dtype object")
    return F.cast(self, dtype)


def _positive(self) -> Tensor:
    """`+t` is `t` itself (torch), refused for bools as there."""
    if self._dtype is bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return self


def positive(input) -> Tensor:
    """torch.positive: the tensor itself (`+t`), refused for bools as there."""
    return _positive(F.as_tensor(input, "positive"))


def bitwise_not(input) -> Tensor:
    """torch.bitwise_not: `~t` of an integer or bool tensor; a float one is torch's
    NotImplementedError."""
    a = F.as_tensor(input, "bitwise_not")
    if a._dtype.is_floating_point:
        raise NotImplementedError(f'"bitwise_not_cpu" not implemented for \'{TORCH_SCALAR_NAMES[a._dtype.name]}\'')
    return _invert(a)


def _bitwise_not_(self) -> Tensor:
    """In-place torch.bitwise_not (integers and bools, which have no history to keep)."""
    inplace.check_inplace(self)
    return inplace.copy_(self, bitwise_not(self))


def _delete_item(self, key) -> None:
    """`del t[idx]`: refused, with torch's text."""
    raise TypeError("Tensor does not support deleting items")


def _matrix_adjoint(name: str, ndim_rule: str):
    """`t.H` (2-d only) and `t.mH` (batches of matrices): for real tensors, the transpose."""
    def adjoint(self) -> Tensor:
        if self.dim() == 0:
            # (torch's TORCH_WARN_ONCE; the tensor itself, as its conj() of a real tensor)
            F.warn_once(f"Tensor.{name} is deprecated on 0-D tensors. Consider using x.conj().")
            return self
        if (self.dim() != 2) if name == "H" else (self.dim() < 2):
            hint = " For batches of matrices, consider using tensor.mH" if name == "H" and self.dim() > 2 else ""
            raise RuntimeError(f"tensor.{name} is only supported on {ndim_rule}. Got {self.dim()}-D tensor.{hint}")
        return F.transpose(self, -2, -1)
    adjoint.__name__ = name
    return adjoint


METHODS = {
    # arithmetic
    "add": _alpha_first_method(F.add), "sub": _alpha_first_method(F.sub), "mul": _counted_from_self(F.mul),
    "div": _counted_from_self(F.div), "pow": F.pow, "neg": F.neg, "matmul": _tensor_other(F.matmul),
    "mm": _counted_from_self(products.mm), "bmm": _counted_from_self(products.bmm),
    "mv": _counted_from_self(products.mv), "dot": _counted_from_self(products.dot),
    "outer": _counted_from_self(products.outer), "ger": _counted_from_self(products.ger), "square": F.square,
    "true_divide": F.div, "multiply": F.mul, "subtract": _subtract, "negative": F.neg,
    "floor_divide": F.floor_divide, "remainder": F.remainder,
    "bitwise_and": bitwise_and, "bitwise_or": bitwise_or, "bitwise_xor": bitwise_xor,
    "bitwise_left_shift": bitwise_left_shift, "bitwise_right_shift": bitwise_right_shift,
    "maximum": _tensor_other(F.maximum), "minimum": _tensor_other(F.minimum), "clamp": F.clamp, "clip": F.clamp, "where": _where,
    # unary
    "exp": F.exp, "log": F.log, "sqrt": F.sqrt, "sin": F.sin, "cos": F.cos, "tanh": F.tanh,
    "sigmoid": F.sigmoid, "relu": F.relu, "expm1": F.expm1, "log1p": F.log1p, "erf": F.erf, "abs": F.abs, "sign": F.sign, "reciprocal": F.reciprocal,
    # comparisons
    "lt": F.lt, "le": F.le, "gt": F.gt, "ge": F.ge, "eq": F.eq, "ne": F.ne,
    "logical_not": F.logical_not, "logical_and": _counted_from_self(F.logical_and),
    "logical_or": _counted_from_self(F.logical_or), "logical_xor": _counted_from_self(F.logical_xor),
    "isnan": predicates.isnan, "isinf": predicates.isinf, "isfinite": predicates.isfinite,
    "isclose": _counted_from_self(predicates.isclose), "all": F.all.method, "any": F.any.method,
    # reductions
    "sum": F.sum.method, "mean": F.mean.method, "var": moments.var.method, "std": moments.std.method,
    "max": F.max.method, "min": F.min.method, "amax": _counted_from_self(F.amax), "amin": _counted_from_self(F.amin),
    "argmax": _counted_from_self(F.argmax), "argmin": _counted_from_self(F.argmin), "nonzero": F.nonzero, "norm": _norm, "softmax": _counted_from_self(F.softmax),
    "log_softmax": _counted_from_self(F.log_softmax),
    # shapes
    "reshape": F.reshape, "view": F.view, "flatten": _counted_from_self(F.flatten),
    "unflatten": _counted_from_self(F.unflatten), "permute": F.permute,
    "transpose": _counted_from_self(F.transpose),
    "t": F.t, "unsqueeze": _counted_from_self(F.unsqueeze), "squeeze": F.squeeze_method, "expand": F.expand, "expand_as": F.expand_as,
    "broadcast_to": F.broadcast_to_method, "ravel": F.ravel, "movedim": F.movedim, "moveaxis": F.moveaxis,
    "swapaxes": F.swapaxes, "swapdims": F.swapdims, "clamp_min": F.clamp_min, "clamp_max": F.clamp_max,
    "clone": F.clone, "contiguous": F.contiguous, "to": F.to,
    "reshape_as": lambda self, other: F.reshape(self, tuple(other.shape)),
    "view_as": lambda self, other: F.view(self, tuple(other.shape)),
    # casts
    "float": _cast_method("float", float32), "double": _cast_method("double", float64),
    "long": _cast_method("long", int64), "bool": _cast_method("bool", bool_),
    **{name: _missing_cast_method(name, dtype_name) for name, dtype_name in _MISSING_DTYPES.items()},
    "type": _type,
    # in-place
    "add_": _checked_other(inplace.binary_inplace("add", "AddBackward0")),
    "sub_": _checked_other(inplace.binary_inplace("sub", "SubBackward0")),
    "mul_": _checked_other(inplace.binary_inplace("mul", "MulBackward0")),
    "div_": _div_,
    "pow_": _checked_other(inplace.binary_inplace("pow", "PowBackward0", tensor_name="PowBackward1")),
    "floor_divide_": _checked_other(inplace.binary_inplace("div_floor", "NotImplemented", "floor_divide_",
                                                           attrs={"no_derivative": "floor_divide_"})),
    "remainder_": _checked_other(inplace.binary_inplace("remainder", "RemainderBackward0", "remainder_",
                                                       tensor_name="RemainderBackward1")),
    "bitwise_and_": _bitwise_inplace(bitwise_and, "bitwise_and_"),
    "bitwise_or_": _bitwise_inplace(bitwise_or, "bitwise_or_"),
    "bitwise_xor_": _bitwise_inplace(bitwise_xor, "bitwise_xor_"),
    "bitwise_left_shift_": _bitwise_inplace(bitwise_left_shift, "bitwise_left_shift_"),
    "bitwise_right_shift_": _bitwise_inplace(bitwise_right_shift, "bitwise_right_shift_"),
    "exp_": _float_result(inplace.unary_inplace("exp", "ExpBackward0"), "exp"),
    "log_": _float_result(inplace.unary_inplace("log", "LogBackward0"), "log"),
    "sqrt_": _float_result(inplace.unary_inplace("sqrt", "SqrtBackward0"), "sqrt"),
    "tanh_": _float_result(inplace.unary_inplace("tanh", "TanhBackward0"), "tanh"),
    "sigmoid_": _float_result(inplace.unary_inplace("sigmoid", "SigmoidBackward0"), "sigmoid"),
    "relu_": inplace.unary_inplace("relu", "ReluBackward0"),
    "neg_": _float_result(inplace.unary_inplace("neg", "NegBackward0"), "neg"),
    "abs_": inplace.unary_inplace("abs", "AbsBackward0"),
    "sin_": _float_result(inplace.unary_inplace("sin", "SinBackward0"), "sin"),
    "cos_": _float_result(inplace.unary_inplace("cos", "CosBackward0"), "cos"),
    "reciprocal_": _float_result(inplace.unary_inplace("reciprocal", "ReciprocalBackward0"), "reciprocal"),
    "sign_": inplace.unary_inplace("sign", "SignBackward0"),
    "expm1_": _float_result(inplace.unary_inplace("expm1", "Expm1Backward0"), "expm1"),
    "log1p_": _float_result(inplace.unary_inplace("log1p", "Log1PBackward0"), "log1p"),
    "erf_": _float_result(inplace.unary_inplace("erf", "ErfBackward0"), "erf"),
    "bitwise_not": bitwise_not, "bitwise_not_": _bitwise_not_, "positive": _positive,
    # constructors and whole-tensor comparisons
    "new_zeros": new_zeros, "new_ones": new_ones, "new_empty": new_empty, "new_full": new_full,
    "new_tensor": new_tensor, "equal": _counted_from_self(predicates.equal),
    "allclose": _counted_from_self(predicates.allclose),
    "clamp_": _clamp_, "masked_fill": F.masked_fill, "masked_fill_": _masked_fill_, "zero_": inplace.zero_, "fill_": _fill_, "copy_": _copy_,
    "uniform_": _uniform_, "normal_": _normal_, "random_": _random_, **_DISTRIBUTION_FILLS, "bernoulli_": inplace.bernoulli_, "bernoulli": F.bernoulli,
    # rounding, rsqrt, log2, trigonometric functions, atan2, logsumexp
    **math_functions.METHODS,
    # lerp, addcmul, hypot, xlogy, nan_to_num, fmod, repeat, tile, type_as, torch's aliases...
    **extra_functions.METHODS,
    # split, chunk, unbind, narrow, select
    **splitting.METHODS, **gathering.METHODS, **sorting.METHODS,
    # scatter, scatter_add, scatter_reduce, index_add, index_copy, index_fill, masked_select/scatter, take...
    **scattering.METHODS,
    # cumprod, cummax, median, mode, quantile, nansum, aminmax, fmax, unique, bincount, histc...
    **statistics.METHODS,
    # diagonal, diag, trace, roll, rot90, unfold, repeat_interleave, tensor_split, diff, kron...
    **shape_functions.METHODS,
    # inner, vdot, addmm/addmv/addr/baddbmm/addbmm (and _), cross, dist, det, inverse, eq_..., gcd, sinc
    **linalg_functions.METHODS,
    **special_functions.METHODS,     # lgamma, digamma, polygamma, erfinv, mvlgamma, i0 (and _)
    **misc_functions.METHODS,
    **complex_functions.METHODS,    # angle, isreal
    **sampling.METHODS,             # multinomial
}


METHODS.update(extra_functions.in_place_aliases(METHODS))    # absolute_, multiply_, clip_...


def _with_parser_texts(methods: dict) -> dict:
    """`methods` with torch's argument-parser texts for bad calls (tracer/parser_errors.py):
    the methods torch overloads on a tensor or a number (t.pow('a') lists both), and those
    that take nothing (t.exp(1): CPython's "takes no arguments")."""
    texts = dict(methods)
    for name, parser in parser_errors.METHODS.items():
        if name in methods:
            texts[name] = parser_errors.method_texts(methods[name], parser)
    for name in parser_errors.NO_ARGUMENT_METHODS:
        if name in methods:     # (the hot unary ops have their own method forms, without a wrapper)
            texts[name] = getattr(methods[name], "method", None) or parser_errors.no_arguments(methods[name], name)
    return texts


METHODS = _with_parser_texts(METHODS)

OPERATORS = {
    "__add__": _binary_operator(F.add, numpy_dtype="promote"), "__radd__": _binary_operator(F.add, reflected=True),
    "__sub__": _binary_operator(F.sub, numpy_dtype="promote"), "__rsub__": _binary_operator(F.rsub, reflected=True),
    "__mul__": _binary_operator(F.mul, numpy_dtype="promote"), "__rmul__": _binary_operator(F.mul, reflected=True),
    "__truediv__": _binary_operator(F.div, numpy_dtype="true"), "__rtruediv__": _binary_operator(_array_rdiv, reflected=True, arrays_reflected=True),
    "__pow__": _without_modulo(_binary_operator(F.pow, numpy_dtype="promote")),
    "__rpow__": _binary_operator(_reflected(F.pow), reflected=True),
    "__matmul__": _binary_operator(F.matmul, False, numpy_dtype="promote"),
    "__rmatmul__": _binary_operator(_reflected(F.matmul), False, reflected=True),
    "__lt__": _binary_operator(F.lt), "__le__": _binary_operator(F.le), "__gt__": _binary_operator(F.gt),
    "__ge__": _binary_operator(F.ge), "__eq__": _binary_operator(F.eq), "__ne__": _binary_operator(F.ne),
    "__neg__": F.neg, "__pos__": _positive, "__abs__": F.abs, "__invert__": _invert,
    "__and__": _binary_operator(bitwise_and), "__rand__": _binary_operator(_reflected(bitwise_and), reflected=True),
    "__or__": _binary_operator(bitwise_or), "__ror__": _binary_operator(_reflected(bitwise_or), reflected=True),
    "__xor__": _binary_operator(bitwise_xor), "__rxor__": _binary_operator(_reflected(bitwise_xor), reflected=True),
    "__lshift__": _binary_operator(bitwise_left_shift),
    "__rlshift__": _binary_operator(_reflected(bitwise_left_shift), reflected=True),
    "__rshift__": _binary_operator(bitwise_right_shift),
    "__rrshift__": _binary_operator(_reflected(bitwise_right_shift), reflected=True),
    "__floordiv__": _binary_operator(F.floor_divide, numpy_dtype="promote"),
    "__rfloordiv__": _binary_operator(F.rfloordiv, reflected=True),
    "__mod__": _binary_operator(F.remainder, numpy_dtype="promote"), "__rmod__": _binary_operator(F.rremainder, reflected=True),
    # (an operand of another type: NotImplemented, so Python raises "unsupported operand
    # type(s) for +=", as for torch's)
    "__iadd__": _binary_operator(METHODS["add_"]), "__isub__": _binary_operator(METHODS["sub_"]),
    "__imul__": _binary_operator(METHODS["mul_"]), "__itruediv__": _binary_operator(METHODS["div_"]),
    "__ipow__": _binary_operator(METHODS["pow_"]), "__ifloordiv__": _binary_operator(METHODS["floor_divide_"]),
    "__imod__": _binary_operator(METHODS["remainder_"]),
    "__iand__": _binary_operator(METHODS["bitwise_and_"]), "__ior__": _binary_operator(METHODS["bitwise_or_"]),
    "__ixor__": _binary_operator(METHODS["bitwise_xor_"]),
    "__ilshift__": _binary_operator(METHODS["bitwise_left_shift_"]),
    "__irshift__": _binary_operator(METHODS["bitwise_right_shift_"]),
    "__getitem__": indexing.getitem, "__setitem__": indexing.setitem, "__delitem__": _delete_item,
}


def bind_methods() -> None:
    """Install METHODS and OPERATORS on Tensor (called once by tracer/__init__)."""
    for name, fn in {**METHODS, **OPERATORS}.items():
        inner = fn
        while inner is not None:
            if isinstance(inner, type(bind_methods)) and "<" in inner.__qualname__:
                # Python names a function by its qualified name in argument errors: `fg.exp(x, 1)`
                # says "exp() takes ...", not "_unary_float.<locals>.fn() takes ..."
                inner.__qualname__ = name
            inner = getattr(inner, "__wrapped__", None)
        setattr(Tensor, name, fn)
    for name in parser_errors.NO_ARGUMENT_METHODS:
        if name not in METHODS:             # (Tensor's own: item(), detach()...)
            setattr(Tensor, name, parser_errors.no_arguments(getattr(Tensor, name), name))
    for name, parser in parser_errors.METHODS.items():
        if name not in METHODS:             # (Tensor's own: numpy())
            setattr(Tensor, name, parser_errors.method_texts(getattr(Tensor, name), parser))
    for name, prop in complex_functions.PROPERTIES.items():     # t.real, t.imag
        setattr(Tensor, name, prop)
    Tensor.T = read_only(property(F.T), "T")
    Tensor.mT = read_only(property(F.mT), "mT")
    Tensor.H = read_only(property(_matrix_adjoint("H", "matrices (2-D tensors)")), "H")
    Tensor.mH = read_only(property(_matrix_adjoint("mH", "matrices or batches of matrices")), "mH")
