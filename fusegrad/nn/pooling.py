"""torch.nn.functional's pooling functions and the pooling modules.

max_pool2d records MaxPool2DWithIndicesBackward0 (with or without return_indices), avg_pool2d
AvgPool2DBackward0, adaptive_avg_pool2d AdaptiveAvgPool2DBackward0 (MeanBackward1 for an
output of 1 x 1, as torch's), adaptive_max_pool2d AdaptiveMaxPool2DBackward0, over the IR ops
of ir/ops/pool.py. The 1-d forms unsqueeze the input to a plane of height 1, pool it and
squeeze it back, as torch's. The 3-d forms (max_pool3d, avg_pool3d, the adaptive ones, lp_pool3d)
run the same IR ops over three spatial dims, with torch's 3-d checks and texts and its 3-D node
names. Indices are flat positions in each input plane (volume).
Choices: ties in a max window take the first position (as torch's); where a window holds
several NaNs torch's index is its last NaN's, fusegrad's the first's.
fractional_max_pool2d/3d (FractionalMaxPool2DBackward0, 3D) run the IR op fractional_max_pool
over torch's windows (generate_intervals in the input's dtype) with torch's NaN rule (the last
NaN); their samples, when not given, are drawn as torch's Python draws them.
"""
from __future__ import annotations

import operator
from collections.abc import Iterable

import fusegrad as fg
from fusegrad.ir.ops import normalize_dim
from fusegrad.ir.ops.pool import pool_output_size
from fusegrad.ir.types import TORCH_SCALAR_NAMES
from fusegrad.tracer.dispatch import apply_op
from fusegrad.tracer.parser_errors import type_name

from . import functional as F
from .conv import ntuple
from .module import Module

__all__ = ["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "lp_pool1d", "lp_pool2d",
           "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
           "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "LPPool1d", "LPPool2d",
           "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d", "lp_pool3d",
           "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "LPPool3d",
           "max_unpool1d", "max_unpool2d", "max_unpool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
           "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices"]


def _pair_arg(value, fn: str, name: str, omitted: bool = False) -> tuple:
    """A pool's 2-d argument: an int or a tuple of one or two, with torch's text otherwise."""
    values = ntuple(value, 2)
    if len(values) == 1:
        values = values * 2
    if len(values) != 2:
        if omitted:
            raise RuntimeError(f"{fn}: {name} must either be omitted, a single int, or a tuple of two ints")
        verb = "be either" if name == "dilation" else "either be"
        raise RuntimeError(f"{fn}: {name} must {verb} a single int, or a tuple of two ints")
    return tuple(int(v) for v in values)


def _check_pool2d(input, kernel, stride, padding, dilation, ceil_mode, fn: str) -> tuple:
    """torch's pool2d_shape_check with its texts; the output's spatial size."""
    if stride[0] == 0 or stride[1] == 0:
        raise RuntimeError("stride should not be zero")
    if min(kernel) <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kH: {kernel[0]} kW: {kernel[1]}")
    if min(stride) <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dH: {stride[0]} dW: {stride[1]}")
    if min(dilation) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationH: {dilation[0]} "
                           f"dilationW: {dilation[1]}")
    if input.dim() < 2 and fn == "avg_pool2d":
        normalize_dim(-3, input.dim())          # (torch's IndexError)
    if input.dim() not in (3, 4):
        if fn == "max_pool2d":
            raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:"
                           f"{list(input.shape)}")
    if any(s == 0 for s in input.shape[-3:]):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:"
                           f"{list(input.shape)}")
    if min(padding) < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {min(padding)}")
    for p, k, d in zip(padding, kernel, dilation):
        if p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, kernel_size={k} "
                               f"and dilation={d}")
    out = pool_output_size(input.shape[-2:], kernel, stride, padding, dilation, ceil_mode)
    if min(out) < 1:
        c, h, w = input.shape[-3:]
        raise RuntimeError(f"Given input size: ({c}x{h}x{w}). Calculated output size: ({c}x{out[0]}x{out[1]}). "
                           "Output size is too small")
    return out


def _omitted(stride) -> bool:
    """Whether a pool's stride was left out (None, or torch's empty default)."""
    return stride is None or stride == () or stride == []


def _no_bool(input, fn: str) -> None:
    if input.dtype is fg.bool:
        raise NotImplementedError(f"\"{fn}\" not implemented for 'Bool'")


def _max_pool2d(input, kernel, stride, padding, dilation, ceil_mode):
    _check_pool2d(input, kernel, stride, padding, dilation, ceil_mode, "max_pool2d")
    _no_bool(input, "max_pool2d")
    attrs = {"kernel_size": kernel, "stride": stride, "padding": padding, "dilation": dilation,
             "ceil_mode": bool(ceil_mode)}
    return apply_op("max_pool", [input], attrs, "MaxPool2DWithIndicesBackward0")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """torch.nn.functional.max_pool2d over (N, C, H, W) or (C, H, W); stride defaults to the
    kernel; with return_indices, (values, flat indices into each H x W plane)."""
    F._check_tensor_args("max_pool2d", input=input)
    kernel = _pair_arg(kernel_size, "max_pool2d", "kernel_size")
    stride = kernel if _omitted(stride) else _pair_arg(stride, "max_pool2d", "stride",
                                                                                      True)
    values, indices = _max_pool2d(input, kernel, stride, _pair_arg(padding, "max_pool2d", "padding"),
                                  _pair_arg(dilation, "max_pool2d", "dilation"), ceil_mode)
    return (values, indices) if return_indices else values


