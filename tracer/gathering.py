"""torch.gather and index_select: values picked along one dim by an int64 index tensor
(ir/ops/gather.py), with torch's checks in torch's order; their gradient scatters back, adding
where indices repeat. And torch.flip (fliplr, flipud): a reversed copy."""
from __future__ import annotations

import numpy as np

from fusegrad.ir import int64
from fusegrad.ir.ops import normalize_dim

from .dispatch import apply_op
from .functional import _is_index, _numpy_spellings, as_tensor, int_argument, keyword_sizes
from .parser_errors import type_name
from .tensor import Tensor


@_numpy_spellings
def gather(input, dim, index, *, sparse_grad=False) -> Tensor:
    """torch.gather(input, dim, index): out[i][j] = input[index[i][j]][j] for dim 0 (and so on);
    the result has the index's shape (GatherBackward0). `sparse_grad` is accepted and ignored
    (the gradient is dense, as torch's values are)."""
    t = as_tensor(input, "gather")
    dim = int_argument(dim, "gather")
    if not isinstance(index, Tensor):
        raise TypeError(f"gather(): argument 'index' (position 3) must be Tensor, not {type_name(index)}")
    axis = normalize_dim(dim, t.dim())
    if index._dtype is not int64:
        raise RuntimeError("gather(): Expected dtype int32/int64 for index")
    shape, index_shape = tuple(t.shape) or (1,), tuple(index.shape) or (1,)
    if len(shape) != len(index_shape) and index.numel() > 0:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for d, (n, m) in enumerate(zip(index_shape, shape)):
        if d != axis and n > m and index.numel() > 0:
            raise RuntimeError(f"Size does not match at dimension {d} expected index {list(index.shape)} to be no "
                               f"larger than self {list(t.shape)} apart from dimension {axis}")
    return apply_op("gather", [t, index], {"axis": axis, "saves_input": True}, "GatherBackward0")


def index_select(input, dim, index) -> Tensor:
    """torch.index_select: the slices of `input` along `dim` at the positions of a 1-d (or 0-d)
    int64 index (IndexSelectBackward0): a gather through the index expanded over the other dims."""
    t = as_tensor(input, "index_select")
    dim = int_argument(dim, "index_select")
    if not isinstance(index, Tensor):
        raise TypeError(f"index_select(): argument 'index' (position 3) must be Tensor, not {type_name(index)}")
    axis = normalize_dim(dim, t.dim())
    if index.dim() > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if t.dim() == 0 and index.numel() != 1:     # (torch's check of a 0-d self comes before the dtype's)
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {index.numel()} value(s)")
    if index._dtype is not int64:
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    size = t.shape[axis] if t.dim() else 1
    if t.dim() > 1 and size == 0 and index.numel():     # (torch's check for a matrix or more, first)
        raise RuntimeError("index_select(): self indexing axis dim should be positive")
    if index._data is not None and index._data.size:
        values = index._data
        bad = values[(values < 0) | (values >= size)]
        if bad.size:
            if axis == 1:       # (torch's kernel for dim 1 words it so; its others, as IndexError)
                raise RuntimeError(f"INDICES element is out of DATA bounds, id={int(bad[0])} axis_dim={size}")
            raise IndexError("index out of range in self")
    if t.dim() == 0:
        return apply_op("gather", [t, index.reshape(())], {"axis": 0, "saves_input": False}, "IndexSelectBackward0")
    n = index.numel()
    shape = tuple(t.shape)
    placed = index.reshape((1,) * axis + (n,) + (1,) * (t.dim() - axis - 1))
    spread = placed.expand(shape[:axis] + (n,) + shape[axis + 1:])
    return apply_op("gather", [t, spread], {"axis": axis, "saves_input": False}, "IndexSelectBackward0")


def flip(input, dims) -> Tensor:
    """torch.flip: a copy of `input` reversed along `dims` (FlipBackward0)."""
    t = as_tensor(input, "flip")
    if isinstance(dims, (int, np.integer)) and not isinstance(dims, bool):
        raise TypeError(f"flip(): argument 'dims' (position 2) must be tuple of ints, not {type_name(dims)}")
    return _flip(t, dims)


def _flip(t: Tensor, dims) -> Tensor:
    if not isinstance(dims, (tuple, list)) or not all(_is_index(d) and not isinstance(d, bool) for d in dims):
        raise TypeError(f"flip(): argument 'dims' (position 2) must be tuple of ints, not {type_name(dims)}")
    axes = [normalize_dim(int(d), t.dim()) for d in dims]
    for a in axes:
        if axes.count(a) > 1:
            raise RuntimeError(f"dim {a} appears multiple times in the list of dims")
    if t.dim() == 0:
        axes = []
    return apply_op("flip", [t], {"axes": tuple(sorted(axes))}, "FlipBackward0")


def _flip_method(self, *dims, **keyword) -> Tensor:
    """Tensor.flip(dims), Tensor.flip(*dims) or Tensor.flip(dims=dims)."""
    if keyword:
        return _flip(self, list(keyword_sizes("flip", "dims", dims, keyword)))
    if not dims:
        raise TypeError('flip() missing 1 required positional arguments: "dims"')
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = dims[0]
    elif len(dims) == 1 and not _is_index(dims[0]):
        raise TypeError(f"flip(): argument 'dims' (position 1) must be tuple of ints, not {type_name(dims[0])}")
    return _flip(self, list(dims))


def fliplr(input) -> Tensor:
    """torch.fliplr: reversed along dim 1 (at least 2-d)."""
    t = as_tensor(input, "fliplr")
    if t.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return _flip(t, [1])


def flipud(input) -> Tensor:
    """torch.flipud: reversed along dim 0 (at least 1-d)."""
    t = as_tensor(input, "flipud")
    if t.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return _flip(t, [0])


@_numpy_spellings
def _gather_method(self, dim, index, *, sparse_grad=False) -> Tensor:
    return gather(self, dim, index, sparse_grad=sparse_grad)


_gather_method.__name__, _gather_method.__doc__ = "gather", gather.__doc__
METHODS = {"gather": _gather_method, "index_select": index_select, "flip": _flip_method, "fliplr": fliplr,
           "flipud": flipud}
