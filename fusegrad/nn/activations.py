"""torch.nn's further activations: the functional forms (relu6, hardtanh, hardsigmoid, hardswish,
selu, celu, mish, softsign, softmin, logsigmoid, tanhshrink, threshold, glu, prelu, hardshrink,
softshrink, rrelu and the in-place forms) and their modules.

Where torch records an activation as a node of its own (HardtanhBackward0, EluBackward0 for
selu, MishBackward0, ...) it is one op here (ir/ops/nn_activations.py) under that node's name;
where torch's Python composes public ops (softsign, softmin, tanhshrink), so does this. Inside
`fg.compile` every one of them traces and compiles (the ops decompose into fused elementwise
code). Argument checks raise torch's exception classes and texts.
"""
from __future__ import annotations

import warnings

import numpy as np

import fusegrad as fg
from fusegrad.ir.ops import normalize_dim
from fusegrad.tracer import generator as random_generator
from fusegrad.tracer.dispatch import apply_op
from fusegrad.tracer.inplace import check_inplace
from fusegrad.tracer.parser_errors import type_name
from fusegrad.tracer.scalar_checks import check_scalar_fits
from fusegrad.tracer.user_frame import user_stacklevel

from .functional import _accepting_arrays, _check_tensor_args, _dtype_name, _float_activation, _softmax_dim, elu
from .functional import leaky_relu
from .module import Module, Parameter

