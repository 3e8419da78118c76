"""torch's scans, order statistics and statistics: cumprod, cummax, cummin, logcumsumexp,
nansum, nanmean, median, nanmedian, mode, kthvalue, quantile, nanquantile, var_mean,
std_mean, aminmax, fmax, fmin, msort, unique, unique_consecutive, bincount, histc,
bucketize, searchsorted and logspace (ops in ir/ops/statistics.py).

Ties: the index median, nanmedian and kthvalue return among equal values is the one a stable
sort puts at the chosen rank (torch's choice there is unspecified); mode's is the last
position of the mode, the smallest of equally frequent values (as torch's CPU kernel gives).
unique, unique_consecutive and bincount have results whose shape depends on the values:
inside fg.compile they read them (a graph break, as nonzero). fusegrad has no int32 dtype:
out_int32=True raises. The derivatives torch does not implement (unique's) raise torch's
text as a RuntimeError, not NotImplementedError.
"""
from __future__ import annotations

import math

import numpy as np

from fusegrad.ir import bool_, float32, float64, int64
from fusegrad.ir.ops import normalize_dim
from fusegrad.ir.types import TORCH_SCALAR_NAMES

from . import functional as F
from .dispatch import apply_op
from .functional import _MISSING, _dims, as_tensor, int_argument
from .parser_errors import type_name
from .tensor import Tensor
from .trace_state import is_compiling

# ------------------------------------------------------------------ result types
for _kind in ("cummax", "cummin", "median", "nanmedian", "mode", "kthvalue"):
    F.named_pair(_kind)
aminmax_result = F.named_pair("aminmax", "min", "max")


def _dtype_name(t: Tensor) -> str:
    return TORCH_SCALAR_NAMES[t._dtype.name]


def _axis(a: Tensor, dim, fn: str, pos: int = 2) -> int:
    return normalize_dim(int_argument(dim, fn, "dim", pos), a.dim())


def _check_nonempty_axis(a: Tensor, axis: int, fn: str) -> None:
    fn = "median" if fn == "nanmedian" else fn        # (torch's text for both)
    if a.dim() and a.shape[axis] == 0:
        raise IndexError(f"{fn}(): Expected reduction dim {axis} to have non-zero size.")


# ------------------------------------------------------------------ scans
def cumprod(input, dim, *, dtype=None) -> Tensor:
    """torch.cumprod: running products along `dim` (CumprodBackward0, torch's gradient, exact
    where the input has zeros); integer and bool tensors multiply in int64, `dtype` casts first."""
    from .math_functions import _accumulated
    a = as_tensor(input, "cumprod")
    axis = _axis(a, dim, "cumprod")
    return apply_op("cumprod", [_accumulated(a, dtype, "cumprod")], {"axis": axis}, "CumprodBackward0")


def _cumprod_(self, dim, *, dtype=None) -> Tensor:
    """In-place torch.cumprod (its dtype must be self's)."""
    from . import inplace
    axis = _axis(self, dim, "cumprod_", 1)
    if dtype is not None and dtype is not self._dtype:
        raise RuntimeError(f"Bad in-place call: input tensor dtype {F._c_name(self._dtype)} and output tensor dtype "
                           f"{F._c_name(dtype)} should match")
    if self._dtype is bool_:
        raise NotImplementedError("\"cumprod_out_cpu\" not implemented for 'Bool'")
    inplace.check_inplace(self)
    apply_op("cumprod", [self], {"axis": axis}, "CumprodBackward0", out=self)
    return self


def _cumextreme(input, dim, largest: bool):
    fn = "cummax" if largest else "cummin"
    a = as_tensor(input, fn)
    axis = _axis(a, dim, fn)
    values, indices = apply_op("cumextreme", [a], {"axis": axis, "largest": largest},
                               "CummaxBackward0" if largest else "CumminBackward0")
    return F.RETURN_TYPES[fn]((values, indices))


def cummax(input, dim):
    """torch.cummax: (values, indices) of the running maximum along `dim` (CummaxBackward0).
    Ties take the later index; a NaN is the maximum from there on (a later NaN's index)."""
    return _cumextreme(input, dim, True)


def cummin(input, dim):
    """torch.cummin: (values, indices) of the running minimum along `dim` (CumminBackward0),
    ties and NaNs as cummax's."""
    return _cumextreme(input, dim, False)


