"""torch functions tutorials use that had no home yet: isin, histogram, cov, corrcoef,
trapezoid / trapz, cumulative_trapezoid, vander, unravel_index, combinations, select_scatter,
slice_scatter, diagonal_scatter, index_put(_), put(_), fill_diagonal_, index_reduce(_),
renorm(_), frexp, nextafter, Tensor.new_empty_strided, narrow_copy, swapaxes_ / swapdims_,
conj / resolve_conj / resolve_neg / is_conj / is_neg and nonzero_static.

Where torch records one node of its own the function is one op recorded under torch's name:
existing ops where one does the work (index_put for select/slice_scatter, diagonal_put for
diagonal_scatter, index_put_at for index_put and put, scatter_reduce for index_reduce, gather
for narrow_copy), ir/ops/misc_ops.py for frexp, nextafter and renorm. cov, corrcoef, the
trapezoid rules, vander and combinations are torch's own composites, op for op. isin and
nonzero_static give results without history; histogram reads its input's values (inside
fg.compile, a graph break, as nonzero's).
"""
from __future__ import annotations

import warnings

import numpy as np

from fusegrad.ir import bool_, int64
from fusegrad.ir.ops import normalize_dim, shape_str
from fusegrad.ir.types import TORCH_SCALAR_NAMES

from . import functional as F
from .creation import wrap_array
from .dispatch import apply_op
from .functional import _is_scalar, _scalar_array, as_tensor, cast, int_argument, named_pair
from .inplace import check_inplace
from .parser_errors import type_name
from .scattering import tensor_argument as _tensor
from .tensor import Tensor
from .user_frame import user_stacklevel

HistogramResult = named_pair("histogram", "hist", "bin_edges")
FrexpResult = named_pair("frexp", "mantissa", "exponent")


def _name(dtype) -> str:
    return TORCH_SCALAR_NAMES[dtype.name]




def _apply(op, inputs, attrs, name, out=None):
    if out is None:
        return apply_op(op, inputs, attrs, name)
    apply_op(op, inputs, attrs, name, out=out)
    return out


# --------------------------------------------------------------------- isin
def isin(elements, test_elements, *, assume_unique=False, invert=False) -> Tensor:
    """torch.isin: a bool tensor of `elements`' shape, True where the element equals one of
    `test_elements` (either may be a number; compared after type promotion, as torch);
    `invert` negates it. `assume_unique` is accepted (the result does not depend on it)."""
    if _is_scalar(elements) and _is_scalar(test_elements):
        raise TypeError("isin() received an invalid combination of arguments - got (int, int)")
    from .creation import tensor
    e = tensor(elements) if _is_scalar(elements) else as_tensor(elements, "isin", "elements", 1).detach()
    t = tensor(test_elements) if _is_scalar(test_elements) else \
        as_tensor(test_elements, "isin", "test_elements", 2).detach()
    if t.numel():
        found = F.any(F.eq(e.reshape(-1, 1), t.reshape(1, -1)), 1).reshape(tuple(e.shape))
    else:
        from .creation import zeros
        found = zeros(tuple(e.shape), dtype=bool_)
    return F.logical_not(found) if invert else found


# --------------------------------------------------------------------- histogram
def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):  # noqa: A002
    """torch.histogram: (hist, bin_edges). `bins` is a count (equal-width bins over `range`, or
    the input's min..max, widened by 0.5 each way where they are equal) or a 1-d tensor of
    increasing edges; the last bin includes its right edge; `weight` weighs each element;
    `density` divides by the total and the bin widths. Float inputs only (torch's error for
    others). Computed with NumPy's histogram on the input's values: no history; inside
    fg.compile the values are read (a graph break)."""
    t = as_tensor(input, "histogram")
    if not t._dtype.is_floating_point:
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{_name(t._dtype)}'")
    values = np.asarray(t._concrete()).reshape(-1)
    w = None
    if weight is not None:
        weight = _tensor(weight, "histogram", "weight", 3)
        if tuple(weight.shape) != tuple(t.shape):
            raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the same shape as "
                               "the input tensor excluding its innermost dimension, but got input with shape "
                               f"{shape_str(t.shape)} and weight with shape {shape_str(weight.shape)}")
        w = np.asarray(weight._concrete()).reshape(-1)
    dtype = t._dtype.np
    if isinstance(bins, Tensor):
        edges = np.asarray(bins._concrete()).astype(dtype)
        if edges.ndim != 1:
            raise RuntimeError(f"torch.histogramdd(): bins tensor should have one dimension, but got "
                               f"{edges.ndim} dimensions in the bins tensor for dimension 0")
    else:
        n = int_argument(bins, "histogram", "bins", 2)
        if n <= 0:
            raise RuntimeError(f"torch.histogramdd(): bins must be > 0, but got {n} for dimension 0")
        if range is not None:
            low, high = (float(v) for v in range)
        elif values.size:
            low, high = float(values.min()), float(values.max())
        else:
            low, high = 0.0, 1.0         # (torch's range for an empty input)
        if low > high:
            raise RuntimeError(f"torch.histogramdd(): min should not exceed max, but got min {low} max {high} for "
                               f"dimension 0")
        if low == high:
            low, high = low - 0.5, high + 0.5
        edges = np.linspace(low, high, n + 1).astype(dtype)
    hist, _ = np.histogram(values, bins=edges.astype(np.float64), weights=w)
    hist = hist.astype(dtype)
    if density:
        total = hist.sum()
        hist = (hist / total / np.diff(edges)).astype(dtype)
    return HistogramResult((wrap_array(np.ascontiguousarray(hist)), wrap_array(np.ascontiguousarray(edges))))