__all__ = ["relu6", "hardtanh", "hardtanh_", "hardsigmoid", "hardswish", "selu", "selu_", "celu", "celu_", "mish",
           "softsign", "softmin", "logsigmoid", "tanhshrink", "threshold", "threshold_", "glu", "prelu",
           "hardshrink", "softshrink", "rrelu", "rrelu_", "elu_", "leaky_relu_", "gumbel_softmax",
           "ReLU6", "Hardtanh", "Hardsigmoid", "Hardswish", "SELU", "CELU", "Mish", "Softsign", "Softmin",
           "LogSigmoid", "Tanhshrink", "Threshold", "GLU", "PReLU", "Hardshrink", "Softshrink", "RReLU"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _numbers(fn: str, input, **numbers) -> None:
    """torch's parser TypeError for a non-number Scalar argument, then its overflow check of
    each number written into the input's dtype."""
    for position, (name, value) in enumerate(numbers.items(), start=2):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be Number, not {type_name(value)}")
    for value in numbers.values():
        check_scalar_fits(value, input.dtype)


def _activate(op: str, input, attrs: dict, name: str, inplace: bool = False, inplace_name: str | None = None):
    """The op on `input` under torch's node name; with `inplace`, written into `input`."""
    if inplace:
        check_inplace(input)
        apply_op(op, [input], attrs, inplace_name or name, out=input)
        return input
    return apply_op(op, [input], attrs, name)


# ---------------------------------------------------------------- functional forms

def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
    """x clamped to [min_val, max_val] (torch's HardtanhBackward0: the gradient passes strictly
    inside the interval; NaN passes through). An integer input is clamped without a node
    (torch takes integers too); a bool input is torch's error."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    fn = "hardtanh_" if inplace else "hardtanh"
    _check_tensor_args(fn, input=input)
    _numbers(fn, input, min_val=min_val, max_val=max_val)
    if input.dtype == fg.bool:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if not input.dtype.is_floating_point:
        low, high = int(min_val), int(max_val)
        return input.clamp_(low, high) if inplace else input.clamp(low, high)
    attrs = {"min_val": float(min_val), "max_val": float(max_val), "from_result": bool(inplace)}
    return _activate("hardtanh", input, attrs, "HardtanhBackward0", inplace)


def hardtanh_(input, min_val: float = -1.0, max_val: float = 1.0):
    """hardtanh written into `input` (torch records HardtanhBackward0, reading the result)."""
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace: bool = False):
    """min(max(x, 0), 6): torch's hardtanh(x, 0, 6) (HardtanhBackward0)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def _float_op(fn: str, kernel: str, op: str, input, name: str, inplace: bool, attrs=None, inplace_name=None):
    _check_tensor_args(fn + ("_" if inplace else ""), input=input)
    _float_activation(kernel, input)
    return _activate(op, input, attrs or {}, name, inplace, inplace_name)


def hardsigmoid(input, inplace: bool = False):
    """relu6(x + 3) / 6, as torch's kernel (HardsigmoidBackward0: grad / 6 strictly inside (-3, 3))."""
    return _float_op("hardsigmoid", "hardsigmoid", "hardsigmoid", input, "HardsigmoidBackward0", inplace)


def hardswish(input, inplace: bool = False):
    """x * relu6(x + 3) / 6, as torch's kernel (HardswishBackward0)."""
    return _float_op("hardswish", "hardswish", "hardswish", input, "HardswishBackward0", inplace)


def mish(input, inplace: bool = False):
    """x * tanh(softplus(x)), computed as torch's kernel, x * tanh(log1p(exp(x))) (MishBackward0)."""
    return _float_op("mish", "mish", "mish", input, "MishBackward0", inplace)


def selu(input, inplace: bool = False):
    """scale * elu(x, alpha) with torch's SELU constants, one EluBackward0 node as torch's
    elu(x, alpha, scale) (in place: EluBackward1, whose gradient reads the result)."""
    attrs = {"alpha": _SELU_ALPHA, "scale": _SELU_SCALE, "input_scale": 1.0, "from_result": bool(inplace)}
    return _float_op("selu", "elu", "scaled_elu", input, "EluBackward0", inplace, attrs, "EluBackward1")


def selu_(input):
    """selu written into `input` (EluBackward1)."""
    return selu(input, inplace=True)


def celu(input, alpha: float = 1.0, inplace: bool = False):
    """x where x > 0, else alpha * (exp(x / alpha) - 1): torch's elu(x, alpha, 1, 1 / alpha)
    (CeluBackward0; in place CeluBackward1, reading the result)."""
    fn = "celu_" if inplace else "celu"
    _check_tensor_args(fn, input=input)
    _numbers(fn, input, alpha=alpha)
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    attrs = {"alpha": float(alpha), "scale": 1.0, "input_scale": 1.0 / float(alpha), "from_result": bool(inplace)}
    return _float_op("celu", "elu", "scaled_elu", input, "CeluBackward0", inplace, attrs, "CeluBackward1")


def celu_(input, alpha: float = 1.0):
    """celu written into `input` (CeluBackward1)."""
    return celu(input, alpha, inplace=True)


def softsign(input):
    """x / (|x| + 1), as torch's Python composes it (DivBackward0 of AbsBackward0, AddBackward0)."""
    return input / (input.abs() + 1)


def softmin(input, dim=None, _stacklevel: int = 3, dtype=None):
    """softmax(-x) along `dim` (torch's Python: NegBackward0 then SoftmaxBackward0); `dtype`
    casts the negated input first. dim=None warns and picks torch's legacy dim."""
    if dim is None:
        dim = _softmax_dim(input.dim(), "softmin", _stacklevel)
    return (-input).softmax(dim) if dtype is None else (-input).softmax(dim, dtype=dtype)


def logsigmoid(input):
    """log(sigmoid(x)), computed stably as torch's kernel: min(x, 0) - log1p(exp(-|x|))
    (LogSigmoidBackward0)."""
    return _float_op("log_sigmoid_forward", "log_sigmoid", "log_sigmoid", input, "LogSigmoidBackward0", False)


def tanhshrink(input):
    """x - tanh(x), as torch's Python composes it (SubBackward0 of TanhBackward0)."""
    return input - input.tanh()


def threshold(input, threshold: float, value: float, inplace: bool = False):
    """x where x > threshold, else value (ThresholdBackward0; in place ThresholdBackward1, whose
    gradient, as torch's, tests the input as it was). Integers are thresholded without a node
    (value written as an integer); a bool input is torch's error."""
    fn = "threshold_" if inplace else "threshold"
    _check_tensor_args(fn, input=input)
    _numbers(fn, input, threshold=threshold, value=value)
    if input.dtype == fg.bool:
        raise NotImplementedError("\"threshold_cpu\" not implemented for 'Bool'")
    if not input.dtype.is_floating_point:
        below = input <= threshold
        if inplace:
            return input.masked_fill_(below, int(value))
        return fg.where(below, fg.tensor(int(value), dtype=input.dtype), input)
    attrs = {"threshold": float(threshold), "value": float(value)}
    return _activate("threshold", input, attrs, "ThresholdBackward0", inplace, "ThresholdBackward1")


def threshold_(input, threshold: float, value: float):
    """threshold written into `input` (ThresholdBackward1)."""
    return globals()["threshold"](input, threshold, value, inplace=True)


def glu(input, dim: int = -1):
    """a * sigmoid(b), a and b the halves of `input` along `dim` (GluBackward0)."""
    _check_tensor_args("glu", input=input)
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"glu(): argument 'dim' (position 2) must be int, not {type_name(dim)}")
    axis = normalize_dim(int(dim), input.dim())
    if input.shape[axis] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {axis} is size {input.shape[axis]}")
    _float_activation("glu", input)
    return apply_op("glu", [input], {"dim": axis}, "GluBackward0")


