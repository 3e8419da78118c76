"""torch.autograd.graph: hooks on what the graph saves, and the graph's node type.

- `saved_tensors_hooks(pack_hook, unpack_hook)`: while the context is active, each tensor an
  eager node saves for backward goes through `pack_hook` (under no_grad) and the node keeps
  its result; the backward gets the tensor back from `unpack_hook`. A packed value takes no
  part in the version check (torch's rule: the hooks decide what the backward reads).
- `save_on_cpu(pin_memory=False, device_type="cuda")`: hooks that keep each saved tensor on
  the CPU (where fusegrad's already are: the tensor itself, or with pin_memory a copy).
- `disable_saved_tensors_hooks(error_message)`: registering hooks inside raises
  RuntimeError(error_message), as entering it with hooks registered does.
- `Node`: the abstract type of every grad_fn (isinstance(y.grad_fn, Node) holds).
- `increment_version(tensor)`: bump a tensor's (or each of an iterable's) version counter.
- `register_multi_grad_hook(tensors, fn, *, mode="all")`: torch's Python over tensor hooks,
  keyed per backward call (the engine's GRAPH_TASK, torch's graph task): "all" calls fn(grads)
  once the gradients of the given tensors this backward computes are ready, "any" fn(grad)
  with the first of them.
- `GradientEdge(node, output_nr)` and `get_gradient_edge(tensor)`: where a tensor's gradient
  flows (its grad_fn and output_nr, or its leaf's AccumulateGrad); autograd.grad and
  backward(inputs=...) take one as an input (tracer/engine.py).

The hooks are the eager engine's (tracer/saved_hooks.py); a compiled call's node saves
arrays of its own program, which they do not see.
"""
from __future__ import annotations

import abc
import contextlib
import functools
import threading
from collections import defaultdict

from fusegrad.tracer import engine, saved_hooks
from fusegrad.tracer.creation import empty
from fusegrad.tracer.dispatch import edge_of
from fusegrad.tracer.engine import GradientEdge
from fusegrad.tracer.grad_mode import enable_grad
from fusegrad.tracer.hooks import RemovableHandle
from fusegrad.tracer.node import Node as _TracerNode
from fusegrad.tracer.tensor import Tensor

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks", "register_multi_grad_hook", "Node",
           "GradientEdge", "get_gradient_edge", "increment_version"]


class saved_tensors_hooks:
    """Context manager setting a pair of pack / unpack hooks for saved tensors.

    `pack_hook(tensor) -> object` runs each time a node saves a tensor for backward;
    `unpack_hook(object) -> Tensor` runs each time the backward (or a `_saved_*` attribute, or
    `ctx.saved_tensors`) reads it. Nested contexts: the innermost pair applies."""

    def __init__(self, pack_hook, unpack_hook) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        saved_hooks.push_hooks(self.pack_hook, self.unpack_hook)

    def __exit__(self, *args: object) -> None:
        saved_hooks.pop_hooks()


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors moved to the CPU and back to their device for backward (torch's
    offloading hooks). fusegrad's tensors live on the CPU: without `pin_memory` the tensor
    itself is kept (torch's .cpu() of a CPU tensor), with it a copy. `device_type` is
    accepted as torch's."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(tensor):
            if not pin_memory:
                return tensor.device, tensor.cpu()     # (a CPU tensor itself, as torch's .cpu())
            # (a pinned copy: nothing to pin on the CPU alone, as torch without an accelerator)
            packed = empty(tensor.size(), dtype=tensor.dtype)
            packed.copy_(tensor)
            return tensor.device, packed

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str):
    """Context manager (and decorator) in which registering saved-tensor hooks raises
    RuntimeError(error_message); entering it while hooks are registered raises the same."""
    saved_hooks.push_disabled(error_message)
    try:
        yield
    finally:
        saved_hooks.pop_disabled()


class Node(abc.ABC):
    """The abstract type of autograd graph nodes: every grad_fn (built-in, custom Function,
    compiled call) is an instance; it cannot be instantiated itself."""

    @abc.abstractmethod
    def name(self) -> str:
        """The node's name (its class name for the built-in nodes)."""

    @property
    @abc.abstractmethod
    def next_functions(self) -> tuple:
        """((node, output_nr) or (None, 0)) for each differentiable input."""

    @property
    @abc.abstractmethod
    def metadata(self) -> dict:
        """A dict for the user's data, one per node."""

    @abc.abstractmethod
    def register_hook(self, fn):
        """Register fn(grad_inputs, grad_outputs), run after the node's backward."""

    @abc.abstractmethod
    def register_prehook(self, fn):
        """Register fn(grad_outputs), run before the node's backward."""

    @classmethod
    def __subclasshook__(cls, subclass: type) -> bool:
        if cls is Node and issubclass(subclass, _TracerNode):
            return True
        return NotImplemented


