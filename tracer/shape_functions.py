"""torch's diagonal and shape-manipulation functions: diagonal, diag, diag_embed, diagflat, trace,
roll, rot90, tril_indices, triu_indices, meshgrid, cartesian_prod, repeat_interleave,
tensor_split, hsplit, vsplit, dsplit, Tensor.unfold, diff, kron and block_diag.

Where torch records one node of its own (DiagonalBackward0, DiagEmbedBackward0, TraceBackward0,
RollBackward0, Rot90Backward0, UnfoldBackward0, BlockDiagBackward0) the function is one op of
ir/ops/diagonal.py; `diagonal` and `unfold` are views there as here (a write through one reaches
its base: the op's write-back). The others are composites of existing ops recorded as torch
records them: meshgrid a view and an expand per tensor, cartesian_prod their flattened copies
stacked, repeat_interleave by a number an unsqueeze-expand-clone-view (by a tensor an
index_select), tensor_split and kin slices, diff slices and a sub (a logical_xor for bool), kron
a product of unit-dim views.
"""
from __future__ import annotations

import operator
import warnings

import numpy as np

from fusegrad.ir import int64
from fusegrad.ir.ops import normalize_dim
from fusegrad.ir.types import TORCH_SCALAR_NAMES, bool_

from . import functional as F, trace_state
from .creation import wrap_array, zeros_like
from .dispatch import apply_op
from .functional import _is_index, _unsafe_view, _viewable, as_tensor, int_argument
from .gathering import index_select
from .parser_errors import type_name
from .splitting import _part
from .tensor import Tensor
from .user_frame import user_stacklevel


def _int(value, fn: str, arg: str, pos: int) -> int:
    return int_argument(value, fn, arg, pos)


# --------------------------------------------------------------------- diagonals
def diagonal(input, offset=0, dim1=0, dim2=1) -> Tensor:
    """torch.diagonal: the diagonal `offset` places above (below, negative) the main one of the
    matrices along `dim1` and `dim2`, as a last dim (DiagonalBackward0). A view sharing memory:
    writes through it are seen by the base, as torch's."""
    t = as_tensor(input, "diagonal")
    offset, dim1, dim2 = _int(offset, "diagonal", "offset", 2), _int(dim1, "diagonal", "dim1", 3), \
        _int(dim2, "diagonal", "dim2", 4)
    d1, d2 = normalize_dim(dim1, t.dim()), normalize_dim(dim2, t.dim())
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return apply_op("diagonal", [t], {"offset": offset, "dim1": d1, "dim2": d2})


def diag_embed(input, offset=0, dim1=-2, dim2=-1) -> Tensor:
    """torch.diag_embed: a tensor with one more dim whose diagonals (of dims `dim1`, `dim2` of the
    result) hold `input`'s last dim, zeros elsewhere (DiagEmbedBackward0)."""
    t = as_tensor(input, "diag_embed")
    offset, dim1, dim2 = _int(offset, "diag_embed", "offset", 2), _int(dim1, "diag_embed", "dim1", 3), \
        _int(dim2, "diag_embed", "dim2", 4)
    d1, d2 = normalize_dim(dim1, t.dim() + 1), normalize_dim(dim2, t.dim() + 1)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return apply_op("diag_embed", [t], {"offset": offset, "dim1": d1, "dim2": d2})


def diag(input, diagonal=0) -> Tensor:
    """torch.diag: a 1-d tensor's square matrix with it on diagonal `diagonal` (DiagEmbedBackward0),
    or a 2-d tensor's diagonal as a copy (torch's diagonal_copy: DiagonalBackward0_copy)."""
    t = as_tensor(input, "diag")
    offset = _int(diagonal, "diag", "diagonal", 2)
    if t.dim() == 1:
        return apply_op("diag_embed", [t], {"offset": offset, "dim1": 0, "dim2": 1})
    if t.dim() != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {t.dim()}D")
    return apply_op("diagonal_copy", [t], {"offset": offset, "dim1": 0, "dim2": 1})