def _int1(value, fn: str, name: str) -> int:
    values = ntuple(value, 1)
    if len(values) != 1:
        raise RuntimeError(f"{fn}() {name} must be an int, list of ints or tuple of ints of size 1 but got size "
                           f"{len(values)}")
    return int(values[0])


def _check1d(value, name: str) -> int:
    """torch's check1d of max_pool1d_with_indices: an int, or a sequence of exactly one."""
    values = ntuple(value, 1)
    if len(values) != 1:
        raise RuntimeError(f"max_pool1d() argument '{name}' should contain one int (got {len(values)})")
    return int(values[0])


def _max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode) -> tuple:
    """torch's C++ max_pool1d_with_indices: its 1-d checks, then max_pool2d_with_indices of the
    input unsqueezed to height 1 (with max_pool2d's checks and texts), both squeezed back."""
    F._check_tensor_args("max_pool1d_with_indices", input=input)
    _check_1d(input, "max_pool1d")
    k = _check1d(kernel_size, "kernel_size")
    s = k if _omitted(stride) else _check1d(stride, "stride")
    p, d = _check1d(padding, "padding"), _check1d(dilation, "dilation")
    values, indices = _max_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), ceil_mode)
    return values.squeeze(-2), indices.squeeze(-2)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """torch.nn.functional.max_pool1d_with_indices: (values, indices) whatever `return_indices`
    says (torch's ignores it), with the checks of torch's C++ max_pool1d_with_indices."""
    return _max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """torch.nn.functional.max_pool1d over (N, C, L) or (C, L): max_pool2d of the input
    unsqueezed to height 1, squeezed back (SqueezeBackward1 of MaxPool2DWithIndicesBackward0).
    With return_indices, max_pool1d_with_indices (torch's boolean dispatch: its checks)."""
    if return_indices:
        return _max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    F._check_tensor_args("max_pool1d", input=input)
    if input.dim() not in (2, 3) or any(s == 0 for s in input.shape[-2:]):
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                           f"input, but got:{list(input.shape)}")
    k = _int1(kernel_size, "max_pool1d", "kernel_size")
    s = k if _omitted(stride) else _int1(stride, "max_pool1d", "stride")
    p, d = _int1(padding, "max_pool1d", "padding"), _int1(dilation, "max_pool1d", "dilation")
    for ok, text in ((k > 0, f"kernel_size must be greater than zero, but got {k}"),
                     (s > 0, f"stride must be greater than zero, but got {s}"),
                     (p >= 0, f"padding must be non-negative, but got {p}"),
                     (p <= k // 2, f"padding should be at most half of kernel size, but got padding={p} and "
                                   f"kernel_size={k}"),
                     (d > 0, f"dilation must be greater than zero, but got {d}")):
        if not ok:
            raise RuntimeError(f"max_pool1d() {text}")
    out = pool_output_size(input.shape[-1:], (k,), (s,), (p,), (d,), ceil_mode)[0]
    if out < 1:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")
    values, indices = _max_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), ceil_mode)
    values, indices = values.squeeze(-2), indices.squeeze(-2)
    return (values, indices) if return_indices else values


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """torch.nn.functional.avg_pool2d: window means (divided by the window's size within the
    padded input, or within the input when not count_include_pad, or by divisor_override);
    integer inputs divide truncating, as torch's."""
    F._check_tensor_args("avg_pool2d", input=input)
    kernel = _pair_arg(kernel_size, "avg_pool2d", "kernel_size")
    stride = kernel if _omitted(stride) else _pair_arg(stride, "avg_pool2d", "stride",
                                                                                      True)
    padding = _pair_arg(padding, "avg_pool2d", "padding")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    _check_pool2d(input, kernel, stride, padding, (1, 1), ceil_mode, "avg_pool2d")
    _no_bool(input, "avg_pool2d")
    attrs = {"kernel_size": kernel, "stride": stride, "padding": padding, "ceil_mode": bool(ceil_mode),
             "count_include_pad": bool(count_include_pad),
             "divisor_override": None if divisor_override is None else int(divisor_override)}
    return apply_op("avg_pool", [input], attrs, "AvgPool2DBackward0")


def _check_1d(input, fn: str) -> None:
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument #1 "
                           f"'self' (while checking arguments for {fn})")


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """torch.nn.functional.avg_pool1d: avg_pool2d of the input unsqueezed to height 1."""
    F._check_tensor_args("avg_pool1d", input=input)
    _check_1d(input, "avg_pool1d")
    k = _int1(kernel_size, "avg_pool1d", "kernel_size")
    s = k if _omitted(stride) else _int1(stride, "avg_pool1d", "stride")
    p = _int1(padding, "avg_pool1d", "padding")
    return avg_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), ceil_mode, count_include_pad).squeeze(-2)


