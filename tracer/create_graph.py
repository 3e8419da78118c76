"""The graph a `create_graph=True` backward records: its formulas run op by op on
Tensors (`_tensor_apply`), each op recorded under the node class torch's own derivative
formula would give it (MulBackward1 for a formula's number, TBackward0 for mm's
transposes, torch's sum_to as SumBackward1 with keepdim and a view), so the gradient's
graph reads as torch's.
"""
from __future__ import annotations

import numpy as np

from fusegrad.ir import OPS, Program

from .dispatch import apply_op
from .node import display_edges
from .tensor import Tensor


def _sums_kept(program: Program) -> set:
    """The sums (without keepdim) of a create_graph backward whose one reader reshapes them back
    to their keepdim shape (the IR's sum_to of a size-1 dim): torch's sum_to sums those with
    keepdim=True, one SumBackward1 node; ids of the sums' and the reshapes' outputs."""
    readers: dict = {}
    for ins in program.instrs:
        for v in ins.inputs:
            readers[v.id] = readers.get(v.id, 0) + 1
    for v in program.outputs:
        readers[v.id] = readers.get(v.id, 0) + 1
    sums = {ins.outputs[0].id: ins for ins in program.instrs
            if ins.op == "sum" and not dict(ins.attrs)["keepdim"] and ins.outputs[0].shape != ()}
    kept = set()
    for ins in program.instrs:
        if ins.op == "reshape" and ins.inputs[0].id in sums and readers[ins.inputs[0].id] == 1:
            total = sums[ins.inputs[0].id]
            axes = dict(total.attrs)["axes"]
            shape = total.inputs[0].shape
            if ins.outputs[0].shape == tuple(1 if i in axes else d for i, d in enumerate(shape)):
                kept |= {total.outputs[0].id, ins.outputs[0].id}
    return kept


# The loc GraphProgram gives the instructions of a node whose Python-number operands torch's
# formula takes as Scalars (see _as_formula_scalars)
SCALAR_OPERANDS = "scalar operands"


def _as_formula_scalars(args) -> list:
    """A Scalar-overload node's numbers (0-d arrays here) as the formula's Scalars."""
    found = []
    for x in args:
        if type(x) is np.ndarray and x.ndim == 0:
            x = Tensor._wrap(x)
            x.__dict__["_formula_scalar"] = True
        found.append(x)
    return found


def _tensor_apply(ins, args, free=frozenset(), kept=frozenset()):
    if ins.loc == SCALAR_OPERANDS:
        args = _as_formula_scalars(args)
    on_tensors = OPS[ins.op].extra.get("apply_tensors")
    if on_tensors is not None:          # (custom_call: its object may run on tensors itself)
        out = on_tensors(dict(ins.attrs), args)
        if out is not None:
            return tuple(out)
    name = _create_graph_name(ins, args, free)
    if kept and ins.outputs[0].id in kept:
        if ins.op == "reshape":
            return (args[0],)           # (its sum was kept: see _sums_kept)
        return (apply_op("sum", [args[0]], {"axes": dict(ins.attrs)["axes"], "keepdim": True}, "SumBackward1"),)
    if ins.op == "sum" and name == "SumBackward1" and not dict(ins.attrs)["keepdim"]:
        # torch's sum_to drops leading dims by a view of the sum kept: grad.sum(dims, True).view(shape)
        total = apply_op("sum", [args[0]], {"axes": dict(ins.attrs)["axes"], "keepdim": True}, name)
        return (apply_op("reshape", [total], {"shape": ins.outputs[0].shape}, "ViewBackward0"),)
    if name == "ViewBackward0" and type(args[0]) is Tensor:
        # torch's formulas reshape() (view backward: grad.reshape(sizes)): a gradient laid out
        # so that no view can do it is copied first, CloneBackward0 then UnsafeViewBackward0
        out = args[0].reshape(dict(ins.attrs)["shape"])
    else:
        out = apply_op(ins.op, list(args), dict(ins.attrs), name)
    if name in ("MulBackward1", "DivBackward1") and type(out) is Tensor and out._grad_fn is not None:
        # (torch's mul/div by a Scalar lists its one tensor operand only)
        node = out._grad_fn
        display_edges(node, tuple(e for e, x in zip(node.next_functions, args) if not _formula_scalar(x)))
    if ins.op == "where" and name in _SELECTION_EDGES and type(out) is Tensor and out._grad_fn is not None:
        node = out._grad_fn
        display_edges(node, tuple(node.edges[i] or (None, 0) for i in _SELECTION_EDGES[name]))
    if ins.op == "const" or (ins.loc == SCALAR_OPERANDS and args and all(_formula_scalar(x) for x in args)):
        # a number of a derivative formula (the 2 of sqrt's grad / (2 * result)), or one computed
        # from the Scalars only (lerp's 1 - weight): torch's formulas take it as a Scalar, so the
        # mul or div reading it is MulBackward1 / DivBackward1
        out.__dict__["_formula_scalar"] = True
    return out if isinstance(out, tuple) else (out,)