def diagflat(input, offset=0) -> Tensor:
    """torch.diagflat: the flattened input (contiguous().view(-1): ViewBackward0) on diagonal
    `offset` of a square matrix (DiagEmbedBackward0)."""
    t = as_tensor(input, "diagflat")
    offset = _int(offset, "diagflat", "offset", 2)
    flat = F.view(F.contiguous(t), -1)
    return apply_op("diag_embed", [flat], {"offset": offset, "dim1": 0, "dim2": 1})


def trace(input) -> Tensor:
    """torch.trace: the sum of a matrix's main diagonal (TraceBackward0), added in order in
    float64 for floating inputs (torch's CPU accumulation type); integers give int64."""
    t = as_tensor(input, "trace")
    if t._dtype is bool_:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    return apply_op("trace", [t], None)


# --------------------------------------------------------------------- roll, rot90
def _int_tuple(value, fn: str, arg: str, pos: int) -> tuple:
    if _is_index(value) and not isinstance(value, bool):
        return (operator.index(value),)
    if isinstance(value, (tuple, list)) and all(_is_index(v) and not isinstance(v, bool) for v in value):
        return tuple(operator.index(v) for v in value)
    raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be tuple of ints, not {type_name(value)}")


def roll(input, shifts, dims=None) -> Tensor:
    """torch.roll: elements shifted along `dims` by `shifts` (ints or tuples), wrapping around;
    without dims the flattened tensor is rolled and reshaped back (RollBackward0)."""
    t = as_tensor(input, "roll")
    shifts = _int_tuple(shifts, "roll", "shifts", 2)
    dims = () if dims is None else _int_tuple(dims, "roll", "dims", 3)
    if not shifts:
        raise RuntimeError("`shifts` required")
    if not dims and len(shifts) == 1:
        return apply_op("roll", [t], {"shifts": shifts, "dims": ()})
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    if t.numel() == 0:      # (torch's roll returns an empty tensor's clone before reading its dims)
        return apply_op("roll", [t], {"shifts": shifts[:1], "dims": ()})
    if t.dim() == 0:
        raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
    axes = tuple(normalize_dim(d, t.dim()) for d in dims)
    return apply_op("roll", [t], {"shifts": shifts, "dims": axes})


def rot90(input, k=1, dims=(0, 1)) -> Tensor:
    """torch.rot90: rotated by 90 degrees `k` times from the first of `dims` towards the second
    (Rot90Backward0, one node as torch's; a copy, even for k a multiple of 4)."""
    t = as_tensor(input, "rot90")
    k = _int(k, "rot90", "k", 2)
    dims = _int_tuple(dims, "rot90", "dims", 3) if not _is_index(dims) else _int_tuple([dims], "rot90", "dims", 3)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if t.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {t.dim()}")
    axes = (normalize_dim(dims[0], t.dim()), normalize_dim(dims[1], t.dim()))    # (torch wraps them first)
    if axes[0] == axes[1]:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = {dims[1]}")
    return apply_op("rot90", [t], {"k": k % 4, "dims": axes})


# --------------------------------------------------------------------- triangle indices
def _triangle_indices(fn: str, row, col, offset, dtype, lower: bool) -> Tensor:
    row, col, offset = _int(row, fn, "row", 1), _int(col, fn, "col", 2), _int(offset, fn, "offset", 3)
    if dtype is not None and dtype is not int64:
        raise NotImplementedError(f"\"{fn}\" not implemented for '{TORCH_SCALAR_NAMES.get(dtype.name, dtype.name)}'")
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    rows, cols = np.tril_indices(row, offset, col) if lower else np.triu_indices(row, offset, col)
    return wrap_array(np.stack([rows, cols]).astype(np.int64).reshape(2, -1))


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None, pin_memory=False) -> Tensor:
    """torch.tril_indices: the [2, N] int64 coordinates (row-major) of the lower triangle, diagonal
    `offset` included, of a row x col matrix. fusegrad's one integer dtype is int64: torch's
    int32 has no counterpart; other dtypes raise torch's NotImplementedError."""
    return _triangle_indices("tril_indices", row, col, offset, dtype, True)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None, pin_memory=False) -> Tensor:
    """torch.triu_indices: the [2, N] int64 coordinates (row-major) of the upper triangle, from
    diagonal `offset`, of a row x col matrix (see tril_indices)."""
    return _triangle_indices("triu_indices", row, col, offset, dtype, False)


