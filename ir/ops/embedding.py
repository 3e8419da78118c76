"""embedding(weight, indices; padding_idx, scale_grad_by_freq): rows of a table, torch's
F.embedding. Its gradient adds each gathered row's gradient back into that row
(index_put_at with accumulate), except at `padding_idx`, whose row gets none, and with
`scale_grad_by_freq` each gathered row's gradient divided first by how often its index
occurs among the indices (torch's embedding_dense_backward)."""
from __future__ import annotations

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
    grad = g[0]
    if a["padding_idx"] is not None:
        at_padding = e.reshape(e.eq(indices, a["padding_idx"]), tuple(indices.shape) + (1,))
        grad = e.where(at_padding, 0, grad)
    rows = e.reshape(indices, (indices.type.numel,))
    grad = e.reshape(grad, (indices.type.numel, weight.shape[1]))
    if a["scale_grad_by_freq"]:
        # (each index's count: ones added at the indices, read back at each index)
        ones = e.expand(e.const(1, weight), (indices.type.numel,))
        counts = e.op("index_put_at", e.expand(e.const(0, weight), (weight.shape[0],)), ones, rows, dims=(0,),
                      accumulate=True)
        grad = e.div(grad, e.reshape(e.op("gather", counts, rows, axis=0, saves_input=False),
                                     (indices.type.numel, 1)))
    return [e.op("index_put_at", e.zeros_like(weight), grad, rows, dims=(0,), accumulate=True) if n[0] else None,
            None]


register(OpDef("embedding", MOVEMENT, _infer, _ref, _vjp, reference_only=True,
               doc="embedding(weight, indices; padding_idx, scale_grad_by_freq): weight[indices], no gradient to "
                   "the padding row",
               extra={"row_major_result": True, "torch_edges": (0,), "value_checks": True,
                      "check_now": _check_now}))