# --------------------------------------------------------------------- cov, corrcoef
def _cov_weights(weights, name: str, pos: int, n_obs: int) -> Tensor:
    """cov's frequency (`fweights`: integral) or observation (`aweights`: floating) weights,
    checked in torch's order with its texts."""
    weights = _tensor(weights, "cov", name, pos)
    if weights.dim() > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
                           f"{weights.dim()} dimensions")
    integral = name == "fweights"
    if weights._dtype.is_floating_point == integral:
        raise RuntimeError(f"cov(): expected {name} to have {'integral' if integral else 'floating point'} dtype but "
                           f"got {name} with {_name(weights._dtype)} dtype")
    if weights.numel() != n_obs:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the "
                           f"input but got {weights.numel()} != {n_obs}")
    if weights._data is not None and bool((weights._data < 0).any()):
        raise RuntimeError(f"cov(): {name} cannot be negative")
    return weights


def cov(input, *, correction=1, fweights=None, aweights=None) -> Tensor:
    """torch.cov: the covariance matrix of the variables in `input`'s rows (observations in its
    columns; a 1-d input is one variable), with `correction` (1: Bessel's), integer frequency
    weights `fweights` and observation weights `aweights`; torch's ops in torch's order (its
    result `.squeeze()`d: a 0-d tensor for one variable). Degrees of freedom <= 0 warn and
    divide by 0, as torch."""
    t = as_tensor(input, "cov")
    if t._dtype is bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    if t.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with {t.dim()} "
                           f"dimensions")
    n_obs = t.numel() if t.dim() < 2 else t.shape[1]
    x = t.view(1, -1) if t.dim() < 2 else t
    w = None
    if fweights is not None:
        w = _cov_weights(fweights, "fweights", 3, n_obs)
    if aweights is not None:
        aweights = _cov_weights(aweights, "aweights", 4, n_obs)
        w = aweights if w is None else F.mul(w, aweights)
    w_sum = F.sum(w) if w is not None else wrap_array(np.array(n_obs, np.int64))
    avg = F.div(F.sum(x if w is None else F.mul(x, w), 1), w_sum)
    if w is not None and aweights is not None and correction != 0:
        norm_factor = F.sub(w_sum, F.div(F.mul(F.sum(F.mul(w, aweights)), correction), w_sum))
    else:
        norm_factor = F.sub(w_sum, correction)
    if bool(norm_factor.detach()._concrete() <= 0):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=user_stacklevel())
        norm_factor = F.mul(norm_factor, 0)
    x = F.sub(x, avg.unsqueeze(1))
    from .products import mm
    c = mm(x, (x if w is None else F.mul(x, w)).t())
    return F.div(c, norm_factor).squeeze()


def corrcoef(input) -> Tensor:
    """torch.corrcoef: Pearson's correlation matrix of `input`'s rows (cov divided by the
    standard deviations, clamped to [-1, 1]; c / c for a single variable), torch's ops."""
    c = cov(as_tensor(input, "corrcoef"))
    if c.dim() == 0:
        return F.div(c, c)
    from .shape_functions import diagonal
    stddev = F.sqrt(diagonal(c))
    c = F.div(c, stddev.view(-1, 1))
    c = F.div(c, stddev.view(1, -1))
    return F.clamp(c, -1, 1)