def _formula_scalar(x) -> bool:
    return type(x) is Tensor and x.__dict__.get("_formula_scalar", False)


_VIEW_NODES = frozenset({"ViewBackward0", "UnsafeViewBackward0", "ReshapeAliasBackward0"})
_MATMUL_NAMES = {(1, 1): "DotBackward0", (2, 1): "MvBackward0", (2, 2): "MmBackward0", (3, 3): "BmmBackward0"}


def _create_graph_name(ins, args=(), free=frozenset()) -> str | None:
    """torch's node name for an op of a create_graph backward, where its derivative formulas
    call view, squeeze/unsqueeze, mm/mv/dot/bmm, select/slice, a copy or sgn and the IR has
    reshape, matmul, getitem, cast or sign, or multiply or divide by a Scalar (None: the op's
    default name, as the forward records it). A 2-D permute of a saved forward value (`free`:
    their ids) is the t() of mm's formulas, TBackward0; of a gradient it is the VJP of a
    forward permute, named as that node's formula does: TBackward0 for t(), TransposeBackward0
    for transpose(), else PermuteBackward0 (x.T, permute; GraphProgram puts the forward node's
    name in the instruction's loc)."""
    op = ins.op
    if op == "permute" and len(ins.inputs[0].shape) == 2 and ins.inputs[0].id in free:
        return "TBackward0"
    if op == "permute" and ins.loc in ("TBackward0", "TransposeBackward0"):
        return ins.loc
    if op == "mul" and (_formula_scalar(args[0]) or _formula_scalar(args[1])):
        return "MulBackward1"
    if op == "div" and _formula_scalar(args[1]):
        return "DivBackward1"
    if op == "sign":
        return "SgnBackward0"
    if op == "sum":
        # torch's sum_to: to a 0-d shape grad.sum(), else grad.sum(dims, keepdim=True)
        return "SumBackward0" if ins.outputs[0].shape == () else "SumBackward1"
    if op == "index_put" and type(args[0]) is Tensor and args[0]._grad_fn is None and not args[0]._requires_grad:
        # a getitem's gradient placed into zeros: torch's select_backward / slice_backward
        index = dict(ins.attrs)["index"]
        return "SelectBackwardBackward0" if any(item[0] == "i" for item in index) else "SliceBackwardBackward0"
    if op == "reshape":
        if ins.loc in _VIEW_NODES:
            # (view/reshape/flatten's formula is grad.reshape(self's sizes): a view, also where it
            # only adds or drops size-1 dims)
            return "ViewBackward0"
        before, after = ins.inputs[0].shape, ins.outputs[0].shape
        if len(after) == len(before) + 1 and tuple(d for d in after if d != 1) == tuple(d for d in before if d != 1):
            return "UnsqueezeBackward0"
        if len(after) == len(before) - 1 and tuple(d for d in after if d != 1) == tuple(d for d in before if d != 1):
            return "SqueezeBackward1"
        return "ViewBackward0"
    if op == "index_put_at":
        # index's formula accumulates with _index_put_impl_, index_put's zeroes the region with
        # index_put
        return "IndexPutImplBackward0" if dict(ins.attrs)["accumulate"] else "IndexPutBackward0"
    if op == "matmul":
        return _MATMUL_NAMES.get((len(ins.inputs[0].shape), len(ins.inputs[1].shape)))
    if op == "getitem":
        index = dict(ins.attrs)["index"]
        return "SelectBackward0" if any(item[0] == "i" for item in index) else "SliceBackward0"
    if op == "cast":
        return "ToCopyBackward0"
    if op == "where":
        return _selection_name(ins.loc, args)
    return None


# The node torch's formula ends in where the IR selects with `where` (the forward node's name
# is the instruction's loc): maximum/minimum fill the loser's gradient with 0
# (grad.masked_fill_(self < other, 0)), as masked_fill's gradient for self does
# (grad.masked_fill(mask, 0)), max()/min() fill zeros with the shared gradient
# (zeros_like(self).masked_fill_(mask, grad / count)), max(dim)/min(dim) scatter it.
_SELECTION_NAMES = {"MaxBackward1": "MaskedFillBackward1", "MinBackward1": "MaskedFillBackward1",
                    "MaxBackward0": "ScatterBackward0", "MinBackward0": "ScatterBackward0"}


def _selection_name(loc, args) -> str | None:
    if loc in ("MaximumBackward0", "MinimumBackward0", "MaskedFillBackward0", "MaskedFillBackward1"):
        # (the fill of the loser's gradient selects a constant 0; the tie's halving is a where)
        return "MaskedFillBackward0" if len(args) == 3 and _formula_scalar(args[1]) else None
    return _SELECTION_NAMES.get(loc)


# Those nodes list torch's operands (self, then the value or src) of where(mask, value, self)
_SELECTION_EDGES = {"MaskedFillBackward0": (2,), "MaskedFillBackward1": (2, 1), "ScatterBackward0": (2, 1)}