def _check_with_default(output_size, input) -> None:
    """torch's _list_with_default's check, before any other: an output size given as a
    sequence needs an input of more dims than it has."""
    if isinstance(output_size, (list, tuple)) and input.dim() <= len(output_size):
        raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")


def _output_size(output_size, input, nd: int, fn: str) -> tuple:
    """An adaptive pool's output size: an int for every dim, or a sequence whose None entries
    keep the input's sizes (_check_with_default), then torch's checks of the C++ function."""
    _check_with_default(output_size, input)
    sizes = ntuple(output_size, nd)
    if len(sizes) != nd:
        if fn.startswith("adaptive_max"):
            raise RuntimeError(f"{fn}(): internal error: output_size.size() must be {nd}")
        raise RuntimeError(f"{fn}: output_size must be {nd}")
    sizes = tuple(int(input.shape[input.dim() - nd + i]) if s is None else int(s) for i, s in enumerate(sizes))
    if any(s < 0 for s in sizes):
        if fn.startswith("adaptive_max"):
            raise RuntimeError(f"Trying to create tensor with negative dimension {min(sizes)}: "
                               f"{list(input.shape[:-nd]) + list(sizes)}")
        # (torch's 3-d text leaves out the last comma's space: "{2, 2,-1}")
        listed = ", ".join(map(str, sizes)) if nd < 3 else f"{sizes[0]}, {sizes[1]},{sizes[2]}"
        raise RuntimeError(f"{fn}: elements of output_size must be greater than or equal to 0 but received "
                           "{" + listed + "}")
    return sizes


def _check_adaptive(input, fn: str, nd: int = 2, kernel_name: str | None = None) -> None:
    """torch's checks of an adaptive pool's input (`nd` spatial dims; `kernel_name`: the name its
    dtype error gives the kernel, `fn` by default)."""
    if input.dim() not in (nd + 1, nd + 2):
        colon = ":" if fn.startswith("adaptive_max") else ""
        raise RuntimeError(f"{fn}(): Expected {nd + 1}D or {nd + 2}D tensor, but got{colon} {list(input.shape)}")
    for dim in range(1, input.dim()):
        if input.shape[dim] == 0 and (input.dim() == nd + 1 or dim > 0):
            raise RuntimeError(f"{fn}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {list(input.shape)} with dimension {dim} being empty")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel_name or fn}\" not implemented for "
                                  f"'{TORCH_SCALAR_NAMES[input.dtype.name]}'")


def adaptive_avg_pool2d(input, output_size):
    """torch.nn.functional.adaptive_avg_pool2d: output cell (i, j) the mean of rows
    floor(i*H/oh) .. ceil((i+1)*H/oh) and likewise columns; None keeps that size. An output of
    1 x 1 is the mean over H and W (MeanBackward1), as torch's."""
    F._check_tensor_args("adaptive_avg_pool2d", input=input)
    sizes = _output_size(output_size, input, 2, "adaptive_avg_pool2d")
    if sizes == (1, 1):
        # (before the input's checks, as torch's: a mean over the last two dims of any input)
        return input.mean((-1, -2), keepdim=True)
    _check_adaptive(input, "adaptive_avg_pool2d")
    return apply_op("adaptive_avg_pool", [input], {"output_size": sizes}, "AdaptiveAvgPool2DBackward0")


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """torch.nn.functional.adaptive_max_pool2d (torch's windows); with return_indices,
    (values, flat indices into each plane)."""
    F._check_tensor_args("adaptive_max_pool2d", input=input)
    _check_with_default(output_size, input)
    _check_adaptive(input, "adaptive_max_pool2d")
    sizes = _output_size(output_size, input, 2, "adaptive_max_pool2d")
    values, indices = apply_op("adaptive_max_pool", [input], {"output_size": sizes}, "AdaptiveMaxPool2DBackward0")
    return (values, indices) if return_indices else values


def _adaptive_1d(input, output_size, fn: str):
    F._check_tensor_args(fn, input=input)
    _check_1d(input, fn)
    sizes = ntuple(output_size, 1)
    if len(sizes) != 1:
        raise RuntimeError(f"{fn}() argument 'output_size' should contain one int (got {len(sizes)})")
    return input.unsqueeze(-2), (1, sizes[0])


