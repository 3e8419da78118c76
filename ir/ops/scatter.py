"""torch's scatter family: writes through an int64 index along one axis, and through a bool mask.

`scatter(x, index, src; axis, fill, reduce, alpha)`: a row-major copy of x with
`out[i][index[i][j]] = src[i][j]` (axis 1; along the other axes the index may be shorter than
x and src, not longer); `fill`: src is a 0-d value written at every place the index names;
`reduce` "add" adds (duplicates adding in the index's row-major order, as torch's CPU loop),
"multiply" multiplies, and `alpha` scales src first (index_add). Where an index repeats without
a reduction the last write wins (torch's CPU order). torch.scatter, scatter_add, index_add,
index_copy and index_fill are this op (the last three through their 1-d index spread over the
other axes, as index_select's gather). `bounds`: whose words an index out of range takes
("index_copy": IndexError with its prefix; "index_fill": IndexError; else RuntimeError).
`no_derivative`: torch's scatter with a `reduce` keyword has none (a NotImplemented node).
`bad_src_grad`: torch's error where src is larger than the index and needs a gradient (its
gradient, the index's shape, does not fit src: validate_outputs).

`scatter_reduce(x, index, src; axis, reduce, include_self)`: torch.scatter_reduce (sum, prod,
mean, amax, amin), with torch's backward formulas (FunctionsManual.cpp scatter_reduce_backward).

`masked_scatter(x, mask, source)`: x broadcast with mask, the masked places taking source's
leading elements in row-major order; `masked_scatter_backward(g, mask; shape)`: the gradient
of source (g's masked elements, zero-padded to source's size); `masked_select(x, mask; count)`:
the masked elements as a vector (its length, a value-dependent shape, is read by the tracer).
`take(x, index)`: x's elements at flat (row-major) positions, negative ones counting from the
end. All run by their NumPy reference in compiled programs.
"""
from __future__ import annotations

import numpy as np

from ..iteration_order import preserved_order
from ..types import TensorType, bool_
from .gather import _as_1d, _check_index, _region, _scatter_add_ref
from .registry import MOVEMENT, NoDerivativeError, OpDef, broadcast_shapes, register


def _checked(index: np.ndarray, size: int, axis: int, bounds) -> None:
    """The bounds check, in the words of the function that called the op."""
    if bounds is None:
        _check_index(index, size, axis)
        return
    low = -size if bounds == "index_fill" else 0
    if index.size and (index.min() < low or index.max() >= size):
        bad = int(index.ravel()[np.argmax(((index < low) | (index >= size)).ravel())])
        prefix = "index_copy_(): " if bounds == "index_copy" else ""
        raise IndexError(f"{prefix}index {bad} is out of bounds for dimension {axis} with size {size}")


def _check_now(in_types, arrays, attrs):
    x, index = in_types[0], arrays[1]
    if index is not None:
        _checked(_as_1d(index), (x.shape or (1,))[attrs["axis"]], attrs["axis"], attrs.get("bounds"))


def _same_as_x(types, attrs):
    return [TensorType(types[0].shape, types[0].dtype)]


def _prefix(shape: tuple) -> tuple:
    """A getitem index taking the leading `shape` of a larger tensor (src beyond the index)."""
    return tuple(("s", 0, n, 1) for n in shape)


# --------------------------------------------------------------------- scatter
def _scatter_ref(x, index, src, axis, fill=False, reduce=None, alpha=1, bounds=None, no_derivative=None,
                 bad_src_grad=None):
    out = np.array(_as_1d(x), order="C", copy=True)
    ia = _as_1d(index)
    if ia.size == 0:
        return out.reshape(x.shape)
    if fill and bounds == "index_fill":
        _checked(ia, out.shape[axis], axis, bounds)
        ia = np.where(ia < 0, ia + out.shape[axis], ia)     # (index_fill wraps negative indices)
    values = src if fill else _as_1d(src)[tuple(slice(0, n) for n in ia.shape)]
    if alpha != 1:
        values = np.asarray(values * np.asarray(alpha, out.dtype), out.dtype)
    if reduce == "add" and not fill:
        _checked(ia, out.shape[axis], axis, bounds)
        return _scatter_add_ref(out, ia, values, axis).reshape(x.shape)
    _checked(ia, out.shape[axis], axis, bounds)
    region = _region(out.shape, ia, axis)
    if reduce is None:
        out[region] = values            # (NumPy's assignment: the last of repeated places wins)
    elif reduce == "add":
        np.add.at(out, region, values)
    else:
        np.multiply.at(out, region, values)
    return out.reshape(x.shape)