def prelu(input, weight):
    """x where x > 0, else weight * x, the weight (one value, or one per channel: dim 1) viewed to
    broadcast over the input as torch's prelu does (ViewBackward0, then PreluKernelBackward0)."""
    _check_tensor_args("prelu", self=input, weight=weight)
    if input.dtype != weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {_dtype_name(input.dtype)} and "
                           f"{_dtype_name(weight.dtype)}")
    ndim = input.dim()
    if weight.numel() != 1:
        if ndim == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if ndim > 1 else 1
        if channels != weight.numel():
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{weight.numel()} and channel size = {channels}.")
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}")
    if ndim != weight.dim():
        shape = [1] * ndim
        if ndim > 1:
            shape[1] = weight.numel()
        weight = weight.reshape(tuple(shape))
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"prelu_cpu\" not implemented for '{_dtype_name(input.dtype)}'")
    return apply_op("prelu", [input, weight], None, "PreluKernelBackward0")


def hardshrink(input, lambd: float = 0.5):
    """0 where -lambd <= x <= lambd, else x (HardshrinkBackward0)."""
    _check_tensor_args("hardshrink", input=input)
    _numbers("hardshrink", input, lambd=lambd)
    return _float_op("hardshrink", "hardshrink", "hardshrink", input, "HardshrinkBackward0", False,
                     {"lambd": float(lambd)})


def softshrink(input, lambd: float = 0.5):
    """x - lambd above lambd, x + lambd below -lambd, else 0 (x * 0, as torch's kernel: -0.0 for
    a negative x, NaN for NaN) (SoftshrinkBackward0); lambd must be non-negative."""
    _check_tensor_args("softshrink", input=input)
    _numbers("softshrink", input, lambd=lambd)
    _float_activation("softshrink_check", input)
    if not lambd >= 0:
        largest = float(np.finfo(input.dtype.np).max)
        raise RuntimeError(f"lambda must be in range [0, {largest:g}] for input dtype {_dtype_name(input.dtype)}, "
                           f"but found {lambd:g}")
    return _activate("softshrink", input, {"lambd": float(lambd)}, "SoftshrinkBackward0")


def rrelu(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, inplace: bool = False):
    """Randomized leaky ReLU (RreluWithNoiseBackward0; in place RreluWithNoiseBackward1).

    Not training: x where x > 0, else x * (lower + upper) / 2, exactly torch's. Training: each
    element at or below 0 is multiplied by its own slope, a double uniform in [lower, upper)
    drawn for it alone in row-major order (torch's numbers: its CPU kernel's loop); the gradient
    there is that slope, as torch's."""
    fn = "rrelu_" if inplace else "rrelu"
    _check_tensor_args(fn, input=input)
    _numbers(fn, input, lower=lower, upper=upper)
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    _float_activation("leaky_relu", input)
    if training:
        noise = _rrelu_noise(input, lower, upper)
    else:
        noise = np.asarray((lower + upper) / 2, dtype=input.dtype.np)
    if inplace:
        check_inplace(input)
        apply_op("rrelu", [input, noise], {"from_result": True}, "RreluWithNoiseBackward1", out=input)
        return input
    return apply_op("rrelu", [input, noise], {"from_result": False}, "RreluWithNoiseBackward0")


def gumbel_softmax(logits, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1):
    """torch's F.gumbel_softmax: softmax((logits + g) / tau) along `dim`, g ~ Gumbel(0, 1) drawn
    as -log of an exponential_ draw into a row-major tensor (torch's numbers); with `hard`, the
    one-hot of its argmax, differentiated as the soft sample (straight through)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=user_stacklevel())
    gumbels = -fg.empty_like(logits, memory_format=fg.contiguous_format).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = fg.zeros_like(logits, memory_format=fg.contiguous_format).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def _rrelu_noise(input, lower: float, upper: float) -> np.ndarray:
    """Training rrelu's slopes, as torch's CPU kernel draws them: over the input's elements in
    row-major order, one double uniform in [lower, upper) for each at or below 0 (in the
    input's dtype), 1 for the others, which take no draw. Reads the values (inside fg.compile,
    a graph break)."""
    values = np.ascontiguousarray(input.detach().numpy())
    at_or_below = values <= 0
    noise = np.ones(values.shape, values.dtype)
    # (torch's bounds are of the input's dtype's arithmetic type, float for float32: the draw
    # is a double uniform between the bounds rounded to it)
    low, high = (float(values.dtype.type(bound)) for bound in (lower, upper))
    noise[at_or_below] = random_generator.required(None, "rrelu").uniform(
        int(at_or_below.sum()), np.float64, low, high, fused=False).astype(values.dtype)
    return noise


def rrelu_(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False):
    """rrelu written into `input` (RreluWithNoiseBackward1)."""
    return rrelu(input, lower, upper, training, inplace=True)


def elu_(input, alpha: float = 1.0):
    """elu written into `input` (EluBackward1)."""
    return elu(input, alpha, inplace=True)


def leaky_relu_(input, negative_slope: float = 0.01):
    """leaky_relu written into `input` (LeakyReluBackward1)."""
    return leaky_relu(input, negative_slope, inplace=True)


for _name in __all__:
    if _name[0].islower():
        globals()[_name] = _accepting_arrays(globals()[_name])
del _name


# ---------------------------------------------------------------- modules

def _inplace_repr(inplace: bool) -> str:
    return "inplace=True" if inplace else ""


class Hardtanh(Module):
    """F.hardtanh as a module (torch's deprecated min_value/max_value keywords are accepted,
    with its warning)."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value=None, max_value=None) -> None:
        super().__init__()
        import warnings
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and rename to `min_val`",
                          FutureWarning, stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and rename to `max_val`",
                          FutureWarning, stacklevel=2)
            max_val = max_value
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace
        if not self.max_val > self.min_val:
            raise AssertionError

    def forward(self, input):
        """F.hardtanh of `input`."""
        return hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        """torch's: "min_val=-1.0, max_val=1.0", then ", inplace=True" when in place."""
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class ReLU6(Hardtanh):
    """F.relu6 as a module (torch's Hardtanh(0, 6))."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        """torch's: "inplace=True" when in place, else empty."""
        return _inplace_repr(self.inplace)


