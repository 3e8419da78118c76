"""torch's check that a Python number fits the dtype it is written into (c10's checked_convert).

`fg.full((2,), 1e300)`, `t.fill_(nan)` on int64, `t[0] = 1e30` on int64: torch raises
"value cannot be converted to type ... without overflow" where NumPy would store inf, or
the minimum integer, without a word. Rounding is not an overflow (2.5 into int64 is 2), nor
is inf or nan into a floating dtype.
"""
from __future__ import annotations

import math

import numpy as np

from fusegrad.ir import bool_, float32, float64, int64

_FLOAT32_MAX = float(np.finfo(np.float32).max)
_INT64_BOUND = 2 ** 63


def check_int_parses(value) -> None:
    """torch's argument parser reads a Python int Scalar (x * n, t.fill_(n)) as a C long long,
    or an unsigned one above int64: one beyond both is its OverflowError, whatever the tensor's
    dtype (2**63 passes the parser; int64's own check then refuses it)."""
    if type(value) is int and not -_INT64_BOUND <= value < 2 * _INT64_BOUND:
        # (below int64 the parser's second try, as an unsigned long long, is what fails)
        raise OverflowError("int too big to convert" if value > 0 else "can't convert negative int to unsigned")


def check_setitem_int(value) -> None:
    """t[idx] = n with a Python int beyond int64: torch's ValueError, whatever t's dtype."""
    if type(value) is int and not -_INT64_BOUND <= value < _INT64_BOUND:
        raise ValueError("Overflow when unpacking long long")


def check_scalar_fits(value, dtype, int_name: str = "int64_t") -> None:
    """Raise torch's RuntimeError if the Python (or NumPy) number `value` overflows `dtype`;
    `int_name`: how torch names int64 in the message ("int64" for torch.tensor's data)."""
    if isinstance(value, (bool, np.bool_)):
        return
    if dtype is int64:
        if isinstance(value, (int, np.integer)):
            fits = -_INT64_BOUND <= int(value) < _INT64_BOUND
        else:
            v = float(value)
            fits = math.isfinite(v) and -_INT64_BOUND <= v < _INT64_BOUND
        if not fits:
            raise RuntimeError(f"value cannot be converted to type {int_name} without overflow")
    elif dtype is float32:
        try:
            v = float(value)
        except OverflowError:               # an int beyond float64
            v = math.inf if value > 0 else -math.inf
            fits = False
        else:
            fits = not math.isfinite(v) or abs(v) <= _FLOAT32_MAX
        if not fits:
            raise RuntimeError("value cannot be converted to type float without overflow")


def check_tensor_value_fits(value, dtype) -> None:
    """check_scalar_fits for the one element of a tensor written as a number (masked_fill's
    0-d value: torch takes its item()), where its value is known now (eagerly, or made
    outside a compiled call); a value computed in a compiled call is not checked."""
    if value._dtype is dtype or value._sym is not None or value._data is None or value._data.size != 1:
        return
    check_scalar_fits(value._data.reshape(()).item(), dtype)


_C_TYPE_NAMES = {float32: "float", float64: "double", int64: "int64_t"}


def written_number(value, dtype):
    """A number written into a tensor of `dtype` (fill_, t[i] = v, masked_fill): a complex one
    converts as torch's: to bool by being nonzero, else to its real part where its imaginary
    part is zero, and raises otherwise (fusegrad has no complex dtype; this is the one place
    a complex number is taken)."""
    if not isinstance(value, (complex, np.complexfloating)):
        return value
    if dtype is bool_:
        return bool(value)
    if value.imag != 0:
        raise RuntimeError(f"value cannot be converted to type {_C_TYPE_NAMES[dtype]} without overflow")
    return float(value.real)

