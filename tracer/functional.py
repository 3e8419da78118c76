"""User-level tensor functions (`fg.add`, `t.sum(dim)`, `t[0]`, ...).

Each one checks and normalises its arguments as torch does (type promotion,
dims, indices), then reduces to `apply_op` with the IR op and the grad_fn
name torch uses for that call. Python scalars become NumPy constants of the
promoted dtype; they never promote a float32 tensor to float64.

Parameters carry torch's names (`input`, `other`), so torch's keyword calls
work (`fg.add(x, other=y)`, `fg.sum(input=x, dim=0)`); the bodies name them
`a` and `b`.
"""
from __future__ import annotations

import builtins  # this module defines sum, max, min, abs, all and any as tensor functions
import collections.abc
import functools
import inspect
import math
import numbers
import operator
import re
import warnings

import numpy as np

from fusegrad.ir import (DType, bool_, float32, float64, int64, result_type, scalar_dtype)
from fusegrad.ir.ops import normalize_dim
from fusegrad.ir.ops.registry import shape_str
from fusegrad.ir.ops.elementwise import BOOL_NEGATION, pow_const_applies
from fusegrad.ir.ops.linalg import _check_matmul_dtype, mm_layout_attrs
from fusegrad.ir.torch_cpu import block_elements
from fusegrad.ir.types import DIMMED, EXPAND_TYPE_NAMES, PYTHON_TYPE_DTYPES, SCALAR, TORCH_SCALAR_NAMES, ZERO_DIM

from .device import check_device, device as torch_device
from .memory_format import contiguous_format, memory_format, memory_format_arg, preserve_format
from . import parser_errors, trace_state
from .dispatch import apply_op
from .grad_mode import is_grad_enabled
from .layout import layout_stand_in, row_major, strides_of
from .saved_attributes import remember_alpha
from .scalar_checks import check_int_parses, check_scalar_fits, check_tensor_value_fits, written_number
from .node import hide_node
from .parser_errors import described, got_text, no_arguments_error, type_name
from .tensor import Tensor
from .user_frame import user_stacklevel

_MISSING = object()     # an argument not given: torch tells `x.sum()` from `x.sum(dim=None)`


# ------------------------------------------------------------------ operands
def _is_scalar(x) -> bool:
    t = type(x)
    if t is float or t is int or t is bool:       # the common cases, without the ABC check
        return True
    return isinstance(x, (numbers.Number, np.bool_)) and not isinstance(x, complex)


def number_operand(x) -> bool:
    """Whether torch's parser takes `x` for a `Number` parameter: a Python or NumPy number, or a
    0-d tensor that does not require grad (its value is read)."""
    return _is_scalar(x) or (isinstance(x, Tensor) and x.dim() == 0 and not x.requires_grad)


REQUIRED = parser_errors.Required()     # the default of a required argument whose absence torch words


def one_input(input, surplus: tuple, fn: str):
    """`input` of a one-argument function `def fn(input=REQUIRED, *surplus)`; given more,
    Python's own TypeError (the signature is widened only so that a missing input can raise
    torch's text)."""
    if surplus:
        raise TypeError(f"{fn}() takes 1 positional argument but {1 + len(surplus)} were given")
    return input