# --------------------------------------------------------------------- trapezoid rules
def _zeros_without(y: Tensor, axis: int) -> Tensor:
    from .creation import zeros
    shape = tuple(s for d, s in enumerate(y.shape) if d != axis)
    return zeros(shape, dtype=y._dtype)


def _slices(t: Tensor, axis: int):
    from .splitting import narrow
    n = t.shape[axis]
    return narrow(t, axis, 0, n - 1), narrow(t, axis, 1, n - 1)


def _x_steps(y: Tensor, x: Tensor, axis: int, fn: str) -> Tensor:
    if x.dim() == 1:
        if x.shape[0] != y.shape[axis]:
            raise RuntimeError(f"{fn}: There must be one `x` value for each sample point")
        shape = [1] * y.dim()
        shape[axis] = x.shape[0]
        x = x.view(*shape)
        along = axis
    else:
        along = axis if x.dim() == y.dim() else x.dim() - (y.dim() - axis)
    left, right = _slices(x, along)
    return F.sub(right, left)


def trapezoid(y, x=None, *, dx=None, dim=-1) -> Tensor:
    """torch.trapezoid: the trapezoidal rule along `dim` with sample points `x` (a tensor) or a
    constant spacing `dx` (default 1); torch's formulas: with x, ((y[1:] + y[:-1]) * diff(x))
    .sum(dim) / 2; with dx, (y.sum(dim) - (y[0] + y[-1]) * 0.5) * dx. An empty dim gives zeros."""
    y = as_tensor(y, "trapezoid", "y", 1)
    dim = int_argument(dim, "trapezoid", "dim", 3)
    if y.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    axis = normalize_dim(dim, y.dim())
    if isinstance(x, Tensor) and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments - got both x and dx")
    if x is not None and not isinstance(x, Tensor):
        dx, x = x, None
    if y.shape[axis] == 0:
        return _zeros_without(y, axis)
    if x is not None:
        steps = _x_steps(y, x, axis, "trapezoid")
        left, right = _slices(y, axis)
        return _over_scalar(F.sum(F.mul(F.add(right, left), steps), axis), 2.0)
    from .splitting import select
    dx = 1 if dx is None else dx
    ends = F.mul(F.add(select(y, axis, 0), select(y, axis, -1)), 0.5)
    return _times_scalar(F.sub(F.sum(y, axis), ends), dx)


def _over_scalar(t: Tensor, number) -> Tensor:
    """t / number as torch's C++ div(Tensor, Scalar): DivBackward1."""
    if t._dtype.is_floating_point:
        return apply_op("div", [t, _scalar_array(number, t._dtype)], None, "DivBackward1")
    return F.div(t, number)


def _times_scalar(t: Tensor, number) -> Tensor:
    """t * number as torch's C++ mul(Tensor, Scalar): MulBackward1, whose one edge is t's."""
    if t._dtype.is_floating_point and _is_scalar(number) and not isinstance(number, bool):
        return apply_op("mul", [t, _scalar_array(number, t._dtype)], None, "MulBackward1")
    return F.mul(t, number)


