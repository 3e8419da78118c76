"""Advanced indexing: gather and scatter through integer index arrays.

`index_take(x, *indices; dims)` is `x[key]` for a key that holds `indices[k]`
at dim `dims[k]` of x (dims strictly increasing) and a full slice at every
other dim; `index_put_at(x, v, *indices; dims, accumulate)` is x with that
region replaced by `v` (torch's `index_put`), or with `v` added into it, each
duplicate index adding (`accumulate=True`, NumPy's `np.add.at`).

The index arrays are op *inputs* (int64), not attributes: a new index value
reuses the compiled program. The indices broadcast together; their dims keep
their place when the indexed dims are adjacent, and go to the front when they
are not (NumPy's and torch's rule). Masks never reach these ops: the tracer
turns a bool mask into int indices (its nonzero) first, as torch does.

Both ops run by their NumPy reference in compiled programs (they have no
kernel rule). Bounds are checked when they run, with torch's IndexError text;
shapes and dtypes when they are recorded.
"""
from __future__ import annotations

import numpy as np

from ..iteration_order import iteration_order, preserved_copy, preserved_result_order
from ..types import TORCH_SCALAR_NAMES, TensorType, int64
from .registry import MOVEMENT, OpDef, broadcast_shapes, expands_to, register, shape_str
from .gather import add_slices



# --------------------------------------------------------------------- shape rules
def broadcast_indices(shapes) -> tuple:
    """The shape the index arrays broadcast to, with torch's IndexError text."""
    try:
        return broadcast_shapes(*shapes)
    except RuntimeError:
        listed = ", ".join(shape_str(s) for s in shapes)
        raise IndexError(f"shape mismatch: indexing tensors could not be broadcast together with shapes "
                         f"{listed}") from None


def adjacent(dims) -> bool:
    """Whether the indexed dims are consecutive (their result dims then stay in place)."""
    return tuple(dims) == tuple(range(dims[0], dims[0] + len(dims)))


def take_shape(shape: tuple, index_shapes, dims) -> tuple:
    """The shape of `x[key]`: the broadcast index shape where the indexed dims were
    (in front when they are not adjacent), the other dims of x around it in order."""
    middle = broadcast_indices(index_shapes)
    if adjacent(dims):
        return tuple(shape[:dims[0]]) + middle + tuple(shape[dims[-1] + 1:])
    return middle + tuple(s for d, s in enumerate(shape) if d not in dims)


def _check_dims(x: TensorType, indices, dims) -> None:
    """Internal consistency (the tracer builds these ops): one int64 array per indexed dim."""
    if not dims or len(dims) != len(indices) or list(dims) != sorted(set(dims)) or dims[-1] >= x.ndim \
            or dims[0] < 0:
        raise ValueError(f"advanced index: dims {dims} do not name {len(indices)} distinct dims of a "
                         f"{x.ndim}-d tensor in order")
    for t in indices:
        if t.dtype is not int64:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")


def value_shape(shape: tuple) -> tuple:
    """A value's shape without its leading size-1 dims (torch's index_put drops them)."""
    shape = tuple(shape)
    while shape and shape[0] == 1:
        shape = shape[1:]
    return shape


# --------------------------------------------------------------------- bounds
def numpy_key(ndim: int, indices, dims) -> tuple:
    """The NumPy key of the region: `indices[k]` at dim `dims[k]`, full slices elsewhere."""
    key = [slice(None)] * ndim
    for d, i in zip(dims, indices):
        key[d] = i
    return tuple(key)


def reads_nothing(shape: tuple, dims) -> bool:
    """Whether a dim other than the indexed `dims` is empty: then nothing is read or written,
    and torch's kernel checks no index (`ones(2, 0)[tensor([5])]` is an empty (1, 0))."""
    return any(size == 0 for d, size in enumerate(shape) if d not in dims)


def indexes_nothing(index_shapes) -> bool:
    """Whether the index arrays broadcast to no element: then torch's kernel reads none of
    them and checks no bound (`zeros(2, 3)[[5], False]` is an empty (0, 3))."""
    try:
        return 0 in np.broadcast_shapes(*index_shapes)
    except ValueError:
        return False                # (the shape rule raises torch's broadcast error)


