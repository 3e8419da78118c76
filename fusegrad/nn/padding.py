"""torch.nn.functional's pad, interpolate, pixel_shuffle / pixel_unshuffle, unfold / fold, and
their modules (ZeroPad, ConstantPad, ReflectionPad, ReplicationPad, CircularPad, Upsample,
PixelShuffle, PixelUnshuffle, Unfold, Fold).

Over the IR ops of ir/ops/pool.py (pad_nd, upsample, pixel_shuffle) and ir/ops/conv.py (im2col,
col2im). Choice: circular padding is one node here (named CopySlices, as torch's result's),
where torch records a chain of CopySlices and SliceBackward0 nodes; the values and gradients
are the same.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from fusegrad.ir.ops.conv import conv_output_size
from fusegrad.tracer.dispatch import apply_op
from fusegrad.tracer.parser_errors import ArgParser, function_texts
from fusegrad.tracer.user_frame import user_stacklevel

from . import functional as F
from .conv import ntuple
from .module import Module

__all__ = ["pad", "interpolate", "upsample", "pixel_shuffle", "pixel_unshuffle", "unfold", "fold",
           "ZeroPad1d", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d", "ReflectionPad2d",
           "ReplicationPad1d", "ReplicationPad2d", "CircularPad1d", "CircularPad2d", "ZeroPad3d", "ConstantPad3d",
           "ReflectionPad3d", "ReplicationPad3d", "CircularPad3d", "Upsample", "PixelShuffle",
           "PixelUnshuffle", "Unfold", "Fold",
           "upsample_nearest", "upsample_bilinear", "UpsamplingNearest2d", "UpsamplingBilinear2d",
           "channel_shuffle", "native_channel_shuffle", "ChannelShuffle"]

_NODES = {"reflect": "ReflectionPad{}DBackward0", "replicate": "ReplicationPad{}DBackward0", "circular": "CopySlices"}


def pad(input, pad, mode: str = "constant", value=None):
    """torch.nn.functional.pad: `pad` lists (before, after) pairs from the last dim backwards.
    'constant' pads with `value` (0 by default; negative pads crop, ConstantPadNdBackward0);
    'reflect', 'replicate' and 'circular' pad the last 1, 2 or 3 dims of a (batched or not)
    input (ReflectionPad2DBackward0, ...)."""
    F._check_tensor_args("pad", input=input)
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    n = len(pad) // 2
    if n > input.dim():
        raise RuntimeError("Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.dim()}")
    pairs = tuple((pad[2 * i], pad[2 * i + 1]) for i in reversed(range(n)))     # in dim order
    size = input.shape[input.dim() - n:]
    if mode == "constant":
        for s, (b, a) in zip(size, pairs):
            # (torch narrows for a negative pad before, then for one after: each must leave a
            # non-negative length, so [1, -2] on a size-1 dim fails though 1 + 1 - 2 = 0)
            if s + min(b, 0) < 0 or s + min(b, 0) + min(a, 0) < 0:
                raise RuntimeError("narrow(): length must be non-negative.")
        value = 0 if value is None else value
        return apply_op("pad_nd", [input], {"pads": pairs, "mode": "constant", "value": value},
                        "ConstantPadNdBackward0")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if mode not in _NODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if not (1 <= n <= 3 and input.dim() in (n + 1, n + 2)):
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for {input.dim()}D input tensor.\n"
                                  "Supported combinations for non-constant padding:\n"
                                  "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                                  "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                                  "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    for axis, (s, (b, a)) in enumerate(zip(size, pairs)):
        dim = input.dim() - n + axis
        if mode == "reflect" and (b >= s or a >= s):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({b}, {a}) at dimension {dim} of input {list(input.shape)}")
        if mode == "circular" and (b > s or a > s):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if mode == "replicate" and s == 0 and (b or a):
            raise RuntimeError(f"Expected input's dimension {dim} to be non-empty")
    return apply_op("pad_nd", [input], {"pads": pairs, "mode": mode, "value": 0}, _NODES[mode].format(n))


# ---------------------------------------------------------------- interpolate

_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"


def interpolate(input, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                recompute_scale_factor=None, antialias: bool = False):
    """torch.nn.functional.interpolate for modes 'nearest', 'nearest-exact', 'linear' (3-D
    input), 'bilinear' (4-D) and 'area' (adaptive average pooling). With `scale_factor` the
    output size is floor(size * factor) and the source indices use 1 / factor (torch's, unless
    recompute_scale_factor). 'bicubic', 'trilinear', 5-D inputs and antialias are not
    implemented (NotImplementedError)."""
    F._check_tensor_args("interpolate", input=input)
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.dim() - 2
    spatial = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        scales = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError("Input and output must have the same number of spatial dimensions, but got input "
                                 f"with spatial dimensions of {spatial} and output size of {size}. Please provide "
                                 "input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) "
                                 "format.")
            out = [int(s) for s in size]
        else:
            out = [int(size)] * dim
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError("Input and scale_factor must have the same number of spatial dimensions, but got "
                                 f"input with spatial dimensions of {spatial} and scale_factor of shape "
                                 f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                                 "scale_factor in (s1, s2, ...,sK) format.")
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * dim
        out = [int(s * f) for s, f in zip(spatial, scales)]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" or recompute_scale_factor:
        if scales is not None:
            out = [math.floor(float(s) * f) for s, f in zip(spatial, scales)]
        scales = None
    if antialias:
        raise NotImplementedError("interpolate(antialias=True) is not implemented in fusegrad")
    kinds = {(3, "nearest"): "nearest", (4, "nearest"): "nearest", (3, "nearest-exact"): "nearest-exact",
             (4, "nearest-exact"): "nearest-exact", (3, "linear"): "linear", (4, "bilinear"): "linear"}
    if mode == "area" and input.dim() in (3, 4):
        from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d
        return (adaptive_avg_pool1d if input.dim() == 3 else adaptive_avg_pool2d)(input, tuple(out))
    if (input.dim(), mode) not in kinds:
        if mode == "bilinear" and input.dim() == 3:
            raise NotImplementedError("Got 3D input, but bilinear mode needs 4D input")
        if mode == "linear" and input.dim() == 4:
            raise NotImplementedError("Got 4D input, but linear mode needs 3D input")
        if input.dim() in (3, 4, 5) and mode in ("bicubic", "trilinear", "nearest", "nearest-exact", "linear",
                                                 "bilinear", "area"):
            raise NotImplementedError(f"interpolate(mode={mode!r}) of a {input.dim()}D input is not implemented "
                                      "in fusegrad")
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                                  f"the modes: {_MODES} (got {mode})")
    kind = kinds[(input.dim(), mode)]
    op_name = {"nearest": "nearest", "nearest-exact": "nearest_exact", "linear": "linear" if dim == 1 else "bilinear"}[kind]
    if not input.dtype.is_floating_point:
        suffix = "2d_channels_last" if dim == 2 else "1d"
        raise NotImplementedError(f"\"upsample_{op_name}{suffix}\" not implemented for "
                                  f"'{ {'int64': 'Long', 'bool': 'Bool'}[input.dtype.name]}'")
    if any(o <= 0 for o in out) or any(s <= 0 for s in spatial):
        names = ("W",) if dim == 1 else ("H", "W")
        given = ", ".join(f"{n}: {s}" for n, s in zip(names, spatial))
        wanted = ", ".join(f"{n}: {s}" for n, s in zip(names, out))
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({given}) output ({wanted})")
    node = {"nearest": "UpsampleNearest{}DBackward0", "nearest-exact": "UpsampleNearestExact{}DBackward0",
            "linear": "UpsampleLinear1DBackward0" if dim == 1 else "UpsampleBilinear2DBackward0"}[kind].format(dim)
    attrs = {"mode": kind, "size": tuple(out), "scales": None if scales is None else tuple(scales),
             "align_corners": bool(align_corners) if kind == "linear" else False}
    return apply_op("upsample", [input], attrs, node)


def upsample(input, size=None, scale_factor=None, mode: str = "nearest", align_corners=None):
    """torch.nn.functional.upsample (deprecated in torch, with its warning): interpolate."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.",
                  UserWarning, stacklevel=user_stacklevel())
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """torch.nn.functional.upsample_nearest (deprecated in torch, with its warning):
    interpolate(..., mode='nearest')."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  UserWarning, stacklevel=user_stacklevel())
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """torch.nn.functional.upsample_bilinear (deprecated in torch, with its warning):
    interpolate(..., mode='bilinear', align_corners=True)."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  UserWarning, stacklevel=user_stacklevel())
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---------------------------------------------------------------- channel shuffle