def as_tensor(x, fn: str = "op", arg: str = "input", pos: int = 1) -> Tensor:
    """A Tensor from a Tensor or NumPy array; TypeError naming the argument otherwise (and
    torch's parser text where it is missing: REQUIRED)."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.ndarray):
        from .creation import wrap_array
        return wrap_array(x)
    if x is REQUIRED:
        raise missing_arguments_error(fn, [arg])
    raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not {type_name(x)}")


def _integer_scalar_tensor(x) -> bool:
    """Whether `x` is a 0-d integer tensor without history: torch's parser reads it as an int
    (its __index__) where an int argument is expected."""
    return isinstance(x, Tensor) and x.dim() == 0 and x._dtype is int64 and not x.requires_grad


def parsed_operand(x):
    """A tensor-or-number argument as torch's parser reads it (as _operand does, without its
    type check): a NumPy array is a tensor sharing its memory, a NumPy bool a float number,
    anything else as given (clamp's bounds, the in-place bitwise ops' operand)."""
    if type(x) is np.bool_:
        return builtins.float(x)
    return as_tensor(x) if isinstance(x, np.ndarray) else x


def _operand(x, fn, arg, pos):
    if type(x) is np.bool_:
        return builtins.float(x)    # torch's parser reads a NumPy bool as a float number
    if _is_scalar(x) or isinstance(x, Tensor):
        return x
    if isinstance(x, np.ndarray):
        return as_tensor(x)
    raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not {type_name(x)}")


def _kind(x):
    if isinstance(x, Tensor):
        return (x._dtype, DIMMED if x.dim() > 0 else ZERO_DIM)
    return (scalar_dtype(x), SCALAR)


def cast(x: Tensor, dtype: DType, implicit: bool = False) -> Tensor:
    """x converted to `dtype` (returns x itself when it already is). `implicit`: a promotion
    to an op's result dtype, which torch makes inside the op's node: its ToCopyBackward0 is
    not shown in next_functions (node.HIDDEN_NODES)."""
    if x._dtype is dtype:
        return x
    y = apply_op("cast", [x], {"dtype": dtype}, "ToCopyBackward0")
    if implicit:
        hide_node(y)
    return y


def _coerce(x, dtype: DType):
    if isinstance(x, Tensor):
        y = cast(x, dtype, implicit=True)
        if y is not x and y._sym is None:
            # torch's node saves the operand itself, not a promoted copy: the copy shares the
            # operand's version counter, so that an in-place change of the operand after the op
            # is caught (x64 * x32; x32.add_(1); backward raises), and names it in the error.
            y._vbox = x._vbox
            y.__dict__["_promoted_from"] = x
        elif y is not x:
            trace_state.current().hold_promoted(y)      # (the same, traced)
        return y
    return _scalar_array(x, dtype)


def _promoted(operands, fn, names=("input", "other", "third")):
    if len(operands) == 2:
        fast = _promoted_pair_fast(*operands)
        if fast is not None:
            return fast
    ops = [_operand(x, fn, names[i], i + 1) for i, x in enumerate(operands)]
    if not builtins.any(isinstance(x, Tensor) for x in ops):
        ops[0] = tensor_from_scalar(ops[0])
    dtype = result_type([_kind(x) for x in ops])
    if dtype is int64 and fn != "pow" and builtins.any(type(x) is int and x >= _INT64_WRAPS for x in ops) and \
            not builtins.any(isinstance(x, Tensor) and x._dtype is int64 for x in ops):
        # torch's parser read the int as a uint64 (it is past int64): with bool tensors only,
        # promotion meets uint64 (pow checks the int against int64 first)
        for x in ops:
            check_int_parses(x)
        raise RuntimeError("Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
                           "Bool and UInt64")
    return [_coerce(x, dtype) for x in ops], dtype


def _promoted_pair_fast(a, b):
    """The common cases of promotion without the general machinery (hot path)."""
    ta, tb = type(a) is Tensor, type(b) is Tensor
    if ta and tb:
        return ([a, b], a._dtype) if a._dtype is b._dtype else None
    if ta and (type(b) is float or type(b) is int) and a._dtype.is_floating_point:
        return [a, _scalar_array(b, a._dtype)], a._dtype
    if tb and (type(a) is float or type(a) is int) and b._dtype.is_floating_point:
        return [_scalar_array(a, b._dtype), b], b._dtype
    return None


_FLOAT32_MAX = float(np.finfo(np.float32).max)


_SCALAR_ARRAYS: dict = {}      # (type, value, dtype) -> read-only 0-d array (x * 2 in a loop makes one)
MAX_SCALAR_ARRAYS = 4096


_INT64_WRAPS = 2 ** 63


def _scalar_array(value, dtype: DType) -> np.ndarray:
    """A Python number as a 0-d array of `dtype`; out-of-range floats become inf silently, as in torch.

    Arrays are shared between calls (read-only); 0 (whose sign matters) and NaN (never
    equal to itself) are made fresh each time."""
    key = (type(value), value, dtype)
    try:
        cached = _SCALAR_ARRAYS.get(key)
    except TypeError:                              # an unhashable number type
        cached, key = None, None
    if cached is not None:
        return cached
    check_int_parses(value)
    if dtype is int64 and type(value) is int and _INT64_WRAPS <= value:
        value -= 2 ** 64        # torch unpacks an int up to 2**64 - 1 as uint64 and keeps its bits
    if dtype is float64 or (dtype is float32 and (type(value) is float or type(value) is int)
                            and -_FLOAT32_MAX <= value <= _FLOAT32_MAX):
        # (a NumPy scalar takes the errstate path: comparing a float16 with the float32 limit
        # casts the limit to float16, which warns of an overflow)
        array = np.asarray(value, dtype=dtype.np)      # cannot overflow: skip the errstate (hot path)
    else:
        with np.errstate(over="ignore"):
            array = np.asarray(value, dtype=dtype.np)
    if key is not None and value and value == value:
        if len(_SCALAR_ARRAYS) >= MAX_SCALAR_ARRAYS:
            _SCALAR_ARRAYS.clear()
        array.flags.writeable = False
        _SCALAR_ARRAYS[key] = array
    return array


def tensor_from_scalar(x) -> Tensor:
    """A 0-d tensor holding Python scalar `x`, with the dtype torch gives it (bool, int64 or float32)."""
    return Tensor._wrap(np.asarray(x, dtype=scalar_dtype(x).np))


def _float_operands(operands, fn):
    """The operands of a true division of integers made float32 (torch divides integers as
    floats); a Python int past int64 (up to 2**64 - 1, torch's uint64) is taken as a float,
    not by its int64 bits."""
    ops, dtype = _promoted(operands, fn)
    if not dtype.is_floating_point:
        ops = [_scalar_array(float(given), float32) if type(given) is int and given >= _INT64_WRAPS
               else _coerce(x, float32) for given, x in zip(operands, ops)]
    return ops


# ------------------------------------------------------------------ arithmetic
def check_alpha(alpha, fn: str) -> None:
    """torch's argument check of `alpha` (a number, or a 0-d tensor), made before any other."""
    if not (_is_scalar(alpha) or isinstance(alpha, (Tensor, np.ndarray)) and alpha.ndim == 0):
        raise TypeError(f"{fn}(): argument 'alpha' must be Number, not {type_name(alpha)}")


def alpha_number(a, b, alpha, fn: str):
    """(alpha as torch's parser reads it, the result dtype of `a + alpha * b`), after torch's
    checks: a float alpha with integer operands and a bool alpha with non-bool ones are
    errors, and alpha must fit the result's dtype."""
    check_alpha(alpha, fn)
    if isinstance(alpha, (Tensor, np.ndarray)):
        # torch's parser reads a 0-d tensor as the Number it holds (so the checks below apply
        # to its value); one that requires grad is no Number
        if isinstance(alpha, Tensor) and alpha.requires_grad:
            raise TypeError(f"{fn}(): argument 'alpha' must be Number, not Tensor")
        alpha = alpha.item()
    if type(alpha) is np.bool_:
        alpha = builtins.float(alpha)       # (torch's parser reads a NumPy bool as a float)
    check_int_parses(alpha)                 # (an int beyond its parser: OverflowError, any dtype)
    dtype = _promoted([a, b], fn)[1]
    if isinstance(alpha, (bool, np.bool_)) and dtype is not bool_:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if not dtype.is_floating_point and isinstance(alpha, (float, np.floating)):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    if dtype is bool_:
        alpha = builtins.bool(alpha)
    else:
        check_scalar_fits(alpha, dtype)     # (torch converts alpha to the result's type: 1e300 overflows float32)
    return alpha, dtype


def add_scaled(a, b, alpha, fn: str, name: str, negate: bool = False) -> Tensor:
    """`a + alpha * b` (`a - alpha * b` with `negate`) as torch computes it, recorded as one
    node `name` whose next_functions are a's and b's and whose `_saved_alpha` is alpha.

    In a floating result dtype it is one fused multiply-add (IR scaled_add: torch's add
    kernel rounds once); otherwise alpha * b is exact or wraps around as torch's does, and
    records no node (integer and bool results never require grad)."""
    alpha, dtype = alpha_number(a, b, alpha, fn)
    if dtype.is_floating_point:
        (a, b), _ = _promoted([a, b], fn)
        out = apply_op("scaled_add", [a, b, _scalar_array(alpha, dtype)], {"negate": negate}, name)
        remember_alpha(out, alpha)
        return out
    if _is_scalar(b):
        # (True * True is the int 1 in Python: a bool result scales a bool)
        scaled = builtins.bool(b * alpha) if dtype is bool_ else b * alpha
    else:
        scaled = mul(b, alpha)
    ops, _ = _promoted([a, scaled], fn)
    return apply_op("sub" if negate else "add", ops, None, name)


def add(input, other, *deprecated, alpha=1) -> Tensor:
    """a + alpha * b (torch's deprecated `add(input, alpha, other)` too, with its warning)."""
    if deprecated:
        other, alpha = _alpha_first("add", other, deprecated, alpha)
    a, b = input, other
    if type(alpha) is not int or alpha != 1:
        return add_scaled(a, b, alpha, "add", "AddBackward0")
    if type(a) is Tensor:                 # the common cases inline (hot: every traced or eager add)
        tb = type(b)
        if tb is Tensor and a._dtype is b._dtype:
            return apply_op("add", [a, b], None, "AddBackward0")
        if (tb is float or tb is int) and a._dtype.is_floating_point:
            c = _SCALAR_ARRAYS.get((tb, b, a._dtype))
            return apply_op("add", [a, c if c is not None else _scalar_array(b, a._dtype)], None, "AddBackward0")
    ops = _promoted_pair_fast(a, b) or _promoted([a, b], "add")
    return apply_op("add", ops[0], None, "AddBackward0")


def sub(input, other, *deprecated, alpha=1) -> Tensor:
    """a - alpha * b (torch's deprecated `sub(input, alpha, other)` too, with its warning)."""
    if deprecated:
        other, alpha = _alpha_first("sub", other, deprecated, alpha)
    return subtract_scaled(input, other, alpha)


def subtract_scaled(a, b, alpha, name: str = "SubBackward0") -> Tensor:
    """a - alpha * b recorded as node `name` (SubBackward1: torch's sub(Tensor, Scalar, Scalar)
    overload, which `subtract(x, 2, 1)` picks)."""
    _check_bool_sub(a, b)               # before scaling: alpha * a bool tensor is no longer bool
    if type(alpha) is not int or alpha != 1:
        return add_scaled(a, b, alpha, "sub", name, negate=True)
    ops, dtype = _promoted([a, b], "sub")
    return apply_op("sub", ops, None, name)


def _alpha_first(fn: str, alpha, rest: tuple, keyword_alpha, method: bool = False) -> tuple:
    """torch's deprecated overload `fn(input, Number alpha, other)` (`method`: the method's,
    `t.fn(Number alpha, other)`): (other, alpha), with torch's warning, which its parser
    gives once a process (TORCH_WARN_ONCE); any other extra argument is a TypeError (which
    tracer/parser_errors.py words as torch's parser)."""
    if len(rest) != 1 or keyword_alpha != 1 or not number_operand(alpha):
        raise TypeError(f"{fn}() takes 2 positional arguments but {2 + len(rest)} were given")
    if not _WARNED_ALPHA_FIRST:
        _WARNED_ALPHA_FIRST.append(True)
        if method:
            old, new = "Number alpha, Tensor other", "Tensor other, *, Number alpha = 1"
        else:
            old = "Tensor input, Number alpha, Tensor other, *, Tensor out = None"
            new = "Tensor input, Tensor other, *, Number alpha = 1, Tensor out = None"
        warnings.warn(f"This overload of {fn} is deprecated:\n\t{fn}({old})\nConsider using one of the following "
                      f"signatures instead:\n\t{fn}({new})", UserWarning, stacklevel=user_stacklevel())
    return rest[0], alpha


_WARNED_ALPHA_FIRST: list = []


def _check_bool_sub(a, b) -> None:
    bools = [(isinstance(x, Tensor) and x._dtype is bool_) or isinstance(x, bool)
             or (isinstance(x, np.ndarray) and x.dtype == np.bool_) for x in (a, b)]     # (an array is a tensor)
    if builtins.all(bools):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if builtins.any(bools):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def rsub(a, b, alpha=1) -> Tensor:
    """b - alpha * a, for `2 - x` and torch.rsub (RsubBackward0; RsubBackward1 for a number b)."""
    _check_bool_sub(b, a)
    name = "RsubBackward0" if isinstance(b, Tensor) else "RsubBackward1"
    if type(alpha) is not int or alpha != 1:
        return add_scaled(b, a, alpha, "rsub", name, negate=True)
    ops, _ = _promoted([b, a], "rsub")
    return apply_op("sub", ops, None, name)


def mul(input, other) -> Tensor:
    """a * b."""
    a, b = input, other
    if type(a) is Tensor:                   # the common cases inline (hot: every traced or eager mul)
        tb = type(b)
        if tb is Tensor and a._dtype is b._dtype:
            return apply_op("mul", [a, b], None, "MulBackward0")
        if (tb is float or tb is int) and a._dtype.is_floating_point:
            c = _SCALAR_ARRAYS.get((tb, b, a._dtype))
            return apply_op("mul", [a, c if c is not None else _scalar_array(b, a._dtype)], None, "MulBackward0")
    ops = _promoted_pair_fast(a, b) or _promoted([a, b], "mul")
    return apply_op("mul", ops[0], None, "MulBackward0")


class _Omitted:
    """The default of an optional argument that torch records differently when it is given
    as None: div's `rounding_mode=None` is div.Tensor_mode (DivBackward2), its absence
    div.Tensor (DivBackward0)."""

    def __repr__(self) -> str:
        return "None"


OMITTED = _Omitted()


def div(input, other, *, rounding_mode=OMITTED) -> Tensor:
    """True division (integers divide as float32, as torch); with `rounding_mode` "trunc"
    or "floor", the quotient rounded."""
    a, b = input, other
    if rounding_mode is OMITTED:
        return apply_op("div", _float_operands([a, b], "div"), None, "DivBackward0")
    if rounding_mode not in (None, "trunc", "floor"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                         f"'{rounding_mode}'")
    if rounding_mode is not None:
        ops, _ = _promoted([a, b], "div")
        return apply_op("div_" + rounding_mode, ops, None, "DivBackward2")
    return apply_op("div", _float_operands([a, b], "div"), None, "DivBackward2")


def floor_divide(input, other) -> Tensor:
    """torch.floor_divide, `input // other` (ir/ops/division.py): a NotImplemented node,
    whose backward raises torch's error (div(..., rounding_mode='floor') has zero gradients)."""
    ops, _ = _promoted([input, other], "floor_divide")
    return apply_op("div_floor", ops, _NO_DERIVATIVE["floor_divide"], "NotImplemented")


def rfloordiv(a, b) -> Tensor:
    """b // a, for `7 // x`."""
    return floor_divide(b, a)


def _need_a_tensor(fn: str, *operands) -> None:
    """torch's binary ops take a tensor on one side at least (its parser's TypeError, worded by
    tracer/parser_errors.py for the public function)."""
    if not builtins.any(isinstance(x, (Tensor, np.ndarray)) for x in operands):
        raise TypeError(f"{fn}(): expected a tensor operand")


def remainder(input, other) -> Tensor:
    """torch.remainder, `input % other`: the sign of the divisor, as Python's %
    (RemainderBackward0 for a number divisor, RemainderBackward1 for a tensor)."""
    _need_a_tensor("remainder", input, other)
    ops, _ = _promoted([input, other], "remainder")
    if not isinstance(input, Tensor):    # remainder(number, tensor): torch has no derivative formula
        return apply_op("remainder", ops, _NO_DERIVATIVE["remainder"], "NotImplemented")
    name = "RemainderBackward1" if isinstance(other, (Tensor, np.ndarray)) else "RemainderBackward0"
    return apply_op("remainder", ops, None, name)


_NO_DERIVATIVE = {op: {"no_derivative": op} for op in ("floor_divide", "remainder")}


def rremainder(a, b) -> Tensor:
    """b % a, for `7 % x`."""
    return remainder(b, a)


def rdiv(a, b) -> Tensor:
    """b / a, for `2 / x`: torch records reciprocal(a) * b."""
    if type(b) is int and b >= _INT64_WRAPS and isinstance(a, Tensor) and a._dtype is bool_:
        # (torch divides the float reciprocal by the int, which no promotion with a bool
        # tensor meets: `2**63 / bool_tensor` is a float32 tensor, `bool_tensor / 2**63` raises)
        check_int_parses(b)
        b = float(b)
    x, scalar = _float_operands([a, b], "div")
    return apply_op("mul", [apply_op("reciprocal", [x], None), scalar], None, "MulBackward0")


def neg(input) -> Tensor:
    """torch.neg: -a elementwise (RuntimeError for bool, as torch)."""
    a = as_tensor(input, "neg")
    if a._dtype is bool_:
        raise RuntimeError(BOOL_NEGATION)
    return apply_op("neg", [a], None, "NegBackward0")


def _arg_type_name(x) -> str:
    """How torch's argument parser names an argument's type in its errors."""
    return "Tensor" if isinstance(x, (Tensor, np.ndarray)) else type(x).__name__


def _keyword_texts(fn):
    """torch's parser names an argument's position only when it was given by position:
    `cat(ts, 1.0)` says "argument 'dim' (position 2)", `cat(ts, dim=1.0)` "argument 'dim'"."""
    def with_texts(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError as exc:
            text = str(exc)
            found = ARGUMENT_POSITION.match(text) if kwargs else None
            if found is None or not (found.group(1) in kwargs or (found.group(1) == "dim" and "axis" in kwargs)):
                raise
            raise TypeError(text[:found.end(1) + 1] + text[found.end():]) from None
    with_texts.__name__, with_texts.__qualname__, with_texts.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    with_texts.__wrapped__ = fn
    return with_texts


def missing_arguments_error(name: str, missing: list) -> TypeError:
    """torch's parser's TypeError for a call of `name` missing the arguments `missing` (its
    number agreement is reversed: one missing is "arguments")."""
    return TypeError(f"{name}() missing {len(missing)} required positional "
                     f"{'arguments' if len(missing) == 1 else 'argument'}: " + ", ".join(f'"{m}"' for m in missing))


def missing_argument_texts(fn, name: str | None = None):
    """torch's parser's text for a call missing required arguments: `full() missing 2 required
    positional argument: "size", "fill_value"` (its number agreement is reversed: one missing
    is "arguments"), where Python's own reads `missing 1 required positional argument: 'x'`.
    Only a TypeError the call's binding itself raises is reworded (worked out on the error
    path: the happy path costs one try)."""
    signature = inspect.signature(fn)
    name = name or fn.__name__

    def with_texts(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError as original:
            try:
                given = signature.bind_partial(*args, **kwargs).arguments
            except TypeError:
                raise original from None
            missing = [p.name for p in signature.parameters.values()
                       if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                       and p.name not in given]
            if not missing:
                raise
            raise missing_arguments_error(name, missing) from None
    with_texts.__name__, with_texts.__qualname__, with_texts.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    with_texts.__wrapped__ = fn
    return with_texts


# torch's "fn(): argument 'name' (position N)": the name (group 1), the position (group 2)
ARGUMENT_POSITION = re.compile(r"\w+\(\): argument '(\w+)' \(position (\d+)\)")


def _call_form_texts(fn):
    """torch's "received an invalid combination of arguments - got (...)" lists the call's own
    arguments: by type in order, then keywords (in reverse) as `name=type`, without self for
    a method (`t.sum(1.5)`: "got (float)"; `torch.sum(t, dim=1.5)`: "got (Tensor, dim=float)";
    `t.sum(dim=1.5)`: "got (dim=float, )"). The function `fn` may word it for either form:
    the text is rebuilt from the call. The returned function is the function form; its
    `method` attribute, the method form (bound on Tensor by tracer/methods.py)."""
    name = fn.__name__

    def reworded(exc: TypeError, args: tuple, kwargs: dict) -> TypeError:
        found = _INVALID_COMBINATION.match(str(exc))
        if found is None:
            return exc
        return TypeError(f"{name}() received an invalid combination of arguments - got {got_text(args, kwargs)}"
                         f"{found.group(1)}")

    def function_form(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError as exc:
            raise reworded(exc, args, kwargs) from None

    def method_form(self, *args, **kwargs):
        try:
            return fn(self, *args, **kwargs)
        except TypeError as exc:
            method_text = getattr(fn, "method_invalid", None)
            text = method_text(name, args, kwargs) if method_text is not None and \
                _INVALID_COMBINATION.match(str(exc)) else None
            raise (TypeError(text) if text is not None else reworded(exc, args, kwargs)) from None

    for form in (function_form, method_form):
        form.__name__, form.__qualname__, form.__doc__, form.__wrapped__ = name, name, fn.__doc__, fn
    function_form.method = method_form
    return function_form


def _extremum_method_invalid(name: str, args: tuple, kwargs: dict):
    """torch's text for a bad call of the method t.max(...) / t.min(...) (its overloads are
    `()`, `(Tensor other)` and `(int dim, bool keepdim = False)`, without self), from its
    argument parser: one argument (the two one-argument overloads are plausible) lists them,
    each overload that takes exactly one argument saying why it did not match; two arguments
    (only the dim overload is plausible) give that overload's own error. None: not known."""
    given = len(args) + len(kwargs)
    if given == 1:
        if args:
            why = f"      didn't match because some of the arguments have invalid types: (!{described(args[0])}!)\n"
            reasons = [why, why]
        else:
            (key, value), = kwargs.items()
            wrong = f"      didn't match because some of the keywords were incorrect: {key}\n"
            reasons = [wrong, wrong if key != "other" else
                       f"      didn't match because some of the arguments have invalid types: "
                       f"(!other={_arg_type_name(value)}!)\n"]
        return (f"{name}() received an invalid combination of arguments - got {got_text(args, kwargs)}, "
                f"but expected one of:\n"
                f" * ()\n{reasons[0]} * (Tensor other)\n{reasons[1]} * (int dim, bool keepdim = False)\n")
    if given == 2 and set(kwargs) <= {"dim", "keepdim"}:
        named = dict(zip(("dim", "keepdim"), args))
        if set(named) & set(kwargs):
            return None
        for position, key in enumerate(("dim", "keepdim"), start=1):
            value = named.get(key, kwargs.get(key))
            where = f" (position {position})" if key in named else ""
            if key == "dim" and (not _is_index(value) or isinstance(value, (bool, np.bool_))):
                return f"{name}(): argument 'dim'{where} must be int, not {type_name(value)}"
            if key == "keepdim" and not isinstance(value, bool):
                return f"{name}(): argument 'keepdim'{where} must be bool, not {type_name(value)}"
    return None


_INVALID_COMBINATION = re.compile(r"\w+\(\) received an invalid combination of arguments - got \(.*?\)(, but expected .*)",
                                  re.S)


def pow(input, exponent) -> Tensor:
    """input ** exponent (torch's keywords); PowBackward0 for a scalar exponent, 1 for a tensor
    one, 2 for a scalar base."""
    a, b = input, exponent
    if not (isinstance(a, (Tensor, np.ndarray)) and (isinstance(b, (Tensor, np.ndarray)) or _is_scalar(b))
            or isinstance(b, (Tensor, np.ndarray)) and _is_scalar(a)):
        raise parser_errors.FUNCTIONS["pow"].refusal((a, b), {})
    a, b = (as_tensor(x) if isinstance(x, np.ndarray) else x for x in (a, b))     # (an array is a tensor)
    name = "PowBackward0" if not isinstance(b, Tensor) else ("PowBackward1" if isinstance(a, Tensor)
                                                            else "PowBackward2")
    ops, dtype = _promoted([a, b], "pow")
    if dtype is bool_ and isinstance(b, Tensor):
        from fusegrad.ir.ops.registry import broadcast_shapes as broadcast_types
        broadcast_types(*(tuple(x.shape) for x in ops))      # (torch's broadcast error comes first)
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")
    if not dtype.is_floating_point and _is_scalar(b) and b < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    if dtype is int64 and type(b) is int and b >= _INT64_WRAPS:
        raise RuntimeError("value cannot be converted to type int64_t without overflow")
    if isinstance(b, (bool, np.bool_)) and dtype.is_floating_point:
        # a bool exponent: x ** 1 or x ** 0, whose gradient is torch's general formula, never
        # the zeros of a number exponent 0 (its Scalar(false) is unequal to 0.0): NaN at x = 0
        return apply_op("pow_const", [ops[0]], {"exponent": float(b), "bool_exponent": True}, name)
    if _is_scalar(b) and dtype.is_floating_point:
        if pow_const_applies(dtype, b):
            # x ** 2, x ** 0.5...: torch multiplies or takes a root (ir/ops/elementwise.py pow_const)
            return apply_op("pow_const", [ops[0]], {"exponent": float(b)}, name)
        # the exponent a double, as torch's Scalar (ir/ops/elementwise.py pow_number)
        return apply_op("pow_number", [ops[0], _double(b)], {"tail": pow_number_tail(ops[0])}, name)
    if _is_scalar(a) and not isinstance(a, (bool, np.bool_)) and dtype.is_floating_point:
        # torch's pow(Scalar, Tensor) allocates its result row-major (3 ** x.t() has strides (2, 1));
        # its gradient takes the number's log in double (ir/ops/elementwise.py number_pow)
        return _laid_out_row_major(apply_op("number_pow", [_double(a), ops[1]], None, name))
    if _is_scalar(a):
        return _laid_out_row_major(apply_op("pow", ops, None, name))
    if isinstance(b, Tensor) and b._dtype is bool_ and dtype.is_floating_point:
        # a bool exponent: torch's backward for the base raises (ir/ops/elementwise.py BOOL_SUBTRACTION)
        return apply_op("pow", ops, {"no_derivative": "pow", "per_element": True}, name)
    if isinstance(b, Tensor) and dtype.is_floating_point:
        # a tensor exponent: pow for each element, never NumPy's sqrt for a loop's one exponent of
        # 0.5 (ir/ops/elementwise.py _pow_ref)
        return apply_op("pow", ops, {"per_element": True}, name)
    return apply_op("pow", ops, None, name)


def _double(number) -> np.ndarray:
    """A Python number as torch's Scalar holds it: a float64 0-d array (a constant operand)."""
    return _scalar_array(float(number), float64)


def pow_number_tail(x) -> bool:
    """Whether torch's float32 pow(Tensor, Scalar) computes every element of `x` with the
    double exponent: a tensor shorter than one block of its vectorised loop (32 elements
    with AVX-512, 16 with AVX2: ir/torch_cpu.py), which the loop never reaches (see
    ir/ops/elementwise.py, pow_number)."""
    return x.numel() < block_elements(np.float32)


_NO_P = object()        # bernoulli's p when not given (None is a bad p: torch's parser refuses it)


def bernoulli(input, p=_NO_P, *, generator=None) -> Tensor:
    """1 with probability `input` (each element), else 0, in input's dtype (torch's draws, in
    row-major order: torch fills a contiguous result); with a number `p`, every element with
    probability p. BernoulliBackward0 (a zero gradient)."""
    return bernoulli_draws(input, p, generator, row_major=True)


def bernoulli_draws(input, p=_NO_P, generator=None, row_major: bool = True) -> Tensor:
    """torch.bernoulli's result, its draws in row-major order or (not `row_major`) in input's
    memory order, as torch's dropout draws its noise (a bernoulli_ of empty_like(input))."""
    from . import generator as random_generator, inplace
    a = as_tensor(input, "bernoulli")
    if p is not _NO_P and not (_is_scalar(p) or isinstance(p, (Tensor, np.ndarray)) and np.ndim(p) == 0):
        raise TypeError(f"bernoulli(): argument 'p' must be float, not {type_name(p)}")    # (reworded: parser)
    values = inplace.bernoulli_values(a, a if p is _NO_P else p, random_generator.required(generator, "bernoulli"),
                                      row_major=row_major)
    # (torch allocates the draws row-major: x.t().bernoulli() has strides (2, 1); its overload
    # for a number p has no derivative: a NotImplemented node, whose backward raises)
    attrs, name = ({"index": ()}, "BernoulliBackward0") if p is _NO_P else \
        ({"index": (), "no_derivative": "bernoulli"}, "NotImplemented")
    return _laid_out_row_major(apply_op("index_put", [a, values], attrs, name))


def square(input) -> Tensor:
    """input * input as torch computes it: pow(input, 2) (PowBackward0; bool squares to int64)."""
    return pow(as_tensor(input, "square"), 2)


def matmul(input, other) -> Tensor:
    """Matrix product with NumPy's 1-d and batch rules. Where torch turns the product into a
    2-d one (a vector times a matrix; a batch folded into rows times a matrix or vector),
    it is recorded as torch's chain of nodes (unsqueeze or view, mm or mv, squeeze or view)."""
    a, b = as_tensor(input, "matmul"), as_tensor(other, "matmul", "other", 2)
    one_matrix = _one_matrix(a, b)
    if one_matrix is not None:
        return matmul(*one_matrix)
    _check_matmul(a, b)
    na, nb = a.dim(), b.dim()
    if a._dtype is not b._dtype and (na > 2 or nb > 2) and (a.numel() == 0 or b.numel() == 0):
        # a batched product with an empty operand: torch's result has the second's dtype
        check_empty_product_dtype(a, b)
        a = cast(a, b._dtype)
        hide_node(a)
    if na == 1 and nb == 2:
        row = apply_op("reshape", [a], {"shape": (1, a.shape[0])}, "UnsqueezeBackward0")
        product = apply_op("matmul", [row, b], None, "MmBackward0")
        # (torch's squeeze_ of the product, in place: the result is no view, and its version
        # counter has counted that write)
        out = _unsafe_view(apply_op("reshape", [product], {"shape": (b.shape[1],)}, "SqueezeBackward4"))
        out._vbox = [out._vbox[0] + 1]
        return out
    if na >= 3 and nb <= 2 and _matmul_fold(a, b) == "left":
        return _folded_product(a, b)
    if na <= 2 and nb <= 2 or not (is_grad_enabled() and (a.requires_grad or b.requires_grad)):
        # (no node is recorded: one op, whatever torch's path, multiplies the same matrices)
        return apply_op("matmul", [a, b], mm_attrs(a, b) if na == 2 and nb == 2 else None, _matmul_grad_name(a, b))
    if _matmul_fold(a, b) == "right":
        # torch folds b's transpose and multiplies it by a's: (a @ b)^T = b^T @ a^T
        product = _folded_product(mT(b), t(a) if na == 2 else a)
        return contiguous(mT(product)) if na == 2 else product
    return _batched_product(a, b)


def mm_attrs(a: Tensor, b: Tensor) -> dict | None:
    """The attributes of an eager 2-d product a @ b that records a node: torch's layout rule
    for its gradients (ir.ops.linalg.mm_layout_attrs); None in a trace or without a node."""
    if a._data is None or b._data is None or trace_state.current() is not None or \
            not (a._requires_grad or b._requires_grad) or not is_grad_enabled():
        return None
    return mm_layout_attrs(a._data, b._data)


def _folded_product(a: Tensor, b: Tensor) -> Tensor:
    """a (>= 3-d) with its leading dims folded into rows, times matrix or vector b, as torch's
    matmul records it: reshape (a view, or a copy), MmBackward0 or MvBackward0, then an
    UnsafeViewBackward0 back to the batch shape."""
    lead = tuple(a.shape[:-1])
    rows = reshape(a, (_numel(lead), a.shape[-1]))
    product = apply_op("matmul", [rows, b], mm_attrs(rows, b) if b.dim() == 2 else None,
                       "MmBackward0" if b.dim() == 2 else "MvBackward0")
    return _unsafe_view(apply_op("reshape", [product], {"shape": lead + tuple(b.shape[1:])},
                                 "UnsafeViewBackward0"))


def _batched_product(a: Tensor, b: Tensor) -> Tensor:
    """torch's bmm path of matmul, node for node: each operand expanded to the broadcast batch
    and reshaped to one batch dim (ExpandBackward0, then a view or a copy), BmmBackward0, and
    an UnsafeViewBackward0 to the result's shape."""
    na, nb = a.dim(), b.dim()
    from fusegrad.ir.ops.registry import broadcast_shapes
    n, k = (a.shape[-2] if na > 1 else 1), a.shape[-1]
    p = b.shape[-1] if nb > 1 else 1
    batch = tuple(broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2])))
    size = _numel(batch)
    left = reshape(expand(a, batch + (n, k)), (size, n, k))
    if nb == 1:
        right = unsqueeze(reshape(expand(b, batch + (k,)), (size, k)), 2)
    else:
        right = reshape(expand(b, batch + (k, p)), (size, k, p))
    product = apply_op("matmul", [left, right], None, "BmmBackward0")
    if nb == 1:
        product = squeeze(product, -1)
    shape = batch + ((n,) if na > 1 else ()) + ((p,) if nb > 1 else ())
    return _unsafe_view(apply_op("reshape", [product], {"shape": shape}, "UnsafeViewBackward0"))


def _unsafe_view(t: Tensor) -> Tensor:
    """torch's _unsafe_view: a view of memory that nothing else holds (a copy, a product made
    for it) is not a view: no `_base`, so an in-place write records its own op on it
    (AddBackward0), not a CopySlices on the hidden base; and its version counter is its own
    (kron's views of its operands, saved by its product, do not see a later write to them)."""
    t._base = None
    t._view_chain = ()
    t._vbox = [0]
    return t


def _check_matmul(a: Tensor, b: Tensor) -> None:
    """torch's matmul errors: it dispatches to dot, mv, mm, a folded mv/mm or bmm, and each
    kernel checks shapes and dtypes in its own order with its own text."""
    na, nb, sa, sb = a.dim(), b.dim(), tuple(a.shape), tuple(b.shape)
    if na == 0 or nb == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {na}D and {nb}D")
    if na == 1 and nb == 1:
        if a._dtype is not b._dtype:
            raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                               f"{TORCH_SCALAR_NAMES[a._dtype.name]} and {TORCH_SCALAR_NAMES[b._dtype.name]}")
        return                                   # the size check is the op's shape rule
    if na <= 2 and nb <= 2:
        if nb == 1:
            return _check_mv(sa, sb, a._dtype, b._dtype)
        return _check_mm(sa if na == 2 else (1,) + sa, sb, a._dtype, b._dtype)
    fold = _matmul_fold(a, b)
    if fold == "left":                           # a (>= 3-d) folded to rows x k, times b
        mat = (_numel(sa[:-1]), sa[-1])
        return _check_mv(mat, sb, a._dtype, b._dtype) if nb == 1 else _check_mm(mat, sb, a._dtype, b._dtype)
    if fold == "right":                          # b^T folded, times a^T
        mat = (_numel(sb[:-2]) * sb[-1], sb[-2])
        if na == 1:
            return _check_mv(mat, sa, b._dtype, a._dtype)
        return _check_mm(mat, (sa[-1], sa[-2]), b._dtype, a._dtype)
    from fusegrad.ir.ops.registry import broadcast_shapes
    batch = _numel(broadcast_shapes(sa[:-2], sb[:-2]))
    k1, k2 = sa[-1], sb[0] if nb == 1 else sb[-2]
    if k1 != k2:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{batch}, {k1}] "
                           f"but got: [{batch}, {k2}].")
    if _numel(sa) == 0 or _numel(sb) == 0:
        return          # (torch's batched path returns an empty operand's zeros before its dtype checks)
    rows, cols = sa[-2] if na > 1 else 1, sb[-1] if nb > 1 else 1
    if a._dtype is not b._dtype and rows * k1 * cols >= BMM_BLAS_SIZE:
        raise bmm_dtype_error(a._dtype, b._dtype, rows, k1, cols)
    # (torch's bmm refuses a bool self before it compares the dtypes)
    _check_matmul_dtype(a._dtype, "bmm", k1, batch * rows * cols)
    if a._dtype is not b._dtype:
        raise bmm_dtype_error(a._dtype, b._dtype, rows, k1, cols)