def _scatter_vjp(e, x, y, g, a, n):
    if a.get("no_derivative"):
        raise NoDerivativeError(f"derivative for aten::{a['no_derivative']} is not implemented")
    axis, index = a["axis"], x[1]
    fill = {"fill": True, **({"bounds": a["bounds"]} if a.get("bounds") else {})}    # (index_fill's wrapping)
    if a.get("reduce") == "add":
        gx = g[0] if n[0] else None                       # scatter_add, index_add: self's gradient is grad
    else:
        gx = e.op("scatter", g[0], index, e.const(0, g[0]), axis=axis, **fill) if n[0] else None
    if not n[2]:
        return [gx, None, None]
    if a.get("bad_src_grad"):
        raise NoDerivativeError(a["bad_src_grad"])
    if a.get("fill"):
        # index_fill's 0-d tensor value (IndexFillBackward1): the sum of grad over the places filled,
        # each once however often the index names it (torch sums over the index's unique values)
        filled = e.op("scatter", e.cast(e.zeros_like(g[0]), bool_), index, e.const(True, bool_), axis=axis, **fill)
        picked = e.where(filled, g[0], e.zeros_like(g[0]))
        return [gx, None, e.sum(picked, tuple(range(len(g[0].shape))))]
    gs = e.reshape(e.op("gather", g[0], index, axis=axis, saves_input=False), x[2].shape)
    if a.get("alpha", 1) != 1:
        gs = e.mul(gs, a["alpha"])
    return [gx, None, gs]


def _result_order(shape, arrays, attrs) -> list:
    """torch's structured scatter kernels allocate their result row-major; index_fill (not
    structured) is a clone(preserve_format) of x filled in place."""
    return preserved_order(arrays[0]) if attrs.get("bounds") == "index_fill" else list(range(len(shape)))


register(OpDef("scatter", MOVEMENT, _same_as_x, _scatter_ref, _scatter_vjp, reference_only=True, nondiff_inputs=(1,),
               doc="scatter(x, index, src; axis, fill, reduce, alpha): torch.scatter and its kin, a row-major copy",
               extra={"value_checks": True, "check_now": _check_now, "row_major_result": True,
                      "result_order": _result_order, "reference_why": "a scatter through an index array"}))


