"""Markdown tables and the speed-up plot from one run's measurements.

Speed-ups are always "reference time / this time", so above 1 means faster
than the reference (torch eager, or the fastest peer in the same row).
"""
from collections import defaultdict
from dataclasses import dataclass, field

import columns as cols



def probe_names(column):
    """Names of a column's probes: "<key>:cold" and "<key>:warm" with a disk cache, else "<key>"."""
    return (f"{column.key}:cold", f"{column.key}:warm") if column.disk_cache else (column.key,)


def probe_label(name):
    key, _, phase = name.partition(":")
    return " ".join(filter(None, (cols.BY_KEY[key].label, phase, "probe")))


@dataclass
class Results:
    """Everything one run measured: cells[(workload key, column key)] and probes[(workload key,
    probe name)], with probe names from probe_names()."""
    header: list
    workloads: list
    columns: list
    bandwidth_gbs: float
    statistic: str = "median"   # of the samples: "median" or "min"
    min_bytes: dict = field(default_factory=dict)   # workload key -> minimal bytes moved, or None
    cells: dict = field(default_factory=dict)
    probes: dict = field(default_factory=dict)


def fmt_ms(seconds):
    """Milliseconds with about three significant digits, never in exponent form."""
    ms = seconds * 1e3
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.1f}" if ms >= 10 else f"{ms:.2f}" if ms >= 1 else f"{ms:.3g}"


def fmt_ratio(ratio):
    return f"{ratio:.2f}x" if ratio < 10 else f"{ratio:.0f}x"


def status_text(status, detail):
    """Short table text of a result that has no number."""
    if status == "error":
        return "error: " + detail.split(":")[0]
    return status


def cell_text(cell, value):
    """value(cell) formatted for a table, or the cell's status where it has no time."""
    if cell is None:
        return "-"
    if cell.seconds is None:
        return status_text(cell.status, cell.detail)
    return value(cell) + (" (wrong)" if cell.status == "wrong" else "")