def _one_matrix(a: Tensor, b: Tensor):
    """Two 3-d batches of different sizes, one of them a batch of one that requires grad:
    torch multiplies (and checks) that one's matrix, squeezed (SqueezeBackward1), whatever the
    grad mode; the operands it multiplies then, or None."""
    if a.dim() == 3 and b.dim() == 3 and a.shape[0] != b.shape[0]:
        if a.shape[0] == 1 and a.requires_grad:
            return squeeze(a, 0), b
        if b.shape[0] == 1 and b.requires_grad:
            return a, squeeze(b, 0)
    return None


def _check_mv(mat: tuple, vec: tuple, mat_dtype: DType, vec_dtype: DType) -> None:
    if mat[1] != vec[0]:
        raise RuntimeError(f"size mismatch, got input ({mat[0]}), mat ({mat[0]}x{mat[1]}), vec ({vec[0]})")
    if mat_dtype is not vec_dtype:
        v, m = TORCH_SCALAR_NAMES[vec_dtype.name], TORCH_SCALAR_NAMES[mat_dtype.name]
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {v}, {m}, and {v}")


def check_empty_product_dtype(a: Tensor, b: Tensor) -> None:
    """A batched product with an empty operand has b's dtype in torch (no dtype check runs):
    an integer or bool one cannot carry the gradient an operand that requires grad needs."""
    if not b._dtype.is_floating_point and is_grad_enabled() and (a._requires_grad or b._requires_grad):
        raise RuntimeError(f"Autograd not support dtype: {TORCH_SCALAR_NAMES[b._dtype.name]}")


# torch's bmm multiplies matrices of fewer elements than this (rows * contraction * columns)
# in a loop of its own, larger ones through BLAS; the two paths check the dtypes differently
BMM_BLAS_SIZE = 400


def bmm_dtype_error(a: DType, b: DType, rows: int, k: int, cols: int) -> RuntimeError:
    """torch's error for a batched product of two dtypes, whose text depends on the path its bmm
    takes for matrices of this size (a float32 batch times a float64 one: "expected scalar
    type Float but found Double" below BMM_BLAS_SIZE, "Double but found Float" above it, and a
    float times an integer or bool batch is refused by the BLAS path's own check)."""
    if rows * k * cols < BMM_BLAS_SIZE:
        expected, found = a, b
    elif not b.is_floating_point:
        return RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_c_name(a)} != {_c_name(b)}")
    else:
        expected, found = b, a
    return RuntimeError(f"expected scalar type {TORCH_SCALAR_NAMES[expected.name]} but found "
                        f"{TORCH_SCALAR_NAMES[found.name]}")


def _check_mm(m1: tuple, m2: tuple, d1: DType, d2: DType) -> None:
    if m1[1] != m2[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({m1[0]}x{m1[1]} and {m2[0]}x{m2[1]})")
    if d1 is not d2:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_c_name(d1)} != {_c_name(d2)}")


def _matmul_fold(a: Tensor, b: Tensor):
    """torch's should_fold: 'left' when the >= 3-d a is folded into a matrix (times a 1-d or
    2-d b), 'right' when b is (through its transpose), None for the batched (bmm) path."""
    na, nb = a.dim(), b.dim()
    larger, smaller = (a, b) if na >= nb else (b, a)
    if larger.dim() < 3 or smaller.dim() > 2:
        return None
    side = "left" if larger is a else "right"
    if smaller.requires_grad:
        return side
    if na == 2:
        return None
    shape = list(larger.shape)
    strides = list(strides_of(larger))      # (a traced value's: the layout its view chain gives it)
    if side == "right":
        shape[-2:] = shape[-1], shape[-2]
        strides[-2:] = strides[-1], strides[-2]
    if 0 in shape:
        return side
    # Folding must not copy: the leading dims are contiguous with one another.
    return side if builtins.all(strides[i] == strides[i + 1] * shape[i + 1]
                                for i in range(len(shape) - 2)) else None


def _matmul_grad_name(a: Tensor, b: Tensor) -> str:
    """The node of a matmul recorded as one op: dot, mv or mm for operands of at most 2 dims
    (a batched product records torch's chain of nodes, see matmul, where it records any)."""
    na, nb = a.dim(), b.dim()
    if nb <= 2 and na <= 2:
        return ("DotBackward0" if na == 1 and nb == 1 else "MvBackward0" if na == 2 and nb == 1
                else "MmBackward0" if na == 2 else "SqueezeBackward4")
    return "UnsafeViewBackward0"


def _c_name(d: DType) -> str:
    return {"float32": "float", "float64": "double", "int64": "long int", "bool": "bool"}[d.name]


def maximum(input, other) -> Tensor:
    """Elementwise max of two tensors (torch takes no Python scalar here: TypeError)."""
    a, b = as_tensor(input, "maximum"), as_tensor(other, "maximum", "other", 2)
    return apply_op("maximum", _promoted([a, b], "maximum")[0], None, "MaximumBackward0")


def minimum(input, other) -> Tensor:
    """Elementwise min of two tensors (torch takes no Python scalar here: TypeError)."""
    a, b = as_tensor(input, "minimum"), as_tensor(other, "minimum", "other", 2)
    return apply_op("minimum", _promoted([a, b], "minimum")[0], None, "MinimumBackward0")


def _unary_float(op: str, name: str):
    def fn(input=REQUIRED, *surplus) -> Tensor:    # torch's keyword for the operand is `input`
        a = input if type(input) is Tensor and not surplus else as_tensor(one_input(input, surplus, op), op)
        if not a._dtype.is_floating_point:
            a = cast(a, float32)
        return apply_op(op, [a], None, name)

    def method(self, *args, **kwargs) -> Tensor:    # (its own body: a wrapper's frame costs 2% of W5)
        if args or kwargs:
            raise no_arguments_error(op, args, kwargs)
        return apply_op(op, [self if self._dtype.is_floating_point else cast(self, float32)], None, name)
    fn.__name__ = fn.__qualname__ = method.__name__ = method.__qualname__ = op
    fn.__doc__ = method.__doc__ = f"Elementwise {op} (integer inputs compute in float32, as torch)."
    fn.method = method
    return fn


exp = _unary_float("exp", "ExpBackward0")
log = _unary_float("log", "LogBackward0")
sqrt = _unary_float("sqrt", "SqrtBackward0")
sin = _unary_float("sin", "SinBackward0")
cos = _unary_float("cos", "CosBackward0")
tanh = _unary_float("tanh", "TanhBackward0")
sigmoid = _unary_float("sigmoid", "SigmoidBackward0")
reciprocal = _unary_float("reciprocal", "ReciprocalBackward0")
expm1 = _unary_float("expm1", "Expm1Backward0")
log1p = _unary_float("log1p", "Log1PBackward0")
erf = _unary_float("erf", "ErfBackward0")


