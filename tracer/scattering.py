"""torch's scatter and index-update family: scatter, scatter_add, scatter_reduce, index_add,
index_copy, index_fill, masked_select, masked_scatter, take, take_along_dim, count_nonzero and
argwhere, with their in-place forms (ir/ops/scatter.py; gather and nonzero are reused).

Each checks its arguments in torch's order with torch's texts, then records one op under
torch's node name. index_add, index_copy and index_fill spread their 1-d index over self's other
dims (as index_select does) and are the `scatter` op. The in-place forms take fusegrad's
in-place path (check_inplace: the leaf and view errors; apply_op(out=self): version counters,
views' CopySlices). Their results are row-major, as torch's, but index_fill's (torch keeps self's
layout there: fusegrad's is row-major)."""
from __future__ import annotations

import warnings

import numpy as np

from fusegrad.ir import bool_, int64
from fusegrad.ir.ops import broadcast_shapes, normalize_dim, shape_str
from fusegrad.ir.types import TORCH_SCALAR_NAMES

from .dispatch import apply_op
from .functional import _is_scalar, _scalar_array, as_tensor, cast, int_argument
from .inplace import check_inplace
from .parser_errors import ArgParser, function_texts, method_texts, type_name
from .scalar_checks import check_int_parses, check_scalar_fits, check_tensor_value_fits, written_number
from .tensor import Tensor
from .user_frame import user_stacklevel

_MISSING = object()
_REDUCE_DEPRECATED = ("The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in a "
                      "future PyTorch release. Use torch.scatter_reduce instead for more reduction options.")
# torch's names of the reductions scatter_reduce takes ("max" and "min" too, as torch 2.13 does)
_REDUCTIONS = {"sum": "sum", "prod": "prod", "mean": "mean", "amax": "amax", "amin": "amin", "max": "amax",
               "min": "amin"}


def _name(dtype) -> str:
    return TORCH_SCALAR_NAMES[dtype.name]


def tensor_argument(x, fn: str, arg: str, pos: int) -> Tensor:
    """A Tensor argument (a NumPy array becomes one), or torch's parser TypeError naming it."""
    if isinstance(x, np.ndarray):
        return as_tensor(x)
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not {type_name(x)}")
    return x


def _size(t: Tensor, d: int) -> int:
    """torch's ensure_nonempty_size: a 0-d tensor counts as one element along dim 0."""
    if t.dim() == 0:
        return 1
    if d >= t.dim():
        normalize_dim(d, t.dim())       # (torch's t.size(d): its IndexError)
    return t.shape[d]


