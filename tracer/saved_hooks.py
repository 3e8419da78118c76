"""Saved-tensor hooks: torch.autograd.graph.saved_tensors_hooks in the eager engine.

While hooks are registered, every tensor a node saves for its backward is handed to the
innermost `pack_hook` (under no_grad) as the node is recorded, and the node keeps only what
the hook returned; its backward (or a `_saved_<name>` attribute, or a custom Function's
`ctx.saved_tensors`) calls `unpack_hook` on that object for the tensor it reads. As in
torch, a packed value takes no part in the version-counter check: the hook decides what the
backward sees. The packing happens where the node is made (tracer/dispatch.py and
custom_function.py call `pack_node`); the engine reads a packed value through the same
`SavedTensor` interface as any other, so nothing else needs to know.

Nodes of compiled calls (fg.compile) save arrays of their own program; hooks do not see
them (README: differences from torch).
"""
from __future__ import annotations

from fusegrad.ir import OPS

from .grad_mode import no_grad
from .node import SavedTensor

# The registered (pack_hook, unpack_hook) pairs, innermost last. Dispatch tests the list's
# truth before packing (one check an op while none is registered).
HOOKS: list = []
# The messages of the disable_saved_tensors_hooks contexts entered, innermost last.
DISABLED: list = []


def push_hooks(pack_hook, unpack_hook) -> None:
    """Register a pair of hooks (entering saved_tensors_hooks); torch's error while disabled."""
    if DISABLED:
        raise RuntimeError(DISABLED[-1])
    HOOKS.append((pack_hook, unpack_hook))


def pop_hooks() -> None:
    """Unregister the innermost pair (leaving saved_tensors_hooks)."""
    HOOKS.pop()


def push_disabled(error_message: str) -> None:
    """Forbid registering hooks until pop_disabled (torch raises the message at once where
    hooks are registered already)."""
    if HOOKS:
        raise RuntimeError(error_message)
    DISABLED.append(error_message)


def pop_disabled() -> None:
    DISABLED.pop()


class PackedSaved(SavedTensor):
    """A saved value held as what `pack_hook` returned: `array` calls `unpack_hook` (each read
    is one unpacking, as each of torch's is). Its version box is its own, so the version check
    never fires, as torch skips it for hooked values."""

    __slots__ = ("packed", "unpack_hook", "dtype", "shape")

    def __init__(self, packed, unpack_hook, dtype, shape):
        # (SavedTensor's fields but `array`, which this class computes)
        self.box, self.version, self.tensor = [0], 0, None
        self.packed, self.unpack_hook, self.dtype, self.shape = packed, unpack_hook, dtype, shape

    def unpacked(self):
        """The tensor `unpack_hook` gives back (torch's TypeError for anything else)."""
        from .tensor import Tensor
        result = self.unpack_hook(self.packed)
        if not isinstance(result, Tensor):
            raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                            f"{type(result).__name__}")
        if tuple(result.shape) != self.shape:
            # (torch's formula would fail later or broadcast: refused here, naming the hook)
            raise RuntimeError(f"unpack_hook returned a tensor of shape {list(result.shape)}, but the saved "
                               f"tensor had shape {list(self.shape)}")
        return result

    @property
    def array(self):
        array = self.unpacked()._concrete()
        # (a hook that returns another dtype, as a float64 copy: the node's program is typed
        # by the saved dtype; torch computes in the other and casts the gradient back)
        return array if array.dtype == self.dtype else array.astype(self.dtype)


def _pack_order(node) -> list:
    """The node's saved slots in the order torch's node saves them: its unpack order where the
    op table gives one (pow: exponent, self, result), else inputs last-first (MulBackward0
    saves other, then self), then outputs."""
    order = OPS[node.op].extra.get("unpack_order") if node.op in OPS else None
    slots = list(node.saved)
    if order is not None:
        return [s for s in order if s in node.saved] + [s for s in slots if s not in order]
    inputs = sorted([s for s in slots if s[0] == "in"], key=lambda s: -s[1])
    return inputs + sorted([s for s in slots if s[0] == "out"], key=lambda s: s[1])


def pack_node(node, outputs) -> None:
    """Pack what `node` saved through the innermost hooks (its `saved` dict is replaced slot
    by slot); `outputs`: the node's output tensors, handed to the hook for a saved result."""
    if not node.saved:
        return
    pack_hook, unpack_hook = HOOKS[-1]
    for slot in _pack_order(node):
        saved = node.saved[slot]
        tensor = saved.tensor if slot[0] == "in" and saved.tensor is not None else None
        if tensor is None:
            tensor = outputs[slot[1]] if slot[0] == "out" else _wrapped(saved)
        node.saved[slot] = pack_tensor(tensor, pack_hook, unpack_hook)


def pack_tensor(tensor, pack_hook=None, unpack_hook=None) -> PackedSaved:
    """`tensor` packed by the given hooks (default: the innermost registered pair)."""
    if pack_hook is None:
        pack_hook, unpack_hook = HOOKS[-1]
    with no_grad():
        packed = pack_hook(tensor)
    return PackedSaved(packed, unpack_hook, tensor._concrete().dtype, tuple(tensor.shape))


def _wrapped(saved):
    from .tensor import Tensor
    return Tensor._wrap(saved.array)