def check_index_arrays(shape: tuple, indices, dims) -> bool:
    """torch's index checks, in its order, of index arrays `indices` at `dims` of a tensor of
    `shape`; returns whether they read anything (else the take or put does nothing): arrays
    broadcasting to no element are not checked at all, a non-empty index into a size-0 dim is
    an error before anything else, and where another dim is empty no bound is checked."""
    if indexes_nothing([i.shape for i in indices]):
        return False
    check_empty_dims(shape, indices, dims)
    if reads_nothing(shape, dims):
        return False
    check_bounds(shape, indices, dims)
    return True


def check_empty_dims(shape: tuple, indices, dims) -> None:
    """torch's IndexError for a non-empty index into a dim of size 0, checked before anything
    else (`zeros(0, 0)[[0]]` raises though its result, (1, 0), would be empty)."""
    for i, d in zip(indices, dims):
        if shape[d] == 0 and i.size > 0:
            raise IndexError("index is out of bounds for dimension with size 0")


def check_bounds(shape: tuple, indices, dims) -> None:
    """torch's IndexError for an index outside its dim. As torch's kernel, the first
    offending element in the broadcast order is reported, and at it the first index
    array (its position among the index arrays names the dimension). (Not called where
    another dim is empty: see `check_index_arrays`.)"""
    bad = []
    for i, d in zip(indices, dims):
        size = shape[d]
        bad.append(i.size > 0 and (i.min() < -size or i.max() >= size))
    if not any(bad):
        return
    wide = np.broadcast_arrays(*indices)
    outside = [(w < -shape[d]) | (w >= shape[d]) for w, d in zip(wide, dims)]
    first = int(np.argmax(np.logical_or.reduce(outside).ravel()))
    for k, (w, d) in enumerate(zip(wide, dims)):
        if outside[k].ravel()[first]:
            if shape[d] == 0:
                raise IndexError("index is out of bounds for dimension with size 0")
            raise IndexError(f"index {int(w.ravel()[first])} is out of bounds for dimension {k} with size {shape[d]}")


# --------------------------------------------------------------------- index_take
def _take_infer(types, attrs):
    x, indices, dims = types[0], types[1:], attrs["dims"]
    _check_dims(x, indices, dims)
    return [TensorType(take_shape(x.shape, [t.shape for t in indices], dims), x.dtype)]


def _take_ref(x, *indices, dims):
    if not check_index_arrays(x.shape, indices, dims):
        return np.zeros(take_shape(x.shape, [i.shape for i in indices], dims), x.dtype)
    return x[numpy_key(x.ndim, indices, dims)]


def _take_vjp(e, x, y, g, a, n):
    # Every gathered element sends its gradient back to where it came from; a position
    # gathered twice receives both (index_put with accumulate=True, as torch).
    zeros = e.zeros_like(x[0])
    gx = e.op("index_put_at", zeros, g[0], *x[1:], dims=a["dims"], accumulate=True) if n[0] else None
    return [gx] + [None] * (len(x) - 1)


def _bounds_check_now(first_index: int):
    """The bounds check of an op whose index arrays are its inputs from `first_index` on, run
    where they are known at trace time (see registry.check_values_now)."""
    def check(in_types, arrays, attrs):
        indices = arrays[first_index:]
        if all(i is not None for i in indices):
            check_index_arrays(in_types[0].shape, indices, attrs["dims"])
    return check


def _take_order(shape: tuple, arrays: list, attrs: dict) -> list:
    """The dims of x[key] (of `shape`), slowest first, as torch lays it out: its TensorIterator
    iterates x restrided to the result's shape (stride 0 along the index dims) and each index
    array restrided likewise (its strides there, 0 elsewhere); see iteration_order. So a[i]
    of a = t.permute(0, 2, 1) keeps a's order of the trailing dims. `arrays`: x's and the index
    arrays' layouts (strides)."""
    x, indices, dims = arrays[0], arrays[1:], attrs["dims"]
    middle = broadcast_indices([i.shape for i in indices])
    rest = [d for d in range(x.ndim) if d not in dims]
    before = [d for d in rest if d < dims[0]] if adjacent(dims) else []
    after = rest[len(before):]
    m, lead = len(middle), len(before)
    operands = [[x.strides[d] for d in before] + [0] * m + [x.strides[d] for d in after]]
    span = int(np.prod(middle, dtype=np.int64))
    for index in indices:
        spread = np.broadcast_to(index, middle).strides
        # torch reshapes each index to (1,) * lead + its shape + (1,) * len(after): a size-1 dim
        # keeps that reshape's (contiguous) stride where the result's dim is 1 too (TensorIterator
        # zeroes an operand's stride only where the result broadcasts it)
        outer = [index.itemsize * span if shape[d] == 1 else 0 for d in range(lead)]
        inner = [index.itemsize if shape[lead + m + d] == 1 else 0 for d in range(len(after))]
        operands.append(outer + list(spread) + inner)
    return iteration_order(shape, operands)


