"""Index arithmetic inside a kernel: which loop index reads which element.

A kernel loops over an iteration space (a shape) with one loop variable per
dimension. Inside it, every value is read at an *index*: a tuple with one
entry per dimension of that value, each the number of the kernel dimension
whose loop variable indexes it, or None for the constant 0 (a size-1, that
is broadcast, dimension). Movement ops that fuse (expand, permute, reshapes
that only add or drop size-1 dims) are nothing but maps between such tuples,
so they cost no copy; broadcasting is the same map as expand.

Dimensions of size 1 always read index 0, which is what lets a kernel be
specialised on "which dims are size 1" and on nothing else about sizes.
One more kind of entry, `Clamped`, reads a loop variable shifted back and
clamped into an operand's range (cat's operands, through `pad_edge`); its
offset and bound are kernel arguments, not constants in the source.

Which movement ops fuse, and how, is the op table's knowledge: `OpDef.index_map`
(ir/ops/movement.py, where the index helpers below live); `OpDef.view` marks
the ops NumPy performs as views between kernels.
"""
from __future__ import annotations

from fusegrad.ir.ops import MOVEMENT, OPS
from fusegrad.ir.ops.movement import Clamped, index_dims  # noqa: F401  (for the source generator)
from fusegrad.ir.ops.movement import broadcast_index, canonical_index, permute_index

Index = tuple  # of int | None | Clamped


canonical = canonical_index
broadcast = broadcast_index
permute = permute_index


def identity(shape: tuple) -> Index:
    """The index of a value whose dims are the kernel's dims, in order."""
    return canonical(tuple(range(len(shape))), shape)


def _index_map(ins):
    """The op table's index map of a movement instruction, or None (it moves data)."""
    opdef = OPS[ins.op]
    if opdef.group != MOVEMENT or opdef.index_map is None:
        return None
    return opdef.index_map(ins.inputs[0].shape, ins.outputs[0].shape, dict(ins.attrs))


def is_view(ins) -> bool:
    """Movement instructions NumPy performs as a view (no copy) between kernels."""
    return OPS[ins.op].group == MOVEMENT and OPS[ins.op].view


def inlinable_movement(ins) -> bool:
    """Movement instructions a kernel performs as index arithmetic (OpDef.index_map)."""
    return _index_map(ins) is not None


def operand_index(ins, index: Index, k: int) -> Index:
    """The index at which operand `k` of elementwise or inlinable movement
    instruction `ins` is read when its output is read at `index`."""
    if OPS[ins.op].group == MOVEMENT:
        index_map = _index_map(ins)
        if index_map is not None:
            return index_map(index)
    return broadcast(index, ins.outputs[0].shape, ins.inputs[k].shape)   # elementwise broadcasting


def reduction_home(space: tuple, axes: tuple, out_shape: tuple, keepdim: bool) -> Index:
    """The index at which a reduction's result is available inside its kernel:
    every kept dim reads the kernel's loop variable for it."""
    if keepdim:
        return canonical(tuple(None if d in axes else d for d in range(len(space))), out_shape)
    return canonical(tuple(d for d in range(len(space)) if d not in axes), out_shape)