# --------------------------------------------------------------------- meshgrid, cartesian_prod
_MESHGRID_WARNING = ("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument. "
                     "(Triggered internally at /__w/pytorch/pytorch/aten/src/ATen/native/TensorShape.cpp:4215.)")


def _tensor_list(tensors: tuple, fn: str) -> list:
    items = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
    for k, x in enumerate(items):
        if not isinstance(x, (Tensor, np.ndarray)):
            raise TypeError(f"expected Tensor as element {k} in argument 0, but got {type_name(x)}")
    return [as_tensor(x, fn) for x in items]


def meshgrid(*tensors, indexing=None) -> tuple:
    """torch.meshgrid: for N 0-d or 1-d tensors, N tensors of the shape of their lengths, tensor
    i varying along dim i ('ij'; 'xy' swaps the first two dims). Each is a view and an expand of
    its tensor (ViewBackward0, ExpandBackward0). Without `indexing`, 'ij' with torch's warning.
    A tensor of more dims raises torch's error, its tensor printed in fusegrad's own form (torch
    prints it in its C++ form)."""
    if indexing is None:
        warnings.warn(_MESHGRID_WARNING, UserWarning, stacklevel=user_stacklevel())
        indexing = "ij"
    ts = _tensor_list(tensors, "meshgrid")
    if not ts:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for a, b in zip(ts, ts[1:]):
        if a._dtype is not b._dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    swap = False
    if indexing == "xy":
        swap = len(ts) >= 2
    elif indexing != "ij":
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    for t in ts:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}")
    shape = tuple(t.numel() for t in ts)
    grids = []
    for i, t in enumerate(ts):
        view_shape = [1] * len(ts)
        view_shape[i] = -1
        grids.append(F.expand(F.view(t, view_shape), shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors) -> Tensor:
    """torch.cartesian_prod: the rows of the Cartesian product of 1-d tensors (their meshgrid,
    each flattened, stacked as columns: StackBackward0); one tensor is returned as it is."""
    ts = _tensor_list(tensors, "cartesian_prod")
    if not ts:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in ts:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(ts) == 1:
        return ts[0]
    grids = meshgrid(*ts, indexing="ij")
    return F.stack([F.reshape(g, -1) for g in grids], 1)


# --------------------------------------------------------------------- repeat_interleave
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None) -> Tensor:
    """torch.repeat_interleave: each element (each slice along `dim`; without dim, of the
    flattened tensor) repeated `repeats` times in place. A number of repeats is torch's
    unsqueeze-expand-clone-view (ViewBackward0 at the end); a tensor of them (0-d, one element,
    or one per slice) an index_select (IndexSelectBackward0), whose index is worked out from the
    tensor's values (inside fg.compile: a graph break). `repeat_interleave(repeats)` alone: the
    positions 0, 1, ... each repeated as many times as `repeats` says (int64)."""
    if repeats is None:
        return _repeat_index(as_tensor(input, "repeat_interleave", "repeats"), output_size)
    t = as_tensor(input, "repeat_interleave")
    if not isinstance(repeats, Tensor):
        count = _int(repeats, "repeat_interleave", "repeats", 2)
        if count < 0:
            raise RuntimeError("Repeats must be non-negative")
        if dim is None:
            t, d = F.reshape(t, -1), 0
        else:
            d = normalize_dim(_int(dim, "repeat_interleave", "dim", 3), t.dim())
            if t.dim() == 0:        # (torch's unsqueeze(dim + 1) of the 0-d tensor)
                raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but got {d + 1})")
        shape = tuple(t.shape)
        expected = shape[d] * count
        if output_size is not None and output_size != expected:
            raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {expected} but got {output_size}")
        spread = F.expand(F.unsqueeze(t, d + 1), shape[:d + 1] + (count,) + shape[d + 1:])
        return F.reshape(F.contiguous(spread), shape[:d] + (expected,) + shape[d + 1:])
    if dim is None:
        t, d = F.reshape(t, -1), 0
    else:
        dim = _int(dim, "repeat_interleave", "dim", 3)
        if t.dim() == 0:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        d = normalize_dim(dim, t.dim())
    size = t.shape[d]
    if repeats.dim() == 0 or (repeats.dim() == 1 and repeats.shape[0] == 1):
        repeats = F.expand(F.reshape(repeats, (1,)), (size,))
    elif repeats.dim() == 1:
        if repeats.shape[0] != size:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{repeats.shape[0]} and input.size({d}) = {size}")
    else:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    return index_select(t, d, _repeat_index(repeats, output_size))


