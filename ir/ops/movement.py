"""Movement ops: reshape, permute, expand, basic indexing, cat and stack.

In the compiled path these are index arithmetic, not copies (cat and stack
decompose into a select between their operands, each read through index
arithmetic: `pad_edge`); in the reference executor they are NumPy views where
NumPy makes one. Basic indices are normalised by the tracer into `index`, a
tuple of ("i", k) for an integer and ("s", start, stop, step) for a slice,
one per leading dim.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..iteration_order import preserved_copy, preserved_result_order
from ..types import EXPAND_TYPE_NAMES, TensorType, int64
from .registry import COMPOSITE, MOVEMENT, NoDerivativeError, OpDef, register, shape_str


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


# --------------------------------------------------------------------- index maps
# Inside a loop kernel every value is read at an *index*: one entry per dim of
# the value, the number of the kernel dim whose loop variable indexes it, None
# for the constant 0 (a size-1 dim), or a `Clamped` entry (a loop variable
# shifted and clamped into an operand's range: how `pad_edge`, and through it
# cat, reads). The movement ops below that are pure index arithmetic declare
# `index_map`, the map from their output's index to their operand's;
# codegen/indexing.py applies it.
@dataclass(frozen=True)
class Clamped:
    """Index entry `min(max(source - offset, 0) // step, high)`: `source` (a loop dim
    or another Clamped) moved back `offset` places, divided by `step` (a strided
    slice's positions: index_put's decomposition) and clamped into [0, high].
    No lower clamp is written when `offset` is 0, no upper one when `high` is
    None. Every element it names exists, so a kernel may read it unconditionally
    (cat selects which operand's read it keeps)."""
    source: "int | Clamped"
    offset: int
    high: int | None
    step: int = 1

    @property
    def dim(self) -> int:
        """The kernel dim whose loop variable this entry reads."""
        return self.source.dim if isinstance(self.source, Clamped) else self.source


def clamped(entry, offset: int, high: int | None, step: int = 1):
    """`entry` shifted back by `offset`, divided by `step` and clamped into [0, high]
    (None: no upper clamp)."""
    if offset == 0 and high is None and step == 1:
        return entry
    return Clamped(entry, offset, high, step)


def index_dims(index) -> set:
    """The kernel dims whose loop variables an index reads."""
    return {i.dim if isinstance(i, Clamped) else i for i in index if i is not None}


def canonical_index(index, shape):
    """`index` with every size-1 dimension reading the constant 0."""
    return tuple(None if s == 1 else i for i, s in zip(index, shape))


def broadcast_index(index, out_shape, in_shape):
    """Index of an operand of shape `in_shape` broadcast to `out_shape`."""
    lead = len(out_shape) - len(in_shape)
    return tuple(None if s == 1 else index[lead + j] for j, s in enumerate(in_shape))


def permute_index(index, dims):
    """Index of a permute's input: output dim j reads input dim dims[j]."""
    out = [None] * len(dims)
    for j, d in enumerate(dims):
        out[d] = index[j]
    return tuple(out)


def is_unit_reshape(in_shape, out_shape):
    """True when a reshape only inserts or removes size-1 dims (pure index remap)."""
    return [s for s in in_shape if s != 1] == [s for s in out_shape if s != 1]


def unit_reshape_index(index, in_shape, out_shape):
    """Index of a reshape's input, for a reshape that only moves size-1 dims."""
    live = iter(i for i, s in zip(index, out_shape) if s != 1)
    return tuple(None if s == 1 else next(live) for s in in_shape)


def _expand_map(in_shape, out_shape, attrs):
    return lambda index: broadcast_index(index, out_shape, in_shape)


def _permute_map(in_shape, out_shape, attrs):
    return lambda index: canonical_index(permute_index(index, attrs["dims"]), in_shape)


def _reshape_map(in_shape, out_shape, attrs):
    if not is_unit_reshape(in_shape, out_shape):
        return None
    return lambda index: unit_reshape_index(index, in_shape, out_shape)


# --------------------------------------------------------------------- reshape
def _reshape_infer(types, attrs):
    t, shape = types[0], tuple(attrs["shape"])
    if _numel(shape) != t.numel:
        raise RuntimeError(f"shape '{shape_str(shape)}' is invalid for input of size {t.numel}")
    return [TensorType(shape, t.dtype)]


def memory_view(x: np.ndarray, shape: tuple, strides: tuple, shift: int = 0) -> np.ndarray | None:
    """A view of x's memory with `shape` and byte `strides` from `shift` bytes past x's first
    element, whose chain of bases ends at the array owning the memory, as NumPy's own views' do
    (eager dispatch tells a view from a copy by it; as_strided's chain ends at a holder object);
    read-only where x is. None where NumPy will not lend that memory as one buffer, or where
    the view starts before it (an empty view starts anywhere inside it)."""
    owner = x
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    offset = x.__array_interface__["data"][0] - owner.__array_interface__["data"][0] + shift
    if 0 in shape:
        offset = min(max(offset, 0), owner.nbytes)
    if offset < 0:
        return None
    try:
        view = np.ndarray(tuple(shape), x.dtype, buffer=owner, offset=offset, strides=tuple(strides))
    except (TypeError, ValueError, BufferError):
        return None
    if not x.flags.writeable:
        view.flags.writeable = False
    return view


def _view_strides(old_shape: tuple, old_strides: tuple, new_shape: tuple):
    """torch's strides (in bytes here) for a view of shape `new_shape` of memory laid out as
    `old_shape`/`old_strides` (ATen's computeStride), or None where no view exists. They differ
    from NumPy's only along size-1 dims, whose stride is arbitrary: torch gives one inside a
    run of dims that step evenly the stride of the dims after it (x[::2] of a [1, 3] row has
    strides (6, 1); its view(1, 3) has (3, 1), which NumPy's reshape to the same shape keeps
    as they were)."""
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    base = old_strides[-1]
    tensor_numel = view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (old_shape[tensor_d - 1] != 1 and old_strides[tensor_d - 1] != tensor_numel * base):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * base
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                base, tensor_numel, view_numel = old_strides[tensor_d - 1], 1, 1
    return tuple(new_strides) if view_d == -1 else None


def _unsqueeze_strides(x: np.ndarray, shape: tuple, inserted: int):
    """torch's strides (in bytes) for unsqueeze(x, inserted) (inferUnsqueezeGeometry): the new
    dim steps as far as the dim it is inserted before spans, or one element at the end. None
    where `shape` is not x's with a size-1 dim at `inserted` (a rewrite merged the reshape)."""
    if not 0 <= inserted <= x.ndim or tuple(shape) != x.shape[:inserted] + (1,) + x.shape[inserted:]:
        return None
    step = x.shape[inserted] * x.strides[inserted] if inserted < x.ndim else x.itemsize
    return x.strides[:inserted] + (step,) + x.strides[inserted:]


def _reshape_ref(x: np.ndarray, shape, inserted: int | None = None) -> np.ndarray:
    """x reshaped, a view where its layout allows, with torch's strides along size-1 dims
    (`inserted`: the dim an unsqueeze or a None index added, whose stride follows torch's
    unsqueeze rule rather than view's)."""
    result = np.reshape(x, shape)
    # (a C-contiguous x without size-1 dims: NumPy's strides are already torch's)
    if (1 in result.shape and result.ndim > 1 and result.size > 1 and x.ndim
            and not (1 not in x.shape and x.flags.c_contiguous) and np.may_share_memory(result, x)):
        # (a view with a size-1 dim: torch's strides there, see _view_strides)
        strides = _unsqueeze_strides(x, result.shape, inserted) if inserted is not None else None
        if strides is None:
            strides = _view_strides(x.shape, x.strides, result.shape)
        if strides is not None and strides != result.strides:
            # (over the same elements; where the memory cannot be lent so, NumPy's strides)
            view = memory_view(result, result.shape, strides)
            if view is not None:
                result = view
    return result


register(OpDef("reshape", MOVEMENT, _reshape_infer, _reshape_ref,
               lambda e, x, y, g, a, n: [e.reshape(g[0], x[0].shape)],
               index_map=_reshape_map, view=True))


# --------------------------------------------------------------------- permute
def _permute_infer(types, attrs):
    t, dims = types[0], attrs["dims"]
    if sorted(dims) != list(range(t.ndim)):
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           f"length of the desired ordering of dimensions i.e. input.dim() = {t.ndim} is not "
                           f"equal to len(dims) = {len(dims)}")
    return [TensorType(tuple(t.shape[d] for d in dims), t.dtype)]