class _Inplace(Module):
    """An activation module whose only option is `inplace`."""

    _function = None

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        """The activation of `input`, in place when built with inplace=True."""
        return type(self)._function(input, inplace=self.inplace)


class Hardsigmoid(_Inplace):
    """F.hardsigmoid as a module (torch prints no options)."""

    _function = staticmethod(hardsigmoid)


class Hardswish(_Inplace):
    """F.hardswish as a module (torch prints no options)."""

    _function = staticmethod(hardswish)


class SELU(_Inplace):
    """F.selu as a module."""

    _function = staticmethod(selu)

    def extra_repr(self) -> str:
        """torch's: "inplace=True" when in place, else empty."""
        return _inplace_repr(self.inplace)


class Mish(_Inplace):
    """F.mish as a module."""

    _function = staticmethod(mish)

    def extra_repr(self) -> str:
        """torch's: "inplace=True" when in place, else empty."""
        return _inplace_repr(self.inplace)


class CELU(Module):
    """F.celu as a module."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        """F.celu of `input`."""
        return celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        """torch's: "alpha=1.0", then ", inplace=True" when in place."""
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class _Plain(Module):
    """An activation module without options (torch's accept and ignore any arguments)."""

    _function = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input):
        """The activation of `input`."""
        return type(self)._function(input)


class Softsign(_Plain):
    """F.softsign as a module."""

    _function = staticmethod(softsign)


class LogSigmoid(_Plain):
    """F.logsigmoid as a module."""

    _function = staticmethod(logsigmoid)


class Tanhshrink(_Plain):
    """F.tanhshrink as a module."""

    _function = staticmethod(tanhshrink)


class Softmin(Module):
    """F.softmin along `dim` as a module."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input):
        """F.softmin of `input` along `dim` (dim=None warns, as torch's)."""
        return softmin(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        """torch's: "dim=1"."""
        return f"dim={self.dim}"


class Threshold(Module):
    """F.threshold as a module."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        """F.threshold of `input`."""
        return globals()["threshold"](input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        """torch's: "threshold=0.1, value=20", then ", inplace=True" when in place."""
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")


class GLU(Module):
    """F.glu along `dim` as a module."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input):
        """F.glu of `input` along `dim`."""
        return glu(input, self.dim)

    def extra_repr(self) -> str:
        """torch's: "dim=-1"."""
        return f"dim={self.dim}"


class PReLU(Module):
    """F.prelu with a learnable `weight` of `num_parameters` values, each `init` (torch's)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(fg.empty(num_parameters, dtype=dtype, device=device))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight `init` (torch's constant_)."""
        with fg.no_grad():
            self.weight.fill_(self.init)

    def forward(self, input):
        """F.prelu of `input` with this module's weight."""
        return prelu(input, self.weight)

    def extra_repr(self) -> str:
        """torch's: "num_parameters=1"."""
        return f"num_parameters={self.num_parameters}"


class Hardshrink(Module):
    """F.hardshrink as a module."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        """F.hardshrink of `input`."""
        return hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        """torch's: the lambda alone, "0.5"."""
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """F.softshrink as a module."""

    def forward(self, input):
        """F.softshrink of `input`."""
        return softshrink(input, self.lambd)


class RReLU(Module):
    """F.rrelu as a module: random slopes while training, their mean in eval mode."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        """F.rrelu of `input`, training as this module is."""
        return rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        """torch's: "lower=0.125, upper=0.3333333333333333", then ", inplace=True"."""
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")