def adaptive_avg_pool1d(input, output_size):
    """torch.nn.functional.adaptive_avg_pool1d: adaptive_avg_pool2d at height 1."""
    x, sizes = _adaptive_1d(input, output_size, "adaptive_avg_pool1d")
    return adaptive_avg_pool2d(x, sizes).squeeze(-2)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """torch.nn.functional.adaptive_max_pool1d: adaptive_max_pool2d at height 1."""
    x, sizes = _adaptive_1d(input, output_size, "adaptive_max_pool1d")
    for dim in range(1, input.dim()):
        # (ATen's adaptive_max_pool1d checks the 1-d shape itself, after output_size: dims from 1
        # on, batched or not, under its own name)
        if input.shape[dim] == 0:
            raise RuntimeError("adaptive_max_pool1d(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(input.shape)} with dimension {dim} being empty")
    values, indices = adaptive_max_pool2d(x, sizes, True)
    values, indices = values.squeeze(-2), indices.squeeze(-2)
    return (values, indices) if return_indices else values


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """torch.nn.functional.max_pool2d_with_indices: (values, indices) whatever `return_indices`
    says (torch's ignores it)."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """torch.nn.functional.adaptive_max_pool1d_with_indices: (values, indices) whatever
    `return_indices` says (torch's ignores it)."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """torch.nn.functional.adaptive_max_pool2d_with_indices: (values, indices) whatever
    `return_indices` says (torch's ignores it)."""
    return adaptive_max_pool2d(input, output_size, True)


# ---------------------------------------------------------------- 3-d

def _triple_arg(value, fn: str, name: str, wording: str) -> tuple:
    """A 3-d pool's argument: an int or a tuple of one or three, with torch's text otherwise
    (`wording`: how its text says which forms are allowed)."""
    if isinstance(value, str):
        position = {"kernel_size": 2, "stride": 3, "padding": 4, "dilation": 5}[name]
        raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be tuple of ints, not str")
    values = ntuple(value, 3)
    if len(values) == 1:
        values = values * 3
    if len(values) != 3:
        raise RuntimeError(f"{fn}: {name} must {wording} a tuple of three ints")
    return tuple(int(v) for v in values)


def _c_half(n: int) -> int:
    """n / 2 truncated toward zero, as C++'s integer division."""
    return -((-n) // 2) if n < 0 else n // 2


def _check_pool3d(input, kernel, stride, padding, dilation, ceil_mode, kernel_name: str, average: bool) -> tuple:
    """torch's checks of a 3-d pool in its order (the rank; pooling_output_shape's per dim;
    pool3d_shape_check's), with its texts; the output's spatial size. `kernel_name` names
    the kernel in the empty-input text; `average`: avg_pool3d's check of the window's size."""
    if input.dim() not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    for k, s, p, d in zip(kernel, stride, padding, dilation):
        if s == 0:
            raise RuntimeError("stride should not be zero")
        if p < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
        if p > _c_half((k - 1) * d + 1):
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={d}")
    if min(kernel) <= 0:
        raise RuntimeError("kernel size should be greater than zero, but got kT: {} kH: {} kW: {}".format(*kernel))
    if min(stride) <= 0:
        raise RuntimeError("stride should be greater than zero, but got dT: {} dH: {} dW: {}".format(*stride))
    if min(dilation) <= 0:
        raise RuntimeError("dilation should be greater than zero, but got dilationT: {} dilationH: {} "
                           "dilationW: {}".format(*dilation))
    for i, size in enumerate(input.shape):
        if size == 0 and not (input.dim() == 5 and i == 0):
            # (torch's text prints the empty dim's length where it means its index)
            raise RuntimeError(f"{kernel_name}(): Expected input's non-batch dimensions to have positive length, "
                               f"but input has a shape of {list(input.shape)} and non-batch dimension 0 has "
                               "length zero!")
    c, t, h, w = input.shape[-4:]
    if average and (t < kernel[0] or h < kernel[1] or w < kernel[2]):
        raise RuntimeError(f"input image (T: {t} H: {h} W: {w}) smaller than kernel size "
                           "(kT: {} kH: {} kW: {})".format(*kernel))
    out = pool_output_size((t, h, w), kernel, stride, padding, dilation, ceil_mode)
    if min(out) < 1:
        raise RuntimeError(f"Given input size: ({c}x{t}x{h}x{w}). Calculated output size: "
                           f"({c}x{out[0]}x{out[1]}x{out[2]}). Output size is too small")
    return out


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """torch.nn.functional.max_pool3d over (N, C, D, H, W) or (C, D, H, W); stride defaults to
    the kernel; with return_indices, (values, flat indices into each D x H x W volume)."""
    F._check_tensor_args("max_pool3d", input=input)
    kernel = _triple_arg(kernel_size, "max_pool3d", "kernel_size", "either be a single int, or")
    stride = kernel if _omitted(stride) else \
        _triple_arg(stride, "max_pool3d", "stride", "either be omitted, a single int, or")
    padding = _triple_arg(padding, "max_pool3d", "padding", "either be a single int, or")
    dilation = _triple_arg(dilation, "max_pool3d", "dilation", "be either a single int, or")
    _check_pool3d(input, kernel, stride, padding, dilation, ceil_mode, "max_pool3d_with_indices_out_cpu_template",
                  False)
    _no_bool(input, "max_pool3d")
    attrs = {"kernel_size": kernel, "stride": stride, "padding": padding, "dilation": dilation,
             "ceil_mode": bool(ceil_mode)}
    values, indices = apply_op("max_pool", [input], attrs, "MaxPool3DWithIndicesBackward0")
    return (values, indices) if return_indices else values


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """torch.nn.functional.max_pool3d_with_indices: (values, indices) whatever `return_indices`
    says (torch's ignores it)."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """torch.nn.functional.avg_pool3d: window means over (N, C, D, H, W) or (C, D, H, W), as
    avg_pool2d's rules."""
    F._check_tensor_args("avg_pool3d", input=input)
    kernel = _triple_arg(kernel_size, "avg_pool3d", "kernel_size", "be a single int, or")
    stride = kernel if _omitted(stride) else _triple_arg(stride, "avg_pool3d", "stride", "be omitted, a single int, or")
    padding = _triple_arg(padding, "avg_pool3d", "padding", "be a single int, or")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    _check_pool3d(input, kernel, stride, padding, (1, 1, 1), ceil_mode, "avg_pool3d", True)
    _no_bool(input, "avg_pool3d_out_frame")
    attrs = {"kernel_size": kernel, "stride": stride, "padding": padding, "ceil_mode": bool(ceil_mode),
             "count_include_pad": bool(count_include_pad),
             "divisor_override": None if divisor_override is None else int(divisor_override)}
    return apply_op("avg_pool", [input], attrs, "AvgPool3DBackward0")


def adaptive_avg_pool3d(input, output_size):
    """torch.nn.functional.adaptive_avg_pool3d (adaptive_avg_pool2d's windows over three dims);
    an output of 1 x 1 x 1 is the mean over them (MeanBackward1), as torch's."""
    F._check_tensor_args("adaptive_avg_pool3d", input=input)
    sizes = _output_size(output_size, input, 3, "adaptive_avg_pool3d")
    if sizes == (1, 1, 1):
        return input.mean((-1, -2, -3), keepdim=True)   # (before the input's checks, as torch's)
    _check_adaptive(input, "adaptive_avg_pool3d", 3, "adaptive_avg_pool3d_cpu")
    return apply_op("adaptive_avg_pool", [input], {"output_size": sizes}, "AdaptiveAvgPool3DBackward0")


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """torch.nn.functional.adaptive_max_pool3d; with return_indices, (values, flat indices
    into each volume)."""
    F._check_tensor_args("adaptive_max_pool3d", input=input)
    _check_with_default(output_size, input)
    _check_adaptive(input, "adaptive_max_pool3d", 3, "adaptive_max_pool3d_cpu")
    sizes = _output_size(output_size, input, 3, "adaptive_max_pool3d")
    values, indices = apply_op("adaptive_max_pool", [input], {"output_size": sizes}, "AdaptiveMaxPool3DBackward0")
    return (values, indices) if return_indices else values


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """torch.nn.functional.adaptive_max_pool3d_with_indices: (values, indices) whatever
    `return_indices` says (torch's ignores it)."""
    return adaptive_max_pool3d(input, output_size, True)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """torch.nn.functional.lp_pool3d: (sum of x**p over each window) ** (1/p), as torch
    composes it from avg_pool3d."""
    kd, kh, kw = ntuple(kernel_size, 3)
    out = avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_tail(out, norm_type, kd * kh * kw)


# ---------------------------------------------------------------- max unpooling

def _unpool_output_size(input, kernel, stride, padding, output_size) -> list:
    """torch's _unpool_output_size: the default (in - 1) * stride + kernel - 2 * padding per
    spatial dim, or `output_size` (its last len(kernel) entries) when within a stride of it."""
    size = input.size()
    default = [(size[-len(kernel) + d] - 1) * stride[d] + kernel[d] - 2 * padding[d] for d in range(len(kernel))]
    if output_size is None:
        found = default
    else:
        if len(output_size) == len(kernel) + 2:
            output_size = output_size[2:]
        if len(output_size) != len(kernel):
            raise ValueError(f"output_size should be a sequence containing {len(kernel)} or {len(kernel) + 2} "
                             f"elements, but it has a length of '{len(output_size)}'")
        for d in range(len(kernel)):
            low, high = default[d] - stride[d], default[d] + stride[d]
            if not low < output_size[d] < high:
                raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {low} and {high})')
        found = output_size
    for d in range(len(kernel)):
        if found[d] < 0:
            raise ValueError("max_unpooling: output_size must contain non-negative spatial dimensions, but got "
                             f"output_size[{d}]={found[d]}")
    return list(found)


def _max_unpool(input, indices, output_size, nd: int):
    """torch's max_unpooling2d/3d: their checks in their order, then one MaxUnpool{nd}DBackward0 node."""
    ranks = f"{nd + 1}d or {nd + 2}d"
    if indices.dtype is not fg.int64:
        suffix = f" but got: {TORCH_SCALAR_NAMES[indices.dtype.name]}" if nd == 2 else ""
        raise RuntimeError(f"elements in indices should be type int64{suffix}")
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Input to max_unpooling{nd}d should be a {ranks} Tensor, but got a tensor with "
                           f"{input.dim()} dimensions.")
    if tuple(input.shape) != tuple(indices.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) "
                           f"but got indices tensor with shape: {list(indices.shape)}")
    if input.dtype is fg.int64 or input.dtype is fg.bool:
        raise NotImplementedError(f"\"max_unpool{nd}d\" not implemented for '{TORCH_SCALAR_NAMES[input.dtype.name]}'")
    return apply_op("max_unpool", [input, indices], {"output_size": tuple(int(s) for s in output_size)},
                    f"MaxUnpool{nd}DBackward0")


