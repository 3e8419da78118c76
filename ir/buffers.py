"""Memory for the arrays fusegrad writes (compiled kernel and BLAS outputs, eager ufunc results),
reused across calls.

Why: a fresh array of a few hundred KiB to a few MiB is, with glibc's malloc, a new
mapping (or heap memory that the previous call's frees gave back to the kernel), and
every 4 KiB page of it faults on first write. On this project's 2-core VM a fault costs
about 2.3 us: a training step that allocates three 2 MiB activations spent 3.5 ms of its
7.8 ms in the kernel's page-fault handler (1504 faults per step; torch eager's step took
2.3 ms). Reusing the buffers of earlier calls moves no pages at all.

How: the pool owns one flat array per buffer, grouped by (element count, dtype), and
hands out reshaped views of it. A buffer is free exactly when nothing but the pool
refers to it: every array made from it (the view handed out, and any NumPy view of
that: a transpose, a slice, a tensor's `.numpy()`) keeps a reference to the flat array
as its `.base`, so its reference count says whether anyone can still read or write it.
A call's intermediates thus come back as soon as the executor drops them, and the
outputs a caller keeps (a result, a `.grad`, a value saved for backward) stay theirs
for as long as they are alive; nothing is ever handed out twice.

Compiled programs' buffers of 2 MiB or more (`empty(..., huge_pages=True)`) are each an
anonymous mapping of their own, aligned to 2 MiB and marked for transparent huge pages
before their first write (`_huge_page_flat`), not glibc's memory: once a process has freed
a large array, glibc serves arrays up to 32 MiB from its heap, memory already mapped in
4 KiB pages, and a kernel streaming rows of 4 KiB through such memory runs without the
hardware prefetchers, which stop at page boundaries. W2's compiled call took 6.9-8.0 ms in
a process that had run W2 eagerly first, 2.9-4.3 ms in a fresh one, and 2.9-3.8 ms after
the eager runs with its buffers on huge pages. Eager results keep glibc's memory, in
buckets of their own: with their buffers as mappings of their own, glibc's heap gave more
memory back to the system between calls, and W2's eager call took 3000 more page faults.
(`FUSEGRAD_HUGE_PAGES=0` turns huge pages off.)

Only arrays of 64 KiB to 32 MiB are pooled (below, malloc reuses memory the process keeps;
above, fresh memory comes in huge pages).

What it costs: the pool keeps up to `FUSEGRAD_BUFFER_POOL_MB` (default 512) MiB of
buffers, in use or free; beyond that, allocations fall back to `np.empty` after free
buffers of other sizes are released. Free buffers stay resident between calls (that is
the point), so a process's resident memory stays at its steady-state working set instead
of rising and falling each call. `FUSEGRAD_BUFFER_POOL_MB=0` turns the pool off;
`fg.clear_caches()` releases its free buffers.
"""
from __future__ import annotations

import ctypes
import mmap
import os
import sys
import threading

import numpy as np


# Below this size malloc serves arrays from memory the process keeps (no faults), and a
# reused buffer would save nothing.
MIN_POOLED_BYTES = 1 << 16
# Above this size glibc always maps fresh memory and NumPy asks for transparent huge pages
# (one fault per 2 MiB), so a fresh array is cheap again, while a kept buffer would pin
# a lot of memory.
MAX_POOLED_BYTES = 1 << 25
DEFAULT_LIMIT_MB = 512


def _references(bucket: list, k: int) -> int:
    return sys.getrefcount(bucket[k])


def _free_count() -> int:
    """What `_references` reads for a buffer only its bucket holds (interpreters differ in
    how many references a call's argument adds, so it is measured, not assumed)."""
    bucket = [np.empty(1)]
    return _references(bucket, 0)


_FREE = _free_count()


HUGE_PAGE_BYTES = 1 << 21
_HUGE_PAGES = os.environ.get("FUSEGRAD_HUGE_PAGES", "1").strip().lower() not in ("0", "false", "no", "off") \
    and sys.platform.startswith("linux") and hasattr(mmap, "MADV_HUGEPAGE")