def _unary(op: str, name: str, doc: str):
    """The elementwise op `op` in the operand's dtype, and its method form (`.method`), which
    takes nothing (torch's "TensorBase.relu() takes no arguments")."""
    def fn(input=REQUIRED, *surplus) -> Tensor:
        return apply_op(op, [as_tensor(one_input(input, surplus, op), op)], None, name)

    def method(self, *args, **kwargs) -> Tensor:
        if args or kwargs:
            raise no_arguments_error(op, args, kwargs)
        return apply_op(op, [self], None, name)
    fn.__name__ = fn.__qualname__ = method.__name__ = method.__qualname__ = op
    fn.__doc__ = method.__doc__ = doc
    fn.method = method
    return fn


relu = _unary("relu", "ReluBackward0", "torch.relu: max(input, 0) elementwise.")
abs = _unary("abs", "AbsBackward0", "torch.abs: |input| elementwise.")
sign = _unary("sign", "SignBackward0", "torch.sign: -1, 0 or 1 elementwise, in a's dtype (0 for NaN).")


def clamp_bounds(dtype: DType, min, max) -> tuple:
    """clamp's bounds with a missing one made unbounded (+-inf, int64's range or False/True)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if dtype.is_floating_point:
        lowest, highest = -np.inf, np.inf
    elif dtype is bool_:
        lowest, highest = False, True
    else:
        lowest, highest = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    return (lowest if min is None else min), (highest if max is None else max)


_CLAMP_SIGNATURES = ("\n * (Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = None)"
                     "\n * (Tensor input, Number min = None, Number max = None, *, Tensor out = None)\n")


def _clamp_overload(a: Tensor, min, max) -> bool:
    """True for torch's Tensor overload of clamp (every given bound a tensor), False for its
    Number one (every bound a number or a 0-d tensor that needs no grad, which torch reads as
    a number); TypeError with torch's text when neither fits."""
    given = [b for b in (min, max) if b is not None]
    tensors = [isinstance(b, Tensor) for b in given]
    if builtins.all(tensors):
        return True
    if builtins.all((b.dim() == 0 and not b.requires_grad) if t else _is_scalar(b)
                    for t, b in zip(tensors, given)):
        return False
    got = ", ".join(["Tensor"] + ["Tensor" if t else type(b).__name__ for t, b in zip(tensors, given)])
    raise TypeError(f"clamp() received an invalid combination of arguments - got ({got}), but expected one of:"
                    f"{_CLAMP_SIGNATURES}")


def clamp(input, min=None, max=None) -> Tensor:
    """Limit values to [min, max]; either bound may be None, a number or a tensor.

    As torch: bounds that are all tensors take part in autograd (ClampBackward0); number
    bounds (a 0-d tensor among them counts as a number) do not (ClampBackward1)."""
    a = input
    if not isinstance(a, (Tensor, np.ndarray)):
        raise TypeError(f"clamp() received an invalid combination of arguments - got ({_arg_type_name(a)}, "
                        f"{', '.join(_arg_type_name(b) for b in (min, max) if b is not None)}), but expected one of:"
                        "\n * (Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = None)"
                        "\n * (Tensor input, Number min = None, Number max = None, *, Tensor out = None)\n")
    a = as_tensor(a, "clamp")
    min, max = parsed_operand(min), parsed_operand(max)
    tensor_bounds, dtype = clamp_result_type(a, min, max)
    op, operands, name = clamp_call(a, min, max, dtype, tensor_bounds)
    return apply_op(op, operands, None, name)


def clamp_result_type(a: Tensor, min, max) -> tuple:
    """(whether torch takes its Tensor overload, the result dtype) of clamp(a, min, max), with
    torch's errors for no bounds, bad bound types and bool results (clamp and clamp_)."""
    if min is None and max is None:
        clamp_bounds(a._dtype, min, max)             # raises torch's error
    tensor_bounds = _clamp_overload(a, min, max)
    bounds = [b for b in (min, max) if b is not None]
    kinds = [_kind(b) if tensor_bounds else (_kind(b)[0], SCALAR) for b in bounds]
    dtype = result_type([_kind(a)] + kinds)
    if dtype is bool_:
        both = len(bounds) == 2
        kernel = "clamp" if tensor_bounds and both else \
            "clamp_scalar" if both else "clamp_min_scalar" if min is not None else "clamp_max_scalar"
        if both or not tensor_bounds:
            raise NotImplementedError(f"\"{kernel}_cpu\" not implemented for 'Bool'")
    return tensor_bounds, dtype


def clamp_call(a: Tensor, min, max, dtype: DType, tensor_bounds: bool) -> tuple:
    """(op, operands, node name) of clamp(a, min, max) computed in `dtype` (clamp and clamp_):
    tensor bounds (`tensor_bounds`, torch's Tensor overload) take part in autograd, numbers do not."""
    if not tensor_bounds:                             # numbers: no gradient flows to them
        min, max = (b.detach() if isinstance(b, Tensor) else b for b in (min, max))
        for b in (min, max):
            if _is_scalar(b):
                check_int_parses(b)
                check_scalar_fits(b, dtype)           # torch's overflow error (max=1e39 for float32)
    elif min is None or max is None:
        # One tensor bound: its own op, so that the gradients are torch's one-bound ones
        # (clamp(x, t, +inf) would give the bound none where t is +inf).
        op, bound = ("clamp_max", max) if min is None else ("clamp_min", min)
        return op, [_coerce(a, dtype), _coerce(bound, dtype)], "ClampBackward0"
    lo, hi = clamp_bounds(dtype, min, max)
    return "clamp", [_coerce(x, dtype) for x in (a, lo, hi)], "ClampBackward0" if tensor_bounds else "ClampBackward1"


clip = clamp


_WHERE_SIGNATURES = ("\n * (Tensor condition)\n * (Tensor condition, Tensor input, Tensor other, *, Tensor out = None)"
                     "\n * (Tensor condition, Number self, Tensor other)\n * (Tensor condition, Tensor input, Number other)"
                     "\n * (Tensor condition, Number self, Number other)\n")


def nonzero(input, *, as_tuple: bool = False):
    """Indices of the nonzero elements, as torch.nonzero: an [n, ndim] int64 tensor, or with
    `as_tuple` one int64 tensor per dimension (a 0-d input counts as 1-d there). Its shape
    depends on the values, so inside fg.compile it reads them (a graph break)."""
    t = as_tensor(input, "nonzero")
    values = t._concrete()
    from .creation import tensor
    if as_tuple:
        return tuple(tensor(index.astype(np.int64)) for index in np.atleast_1d(values).nonzero())
    found = np.argwhere(values) if values.ndim else np.zeros((int(values != 0), 0), np.int64)
    # (torch writes the indices dim by dim: its result is column-major, strides (1, n))
    return Tensor._wrap(np.asfortranarray(found, dtype=np.int64))


def where(condition, input=_MISSING, other=_MISSING) -> Tensor:
    """Elementwise choice: `input` where `condition`, else `other` (torch's keywords); with the
    condition alone, `nonzero(condition, as_tuple=True)`, as torch."""
    a, b = input, other
    if a is _MISSING and b is _MISSING and isinstance(condition, Tensor):
        return nonzero(condition, as_tuple=True)
    given = [x for x in (condition, a, b) if x is not _MISSING]
    if not (isinstance(condition, (Tensor, np.ndarray)) and len(given) == 3 and
            builtins.all(isinstance(x, (Tensor, np.ndarray)) or _is_scalar(x) for x in (a, b))):
        # torch's parser matches none of its overloads
        raise TypeError(f"where() received an invalid combination of arguments - got "
                        f"({', '.join(_arg_type_name(x) for x in given)}), but expected one of:{_WHERE_SIGNATURES}")
    condition = as_tensor(condition, "where", "condition")
    if condition._dtype is not bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{TORCH_SCALAR_NAMES[condition._dtype.name]}")
    for x in (a, b):
        check_int_parses(x)
    with np.errstate(over="ignore"):        # (a number beyond the dtype: torch's error below)
        try:
            ops, dtype = _promoted([a, b], "where", ("input", "other"))
        except OverflowError:               # a Python int beyond int64 with an integer tensor
            ops, dtype = None, int64
    for x in (a, b):
        if _is_scalar(x):
            check_scalar_fits(x, dtype)              # torch's overflow error (1e39 for float32)
    return apply_op("where", [condition] + ops, None, "WhereBackward0")



_MASKED_FILL_SIGNATURES = "\n * (Tensor mask, Tensor value)\n * (Tensor mask, Number value)\n"


def masked_fill_operands(input, mask, value, fn: str = "masked_fill"):
    """torch's checks of masked_fill(input, mask, value): (input, mask, the value as an operand
    of input's dtype, the node's name). A Python number is cast as torch casts it (2.5 into
    an integer tensor is 2); a 0-d tensor value is differentiable (MaskedFillBackward1)."""
    a = as_tensor(input, fn)
    value = written_number(value, a._dtype)
    if not isinstance(mask, (Tensor, np.ndarray)) or not (isinstance(value, (Tensor, np.ndarray)) or _is_scalar(value)):
        raise TypeError(f"{fn}() received an invalid combination of arguments - got ({_arg_type_name(mask)}, "
                        f"{_arg_type_name(value)}), but expected one of:{_MASKED_FILL_SIGNATURES}")
    mask = as_tensor(mask, fn, "mask", 2)
    if mask._dtype is not bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {_c_name(mask._dtype)}")
    if isinstance(value, (Tensor, np.ndarray)):
        value = as_tensor(value, fn, "value", 3)
        if value.dim() != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.dim()} dimension(s).")
        check_tensor_value_fits(value, a._dtype)     # (torch fills with value.item(): nan into int64 raises)
        return a, mask, cast(value, a._dtype), "MaskedFillBackward1"
    check_int_parses(value)
    check_scalar_fits(value, a._dtype)          # torch's overflow error (1e300 into float32)
    return a, mask, _scalar_array(value, a._dtype), "MaskedFillBackward0"


def masked_fill(input, mask, value) -> Tensor:
    """`value` where `mask` is True, else `input` (broadcast; value cast to input's dtype)."""
    a, mask, value, name = masked_fill_operands(input, mask, value)
    return apply_op("masked_fill", [a, mask, value], None, name)

_COMPARE_SIGNATURES = ("\n * (Tensor input, Tensor other, *, Tensor out = None)"
                       "\n * (Tensor input, Number other, *, Tensor out = None)\n")


def _compare(op: str):
    def fn(input, other) -> Tensor:
        a, b = input, other
        if isinstance(b, complex) and op in ("eq", "ne") and isinstance(a, Tensor):
            # a real tensor equals a complex number only where the number is real
            if b.imag == 0:
                b = b.real
            else:
                return Tensor._wrap(np.full(a._value_shape(), op == "ne"))
        if type(a) is Tensor:               # _promoted's common cases inline (a loop's `t < 1000`)
            tb = type(b)
            if tb is Tensor and a._dtype is b._dtype:
                return apply_op(op, [a, b])
            if (tb is float or tb is int) and a._dtype.is_floating_point:
                c = _SCALAR_ARRAYS.get((tb, b, a._dtype))
                return apply_op(op, [a, c if c is not None else _scalar_array(b, a._dtype)])
        if not isinstance(a, (Tensor, np.ndarray)):        # torch takes no number as `input`
            raise TypeError(f"{op}() received an invalid combination of arguments - got "
                            f"({_arg_type_name(a)}, {_arg_type_name(b)}), but expected one of:{_COMPARE_SIGNATURES}")
        ops, _ = _promoted([a, b], op)
        return apply_op(op, ops)
    fn.__name__ = op
    fn.__doc__ = f"Elementwise comparison `{op}` (a bool tensor, no gradient)."
    return fn


lt, le, gt, ge, eq, ne = (_compare(n) for n in ("lt", "le", "gt", "ge", "eq", "ne"))


def logical_not(input) -> Tensor:
    """torch.logical_not: True where `a` is zero, as bool."""
    return apply_op("logical_not", [cast(as_tensor(input, "logical_not"), bool_)])


def _numpy_spellings(fn=None, aliases: bool = True, keepdim_at: int = 2, binds=None):
    """torch also takes NumPy's names: `axis` for `dim` and `keepdims` for `keepdim` (given
    both ways, it reports the NumPy name as unexpected, as torch does); and it checks that
    keepdim is a bool. `aliases` False: only that check (norm, a Python function in torch,
    takes no NumPy names). `keepdim_at`: keepdim's position (var's and std's is 3, after
    unbiased; they check their own keepdim). `binds`: a stub with the signature of torch's
    Python-level function, called first (Python's TypeError for arguments it cannot bind
    comes before any check, as torch's)."""
    if fn is None:
        return functools.partial(_numpy_spellings, aliases=aliases, keepdim_at=keepdim_at, binds=binds)
    name = fn.__name__
    known = set(inspect.signature(fn).parameters) | {"axis", "keepdims"}
    has_keepdim = "keepdim" in known and keepdim_at == 2   # (cat and stack take `axis` but have no keepdim)

    def with_aliases(*args, **kwargs):
        if kwargs and aliases:
            for numpy_name, torch_name, position in (("axis", "dim", 1), ("keepdims", "keepdim", keepdim_at)):
                if numpy_name in kwargs:
                    # torch's parser then matches no overload and names the NumPy keyword
                    # (np.sum(t) calls t.sum(axis=None, dtype=None, out=None)).
                    if torch_name in kwargs or len(args) > position or not known.issuperset(kwargs):
                        raise TypeError(f"{name}() got an unexpected keyword argument '{numpy_name}'")
                    kwargs[torch_name] = kwargs.pop(numpy_name)
            if name in ("max", "min") and isinstance(kwargs.get("dim"), (Tensor, np.ndarray)):
                # (a tensor is max's positional `other`; as a `dim` keyword torch's parser takes
                # only a 0-d integer one, as the int it holds)
                if not _integer_scalar_tensor(kwargs["dim"]):
                    raise TypeError(f"{name}(): argument 'dim' must be int, not Tensor")
                kwargs["dim"] = builtins.int(kwargs["dim"].item())
        if has_keepdim and (kwargs or len(args) > 2):     # (t.sum(), t.norm(): no keepdim given)
            if binds is not None:
                binds(*args, **kwargs)
            _check_keepdim(name, args, kwargs)
        return fn(*args, **kwargs)
    with_aliases.__name__, with_aliases.__qualname__, with_aliases.__doc__ = name, fn.__qualname__, fn.__doc__
    with_aliases.__wrapped__ = fn
    return with_aliases


@_call_form_texts
@_numpy_spellings
def all(input, dim=None, keepdim: bool = False) -> Tensor:
    """True where every element (along dim) is nonzero."""
    a = as_tensor(input, "all")
    if _no_dims(dim):
        return ne(a, 0)                 # torch's all over dim=() reduces nothing (a new tensor)
    return eq(sum(logical_not(a), dim, keepdim), 0)


@_call_form_texts
@_numpy_spellings
def any(input, dim=None, keepdim: bool = False) -> Tensor:
    """True where some element (along dim) is nonzero."""
    a = as_tensor(input, "any")
    if _no_dims(dim):
        return ne(a, 0)                 # (as all: dim=() reduces nothing)
    return gt(sum(cast(a, bool_), dim, keepdim), 0)


def _no_dims(dim) -> bool:
    """An empty dim list: torch's all/any then reduce no dim (sum and mean reduce every one)."""
    return isinstance(dim, (tuple, list)) and len(dim) == 0


def logical_and(input, other) -> Tensor:
    """torch.logical_and: True where both `a` and `b` are nonzero, as bool (broadcast)."""
    return apply_op("logical_and", [cast(as_tensor(input, "logical_and"), bool_),
                                    cast(as_tensor(other, "logical_and", "other", 2), bool_)])