def _permute_vjp(e, x, y, g, a, n):
    dims = a["dims"]
    inverse = [0] * len(dims)
    for i, d in enumerate(dims):
        inverse[d] = i
    return [e.permute(g[0], inverse)]


def _permute_rewrite(e, xs, attrs, graph):
    dims, src = attrs["dims"], graph.producer(xs[0])
    if src is None:
        return None
    if src.op == "permute":
        # A permute of a permute is one permute (none when they cancel).
        inner = dict(src.attrs)["dims"]
        return [e.permute(src.inputs[0], tuple(inner[d] for d in dims))]
    if src.op == "matmul" and dims == (1, 0) and graph.readers(xs[0]) == 1 and \
            all(v.type.ndim == 2 for v in src.inputs):
        # (A B)^T = B^T A^T: BLAS writes the transposed product directly (the operands'
        # transposes are views), so what reads it reads contiguous memory. A matmul's
        # VJP for a weight used as x @ W.T is such a transpose of a product.
        a, b = src.inputs
        return [e.matmul(_transposed(e, b, graph), _transposed(e, a, graph))]
    return None


def _transposed(e, v, graph):
    src = graph.producer(v)
    if src is not None and src.op == "permute" and dict(src.attrs)["dims"] == (1, 0):
        return src.inputs[0]
    return e.permute(v, (1, 0))