def _huge_page_flat(numel: int, dtype: np.dtype) -> np.ndarray:
    """A flat array of `numel` elements over a fresh anonymous mapping, started at a 2 MiB
    boundary and advised for transparent huge pages before anything touches it (see the
    module's docstring); np.empty where the system refuses."""
    nbytes = numel * dtype.itemsize
    try:
        memory = mmap.mmap(-1, nbytes + HUGE_PAGE_BYTES, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        memory.madvise(mmap.MADV_HUGEPAGE)
        start = ctypes.addressof(ctypes.c_char.from_buffer(memory))
    except (OSError, ValueError, TypeError):        # (no such advice here: glibc's memory)
        return np.empty(numel, dtype)
    # (the array keeps the mapping alive as its base; the mapping is unmapped with the array)
    return np.frombuffer(memory, dtype, count=numel, offset=(-start) % HUGE_PAGE_BYTES)


def _limit_from_env() -> int:
    text = os.environ.get("FUSEGRAD_BUFFER_POOL_MB", "").strip()
    try:
        mb = float(text) if text else DEFAULT_LIMIT_MB
    except ValueError:
        mb = DEFAULT_LIMIT_MB
    return max(0, int(mb * (1 << 20)))


class BufferPool:
    """Reusable flat buffers, handed out as arrays of a requested shape and dtype."""

    def __init__(self, limit_bytes: int):
        self.limit_bytes = limit_bytes
        self.held_bytes = 0            # bytes of all buffers the pool owns, in use or free
        self.reused = 0                # arrays served from a free buffer
        self._buckets: dict = {}       # (numel, dtype, huge_pages) -> [flat arrays]
        self._lock = threading.Lock()

    def empty(self, shape: tuple, dtype, huge_pages: bool = False) -> np.ndarray:
        """An uninitialised C-contiguous array of `shape` and `dtype` (as `np.empty`); with
        `huge_pages`, a buffer on transparent huge pages where it is 2 MiB or more."""
        numel = 1
        for n in shape:
            numel *= n
        dtype = np.dtype(dtype)
        nbytes = numel * dtype.itemsize
        if nbytes < MIN_POOLED_BYTES or nbytes > MAX_POOLED_BYTES or not self.limit_bytes:
            return np.empty(shape, dtype)
        huge_pages = huge_pages and _HUGE_PAGES and nbytes >= HUGE_PAGE_BYTES
        key = (numel, dtype, huge_pages)
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = self._buckets[key] = []
            for k in range(len(bucket)):
                if _references(bucket, k) == _FREE:
                    self.reused += 1
                    return bucket[k].reshape(shape)
            if self.held_bytes + nbytes > self.limit_bytes:
                self._release_free(self.held_bytes + nbytes - self.limit_bytes)
                if self.held_bytes + nbytes > self.limit_bytes:
                    return np.empty(shape, dtype)
            flat = _huge_page_flat(numel, dtype) if huge_pages else np.empty(numel, dtype)
            bucket.append(flat)
            self.held_bytes += nbytes
            return flat.reshape(shape)

    def holds(self, array: np.ndarray) -> bool:
        """Whether `array` is one of the pool's flat buffers (the `.base` of what `empty` hands
        out): nothing but the pool and the views made of it refers to its memory."""
        with self._lock:
            return any(flat is array for huge_pages in (False, True)
                       for flat in self._buckets.get((array.size, array.dtype, huge_pages), ()))

    def _release_free(self, nbytes: int) -> None:
        """Drop free buffers until `nbytes` are released or none is left (lock held)."""
        for key in list(self._buckets):
            bucket = self._buckets[key]
            k = 0
            while k < len(bucket) and nbytes > 0:
                if _references(bucket, k) == _FREE:
                    size = bucket[k].nbytes
                    del bucket[k]
                    self.held_bytes -= size
                    nbytes -= size
                else:
                    k += 1
            if not bucket:
                del self._buckets[key]
            if nbytes <= 0:
                return

    def release_free(self) -> None:
        """Give every free buffer back (buffers still in use stay the caller's)."""
        with self._lock:
            self._release_free(self.held_bytes)


# One pool for the process: compiled programs' kernel and BLAS outputs (runtime/executor.py)
# and eager ufunc results (tracer/dispatch.py). runtime registers its release with clear_caches().
POOL = BufferPool(_limit_from_env())