def trapz(y, x=None, *, dx=None, dim=-1) -> Tensor:
    """torch.trapz: trapezoid's older name (same arguments)."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1) -> Tensor:
    """torch.cumulative_trapezoid: the running trapezoidal rule along `dim` (one element fewer
    along it); torch's formulas: with x, (diff(x) * (y[:-1] + y[1:])).cumsum(dim) / 2; with dx,
    (dx / 2 * (y[:-1] + y[1:])).cumsum(dim)."""
    y = as_tensor(y, "cumulative_trapezoid", "y", 1)
    dim = int_argument(dim, "cumulative_trapezoid", "dim", 3)
    if y.dim() == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    axis = normalize_dim(dim, y.dim())
    if x is not None and not isinstance(x, Tensor):
        dx, x = x, None
    from .math_functions import cumsum
    if y.shape[axis] == 0:
        return y.clone()
    left, right = _slices(y, axis)
    if x is not None:
        steps = _x_steps(y, x, axis, "cumulative_trapezoid")
        return _over_scalar(cumsum(F.mul(steps, F.add(left, right)), axis), 2.0)
    dx = 1 if dx is None else dx
    return cumsum(_times_scalar(F.add(left, right), dx / 2.0), axis)


# --------------------------------------------------------------------- vander, unravel_index, combinations
def vander(x, N=None, increasing=False) -> Tensor:
    """torch.vander: the Vandermonde matrix of a 1-d `x`: columns x**(N-1), ..., x**0 (reversed
    with increasing=True); integer and bool inputs give int64. torch's ops: ones, a write of x
    into columns 1.., their cumprod, a flip."""
    x = as_tensor(x, "vander", "x", 1)
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else int_argument(N, "vander", "N", 2)
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dtype = x._dtype if x._dtype.is_floating_point else int64
    from .creation import ones
    from .statistics import cumprod
    result = ones((x.shape[0], n), dtype=dtype)
    if n > 1:
        result[:, 1:] = cast(x, dtype).unsqueeze(1)
        result[:, 1:] = cumprod(result[:, 1:], 1)
    if not increasing:
        from .gathering import flip
        return flip(result, [1])
    return result


def unravel_index(indices, shape) -> tuple:
    """torch.unravel_index: the coordinates in a tensor of `shape` of the flat (row-major)
    `indices`: a tuple of int64 tensors of indices' shape. Values wrap modulo the size along
    each dim (floor semantics), as torch 2.13 computes them."""
    if isinstance(indices, Tensor) or isinstance(indices, np.ndarray):
        t = as_tensor(indices, "unravel_index", "indices", 1)
    else:
        raise TypeError(f"expected 'indices' to be integer tensor, but got {type_name(indices)}")
    if t._dtype.is_floating_point or t._dtype is bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got torch.{t._dtype.name}")
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(int_argument(s, "unravel_index", "shape", 2) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(tuple(shape)))
    t = t.detach()
    out = []
    rest = t
    for size in reversed(shape):
        out.append(F.remainder(rest, size) if size else rest)
        rest = F.floor_divide(rest, size) if size else rest
    return tuple(reversed(out))


def combinations(input, r=2, with_replacement=False) -> Tensor:
    """torch.combinations: the length-r combinations of a 1-d tensor's elements as rows (as
    itertools.combinations, or combinations_with_replacement), torch's ops: an "ij" meshgrid
    of r copies, each masked_select'ed by the ordered-indices mask, stacked along dim 1."""
    t = as_tensor(input, "combinations")
    r = int_argument(r, "combinations", "r", 2)
    if t.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {shape_str(t.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    from .creation import empty
    if r == 0:
        return empty((0,), dtype=t._dtype)
    from .shape_functions import meshgrid
    from .scattering import masked_select
    n = t.numel()
    grids = meshgrid(*[t] * r, indexing="ij")
    idx = np.indices((n,) * r) if n else np.zeros((r,) + (0,) * r, np.int64)
    mask = np.ones((n,) * r, bool)
    for a, b in zip(idx[:-1], idx[1:]):
        mask &= (a <= b) if with_replacement else (a < b)
    mask_t = wrap_array(mask)
    return F.stack([masked_select(g, mask_t) for g in grids], 1)


# --------------------------------------------------------------------- scatters of views
def _check_src(src: Tensor, shape: tuple) -> None:
    if tuple(src.shape) != tuple(shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{shape_str(src.shape)}, slice size = {shape_str(shape)}")


def _like(src: Tensor, t: Tensor) -> Tensor:
    return src if src._dtype is t._dtype else cast(src, t._dtype)


def select_scatter(input, src, dim, index) -> Tensor:
    """torch.select_scatter: a copy of `input` with `src` written at `index` along `dim`
    (src has the selected slice's shape exactly; SelectScatterBackward0)."""
    t = as_tensor(input, "select_scatter")
    src = _tensor(src, "select_scatter", "src", 2)
    dim, index = int_argument(dim, "select_scatter", "dim", 3), int_argument(index, "select_scatter", "index", 4)
    if t.dim() == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    axis = normalize_dim(dim, t.dim())
    size = t.shape[axis]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {shape_str(t.shape)} at "
                         f"dimension {axis}")
    index %= size
    _check_src(src, tuple(t.shape[:axis]) + tuple(t.shape[axis + 1:]))
    key = tuple(("s", 0, n, 1) for n in t.shape[:axis]) + (("i", index),)
    return apply_op("index_put", [t, _like(src, t)], {"index": key}, "SelectScatterBackward0")


def slice_scatter(input, src, dim=0, start=None, end=None, step=1) -> Tensor:
    """torch.slice_scatter: a copy of `input` with `src` written into the slice start:end:step
    along `dim` (bounds clamped as slicing clamps them; src has the slice's shape exactly;
    SliceScatterBackward0)."""
    t = as_tensor(input, "slice_scatter")
    src = _tensor(src, "slice_scatter", "src", 2)
    dim = int_argument(dim, "slice_scatter", "dim", 3)
    step = int_argument(step, "slice_scatter", "step", 6)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    if t.dim() == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    axis = normalize_dim(dim, t.dim())
    lo, hi, _ = slice(None if start is None else int_argument(start, "slice_scatter", "start", 4),
                      None if end is None else int_argument(end, "slice_scatter", "end", 5)).indices(t.shape[axis])
    hi = max(hi, lo)
    length = len(range(lo, hi, step))
    _check_src(src, tuple(t.shape[:axis]) + (length,) + tuple(t.shape[axis + 1:]))
    key = tuple(("s", 0, n, 1) for n in t.shape[:axis]) + (("s", lo, hi, step),)
    return apply_op("index_put", [t, _like(src, t)], {"index": key}, "SliceScatterBackward0")


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1) -> Tensor:
    """torch.diagonal_scatter: a copy of `input` with `src` written on the diagonal that
    torch.diagonal(input, offset, dim1, dim2) views (DiagonalScatterBackward0)."""
    t = as_tensor(input, "diagonal_scatter")
    src = _tensor(src, "diagonal_scatter", "src", 2)
    offset = int_argument(offset, "diagonal_scatter", "offset", 3)
    dim1, dim2 = int_argument(dim1, "diagonal_scatter", "dim1", 4), int_argument(dim2, "diagonal_scatter", "dim2", 5)
    from .shape_functions import diagonal
    view = diagonal(t.detach(), offset, dim1, dim2)
    _check_src(src, tuple(view.shape))
    d1, d2 = normalize_dim(dim1, t.dim()), normalize_dim(dim2, t.dim())
    return apply_op("diagonal_put", [t, _like(src, t)], {"offset": offset, "dim1": d1, "dim2": d2},
                    "DiagonalScatterBackward0")


# --------------------------------------------------------------------- index_put, put
def _index_put(t: Tensor, indices, values, accumulate, fn: str, out=None) -> Tensor:
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"{fn}(): argument 'indices' (position 2) must be tuple of Tensors, not "
                        f"{type_name(indices)}")
    values = _tensor(values, fn, "values", 3)
    if not isinstance(accumulate, (bool, np.bool_)):
        raise TypeError(f"{fn}(): argument 'accumulate' (position 4) must be bool, not {type_name(accumulate)}")
    arrays, dims = [], []
    for k, index in enumerate(indices):
        index = _tensor(index, fn, "indices", 2)
        if index._dtype is bool_:
            from .functional import nonzero
            if k + index.dim() > t.dim():
                raise IndexError(f"too many indices for tensor of dimension {t.dim()} (got {k + index.dim()})")
            for d, part in enumerate(nonzero(index, as_tuple=True)):
                arrays.append(part)
                dims.append(len(dims))
        elif index._dtype is int64:
            arrays.append(index)
            dims.append(len(dims))
        else:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if len(dims) > t.dim():
        raise IndexError(f"too many indices for tensor of dimension {t.dim()} (got {len(dims)})")
    return _apply("index_put_at", [t, values, *arrays], {"dims": tuple(dims), "accumulate": bool(accumulate)},
                  "IndexPutBackward0", out)


