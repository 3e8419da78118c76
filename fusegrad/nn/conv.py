"""torch.nn.functional's convolutions and the Conv / ConvTranspose modules.

conv1d/2d/3d and conv_transpose1d/2d/3d record one ConvolutionBackward0 node, over
the IR ops `convolution` / `convolution_nobias` (ir/ops/conv.py: im2col and one BLAS product);
an unbatched input is unsqueezed and the result squeezed, as torch's. padding='same' pads
symmetrically where it can; otherwise the input is first padded at the end
(ConstantPadNdBackward0), as torch's _convolution_mode does.
"""
from __future__ import annotations

import math
import warnings

import fusegrad as fg
from fusegrad.ir.ops.conv import _check_shapes
from fusegrad.tracer.dispatch import apply_op
from fusegrad.tracer.user_frame import user_stacklevel

from . import functional as F, init
from .module import Module, Parameter

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
           "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_C_NAMES = {"float32": "Float", "float64": "Double", "int64": "Long", "bool": "Bool"}
_TYPE_NAMES = {"float32": "float", "float64": "double", "int64": "long int", "bool": "bool"}


def ntuple(value, n: int) -> tuple:
    """`value` as a tuple of n ints: an int repeated, a sequence as it is (torch's _ntuple)."""
    if isinstance(value, (list, tuple)):
        return tuple(value)
    return (value,) * n


def _expand_param(values: tuple, name: str, k: int) -> tuple:
    """torch's expand_param_if_needed: one value for every dim, or exactly k of them."""
    if len(values) == 1:
        return values * k
    if len(values) != k:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {k} values to match the "
                           f"convolution dimensions, but got {name}={list(values)}")
    return tuple(int(v) for v in values)


def convolution(input, weight, bias, stride, padding, dilation, transposed: bool, output_padding, groups: int):
    """torch.convolution on a batched input: the parameter checks of at::_convolution, then
    one ConvolutionBackward0 node (its bias edge (None, 0) when there is no bias)."""
    k = weight.dim() - 2
    stride = _expand_param(tuple(stride), "stride", k)
    padding = _expand_param(tuple(padding), "padding", k)
    dilation = _expand_param(tuple(dilation), "dilation", k)
    output_padding = _expand_param(tuple(output_padding), "output_padding", k)
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if input.dim() != weight.dim():
        raise RuntimeError(f"Expected {weight.dim()}-dimensional input for {weight.dim()}-dimensional weight "
                           f"{list(weight.shape)}, but got {input.dim()}-dimensional input of size "
                           f"{list(input.shape)} instead")
    attrs = {"stride": stride, "padding": padding, "dilation": dilation, "groups": int(groups),
             "transposed": bool(transposed), "output_padding": output_padding if transposed else (0,) * k}
    _check_shapes(input, weight, bias, attrs)
    if transposed and any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
        # (torch's texts name a 1-d convolution's as the width of a plane of height 1)
        op, s, d = (0,) * (2 - k) + output_padding, (1,) * (2 - k) + stride, (1,) * (2 - k) + dilation
        raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                           f"output_padding_height: {op[-2]} output_padding_width: {op[-1]} stride_height: {s[-2]} "
                           f"stride_width: {s[-1]} dilation_height: {d[-2]} dilation_width: {d[-1]}")
    if weight.dtype != input.dtype and input.dtype is fg.float32 and input.shape[0] >= 2:
        # (torch's oneDNN path, which it takes for a float32 batch of two or more, words it so)
        raise RuntimeError(f"Input type (torch.{_C_NAMES[input.dtype.name]}Tensor) and weight type "
                           f"(torch.{_C_NAMES[weight.dtype.name]}Tensor) should be the same or input should be a "
                           "MKLDNN tensor and weight is a dense tensor")
    if weight.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {_C_NAMES[input.dtype.name]} but found {_C_NAMES[weight.dtype.name]}")
    if bias is not None and bias.dtype != input.dtype:
        raise RuntimeError(f"Input type ({_TYPE_NAMES[input.dtype.name]}) and bias type "
                           f"({_TYPE_NAMES[bias.dtype.name]}) should be the same")
    if bias is None:
        return apply_op("convolution_nobias", [input, weight], attrs, "ConvolutionBackward0")
    return apply_op("convolution", [input, weight, bias], attrs, "ConvolutionBackward0")