# --------------------------------------------------------------------- scatter_reduce
def _identity(reduce: str, dtype: np.dtype):
    """The value a place excluded from the reduction (include_self=False) starts from."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype == np.bool_:
        return reduce == "amin"
    if dtype.kind == "f":
        return -np.inf if reduce == "amax" else np.inf
    info = np.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


_AT = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}


def _scatter_reduce_ref(x, index, src, axis, reduce, include_self=True, bad_src_grad=None):
    out = np.array(_as_1d(x), order="C", copy=True)
    ia = _as_1d(index)
    if ia.size == 0:
        return out.reshape(x.shape)
    _check_index(ia, out.shape[axis], axis)
    values = _as_1d(src)[tuple(slice(0, n) for n in ia.shape)]
    region = _region(out.shape, ia, axis)
    if not include_self:
        out[region] = _identity(reduce, out.dtype)
    if reduce in ("sum", "mean") and out.dtype != np.bool_:
        out = _scatter_add_ref(out, ia, values, axis)
    else:
        _AT[reduce].at(out, region, values)
    if reduce == "mean":
        count = np.full(out.shape, 1 if include_self else 0, np.int64)
        np.add.at(count, region, 1)
        count[count == 0] = 1
        if out.dtype.kind == "f":
            out = (out / count.astype(out.dtype)).astype(out.dtype)
        else:
            out = np.floor_divide(out, count).astype(out.dtype)
    return out.reshape(x.shape)


def _scatter_reduce_vjp(e, x, y, g, a, n):
    # torch's scatter_reduce_backward, formula by formula
    self_, index, src = x
    grad, result, axis, reduce = g[0], y[0], a["axis"], a["reduce"]
    if n[2] and a.get("bad_src_grad"):
        raise NoDerivativeError(a["bad_src_grad"])
    if src.shape != index.shape:
        src = e.op("getitem", src, index=_prefix(index.shape))     # (the part of src the index reads)

    def gather(v):
        return e.op("gather", v, index, axis=axis, saves_input=False)

    def reduced(into, source):
        return e.op("scatter_reduce", into, index, source, axis=axis, reduce=reduce,
                    include_self=a.get("include_self", True))
    dtype = grad.dtype
    if reduce == "sum":
        grad_self, grad_src = grad, gather(grad)
    elif reduce == "prod":
        masked_self = e.where(e.eq(self_, 0), 1, self_)
        grad_self = e.div(e.mul(grad, reduced(masked_self, src)), masked_self)
        src_zero = e.eq(src, 0)
        src_num_zeros = gather(e.op("scatter_add", e.zeros_like(self_), index, e.cast(src_zero, dtype), axis=axis))
        src_single_zero = e.logical_and(src_zero, e.eq(src_num_zeros, 1))
        masked_src_result = reduced(self_, e.where(src_single_zero, 1, src))
        grad_src = e.where(src_single_zero, gather(e.mul(grad, masked_src_result)),
                           e.div(gather(e.mul(grad, result)), e.where(src_zero, 1, src)))
    elif reduce == "mean":
        count = e.const(1 if a.get("include_self", True) else 0, grad, grad.shape)
        count = e.op("scatter_add", count, index, e.const(1, grad, index.shape), axis=axis)
        count = e.where(e.eq(count, 0), 1, count)
        grad_self, grad_src = e.div(grad, count), e.div(gather(grad), gather(count))
    else:
        value = gather(result)
        self_is_result = e.cast(e.eq(self_, result), dtype)
        src_is_result = e.cast(e.eq(src, value), dtype)
        distributed = e.div(grad, e.op("scatter_add", self_is_result, index, src_is_result, axis=axis))
        grad_self = e.mul(self_is_result, distributed)
        grad_src = e.mul(src_is_result, gather(distributed))
    if not a.get("include_self", True):
        grad_self = e.op("scatter", grad_self, index, e.const(0, grad), axis=axis, fill=True)
    return [grad_self if n[0] else None, None, grad_src if n[2] else None]


register(OpDef("scatter_reduce", MOVEMENT, _same_as_x, _scatter_reduce_ref, _scatter_reduce_vjp, reference_only=True,
               nondiff_inputs=(1,),
               doc="scatter_reduce(x, index, src; axis, reduce, include_self): torch.scatter_reduce",
               extra={"value_checks": True, "check_now": _check_now, "row_major_result": True,
                      # (ScatterReduceBackward0 saves self, src and result for every reduction)
                      "always_saves": (("in", 0), ("in", 2), ("out", 0)),
                      "reference_why": "a scatter through an index array"}))


# --------------------------------------------------------------------- masks
def _masked_scatter_infer(types, attrs):
    x, mask, _ = types
    return [TensorType(broadcast_shapes(x.shape, mask.shape), x.dtype)]


def _masked_scatter_ref(x, mask, source):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    out = np.array(np.broadcast_to(x, shape), order="C", copy=True)
    where = np.broadcast_to(mask, shape)
    count = int(np.count_nonzero(where))
    if count > source.size:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    out[where] = source.reshape(-1)[:count]
    return out


def _masked_scatter_vjp(e, x, y, g, a, n):
    # torch's MaskedScatterBackward0: self grad.masked_fill(mask, 0), source the masked grad
    gx = e.op("masked_fill", g[0], x[1], e.const(0, g[0])) if n[0] else None
    gs = e.op("masked_scatter_backward", g[0], x[1], shape=x[2].shape) if n[2] else None
    return [gx, None, gs]


def _masked_scatter_backward_ref(g, mask, shape):
    picked = g[np.broadcast_to(mask, g.shape)]
    out = np.zeros(int(np.prod(shape)), g.dtype)
    out[:picked.size] = picked[:out.size]
    return out.reshape(shape)


def _check_mask(in_types, arrays, attrs):
    """masked_scatter's count check, where the mask and source are known when recorded."""
    x, mask, source = in_types
    if arrays[1] is not None:
        where = np.broadcast_to(arrays[1], broadcast_shapes(x.shape, mask.shape))
        if int(np.count_nonzero(where)) > int(np.prod(source.shape)):
            raise RuntimeError("Number of elements of source < number of ones in mask")