def _repeat_index(repeats: Tensor, output_size) -> Tensor:
    """torch.repeat_interleave(repeats): arange(len(repeats)) each repeated repeats[i] times."""
    if repeats._dtype is not int64:
        raise NotImplementedError(f"\"repeat_interleave_cpu\" not implemented for "
                                  f"'{TORCH_SCALAR_NAMES[repeats._dtype.name]}'")
    if repeats.dim() != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    counts = np.asarray(repeats._concrete())
    if counts.size and counts.min() < 0:
        raise RuntimeError("repeats can not be negative")
    if output_size is not None and counts.size and output_size != int(counts.sum()):
        raise RuntimeError("allocated size does not match required size")
    return wrap_array(np.repeat(np.arange(counts.size, dtype=np.int64), counts))


def _repeat_interleave_method(self, repeats=None, dim=None, *, output_size=None) -> Tensor:
    if repeats is None:
        raise TypeError("repeat_interleave() received an invalid combination of arguments - got (), but expected one "
                        "of:\n * (Tensor repeats, int dim = None, *, int output_size = None)\n * (int repeats, int dim "
                        "= None, *, int output_size = None)\n")
    return repeat_interleave(self, repeats, dim, output_size=output_size)


_repeat_interleave_method.__name__, _repeat_interleave_method.__doc__ = "repeat_interleave", repeat_interleave.__doc__


# --------------------------------------------------------------------- tensor_split and kin
def _slice_bounds(start: int, stop: int, size: int) -> tuple:
    """torch's slice of [start, stop) along a dim of `size`: negative ends wrap, both clamp."""
    start, stop = (start + size if start < 0 else start), (stop + size if stop < 0 else stop)
    start, stop = min(max(start, 0), size), min(max(stop, 0), size)
    return start, max(stop, start)


_TENSOR_SPLIT_TYPES = ("tensor_split() received an invalid combination of arguments - got (Tensor, {0}, int), but "
                       "expected one of:\n * (Tensor input, tuple of ints indices, int dim = 0)\n      didn't match "
                       "because some of the arguments have invalid types: (Tensor, !{0}!, !int!)\n * (Tensor input, "
                       "Tensor tensor_indices_or_sections, int dim = 0)\n      didn't match because some of the "
                       "arguments have invalid types: (Tensor, !{0}!, !int!)\n * (Tensor input, int sections, int dim "
                       "= 0)\n      didn't match because some of the arguments have invalid types: (Tensor, !{0}!, "
                       "!int!)\n")


def tensor_split(input, indices_or_sections, dim=0) -> tuple:
    """torch.tensor_split: views of `input` along `dim` (SliceBackward0 each): `sections` parts
    (the first size % sections one longer), or the parts between the given indices (clamped as
    slices are; a tensor of them, 0-d a number of sections, must be int64)."""
    t = as_tensor(input, "tensor_split")
    split = indices_or_sections
    if isinstance(split, Tensor):
        if split._dtype is not int64:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                               f"{TORCH_SCALAR_NAMES[split._dtype.name]}")
        if split.dim() > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {split.dim()} dims")
        values = np.asarray(split._concrete())
        split = int(values) if values.ndim == 0 else [int(v) for v in values]
    elif _is_index(split) and not isinstance(split, bool):
        split = operator.index(split)
    elif not (isinstance(split, (list, tuple)) and all(_is_index(v) and not isinstance(v, bool) for v in split)):
        raise TypeError(_TENSOR_SPLIT_TYPES.format(type_name(split)))
    dim = _int(dim, "tensor_split", "dim", 3)
    if t.dim() == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = normalize_dim(dim, t.dim())
    size = t.shape[d]
    if isinstance(split, int):
        if split <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {split}")
        small, extra = divmod(size, split)
        bounds, start = [], 0
        for k in range(split):
            stop = start + small + (1 if k < extra else 0)
            bounds.append((start, stop))
            start = stop
    else:
        edges = [0] + [operator.index(v) for v in split] + [size]
        bounds = [_slice_bounds(a, b, size) for a, b in zip(edges, edges[1:])]
    return tuple(_part(t, d, a, b, "SliceBackward0") for a, b in bounds)


