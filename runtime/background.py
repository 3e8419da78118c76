"""Background compilation: one worker thread that compiles kernels while calls
keep running on the reference executor (the tiered policy in runtime/compile.py).

    background.submit(job)          # run job() on the worker, in submission order
    background.wait_for_compiles()  # block until every submitted job has finished
    background.async_enabled()      # FUSEGRAD_ASYNC_COMPILE (default off)

One worker is enough: Numba compiles under a process-wide lock, so a second
worker would only wait. Jobs catch their own errors (a failed compile must
fall back, never raise into a later call); anything that escapes is logged.

`prewarm()` imports Numba and initialises its CPU target on the worker (about
1-2 s of Python work that every first kernel load in a process pays), so that
a later call whose kernels are all in the disk cache can load them at once.
`numba_ready()` says whether that has finished.
"""
from __future__ import annotations

import atexit
import os
import sys
import threading
from collections import deque

from . import stats

_cond = threading.Condition()
_jobs: deque = deque()
_unfinished = 0                   # queued + running
_thread: threading.Thread | None = None
_held: list = []                  # jobs waiting for release() (the call that queued them to end)
_numba_ready = threading.Event()
_prewarm_requested = False


class _Local(threading.local):
    synchronous = False     # a class-level default: no AttributeError raised and caught on each read


_local = _Local()


def async_enabled() -> bool:
    """FUSEGRAD_ASYNC_COMPILE (read at each decision). Off by default: a program's first
    call compiles its kernels, so counters and "the second call compiles nothing" are
    deterministic. '1' turns on tiered execution (reference while compiling in the background).
    `synchronous()` forces that for the calls inside it (explain() uses it to show kernels)."""
    if _local.synchronous:
        return False
    return os.environ.get("FUSEGRAD_ASYNC_COMPILE", "0").strip().lower() in ("1", "true", "yes", "on")


class synchronous:
    """Context manager: calls on this thread compile their kernels before running them."""

    def __enter__(self):
        self._prev = _local.synchronous
        _local.synchronous = True
        return self

    def __exit__(self, *exc):
        _local.synchronous = self._prev
        return False


def submit(job, hold: bool = False) -> None:
    """Queue `job()` for the worker thread (started on first use). With `hold`, the job
    waits for `release()`: a compiled call holds its compile jobs until it returns, so
    that its own reference run does not share the CPU (and the GIL) with the compiler."""
    global _unfinished, _thread
    with _cond:
        if hold:
            _held.append(job)
            _unfinished += 1
            return
        _jobs.append(job)
        _unfinished += 1
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_loop, name="fusegrad-compile", daemon=True)
            _thread.start()
        _cond.notify_all()


def release() -> None:
    """Start the jobs held by `submit(..., hold=True)`."""
    global _unfinished
    with _cond:
        if not _held:
            return
        jobs = list(_held)
        _held.clear()
        _unfinished -= len(jobs)
    for job in jobs:
        submit(job)


def _loop() -> None:
    global _unfinished
    while True:
        with _cond:
            while not _jobs:
                _cond.wait()
            job = _jobs.popleft()
        try:
            job()
        except BaseException as exc:     # jobs report their own failures; never kill the worker
            stats.logger.warning("fusegrad: background compile job failed: %s: %s", type(exc).__name__, exc)
        finally:
            with _cond:
                _unfinished -= 1
                _cond.notify_all()


def wait_for_compiles(timeout: float | None = None) -> bool:
    """Block until every background compile submitted so far has finished
    (`fg.wait_for_compiles()`); False if `timeout` seconds passed first."""
    release()
    with _cond:
        return _cond.wait_for(lambda: _unfinished == 0, timeout)


def pending() -> int:
    """Background jobs queued or running."""
    return _unfinished


# While the worker runs Python (importing Numba, loading a kernel), a call running on the
# reference executor waits for the GIL after every NumPy operation, up to the switch interval
# (5 ms by default) each time: measured, the warm first call of W1 took 0.09-0.18 s in full
# benchmark runs where it takes 0.03 s alone.
_MAIN_SWITCH_INTERVAL = 0.0002


class gil_to_caller:
    """While the worker is busy, make the GIL change hands quickly (a short switch interval),
    so that the calling thread's work (tracing, NumPy, kernels) does not queue behind the
    worker's Python work: with the default 5 ms interval, compiled calls made while a
    parallel variant compiled in the background took 2-5x their time (a permuted
    elementwise value+grad: 20-60 ms calls against 11 serial). Cheap when nothing is
    pending (one read): every compiled call enters it."""

    __slots__ = ("previous",)

    def __enter__(self):
        self.previous = None
        if _unfinished:
            self.previous = sys.getswitchinterval()
            sys.setswitchinterval(min(self.previous, _MAIN_SWITCH_INTERVAL))
        return self

    def __exit__(self, *exc):
        if self.previous is not None:
            sys.setswitchinterval(self.previous)
        return False


def numba_ready() -> bool:
    """Has Numba been imported and its CPU target initialised in this process?"""
    return _numba_ready.is_set()


def _init_numba() -> None:
    import numba  # noqa: F401
    from numba.core.registry import cpu_target
    cpu_target.target_context.refresh()       # loads every implementation registry once
    import fusegrad.codegen.vmath  # noqa: F401  (kernel modules import it)
    _numba_ready.set()


def prewarm() -> None:
    """Initialise Numba on the worker once per process (no-op when async compile is off)."""
    global _prewarm_requested
    if _prewarm_requested or _numba_ready.is_set() or not async_enabled():
        return
    _prewarm_requested = True
    submit(_init_numba)


def mark_numba_ready() -> None:
    """Called once a kernel has been compiled or loaded on any thread (Numba is initialised)."""
    _numba_ready.set()


def _drain_at_exit() -> None:
    # Drop queued jobs and let a running one finish, so no compile is cut off mid-write.
    global _unfinished
    with _cond:
        _unfinished -= len(_jobs) + len(_held)
        _jobs.clear()
        _held.clear()
        _cond.notify_all()
    wait_for_compiles(timeout=60)


atexit.register(_drain_at_exit)
stats.register_drain(wait_for_compiles)
