"""Cache counters (`fg.cache_info()`) and `fg.clear_caches()`.

Counters are cumulative since the last `clear_caches()`; compare two snapshots
to see what a call did. `clear_caches()` empties the in-memory program and
kernel caches (the disk cache is left alone) and zeroes the counters, as
functools' `cache_clear()` clears a cache and its statistics.
"""
from __future__ import annotations

import logging
import os
import sys
import threading
from dataclasses import dataclass, fields
from typing import Callable

logger = logging.getLogger("fusegrad")


@dataclass(frozen=True)
class CacheInfo:
    """A snapshot of fusegrad's compile caches.

    hits / misses: program-cache lookups (program structure + shapes), including a
    small program after a graph break, which runs on the reference executor and
    compiles nothing, and a call that runs eagerly by the cached decision (a hit);
    kernels_compiled: Numba compilations of a kernel specialisation;
    disk_hits: kernel specialisations loaded from the disk cache instead;
    compile_seconds: time spent compiling or loading kernels (not their
    parallel variants);
    background_compiles: programs handed to the background compile thread;
    reference_calls: compiled-function calls that ran on the reference
    executor (small programs, or while their kernels compiled);
    parallel_variants: parallel (prange) variants of kernels that already ran,
    compiled or loaded (mostly on the background thread, once the executor
    measures that a kernel is large enough to split): kept apart so that
    kernels_compiled and disk_hits do not move during later calls.
    """
    hits: int = 0
    misses: int = 0
    kernels_compiled: int = 0
    disk_hits: int = 0
    compile_seconds: float = 0.0
    background_compiles: int = 0
    reference_calls: int = 0
    parallel_variants: int = 0


# The counters, kept mutable (a compiled call that hits the cache counts one: building a new
# frozen CacheInfo each time cost microseconds); cache_info() snapshots them.
_counts: dict = {f.name: f.default for f in fields(CacheInfo)}
_clearers: list = []
_drains: list = []
_count_lock = threading.Lock()     # counters change on the background compile thread too


def cache_info() -> CacheInfo:
    """The counters now (an immutable snapshot)."""
    with _count_lock:
        return CacheInfo(**_counts)


def clear_caches() -> None:
    """Empty the in-memory program and kernel caches and zero the counters (functools'
    cache_clear semantics); waits for background compiles first, so none fills a cache
    or counts after it is emptied."""
    for drain in _drains:
        drain()
    for clear in _clearers:
        clear()
    with _count_lock:
        _counts.update({f.name: f.default for f in fields(CacheInfo)})


def register_clearer(fn: Callable[[], None]) -> None:
    """Let a cache module empty itself when `clear_caches()` runs."""
    if fn not in _clearers:
        _clearers.append(fn)


def register_drain(fn: Callable[[], None]) -> None:
    """Let a module finish its background work before `clear_caches()` empties the caches."""
    if fn not in _drains:
        _drains.append(fn)


def count(**deltas) -> None:
    """Add to counters, e.g. count(hits=1) or count(kernels_compiled=1, compile_seconds=0.4)."""
    with _count_lock:
        for k in deltas:
            if k not in _counts:
                raise AttributeError(f"'CacheInfo' object has no attribute '{k}'")
        for k, v in deltas.items():
            _counts[k] += v


def compile_log_enabled() -> bool:
    """FUSEGRAD_LOG=compile (read at each call) logs every kernel compile to stderr."""
    wanted = "compile" in os.environ.get("FUSEGRAD_LOG", "").replace(",", " ").split()
    if wanted and not any(getattr(h, "_fusegrad", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("fusegrad: %(message)s"))
        handler._fusegrad = True
        logger.addHandler(handler)
    if wanted and logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    return wanted


def log_compile(message: str, *args) -> None:
    """Log a compile event (logging-style `message % args`) when FUSEGRAD_LOG=compile."""
    if compile_log_enabled():
        logger.info(message, *args)
