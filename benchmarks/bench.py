#!/usr/bin/env python3
"""fusegrad against its peers on workloads W1-W6 (issues 3 and 4), measured side by side in one run.

Columns: fusegrad eager and compiled; NumPy by hand (forward + hand-derived
backward); a hand-fused Numba loop (W1); torch eager; torch.compile; jax.jit.
For each workload: median time per call, speed-ups over torch eager and over the
fastest peer, the "ideal" time (minimal bytes at the measured copy bandwidth),
effective bandwidth, first-call times (fusegrad compiled cold and with a warm
disk cache, in subprocesses), fusegrad's cache counters and peak memory.
Every framework runs with the same number of threads (--threads, default 2).

Run from the repository root:
    python3 benchmarks/bench.py                  # full sizes, a few minutes
    python3 benchmarks/bench.py --quick          # sizes / 16, fewer repeats: a smoke run
    python3 benchmarks/bench.py --only W1,W3 --out table.md --plot speedup.png
A framework that fails prints its error in its cell and the run goes on.
"""
import argparse
import os
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(BENCH_DIR)
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
VERSIONED = ("numpy", "numba", "llvmlite", "torch", "jax", "jaxlib", "matplotlib")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="sizes / 16 and few repeats (smoke run, < 60 s)")
    parser.add_argument("--only", help="comma-separated workloads, e.g. W1,W3")
    parser.add_argument("--columns", help="comma-separated columns (fg-eager, fg-compiled, numpy, numba, "
                                          "torch-eager, torch-compile, jax-jit)")
    parser.add_argument("--out", help="also write the markdown to this file")
    parser.add_argument("--plot", help="write a PNG bar chart of speed-up over torch eager")
    parser.add_argument("--threads", type=int, default=2, help="threads for every framework (default 2)")
    parser.add_argument("--probes", choices=("all", "fusegrad", "none"),
                        help="subprocess measurements (first call, memory): every column; fusegrad "
                             "compiled cold/warm plus torch eager; or none (default: all; with --quick, "
                             "fusegrad on the first selected workload only)")
    parser.add_argument("--statistic", choices=("median", "min"), default="median",
                        help="per-call time reported: median of the samples (default) or the fastest "
                             "sample (steadier on a machine shared with other work)")
    parser.add_argument("--cell-timeout", type=float, help="seconds before a cell is abandoned "
                                                           "(default 300, 60 with --quick)")
    parser.add_argument("--probe", nargs=2, metavar=("WORKLOAD", "COLUMN"), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def torch_thread_settings(threads):
    """Set torch's intra- and inter-op pools to `threads`; returns what torch reports."""
    try:
        import torch
    except ImportError:
        return "torch not installed"
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:  # only settable before torch's first parallel work
        pass
    return f"torch.set_num_threads({torch.get_num_threads()}), interop {torch.get_num_interop_threads()}"


def configure_threads(threads, with_torch=True):
    """Give every framework `threads` threads; must run before numpy/torch/numba/jax load.

    BLAS, OpenMP and Numba read their variables at import; XLA sizes its pool from
    the CPUs the process may use, so on a larger machine the process is also
    pinned to `threads` CPUs.  torch is imported only `with_torch` (a probe of
    another framework need not load it; the Torch adapter sets its threads on
    use).  Returns a description for the table's header.
    """
    for variable in THREAD_VARIABLES:
        os.environ[variable] = str(threads)
    pinned = ""
    if hasattr(os, "sched_getaffinity"):
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) > threads:
            os.sched_setaffinity(0, cpus[:threads])
            cpus = cpus[:threads]
        pinned = f"; process CPU affinity {cpus} (XLA sizes its pool from it)"
    torch_threads = torch_thread_settings(threads) if with_torch else "torch threads set on use"
    variables = ", ".join(f"{name}={threads}" for name in THREAD_VARIABLES)
    return f"{torch_threads}; {variables}{pinned}"


