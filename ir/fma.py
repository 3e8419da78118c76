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


def fma(a, b, c, dtype) -> np.ndarray:
    """a * b + c in NumPy dtype `dtype` (the operands already of it), rounded once for the
    floating dtypes; integer ones wrap around as torch's do."""
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return np.asarray(fma32(a, b, c), np.float32)
    if dtype == np.float64:
        return np.asarray(fma64(a, b, c), np.float64)
    with np.errstate(over="ignore"):
        return np.asarray(np.asarray(a, dtype) * np.asarray(b, dtype) + np.asarray(c, dtype), dtype)