register(OpDef("permute", MOVEMENT, _permute_infer, lambda x, dims: np.transpose(x, dims), _permute_vjp,
               index_map=_permute_map, view=True, rewrite=_permute_rewrite))


# --------------------------------------------------------------------- expand
def _expand_infer(types, attrs):
    t, shape = types[0], tuple(attrs["shape"])
    lead = len(shape) - t.ndim
    if lead < 0:
        raise RuntimeError(f"expand({EXPAND_TYPE_NAMES[t.dtype.name]}{{{shape_str(t.shape)}}}, size={shape_str(shape)}): the number of "
                           f"sizes provided ({len(shape)}) must be greater or equal to the number of dimensions "
                           f"in the tensor ({t.ndim})")
    for i in reversed(range(t.ndim)):        # torch checks from the last dimension
        s = t.shape[i]
        if s != 1 and s != shape[lead + i]:
            raise RuntimeError(f"The expanded size of the tensor ({shape[lead + i]}) must match the existing size "
                               f"({s}) at non-singleton dimension {lead + i}.  Target sizes: {shape_str(shape)}.  "
                               f"Tensor sizes: {shape_str(t.shape)}")
    if any(s < 0 for s in shape):        # a size below -1 on a singleton dimension
        raise RuntimeError("numel: integer multiplication overflow")
    return [TensorType(shape, t.dtype)]

def _expand_ref(x, shape):
    """np.broadcast_to, with torch's strides (inferExpandGeometry): a dim that keeps its size (a
    size-1 dim too) keeps its stride, and a new size-1 dim takes the next dim's extent, where
    NumPy gives every size-1 dim stride 0 (t.expand(3, 1).stride() is (1, 1))."""
    out = np.broadcast_to(x, shape)
    if x.ndim == 0:
        return out              # (torch's strides of an expanded 0-d tensor are all 0)
    lead = len(shape) - x.ndim
    strides = [0] * len(shape)
    for i in reversed(range(len(shape))):
        d = i - lead
        size = x.shape[d] if d >= 0 else 1
        stride = x.strides[d] if d >= 0 else (shape[i + 1] * strides[i + 1] if i + 1 < len(shape) else x.itemsize)
        strides[i] = stride if size == shape[i] else 0
    strides = tuple(strides)
    if strides == out.strides:
        return out
    # A read-only view of x's memory with these strides (memory_view); where NumPy will not
    # lend the memory as a buffer, its own strides
    view = memory_view(x, shape, strides)
    if view is None:
        return out
    view.flags.writeable = False
    return view


register(OpDef("expand", MOVEMENT, _expand_infer, _expand_ref,
               lambda e, x, y, g, a, n: [e.sum_to(g[0], x[0].shape)],
               index_map=_expand_map, view=True))