def logcumsumexp(input, dim) -> Tensor:
    """torch.logcumsumexp: log(cumsum(exp(x))) along `dim`, computed stably (floating only)."""
    a = as_tensor(input, "logcumsumexp")
    axis = _axis(a, dim, "logcumsumexp")
    if not a._dtype.is_floating_point:
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for '{_dtype_name(a)}'")
    return apply_op("logcumsumexp", [a], {"axis": axis, "reverse": False}, "LogcumsumexpBackward0")


# ------------------------------------------------------------------ nansum / nanmean
def _summed(a: Tensor, dtype) -> Tensor:
    """`a` in the dtype its sum takes: `dtype`, else int64 for integers and bools."""
    target = dtype if dtype is not None else (a._dtype if a._dtype.is_floating_point else int64)
    return a if target is a._dtype else F.cast(a, target)


@F._numpy_spellings
def nansum(input, dim=None, keepdim=False, *, dtype=None) -> Tensor:
    """torch.nansum: the sum over `dim` (all dims when None) with NaNs as zeros
    (NansumBackward0: no gradient to the NaNs); integers and bools sum in int64."""
    a = as_tensor(input, "nansum")
    axes = _dims(dim, a.dim(), "nansum")
    return apply_op("nansum", [_summed(a, dtype)], {"axes": axes, "keepdim": bool(keepdim)}, "NansumBackward0")


@F._numpy_spellings
def nanmean(input, dim=None, keepdim=False, *, dtype=None) -> Tensor:
    """torch.nanmean: nansum over the count of non-NaN elements, as torch composes it
    (DivBackward0 over NansumBackward0); floating inputs only."""
    a = as_tensor(input, "nanmean")
    if not a._dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{_dtype_name(a)}")
    count = F.sum(F.logical_not(a.detach().isnan()), dim, keepdim)
    return F.div(nansum(a, dim, keepdim, dtype=dtype), count)


# ------------------------------------------------------------------ median, mode, kthvalue
def _median_all(a: Tensor, fn: str, ignore_nan: bool) -> Tensor:
    if a._dtype is bool_:
        raise NotImplementedError("\"median_cpu\" not implemented for 'Bool'")    # (nanmedian's too)
    name = "NanmedianBackward0" if ignore_nan else "MedianBackward0"
    return apply_op("median_all", [a], {"ignore_nan": ignore_nan}, name)


def _order_stat(a: Tensor, axis: int, keepdim, kind: str, k: int, name: str):
    # (torch 2.13's mode takes bool; its median and nanmedian along a dim name their out= kernel)
    if a._dtype is bool_ and kind != "mode":
        raise NotImplementedError(f"\"{'median_out' if 'median' in kind else kind + '_cpu'}\" not implemented for 'Bool'")
    if not isinstance(keepdim, (bool, np.bool_)):
        raise TypeError(f"{kind}(): argument 'keepdim' must be bool, not {type_name(keepdim)}")
    values, indices = apply_op("order_stat", [a], {"axis": axis, "keepdim": bool(keepdim), "kind": kind, "k": k},
                               name)
    return F.RETURN_TYPES[kind]((values, indices))


def _median(fn: str, input, dim, keepdim):
    a = as_tensor(input, fn)
    ignore_nan = fn == "nanmedian"
    if dim is _MISSING:
        return _median_all(a, fn, ignore_nan)
    axis = _axis(a, dim, fn)
    _check_nonempty_axis(a, axis, fn)
    return _order_stat(a, axis, keepdim, fn, 0, "NanmedianBackward1" if ignore_nan else "MedianBackward1")


def median(input, dim=_MISSING, keepdim=False):
    """torch.median: the lower median of all elements (MedianBackward0: ties share the
    gradient; NaN if any element is NaN; NaN for an empty tensor), or with `dim` (values,
    indices) along it (MedianBackward1; a row with a NaN gives NaN at its first NaN)."""
    return _median("median", input, dim, keepdim)


def nanmedian(input, dim=_MISSING, keepdim=False):
    """torch.nanmedian: median ignoring NaNs (NaN only where all are NaN; there the index is
    0 here, torch's is whichever NaN its partial sort leaves first)."""
    return _median("nanmedian", input, dim, keepdim)


