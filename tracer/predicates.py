"""Value tests without a gradient: isnan, isinf, isfinite, isclose (bool tensors, traced
like any op) and allclose, equal (a Python bool: inside fg.compile, a read of values).

Each is written with the recorded ops torch's own implementation uses (isclose is
TensorCompare.cpp's formula, in the operands' dtype), on detached operands: the
result is bool, so no node would ever run backward through them.
"""
from __future__ import annotations

import math

from fusegrad.ir import bool_, float32
from fusegrad.ir.types import TORCH_SCALAR_NAMES

from . import functional as F
from .tensor import Tensor


def _tensor_argument(fn: str, x, arg: str, position: int) -> Tensor:
    """`x` itself, or torch's TypeError naming the argument (these take no Python number)."""
    if isinstance(x, Tensor):
        return x
    return F.as_tensor(x, fn, arg, position)


def isnan(input) -> Tensor:
    """True where an element is NaN (never for integer and bool tensors)."""
    a = _tensor_argument("isnan", input, "input", 1).detach()
    return F.ne(a, a)


def isinf(input) -> Tensor:
    """True where an element is +inf or -inf (never for integer and bool tensors)."""
    a = _tensor_argument("isinf", input, "input", 1).detach()
    if not a.dtype.is_floating_point:
        return F.ne(a, a)                   # all False, traced like the float case
    return F.eq(F.abs(a), math.inf)


def isfinite(input) -> Tensor:
    """True where an element is neither inf nor NaN (always for integer and bool tensors)."""
    a = _tensor_argument("isfinite", input, "input", 1).detach()
    if not a.dtype.is_floating_point:
        return F.eq(a, a)                   # all True
    return F.lt(F.abs(a), math.inf)        # (NaN < inf is False)


def _check_tolerances(a: Tensor, b: Tensor, rtol: float, atol: float) -> None:
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{TORCH_SCALAR_NAMES[a.dtype.name]} did not match {TORCH_SCALAR_NAMES[b.dtype.name]}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol:g}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol:g}")


def _isclose(fn: str, a, b, rtol: float, atol: float, equal_nan: bool, other_position: int) -> Tensor:
    a = _tensor_argument(fn, a, "input", 1).detach()
    b = _tensor_argument(fn, b, "other", other_position).detach()
    _check_tolerances(a, b, rtol, atol)
    close = F.eq(a, b)
    if equal_nan and a.dtype.is_floating_point:
        close = F.logical_or(close, F.logical_and(isnan(a), isnan(b)))
    if rtol == 0 and atol == 0:
        return close
    if not a.dtype.is_floating_point:       # torch computes the errors of bools and integers in the
        a, b = F.cast(a, float32), F.cast(b, float32)       # default dtype (no int64 wrap-around)
    allowed = F.add(F.abs(F.mul(b, rtol)), atol)
    actual = F.abs(F.sub(a, b))
    return F.logical_or(close, F.logical_and(isfinite(actual), F.le(actual, allowed)))


def isclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """|input - other| <= atol + rtol * |other| elementwise (broadcast; equal infinities are
    close; NaN only with `equal_nan`). Both operands must have one dtype, as in torch."""
    return _isclose("isclose", input, other, rtol, atol, equal_nan, 2)


def allclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether isclose holds everywhere: a Python bool."""
    return bool(F.all(_isclose("allclose", input, other, rtol, atol, equal_nan, 2)))


def equal(input, other) -> bool:
    """Same shape and equal values (NaN is not equal to itself; the dtypes may differ): a Python bool."""
    a = _tensor_argument("equal", input, "input", 1).detach()
    b = _tensor_argument("equal", other, "other", 2).detach()
    if tuple(a.shape) != tuple(b.shape):
        return False
    return bool(F.all(F.eq(a, b)))

