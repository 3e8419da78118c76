"""Python's cyclic garbage collector, paused for the length of a compiled call.

A traced call allocates a few container objects per op (a Value, an Instr, a symbolic
Tensor and its weak reference): thousands for a program of a few hundred ops, all alive
until the call returns and then freed by reference counting, since a trace makes no
reference cycles (tests/test_gc_pause.py checks that). With the collector running, its
young-generation passes fire in the middle of a call, find the live trace and promote it;
every ~150 calls of W5 (300 tiny ops) the promoted objects trigger a full collection of the
whole process, 60-140 ms with Numba loaded: about a third of W5's mean time per call.
Paused for the call, the trace is gone before the collector looks, and the next young pass
after the call finds almost nothing to promote.

    with gc_paused():
        ...           # a compiled call

Calls may overlap on several threads: the collector stays paused while any of them runs
and is turned back on when the last one ends, unless it was off before the first began.
Garbage with cycles that a user's function makes during a call is collected after it.
"""
from __future__ import annotations

import gc
import threading

_lock = threading.Lock()
_depth = 0              # compiled calls under way, all threads
_resume = False         # whether the outermost of them turned the collector off


class gc_paused:
    """Context manager: no automatic garbage collection while any compiled call runs."""

    __slots__ = ()

    def __enter__(self):
        global _depth, _resume
        with _lock:
            if _depth == 0:
                _resume = gc.isenabled()
                if _resume:
                    gc.disable()
            _depth += 1
        return self

    def __exit__(self, *exc):
        global _depth
        with _lock:
            _depth -= 1
            if _depth == 0 and _resume:
                gc.enable()
        return False
