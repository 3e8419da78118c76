"""embedding(weight, indices; padding_idx, scale_grad_by_freq): rows of a table, torch's
F.embedding. Its gradient is torch's embedding_dense_backward, an op of its own: each
gathered row's gradient added back into that row, except at `padding_idx`, whose row gets
none, and with `scale_grad_by_freq` divided first by how often its index occurs among the
indices; differentiated again, torch's double backward (the rows at the indices, unscaled)."""
from __future__ import annotations

import numpy as np

from ..types import TensorType, int64
from .registry import MOVEMENT, OpDef, register


def _infer(types, attrs):
    weight, indices = types
    return [TensorType(tuple(indices.shape) + (weight.shape[1],), weight.dtype)]


def _check_rows(rows: int, indices) -> None:
    if indices.size and (indices.min() < 0 or indices.max() >= rows):
        raise IndexError("index out of range in self")


def _check_embedding_rows(shape: tuple, indices) -> None:
    """embedding's check of its indices against a weight of `shape`: torch's embedding of an
    empty weight runs index_select, whose own checks and texts come first."""
    rows = shape[0]
    if indices.size and rows * shape[1] == 0 and (indices.min() < 0 or indices.max() >= rows):
        if rows == 0:
            raise RuntimeError("index_select(): self indexing axis dim should be positive")
        flat = indices.reshape(-1)
        bad = flat[(flat < 0) | (flat >= rows)][0]
        raise RuntimeError(f"INDICES element is out of DATA bounds, id={bad} axis_dim={rows}")
    _check_rows(rows, indices)


def _ref(weight, indices, padding_idx, scale_grad_by_freq):
    _check_embedding_rows(weight.shape, indices)
    return weight[indices]


def _check_now(in_types, arrays, attrs):
    """The check on indices known at trace time (see registry.check_values_now)."""
    if arrays[1] is not None:
        _check_embedding_rows(tuple(in_types[0].shape), arrays[1])


def _vjp(e, x, y, g, a, n):
    weight, indices = x
    if not n[0]:
        return [None, None]
    return [e.op("embedding_dense_backward", g[0], indices, num_weights=weight.shape[0],
                 padding_idx=a["padding_idx"], scale_grad_by_freq=a["scale_grad_by_freq"]), None]


def _dense_backward_infer(types, attrs):
    grad, indices = types
    return [TensorType((attrs["num_weights"], grad.shape[-1]), grad.dtype)]


