"""The active trace (set while a compiled function is being traced), or None.

Kept in its own tiny module so the dispatcher can check it without importing
the tracing machinery."""
from __future__ import annotations

import contextlib
import threading

class _TraceState(threading.local):
    trace = None        # a class-level default: reading it costs no AttributeError (every op asks)


_state = _TraceState()


def current():
    """The Trace recording ops on this thread, or None when running eagerly."""
    return _state.trace


def is_compiling() -> bool:
    """True while a compiled function is being traced (`fg.is_compiling()`)."""
    return current() is not None


def set_current(trace) -> object:
    """Install `trace` (or None); returns the previous one for restoring."""
    prev = _state.trace
    _state.trace = trace
    return prev


@contextlib.contextmanager
def eager_section():
    """Run eagerly inside a trace (no trace installed), restoring it after: the eager engine
    taking a call's gradients, read at a graph break, on through history from before it."""
    previous = set_current(None)
    try:
        yield
    finally:
        set_current(previous)