def mode(input, dim=-1, keepdim=False):
    """torch.mode: (values, indices) of the most frequent value along `dim` (ModeBackward0);
    of equally frequent values the smallest, at its last position in the row."""
    a = as_tensor(input, "mode")
    axis = _axis(a, dim, "mode")
    _check_nonempty_axis(a, axis, "mode")
    return _order_stat(a, axis, keepdim, "mode", 0, "ModeBackward0")


def kthvalue(input, k, dim=-1, keepdim=False):
    """torch.kthvalue: (values, indices) of the k-th smallest element along `dim`
    (KthvalueBackward0; NaN counts as the largest)."""
    a = as_tensor(input, "kthvalue")
    k = int_argument(k, "kthvalue", "k", 2)
    axis = _axis(a, dim, "kthvalue", 3)
    _check_nonempty_axis(a, axis, "kthvalue")
    size = a.shape[axis] if a.dim() else 1
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {axis}")
    return _order_stat(a, axis, keepdim, "kthvalue", k, "KthvalueBackward0")


# ------------------------------------------------------------------ quantile
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(fn: str, input, q, dim, keepdim, interpolation, ignore_nan: bool) -> Tensor:
    """torch's quantile_compute, step by step with the same ops (so the same nodes: sort,
    gather, an in-place lerp_, then squeeze_ or unsqueeze_/transpose_/squeeze_)."""
    from .creation import full_like, tensor
    a = as_tensor(input, fn)
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    scalar_q = not isinstance(q, Tensor)
    if scalar_q:
        q = float(q)
        if not 0 <= q <= 1:
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q:g}")
    if a.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if q.dim() > 1 if not scalar_q else False:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if a._dtype not in (float32, float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if scalar_q:
        q = tensor(q, dtype=a._dtype)
    if q._dtype is not a._dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    values_q = q._concrete()
    if not ((values_q >= 0) & (values_q <= 1)).all():
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
    # the output shape, then the input as (*, n)
    if dim is None:
        out_shape = [1] * a.dim() if keepdim else []
        ranked = a.flatten().sort()[0]
    else:
        axis = normalize_dim(int_argument(dim, fn, "dim", 3), a.dim())
        out_shape = list(a.shape) or []
        if out_shape:
            if keepdim:
                out_shape[axis] = 1
            else:
                del out_shape[axis]
        if axis == a.dim() - 1 or a.dim() == 0:
            ranked = a.sort()[0]
        else:
            ranked = a.unsqueeze(-1).transpose(axis, -1).sort()[0]
    out_shape = ([q.numel()] if q.dim() else [1]) + out_shape
    in_shape = out_shape[1:] + [ranked.shape[-1] if ranked.dim() else 1]
    ranked = ranked.view(in_shape)
    if ignore_nan:
        ranks = q * (F.logical_not(ranked.isnan()).sum(-1, True) - 1)
        ranks = ranks.masked_fill(ranks < 0, 0)
    else:
        last = ranked.shape[-1] - 1
        scaled, has_nan = F.broadcast_tensors(q * last, ranked.isnan().any(-1, True))
        ranks = scaled.masked_fill(has_nan, last)
    if interpolation == "lower":
        ranks = ranks.floor()
    elif interpolation == "higher":
        ranks = ranks.ceil()
    elif interpolation == "nearest":
        ranks = ranks.round()
    below = ranks.to(int64)
    result = ranked.gather(-1, below)
    if interpolation in ("linear", "midpoint"):
        weights = full_like(ranks, 0.5) if interpolation == "midpoint" else ranks - below
        above = ranked.gather(-1, ranks.ceil().to(int64))
        result.lerp_(above, weights)
    if is_compiling():     # (in-place view ops are eager-only: the out-of-place forms, same values)
        return result.squeeze(-1) if q.dim() == 0 else result.unsqueeze(0).transpose(0, -1).squeeze(-1)
    if q.dim() == 0:
        return result.squeeze_(-1)
    return result.unsqueeze_(0).transpose_(0, -1).squeeze_(-1)


@F._numpy_spellings(keepdim_at=3)
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear") -> Tensor:
    """torch.quantile: the q-th quantiles (q a number or a 0-d/1-d tensor of input's dtype,
    in [0, 1]) over `dim` (the flattened input when None), interpolating between the two
    nearest ranks as `interpolation` says; NaN where a row has a NaN. Composed as torch's
    (its grad_fn: SqueezeBackward4 over LerpBackward1 or GatherBackward0)."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


@F._numpy_spellings(keepdim_at=3)
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear") -> Tensor:
    """torch.nanquantile: quantile of the non-NaN values (NaN where a row has none)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


# ------------------------------------------------------------------ var_mean, std_mean, aminmax
def _moment_mean(op: str, input, dim, unbiased, keepdim, correction) -> tuple:
    from .moments import _moment
    a = as_tensor(input, op)
    if not a._dtype.is_floating_point:
        raise RuntimeError(f"{op} only support floating point and complex dtypes")
    name = "VarMeanBackward0" if op == "var_mean" else "StdMeanBackward0"
    return tuple(_moment(op, name, a, dim, unbiased, keepdim, correction))


@F._numpy_spellings(keepdim_at=3)
def var_mean(input, dim=None, unbiased=_MISSING, keepdim=_MISSING, *, correction=None) -> tuple:
    """torch.var_mean: (var, mean) over `dim` with var's arguments, one VarMeanBackward0 node;
    a plain tuple, as torch's."""
    return _moment_mean("var_mean", input, dim, unbiased, keepdim, correction)


@F._numpy_spellings(keepdim_at=3)
def std_mean(input, dim=None, unbiased=_MISSING, keepdim=_MISSING, *, correction=None) -> tuple:
    """torch.std_mean: (std, mean) over `dim`, one StdMeanBackward0 node; a plain tuple."""
    return _moment_mean("std_mean", input, dim, unbiased, keepdim, correction)


def aminmax(input, *, dim=None, keepdim=False):
    """torch.aminmax: (min, max) over `dim` (all dims when None), one AminmaxBackward0 node
    whose gradient is amin's and amax's (shared among ties)."""
    a = as_tensor(input, "aminmax")
    if dim is None:
        if a.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                               "identity.")
        axes = tuple(range(a.dim()))
    else:
        axis = normalize_dim(int_argument(dim, "aminmax"), a.dim())
        if a.dim() and a.shape[axis] == 0:
            raise IndexError(f"aminmax(): Expected reduction dim {axis} to have non-zero size.")
        axes = (axis,) if a.dim() else ()
    low, high = apply_op("aminmax", [a], {"axes": axes, "keepdim": bool(keepdim)}, "AminmaxBackward0")
    return aminmax_result((low, high))


