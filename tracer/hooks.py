"""Tensor.register_hook: functions a backward calls with a tensor's gradient, whose
result (when not None) replaces it, as torch's tensor hooks.

A leaf's hooks live on the tensor and run on its total gradient before it is
accumulated into `.grad` (or returned by autograd.grad). A non-leaf's hooks live on
its grad_fn node, keyed by its output number, and run when the engine has summed the
gradient of that output, before the node's VJP reads it (and before retain_grad()
keeps it, as torch runs the retain hook last). `NODE_HOOKS` is empty unless some
non-leaf has a hook, and the engine's node loop tests a flag (ANY_NODE_HOOKS) before it.
"""
from __future__ import annotations

import itertools
import weakref

import numpy as np

from fusegrad.ir.types import TORCH_TYPE_NAMES

from .grad_mode import enable_grad, no_grad
from .tensor import Tensor

# grad_fn node -> {output_nr: {handle id: hook}} for hooks on non-leaf tensors; ANY_NODE_HOOKS[0]
# turns true at the first (a WeakKeyDictionary's own truth test costs a Python-level len())
NODE_HOOKS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
ANY_NODE_HOOKS = [False]
ANY_LEAF_HOOKS = [False]        # (a leaf hook was registered: the engine looks for them on its targets)
_ids = itertools.count()


class RemovableHandle:
    """What register_hook returns: `remove()` unregisters the hook (also on leaving a `with`)."""

    def __init__(self, hooks: "_Hooks"):
        self.id = next(_ids)
        self._hooks = weakref.ref(hooks)

    def remove(self) -> None:
        """Unregister the hook (again: nothing happens)."""
        hooks = self._hooks()
        if hooks is not None:
            hooks.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


class _Hooks(dict):
    """handle id -> hook, in registration order (a dict that can be weakly referenced)."""

    __slots__ = ("__weakref__",)


def register_hook(t: Tensor, hook) -> RemovableHandle:
    """Register `hook(grad) -> Tensor or None` on `t` (see the module docstring)."""
    if not t._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if t._data is None:
        raise NotImplementedError("fusegrad: register_hook on a tensor computed inside fg.compile is not "
                                  "supported; register it on a leaf, or outside the compiled function")
    if t._grad_fn is None:
        ANY_LEAF_HOOKS[0] = True
        if t.__dict__.get("_hooks") is None:
            t._hooks = _Hooks()
        hooks = t._hooks
    else:
        ANY_NODE_HOOKS[0] = True
        per_output = NODE_HOOKS.setdefault(t._grad_fn, {})
        hooks = per_output.setdefault(t._output_nr, _Hooks())
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def _hook_name(hook) -> str:
    return getattr(hook, "__name__", type(hook).__name__)


def _checked(hook, before: Tensor, result) -> Tensor:
    """torch's checks of a hook's result: a tensor of the gradient's shape and dtype."""
    if not isinstance(result, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(result).__name__}'")
    if tuple(result.shape) != tuple(before.shape):
        raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the size of value")
    if result.dtype is not before.dtype:
        raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the type of value (was "
                           f"{TORCH_TYPE_NAMES[before.dtype.name]} got {TORCH_TYPE_NAMES[result.dtype.name]})")
    return result


def run_on_tensor(hooks: dict, grad: Tensor, create_graph: bool) -> Tensor:
    """`grad` passed through each hook in turn (grad mode on only with create_graph)."""
    with (enable_grad() if create_graph else no_grad()):
        for hook in list(hooks.values()):
            result = hook(grad)
            if result is not None:
                grad = _checked(hook, grad, result)
    return grad


def run_on_array(hooks: dict, grad: np.ndarray) -> np.ndarray:
    """The engine's form: a gradient array (a copy is what the hooks see, since arrays are
    shared between edges) through the hooks, back to an array."""
    if not hooks:
        return grad
    return run_on_tensor(hooks, Tensor._wrap(np.array(grad, copy=True)), False)._concrete()


def leaf_hooks(t: Tensor) -> dict | None:
    """The hooks of leaf `t`, or None."""
    return t.__dict__.get("_hooks") or None


def node_hooks(node, output_nr: int) -> dict | None:
    """The hooks of the non-leaf that is output `output_nr` of `node`, or None."""
    per_output = NODE_HOOKS.get(node)
    return per_output.get(output_nr) if per_output else None
