"""Reductions over `axes` (a sorted tuple of non-negative dims) with `keepdim`.

The tracer normalises dims; an empty `axes` reaches the IR only for a 0-d
operand (torch reads `dim=()` as "all dims", and the tracer spells those out),
and `_no_axes` rewrites such a reduction away before codegen.
"""
from __future__ import annotations

import math
import os

import numpy as np

from .. import threaded, torch_order_jit
from ..types import TensorType, int64
from .registry import (COMPOSITE, OPAQUE, REDUCE, NoDerivativeNotImplementedError, OpDef, broadcast_shapes,
                       register)


def reduced_shape(shape, axes, keepdim):
    """The shape of a reduction of `shape` over `axes`: those dims become 1 with `keepdim`, else vanish."""
    if keepdim:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def _infer_reduce(types, attrs):
    t = types[0]
    return [TensorType(reduced_shape(t.shape, attrs["axes"], attrs["keepdim"]), t.dtype)]


def _grad_to_input(e, g, x, axes, keepdim):
    """Bring a reduction's output gradient back to the input's shape (a full reduction's 0-d
    gradient expands as it is, as torch's sum_backward: no unsqueeze node under create_graph)."""
    if not keepdim and g.shape != ():
        g = e.reshape(g, e.keepdim_shape(x.shape, axes))
    return e.expand(g, x.shape)


def grad_keepdim(e, g, x, axes, keepdim):
    """A reduction's output gradient in its keepdim shape, not expanded: a per-slice factor that
    broadcasts where it multiplies values of the input's shape (torch's formulas unsqueeze the
    gradient and let TensorIterator broadcast it, so the input's layout decides the result's)."""
    if not keepdim and g.shape != ():
        g = e.reshape(g, e.keepdim_shape(x.shape, axes))
    return g


def _check_nonempty(x, axes, name):
    if x.size == 0 and any(x.shape[a] == 0 for a in axes):
        raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                         "Specify the reduction dim with the 'dim' argument.")


_ACCURATE_SUM_MIN = 4096    # smaller arrays: NumPy's sum as it is (a few ulp at most; eager ops stay cheap)


# torch's CPU sum kernel (aten/src/ATen/native/cpu/SumKernel.cpp, cascade_sum): a row is
# read as 256-bit vectors (8 float32 or 4 float64 lanes; so too on an AVX-512 machine,
# measured against torch 2.13), four vectors at a time, their sums cascaded over levels of
# 16 (or more) steps; then the tail elements, then the lanes, are added to a scalar from 0.
# A full reduction longer than GRAIN_SIZE is split among threads, each chunk so summed and
# the chunks' sums added in turn. _torch_row_sums reproduces that order bit for bit.
_TORCH_VECTOR_BYTES = 32
_TORCH_GRAIN = 32768
_TORCH_ILP = 4


def _torch_threads() -> int:
    """How many threads torch's CPU kernels use by default here (a long full sum is split
    among them): OMP_NUM_THREADS, else the machine's physical cores, as torch counts them."""
    value = os.environ.get("OMP_NUM_THREADS", "").strip()
    if value.isdigit() and int(value) > 0:
        return int(value)
    if not _PHYSICAL_CORES:
        _PHYSICAL_CORES.append(_physical_cores() or threaded.cpus())
    return _PHYSICAL_CORES[0]


_PHYSICAL_CORES: list = []