def _split_along(fn: str, least: int, dim_of, input, indices_or_sections) -> tuple:
    t = as_tensor(input, fn)
    if t.dim() < least:
        raise RuntimeError(f"torch.{fn} requires a tensor with at least {least} dimension, but got a tensor with "
                           f"{t.dim()} dimensions!")
    d = dim_of(t)
    if _is_index(indices_or_sections) and not isinstance(indices_or_sections, (bool, Tensor)):
        sections = operator.index(indices_or_sections)
        if sections == 0 or t.shape[d] % sections:
            raise RuntimeError(f"torch.{fn} attempted to split along dimension {d}, but the size of the dimension "
                               f"{t.shape[d]} is not divisible by the split_size {sections}!")
    return tensor_split(t, indices_or_sections, d)


def hsplit(input, indices_or_sections) -> tuple:
    """torch.hsplit: tensor_split along dim 1 (dim 0 of a 1-d tensor); a number of sections must
    divide that dim."""
    return _split_along("hsplit", 1, lambda t: 0 if t.dim() == 1 else 1, input, indices_or_sections)


def vsplit(input, indices_or_sections) -> tuple:
    """torch.vsplit: tensor_split along dim 0 of a tensor of at least 2 dims."""
    return _split_along("vsplit", 2, lambda t: 0, input, indices_or_sections)


def dsplit(input, indices_or_sections) -> tuple:
    """torch.dsplit: tensor_split along dim 2 of a tensor of at least 3 dims."""
    return _split_along("dsplit", 3, lambda t: 2, input, indices_or_sections)


