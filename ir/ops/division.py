"""Rounding division and remainder, as torch computes them.

div_floor(a, b)  torch.floor_divide / div(rounding_mode="floor") / `a // b`
div_trunc(a, b)  div(rounding_mode="trunc")
remainder(a, b)  torch.remainder / `a % b`: the sign of the divisor, as Python's %

Floats follow c10's scalar formulas bit for bit: div_floor is fmod, the quotient
(a - fmod) / b corrected down where the remainder's sign differs from b's, then
rounded to the nearest integer below; a / b where b == 0; a zero quotient takes
the sign of a / b. remainder is fmod plus b where their signs differ (a zero keeps
fmod's sign, the dividend's). Integers divide as Python does (floor), truncate
toward zero for div_trunc, and raise torch's RuntimeError("ZeroDivisionError") for
a zero divisor. Bools are torch's NotImplementedError.

Kernels compute the float forms (codegen's fg_div_floor, fg_div_trunc and
fg_remainder, the same formulas); integer ones run by their reference, which can
raise (a kernel cannot report a zero divisor). Rounded quotients have zero
gradients (torch's DivBackward2); remainder's are (g, -g * div_floor(a, b)).
With the attribute `no_derivative` (floor_divide, `a // b`, and remainder of a number
by a tensor, which torch records as NotImplemented nodes) the VJP raises torch's error.
"""
from __future__ import annotations

import numpy as np

from .elementwise import elementwise
from .registry import OTHER_THEN_SELF, NoDerivativeError


def _no_zero_divisor(a_shape: tuple, b) -> None:
    """torch's error for an integer division by zero (none where the result is empty)."""
    if np.any(b == 0) and all(np.broadcast_shapes(a_shape, np.shape(b))):
        raise RuntimeError("ZeroDivisionError")


def _div_floor_ref(a, b, no_derivative=None):
    if a.dtype.kind != "f":
        _no_zero_divisor(a.shape, b)
        return np.floor_divide(a, b)
    mod = np.fmod(a, b)
    div = (a - mod) / b
    div = np.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1, div)
    floordiv = np.floor(div)
    floordiv = np.where(div - floordiv > 0.5, floordiv + 1, floordiv)
    floordiv = np.where(div != 0, floordiv, np.copysign(np.zeros_like(div), a / b))
    return np.asarray(np.where(b == 0, a / b, floordiv), dtype=a.dtype)


def _div_trunc_ref(a, b):
    if a.dtype.kind != "f":
        _no_zero_divisor(a.shape, b)
        q = np.floor_divide(a, b)
        return q + ((np.remainder(a, b) != 0) & ((a < 0) != (b < 0)))
    return np.asarray(np.trunc(a / b), dtype=a.dtype)


def _remainder_ref(a, b, no_derivative=None):
    if a.dtype.kind != "f":
        _no_zero_divisor(a.shape, b)
        return np.remainder(a, b)
    mod = np.fmod(a, b)
    return np.asarray(np.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod), dtype=a.dtype)


def _check_derivative(attrs) -> None:
    """`no_derivative` (an attribute the caller sets): torch records a NotImplemented node for
    floor_divide and for remainder(number, tensor), whose backward raises."""
    if attrs.get("no_derivative"):
        raise NoDerivativeError(f"derivative for aten::{attrs['no_derivative']} is not implemented")


def _zero_grads(e, x, y, g, a, n):
    # torch's DivBackward2 with a rounding mode: zeros for both operands, from formulas that
    # read other (self's) and self and other (other's); torch saves what they read and its
    # node unpacks other, then self, so an in-place change of either before the backward raises
    _check_derivative(a)
    return [e.zeros_reading(g[0], x[1]) if n[0] else None, e.zeros_reading(g[0], x[1], x[0]) if n[1] else None]


def _remainder_vjp(e, x, y, g, a, n):
    # torch: self -> grad; other -> -grad * floor_divide(self, other)
    _check_derivative(a)
    return [g[0] if n[0] else None,
            e.neg(e.mul(g[0], e.op("div_floor", x[0], x[1]))) if n[1] else None]


def _check_now(in_types, arrays, attrs) -> None:
    """An integer divisor known at trace time (see registry.check_values_now)."""
    if arrays[1] is not None and not in_types[1].dtype.is_floating_point:
        _no_zero_divisor(in_types[0].shape, arrays[1])


# (integers raise torch's ZeroDivisionError on a zero divisor: see registry.VALUE_CHECKED)
_FLOAT_KERNELS = {"kernel_floats_only": True, "value_checks": lambda ins: not ins.inputs[1].dtype.is_floating_point,
                  "check_now": _check_now}
for _name, _ref, _vjp, _cpu in (("div_floor", _div_floor_ref, _zero_grads, "div_floor_cpu"),
                                ("div_trunc", _div_trunc_ref, _zero_grads, "div_trunc_cpu"),
                                ("remainder", _remainder_ref, _remainder_vjp, "remainder_cpu")):
    # (remainder's node unpacks other, then self; the rounding divisions' save nothing)
    elementwise(_name, _ref, _vjp, f"fg_{_name}({{0}}, {{1}})",
                bool_error=NotImplementedError(f"\"{_cpu}\" not implemented for 'Bool'"),
                extra={**_FLOAT_KERNELS, "unpack_order": OTHER_THEN_SELF} if _name == "remainder" else _FLOAT_KERNELS,
                doc=f"{_name}(a, b): torch's {_name.replace('_', ' ')} (see ir/ops/division.py)")
del _name, _ref, _vjp, _cpu
