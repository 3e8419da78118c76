"""Whether a compiled function's calls run faster eagerly: measured, per argument signature.

fusegrad traces every call (the contract: Python control flow is re-run), so a compiled
call costs its tracing, about 1-2 us an op, on top of running the program. For a function
whose tensors are tiny, that is more than eager execution costs: a 3-layer MLP of 32-64-64-10
with batch 64 and Adam took 1.08 ms a step compiled, 0.69 ms eagerly (torch eager 0.41),
measured 2026-12-04. After `TRIAL_AFTER` calls with one signature (shapes, dtypes,
requires_grad), whose kernels are compiled and which ran compiled without graph breaks,
the next `SAMPLES` calls are timed compiled and the `SAMPLES` after them eagerly; if the
fastest eager call took at most `FASTER` of the fastest compiled one (and a compiled call
is short, under `MAX_COMPILED_SECONDS`: a longer one is worth its kernels), calls with
that signature run eagerly from then on, as after repeated small graph breaks. Eager
execution is torch's semantics op by op (the reference fusegrad's compiled programs are
checked against), so only speed and the last bits of rounding change. `explain()` says
when a signature runs eagerly and why; `FUSEGRAD_ADAPTIVE=0` turns the trial off.
"""
from __future__ import annotations

import os
import time

TRIAL_AFTER = 20
SAMPLES = 5
FASTER = 0.75
MAX_COMPILED_SECONDS = 0.005

# (a module attribute, so that tests can give the trial a clock of their own)
clock = time.perf_counter


def enabled() -> bool:
    """FUSEGRAD_ADAPTIVE (read at each new signature): on unless set to 0/false/no/off."""
    return os.environ.get("FUSEGRAD_ADAPTIVE", "1").strip().lower() not in ("0", "false", "no", "off")


class SpeedTrial:
    """The trial of one argument signature: counts calls, then times compiled and eager ones."""

    __slots__ = ("calls", "compiled", "eager", "decided")

    def __init__(self):
        self.calls = 0
        self.compiled: list = []      # seconds of timed compiled calls
        self.eager: list = []         # seconds of timed eager calls
        self.decided: str | None = None     # "eager" or "compiled" once measured

    @property
    def runs_eagerly(self) -> bool:
        """Has the trial settled on eager calls?"""
        return self.decided == "eager"

    def wants_eager_sample(self) -> bool:
        """Should this call run eagerly, timed (the trial's second half)?"""
        return self.decided is None and len(self.compiled) >= SAMPLES

    def wants_compiled_sample(self) -> bool:
        """Should this compiled call be timed?"""
        return self.decided is None and self.calls >= TRIAL_AFTER and len(self.compiled) < SAMPLES

    def add_compiled(self, seconds: float | None, timed: bool) -> None:
        """One compiled call ran; `timed` (wants_compiled_sample said so): it took `seconds`
        (None: it did not run compiled kernels alone: a graph break, a reference path, a
        compile in the background; the samples start again)."""
        self.calls += 1
        if not timed:
            return
        if seconds is None:
            self.compiled.clear()
            return
        self.compiled.append(seconds)
        if min(self.compiled) > MAX_COMPILED_SECONDS:
            self.decided = "compiled"

    def add_eager(self, seconds: float) -> None:
        """One eager call took `seconds`; the last one of the trial decides."""
        self.calls += 1
        self.eager.append(seconds)
        if len(self.eager) >= SAMPLES:
            self.decided = "eager" if min(self.eager) <= FASTER * min(self.compiled) else "compiled"

    def summary(self) -> str:
        """What the trial measured, for explain()."""
        return (f"eager {min(self.eager) * 1e3:.3f} ms against compiled {min(self.compiled) * 1e3:.3f} ms "
                f"(fastest of {SAMPLES} each)")
