"""torch functions users porting torch code reach for, as user-level functions (their new ops are
in ir/ops/extra_math.py): torch's aliases (absolute, negative, multiply, divide, subtract,
true_divide, greater, greater_equal, less, less_equal, not_equal, concat, concatenate) and the
in-place forms clip_, square_, clamp_min_, clamp_max_; as_tensor; lerp, addcmul, addcdiv, hypot,
logaddexp, logaddexp2, xlogy, logit, erfc, deg2rad, rad2deg, sgn, signbit, isposinf, isneginf,
nan_to_num, float_power, copysign, asinh/acosh/atanh (arcsinh...), heaviside, fmod; and
Tensor.repeat, tile and type_as.

Each function promotes as torch does (Python numbers never promote a float32 tensor) and records
torch's node name; bad calls raise torch's argument-parser texts (tracer/parser_errors.py), from
the overloads torch prints, declared here beside each function.
"""
from __future__ import annotations

import math

import numpy as np

from fusegrad.ir import bool_, float32, float64
from fusegrad.ir.ops import broadcast_shapes
from fusegrad.ir.types import TORCH_SCALAR_NAMES

from . import functional as F
from . import inplace
from .dispatch import apply_op, result_cast_error
from .functional import REQUIRED, _coerce, _is_scalar, _promoted, as_tensor, cast, clone, keyword_sizes, one_input
from .math_functions import _alias, _float_inplace, _rewrite_unchanged
from .parser_errors import ArgParser, function_texts, method_texts, no_arguments, no_arguments_error, type_name
from .tensor import Tensor

_OUT = "*, Tensor out = None"
_TENSOR_OR_NUMBER = (f"(Tensor input, Tensor other, {_OUT})", f"(Tensor input, Number other, {_OUT})")


def _scalar_name(dtype) -> str:
    return TORCH_SCALAR_NAMES[dtype.name]


def _not_implemented(kernel: str, dtype) -> NotImplementedError:
    return NotImplementedError(f'"{kernel}" not implemented for \'{_scalar_name(dtype)}\'')


def _operand(x, fn: str, arg: str, pos: int):
    """A tensor or an array (as a tensor), or a number as it is; TypeError otherwise."""
    if isinstance(x, (Tensor, np.ndarray)):
        return as_tensor(x, fn, arg, pos)
    if _is_scalar(x):
        return x
    raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not {type_name(x)}")


def _number(value, fn: str, arg: str, kind: str = "Number"):
    """A number argument (a 0-d tensor counts, as in torch's parser)."""
    if isinstance(value, Tensor) and value.dim() == 0:
        return value.item()
    if not _is_scalar(value):
        raise TypeError(f"{fn}(): argument '{arg}' must be {kind}, not {type_name(value)}")
    return value


# ------------------------------------------------------------------ plans
# A plan is (op, operands as given, attributes, node name, result dtype): the out-of-place
# function coerces the operands to the result dtype; the in-place method writes into self.
def _apply(plan) -> Tensor:
    op, operands, attrs, name, dtype = plan
    return apply_op(op, [_coerce(x, dtype) for x in operands], attrs, name)


def _write(self: Tensor, plan) -> Tensor:
    """The plan's result written into self: torch's leaf, overlap, shape and type checks in its
    order, the other operands taken in self's dtype."""
    op, operands, attrs, name, dtype = plan
    inplace.check_inplace(self)
    for x in operands[1:]:
        inplace.check_write_overlaps(self, x)
    inplace.check_result_fits(self, broadcast_shapes(*(tuple(np.shape(x)) for x in operands)), dtype)
    apply_op(op, [self] + [_coerce(x, self._dtype) for x in operands[1:]], attrs, name, out=self)
    return self


def _float_dtype(operands, fn: str):
    dtype = _promoted(list(operands), fn)[1]
    return dtype if dtype.is_floating_point else float32


# ------------------------------------------------------------------ lerp
def _lerp_plan(input, end, weight, fn="lerp"):
    a, b = as_tensor(input, fn), as_tensor(end, fn, "end", 2)
    tensor_weight = isinstance(weight, (Tensor, np.ndarray))
    if tensor_weight:
        weight = as_tensor(weight, fn, "weight", 3)
    else:
        weight = _number(weight, fn, "weight")
    if b._dtype is not a._dtype:
        raise RuntimeError(f"expected dtype {F._c_name(a._dtype)} for `end` but got dtype {F._c_name(b._dtype)}")
    if tensor_weight and weight.dim() > 0 and weight._dtype is not a._dtype:
        raise RuntimeError(f"expected dtype {F._c_name(a._dtype)} for `weight` but got dtype "
                           f"{F._c_name(weight._dtype)}")
    # A 0-d weight of another dtype takes part in promotion (torch's TensorIterator): with
    # dimensioned inputs only across categories (an int64 lerp with a 0-d float weight is
    # float32), with 0-d inputs fully (float32 with a 0-d float64 weight is float64).
    dtype = _promoted([a, weight], fn)[1] if tensor_weight else a._dtype
    if not dtype.is_floating_point:
        raise _not_implemented("lerp_kernel_tensor" if tensor_weight else "lerp_kernel_scalar", dtype)
    return "lerp", [a, b, weight], None, "LerpBackward1" if tensor_weight else "LerpBackward0", dtype