def table(headings, rows):
    lines = ["| " + " | ".join(headings) + " |", "|" + "---|" * len(headings)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def _label(workload):
    return f"{workload.key} {workload.title}"


def _time(results, workload, column_key):
    cell = results.cells.get((workload.key, column_key))
    return cell.seconds if cell is not None and cell.status == "ok" else None


def fastest_peer(results, workload):
    """(column, seconds) of the fastest correct peer on this workload, or (None, None)."""
    timed = [(_time(results, workload, c.key), c) for c in results.columns if c.is_peer]
    timed = [(t, c) for t, c in timed if t is not None]
    if not timed:
        return None, None
    seconds, column = min(timed, key=lambda pair: pair[0])
    return column, seconds


def times_section(results):
    rows = []
    for w in results.workloads:
        ideal = "-" if results.min_bytes.get(w.key) is None else fmt_ms(ideal_seconds(results, w))
        rows.append([_label(w), ideal] + [cell_text(results.cells.get((w.key, c.key)),
                                                    lambda cell: fmt_ms(cell.seconds))
                                          for c in results.columns])
    return [f"## {results.statistic.capitalize()} time per call (ms)", ""] + table(
        ["workload", "ideal"] + [c.label for c in results.columns], rows)


def ideal_seconds(results, workload):
    """Minimal bytes moved at the measured copy bandwidth."""
    return results.min_bytes[workload.key] / (results.bandwidth_gbs * 1e9)


def _speedup_text(results, workload, column_key, reference_s):
    cell = results.cells.get((workload.key, column_key))
    if reference_s is None:
        return "-" if cell is None or cell.seconds is not None else status_text(cell.status, cell.detail)
    return cell_text(cell, lambda c: fmt_ratio(reference_s / c.seconds))


def speedup_section(results):
    fg_keys = [c.key for c in results.columns if not c.is_peer]
    fg_labels = [cols.BY_KEY[key].label for key in fg_keys]
    rows = []
    for w in results.workloads:
        baseline = _time(results, w, cols.BASELINE)
        best, best_s = fastest_peer(results, w)
        row = [_label(w)] + [_speedup_text(results, w, c.key, baseline) for c in results.columns]
        row.append("-" if best is None else f"{best.label} {fmt_ms(best_s)}")
        row += [_speedup_text(results, w, key, best_s) for key in fg_keys]
        rows.append(row)
    headings = (["workload"] + [c.label for c in results.columns] + ["fastest peer (ms)"]
                + [f"{label} vs fastest peer" for label in fg_labels])
    return ["## Speed-up over torch eager (higher is faster), and over the fastest peer", ""] + table(
        headings, rows)


def bandwidth_section(results):
    bound = [w for w in results.workloads if results.min_bytes.get(w.key) is not None]
    if not bound:
        return []
    rows = []
    for w in bound:
        nbytes = results.min_bytes[w.key]
        rows.append([_label(w), f"{nbytes / 1e6:.1f}", fmt_ms(ideal_seconds(results, w))] + [
            cell_text(results.cells.get((w.key, c.key)), lambda cell: f"{nbytes / cell.seconds / 1e9:.3g}")
            for c in results.columns])
    intro = (f"Effective bandwidth = minimal bytes / {results.statistic} time, in GB/s; the copy bandwidth "
             f"is {results.bandwidth_gbs:.1f} GB/s.")
    return ["## Effective bandwidth of the memory-bound workloads (GB/s)", "", intro, ""] + table(
        ["workload", "min MB", "ideal ms"] + [c.label for c in results.columns], rows)


def _probe_text(probe, value):
    if probe is None:
        return None
    if probe.get("status") != "ok":
        return status_text(probe.get("status", "error"), probe.get("detail", ""))
    return value(probe)


def first_call_section(results):
    """Subprocess first calls where probed, otherwise the in-process first call (marked *)."""
    headings = [probe_label(name)[:-len(" probe")] for c in results.columns for name in probe_names(c)]
    rows, used_in_process = [], False
    for w in results.workloads:
        row = [_label(w)]
        for c in results.columns:
            for i, name in enumerate(probe_names(c)):
                text = _probe_text(results.probes.get((w.key, name)), lambda p: f"{p['first_s']:.3g}")
                if text is None and i == 0:
                    cell = results.cells.get((w.key, c.key))
                    text = cell_text(cell, lambda cell: f"{cell.timing.first_s:.3g}*")
                    used_in_process = used_in_process or (cell is not None and cell.seconds is not None)
                row.append(text or "-")
        rows.append(row)
    lines = ["## First call (s)", "",
             "Each first call runs in a fresh subprocess (imports and data set-up not timed), three times, "
             "and the fastest of the three is shown, as every timing here is the fastest sample (the bench "
             "log lists all three: on this 2-core machine a first call that overlaps a background compile "
             "varies from process to process). fusegrad compiled and torch.compile run cold, each time from "
             "an empty FUSEGRAD_CACHE_DIR / TORCHINDUCTOR_CACHE_DIR, then warm, reusing the cache the last "
             "cold run filled."]
    if used_in_process:
        lines.append("\\* not probed: the first call of the in-process timing run (frameworks already "
                     "imported and initialised by earlier cells, compile caches as found).")
    return lines + [""] + table(["workload"] + headings, rows)


def _counter_text(probe, name):
    """One fg.cache_info() counter of a probe's first call ("-" where it has none)."""
    def value(p):
        count = p.get("counters", {}).get(name)
        return "-" if count is None else f"{count:.3g}" if isinstance(count, float) else str(count)
    return _probe_text(probe, value) or "-"


def fusegrad_cache_section(results):
    """fg.cache_info() deltas: in the cold and warm probes' first calls, and over the timing run."""
    rows = []
    for w in results.workloads:
        cold, warm = (results.probes.get((w.key, name)) for name in probe_names(cols.BY_KEY[cols.FG_COMPILED]))
        timed = results.cells.get((w.key, cols.FG_COMPILED))
        counters = timed.counters if timed is not None else {}
        rows.append([_label(w), _counter_text(cold, "kernels_compiled"), _counter_text(cold, "compile_seconds"),
                     _counter_text(warm, "kernels_compiled"), _counter_text(warm, "disk_hits")]
                    + [str(counters.get(name, "-")) for name in ("hits", "misses", "kernels_compiled")])
    return ["## fusegrad compile cache (fg.cache_info() deltas)", ""] + table(
        ["workload", "cold: kernels compiled", "cold: compile s", "warm: kernels compiled",
         "warm: disk hits", "timing run: hits", "timing run: misses", "timing run: kernels compiled"], rows)


def _memory_probe(results, workload_key, column_key):
    """The probe whose steady-state memory stands for a column (with a disk cache: the warm one)."""
    return results.probes.get((workload_key, probe_names(cols.BY_KEY[column_key])[-1]))


def memory_section(results):
    probed = [c for c in results.columns
              if any(_memory_probe(results, w.key, c.key) for w in results.workloads)]
    if not probed:
        return []
    rows = []
    for w in results.workloads:
        if not any(_memory_probe(results, w.key, c.key) for c in probed):
            continue
        row = [_label(w)]
        for c in probed:
            text = _probe_text(_memory_probe(results, w.key, c.key),
                               lambda p: f"{p['peak_extra_bytes'] / 2 ** 20:.1f}")
            row.append(text or "-")
        fg, torch = (_memory_probe(results, w.key, key) for key in (cols.FG_COMPILED, cols.BASELINE))
        ok = fg and torch and fg.get("status") == torch.get("status") == "ok" and torch["peak_extra_bytes"] > 0
        row.append(f"{fg['peak_extra_bytes'] / torch['peak_extra_bytes']:.2f}" if ok else "-")
        rows.append(row)
    intro = ("Rise of the resident high-water mark during three steady-state calls over the resident "
             "size before them (MiB, in a subprocess): a call's temporaries, saved values and outputs.")
    return ["## Peak memory per call (MiB)", "", intro, ""] + table(
        ["workload"] + [c.label for c in probed] + ["fg compiled / torch eager"], rows)


def notes_section(results):
    """Why each non-numeric cell is what it is, grouped so a repeated error prints once."""
    where = defaultdict(list)
    for (wkey, ckey), cell in results.cells.items():
        if cell.detail:
            where[(cols.BY_KEY[ckey].label, cell.status, cell.detail)].append(wkey)
    for (wkey, name), probe in results.probes.items():
        if probe.get("status") not in ("ok", "-") and probe.get("detail"):
            where[(probe_label(name), probe["status"], probe["detail"])].append(wkey)
    if not where:
        return []
    lines = ["## Notes", ""]
    for (label, status, detail), keys in sorted(where.items()):
        lines.append(f"- {label} ({', '.join(sorted(set(keys)))}): {status}: {detail}")
    return lines


def markdown(results):
    sections = [results.header, times_section(results), speedup_section(results),
                bandwidth_section(results), first_call_section(results),
                fusegrad_cache_section(results), memory_section(results), notes_section(results)]
    return "\n".join("\n".join(section) + "\n" for section in sections if section)


def plot(results, path):
    """Bar chart of speed-up over torch eager per workload and column (log scale); returns a
    message saying what was written or why nothing was."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install matplotlib): no plot written"
    shown = [c for c in results.columns if c.key != cols.BASELINE]
    fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(results.workloads)), 4.5))
    width = 0.8 / max(len(shown), 1)
    for i, column in enumerate(shown):
        xs, ys = [], []
        for j, w in enumerate(results.workloads):
            baseline, t = _time(results, w, cols.BASELINE), _time(results, w, column.key)
            if baseline is not None and t is not None:
                xs.append(j + (i - (len(shown) - 1) / 2) * width)
                ys.append(baseline / t)
        ax.bar(xs, ys, width, label=column.label)
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_yscale("log")
    ax.set_xticks(range(len(results.workloads)), [w.key for w in results.workloads])
    ax.set_ylabel("speed-up over torch eager (log)")
    ax.set_title(f"Speed-up over torch eager per workload ({results.statistic}, higher is faster)")
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return f"plot written to {path}"