def _channel_order(input, groups) -> np.ndarray:
    """torch's checks of channel_shuffle, in its order; the channel each output channel takes
    (channel k of the output is channel (k % groups) * (C / groups) + k // groups)."""
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)):
        raise TypeError("groups must be an int")       # (function_texts words torch's parser text)
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    c = input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    k = np.arange(c, dtype=np.int64)
    return (k % groups) * (c // groups) + k // groups


def _channel_index(input, order: np.ndarray) -> np.ndarray:
    """`order` along dim 1, spread over the input's shape (a gather's index)."""
    placed = order.reshape((1, -1) + (1,) * (input.dim() - 2))
    return np.ascontiguousarray(np.broadcast_to(placed, tuple(input.shape)))


def channel_shuffle(input, groups: int):
    """torch.nn.functional.channel_shuffle: (N, C, *) viewed as (N, g, C / g, *), the two channel
    dims swapped, back to (N, C, *) (one ChannelShuffleBackward0 node: a gather of the channels)."""
    order = _channel_order(input, groups)
    return apply_op("gather", [input, _channel_index(input, order)], {"axis": 1, "saves_input": False},
                    "ChannelShuffleBackward0")


def native_channel_shuffle(input, groups: int):
    """torch.native_channel_shuffle: channel_shuffle's values, with no derivative (torch's
    NotImplemented node: its backward raises torch's error)."""
    order = _channel_order(input, groups)
    inverse = np.argsort(order).astype(np.int64)
    return apply_op("scatter", [np.zeros(tuple(input.shape), input.dtype.np), _channel_index(input, inverse), input],
                    {"axis": 1, "no_derivative": "native_channel_shuffle"}, "NotImplemented")


_SHUFFLE_TEXTS = {name: ArgParser(name, "(Tensor input, int groups)")
                  for name in ("channel_shuffle", "native_channel_shuffle")}
channel_shuffle = function_texts(channel_shuffle, _SHUFFLE_TEXTS["channel_shuffle"])
native_channel_shuffle = function_texts(native_channel_shuffle, _SHUFFLE_TEXTS["native_channel_shuffle"])


# ---------------------------------------------------------------- pixel shuffle

def _shuffle(input, factor: int, inverse: bool):
    fn = "pixel_unshuffle" if inverse else "pixel_shuffle"
    F._check_tensor_args(fn, input=input)
    if input.dim() < 3:
        raise RuntimeError(f"{fn} expects input to have at least 3 dimensions, but got input with {input.dim()} "
                           "dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{fn} expects a positive {'downscale' if inverse else 'upscale'}_factor, but got {factor}")
    c, h, w = input.shape[-3:]
    if inverse:
        if h % factor:
            raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but "
                               f"input.size(-2)={h} is not divisible by {factor}")
        if w % factor:
            raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but "
                               f"input.size(-1)={w} is not divisible by {factor}")
    elif c % (factor * factor):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {factor * factor}")
    return apply_op(fn, [input], {"factor": int(factor)},
                    "PixelUnshuffleBackward0" if inverse else "PixelShuffleBackward0")


