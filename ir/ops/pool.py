"""Pooling, padding, resampling and pixel shuffles over an input's trailing spatial dims.

- `max_pool(x; kernel_size, stride, padding, dilation, ceil_mode)` -> (values, indices):
  torch's max_pool{1,2}d_with_indices; indices are flat positions in each (H, W) plane, as
  torch's. `adaptive_max_pool(x; output_size)` likewise. Their gradient adds g at the
  indices (scatter_add over the flattened plane). NaN counts as the largest value; ties take
  the first position of a window.
- `avg_pool(x; ..., count_include_pad, divisor_override)` and its gradient `avg_pool_backward`
  (each the other's adjoint); `adaptive_avg_pool(x; output_size)` and
  `adaptive_avg_pool_backward(g; input_size)`.
- `pad_nd(x; pads, mode, value)`: torch's constant (negative pads crop), reflect, replicate and
  circular padding; `pad_nd_backward` (the adjoint of the last three).
- `upsample(x; mode, size, scales, align_corners)`: nearest, nearest-exact and (bi)linear
  resampling with torch's source-index formulas computed in the input's float dtype;
  `upsample_backward` is its adjoint.
- `pixel_shuffle` / `pixel_unshuffle(x; factor)`: each the other's VJP.
All run by their NumPy references in compiled programs (no kernel rule).
"""
from __future__ import annotations

import itertools

import numpy as np

from ..types import TensorType, int64
from ..torch_order_jit import LOOP_FROM, loop_pays
from .conv import col2im, windows
from .registry import OPAQUE, OpDef, register

_WHY = {"reference_why": "window views and gathers: only NumPy runs it", "row_major_result": True}
# (torch's nodes save self whether or not their formula reads its values: a max pool's with its
# indices, unpacked first, result1 before self)
_SAVES_SELF = {"always_saves": (("in", 0),)}
_SAVES_SELF_AND_INDICES = {"always_saves": (("in", 0), ("out", 1)), "unpack_order": (("out", 1), ("in", 0))}


