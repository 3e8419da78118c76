"""Timing, deadlines, copy bandwidth and peak-memory readings shared by every benchmark cell.

Every framework is timed by the same code: one timed first call, a few warm-up
calls, then samples of `calls_per_sample` back-to-back calls (so that a 20 us
call is timed over many calls, not against the clock's resolution), reporting
the median time of one call.  The garbage collector is off inside a sample, as
`timeit` does, so a collection triggered by one framework's garbage is not
billed to whichever call happens to run next; it runs between samples.  (No
explicit gc.collect(): with torch.compile loaded one takes about half a second.)
"""
import gc
import math
import sys
import resource
import signal
import statistics
import time
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Plan:
    """How hard to time one cell: warm-up calls, the shortest sample, repeats and a time budget."""
    warmup_calls: int
    min_sample_s: float
    max_repeats: int
    budget_s: float
    min_repeats: int = 3


FULL_PLAN = Plan(warmup_calls=3, min_sample_s=0.05, max_repeats=21, budget_s=4.0)
QUICK_PLAN = Plan(warmup_calls=1, min_sample_s=0.005, max_repeats=3, budget_s=0.2, min_repeats=2)


@dataclass(frozen=True)
class Timing:
    """Result of timing one callable: its first call, and the median and fastest of the
    later samples (seconds per call)."""
    first_s: float
    median_s: float
    min_s: float
    repeats: int
    calls_per_sample: int

    def per_call(self, statistic):
        """Seconds per call by `statistic`, "median" or "min"."""
        return {"median": self.median_s, "min": self.min_s}[statistic]


def timed_call(fn):
    """Call fn() once; return (seconds, its result)."""
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def _sample(fn, calls):
    """Seconds per call over `calls` back-to-back calls, with the collector paused."""
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - start) / calls
    finally:
        if gc_was_on:
            gc.enable()


def settle_background_compiles(fn, rounds: int = 4):
    """fusegrad's first calls run on its reference executor while kernels compile
    in the background, and a large kernel's parallel variant is compiled and
    measured over its next calls; steady-state timing starts once those are done."""
    fg = sys.modules.get("fusegrad")
    if fg is None or not hasattr(fg, "wait_for_compiles"):
        return
    for _ in range(rounds):
        fg.wait_for_compiles()
        fn()
    fg.wait_for_compiles()


def measure(fn, plan, first_s):
    """Median seconds per call of fn (already called once, taking first_s), timed by `plan`."""
    for _ in range(plan.warmup_calls):
        fn()
    settle_background_compiles(fn)
    one_call = _sample(fn, 1)
    calls = max(1, math.ceil(plan.min_sample_s / max(one_call, 1e-9)))
    repeats = int(plan.budget_s / max(one_call * calls, 1e-9))
    repeats = min(plan.max_repeats, max(plan.min_repeats, repeats))
    samples = []
    for _ in range(repeats):
        samples.append(_sample(fn, calls))
    return Timing(first_s=first_s, median_s=statistics.median(samples), min_s=min(samples),
                  repeats=repeats, calls_per_sample=calls)


class DeadlineExceeded(Exception):
    """Raised inside a cell that ran past its time limit."""


@contextmanager
def deadline(seconds):
    """Raise DeadlineExceeded in the main thread after `seconds` (0 or None: no limit).

    A SIGALRM handler runs between Python bytecodes, so a call stuck inside one
    long native routine is interrupted only when it returns to Python; that is
    enough to stop a runaway Python loop (say, a `while` that never ends).
    """
    if not seconds:
        yield
        return

    def on_alarm(signum, frame):
        raise DeadlineExceeded(f"no result within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def copy_bandwidth(nbytes=256 << 20, repeats=7):
    """Memory bandwidth in GB/s of np.copyto over `nbytes`, counting bytes read plus written.

    This is the yardstick for the "ideal" column: a memory-bound kernel that
    reads and writes its minimal bytes once cannot beat a plain copy.
    """
    src = np.ones(nbytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)  # fault the pages in before timing
    seconds = statistics.median(_sample(lambda: np.copyto(dst, src), 1) for _ in range(repeats))
    return 2 * nbytes / seconds / 1e9


def cpu_busy_fraction(seconds=1.0):
    """Fraction of all CPUs busy over `seconds` while this process sleeps: other processes' load.

    Timings on a machine whose cores are busy with other work are slow and
    noisy (a two-thread OpenMP region waits for a core), so the header says so.
    Returns None where /proc/stat is missing.
    """
    def totals():
        with open("/proc/stat") as stat:
            fields = [int(value) for value in stat.readline().split()[1:]]
        return sum(fields), fields[3] + fields[4]  # all jiffies, idle + iowait
    try:
        total0, idle0 = totals()
        time.sleep(seconds)
        total1, idle1 = totals()
    except OSError:
        return None
    return 1 - (idle1 - idle0) / max(total1 - total0, 1)


def _proc_status_kib(field):
    """A `VmRSS`/`VmHWM`-style field of /proc/self/status in KiB, or None off Linux."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def reset_peak_rss():
    """Reset the kernel's resident-set high-water mark; False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:
        return False


def rss_bytes():
    """Current resident set size in bytes."""
    kib = _proc_status_kib("VmRSS")
    return None if kib is None else kib * 1024


def peak_rss_bytes():
    """Resident high-water mark in bytes (since the last reset_peak_rss, where supported)."""
    kib = _proc_status_kib("VmHWM")
    if kib is None:
        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kib * 1024