def _batched(input, nd: int, fn: str):
    """(input with a batch dim, whether it had one), with torch's text for another rank."""
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {fn}, but got input of "
                           f"size: {list(input.shape)}")
    return (input, True) if input.dim() == nd + 2 else (input.unsqueeze(0), False)


def _conv(input, weight, bias, stride, padding, dilation, groups, nd: int, fn: str):
    F._check_tensor_args(fn, optional=("bias",), input=input, weight=weight, bias=bias)
    x, batched = _batched(input, nd, fn)
    stride, dilation = ntuple(stride, nd), ntuple(dilation, nd)
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        if padding == "valid":
            padding = (0,) * nd
        else:
            x, padding = _same_padding(x, weight, stride, dilation)
    else:
        padding = ntuple(padding, nd)
    y = convolution(x, weight, bias, stride, padding, dilation, False, (0,), groups)
    return y if batched else y.squeeze(0)


def _same_padding(x, weight, stride, dilation):
    """torch's padding='same': (input, padding), the input padded at the end of each dim
    whose total padding is odd (torch warns once)."""
    k = weight.dim() - 2
    if any(s != 1 for s in _expand_param(tuple(stride), "stride", k)):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    dilation = _expand_param(tuple(dilation), "dilation", k)
    total = [d * (kk - 1) for d, kk in zip(dilation, weight.shape[2:])]
    left = [t // 2 for t in total]
    if all(t % 2 == 0 for t in total):
        return x, tuple(left)
    warnings.warn("Using padding='same' with even kernel lengths and odd dilation may require a zero-padded copy "
                  "of the input be created", UserWarning, stacklevel=user_stacklevel())
    pads = []
    for t in reversed(total):       # (F.pad's order: the last dim first)
        pads += [0, t % 2]
    from .padding import pad
    return pad(x, tuple(pads)), tuple(left)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.nn.functional.conv1d: input (N, C, L) or unbatched (C, L), weight (O, C/groups, k);
    padding an int, a tuple, 'valid' or 'same' (stride 1 only)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.nn.functional.conv2d: input (N, C, H, W) or unbatched (C, H, W), weight
    (O, C/groups, kH, kW); padding an int, a pair, 'valid' or 'same' (stride 1 only)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.nn.functional.conv3d: input (N, C, D, H, W) or unbatched (C, D, H, W), weight
    (O, C/groups, kD, kH, kW); padding an int, a triple, 'valid' or 'same' (stride 1 only)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, nd, fn):
    F._check_tensor_args(fn, optional=("bias",), input=input, weight=weight, bias=bias)
    x, batched = _batched(input, nd, fn)
    y = convolution(x, weight, bias, ntuple(stride, nd), ntuple(padding, nd), ntuple(dilation, nd), True,
                    ntuple(output_padding, nd), groups)
    return y if batched else y.squeeze(0)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """torch.nn.functional.conv_transpose1d: weight (C_in, C_out/groups, k); output length
    (L - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                           "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """torch.nn.functional.conv_transpose2d: weight (C_in, C_out/groups, kH, kW) (the gradient
    of conv2d with respect to its input)."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                           "conv_transpose2d")


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """torch.nn.functional.conv_transpose3d: weight (C_in, C_out/groups, kD, kH, kW) (the
    gradient of conv3d with respect to its input)."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 3,
                           "conv_transpose3d")


# ---------------------------------------------------------------- modules

class _ConvNd(Module):
    """The common part of torch's Conv and ConvTranspose modules: argument checks, weight
    (out, in/groups, *k) or transposed (in, out/groups, *k), bias (out,), torch's default
    initialisation (kaiming_uniform_(a=sqrt(5)), bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)))."""

    _nd = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None) -> None:
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_padding_modes:
            raise ValueError(f"padding_mode must be one of {valid_padding_modes}, but got padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding, self.dilation = kernel_size, stride, padding, dilation
        self.transposed, self.output_padding, self.groups, self.padding_mode = transposed, output_padding, groups, padding_mode
        if isinstance(padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total = d * (k - 1)
                    self._reversed_padding_repeated_twice[2 * i] = total // 2
                    self._reversed_padding_repeated_twice[2 * i + 1] = total - total // 2
        else:
            self._reversed_padding_repeated_twice = [p for p in reversed(padding) for _ in range(2)]
        dtype = fg.float32 if dtype is None else dtype
        shape = ((in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups))
        self.weight = Parameter(fg.empty(shape + tuple(kernel_size), dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(fg.empty((out_channels,), dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Redraw weight and bias from torch's default distributions."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        """torch's: "3, 16, kernel_size=(3, 3), stride=(1, 1)", then the non-default arguments."""
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None) -> None:
        n = self._nd
        super().__init__(in_channels, out_channels, ntuple(kernel_size, n), ntuple(stride, n),
                         padding if isinstance(padding, str) else ntuple(padding, n), ntuple(dilation, n),
                         False, (0,) * n, groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        fn = (conv1d, conv2d, conv3d)[self._nd - 1]
        if self.padding_mode != "zeros":
            from .padding import pad
            return fn(pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode), weight, bias,
                      self.stride, (0,) * self._nd, self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        """The convolution of `input` by the module's weight and bias."""
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """torch.nn.Conv1d: (N, C_in, L) -> (N, C_out, L_out); padding_mode 'zeros', 'reflect',
    'replicate' or 'circular'."""

    _nd = 1


class Conv2d(_Conv):
    """torch.nn.Conv2d: (N, C_in, H, W) -> (N, C_out, H_out, W_out); padding_mode 'zeros',
    'reflect', 'replicate' or 'circular'."""

    _nd = 2


class Conv3d(_Conv):
    """torch.nn.Conv3d: (N, C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out); padding_mode
    'zeros', 'reflect', 'replicate' or 'circular'."""

    _nd = 3


class _ConvTranspose(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {self.__class__.__name__}')
        n = self._nd
        super().__init__(in_channels, out_channels, ntuple(kernel_size, n), ntuple(stride, n), ntuple(padding, n),
                         ntuple(dilation, n), True, ntuple(output_padding, n), groups, bias, padding_mode,
                         device, dtype)

    def _output_padding(self, input, output_size) -> tuple:
        """torch's _output_padding: the output_padding that gives `output_size`, checked."""
        if output_size is None:
            return self.output_padding
        n = self._nd
        has_batch = input.dim() == n + 2
        output_size = list(output_size)
        if len(output_size) == n + (2 if has_batch else 1):
            output_size = output_size[-n:]
        if len(output_size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.dim()}D input, output_size must have {n} or "
                             f"{n + (2 if has_batch else 1)} elements (got {len(output_size)})")
        result = []
        for d in range(n):
            dim_size = input.shape[d + input.dim() - n]
            smallest = (dim_size - 1) * self.stride[d] - 2 * self.padding[d] + self.dilation[d] * (self.kernel_size[d] - 1) + 1
            largest = smallest + self.stride[d] - 1
            if not smallest <= output_size[d] <= largest:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from "
                                 f"{self._sizes(input, 0)} to {self._sizes(input, 1)} "
                                 f"(for an input of {list(input.shape[input.dim() - n:])})")
            result.append(output_size[d] - smallest)
        return tuple(result)

    def _sizes(self, input, largest: int) -> list:
        n = self._nd
        return [(input.shape[d + input.dim() - n] - 1) * self.stride[d] - 2 * self.padding[d]
                + self.dilation[d] * (self.kernel_size[d] - 1) + 1 + largest * (self.stride[d] - 1) for d in range(n)]

    def forward(self, input, output_size=None):
        """The transposed convolution of `input`; `output_size` picks the output_padding."""
        fn = (conv_transpose1d, conv_transpose2d, conv_transpose3d)[self._nd - 1]
        return fn(input, self.weight, self.bias, self.stride, self.padding, self._output_padding(input, output_size),
                  self.groups, self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """torch.nn.ConvTranspose1d: weight (C_in, C_out/groups, k)."""

    _nd = 1


class ConvTranspose2d(_ConvTranspose):
    """torch.nn.ConvTranspose2d: weight (C_in, C_out/groups, kH, kW)."""

    _nd = 2


class ConvTranspose3d(_ConvTranspose):
    """torch.nn.ConvTranspose3d: weight (C_in, C_out/groups, kD, kH, kW)."""

    _nd = 3