def pool_output_size(size, kernel, stride, padding, dilation, ceil_mode) -> tuple:
    """torch's pooling_output_shape for each spatial dim."""
    out = []
    for i, k, s, p, d in zip(size, kernel, stride, padding, dilation):
        o = (i + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (o - 1) * s >= i + p:
            o -= 1
        out.append(o)
    return tuple(out)


def _pool_windows(x, kernel, stride, padding, dilation, out, fill):
    """Windows (..., *out, *kernel) of x padded by `padding` before and by `fill` as far as
    the last window reaches after (ceil_mode)."""
    nd = len(kernel)
    size = x.shape[x.ndim - nd:]
    pads = [(p, max(0, (o - 1) * s + d * (k - 1) + 1 - p - i))
            for i, k, s, p, d, o in zip(size, kernel, stride, padding, dilation, out)]
    if any(p for pair in pads for p in pair):     # (np.pad copies even when it pads nothing)
        x = np.pad(x, [(0, 0)] * (x.ndim - nd) + pads, constant_values=fill)
    win = windows(x, kernel, stride, (0,) * nd, dilation)
    return win[(Ellipsis,) + tuple(slice(0, o) for o in out) + (slice(None),) * nd]


def _flat_index(positions, size) -> np.ndarray:
    """Flat index in a plane of `size` of per-dim positions (arrays broadcasting together)."""
    flat = positions[0]
    for p, n in zip(positions[1:], size[1:]):
        flat = flat * n + p
    return flat.astype(np.int64)


def _argmax_last(x):
    """(values, indices) of the maximum over the last axis; NaN largest, ties the first."""
    j = np.argmax(x, axis=-1)
    return np.take_along_axis(x, j[..., None], axis=-1)[..., 0], j


def _first_inside(out, kernel, stride, padding, dilation) -> np.ndarray:
    """Per window (*out), the number (in the window's row-major order) of its first element
    inside the plane: where torch's loop starts its maximum."""
    firsts = []
    for axis, (o, s, p, d) in enumerate(zip(out, stride, padding, dilation)):
        start = np.arange(o) * s - p
        first = np.where(start < 0, -(start // d), 0)       # (the steps of d to get past 0)
        firsts.append(first.reshape((-1,) + (1,) * (len(out) - 1 - axis)))
    return np.ravel_multi_index(np.broadcast_arrays(*firsts), kernel)


def _window_argmax(win, kernel, first=0):
    """(values, indices) of the maximum of each window of `win` (..., *out, *kernel) by torch's
    loop (from the lowest value at element `first`, a greater value, or any NaN, replaces it:
    ties the first, NaNs the last), without copying the windows out: one pass over the
    windows' k-th elements for each k."""
    floating = win.dtype.kind == "f"
    shape = win.shape[:win.ndim - len(kernel)]
    best = np.full(shape, _lowest(win.dtype), win.dtype)
    index = np.array(np.broadcast_to(first, shape), np.int64)
    for k, offset in enumerate(itertools.product(*(range(n) for n in kernel))):
        v = win[(Ellipsis,) + offset]
        better = v > best
        if floating:
            better |= np.isnan(v)       # (torch's loop: each NaN replaces the maximum, the last wins)
        np.copyto(best, v, where=better)
        index[better] = k
    return best, index


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _max_pool_infer(types, attrs):
    x = types[0]
    nd = len(attrs["kernel_size"])
    out = pool_output_size(x.shape[-nd:], attrs["kernel_size"], attrs["stride"], attrs["padding"], attrs["dilation"],
                           attrs["ceil_mode"])
    shape = tuple(x.shape[:-nd]) + out
    return [TensorType(shape, x.dtype), TensorType(shape, int64)]


def _max_pool_ref(x, *, kernel_size, stride, padding, dilation, ceil_mode):
    nd = len(kernel_size)
    size = x.shape[x.ndim - nd:]
    out = pool_output_size(size, kernel_size, stride, padding, dilation, ceil_mode)
    if x.size >= LOOP_FROM and x.dtype.kind == "f" and loop_pays(x.size):
        # torch's loop in Numba (ir/reference_loops.py): the same values and indices, without
        # the NumPy passes over every window element
        from ..reference_loops import max_pool_planes
        lead = x.shape[:x.ndim - nd]
        planes = np.ascontiguousarray(x).reshape((-1,) + (1,) * (3 - nd) + size)
        values = np.empty(planes.shape[:1] + (1,) * (3 - nd) + tuple(out), x.dtype)
        indices = np.empty(values.shape, np.int64)
        pad3 = lambda t, fill: np.array((fill,) * (3 - nd) + tuple(t), np.int64)  # noqa: E731
        max_pool_planes(planes, pad3(kernel_size, 1), pad3(stride, 1), pad3(padding, 0), pad3(dilation, 1),
                        pad3(out, 1), values, indices)
        return values.reshape(lead + tuple(out)), indices.reshape(lead + tuple(out))
    win = _pool_windows(x, kernel_size, stride, padding, dilation, out, _lowest(x.dtype))
    values, j = _window_argmax(win, kernel_size, _first_inside(out, kernel_size, stride, padding, dilation))
    offsets = np.unravel_index(j, kernel_size)
    positions = []
    for axis, (o, s, p, d) in enumerate(zip(offsets, stride, padding, dilation)):
        place = np.arange(out[axis]).reshape((-1,) + (1,) * (nd - 1 - axis)) * s - p
        positions.append(place + o * d)
    return np.ascontiguousarray(values), _flat_index(positions, size)


def scatter_to_plane(e, g, indices, x, nd):
    """g added into zeros shaped as x at the flat plane positions `indices` (a max pool's
    gradient) as IR ops."""
    lead = tuple(x.shape[:len(x.shape) - nd])
    plane = int(np.prod(x.shape[len(lead):], dtype=np.int64))
    flat = e.reshape(e.zeros_like(x), lead + (plane,))
    cells = lead + (int(np.prod(g.shape[len(lead):], dtype=np.int64)),)
    gathered = e.op("scatter_add", flat, e.reshape(indices, cells), e.reshape(g, cells), axis=len(lead))
    return e.reshape(gathered, tuple(x.shape))


def _max_pool_vjp(e, x, y, g, a, n):
    nd = len(a["kernel_size"]) if "kernel_size" in a else len(a["output_size"])
    return [scatter_to_plane(e, g[0], y[1], x[0], nd) if n[0] else None]


register(OpDef("max_pool", OPAQUE, _max_pool_infer, _max_pool_ref, _max_pool_vjp, reference_only=True,
               nondiff_outputs=(1,),
               doc="max_pool(x; kernel_size, stride, padding, dilation, ceil_mode) -> (values, flat indices)",
               extra=dict(_WHY, node="MaxPool2DWithIndicesBackward0", **_SAVES_SELF_AND_INDICES)))


# ---------------------------------------------------------------- max unpooling

def _unpool_infer(types, attrs):
    x, indices = types
    if indices.dtype is not int64:
        raise TypeError("max_unpool: indices must be int64 (the nn layer checks torch's error first)")
    lead = tuple(x.shape[:len(x.shape) - len(attrs["output_size"])])
    return [TensorType(lead + tuple(attrs["output_size"]), x.dtype)]


def _unpool_flat(a: np.ndarray, nd: int) -> np.ndarray:
    """`a` with its last nd dims flattened into one."""
    lead = a.shape[:a.ndim - nd]
    return a.reshape(lead + (int(np.prod(a.shape[len(lead):], dtype=np.int64)),))


def _unpool_ref(x, indices, *, output_size):
    """Zeros of the output size, each plane's values written at their flat indices (a later
    duplicate wins, as torch's CPU loop writes them in order); torch's error for an index
    outside the plane."""
    nd = len(output_size)
    plane = int(np.prod(output_size, dtype=np.int64))
    flat_x, flat_i = _unpool_flat(x, nd), _unpool_flat(indices, nd)
    bad = (flat_i < 0) | (flat_i >= plane)
    if bad.any():
        # (torch names the invalid index one of its threads met last: which one varies from run
        # to run; here the first in memory order)
        raise RuntimeError(f"Found an invalid max index: {flat_i[bad].flat[0]} (output volumes are of size "
                           + "x".join(str(s) for s in output_size) + ")")
    out = np.zeros(flat_x.shape[:-1] + (plane,), x.dtype)
    np.put_along_axis(out, flat_i, flat_x, axis=-1)
    return out.reshape(flat_x.shape[:-1] + tuple(output_size))


def _unpool_vjp(e, x, y, g, a, n):
    """The values' gradient: the output's gradient gathered at the indices."""
    nd = len(a["output_size"])
    values, indices = x
    lead = tuple(values.shape[:len(values.shape) - nd])
    plane = int(np.prod(a["output_size"], dtype=np.int64))
    cells = int(np.prod(values.shape[len(lead):], dtype=np.int64))
    gathered = e.op("gather", e.reshape(g[0], lead + (plane,)), e.reshape(indices, lead + (cells,)), axis=len(lead))
    return [e.reshape(gathered, tuple(values.shape)) if n[0] else None, None]


register(OpDef("max_unpool", OPAQUE, _unpool_infer, _unpool_ref, _unpool_vjp, reference_only=True,
               nondiff_inputs=(1,),
               doc="max_unpool(x, indices; output_size) -> zeros of output_size with x at the flat indices",
               extra=dict(_WHY, node="MaxUnpool2DBackward0", torch_edges=(0,))))


# ---------------------------------------------------------------- average pooling

def _avg_divisor(size, kernel, stride, padding, out, count_include_pad, divisor_override):
    """torch's divide_factor of each output position, an array of shape `out`."""
    if divisor_override:
        return np.full(out, divisor_override, np.int64)
    divisor = np.ones((), np.int64)
    for i, k, s, p, o in zip(size, kernel, stride, padding, out):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, i + p)
        count = end - start if count_include_pad else np.minimum(end, i) - np.maximum(start, 0)
        divisor = divisor[..., None] * count
    return divisor


def _avg_infer(types, attrs):
    x = types[0]
    nd = len(attrs["kernel_size"])
    out = pool_output_size(x.shape[-nd:], attrs["kernel_size"], attrs["stride"], attrs["padding"], (1,) * nd,
                           attrs["ceil_mode"])
    return [TensorType(tuple(x.shape[:-nd]) + out, x.dtype)]


def _avg_ref(x, *, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    nd = len(kernel_size)
    size = x.shape[x.ndim - nd:]
    out = pool_output_size(size, kernel_size, stride, padding, (1,) * nd, ceil_mode)
    win = _pool_windows(x, kernel_size, stride, padding, (1,) * nd, out, 0)
    total = win.sum(axis=tuple(range(x.ndim, x.ndim + nd)))
    divisor = _avg_divisor(size, kernel_size, stride, padding, out, count_include_pad, divisor_override)
    if x.dtype.kind != "f":      # (torch divides integers truncating)
        return (np.sign(total) * (np.abs(total) // divisor)).astype(x.dtype)
    return (total / divisor.astype(x.dtype)).astype(x.dtype)


def _avg_vjp(e, x, y, g, a, n):
    return [e.op("avg_pool_backward", g[0], input_size=tuple(x[0].shape[len(x[0].shape) - len(a["kernel_size"]):]),
                 **a) if n[0] else None]


def _avg_backward_infer(types, attrs):
    g = types[0]
    nd = len(attrs["kernel_size"])
    return [TensorType(tuple(g.shape[:-nd]) + tuple(attrs["input_size"]), g.dtype)]


def _without_input_size(attrs: dict) -> dict:
    return {k: v for k, v in attrs.items() if k != "input_size"}


def _forward_of_adjoint(op: str):
    """The VJP of `op`'s gradient op (`op`'s adjoint, a linear map of g): `op` itself, with the
    gradient op's attributes but its `input_size`."""
    def vjp(e, x, y, g, a, n):
        return [e.op(op, g[0], **_without_input_size(a)) if n[0] else None]
    return vjp


def _avg_backward_ref(g, *, input_size, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    nd = len(kernel_size)
    out = g.shape[g.ndim - nd:]
    divisor = _avg_divisor(input_size, kernel_size, stride, padding, out, count_include_pad, divisor_override)
    share = g / divisor.astype(g.dtype)
    cols = np.broadcast_to(share.reshape(share.shape + (1,) * nd), share.shape + tuple(kernel_size))
    return np.ascontiguousarray(col2im(cols, tuple(input_size), kernel_size, stride, padding, (1,) * nd))


_avg_backward_vjp = _forward_of_adjoint("avg_pool")


register(OpDef("avg_pool", OPAQUE, _avg_infer, _avg_ref, _avg_vjp, reference_only=True,
               doc="avg_pool(x; kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)",
               extra=dict(_WHY, node="AvgPool2DBackward0", **_SAVES_SELF)))
register(OpDef("avg_pool_backward", OPAQUE, _avg_backward_infer, _avg_backward_ref, _avg_backward_vjp,
               reference_only=True, doc="avg_pool_backward(g; input_size, ...): avg_pool's gradient (its adjoint)",
               extra=dict(_WHY, node="AvgPool2DBackwardBackward0")))


# ---------------------------------------------------------------- adaptive pooling

def _adaptive_table(size: int, out: int):
    """torch's adaptive windows along one dim: for each output position the input positions
    (padded to the longest window by repeating its last position), which of them count, and
    the window's length."""
    i = np.arange(out)
    start = i * size // out
    end = ((i + 1) * size + out - 1) // out
    longest = int((end - start).max()) if out else 0
    reach = start[:, None] + np.arange(longest)
    return np.minimum(reach, end[:, None] - 1), reach < end[:, None], end - start


def _adaptive_gather(x, output_size):
    """x's adaptive windows (..., *out, *longest) and their tables."""
    nd = len(output_size)
    size = x.shape[x.ndim - nd:]
    tables = [_adaptive_table(i, o) for i, o in zip(size, output_size)]
    index = []
    for axis, (idx, _, _) in enumerate(tables):
        shape = [1] * (2 * nd)
        shape[axis], shape[nd + axis] = idx.shape
        index.append(idx.reshape(shape))
    return x[(Ellipsis,) + tuple(index)], tables


def _adaptive_infer(types, attrs):
    x = types[0]
    nd = len(attrs["output_size"])
    return [TensorType(tuple(x.shape[:-nd]) + tuple(attrs["output_size"]), x.dtype)]


def _adaptive_max_infer(types, attrs):
    out = _adaptive_infer(types, attrs)[0]
    return [out, TensorType(out.shape, int64)]


def _adaptive_max_ref(x, *, output_size):
    nd = len(output_size)
    size = x.shape[x.ndim - nd:]
    if 0 in output_size:
        # an output size of 0 is torch's empty result (no window to take the argmax of)
        shape = x.shape[:x.ndim - nd] + tuple(output_size)
        return np.empty(shape, x.dtype), np.empty(shape, np.int64)
    gathered, tables = _adaptive_gather(x, output_size)
    values, j = _argmax_last(gathered.reshape(gathered.shape[:x.ndim] + (int(np.prod(gathered.shape[x.ndim:])),)))
    offsets = np.unravel_index(j, tuple(t[0].shape[1] for t in tables))
    positions = []
    for axis, (o, (idx, _, _)) in enumerate(zip(offsets, tables)):
        rows = np.arange(idx.shape[0]).reshape((-1,) + (1,) * (nd - 1 - axis))
        positions.append(idx[rows, o])
    return np.ascontiguousarray(values), _flat_index(positions, size)


def _adaptive_avg_ref(x, *, output_size):
    nd = len(output_size)
    gathered, tables = _adaptive_gather(x, output_size)
    # (masks and counts combined by outer products over the dims)
    count = np.ones((), np.int64)
    mask = np.ones(tuple(t[1].shape[0] for t in tables) + tuple(t[1].shape[1] for t in tables), bool)
    for axis, (_, m, c) in enumerate(tables):
        shape = [1] * (2 * nd)
        shape[axis], shape[nd + axis] = m.shape
        mask = mask & m.reshape(shape)
        count = count[..., None] * c
    total = np.where(mask, gathered, x.dtype.type(0)).sum(axis=tuple(range(x.ndim, x.ndim + nd)))
    return (total / count.astype(x.dtype)).astype(x.dtype)


def _adaptive_matrix(size: int, out: int, dtype) -> np.ndarray:
    """(out, size): each row the weights 1/len over its window."""
    idx, mask, count = _adaptive_table(size, out)
    m = np.zeros((out, size), dtype)
    rows = np.repeat(np.arange(out), idx.shape[1])
    np.add.at(m, (rows, idx.reshape(-1)), (mask / count[:, None]).reshape(-1).astype(dtype))
    return m


def _along(x, axis, m):
    """x's dim `axis` mapped by the matrix m (new, old) (x @ m.T along that dim)."""
    return np.moveaxis(np.matmul(np.moveaxis(x, axis, -1), m.T), -1, axis)


def _adaptive_avg_vjp(e, x, y, g, a, n):
    nd = len(a["output_size"])
    return [e.op("adaptive_avg_pool_backward", g[0], input_size=tuple(x[0].shape[len(x[0].shape) - nd:]))
            if n[0] else None]


def _adaptive_backward_infer(types, attrs):
    g = types[0]
    nd = len(attrs["input_size"])
    return [TensorType(tuple(g.shape[:-nd]) + tuple(attrs["input_size"]), g.dtype)]


def _adaptive_backward_ref(g, *, input_size):
    nd = len(input_size)
    for axis, (i, o) in enumerate(zip(input_size, g.shape[g.ndim - nd:])):
        g = _along(g, g.ndim - nd + axis, _adaptive_matrix(i, o, g.dtype).T)
    return np.ascontiguousarray(g)


def _adaptive_backward_vjp(e, x, y, g, a, n):
    nd = len(a["input_size"])
    return [e.op("adaptive_avg_pool", g[0], output_size=tuple(x[0].shape[len(x[0].shape) - nd:])) if n[0] else None]


register(OpDef("adaptive_max_pool", OPAQUE, _adaptive_max_infer, _adaptive_max_ref, _max_pool_vjp,
               reference_only=True, nondiff_outputs=(1,),
               doc="adaptive_max_pool(x; output_size) -> (values, flat indices)",
               extra=dict(_WHY, node="AdaptiveMaxPool2DBackward0", **_SAVES_SELF_AND_INDICES)))
register(OpDef("adaptive_avg_pool", OPAQUE, _adaptive_infer, _adaptive_avg_ref, _adaptive_avg_vjp,
               reference_only=True, doc="adaptive_avg_pool(x; output_size)",
               extra=dict(_WHY, node="AdaptiveAvgPool2DBackward0", **_SAVES_SELF)))
register(OpDef("adaptive_avg_pool_backward", OPAQUE, _adaptive_backward_infer, _adaptive_backward_ref,
               _adaptive_backward_vjp, reference_only=True,
               doc="adaptive_avg_pool_backward(g; input_size): adaptive_avg_pool's gradient (its adjoint)",
               extra=dict(_WHY, node="AdaptiveAvgPool2DBackwardBackward0")))


# ---------------------------------------------------------------- padding

def _pad_infer(types, attrs):
    x = types[0]
    nd = len(attrs["pads"])
    lead = len(x.shape) - nd
    out = tuple(s + b + a for s, (b, a) in zip(x.shape[lead:], attrs["pads"]))
    return [TensorType(tuple(x.shape[:lead]) + out, x.dtype)]


_NP_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _pad_ref(x, *, pads, mode, value):
    lead = x.ndim - len(pads)
    crop = tuple(slice(max(-b, 0), s - max(-a, 0)) for s, (b, a) in zip(x.shape[lead:], pads))
    x = x[(Ellipsis,) + crop]
    widths = [(0, 0)] * lead + [(max(b, 0), max(a, 0)) for b, a in pads]
    if not widths:
        return x.copy()     # (a 0-d tensor and no pads: np.pad refuses an empty pad_width)
    if mode == "constant":
        return np.pad(x, widths, constant_values=x.dtype.type(value))
    return np.pad(x, widths, mode=_NP_MODES[mode])


def _pad_vjp(e, x, y, g, a, n):
    if not n[0]:
        return [None]
    if a["mode"] == "constant":
        return [e.op("pad_nd", g[0], pads=tuple((-b, -f) for b, f in a["pads"]), mode="constant", value=0)]
    return [e.op("pad_nd_backward", g[0], input_size=tuple(x[0].shape[len(x[0].shape) - len(a["pads"]):]), **a)]


def _pad_backward_infer(types, attrs):
    g = types[0]
    nd = len(attrs["pads"])
    return [TensorType(tuple(g.shape[:-nd]) + tuple(attrs["input_size"]), g.dtype)]


def _pad_backward_ref(g, *, input_size, pads, mode, value):
    nd = len(pads)
    for axis, (size, (b, a)) in enumerate(zip(input_size, pads)):
        g = np.moveaxis(g, g.ndim - nd + axis, -1)
        kept = size - max(-b, 0) - max(-a, 0)
        b, a = max(b, 0), max(a, 0)
        x = g[..., b:b + kept].copy()
        before, after = g[..., :b], g[..., b + kept:]
        if mode == "reflect":
            x[..., 1:b + 1] += before[..., ::-1]
            x[..., kept - 1 - a:kept - 1] += after[..., ::-1]
        elif mode == "replicate":
            x[..., 0] += before.sum(-1)
            x[..., kept - 1] += after.sum(-1)
        else:       # circular
            x[..., kept - b:] += before
            x[..., :a] += after
        b0, a0 = pads[axis]
        x = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(max(-b0, 0), max(-a0, 0))])
        g = np.moveaxis(x, -1, g.ndim - nd + axis)
    return np.ascontiguousarray(g)


_pad_backward_vjp = _forward_of_adjoint("pad_nd")


register(OpDef("pad_nd", OPAQUE, _pad_infer, _pad_ref, _pad_vjp, reference_only=True,
               doc="pad_nd(x; pads ((before, after) per trailing dim), mode, value): torch's F.pad",
               extra=dict(_WHY, node="ConstantPadNdBackward0")))
register(OpDef("pad_nd_backward", OPAQUE, _pad_backward_infer, _pad_backward_ref, _pad_backward_vjp,
               reference_only=True, doc="pad_nd_backward(g; input_size, pads, mode, value): pad's gradient (its adjoint)",
               extra=dict(_WHY, node="ReflectionPad2DBackwardBackward0")))


# ---------------------------------------------------------------- resampling

def _source_scale(size, out, align_corners, scale, dtype):
    """torch's area_pixel_compute_scale (compute_scales_value without align_corners)."""
    if align_corners:
        return dtype.type((size - 1) / (out - 1)) if out > 1 else dtype.type(0)
    return dtype.type(1.0 / scale) if scale is not None and scale > 0 else dtype.type(size) / dtype.type(out)


def _resample_table(mode, size, out, scale, align_corners, dtype):
    """Per output position: (index0, index1, weight0, weight1); nearest modes weigh index0 only."""
    dst = np.arange(out).astype(dtype)
    if mode in ("nearest", "nearest-exact"):
        s = _source_scale(size, out, False, scale, dtype)
        if mode == "nearest" and out == size:
            i0 = np.arange(out)
        elif mode == "nearest" and out == 2 * size:
            i0 = np.arange(out) >> 1
        else:
            shifted = dst if mode == "nearest" else dst + dtype.type(0.5)
            i0 = np.minimum(np.floor(shifted * s).astype(np.int64), size - 1)
        return i0, i0, np.ones(out, dtype), np.zeros(out, dtype)
    s = _source_scale(size, out, align_corners, scale, dtype)
    if align_corners:
        src = s * dst
    else:
        src = np.maximum(s * (dst + dtype.type(0.5)) - dtype.type(0.5), dtype.type(0))
    i0 = np.minimum(src.astype(np.int64), size - 1)
    i1 = i0 + (i0 < size - 1)
    w1 = np.clip(src - i0.astype(dtype), 0, 1).astype(dtype)
    return i0, i1, (dtype.type(1) - w1).astype(dtype), w1


def _tables(mode, in_size, out_size, scales, align_corners, dtype):
    return [_resample_table(mode, i, o, None if scales is None else scales[k], align_corners, dtype)
            for k, (i, o) in enumerate(zip(in_size, out_size))]


def _upsample_infer(types, attrs):
    x = types[0]
    nd = len(attrs["size"])
    return [TensorType(tuple(x.shape[:-nd]) + tuple(attrs["size"]), x.dtype)]


def _upsample_ref(x, *, mode, size, scales, align_corners):
    nd = len(size)
    tables = _tables(mode, x.shape[x.ndim - nd:], size, scales, align_corners, x.dtype)
    for axis in reversed(range(nd)):
        i0, i1, w0, w1 = tables[axis]
        ax = x.ndim - nd + axis
        shape = (-1,) + (1,) * (nd - 1 - axis)
        if mode in ("nearest", "nearest-exact"):
            x = np.take(x, i0, axis=ax)
        else:
            x = np.take(x, i0, axis=ax) * w0.reshape(shape) + np.take(x, i1, axis=ax) * w1.reshape(shape)
    return np.ascontiguousarray(x)


def _upsample_vjp(e, x, y, g, a, n):
    nd = len(a["size"])
    attrs = {k: v for k, v in a.items() if k != "size"}
    return [e.op("upsample_backward", g[0], input_size=tuple(x[0].shape[len(x[0].shape) - nd:]), **attrs)
            if n[0] else None]


def _upsample_backward_infer(types, attrs):
    g = types[0]
    nd = len(attrs["input_size"])
    return [TensorType(tuple(g.shape[:-nd]) + tuple(attrs["input_size"]), g.dtype)]


def _upsample_backward_ref(g, *, input_size, mode, scales, align_corners):
    nd = len(input_size)
    tables = _tables(mode, input_size, g.shape[g.ndim - nd:], scales, align_corners, g.dtype)
    for axis, (i, (i0, i1, w0, w1)) in enumerate(zip(input_size, tables)):
        m = np.zeros((len(i0), i), g.dtype)
        rows = np.arange(len(i0))
        np.add.at(m, (rows, i0), w0)
        np.add.at(m, (rows, i1), w1)
        g = _along(g, g.ndim - nd + axis, m.T)
    return np.ascontiguousarray(g)


def _upsample_backward_vjp(e, x, y, g, a, n):
    nd = len(a["input_size"])
    attrs = _without_input_size(a)
    return [e.op("upsample", g[0], size=tuple(x[0].shape[len(x[0].shape) - nd:]), **attrs) if n[0] else None]


register(OpDef("upsample", OPAQUE, _upsample_infer, _upsample_ref, _upsample_vjp, reference_only=True,
               doc="upsample(x; mode, size, scales, align_corners): torch's upsample_{nearest,linear,bilinear}",
               extra=dict(_WHY, node="UpsampleNearest2DBackward0")))
register(OpDef("upsample_backward", OPAQUE, _upsample_backward_infer, _upsample_backward_ref,
               _upsample_backward_vjp, reference_only=True,
               doc="upsample_backward(g; input_size, mode, scales, align_corners): upsample's gradient (its adjoint)",
               extra=dict(_WHY, node="UpsampleNearest2DBackwardBackward0")))


# ---------------------------------------------------------------- pixel shuffle

def _shuffle_infer(inverse):
    def infer(types, attrs):
        x = types[0]
        r = attrs["factor"]
        *lead, c, h, w = x.shape
        shape = (c * r * r, h // r, w // r) if inverse else (c // (r * r), h * r, w * r)
        return [TensorType(tuple(lead) + shape, x.dtype)]
    return infer


def _shuffle_ref(inverse):
    def ref(x, *, factor):
        r = factor
        *lead, c, h, w = x.shape
        n = len(lead)
        if inverse:
            y = x.reshape(tuple(lead) + (c, h // r, r, w // r, r))
            y = y.transpose(tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3))
            return np.ascontiguousarray(y).reshape(tuple(lead) + (c * r * r, h // r, w // r))
        y = x.reshape(tuple(lead) + (c // (r * r), r, r, h, w))
        y = y.transpose(tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2))
        return np.ascontiguousarray(y).reshape(tuple(lead) + (c // (r * r), h * r, w * r))
    return ref


for _name, _inverse, _node in (("pixel_shuffle", False, "PixelShuffleBackward0"),
                               ("pixel_unshuffle", True, "PixelUnshuffleBackward0")):
    register(OpDef(_name, OPAQUE, _shuffle_infer(_inverse), _shuffle_ref(_inverse),
                   (lambda other: lambda e, x, y, g, a, n: [e.op(other, g[0], **a) if n[0] else None])(
                       "pixel_unshuffle" if not _inverse else "pixel_shuffle"),
                   reference_only=True, doc=f"{_name}(x; factor): torch's F.{_name}", extra=dict(_WHY, node=_node)))


# ---------------------------------------------------------------- fractional max pooling

# (the sample of each spatial dim within a plane's samples: torch's 2-d kernel reads W's first,
# then H's; its 3-d kernel T's, H's, W's)
_FRACTIONAL_SAMPLE_OF_DIM = {2: (1, 0), 3: (0, 1, 2)}


def fractional_intervals(u: np.ndarray, size: int, out: int, k: int) -> np.ndarray:
    """torch's generate_intervals for samples `u` (any shape): the window starts (u.shape +
    (out,)), computed in u's float dtype as torch computes them in the input's scalar type:
    alpha = (size - k) / (out - 1); start i = int((i + u) * alpha) - int(u * alpha),
    truncated toward zero as C++'s cast; the last start size - k."""
    starts = np.zeros(u.shape + (out,), np.int64)
    dtype = u.dtype.type
    if out > 1:
        alpha = dtype(size - k) / dtype(out - 1)
        i = np.arange(out - 1).astype(u.dtype)
        with np.errstate(invalid="ignore", over="ignore"):
            starts[..., :-1] = (np.trunc((i + u[..., None]) * alpha).astype(np.int64)
                                - np.trunc(u * alpha).astype(np.int64)[..., None])
    if out > 0:
        starts[..., -1] = size - k
    return starts


def _fractional_infer(types, attrs):
    x = types[0]
    nd = len(attrs["kernel_size"])
    shape = tuple(x.shape[:len(x.shape) - nd]) + tuple(attrs["output_size"])
    return [TensorType(shape, x.dtype), TensorType(shape, int64)]


def _fractional_ref(x, samples, *, kernel_size, output_size):
    """Per plane, the windows torch's samples place; in each the largest value and its flat
    position in the plane: ties the first, a NaN the last NaN (torch's `val > max || isnan(val)`),
    an empty window (a kernel size under 1) -inf at the window's start."""
    nd = len(kernel_size)
    batched = x.ndim == nd + 2
    xb = x if batched else x[None]
    n, c = xb.shape[0], xb.shape[1]
    size = xb.shape[2:]
    u = samples[:n].astype(x.dtype, copy=False)
    order = _FRACTIONAL_SAMPLE_OF_DIM[nd]
    starts = [fractional_intervals(u[:, :, order[d]], size[d], output_size[d], kernel_size[d]) for d in range(nd)]
    out_shape = (n, c) + tuple(output_size)
    window = tuple(max(k, 0) for k in kernel_size)
    count = int(np.prod(window, dtype=np.int64))
    if count == 0 or 0 in out_shape:
        # (an empty window keeps torch's initial -inf and the window's start)
        grids = [s.reshape((n, c) + tuple(o if a == d else 1 for a, o in enumerate(output_size)))
                 for d, s in enumerate(starts)]
        flat = np.broadcast_to(_flat_index(grids, size), out_shape)
        values = np.full(out_shape, -np.inf, x.dtype)
    else:
        positions = []
        for d, (s, k) in enumerate(zip(starts, window)):
            along = tuple(o if a == d else 1 for a, o in enumerate(output_size))
            pos = s.reshape((n, c) + along + (1,) * nd) + \
                np.arange(k).reshape((1,) * (2 + nd) + tuple(k if a == d else 1 for a in range(nd)))
            if pos.size and (pos.min() < 0 or pos.max() >= size[d]):
                raise RuntimeError(f"fractional_max_pool{nd}d: a window of the random samples lies outside the input")
            positions.append(pos)
        lead = (np.arange(n).reshape((n,) + (1,) * (1 + 2 * nd)), np.arange(c).reshape((1, c) + (1,) * (2 * nd)))
        win = xb[lead + tuple(positions)].reshape(out_shape + (count,))
        nan = np.isnan(win) if x.dtype.kind == "f" else np.zeros(win.shape, bool)
        last_nan = count - 1 - np.argmax(nan[..., ::-1], axis=-1)
        j = np.where(nan.any(-1), last_nan, np.argmax(win, axis=-1))
        values = np.take_along_axis(win, j[..., None], axis=-1)[..., 0]
        picked = [np.take_along_axis(np.broadcast_to(p, out_shape + window).reshape(out_shape + (count,)),
                                     j[..., None], axis=-1)[..., 0] for p in positions]
        flat = _flat_index(picked, size)
    if not batched:
        values, flat = values[0], flat[0]
    return np.ascontiguousarray(values), np.ascontiguousarray(flat, dtype=np.int64)


def _fractional_vjp(e, x, y, g, a, n):
    """The input's gradient: g added at the argmax positions (torch's fractional backward);
    none for the samples."""
    return [scatter_to_plane(e, g[0], y[1], x[0], len(a["kernel_size"])) if n[0] else None, None]


register(OpDef("fractional_max_pool", OPAQUE, _fractional_infer, _fractional_ref, _fractional_vjp,
               reference_only=True, nondiff_inputs=(1,), nondiff_outputs=(1,),
               doc="fractional_max_pool(x, samples; kernel_size, output_size) -> (values, flat indices): "
                   "torch's fractional_max_pool{2,3}d with its _random_samples",
               extra=dict(_WHY, node="FractionalMaxPool2DBackward0", torch_edges=(0,), **_SAVES_SELF_AND_INDICES)))