# --------------------------------------------------------------------- basic indexing
def index_shape(shape, index):
    """The shape of `x[index]` for a normalised basic index."""
    out = []
    for item, size in zip(index, shape):
        if item[0] == "s":
            _, start, stop, step = item
            out.append(len(range(start, stop, step)))
    out.extend(shape[len(index):])
    return tuple(out)


def to_numpy_index(index):
    """The NumPy index for a normalised basic index: ("i", k) items become k, ("s", start, stop, step) slices."""
    return tuple(item[1] if item[0] == "i" else slice(item[1], item[2], item[3]) for item in index)


def _getitem_infer(types, attrs):
    t = types[0]
    return [TensorType(index_shape(t.shape, attrs["index"]), t.dtype)]


def _getitem_vjp(e, x, y, g, a, n):
    if not a["index"]:
        return [g[0]]       # the alias x[...] (x[:, :], x[()]): torch's AliasBackward0 passes it on
    zeros = e.zeros_like(x[0])
    return [e.op("index_put", zeros, g[0], index=a["index"])]


def _getitem_ref(x, index):
    # The trailing Ellipsis keeps a full integer index a 0-d view, not a copy.
    return x[to_numpy_index(index) + (Ellipsis,)]


def _getitem_map(in_shape, out_shape, attrs):
    """Slices with step 1 along every indexed dim (`x[:, 2:]`, `x[1:-1, :5]`): the output's
    index shifted forward by each start (a Clamped entry whose negative offset never
    clamps). A kernel then reads the operand's own memory at an offset, in order, where as
    a view between kernels it was a strided operand the executor copied first: the three
    slices of a [4096, 1024] stencil cost three 16 MiB copies. Not for an integer index (it
    drops a dim), a step, an empty result, or a slice of one element of a longer dim (a
    size-1 dim reads the constant 0, which kernels take for a dim of size 1 throughout:
    the element would be read at 0 through the ops behind it, a cat's clamps too)."""
    index = attrs["index"]
    if any(item[0] != "s" or item[3] != 1 for item in index) or 0 in out_shape:
        return None
    if any(size == 1 and whole != 1 for size, whole in zip(out_shape, in_shape)):
        return None
    starts = [item[1] for item in index] + [0] * (len(in_shape) - len(index))

    # (a dim of size 1 starts at 0: clamped() returns its entry, and canonical_index reads it at 0)
    return lambda entries: canonical_index(tuple(clamped(entry, -start, None) for entry, start in zip(entries, starts)),
                                           in_shape)


register(OpDef("getitem", MOVEMENT, _getitem_infer, _getitem_ref, _getitem_vjp, view=True,
               index_map=_getitem_map, doc="getitem(x; index): basic indexing, a view"))


# --------------------------------------------------------------------- split into parts
# torch's split, chunk and unbind (and iterating a tensor) return several views from one node
# (SplitBackward0 / UnbindBackward0, its outputs output_nr 0, 1, ...): one instruction with an
# output per part. Each part is the basic index `split_part_index` gives, which is how a part is
# re-derived from its base after a write (view chains: OpDef.extra["part_views"]) and how
# compiled programs compute it (the decomposition). Its VJP is torch's split_backward /
# unbind_backward: the parts' gradients, zeros for those that got none, concatenated (stacked).
def split_part_index(shape: tuple, axis: int, sizes: tuple, squeeze: bool, k: int) -> tuple:
    """The basic index of part `k` of x (of `shape`) split along `axis` into parts of `sizes`
    (`squeeze`: unbind's parts, each without that dim)."""
    lead = tuple(("s", 0, s, 1) for s in shape[:axis])
    if squeeze:
        return lead + (("i", k),)
    start = sum(sizes[:k])
    return lead + (("s", start, start + sizes[k], 1),)


def _split_indices(shape: tuple, attrs: dict) -> list:
    axis, sizes, squeeze = attrs["axis"], attrs["sizes"], attrs["squeeze"]
    return [split_part_index(shape, axis, sizes, squeeze, k) for k in range(len(sizes))]


