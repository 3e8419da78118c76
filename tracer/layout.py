"""Memory layout of tensors for the rules that depend on it (stride(), is_contiguous(),
view(), contiguous()), including traced tensors, which have no memory yet: a fresh traced
value is laid out contiguously, and a view made inside the call has the layout its view
chain gives its base's, as eagerly."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fusegrad.ir.blocked_copy import blocked_copyto
from fusegrad.ir.iteration_order import dense, empty_with_strides, iteration_order, restrided  # noqa: F401  (dense: dispatch's too)

if TYPE_CHECKING:
    from .tensor import Tensor


def contiguous_strides(shape: tuple) -> tuple:
    """Row-major element strides of `shape` (a size-0 dim counts as 1)."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.insert(0, step)
        step *= max(n, 1)
    return tuple(strides)


def strides_of(t: Tensor) -> tuple:
    """The element strides of tensor `t`, traced or not (see `layout_stand_in`). An empty
    array's strides are all 0 in NumPy; torch's are the contiguous ones, or those its view
    chain gives them, as for a traced tensor."""
    data = t._data
    if data is not None and data.size:
        return tuple(b // data.itemsize for b in data.strides)
    if t._base is None or not t._view_chain:
        # (without building layout_stand_in's array, ~5 us: a compiled value_and_grad detaches
        # its value, a traced fresh one)
        return _own_strides(t, t._value_shape())
    return layout_stand_in(t).strides


def _own_strides(t: Tensor, shape: tuple) -> tuple:
    """The element strides of `t` where no view chain gives them (a fresh value, traced or
    empty): the layout it was given, else row-major (negative ones made row-major)."""
    strides = t._layout if t._layout is not None else contiguous_strides(shape)
    return contiguous_strides(shape) if any(s < 0 for s in strides) else tuple(strides)


def layout_stand_in(t: Tensor) -> np.ndarray:
    """An int8 array of `t`'s shape whose byte strides are `t`'s element strides: its memory
    layout, for the rules that depend on it (view(), contiguous()) without reading values.

    A traced tensor has no memory yet: a fresh value is laid out contiguously, and a view
    made inside the call (t.T, t[0], t.expand...) has the layout its view chain gives its
    base's, as eagerly (torch's `x.t().stride()` is (1, 3))."""
    shape = t._value_shape()
    if t._data is not None and t._data.size:
        return _strided_stand_in(shape, strides_of(t))
    if t._base is None or not t._view_chain:
        return _strided_stand_in(shape, _own_strides(t, shape))
    from fusegrad.ir import OPS     # (ir is below tracer; imported here to keep this module light)
    base = layout_stand_in(t._base)
    if any(s < 0 for s in base.strides):
        return _strided_stand_in(shape, contiguous_strides(shape))
    # Replay the chain's NumPy references: metadata-only views of the stand-in.
    for op, attrs in t._view_chain:
        base = OPS[op].ref(base, **dict(attrs))
    if base.shape != shape:         # a chain the stand-in cannot replay: a fresh value's layout
        return _strided_stand_in(shape, contiguous_strides(shape))
    return base


def _strided_stand_in(shape: tuple, strides: tuple) -> np.ndarray:
    """An int8 array of `shape` with these element strides (negative ones made contiguous)."""
    if any(s < 0 for s in strides):
        strides = contiguous_strides(shape)
    # The buffer spans every addressed element, so even a reference that copied stays in bounds;
    # np.empty does not touch its pages.
    extent = 1 + sum((n - 1) * s for n, s in zip(shape, strides) if n > 0)
    return np.lib.stride_tricks.as_strided(np.empty(max(extent, 1), np.int8), shape, strides)


def same_elements(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether arrays `a` and `b` are the same elements of one memory: start, shape, strides and
    dtype alike."""
    return (a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype
            and a.__array_interface__["data"][0] == b.__array_interface__["data"][0])


def is_contiguous(shape: tuple, strides: tuple) -> bool:
    """torch's rule: row-major without gaps, any stride on a dim of size 1; empty is contiguous."""
    if any(n == 0 for n in shape):
        return True
    expected = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1:
            if s != expected:
                return False
            expected *= n
    return True


def elementwise_layout(result: np.ndarray, arrays: list) -> np.ndarray:
    """`result` (an elementwise op's, which NumPy laid out in its own order) in the layout
    torch's TensorIterator gives it (see elementwise_order). They differ on an expand:
    NumPy puts its stride-0 dim innermost (x.expand(2, 3).sigmoid() had strides (1, 2))."""
    order = elementwise_order(result.shape, arrays)
    if [result.strides[d] for d in order] == sorted((result.strides[d] for d in order), reverse=True):
        # NumPy chose the same order; a size-1 dim's stride may still differ from torch's
        return with_unit_strides_in_order(result, order) if 1 in result.shape else result
    return copy_in_order(result, order)


def with_unit_strides_in_order(result: np.ndarray, order) -> np.ndarray:
    """`result`, dense with its dims in `order` (slowest first), with torch's strides for its
    size-1 dims too: the product of the sizes of the dims after it in the order (NumPy's
    result kept its operand's: 2 * x.t().unsqueeze(0) had strides (1, 1, 3), torch's
    (3, 1, 3)). A view where they differ (no element moves)."""
    strides, step = [0] * result.ndim, result.itemsize
    for d in reversed(list(order)):
        strides[d] = step
        step *= result.shape[d]
    if tuple(strides) == result.strides or 0 in result.shape:
        return result
    return restrided(result, tuple(strides))


def in_result_order(result: np.ndarray, order_rule, arrays: list, attrs: dict) -> np.ndarray:
    """`result` laid out as torch lays out the op's result (OpDef.extra["result_order"], given
    the inputs `arrays`): row-major where every input is."""
    if all([a.flags.c_contiguous for a in arrays]):
        return result if result.flags.c_contiguous else np.ascontiguousarray(result)
    order = order_rule(result.shape, arrays, attrs or {})
    if order == list(range(result.ndim)):
        return result if result.flags.c_contiguous else np.ascontiguousarray(result)
    if [result.strides[d] for d in order] == sorted((result.strides[d] for d in order), reverse=True) and \
            dense(result):
        return result                   # (the reference laid it out so: index_put's preserved copy)
    return copy_in_order(result, order)


def _dense_strides(shape: tuple, strides: tuple) -> bool:
    """Whether these element strides lay `shape` out densely, in some order of its dims
    (size-1 dims aside): iteration_order.dense's test, on strides alone."""
    expected = 1
    for stride, size in sorted((abs(st), n) for n, st in zip(shape, strides) if n != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def copy_in_order(array: np.ndarray, order, copyto=None) -> np.ndarray:
    """A copy of `array` laid out densely with its dims in `order` (slowest first), made by
    `copyto(destination, array)` (by default blocked_copyto)."""
    out = np.empty([array.shape[d] for d in order], array.dtype).transpose(np.argsort(order))
    (copyto or blocked_copyto)(out, array)
    return out


def row_major(array: np.ndarray) -> np.ndarray:
    """`array` if it is C-contiguous, else a C-contiguous copy (blocked_copyto)."""
    return array if array.flags.c_contiguous else copy_in_order(array, range(array.ndim))


def with_strides(array: np.ndarray, strides: tuple, copyto=None) -> np.ndarray:
    """`array` when it has these element strides (dense), else a copy laid out with them,
    made by `copyto(destination, array)` (the compiled path's is tiled:
    codegen.layout_copy.copy_into); a view where only size-1 dims' strides differ. Strides
    that no dense array has (a view's, `x.t()[0]` of a 3 x 3 x: (3,)) leave `array` as it is:
    a value computed afresh cannot take them."""
    size = array.itemsize
    if not _dense_strides(array.shape, strides):
        return array
    if not all(n == 1 or b == s * size for n, b, s in zip(array.shape, array.strides, strides)):
        array = copy_in_order(array, sorted(range(array.ndim), key=lambda d: -strides[d]), copyto)
    # (then the size-1 dims' strides too, which the copy's order may have left others: a view)
    wanted = tuple(s * size for s in strides)
    if array.strides == wanted or 0 in array.shape:
        return array
    return restrided(array, wanted)


def traced_elementwise_layout(shape: tuple, operands: list) -> tuple | None:
    """The element strides torch gives an elementwise result of `shape` computed inside a
    trace from `operands` (tensors, traced or not), or None where they are row-major. Only
    an operand laid out otherwise (a transpose, a strided argument) can make them so.

    Kept per (shape, the operands' layout keys): every call of a compiled function that
    multiplies a transpose asks again, and the stand-ins cost ~10 us each to build."""
    try:
        key = (shape, tuple([_layout_key(t) for t in operands]))
        found = _ELEMENTWISE_LAYOUTS.get(key, _MISSING)
    except TypeError:                       # (an unhashable view attribute: worked out each time)
        key, found = None, _MISSING
    if found is _MISSING:
        found = elementwise_strides(shape, [layout_stand_in(t) for t in operands])
        if key is not None:
            if len(_ELEMENTWISE_LAYOUTS) >= 4096:
                _ELEMENTWISE_LAYOUTS.clear()
            _ELEMENTWISE_LAYOUTS[key] = found
    return found


_ELEMENTWISE_LAYOUTS: dict = {}
_MISSING = object()


def _layout_key(t: Tensor) -> tuple:
    """What `layout_stand_in(t)` depends on, cheaply: the shape and strides of memory, the
    layout of a fresh traced value, or a view's chain over its base's key."""
    shape = t._value_shape()
    if t._data is not None and t._data.size:
        return shape, strides_of(t)
    if t._base is None or not t._view_chain:
        return shape, t._layout
    return shape, _layout_key(t._base), t._view_chain


def elementwise_strides(shape: tuple, arrays: list) -> tuple | None:
    """traced_elementwise_layout for operands given as (stand-in) arrays."""
    return strides_in_order(shape, elementwise_order(shape, arrays))


def traced_result_layout(shape: tuple, order_rule, inputs: list, attrs: dict) -> tuple | None:
    """The element strides torch gives the result (of `shape`) of an op with a result-order rule
    (OpDef.extra["result_order"]) traced over `inputs` (tensors or arrays), or None where they
    are row-major."""
    arrays = [x if type(x) is np.ndarray else layout_stand_in(x) for x in inputs]
    if all([a.flags.c_contiguous for a in arrays]):
        return None
    return strides_in_order(shape, order_rule(shape, arrays, attrs))


def strides_in_order(shape: tuple, order: list) -> tuple | None:
    """Dense element strides of `shape` with its dims in `order` (slowest first), or None
    where they are row-major."""
    if order == list(range(len(shape))):
        return None
    strides = [0] * len(shape)
    for d, stride in zip(order, contiguous_strides([shape[d] for d in order])):
        strides[d] = stride
    strides = tuple(strides)
    return None if is_contiguous(shape, strides) else strides


def elementwise_order(shape: tuple, arrays: list) -> list:
    """The dims of an elementwise result of `shape`, slowest first, in the order torch's
    TensorIterator lays it out from its operands `arrays` (ir.iteration_order): a size-1 dim
    of an operand that the result broadcasts has stride 0 there."""
    ndim = len(shape)
    operands = []
    for a in arrays:
        if a.ndim:
            # (torch's compute_strides: a size-1 dim is broadcast, stride 0, only where the
            # result's is not 1 too; otherwise its own stride takes part)
            pad = ndim - a.ndim
            operands.append([0] * pad + [0 if a.shape[d] == 1 and shape[pad + d] != 1 else a.strides[d]
                                         for d in range(a.ndim)])
    return iteration_order(shape, operands)


def broadcasts_a_unit_dim(shape: tuple, operand_shapes) -> bool:
    """Whether an operand of an elementwise result of `shape` has a size-1 dim that the
    result broadcasts (its stride then orders the result's dims: odd_unit_strides)."""
    ndim = len(shape)
    return any(n == 1 and shape[ndim - len(op_shape) + d] != 1
               for op_shape in operand_shapes if len(op_shape) <= ndim for d, n in enumerate(op_shape))


def odd_unit_strides(arrays) -> bool:
    """Whether an operand has a size-1 dim whose stride is not its row-major one (a permute of
    a (4, 1, 1) tensor): NumPy's c_contiguous flag ignores it, torch's TensorIterator reads it
    where the dim is broadcast (`c + ones(2, 4)` puts the broadcast dim innermost)."""
    for a in arrays:
        if 1 in a.shape and a.size > 1:
            step = a.itemsize
            for n, st in zip(reversed(a.shape), reversed(a.strides)):
                if st != step and not (n == 1 and st == 0):     # (0: NumPy's broadcast_to, see torch_strides)
                    return True
                step *= n
    return False


def torch_strides(a: np.ndarray) -> tuple:
    """a's strides as torch would give them: a size-1 dim that NumPy's broadcast_to gave a zero
    stride (an expand that expands nothing there) keeps the row-major stride torch keeps."""
    if 0 not in a.strides:
        return a.strides
    strides, step = [], a.itemsize
    for n, st in zip(reversed(a.shape), reversed(a.strides)):
        strides.append(step if (n == 1 and st == 0) else st)
        step *= max(n, 1)
    return tuple(reversed(strides))


def expanded_strides(kept: np.ndarray, shape: tuple):
    """torch's strides (as torch_strides gives them) of `kept`, a written value with its leading
    1s dropped, expanded to the written region's `shape`, where that adds only leading dims
    over the same elements (inferExpandGeometry: a new dim's stride continues the next dim's,
    size times stride; of a 0-d value all are 0, measured against torch 2.13); None where the
    expand would repeat elements or the shapes do not line up (too hard for torch to decide)."""
    new = len(shape) - kept.ndim
    if new <= 0 or kept.size != int(np.prod(shape)) or tuple(shape[new:]) != kept.shape:
        return None
    strides = list(torch_strides(kept))
    for k in range(new - 1, -1, -1):
        strides.insert(0, shape[k + 1] * strides[0] if strides else 0)
    return tuple(strides)


def byte_range(a: np.ndarray) -> tuple:
    """The [start, end) addresses of a dense array's memory."""
    start = a.__array_interface__["data"][0] + sum(st * (n - 1) for n, st in zip(a.shape, a.strides) if st < 0)
    return start, start + a.size * a.itemsize


def in_dense_order(result: np.ndarray, source: np.ndarray) -> np.ndarray:
    """`result` (of source's shape) laid out as torch's memory_format=torch.preserve_format lays
    out a copy of `source` (*_like, torch.tensor of an array): with source's very strides where
    its elements fill their memory densely (those of its size-1 dims too, which NumPy's
    c_contiguous flag ignores: zeros_like of a (3, 1) tensor's t() has strides (1, 1));
    otherwise densely in the order of source's strides (torch's infer_dense_strides:
    `zeros_like(w.permute(1, 2, 0)[:, ::2])` is not row-major). `result` itself where it is
    laid out so already."""
    if source.ndim < 2 or min(source.strides) < 0:
        return result
    # (in elements: result's dtype may be another, torch.tensor(array, dtype=...))
    strides = tuple(st // source.itemsize * result.itemsize for st in source.strides)
    if result.strides == strides:
        return result
    if dense(source):
        out = empty_with_strides(source.shape, strides, result.dtype)
        out[...] = result
        return out
    order = elementwise_order(source.shape, [source])   # (one operand: infer_dense_strides)
    if order == list(range(source.ndim)):
        return result
    return copy_in_order(result, order)


def views_an_expand(t) -> bool:
    """Is `t` a view made through an expand (whose elements may share memory; NumPy makes every
    view of a broadcast read-only, also s.expand(2, 3, 3)[-1], which has no stride 0)? So too a
    detach() or .data of such a view, and a view of one (their chain to the memory's tensor is
    the origin's: Tensor._pass_origin)."""
    if t is None:
        return False
    chains = (t._view_chain,) if t._base is not None else ()
    origin = (t._base if t._base is not None else t)._origin
    if origin is not None:
        chains += (origin[1],)
    return any(op == "expand" for chain in chains for op, _ in chain)


def replay_on_ids(ids: np.ndarray, chain) -> np.ndarray:
    """Element indices `ids` seen through a chain of view ops (their NumPy references): which
    elements of the tensor the chain starts from each element of the view is. (Given any
    array, the result is that array's view through the chain, sharing its memory.)"""
    from fusegrad.ir import OPS     # (ir is below tracer; imported here to keep this module light)
    for op, attrs in chain:
        ids = OPS[op].ref(ids, **dict(attrs))
    return np.asarray(ids)


def replayed_view(array: np.ndarray, chain):
    """`array` seen through view chain `chain` (a view of its memory), or None where NumPy
    cannot replay the chain as a view."""
    try:
        return replay_on_ids(array, chain)
    except Exception:
        return None


def _element_ids(t: Tensor):
    """(the tensor whose memory `t` is, or a view of: t's base or t; which of its elements t's
    elements are, as an int array of t's shape), replaying t's view chain on element indices."""
    owner = t._base if t._base is not None else t
    shape = tuple(owner.shape)
    ids = np.arange(owner.numel()).reshape(shape)
    strides = layout_stand_in(owner).strides        # (int8: its byte strides are element strides)
    if ids.size and strides != contiguous_strides(shape) and min(strides) >= 0:
        # an owner not laid out row-major (an elementwise result of transposes: x.t() + y.t()):
        # its elements' places in its memory, a view with its strides (as its eager array)
        extent = 1 + sum((n - 1) * st for n, st in zip(shape, strides))
        if extent == ids.size:
            ids = np.lib.stride_tricks.as_strided(np.arange(extent), shape,
                                                  tuple(st * ids.itemsize for st in strides))
    return owner, (replay_on_ids(ids, t._view_chain) if t._base is not None else ids)


def _dense_ids(ids: np.ndarray) -> bool:
    """Do these element indices cover a block of consecutive elements, each once?"""
    return ids.size == 0 or (ids.max() - ids.min() + 1 == ids.size and np.unique(ids).size == ids.size)


def traced_partial_overlap(target: Tensor, operands, region=None, broadcast_passes: bool = False) -> bool:
    """torch's get_overlap_status for tensors of a trace, which have no memory yet: does an
    operand that is a view of the same tensor as `target` (or that tensor) cover some of its
    elements (of the part `region(ids)` selects, where given: then `target` itself may be the
    operand, `t[:, ::2] = t`) without being the same elements in the same layout (torch
    compares strides; the element-id arrays carry the views' strides, as eager arrays do)?
    Pairs where one side is not a dense block are let through, as torch does; so, with
    `broadcast_passes` (a copy: torch expands the value first), is a value of another shape."""
    owner = target._base if target._base is not None else target
    shared = [x for x in operands if (x is not target or region is not None)
              and (x is owner or getattr(x, "_base", None) is owner)]
    if not shared:
        return False
    _, mine = _element_ids(target)
    if region is not None:
        mine = np.asarray(region(mine))
    if mine.size == 0 or not _dense_ids(mine):
        return False
    for x in shared:
        _, theirs = _element_ids(x)
        while theirs.ndim > mine.ndim and theirs.shape[0] == 1:
            theirs = theirs[0]              # (torch drops a written value's leading 1s)
        if broadcast_passes and theirs.shape != mine.shape:
            while theirs.ndim and theirs.shape[0] == 1:
                theirs = theirs[0]
            if theirs.shape != mine.shape:
                # a value torch expands first: the same memory in other strides where the expand
                # repeats nothing (`t[::2] = t[0]` of a [2, 3] t), as the eager check
                # (indexing._check_value_overlap)
                strides = expanded_strides(theirs, mine.shape)
                if strides is not None and strides != torch_strides(mine) and theirs.size and \
                        theirs.min() <= mine.max() and mine.min() <= theirs.max():
                    return True
                continue
        if theirs.size == 0 or not _dense_ids(theirs):
            continue
        if torch_strides(theirs) == torch_strides(mine) and theirs.min() == mine.min() and theirs.max() == mine.max():
            continue        # (torch's Full overlap: the same bytes with the same strides)
        if theirs.min() <= mine.max() and mine.min() <= theirs.max():
            return True
    return False


def detached_from(t: Tensor) -> Tensor:
    """The tensor that `t`, a detach() or .data made in the current call, was taken of (through
    such links, back to a view or a tensor of its own; `t` itself where it is none): its elements
    lie in memory as that tensor's do."""
    from . import trace_state
    trace = trace_state.current()
    while t._base is None and trace is not None:
        link = trace.detach_source.get(id(t))
        if link is None or link[0]() is not t:
            break
        t = link[1]
    return t


def traced_overlaps_itself(t: Tensor) -> bool:
    """Do two elements of traced view `t` (an expand's, or a detach() of one made in the call)
    share memory?"""
    t = detached_from(t)
    if t._base is None:
        return False
    _, ids = _element_ids(t)
    return np.unique(ids).size != ids.size