def lerp(input, end, weight) -> Tensor:
    """torch.lerp: input + weight * (end - input), by torch's formula (which switches at |weight| = 0.5)."""
    return _apply(_lerp_plan(input, end, weight))


def _lerp_(self, end, weight) -> Tensor:
    """In-place torch.lerp."""
    return _write(self, _lerp_plan(self, end, weight, "lerp_"))


# ------------------------------------------------------------------ addcmul / addcdiv
_ADDCDIV_INTEGERS = (
    "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a true "
    "division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * "
    "torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) "
    "for float inputs. The future addcdiv behavior is just the latter implementation: (input + value * tensor1 / "
    "tensor2), for all dtypes.")


def _addc_plan(op: str, input, tensor1, tensor2, value, fn=None):
    fn = fn or op
    a = as_tensor(input, fn)
    t1, t2 = as_tensor(tensor1, fn, "tensor1", 2), as_tensor(tensor2, fn, "tensor2", 3)
    value = _number(value, fn, "value")
    if op == "addcdiv" and not t1._dtype.is_floating_point and not t2._dtype.is_floating_point:
        raise RuntimeError(_ADDCDIV_INTEGERS)
    dtype = _promoted([a, t1, t2], fn)[1]
    if dtype is bool_:
        raise _not_implemented(f"{op}_cpu_out", dtype)
    if not dtype.is_floating_point and isinstance(value, (float, np.floating)):
        value = int(value)                  # (torch takes the value in the result's dtype)
    return op, [a, t1, t2, value], None, "AddcmulBackward0" if op == "addcmul" else "AddcdivBackward0", \
        dtype


def _addc(op: str):
    def fn(input, tensor1, tensor2, *, value=1) -> Tensor:
        return _apply(_addc_plan(op, input, tensor1, tensor2, value))

    def method(self, tensor1, tensor2, *, value=1) -> Tensor:
        return fn(self, tensor1, tensor2, value=value)

    def in_place(self, tensor1, tensor2, *, value=1) -> Tensor:
        return _write(self, _addc_plan(op, self, tensor1, tensor2, value, op + "_"))
    fn.__name__ = fn.__qualname__ = method.__name__ = method.__qualname__ = op
    in_place.__name__ = in_place.__qualname__ = op + "_"
    sign = "*" if op == "addcmul" else "/"
    fn.__doc__ = method.__doc__ = f"torch.{op}: input + value * tensor1 {sign} tensor2 (broadcast, promoted)."
    in_place.__doc__ = f"In-place torch.{op}."
    fn.method, fn.in_place = method, in_place
    return fn


addcmul, addcdiv = _addc("addcmul"), _addc("addcdiv")


# ------------------------------------------------------------------ binary float ops of two tensors
def _two_tensors(op: str, name: str):
    """hypot, logaddexp, logaddexp2: two tensors promoted to a floating dtype (integer and bool
    operands are torch's NotImplementedError)."""
    def plan(input, other, fn=op):
        a, b = as_tensor(input, fn), as_tensor(other, fn, "other", 2)
        dtype = _promoted([a, b], fn)[1]
        if not dtype.is_floating_point:
            if fn.endswith("_") and dtype.category > a._dtype.category:
                # (in place, torch's cast check comes first: bool.hypot_(long))
                raise result_cast_error(_scalar_name(dtype), _scalar_name(a._dtype))
            raise _not_implemented(f"{op}_cpu", dtype)
        # (logaddexp of a bool tensor: torch's backward raises, ir/ops/extra_math.py)
        attrs = {"bool_operand": True} if op != "hypot" and bool_ in (a._dtype, b._dtype) else None
        return op, [a, b], attrs, name, dtype

    def fn(input, other) -> Tensor:
        return _apply(plan(input, other))

    def in_place(self, other) -> Tensor:
        return _write(self, plan(self, other, op + "_"))
    fn.__name__ = fn.__qualname__ = op
    in_place.__name__ = in_place.__qualname__ = op + "_"
    fn.__doc__ = f"torch.{op} of two tensors (a floating result)."
    in_place.__doc__ = f"In-place torch.{op}."
    fn.in_place = in_place
    return fn


hypot = _two_tensors("hypot", "HypotBackward0")
logaddexp = _two_tensors("logaddexp", "LogaddexpBackward0")
logaddexp2 = _two_tensors("logaddexp2", "Logaddexp2Backward0")