def _split_infer(types, attrs):
    (t,), axis, sizes = types, attrs["axis"], attrs["sizes"]
    if not 0 <= axis < t.ndim or sum(sizes) != t.shape[axis] or not sizes or any(s < 0 for s in sizes) \
            or (attrs["squeeze"] and any(s != 1 for s in sizes)):
        raise ValueError(f"split: parts of sizes {list(sizes)} (squeeze={attrs['squeeze']}) do not tile dim {axis} "
                         f"of {shape_str(t.shape)}")
    return [TensorType(index_shape(t.shape, index), t.dtype) for index in _split_indices(t.shape, attrs)]


def _split_ref(x, axis, sizes, squeeze):
    return tuple(x[to_numpy_index(index) + (Ellipsis,)]
                 for index in _split_indices(x.shape, dict(axis=axis, sizes=sizes, squeeze=squeeze)))


def _split_vjp(e, x, y, g, a, n):
    if not n[0]:
        return [None]
    parts = [gk if gk is not None else e.zeros_like(yk) for gk, yk in zip(g, y)]
    return [e.op("stack" if a["squeeze"] else "cat", *parts, axis=a["axis"])]


def _split_decompose(e, xs, attrs):
    """The parts as basic-index views (`getitem`), which kernels read by index arithmetic."""
    return [e.op("getitem", xs[0], index=index) for index in _split_indices(xs[0].shape, attrs)]


def _split_part_views(shape: tuple, attrs: dict) -> tuple:
    """Per part, the single-output view op deriving it from the operand: (op, frozen attributes)."""
    return tuple(("getitem", (("index", index),)) for index in _split_indices(shape, attrs))


# (COMPOSITE: compiled programs run its decomposition; an empty operand keeps it whole, for the
# reference, which a movement op's view step would not take, having several outputs)
register(OpDef("split", COMPOSITE, _split_infer, _split_ref, _split_vjp, decompose=_split_decompose, view=True,
               extra={"part_views": _split_part_views},
               doc="split(x; axis, sizes, squeeze) -> parts: views of consecutive `sizes` elements along `axis` "
                   "(each without that dim where `squeeze`: unbind)"))


def _index_put_infer(types, attrs):
    t, v = types
    target = index_shape(t.shape, attrs["index"])
    _expand_infer([v], {"shape": target})
    if t.dtype is not v.dtype:
        raise TypeError(f"index_put: operands must share a dtype, got {t.dtype.name} and {v.dtype.name}")
    return [TensorType(t.shape, t.dtype)]


def _index_put_ref(x, v, index, no_derivative=None):
    out = preserved_copy(x)
    out[to_numpy_index(index)] = v
    return out



def _index_put_vjp(e, x, y, g, a, n):
    if a.get("no_derivative"):
        # (torch's NotImplemented node: bernoulli(x, p) of a number p, see tracer.functional)
        raise NoDerivativeError(f"derivative for aten::{a['no_derivative']} is not implemented")
    index = a["index"]
    if not n[0]:
        gx = None
    elif not index:
        # (the whole tensor replaced, as copy_, fill_ and zero_: torch's gradient is a fresh
        # zeros_like(grad), which no later differentiation reaches)
        gx = e.zero_gradient(g[0])
    else:
        gx = e.op("index_put", g[0], e.zeros_like(x[1]), index=index)
    gv = e.sum_to(e.op("getitem", g[0], index=index), x[1].shape) if n[1] else None
    return [gx, gv]


