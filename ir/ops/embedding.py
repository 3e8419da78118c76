"""embedding(weight, indices; padding_idx, scale_grad_by_freq): rows of a table, torch's
F.embedding. Its gradient is torch's embedding_dense_backward, an op of its own: each
gathered row's gradient added back into that row, except at `padding_idx`, whose row gets
none, and with `scale_grad_by_freq` divided first by how often its index occurs among the
indices; differentiated again, torch's double backward (the rows at the indices, unscaled)."""
from __future__ import annotations

import numpy as np

from ..types import TensorType
from .registry import MOVEMENT, OpDef, register


def _infer(types, attrs):
    weight, indices = types
    return [TensorType(tuple(indices.shape) + (weight.shape[1],), weight.dtype)]


def _check_rows(rows: int, indices) -> None:
    if indices.size and (indices.min() < 0 or indices.max() >= rows):
        raise IndexError("index out of range in self")


def _ref(weight, indices, padding_idx, scale_grad_by_freq):
    _check_rows(weight.shape[0], indices)
    return weight[indices]


def _check_now(in_types, arrays, attrs):
    """The check on indices known at trace time (see registry.check_values_now)."""
    if arrays[1] is not None:
        _check_rows(in_types[0].shape[0], arrays[1])


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
