"""The active trace (set while a compiled function is being traced), or None.

Kept in its own tiny module so the dispatcher can check it without importing
the tracing machinery."""
from __future__ import annotations

import threading

_state = threading.local()


def current():
    """The Trace recording ops on this thread, or None when running eagerly."""
    return getattr(_state, "trace", None)


def is_compiling() -> bool:
    """True while a compiled function is being traced (`fg.is_compiling()`)."""
    return current() is not None


def set_current(trace) -> object:
    """Install `trace` (or None); returns the previous one for restoring."""
    prev = getattr(_state, "trace", None)
    _state.trace = trace
    return prev