# ------------------------------------------------------------------ xlogy, copysign, fmod
def _need_a_tensor(fn: str, a, b) -> None:
    if not isinstance(a, (Tensor, np.ndarray)) and not isinstance(b, (Tensor, np.ndarray)):
        raise TypeError(f"{fn}(): expected a tensor operand")


def _xlogy_plan(input, other, fn="xlogy"):
    _need_a_tensor(fn, input, other)
    a, b = _operand(input, fn, "input", 1), _operand(other, fn, "other", 2)
    name = "XlogyBackward0" if isinstance(a, Tensor) and isinstance(b, Tensor) else \
        "XlogyBackward1" if isinstance(b, Tensor) else "XlogyBackward2"
    if not isinstance(a, Tensor):
        a = F.tensor_from_scalar(a)
    return "xlogy", [a, b], None, name, _float_dtype([a, b], fn)


def xlogy(input, other) -> Tensor:
    """torch.xlogy: input * log(other), 0 where input is 0 (NaN where other is NaN); a float result."""
    return _apply(_xlogy_plan(input, other))


def _xlogy_(self, other) -> Tensor:
    """In-place torch.xlogy."""
    return _write(self, _xlogy_plan(self, other, "xlogy_"))


def _copysign_plan(input, other, fn="copysign"):
    a = as_tensor(input, fn)
    b = _operand(other, fn, "other", 2)
    name = "CopysignBackward0" if isinstance(b, Tensor) else "CopysignBackward1"
    return "copysign", [a, b], None, name, _float_dtype([a, b], fn)


def copysign(input, other) -> Tensor:
    """torch.copysign: |input| with the sign of other (a tensor or a number); a float result."""
    return _apply(_copysign_plan(input, other))


def _copysign_(self, other) -> Tensor:
    """In-place torch.copysign."""
    return _write(self, _copysign_plan(self, other, "copysign_"))


def _fmod_plan(input, other, fn="fmod"):
    a = as_tensor(input, fn)
    b = _operand(other, fn, "other", 2)
    dtype = _promoted([a, b], fn)[1]
    if dtype is bool_:
        raise _not_implemented("fmod_cpu", dtype)
    return "fmod", [a, b], None, "FmodBackward1" if isinstance(b, Tensor) else "FmodBackward0", dtype


def fmod(input, other) -> Tensor:
    """torch.fmod: C's fmod, with the dividend's sign (an integer zero divisor raises torch's error)."""
    return _apply(_fmod_plan(input, other))


def _fmod_(self, other) -> Tensor:
    """In-place torch.fmod."""
    return _write(self, _fmod_plan(self, other, "fmod_"))


def _heaviside_plan(input, values, fn="heaviside"):
    a, v = as_tensor(input, fn), as_tensor(values, fn, "values", 2)
    if a._dtype is not v._dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    # (torch has no derivative for it: a NotImplemented node, whose backward raises)
    return "heaviside", [a, v], {"no_derivative": fn}, "NotImplemented", a._dtype


def heaviside(input, values) -> Tensor:
    """torch.heaviside: 0 where input < 0, values where input == 0, 1 where input > 0 (one dtype)."""
    return _apply(_heaviside_plan(input, values))


def _heaviside_(self, values) -> Tensor:
    """In-place torch.heaviside."""
    return _write(self, _heaviside_plan(self, values, "heaviside_"))


# ------------------------------------------------------------------ unary functions
erfc = F._unary_float("erfc", "ErfcBackward0")
deg2rad = F._unary_float("deg2rad", "Deg2RadBackward0")
rad2deg = F._unary_float("rad2deg", "Rad2DegBackward0")
asinh = F._unary_float("asinh", "AsinhBackward0")
acosh = F._unary_float("acosh", "AcoshBackward0")
atanh = F._unary_float("atanh", "AtanhBackward0")
arcsinh, arccosh, arctanh = _alias(asinh, "arcsinh"), _alias(acosh, "arccosh"), _alias(atanh, "arctanh")


def _logit_plan(input, eps, fn="logit"):
    a = as_tensor(input, fn)
    if eps is not None:
        if isinstance(eps, Tensor) and eps.dim() == 0:
            eps = eps.item()
        if not _is_scalar(eps) or isinstance(eps, (bool, np.bool_)):
            raise TypeError(f"{fn}(): argument 'eps' must be float, not {type_name(eps)}")
        eps = float(eps)
    return "logit", [a], {"eps": eps}, "LogitBackward0", a._dtype if a._dtype.is_floating_point else float32


def logit(input, eps=None) -> Tensor:
    """torch.logit: log(x / (1 - x)), x clamped to [eps, 1 - eps] when eps is given."""
    return _apply(_logit_plan(input, eps))


def _logit_(self, eps=None) -> Tensor:
    """In-place torch.logit."""
    return _write(self, _logit_plan(self, eps, "logit_"))


