"""Fused multiply-add (a * b + c rounded once) on NumPy arrays, as the hardware FMA that
torch's CPU kernels use (explicitly, or where GCC contracts `x * y + z`): the values
fusegrad reproduces bit for bit (arange, linspace, random samples) need it."""
from __future__ import annotations

import numpy as np


def fma64(a, b, c) -> np.ndarray:
    """float64 a * b + c with (almost always) one rounding: the product's and the sum's
    rounding errors (Dekker's and Knuth's error-free transformations) are added back
    before the last rounding, which errs only on ties made by that rounding."""
    a, b, c = (np.asarray(v, np.float64) for v in (a, b, c))
    product = a * b
    a_high, a_low = _split(a)
    b_high, b_low = _split(b)
    product_error = ((a_high * b_high - product) + a_high * b_low + a_low * b_high) + a_low * b_low
    total = product + c
    back = total - product
    sum_error = (product - (total - back)) + (c - back)
    error = sum_error + product_error
    # (no error: the sum itself, whose zero keeps its sign, -0. * 0. + -0. is -0.; adding a
    # zero error would make it +0.)
    return np.where(error == 0, total, total + error)


def _split(x):
    """Veltkamp's split: x = high + low, each of 26 bits, so products of halves are exact."""
    scaled = 134217729.0 * x            # 2**27 + 1
    high = scaled - (scaled - x)
    return high, x - high


def fma32(a, b, c) -> np.ndarray:
    """float32 a * b + c rounded once: the product of two float32 is exact in double, and the
    double sum rounded to float32 differs from one rounding only when its 29 bits beyond
    float32 round to exactly half an ulp (about 2**-29 of random inputs)."""
    product = np.multiply(a, b, dtype=np.float64)        # (the operands are float32: exact)
    return np.add(product, c, out=product).astype(np.float32)