# --------------------------------------------------------------------- unfold, diff, kron, block_diag
def unfold(self, dimension, size, step) -> Tensor:
    """Tensor.unfold: the windows of `size` elements every `step` along `dimension`, as a new last
    dim (UnfoldBackward0). A view sharing memory, as torch's. An in-place op on overlapping
    windows (step < size) writes each element once, computed from the memory before the write;
    torch's kernel reads and writes window by window, so its result depends on its iteration
    order (`arange(8.).unfold(0, 3, 1).add_(1)` adds up to 3 there): that is not copied."""
    t = as_tensor(self, "unfold")
    dimension, size, step = _int(dimension, "unfold", "dimension", 1), _int(size, "unfold", "size", 2), \
        _int(step, "unfold", "step", 3)
    d = normalize_dim(dimension, t.dim())
    longest = t.shape[d] if t.dim() else 1
    if size > longest:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {longest} but size is {size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return apply_op("unfold", [t], {"dim": d, "size": size, "step": step})


def diff(input, n=1, dim=-1, prepend=None, append=None) -> Tensor:
    """torch.diff: the n-th forward difference along `dim` (slices and a sub, n times; a
    logical_xor for bool), after `prepend` and `append` are joined on (cat). n=0: a copy
    (CopyBackwards, as torch's zeros_like(x).copy_(x))."""
    t = as_tensor(input, "diff")
    n, dim = _int(n, "diff", "n", 2), _int(dim, "diff", "dim", 3)
    if t.dim() < 1:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    extra = [as_tensor(x, "diff", name) for x, name in ((prepend, "prepend"), (append, "append")) if x is not None]
    if n == 0 and not extra:        # (torch reads the dim only to check prepend/append, or to take differences)
        return zeros_like(t).copy_(t)
    d = normalize_dim(dim, t.dim())
    for x in extra:
        if x.dim() != t.dim():
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
        for k in range(t.dim()):
            if k != d and x.shape[k] != t.shape[k]:
                raise RuntimeError(f"diff expects the shape of tensor to prepend or append to match that of input "
                                   f"except along the differencing dimension; input.size({k}) = {t.shape[k]}, but got "
                                   f"tensor.size({k}) = {x.shape[k]}")
    if n == 0:
        return zeros_like(t).copy_(t)
    if extra:
        parts = ([as_tensor(prepend, "diff")] if prepend is not None else []) + [t] + \
            ([as_tensor(append, "diff")] if append is not None else [])
        t = F.cat(parts, d)
    length = t.shape[d] - 1
    for _ in range(min(n, t.shape[d])):
        later, earlier = _part(t, d, 1, 1 + length, "SliceBackward0"), _part(t, d, 0, length, "SliceBackward0")
        t = F.logical_xor(later, earlier) if t._dtype is bool_ else F.sub(later, earlier)
        length -= 1
    return t


def _operand_view(t: Tensor, shape: tuple) -> Tensor:
    """kron's _unsafe_view of an operand: its memory, counting versions of its own, so that a
    later write of the operand does not stop the backward of the product that saved it (in a
    compiled call too: Trace.own_counters, which runtime/compile.py does not check)."""
    view = _unsafe_view(apply_op("reshape", [t], {"shape": shape}, "UnsafeViewBackward0"))
    if view._sym is not None:
        trace_state.current().own_counters.add(view._sym.id)
    return view


def kron(input, other) -> Tensor:
    """torch.kron: the Kronecker product, as torch computes it: each operand viewed with unit
    dims interleaved (UnsafeViewBackward0), their product (MulBackward0), viewed to the result's
    shape (UnsafeViewBackward0; torch's view error where the product's layout allows no view)."""
    a, b = as_tensor(input, "kron"), as_tensor(other, "kron", "other", 2)
    ndim = max(a.dim(), b.dim())
    sa = (1,) * (ndim - a.dim()) + tuple(a.shape)
    sb = (1,) * (ndim - b.dim()) + tuple(b.shape)
    a_shape = tuple(s for n in sa for s in (n, 1))
    b_shape = tuple(s for n in sb for s in (1, n))
    product = F.mul(_operand_view(a, a_shape), _operand_view(b, b_shape))
    shape = tuple(x * y for x, y in zip(sa, sb))
    if not _viewable(product, shape):
        return F.view(product, shape)       # (raises torch's view error)
    return _unsafe_view(apply_op("reshape", [product], {"shape": shape}, "UnsafeViewBackward0"))


def block_diag(*tensors) -> Tensor:
    """torch.block_diag: the tensors (0-d as 1 x 1, 1-d as one row, 2-d) as the diagonal blocks
    of a zero matrix of their promoted dtype (BlockDiagBackward0); none gives a [1, 0] float32."""
    for k, x in enumerate(tensors):
        if not isinstance(x, (Tensor, np.ndarray)):
            raise TypeError(f"expected Tensor as element {k} in argument 0, but got {type_name(x)}")
    if not tensors:
        return wrap_array(np.zeros((1, 0), np.float32))
    return apply_op("block_diag", [as_tensor(x, "block_diag") for x in tensors], None)


def _diff_method(self, n=1, dim=-1, prepend=None, append=None) -> Tensor:
    return diff(self, n, dim, prepend, append)


_diff_method.__name__, _diff_method.__doc__ = "diff", diff.__doc__

# Tensor methods (tracer/methods.py binds them)
def sum_to_size(self, *size) -> Tensor:
    """torch's Tensor.sum_to_size: `self` summed down to `size` (ints or one tuple), which it
    must expand to: its leading dims summed away and each of its dims where `size` has 1 summed
    with keepdim (SumBackward1), then viewed as `size` where dims were dropped (ViewBackward0);
    self itself where it has that shape already."""
    if not size:
        raise TypeError('sum_to_size() missing 1 required positional arguments: "size"')
    size = F._shape_arg(size, "sum_to_size", "size")
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(s != n and s != 1 for s, n in zip(size, shape[lead:])):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    dims = tuple(range(lead)) + tuple(lead + d for d, s in enumerate(size) if s == 1 and shape[lead + d] != 1)
    out = F.sum(self, dims, keepdim=True) if dims else self
    return F.view(out, size) if lead else out


METHODS = {"diagonal": diagonal, "sum_to_size": sum_to_size, "diag": diag, "diag_embed": diag_embed, "diagflat": diagflat, "trace": trace,
           "roll": roll, "rot90": rot90, "repeat_interleave": _repeat_interleave_method,
           "tensor_split": tensor_split, "hsplit": hsplit, "vsplit": vsplit, "dsplit": dsplit, "unfold": unfold,
           "diff": _diff_method, "kron": kron}
