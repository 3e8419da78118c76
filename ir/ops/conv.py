"""Convolution (torch's at::convolution, node ConvolutionBackward0) and im2col / col2im.

`convolution(x, w, b; stride, padding, dilation, groups, transposed, output_padding)` and
`convolution_nobias(x, w; ...)` (no bias: next_functions lists the bias as (None, 0), as
torch's) over an input (N, C, *spatial) of 1 to 3 spatial dims, weight (O, C/groups, *k)
(transposed: (C, O/groups, *k)). The reference is im2col (a strided window view) and one
batched BLAS product; the transposed convolution is the product's transpose and col2im, a
loop over the kernel's offsets adding shifted slices.

The VJPs are IR ops: `conv_backward_input(g, w; input_size, ...)` (the transposed
convolution of g) and `conv_backward_weight(g, x; kernel_size, ...)` (im2col of x times g),
each the other's adjoint, so every derivative differentiates again (torch records
ConvolutionBackwardBackward0 for a create_graph gradient; so do they). A bias's gradient is
g summed over all but the channel dim.

`im2col(x; kernel_size, dilation, padding, stride)` and `col2im(cols; output_size, ...)` are
torch's F.unfold and F.fold (Im2ColBackward0, Col2ImBackward0), each the other's VJP.
All run by their NumPy references in compiled programs (no kernel rule).
"""
from __future__ import annotations

import itertools

import numpy as np

from ..types import TensorType
from .registry import OPAQUE, OpDef, register


def _size_text(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def conv_output_size(size, kernel, stride, padding, dilation, output_padding=None, transposed=False) -> tuple:
    """The spatial sizes of a convolution's result (torch's conv_output_size / conv_input_size)."""
    if transposed:
        return tuple((i - 1) * s - 2 * p + d * (k - 1) + op + 1
                     for i, k, s, p, d, op in zip(size, kernel, stride, padding, dilation, output_padding))
    return tuple((i + 2 * p - d * (k - 1) - 1) // s + 1 for i, k, s, p, d in zip(size, kernel, stride, padding, dilation))


def _check_shapes(x, w, b, a) -> None:
    """torch's at::convolution shape checks (check_shape_forward), with its texts."""
    groups = a["groups"]
    k = w.shape[2:]
    if w.shape[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got "
                           f"weight of size {_size_text(w.shape)} instead")
    if w.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got "
                           f"weight of size [{_size_text(w.shape)}] instead")
    if a["transposed"]:
        if x.shape[1] != w.shape[0]:
            raise RuntimeError(f"Given transposed=1, weight of size {_size_text(w.shape)}, expected input"
                               f"{_size_text(x.shape)} to have {w.shape[0]} channels, but got {x.shape[1]} channels "
                               "instead")
        out_channels = w.shape[1] * groups
    else:
        if x.shape[1] != w.shape[1] * groups:
            raise RuntimeError(f"Given groups={groups}, weight of size {_size_text(w.shape)}, expected input"
                               f"{_size_text(x.shape)} to have {w.shape[1] * groups} channels, but got {x.shape[1]} "
                               "channels instead")
        out_channels = w.shape[0]
    if b is not None and (len(b.shape) != 1 or b.shape[0] != out_channels):
        raise RuntimeError(f"Given {'transposed=1, ' if a['transposed'] else ''}weight of size {_size_text(w.shape)}, expected bias to be 1-dimensional with "
                           f"{out_channels} elements, but got bias of size {_size_text(b.shape)} instead")
    if not a["transposed"]:
        padded = tuple(i + 2 * p for i, p in zip(x.shape[2:], a["padding"]))
        effective = tuple(d * (kk - 1) + 1 for kk, d in zip(k, a["dilation"]))
        if any(pi < ki for pi, ki in zip(padded, effective)):
            raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel "
                               f"size: ({' x '.join(map(str, effective))}). Kernel size can't be greater than actual "
                               "input size")


def _conv_infer(types, attrs):
    x, w = types[0], types[1]
    _check_shapes(x, w, types[2] if len(types) > 2 else None, attrs)
    k = w.shape[2:]
    spatial = conv_output_size(x.shape[2:], k, attrs["stride"], attrs["padding"], attrs["dilation"],
                               attrs["output_padding"], attrs["transposed"])
    channels = w.shape[1] * attrs["groups"] if attrs["transposed"] else w.shape[0]
    return [TensorType((x.shape[0], channels) + spatial, x.dtype)]


# ---------------------------------------------------------------- NumPy helpers