def index_put(input, indices, values, accumulate=False) -> Tensor:
    """torch.index_put: a copy of `input` with input[indices] = values (`indices` a tuple of
    int64 or bool tensors for the leading dims, broadcast together; `values` broadcast to the
    indexed shape), or += with accumulate=True, repeated places adding (IndexPutBackward0).
    Without accumulate a repeated place keeps the last value (torch calls it undefined)."""
    return _index_put(as_tensor(input, "index_put"), indices, values, accumulate, "index_put")


def index_put_(self, indices, values, accumulate=False) -> Tensor:
    """In-place torch.Tensor.index_put_."""
    check_inplace(self)
    return _index_put(self, indices, values, accumulate, "index_put_", out=self)


def _put(t: Tensor, index, source, accumulate, fn: str, out=None) -> Tensor:
    index = _tensor(index, fn, "index", 2)
    source = _tensor(source, fn, "source", 3)
    if index._dtype is not int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {_name(index._dtype)}")
    if source._dtype is not t._dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{_name(t._dtype)} and source.dtype = {_name(source._dtype)}")
    if source.numel() != index.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    numel = t.numel()
    if index._data is not None and index._data.size:
        bad = index._data[(index._data < -numel) | (index._data >= numel)]
        if bad.size:
            raise IndexError(f"out of range: tried to access index {int(bad.reshape(-1)[0])} on a tensor of {numel} "
                             f"elements.")
    shape = tuple(t.shape) or (1,)
    flat = index.detach()
    if tuple(flat.shape) != tuple(source.shape):
        flat = flat.reshape(tuple(source.shape))
    flat = F.where(F.lt(flat, 0), F.add(flat, numel), flat)
    strides = [int(np.prod(shape[d + 1:])) for d in range(len(shape))]
    arrays = []
    for d, (size, stride) in enumerate(zip(shape, strides)):
        coordinate = F.floor_divide(flat, stride)
        if d == 0:      # (out of range stays out of range: index_put_at raises where torch does)
            coordinate = F.where(F.logical_or(F.lt(flat, 0), F.ge(flat, numel)), shape[0], coordinate)
        else:
            coordinate = F.remainder(coordinate, size)
        arrays.append(coordinate)
    if t.dim() == 0:
        return _put_scalar(t, source, accumulate, out)
    return _apply("index_put_at", [t, source, *arrays], {"dims": tuple(range(t.dim())),
                                                          "accumulate": bool(accumulate)}, "PutBackward0", out)