def logical_or(input, other) -> Tensor:
    """torch.logical_or: True where `a` or `b` is nonzero, as bool (broadcast)."""
    return logical_not(logical_and(logical_not(as_tensor(input, "logical_or")),
                                   logical_not(as_tensor(other, "logical_or", "other", 2))))


def logical_xor(input, other) -> Tensor:
    """torch.logical_xor: True where exactly one of `a` and `b` is nonzero, as bool (broadcast)."""
    return ne(cast(as_tensor(input, "logical_xor"), bool_), cast(as_tensor(other, "logical_xor", "other", 2), bool_))


# ------------------------------------------------------------------ reductions
# torch's text for a reduction given a dim that is neither an int nor a tuple of ints.
_REDUCTION_SIGNATURES = ("\n * (*, torch.dtype dtype = None)\n * (tuple of ints dim, bool keepdim = False, *, "
                         "torch.dtype dtype = None)\n")


_FRO = "fro"        # norm's default p (tested by identity on the fast path)
_ALL_DIMS = [tuple(range(n)) for n in range(8)]


def _all_dims(ndim: int) -> tuple:
    """(0, 1, ..., ndim - 1): the axes of a reduction over every dim."""
    return _ALL_DIMS[ndim] if ndim < 8 else tuple(range(ndim))


def _int_list_tensor(dim):
    """torch's int-list parser takes a one-element integer or bool tensor of any rank as that
    one int (x.sum(torch.tensor([1])), unlike its int parser); anything else as it is."""
    if isinstance(dim, Tensor) and dim.numel() == 1 and not dim.dtype.is_floating_point:
        return int(dim.item())
    return dim


def _dims(dim, ndim: int, fn: str = "sum") -> tuple:
    """Normalised, sorted reduction axes; None or () means all."""
    dim = _int_list_tensor(dim)
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return _all_dims(ndim)
    if isinstance(dim, (tuple, list)) and dim and _is_index(dim[0]) and not isinstance(dim[0], bool):
        for k, d in enumerate(dim[1:], start=2):
            if not _is_index(d):             # torch's int-list parser, past the first element
                name = "linalg_vector_norm" if fn == "norm" else fn
                raise TypeError(f"{name}(): argument 'dim' failed to unpack the object at pos {k} with error "
                                f"\"type must be tuple of ints,but got {type_name(d)}\"")
    # (a bool is no dim, nor the first element of a list of dims: torch's int-list parser
    # takes bools after the first only)
    if isinstance(dim, bool) or not (_is_index(dim) or (isinstance(dim, (tuple, list)) and
                                                        builtins.all(_is_index(d) for d in dim) and
                                                        not isinstance(dim[0], (bool, np.bool_)))):
        if fn == "norm" and isinstance(dim, (tuple, list)):     # (torch's norm calls linalg_vector_norm)
            bad = next(k for k, d in enumerate(dim) if not _is_index(d) or (k == 0 and isinstance(d, (bool, np.bool_))))
            raise TypeError(f"linalg_vector_norm(): argument 'dim' (position 3) must be tuple of ints, but found "
                            f"element of type {type_name(dim[bad])} at pos {bad}")
        raise TypeError(f"{fn}() received an invalid combination of arguments - got ({type(dim).__name__}), "
                        f"but expected one of:{_REDUCTION_SIGNATURES}")
    dims = (dim,) if _is_index(dim) else tuple(dim)
    out = []
    for d in dims:
        d = normalize_dim(int(d), ndim)
        if d in out:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        out.append(d)
    return tuple(sorted(out)) if ndim else ()


def _dim_overload(fn: str, dim, keepdim) -> tuple:
    """(dim, keepdim, given) of a reduction with torch's two overloads, `fn(x)` and
    `fn(x, dim, keepdim)`: `given` tells them apart (dim=None is the second one, with its own
    grad_fn name); a keepdim with no dim is torch's TypeError."""
    if dim is _MISSING:
        if keepdim is not _MISSING:
            raise TypeError(f"{fn}() received an invalid combination of arguments - got (Tensor, keepdim=bool), "
                            f"but expected one of:{_REDUCTION_SIGNATURES}")
        return None, False, False
    return dim, (False if keepdim is _MISSING else keepdim), True


def _check_keepdim(fn: str, args: tuple, kwargs: dict) -> None:
    """torch's TypeError for a keepdim that is not a bool (it is never read as truthy), with
    the position where it was given positionally."""
    at = 3 if fn == "norm" else 2                       # norm reads (input, p, dim, keepdim)
    if "keepdim" in kwargs:
        keepdim, where = kwargs["keepdim"], ""
    elif len(args) > at:
        keepdim, where = args[at], f" (position {at})"
    else:
        return
    if keepdim is not _MISSING and not isinstance(keepdim, bool):      # (torch 2.13 refuses numpy.bool too)
        if fn == "norm":                                 # torch's norm calls linalg_vector_norm
            fn, where = "linalg_vector_norm", " (position 4)"
        raise TypeError(f"{fn}(): argument 'keepdim'{where} must be bool, not {type_name(keepdim)}")


def _int_arg(fn: str, arg: str, position: int, value) -> int:
    """`value` as an int (an int, a NumPy integer or a 0-d integer tensor), else torch's
    TypeError: a bool, a float or a tuple is no dim (a bool would otherwise silently read as 0
    or 1). `position` counts as the function form does, input first; the method form's entry
    in methods.METHODS counts from after self (_counted_from_self)."""
    if isinstance(value, (bool, np.bool_)) or not _is_index(value):
        name = "Tensor" if isinstance(value, Tensor) else type_name(value)
        raise TypeError(f"{fn}(): argument '{arg}' (position {position}) must be int, not {name}")
    return operator.index(value)


@_call_form_texts
@_numpy_spellings
def sum(input, dim=_MISSING, keepdim: bool = _MISSING, *, dtype: DType | None = None) -> Tensor:
    """Sum over `dim` (int or tuple; all dims when None). Integers sum as int64."""
    a = as_tensor(input, "sum")
    dim, keepdim, given = _dim_overload("sum", dim, keepdim)
    dtype = _dtype_argument("sum", dtype, _REDUCTION_SIGNATURES)
    if dtype is not None:
        if not dtype.is_floating_point and a.requires_grad and is_grad_enabled():
            # torch's sum records its node before the cast: a gradient of integers cannot exist
            raise RuntimeError(f"Autograd not support dtype: {TORCH_SCALAR_NAMES[dtype.name]}")
        a = cast(a, dtype, implicit=True)     # (torch casts inside SumBackward0's op: no node of its own)
    elif not a._dtype.is_floating_point:
        a = cast(a, int64)
    name = "SumBackward1" if given else "SumBackward0"
    return apply_op("sum", [a], {"axes": _dims(dim, a.dim()), "keepdim": bool(keepdim)}, name)


@_call_form_texts
@_numpy_spellings
def mean(input, dim=_MISSING, keepdim: bool = _MISSING, *, dtype: DType | None = None) -> Tensor:
    """Mean over `dim` (int or tuple; all dims when None); floating point inputs only."""
    a = as_tensor(input, "mean")
    dim, keepdim, given = _dim_overload("mean", dim, keepdim)
    dtype = _dtype_argument("mean", dtype, _REDUCTION_SIGNATURES)
    if dtype is not None and not dtype.is_floating_point:
        raise RuntimeError(f"mean(): could not infer output dtype. Optional dtype must be either a floating point "
                           f"or complex dtype. Got: {TORCH_SCALAR_NAMES[dtype.name]}")
    if dtype is not None:
        a = cast(a, dtype, implicit=True)     # (inside MeanBackward0's op, as torch)
    if not a._dtype.is_floating_point:
        try:
            _dims(dim, a.dim(), "mean")     # (torch's parser refuses a dim that is no int first)
        except (IndexError, RuntimeError):
            pass
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point "
                           f"or complex dtype. Got: {TORCH_SCALAR_NAMES[a._dtype.name]}")
    name = "MeanBackward1" if given else "MeanBackward0"
    return apply_op("mean", [a], {"axes": _dims(dim, a.dim(), "mean"), "keepdim": bool(keepdim)}, name)


class _NamedPair(tuple):
    """torch.return_types.*: a pair with field names, made as torch's structseq is made, of one
    sequence of the two (`type(r)((v, i))`), and pickled and copied as such
    (fusegrad.return_types holds the classes). `named_pair` makes one class per kind."""

    __slots__ = ()
    n_fields = n_sequence_fields = 2
    n_unnamed_fields = 0
    fields = ("values", "indices")

    def __new__(cls, sequence):
        items = tuple(sequence)
        if len(items) != 2:
            raise TypeError(f"{cls.__module__}.{cls.__qualname__}() takes a 2-sequence ({len(items)}-sequence given)")
        return super().__new__(cls, items)

    def __reduce__(self):
        return type(self), (tuple(self),)

    def __repr__(self):
        first, second = self.fields
        return f"fg.return_types.{type(self).__name__}(\n{first}={self[0]!r},\n{second}={self[1]!r})"


def named_pair(kind: str, first: str = "values", second: str = "indices") -> type:
    """The return type torch names `kind` (type(x.max(1)).__name__ == "max"), its two fields
    named `first` and `second`; registered in RETURN_TYPES (once per kind)."""
    if kind not in RETURN_TYPES:
        RETURN_TYPES[kind] = type(kind, (_NamedPair,), {
            "__slots__": (), "__module__": "fusegrad.return_types", "__qualname__": kind,
            "fields": (first, second), first: property(lambda self: self[0]),
            second: property(lambda self: self[1])})
    return RETURN_TYPES[kind]


def named_result(kind: str, *fields: str) -> type:
    """torch.return_types.<kind> of any number of fields (two: named_pair's class, whose repr
    is _NamedPair's), registered in RETURN_TYPES (once per kind)."""
    if len(fields) == 2:
        return named_pair(kind, *fields)
    if kind not in RETURN_TYPES:
        RETURN_TYPES[kind] = type(kind, (_NamedPair,), {
            "__slots__": (), "__module__": "fusegrad.return_types", "__qualname__": kind, "fields": fields,
            "n_fields": len(fields), "n_sequence_fields": len(fields),
            "__new__": lambda cls, seq: tuple.__new__(cls, tuple(seq)),
            "__repr__": lambda self: f"fg.return_types.{kind}(\n" + ",\n".join(
                f"{f}={v!r}" for f, v in zip(fields, self)) + ")",
            **{f: property(lambda self, k=k: self[k]) for k, f in enumerate(fields)}})
    return RETURN_TYPES[kind]


RETURN_TYPES: dict = {}
max_result, min_result, sort_result, topk_result = map(named_pair, ("max", "min", "sort", "topk"))


_EXTREMUM_SIGNATURES = ("\n * (Tensor input, *, Tensor out = None)\n * (Tensor input, Tensor other, *, Tensor out = None)"
                        "\n * (Tensor input, int dim, bool keepdim = False, *, tuple of Tensors out = None)\n")


def _extremum(a, dim, keepdim, kind: str, elementwise):
    if isinstance(dim, (Tensor, np.ndarray)) and keepdim is _MISSING:
        return elementwise(a, dim)
    a = as_tensor(a, kind)
    if (dim is _MISSING and keepdim is not _MISSING) or not (dim is _MISSING or _is_index(dim)) \
            or isinstance(dim, (bool, np.bool_)):
        got = ", ".join(["Tensor"] + [f"{name}={type(v).__name__}" for name, v in (("dim", dim), ("keepdim", keepdim))
                                      if v is not _MISSING])
        raise TypeError(f"{kind}() received an invalid combination of arguments - got ({got}), but expected one of:"
                        f"{_EXTREMUM_SIGNATURES}")
    keepdim = False if keepdim is _MISSING else keepdim
    if dim is _MISSING:
        if a.numel() == 0:
            raise RuntimeError(f"{kind}(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        return apply_op("amax" if kind == "max" else "amin", [a],
                        {"axes": tuple(range(a.dim())), "keepdim": False, "evenly": True},
                        "MaxBackward1" if kind == "max" else "MinBackward1")
    axis = normalize_dim(int(dim), a.dim())
    if a.dim() == 0:
        # over the one element as a 1-d tensor (its view's node hidden, as torch's node reads `a`
        # itself): the node saves the indices as torch's does (a write to them before the
        # backward is its version error)
        values, indices = apply_op(kind + "_dim", [_hidden_view_1d(a)], {"axis": 0, "keepdim": False},
                                   "MaxBackward0" if kind == "max" else "MinBackward0")
        return RETURN_TYPES[kind]((values, indices))
    values, indices = apply_op(kind + "_dim", [a], {"axis": axis, "keepdim": bool(keepdim)},
                               "MaxBackward0" if kind == "max" else "MinBackward0")
    return RETURN_TYPES[kind]((values, indices))


def _hidden_view_1d(a: Tensor) -> Tensor:
    """0-d `a` as a 1-d view of one element whose node next_functions looks through."""
    flat = apply_op("reshape", [a], {"shape": (1,)})
    hide_node(flat)
    return flat


@_call_form_texts
@_numpy_spellings
def max(input, dim=_MISSING, keepdim: bool = _MISSING, *, other=_MISSING):
    """Largest value; with `dim`, (values, indices) along it; with a tensor, maximum."""
    if other is not _MISSING and dim is _MISSING:
        return maximum(input, other)
    return _extremum(input, dim, keepdim, "max", maximum)


@_call_form_texts
@_numpy_spellings
def min(input, dim=_MISSING, keepdim: bool = _MISSING, *, other=_MISSING):
    """Smallest value; with `dim`, (values, indices) along it; with a tensor, minimum."""
    if other is not _MISSING and dim is _MISSING:
        return minimum(input, other)
    return _extremum(input, dim, keepdim, "min", minimum)


# (the method forms' texts for bad arguments: torch's parser lists the method's own overloads)
max.__wrapped__.method_invalid = min.__wrapped__.method_invalid = _extremum_method_invalid


def _check_nonempty_dims(fn: str, a: Tensor, dim) -> None:
    """torch's errors for amax/amin of an empty tensor over no dim or over an empty dim
    (named as the caller wrote it: -1 stays -1), checked dim by dim before the later dims' range."""
    if a.numel() != 0:
        return
    given = () if dim is None else (dim,) if _is_index(dim) else tuple(dim) if isinstance(dim, (tuple, list)) else None
    if given is None or not builtins.all(_is_index(d) for d in given):
        return                                  # _dims raises torch's TypeError
    if not given:
        raise RuntimeError(f"{fn}(): Expected reduction dim to be specified for input.numel() == 0. "
                           "Specify the reduction dim with the 'dim' argument.")
    for d in given:
        if a.shape[normalize_dim(int(d), a.dim())] == 0:
            raise IndexError(f"{fn}(): Expected reduction dim {d} to have non-zero size.")


def _check_dim_list(fn: str, dim) -> None:
    """amax/amin take only a list of ints: a lone non-int is torch's TypeError naming the list."""
    dim = _int_list_tensor(dim)
    if not (dim is None or isinstance(dim, (tuple, list)) or (_is_index(dim) and not isinstance(dim, (bool, np.bool_)))):
        raise TypeError(f"{fn}(): argument 'dim' (position 2) must be tuple of ints, not {type_name(dim)}")


@_keyword_texts
@_numpy_spellings
def amax(input, dim=(), keepdim: bool = False) -> Tensor:
    """Largest values over `dim` (int or tuple; all dims when empty); ties share the gradient."""
    a = as_tensor(input, "amax")
    _check_dim_list("amax", dim)
    _check_nonempty_dims("amax", a, dim)
    axes = _dims(dim, a.dim(), "amax")
    return apply_op("amax", [a], {"axes": axes, "keepdim": bool(keepdim)}, "AmaxBackward0")