def _one_tensor(fn: str):
    def take(input=REQUIRED, *surplus) -> Tensor:
        return as_tensor(one_input(input, surplus, fn), fn)
    return take


def _no_argument_method(fn, name: str):
    def method(self, *args, **kwargs):
        if args or kwargs:
            raise no_arguments_error(name, args, kwargs)
        return fn(self)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = fn.__doc__
    return method


def sgn(input=REQUIRED, *surplus) -> Tensor:
    """torch.sgn: sign(x) for real tensors (SgnBackward0, whose gradient is zero); a bool tensor's copy."""
    a = _one_tensor("sgn")(input, *surplus)
    if a._dtype is bool_:
        return clone(a)
    return apply_op("sgn", [a], None, "SgnBackward0")


def _sgn_(self) -> Tensor:
    """In-place torch.sgn."""
    if self._dtype is bool_:
        return _rewrite_unchanged(self)          # (torch's kernel writes the values back)
    return _SGN_WRITE(self)


_SGN_WRITE = inplace.unary_inplace("sgn", "SgnBackward0")


def signbit(input=REQUIRED, *surplus) -> Tensor:
    """torch.signbit: whether the sign bit is set (-0.0 included), as bool."""
    a = _one_tensor("signbit")(input, *surplus)
    if a._dtype.is_floating_point:
        return apply_op("signbit", [a])
    return F.lt(a, 0) if a._dtype is not bool_ else F.ne(a, a)


def _infinity_test(fn: str, sign: float):
    def test(input=REQUIRED, *surplus) -> Tensor:
        a = _one_tensor(fn)(input, *surplus)
        return F.eq(a, sign * math.inf) if a._dtype.is_floating_point else F.ne(a, a)
    test.__name__ = test.__qualname__ = fn
    test.__doc__ = f"torch.{fn}: whether each element is {'+' if sign > 0 else '-'}inf, as bool."
    return test


isposinf, isneginf = _infinity_test("isposinf", 1.0), _infinity_test("isneginf", -1.0)


def _nan_to_num_plan(input, nan, posinf, neginf, fn="nan_to_num"):
    a = as_tensor(input, fn)
    given = {}
    for key, value in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if value is not None:
            value = _number(value, fn, key, "float")       # (a bool is a float there: True is 1.0)
        given[key] = value
    if not a._dtype.is_floating_point:
        return None
    info = np.finfo(a._dtype.np)
    defaults = {"nan": 0.0, "posinf": float(info.max), "neginf": float(info.min)}
    with np.errstate(over="ignore", invalid="ignore"):
        attrs = {k: float(np.asarray(defaults[k] if v is None else v, a._dtype.np)) for k, v in given.items()}
    return "nan_to_num", [a], attrs, "NanToNumBackward0", a._dtype


def nan_to_num(input, nan=None, posinf=None, neginf=None) -> Tensor:
    """torch.nan_to_num: NaN, inf and -inf replaced (defaults: 0 and the dtype's largest and
    lowest floats); an integer or bool tensor is copied."""
    plan = _nan_to_num_plan(input, nan, posinf, neginf)
    return clone(as_tensor(input)) if plan is None else _apply(plan)


def _nan_to_num_(self, nan=None, posinf=None, neginf=None) -> Tensor:
    """In-place torch.nan_to_num (an integer or bool tensor stays as it is)."""
    plan = _nan_to_num_plan(self, nan, posinf, neginf, "nan_to_num_")
    if plan is None:
        return _rewrite_unchanged(self)          # (torch's kernel writes the values back)
    return _write(self, plan)


def float_power(input, exponent) -> Tensor:
    """torch.float_power: pow in float64 (the tensors cast to float64 first, as torch's)."""
    a, b = input, exponent
    if not isinstance(a, (Tensor, np.ndarray)) and not isinstance(b, (Tensor, np.ndarray)):
        raise TypeError("float_power(): expected a tensor operand")
    a, b = _operand(a, "float_power", "input", 1), _operand(b, "float_power", "exponent", 2)
    a = cast(a, float64) if isinstance(a, Tensor) else float(a)
    b = cast(b, float64) if isinstance(b, Tensor) else float(b)
    return F.pow(a, b)


def _float_power_(self, exponent) -> Tensor:
    """In-place torch.float_power: self must be float64."""
    b = _operand(exponent, "float_power_", "exponent", 1)
    if self._dtype is not float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {_scalar_name(self._dtype)} but the "
                           "operation's result requires dtype Double")
    return Tensor.pow_(self, cast(b, float64) if isinstance(b, Tensor) else float(b))


# ------------------------------------------------------------------ repeat, tile, type_as
def _repeats(fn: str, sizes: tuple, arg: str) -> tuple:
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    for s in sizes:
        if isinstance(s, (bool, np.bool_)) or not F._is_index(s):
            raise TypeError(f"{fn}(): argument '{arg}' (position 1) must be tuple of ints, not {type_name(s)}")
    return tuple(int(s) for s in sizes)