# ------------------------------------------------------------------ fmax, fmin, msort
def _fextreme(fn: str, input, other) -> Tensor:
    a = as_tensor(input, fn)
    if not isinstance(other, Tensor):
        raise TypeError(f"{fn}(): argument 'other' (position 2) must be Tensor, not {type_name(other)}")
    operands, _ = F._promoted([a, other], fn)
    return apply_op(fn, operands, None, "FmaxBackward0" if fn == "fmax" else "FminBackward0")


def fmax(input, other) -> Tensor:
    """torch.fmax: the elementwise maximum where a NaN loses to a number (FmaxBackward0: a
    tie's gradient goes to input)."""
    return _fextreme("fmax", input, other)


def fmin(input, other) -> Tensor:
    """torch.fmin: the elementwise minimum where a NaN loses to a number (FminBackward0)."""
    return _fextreme("fmin", input, other)


def msort(input) -> Tensor:
    """torch.msort: input sorted along its first dim (sort(input, 0).values, SortBackward0)."""
    from .sorting import sort
    return sort(as_tensor(input, "msort"), 0)[0]


# ------------------------------------------------------------------ unique, bincount, histc
def _picked(a: Tensor, positions: np.ndarray, axis, message: str, name: str) -> Tensor:
    index = Tensor._wrap(np.ascontiguousarray(positions, np.int64))
    return apply_op("pick", [a, index], {"axis": axis, "no_derivative": message}, name)