def _dense_backward_ref(grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    rows = indices.reshape(-1)
    rows_grad = grad.reshape(rows.size, grad.shape[-1])
    if padding_idx is not None:
        rows_grad = np.where((rows == padding_idx)[:, None], grad.dtype.type(0), rows_grad)
    if scale_grad_by_freq:
        # (each row's gradient divided by how often its index occurs among the indices)
        counts = np.bincount(rows, minlength=num_weights).astype(grad.dtype)
        rows_grad = rows_grad / counts[rows][:, None]
    out = np.zeros((num_weights, grad.shape[-1]), grad.dtype)
    np.add.at(out, rows, rows_grad)
    return out


def _dense_backward_vjp(e, x, y, g, a, n):
    # torch's embedding_dense_double_backward: the rows of the incoming gradient at the
    # indices, zero at padding_idx, not divided by the counts (so a second derivative through
    # it is torch's: its scale_grad_by_freq is applied once, by the forward's own backward)
    grad, indices = x
    if not n[0]:
        return [None, None]
    rows = e.op("embedding", g[0], indices, padding_idx=None, scale_grad_by_freq=False)
    if a["padding_idx"] is not None:
        at_padding = e.reshape(e.eq(indices, a["padding_idx"]), tuple(indices.shape) + (1,))
        rows = e.where(at_padding, 0, rows)
    return [rows, None]


register(OpDef("embedding", MOVEMENT, _infer, _ref, _vjp, reference_only=True,
               doc="embedding(weight, indices; padding_idx, scale_grad_by_freq): weight[indices], no gradient to "
                   "the padding row",
               extra={"row_major_result": True, "torch_edges": (0,), "value_checks": True,
                      "check_now": _check_now}))
register(OpDef("embedding_dense_backward", MOVEMENT, _dense_backward_infer, _dense_backward_ref, _dense_backward_vjp,
               reference_only=True, nondiff_inputs=(1,),
               doc="embedding_dense_backward(grad, indices; num_weights, padding_idx, scale_grad_by_freq): "
                   "embedding's gradient, each row's gradients added into its row (torch's op)",
               extra={"torch_edges": (0,)}))


# ---------------------------------------------------------------- embedding_bag
# The tracer (nn/functional's embedding_bag) turns offsets into, per index position, the bag it
# belongs to (`bags`, -1 for positions no bag takes: padding_idx, past include_last_offset's end)
# and its weight (`scale`: per_sample_weights or ones; in mean mode 1 / the bag's count, which
# only the gradient reads: the forward divides the bag's sum, as torch). Positions with bag -1
# count for nothing in the forward and get no gradient, whatever their weight.

def _bag_infer(types, attrs):
    weight, indices, bags, scale = types
    return [TensorType((attrs["num_bags"], weight.shape[1]), weight.dtype)]


def _bag_ref(weight, indices, bags, scale, num_bags, mode, scale_grad_by_freq):
    _check_rows(weight.shape[0], indices)
    keep = bags >= 0
    out = np.zeros((num_bags, weight.shape[1]), weight.dtype)
    rows = weight[indices[keep]]
    if mode == "sum":
        rows = rows * scale[keep][:, None].astype(weight.dtype)
    np.add.at(out, bags[keep], rows)
    if mode == "mean":
        counts = np.bincount(bags[keep], minlength=num_bags).astype(weight.dtype)
        out = out / np.maximum(counts, 1)[:, None]
    return out


def _bag_vjp(e, x, y, g, a, n):
    """weight: each position's bag gradient times its scale, added into its row; scale (the
    per-sample weights): the bag gradient dotted with the position's row."""
    weight, indices, bags, scale = x
    bag_rows = e.op("embedding", g[0], e.op("maximum", bags, e.const(0, bags)), padding_idx=None,
                    scale_grad_by_freq=False)
    # (positions no bag takes get nothing, whatever their per-sample weight)
    kept = e.cast(e.op("ge", bags, e.const(0, bags)), scale.dtype)
    grad_weight = None
    if n[0]:
        weights = e.cast(e.mul(scale, kept), weight.dtype)
        scaled = e.mul(bag_rows, e.reshape(weights, tuple(scale.shape) + (1,)))
        grad_weight = e.op("embedding_dense_backward", scaled, indices, num_weights=weight.shape[0], padding_idx=None,
                           scale_grad_by_freq=a["scale_grad_by_freq"])
    grad_scale = None
    if n[3]:
        rows = e.op("embedding", weight, indices, padding_idx=None, scale_grad_by_freq=False)
        grad_scale = e.mul(e.cast(e.sum(e.mul(bag_rows, rows), (1,)), scale.dtype), kept)
    return [grad_weight, None, None, grad_scale]


register(OpDef("embedding_bag", MOVEMENT, _bag_infer, _bag_ref, _bag_vjp, reference_only=True, nondiff_inputs=(1, 2),
               doc="embedding_bag(weight, indices, bags, scale; num_bags, mode, scale_grad_by_freq): per bag, the sum (weighted by "
                   "scale) or mean of its rows",
               extra={"row_major_result": True, "torch_edges": (0, 3)}))


def _bag_max_infer(types, attrs):
    weight, indices, bags = types
    shape = (attrs["num_bags"], weight.shape[1])
    return [TensorType(shape, weight.dtype), TensorType(shape, int64)]


def _bag_max_ref(weight, indices, bags, num_bags):
    """(per bag and column the largest of its rows, the row it came from: -1 for an empty bag,
    whose values are zeros); of equal values the first position's row, as torch's loop keeps."""
    _check_rows(weight.shape[0], indices)
    out = np.zeros((num_bags, weight.shape[1]), weight.dtype)
    rows_of = np.full((num_bags, weight.shape[1]), -1, np.int64)
    for position in np.flatnonzero(bags >= 0):
        b, row = bags[position], indices[position]
        better = (rows_of[b] < 0) | (weight[row] > out[b])
        out[b] = np.where(better, weight[row], out[b])
        rows_of[b] = np.where(better, row, rows_of[b])
    return out, rows_of


def _bag_max_vjp(e, x, y, g, a, n):
    """weight: each bag's gradient added into the row its maximum came from, column by column."""
    weight = x[0]
    if not n[0]:
        return [None, None, None]
    rows_of = y[1]
    found = e.op("ge", rows_of, e.const(0, rows_of))
    index = e.where(found, rows_of, e.const(0, rows_of))
    src = e.where(found, g[0], e.const(0, g[0]))
    return [e.op("scatter_add", e.zeros_like(weight), index, src, axis=0), None, None]


register(OpDef("embedding_bag_max", MOVEMENT, _bag_max_infer, _bag_max_ref, _bag_max_vjp, reference_only=True,
               nondiff_inputs=(1, 2), nondiff_outputs=(1,),
               doc="embedding_bag_max(weight, indices, bags; num_bags) -> (per bag the columnwise max of its rows, "
                   "the rows they came from)",
               # (torch's node lists the weight's edge and per_sample_weights', None in max mode)
               extra={"row_major_result": True, "torch_edges": (0, 1)}))