def pixel_shuffle(input, upscale_factor: int):
    """torch.nn.functional.pixel_shuffle: (*, C * r * r, H, W) -> (*, C, H * r, W * r)."""
    return _shuffle(input, upscale_factor, False)


def pixel_unshuffle(input, downscale_factor: int):
    """torch.nn.functional.pixel_unshuffle: (*, C, H * r, W * r) -> (*, C * r * r, H, W)."""
    return _shuffle(input, downscale_factor, True)


# ---------------------------------------------------------------- unfold / fold

def _fold_params(kernel_size, dilation, padding, stride) -> dict:
    params = {}
    for name, value in (("kernel_size", kernel_size), ("dilation", dilation), ("padding", padding), ("stride", stride)):
        value = ntuple(value, 2)
        if len(value) != 2:
            raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(value)}")
        params[name] = tuple(int(v) for v in value)
    k, d, p, s = params["kernel_size"], params["dilation"], params["padding"], params["stride"]
    if min(k) <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: {k[0]} kernel_width: {k[1]}")
    if min(d) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: {d[0]} dilation_width: {d[1]}")
    if min(p) < 0:
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {p[0]} pad_width: {p[1]}")
    if min(s) <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: {s[0]} stride_width: {s[1]}")
    return params


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.unfold (im2col): (N, C, H, W) -> (N, C * kH * kW, L), each column
    one sliding block, rows in (channel, kernel row, kernel column) order; a 3-D input is
    unbatched (Im2ColBackward0)."""
    F._check_tensor_args("unfold", input=input)
    if input.dim() < 3:
        from fusegrad.ir.ops import normalize_dim
        normalize_dim(2, input.dim())      # (torch's IndexError)
    params = _fold_params(kernel_size, dilation, padding, stride)
    if input.dim() > 4:
        raise RuntimeError("Input Error: Only 3D or 4D input Tensors are supported (got {}D)".format(input.dim()))
    size = tuple(input.shape[-2:])
    blocks = conv_output_size(size, params["kernel_size"], params["stride"], params["padding"], params["dilation"])
    if min(blocks) < 1:
        raise RuntimeError(f"Given input with spatial size {size}, kernel_size={params['kernel_size']}, "
                           f"dilation={params['dilation']}, padding={params['padding']}, calculated shape of the array "
                           f"of sliding blocks as {blocks}, but its components must be at least one.")
    return apply_op("im2col", [input], params, "Im2ColBackward0")


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.fold (col2im): (N, C * kH * kW, L) -> (N, C, *output_size), each
    column added back into its sliding block; a 2-D input is unbatched (Col2ImBackward0)."""
    F._check_tensor_args("fold", input=input)
    output_size = tuple(int(v) for v in ntuple(output_size, 2))
    if len(output_size) != 2:
        raise RuntimeError(f"It is expected output_size equals to 2, but got size {len(output_size)}")
    params = _fold_params(kernel_size, dilation, padding, stride)
    if input.dim() not in (2, 3) or input.shape[-1] == 0 or input.shape[-2] == 0:
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    k = params["kernel_size"]
    if input.shape[-2] % (k[0] * k[1]):
        raise RuntimeError(f"Expected size of input's dimension {input.dim() - 2} to be divisible by the product of "
                           f"kernel_size, but got input.size({input.dim() - 2})={input.shape[-2]} and kernel_size={k}.")
    blocks = conv_output_size(output_size, k, params["stride"], params["padding"], params["dilation"])
    if min(blocks) < 1 or blocks[0] * blocks[1] != input.shape[-1]:
        raise RuntimeError(f"Given output_size={output_size}, kernel_size={k}, dilation={params['dilation']}, "
                           f"padding={params['padding']}, stride={params['stride']}, expected size of input's "
                           f"dimension {input.dim() - 1} to match the calculated number of sliding blocks "
                           f"{blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got "
                           f"input.size({input.dim() - 1})={input.shape[-1]}.")
    return apply_op("col2im", [input], dict(params, output_size=output_size), "Col2ImBackward0")


