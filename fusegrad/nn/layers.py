"""Layers and containers: Linear, activations, Flatten, Sequential, losses.

Each mirrors its torch.nn namesake: constructor arguments, registered
parameter names, `extra_repr`, and `forward` through `fusegrad.nn.functional`.
"""
from __future__ import annotations

import math

import fusegrad as fg

from . import functional as F
from . import init
from .module import Module, Parameter

__all__ = ["Identity", "Linear", "ReLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "Flatten",
           "MSELoss", "CrossEntropyLoss", "NLLLoss"]


class Identity(Module):
    """Returns its input unchanged (accepts and ignores any constructor arguments)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input):
        """Return `input` itself."""
        return input


class Linear(Module):
    """y = x @ weight.T + bias, with weight (out_features, in_features).

    Initialised as torch does: weight by kaiming_uniform_(a=sqrt(5)) and bias
    uniformly, both U(-1/sqrt(in_features), 1/sqrt(in_features)), drawn from
    fusegrad's RNG (`fg.manual_seed` makes it reproducible).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        dtype = fg.float32 if dtype is None else dtype
        self.weight = Parameter(fg.empty((out_features, in_features), dtype=dtype))
        if bias:
            self.bias = Parameter(fg.empty((out_features,), dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Redraw weight and bias from torch's default distributions."""
        # kaiming_uniform_ with a=sqrt(5) gives bound = 1/sqrt(fan_in), see torch issue #57109.
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        """input @ weight.T + bias (F.linear)."""
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        """The repr's arguments, as torch prints them: in_features, out_features, bias."""
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class ReLU(Module):
    """max(x, 0) elementwise."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        """F.relu of `input`, in place when the module was built with inplace=True."""
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        """The repr's argument, as torch prints it: "inplace=True" when in place, else empty."""
        return "inplace=True" if self.inplace else ""


class Dropout(Module):
    """During training, zeroes each element with probability p and scales the rest by
    1 / (1 - p) (F.dropout); in eval mode, returns its input unchanged."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        """F.dropout(input, p, training, inplace)."""
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        """The repr's arguments, as torch prints them: "p=0.5, inplace=False"."""
        return f"p={self.p}, inplace={self.inplace}"


class Tanh(Module):
    """tanh(x) elementwise."""

    def forward(self, input):
        """tanh of `input`, elementwise."""
        return input.tanh()


class Sigmoid(Module):
    """1 / (1 + exp(-x)) elementwise."""

    def forward(self, input):
        """sigmoid of `input`, elementwise."""
        return input.sigmoid()


class Softmax(Module):
    """softmax along `dim`."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input):
        """F.softmax of `input` along `dim` (dim=None warns and picks one, as torch does)."""
        return F.softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        """The repr's argument, as torch prints it: dim."""
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """log_softmax along `dim`."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input):
        """F.log_softmax of `input` along `dim` (dim=None warns and picks one, as torch does)."""
        return F.log_softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        """The repr's argument, as torch prints it: dim."""
        return f"dim={self.dim}"


class Flatten(Module):
    """Flattens dims `start_dim`..`end_dim` into one."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        """`input` with dims start_dim..end_dim flattened into one."""
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        """The repr's arguments, as torch prints them: start_dim, end_dim."""
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = F._legacy_reduction(size_average, reduce, reduction)


class MSELoss(_Loss):
    """`F.mse_loss` as a module."""

    def forward(self, input, target):
        """F.mse_loss of `input` against `target`, reduced by `reduction`."""
        return F.mse_loss(input, target, reduction=self.reduction)


class CrossEntropyLoss(_Loss):
    """`F.cross_entropy` as a module; `weight` is kept as a buffer."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        """F.cross_entropy of logits `input` against `target` (class indices or probabilities)
        with this module's weight, ignore_index, reduction and label_smoothing."""
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_Loss):
    """`F.nll_loss` as a module; `weight` is kept as a buffer."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        """F.nll_loss of log-probabilities `input` against class indices `target`
        with this module's weight, ignore_index and reduction."""
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)