# (extra "result_order": the layout torch gives its eager result; NumPy puts the indexed dims
# first in memory)
register(OpDef("index_take", MOVEMENT, _take_infer, _take_ref, _take_vjp, reference_only=True,
               doc="index_take(x, *indices; dims): x[key] with int64 index arrays at `dims` (a copy)",
               extra={"result_order": _take_order, "value_checks": True, "check_now": _bounds_check_now(1)}))


# --------------------------------------------------------------------- index_put_at
def _put_infer(types, attrs):
    x, v, indices, dims = types[0], types[1], types[2:], attrs["dims"]
    _check_dims(x, indices, dims)
    target = take_shape(x.shape, [t.shape for t in indices], dims)
    if not indexes_nothing([t.shape for t in indices]):
        for t, d in zip(indices, dims):
            if x.shape[d] == 0 and t.numel > 0:     # (torch's first check: before the value's shape)
                raise IndexError("index is out of bounds for dimension with size 0")
    if not expands_to(value_shape(v.shape), target):         # (torch checks the shape next)
        raise RuntimeError(f"shape mismatch: value tensor of shape {shape_str(value_shape(v.shape))} cannot be broadcast to "
                           f"indexing result of shape {shape_str(target)}")
    if x.dtype is not v.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{TORCH_SCALAR_NAMES[x.dtype.name]} for the destination and {TORCH_SCALAR_NAMES[v.dtype.name]} "
                           f"for the source.")
    return [TensorType(x.shape, x.dtype)]


def put_into(out: np.ndarray, v, indices, dims, accumulate: bool = False) -> np.ndarray:
    """`out[key] = v` (or `+=` with `accumulate`) in place, with index arrays `indices` at `dims`
    and torch's index checks; returns `out`. (Also the eager write into an expand's memory,
    whose replicas take the last value written: tracer/indexing.py.)"""
    if not check_index_arrays(out.shape, indices, dims):
        return out
    key = numpy_key(out.ndim, indices, dims)
    v = np.reshape(v, value_shape(v.shape))
    if accumulate and len(indices) == 1 and np.ndim(indices[0]) == 1 and out.dtype.kind in "fi" and \
            out.shape[dims[0]]:
        # one index vector (x[idx]'s backward, an embedding's): whole slices in index order
        # (gather.add_slices), as np.add.at adds them one element at a time
        d, vector = dims[0], np.asarray(indices[0]) % out.shape[dims[0]]
        target = out.shape[:d] + vector.shape + out.shape[d + 1:]
        add_slices(np.moveaxis(out, d, 0), vector, np.moveaxis(np.broadcast_to(v, target), d, 0))
    elif accumulate:
        np.add.at(out, key, v)
    else:
        out[key] = v
    return out


def _put_ref(x, v, *indices, dims, accumulate):
    return put_into(preserved_copy(x), v, indices, dims, accumulate)


def _put_vjp(e, x, y, g, a, n):
    dims, indices = a["dims"], x[2:]
    gx = gv = None
    if n[0]:
        # Overwritten positions take no gradient back to x; accumulated ones pass it on.
        gx = g[0] if a["accumulate"] else \
            e.op("index_put_at", g[0], e.const(0, g[0]), *indices, dims=dims, accumulate=False)
    if n[1]:
        # The value receives the gradient gathered from where it went, summed over its
        # broadcast (a duplicate index sends it the gradient of that position again, as torch).
        taken = e.op("index_take", g[0], *indices, dims=dims)
        gv = e.reshape(e.sum_to(taken, value_shape(x[1].shape)), x[1].shape)
    return [gx, gv] + [None] * len(indices)


register(OpDef("index_put_at", MOVEMENT, _put_infer, _put_ref, _put_vjp, reference_only=True,
               doc="index_put_at(x, v, *indices; dims, accumulate): x with x[key] = v (or += v, duplicates "
                   "adding), int64 index arrays at `dims`", extra={"value_checks": True, "check_now": _bounds_check_now(2),
                                                        "result_order": preserved_result_order}))
