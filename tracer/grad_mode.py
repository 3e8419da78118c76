"""Grad mode: whether ops record history (torch.no_grad and friends).

The flag is thread-local, as torch's is. Each manager works as a context
manager and as a decorator.
"""
from __future__ import annotations

import functools
import threading

class _GradState(threading.local):
    # A class-level default: reading an attribute a thread never set through
    # getattr(..., default) raises and catches AttributeError inside (~0.4 us, and
    # every recorded op asks).
    enabled = True


_state = _GradState()


def is_grad_enabled() -> bool:
    """True when ops record autograd history."""
    return _state.enabled


def _set(flag: bool) -> None:
    _state.enabled = bool(flag)


class _GradMode:
    """Base of the grad-mode managers: context manager and decorator."""

    _target: bool = True

    def __new__(cls, orig_func=None):
        # `@fg.no_grad` without parentheses decorates directly, as torch allows.
        self = super().__new__(cls)
        if orig_func is not None and callable(orig_func) and cls is not set_grad_enabled:
            return self(orig_func)
        return self

    def __init__(self, orig_func=None):
        pass

    def __enter__(self):
        self._prev = is_grad_enabled()
        _set(self._target)
        return self

    def __exit__(self, *exc):
        _set(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with type(self)():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradMode):
    """Disable gradient recording: `with fg.no_grad():` or `@fg.no_grad()`."""

    _target = False


class enable_grad(_GradMode):
    """Enable gradient recording inside a no_grad region."""

    _target = True


class set_grad_enabled(_GradMode):
    """`fg.set_grad_enabled(flag)`: sets the mode at once, and restores it when used with `with`."""

    def __new__(cls, mode: bool):
        return object.__new__(cls)

    def __init__(self, mode: bool):
        self._prev = is_grad_enabled()
        self._target = bool(mode)
        _set(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set(self._prev)
        return False

    def __call__(self, fn):
        _set(self._prev)
        mode = self._target

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)
        return wrapper