def increment_version(tensor) -> None:
    """Bump the version counter of `tensor` (or of each tensor of an iterable), as an in-place
    write would: a node that saved it then raises the version error in backward."""
    tensors = (tensor,) if isinstance(tensor, Tensor) else tuple(tensor)
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"increment_version(): expected a Tensor, got {type(t).__name__}")
        t._vbox[0] += 1


def _get_grad_fn_or_grad_acc(t):
    """The node a tensor's gradient flows into: its grad_fn, or a leaf's AccumulateGrad (made if
    it has none yet, as torch's); a GradientEdge's node."""
    if isinstance(t, GradientEdge):
        return t.node
    if t.requires_grad and t.grad_fn is None:
        with enable_grad():
            edge = edge_of(t)
        node = edge[0] if edge is not None else None
    else:
        node = t.grad_fn
    if node is None:
        raise AssertionError("Expected gradient function to be set")
    return node


def get_gradient_edge(tensor) -> GradientEdge:
    """The GradientEdge where `tensor`'s gradient is computed: its grad_fn and output_nr, or its
    leaf's AccumulateGrad and 0. `autograd.grad(loss, [get_gradient_edge(x)])` is
    `autograd.grad(loss, [x])`."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require "
                           "gradients")
    return GradientEdge(_get_grad_fn_or_grad_acc(tensor), tensor.output_nr)


class _MultiHandle(RemovableHandle):
    """What register_multi_grad_hook returns: `remove()` removes the hook from every tensor."""

    def __init__(self, handles: tuple) -> None:      # (not RemovableHandle's: no hooks dict of its own)
        self.handles = handles

    def remove(self) -> None:
        """Remove the hook from every tensor (again: nothing happens)."""
        for handle in self.handles:
            handle.remove()

    def __getstate__(self) -> tuple:
        return self.handles

    def __setstate__(self, state: tuple) -> None:
        self.handles = state


def register_multi_grad_hook(tensors, fn, *, mode: str = "all") -> RemovableHandle:
    """Register a hook over the gradients of several tensors (torch's, over tensor hooks).

    mode "all": once a backward has computed the gradients of every tensor of `tensors` it
    computes (a tensor whose node it does not run, off its path or not needed for its
    `inputs`, is not waited for), `fn(grads)` is called with the list of them, None for the
    others. mode "any": `fn(grad)` is called with the first gradient a backward computes among
    them. Both once per backward call. Returns a handle whose `remove()` unregisters it."""
    supported_modes = ("all", "any")
    lock = threading.Lock()
    if mode not in supported_modes:
        raise ValueError(f"Expects mode to be one of {supported_modes} but got {mode}")

    if mode == "all":
        count: dict = {}
        nb_calls = None
        buffer: dict = {}
        grad_fns = list(map(_get_grad_fn_or_grad_acc, tensors))
        len_tensors = len(tensors)

        def get_inner_hook(idx: int):
            def inner_hook(grad) -> None:
                nonlocal nb_calls
                task = engine.current_graph_task_id()
                if task == -1:
                    raise AssertionError("expected this hook to be called inside a backward call")
                count[task] = count.get(task, 0)
                buffer[task] = buffer.get(task, [None] * len_tensors)
                with lock:
                    curr_count, count[task] = count[task], count[task] + 1
                    if curr_count == 0:
                        # on the first call of a backward, how many of the hooks it will call
                        nb_calls = sum(map(engine.will_execute_node, grad_fns))
                buffer[task][idx] = grad
                if nb_calls is None:
                    raise AssertionError("Expected nb_calls to be set")
                if curr_count == nb_calls - 1:
                    fn(buffer[task])
                    del count[task]
                    del buffer[task]
            return inner_hook

        handles = tuple(t.register_hook(get_inner_hook(i)) for i, t in enumerate(tensors))
    else:
        ran_hook: dict = defaultdict(bool)

        @functools.wraps(fn)
        def wrapped_fn(grad) -> None:
            task = engine.current_graph_task_id()
            if task == -1:
                raise AssertionError("expected this hook to be called inside a backward call")
            with lock:
                prev, ran_hook[task] = ran_hook[task], True
            if prev:
                return
            fn(grad)

        handles = tuple(tensor.register_hook(wrapped_fn) for tensor in tensors if tensor.requires_grad)
    return _MultiHandle(handles)