@_keyword_texts
@_numpy_spellings
def amin(input, dim=(), keepdim: bool = False) -> Tensor:
    """Smallest values over `dim` (int or tuple; all dims when empty); ties share the gradient."""
    a = as_tensor(input, "amin")
    _check_dim_list("amin", dim)
    _check_nonempty_dims("amin", a, dim)
    axes = _dims(dim, a.dim(), "amin")
    return apply_op("amin", [a], {"axes": axes, "keepdim": bool(keepdim)}, "AminBackward0")


def _arg_extremum(fn: str, a, dim, keepdim: bool) -> Tensor:
    """argmax/argmin: the index of the first largest/smallest value (over the flattened tensor
    when dim is None), with torch's checks in torch's order."""
    a = as_tensor(a, fn)
    if dim is not None and (not _is_index(dim) or isinstance(dim, (bool, np.bool_))):
        # (position 2, the function form's: _keyword_texts drops it for dim=, methods count from 1)
        raise TypeError(f"{fn}(): argument 'dim' (position 2) must be int, not {type_name(dim)}")
    if a._dtype is bool_:
        raise RuntimeError(f"{fn}(): does not support bool input")
    extremum = max if fn == "argmax" else min
    if dim is None:
        if a.numel() == 0:
            raise IndexError(f"{fn}(): Expected reduction dim to be specified for input.numel() == 0.")
        index = extremum(reshape(a.detach(), (-1,)), 0)[1]
        return reshape(index, (1,) * a.dim()) if keepdim else index
    axis = normalize_dim(int(dim), a.dim())
    if a.dim() and a.shape[axis] == 0:
        raise IndexError(f"{fn}(): Expected reduction dim {axis} to have non-zero size.")
    return extremum(a.detach(), dim, keepdim)[1]


@_keyword_texts
@_numpy_spellings
def argmax(input, dim=None, keepdim: bool = False) -> Tensor:
    """Index of the first largest value (NaN counts as largest)."""
    return _arg_extremum("argmax", input, dim, keepdim)


@_keyword_texts
@_numpy_spellings
def argmin(input, dim=None, keepdim: bool = False) -> Tensor:
    """Index of the first smallest value (NaN counts as smallest)."""
    return _arg_extremum("argmin", input, dim, keepdim)


def _torch_norm_binding(input, p="fro", dim=None, keepdim=False, out=None, dtype=None) -> None:
    """torch.norm's Python signature: calling it raises Python's TypeError, in torch's words, for
    arguments torch.norm cannot bind."""


_torch_norm_binding.__name__ = _torch_norm_binding.__qualname__ = "norm"


@functools.partial(_numpy_spellings, aliases=False, binds=_torch_norm_binding)
def norm(input, p=_FRO, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Vector p-norm over `dim` (all elements when None); "fro" is p = 2. `dtype`: computed in
    that (floating, not narrower) dtype, as torch's linalg.vector_norm(dtype=)."""
    a = input
    if dtype is not None:
        return _norm_in_dtype(a, p, dim, keepdim, dtype)
    if type(a) is Tensor and p is _FRO and dim is None and keepdim is False and a._dtype.is_floating_point:
        return whole_norm(a)
    if not isinstance(a, (Tensor, np.ndarray)):
        # torch.norm is Python code whose first look at its input is `input.layout`
        raise AttributeError(f"'{type(a).__name__}' object has no attribute 'layout'")
    a = as_tensor(a, "norm")
    if isinstance(p, str) and p != "fro":
        if p == "nuc":
            return _nuclear_norm(a, dim, keepdim)
        raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
    if type(p) is np.bool_:
        p = builtins.float(p)           # (a NumPy bool is a float number to torch's parser)
    if not (p is None or isinstance(p, (str, numbers.Number)) or (isinstance(p, Tensor) and p.numel() == 1)):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, not {type_name(p)}")
    if isinstance(dim, Tensor) and isinstance(p, str) and dim.dim() == 0:
        raise TypeError("len() of a 0-d tensor")     # torch's norm takes len(dim) for a string p
    dim = _int_list_tensor(dim)         # (a one-element integer or bool tensor is an int dim, as in sum)
    if isinstance(dim, (bool, np.bool_)):
        raise TypeError("linalg_vector_norm(): argument 'dim' (position 3) must be tuple of ints, but found element "
                        "of type bool at pos 0")
    if isinstance(dim, str):            # (it has a len(), so torch's norm passes it on to the parser)
        raise TypeError("linalg_vector_norm(): argument 'dim' (position 3) must be tuple of ints, not str")
    if dim is not None and not _is_index(dim) and not isinstance(dim, (tuple, list)):
        if isinstance(p, str) and not hasattr(dim, "__len__"):
            raise TypeError(f"object of type '{type(dim).__name__}' has no len()")    # torch's norm takes len(dim)
        # (a numeric p, or a dim with a len(), goes on to linalg.vector_norm's parser)
        raise TypeError(f"linalg_vector_norm(): argument 'dim' (position 3) must be tuple of ints, not "
                        f"{type_name(dim)}")
    if p == "fro" and isinstance(dim, (tuple, list)) and len(dim) > 2:
        # torch.norm takes "fro" over more than two dims to linalg.matrix_norm, which refuses them
        # (its checks in torch's order: two dims, a floating dtype, then the dims' count)
        if a.dim() < 2:
            raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
        if not a._dtype.is_floating_point:
            raise RuntimeError(f"linalg.matrix_norm: Expected a floating point or complex tensor as input. "
                               f"Got {TORCH_SCALAR_NAMES[a._dtype.name]}")
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(str(d) for d in dim)}")
    if not a._dtype.is_floating_point:     # (after the parser's checks of p and dim, as torch)
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {TORCH_SCALAR_NAMES[a._dtype.name]}")
    p = 2.0 if p in ("fro", None) else float(p)
    axes = _dims(dim, a.dim(), "norm")
    if dim is not None and (p < 0 or p == math.inf) and 0 in a.shape:
        for given in (dim if isinstance(dim, (tuple, list)) else (dim,)):
            # torch names the first empty dim of those given, as given (-1 stays -1); the op's
            # own check (without dims) says "on an empty tensor"
            if a.shape[normalize_dim(given, a.dim())] == 0:
                raise RuntimeError(f"linalg.vector_norm cannot compute the {p:g} norm on the dimension {given}"
                                   "because this dimension is empty and the operation does not have an identity")
    return apply_op("norm", [a], {"p": p, "axes": axes, "keepdim": bool(keepdim)}, "LinalgVectorNormBackward0")


_WHOLE_NORM_ATTRS: dict = {}     # ndim -> norm's attributes over every dim (never mutated: shared)


def whole_norm(a: Tensor) -> Tensor:
    """`a.norm()` of a floating-point Tensor: the common call (a loop's stopping test), with
    nothing to check or convert."""
    ndim = a.dim()                  # (a traced tensor has no _data)
    attrs = _WHOLE_NORM_ATTRS.get(ndim)
    if attrs is None:
        attrs = _WHOLE_NORM_ATTRS[ndim] = {"p": 2.0, "axes": _all_dims(ndim), "keepdim": False}
    return apply_op("norm", [a], attrs, "LinalgVectorNormBackward0")


def _norm_in_dtype(a, p, dim, keepdim, dtype) -> Tensor:
    """norm(..., dtype=): torch's checks, then the norm of `a` cast to dtype (torch converts
    inside its LinalgVectorNormBackward0 node: the cast is not shown in next_functions)."""
    dtype = _dtype_argument("linalg_vector_norm", dtype)
    if isinstance(a, (Tensor, np.ndarray)):
        a = as_tensor(a, "norm")
        if not a._dtype.is_floating_point:
            raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                               f"Got {TORCH_SCALAR_NAMES[a._dtype.name]}")
        if not dtype.is_floating_point:
            raise RuntimeError(f"linalg.vector_norm: dtype should be floating point or complex, but got "
                               f"{TORCH_SCALAR_NAMES[dtype.name]}")
        if a._dtype.itemsize > dtype.itemsize:
            raise RuntimeError(f"linalg.vector_norm: the dtype of the input ({TORCH_SCALAR_NAMES[a._dtype.name]}) "
                               f"should be convertible without narrowing to the specified dtype "
                               f"({TORCH_SCALAR_NAMES[dtype.name]})")
        a = cast(a, dtype, implicit=True)
    return norm(a, p, dim, keepdim)


def _nuclear_norm(a: Tensor, dim, keepdim: bool) -> Tensor:
    """norm(p='nuc'): the sum of the singular values of the matrices over the two axes `dim`
    (the only two when None), as torch's linalg.matrix_norm (SumBackward1 over
    LinalgSvdBackward0)."""
    if a.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if not a._dtype.is_floating_point:
        raise RuntimeError(f"linalg.matrix_norm: Expected a floating point or complex tensor as input. Got "
                           f"{TORCH_SCALAR_NAMES[a._dtype.name]}")
    axes = tuple(range(a.dim())) if dim is None else tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if len(axes) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(str(d) for d in axes)}")
    axes = tuple(normalize_dim(d, a.dim()) for d in axes)
    if axes[0] == axes[1]:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({axes[0]}, {axes[1]})")
    rest = [d for d in range(a.dim()) if d not in axes]
    matrices = a if axes == (a.dim() - 2, a.dim() - 1) else permute(a, tuple(rest) + axes)
    values = apply_op("svd", [matrices], None)[1]
    out = sum(values, -1)
    if keepdim:        # as torch: two trailing unit axes moved to `axes` (PermuteBackward0 on top)
        out = unsqueeze(unsqueeze(out, -1), -1)
        source = iter(range(len(rest)))
        order = [a.dim() - 2 if d == axes[0] else a.dim() - 1 if d == axes[1] else next(source)
                 for d in range(a.dim())]
        out = permute(out, tuple(order))
    return out


def _dtype_argument(fn: str, dtype, signatures: str | None = None):
    """`dtype` as a DType (None stays None; the Python types float, int and bool are float64,
    int64 and bool, as torch reads them), or torch's TypeError: an "invalid combination"
    one when the function has overloads (`signatures`), else "must be torch.dtype"."""
    if dtype is None or isinstance(dtype, DType):
        return dtype
    python_type = PYTHON_TYPE_DTYPES.get(dtype) if isinstance(dtype, type) else None
    if python_type is not None:
        return python_type
    if signatures is not None:
        raise TypeError(f"{fn}() received an invalid combination of arguments - got (dtype={type(dtype).__name__}, ), "
                        f"but expected one of:{signatures}")
    raise TypeError(f"{fn}(): argument 'dtype' must be torch.dtype, not {type_name(dtype)}")


def _softmax_like(op: str, grad_name: str):
    def fn(*args, **kwargs) -> Tensor:
        # torch's parser: (input, dim, dtype=None), NumPy's `axis` for `dim`; a bad dim names its
        # position only when it came positionally (the method form counts from 1: methods.py)
        names = ("input", "dim", "dtype")
        if "axis" in kwargs and "dim" not in kwargs:
            kwargs["dim"] = kwargs.pop("axis")
        for key in kwargs:
            if key not in names or names.index(key) < len(args):
                raise TypeError(f"{op}() got an unexpected keyword argument '{key}'" if key not in names else
                                f"{op}() got multiple values for argument '{key}'")
        if len(args) > len(names):
            raise TypeError(f"{op}() takes from 2 to 3 positional arguments but {len(args)} were given")
        given = dict(zip(names, args), **kwargs)
        if "input" not in given:
            raise TypeError(f'{op}() missing 1 required positional arguments: "input"')
        a, dim, dtype = given["input"], given.get("dim", _MISSING), given.get("dtype")
        if dim is _MISSING:
            raise TypeError(f'{op}() missing 1 required positional arguments: "dim"')
        if not _is_index(dim) or isinstance(dim, (bool, np.bool_)):
            where = " (position 2)" if len(args) > 1 else ""
            raise TypeError(f"{op}(): argument 'dim'{where} must be int, not {type_name(dim)}")
        dim = operator.index(dim)
        a = as_tensor(a, op)
        if dtype is not None:
            a = cast(a, _dtype_argument(op, dtype))
        axis = normalize_dim(dim, a.dim())
        if not a._dtype.is_floating_point:
            if a.numel() == 0:              # torch runs no kernel: an empty result of a's dtype
                return Tensor._wrap(np.zeros(tuple(a.shape), a._dtype.np))
            kernel = f"{op}_lastdim_kernel_impl" if axis == a.dim() - 1 or a.dim() == 0 else f"{op}_kernel_impl"
            raise NotImplementedError(f'"{kernel}" not implemented for '
                                      f"'{TORCH_SCALAR_NAMES[a._dtype.name]}'")
        return apply_op(op, [a], {"axis": axis}, grad_name)
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"Numerically stable {op}(input, dim, dtype=None) along `dim` (floating point inputs only, as torch)."
    return fn


softmax = _softmax_like("softmax", "SoftmaxBackward0")
log_softmax = _softmax_like("log_softmax", "LogSoftmaxBackward0")


# ------------------------------------------------------------------ shape ops
def _shape_arg(shape, fn: str = "reshape", arg: str = "shape", too_many=None, by_keyword: bool = False) -> tuple:
    """Sizes given as ints or as one tuple/list of ints, read as torch's int-list parser reads
    them (creation functions, reshape, view, permute, expand), with its TypeError texts
    otherwise. `too_many()`: the error for several arguments whose first is no size, where a
    function has its own (randn/rand's invalid combination). `by_keyword`: the sizes came as
    the keyword `arg=` (torch's texts then name no position)."""
    where = f"argument '{arg}'" if by_keyword else f"argument '{arg}' (position 1)"
    given = shape[0] if shape else None
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    elif shape and not _is_size(shape[0], first=True):
        # torch's parser reads a first argument that is no int as the one tuple argument
        if len(shape) > 1:
            raise too_many() if too_many is not None else TypeError(
                f"{fn}() takes 1 positional argument but {len(shape)} were given")
        raise TypeError(f"{fn}(): {where} must be tuple of ints, not {type_name(shape[0])}")
    for k, s in enumerate(shape):
        if not _is_size(s, first=k == 0):
            if k == 0 and by_keyword:       # (a keyword's text names the whole value's type)
                raise TypeError(f"{fn}(): {where} must be tuple of ints, not {type_name(given)}")
            if k == 0:
                raise TypeError(f"{fn}(): {where} must be tuple of ints, but found element of type "
                                f"{type_name(s)} at pos 0")
            raise TypeError(f"{fn}(): argument '{arg}' failed to unpack the object at pos {k + 1} with error "
                            f"\"type must be tuple of ints,but got {type_name(s)}\"")
    return tuple(int(s.item()) if isinstance(s, Tensor) else operator.index(s) for s in shape)


def _is_size(s, first: bool) -> bool:
    """One size for torch's int-list parser: an int (a bool only after the first size), a NumPy
    integer or an integer tensor of one element (of any dims: fg.zeros(fg.tensor([3])))."""
    if type(s) is int:
        return True
    if isinstance(s, bool):
        return not first
    if isinstance(s, Tensor):
        return s.numel() == 1 and s._dtype is int64
    return _is_index(s)


def _sizes(fn: str, arg: str, sizes: tuple, keyword) -> tuple:
    """The sizes of `fn(*sizes)` or `fn(arg=keyword)`; none at all is torch's TypeError."""
    if keyword is not None:
        if sizes:
            raise TypeError(f"{fn}() got multiple values for argument '{arg}'")
        sizes = (keyword,)
    if not sizes:
        raise TypeError(f'{fn}() missing 1 required positional arguments: "{arg}"')
    return sizes


