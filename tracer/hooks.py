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

from fusegrad.ir import OPS
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

    def __init__(self, hooks: "_Hooks", extra_dicts: tuple = ()):
        self.id = next(_ids)
        self._hooks = weakref.ref(hooks)
        # (dicts that note something of the hook by its id, torch's extra_dict: a module's
        # _forward_hooks_with_kwargs; the entry goes with the hook)
        self._extra = tuple(weakref.ref(d) for d in extra_dicts)

    def remove(self) -> None:
        """Unregister the hook (again: nothing happens)."""
        for ref in (self._hooks,) + self._extra:
            hooks = ref()
            if hooks is not None:
                hooks.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


class _Hooks(dict):
    """handle id -> hook, in registration order (a dict that can be weakly referenced)."""

    __slots__ = ("__weakref__",)


def _added(hooks: _Hooks, hook) -> RemovableHandle:
    """`hook` appended to `hooks`; the handle that removes it."""
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


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
    return _added(hooks, hook)


ANY_POST_ACCUMULATE_HOOKS = [False]     # (a leaf's post-accumulate hook was registered: see below)


def register_post_accumulate_hook(t: Tensor, hook) -> RemovableHandle:
    """torch's Tensor.register_post_accumulate_grad_hook: hook(t) runs after a backward()
    accumulated into leaf t's .grad (not for autograd.grad, which accumulates nothing)."""
    if not t._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if not t.is_leaf:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    from . import trace_state
    if trace_state.current() is not None or t._data is None:
        raise NotImplementedError("fusegrad: register_post_accumulate_grad_hook inside fg.compile is not supported; "
                                  "register it outside the compiled function")
    ANY_POST_ACCUMULATE_HOOKS[0] = True
    hooks = t.__dict__.get("_post_accumulate_hooks")
    if hooks is None:
        hooks = t.__dict__["_post_accumulate_hooks"] = _Hooks()
    return _added(hooks, hook)


def post_accumulate_hooks(t: Tensor) -> dict | None:
    """The post-accumulate hooks of leaf `t`, or None."""
    return t.__dict__.get("_post_accumulate_hooks") or None


def run_post_accumulate(tensors) -> None:
    """Each leaf's post-accumulate hooks, now that its .grad holds this backward's gradient."""
    for t in tensors:
        hooks = post_accumulate_hooks(t)
        if hooks:
            with no_grad():
                for hook in list(hooks.values()):
                    result = hook(t)
                    if result is not None and not isinstance(result, Tensor):
                        raise TypeError(f"expected Variable, but hook returned '{type(result).__name__}'")
                    if result is not None:
                        raise RuntimeError("Tensor post accumulate grad hooks should return None.")


# keys of a node's own hooks in its NODE_HOOKS entry (beside its outputs' numbers)
PRE_HOOKS, POST_HOOKS = "pre", "post"


def register_node_hook(node, hook, kind: str) -> RemovableHandle:
    """Register a grad_fn node's own hook: `PRE_HOOKS`, hook(grad_outputs) -> tuple or None,
    run on the gradients of its outputs before its backward (after its tensors' hooks);
    `POST_HOOKS`, hook(grad_inputs, grad_outputs) -> tuple or None, run on the gradients it
    computed for its inputs (None where an input needs none). A tuple replaces them."""
    from . import trace_state
    if trace_state.current() is not None:
        # (a node of a traced value is made on demand; the compiled backward does not run hooks)
        raise NotImplementedError("fusegrad: registering a hook on a grad_fn node inside fg.compile is not "
                                  "supported; register it outside the compiled function")
    ANY_NODE_HOOKS[0] = True
    hooks = NODE_HOOKS.setdefault(node, {}).setdefault(kind, _Hooks())
    return _added(hooks, hook)


def _hooks_view(grad: np.ndarray) -> Tensor:
    """What a hook sees of a gradient array: a copy (arrays are shared between edges, and a
    hook may write its argument in place), except an expand's read-only view (a sum's
    gradient), which torch hands its hooks as that expand (strides 0, not contiguous; an
    in-place write of it raises torch's overlap error), and which nothing can write."""
    if not grad.flags.writeable and 0 in grad.strides and grad.size > 1:
        return Tensor._wrap(grad)
    return Tensor._wrap(np.array(grad, copy=True))