def _put_scalar(t: Tensor, source: Tensor, accumulate, out):
    """put into a 0-d tensor: its one element (written, or summed with accumulate)."""
    value = F.sum(source) if accumulate else source.reshape(-1)[-1] if source.numel() else None
    if value is None:
        return t if out is not None else t.clone()
    new = F.add(t, value) if accumulate else cast(value, t._dtype)
    if out is not None:
        out.copy_(new)
        return out
    return new


def put(input, index, source, accumulate=False) -> Tensor:
    """torch.put: a copy of `input` with its elements at the flat (row-major) positions `index`
    (negative ones count from the end) set to `source`'s (same number of elements), or added
    with accumulate=True (PutBackward0)."""
    return _put(as_tensor(input, "put"), index, source, accumulate, "put")


def put_(self, index, source, accumulate=False) -> Tensor:
    """In-place torch.Tensor.put_."""
    check_inplace(self)
    return _put(self, index, source, accumulate, "put_", out=self)


def fill_diagonal_(self, fill_value, wrap=False) -> Tensor:
    """torch.Tensor.fill_diagonal_: write `fill_value` on the main diagonal (all dims equal
    beyond 2-d); with wrap=True a tall matrix's diagonal restarts every ncols + 1 rows, as
    NumPy's fill_diagonal (torch's CopySlices node records the write)."""
    if not _is_scalar(fill_value):
        raise TypeError(f"fill_diagonal_(): argument 'fill_value' (position 1) must be Number, not "
                        f"{type_name(fill_value)}")
    check_inplace(self)
    if self.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.dim() > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    height, width = self.shape[0], self.shape[1]
    size = min(height, width)
    coords = [np.arange(size, dtype=np.int64)] * self.dim()
    if wrap and self.dim() == 2 and height > width + 1:
        step = width + 1
        flat = np.arange(0, self.numel(), step, dtype=np.int64)[size:]
        coords = [np.concatenate([coords[0], flat // width]), np.concatenate([coords[1], flat % width])]
    value = _scalar_array(fill_value, self._dtype)
    apply_op("index_put_at", [self, value, *[wrap_array(c) for c in coords]],
             {"dims": tuple(range(self.dim())), "accumulate": False}, "CopySlices", out=self)
    return self


# --------------------------------------------------------------------- index_reduce
_WARNED_INDEX_REDUCE = []


def _index_reduce(t, dim, index, source, reduce, include_self, fn, out=None) -> Tensor:
    dim = int_argument(dim, fn)
    index = _tensor(index, fn, "index", 2)
    source = _tensor(source, fn, "source", 3)
    if not isinstance(reduce, str):
        raise TypeError(f"{fn}(): argument 'reduce' (position 4) must be str, not {type_name(reduce)}")
    if not _WARNED_INDEX_REDUCE:
        _WARNED_INDEX_REDUCE.append(True)
        warnings.warn("index_reduce() is in beta and the API may change at any time.", UserWarning,
                      stacklevel=user_stacklevel())
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    axis = normalize_dim(dim, t.dim())
    if index.dim() > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, but got dim: {index.dim()} with type: "
                         f"{_name(index._dtype)} and size: {shape_str(index.shape)}")
    if index._dtype is not int64:
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got: {_name(index._dtype)}")
    if source._dtype is not t._dtype:
        raise RuntimeError(f"index_reduce_(): self ({_name(t._dtype)}) and source ({_name(source._dtype)}) must "
                           f"have the same scalar type")
    n = index.numel()
    along = source.shape[axis] if source.dim() else 1
    if n != along:
        raise RuntimeError(f"index_reduce_(): Number of indices ({n}) should be equal to source.size(dim): "
                           f"({along}), for dim: {axis}")
    from .scattering import _spread
    attrs = {"axis": axis, "reduce": reduce, "include_self": bool(include_self)}
    return _apply("scatter_reduce", [t, _spread(index, axis, tuple(source.shape)), source], attrs,
                  "IndexReduceBackward0", out)


def index_reduce(input, dim, index, source, reduce, *, include_self=True) -> Tensor:
    """torch.index_reduce: a copy of `input` whose slices along `dim` at the 1-d `index` are
    combined with `source`'s slices by "prod", "mean", "amax" or "amin" (include_self=False
    leaves input's values out where written); IndexReduceBackward0, with scatter_reduce's
    gradient formulas (ties of amax/amin share the gradient, as torch's)."""
    return _index_reduce(as_tensor(input, "index_reduce"), dim, index, source, reduce, include_self, "index_reduce")


def index_reduce_(self, dim, index, source, reduce, *, include_self=True) -> Tensor:
    """In-place torch.Tensor.index_reduce_."""
    check_inplace(self)
    return _index_reduce(self, dim, index, source, reduce, include_self, "index_reduce_", out=self)


# --------------------------------------------------------------------- renorm, frexp, nextafter
def _renorm(t, p, dim, maxnorm, fn, out=None) -> Tensor:
    if not _is_scalar(p):
        raise TypeError(f"{fn}(): argument 'p' (position 1) must be Number, not {type_name(p)}")
    dim = int_argument(dim, fn, "dim", 2)
    if not _is_scalar(maxnorm):
        raise TypeError(f"{fn}(): argument 'maxnorm' (position 3) must be Number, not {type_name(maxnorm)}")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    if t.dim() <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {t.dim()} dimensions")
    axis = normalize_dim(dim, t.dim())
    if not t._dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{_name(t._dtype)}")
    attrs = {"p": float(p), "axis": axis, "maxnorm": float(maxnorm)}
    return _apply("renorm", [t], attrs, "RenormBackward0", out)


def renorm(input, p, dim, maxnorm) -> Tensor:
    """torch.renorm: each slice of `input` along `dim` whose p-norm exceeds `maxnorm` scaled by
    maxnorm / (norm + 1e-7) (torch's factor), the others kept (RenormBackward0, torch's
    gradient). Its second derivative is computed by differentiating torch's formula again."""
    return _renorm(as_tensor(input, "renorm"), p, dim, maxnorm, "renorm")


def renorm_(self, p, dim, maxnorm) -> Tensor:
    """In-place torch.Tensor.renorm_."""
    check_inplace(self)
    return _renorm(self, p, dim, maxnorm, "renorm_", out=self)


def frexp(input):
    """torch.frexp: (mantissa, exponent) with input = mantissa * 2**exponent and
    0.5 <= |mantissa| < 1 (0, inf and NaN give themselves and exponent 0). Floats only. The
    exponent is int64: torch's is int32, a dtype fusegrad lacks. FrexpBackward0: the mantissa's
    gradient is grad / 2**exponent."""
    t = as_tensor(input, "frexp")
    if not t._dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    mantissa, exponent = apply_op("frexp", [t], None, "FrexpBackward0")
    return FrexpResult((mantissa, exponent))


def nextafter(input, other) -> Tensor:
    """torch.nextafter: the next representable value after `input` towards `other`
    (promoted to one float dtype); NextafterBackward0 passes the gradient to `input`, as torch's."""
    a = as_tensor(input, "nextafter")
    b = as_tensor(other, "nextafter", "other", 2)
    dtype = F._promoted([a, b], "nextafter")[1]
    if not dtype.is_floating_point:
        raise NotImplementedError(f"\"nextafter_cpu\" not implemented for '{_name(dtype)}'")
    return apply_op("nextafter", [cast(a, dtype), cast(b, dtype)], None, "NextafterBackward0")


def nextafter_(self, other) -> Tensor:
    """In-place torch.Tensor.nextafter_ (other taken in self's dtype)."""
    check_inplace(self)
    b = as_tensor(other, "nextafter_", "other", 1)
    if not self._dtype.is_floating_point:
        raise RuntimeError(f"\"nextafter_cpu\" not implemented for '{_name(self._dtype)}'")
    apply_op("nextafter", [self, cast(b, self._dtype)], None, "NextafterBackward0", out=self)
    return self


# --------------------------------------------------------------------- small ones
def narrow_copy(input, dim, start, length) -> Tensor:
    """torch.narrow_copy: narrow's slice as a new tensor, not a view (NarrowCopyBackward0)."""
    t = as_tensor(input, "narrow_copy")
    from .splitting import narrow
    view = narrow(t.detach(), dim, start, length)        # (narrow's checks and texts)
    axis = normalize_dim(int(dim), t.dim())
    first = (int(start) + t.shape[axis]) % t.shape[axis] if t.shape[axis] else 0
    from .scattering import _spread
    index = wrap_array(np.arange(first, first + view.shape[axis], dtype=np.int64))
    return apply_op("gather", [t, _spread(index, axis, tuple(view.shape))], {"axis": axis, "saves_input": False},
                    "NarrowCopyBackward0")


def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None, pin_memory=False,
                      requires_grad=False) -> Tensor:
    """torch.Tensor.new_empty_strided: an uninitialised (here zero-filled) tensor of `size`
    with element strides `stride`, in self's dtype unless `dtype` says otherwise."""
    from .device import check_device
    check_device(device)
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    dtype = dtype or self._dtype
    span = 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    memory = np.zeros(max(span, 0), dtype.np)
    array = np.lib.stride_tricks.as_strided(memory, size, tuple(s * memory.itemsize for s in stride))
    t = wrap_array(array) if array.flags.c_contiguous or not all(size) else Tensor._wrap(array)
    if requires_grad:
        t.requires_grad_(True)
    return t


def swapaxes_(self, axis0, axis1) -> Tensor:
    """torch.Tensor.swapaxes_: transpose_(axis0, axis1)."""
    return self.transpose_(axis0, axis1)


def swapdims_(self, dim0, dim1) -> Tensor:
    """torch.Tensor.swapdims_: transpose_(dim0, dim1)."""
    return self.transpose_(dim0, dim1)


def conj(input) -> Tensor:
    """torch.conj: for a real tensor, the tensor itself (fusegrad has no complex dtypes)."""
    return as_tensor(input, "conj")


def resolve_conj(input) -> Tensor:
    """torch.resolve_conj: the tensor itself (a real tensor has no conjugate bit)."""
    return as_tensor(input, "resolve_conj")


def resolve_neg(input) -> Tensor:
    """torch.resolve_neg: the tensor itself (a real tensor has no negative bit)."""
    return as_tensor(input, "resolve_neg")


def is_conj(input) -> bool:
    """torch.is_conj: False (fusegrad has no complex dtypes)."""
    as_tensor(input, "is_conj")
    return False


def is_neg(input) -> bool:
    """torch.is_neg: False (fusegrad has no negative bit)."""
    as_tensor(input, "is_neg")
    return False


def nonzero_static(input, *, size, fill_value=-1) -> Tensor:
    """torch.nonzero_static: nonzero's [n, ndim] int64 indices cut or padded with `fill_value`
    rows to exactly `size` rows (no history)."""
    t = as_tensor(input, "nonzero_static")
    if not isinstance(size, (int, np.integer)) or isinstance(size, bool) or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    found = np.argwhere(np.asarray(t._concrete()))
    rows = np.full((int(size), t.dim()), fill_value, np.int64)
    k = min(len(found), int(size))
    rows[:k] = found[:k]
    return wrap_array(rows)


METHODS = {
    "isin": None, "histogram": histogram, "cov": cov, "corrcoef": corrcoef,
    "select_scatter": select_scatter, "slice_scatter": slice_scatter, "diagonal_scatter": diagonal_scatter,
    "index_put": index_put, "index_put_": index_put_, "put": put, "put_": put_, "fill_diagonal_": fill_diagonal_,
    "index_reduce": index_reduce, "index_reduce_": index_reduce_, "renorm": renorm, "renorm_": renorm_,
    "frexp": frexp, "nextafter": nextafter, "nextafter_": nextafter_, "narrow_copy": narrow_copy,
    "new_empty_strided": new_empty_strided, "swapaxes_": swapaxes_, "swapdims_": swapdims_, "conj": conj,
    "resolve_conj": resolve_conj, "resolve_neg": resolve_neg, "is_conj": is_conj, "is_neg": is_neg,
    "nonzero_static": nonzero_static,
}
del METHODS["isin"]     # (torch has no Tensor.isin)
