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

The hooks are the eager engine's (tracer/saved_hooks.py); a compiled call's node saves
arrays of its own program, which they do not see.
"""
from __future__ import annotations

import abc
import contextlib

from fusegrad.tracer import saved_hooks
from fusegrad.tracer.creation import empty
from fusegrad.tracer.node import Node as _TracerNode
from fusegrad.tracer.tensor import Tensor

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks", "Node", "increment_version"]


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