def _unpool_arguments(input, kernel_size, stride, padding, output_size, nd: int):
    kernel = ntuple(kernel_size, nd)
    stride = kernel if stride is None else ntuple(stride, nd)
    return _unpool_output_size(input, kernel, stride, ntuple(padding, nd), output_size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """torch.nn.functional.max_unpool1d: max_pool1d's inverse, zeros but for each value at its
    index (max_unpool2d at width 1, as torch's: SqueezeBackward1)."""
    F._check_tensor_args("max_unpool1d", input=input, indices=indices)
    size = _unpool_arguments(input, kernel_size, stride, padding, output_size, 1)
    return _max_unpool(input.unsqueeze(-1), indices.unsqueeze(-1), size + [1], 2).squeeze(-1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """torch.nn.functional.max_unpool2d: zeros of the unpooled size but for each value of
    `input` at its flat index in its plane (MaxUnpool2DBackward0)."""
    F._check_tensor_args("max_unpool2d", input=input, indices=indices)
    return _max_unpool(input, indices, _unpool_arguments(input, kernel_size, stride, padding, output_size, 2), 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """torch.nn.functional.max_unpool3d: as max_unpool2d over volumes (MaxUnpool3DBackward0)."""
    F._check_tensor_args("max_unpool3d", input=input, indices=indices)
    return _max_unpool(input, indices, _unpool_arguments(input, kernel_size, stride, padding, output_size, 3), 3)


def _lp_tail(out, norm_type, count):
    return (fg.sign(out) * fg.relu(fg.abs(out))).mul(count).pow(1.0 / norm_type)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """torch.nn.functional.lp_pool2d: (sum of x**p over each window) ** (1/p), as torch
    composes it from avg_pool2d."""
    kw, kh = ntuple(kernel_size, 2)
    out = avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_tail(out, norm_type, kw * kh)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """torch.nn.functional.lp_pool1d: (sum of x**p over each window) ** (1/p)."""
    out = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_tail(out, norm_type, kernel_size)


# ---------------------------------------------------------------- modules

class _MaxPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self) -> str:
        """torch's: "kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False"."""
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """torch.nn.MaxPool1d (F.max_pool1d)."""

    def forward(self, input):
        """F.max_pool1d of `input`."""
        return max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                          ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """torch.nn.MaxPool2d (F.max_pool2d)."""

    def forward(self, input):
        """F.max_pool2d of `input`."""
        return max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                          ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool3d(_MaxPoolNd):
    """torch.nn.MaxPool3d (F.max_pool3d)."""

    def forward(self, input):
        """F.max_pool3d of `input`."""
        return max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                          ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool1d(Module):
    """torch.nn.AvgPool1d (F.avg_pool1d); its arguments kept as 1-tuples, as torch's."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True) -> None:
        super().__init__()
        self.kernel_size = ntuple(kernel_size, 1)
        self.stride = ntuple(stride if stride is not None else kernel_size, 1)
        self.padding = ntuple(padding, 1)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input):
        """F.avg_pool1d of `input`."""
        return avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)

    def extra_repr(self) -> str:
        """torch's: "kernel_size=(2,), stride=(2,), padding=(0,)"."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """torch.nn.AvgPool2d (F.avg_pool2d)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        """F.avg_pool2d of `input`."""
        return avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                          self.divisor_override)

    def extra_repr(self) -> str:
        """torch's: "kernel_size=2, stride=2, padding=0"."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool3d(AvgPool2d):
    """torch.nn.AvgPool3d (F.avg_pool3d)."""

    def forward(self, input):
        """F.avg_pool3d of `input`."""
        return avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                          self.divisor_override)


class _AdaptivePool(Module):
    _fn = None

    def __init__(self, output_size, return_indices=False) -> None:
        super().__init__()
        self.output_size = output_size
        if type(self).__name__.startswith("AdaptiveMax"):
            self.return_indices = return_indices

    def forward(self, input):
        """The adaptive pooling of `input`."""
        if hasattr(self, "return_indices"):
            return type(self)._fn(input, self.output_size, self.return_indices)
        return type(self)._fn(input, self.output_size)

    def extra_repr(self) -> str:
        """torch's: "output_size=..."."""
        return f"output_size={self.output_size}"


class _AdaptiveAvgPool(_AdaptivePool):
    def __init__(self, output_size) -> None:
        super().__init__(output_size)       # (torch's signature: no return_indices)


class AdaptiveAvgPool1d(_AdaptiveAvgPool):
    """torch.nn.AdaptiveAvgPool1d(output_size)."""

    _fn = adaptive_avg_pool1d


class AdaptiveAvgPool2d(_AdaptiveAvgPool):
    """torch.nn.AdaptiveAvgPool2d(output_size)."""

    _fn = adaptive_avg_pool2d


class AdaptiveMaxPool1d(_AdaptivePool):
    """torch.nn.AdaptiveMaxPool1d(output_size, return_indices=False)."""

    _fn = adaptive_max_pool1d


class AdaptiveMaxPool2d(_AdaptivePool):
    """torch.nn.AdaptiveMaxPool2d(output_size, return_indices=False)."""

    _fn = adaptive_max_pool2d


class AdaptiveAvgPool3d(_AdaptiveAvgPool):
    """torch.nn.AdaptiveAvgPool3d(output_size)."""

    _fn = adaptive_avg_pool3d


class AdaptiveMaxPool3d(_AdaptivePool):
    """torch.nn.AdaptiveMaxPool3d(output_size, return_indices=False)."""

    _fn = adaptive_max_pool3d


class _LPPool(Module):
    _fn = None

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, input):
        """The power-average pooling of `input`."""
        return type(self)._fn(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        """torch's: "norm_type=2, kernel_size=3, stride=None, ceil_mode=False"."""
        return f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, ceil_mode={self.ceil_mode}"


class LPPool1d(_LPPool):
    """torch.nn.LPPool1d(norm_type, kernel_size, stride=None, ceil_mode=False)."""

    _fn = lp_pool1d


class LPPool2d(_LPPool):
    """torch.nn.LPPool2d(norm_type, kernel_size, stride=None, ceil_mode=False)."""

    _fn = lp_pool2d


class LPPool3d(_LPPool):
    """torch.nn.LPPool3d(norm_type, kernel_size, stride=None, ceil_mode=False)."""

    _fn = lp_pool3d


class _MaxUnpoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        n = self._nd
        self.kernel_size = ntuple(kernel_size, n)
        self.stride = ntuple(stride if stride is not None else kernel_size, n)
        self.padding = ntuple(padding, n)

    def forward(self, input, indices, output_size=None):
        """The unpooling of `input` at `indices`."""
        fn = (max_unpool1d, max_unpool2d, max_unpool3d)[self._nd - 1]
        return fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        """torch's: "kernel_size=(2, 2), stride=(2, 2), padding=(0, 0)"."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """torch.nn.MaxUnpool1d(kernel_size, stride=None, padding=0)."""

    _nd = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """torch.nn.MaxUnpool2d(kernel_size, stride=None, padding=0)."""

    _nd = 2


class MaxUnpool3d(_MaxUnpoolNd):
    """torch.nn.MaxUnpool3d(kernel_size, stride=None, padding=0)."""

    _nd = 3


# ---------------------------------------------------------------- fractional max pooling

__all__ += ["fractional_max_pool2d", "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
            "fractional_max_pool3d_with_indices", "FractionalMaxPool2d", "FractionalMaxPool3d"]


def _torch_ntuple(value, n: int) -> tuple:
    """torch's _ntuple(n): any iterable as a tuple of its items, anything else repeated n times."""
    if isinstance(value, Iterable):
        return tuple(value)
    return (value,) * n


def _parsed_int_list(value, fn: str, name: str, position: int, n: int) -> tuple:
    """An `int[n]` argument as torch's argument parser takes it: an int repeated n times, a
    sequence of ints (or of integer 0-d tensors) as it is; torch's TypeErrors otherwise."""
    def index_of(v):
        if isinstance(v, bool):
            return None
        if isinstance(v, fg.Tensor):
            return int(v.item()) if v.dim() == 0 and not v.dtype.is_floating_point and v.dtype is not fg.bool \
                else None
        try:
            return operator.index(v)
        except TypeError:
            return None
    single = index_of(value) if not isinstance(value, (list, tuple)) else None
    if single is not None:
        return (single,) * n
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be tuple of ints, not "
                        f"{type_name(value)}")
    out = []
    for pos, v in enumerate(value):
        i = index_of(v)
        if i is None:
            if isinstance(v, str):
                raise TypeError(f"{fn}(): argument '{name}' failed to unpack the object at pos {pos + 1} with error "
                                "\"type must be tuple of ints,but got str\"")
            raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be tuple of ints, but found "
                            f"element of type {type_name(v)} at pos {pos}")
        out.append(i)
    return tuple(out)


