"""Large elementwise NumPy calls split into row blocks run on a few threads.

The reference implementations are NumPy calls, and NumPy runs a ufunc on one
core; torch's eager kernels use every intra-op thread. NumPy releases the GIL
inside a ufunc's loop over a large array, so a call on millions of elements can
be split along its first axis into blocks that threads compute at once (each
block writes its own rows of one output array). Every element is computed by the
same loop as before, so results are bit-identical to the one-call result; only
elementwise ufuncs are split (a reduction's summation order would change).

Used for eager ops and the reference executor (a tiered first call) on large
arrays. `FUSEGRAD_REF_THREADS` sets the thread count (default: the CPUs this
process may use, at most NUMBA_NUM_THREADS / OMP_NUM_THREADS when set, else at most
DEFAULT_MAX_THREADS); 1 turns it off.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .buffers import POOL
from .rounded import UFUNC_TYPES

# Below this many output elements one call is faster than handing blocks to threads
# (a thread hand-off costs tens of microseconds; a float32 multiply of 2**20
# elements takes about a millisecond).
MIN_ELEMENTS = 1 << 20

_lock = threading.Lock()
_local = threading.local()           # single: calls on this thread run in one piece (see single_threaded)
_pool: ThreadPoolExecutor | None = None
_pool_pid: int | None = None         # a forked child must not reuse its parent's (dead) workers


# More threads than this stop paying on one memory bus (a default, not a limit).
DEFAULT_MAX_THREADS = 8


def thread_count() -> int:
    """How many threads a large elementwise reference call uses (1: no splitting)."""
    for name in ("FUSEGRAD_REF_THREADS", "NUMBA_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(name, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value) if name == "FUSEGRAD_REF_THREADS" else min(int(value), cpus())
    return min(cpus(), DEFAULT_MAX_THREADS)


def cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _workers(n: int) -> ThreadPoolExecutor:
    global _pool, _pool_pid
    with _lock:
        if _pool is None or _pool_pid != os.getpid():
            _pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="fusegrad-ref")
            _pool_pid = os.getpid()
        return _pool


class single_threaded:
    """Context manager: reference calls on this thread are not split while inside it."""

    def __enter__(self):
        self._prev = getattr(_local, "single", False)
        _local.single = True
        return self

    def __exit__(self, *exc):
        _local.single = self._prev
        return False


def splittable(ufunc, arrays, out_type) -> bool:
    """Whether `ufunc(*arrays)` producing `out_type` is worth splitting: an elementwise
    ufunc of one output over at least MIN_ELEMENTS elements, with operands of one
    dtype and a result of that dtype (or bool), so no casting rule is involved."""
    if type(ufunc) not in UFUNC_TYPES or ufunc.nout != 1 or ufunc.nin != len(arrays) or not arrays:
        return False
    if getattr(_local, "single", False):
        return False
    shape = out_type.shape
    if not shape or out_type.numel < MIN_ELEMENTS or shape[0] < 2:
        return False
    dtype = arrays[0].dtype
    for a in arrays:
        if type(a) is not np.ndarray or a.dtype != dtype or a.ndim > len(shape):
            return False
    return out_type.dtype.np == dtype or out_type.dtype.np == np.bool_


def call(ufunc, arrays, out_type, fp_state, quiet, out=None, in_memory_order: bool = True) -> np.ndarray:
    """`ufunc(*arrays)` (into `out` if given) computed in row blocks on worker threads.
    `fp_state`/`quiet`: NumPy's error-state context variable and the state to set in
    each worker (a context variable does not follow a call into another thread).
    `in_memory_order`: loop in the memory order of `out` or else of the operands (memory_order)."""
    n = thread_count()
    shape = out_type.shape
    if type(ufunc) is not np.ufunc:
        ufunc = ufunc.for_elements(out_type.numel)      # (a RoundedUfunc: as one call would)
    if in_memory_order:
        order = memory_order(shape, arrays if out is None else [out, *arrays])
        if order is not None:
            # Operands laid out otherwise (a transpose): computed in their memory's order, into
            # a result laid out so too (torch's TensorIterator does the same), as one row-major
            # computation of the permuted views. Row-major over a transpose read one element a
            # page and then needed a second strided copy into the operands' layout: 40x slower.
            # (A given `out`, a dying operand's array, is laid out as the operands are.)
            permuted = permuted_operands(arrays, shape, order)
            result = call(ufunc, permuted, _Permuted(out_type, order), fp_state, quiet,
                          out=None if out is None else out.transpose(order), in_memory_order=False)
            return result.transpose(np.argsort(order))
    if out is None:
        # (from the buffer pool: a fresh 16 MiB result faulted in its 4096 pages on every eager
        # call, W1's eager value-and-grad 52-54 -> 44-47 ms with pooled results)
        out = POOL.empty(shape, out_type.dtype.np)
    if n < 2:
        return ufunc(*arrays, out=out)
    rows = shape[0]
    # An operand spanning the output's first axis is sliced with it; any other broadcasts whole.
    sliced = [a.ndim == len(shape) and a.shape[0] == rows for a in arrays]
    bounds = [rows * k // n for k in range(n + 1)]

    def block(lo: int, hi: int) -> None:
        args = [a[lo:hi] if s else a for a, s in zip(arrays, sliced)]
        if fp_state is None:
            with np.errstate(all="ignore"):
                ufunc(*args, out=out[lo:hi])
            return
        token = fp_state.set(quiet)
        try:
            ufunc(*args, out=out[lo:hi])
        finally:
            fp_state.reset(token)

    pool = _workers(n)
    futures = [pool.submit(block, bounds[k], bounds[k + 1]) for k in range(1, n)]
    block(bounds[0], bounds[1])
    for f in futures:
        f.result()
    return out


def memory_order(shape: tuple, arrays) -> list | None:
    """The dims of `shape`, slowest first, in which the first operand of that shape that is not
    row-major lies in memory (its strides, largest first; ties keep the dims' order), or None
    where every such operand is row-major: the order an elementwise loop should run in. An
    expand (a zero stride) has no memory order to follow and leaves it to the next operand, as
    in torch's TensorIterator: a backward's `g * y` of an expanded g and a transposed y runs in
    y's order (row-major, it read y one element a page: 10x slower)."""
    if len(shape) < 2:
        return None
    for a in arrays:
        if a.ndim == len(shape) and a.shape == shape and not a.flags.c_contiguous and 0 not in a.strides:
            order = sorted(range(a.ndim), key=lambda d: -abs(a.strides[d]))
            return order if order != list(range(a.ndim)) else None
    return None


def permuted_operands(arrays, shape: tuple, order: list) -> list:
    """The operands of an elementwise op of result `shape` as views with their dims in `order`
    (memory_order's): each broadcast to the result's shape first (a 0-d one kept as it is), so
    that a row-major loop over the views runs in the operands' memory order."""
    return [np.broadcast_to(a, shape).transpose(order) if a.ndim else a for a in arrays]


class _Permuted:
    """The output type of a call made on permuted views: its shape in that order."""

    def __init__(self, out_type, order):
        self.shape = tuple(out_type.shape[d] for d in order)
        self.dtype = out_type.dtype
        self.numel = out_type.numel


def splittable_rows(out: np.ndarray) -> bool:
    """Whether a row-independent computation producing `out` (each row along the first
    axis depends only on the same rows of its operands) is worth splitting into blocks
    of rows on threads."""
    return (out.ndim >= 1 and out.shape[0] >= 2 and out.size >= MIN_ELEMENTS and thread_count() > 1
            and not getattr(_local, "single", False))


def may_split() -> bool:
    """Whether a large call on this thread may run in blocks on threads (more than one thread,
    and not inside `single_threaded`)."""
    return thread_count() > 1 and not getattr(_local, "single", False)


def in_row_blocks(into, rows_independent=None):
    """`into(out, *arrays, **attrs)` split into blocks of rows on threads where `out` is large,
    every operand has its shape or is 0-d, and (`rows_independent(out, **attrs)`, for ops
    such as a softmax along one axis) each row of the result depends only on the same rows
    of the operands; else run in one piece. An elementwise writer (relu's, tanh_backward's:
    one that is not one ufunc call) needs no predicate: each element is computed on its
    own. Either way the result is bit-identical."""
    def split(out, *arrays, **attrs):
        if splittable_rows(out) and (rows_independent is None or rows_independent(out, **attrs)) \
                and all(a.ndim == 0 or a.shape == out.shape for a in arrays):
            by_rows(lambda lo, hi: into(out[lo:hi], *[a if a.ndim == 0 else a[lo:hi] for a in arrays], **attrs),
                    out.shape[0])
        else:
            into(out, *arrays, **attrs)
    split.__name__, split.__doc__ = into.__name__, into.__doc__
    return split


def by_rows(block, rows: int) -> None:
    """Run `block(lo, hi)` over [0, rows) cut into one block per thread, at once; each
    call must write only its own rows. Floating-point warnings are silenced in the
    workers, as in the reference calls they stand for."""
    n = min(thread_count(), rows)
    bounds = [rows * k // n for k in range(n + 1)]

    def quiet(lo: int, hi: int) -> None:
        with np.errstate(all="ignore"):
            block(lo, hi)

    pool = _workers(n)
    futures = [pool.submit(quiet, bounds[k], bounds[k + 1]) for k in range(1, n)]
    block(bounds[0], bounds[1])
    for f in futures:
        f.result()