def _as_tensors(arrays) -> tuple:
    return tuple(None if a is None else _hooks_view(a) for a in arrays)


def _replaced(hook, before: tuple, result) -> tuple:
    """torch's checks of a node hook's result: a tuple of as many values, each of its
    gradient's shape and dtype (None where there was none)."""
    if not isinstance(result, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(result).__name__}'")
    if len(result) != len(before):
        raise RuntimeError(f"hook '{_hook_name(hook)}' has returned an incorrect number of values (got "
                           f"{len(result)}, but expected {len(before)})")
    return tuple(r if r is None or b is None else _checked(hook, b, r) for r, b in zip(result, before))


def _differentiable_outputs(node) -> list:
    """The indices of `node`'s outputs that take a gradient (torch's node has only those: max's
    indices are none of them)."""
    if node.op is None:
        return [0]          # a leaf's AccumulateGrad: its one input, the leaf's gradient
    nondiff = OPS[node.op].nondiff_outputs
    return [k for k, t in enumerate(node.out_types) if k not in nondiff and t.dtype.is_floating_point]


def run_prehooks(node, gs: tuple) -> tuple:
    """The gradients of `node`'s outputs (arrays or None) through its pre-hooks."""
    hooks = node_hooks(node, PRE_HOOKS)
    if not hooks:
        return gs
    outputs = _differentiable_outputs(node)
    tensors = _as_tensors([gs[k] for k in outputs])
    with no_grad():
        for hook in list(hooks.values()):
            result = hook(tensors)
            if result is not None:
                tensors = _replaced(hook, tensors, result)
    gs = list(gs)
    for k, t in zip(outputs, tensors):
        gs[k] = None if t is None else t._concrete()
    return tuple(gs)


def run_posthooks(node, grad_inputs: list, gs: tuple) -> list:
    """The gradients `node` computed for its inputs (arrays or None, one per input) through
    its post-hooks, which also see its outputs' gradients `gs`."""
    hooks = node_hooks(node, POST_HOOKS)
    if not hooks:
        return grad_inputs
    tensors, outputs = _as_tensors(grad_inputs), _as_tensors([gs[k] for k in _differentiable_outputs(node)])
    with no_grad():
        for hook in list(hooks.values()):
            result = hook(tensors, outputs)
            if result is not None:
                tensors = _replaced(hook, tensors, result)
    return [None if t is None else t._concrete() for t in tensors]


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


def run_on_tensor(hooks: dict, grad: Tensor | None, create_graph: bool) -> Tensor | None:
    """`grad` passed through each hook in turn (grad mode on only with create_graph). A None
    gradient (an output of a node that runs which got none: unbind's unused parts) reaches
    the hooks as None, as torch's, and must stay None."""
    with (enable_grad() if create_graph else no_grad()):
        for hook in list(hooks.values()):
            result = hook(grad)
            if result is not None:
                if grad is None:
                    raise RuntimeError("can't replace a None gradient with a non-None value")
                grad = _checked(hook, grad, result)
    return grad


def run_on_array(hooks: dict, grad: np.ndarray | None) -> np.ndarray | None:
    """The engine's form: a gradient array (a copy is what the hooks see, since arrays are
    shared between edges) through the hooks, back to an array (None stays None)."""
    if not hooks:
        return grad
    if grad is None:
        return run_on_tensor(hooks, None, False)
    return run_on_tensor(hooks, _hooks_view(grad), False)._concrete()


def leaf_hooks(t: Tensor) -> dict | None:
    """The hooks of leaf `t`, or None."""
    return t.__dict__.get("_hooks") or None


def node_hooks(node, output_nr: int) -> dict | None:
    """The hooks of the non-leaf that is output `output_nr` of `node`, or None."""
    per_output = NODE_HOOKS.get(node)
    return per_output.get(output_nr) if per_output else None
