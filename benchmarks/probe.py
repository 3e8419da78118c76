"""First-call time and peak memory of one cell, measured in a fresh subprocess.

A first call is only "first" in a process that has not compiled anything yet,
and fusegrad's warm first call needs a second process that finds the disk
cache the first one wrote; peak memory too is cleanest per process.  So the
parent runs `bench.py --probe W1 fg-compiled` once per cell, with the caches
it wants in the environment, and reads one JSON line back.

Peak memory is the steady state of a call: after the first call and a warm-up,
the resident high-water mark is reset, three calls run, and the rise of the
mark over the resident size before them is reported (temporaries, saved
activations and outputs of one call; not compile-time memory).  glibc's
mmap threshold is pinned so that freed large blocks return to the system
instead of hiding inside the heap.
"""
import json
import os
import subprocess
import sys

import cells
import columns
import harness
import workloads as wl
from impls import NotApplicable

MARKER = "PROBE "
STEADY_CALLS = 3


def probe_in_this_process(workload_key, column_key, quick):
    """The child side: measure, then print one MARKER line of JSON."""
    workload, column = wl.BY_KEY[workload_key], columns.BY_KEY[column_key]
    result = {"status": "ok"}
    try:
        run = column.build(workload_key, workload.make_data(quick))
        if run is None:
            result["status"] = "-"
        else:
            before = cells.fusegrad_counters()
            result["first_s"], _ = harness.timed_call(run)
            # fusegrad compiles in the background while its first calls run on the
            # reference executor: count that compile, and measure memory after it.
            harness.settle_background_compiles(run)
            result["counters"] = cells.counter_delta(before, cells.fusegrad_counters())
            for _ in range(2):
                run()
            result["peak_reset"] = harness.reset_peak_rss()
            baseline = harness.rss_bytes()
            for _ in range(STEADY_CALLS):
                run()
            result["peak_extra_bytes"] = harness.peak_rss_bytes() - baseline
    except NotApplicable as exc:
        result = {"status": "n/a", "detail": str(exc)}
    except Exception as exc:  # reported to the parent, which puts it in the table
        result = {"status": "error", "detail": cells.describe(exc)}
    print(MARKER + json.dumps(result), flush=True)


def probe_env(cache_dir):
    """Environment of a probe: thread settings inherited, fusegrad's and torch inductor's disk
    caches inside cache_dir (empty: a cold first call; reused from a cold probe: warm)."""
    env = dict(os.environ)
    env["FUSEGRAD_CACHE_DIR"] = os.path.join(cache_dir, "fusegrad")
    env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache_dir, "inductor")
    env["MALLOC_MMAP_THRESHOLD_"] = str(128 * 1024)
    # The peak-memory reading is the RSS growth of steady calls: fusegrad's buffer pool would
    # keep a call's arrays resident from the calls before and hide them, so it is off here.
    env["FUSEGRAD_BUFFER_POOL_MB"] = "0"
    return env


def run_probe(workload_key, column_key, quick, threads, env, timeout_s):
    """The parent side: run the child, return its result dict (status "error" if it died)."""
    bench = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench.py")
    command = [sys.executable, bench, "--probe", workload_key, column_key, "--threads", str(threads)]
    command += ["--quick"] if quick else []
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"status": "error", "detail": f"probe ran past {timeout_s} s"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(MARKER):
            return json.loads(line[len(MARKER):])
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return {"status": "error", "detail": f"probe exited {done.returncode}: {tail}"[:240]}