def _fractional_max_pool(input, kernel_size, output_size, samples, nd: int):
    """torch._C._nn.fractional_max_pool{nd}d: its argument parsing, the autograd check of the
    samples, its meta function's checks, then fractional_max_pool_check_shape's and the dtype
    dispatch's, in their order; one FractionalMaxPool{nd}DBackward0 node."""
    fn = f"fractional_max_pool{nd}d"
    F._check_tensor_args(fn, input=input)
    kernel = _parsed_int_list(kernel_size, fn, "kernel_size", 2, nd)
    out = _parsed_int_list(output_size, fn, "output_size", 3, nd)
    if not isinstance(samples, fg.Tensor):
        raise TypeError(f"{fn}(): argument 'random_samples' (position 4) must be Tensor, not {type_name(samples)}")
    if samples.requires_grad and fg.is_grad_enabled():
        raise RuntimeError(f"The function '{fn}' is not differentiable with respect to argument 'random_samples'. "
                           "This input cannot have requires_grad True.")
    three = " three" if nd == 3 else ""
    if len(kernel) != nd:
        raise RuntimeError(f"{fn}: kernel_size must either be a single Int or tuple of{three} Ints")
    if len(out) != nd:
        raise RuntimeError(f"{fn}: output_size must either be a single Int or tuple of{three} Ints")
    shape = list(input.shape)
    where = fn if nd == 2 else f"{fn}_out"
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{where}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {shape}")
    for dim in range(1, input.dim()):
        if shape[dim] <= 0:
            raise RuntimeError(f"{where}(): Expected input to have non-zero size for non-batch dimensions, but got"
                               f"{shape} with dimension {dim} being empty.")
    size = shape[-nd:]
    names = ("height", "width") if nd == 2 else ("time", "height", "width")
    # (torch's 3-d meta function checks time, width, height, in that order, each strictly)
    for d in ((0, 1) if nd == 2 else (0, 2, 1)):
        fits = out[d] + kernel[d] - 1 <= size[d] if nd == 2 else \
            kernel[d] <= size[d] and out[d] + kernel[d] - 1 < size[d]
        if not fits:
            raise RuntimeError(f"{where}(): pool {names[d]} {kernel[d]} too large relative to input {names[d]} "
                               f"{size[d]}")
    result_shape = shape[:-nd] + list(out)
    for s in result_shape:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {result_shape}")
    if samples.dtype is not input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.dim() != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.dim()}")
    batch, channels = (1, shape[0]) if input.dim() == nd + 1 else (shape[0], shape[1])
    if samples.shape[0] < batch:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != channels:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != nd:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; got {samples.shape[2]}.")
    if not input.dtype.is_floating_point and all(result_shape):
        # (torch returns an empty result before its dtype dispatch)
        raise NotImplementedError(f"\"{fn}_out_frame\" not implemented for '{TORCH_SCALAR_NAMES[input.dtype.name]}'")
    return apply_op("fractional_max_pool", [input, samples], {"kernel_size": kernel, "output_size": out},
                    f"FractionalMaxPool{nd}DBackward0")


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """torch.nn.functional.fractional_max_pool2d_with_indices: (values, flat indices into each
    plane) whatever `return_indices` says. The windows' starts come from one sample in [0, 1)
    per plane and dim (`_random_samples`, (N, C, 2): W's then H's), drawn as torch draws them,
    `rand(N, C, 2, dtype=input.dtype)` from the global generator, when not given; the output
    size is `output_size`, or `output_ratio` times the input's."""
    if output_size is None and output_ratio is None:
        raise ValueError("fractional_max_pool2d requires specifying either an output_size or an output_ratio")
    if output_size is None:
        if len(output_ratio) > 2:
            raise ValueError("fractional_max_pool2d requires output_ratio to either be a single Int or tuple of Ints.")
        ratio = _torch_ntuple(output_ratio, 2)
        output_size = [int(input.size(-2) * ratio[0]), int(input.size(-1) * ratio[1])]
    if _random_samples is None:
        n_batch = 1 if input.dim() == 3 else input.size(0)
        _random_samples = fg.rand(n_batch, input.size(-3), 2, dtype=input.dtype)
    return _fractional_max_pool(input, kernel_size, output_size, _random_samples, 2)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """torch.nn.functional.fractional_max_pool3d_with_indices: as the 2-d form over (T, H, W)
    volumes, `_random_samples` (N, C, 3) in T, H, W order."""
    if output_size is None and output_ratio is None:
        raise ValueError("fractional_max_pool3d requires specifying either an output_size or an output_ratio")
    if output_size is None:
        ratio = _torch_ntuple(output_ratio, 3)
        output_size = [int(input.size(-3) * ratio[0]), int(input.size(-2) * ratio[1]),
                       int(input.size(-1) * ratio[2])]
    if _random_samples is None:
        n_batch = 1 if input.dim() == 4 else input.size(0)
        _random_samples = fg.rand(n_batch, input.size(-4), 3, dtype=input.dtype)
    return _fractional_max_pool(input, kernel_size, output_size, _random_samples, 3)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """torch.nn.functional.fractional_max_pool2d: the values of
    fractional_max_pool2d_with_indices, with the indices too when `return_indices`."""
    values, indices = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio,
                                                         return_indices, _random_samples)
    return (values, indices) if return_indices else values


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """torch.nn.functional.fractional_max_pool3d: the values of
    fractional_max_pool3d_with_indices, with the indices too when `return_indices`."""
    values, indices = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio,
                                                         return_indices, _random_samples)
    return (values, indices) if return_indices else values