def keyword_sizes(fn: str, arg: str, positional: tuple, keyword: dict) -> tuple:
    """The int list of a method called with keywords (`x.flip(dims=(0,))`, `x.repeat(repeats=
    ...)`): the one tuple or list given as `arg=`, with torch's parser texts otherwise."""
    unknown = next((k for k in keyword if k != arg), None)
    if unknown is not None and (arg in keyword or positional):      # (with neither: a missing `arg`)
        raise TypeError(f"{fn}() got an unexpected keyword argument '{unknown}'")
    (value,) = _sizes(fn, arg, positional, keyword.get(arg))       # (missing, or given twice)
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"{fn}(): argument '{arg}' must be tuple of ints, not {type_name(value)}")
    return tuple(value)


def _is_index(s) -> bool:
    """Whether torch's argument parser takes `s` as an int: an int or anything with __index__,
    but of tensors only a 0-d integer one (not bool, not a one-element 1-d tensor)."""
    if type(s) is int:
        return True
    if isinstance(s, Tensor):
        return s.dim() == 0 and not s.dtype.is_floating_point and s.dtype is not bool_
    try:
        operator.index(s)
        return True
    except TypeError:
        return False


def _infer_shape(shape: tuple, numel: int) -> tuple:
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for k, s in enumerate(shape):
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s} at index {k} of shape "
                                   f"[{', '.join(map(str, shape))}]")
            known *= s
    if -1 in shape:
        if known == 0 and numel == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape [{', '.join(map(str, shape))}] "
                               "because the unspecified dimension size -1 can be any value and is ambiguous")
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '[{', '.join(map(str, shape))}]' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    return shape


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _viewable(t: Tensor, shape: tuple) -> bool:
    """Whether `t`'s memory layout lets a view have `shape`. A traced value made in the call is
    laid out contiguously; a view made in the call has its view chain's layout (as eagerly)."""
    if t._data is None and (t._base is None or not t._view_chain) and t._layout is None:
        return True
    try:
        np.reshape(_layout_of(t), shape, copy=False)
        return True
    except ValueError:
        return False


def _layout_of(t: Tensor) -> np.ndarray:
    """`t`'s array, or for a traced view an array laid out as it would be (no values read)."""
    return t._data if t._data is not None else layout_stand_in(t)


def _c_ordered(t: Tensor) -> bool:
    if t._data is None and (t._base is None or not t._view_chain) and t._layout is None:
        return True
    return _layout_of(t).flags.c_contiguous


def reshape(input, *sizes, shape=None) -> Tensor:
    """`a` with a new shape (one size may be -1): a view where the data allows one, else a copy."""
    a = as_tensor(input, "reshape")
    shape = _infer_shape(_shape_arg(_sizes("reshape", "shape", sizes, shape)), a.numel())
    # torch: a view of contiguous data, an alias with new strides of strided data that
    # allows one, else a copy.
    if not _viewable(a, shape):
        # torch copies into contiguous memory (CloneBackward0), then views it (_unsafe_view)
        return _unsafe_view(apply_op("reshape", [contiguous(a)], {"shape": shape}, "UnsafeViewBackward0"))
    name = "ViewBackward0" if _c_ordered(a) else "ReshapeAliasBackward0"
    return apply_op("reshape", [a], {"shape": shape}, name)


# torch's overloads of Tensor.view, listed when no overload matches.
_VIEW_OVERLOADS = (" * (torch.dtype dtype)\n", " * (tuple of ints size)\n")


def view(a, *shape, size=None, dtype=None) -> Tensor:
    """`a` with a new shape, sharing its memory (torch's error where its strides allow none);
    `view(dtype)`, torch's other overload: its memory read as another dtype."""
    a = as_tensor(a, "view")
    if dtype is not None and not shape and size is None and isinstance(dtype, DType):
        return _view_as_dtype(a, dtype)
    if size is not None:
        shape = _sizes("view", "size", shape, size)
    if len(shape) == 1 and isinstance(shape[0], DType):
        return _view_as_dtype(a, shape[0])
    if not shape:
        raise TypeError("view() received an invalid combination of arguments - got (), but expected one of:\n"
                        + "".join(_VIEW_OVERLOADS))
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list)) and not _is_size(shape[0], first=True):
        got = type(shape[0]).__name__
        why = f"      didn't match because some of the arguments have invalid types: (!{got}!)\n"
        raise TypeError(f"view() received an invalid combination of arguments - got ({got}), but expected one "
                        f"of:\n" + "".join(o + why for o in _VIEW_OVERLOADS))
    shape = _infer_shape(_shape_arg(shape, "view", "size"), a.numel())
    if _numel(shape) != a.numel():
        raise RuntimeError(f"shape '[{', '.join(map(str, shape))}]' is invalid for input of size {a.numel()}")
    if not _viewable(a, shape):
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                           "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    return apply_op("reshape", [a], {"shape": shape}, "ViewBackward0")


def _view_as_dtype(a: Tensor, dtype: DType) -> Tensor:
    """torch's Tensor.view(dtype): a's memory read as `dtype` (the last dim scaled by the ratio
    of element sizes), with torch's checks and texts. Not differentiable (no history, as
    torch's), and sharing a's version counter: a write through either is seen by both."""
    if a._sym is not None or a._data is None:
        raise NotImplementedError("fusegrad: view(dtype) inside fg.compile is not supported; call it outside "
                                  "the compiled function")
    data, target = a._data, np.dtype(dtype.np)
    if target.itemsize != data.itemsize:
        what = (f"to view {TORCH_SCALAR_NAMES[data.dtype.name]} as {TORCH_SCALAR_NAMES[target.name]} "
                "(different element sizes)")
        if data.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        strides = strides_of(a)         # (torch's: an empty tensor's are not NumPy's zeros)
        ratio = target.itemsize // data.itemsize
        # (torch's order when upsizing: size(-1) and storage_offset() before the strides)
        if ratio and data.shape[-1] % ratio:
            raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {what}, but got {data.shape[-1]}")
        if ratio and a.storage_offset() % ratio:
            raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} {what}, but got "
                               f"{a.storage_offset()}")
        if strides[-1] != 1 and data.shape[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {strides[-1]}")
        if target.itemsize > data.itemsize:
            for k, st in enumerate(strides[:-1]):
                if st % ratio:
                    raise RuntimeError(f"self.stride({k}) must be divisible by {ratio} {what}, but got {st}")
    out = Tensor._wrap(data.view(target), dtype)
    out._vbox = a._vbox                 # (one version counter: torch's view shares its base's)
    return out


@_keyword_texts
def unflatten(input, dim, sizes) -> Tensor:
    """torch.unflatten: dim `dim` of `a` split into `sizes` (one may be -1: inferred), a view."""
    a = as_tensor(input, "unflatten")
    dim = _int_arg("unflatten", "dim", 2, dim)
    where = "unflatten(): argument 'sizes' (position 3) must be tuple of ints"
    if not isinstance(sizes, (tuple, list)):
        raise TypeError(f"{where}, not {type_name(sizes)}")
    for k, size in enumerate(sizes):
        if not _is_size(size, first=k == 0):
            if k:
                raise TypeError(f"unflatten(): argument 'sizes' failed to unpack the object at pos {k + 1} with error "
                                f"\"type must be tuple of ints,but got {type_name(size)}\"")
            raise TypeError(f"{where}, but found element of type {type_name(size)} at pos 0")
    sizes = [int(size.item()) if isinstance(size, Tensor) else operator.index(size) for size in sizes]
    d = normalize_dim(dim, a.dim())     # (a 0-d tensor's dims are -1 and 0, as torch's wrap)
    if a.dim() == 0:        # (torch's texts here carry their C++ trace after these lines)
        raise RuntimeError("unflatten got an unexpected error:\nDimension specified as 0 but tensor has no dimensions")
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    if sizes.count(-1) > 1:
        raise RuntimeError("unflatten got an unexpected error:\nonly one dimension can be inferred")
    shape = tuple(a.shape)
    known = math.prod(size for size in sizes if size != -1)
    if -1 in sizes:
        fits = shape[d] % known == 0 if known else shape[d] == 0
    else:
        fits = known == shape[d]
    if not fits:
        raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {d} "
                           f"({shape[d]}) in the input tensor")
    if -1 in sizes:
        # (inferred from dim d alone: an empty tensor's other dims leave it known)
        if not known:
            raise RuntimeError(f"unflatten got an unexpected error:\ncannot reshape tensor of 0 elements into shape "
                               f"{sizes} because the unspecified dimension size -1 can be any value and is ambiguous")
        sizes[sizes.index(-1)] = shape[d] // known
    return view(a, shape[:d] + tuple(sizes) + shape[d + 1:])


@_keyword_texts
def flatten(input, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """torch.flatten: `a` with dims start_dim..end_dim merged into one (a 0-d tensor becomes 1-d)."""
    a = as_tensor(input, "flatten")
    start_dim = _int_arg("flatten", "start_dim", 2, start_dim)
    end_dim = _int_arg("flatten", "end_dim", 3, end_dim)
    s, e = normalize_dim(start_dim, a.dim()), normalize_dim(end_dim, a.dim())
    if a.dim() == 0:
        return reshape(a, (1,))
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return a
    shape = tuple(a.shape)
    merged = 1
    for size in shape[s:e + 1]:
        merged *= size              # (not -1: an empty tensor's -1 would be ambiguous)
    return reshape(a, shape[:s] + (merged,) + shape[e + 1:])


def permute(input, *dims_, dims=None) -> Tensor:
    """`a` with its dims reordered (a view)."""
    a = as_tensor(input, "permute")
    dims = _shape_arg(_sizes("permute", "dims", dims_, dims), "permute", "dims", by_keyword=dims is not None)
    if len(dims) != a.dim():
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           f"length of the desired ordering of dimensions i.e. input.dim() = {a.dim()} is not "
                           f"equal to len(dims) = {len(dims)}")
    seen = []
    for d in dims:          # (torch's loop: each dim wrapped, then checked against those before it)
        d = normalize_dim(d, a.dim())
        if d in seen:
            raise RuntimeError("permute(): duplicate dims are not allowed.")
        seen.append(d)
    return apply_op("permute", [a], {"dims": tuple(seen)}, "PermuteBackward0")


@_keyword_texts
def transpose(input, dim0: int, dim1: int) -> Tensor:
    """torch.transpose: `a` with dims `dim0` and `dim1` swapped (a view)."""
    a = as_tensor(input, "transpose")
    dim0 = _int_arg("transpose", "dim0", 2, dim0)
    dim1 = _int_arg("transpose", "dim1", 3, dim1)
    n = a.dim()
    d0, d1 = normalize_dim(dim0, n), normalize_dim(dim1, n)
    if n == 0:                       # dims in [-1, 0] (checked above): the identity, as torch
        return apply_op("permute", [a], {"dims": ()}, "TransposeBackward0")
    dims = list(range(n))
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return apply_op("permute", [a], {"dims": tuple(dims)}, "TransposeBackward0")


def movedim(input, source, destination) -> Tensor:
    """torch.movedim / moveaxis: the dims `source` (an int or a sequence) moved to the
    positions `destination`, the others keeping their order (a permute view)."""
    a = as_tensor(input, "movedim")
    n = a.dim()
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
                           f"contain the same number of dims as destination ({list(dst)} dims)")
    src = tuple(normalize_dim(_int_arg("movedim", "source", 2, d), n) for d in src)
    dst = tuple(normalize_dim(_int_arg("movedim", "destination", 3, d), n) for d in dst)
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(src)})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(dst)})")
    if n == 0:              # (torch: the 0-d tensor's alias; its dim 0 and -1 are the scalar's one place)
        return apply_op("permute", [a], {"dims": ()}, "AliasBackward0")
    order = [None] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(n) if d not in src)
    order = [next(rest) if o is None else o for o in order]
    return apply_op("permute", [a], {"dims": tuple(order)}, "PermuteBackward0")


moveaxis = movedim


def swapaxes(input, axis0: int, axis1: int) -> Tensor:
    """torch.swapaxes / swapdims: transpose's alias (TransposeBackward0)."""
    return transpose(input, axis0, axis1)


swapdims = swapaxes


def ravel(input) -> Tensor:
    """torch.ravel: the elements as one dim, in row-major order (contiguous().view(-1): a view
    of a contiguous tensor, a copy of another)."""
    return view(contiguous(as_tensor(input, "ravel")), -1)


def clamp_min(input, min) -> Tensor:
    """torch.clamp_min: clamp with a lower bound only (ClampMinBackward0; a tensor bound takes
    part in autograd: ClampMinBackward1)."""
    return _one_bound_clamp(input, min, None, "clamp_min", "ClampMinBackward")


def clamp_max(input, max) -> Tensor:
    """torch.clamp_max: clamp with an upper bound only (ClampMaxBackward0 / ClampMaxBackward1)."""
    return _one_bound_clamp(input, None, max, "clamp_max", "ClampMaxBackward")


def _one_bound_clamp(input, min, max, fn: str, name: str) -> Tensor:
    """clamp_min / clamp_max: clamp's computation under the node name `name` + 0 (a number
    bound) or 1 (a tensor bound), with torch's argument error for a bound of another type."""
    a = as_tensor(input, fn)
    bound = min if max is None else max
    if bound is None or not (isinstance(bound, (Tensor, np.ndarray)) or _is_scalar(bound)):
        got, which = _arg_type_name(bound), "min" if max is None else "max"
        why = f"      didn't match because some of the arguments have invalid types: (!{got}!)\n"
        raise TypeError(f"{fn}() received an invalid combination of arguments - got ({got}), but expected one "
                        f"of:\n * (Tensor {which})\n{why} * (Number {which})\n{why}")
    min, max = parsed_operand(min), parsed_operand(max)
    tensor_bounds, dtype = clamp_result_type(a, min, max)
    op, operands, _ = clamp_call(a, min, max, dtype, tensor_bounds)
    return apply_op(op, operands, None, name + ("1" if tensor_bounds else "0"))


def t(input) -> Tensor:
    """torch.t: a 0-d or 1-d tensor as is, a 2-d one transposed (RuntimeError above 2-d)."""
    a = as_tensor(input, "t")
    if a.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {a.dim()}D")
    dims = tuple(reversed(range(a.dim())))
    return apply_op("permute", [a], {"dims": dims}, "TBackward0")


_WARNED_ONCE: set = set()


def warn_once(text: str) -> None:
    """torch's TORCH_WARN_ONCE: a UserWarning the first time only, in a process."""
    if text not in _WARNED_ONCE:
        _WARNED_ONCE.add(text)
        warnings.warn(text, UserWarning, stacklevel=user_stacklevel())


def T(a) -> Tensor:
    """Reverse the dims (torch warns, once a process, for other than 2-d, as here)."""
    if a.dim() == 0:
        warn_once("Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases.")
    elif a.dim() != 2:
        warn_once("The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated "
                  "and it will throw an error in a future release. Consider `x.mT` to transpose batches of "
                  "matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a "
                  "tensor.")
    dims = tuple(reversed(range(a.dim())))
    return apply_op("permute", [a], {"dims": dims}, "PermuteBackward0")


def mT(a) -> Tensor:
    """The last two dims swapped (torch's error below two dims; 0-d is the identity and warns)."""
    if a.dim() == 0:
        warn_once("Tensor.mT is deprecated on 0-D tensors. This function is the identity in these cases.")
        return a                        # torch returns the tensor itself
    if a.dim() == 1:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
    return transpose(a, -2, -1)


@_keyword_texts
@_numpy_spellings
def unsqueeze(input, dim: int) -> Tensor:
    """torch.unsqueeze: `a` with a size-1 dim inserted at `dim` (a view)."""
    a = as_tensor(input, "unsqueeze")
    dim = _int_arg("unsqueeze", "dim", 2, dim)
    d = normalize_dim(dim, a.dim() + 1)
    shape = list(a.shape)
    shape.insert(d, 1)
    return apply_op("reshape", [a], {"shape": tuple(shape), "inserted": d}, "UnsqueezeBackward0")