def _repeat(a: Tensor, repeats: tuple, name: str = "RepeatBackward0") -> Tensor:
    if len(repeats) < a.dim():
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    shape = (1,) * (len(repeats) - a.dim()) + tuple(a.shape)
    result = [r * s for r, s in zip(repeats, shape)]
    negative = next((r for r in result if r < 0), None)
    if negative is not None:
        raise RuntimeError(f"Trying to create tensor with negative dimension {negative}: {result}")
    return apply_op("repeat", [a], {"repeats": repeats}, name)


def repeat(self, *sizes, **keyword) -> Tensor:
    """torch's Tensor.repeat: self tiled `sizes` times along each dim (as many sizes as dims at
    least; extra ones add leading dims; or `repeats=` one tuple). RepeatBackward0 sums the
    tiles' gradients."""
    if keyword:
        return _repeat(self, _repeats("repeat", (keyword_sizes("repeat", "repeats", sizes, keyword),), "repeats"))
    if not sizes:
        raise TypeError('repeat() missing 1 required positional arguments: "repeats"')
    return _repeat(self, _repeats("repeat", sizes, "repeats"))


def tile(input, dims) -> Tensor:
    """torch.tile: repeat, with dims padded with leading ones to input's number of dims."""
    a = as_tensor(input, "tile")
    if not isinstance(dims, (tuple, list)):
        raise TypeError(f"tile(): argument 'dims' (position 2) must be tuple of ints, not {type_name(dims)}")
    dims = _repeats("tile", (tuple(dims),), "dims")
    return _repeat(a, (1,) * (a.dim() - len(dims)) + dims)


def _tile_method(self, *dims, **keyword) -> Tensor:
    """Tensor.tile(dims), Tensor.tile(*dims) or Tensor.tile(dims=dims)."""
    if keyword:
        dims = (keyword_sizes("tile", "dims", dims, keyword),)
    if not dims:
        raise TypeError('tile() missing 1 required positional arguments: "dims"')
    dims = _repeats("tile", dims, "dims")
    return _repeat(self, (1,) * (self.dim() - len(dims)) + dims)


def type_as(self, other) -> Tensor:
    """torch's Tensor.type_as: self in other's dtype (self itself when it already is)."""
    if not isinstance(other, Tensor):
        raise TypeError(f"type_as(): argument 'other' (position 1) must be Tensor, not {type_name(other)}")
    return cast(self, other._dtype)


# ------------------------------------------------------------------ as_tensor
def as_tensor_(data, dtype=None, device=None) -> Tensor:
    """torch.as_tensor: a Tensor itself (cast when `dtype` differs, with its history); a NumPy
    array of fusegrad's dtypes shares its memory when no dtype change is asked; anything
    else is copied as fg.tensor copies it."""
    from .creation import tensor, wrap_array
    from .device import check_device
    check_device(device)
    if dtype is not None and not isinstance(dtype, F.DType):
        dtype = F.PYTHON_TYPE_DTYPES.get(dtype, dtype) if isinstance(dtype, type) else dtype
        if not isinstance(dtype, F.DType):
            raise TypeError(f"as_tensor(): argument 'dtype' must be torch.dtype, not {type_name(dtype)}")
    if isinstance(data, Tensor):
        return data if dtype is None else cast(data, dtype)
    if isinstance(data, np.ndarray):
        t = wrap_array(data)
        if dtype is None or dtype is t._dtype:
            return t
        return tensor(data, dtype=dtype)
    return tensor(data, dtype=dtype)


as_tensor_.__name__ = as_tensor_.__qualname__ = "as_tensor"