class _FractionalMaxPoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None) -> None:
        super().__init__()
        n = self._nd
        name = f"FractionalMaxPool{n}d"
        if n == 3 and ((isinstance(kernel_size, int) and kernel_size <= 0) or
                       (isinstance(kernel_size, (tuple, list)) and not all(k > 0 for k in kernel_size))):
            raise ValueError(f"kernel_size must be greater than 0, but got {kernel_size}")
        self.kernel_size = _torch_ntuple(kernel_size, n)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _torch_ntuple(output_size, n) if output_size is not None else None
        self.output_ratio = _torch_ntuple(output_ratio, n) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        # (indexed as torch's: a ratio of fewer entries raises its IndexError)
        if self.output_ratio is not None and not all(0 < self.output_ratio[d] < 1 for d in range(n)):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        """The fractional max pooling of `input` (the module's `_random_samples` buffer, or fresh
        samples from the global generator where it is None)."""
        fn = fractional_max_pool2d if self._nd == 2 else fractional_max_pool3d
        return fn(input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                  _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """torch.nn.FractionalMaxPool2d(kernel_size, output_size=None, output_ratio=None,
    return_indices=False, _random_samples=None) (F.fractional_max_pool2d)."""

    _nd = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """torch.nn.FractionalMaxPool3d(kernel_size, output_size=None, output_ratio=None,
    return_indices=False, _random_samples=None) (F.fractional_max_pool3d)."""

    _nd = 3
