"""torch's process-wide settings and dtype facts: finfo/iinfo, thread counts, deterministic
algorithms, the default device, float32 matmul precision, warn-always.

What each changes here: set_num_threads sets the threads of fusegrad's parallel kernels (Numba's,
at most NUMBA_NUM_THREADS; NumPy's BLAS keeps its own); fusegrad's kernels and reductions are
deterministic, so use_deterministic_algorithms only records the flag torch reports back; the
float32 matmul precision is recorded (NumPy's BLAS always computes in full float32 precision);
the default device can only be the CPU.
"""
from __future__ import annotations

import numpy as np

from fusegrad.ir.types import DType, bool_, float32
from fusegrad.tracer.device import check_device
from fusegrad.tracer.parser_errors import type_name

__all__ = ["finfo", "iinfo", "get_num_threads", "set_num_threads", "get_num_interop_threads",
           "set_num_interop_threads", "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "get_deterministic_debug_mode",
           "set_deterministic_debug_mode", "get_default_device", "set_default_device",
           "get_float32_matmul_precision", "set_float32_matmul_precision", "set_warn_always",
           "is_warn_always_enabled", "is_storage"]


def _dtype_argument(fn: str, type) -> DType:
    if type is None:
        return float32
    if not isinstance(type, DType):
        raise TypeError(f"{fn}(): argument 'type' (position 1) must be torch.dtype, not {type_name(type)}")
    return type


_MISSING = object()


class finfo:
    """torch.finfo(type=fg.float32): the machine limits of a floating dtype (bits, eps, max,
    min, tiny = smallest_normal, resolution; `dtype` its name), printed and compared as torch's."""

    def __hash__(self):
        # (as torch's: compared by value, not hashable)
        raise TypeError("unhashable type: 'torch.finfo'")

    def __init__(self, type=None) -> None:
        dtype = _dtype_argument("finfo", type)
        if not dtype.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            "'torch.finfo'")
        info = np.finfo(dtype.np)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = float(info.resolution)
        self.dtype = dtype.name

    def __eq__(self, other) -> bool:
        return isinstance(other, finfo) and vars(self) == vars(other)

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """torch.iinfo(type): the limits of an integer dtype (bits, max, min; `dtype` its name)."""

    def __hash__(self):
        raise TypeError("unhashable type: 'torch.iinfo'")

    def __init__(self, type=_MISSING) -> None:
        if type is _MISSING:
            raise TypeError('iinfo() missing 1 required positional arguments: "type"')
        dtype = _dtype_argument("iinfo", type)
        if dtype is bool_:
            raise TypeError(f"{dtype!r} is not supported by torch.iinfo")
        if dtype.is_floating_point:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        info = np.iinfo(dtype.np)
        self.bits, self.max, self.min = int(info.bits), int(info.max), int(info.min)
        self.dtype = dtype.name

    def __eq__(self, other) -> bool:
        return isinstance(other, iinfo) and vars(self) == vars(other)

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


# ---------------------------------------------------------------- threads

def _thread_count(value, fn: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise RuntimeError(f"{fn} expects an int, but got {type_name(value)}")
    if value <= 0:
        raise RuntimeError(f"{fn} expects a positive integer")
    return int(value)


def get_num_threads() -> int:
    """torch.get_num_threads: the threads fusegrad's parallel kernels use."""
    import numba
    return numba.get_num_threads()


def set_num_threads(nthreads) -> None:
    """torch.set_num_threads: the threads of fusegrad's parallel kernels from now on (Numba's
    pool; capped at its size, NUMBA_NUM_THREADS; NumPy's BLAS keeps its own count)."""
    import numba
    n = _thread_count(nthreads, "set_num_threads")
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))


_INTEROP_THREADS = [None]


def get_num_interop_threads() -> int:
    """torch.get_num_interop_threads: recorded only (fusegrad runs no inter-op pool); by
    default the kernels' thread count, as torch's default is its intra-op count."""
    return _INTEROP_THREADS[0] if _INTEROP_THREADS[0] is not None else get_num_threads()


def set_num_interop_threads(nthreads) -> None:
    """torch.set_num_interop_threads: recorded (see get_num_interop_threads)."""
    _INTEROP_THREADS[0] = _thread_count(nthreads, "set_num_interop_threads")


# ---------------------------------------------------------------- flags torch reports back

_DETERMINISTIC = {"enabled": False, "warn_only": False}


def use_deterministic_algorithms(mode, *, warn_only: bool = False) -> None:
    """torch.use_deterministic_algorithms: fusegrad's algorithms are deterministic already
    (fixed loop orders and fixed chunks for the parallel reductions); the flags are kept for
    are_deterministic_algorithms_enabled and kin."""
    if not isinstance(mode, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'mode' (position 1) must be bool, "
                        f"not {type_name(mode)}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'warn_only' must be bool, not "
                        f"{type_name(warn_only)}")
    _DETERMINISTIC.update(enabled=mode, warn_only=mode and warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    """torch.are_deterministic_algorithms_enabled: the flag use_deterministic_algorithms set."""
    return _DETERMINISTIC["enabled"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """torch.is_deterministic_algorithms_warn_only_enabled."""
    return _DETERMINISTIC["warn_only"]


def get_deterministic_debug_mode() -> int:
    """torch.get_deterministic_debug_mode: 0 (off), 1 (warn) or 2 (error), from the flags."""
    if not _DETERMINISTIC["enabled"]:
        return 0
    return 1 if _DETERMINISTIC["warn_only"] else 2


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode) -> None:
    """torch.set_deterministic_debug_mode: "default"/0, "warn"/1 or "error"/2."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, int):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(bool(debug_mode > 0), warn_only=bool(debug_mode == 1))


def get_default_device():
    """torch.get_default_device: always the CPU here."""
    from fusegrad.tracer.device import device
    return device("cpu")


def set_default_device(device) -> None:
    """torch.set_default_device: the CPU (or None) is accepted; another device raises as the
    device arguments of the creation functions do."""
    if device is not None:
        check_device(device)


_MATMUL_PRECISION = ["highest"]


def get_float32_matmul_precision() -> str:
    """torch.get_float32_matmul_precision: the value last set ("highest" by default)."""
    return _MATMUL_PRECISION[0]


def set_float32_matmul_precision(precision) -> None:
    """torch.set_float32_matmul_precision: recorded ("highest", "high" or "medium"; NumPy's
    BLAS always multiplies in full float32). Another string warns and changes nothing, as torch."""
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got {type_name(precision)}")
    if precision not in ("highest", "high", "medium"):
        import warnings
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the "
                      "currentsetFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _MATMUL_PRECISION[0] = precision


_WARN_ALWAYS = [False]


def set_warn_always(b) -> None:
    """torch.set_warn_always: recorded (fusegrad's once-only warnings go through Python's
    warnings filters)."""
    if not isinstance(b, bool):
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {type_name(b)}")
    _WARN_ALWAYS[0] = b


def is_warn_always_enabled() -> bool:
    """torch.is_warn_always_enabled: the flag set_warn_always set."""
    return _WARN_ALWAYS[0]


def is_storage(obj) -> bool:
    """torch.is_storage: fusegrad has no storage objects, so always False."""
    return False

