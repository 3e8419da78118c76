"""torch's scans, order statistics and other statistics (tracer/statistics.py calls them).

Scans along one axis: `cumprod` (its gradient `cumprod_backward`, torch's, exact where the
input has zeros, and differentiable again through an O(n^2) form), `cumextreme` (cummax and
cummin: values and int64 indices), `logcumsumexp` (from the axis's end when `reverse`).
Reductions: `nansum`, `order_stat` (median, nanmedian, kthvalue and mode along one axis:
values and indices), `median_all` (the lower median of every element, NaN-aware or not),
`var_mean` (var or std with the mean: one node, VarMeanBackward0 / StdMeanBackward0) and
`aminmax`. Elementwise: `fmax` and `fmin` (a NaN loses). Without gradients: `searchsorted`,
`histc`; `pick` takes given positions of x along an axis (unique's values, whose node torch
does not differentiate: NoDerivativeError). All but fmax/fmin run by their NumPy reference.
"""
from __future__ import annotations

import numpy as np

from ..types import TensorType, int64
from .elementwise import _infer_map
from .moments import _var_grad, reduced_count
from .reduce import _extremum_vjp, _grad_to_input, _infer_reduce, reduced_shape
from .registry import COMPOSITE, MOVEMENT, OPAQUE, OTHER_THEN_SELF, NoDerivativeError, NoDerivativeNotImplementedError, OpDef, register

_SCAN = "a scan along an axis (no kernel rule for scans)"
_ORDER = "an order statistic (a sort per row, reference-run)"


def _same(types, attrs):
    return [types[0]]


def _last(x: np.ndarray, axis: int) -> np.ndarray:
    return np.moveaxis(x, axis, -1)


def _back(x: np.ndarray, axis: int, dtype) -> np.ndarray:
    return np.ascontiguousarray(np.moveaxis(x, -1, axis), dtype=dtype)


# ------------------------------------------------------------------ cumprod
def _cumprod_ref(x, axis):
    # torch's CPU kernel keeps the running product of a float32 tensor in double
    if x.ndim == 0:
        return x.copy()
    wide = np.float64 if x.dtype.kind == "f" else x.dtype
    return np.ascontiguousarray(np.cumprod(x, axis, dtype=wide), x.dtype)


def _cumprod_vjp(e, x, y, g, a, n):
    return [e.op("cumprod_backward", g[0], x[0], y[0], axis=a["axis"])]


def _cumprod_backward_ref(grad, x, y, axis):
    """torch's cumprod_backward: before a row's first zero, the reversed running sum of
    grad * y over x; at the first zero, the product of the elements before it times the sum
    of grad times the running products of the elements after it (up to the second zero);
    after it, zero."""
    if x.ndim == 0 or x.shape[axis] <= 1:
        return np.array(grad, copy=True)
    g, xs, ys = (_last(v, axis) for v in (grad, x, y))
    w = g * ys
    zero = xs == 0
    zeros_up_to = np.cumsum(zero, -1)
    before = zeros_up_to == 0
    with np.errstate(all="ignore"):
        tail = np.flip(np.cumsum(np.flip(np.where(before, w, 0), -1), -1), -1)
        out = np.where(before, tail / np.where(before, xs, 1), 0)
        first = zero & (zeros_up_to == 1)
        if first.any():
            between = (zeros_up_to == 1) & ~first
            inner = np.sum(np.cumprod(np.where(between, xs, 1), -1) * np.where(zeros_up_to == 1, g, 0), -1,
                           keepdims=True)
            prefix = np.prod(np.where(before, xs, 1), -1, keepdims=True)
            out = np.where(first, inner * prefix, out)
    return _back(out, axis, x.dtype)


def _move_last(e, v, axis):
    """v with `axis` moved last (a permute), and the permutation."""
    perm = [d for d in range(len(v.shape)) if d != axis] + [axis]
    return (e.permute(v, perm) if perm != list(range(len(v.shape))) else v), perm


def _move_back(e, v, perm):
    if perm == list(range(len(perm))):
        return v
    return e.permute(v, [perm.index(d) for d in range(len(perm))])