def _scatter_checks(fn: str, t: Tensor, axis: int, index: Tensor, src) -> None:
    """torch's scatter_gather_dtype_check and scatter_shape_check (src None: the value form)."""
    if index.numel() and index._dtype is not int64:
        raise RuntimeError(f"{fn}(): Expected dtype int32/int64 for index")
    if src is not None and src._dtype is not t._dtype:
        raise RuntimeError(f"{fn}(): Expected self.dtype to be equal to src.dtype")
    if not index.numel():
        return
    ndim = max(t.dim(), 1)
    if ndim != max(index.dim(), 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    wrong = any(d != axis and _size(index, d) > _size(t, d) for d in range(ndim))
    if not wrong and src is not None:
        wrong = any(_size(index, d) > _size(src, d) for d in range(ndim))
    if src is not None:
        if max(src.dim(), 1) != max(index.dim(), 1):
            raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
        if wrong:
            raise RuntimeError(f"Expected index {shape_str(index.shape)} to be no larger than self "
                               f"{shape_str(t.shape)} apart from dimension {axis} and to be no larger size than "
                               f"src {shape_str(src.shape)}")
    elif wrong:
        raise RuntimeError(f"Expected index {shape_str(index.shape)} to be no larger than self {shape_str(t.shape)} "
                           f"apart from dimension {axis}")


def _bad_src_grad(node: str, index: Tensor, src: Tensor, at: int = 1) -> dict:
    """The attribute naming torch's backward error where src is larger than the index (its
    gradient has the index's shape): {} where they agree."""
    if index.numel() == src.numel():
        return {}
    return {"bad_src_grad": f"Function {node} returned an invalid gradient at index {at} - got "
                            f"{shape_str(index.shape)} but expected shape compatible with {shape_str(src.shape)}"}


def _apply(op, inputs, attrs, name, out):
    if out is None:
        return apply_op(op, inputs, attrs, name)
    apply_op(op, inputs, attrs, name, out=out)
    return out


# --------------------------------------------------------------------- scatter
def _scatter(t, dim, index, src, value, reduce, fn: str, out=None) -> Tensor:
    dim = int_argument(dim, fn)
    index = tensor_argument(index, fn, "index", 3)
    if src is not _MISSING and value is not _MISSING:
        raise TypeError(f"{fn}() received an invalid combination of arguments - got both src and value")
    given = value if src is _MISSING else src
    if given is _MISSING:
        raise TypeError(f'{fn}() missing 1 required positional arguments: "src"')
    if isinstance(given, np.ndarray):
        given = as_tensor(given)
    if src is not _MISSING and not isinstance(given, Tensor) and not _is_scalar(given):
        raise TypeError(f"{fn}(): argument 'src' (position 4) must be Tensor, not {type_name(given)}")
    if reduce is not None and not isinstance(reduce, str):
        raise TypeError(f"{fn}(): argument 'reduce' must be str, not {type_name(reduce)}")
    axis = normalize_dim(dim, t.dim())
    if isinstance(given, Tensor):
        if reduce is not None:
            warnings.warn(_REDUCE_DEPRECATED, UserWarning, stacklevel=user_stacklevel())
        _scatter_checks("scatter", t, axis, index, given)
        node = "ScatterBackward0"
        attrs = {"axis": axis, **_bad_src_grad(node, index, given)}
        operand = given
    else:
        value = written_number(given, t._dtype)
        if not _is_scalar(value):
            raise TypeError(f"{fn}(): argument 'value' must be Number, not {type_name(value)}")
        _scatter_checks("scatter", t, axis, index, None)
        check_int_parses(value)
        check_scalar_fits(value, t._dtype)
        node, attrs, operand = "ScatterBackward1", {"axis": axis, "fill": True}, _scalar_array(value, t._dtype)
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError("reduce argument must be either add or multiply.")
        attrs.update(reduce=reduce, no_derivative=fn)
        node = "NotImplemented"
        if index._data is not None:
            # (torch's NotImplemented node lists its tensor operands but the index: known now, the
            # index goes in as an array, which a node does not list)
            index = index._data
    return _apply("scatter", [t, index, operand], attrs, node, out)


def scatter(input, dim, index, src=_MISSING, *, value=_MISSING, reduce=None) -> Tensor:
    """torch.scatter: a copy of `input` with `src`'s values (or the number `value`) written at
    the places `index` names along `dim` (ScatterBackward0; ScatterBackward1 for a number). Where
    an index repeats, the last write wins (torch's CPU order; torch calls it undefined).
    `reduce` "add" or "multiply" combines instead (torch's deprecated form: its node has no
    derivative, NotImplemented)."""
    return _scatter(as_tensor(input, "scatter"), dim, index, src, value, reduce, "scatter")


def scatter_(self, dim, index, src=_MISSING, *, value=_MISSING, reduce=None) -> Tensor:
    """In-place torch.Tensor.scatter_ (see scatter)."""
    check_inplace(self)
    return _scatter(self, dim, index, src, value, reduce, "scatter_", out=self)


def _scatter_method(self, dim, index, src=_MISSING, *, value=_MISSING, reduce=None) -> Tensor:
    return _scatter(self, dim, index, src, value, reduce, "scatter")


def _scatter_add(t, dim, index, src, fn, out=None) -> Tensor:
    dim = int_argument(dim, fn)
    index = tensor_argument(index, fn, "index", 3)
    src = tensor_argument(src, fn, "src", 4)
    axis = normalize_dim(dim, t.dim())
    _scatter_checks("scatter", t, axis, index, src)
    attrs = {"axis": axis, "reduce": "add", **_bad_src_grad("ScatterAddBackward0", index, src)}
    return _apply("scatter", [t, index, src], attrs, "ScatterAddBackward0", out)


def scatter_add(input, dim, index, src) -> Tensor:
    """torch.scatter_add: a copy of `input` with `src` added at the places `index` names along
    `dim`, repeated places adding in the index's row-major order (ScatterAddBackward0)."""
    return _scatter_add(as_tensor(input, "scatter_add"), dim, index, src, "scatter_add")


def scatter_add_(self, dim, index, src) -> Tensor:
    """In-place torch.Tensor.scatter_add_."""
    check_inplace(self)
    return _scatter_add(self, dim, index, src, "scatter_add_", out=self)


def _scatter_reduce(t, dim, index, src, reduce, include_self, fn, out=None) -> Tensor:
    dim = int_argument(dim, fn)
    index = tensor_argument(index, fn, "index", 3)
    src = tensor_argument(src, fn, "src", 4)
    if not isinstance(reduce, str):
        raise TypeError(f"{fn}(): argument 'reduce' (position 5) must be str, not {type_name(reduce)}")
    if not isinstance(include_self, (bool, np.bool_)):
        raise TypeError(f"{fn}(): argument 'include_self' must be bool, not {type_name(include_self)}")
    axis = normalize_dim(dim, t.dim())
    _scatter_checks("scatter", t, axis, index, src)
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if _REDUCTIONS[reduce] == "mean" and t._dtype is bool_:
        raise NotImplementedError("\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'")
    attrs = {"axis": axis, "reduce": _REDUCTIONS[reduce], "include_self": bool(include_self),
             **_bad_src_grad("ScatterReduceBackward0", index, src)}
    return _apply("scatter_reduce", [t, index, src], attrs, "ScatterReduceBackward0", out)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True) -> Tensor:
    """torch.scatter_reduce: `src` reduced into a copy of `input` at the places `index` names
    along `dim` by "sum", "prod", "mean", "amax" or "amin" (torch also takes "max" and "min");
    include_self=False leaves self's values out at the places written (ScatterReduceBackward0,
    with torch's gradient formulas: amax/amin share the gradient among ties, self's counted
    even where excluded, as torch's). Not copied from torch: its prod backward raises on a
    double backward where two zeros of src meet at one place (fusegrad differentiates the
    formula again), and where src is larger than the index, a gradient of src raises
    validate_outputs' text for every reduction (torch's mean/amax/amin raise a broadcast error)."""
    return _scatter_reduce(as_tensor(input, "scatter_reduce"), dim, index, src, reduce, include_self, "scatter_reduce")


