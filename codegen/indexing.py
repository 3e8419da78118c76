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
"""
from __future__ import annotations

from fusegrad.ir.ops import MOVEMENT, OPS

Index = tuple  # of int | None


def canonical(index: Index, shape: tuple) -> Index:
    """`index` with every size-1 dimension reading the constant 0."""
    return tuple(None if s == 1 else i for i, s in zip(index, shape))


def identity(shape: tuple) -> Index:
    """The index of a value whose dims are the kernel's dims, in order."""
    return canonical(tuple(range(len(shape))), shape)


def broadcast(index: Index, out_shape: tuple, in_shape: tuple) -> Index:
    """Index of an operand of shape `in_shape` broadcast to `out_shape`."""
    lead = len(out_shape) - len(in_shape)
    return tuple(None if s == 1 else index[lead + j] for j, s in enumerate(in_shape))


def is_unit_reshape(in_shape: tuple, out_shape: tuple) -> bool:
    """True when a reshape only inserts or removes size-1 dims (pure index remap)."""
    return [s for s in in_shape if s != 1] == [s for s in out_shape if s != 1]


def unit_reshape(index: Index, in_shape: tuple, out_shape: tuple) -> Index:
    """Index of a reshape's input, for a reshape that only moves size-1 dims."""
    live = iter(i for i, s in zip(index, out_shape) if s != 1)
    return tuple(None if s == 1 else next(live) for s in in_shape)


def permute(index: Index, dims: tuple) -> Index:
    """Index of a permute's input: output dim j reads input dim dims[j]."""
    out = [None] * len(dims)
    for j, d in enumerate(dims):
        out[d] = index[j]
    return tuple(out)


# The kernel rules for movement ops: which instances a kernel can perform as
# index arithmetic, and the operand index for an output index. The op table
# has no field for this (it is codegen's knowledge), so the rules are keyed by
# op name here; a movement op without a rule becomes a NumPy view between
# kernels (getitem, general reshape) or runs by reference (index_put, cat...).
_MOVEMENT_RULES = {
    "expand": (lambda ins: True,
               lambda ins, index: broadcast(index, ins.outputs[0].shape, ins.inputs[0].shape)),
    "permute": (lambda ins: True,
                lambda ins, index: canonical(permute(index, dict(ins.attrs)["dims"]), ins.inputs[0].shape)),
    "reshape": (lambda ins: is_unit_reshape(ins.inputs[0].shape, ins.outputs[0].shape),
                lambda ins, index: unit_reshape(index, ins.inputs[0].shape, ins.outputs[0].shape)),
}

# Movement ops that NumPy performs as a view (no copy) between kernels.
VIEW_OPS = frozenset({"expand", "permute", "reshape", "getitem"})


def inlinable_movement(ins) -> bool:
    """Movement instructions a kernel performs as index arithmetic."""
    rule = _MOVEMENT_RULES.get(ins.op)
    return OPS[ins.op].group == MOVEMENT and rule is not None and rule[0](ins)


def operand_index(ins, index: Index, k: int) -> Index:
    """The index at which operand `k` of elementwise or inlinable movement
    instruction `ins` is read when its output is read at `index`."""
    rule = _MOVEMENT_RULES.get(ins.op)
    if rule is not None and OPS[ins.op].group == MOVEMENT:
        return rule[1](ins, index)
    return broadcast(index, ins.outputs[0].shape, ins.inputs[k].shape)   # elementwise broadcasting


def reduction_home(space: tuple, axes: tuple, out_shape: tuple, keepdim: bool) -> Index:
    """The index at which a reduction's result is available inside its kernel:
    every kept dim reads the kernel's loop variable for it."""
    if keepdim:
        return canonical(tuple(None if d in axes else d for d in range(len(space))), out_shape)
    return canonical(tuple(d for d in range(len(space)) if d not in axes), out_shape)
