"""Fused multiply-add (a * b + c rounded once) on NumPy arrays, as the hardware FMA that
torch's CPU kernels use (explicitly, or where GCC contracts `x * y + z`): the values
fusegrad reproduces bit for bit need it (arange, linspace, random samples; add and sub
with alpha, lerp, addcmul and the optimizers' updates, whose kernels are FMAs in torch).
NumPy has no FMA ufunc; these are error-free transformations in float64."""
from __future__ import annotations

import numpy as np


def fma64(a, b, c) -> np.ndarray:
    """float64 a * b + c with (almost always) one rounding: the product's and the sum's
    rounding errors (Dekker's and Knuth's error-free transformations) are added back
    before the last rounding, which errs only on ties made by that rounding."""
    with np.errstate(all="ignore"):         # (an infinity makes NaN error terms: see below)
        return _fma64(*(np.asarray(v, np.float64) for v in (a, b, c)))


def _fma64(a, b, c):
    product = a * b
    a_high, a_low = _split(a)
    b_high, b_low = _split(b)
    product_error = ((a_high * b_high - product) + a_high * b_low + a_low * b_high) + a_low * b_low
    total = product + c
    back = total - product
    sum_error = (product - (total - back)) + (c - back)
    error = sum_error + product_error
    # (no error: the sum itself, whose zero keeps its sign, -0. * 0. + -0. is -0.; adding a
    # zero error would make it +0. A NaN error comes of an infinite operand or product: the
    # sum is IEEE's result there, inf or NaN.)
    return np.where((error == 0) | np.isnan(error), total, total + error)


def _split(x):
    """Veltkamp's split: x = high + low, each of 26 bits, so products of halves are exact."""
    scaled = 134217729.0 * x            # 2**27 + 1
    high = scaled - (scaled - x)
    return high, x - high


def fma32(a, b, c) -> np.ndarray:
    """float32 a * b + c rounded once. The product of two float32 is exact in float64, and
    so is the sum's rounding error (TwoSum); the float64 sum rounded to float32 is the
    correctly rounded result except where that sum lies exactly halfway between two
    float32 (its 29 bits beyond float32 are 1000...0) while the exact sum is not: there the
    error's sign picks the neighbour (about 2**-29 of random operands)."""
    with np.errstate(all="ignore"):
        blocks = _flat_blocks(a, b, c)
        if blocks is None:
            return _fma32(a, b, c)
        shape, flat = blocks
        out = np.empty(shape, np.float32)
        into = out.reshape(-1)
        for start in range(0, into.size, _BLOCK):
            part = slice(start, start + _BLOCK)
            into[part] = _fma32(*(x if x.ndim == 0 else x[part] for x in flat))
        return out


# Large operands are worked in blocks of this many elements: the float64 temporaries of a
# block stay in cache and in reused memory (fresh arrays of a million elements cost their
# page faults: 200k float32 elements took 1.7 ms in one pass, 0.5 ms in blocks).
_BLOCK = 16384


def _flat_blocks(a, b, c):
    """(shape, the operands flattened) where they are long enough to work in blocks and each
    is a row-major array of the result's shape or a single number; else None."""
    arrays = [np.asarray(x) for x in (a, b, c)]
    shape = max((x.shape for x in arrays), key=len)
    size = int(np.prod(shape, dtype=np.int64))
    if size < 2 * _BLOCK or not all(x.ndim == 0 or (x.shape == shape and x.flags.c_contiguous) for x in arrays):
        return None
    return shape, [x if x.ndim == 0 else x.reshape(-1) for x in arrays]


def _fma32(a, b, c):
    total = np.asarray(np.multiply(a, b, dtype=np.float64))    # (the operands are float32: exact)
    if total.ndim and np.shape(c) == total.shape:
        np.add(total, c, out=total)
    else:
        total = np.asarray(np.add(total, c, dtype=np.float64))
    result = total.astype(np.float32)
    # halfway: the 29 bits below float32's last are 1000...0, which a left shift by 35 turns
    # into the least int64 (one pass and a min, where a mask and a compare take three)
    if total.size and np.left_shift(total.view(np.int64), 35).min() == _LEAST_INT64:
        product = np.multiply(a, b, dtype=np.float64)
        c = np.asarray(c, np.float64)
        back = total - product
        error = (product - (total - back)) + (c - back)   # total + error == product + c exactly
        halfway = np.left_shift(total.view(np.int64), 35) == _LEAST_INT64
        nudged = np.where(error > 0, np.nextafter(total, np.inf), np.nextafter(total, -np.inf))
        result = np.where(halfway & (error != 0), nudged, total).astype(np.float32)
    return result if result.ndim else result[()]


_LEAST_INT64 = np.iinfo(np.int64).min


# Operands at least JIT_FROM long (row-major arrays of the result's shape, or one number as
# the second factor) are computed by a compiled loop (ir/fma_jit.py) once a process has made
# JIT_AFTER such calls: a single pass where the NumPy emulation makes float64 temporaries
# (an SGD step of 200k float32 parameters: 0.06 against 0.43 ms). Not from the first call:
# the first Numba call of a process costs about 0.4 s (its machinery, even with the loop
# cached on disk), which an eager program's first steps should not pay; a training loop
# pays it once, after JIT_AFTER steps of a large update. Shorter operands stay in NumPy,
# whose emulation tests check against exact arithmetic; the bits are the same either way.
JIT_FROM = 1 << 15
JIT_AFTER = 64
_LARGE_CALLS = [0]


def fma(a, b, c, dtype) -> np.ndarray:
    """a * b + c in NumPy dtype `dtype` (the operands already of it), rounded once for the
    floating dtypes; integer ones wrap around as torch's do."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        compiled = _compiled_fma(a, b, c, dtype)
        if compiled is not None:
            return compiled
    if dtype == np.float32:
        return np.asarray(fma32(a, b, c), np.float32)
    if dtype == np.float64:
        return np.asarray(fma64(a, b, c), np.float64)
    with np.errstate(over="ignore"):
        return np.asarray(np.asarray(a, dtype) * np.asarray(b, dtype) + np.asarray(c, dtype), dtype)


def _compiled_fma(a, b, c, dtype):
    """a * b + c by ir/fma_jit.py's loops where the operands suit them (see JIT_FROM), else None."""
    if np.ndim(a) == 0 and np.ndim(b) > 0:
        a, b = b, a                         # (the number as the second factor)
    if not (type(a) is np.ndarray and type(c) is np.ndarray and a.size >= JIT_FROM and a.shape == c.shape
            and a.dtype == dtype and c.dtype == dtype and a.flags.c_contiguous and c.flags.c_contiguous):
        return None
    _LARGE_CALLS[0] += 1
    if _LARGE_CALLS[0] <= JIT_AFTER:
        return None
    from . import fma_jit
    out = np.empty(a.shape, dtype)
    if np.ndim(b) == 0:
        fma_jit.fma_scaled(out.reshape(-1), a.reshape(-1), dtype.type(b), c.reshape(-1))
    elif type(b) is np.ndarray and b.shape == a.shape and b.dtype == dtype and b.flags.c_contiguous:
        fma_jit.fma_arrays(out.reshape(-1), a.reshape(-1), b.reshape(-1), c.reshape(-1))
    else:
        return None
    return out
