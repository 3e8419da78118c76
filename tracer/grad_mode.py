"""Grad mode: whether ops record history (torch.no_grad and friends).

The flag is thread-local, as torch's is. Each manager works as a context
manager (`with` binds None, as torch's) and as a decorator; a decorated
generator function runs every step of its body in the manager's mode, as
torch's context_decorator does.
"""
from __future__ import annotations

import functools
import inspect
import threading

class _GradState(threading.local):
    # A class-level default: reading an attribute a thread never set through
    # getattr(..., default) raises and catches AttributeError inside (~0.4 us, and
    # every recorded op asks).
    enabled = True


_state = _GradState()


# How many fg.grad / fg.value_and_grad calls are running their function now (runtime.transforms):
# backward() and requires_grad_() there raise, as inside torch.func's transforms.
TRANSFORMS_RUNNING = [0]
# Whether a transform has returned and left its argument leaves behind (their nodes stay in the
# graphs of its results; saved_checks._outer_level_slots looks for them only once there are some)
ARGUMENT_LEAVES_LEFT = [False]
# Per running transform, innermost last: the leaves made to require grad while its function
# runs (a Parameter, `torch.ones(3, requires_grad=True)`). They are that transform's own, as
# in torch.func, where they live at its level: no history reaches the caller through them.
TRANSFORM_LEAVES: list = []


def note_new_leaf(t) -> None:
    """Record leaf `t`, just made to require grad, as the innermost running transform's."""
    if TRANSFORM_LEAVES:
        TRANSFORM_LEAVES[-1].append(t)


def is_grad_enabled() -> bool:
    """True when ops record autograd history."""
    return _state.enabled


def _set(flag: bool) -> None:
    _state.enabled = bool(flag)


def _check_mode(mode) -> bool:
    """`mode` if it is a Python bool: torch's `_set_grad_enabled` takes nothing else."""
    if not isinstance(mode, bool):
        from .parser_errors import type_name        # (the error path only: parser_errors imports tensor)
        raise TypeError(f"set_grad_enabled(): argument 'enabled' (position 1) must be bool, not {type_name(mode)}")
    return mode


def _decorate(make_manager, fn):
    """`fn` running inside a fresh manager from `make_manager()` on every call (and, for a
    generator function, around every step of the generator, so the caller's mode between
    steps is left alone)."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def generator(*args, **kwargs):
            gen = fn(*args, **kwargs)
            try:
                with make_manager():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with make_manager():
                            gen.close()
                        raise
                    except BaseException as error:      # thrown in by the caller: pass it on
                        with make_manager():
                            response = gen.throw(error)
                    else:
                        with make_manager():
                            response = gen.send(request)
            except StopIteration as stop:
                return stop.value
        return generator

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with make_manager():
            return fn(*args, **kwargs)
    return wrapper


class _NoParamDecoratorContextManager:
    """Base of the grad-mode managers: context manager and decorator (torch's class name, which
    Python's texts for a bad call of no_grad / enable_grad give)."""

    _target: bool = True

    def __new__(cls, orig_func=None):
        # `@fg.no_grad` without parentheses decorates directly, as torch allows (anything but
        # None, as torch's: `fg.no_grad(3)` is a function that raises when called)
        self = super().__new__(cls)
        if orig_func is not None:
            return self(orig_func)
        return self

    def __init__(self, orig_func=None):
        pass

    def __enter__(self) -> None:
        self.prev = is_grad_enabled()
        _set(self._target)

    def __exit__(self, *exc):
        _set(self.prev)
        return False

    def __call__(self, fn):
        return _decorate(self.clone, fn)

    def clone(self):
        """A fresh manager of the same kind (a decorator enters one per call)."""
        return type(self)()


class no_grad(_NoParamDecoratorContextManager):
    """Disable gradient recording: `with fg.no_grad():`, `@fg.no_grad()` or `@fg.no_grad`."""

    _target = False


class enable_grad(_NoParamDecoratorContextManager):
    """Enable gradient recording inside a no_grad region."""

    _target = True


class set_grad_enabled(_NoParamDecoratorContextManager):
    """`fg.set_grad_enabled(mode)`: sets the mode at once (a function call), and restores
    the previous mode when used with `with` or as a decorator."""

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, mode: bool):
        self.prev = is_grad_enabled()
        self.mode = _check_mode(mode)
        _set(mode)

    def __enter__(self) -> None:
        _set(self.mode)

    def __exit__(self, *exc):
        _set(self.prev)
        return False

    def __call__(self, fn):
        # As a decorator it changes nothing now: each call runs in `mode`.
        _set(self.prev)
        return _decorate(self.clone, fn)

    def clone(self):
        """A manager for the same mode (restoring whatever mode is current when made)."""
        prev = is_grad_enabled()
        manager = type(self)(self.mode)
        _set(prev)
        return manager

    def __repr__(self) -> str:
        return f"fusegrad.autograd.grad_mode.set_grad_enabled(mode={self.mode})"

    __str__ = __repr__