def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True) -> Tensor:
    """In-place torch.Tensor.scatter_reduce_."""
    check_inplace(self)
    return _scatter_reduce(self, dim, index, src, reduce, include_self, "scatter_reduce_", out=self)


# --------------------------------------------------------------------- index_add / index_copy / index_fill
def _spread(index: Tensor, axis: int, shape: tuple) -> Tensor:
    """A 1-d (or 0-d) index along `axis` spread over the other dims of `shape` (its `axis` entry
    replaced by the index's length), as index_select's gather takes it."""
    n = index.numel()
    if not shape:
        return index.reshape(())
    placed = index.reshape((1,) * axis + (n,) + (1,) * (len(shape) - axis - 1))
    return placed.expand(tuple(shape[:axis]) + (n,) + tuple(shape[axis + 1:]))


def _index_add(t, dim, index, source, alpha, fn, out=None) -> Tensor:
    dim = int_argument(dim, fn)
    index = tensor_argument(index, fn, "index", 3)
    source = tensor_argument(source, fn, "source", 4)
    if not _is_scalar(alpha):
        raise TypeError(f"{fn}(): argument 'alpha' must be Number, not {type_name(alpha)}")
    axis = normalize_dim(dim, t.dim())
    if index.dim() > 1:
        raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: {index.dim()} with type: "
                         f"{_name(index._dtype)} and size: {shape_str(index.shape)}")
    if index._dtype is not int64:
        raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: {_name(index._dtype)}")
    if source._dtype is not t._dtype:
        raise RuntimeError(f"index_add_(): self ({_name(t._dtype)}) and source ({_name(source._dtype)}) must have "
                           f"the same scalar type")
    if not (axis == 0 or axis < source.dim()):
        raise RuntimeError(f"index_add_(): Indexing dim {axis} is out of bounds of the source tensor with dim "
                           f"{source.dim()}")
    n = index.numel()
    along = source.shape[axis] if source.dim() else 1
    if n != along:
        raise RuntimeError(f"index_add_(): Number of indices ({n}) should be equal to source.size(dim): ({along}), "
                           f"for dim: {axis}")
    self_sizes, source_sizes = list(t.shape), list(source.shape)
    if source.dim() and t.dim():
        del self_sizes[axis], source_sizes[axis]
    if self_sizes != source_sizes:
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {shape_str(t.shape)} source.shape = {shape_str(source.shape)}")
    check_int_parses(alpha)
    # (the number as torch's Scalar converts it into self's dtype: 2.5 adds 2 to an integer tensor)
    alpha = _scalar_array(alpha, t._dtype).item()
    attrs = {"axis": axis, "reduce": "add", "alpha": alpha}
    return _apply("scatter", [t, _spread(index, axis, tuple(source.shape)), source], attrs, "IndexAddBackward0", out)