# ------------------------------------------------------------------ aliases
def _renamed(fn, old: str, new: str):
    """`fn` under torch's other name `new`: its TypeErrors say new() where they said old()."""
    def alias(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError as exc:
            text = str(exc)
            if text.startswith(old + "("):
                raise TypeError(new + text[len(old):]) from None
            raise
    alias.__name__ = alias.__qualname__ = new
    alias.__doc__ = f"torch.{new.rstrip('_')}, an alias of {old.rstrip('_')}."
    return alias


absolute = _alias(F.abs, "absolute")


def negative(input=REQUIRED, *surplus) -> Tensor:
    """torch.negative, an alias of neg."""
    return F.neg(_one_tensor("negative")(input, *surplus))


multiply = _renamed(F.mul, "mul", "multiply")
divide = _renamed(F.div, "div", "divide")


def subtract(input, other, *number_alpha, alpha=1) -> Tensor:
    """torch.subtract, sub without its deprecated alpha-first overload: (Tensor other, *, Number
    alpha) and (Number other, Number alpha), the latter torch's SubBackward1."""
    if number_alpha:
        if len(number_alpha) > 1 or not _is_scalar(other) or not isinstance(input, (Tensor, np.ndarray)):
            raise TypeError("subtract(): bad arguments")     # (worded by _texts as torch's parser)
        return F.subtract_scaled(as_tensor(input, "subtract"), other, number_alpha[0], "SubBackward1")
    return _renamed(F.sub, "sub", "subtract")(input, other, alpha=alpha)


def rsub(input, other, *number_alpha, alpha=1) -> Tensor:
    """torch.rsub: other - alpha * input (RsubBackward0; RsubBackward1 for a number `other`,
    whose overload also takes alpha by position)."""
    if number_alpha:
        if len(number_alpha) > 1 or not _is_scalar(other):
            raise TypeError("rsub(): bad arguments")        # (worded by _texts as torch's parser)
        alpha, = number_alpha
    if not isinstance(input, (Tensor, np.ndarray)):
        raise TypeError("rsub(): bad arguments")
    return F.rsub(as_tensor(input, "rsub"), _operand(other, "rsub", "other", 2), alpha)


def true_divide(input, other) -> Tensor:
    """torch.true_divide, an alias of div without a rounding mode."""
    return F.div(input, other)


greater, greater_equal = _renamed(F.gt, "gt", "greater"), _renamed(F.ge, "ge", "greater_equal")
less, less_equal = _renamed(F.lt, "lt", "less"), _renamed(F.le, "le", "less_equal")
not_equal = _renamed(F.ne, "ne", "not_equal")
concat, concatenate = _renamed(F.cat, "cat", "concat"), _renamed(F.cat, "cat", "concatenate")


def _one_bound_(which: str):
    """clamp_min_ / clamp_max_: in-place clamp with one bound (ClampMinBackward0, or 1 for a
    tensor bound, as the out-of-place forms)."""
    fn, name = f"clamp_{which}_", f"Clamp{which.capitalize()}Backward"

    def method(self, bound) -> Tensor:
        if not (isinstance(bound, (Tensor, np.ndarray)) or _is_scalar(bound)):
            raise TypeError(f"{fn}(): argument '{which}' (position 1) must be Tensor, not {type_name(bound)}")
        bound = F.parsed_operand(bound)
        low, high = (bound, None) if which == "min" else (None, bound)
        tensor_bounds, dtype = F.clamp_result_type(self, low, high)
        inplace.check_inplace(self)
        inplace.check_write_overlaps(self, bound)
        if isinstance(bound, Tensor):
            inplace.check_result_fits(self, broadcast_shapes(tuple(self.shape), tuple(bound.shape)), self._dtype)
        if dtype.category > self._dtype.category:
            raise result_cast_error(_scalar_name(dtype), _scalar_name(self._dtype) if tensor_bounds
                                    else F._c_name(self._dtype))
        op, operands, _ = F.clamp_call(self, low, high, self._dtype, tensor_bounds)
        apply_op(op, operands, None, name + ("1" if tensor_bounds else "0"), out=self)
        return self
    method.__name__ = method.__qualname__ = fn
    method.__doc__ = f"In-place torch.clamp_{which}."
    return method


def _square_(self) -> Tensor:
    """In-place torch.square (pow_(2): PowBackward0); a bool tensor cannot hold its Long result."""
    if self._dtype is bool_:
        raise result_cast_error("Long", "Bool")
    return Tensor.pow_(self, 2)


def in_place_aliases(methods: dict) -> dict:
    """torch's in-place aliases of methods in `methods` (tracer/methods.py's table)."""
    other = ("(Tensor other)", "(Number other)")
    rounding = ("(Tensor other)", "(Tensor other, *, str rounding_mode)", "(Number other)",
                "(Number other, *, str rounding_mode)")
    aliases = {new: _renamed(methods[old], old, new) for new, old in (
        ("absolute_", "abs_"), ("negative_", "neg_"), ("multiply_", "mul_"), ("divide_", "div_"),
        ("true_divide_", "div_"), ("clip_", "clamp_"))}
    sub_ = _renamed(methods["sub_"], "sub_", "subtract_")
    # (subtract_(Number other, Number alpha): torch's sub_.Scalar overload, SubBackward1)
    subtract_number_ = inplace.binary_inplace("sub", "SubBackward1", "subtract_")

    def subtract_(self, other, *number_alpha, alpha=1) -> Tensor:
        """In-place torch.subtract (without sub_'s deprecated alpha-first overload)."""
        if number_alpha:
            if len(number_alpha) > 1 or not _is_scalar(other):
                raise TypeError("subtract_(): bad arguments")
            return subtract_number_(self, other, number_alpha[0])
        return sub_(self, other, alpha=alpha)
    aliases["subtract_"] = subtract_
    printed = {"multiply_": other, "true_divide_": other, "divide_": rounding,
               "subtract_": ("(Tensor other, *, Number alpha = 1)", "(Number other, Number alpha = 1)"),
               "clip_": ("(Tensor min = None, Tensor max = None)", "(Number min = None, Number max = None)")}
    for name, overloads in printed.items():
        aliases[name] = _method_texts(aliases[name], name, *overloads)
    for name in ("absolute_", "negative_"):
        aliases[name] = no_arguments(aliases[name], name)
    return aliases


# ------------------------------------------------------------------ torch's parser texts
def _texts(fn, name: str, *printed: str, **options):
    return function_texts(fn, ArgParser(name, *printed, **options))


def _method_texts(fn, name: str, *printed: str, **options):
    return method_texts(fn, ArgParser(name, *printed, **options))


_ONE = f"(Tensor input, {_OUT})"
FUNCTIONS = {
    "lerp": _texts(lerp, "lerp", f"(Tensor input, Tensor end, Tensor weight, {_OUT})",
                   f"(Tensor input, Tensor end, Number weight, {_OUT})"),
    **{op: _texts(fn, op, "(Tensor input, Tensor tensor1, Tensor tensor2, *, Number value = 1, Tensor out = None)",
                  hidden=("(Tensor input, Number value, Tensor tensor1, Tensor tensor2, *, Tensor out = None)",))
       for op, fn in (("addcmul", addcmul), ("addcdiv", addcdiv))},
    **{fn.__name__: _texts(fn, fn.__name__, f"(Tensor input, Tensor other, {_OUT})")
       for fn in (hypot, logaddexp, logaddexp2)},
    "xlogy": _texts(xlogy, "xlogy", f"(Tensor input, Tensor other, {_OUT})", f"(Number self, Tensor other, {_OUT})",
                    f"(Tensor input, Number other, {_OUT})"),
    "logit": _texts(logit, "logit", f"(Tensor input, float? eps = None, {_OUT})"),
    **{fn.__name__: _texts(fn, fn.__name__, _ONE) for fn in (erfc, deg2rad, rad2deg, asinh, acosh, atanh, arcsinh,
                                                              arccosh, arctanh, sgn, signbit, isposinf, isneginf,
                                                              absolute, negative)},
    "nan_to_num": _texts(nan_to_num, "nan_to_num", "(Tensor input, float? nan = None, float? posinf = None, "
                                                   f"float? neginf = None, {_OUT})"),
    "float_power": _texts(float_power, "float_power", f"(Tensor input, Tensor exponent, {_OUT})",
                          f"(Number self, Tensor exponent, {_OUT})", f"(Tensor input, Number exponent, {_OUT})"),
    "copysign": _texts(copysign, "copysign", *_TENSOR_OR_NUMBER),
    "fmod": _texts(fmod, "fmod", *_TENSOR_OR_NUMBER),
    "heaviside": _texts(heaviside, "heaviside", f"(Tensor input, Tensor values, {_OUT})"),
    "tile": _texts(tile, "tile", "(Tensor input, tuple of ints dims)"),
    "multiply": _texts(multiply, "multiply", f"(Tensor input, Tensor other, {_OUT})", "(Tensor input, Number other)",
                       numbers_as_tensors=True),
    "divide": _texts(divide, "divide", f"(Tensor input, Tensor other, {_OUT})",
                     "(Tensor input, Tensor other, *, str rounding_mode, Tensor out = None)",
                     "(Tensor input, Number other)", "(Tensor input, Number other, *, str rounding_mode)",
                     numbers_as_tensors=True),
    "subtract": _texts(subtract, "subtract", "(Tensor input, Tensor other, *, Number alpha = 1, Tensor out = None)",
                       "(Tensor input, Number other, Number alpha = 1)", numbers_as_tensors=True),
    "rsub": _texts(rsub, "rsub", "(Tensor input, Tensor other, *, Number alpha = 1)",
                   "(Tensor input, Number other, Number alpha = 1)"),
    "true_divide": _texts(true_divide, "true_divide", f"(Tensor input, Tensor other, {_OUT})",
                          "(Tensor input, Number other)", numbers_as_tensors=True),
    **{fn.__name__: _texts(fn, fn.__name__, *_TENSOR_OR_NUMBER)
       for fn in (greater, greater_equal, less, less_equal, not_equal)},
    **{fn.__name__: _texts(fn, fn.__name__, "(tuple of Tensors tensors, int dim = 0, *, Tensor out = None)")
       for fn in (concat, concatenate)},
}

_TENSOR_OR_NUMBER_OTHER = ("(Tensor other)", "(Number other)")
_INVERSE = ("asinh", "acosh", "atanh")
_UNARY_FLOAT = {"erfc": (erfc, "ErfcBackward0"), "deg2rad": (deg2rad, "Deg2RadBackward0"),
                "rad2deg": (rad2deg, "Rad2DegBackward0"), "asinh": (asinh, "AsinhBackward0"),
                "acosh": (acosh, "AcoshBackward0"), "atanh": (atanh, "AtanhBackward0")}

# Tensor methods (tracer/methods.py binds them)
METHODS = {
    "lerp": _method_texts(lerp, "lerp", "(Tensor end, Tensor weight)", "(Tensor end, Number weight)"),
    "lerp_": _method_texts(_lerp_, "lerp_", "(Tensor end, Tensor weight)", "(Tensor end, Number weight)"),
    **{name: _method_texts(fn, name, "(Tensor tensor1, Tensor tensor2, *, Number value = 1)",
                           hidden=("(Number value, Tensor tensor1, Tensor tensor2)",))
       for name, fn in (("addcmul", addcmul.method), ("addcmul_", addcmul.in_place), ("addcdiv", addcdiv.method),
                        ("addcdiv_", addcdiv.in_place))},
    **{fn.__name__: _method_texts(fn, fn.__name__, "(Tensor other)") for fn in (hypot, logaddexp, logaddexp2)},
    "hypot_": _method_texts(hypot.in_place, "hypot_", "(Tensor other)"),
    "xlogy": _method_texts(xlogy, "xlogy", *_TENSOR_OR_NUMBER_OTHER),
    "xlogy_": _method_texts(_xlogy_, "xlogy_", *_TENSOR_OR_NUMBER_OTHER),
    "logit": _method_texts(logit, "logit", "(float? eps = None)"),
    "logit_": _method_texts(_logit_, "logit_", "(float? eps = None)"),
    **{name: fn.method for name, (fn, _) in _UNARY_FLOAT.items()},
    # (torch's in-place asinh_, acosh_ and atanh_ record AsinhBackward1...)
    **{name + "_": no_arguments(_float_inplace(fn, node if name not in _INVERSE else node[:-1] + "1"), name + "_")
       for name, (fn, node) in _UNARY_FLOAT.items()},
    "arcsinh": arcsinh.method, "arccosh": arccosh.method, "arctanh": arctanh.method,
    **{alias + "_": no_arguments(_float_inplace(fn, node), alias + "_")
       for alias, fn, node in (("arcsinh", asinh, "AsinhBackward1"), ("arccosh", acosh, "AcoshBackward1"),
                               ("arctanh", atanh, "AtanhBackward1"))},
    "sgn": _no_argument_method(sgn, "sgn"), "sgn_": _no_argument_method(_sgn_, "sgn_"),
    "signbit": _no_argument_method(signbit, "signbit"), "isposinf": _no_argument_method(isposinf, "isposinf"),
    "isneginf": _no_argument_method(isneginf, "isneginf"),
    "nan_to_num": _method_texts(nan_to_num, "nan_to_num", "(float? nan = None, float? posinf = None, "
                                                          "float? neginf = None)"),
    "nan_to_num_": _method_texts(_nan_to_num_, "nan_to_num_", "(float? nan = None, float? posinf = None, "
                                                              "float? neginf = None)"),
    "float_power": _method_texts(float_power, "float_power", "(Tensor exponent)", "(Number exponent)"),
    "float_power_": _method_texts(_float_power_, "float_power_", "(Tensor exponent)", "(Number exponent)"),
    "copysign": _method_texts(copysign, "copysign", *_TENSOR_OR_NUMBER_OTHER),
    "copysign_": _method_texts(_copysign_, "copysign_", *_TENSOR_OR_NUMBER_OTHER),
    "fmod": _method_texts(fmod, "fmod", *_TENSOR_OR_NUMBER_OTHER),
    "fmod_": _method_texts(_fmod_, "fmod_", *_TENSOR_OR_NUMBER_OTHER),
    "heaviside": _method_texts(heaviside, "heaviside", "(Tensor values)"),
    "heaviside_": _method_texts(_heaviside_, "heaviside_", "(Tensor values)"),
    "repeat": _method_texts(repeat, "repeat", "(tuple of ints repeats)"),
    "tile": _method_texts(_tile_method, "tile", "(tuple of ints dims)"),
    "type_as": _method_texts(type_as, "type_as", "(Tensor other)"),
    "absolute": absolute.method, "divide": _method_texts(_renamed(F.div, "div", "divide"), "divide",
                                                         "(Tensor other)", "(Tensor other, *, str rounding_mode)",
                                                         "(Number other, *, str rounding_mode)",
                                                         numbers_as_tensors=True),
    **{fn.__name__: _method_texts(fn, fn.__name__, *_TENSOR_OR_NUMBER_OTHER)
       for fn in (greater, greater_equal, less, less_equal, not_equal)},
    "square_": no_arguments(_square_, "square_"),
    "clamp_min_": _method_texts(_one_bound_("min"), "clamp_min_", "(Tensor min)", "(Number min)"),
    "clamp_max_": _method_texts(_one_bound_("max"), "clamp_max_", "(Tensor max)", "(Number max)"),
}

# the public functions, with torch's texts (fusegrad/__init__.py exports them)
globals().update(FUNCTIONS)