# ---------------------------------------------------------------- modules

class _PadNd(Module):
    _mode = "constant"
    _nd = 1

    def __init__(self, padding, value=None) -> None:
        super().__init__()
        self.padding = ntuple(padding, 2 * self._nd)
        if self._mode == "constant":
            self.value = value

    def forward(self, input):
        """F.pad of `input` by the module's padding."""
        if self._mode == "constant":
            return pad(input, self.padding, "constant", self.value)
        return pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        """torch's: the padding, then ", value=..." for constant padding."""
        if self._mode == "constant":
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"


def _pad_module(name: str, mode: str, nd: int, doc: str, zero: bool = False):
    body = {"_mode": mode, "_nd": nd, "__doc__": doc}
    if zero:
        def zero_init(self, padding) -> None:
            _PadNd.__init__(self, padding, 0.0)

        def extra_repr(self) -> str:
            """torch's: the padding."""
            return f"{self.padding}"
        body.update(__init__=zero_init, extra_repr=extra_repr)
    elif mode == "constant":
        def const_init(self, padding, value) -> None:
            _PadNd.__init__(self, padding, value)
        body["__init__"] = const_init
    else:
        def plain_init(self, padding) -> None:
            _PadNd.__init__(self, padding)
        body["__init__"] = plain_init
    cls = type(name, (_PadNd,), body)
    cls.__module__ = __name__
    return cls