def index_add(input, dim, index, source, *, alpha=1) -> Tensor:
    """torch.index_add: a copy of `input` with `alpha * source` added into the slices along `dim`
    that the 1-d `index` names, repeated indices adding in order (IndexAddBackward0)."""
    return _index_add(as_tensor(input, "index_add"), dim, index, source, alpha, "index_add")


def index_add_(self, dim, index, source, *, alpha=1) -> Tensor:
    """In-place torch.Tensor.index_add_."""
    check_inplace(self)
    return _index_add(self, dim, index, source, alpha, "index_add_", out=self)


def _slice_sizes(shape, axis) -> str:
    """A slice shape as torch's std::vector printing writes it: "4", "4 5"... ("" for none)."""
    sizes = [s for d, s in enumerate(shape) if d != axis]
    return "[" + ", ".join(map(str, sizes)) + "]" if len(sizes) != 1 else str(sizes[0])


def _index_copy(t, dim, index, source, fn, out=None) -> Tensor:
    dim = int_argument(dim, fn)
    index = tensor_argument(index, fn, "index", 3)
    source = tensor_argument(source, fn, "source", 4)
    axis = normalize_dim(dim, t.dim())
    if index.dim() >= 2:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {index.dim()})")
    n = index.numel()
    if source.dim() == 0 and n != 1:
        raise IndexError(f"index_copy_(): When source is scalar, index should have one element (got {n})")
    if source.dim() != t.dim() and source.dim() and t.dim():
        raise IndexError(f"index_copy_(): When source and destination are not scalars, their dimensionality must "
                         f"match. Source dimensionality ({source.dim()}), destination dimensionality ({t.dim()})")
    if index._dtype is not int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got {_name(index._dtype)}")
    if source._dtype is not t._dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                           f"{_name(t._dtype)} and (source) {_name(source._dtype)}")
    self_slice = [s for d, s in enumerate(t.shape) if d != axis]
    source_slice = [s for d, s in enumerate(source.shape) if d != axis]
    if self_slice != source_slice:
        raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice shapes. Destination slice "
                           f"shape: {_slice_sizes(t.shape, axis)} at dimension {axis} and source slice shape: "
                           f"{_slice_sizes(source.shape, axis)} at dimension 0.")
    if source.dim() and n != source.shape[axis]:
        raise IndexError(f"index_copy_(): Number of indices ({n}) should be equal to source.size(dim) "
                         f"({source.shape[axis]})")
    attrs = {"axis": axis, "bounds": "index_copy"}
    return _apply("scatter", [t, _spread(index, axis, tuple(source.shape)), source], attrs, "IndexCopyBackward0", out)


def index_copy(input, dim, index, source) -> Tensor:
    """torch.index_copy: a copy of `input` whose slices along `dim` at the 1-d `index` are
    `source`'s (IndexCopyBackward0); a repeated index keeps the last slice (torch's CPU order)."""
    return _index_copy(as_tensor(input, "index_copy"), dim, index, source, "index_copy")


def index_copy_(self, dim, index, source) -> Tensor:
    """In-place torch.Tensor.index_copy_."""
    check_inplace(self)
    return _index_copy(self, dim, index, source, "index_copy_", out=self)


def _index_fill(t, dim, index, value, fn, out=None) -> Tensor:
    dim = int_argument(dim, fn)
    index = tensor_argument(index, fn, "index", 3)
    value = written_number(value, t._dtype)
    if isinstance(value, np.ndarray):
        value = as_tensor(value)
    if not isinstance(value, Tensor) and not _is_scalar(value):
        raise TypeError(f"{fn}(): argument 'value' (position 4) must be Number, not {type_name(value)}")
    if isinstance(value, Tensor) and value.dim() != 0:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.dim()} dimension(s).")
    if index._dtype is not int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    axis = normalize_dim(dim, t.dim())
    if index.dim() > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    if isinstance(value, Tensor):
        check_tensor_value_fits(value, t._dtype)        # (torch fills with value.item())
        operand, node = cast(value, t._dtype), "IndexFillBackward1"
    else:
        check_int_parses(value)
        check_scalar_fits(value, t._dtype)
        operand, node = _scalar_array(value, t._dtype), "IndexFillBackward0"
    spread = _spread(index, axis, tuple(t.shape[:axis]) + (index.numel(),) + tuple(t.shape[axis + 1:]))
    return _apply("scatter", [t, spread, operand], {"axis": axis, "fill": True, "bounds": "index_fill"}, node, out)