@_numpy_spellings
def squeeze(input, dim=_MISSING) -> Tensor:
    """torch.squeeze: `a` without its size-1 dims, or only those among `dim` (an int or a tuple)."""
    a = as_tensor(input, "squeeze")
    if isinstance(dim, Tensor) and dim.dim() == 0 and dim.dtype is int64:
        dim = int(dim.item())           # (torch.squeeze takes a 0-d integer tensor only; the method, more)
    _check_squeeze_dim(dim, method=False)
    return _squeeze(a, dim)


@_numpy_spellings
def squeeze_method(self, *dims, dim=_MISSING) -> Tensor:
    """Tensor.squeeze: `t.squeeze(d)`, `t.squeeze((d, e))` or spread, `t.squeeze(d, e)` (torch's
    error for a bad `dim` lists the method's signatures)."""
    if dims:
        if dim is not _MISSING or (len(dims) > 1 and not _is_index(dims[0])):
            raise TypeError("squeeze(): bad arguments")     # (worded by tracer/parser_errors.py)
        dim = dims[0] if len(dims) == 1 else dims
    dim = _int_list_tensor(dim)         # (torch's int-list overload takes a one-element integer or bool tensor)
    _check_squeeze_dim(dim, method=True)
    return _squeeze(self, dim)


def _check_squeeze_dim(dim, method: bool) -> None:
    """torch's TypeError for a `dim` that is neither an int nor a sequence of ints (None too)."""
    if dim is _MISSING or (_is_index(dim) and not isinstance(dim, (bool, np.bool_))) or \
            (isinstance(dim, (tuple, list)) and builtins.all(_is_index(d) for d in dim)):
        return
    got = _arg_type_name(dim)
    why = "      didn't match because some of the arguments have invalid types: "
    if method:
        signatures = "".join(f"\n * ({sig})\n{why}(!{got}!)" for sig in ("", "int dim", "tuple of ints dim"))
        raise TypeError(f"squeeze() received an invalid combination of arguments - got ({got}), but expected one "
                        f"of:{signatures}\n")
    raise TypeError(f"squeeze() received an invalid combination of arguments - got (Tensor, {got}), but expected "
                    f"one of:\n * (Tensor input)" + "".join(f"\n * (Tensor input, {sig})\n{why}(Tensor, !{got}!)"
                                                         for sig in ("int dim", "tuple of ints dim")) + "\n")


def _squeeze(a: Tensor, dim) -> Tensor:
    shape = tuple(a.shape)
    if dim is _MISSING:
        new = tuple(s for s in shape if s != 1)
        name = "SqueezeBackward0"
    else:
        # an empty tuple of dims squeezes none (for a reduction it means all)
        dims = () if isinstance(dim, (tuple, list)) and not dim else _dims(dim, a.dim(), "squeeze")
        new = tuple(s for i, s in enumerate(shape) if not (i in dims and s == 1))
        name = "SqueezeBackward1" if isinstance(dim, (int, np.integer)) else "SqueezeBackward2"
    return apply_op("reshape", [a], {"shape": new}, name)


def expand(a, *sizes, size=None, implicit: bool = False) -> Tensor:
    """`a` broadcast to `sizes` (-1 keeps a dim; new dims lead): a view with zero strides.
    (`implicit`, torch's flag for its autograd's own expands, changes nothing.)"""
    if type(implicit) is not bool:
        raise TypeError(f"expand(): argument 'implicit' must be bool, not {type_name(implicit)}")
    a = as_tensor(a, "expand")
    sizes = _shape_arg(_sizes("expand", "size", sizes, size), "expand", "size", by_keyword=size is not None)
    lead = len(sizes) - a.dim()
    if lead < 0:
        raise RuntimeError(f"expand({EXPAND_TYPE_NAMES[a._dtype.name]}{{[{', '.join(map(str, a.shape))}]}}, size=[{', '.join(map(str, sizes))}]): "
                           f"the number of sizes provided ({len(sizes)}) must be greater or equal to the number "
                           f"of dimensions in the tensor ({a.dim()})")
    _check_expand_sizes(tuple(a.shape), sizes)
    shape = tuple(a.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes))
    return apply_op("expand", [a], {"shape": shape}, "ExpandBackward0")


def _check_expand_sizes(shape: tuple, sizes: tuple) -> None:
    """torch's order of checks, from the last dim: an existing dim that does not match (its
    text shows the sizes as given, -1 included), then a -1 on a new leading dim. Other negative
    sizes reach the op's shape rule's overflow error, as do all of a 0-d tensor's."""
    lead = len(sizes) - len(shape)
    for i in reversed(range(len(sizes))):
        if i >= lead:
            existing = shape[i - lead]
            if sizes[i] != -1 and existing != 1 and existing != sizes[i]:
                raise RuntimeError(f"The expanded size of the tensor ({sizes[i]}) must match the existing size "
                                   f"({existing}) at non-singleton dimension {i}.  Target sizes: "
                                   f"{shape_str(sizes)}.  Tensor sizes: {shape_str(shape)}")
        elif sizes[i] == -1 and shape:
            raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a leading, non-existing "
                               f"dimension {i}")


def expand_as(a, other) -> Tensor:
    """torch's Tensor.expand_as: `a` broadcast to other's shape (a view)."""
    return expand(a, tuple(other.shape))


def broadcast_to(input, size) -> Tensor:
    """torch.broadcast_to: `input` expanded to `size` (a view, ExpandBackward0)."""
    return expand(as_tensor(input, "broadcast_to"), _shape_arg(size, "broadcast_to", "size"))


def broadcast_to_method(self, *sizes, size=None) -> Tensor:
    """Tensor.broadcast_to(size) (or its sizes spread: t.broadcast_to(2, 3), as torch takes)."""
    return expand(self, _shape_arg(_sizes("broadcast_to", "size", sizes, size), "broadcast_to", "size"))


def broadcast_tensors(*tensors) -> tuple:
    """torch.broadcast_tensors: the tensors expanded to their common broadcast shape (views)."""
    for k, t in enumerate(tensors):
        if not isinstance(t, (Tensor, np.ndarray)):
            raise TypeError(f"expected Tensor as element {k} in argument 0, but got {type_name(t)}")
    from fusegrad.ir.ops.registry import broadcast_shapes as broadcast      # (torch's text)
    operands = [as_tensor(t) for t in tensors]
    shape = tuple(broadcast(*(tuple(t.shape) for t in operands))) if operands else ()
    # (a tensor of that shape already is returned itself, as torch's expand_outplace does)
    return tuple(t if tuple(t.shape) == shape else expand(t, shape) for t in operands)


def broadcast_shapes(*shapes):
    """torch.broadcast_shapes: the shape tensors of `shapes` (ints or sequences of ints)
    broadcast to, as a Size, with torch's checks and texts (torch._refs._broadcast_shapes)."""
    from .tensor import Size
    shapes = tuple((x,) if isinstance(x, (int, np.integer)) else x for x in shapes if x is not None)
    if not shapes:
        return Size([])
    for shape in shapes:
        if not isinstance(shape, collections.abc.Sequence):     # (a str is one: torch then fails comparing it)
            raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a list of ints, got {shape}")
    common = [1] * builtins.max(len(shape) for shape in shapes)
    for index, shape in enumerate(shapes):
        for i in range(-1, -1 - len(shape), -1):
            if shape[i] == common[i]:
                continue
            if common[i] == 1:
                if shape[i] < 0:
                    raise ValueError("Attempting to broadcast a dimension with negative length!")
                common[i] = shape[i]
            if shape[i] != 1 and common[i] != shape[i]:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {shape[i]} at {i}! Mismatching "
                                   f"argument at index {index} had {shape}; but expected shape should be "
                                   f"broadcastable to {common}")
    return Size(common)


def detach(input) -> Tensor:
    """`a` without history, sharing its memory (fg.detach(t) is t.detach())."""
    return as_tensor(input, "detach").detach()


def clone(input, *, memory_format=None) -> Tensor:
    """torch.clone: a copy of `a` with its own memory (CloneBackward0); a view's strides are kept
    (preserve_format, the default), or the copy is row-major (contiguous_format)."""
    a = as_tensor(input, "clone")
    if memory_format_arg("clone", memory_format) is contiguous_format and not _c_ordered(a):
        return contiguous(a)        # (one copy, one CloneBackward0, as torch's)
    return apply_op("cast", [a], {"dtype": a._dtype}, "CloneBackward0")


def contiguous(input, *, memory_format=contiguous_format) -> Tensor:
    """`a` itself when its memory is C-ordered, else a C-ordered copy (CloneBackward0, as torch's
    clone with contiguous_format). A traced view made in the call has its chain's layout."""
    if memory_format_arg("contiguous", memory_format, optional=False) is preserve_format:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    a = input
    if _c_ordered(a):
        return a
    # (clone keeps a view's strides, torch's preserve_format)
    return _laid_out_row_major(clone(a))


def _laid_out_row_major(out: Tensor) -> Tensor:
    """`out`, a result just made, laid out row-major whatever layout its operands gave it (torch
    allocates some results contiguously: clone(memory_format=contiguous_format), pow(Scalar, Tensor))."""
    if out._data is not None and not out._data.flags.c_contiguous:
        # nothing else holds this fresh array yet (a node that saved the result keeps an equal
        # array under the same version counter), so it can be replaced
        out._data = row_major(out._data)      # (in tiles: a transposing copy)
    elif out._data is None:
        # traced: row-major whatever the layout rule gave it, and so after the call (a sunk
        # permute would otherwise leave the output array transposed)
        trace_state.current().keep_row_major(out)
    return out


_TO_SIGNATURES = (
    "\n * (torch.device device = None, torch.dtype dtype = None, bool non_blocking = False, bool copy = False, *, "
    "torch.memory_format memory_format = None)"
    "\n * (torch.dtype dtype, bool non_blocking = False, bool copy = False, *, torch.memory_format memory_format = None)"
    "\n * (Tensor tensor, bool non_blocking = False, bool copy = False, *, torch.memory_format memory_format = None)\n")


def _invalid_to(got: str) -> TypeError:
    """torch's text for a call of Tensor.to that none of its overloads takes (`got`: the call's
    argument types, as torch prints them)."""
    return TypeError(f"to() received an invalid combination of arguments - got {got}, but expected one of:"
                     + _TO_SIGNATURES)


def to(a, *args, **kwargs) -> Tensor:
    """Tensor.to in torch's forms: (dtype), (device[, dtype]), (other tensor: its dtype), each
    optionally followed by non_blocking and copy, or as keywords. The device must be the CPU.
    Returns `a` itself when nothing changes, unless copy=True (a ToCopyBackward0 copy)."""
    given = dict(kwargs)
    dtype, device = kwargs.pop("dtype", None), kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    layout = kwargs.pop("memory_format", None)
    if not (layout is None or isinstance(layout, memory_format)):
        raise _invalid_to(got_text(args, given))
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    flags = []
    dtype = PYTHON_TYPE_DTYPES.get(dtype, dtype) if isinstance(dtype, type) else dtype
    if dtype is not None and not isinstance(dtype, DType):
        raise _invalid_to(got_text(args, given))
    for x in args:
        if x is None:
            continue                             # torch: device None (as not given)
        if isinstance(x, DType):
            dtype = x
        elif isinstance(x, type) and x in PYTHON_TYPE_DTYPES:     # torch takes the Python types as dtypes
            dtype = PYTHON_TYPE_DTYPES[x]
        elif isinstance(x, Tensor):
            dtype = x._dtype
        elif isinstance(x, (str, torch_device)):
            device = x
        elif isinstance(x, bool):
            flags.append(x)                      # non_blocking, then copy
        elif isinstance(x, int) and not flags:
            device = x                           # a bare index names an accelerator: torch's error
        else:
            raise _invalid_to(got_text(args, given))
    if len(flags) > 1:
        copy = flags[1]
    if isinstance(args[0] if args else None, DType) and \
            builtins.any(isinstance(x, (str, torch_device)) for x in args[1:]):
        # torch's overloads take a device only before the dtype
        got = ", ".join("torch.dtype" if isinstance(x, DType) else type(x).__name__ for x in args)
        raise _invalid_to(f"({got})")
    check_device(device)
    if dtype is None or dtype is a._dtype:
        if not copy:
            return a
        out = apply_op("cast", [a], {"dtype": a._dtype}, "ToCopyBackward0")
    else:
        out = cast(a, dtype)
    # (a copy with contiguous_format is row-major; with none or preserve_format, as its source)
    return _laid_out_row_major(out) if layout is contiguous_format and not _c_ordered(out) else out


@_keyword_texts
@_numpy_spellings
def cat(tensors, dim: int = 0) -> Tensor:
    """Concatenate along an existing dim."""
    _check_tensor_list(tensors, "cat")
    dim = int_argument(dim, "cat")          # (torch's parser checks it before the list's length)
    if len(tensors) == 0:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    ts, _ = _promote_many(tensors)
    for k, x in enumerate(ts):
        if x.dim() == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {k}) cannot be concatenated")
    # torch's legacy rule: 1-d empty operands join any shape. They are reshaped to the others'
    # shape with 0 along the axis (not dropped) so that they stay in the graph: the result
    # requires grad if one of them does, and each gets its empty gradient.
    full = [x for x in ts if tuple(x.shape) != (0,)]
    if full and len(full) < len(ts):
        axis = normalize_dim(dim, full[0].dim())
        empty = tuple(0 if d == axis else s for d, s in enumerate(full[0].shape))
        ts = [x if tuple(x.shape) != (0,) else _hidden_reshape(x, empty) for x in ts]
    # operands all (0,): torch skips every one and checks no dim
    axis = normalize_dim(dim, ts[0].dim()) if full else 0
    return apply_op("cat", ts, {"axis": axis}, "CatBackward0")


def _hidden_reshape(x: Tensor, shape: tuple) -> Tensor:
    """x reshaped where torch uses x itself: its node is not shown in next_functions."""
    out = reshape(x, shape)
    hide_node(out)
    return out


def _check_tensor_list(tensors, fn: str) -> None:
    """torch's parser check of a `tensors` argument, made before the arguments after it: a
    sequence, each of whose elements is a tensor (a NumPy array is one here)."""
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{fn}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type_name(tensors)}")
    for k, x in enumerate(tensors):
        if not isinstance(x, (Tensor, np.ndarray)):
            raise TypeError(f"expected Tensor as element {k} in argument 0, but got {type_name(x)}")


def int_argument(value, fn: str, arg: str = "dim", pos: int = 2) -> int:
    """An int argument `arg` (at `pos`) of `fn` as an int (a 0-d integer tensor is read: torch
    takes it as its value), or torch's parser TypeError."""
    if not _is_index(value) or isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be int, not {type_name(value)}")
    return operator.index(value)


def _promote_many(tensors):
    """The tensors of a list _check_tensor_list passed, promoted to their common dtype."""
    ts = [as_tensor(x, "cat") for x in tensors]
    dtype = result_type([_kind(x) for x in ts])
    return [cast(x, dtype, implicit=True) for x in ts], dtype


@_keyword_texts
@_numpy_spellings
def stack(tensors, dim: int = 0) -> Tensor:
    """Join along a new dim."""
    _check_tensor_list(tensors, "stack")
    dim = int_argument(dim, "stack")        # (torch's parser checks it before the list's length)
    if len(tensors) == 0:
        raise RuntimeError("stack expects a non-empty TensorList")
    ts, _ = _promote_many(tensors)
    axis = normalize_dim(dim, ts[0].dim() + 1)
    return apply_op("stack", ts, {"axis": axis}, "StackBackward0")