def _index_put_decompose(e, xs, attrs):
    """x[index] = v as a select: where(position inside the indexed box, v read there, x).

    The whole tensor (copy_, fill_, zero_: an empty index) is v broadcast and copied
    (a kernel output, never a read-only broadcast view). Along a dim indexed by an
    integer or a slice, v is read through a clamped shift (pad_edge, as cat does);
    along a strided slice each of v's elements spreads over `step` places (pad_edge's
    step), and a place is inside when the spread position of v's element is the place
    itself (no division or remainder in the test: the position is read as v is).
    Empty boxes decline and run by reference."""
    x, v = xs
    index, shape = attrs["index"], x.shape
    if not index:
        return [e.op("cast", e.expand(v, shape), dtype=x.dtype)]
    box = []                                        # per indexed dim: (start, length, step)
    for item in index:
        if item[0] == "i":
            box.append((item[1], 1, 1))
        else:
            length = len(range(item[1], item[2], item[3]))
            if length == 0:
                return None
            box.append((item[1], length, item[3] if length > 1 else 1))
    box_shape = tuple(n for _, n, _ in box) + shape[len(box):]
    placed = e.reshape(e.expand(v, index_shape(shape, index)), box_shape)
    inside = None
    for axis, (start, length, step) in enumerate(box):
        if length == shape[axis]:
            continue
        target = tuple(shape[:axis + 1]) + box_shape[axis + 1:]
        position = e.op("iota", shape=shape, axis=axis, dtype=int64)
        if length == 1:
            placed = e.expand(placed, target)
        elif step == 1:
            placed = e.op("pad_edge", placed, axis=axis, before=start, after=shape[axis] - start - length)
        else:
            spread = dict(axis=axis, before=start, after=shape[axis] - 1 - start - (length - 1) * step, step=step)
            placed = e.op("pad_edge", placed, **spread)
            along = tuple(length if d == axis else 1 for d in range(len(shape)))
            element = e.expand(e.op("pad_edge", e.op("iota", shape=along, axis=axis, dtype=int64), **spread), shape)
            here = e.eq(e.add(e.mul(element, e.const(step, int64)), e.const(start, int64)), position)
            inside = here if inside is None else e.logical_and(inside, here)
            continue
        here = e.logical_and(e.ge(position, start), e.lt(position, start + length))
        inside = here if inside is None else e.logical_and(inside, here)
    placed = e.expand(placed, shape)
    return [placed if inside is None else e.where(inside, placed, x)]


register(OpDef("index_put", MOVEMENT, _index_put_infer, _index_put_ref, _index_put_vjp,
               decompose=_index_put_decompose, doc="index_put(x, v; index): x with x[index] = v, functionally",
               extra={"result_order": preserved_result_order}))


# --------------------------------------------------------------------- cat and stack
def _cat_infer(types, attrs):
    axis = attrs["axis"]
    first = types[0]
    for k, t in enumerate(types):
        if t.ndim != first.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {first.ndim} and {t.ndim}")
        for d in range(first.ndim):
            if d != axis and t.shape[d] != first.shape[d]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {axis}. Expected size "
                                   f"{first.shape[d]} but got size {t.shape[d]} for tensor number {k} in the list.")
    shape = list(first.shape)
    shape[axis] = sum(t.shape[axis] for t in types)
    return [TensorType(tuple(shape), first.dtype)]


def _cat_vjp(e, x, y, g, a, n):
    axis, start, out = a["axis"], 0, []
    for v, need in zip(x, n):
        stop = start + v.shape[axis]
        index = tuple(("s", 0, s, 1) for s in v.shape[:axis]) + (("s", start, stop, 1),)
        out.append(e.op("getitem", g[0], index=index) if need else None)
        start = stop
    return out


# In compiled programs cat is a select between its operands, each read through
# a clamped shift (pad_edge) so that every read is in bounds:
#   cat(a, b, c) = where(i < end_a, pad_edge(a), where(i < end_b, pad_edge(b), pad_edge(c)))
# with i the position along the axis. An inlined `where` is a conditional
# expression, so a kernel mostly evaluates the selected operand only, after
# one comparison per operand before it (a value the generator names is
# computed unconditionally: clamping keeps its reads in bounds). Past
# MAX_CAT_OPERANDS the chain would make a huge expression, and cat runs by its
# reference implementation. stack is the cat of its operands unsqueezed.
MAX_CAT_OPERANDS = 32


def _cat_decompose(e, xs, attrs):
    """cat as the chain of selects above (None, to decline, past MAX_CAT_OPERANDS)."""
    if len(xs) > MAX_CAT_OPERANDS:
        return None
    axis = attrs["axis"]
    shape = _cat_infer([x.type for x in xs], attrs)[0].shape
    total = shape[axis]
    position = e.op("iota", shape=shape, axis=axis, dtype=int64)
    out, stop = None, total
    for x in reversed(xs):
        start = stop - x.shape[axis]
        placed = _placed(e, x, axis, start, total - stop, shape)
        out = placed if out is None else e.where(e.lt(position, stop), placed, out)
        stop = start
    return [out]