def index_fill(input, dim, index, value) -> Tensor:
    """torch.index_fill: a copy of `input` whose slices along `dim` at the 1-d `index` (negative
    indices count from the end) are `value`, a number (IndexFillBackward0) or a 0-d tensor,
    which then gets the sum of the gradient over the places filled (IndexFillBackward1). The
    result is row-major (torch's keeps input's layout)."""
    return _index_fill(as_tensor(input, "index_fill"), dim, index, value, "index_fill")


def index_fill_(self, dim, index, value) -> Tensor:
    """In-place torch.Tensor.index_fill_."""
    check_inplace(self)
    return _index_fill(self, dim, index, value, "index_fill_", out=self)


# --------------------------------------------------------------------- masks
def masked_select(input, mask) -> Tensor:
    """torch.masked_select: the elements of `input` (broadcast with the bool `mask`) where mask is
    True, as a vector in row-major order (MaskedSelectBackward0). Its length depends on the
    mask's values: inside fg.compile the mask is read (a graph break), as nonzero's input."""
    t = as_tensor(input, "masked_select")
    mask = tensor_argument(mask, "masked_select", "mask", 2)
    if mask._dtype is not bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = broadcast_shapes(tuple(mask.shape), tuple(t.shape))     # (torch's order: the mask's size is a)
    count = int(np.count_nonzero(np.broadcast_to(mask._concrete(), shape)))
    return apply_op("masked_select", [t, mask], {"count": count}, "MaskedSelectBackward0")


def _masked_scatter(t, mask, source, fn, out=None) -> Tensor:
    mask = tensor_argument(mask, fn, "mask", 2)
    source = tensor_argument(source, fn, "source", 3)
    if out is not None:
        mask.expand(tuple(t.shape))     # (torch's expand_inplace: its error text)
    else:
        broadcast_shapes(tuple(mask.shape), tuple(t.shape))
    if source._dtype is not t._dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{_name(t._dtype)} and {_name(source._dtype)}")
    if mask._dtype is not bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype {_name(mask._dtype)}")
    return _apply("masked_scatter", [t, mask, source], None, "MaskedScatterBackward0", out)


def masked_scatter(input, mask, source) -> Tensor:
    """torch.masked_scatter: `input` (broadcast with the bool `mask`) whose masked places take
    `source`'s leading elements in row-major order (MaskedScatterBackward0); source needs at
    least as many elements as the mask has True values."""
    return _masked_scatter(as_tensor(input, "masked_scatter"), mask, source, "masked_scatter")


def masked_scatter_(self, mask, source) -> Tensor:
    """In-place torch.Tensor.masked_scatter_ (the mask broadcasts to self's shape)."""
    check_inplace(self)
    return _masked_scatter(self, mask, source, "masked_scatter_", out=self)


# --------------------------------------------------------------------- take, take_along_dim
def take(input, index) -> Tensor:
    """torch.take: `input`'s elements at the flat (row-major) positions of `index`, negative ones
    counting from the end; the result has the index's shape (TakeBackward0)."""
    t = as_tensor(input, "take")
    index = tensor_argument(index, "take", "index", 2)
    if index._dtype is not int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {_name(index._dtype)}")
    return apply_op("take", [t, index], None, "TakeBackward0")


def take_along_dim(input, indices, dim=None) -> Tensor:
    """torch.take_along_dim: with `dim`, input and indices broadcast against each other except
    along dim (ExpandBackward0 nodes, as torch's broadcast_to) and gathered along it
    (GatherBackward0); without, gather from input.view(-1) at indices.view(-1). An index out of
    range raises gather's error (torch 2.13 reads past a broadcast index's row unchecked)."""
    t = as_tensor(input, "take_along_dim")
    indices = tensor_argument(indices, "take_along_dim", "indices", 2)
    from .gathering import gather
    if dim is None:
        return gather(t.view(-1), 0, indices.view(-1))
    dim = int_argument(dim, "take_along_dim", "dim", 3)
    if t.dim() != indices.dim():
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {t.dim()} dimensions for input, and {indices.dim()} dimensions for indices")
    if indices._dtype is not int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got {_name(indices._dtype)}")
    if t.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    axis = normalize_dim(dim, t.dim())
    sizes = list(t.shape)
    sizes[axis] = indices.shape[axis]
    indices = indices.expand(broadcast_shapes(tuple(sizes), tuple(indices.shape)))
    sizes = list(indices.shape)
    sizes[axis] = t.shape[axis]
    t = t.expand(broadcast_shapes(tuple(sizes), tuple(t.shape)))
    return gather(t, axis, indices)


