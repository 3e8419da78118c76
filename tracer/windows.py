"""torch's window functions: hann_window, hamming_window, blackman_window, bartlett_window and
kaiser_window (aten/src/ATen/native/TensorFactories.cpp).

Each is a creation function: a new leaf tensor (requires_grad as asked), computed op for op as
torch computes it, in the result's dtype: `arange(N) * (2 pi / (N - 1))`, cos, times -beta,
plus alpha for hamming (and hann, hamming with alpha = beta = 0.5); torch's sum of two cosines
for blackman; torch's two straight halves for bartlett; and torch's kaiser kernel, per element
`I0(beta * sqrt(|1 - ((k - alpha) / alpha) ** 2|)) / I0(beta)` with torch's Cephes I0 in the
result's dtype, where GCC contracts `1 - r * r` and the Chebyshev recurrence into FMAs and
exp is libm's (bit for bit torch's, measured over thousands of lengths and betas). The
periodic forms are the symmetric window of N + 1 points without its last. The cosine
windows read fusegrad's cos (ir.rounded: the correctly rounded value), which is within an
ulp of torch's (Sleef's vectorised cos): their values differ from torch's by at most about
one float eps (an ulp of 1) where they differ at all. Bartlett and Kaiser windows are bit
for bit torch's.

torch's checks come in its order: the parser's TypeErrors (its printed overloads), then a
non-floating dtype (its text prints the TensorOptions), then a negative length. Length 0 is an
empty tensor and 1 is `[1.]`.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import math

import numpy as np

from fusegrad.ir import float32
from fusegrad.ir.fma import fma32, fma64
from fusegrad.ir.ops import OPS
from fusegrad.ir.ops.special import _I0E_A, _I0E_B

from .creation import _dtype_arg, _new
from .device import check_device
from .memory_format import strided
from .parser_errors import ArgParser

_CREATION = ("*, torch.dtype dtype = None, torch.layout layout = None, torch.device device = None, "
             "bool pin_memory = False, bool requires_grad = False")
_LENGTH = "(int window_length, " + _CREATION + ")"
_PERIODIC = "(int window_length, bool periodic, " + _CREATION + ")"

_PARSERS = {
    "hann_window": ArgParser("hann_window", _LENGTH, _PERIODIC),
    "hamming_window": ArgParser("hamming_window", _LENGTH, _PERIODIC,
                                "(int window_length, bool periodic, float alpha, " + _CREATION + ")",
                                "(int window_length, bool periodic, float alpha, float beta, " + _CREATION + ")"),
    "blackman_window": ArgParser("blackman_window", _LENGTH, _PERIODIC),
    "bartlett_window": ArgParser("bartlett_window", _LENGTH, _PERIODIC),
    "kaiser_window": ArgParser("kaiser_window", _LENGTH, _PERIODIC,
                               "(int window_length, bool periodic, float beta, " + _CREATION + ")"),
}

# TensorOptions' names of dtypes in torch's text
_OPTION_NAMES = {"float32": "float", "float64": "double", "int64": "long int", "bool": "bool"}


def _parsed(fn):
    """`fn` raising torch's parser TypeError (from its printed overloads) before anything else."""
    parser = _PARSERS[fn.__name__]

    @functools.wraps(fn)
    def window(*args, **kwargs):
        error = parser.error(args, kwargs)
        if error is not None:
            raise error
        return fn(*args, **kwargs)
    return window


def _options_text(dtype, layout, pin_memory) -> str:
    layout_text = "Strided (default)" if layout is None else "Strided"
    return (f"TensorOptions(dtype={_OPTION_NAMES.get(dtype.name, dtype.name)}, device=cpu, layout={layout_text}, "
            f"requires_grad=false (default), pinned_memory={'true' if pin_memory else 'false'}, "
            f"memory_format=(nullopt))")


def _checked_length(fn: str, window_length, dtype, layout, device, pin_memory) -> tuple:
    """(length, dtype) after torch's window_function_checks: a floating dtype, a length >= 0."""
    check_device(device)
    if layout is not None and layout is not strided:
        raise RuntimeError(f"{fn} is not implemented for sparse types, got: {layout}")
    dtype = _dtype_arg(fn, dtype) or float32
    if not dtype.is_floating_point:
        raise RuntimeError(f"{fn} expects floating point dtypes, got: {_options_text(dtype, layout, pin_memory)}")
    n = int(window_length)
    if n < 0:
        raise RuntimeError(f"{fn} requires non-negative window_length, got window_length={n}")
    return n, dtype


def _window(fn: str, window_length, periodic, dtype, layout, device, pin_memory, requires_grad, values):
    """The window tensor: `values(n, np_dtype)` of the symmetric window of n >= 2 points (n + 1
    without its last point when periodic), empty for length 0 and [1.] for length 1."""
    n, dtype = _checked_length(fn, window_length, dtype, layout, device, pin_memory)
    if n == 0:
        array = np.zeros((0,), dtype.np)
    elif n == 1:
        array = np.ones((1,), dtype.np)
    else:
        full = n + 1 if periodic else n
        array = values(full, dtype.np.type)
        if periodic:
            array = np.ascontiguousarray(array[:n])
    return _new(array, bool(requires_grad))