def _cumprod_backward_vjp(e, x, y, g, a, n):
    """cumprod_backward(grad, x)_j = sum_k M[j, k] grad_k with M[j, k] = prod_{i <= k, i != j}
    x_i for k >= j (else 0): M is the cumprod over k of x with x_j replaced by 1, masked. Its
    VJP: grad's is M^T gg; x's runs through that cumprod (cumprod_backward again), so it
    differentiates once more. (The result, x[2], is x's cumprod: no gradient of its own.)"""
    grad, x_in = x[0], x[1]
    axis, gg = a["axis"], g[0]
    shape = x_in.shape
    if not shape or shape[axis] <= 1:
        return [gg if n[0] else None, e.zeros_like(x_in) if n[1] else None, None]
    xs, perm = _move_last(e, x_in, axis)
    rows, size = xs.shape[:-1], xs.shape[-1]
    square = rows + (size, size)
    eye = e.eq(e.op("iota", shape=square, axis=len(rows), dtype=int64),
               e.op("iota", shape=square, axis=len(rows) + 1, dtype=int64))
    upper = e.le(e.op("iota", shape=square, axis=len(rows), dtype=int64),
                 e.op("iota", shape=square, axis=len(rows) + 1, dtype=int64))
    spread = e.expand(e.reshape(xs, rows + (1, size)), square)
    w = e.where(eye, e.const(1, x_in), spread)
    c = e.op("cumprod", w, axis=len(square) - 1)
    m = e.where(upper, c, 0)
    gg_last = _move_last(e, gg, axis)[0]
    gg_col = e.expand(e.reshape(gg_last, rows + (size, 1)), square)
    out = [None, None, None]
    if n[0]:
        out[0] = _move_back(e, e.sum(e.mul(m, gg_col), (len(rows),)), perm)
    if n[1]:
        grad_row = e.expand(e.reshape(_move_last(e, grad, axis)[0], rows + (1, size)), square)
        c_grad = e.where(upper, e.mul(gg_col, grad_row), 0)
        w_grad = e.op("cumprod_backward", c_grad, w, c, axis=len(square) - 1)
        out[1] = _move_back(e, e.sum(e.where(eye, 0, w_grad), (len(rows),)), perm)
    return out


register(OpDef("cumprod", OPAQUE, _same, _cumprod_ref, _cumprod_vjp, reference_only=True,
               doc="cumprod(x; axis): running products along axis",
               extra={"reference_why": _SCAN, **{"unpack_order": (("in", 0), ("out", 0))}}))
register(OpDef("cumprod_backward", OPAQUE, lambda types, attrs: [types[1]], _cumprod_backward_ref,
               _cumprod_backward_vjp, reference_only=True, nondiff_inputs=(2,),
               doc="cumprod_backward(grad, x, y; axis): torch's gradient of y = cumprod(x)",
               extra={"reference_why": _SCAN}))


# ------------------------------------------------------------------ cummax / cummin
def _cumextreme_infer(types, attrs):
    return [types[0], TensorType(types[0].shape, int64)]


def _cumextreme_ref(x, axis, largest):
    """torch's cummax/cummin: an element replaces the running extreme where it is NaN, or
    where the extreme is no NaN and the element is >= (<=) it: ties take the later index."""
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    if x.size == 0:
        return x.copy(), np.zeros(x.shape, np.int64)
    xs = _last(x, axis)
    values, indices = np.empty_like(xs), np.empty(xs.shape, np.int64)
    best, where = xs[..., 0].copy(), np.zeros(xs.shape[:-1], np.int64)
    floating = x.dtype.kind == "f"
    for k in range(xs.shape[-1]):
        v = xs[..., k]
        if k:
            better = v >= best if largest else v <= best
            if floating:
                better = np.isnan(v) | (~np.isnan(best) & better)
            best, where = np.where(better, v, best), np.where(better, k, where)
        values[..., k], indices[..., k] = best, where
    return _back(values, axis, x.dtype), _back(indices, axis, np.int64)


def _cumextreme_vjp(e, x, y, g, a, n):
    # torch's cummaxmin_backward: zeros with grad scatter-added at the indices (zeros that read
    # self: torch's node saves it, so a change of it in place before the backward raises)
    if not x[0].shape:
        return [g[0]]
    return [e.op("scatter_add", e.zeros_reading(x[0], x[0]), y[1], g[0], axis=a["axis"])]


register(OpDef("cumextreme", OPAQUE, _cumextreme_infer, _cumextreme_ref, _cumextreme_vjp, reference_only=True,
               nondiff_outputs=(1,), doc="cumextreme(x; axis, largest) -> (values, indices): cummax / cummin",
               # (torch's node saves self, for its shape, and unpacks indices first)
               extra={"reference_why": _SCAN, "always_saves": (("in", 0), ("out", 1)),
                      "unpack_order": (("out", 1), ("in", 0))}))