def _results(values, inverse, counts, return_inverse, return_counts):
    out = [values]
    if return_inverse:
        out.append(Tensor._wrap(np.ascontiguousarray(inverse, np.int64)))
    if return_counts:
        out.append(Tensor._wrap(np.ascontiguousarray(counts, np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


def _slices(data: np.ndarray, axis: int) -> np.ndarray:
    """data's slices along axis as rows (n, rest), compared lexicographically."""
    return np.moveaxis(data, axis, 0).reshape(data.shape[axis], -1)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """torch.unique: the distinct elements (or slices along `dim`) in ascending order, with
    the inverse indices and counts on request (its values' node, Unique2Backward0 /
    UniqueDimBackward0, has no derivative). The result is sorted whatever `sorted` says (as
    torch's CPU result is); NaNs are distinct from each other. Reads the values (inside
    fg.compile, a graph break)."""
    a = as_tensor(input, "unique")
    data = a._concrete()
    if dim is None:
        flat = data.reshape(-1)
        order = np.argsort(flat, kind="stable")
        ranked = flat[order]
        starts = np.ones(flat.size, bool)
        if flat.size:
            starts[1:] = ranked[1:] != ranked[:-1]
        group = np.cumsum(starts) - 1
        inverse = np.empty(flat.size, np.int64)
        inverse[order] = group
        firsts = order[starts]
        counts = np.diff(np.append(np.flatnonzero(starts), flat.size))
        values = _picked(a, firsts, None, "the derivative for '_unique2' is not implemented.", "Unique2Backward0")
        return _results(values, inverse.reshape(data.shape), counts, return_inverse, return_counts)
    if a.dim() == 0:
        raise IndexError(f"Dimension specified as {int_argument(dim, 'unique', 'dim', 5)} but tensor has no dimensions")
    axis = _axis(a, dim, "unique")
    rows = _slices(data, axis)
    _, firsts, inverse, counts = np.unique(rows, axis=0, return_index=True, return_inverse=True,
                                           return_counts=True) if rows.size else \
        (None, np.zeros(min(rows.shape[0], 1), np.int64), np.zeros(rows.shape[0], np.int64),
         np.full(min(rows.shape[0], 1), rows.shape[0], np.int64))
    values = _picked(a, firsts, axis, "the derivative for 'unique_dim' is not implemented.", "UniqueDimBackward0")
    return _results(values, inverse.reshape(-1), counts, return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """torch.unique_consecutive: each run of equal consecutive elements (or slices along
    `dim`) once, with inverse indices and run lengths on request (UniqueConsecutiveBackward0,
    no derivative). Reads the values (inside fg.compile, a graph break)."""
    a = as_tensor(input, "unique_consecutive")
    data = a._concrete()
    if dim is None:
        rows, axis, shape = data.reshape(-1, 1), None, data.shape
    else:
        axis = _axis(a, dim, "unique_consecutive")
        rows, shape = _slices(data, axis), (data.shape[axis] if data.ndim else 1,)
    starts = np.ones(rows.shape[0], bool)
    if rows.shape[0]:
        starts[1:] = (rows[1:] != rows[:-1]).any(-1)
    firsts = np.flatnonzero(starts)
    inverse = np.cumsum(starts) - 1
    counts = np.diff(np.append(firsts, rows.shape[0]))
    values = _picked(a, firsts, axis, "the derivative for 'unique_consecutive' is not implemented.",
                     "UniqueConsecutiveBackward0")
    return _results(values, inverse.reshape(shape), counts, return_inverse, return_counts)


def bincount(input, weights=None, minlength=0) -> Tensor:
    """torch.bincount: how often each value of a 1-d non-negative integer tensor occurs (or
    the sum of its `weights`: float32 stays float32, others sum in float64), at least
    `minlength` long. Reads the values (inside fg.compile, a graph break)."""
    a = as_tensor(input, "bincount")
    minlength = int_argument(minlength, "bincount", "minlength", 3)
    if a._dtype.is_floating_point:
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{_dtype_name(a)}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    data = a._concrete()
    if a.dim() != 1 or (data.size and data.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    length = max(minlength, int(data.max()) + 1 if data.size else 0)
    if weights is None:
        return Tensor._wrap(np.bincount(data.astype(np.int64), minlength=length).astype(np.int64))
    w = as_tensor(weights, "bincount", "weights", 2)
    if w.shape != a.shape:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    if w._dtype is not float32:
        w = F.cast(w, float64)
    return apply_op("bincount", [a, w], {"length": length}, "NotImplemented")


def histc(input, bins=100, min=0, max=0) -> Tensor:
    """torch.histc: a histogram of `bins` equal bins over [min, max] (the data's range when
    both are 0), elements outside ignored; floating input, no gradient."""
    a = as_tensor(input, "histc")
    bins = int_argument(bins, "histc", "bins", 2)
    if not a._dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{_dtype_name(a)}'")
    if bins <= 0:
        raise RuntimeError("torch.histc: bins must be > 0")
    lo, hi = float(min), float(max)
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite")
    return apply_op("histc", [a.detach()], {"bins": bins, "lo": lo, "hi": hi})


# ------------------------------------------------------------------ bucketize, searchsorted
def _no_int32(out_int32) -> None:
    if out_int32:
        raise TypeError("fusegrad has no int32 dtype: out_int32=True is not supported")


def _search(boundaries: Tensor, values: Tensor, right: bool) -> Tensor:
    return apply_op("searchsorted", [boundaries.detach(), values.detach()], {"right": bool(right)})


def bucketize(input, boundaries, *, out_int32=False, right=False) -> Tensor:
    """torch.bucketize: for each element of input, the index of its bucket in the sorted 1-d
    `boundaries` (the first boundary >= it, or > it with `right`); int64."""
    _no_int32(out_int32)
    b = as_tensor(boundaries, "bucketize", "boundaries", 2)
    v = input if isinstance(input, Tensor) else F.tensor_from_scalar(input)
    if b.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({b.dim()})")
    return _search(b, v, right)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None) -> Tensor:
    """torch.searchsorted: insertion points of `input` into the last dim of `sorted_sequence`
    (1-d, or matching input's leading dims); `right`/`side='right'` after equal values;
    `sorter` the int64 indices that sort sorted_sequence. int64."""
    _no_int32(out_int32)
    b = as_tensor(sorted_sequence, "searchsorted", "sorted_sequence", 1)
    v = input if isinstance(input, Tensor) else F.tensor_from_scalar(input)
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    if b.dim() == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
                           "dimension")
    if b.dim() != 1 and (v.dim() != b.dim() or tuple(b.shape[:-1]) != tuple(v.shape[:-1])):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           f"dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(b.shape)} and input value tensor {list(v.shape)}")
    if sorter is not None:
        if not isinstance(sorter, Tensor) or sorter._dtype is not int64:
            raise RuntimeError("torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                               f"{F._c_name(sorter._dtype) if isinstance(sorter, Tensor) else type_name(sorter)}")
        if tuple(sorter.shape) != tuple(b.shape):
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got "
                               f"boundary tensor {list(b.shape)}and got sorter tensor {list(sorter.shape)}")
        b = b.detach().gather(-1, sorter)
    return _search(b, v, right)


# ------------------------------------------------------------------ logspace
def logspace(start, end, steps, base=10.0, *, dtype=None, requires_grad=False, device=None) -> Tensor:
    """torch.logspace: base ** linspace(start, end, steps), as torch's kernel computes it
    (the exponents counted up from start for the first half and down from end for the
    second, the power in the result's dtype; integer dtypes in double, then truncated)."""
    from .creation import tensor
    from .device import check_device
    check_device(device)
    start, end = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    steps = int_argument(steps, "logspace", "steps", 3)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    out = (dtype or float32).np
    if dtype is bool_:
        raise NotImplementedError('"logspace_cpu" not implemented for \'Bool\'')
    kind = out.type if out.kind == "f" else np.float64
    if steps == 1:
        values = np.array([kind(base) ** kind(start)])
    else:
        step = (kind(end) - kind(start)) / kind(max(steps - 1, 1))
        i = np.arange(steps)
        half = steps // 2
        exponents = np.where(i < half, kind(start) + step * i.astype(kind), kind(end) - step * (steps - i - 1)
                             .astype(kind)).astype(kind)
        values = np.power(kind(base), exponents)
    return tensor(np.asarray(values).astype(out)[:steps], dtype=dtype or float32, requires_grad=requires_grad)


METHODS = {
    "cumprod": cumprod, "cumprod_": _cumprod_, "cummax": cummax, "cummin": cummin, "logcumsumexp": logcumsumexp,
    "nansum": nansum, "nanmean": nanmean, "median": median, "nanmedian": nanmedian, "mode": mode,
    "kthvalue": kthvalue, "quantile": quantile, "nanquantile": nanquantile, "aminmax": aminmax,
    "fmax": fmax, "fmin": fmin, "msort": msort, "unique": unique, "unique_consecutive": unique_consecutive,
    "bincount": bincount, "histc": histc,
}
