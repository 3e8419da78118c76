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

__all__ = ["Identity", "Linear", "Bilinear", "Softmax2d", "Dropout", "ReLU", "GELU", "SiLU", "LeakyReLU", "Softplus", "Embedding", "LayerNorm", "Tanh", "Sigmoid",
           "Softmax", "LogSoftmax", "Flatten", "MSELoss", "L1Loss", "CrossEntropyLoss", "NLLLoss",
           "BCELoss", "BCEWithLogitsLoss"]


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
        # (device: checked as torch's factories check it; fusegrad's tensors are all on the CPU)
        self.weight = Parameter(fg.empty((out_features, in_features), dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(fg.empty((out_features,), dtype=dtype, device=device))
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


class Bilinear(Module):
    """y = x1 @ weight @ x2 + bias per output feature: weight (out_features, in1_features,
    in2_features), bias (out_features,) (F.bilinear). Initialised as torch's: weight, then bias,
    uniform in +-1/sqrt(in1_features), from fusegrad's generator."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        dtype = fg.float32 if dtype is None else dtype
        self.weight = Parameter(fg.empty((out_features, in1_features, in2_features), dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(fg.empty(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Redraw weight and bias uniformly in +-1/sqrt(in1_features), as torch's."""
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        """F.bilinear(input1, input2, weight, bias)."""
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        """The repr's arguments, as torch prints them."""
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


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


class _DropoutNd(Module):
    """torch's base of the dropout modules (Dropout here; Dropout1d/2d/3d and the alpha
    dropouts in dropout.py): p checked and kept with inplace."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        """The repr's arguments, as torch prints them: "p=0.5, inplace=False"."""
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """During training, zeroes each element with probability p and scales the rest by
    1 / (1 - p) (F.dropout); in eval mode, returns its input unchanged."""

    def forward(self, input):
        """F.dropout(input, p, training, inplace)."""
        return F.dropout(input, self.p, self.training, self.inplace)


class SiLU(Module):
    """x * sigmoid(x) elementwise (F.silu)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        """F.silu of `input`, in place when built with inplace=True."""
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        """"inplace=True" when in place, else empty (torch's)."""
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    """x * Phi(x) elementwise (F.gelu; approximate='tanh' for the tanh formula)."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        """F.gelu of `input`."""
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        """torch's: "approximate='none'"."""
        return f"approximate={self.approximate!r}"


class LeakyReLU(Module):
    """x where x > 0, else negative_slope * x (F.leaky_relu)."""

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        """F.leaky_relu of `input`."""
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        """torch's: "negative_slope=0.01", then ", inplace=True" when in place."""
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    """x where x > 0, else alpha * (exp(x) - 1) (F.elu)."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        """F.elu of `input`."""
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        """torch's: "alpha=1.0", then ", inplace=True" when in place."""
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta, linear past the threshold (F.softplus)."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        """F.softplus of `input`."""
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        """torch's: "beta=1.0, threshold=20.0"."""
        return f"beta={self.beta}, threshold={self.threshold}"


class Embedding(Module):
    """A table of `num_embeddings` vectors of size `embedding_dim`, looked up by index
    (F.embedding); initialised N(0, 1) from the generator, the padding row zeroed."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None, max_norm=None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False,
                 _weight=None, _freeze: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        padding_idx = F._padding_row(padding_idx, num_embeddings, "Padding_idx")
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = Parameter(fg.empty(num_embeddings, embedding_dim, dtype=dtype, device=device),
                                    requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, padding_idx=None, max_norm=None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False):
        """torch's Embedding.from_pretrained: an Embedding whose weight is a Parameter over
        `embeddings` (a 2-d tensor, its memory shared), frozen unless `freeze=False`; the
        padding row keeps its values."""
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings, _freeze=freeze,
                   padding_idx=padding_idx, max_norm=max_norm, norm_type=norm_type,
                   scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)

    def reset_parameters(self) -> None:
        """N(0, 1) weights (torch's init.normal_), the padding row zero."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with fg.no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input):
        """The rows of `input`'s indices."""
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        """torch's: "10, 3", then the options that differ from their defaults."""
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            text += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            text += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            text += ", scale_grad_by_freq={scale_grad_by_freq}".format(scale_grad_by_freq=self.scale_grad_by_freq)
        if self.sparse is not False:
            text += ", sparse=True"
        return text


class EmbeddingBag(Module):
    """torch.nn.EmbeddingBag: a table of `num_embeddings` vectors (N(0, 1), the padding row
    zeroed, as Embedding's) reduced per bag of indices by F.embedding_bag (mode 'mean' by
    default, 'sum' or 'max')."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm=None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False, _weight=None,
                 include_last_offset: bool = False, padding_idx=None, device=None, dtype=None) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        self.padding_idx = F._padding_row(padding_idx, num_embeddings, "padding_idx")
        if _weight is None:
            self.weight = Parameter(fg.empty(num_embeddings, embedding_dim, dtype=dtype, device=device))
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight)
        self.mode, self.sparse, self.include_last_offset = mode, sparse, include_last_offset

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, max_norm=None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                        include_last_offset: bool = False, padding_idx=None):
        """torch's EmbeddingBag.from_pretrained: the weight a Parameter over `embeddings`, frozen
        unless `freeze=False`."""
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings, max_norm=max_norm,
                  norm_type=norm_type, scale_grad_by_freq=scale_grad_by_freq, mode=mode, sparse=sparse,
                  include_last_offset=include_last_offset, padding_idx=padding_idx)
        bag.weight.requires_grad = not freeze
        return bag

    def reset_parameters(self) -> None:
        """N(0, 1) weights, the padding row zero (as Embedding's)."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with fg.no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input, offsets=None, per_sample_weights=None):
        """F.embedding_bag of `input` (and `offsets`) with the module's table and options."""
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                               self.mode, self.sparse, per_sample_weights, self.include_last_offset,
                               self.padding_idx)

    def extra_repr(self) -> str:
        """torch's: "10, 3, mode='mean'", with the options that differ from their defaults."""
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            text += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            text += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            text += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        text += f", mode='{self.mode}'"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        return text


class LayerNorm(Module):
    """Layer normalisation over the trailing `normalized_shape` dims (F.layer_norm), with a
    learnable elementwise weight (ones) and bias (zeros) unless elementwise_affine=False."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(fg.ones(self.normalized_shape, dtype=dtype, device=device))
            self.bias = Parameter(fg.zeros(self.normalized_shape, dtype=dtype, device=device)) if bias else None
        else:
            self.weight = None
            self.bias = None

    def forward(self, input):
        """F.layer_norm(input, normalized_shape, weight, bias, eps)."""
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        """torch's: "(4,), eps=1e-05, elementwise_affine=True, bias=True"."""
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


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


class Softmax2d(Module):
    """softmax over the channels (dim -3) of a 3-d (C, H, W) or 4-d (N, C, H, W) input."""

    def forward(self, input):
        """F.softmax along dim -3; ValueError (torch's text) for another number of dims."""
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3, _stacklevel=5)


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


class Unflatten(Module):
    """Unflattens dim `dim` into `unflattened_size` (torch's nn.Unflatten for an int dim)."""

    def __init__(self, dim: int, unflattened_size) -> None:
        super().__init__()
        if isinstance(dim, str):
            raise NotImplementedError("fusegrad: nn.Unflatten by a dimension name (named tensors are not supported)")
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(f"unflattened_size must be a tuple of ints, but found type {type(unflattened_size).__name__}")
        for k, n in enumerate(unflattened_size):
            if not isinstance(n, int):
                raise TypeError(f"unflattened_size must be tuple of ints, but found element of type "
                                f"{type(n).__name__} at pos {k}")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input):
        """`input` with dim `dim` split into `unflattened_size`."""
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        """The repr's arguments, as torch prints them: dim, unflattened_size."""
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = F._legacy_reduction(size_average, reduce, reduction)


class MSELoss(_Loss):
    """`F.mse_loss` as a module."""

    def forward(self, input, target):
        """F.mse_loss of `input` against `target`, reduced by `reduction`."""
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """`F.l1_loss` as a module."""

    def forward(self, input, target):
        """F.l1_loss of `input` against `target`, reduced by `reduction`."""
        return F.l1_loss(input, target, reduction=self.reduction)


class BCELoss(_Loss):
    """`F.binary_cross_entropy` as a module; `weight` is kept as a buffer."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)

    def forward(self, input, target):
        """F.binary_cross_entropy of probabilities `input` against `target`, with this module's
        weight and reduction."""
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """`F.binary_cross_entropy_with_logits` as a module; `weight` and `pos_weight` are kept as
    buffers."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean",
                 pos_weight=None) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        """F.binary_cross_entropy_with_logits of logits `input` against `target`, with this
        module's weight, pos_weight and reduction."""
        return F.binary_cross_entropy_with_logits(input, target, self.weight, pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


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