ZeroPad1d = _pad_module("ZeroPad1d", "constant", 1, "torch.nn.ZeroPad1d: zeros before and after the last dim.", True)
ZeroPad2d = _pad_module("ZeroPad2d", "constant", 2, "torch.nn.ZeroPad2d: (left, right, top, bottom) zeros.", True)
ConstantPad1d = _pad_module("ConstantPad1d", "constant", 1, "torch.nn.ConstantPad1d(padding, value).")
ConstantPad2d = _pad_module("ConstantPad2d", "constant", 2, "torch.nn.ConstantPad2d(padding, value).")
ReflectionPad1d = _pad_module("ReflectionPad1d", "reflect", 1, "torch.nn.ReflectionPad1d: mirror without the edge.")
ReflectionPad2d = _pad_module("ReflectionPad2d", "reflect", 2, "torch.nn.ReflectionPad2d: mirror without the edge.")
ReplicationPad1d = _pad_module("ReplicationPad1d", "replicate", 1, "torch.nn.ReplicationPad1d: the edge repeated.")
ReplicationPad2d = _pad_module("ReplicationPad2d", "replicate", 2, "torch.nn.ReplicationPad2d: the edge repeated.")
CircularPad1d = _pad_module("CircularPad1d", "circular", 1, "torch.nn.CircularPad1d: wrapped around.")
CircularPad2d = _pad_module("CircularPad2d", "circular", 2, "torch.nn.CircularPad2d: wrapped around.")
ZeroPad3d = _pad_module("ZeroPad3d", "constant", 3, "torch.nn.ZeroPad3d: (left, right, top, bottom, front, back) zeros.",
                        True)
ConstantPad3d = _pad_module("ConstantPad3d", "constant", 3, "torch.nn.ConstantPad3d(padding, value).")
ReflectionPad3d = _pad_module("ReflectionPad3d", "reflect", 3, "torch.nn.ReflectionPad3d: mirror without the edge.")
ReplicationPad3d = _pad_module("ReplicationPad3d", "replicate", 3, "torch.nn.ReplicationPad3d: the edge repeated.")
CircularPad3d = _pad_module("CircularPad3d", "circular", 3, "torch.nn.CircularPad3d: wrapped around.")


class Upsample(Module):
    """torch.nn.Upsample: F.interpolate with the module's size or scale_factor and mode."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                 recompute_scale_factor=None) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        self.scale_factor = float(scale_factor) if isinstance(scale_factor, (int, float)) else (
            tuple(float(f) for f in scale_factor) if scale_factor else None)
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        """F.interpolate of `input`."""
        return interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                           recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        """torch's: "scale_factor=2.0, mode='nearest'" (or size=...)."""
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """torch.nn.UpsamplingNearest2d: Upsample with mode 'nearest' (no deprecation warning, as torch's)."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """torch.nn.UpsamplingBilinear2d: Upsample with mode 'bilinear' and align_corners=True."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class ChannelShuffle(Module):
    """torch.nn.ChannelShuffle(groups): F.channel_shuffle."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input):
        """F.channel_shuffle of `input`."""
        return channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        """torch's: "groups=2"."""
        return f"groups={self.groups}"


class PixelShuffle(Module):
    """torch.nn.PixelShuffle(upscale_factor)."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        """F.pixel_shuffle of `input`."""
        return pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        """torch's: "upscale_factor=2"."""
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """torch.nn.PixelUnshuffle(downscale_factor)."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        """F.pixel_unshuffle of `input`."""
        return pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        """torch's: "downscale_factor=2"."""
        return f"downscale_factor={self.downscale_factor}"


class Unfold(Module):
    """torch.nn.Unfold: F.unfold (im2col)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):
        """F.unfold of `input`."""
        return unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        """torch's: "kernel_size=..., dilation=..., padding=..., stride=..."."""
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")


class Fold(Module):
    """torch.nn.Fold: F.fold (col2im)."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):
        """F.fold of `input`."""
        return fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        """torch's: "output_size=..., kernel_size=..., dilation=..., padding=..., stride=..."."""
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