def machine_description():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            cpu = next(line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    except (ValueError, OSError):
        memory_gib = float("nan")
    import platform
    return f"{cpu}, {os.cpu_count()} logical CPUs, {memory_gib:.0f} GiB; {platform.platform()}"


def openblas_kernel():
    """The kernel family NumPy's bundled OpenBLAS runs ("Haswell", "SkylakeX", ...), or None
    where it cannot be asked (another BLAS, or an OpenBLAS without the scipy_openblas names)."""
    import ctypes
    import glob
    import numpy as np
    for path in glob.glob(os.path.join(os.path.dirname(np.__file__) + ".libs", "libscipy_openblas*")):
        try:
            library = ctypes.CDLL(path)         # already loaded by NumPy: the same handle
            for symbol in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename"):
                corename = getattr(library, symbol, None)
                if corename is not None:
                    corename.restype = ctypes.c_char_p
                    return corename().decode()
        except OSError:
            pass
    return None


def blas_description():
    """NumPy's BLAS (which fusegrad's matmuls use), the OpenBLAS kernels it runs, and the
    kernel choice the environment forces, if any: OPENBLAS_CORETYPE=Haswell on an AVX-512
    machine halves its matmul speed (see benchmarks/README.md)."""
    import numpy as np
    try:
        blas = np.__config__.CONFIG["Build Dependencies"]["blas"]
        name = f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # an older NumPy's config layout
        name = "unknown"
    kernel = openblas_kernel()
    running = f", running its {kernel} kernels" if kernel else ""
    forced = os.environ.get("OPENBLAS_CORETYPE")
    return f"NumPy's BLAS {name}{running}; OPENBLAS_CORETYPE={forced} (from the environment)" if forced else \
        f"NumPy's BLAS {name}{running}; OPENBLAS_CORETYPE unset (OpenBLAS picks its kernels)"


def versions():
    """One line of library versions, fusegrad's from the source tree this run imports."""
    from importlib import metadata
    parts = [f"python {sys.version.split()[0]}"]
    for name in VERSIONED:
        try:
            parts.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{name} not installed")
    try:
        import fusegrad
        missing = [name for name in ("compile", "value_and_grad", "cache_info") if not hasattr(fusegrad, name)]
        parts.append(f"fusegrad {getattr(fusegrad, '__version__', '?')} ({os.path.dirname(fusegrad.__file__)}"
                     + (f"; lacks fg.{', fg.'.join(missing)}" if missing else "") + ")")
    except Exception as exc:  # fusegrad is being built; its state is part of the report
        parts.append(f"fusegrad not importable ({type(exc).__name__}: {exc})")
    return ", ".join(parts)


def selected(names, registry, what):
    """Items of registry (a dict by key) named in a comma-separated string, in registry order."""
    if not names:
        return list(registry.values())
    wanted = [name.strip() for name in names.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in registry]
    if unknown:
        sys.exit(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(registry)})")
    return [item for key, item in registry.items() if key in wanted]


def load_text(fraction):
    return "unknown" if fraction is None else f"{100 * fraction:.0f}%"


_START = time.perf_counter()


def log(message):
    print(f"{time.perf_counter() - _START:7.1f}s {message}", file=sys.stderr, flush=True)


def reference_outputs(workload, data):
    """The hand-written NumPy outputs every column is checked against (None if they fail)."""
    import columns
    from impls import to_numpy
    try:
        return tuple(to_numpy(v) for v in columns.BY_KEY[columns.REFERENCE].build(workload.key, data)())
    except Exception as exc:  # reported; the cells are then timed unchecked
        log(f"[{workload.key}] no reference outputs: {type(exc).__name__}: {exc}")
        return None


# Columns timed after every other: once torch.compile has run a function, Dynamo's frame
# hook stays installed for the rest of the process and every Python call pays for it
# (measured: fusegrad eager's W6 loop 134 -> 144-149 us, also with the collector off, and
# torch._dynamo.reset() does not remove it), which would bill it to the Python-heavy columns
# (fusegrad, torch eager's W6 loop) timed after it.
TIMED_LAST = ("torch-compile",)


def time_cells(results, plan, quick, timeout_s):
    """Fill results.cells, one workload at a time, in this process; the TIMED_LAST columns
    in a second pass over the workloads."""
    first = [c for c in results.columns if c.key not in TIMED_LAST]
    last = [c for c in results.columns if c.key in TIMED_LAST]
    for group in (first, last):
        if group:
            _time_columns(results, group, plan, quick, timeout_s)


def _time_columns(results, group, plan, quick, timeout_s):
    import cells
    for workload in results.workloads:
        data = workload.make_data(quick)
        results.min_bytes[workload.key] = workload.min_bytes(data) if workload.min_bytes else None
        reference = reference_outputs(workload, data)
        for column in group:
            cell = cells.run_cell(column, workload, data, reference, plan, timeout_s, results.statistic)
            cell.outputs = None  # checked already; do not hold arrays across workloads
            results.cells[(workload.key, column.key)] = cell
            timing = "" if cell.seconds is None else (
                f"median {cell.timing.median_s * 1e3:.3g} ms, min {cell.timing.min_s * 1e3:.3g} ms, "
                f"first {cell.timing.first_s:.3g} s")
            log(f"[{workload.key}] {column.label}: {cell.status} {timing} {cell.detail}".rstrip())


PROBE_REPEATS = 3        # fresh processes per first-call probe (the fastest is reported)