register(OpDef("masked_scatter", MOVEMENT, _masked_scatter_infer, _masked_scatter_ref, _masked_scatter_vjp,
               reference_only=True, nondiff_inputs=(1,),
               doc="masked_scatter(x, mask, source): torch.masked_scatter (x and mask broadcast)",
               extra={"value_checks": True, "check_now": _check_mask, "row_major_result": True,
                      "reference_why": "a scatter through a mask"}))
register(OpDef("masked_scatter_backward", MOVEMENT,
               lambda types, attrs: [TensorType(tuple(attrs["shape"]), types[0].dtype)],
               _masked_scatter_backward_ref,
               lambda e, x, y, g, a, n: [e.op("masked_scatter", e.zeros_like(x[0]), x[1], g[0]), None],
               reference_only=True, nondiff_inputs=(1,),
               doc="masked_scatter_backward(g, mask; shape): source's gradient of masked_scatter",
               extra={"reference_why": "a gather through a mask"}))


def _masked_select_ref(x, mask, count):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    picked = np.ascontiguousarray(np.broadcast_to(x, shape)[np.broadcast_to(mask, shape)])
    if picked.size != count:        # (the tracer read the count from this mask's values)
        raise RuntimeError(f"masked_select: the mask selects {picked.size} elements, not {count}")
    return picked


def _masked_select_vjp(e, x, y, g, a, n):
    # torch's masked_select_backward: zeros of the broadcast shape with grad scattered in (summed
    # back to self's shape); MaskedSelectBackward0 saves self
    zeros = e.zeros_reading(x[0], x[0])
    return [e.op("masked_scatter", zeros, x[1], g[0]), None]


register(OpDef("masked_select", MOVEMENT, lambda types, attrs: [TensorType((attrs["count"],), types[0].dtype)],
               _masked_select_ref, _masked_select_vjp, reference_only=True, nondiff_inputs=(1,),
               doc="masked_select(x, mask; count): the masked elements of x (broadcast with mask), row-major",
               extra={"value_checks": True, "reference_why": "a gather through a mask"}))


# --------------------------------------------------------------------- take
def _take_index(x_size: int, index: np.ndarray) -> np.ndarray:
    """take's flat positions, negative ones wrapped, with torch's IndexError texts."""
    if index.size and x_size == 0:
        raise IndexError("take(): tried to take from an empty tensor")
    if index.size and (index.min() < -x_size or index.max() >= x_size):
        bad = int(index.ravel()[np.argmax(((index < -x_size) | (index >= x_size)).ravel())])
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {x_size} elements.")
    return np.where(index < 0, index + x_size, index)


def _take_ref(x, index):
    return np.ascontiguousarray(x.reshape(-1)[_take_index(x.size, index)]).reshape(index.shape)


def _take_vjp(e, x, y, g, a, n):
    # torch's take_backward: zeros_like(self).put_(index, grad, accumulate=True) (TakeBackward0 saves self)
    self_, index = x
    size = int(np.prod(self_.shape))
    flat = e.reshape(index, (int(np.prod(index.shape)),))
    flat = e.where(e.lt(flat, 0), e.add(flat, size), flat)
    zeros = e.reshape(e.zeros_reading(self_, self_), (size,))
    added = e.op("scatter_add", zeros, flat, e.reshape(g[0], flat.shape), axis=0)
    return [e.reshape(added, self_.shape), None]


def _take_check_now(in_types, arrays, attrs):
    if arrays[1] is not None:
        _take_index(int(np.prod(in_types[0].shape)), arrays[1])


register(OpDef("take", MOVEMENT, lambda types, attrs: [TensorType(types[1].shape, types[0].dtype)], _take_ref,
               _take_vjp, reference_only=True, nondiff_inputs=(1,),
               doc="take(x, index): torch.take, x's elements at flat positions (negative from the end)",
               extra={"value_checks": True, "check_now": _take_check_now, "reference_why": "a gather through an index"}))