def torch_parallel_tasks(n: int) -> int:
    """How many chunks torch's at::parallel_for splits `n` elements into: one below GRAIN_SIZE,
    else as many as its threads, each of GRAIN_SIZE elements at least (a long full sum's
    partial sums, a floating arange's vector blocks start afresh in each)."""
    return min(_torch_threads(), -(-n // _TORCH_GRAIN)) if n >= _TORCH_GRAIN else 1


def _physical_cores() -> int:
    """The distinct (physical id, core id) pairs of /proc/cpuinfo, or 0 where it cannot be read."""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return 0
    cores, package = set(), None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "physical id":
            package = value.strip()
        elif key == "core id":
            cores.add((package, value.strip()))
    return len(cores)


def _sequential(a: np.ndarray) -> np.ndarray:
    """a[:, 0] + a[:, 1] + ... in turn (a: (rows, k, width)); zeros where k is 0. (np.cumsum
    adds in order; np.add.reduce is pairwise along an axis it loops over innermost.)"""
    rows, k, width = a.shape
    if k == 0:
        return np.zeros((rows, width), a.dtype)
    if k <= 32 and rows * width >= 256:
        # a few slab additions, in the same order: np.cumsum along a middle axis writes every
        # partial sum and ran 5-20x slower (1.6 ms against 0.09 for a (4096, 2, 32) float32)
        total = a[:, 0].copy()
        for j in range(1, k):
            np.add(total, a[:, j], out=total)
        return total
    return np.cumsum(a, axis=1)[:, -1]


def _steps_in_turn(a: np.ndarray) -> np.ndarray:
    """The sum over axis 2 of `a` (rows, blocks, step, width), the steps added in turn: NumPy's
    np.add.reduce there when width > 1 (its pairwise sum runs only along the innermost axis),
    done as slab additions where those are cheaper: narrow slabs (width 8: 2.5x faster; width 32: 1.7x
    slower, NumPy's reduce loops well over rows that wide)."""
    rows, blocks, step, width = a.shape
    if width == 1 or width > 16 or step > 32 or rows * blocks * width < 256:
        return np.add.reduce(a, axis=2)
    total = a[:, :, 0].copy()
    for j in range(1, step):
        np.add(total, a[:, :, j], out=total)
    return total


def _multi_row_sum(a: np.ndarray) -> np.ndarray:
    """torch's multi_row_sum of each (k, width) slab of `a` (rows, k, width): blocks of
    `step` rows summed in turn, their sums cascaded over three more levels of `step`."""
    rows, k, width = a.shape
    power = max(4, (k - 1).bit_length() // 4) if k > 1 else 4     # (CeilLog2(k) / num_levels)
    step = 1 << power
    if k < step:
        return _sequential(a)       # (the common case: no level fills; eager sums stay cheap)
    blocks = k // step
    tail = _sequential(a[:, blocks * step:])
    # (a sum over axis 2 of (rows, blocks, step, width), width > 1: NumPy adds the steps in turn)
    level = _steps_in_turn(a[:, :blocks * step].reshape(rows, blocks, step, width)) if blocks else \
        np.zeros((rows, 0, width), a.dtype)
    total = tail
    for last in (False, False, True):
        if not level.shape[1]:
            break               # (what remains adds zeros)
        groups = level.shape[1] // step if not last else 0
        total = total + _sequential(level[:, groups * step:])
        level = _steps_in_turn(level[:, :groups * step].reshape(rows, groups, step, width)) if groups else \
            np.zeros((rows, 0, width), a.dtype)
    return total


def _row_sum(v: np.ndarray) -> np.ndarray:
    """torch's row_sum of each (k, width) slab of `v` (its k loads of `width` lanes): four
    interleaved partial sums (multi_row_sum), the loads left over added to the first, then
    the other three to it."""
    rows, k, width = v.shape
    whole = k // _TORCH_ILP
    if not whole:
        return _sequential(v)       # (the leftover loads added to the first partial sum, from 0)
    part = _multi_row_sum(v[:, :whole * _TORCH_ILP].reshape(rows, whole, _TORCH_ILP * width)).reshape(
        rows, _TORCH_ILP, width)
    first = _sequential(np.concatenate([part[:, :1], v[:, whole * _TORCH_ILP:]], axis=1))
    return _sequential(np.concatenate([first[:, None], part[:, 1:]], axis=1))


def _torch_row_sums(rows: np.ndarray, split: bool = False, strided: bool = False) -> np.ndarray:
    """The sum of each row of `rows` (a C-contiguous (count, n) float32 or float64 matrix) in
    the order torch's CPU kernel adds it, bit for bit (`split`: a full reduction, which
    torch splits among its threads when long; `strided`: the row's elements were not
    adjacent in memory, which torch sums element by element, four partial sums at a time)."""
    count, n = rows.shape
    lanes = _TORCH_VECTOR_BYTES // rows.dtype.itemsize
    if split and n > _TORCH_GRAIN:
        tasks = torch_parallel_tasks(n)
        if tasks > 1:
            chunk = -(-n // tasks)
            if count == 1 and torch_order_jit.worth_compiling(rows):
                parts = torch_order_jit.chunk_sums(rows, chunk,
                                                   lambda part: torch_order_jit.row_sums(part, lanes, strided))
            else:
                parts = [_torch_row_sums(rows[:, lo:lo + chunk], strided=strided) for lo in range(0, n, chunk)]
            return _sequential(np.stack(parts, axis=1)[:, :, None])[:, 0] + rows.dtype.type(0)
    if torch_order_jit.worth_compiling(rows):
        return torch_order_jit.row_sums(rows, lanes, strided)     # (the same additions, in one pass)
    if strided:
        return _row_sum(rows.reshape(count, n, 1))[:, 0] + rows.dtype.type(0)
    if count == 1 and n < 64 * lanes:
        return _short_torch_sum(rows[0], lanes).reshape(1)     # (not [None]: a stride of 0)
    if n < lanes:
        total = _row_sum(rows.reshape(count, n, 1))[:, 0]
    else:
        loads = n // lanes
        vector = _row_sum(rows[:, :loads * lanes].reshape(count, loads, lanes))
        # the tail elements, then the lanes in order, added to a scalar from 0
        total = _sequential(np.concatenate([rows[:, loads * lanes:], vector], axis=1)[:, :, None])[:, 0]
    return total + rows.dtype.type(0)        # (the output starts at 0: a sum of -0.0s is 0.0)


def _short_torch_sum(x: np.ndarray, lanes: int) -> np.ndarray:
    """_torch_row_sums of one row of under 64 loads (no level of the cascade fills), in
    few NumPy calls: an eager sum of a small tensor costs a few microseconds."""
    n = x.shape[0]
    loads = n // lanes
    if loads == 0:
        # four interleaved partial sums; the elements past the first four go to the first.
        # (np.add.reduce adds fewer than 8 elements in turn)
        order = x if n <= _TORCH_ILP else np.concatenate([x[:1], x[_TORCH_ILP:], x[1:_TORCH_ILP]])
        return np.add.reduce(order) + x.dtype.type(0)
    v = x[:loads * lanes].reshape(loads, lanes)
    whole = loads // _TORCH_ILP
    if whole:
        # (np.add.reduce over axis 0 of a matrix wider than one element adds its rows in turn)
        part = np.add.reduce(v[:whole * _TORCH_ILP].reshape(whole, _TORCH_ILP * lanes), axis=0).reshape(
            _TORCH_ILP, lanes)
        if whole * _TORCH_ILP < loads:      # (the loads left over go to the first partial sum)
            part = np.concatenate([part[:1], v[whole * _TORCH_ILP:], part[1:]])
        vector = np.add.reduce(part, axis=0)
    else:
        vector = np.add.reduce(v, axis=0)
    tail = n - loads * lanes
    # the tail elements, then the lanes, added in turn from 0 (a running sum's last value)
    return (np.concatenate([x[loads * lanes:], vector]) if tail else vector).cumsum()[-1] + x.dtype.type(0)


def _torch_order_sum(x: np.ndarray, axes, keepdim):
    """x summed over `axes` in torch's order, where that order is known: every axis (of an
    array laid out densely, summed in memory order), the trailing axes or the leading axes
    of a row-major array, in float32 or float64; else None."""
    if x.dtype.char not in "fd" or x.size == 0:
        return None
    if x.ndim == 1 and not x.flags.c_contiguous:
        return _torch_row_sums(np.ascontiguousarray(x)[None], split=True, strided=True)[0].reshape(
            (1,) if keepdim else ())
    if x.ndim <= 1 or len(set(ax % x.ndim for ax in axes)) == x.ndim:
        if not (x.flags.c_contiguous or x.flags.f_contiguous):
            return None         # (a strided tensor of several dims: torch's loops differ)
        total = _torch_row_sums(x.reshape(1, -1) if x.ndim <= 1 else x.ravel(order="K")[None], split=True)[0]
        return total.reshape((1,) * x.ndim) if keepdim else total
    n_axes = {ax % x.ndim for ax in axes}
    lead = x.ndim - len(n_axes)
    if x.flags.c_contiguous and n_axes == set(range(lead, x.ndim)):
        kept = x.shape[:lead]
        # (one row is a full sum: torch's TensorIterator drops the kept dims of size 1, and
        # splits a long one among its threads, as x.sum() of the same elements)
        total = _torch_row_sums(x.reshape(math.prod(kept), -1), split=math.prod(kept) == 1)
        return total.reshape(kept + (1,) * len(n_axes) if keepdim else kept)
    if x.flags.c_contiguous and n_axes == set(range(len(n_axes))):
        # the leading axes summed away (a batch dim: a bias gradient, mean(0))
        kept = x.shape[len(n_axes):]
        total = _torch_column_sums(x.reshape(-1, math.prod(kept)))
        return total.reshape((1,) * len(n_axes) + kept if keepdim else kept)
    return None


def _torch_column_sums(x: np.ndarray) -> np.ndarray:
    """The sum of each column of `x` (a C-contiguous (rows, cols) float32 or float64 matrix) in
    torch's order, bit for bit: one column is a full sum (of its contiguous values); else
    torch splits the columns among its threads when x is large (at 128-byte boundaries), and
    each thread's columns are summed as _torch_column_chunk says."""
    rows, cols = x.shape
    if cols == 1:
        return _torch_row_sums(x.reshape(1, rows), split=True)[0].reshape(1)
    threads = _torch_threads() if x.size >= _TORCH_GRAIN else 1
    per_thread, multiple = -(-cols // threads), 128 // x.itemsize

    def rounded(column):
        return column if column == cols else column - column % multiple
    chunks = [(rounded(start), rounded(min(cols, start + per_thread))) for start in range(0, cols, per_thread)]
    chunks = [(begin, end) for begin, end in chunks if begin < end]
    if torch_order_jit.worth_compiling(x):
        return torch_order_jit.column_sums(x, chunks, _TORCH_VECTOR_BYTES // x.itemsize)
    parts = [_torch_column_chunk(x[:, begin:end]) for begin, end in chunks]
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


def _torch_column_chunk(x: np.ndarray) -> np.ndarray:
    """torch's sums of a chunk of columns: groups of four 256-bit vectors of columns (of four
    columns, when the chunk is narrower than one vector) cascaded down the rows by
    multi_row_sum; each column left over by row_sum, four interleaved partial sums."""
    rows, cols = x.shape
    lanes = _TORCH_VECTOR_BYTES // x.itemsize
    group = _TORCH_ILP * lanes if cols >= lanes else _TORCH_ILP
    grouped = cols // group * group
    parts = []
    if grouped:
        if rows < 16:       # (no level of the cascade fills: the rows in turn, from 0)
            parts.append(np.add.reduce(x[:, :grouped], axis=0) + x.dtype.type(0))
        else:
            parts.append(_multi_row_sum(x[:, :grouped].reshape(1, rows, grouped))[0])
    if grouped < cols:
        rest = x[:, grouped:]
        loads = rows // _TORCH_ILP
        if loads < 16:
            # (the four partial sums add their loads in turn: one reduce, eager sums stay cheap)
            partial = np.add.reduce(rest[:loads * _TORCH_ILP].reshape(loads, _TORCH_ILP, cols - grouped), axis=0)
            first = partial[0]
            for row in range(loads * _TORCH_ILP, rows):
                first = first + rest[row]
            parts.append(first + partial[1] + partial[2] + partial[3] + x.dtype.type(0))
        else:
            rest = np.ascontiguousarray(rest)
            parts.append(_row_sum(rest.reshape(1, rows, cols - grouped))[0])
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


def _accurate_sum(x, axes, keepdim):
    """np.add.reduce in x's dtype, as accurate as torch's cascade sums, for the sums whose
    order _torch_order_sum does not know (strided, or over middle axes). NumPy sums pairwise
    only along the innermost axis it loops over; over any other axis of a float32 array it
    adds one row at a time (arange(20000.).reshape(-1, 2).sum(0) came out 4e-5 off where
    torch's is exact): those are accumulated in float64, as the compiled kernels do."""
    if x.size < _ACCURATE_SUM_MIN or x.dtype != np.float32 or _reduces_innermost_axes(x, axes):
        return np.add.reduce(x, axis=axes, keepdims=keepdim, dtype=x.dtype)
    return np.add.reduce(x, axis=axes, keepdims=keepdim, dtype=np.float64).astype(np.float32)


def _reduces_innermost_axes(x, axes) -> bool:
    """Whether NumPy's summation of `x` over `axes` is pairwise all along: it is along the
    axis it loops over innermost, so the reduction must be that one axis (of more than one
    element), or the trailing axes of a row-major array (which it loops over as one)."""
    n = x.ndim
    reduced = {ax % n for ax in axes if x.shape[ax] > 1}
    if len(reduced) <= 1:
        inner = min((ax for ax in range(n) if x.shape[ax] > 1), key=lambda ax: abs(x.strides[ax]), default=None)
        return inner is None or reduced <= {inner}
    return x.flags.c_contiguous and reduced == set(range(n - len(reduced), n))


def _total(x, axes, keepdim):
    """x summed over `axes`: in torch's order where it is known, else _accurate_sum."""
    found = _torch_order_sum(x, axes, keepdim)
    return found if found is not None else _accurate_sum(x, axes, keepdim)


def _sum_ref(x, axes, keepdim):
    return np.asarray(_total(x, axes, keepdim))


def _mean_ref(x, axes, keepdim):
    # sum / count, not np.mean: the mean of an empty slice is NaN without
    # NumPy's "Mean of empty slice" warning (torch warns nothing).
    count = 1
    for ax in axes:
        count *= x.shape[ax]
    return np.asarray(np.true_divide(_total(x, axes, keepdim), count, dtype=x.dtype))     # apply_ref silences 0/0


def _amax_ref(x, axes, keepdim, evenly=False):
    _check_nonempty(x, axes, "max")
    return np.asarray(np.maximum.reduce(x, axis=axes, keepdims=keepdim))


def _amin_ref(x, axes, keepdim, evenly=False):
    _check_nonempty(x, axes, "min")
    return np.asarray(np.minimum.reduce(x, axis=axes, keepdims=keepdim))


def _sum_vjp(e, x, y, g, a, n):
    return [_grad_to_input(e, g[0], x[0], a["axes"], a["keepdim"])]


def _mean_vjp(e, x, y, g, a, n):
    count = 1
    for ax in a["axes"]:
        count *= x[0].shape[ax]
    return [e.div(_grad_to_input(e, g[0], x[0], a["axes"], a["keepdim"]), count)]


def _extremum_vjp(e, x, y, g, a, n):
    axes, keepdim = a["axes"], a["keepdim"]
    best = _grad_to_input(e, y[0], x[0], axes, keepdim)
    grad = _grad_to_input(e, g[0], x[0], axes, keepdim)
    if a.get("evenly"):
        # torch's max()/min() with no dim (evenly_distribute_backward): ties share the
        # gradient evenly; when the result is NaN, the NaNs are the ties.
        mask = _is_best(e, x[0], best)
        count = e.sum(e.cast(mask, x[0].dtype), axes, keepdim=True)
        return [e.where(mask, e.div(grad, e.expand(count, x[0].shape)), 0)]
    # torch's amax/amin (scale_grad_by_count): grad / count * (x == result), so a
    # slice whose result is NaN (no element equals it) gets NaN everywhere. (grad / count
    # per slice, broadcast: the mask, of x's layout, lays the gradient out as x.)
    mask = e.cast(e.eq(x[0], best), x[0].dtype)
    count = e.sum(mask, axes, keepdim=True)
    return [e.mul(e.div(grad_keepdim(e, g[0], x[0], axes, keepdim), count), mask)]


def _mean_decompose(e, xs, a):
    count = 1
    for ax in a["axes"]:
        count *= xs[0].shape[ax]
    return [e.div(e.sum(xs[0], a["axes"], a["keepdim"]), count)]


def _no_axes(e, xs, attrs, graph):
    """A reduction over no axes (of a 0-d value) is its operand."""
    return None if attrs["axes"] else [xs[0]]


def _sum_no_axes(e, xs, attrs, graph):
    """A sum over no axes (of a 0-d value) is its operand added to a zero: torch's sum starts
    from 0, so a -0. sums to 0."""
    if attrs["axes"]:
        return None
    return [e.add(xs[0], 0) if xs[0].dtype.is_floating_point else xs[0]]


def _without_unit_axes(op: str, plus_zero: bool):
    """The rewrite of a reduction some of whose axes have size 1: those axes reduce nothing, so
    it reduces over the others (keepdim, then reshaped to its own result), or is its operand
    when none is left (a sum's plus 0, as torch's sum starts from 0: -0. sums to +0). Kernels
    need it: a reduction over a unit axis fused into a row kernel after another reduction read
    a per-row scalar of the wrong row (x - x.sum(1, keepdim=True) of a (3, 1, 2) x, and
    softmax over a unit dim, gave wrong values and gradients)."""
    def rule(e, xs, attrs, graph):
        x, axes = xs[0], attrs["axes"]
        if not axes:
            return _sum_no_axes(e, xs, attrs, graph) if plus_zero else _no_axes(e, xs, attrs, graph)
        kept = tuple(a for a in axes if x.shape[a] != 1)
        if len(kept) == len(axes):
            return None
        want = _infer_reduce([x.type], attrs)[0]
        if kept:
            out = e.op(op, x, **{**attrs, "axes": kept, "keepdim": True})
        else:
            out = e.add(x, 0) if plus_zero and x.dtype.is_floating_point else x
        return [e.reshape(out, want.shape)]
    return rule


register(OpDef("sum", REDUCE, _infer_reduce, _sum_ref, _sum_vjp, expr="add", rewrite=_without_unit_axes("sum", True)))
# (extra "unpack_order": torch's nodes of reductions whose backward reads input and result,
# AmaxBackward0, MaxBackward1, LinalgVectorNormBackward0, StdBackward0, check `self` first)
SELF_THEN_RESULT = {"unpack_order": (("in", 0), ("out", 0))}
register(OpDef("amax", REDUCE, _infer_reduce, _amax_ref, _extremum_vjp, expr="max",
               rewrite=_without_unit_axes("amax", False), extra={**SELF_THEN_RESULT}))
register(OpDef("amin", REDUCE, _infer_reduce, _amin_ref, _extremum_vjp, expr="min",
               rewrite=_without_unit_axes("amin", False), extra={**SELF_THEN_RESULT}))
# (extra "row_major_result": a reduction composed of others, whose eager result torch allocates row-major)
register(OpDef("mean", COMPOSITE, _infer_reduce, _mean_ref, _mean_vjp, decompose=_mean_decompose,
               rewrite=_sum_no_axes, extra={"row_major_result": True}))


# --------------------------------------------------------- max/min along one dim
def _infer_arg_extremum(name):
    def infer(types, attrs):
        t, axis = types[0], attrs["axis"]
        # (the shape rule refuses an empty dim, so a traced call raises as eagerly even when
        # nothing reads the result and the instruction is dropped)
        if t.shape and t.shape[axis] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {axis} to have non-zero size.")
        shape = reduced_shape(t.shape, (axis,), attrs["keepdim"])
        return [TensorType(shape, t.dtype), TensorType(shape, int64)]
    return infer


def _arg_extremum_ref(pick):
    def ref(x, axis, keepdim):
        # (an empty dim was refused by the shape rule, which runs first)
        idx = pick(x, axis=axis, keepdims=True)
        if np.issubdtype(x.dtype, np.floating):
            # NaN wins, as in torch: the index of the first NaN.
            nan = np.isnan(x)
            has_nan = nan.any(axis=axis, keepdims=True)
            if has_nan.any():       # (argmax along a leading axis is slow: 29 ms over [4096, 1024])
                idx = np.where(has_nan, np.argmax(nan, axis=axis, keepdims=True), idx)
        vals = np.take_along_axis(x, idx, axis=axis)
        if not keepdim:
            vals, idx = np.squeeze(vals, axis), np.squeeze(idx, axis)
        return np.asarray(vals), np.asarray(idx.astype(np.int64))
    return ref


def _arg_extremum_vjp(e, x, y, g, a, n):
    axis, keepdim = a["axis"], a["keepdim"]
    idx = _grad_to_input(e, y[1], x[0], (axis,), keepdim)
    hit = e.eq(e.op("iota", shape=x[0].shape, axis=axis, dtype=int64), idx)
    return [e.where(hit, _grad_to_input(e, g[0], x[0], (axis,), keepdim), 0)]


def _arg_extremum_decompose(extremum):
    """max_dim / min_dim in three reductions a kernel fuses (phases of one row kernel
    when `axis` is the last dim):
        best    = amax(x)                                 (amin for min_dim)
        indices = amin(where(x is best, i, n))            the first best position
        values  = amax(where(i == indices, x, lowest))    x there, exactly
    with i the position along `axis`. A NaN is best (the extremum is NaN, and
    "x is best" is x == best or x is NaN), as in torch and the reference. The
    values are read back at the index rather than taken from `best`, so that the
    sign of a zero is the first one's (max(0., -0.) is either)."""
    def decompose(e, xs, attrs):
        x, axis, keepdim = xs[0], attrs["axis"], attrs["keepdim"]
        best = e.op(extremum, x, axes=(axis,), keepdim=True)
        position = e.op("iota", shape=x.shape, axis=axis, dtype=int64)
        candidates = e.where(_is_best(e, x, best), position, x.shape[axis])
        indices = e.op("amin", candidates, axes=(axis,), keepdim=keepdim)
        # (Reshaping a result back to keepdim form is index arithmetic: no copy.)
        at_index = e.eq(position, e.reshape(indices, e.keepdim_shape(x.shape, (axis,))))
        values = e.amax(e.where(at_index, x, _lowest(x.dtype)), (axis,), keepdim=keepdim)
        return [values, indices]
    return decompose


def _is_best(e, x, best):
    """x == best, or x is NaN (then best is NaN too: NaN wins)."""
    if not x.dtype.is_floating_point:
        return e.eq(x, best)
    # not (x != best and x is a number): one expression, no isnan op needed.
    return e.op("logical_not", e.logical_and(e.ne(x, best), e.eq(x, x)))


def _lowest(dtype):
    """The identity of max for `dtype`."""
    if dtype.is_floating_point:
        return float("-inf")
    return False if dtype.name == "bool" else int(np.iinfo(np.int64).min)


register(OpDef("max_dim", REDUCE, _infer_arg_extremum("max"), _arg_extremum_ref(np.argmax), _arg_extremum_vjp,
               decompose=_arg_extremum_decompose("amax"), nondiff_outputs=(1,),
               doc="max_dim(x; axis, keepdim) -> (values, indices)"))
register(OpDef("min_dim", REDUCE, _infer_arg_extremum("min"), _arg_extremum_ref(np.argmin), _arg_extremum_vjp,
               decompose=_arg_extremum_decompose("amin"), nondiff_outputs=(1,),
               doc="min_dim(x; axis, keepdim) -> (values, indices)"))


# --------------------------------------------------------- vector norms
def _check_norm_identity(x, p, axes):
    """torch: a norm without an identity (p < 0 or p = inf) of an empty tensor
    fails unless no reduced dim is empty."""
    if x.size or not (p < 0 or p == float("inf")):
        return
    if len(axes) == x.ndim:
        raise RuntimeError(f"linalg.vector_norm cannot compute the {p:g} norm on an empty tensor "
                           "because the operation does not have an identity")
    for a in axes:
        if x.shape[a] == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {p:g} norm on the dimension {a}"
                               "because this dimension is empty and the operation does not have an identity")


def _one_element_norms(shape, axes) -> bool:
    """Whether each norm reads one element (every reduced dim has size 1): torch then
    returns |x| as it is (no square that could overflow, no root that could underflow)."""
    for a in axes:
        if shape[a] != 1:
            return False
    return True


def _is_short_vector_norm(shape, dtype, p, keepdim) -> bool:
    """Whether norm(x; p, axes, keepdim) over all of `x` is the 2-norm of a short float vector
    (the common eager call, t.norm()), which `_short_vector_norm` computes."""
    return p == 2 and len(shape) == 1 and 1 < shape[0] <= 4096 and dtype.kind == "f" and not keepdim


def _short_vector_norm(x):
    """The 2-norm of a short float vector: one dot, and its root in double precision rounded
    once to x's dtype, which is the correctly rounded root (a double carries more than twice
    float32's bits); half the cost of square-then-sum on a few elements (on long vectors
    BLAS's float32 dot is less accurate than NumPy's pairwise sum). It sets no floating-point
    flags NumPy would warn of: `np.vdot` calls BLAS's dot without checking them, where
    `x.dot(x)` warns of an overflow torch computes silently (inf); math.sqrt of a
    non-negative number or NaN raises nothing."""
    return np.array(math.sqrt(np.vdot(x, x)), x.dtype)


def _norm_eager_ref(in_types, attrs):
    """The reference specialised to one eager call signature (OpDef.extra["eager_ref"])."""
    (t,) = in_types
    if _is_short_vector_norm(t.shape, t.dtype.np, attrs["p"], attrs["keepdim"]):
        return _short_vector_norm
    return None


def _norm_ref(x, p, axes, keepdim):
    if _is_short_vector_norm(x.shape, x.dtype, p, keepdim):
        return _short_vector_norm(x)
    _check_norm_identity(x, p, axes)
    if p != 0 and _one_element_norms(x.shape, axes):
        r = np.abs(x)
        return r if keepdim else r.reshape(reduced_shape(x.shape, axes, False))
    if p not in (0, float("inf"), float("-inf")) and x.dtype.kind == "f":
        r = _torch_order_norm(x, p, axes)
        # (a fresh row-major array, as every reduction torch returns: the reshape of a strided
        # sum is a view, with its strides even in size-1 dims)
        return np.array(r.reshape(reduced_shape(x.shape, axes, keepdim)), dtype=x.dtype)
    if p == 2:
        r = np.sqrt(np.add.reduce(x * x, axis=axes, keepdims=keepdim, dtype=x.dtype))
    elif p == float("inf"):
        r = np.max(np.abs(x), axis=axes, keepdims=keepdim, initial=0)
    elif p == float("-inf"):
        r = np.min(np.abs(x), axis=axes, keepdims=keepdim, initial=np.inf)
    elif p == 1:
        r = np.sum(np.abs(x), axis=axes, keepdims=keepdim, dtype=x.dtype)
    elif p == 0:
        r = np.sum(x != 0, axis=axes, keepdims=keepdim).astype(x.dtype)
    else:
        r = np.sum(np.abs(x) ** p, axis=axes, keepdims=keepdim, dtype=x.dtype) ** (1.0 / p)
    return np.asarray(r, dtype=x.dtype)


# torch's CPU norm kernels (ReduceOpsKernel.cpp, norm_kernel_tensor_iterator_impl), measured
# bit for bit against torch 2.13: the 2-norm over the last dims of a row-major tensor adds
# squares in _NORM_LANES lanes (256-bit vectors), each lane in turn, then the lanes one after
# another, then the tail's squares; every other norm (p = 1, 3..., or over leading dims) is
# binary_kernel_reduce: one running sum per result in element order, split among threads
# where one result reads GRAIN_SIZE elements or more, the threads' sums added in turn. Their
# float32 sums are plain float32 additions, so a norm of 1e6 float32 elements is about 1e-5
# off the exact value; reproducing the order keeps results within assert_close of torch's.
_NORM_LANES = {np.dtype(np.float32): 8, np.dtype(np.float64): 4}


def _torch_order_norm(x, p, axes):
    """The p-norm of float `x` over `axes` in torch's order (shape: the kept dims, then one per
    reduced dim of size 1 is not kept: the caller reshapes). A dense permuted `x` (a
    transpose) is read in memory order, as torch's TensorIterator reorders its dims."""
    if x.ndim > 1 and not x.flags.c_contiguous:
        order = sorted(range(x.ndim), key=lambda d: -x.strides[d])
        in_memory = x.transpose(order)
        if in_memory.flags.c_contiguous:
            kept = [d for d in order if d not in axes]          # (the result's dims, in memory order)
            r = _torch_order_norm(in_memory, p, tuple(order.index(d) for d in axes))
            r = r.reshape([x.shape[d] for d in kept]).transpose([kept.index(d) for d in sorted(kept)])
            return r.reshape(-1)
    dtype = x.dtype
    kept = [d for d in range(x.ndim) if d not in axes]
    rows = int(np.prod([x.shape[d] for d in kept], dtype=np.int64))
    count = x.size // rows if rows else 0
    # (dims of size 1 do not count: torch's TensorIterator drops them, so the column norm of
    # a (2100, 1) tensor is the 2-norm of a vector, in lanes)
    long_kept = [d for d in kept if x.shape[d] != 1]
    long_reduced = [d for d in axes if x.shape[d] != 1]
    trailing = not long_kept or not long_reduced or max(long_kept) < min(long_reduced)
    if p == 2 and trailing and x.flags.c_contiguous and rows:
        lanes = _NORM_LANES[dtype]
        whole = count - count % lanes
        matrix = x.reshape(rows, count)
        if torch_order_jit.worth_compiling(matrix):
            partial = torch_order_jit.lane_square_sums(matrix)       # (the same additions, in one pass)
            tail = np.multiply(matrix[:, whole:], matrix[:, whole:])
        else:
            squares = np.multiply(matrix, matrix)
            # (rows, steps, lanes) -> (steps, rows * lanes): NumPy adds the rows of a 2-d array
            # one after another (no pairwise summation across them): each lane in turn
            steps = squares[:, :whole].reshape(rows, whole // lanes, lanes).transpose(1, 0, 2).reshape(
                -1, rows * lanes)
            partial = np.add.reduce(steps, axis=0, dtype=dtype).reshape(rows, lanes) if whole else \
                np.zeros((rows, lanes), dtype)
            tail = squares[:, whole:]
        total = np.add.accumulate(np.concatenate([partial, tail], axis=1), axis=1, dtype=dtype)[:, -1]
        return np.sqrt(total)
    if p == 1:
        terms = np.abs(x)
    elif p == 2:
        terms = np.multiply(x, x)
    else:
        terms = _rounded_power(np.abs(x), p, dtype)
    reduced = sorted(axes)
    inner = int(np.prod(x.shape[reduced[-1] + 1:], dtype=np.int64)) if reduced else 1
    if rows > 1 and inner > 1 and x.flags.c_contiguous and reduced == list(range(reduced[0], reduced[-1] + 1)):
        # Consecutive reduced dims with kept dims inside them (a column norm, dim 0 of a matrix):
        # NumPy adds the rows of (outer, count, inner) one after another, each result's running
        # sum in element order, as binary_kernel_reduce's, without moving the reduced dims last
        # (a transposed copy: the column norms of a [4096, 1024] float32 took 67 ms so, 6 this way)
        total = np.add.reduce(terms.reshape(rows // inner, count, inner), axis=1, dtype=dtype).reshape(rows)
    else:
        terms = np.moveaxis(terms, list(axes), list(range(x.ndim - len(axes), x.ndim))).reshape(rows, count)
        total = _running_sums(terms, dtype)
    if p == 1:
        return total
    if p == 2:
        return np.sqrt(total)
    return _rounded_power(total, dtype.type(1) / dtype.type(p), dtype)


def _running_sums(terms, dtype):
    """Each row of `terms` added up in order from 0, as binary_kernel_reduce does (one result
    reading GRAIN_SIZE elements or more: in chunks per thread, their sums added in turn)."""
    rows, count = terms.shape
    if count == 0:
        return np.zeros(rows, dtype)
    tasks = torch_parallel_tasks(count) if rows == 1 else 1
    compiled = terms.dtype == dtype and torch_order_jit.worth_compiling(terms)
    if tasks == 1:
        if compiled:
            return torch_order_jit.running_sums(terms)     # (the same additions, without the partial sums)
        return np.add.accumulate(terms, axis=1, dtype=dtype)[:, -1]
    chunk = -(-count // tasks)
    parts = torch_order_jit.chunk_sums(terms, chunk, torch_order_jit.running_sums) if compiled else \
        [np.add.accumulate(terms[:, start:start + chunk], axis=1, dtype=dtype)[:, -1]
         for start in range(0, count, chunk)]
    total = np.zeros(rows, dtype)
    for part in parts:
        total = np.add(total, part, dtype=dtype)
    return total


def _rounded_power(base, exponent, dtype):
    """base ** exponent correctly rounded to `dtype` as C's powf is for float32 (computed in
    double precision), NumPy's pow for float64."""
    with np.errstate(all="ignore"):
        return np.power(np.asarray(base, np.float64), float(exponent)).astype(dtype)


def _norm_vjp(e, x, y, g, a, n):
    p, axes, keepdim = a["p"], a["axes"], a["keepdim"]
    xv = x[0]
    if p in (1, 2):
        # (per-slice factors broadcast, not expanded: x's layout decides the gradient's, as
        # in torch's formulas)
        gk = grad_keepdim(e, g[0], xv, axes, keepdim)
        if p == 2:
            normk = grad_keepdim(e, y[0], xv, axes, keepdim)
            # torch: g * (x / norm), with x / norm 0 where the norm is 0 (+0.0: a -0.0
            # input gets a +0.0 gradient from a positive g).
            return [e.mul(gk, e.where(e.eq(normk, 0), 0, e.div(xv, normk)))]
        # (the result is read, unused: torch's node unpacks, so version-checks, what it saved)
        _grad_to_input(e, y[0], xv, axes, keepdim)
        return [e.mul(gk, e.sign(xv))]
    gx = _grad_to_input(e, g[0], xv, axes, keepdim)
    norm = _grad_to_input(e, y[0], xv, axes, keepdim)
    if p == 0:
        return [None]        # torch: no gradient at all (x.grad stays None)
    if p in (float("inf"), float("-inf")):
        # torch: sgn(x) * (g / count * mask), mask = |x| == norm or |x| is NaN, count its
        # sum: ties at the largest (smallest) |x| share the gradient evenly, and in a slice
        # whose norm is NaN its NaNs are the ties (sgn(nan) = 0, the others get 0).
        mask = e.cast(_is_best(e, e.op("abs", xv), norm), xv.dtype)
        count = e.expand(e.sum(mask, axes, keepdim=True), xv.shape)
        return [e.mul(e.sign(xv), e.mul(e.div(gx, count), mask))]
    ax = e.op("abs", xv)
    if p < 1:
        # torch: (sgn(x) * |x|^(p-1), 0 where x is 0) * g * norm^(1-p), in that order.
        scaled = e.mul(e.sign(xv), e.where(e.eq(xv, 0), 0, e.pow(ax, p - 1)))
        return [e.mul(e.mul(scaled, gx), e.pow(norm, 1 - p))]
    # General p, as torch's linalg_vector_norm_backward: x * |x|^(p-2) (sgn(x) * |x|^(p-1)
    # for p < 2, finite at x = 0) times g / norm^(p-1) (0 where the norm is 0); the
    # product is the last op (MulBackward0 under create_graph).
    if p < 2:
        scaled = e.mul(e.sign(xv), e.pow(ax, p - 1))
    else:
        scaled = e.mul(xv, e.pow(ax, p - 2))
    return [e.mul(scaled, e.where(e.eq(norm, 0), 0, e.div(gx, e.pow(norm, p - 1))))]


# Norms reading at least this many elements each run torch's order in compiled programs too
# (the reference, _torch_order_norm): a kernel's float64 sum is exact where torch's float32
# one is not, and from about this length the two differ by more than assert_close allows.
_TORCH_ORDER_NORM_MIN = 2048


def _in_torch_order(shape, attrs) -> bool:
    """Does a norm of `shape` with these attributes run torch's order (the reference)?"""
    return attrs["p"] not in (0, float("inf"), float("-inf")) and \
        math.prod(shape[d] for d in attrs["axes"]) >= _TORCH_ORDER_NORM_MIN


def _norm_declined_why(ins) -> str | None:
    """Why a norm instruction is not decomposed into kernels (schedule.reference_reason)."""
    attrs = dict(ins.attrs)
    if _in_torch_order(ins.inputs[0].type.shape, attrs):
        count = math.prod(ins.inputs[0].type.shape[d] for d in attrs["axes"])
        return f"over {count} elements per result sums them in torch's order (reduce.py: _torch_order_norm)"
    return None


def _norm_decompose(e, xs, a):
    x, p = xs[0], a["p"]
    if p != 0 and _one_element_norms(x.shape, a["axes"]):
        return [e.reshape(e.op("abs", x), reduced_shape(x.shape, a["axes"], a["keepdim"]))]
    if _in_torch_order(x.shape, a):
        return None
    if p == 2:
        return [e.sqrt(e.sum(e.mul(x, x), a["axes"], a["keepdim"]))]
    if p == 1:
        return [e.sum(e.op("abs", x), a["axes"], a["keepdim"])]
    return None  # other orders run through the reference implementation


def _infer_norm(types, attrs):
    return _infer_reduce(types, attrs)


register(OpDef("norm", COMPOSITE, _infer_norm, _norm_ref, _norm_vjp, decompose=_norm_decompose,
               doc="norm(x; p, axes, keepdim): vector p-norm over axes",
               extra={"row_major_result": True, "eager_ref": _norm_eager_ref, "declined_why": _norm_declined_why,
                      **SELF_THEN_RESULT,
                      "always_saves": SELF_THEN_RESULT["unpack_order"]}))


# ------------------------------------------------------------------ dist, cdist
# torch's dist and cdist save their operands and result (DistBackward0: other, result, self;
# CdistBackward0: result, x1, x2), not the difference the norm is taken of: one op each, whose
# VJP reads them, so that a change of an operand in place before the backward raises.
def _difference(e, a, b, pairwise: bool):
    """The difference whose norm the distance is: a - b broadcast (dist), or per pair of rows,
    a[..., :, None, :] - b[..., None, :, :] (cdist)."""
    if not pairwise:
        return e.sub(a, b)
    rows = e.reshape(a, a.shape[:-2] + (a.shape[-2], 1, a.shape[-1]))
    cols = e.reshape(b, b.shape[:-2] + (1,) + b.shape[-2:])
    return e.sub(rows, cols)


def _difference_norm(ndim: int, p: float, pairwise: bool) -> dict:
    """The norm's attributes over the difference: its last dim (cdist) or all of it (dist)."""
    return {"p": p, "axes": (ndim - 1,) if pairwise else tuple(range(ndim)), "keepdim": False}


def _declare_distance(name: str, pairwise: bool, unpack_order: tuple, doc: str):
    def infer(types, attrs):
        a, b = types
        if not pairwise:
            broadcast_shapes(a.shape, b.shape)          # (the shapes' own error)
            return [TensorType((), a.dtype)]
        batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
        return [TensorType(batch + (a.shape[-2], b.shape[-2]), a.dtype)]

    def ref(a, b, p):
        if pairwise:
            a, b = a[..., :, None, :], b[..., None, :, :]
        diff = np.subtract(a, b)
        return _norm_ref(diff, p, _difference_norm(diff.ndim, p, pairwise)["axes"], False)

    def decompose(e, xs, a):
        diff = _difference(e, xs[0], xs[1], pairwise)
        return [e.op("norm", diff, **_difference_norm(len(diff.shape), a["p"], pairwise))]

    def vjp(e, x, y, g, a, n):
        diff = _difference(e, x[0], x[1], pairwise)
        (gdiff,) = _norm_vjp(e, [diff], y, g, _difference_norm(len(diff.shape), a["p"], pairwise), [True])
        if gdiff is None:
            return [None, None]             # (p = 0: no gradient, as torch's)
        if not pairwise:
            return [gdiff if n[0] else None, e.neg(gdiff) if n[1] else None]
        # (a row's gradient sums over the rows it was paired with; batch dims: autodiff's sum_to)
        rank = len(diff.shape)
        return [e.sum(gdiff, (rank - 2,), keepdim=False) if n[0] else None,
                e.neg(e.sum(gdiff, (rank - 3,), keepdim=False)) if n[1] else None]

    register(OpDef(name, COMPOSITE, infer, ref, vjp, decompose=decompose, doc=doc,
                   extra={"row_major_result": True, "unpack_order": unpack_order,
                          "always_saves": (("in", 0), ("in", 1), ("out", 0))}))


_declare_distance("dist", False, (("in", 1), ("out", 0), ("in", 0)),
                  "dist(a, b; p): the p-norm of a - b (broadcast), a 0-d tensor")
_declare_distance("cdist", True, (("out", 0), ("in", 0), ("in", 1)),
                  "cdist(a, b; p): the p-norm distance of each row of a [..., P, M] to each of b [..., R, M]")


# ------------------------------------------------------------------ pdist
# torch's pdist: the distances of x's rows to each other above the diagonal, in row-major pair
# order. Its gradient is torch's _pdist_backward, an op of its own whose derivative torch does
# not define (a second derivative through pdist raises its NotImplementedError).

def _pdist_infer(types, attrs):
    (x,) = types
    n = x.shape[0]
    return [TensorType((n * (n - 1) // 2,), x.dtype)]


def _pdist_ref(x, p):
    first, second = np.triu_indices(x.shape[0], 1)
    diff = np.subtract(x[first], x[second])
    return _norm_ref(diff, p, (1,), False)


def _pdist_vjp(e, x, y, g, a, n):
    return [e.op("pdist_backward", g[0], x[0], y[0], p=a["p"]) if n[0] else None]


def _pdist_backward_infer(types, attrs):
    return [types[1]]


def _pdist_backward_ref(grad, x, dist, p):
    """torch's _pdist_backward: per pair, the derivative of its distance by each difference
    (torch's formula for p = 0, 1, < 2, 2, inf and the rest, zero where the distance is), added
    to the pair's first row and taken from its second."""
    first, second = np.triu_indices(x.shape[0], 1)
    diff = np.subtract(x[first], x[second])
    g, d = grad[:, None], dist[:, None]
    with np.errstate(all="ignore"):
        if p == 0:
            per = np.zeros_like(diff)
        elif p == 1:
            per = g * np.sign(diff)
        elif math.isinf(p):
            per = g * np.sign(diff) * (np.abs(diff) == d)
        elif p == 2:
            per = np.where(d == 0, 0, g * diff / d)
        elif p < 2:
            per = np.where((d == 0) | ((diff == 0) & (p < 1)), 0,
                           np.sign(diff) * np.abs(diff) ** (p - 1) * g / d ** (p - 1))
        else:
            per = np.where(d == 0, 0, diff * np.abs(diff) ** (p - 2) * g / d ** (p - 1))
    out = np.zeros_like(x)
    np.add.at(out, first, per.astype(x.dtype))
    np.subtract.at(out, second, per.astype(x.dtype))
    return out


def _pdist_backward_vjp(e, x, y, g, a, n):
    raise NoDerivativeNotImplementedError("the derivative for '_pdist_backward' is not implemented.")


register(OpDef("pdist_backward", OPAQUE, _pdist_backward_infer, _pdist_backward_ref, _pdist_backward_vjp,
               reference_only=True, doc="pdist_backward(grad, x, dist; p): pdist's gradient (torch's _pdist_backward)",
               extra={"row_major_result": True}))
register(OpDef("pdist", OPAQUE, _pdist_infer, _pdist_ref, _pdist_vjp, reference_only=True,
               doc="pdist(x; p): the p-norm distance of each pair of x's rows i < j, in row-major pair order",
               extra={"row_major_result": True, "always_saves": (("in", 0), ("out", 0))}))