_INFERENCE = threading.local()
# inference_mode(True) contexts entered and not yet left, in any thread: the fast pre-check of
# Tensor._init, which marks the tensors made inside one
INFERENCE_DEPTH = [0]
# whether any inference tensor was ever made: the fast pre-check of the errors they raise
INFERENCE_MADE = [False]

_INPLACE_INFERENCE = ("Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone "
                      "to get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 "
                      "for more details.")
_REQUIRES_GRAD_INFERENCE = "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed."
_SAVED_INFERENCE = ("Inference tensors cannot be saved for backward. Please do not use Tensors created in inference "
                    "mode in computation tracked by autograd. To work around this, you can make a clone to get a "
                    "normal tensor and use it in autograd, or use `torch.no_grad()` instead of "
                    "`torch.inference_mode()`.")


def is_inference_mode_enabled() -> bool:
    """True inside `fg.inference_mode()`."""
    return getattr(_INFERENCE, "enabled", False)


def mark_inference(t) -> None:
    """`t` is an inference tensor: made inside inference_mode, or a view of one."""
    t.__dict__["_inference"] = True
    INFERENCE_MADE[0] = True


def is_inference_tensor(t) -> bool:
    """Whether `t` is an inference tensor (torch's Tensor.is_inference)."""
    return INFERENCE_MADE[0] and t.__dict__.get("_inference", False)


def check_inference_write(t) -> None:
    """torch's error for an in-place write of an inference tensor outside inference_mode."""
    if INFERENCE_MADE[0] and t.__dict__.get("_inference", False) and not is_inference_mode_enabled():
        raise RuntimeError(_INPLACE_INFERENCE)


def check_inference_requires_grad(t) -> None:
    """torch's error for requires_grad=True on an inference tensor outside inference_mode."""
    if INFERENCE_MADE[0] and t.__dict__.get("_inference", False) and not is_inference_mode_enabled():
        raise RuntimeError(_REQUIRES_GRAD_INFERENCE)


def check_inference_saved(t) -> None:
    """torch's error for an inference tensor an op would save for backward (its node's
    SavedVariable refuses it, when the op runs)."""
    if t is not None and t.__dict__.get("_inference", False):
        raise RuntimeError(_SAVED_INFERENCE)


class inference_mode(_NoParamDecoratorContextManager):
    """`with fg.inference_mode():` (also `@fg.inference_mode()` / `@fg.inference_mode`): no
    gradient recording, as under no_grad; `inference_mode(False)` turns recording on. Tensors
    made eagerly inside (and views of them) are inference tensors, as torch's: is_inference()
    says so, and outside inference_mode an in-place write, requires_grad_() or an op that would
    save one for backward raises torch's error."""

    def __new__(cls, mode=True):
        self = object.__new__(cls)
        if callable(mode) and not isinstance(mode, bool):     # `@fg.inference_mode` with no call
            self.mode = True
            return self(mode)
        return self

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def __enter__(self) -> None:
        self.prev, self.prev_inference = is_grad_enabled(), is_inference_mode_enabled()
        _set(not self.mode)                 # (torch's InferenceMode guard sets grad mode to !enabled)
        _INFERENCE.enabled = self.mode
        INFERENCE_DEPTH[0] += 1

    def __exit__(self, *exc):
        _set(self.prev)
        _INFERENCE.enabled = self.prev_inference
        INFERENCE_DEPTH[0] -= 1
        return False

    def clone(self):
        """A fresh manager of the same mode (a decorator enters one per call)."""
        return type(self)(self.mode)
