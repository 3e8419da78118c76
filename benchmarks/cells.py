"""Running one (workload, column) cell in this process, and fusegrad's cache counters.

A cell never raises: whatever a framework does (an exception, a wrong result,
a run past the deadline) becomes the cell's status, and the table goes on.
"""
import sys
from dataclasses import dataclass, field
from typing import Optional

import harness
import workloads as wl
from impls import NotApplicable, to_numpy

COUNTER_FIELDS = ("hits", "misses", "kernels_compiled", "disk_hits", "compile_seconds")


@dataclass
class Cell:
    """status: "ok", "wrong" (timed, but the check failed), "error", "n/a", "-" (no such
    implementation) or "not installed"; detail says why for the non-ok ones."""
    status: str
    timing: Optional[harness.Timing] = None
    outputs: Optional[tuple] = None
    error: Optional[float] = None
    detail: str = ""
    counters: dict = field(default_factory=dict)
    seconds: Optional[float] = None  # per call, by the run's statistic; None where not timed


def describe(exc):
    """`Type: message` on one line, shortened for a table's footnote."""
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ").replace("|", "\\|")
    return text if len(text) <= 240 else text[:237] + "..."


def fusegrad_counters():
    """fg.cache_info() as a dict, or {} while fusegrad is not imported or has no such call."""
    fg = sys.modules.get("fusegrad")
    try:
        info = fg.cache_info()
        return {name: getattr(info, name) for name in COUNTER_FIELDS if hasattr(info, name)}
    except Exception:  # fusegrad absent or still being built: no counters to show
        return {}


def counter_delta(before, after):
    return {name: after[name] - before.get(name, 0) for name in after}


def run_cell(column, workload, data, reference, plan, timeout_s, statistic="median"):
    """Build, check and time column's implementation of workload; returns a Cell whose
    `seconds` is the median (or fastest, `statistic="min"`) time per call."""
    if not column.installed():
        return Cell("not installed", detail=f"{column.requires} is not importable")
    counters_before = fusegrad_counters()
    try:
        with harness.deadline(timeout_s):
            run = column.build(workload.key, data)
            if run is None:
                return Cell("-")
            first_s, result = harness.timed_call(run)
            outputs = tuple(to_numpy(value) for value in result)
            error = workload.check(outputs, reference, data)
            timing = harness.measure(run, plan, first_s)
    except NotApplicable as exc:
        return Cell("n/a", detail=str(exc))
    except Exception as exc:  # any framework failure is reported in the table, not raised
        return Cell("error", detail=describe(exc))
    status = "wrong" if error is not None and error > wl.TOLERANCE else "ok"
    detail = f"max relative error {error:.2e} > {wl.TOLERANCE:g}" if status == "wrong" else ""
    return Cell(status, timing, outputs, error, detail,
                counter_delta(counters_before, fusegrad_counters()), timing.per_call(statistic))
