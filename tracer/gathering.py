"""torch.gather: values picked along one dim by an int64 index tensor (ir/ops/gather.py), with
torch's checks in torch's order; its gradient scatters back, adding where indices repeat."""
from __future__ import annotations

from fusegrad.ir import int64
from fusegrad.ir.ops import normalize_dim

from .dispatch import apply_op
from .functional import _is_index, as_tensor
from .parser_errors import type_name
from .tensor import Tensor


def gather(input, dim, index, *, sparse_grad=False) -> Tensor:
    """torch.gather(input, dim, index): out[i][j] = input[index[i][j]][j] for dim 0 (and so on);
    the result has the index's shape (GatherBackward0). `sparse_grad` is accepted and ignored
    (the gradient is dense, as torch's values are)."""
    t = as_tensor(input, "gather")
    if not _is_index(dim) or isinstance(dim, bool):
        raise TypeError(f"gather(): argument 'dim' (position 2) must be int, not {type_name(dim)}")
    if not isinstance(index, Tensor):
        raise TypeError(f"gather(): argument 'index' (position 3) must be Tensor, not {type_name(index)}")
    axis = normalize_dim(int(dim), t.dim())
    if index._dtype is not int64:
        raise RuntimeError("gather(): Expected dtype int32/int64 for index")
    shape, index_shape = tuple(t.shape) or (1,), tuple(index.shape) or (1,)
    if len(shape) != len(index_shape) and index.numel() > 0:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for d, (n, m) in enumerate(zip(index_shape, shape)):
        if d != axis and n > m:
            raise RuntimeError(f"Size does not match at dimension {d} expected index {list(index.shape)} to be no "
                               f"larger than self {list(t.shape)} apart from dimension {axis}")
    return apply_op("gather", [t, index], {"axis": axis}, "GatherBackward0")


def _gather_method(self, dim, index, *, sparse_grad=False) -> Tensor:
    return gather(self, dim, index, sparse_grad=sparse_grad)


_gather_method.__name__, _gather_method.__doc__ = "gather", gather.__doc__
METHODS = {"gather": _gather_method}
