"""Whether a compiled function's calls run faster eagerly: measured, per argument signature.

fusegrad traces every call (the contract: Python control flow is re-run), so a compiled
call costs its tracing, about 1-2 us an op, on top of running the program. For a function
whose tensors are tiny, that is more than eager execution costs: a 3-layer MLP of 32-64-64-10
with batch 64 and Adam took 1.08 ms a step compiled, 0.69 ms eagerly (torch eager 0.41),
measured 2026-12-04; a 40 x (Linear(16, 16), Tanh) Adam step 10.2 ms compiled, 5.5 eagerly.

After `TRIAL_AFTER` calls with one signature (shapes, dtypes, requires_grad), whose kernels
are compiled and which ran compiled without graph breaks, the next `SAMPLES` calls are timed
compiled and the `SAMPLES` after them eagerly; if the fastest eager call took at most
`FASTER` of the fastest compiled one, calls with that signature run eagerly from then on,
as after repeated small graph breaks. The first eager call warms the eager path and is not
timed; the trial costs at most four slow calls: three timed eager calls slower than the
fastest compiled one end it (compiled stays). Only programs that write at
most `MAX_TRIAL_ELEMENTS` elements in all (tracing, not arithmetic, may dominate them) are
tried: a larger one is worth its kernels, and one eager call of it could cost many compiled
ones (W1 eagerly: 8x its compiled time). Eager execution is torch's semantics op by op (the
reference fusegrad's compiled programs are checked against), so only speed and the last
bits of rounding change. `explain()` says when a signature runs eagerly and why;
`FUSEGRAD_ADAPTIVE=0` turns the trial off.
"""
from __future__ import annotations

import os
import time

TRIAL_AFTER = 20
SAMPLES = 5
FASTER = 0.75
MAX_TRIAL_ELEMENTS = 1 << 22

# (a module attribute, so that tests can give the trial a clock of their own)
clock = time.perf_counter


def enabled() -> bool:
    """FUSEGRAD_ADAPTIVE (read once for each compiled function, when it is made): on unless set to 0/false/no/off."""
    return os.environ.get("FUSEGRAD_ADAPTIVE", "1").strip().lower() not in ("0", "false", "no", "off")


class SpeedTrial:
    """The trial of one argument signature: counts calls, then times compiled and eager ones."""

    __slots__ = ("calls", "compiled", "eager", "decided", "eager_warmed")

    def __init__(self):
        self.calls = 0
        self.compiled: list = []      # seconds of timed compiled calls
        self.eager: list = []         # seconds of timed eager calls
        self.eager_warmed = False     # the first eager call ran (not a sample: see add_eager)
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

    def add_compiled(self, seconds: float | None, timed: bool, element_work: int = 0) -> None:
        """One compiled call ran; `timed` (wants_compiled_sample said so): it took `seconds`
        (None: it did not run compiled kernels alone: a graph break, a reference path, a
        compile in the background; the samples start again) and its programs wrote
        `element_work` elements."""
        self.calls += 1
        if not timed:
            return
        if seconds is None:
            self.compiled.clear()
            return
        if element_work > MAX_TRIAL_ELEMENTS:
            self.decided = "compiled"
            return
        self.compiled.append(seconds)

    def add_eager(self, seconds: float) -> None:
        """One eager call took `seconds`. The first is not a sample: it warms the eager path
        (2-6x a later call: 2.6 ms against 0.8 for a small MLP's Adam step, 32 against 5.4
        for a 40-layer one). Three samples all slower than the fastest compiled call end the
        trial at once (compiled stays); else the last one of the trial decides."""
        self.calls += 1
        if not self.eager_warmed:
            self.eager_warmed = True
            return
        self.eager.append(seconds)
        if len(self.eager) >= 3 and min(self.eager) > min(self.compiled):
            self.decided = "compiled"
        elif len(self.eager) >= SAMPLES:
            self.decided = "eager" if min(self.eager) <= FASTER * min(self.compiled) else "compiled"

    def summary(self) -> str:
        """What the trial measured, for explain()."""
        return (f"eager {min(self.eager) * 1e3:.3f} ms against compiled {min(self.compiled) * 1e3:.3f} ms "
                f"(fastest of {SAMPLES} each)")