# ------------------------------------------------------------------ logcumsumexp
def _logcumsumexp_ref(x, axis, reverse):
    # torch's CPU kernel: log(exp(a) + exp(b)) of the running value, kept in double
    if x.ndim == 0:
        return x.copy()
    wide = x.astype(np.float64)
    if reverse:
        wide = np.flip(wide, axis)
    out = np.logaddexp.accumulate(wide, axis=axis) if x.shape[axis] else wide
    if reverse:
        out = np.flip(out, axis)
    return np.ascontiguousarray(out, x.dtype)


def _logcumsumexp_vjp(e, x, y, g, a, n):
    """torch's logcumsumexp_backward: the positive and negative parts of grad in log space,
    each a reversed logcumsumexp of log|grad| - result, plus self, exponentiated."""
    axis, grad = a["axis"], g[0]
    if not x[0].shape:
        return [grad]
    lowest = float(np.finfo(x[0].dtype.np).min)
    log_abs = e.log(e.op("abs", grad))
    parts = []
    for sign in (e.gt, e.lt):
        logs = e.where(sign(grad, 0), log_abs, lowest)
        scan = e.op("logcumsumexp", e.sub(logs, y[0]), axis=axis, reverse=not a["reverse"])
        parts.append(e.exp(e.add(scan, x[0])))
    return [e.sub(parts[0], parts[1])]


register(OpDef("logcumsumexp", OPAQUE, _same, _logcumsumexp_ref, _logcumsumexp_vjp, reference_only=True,
               doc="logcumsumexp(x; axis, reverse): log of the running sums of exp(x)",
               extra={"reference_why": _SCAN, "unpack_order": (("in", 0), ("out", 0))}))


# ------------------------------------------------------------------ nansum
def _nansum_ref(x, axes, keepdim):
    if x.dtype.kind == "f":
        x = np.where(np.isnan(x), x.dtype.type(0), x)
    wide = np.float64 if x.dtype.kind == "f" and x.size >= 4096 else x.dtype
    return np.asarray(np.sum(x, axis=axes, keepdims=keepdim, dtype=wide) + x.dtype.type(0), x.dtype)


def _nansum_vjp(e, x, y, g, a, n):
    # torch's nansum_backward: grad (brought to self's shape) times self.isnan().logical_not()
    # (so an infinite or NaN grad stays NaN at the NaNs)
    grad = _grad_to_input(e, g[0], x[0], a["axes"], a["keepdim"])
    return [e.mul(grad, e.cast(e.eq(x[0], x[0]), x[0].dtype))]


register(OpDef("nansum", OPAQUE, _infer_reduce, _nansum_ref, _nansum_vjp, reference_only=True,
               doc="nansum(x; axes, keepdim): the sum with NaNs counted as zeros",
               extra={"reference_why": "a masked sum", "row_major_result": True}))


# ------------------------------------------------------------------ median, kthvalue, mode
def _order_infer(types, attrs):
    x = types[0]
    shape = reduced_shape(x.shape, (attrs["axis"],), attrs["keepdim"]) if x.shape else ()
    return [TensorType(shape, x.dtype), TensorType(shape, int64)]


def _row_order(xs: np.ndarray) -> np.ndarray:
    """Stable ascending order along the last axis, NaN largest (sort.sort_order's)."""
    from .sort import sort_order
    return sort_order(xs, -1, False)