# --------------------------------------------------------------------- counting
def count_nonzero(input, dim=None) -> Tensor:
    """torch.count_nonzero: how many elements are nonzero (NaN counts), over `dim` (an int, a
    tuple or list of ints, or None for all); an int64 result without history."""
    t = as_tensor(input, "count_nonzero")
    if dim is not None and not isinstance(dim, (tuple, list)):
        dim = int_argument(dim, "count_nonzero", "dim", 2)
    elif isinstance(dim, (tuple, list)):
        dim = [int_argument(d, "count_nonzero", "dim", 2) for d in dim]
        if not dim:
            dim = None
    from .functional import ne, sum as sum_
    nonzero = ne(t.detach(), 0) if t._dtype is not bool_ else t.detach()
    if dim is None:
        return sum_(nonzero)
    return sum_(nonzero, dim)


def argwhere(input) -> Tensor:
    """torch.argwhere: the indices of the nonzero elements, an [n, ndim] int64 tensor (as
    torch.nonzero; its shape depends on the values: inside fg.compile a graph break)."""
    from .functional import nonzero
    return nonzero(as_tensor(input, "argwhere"))


def _masked_scatter_method(self, mask, source) -> Tensor:
    return masked_scatter(self, mask, source)


METHODS = {
    "scatter": _scatter_method, "scatter_": scatter_, "scatter_add": scatter_add, "scatter_add_": scatter_add_,
    "scatter_reduce": scatter_reduce, "scatter_reduce_": scatter_reduce_,
    "index_add": index_add, "index_add_": index_add_, "index_copy": index_copy, "index_copy_": index_copy_,
    "index_fill": index_fill, "index_fill_": index_fill_,
    "masked_select": masked_select, "masked_scatter": _masked_scatter_method, "masked_scatter_": masked_scatter_,
    "take": take, "take_along_dim": take_along_dim, "count_nonzero": count_nonzero, "argwhere": argwhere,
}



# --------------------------------------------------------------------- torch's parser texts for bad calls
_SCATTER = ("(int dim, Tensor index, Tensor src)", "(int dim, Tensor index, Tensor src, *, str reduce)",
            "(int dim, Tensor index, Number value)", "(int dim, Tensor index, Number value, *, str reduce)")
_INDEX_FILL = ("(int dim, Tensor index, Tensor value)", "(int dim, Tensor index, Number value)")
_COUNT_NONZERO = ("(int dim = None)", "(tuple of ints dim)")


def _with_input(printed: tuple, out: bool = False) -> tuple:
    """A method's printed overloads as the function's: `Tensor input` first (`out`: and torch's out=)."""
    tail = lambda p: (", *, Tensor out = None" if "*" not in p else ", Tensor out = None") if out else ""  # noqa: E731
    return tuple("(Tensor input, " + p[1:-1] + tail(p) + ")" for p in printed)


scatter = function_texts(scatter, ArgParser("scatter", *_with_input(_SCATTER, out=True)))
index_fill = function_texts(index_fill, ArgParser("index_fill", *_with_input(_INDEX_FILL)))
count_nonzero = function_texts(count_nonzero, ArgParser("count_nonzero", *_with_input(_COUNT_NONZERO)))
METHODS.update({
    "scatter": method_texts(_scatter_method, ArgParser("scatter", *_SCATTER)),
    "scatter_": method_texts(scatter_, ArgParser("scatter_", *_SCATTER)),
    "index_fill": method_texts(index_fill, ArgParser("index_fill", *_INDEX_FILL)),
    "index_fill_": method_texts(index_fill_, ArgParser("index_fill_", *_INDEX_FILL)),
    "count_nonzero": method_texts(count_nonzero, ArgParser("count_nonzero", *_COUNT_NONZERO)),
})