def _placed(e, x, axis, before, after, shape):
    """`x` read over the whole of cat's output `shape`: in place where it belongs,
    its nearest edge element elsewhere (a broadcast when it has one element along `axis`)."""
    if before == after == 0:
        # cat of one tensor: a copy (a cast to its own dtype), never the operand's memory.
        return e.op("cast", x, dtype=x.dtype)
    if x.shape[axis] == 1:
        return e.expand(x, shape)
    return e.op("pad_edge", x, axis=axis, before=before, after=after)


# cat and stack allocate their result row-major, as torch does (NumPy follows the inputs' order:
# the cat of two transposes was itself transposed, and .view(-1) of it raised)
register(OpDef("cat", MOVEMENT, _cat_infer, lambda *xs, axis: np.ascontiguousarray(np.concatenate(xs, axis=axis)),
               _cat_vjp,
               decompose=_cat_decompose, doc="cat(*xs; axis)"))


# pad_edge exists for cat's and index_put's decompositions (codegen only: never traced, so
# no VJP). With `step` (index_put of a strided slice; absent when 1) each element of x
# covers `step` consecutive places: out[i] = x[clip((i - before) // step, 0, len - 1)].
def _pad_edge_infer(types, attrs):
    t, axis, before, after = types[0], attrs["axis"], attrs["before"], attrs["after"]
    step = attrs.get("step", 1)
    if not 0 <= axis < t.ndim or before < 0 or after < 0 or t.shape[axis] == 0 or step < 1:
        raise ValueError(f"pad_edge: needs an axis of {shape_str(t.shape)} with elements, non-negative "
                         f"widths and a positive step, got axis={axis}, before={before}, after={after}, "
                         f"step={step}")
    shape = list(t.shape)
    shape[axis] = before + (t.shape[axis] - 1) * step + 1 + after
    return [TensorType(tuple(shape), t.dtype)]


def _pad_edge_ref(x, axis, before, after, step=1):
    size = before + (x.shape[axis] - 1) * step + 1 + after
    source = np.clip((np.arange(size) - before) // step, 0, x.shape[axis] - 1)
    return np.take(x, source, axis=axis)


def _pad_edge_map(in_shape, out_shape, attrs):
    axis, before, after = attrs["axis"], attrs["before"], attrs["after"]
    step = attrs.get("step", 1)
    high = in_shape[axis] - 1 if after >= step else None      # (past the last element's places)

    def index_map(index):
        out = list(canonical_index(index, in_shape))
        if in_shape[axis] != 1:
            out[axis] = clamped(index[axis], before, high, step)
        return tuple(out)
    return index_map


register(OpDef("pad_edge", MOVEMENT, _pad_edge_infer, _pad_edge_ref, index_map=_pad_edge_map,
               doc="pad_edge(x; axis, before, after[, step]): x with `before` copies of its first element "
                   "along `axis` in front and `after` copies of its last behind (NumPy's edge padding), "
                   "each element repeated `step` times"))


def _stack_infer(types, attrs):
    first = types[0]
    for k, t in enumerate(types):
        if t.shape != first.shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {shape_str(first.shape)} at "
                               f"entry 0 and {shape_str(t.shape)} at entry {k}")
    shape = list(first.shape)
    shape.insert(attrs["axis"], len(types))
    return [TensorType(tuple(shape), first.dtype)]


def _stack_vjp(e, x, y, g, a, n):
    axis = a["axis"]
    lead = tuple(("s", 0, s, 1) for s in x[0].shape[:axis])
    return [e.op("getitem", g[0], index=lead + (("i", k),)) if need else None for k, need in enumerate(n)]


def _stack_decompose(e, xs, attrs):
    """stack is the cat of its operands given a size-1 dim at `axis`."""
    axis = attrs["axis"]
    shape = xs[0].shape[:axis] + (1,) + xs[0].shape[axis:]
    return _cat_decompose(e, [e.reshape(x, shape) for x in xs], {"axis": axis})


register(OpDef("stack", MOVEMENT, _stack_infer, lambda *xs, axis: np.ascontiguousarray(np.stack(xs, axis=axis)),
               _stack_vjp,
               decompose=_stack_decompose, doc="stack(*xs; axis)"))