def windows(x, kernel, stride, padding, dilation, pad_value=0):
    """The sliding windows of x (N, C, *spatial) padded by `padding` (both sides): a strided
    view of shape (N, C, *out, *kernel), each window's elements `dilation` apart."""
    nd = len(kernel)
    if any(padding):
        x = np.pad(x, [(0, 0)] * (x.ndim - nd) + [(p, p) for p in padding], constant_values=pad_value)
    span = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    axes = tuple(range(x.ndim - nd, x.ndim))
    view = np.lib.stride_tricks.sliding_window_view(x, span, axis=axes)
    lead = (slice(None),) * (x.ndim - nd)
    return view[lead + tuple(slice(None, None, s) for s in stride) + tuple(slice(None, None, d) for d in dilation)]


def col2im(cols, size, kernel, stride, padding, dilation):
    """The adjoint of `windows`: cols (N, C, *out, *kernel) added into zeros (N, C, *size)
    at the places each window read (a loop over the kernel's offsets)."""
    nd = len(kernel)
    lead = cols.shape[:cols.ndim - 2 * nd]
    out = cols.shape[len(lead):len(lead) + nd]
    # (as far as the last window reaches: past the padding where a pool's ceil_mode adds a window)
    padded = np.zeros(lead + tuple(max(i + 2 * p, d * (k - 1) + s * (n - 1) + 1)
                                   for i, p, d, k, s, n in zip(size, padding, dilation, kernel, stride, out)), cols.dtype)
    for offset in itertools.product(*(range(k) for k in kernel)):
        place = tuple(slice(o * d, o * d + s * (n - 1) + 1, s) for o, d, s, n in zip(offset, dilation, stride, out))
        padded[(Ellipsis,) + place] += cols[(Ellipsis,) + offset]
    return padded[(Ellipsis,) + tuple(slice(p, p + i) for p, i in zip(padding, size))]