def _cos(x: np.ndarray) -> np.ndarray:
    return OPS["cos"].ref(x)


def _hamming_values(n: int, dt, alpha: float, beta: float) -> np.ndarray:
    # window.mul_(2 pi / (n - 1)).cos_().mul_(-beta).add_(alpha), each a kernel of its own
    w = np.arange(n, dtype=dt) * dt(math.pi * 2.0 / (n - 1))
    return _cos(w) * dt(-beta) + dt(alpha)


def _blackman_values(n: int, dt) -> np.ndarray:
    # window = arange * (pi / (n - 1)); 0.08 cos(4 window) - 0.5 cos(2 window) + 0.42
    w = np.arange(n, dtype=dt) * dt(math.pi / (n - 1))
    return _cos(w * dt(4)) * dt(0.08) - _cos(w * dt(2)) * dt(0.5) + dt(0.42)


def _bartlett_values(n: int, dt) -> np.ndarray:
    w = np.arange(n, dtype=dt) * dt(2.0 / (n - 1))
    half = ((n - 1) >> 1) + 1
    w[half:] = w[half:] * dt(-1) + dt(2)
    return w


_LIBM = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
_LIBM.expf.restype, _LIBM.expf.argtypes = ctypes.c_float, [ctypes.c_float]


def _libm_exp(x: np.ndarray) -> np.ndarray:
    """libm's exp (expf for float32), as torch's scalar kernel calls std::exp."""
    if x.dtype == np.float32:
        return np.array([_LIBM.expf(v) for v in x.tolist()], np.float32).reshape(x.shape)
    return np.array([math.exp(v) for v in x.tolist()], np.float64).reshape(x.shape)


def _chbevl(y: np.ndarray, coefficients, dt) -> np.ndarray:
    """Cephes' chbevl in dtype dt, `b0 = x * b1 - b2 + c` with GCC's contraction: fma(x, b1, -b2) + c."""
    fma = fma32 if dt is np.float32 else fma64
    cs = [dt(c) for c in coefficients]
    b0, b1, b2 = np.full_like(y, cs[0]), np.zeros_like(y), np.zeros_like(y)
    for c in cs[1:]:
        b2, b1 = b1, b0
        b0 = np.asarray(fma(y, b1, -b2), dt) + c
    return dt(0.5) * (b0 - b2)


def _i0(x: np.ndarray, dt) -> np.ndarray:
    """torch's calc_i0 (aten/src/ATen/native/Math.h) in dtype dt."""
    x = np.abs(x)
    near = x <= 8
    out = np.empty_like(x)
    a = x[near]
    out[near] = _libm_exp(a) * _chbevl(a / dt(2) - dt(2), _I0E_A, dt)
    b = x[~near]
    out[~near] = _libm_exp(b) * _chbevl(dt(32) / b - dt(2), _I0E_B, dt) / np.sqrt(b)
    return out


def _kaiser_values(n: int, dt, beta: float) -> np.ndarray:
    fma = fma32 if dt is np.float32 else fma64
    with np.errstate(all="ignore"):
        alpha = dt((n - 1) / 2.0)
        beta = dt(beta)
        r = (np.arange(n, dtype=dt) - alpha) / alpha
        # std::pow(r, 2) is r * r, and `1 - r * r` one FMA
        inner = np.abs(np.asarray(fma(-r, r, dt(1)), dt))
        return (_i0(beta * np.sqrt(inner), dt) / _i0(np.array([beta], dt), dt)).astype(dt)


@_parsed
def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                requires_grad=False):
    """torch.hann_window: 0.5 - 0.5 cos(2 pi k / (N - 1)) (periodic: N + 1 points without the
    last), float32 unless `dtype` is float64."""
    return _window("hann_window", window_length, periodic, dtype, layout, device, pin_memory, requires_grad,
                   lambda n, dt: _hamming_values(n, dt, 0.5, 0.5))


@_parsed
def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   pin_memory=False, requires_grad=False):
    """torch.hamming_window: alpha - beta cos(2 pi k / (N - 1)) (periodic: N + 1 points without the last)."""
    return _window("hamming_window", window_length, periodic, dtype, layout, device, pin_memory, requires_grad,
                   lambda n, dt: _hamming_values(n, dt, float(alpha), float(beta)))


@_parsed
def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    """torch.blackman_window: 0.42 - 0.5 cos(2 pi k / (N - 1)) + 0.08 cos(4 pi k / (N - 1))."""
    return _window("blackman_window", window_length, periodic, dtype, layout, device, pin_memory, requires_grad,
                   _blackman_values)


@_parsed
def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    """torch.bartlett_window: the triangular window 1 - |2k / (N - 1) - 1|."""
    return _window("bartlett_window", window_length, periodic, dtype, layout, device, pin_memory, requires_grad,
                   _bartlett_values)


@_parsed
def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  pin_memory=False, requires_grad=False):
    """torch.kaiser_window: I0(beta sqrt(1 - ((k - a) / a) ** 2)) / I0(beta), a = (N - 1) / 2."""
    return _window("kaiser_window", window_length, periodic, dtype, layout, device, pin_memory, requires_grad,
                   lambda n, dt: _kaiser_values(n, dt, float(beta)))