def _order_ref(x, axis, keepdim, kind, k):
    """Per row along `axis`: median (the lower one; NaN and the first NaN's index if the row
    has one), nanmedian (the lower median of the numbers; a row of NaNs gives NaN and index
    0), kthvalue (the k-th smallest, NaN largest) or mode (the most frequent value, the
    smallest of equally frequent ones, at its last position). Among equal values the index
    is the one a stable sort puts at the chosen rank."""
    xs = x.reshape(1) if x.ndim == 0 else _last(x, axis)
    size = xs.shape[-1]
    order = _row_order(xs)
    ranked = np.take_along_axis(xs, order, -1)
    if kind == "mode":
        pick = _mode_positions(xs, ranked, order)
    else:
        if kind == "kthvalue":
            rank = np.full(xs.shape[:-1], k - 1, np.int64)
        elif kind == "median":
            rank = np.full(xs.shape[:-1], (size - 1) // 2, np.int64)
            if xs.dtype.kind == "f":
                nan = np.isnan(xs)
                rank = np.where(nan.any(-1), np.argmax(np.isnan(ranked), -1), rank)
        else:       # nanmedian
            count = size - (np.isnan(xs).sum(-1) if xs.dtype.kind == "f" else np.zeros(xs.shape[:-1], np.int64))
            rank = np.where(count > 0, (count - 1) // 2, 0).astype(np.int64)
        pick = np.take_along_axis(order, rank[..., None], -1)[..., 0]
    values = np.take_along_axis(xs, pick[..., None], -1)[..., 0]
    if kind == "median" and xs.dtype.kind == "f":
        # (a row with NaNs: its first NaN, in position order)
        nan = np.isnan(xs)
        pick = np.where(nan.any(-1), np.argmax(nan, -1), pick)
    if x.ndim and keepdim:
        values, pick = np.expand_dims(values, axis), np.expand_dims(pick, axis)
    # (np.array, not np.ascontiguousarray: that makes a 0-d result 1-d)
    return np.array(values, x.dtype, order="C"), np.array(pick, np.int64, order="C")


def _mode_positions(xs, ranked, order) -> np.ndarray:
    """Each row's mode's position: the longest run of equal sorted values (NaNs never equal),
    the first such run (the smallest value); its last position in the row."""
    rows = ranked.reshape(-1, ranked.shape[-1])
    orders = order.reshape(-1, order.shape[-1])
    out = np.empty(rows.shape[0], np.int64)
    for r, (row, where) in enumerate(zip(rows, orders)):
        starts = np.concatenate([[True], row[1:] != row[:-1]])
        run_start = np.flatnonzero(starts)
        lengths = np.diff(np.append(run_start, row.size))
        best = int(np.argmax(lengths))
        out[r] = where[run_start[best]:run_start[best] + lengths[best]].max()
    return out.reshape(ranked.shape[:-1])


def _order_vjp(e, x, y, g, a, n):
    # torch's value_selecting_reduction_backward: zeros with grad scattered at the indices
    if not x[0].shape:
        return [e.reshape(g[0], ())]
    axis = a["axis"]
    grad, index = g[0], y[1]
    if not a["keepdim"]:
        keep = reduced_shape(x[0].shape, (axis,), True)
        grad, index = e.reshape(grad, keep), e.reshape(index, keep)
    return [e.op("scatter_add", e.zeros_like(x[0]), index, grad, axis=axis)]


register(OpDef("order_stat", OPAQUE, _order_infer, _order_ref, _order_vjp, reference_only=True,
               nondiff_outputs=(1,), doc="order_stat(x; axis, keepdim, kind, k) -> (values, indices): "
               "median, nanmedian, kthvalue or mode along axis", extra={"reference_why": _ORDER}))


def _median_all_ref(x, ignore_nan):
    """The lower median of every element (NaN if there is a NaN, unless ignore_nan: then of
    the numbers, NaN if none); NaN for an empty float tensor."""
    flat = np.sort(x.ravel(), kind="stable")
    if ignore_nan and x.dtype.kind == "f":
        flat = flat[~np.isnan(flat)]
    if flat.size == 0:
        return np.array(np.nan, x.dtype)
    if not ignore_nan and x.dtype.kind == "f" and np.isnan(flat[-1]):
        return np.array(np.nan, x.dtype)
    return np.array(flat[(flat.size - 1) // 2], x.dtype)


def _median_all_vjp(e, x, y, g, a, n):
    # torch's evenly_distribute_backward: grad shared by the elements equal to the result
    # (the NaNs, when it is NaN)
    best = e.expand(y[0], x[0].shape)
    mask = e.eq(x[0], best)
    if x[0].dtype.is_floating_point:     # (or both NaN)
        both_nan = e.logical_and(e.ne(x[0], x[0]), e.ne(best, best))
        mask = e.op("logical_not", e.logical_and(e.op("logical_not", mask), e.op("logical_not", both_nan)))
    axes = tuple(range(len(x[0].shape)))
    count = e.sum(e.cast(mask, x[0].dtype), axes, keepdim=True)
    return [e.where(mask, e.div(e.expand(g[0], x[0].shape), e.expand(count, x[0].shape)), 0)]


register(OpDef("median_all", OPAQUE, lambda types, attrs: [TensorType((), types[0].dtype)], _median_all_ref,
               _median_all_vjp, reference_only=True, doc="median_all(x; ignore_nan): the lower median of x",
               extra={"reference_why": _ORDER, "unpack_order": (("in", 0), ("out", 0))}))


# ------------------------------------------------------------------ var_mean / std_mean
def _var_mean_infer(types, attrs):
    out = _infer_reduce(types, attrs)[0]
    return [out, out]


def _moment_mean_ref(std: bool):
    def ref(x, axes, correction, keepdim):
        from .moments import _std_ref, _var_ref
        from .reduce import _mean_ref
        moment = (_std_ref if std else _var_ref)(x, axes, correction, keepdim)
        return moment, _mean_ref(x, axes, keepdim)
    return ref


def _moment_mean_vjp(std: bool):
    return lambda e, x, y, g, a, n: _var_mean_vjp(e, x, y, g, dict(a, std=std), n)


def _var_mean_vjp(e, x, y, g, a, n):
    """torch's var_mean / std_mean backward: var_backward (std_backward) of the first
    gradient plus mean's backward of the second, each where given."""
    axes, keepdim = a["axes"], a["keepdim"]
    parts = []
    if g[0] is not None:
        grad = g[0]
        if a["std"]:
            grad = e.where(e.eq(y[0], 0), 0, e.div(grad, e.mul(y[0], 2)))
        parts.append(_var_grad(e, grad, x[0], axes, a["correction"], keepdim))
    if g[1] is not None:
        parts.append(e.div(_grad_to_input(e, g[1], x[0], axes, keepdim), reduced_count(x[0].shape, axes)))
    return [parts[0] if len(parts) == 1 else e.add(parts[0], parts[1])]


for _name in ("var_mean", "std_mean"):
    register(OpDef(_name, OPAQUE, _var_mean_infer, _moment_mean_ref(_name == "std_mean"),
                   _moment_mean_vjp(_name == "std_mean"), reference_only=True,
                   doc=f"{_name}(x; axes, correction, keepdim) -> ({_name[:3]}, mean)",
                   extra={"reference_why": "two reductions of one node", "row_major_result": True}))


# ------------------------------------------------------------------ aminmax
def _aminmax_infer(types, attrs):
    out = _infer_reduce(types, attrs)[0]
    return [out, out]


def _aminmax_ref(x, axes, keepdim):
    return (np.asarray(np.minimum.reduce(x, axis=axes, keepdims=keepdim)),
            np.asarray(np.maximum.reduce(x, axis=axes, keepdims=keepdim)))


def _aminmax_vjp(e, x, y, g, a, n):
    # torch: amin's and amax's backward (scale_grad_by_count) of the gradients given, summed
    parts = [_extremum_vjp(e, x, [y[i]], [g[i]], a, n)[0] for i in (0, 1) if g[i] is not None]
    return [parts[0] if len(parts) == 1 else e.add(parts[0], parts[1])]


register(OpDef("aminmax", OPAQUE, _aminmax_infer, _aminmax_ref, _aminmax_vjp, reference_only=True,
               doc="aminmax(x; axes, keepdim) -> (amin, amax)",
               extra={"reference_why": "two reductions of one node", "row_major_result": True}))


# ------------------------------------------------------------------ fmax / fmin
def _fextreme(name: str, largest: bool):
    pick = np.fmax if largest else np.fmin

    def ref(x, y):
        out = np.asarray(pick(x, y))
        if out.dtype.kind == "f":
            # on a tie of 0.0 and -0.0 torch keeps the first operand; NumPy's loops take
            # either, by position (its SIMD body the second, the scalar head the first)
            out = np.asarray(np.where(x == y, x, out), out.dtype)
        return out

    def decompose(e, xs, a):
        x, y = xs
        both = e.maximum(x, y) if largest else e.op("minimum", x, y)
        if not x.dtype.is_floating_point:
            return [both]
        return [e.where(e.ne(y, y), x, e.where(e.ne(x, x), y, both))]

    def vjp(e, x, y, g, a, n):
        # torch: self takes grad where self >= other (<=) or other is NaN, other elsewhere
        wins = e.ge(x[0], x[1]) if largest else e.le(x[0], x[1])
        mine = e.op("logical_not", e.logical_and(e.op("logical_not", wins), e.eq(x[1], x[1])))
        return [e.where(mine, g[0], 0) if n[0] else None, e.where(mine, 0, g[0]) if n[1] else None]

    register(OpDef(name, COMPOSITE, _infer_map(name), ref, vjp, decompose=decompose,
                   doc=f"{name}(x, y): the {'larger' if largest else 'smaller'} of x and y, a NaN losing",
                   extra={"unpack_order": OTHER_THEN_SELF}))


_fextreme("fmax", True)
_fextreme("fmin", False)


# ------------------------------------------------------------------ searchsorted, histc, pick
def _searchsorted_infer(types, attrs):
    return [TensorType(types[1].shape, int64)]


def _searchsorted_ref(boundaries, values, right):
    """Per row (boundaries 1-d: one row for all), the insertion point of each value: torch's
    binary search, moving right while not (boundary > value) (right) or not (boundary >=
    value), so NaNs compare as torch's do."""
    size = boundaries.shape[-1]
    rows = boundaries.reshape(-1, size)
    if boundaries.ndim <= 1:
        row = np.zeros(values.shape, np.int64)
    else:
        row = np.broadcast_to(np.arange(rows.shape[0]).reshape(values.shape[:-1] + (1,)), values.shape)
    start, end = np.zeros(values.shape, np.int64), np.full(values.shape, size, np.int64)
    while size and (start < end).any():
        going = start < end
        mid = start + ((end - start) >> 1)
        seen = rows[row, np.minimum(mid, size - 1)]
        after = ~(seen > values) if right else ~(seen >= values)
        start = np.where(going & after, mid + 1, start)
        end = np.where(going & ~after, mid, end)
    return start


register(OpDef("searchsorted", OPAQUE, _searchsorted_infer, _searchsorted_ref, None, reference_only=True,
               doc="searchsorted(boundaries, values; right): int64 insertion points",
               extra={"reference_why": "a binary search per value"}))


def _histc_ref(x, bins, lo, hi):
    """torch.histc: `bins` equal bins over [lo, hi] (the data's range when both are 0; a
    range of one value widened by 1 each side), elements outside ignored, hi in the last bin."""
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
        if not (np.isfinite(lo) and np.isfinite(hi)):       # (torch prints its NaN as C's "-nan")
            lo_text, hi_text = ("-nan" if np.isnan(v) else f"{v:g}" for v in (lo, hi))
            raise RuntimeError(f"torch.histc: range of [{lo_text}, {hi_text}] is not finite")
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    flat = x.ravel()
    keep = (flat >= lo) & (flat <= hi)
    flat = flat[keep].astype(np.float64)
    where = ((flat - lo) * bins / (hi - lo)).astype(np.int64)
    where = np.minimum(where, bins - 1)
    return np.bincount(where, minlength=bins).astype(x.dtype)[:bins]


register(OpDef("histc", OPAQUE, lambda types, attrs: [TensorType((attrs["bins"],), types[0].dtype)], _histc_ref,
               None, reference_only=True, doc="histc(x; bins, lo, hi): a histogram of equal bins",
               extra={"reference_why": "a histogram"}))


def _pick_infer(types, attrs):
    x, index = types
    if attrs["axis"] is None:
        return [TensorType(index.shape, x.dtype)]
    shape = list(x.shape)
    shape[attrs["axis"]] = index.shape[0]
    return [TensorType(tuple(shape), x.dtype)]


def _pick_ref(x, index, axis, no_derivative):
    if axis is None:
        return np.ascontiguousarray(x.reshape(-1)[index])
    return np.ascontiguousarray(np.take(x, index, axis=axis))


def _pick_vjp(e, x, y, g, a, n):
    raise NoDerivativeNotImplementedError(a["no_derivative"])


register(OpDef("pick", MOVEMENT, _pick_infer, _pick_ref, _pick_vjp, reference_only=True, nondiff_inputs=(1,),
               doc="pick(x, index; axis, no_derivative): x's elements (axis None) or slices at index",
               extra={"reference_why": "values of unique, chosen by data"}))


def _bincount_infer(types, attrs):
    return [TensorType((attrs["length"],), types[1].dtype if len(types) > 1 else int64)]


def _bincount_ref(index, weights=None, length=0):
    if weights is None:
        return np.bincount(index, minlength=length).astype(np.int64)
    return np.bincount(index, weights, minlength=length).astype(weights.dtype)


def _bincount_vjp(e, x, y, g, a, n):
    raise NoDerivativeError("derivative for aten::bincount is not implemented")


register(OpDef("bincount", OPAQUE, _bincount_infer, lambda index, *w, length: _bincount_ref(index, *w, length=length),
               _bincount_vjp, reference_only=True, nondiff_inputs=(0,),
               doc="bincount(index[, weights]; length): counts (or summed weights) of each index",
               extra={"reference_why": "a histogram"}))