def _grouped_cols(x, kernel, stride, padding, dilation, groups, out=None):
    """im2col of x grouped for one product per group: (G, C/G * prod(kernel), N * L), rows in
    the weight's (C/G, *kernel) order, columns batch-major; and the windows' spatial sizes.
    `out` crops the windows to those sizes."""
    nd = len(kernel)
    win = windows(x, kernel, stride, padding, dilation)
    if out is not None:
        win = win[(slice(None), slice(None)) + tuple(slice(0, o) for o in out)]
    n, c = x.shape[:2]
    spatial = win.shape[2:2 + nd]
    win = win.reshape((n, groups, c // groups) + spatial + tuple(kernel))
    # (G, C/G, *kernel, N, *spatial): whole rows of the windows are copied at once
    order = (1, 2) + tuple(range(3 + nd, 3 + 2 * nd)) + (0,) + tuple(range(3, 3 + nd))
    k_rows = (c // groups) * int(np.prod(kernel, dtype=np.int64))
    columns = n * int(np.prod(spatial, dtype=np.int64))
    return np.ascontiguousarray(win.transpose(order)).reshape(groups, k_rows, columns), spatial


def _per_group(g, groups):
    """g (N, O, *spatial) as (G, O/G, N * L), for one product per group."""
    n, o = g.shape[:2]
    cells = int(np.prod(g.shape[2:], dtype=np.int64))
    gm = g.reshape(n, groups, o // groups, cells).transpose(1, 2, 0, 3)
    return np.ascontiguousarray(gm).reshape(groups, o // groups, n * cells)


def _conv_forward(x, w, stride, padding, dilation, groups):
    kernel = w.shape[2:]
    n, o = x.shape[0], w.shape[0]
    cols, spatial = _grouped_cols(x, kernel, stride, padding, dilation, groups)
    y = np.matmul(w.reshape(groups, o // groups, cols.shape[1]), cols)        # (G, O/G, N * L)
    y = y.reshape(groups, o // groups, n, int(np.prod(spatial, dtype=np.int64))).transpose(2, 0, 1, 3)
    return np.ascontiguousarray(y).reshape((n, o) + spatial)


def _conv_transposed(g, w, size, stride, padding, dilation, groups):
    """The adjoint of the convolution by w: g (N, O, *out) to (N, C, *size)."""
    kernel = w.shape[2:]
    n, o = g.shape[:2]
    out = g.shape[2:]
    nd = len(kernel)
    wm = w.reshape(groups, o // groups, int(np.prod(w.shape[1:], dtype=np.int64)))
    cols = np.matmul(wm.transpose(0, 2, 1), _per_group(g, groups))       # (G, C/G * K, N * L)
    cols = cols.reshape((groups * w.shape[1],) + tuple(kernel) + (n,) + tuple(out))
    # (a view (N, C, *out, *kernel) of it: col2im reads one kernel offset at a time)
    cols = cols.transpose((1 + nd, 0) + tuple(range(2 + nd, 2 + 2 * nd)) + tuple(range(1, 1 + nd)))
    return col2im(cols, size, kernel, stride, padding, dilation)


def _conv_weight_grad(g, x, kernel, stride, padding, dilation, groups):
    """The weight's gradient: per group, g times im2col(x) transposed, over the batch and the
    positions together (one product)."""
    o = g.shape[1]
    cols, _ = _grouped_cols(x, kernel, stride, padding, dilation, groups, out=g.shape[2:])
    gw = np.matmul(_per_group(g, groups), cols.transpose(0, 2, 1))
    return gw.reshape((o, x.shape[1] // groups) + tuple(kernel))


def _conv_ref(x, w, b=None, *, stride, padding, dilation, groups, transposed, output_padding):
    if transposed:
        size = conv_output_size(x.shape[2:], w.shape[2:], stride, padding, dilation, output_padding, True)
        y = _conv_transposed(x, w, size, stride, padding, dilation, groups)
    else:
        y = _conv_forward(x, w, stride, padding, dilation, groups)
    if b is not None:
        y = y + b.reshape((1, -1) + (1,) * (y.ndim - 2))
    return np.ascontiguousarray(y)


def _conv_attrs(a) -> dict:
    return {"stride": a["stride"], "padding": a["padding"], "dilation": a["dilation"], "groups": a["groups"]}


def _plain_conv(e, x, w, a, like):
    """The (untransposed, unbiased) convolution of x by w: an IR op, cropped to the spatial
    sizes of `like` (a transposed convolution's output_padding may reach past its windows)."""
    y = e.op("convolution_nobias", x, w, transposed=False, output_padding=(0,) * len(a["stride"]), **_conv_attrs(a))
    extra = tuple(have - want for have, want in zip(y.shape[2:], like.shape[2:]))
    if any(extra):
        y = e.op("pad_nd", y, pads=tuple((0, -d) for d in extra), mode="constant", value=0)
    return y


def _conv_vjp(e, x, y, g, a, n):
    g = g[0]
    inp, w = x[0], x[1]
    grads = [None] * len(x)
    if a["transposed"]:
        if n[0]:
            grads[0] = _plain_conv(e, g, w, a, inp)
        if n[1]:
            grads[1] = e.op("conv_backward_weight", inp, g, kernel_size=tuple(w.shape[2:]), **_conv_attrs(a))
    else:
        if n[0]:
            grads[0] = e.op("conv_backward_input", g, w, input_size=tuple(inp.shape[2:]), **_conv_attrs(a))
        if n[1]:
            grads[1] = e.op("conv_backward_weight", g, inp, kernel_size=tuple(w.shape[2:]), **_conv_attrs(a))
    if len(x) > 2 and n[2]:
        grads[2] = e.sum(g, (0,) + tuple(range(2, len(g.shape))))
    return grads


def _backward_input_infer(types, attrs):
    g, w = types
    return [TensorType((g.shape[0], w.shape[1] * attrs["groups"]) + tuple(attrs["input_size"]), g.dtype)]


def _backward_input_ref(g, w, *, input_size, stride, padding, dilation, groups):
    return np.ascontiguousarray(_conv_transposed(g, w, input_size, stride, padding, dilation, groups))


def _backward_input_vjp(e, x, y, g, a, n):
    # conv_backward_input(g, w) is the transposed convolution of g by w: its adjoint in g is
    # the convolution by w, in w the weight gradient of that convolution
    grad_out, w = x
    plain = dict(a, transposed=False)
    return [_plain_conv(e, g[0], w, plain, grad_out) if n[0] else None,
            e.op("conv_backward_weight", grad_out, g[0], kernel_size=tuple(w.shape[2:]), **_conv_attrs(a))
            if n[1] else None]


def _backward_weight_infer(types, attrs):
    g, x = types
    return [TensorType((g.shape[1], x.shape[1] // attrs["groups"]) + tuple(attrs["kernel_size"]), g.dtype)]


def _backward_weight_ref(g, x, *, kernel_size, stride, padding, dilation, groups):
    return _conv_weight_grad(g, x, kernel_size, stride, padding, dilation, groups)


def _backward_weight_vjp(e, x, y, g, a, n):
    grad_out, inp = x
    return [_plain_conv(e, inp, g[0], a, grad_out) if n[0] else None,
            e.op("conv_backward_input", grad_out, g[0], input_size=tuple(inp.shape[2:]), **_conv_attrs(a))
            if n[1] else None]


_WHY = {"reference_why": "im2col and a BLAS product: only NumPy runs it"}
register(OpDef("convolution", OPAQUE, _conv_infer, _conv_ref, _conv_vjp, reference_only=True,
               doc="convolution(x, w, b; stride, padding, dilation, groups, transposed, output_padding): torch's "
                   "at::convolution",
               extra=dict(_WHY, node="ConvolutionBackward0", row_major_result=True)))
register(OpDef("convolution_nobias", OPAQUE, _conv_infer, _conv_ref, _conv_vjp, reference_only=True,
               doc="convolution_nobias(x, w; ...): at::convolution without a bias",
               extra=dict(_WHY, node="ConvolutionBackward0", row_major_result=True, torch_edges=(0, 1, None))))
register(OpDef("conv_backward_input", OPAQUE, _backward_input_infer, _backward_input_ref, _backward_input_vjp,
               reference_only=True,
               doc="conv_backward_input(g, w; input_size, stride, padding, dilation, groups): the input's gradient "
                   "of a convolution (its transpose)",
               extra=dict(_WHY, node="ConvolutionBackwardBackward0", row_major_result=True)))
register(OpDef("conv_backward_weight", OPAQUE, _backward_weight_infer, _backward_weight_ref, _backward_weight_vjp,
               reference_only=True,
               doc="conv_backward_weight(g, x; kernel_size, stride, padding, dilation, groups): the weight's "
                   "gradient of a convolution",
               extra=dict(_WHY, node="ConvolutionBackwardBackward0", row_major_result=True)))


# ---------------------------------------------------------------- im2col / col2im (F.unfold, F.fold)

def _im2col_infer(types, attrs):
    x = types[0]
    out = conv_output_size(x.shape[-2:], attrs["kernel_size"], attrs["stride"], attrs["padding"], attrs["dilation"])
    rows = x.shape[-3] * int(np.prod(attrs["kernel_size"]))
    return [TensorType(tuple(x.shape[:-3]) + (rows, int(np.prod(out))), x.dtype)]


def _im2col_ref(x, *, kernel_size, dilation, padding, stride):
    win = windows(x, kernel_size, stride, padding, dilation)     # (..., C, oh, ow, kh, kw)
    lead = x.ndim - 3
    order = tuple(range(lead)) + (lead, lead + 3, lead + 4, lead + 1, lead + 2)
    win = np.ascontiguousarray(win.transpose(order))
    return win.reshape(x.shape[:lead] + (win.shape[lead] * kernel_size[0] * kernel_size[1],
                                         win.shape[-2] * win.shape[-1]))


def _im2col_vjp(e, x, y, g, a, n):
    return [e.op("col2im", g[0], output_size=tuple(x[0].shape[-2:]), **a) if n[0] else None]


def _col2im_infer(types, attrs):
    c = types[0]
    kh, kw = attrs["kernel_size"]
    return [TensorType(tuple(c.shape[:-2]) + (c.shape[-2] // (kh * kw),) + tuple(attrs["output_size"]), c.dtype)]


def _col2im_ref(cols, *, output_size, kernel_size, dilation, padding, stride):
    out = conv_output_size(output_size, kernel_size, stride, padding, dilation)
    lead = cols.ndim - 2
    c = cols.shape[lead] // (kernel_size[0] * kernel_size[1])
    win = cols.reshape(cols.shape[:lead] + (c,) + tuple(kernel_size) + out)
    win = win.transpose(tuple(range(lead)) + (lead, lead + 3, lead + 4, lead + 1, lead + 2))
    return np.ascontiguousarray(col2im(win, tuple(output_size), kernel_size, stride, padding, dilation))


def _col2im_vjp(e, x, y, g, a, n):
    attrs = {k: v for k, v in a.items() if k != "output_size"}
    return [e.op("im2col", g[0], **attrs) if n[0] else None]


register(OpDef("im2col", OPAQUE, _im2col_infer, _im2col_ref, _im2col_vjp, reference_only=True,
               doc="im2col(x; kernel_size, dilation, padding, stride): torch's F.unfold",
               extra=dict(_WHY, node="Im2ColBackward0", row_major_result=True)))
register(OpDef("col2im", OPAQUE, _col2im_infer, _col2im_ref, _col2im_vjp, reference_only=True,
               doc="col2im(cols; output_size, kernel_size, dilation, padding, stride): torch's F.fold",
               extra=dict(_WHY, node="Col2ImBackward0", row_major_result=True)))