def probe_cells(results, mode, quick, threads, scratch, workloads):
    """Fill results.probes for `workloads`: each column's first call and memory in a fresh
    process; a column with a disk cache twice, cold (empty cache) then warm (the same cache).
    Mode "fusegrad" probes only fusegrad compiled and torch eager (the memory comparison)."""
    import columns as cols
    import probe
    import report
    timeout_s = 120 if quick else 600
    for workload in workloads:
        for column in results.columns:
            cell = results.cells[(workload.key, column.key)]
            wanted = mode == "all" or column.key in (cols.FG_COMPILED, cols.BASELINE)
            # fusegrad compiled is probed even when it failed in-process: the code may have changed
            if not wanted or (cell.seconds is None and column.key != cols.FG_COMPILED):
                continue
            cache = None
            for name in report.probe_names(column):
                # Each probe runs PROBE_REPEATS times, each a fresh process, and the fastest counts,
                # as every timing here is the fastest sample (a first call that meets a background
                # compile on a 2-core machine varies 0.07-0.3 s from process to process). A cold
                # probe starts from an empty cache every time; the warm ones reuse the last it filled.
                best = None
                for _ in range(PROBE_REPEATS):
                    if cache is None or name.endswith(":cold"):
                        cache = tempfile.mkdtemp(prefix=f"{workload.key}-{column.key}-", dir=scratch)
                    result = probe.run_probe(workload.key, column.key, quick, threads,
                                             probe.probe_env(cache), timeout_s)
                    log(f"[{workload.key}] probe {name}: {result}")
                    if best is None or (result.get("first_s") is not None and
                                        (best.get("first_s") is None or result["first_s"] < best["first_s"])):
                        best = result
                results.probes[(workload.key, name)] = best


def run_benchmark(args, thread_description):
    import columns as cols
    import harness
    import report
    import workloads as wl

    quick = args.quick
    plan = harness.QUICK_PLAN if quick else harness.FULL_PLAN
    probes = args.probes or ("fusegrad" if quick else "all")
    # A quick run probes one workload: each probe is a fresh process that compiles from scratch.
    probed_count = 1 if quick and not args.probes else None
    timeout_s = args.cell_timeout or (60 if quick else 300)
    # This process uses fusegrad's and inductor's caches as it finds them (its first calls are
    # marked "as found"); the probes measure cold and warm first calls in their own folders.
    with tempfile.TemporaryDirectory(prefix="fusegrad-bench-") as scratch:
        busy_before = harness.cpu_busy_fraction()
        log("measuring copy bandwidth ...")
        bandwidth = harness.copy_bandwidth()
        header = [
            "# fusegrad benchmarks", "",
            f"- machine: {machine_description()}",
            f"- versions: {versions()}",
            f"- BLAS: {blas_description()}",
            f"- threads: {thread_description}",
            f"- mode: {'quick (sizes / 16, few repeats)' if quick else 'full'}; {args.statistic} of up to "
            f"{plan.max_repeats} samples after {plan.warmup_calls} warm-up calls, each sample at least "
            f"{plan.min_sample_s * 1e3:.0f} ms of back-to-back calls; float32 throughout",
            f"- copy bandwidth: {bandwidth:.1f} GB/s (np.copyto of 256 MB, bytes read + written, one "
            "thread); ideal = minimal bytes moved / copy bandwidth",
            f"- results checked against hand-written NumPy: max error relative to the largest "
            f"magnitude <= {wl.TOLERANCE:g}, else marked (wrong)",
        ]
        results = report.Results(header, selected(args.only, wl.BY_KEY, "workloads"),
                                 selected(args.columns, cols.BY_KEY, "columns"), bandwidth, args.statistic)
        time_cells(results, plan, quick, timeout_s)
        if probes != "none":
            probe_cells(results, probes, quick, args.threads, scratch, results.workloads[:probed_count])
        header.append(f"- other load: {load_text(busy_before)} of all CPUs busy just before the run, "
                      f"{load_text(harness.cpu_busy_fraction())} just after (anything well above 0% "
                      "means other processes competed for the cores and the times are inflated)")
    text = report.markdown(results)
    print(text)
    if args.out:
        with open(args.out, "w") as out:
            out.write(text)
        log(f"table written to {args.out}")
    if args.plot:
        log(report.plot(results, args.plot))


def main(argv=None):
    # fusegrad's tiered execution (first calls on the reference executor while
    # kernels compile in the background) is what its first-call numbers measure;
    # steady-state timings wait for the compiles either way.
    os.environ.setdefault("FUSEGRAD_ASYNC_COMPILE", "1")
    args = parse_args(argv)
    thread_description = configure_threads(args.threads, with_torch=not args.probe)
    sys.path.insert(1, REPO_ROOT)  # fusegrad from this source tree (benchmarks/ stays first)
    if args.probe:
        import probe
        probe.probe_in_this_process(*args.probe, quick=args.quick)
        return
    run_benchmark(args, thread_description)


if __name__ == "__main__":
    main()
