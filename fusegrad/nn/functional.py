"""torch.nn.functional's activations and losses, written in public Tensor ops.

Every value here is computed by a composition of Tensor methods, so it
records autograd history eagerly and traces into one SSA program inside
`fg.compile` (cross_entropy picks the target class with a one-hot mask built
by comparing the targets with `fg.arange`, not with a gather). Input
validation reproduces torch's exception classes and texts; only the
class-index bounds check reads tensor data (see `_check_bounds`).
"""
from __future__ import annotations

import functools
import math
import warnings

import numpy as np

import fusegrad as fg
from fusegrad.ir.ops import broadcast_shapes, expands_to
from fusegrad.ir.types import TORCH_SCALAR_NAMES, TORCH_TYPE_NAMES, float32, promote_types
from fusegrad.tracer.creation import wrap_array
from fusegrad.tracer.dispatch import apply_op, broadcast_shape_error, result_cast_error
from fusegrad.tracer.functional import broadcast_shapes as infer_size
from fusegrad.tracer.functional import bernoulli_draws, cast, mm_attrs
from fusegrad.tracer.scalar_checks import check_scalar_fits
from fusegrad.tracer.parser_errors import ArgParser, function_texts, type_name
from fusegrad.tracer.user_frame import user_stacklevel

__all__ = ["linear", "bilinear", "relu", "relu_", "tanh", "sigmoid", "softmax", "log_softmax", "embedding_bag",
           "nll_loss", "cross_entropy", "mse_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits"]



def _check_parameter_dtypes(input, parameters: list) -> None:
    """torch's CPU check of a normalisation's parameters: the first one's dtype other than the
    input's is its "mixed dtype" path (for a bfloat16 or half input, which fusegrad has not:
    each parameter must be float32, then the input must be reduced); another parameter of
    another dtype than the input's is its kernel's type error."""
    if not parameters:
        return
    if parameters[0].dtype != input.dtype:
        if any(p.dtype is not float32 for p in parameters):
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    for p in parameters[1:]:
        if p.dtype != input.dtype:
            raise RuntimeError(f"expected scalar type {_dtype_name(input.dtype)} but found {_dtype_name(p.dtype)}")


def _dtype_name(dtype) -> str:
    """torch's C++ scalar-type name (`Float`, `Double`, `Long`, `Bool`)."""
    return TORCH_SCALAR_NAMES.get(dtype.name, dtype.name)


def _shape_list(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _is_float(t) -> bool:
    return t.dtype in (fg.float32, fg.float64)


def _cast(t, dtype):
    """`t` converted to a floating dtype (bool/int masks to float weights)."""
    return t.double() if dtype == fg.float64 else t.float()


def _as_tensor(x):
    return x if isinstance(x, fg.Tensor) else fg.tensor(x)


def _check_tensor_args(function: str, optional: tuple = (), **args) -> None:
    """torch's TypeError for a non-tensor argument of a native function (`relu(): argument ...`);
    the parameters named in `optional` (`Tensor bias = None`) also take None."""
    for position, (name, value) in enumerate(args.items(), start=1):
        if not isinstance(value, fg.Tensor) and not (value is None and name in optional):
            kind_name = type_name(value)
            raise TypeError(f"{function}(): argument '{name}' (position {position}) must be Tensor, not {kind_name}")


# ---- layers and activations ------------------------------------------------

def linear(input, weight, bias=None):
    """`input @ weight.T + bias` as torch's at::linear computes it: with a bias, a 2-d input
    or (mostly) a contiguous one takes the fused addmm (on the input flattened to rows:
    ViewBackward0 of AddmmBackward0, see _fused); any other takes matmul(input, weight.t())
    and then adds the bias in place (AddBackward0: the bias must broadcast to the product)."""
    _check_tensor_args("linear", optional=("bias",), input=input, weight=weight, bias=bias)
    if input.dim() == 0 or weight.dim() == 0:
        raise RuntimeError("both arguments to linear need to be at least 1D, but they are "
                           f"{input.dim()}D and {weight.dim()}D")
    if weight.dim() > 2:        # (torch takes weight.t() before anything checks dtypes)
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {weight.dim()}D")
    if bias is not None and _fused(input, weight, bias):
        return _linear_addmm(input, weight, bias)
    out = input.matmul(weight.t())      # (its checks are matmul's; a 1-d weight is its own transpose)
    return out if bias is None else out.add_(bias)


# (torch's F.linear is a native function: a bad call gets its parser's text, in its order)
linear = function_texts(linear, ArgParser("linear", "(Tensor input, Tensor weight, Tensor bias = None)"))


def bilinear(input1, input2, weight, bias=None):
    """sum over i, j of input1[..., i] * weight[o, i, j] * input2[..., j], plus bias[o]: torch's
    at::bilinear, with its checks and texts, the inputs' leading dims kept (a ViewBackward0
    result; AddBackward0 with a bias). The contraction is one matrix product and a
    multiply-sum over j, where torch records one _trilinear node (TrilinearBackward0)."""
    _check_tensor_args("bilinear", optional=("bias",), input1=input1, input2=input2, weight=weight, bias=bias)
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}")
    for d in range(input1.dim() - 1):
        if input1.shape[d] != input2.shape[d]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {d}: got "
                               f"{input1.shape[d]} and {input2.shape[d]}")
    for name, given, d in (("input1", input1.size(-1), 1), ("input2", input2.size(-1), 2)):
        if given != weight.size(d):
            raise RuntimeError(f"bilinear(): {name} size does not match weight size: got {given} but expected "
                               f"{weight.size(d)}")
    if bias is not None and bias.size(0) != weight.size(0):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {bias.size(0)} but expected "
                           f"{weight.size(0)}")
    if not input1.dtype is input2.dtype is weight.dtype:
        names = {fg.float32: "float", fg.float64: "double", fg.int64: "long", fg.bool: "bool"}
        raise RuntimeError(f"All tensors must have the same dtype, got input1: {names[input1.dtype]}, input2: "
                           f"{names[input2.dtype]}, weight: {names[weight.dtype]}")
    outputs, rows, columns = weight.shape
    left = input1.reshape(-1, rows).matmul(weight.permute(1, 0, 2).reshape(rows, outputs * columns))
    contracted = (left.reshape(-1, outputs, columns) * input2.reshape(-1, 1, columns)).sum(-1)
    out = contracted.reshape(*input1.shape[:-1], outputs)
    return out if bias is None else out + bias


bilinear = function_texts(bilinear, ArgParser("bilinear", "(Tensor input1, Tensor input2, Tensor weight, "
                                                          "Tensor bias = None)"))


def _fused(input, weight, bias) -> bool:
    """Whether torch's linear takes its fused addmm: a 2-d input; a contiguous one with a bias
    that is one row (its elements along the last dim: (3,), (1, 3)) or one column ((2, 1)),
    but not a one-element (1, 1).
    Worked out from torch 2.13's choices (its node names and errors) on 1- to 4-d inputs and
    0- to 3-d biases."""
    if input.dim() == 2:
        return True
    if not input.is_contiguous() or bias.dim() == 0 or (bias.dim() > 1 and bias.numel() == 1):
        return False
    return bias.shape[-1] == 1 or bias.numel() == bias.shape[-1]


def _rows(input) -> int:
    rows = 1
    for size in input.shape[:-1]:
        rows *= size
    return rows


def _linear_addmm(input, weight, bias):
    """torch's fused linear: addmm(bias, input as rows, weight.t()), one AddmmBackward0 node,
    viewed back to the input's leading dims; addmm checks the dtypes first, the bias's
    against the weight's first."""
    if bias.dtype != weight.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {_dtype_name(bias.dtype)} and "
                           f"{_dtype_name(weight.dtype)}")
    if input.dtype != weight.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{_dtype_name(input.dtype)} and {_dtype_name(weight.dtype)}")
    if weight.dim() != 2:
        raise RuntimeError(f"mat2 must be a matrix, got {weight.dim()}-D tensor")
    in_features, out_features = weight.shape[-1], weight.shape[0]
    rows = _rows(input)
    if input.shape[-1] != in_features:
        # torch names the transposed weight (in x out) as mat2
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{input.shape[-1]} and "
                           f"{in_features}x{out_features})")
    if not expands_to(bias.shape, (rows, out_features)):
        bias.detach().expand(rows, out_features)     # raises torch's expand error for addmm's bias
    # ((rows, in), not (-1, in): with no input features -1 would be ambiguous)
    matrix = input if input.dim() == 2 else input.reshape(rows, in_features)
    mat2 = weight.t()
    out = apply_op("addmm", [bias, matrix, mat2], mm_attrs(matrix, mat2), "AddmmBackward0")
    if input.dim() != 2:
        out = out.view(*input.shape[:-1], out_features)
    return out


def relu(input, inplace: bool = False):
    """max(input, 0); with `inplace` the result is written back into `input`."""
    _check_tensor_args("relu_" if inplace else "relu", input=input)
    if inplace:
        return input.relu_()      # one ReluBackward0 node, as torch's relu_
    return input.relu()


def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero each element with probability `p` and scale the others by 1 / (1 - p) when
    training (else `input` itself), as torch's CPU dropout: `input * noise`, noise a
    bernoulli_(1 - p) draw of torch's generator divided by 1 - p (MulBackward0)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    _check_tensor_args("dropout_" if inplace else "dropout", input=input)
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        noise = fg.zeros((), dtype=input.dtype)
    else:
        # (drawn and scaled out of place, the same numbers: inside fg.compile a call that wrote
        # no tensor in place stays differentiable twice, a gradient penalty through dropout)
        if input.dtype.is_floating_point:
            noise = bernoulli_draws(fg.empty_like(input), 1 - p, row_major=False) / (1 - p)
        else:                           # (torch's error: the in-place division of integers)
            noise = fg.empty_like(input).bernoulli_(1 - p)
            noise.div_(1 - p)
    return input.mul_(noise) if inplace else input * noise


def _float_activation(name: str, input) -> None:
    """torch's error for an activation of an integer or bool tensor."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_dtype_name(input.dtype)}'")


def silu(input, inplace: bool = False):
    """x * sigmoid(x), computed as torch does: x / (1 + exp(-x)) (SiluBackward0)."""
    _check_tensor_args("silu", input=input)
    _float_activation("silu", input)
    if inplace:
        fg.tracer.inplace.check_inplace(input)
        apply_op("silu", [input], None, "SiluBackward0", out=input)
        return input
    return apply_op("silu", [input], None, "SiluBackward0")


def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False):
    """x where x > 0, else x * negative_slope (LeakyReluBackward0; in place LeakyReluBackward1)."""
    _check_tensor_args("leaky_relu_" if inplace else "leaky_relu", input=input)
    if isinstance(negative_slope, bool) or not isinstance(negative_slope, (int, float, np.integer, np.floating)):
        raise TypeError(f"leaky_relu(): argument 'negative_slope' (position 2) must be Number, not "
                        f"{type(negative_slope).__name__}")
    _float_activation("leaky_relu", input)
    check_scalar_fits(negative_slope, input.dtype)      # torch's overflow error (1e39 for float32)
    slope = np.asarray(negative_slope, dtype=input.dtype.np)
    if inplace:
        fg.tracer.inplace.check_inplace(input)
        if negative_slope < 0 and input.requires_grad and fg.is_grad_enabled():
            raise RuntimeError(_LEAKY_NEGATIVE_IN_PLACE)
        apply_op("leaky_relu", [input, slope], None, "LeakyReluBackward1", out=input)
        return input
    return apply_op("leaky_relu", [input, slope], None, "LeakyReluBackward0")


_LEAKY_NEGATIVE_IN_PLACE = (
    "In-place leakyReLu backward calculation is triggered with a negative slope which is not supported. This is "
    "caused by calling in-place forward function with a negative slope, please call out-of-place version instead. "
    "File an issue at https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu backward "
    "calculation with negative slope")


def elu(input, alpha: float = 1.0, inplace: bool = False):
    """x where x > 0, else alpha * (exp(x) - 1), computed with expm1 as torch's kernel
    (EluBackward0; in place EluBackward1, whose gradient reads the result)."""
    _check_tensor_args("elu", input=input)
    if not isinstance(alpha, (int, float, np.integer, np.floating)):     # (a bool is a Number here)
        raise TypeError(f"elu(): argument 'alpha' (position 2) must be Number, not {type_name(alpha)}")
    _float_activation("elu", input)
    check_scalar_fits(alpha, input.dtype)
    value = np.asarray(alpha, dtype=input.dtype.np)
    if inplace:
        fg.tracer.inplace.check_inplace(input)
        apply_op("elu", [input, value], {"from_result": True}, "EluBackward1", out=input)
        return input
    return apply_op("elu", [input, value], {"from_result": False}, "EluBackward0")


def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None):
    """input / max(||input||_p over dim, eps), as torch's Python (the norm, clamp_min, expand_as
    and a division: DivBackward0); with `out`, the division writes into it (torch's div(out=):
    its error where an argument requires grad)."""
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    if out is not None:
        return fg.div(input, denom, out=out)
    return input / denom


def gelu(input, *, approximate: str = "none"):
    """x * Phi(x), Phi the standard normal CDF (approximate='tanh': torch's tanh formula); GeluBackward0."""
    _check_tensor_args("gelu", input=input)
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"GeluKernelImpl\" not implemented for '{_dtype_name(input.dtype)}'")
    return apply_op("gelu", [input], {"approximate": approximate}, "GeluBackward0")


def softplus(input, beta: float = 1.0, threshold: float = 20.0):
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold (SoftplusBackward0)."""
    _check_tensor_args("softplus", input=input)
    for arg, value in (("beta", beta), ("threshold", threshold)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise TypeError(f"softplus(): argument '{arg}' must be Number, not {type_name(value)}")
    _float_activation("softplus", input)
    for value in (beta, threshold):
        check_scalar_fits(value, input.dtype)           # torch's overflow error (1e39 for float32)
    return apply_op("softplus", [input], {"beta": float(beta), "threshold": float(threshold)}, "SoftplusBackward0")


def relu_(input):
    """relu written into `input` (torch.nn.functional.relu_)."""
    return relu(input, inplace=True)


def tanh(input):
    """Elementwise hyperbolic tangent."""
    return input.tanh()


def sigmoid(input):
    """Elementwise logistic function."""
    return input.sigmoid()


def _softmax_dim(ndim: int, name: str, stacklevel: int = 3) -> int:
    # torch's legacy rule for an omitted dim, with its deprecation warning.
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. "
                  "Change the call to include dim=X as an argument.", UserWarning,
                  stacklevel=stacklevel + 1)    # (+1: the public function's wrapper, _accepting_arrays)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel: int = 3, dtype=None):
    """exp(x) / sum(exp(x)) along `dim` (numerically stable); `dtype` casts first.

    The signature is torch's: `dtype` comes after the internal `_stacklevel`."""
    if dim is None:
        dim = _softmax_dim(input.dim(), "softmax", _stacklevel)
    return input.softmax(dim) if dtype is None else input.softmax(dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel: int = 3, dtype=None):
    """x - logsumexp(x) along `dim`; `dtype` casts first (torch's signature, as softmax)."""
    if dim is None:
        dim = _softmax_dim(input.dim(), "log_softmax", _stacklevel)
    return input.log_softmax(dim) if dtype is None else input.log_softmax(dim, dtype=dtype)


# ---- losses ------------------------------------------------------------------

_REDUCTIONS = ("none", "mean", "sum")


def _check_reduction(reduction: str) -> str:
    """torch's `_Reduction.get_enum` check: the reduction to use, or its ValueError.
    The deprecated 'elementwise_mean' means 'mean', with torch's warning."""
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.",
                      UserWarning, stacklevel=user_stacklevel())
        return "mean"
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _legacy_reduction(size_average, reduce, reduction: str) -> str:
    """torch's mapping of the deprecated size_average/reduce flags, with its warning."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    result = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{result}' instead.",
                  UserWarning, stacklevel=user_stacklevel())
    return result


def _class_view(t, ndim: int):
    """Reshape a per-class vector (C,) so it broadcasts along dim 1 of an ndim-d input."""
    if ndim == 1:
        return t
    return t.reshape((1, t.shape[0]) + (1,) * (ndim - 2))


def _check_class_targets(input, target, weight, ignore_index: int) -> None:
    """torch's nll_loss_nd checks: dims, batch size, spatial shape, dtype, weight, bounds."""
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if input.dim() != 1:
        target_batch = target.shape[0] if target.dim() > 0 else 0
        if input.shape[0] != target_batch:
            raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match "
                             f"target batch_size ({target_batch}).")
        if target.dim() == 0:       # (an empty batch passes the check above; torch's kernel then reads size(0))
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    if input.dim() <= 2:
        if target.dim() > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    elif input.dim() == 4:
        if target.dim() != 3:
            raise RuntimeError("only batches of spatial targets supported (3D tensors) but got "
                               f"targets of dimension: {target.dim()}")
        if tuple(target.shape) != (input.shape[0],) + tuple(input.shape[2:]):
            raise RuntimeError(f"size mismatch (got input: {_shape_list(input.shape)} , "
                               f"target: {_shape_list(target.shape)}")
    elif tuple(target.shape[1:]) != tuple(input.shape[2:]):
        expected = (input.shape[0],) + tuple(input.shape[2:])
        raise RuntimeError(f"Expected target size {_shape_list(expected)}, got {_shape_list(target.shape)}")
    if target.dtype != fg.int64:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {_dtype_name(target.dtype)}")
    if input.dim() == 1 and target.dim() == 1 and target.shape[0] != 1:
        raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {target.shape[0]}")
    n_classes = input.shape[1] if input.dim() > 1 else input.shape[0]
    if weight is not None:
        if weight.requires_grad and fg.is_grad_enabled():
            # torch's nll_loss has no derivative for weight (a label-smoothed loss would have one)
            kernel = "nll_loss_forward" if input.dim() <= 2 else "nll_loss2d_forward"
            raise RuntimeError(f"The function '{kernel}' is not differentiable with respect to argument 'weight'. "
                               "This input cannot have requires_grad True.")
        if weight.dim() != 1 or weight.shape[0] != n_classes:
            if input.dim() > 2:             # (torch's nll_loss2d / nll_loss_nd text)
                raise RuntimeError("weight tensor should be defined either for all or no classes")
            raise RuntimeError(f"weight tensor should be defined either for all {n_classes} classes or no "
                               f"classes but got weight tensor of shape: {_shape_list(weight.shape)}")
        if weight.dtype != input.dtype:
            raise RuntimeError(f"expected scalar type {_dtype_name(input.dtype)} but found "
                               f"{_dtype_name(weight.dtype)}")
    _check_bounds(target, n_classes, ignore_index)


def _unbatched_target(input, target):
    """The target of one unbatched sample: a (1,) target of a (C,) input read as 0-d."""
    return target.reshape(()) if input.dim() == 1 and target.dim() == 1 else target


def _check_bounds(target, n_classes: int, ignore_index: int) -> None:
    """IndexError `Target k is out of bounds.` for the first invalid class index.

    Validation has to read the targets, as torch's kernel does. A target that
    is a concrete tensor (the usual case, also as an argument of a compiled
    function) is read for free; only a target computed inside `fg.compile`
    costs a graph break. The loss itself never touches NumPy.
    """
    if target.numel() == 0:
        return
    # (_concrete, not numpy(): inside fg.compile numpy() hands the memory to Python, and the
    # trace then copies it at every later read in case Python writes it; this only reads it)
    values = np.asarray(target._concrete()).reshape(-1)
    if values.min() >= 0 and values.max() < n_classes:     # the common case: two reductions
        return
    bad = ((values < 0) | (values >= n_classes)) & (values != ignore_index)
    if bad.any():
        raise IndexError(f"Target {int(values[np.argmax(bad)])} is out of bounds.")


def _picked(values, one_hot, class_dim: int):
    """values[target] along the class dim, written as a masked sum (traceable, no gather op)."""
    zero = fg.zeros((), dtype=values.dtype)
    return fg.where(one_hot, values, zero).sum(class_dim)


def _nll_from_log_probs(log_probs, target, weight, ignore_index: int, reduction: str,
                        keep_smoothing: bool = False):
    """Negative log likelihood of class-index targets, as torch's nll_loss_nd.

    Returns the reduced loss and, for label smoothing, the ignore mask and
    the per-element weights.
    """
    ndim = log_probs.dim()
    class_dim = 1 if ndim > 1 else 0
    n_classes = log_probs.shape[class_dim]
    valid = target != ignore_index
    # Ignored positions get index -1, which matches no class.
    minus_one = fg.full((), -1, dtype=fg.int64)
    safe_target = fg.where(valid, target, minus_one)
    classes = _class_view(fg.arange(n_classes), ndim)
    one_hot = safe_target.unsqueeze(class_dim) == classes if ndim > 1 else safe_target == classes
    picked = _picked(log_probs, one_hot, class_dim)
    if weight is not None:
        w_t = _picked(_class_view(weight, ndim), one_hot, class_dim)
    else:
        w_t = _cast(valid, log_probs.dtype)
    # An ignored position matches no class, so its picked value is already 0.
    losses = -(w_t * picked) if weight is not None else -picked
    if reduction == "none":
        result = losses
    elif reduction == "sum":
        result = losses.sum()
    else:
        result = losses.sum() / w_t.sum()
    return result, valid, w_t


def nll_loss(input, target, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
             reduction: str = "mean"):
    """Negative log likelihood loss of log-probabilities `input` (N, C, ...) and class indices `target`."""
    _check_weight_arg("nll_loss_nd", weight)
    _check_ignore_index("nll_loss_nd", ignore_index)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    reduction = _check_reduction(reduction)
    _check_class_targets(input, target, weight, ignore_index)
    return _nll(input, _unbatched_target(input, target), weight, ignore_index, reduction)


_CLASS_INDICES: dict = {}      # n -> arange(n), shared by every nll_loss call with n classes


def _class_indices(n: int):
    """arange(n) as int64, made once per class count: a loss computed every step (a compiled
    call traces it each time) made a fresh one per call. Never written (nll_loss only reads
    it), so sharing it is invisible. Under inference_mode a fresh one: a tensor made there is an
    inference tensor, which a later nll_loss with grad could not save."""
    classes = _CLASS_INDICES.get(n)
    if classes is None:
        if fg.is_inference_mode_enabled():
            return fg.arange(n)
        if len(_CLASS_INDICES) >= 64:
            _CLASS_INDICES.clear()
        classes = _CLASS_INDICES[n] = fg.arange(n)
    return classes


def _nll(log_probs, target, weight, ignore_index: int, reduction: str):
    """The reduced loss as torch records it: one NllLossBackward0 node (the nll_loss op) for
    (N, C) and (C,) inputs, one NllLoss2DBackward0 (nll_loss_nd) for (N, C, H, W), and for
    other ranks the same on an (N, C, 1, d) view (viewed back to the target's shape for 'none')."""
    if not log_probs.dtype.is_floating_point:
        kernel = "nll_loss_out_frame" if log_probs.dim() in (1, 2) else "nll_loss2d_forward_out_frame"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{TORCH_SCALAR_NAMES[log_probs.dtype.name]}\'')
    if weight is not None and weight.dtype != log_probs.dtype:
        return _nll_from_log_probs(log_probs, target, weight, ignore_index, reduction)[0]
    attrs = {"reduction": reduction, "ignore_index": int(ignore_index)}
    extra = [weight] if weight is not None else []
    n_classes = log_probs.shape[-1] if log_probs.dim() == 1 else log_probs.shape[1]
    classes = _class_indices(n_classes)
    if log_probs.dim() in (1, 2):
        return apply_op("nll_loss", [log_probs, target, classes] + extra, attrs, "NllLossBackward0")
    if log_probs.dim() == 4:
        return apply_op("nll_loss_nd", [log_probs, target, classes] + extra, attrs, "NllLoss2DBackward0")
    # torch's nll_loss_nd: other ranks go through nll_loss2d on an (N, C, 1, d) view, and a
    # 'none' loss is viewed back to the target's shape (ViewBackward0 on both sides)
    n, size = log_probs.shape[0], target.numel() // max(log_probs.shape[0], 1)
    four, rows = ((n, n_classes, 1, size), (n, 1, size)) if log_probs.numel() else ((n, n_classes, 0, 0), (n, 0, 0))
    out = apply_op("nll_loss_nd", [log_probs.reshape(four), target.reshape(rows), classes] + extra, attrs,
                   "NllLoss2DBackward0")
    return out.view(*target.shape) if reduction == "none" else out


def _check_weight_arg(fn: str, weight) -> None:
    """torch's TypeError for a class `weight` that is neither None nor a tensor."""
    if weight is not None and not isinstance(weight, fg.Tensor):
        raise TypeError(f"{fn}(): argument 'weight' (position 3) must be Tensor, not {type_name(weight)}")


def _check_ignore_index(fn: str, ignore_index) -> None:
    """torch's parser takes an int only (a float or bool ignore_index would otherwise be
    compared with the targets silently)."""
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, (int, np.integer)):
        raise TypeError(f"{fn}(): argument 'ignore_index' (position 5) must be int, not {type_name(ignore_index)}")


def cross_entropy(input, target, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                  reduction: str = "mean", label_smoothing: float = 0.0):
    """Cross entropy between logits `input` (C,), (N, C) or (N, C, d1, ...) and `target`.

    `target` holds int64 class indices (shape of input without the class dim)
    or class probabilities (same shape as input, floating). Matches torch's
    values, gradients, `weight`, `ignore_index`, `label_smoothing` and
    reductions; validation errors use torch's classes and texts.
    """
    _check_tensor_args("cross_entropy_loss", input=input, target=target)
    _check_weight_arg("cross_entropy_loss", weight)
    _check_ignore_index("cross_entropy_loss", ignore_index)
    if isinstance(label_smoothing, bool) or not isinstance(label_smoothing, (int, float, np.integer, np.floating)):
        raise TypeError(f"cross_entropy_loss(): argument 'label_smoothing' (position 6) must be float, not "
                        f"{type(label_smoothing).__name__}")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    reduction = _check_reduction(reduction)
    # torch checks only the upper bound; a negative smoothing smooths nothing
    if label_smoothing > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {float(label_smoothing):g}")
    label_smoothing = max(label_smoothing, 0.0)
    class_dim = 0 if input.dim() == 1 else 1
    if tuple(input.shape) == tuple(target.shape):
        return _cross_entropy_probs(input, target, weight, ignore_index, reduction, label_smoothing, class_dim)
    log_probs = input.log_softmax(class_dim)  # torch's dim error for a 0-d input comes from here
    n_classes = input.shape[class_dim]
    _check_class_targets(input, target, weight, ignore_index)
    target = _unbatched_target(input, target)
    if label_smoothing == 0.0:
        return _nll(log_probs, target, weight, ignore_index, reduction)
    nll, valid, w_t = _nll_from_log_probs(log_probs, target, weight, ignore_index, reduction)
    # torch's cross_entropy_loss_label_smoothing: mix in the loss against the uniform distribution.
    if weight is not None:
        smooth = -(log_probs * _class_view(weight, input.dim())).sum(class_dim)
    else:
        smooth = -log_probs.sum(class_dim)
    smooth = fg.where(valid, smooth, fg.zeros((), dtype=smooth.dtype))
    if reduction == "mean":
        smooth = smooth.sum() / w_t.sum()
    elif reduction == "sum":
        smooth = smooth.sum()
    return nll * (1 - label_smoothing) + smooth * _per_class(label_smoothing, n_classes)


def _per_class(label_smoothing: float, n_classes: int) -> float:
    """The smoothing mass of one class; with no classes torch's C++ division gives inf (which
    then meets only empty tensors), where Python's would raise ZeroDivisionError."""
    return label_smoothing / n_classes if n_classes else math.inf


def _cross_entropy_probs(input, target, weight, ignore_index, reduction, label_smoothing, class_dim):
    """Cross entropy against class probabilities (torch's cross_entropy_loss_prob_target)."""
    if not _is_float(target):
        raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                           f"{_dtype_name(target.dtype)}")
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    log_probs = input.log_softmax(class_dim)
    n_classes = input.shape[class_dim]
    if label_smoothing > 0.0:
        target = target * (1 - label_smoothing) + _per_class(label_smoothing, n_classes)
    if weight is not None:
        if weight.dim() != 1 or weight.shape[0] != n_classes:
            raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all {n_classes} "
                               f"classes or no classes but got weight tensor of shape: {_shape_list(weight.shape)}")
        weighted = log_probs * target * _class_view(weight, input.dim())
    else:
        weighted = log_probs * target
    # torch's cross_entropy_loss_prob_target, op for op (so grad_fn names match).
    if reduction == "none":
        return -weighted.sum(class_dim)
    if reduction == "mean" and input.numel() == 0:
        return -weighted.sum().fill_(float("nan"))
    total = -weighted.sum()
    if reduction == "sum":
        return total
    # torch divides by the number of samples (numel / classes), not by the
    # weights, as a Scalar divisor (DivBackward1).
    count = input.numel() // n_classes
    return apply_op("div", [total, np.asarray(count, dtype=total.dtype.np)], None, "DivBackward1")


def _broadcast_pair(a, b) -> tuple:
    """torch.broadcast_tensors of two tensors: each expanded to their broadcast shape where its
    own differs (torch's broadcasting error where they do not broadcast)."""
    shape = tuple(broadcast_shapes(tuple(a.shape), tuple(b.shape)))
    return tuple(x if tuple(x.shape) == shape else x.expand(shape) for x in (a, b))


def mse_loss(input, target, size_average=None, reduce=None, reduction: str = "mean", weight=None):
    """Mean squared error `(input - target)**2`, reduced by `reduction`.

    Shapes broadcast as in torch (with its warning when they differ);
    `weight` (same shape as input) weighs each element, and the weighted
    mean divides by the weights' sum, as torch does.
    """
    # torch compares target.size() first: a non-tensor fails on that attribute
    if tuple(target.size()) != tuple(input.size()):
        warnings.warn(f"Using a target size (torch.Size({list(target.shape)})) that is different to the input "
                      f"size (torch.Size({list(input.shape)})). This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", UserWarning, stacklevel=user_stacklevel())
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if weight is None:
        # torch's Python checks the reduction (its deprecated spelling "elementwise_mean" is
        # "mean") before its mse kernel checks the dtypes; with weights, Python ops compute it
        reduction = _check_reduction(reduction)
        broadcast_shapes(tuple(input.shape), tuple(target.shape))   # (torch.broadcast_tensors, before the kernel)
        if not (_is_float(input) or _is_float(target)):
            dtype = fg.int64 if fg.int64 in (input.dtype, target.dtype) else input.dtype
            raise NotImplementedError(f"\"mse_cpu\" not implemented for '{_dtype_name(dtype)}'")
        # a bool operand is promoted with the other (torch's mse kernel); `-` would refuse it
        input, target = (x.to(y.dtype) if x.dtype == fg.bool else x for x, y in ((input, target), (target, input)))
    if weight is None and target.dtype != input.dtype and reduction in _REDUCTIONS:
        # torch's mse kernel computes in the promoted dtype (an int64 target with float32 input,
        # a float64 target): one MseLossBackward0 node (the input's cast, where it needs one,
        # is a ToCopyBackward0 before it here, inside torch's node there)
        promoted = promote_types(input.dtype, target.dtype)
        input, target = cast(input, promoted, implicit=True), cast(target, promoted, implicit=True)
    if weight is None and target.dtype == input.dtype and reduction in _REDUCTIONS:
        # torch.broadcast_tensors, then one MseLossBackward0 node
        input, target = _broadcast_pair(input, target)
        return apply_op("mse_loss", [input, target], {"reduction": reduction}, "MseLossBackward0")
    diff = input - target  # raises torch's broadcasting error first, as torch.broadcast_tensors does
    losses = diff * diff
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise ValueError("Weights and input must have the same size.")
        losses = losses * weight
        if reduction not in _REDUCTIONS:
            raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")
        if reduction == "mean":
            return losses.sum() / weight.sum()
    _check_reduction(reduction)
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    return losses.mean()


def _torch_size(t) -> str:
    """A tensor's (or a shape's) size as torch's texts print it: torch.Size([2, 3])."""
    return f"torch.Size({list(getattr(t, 'shape', t))})"


def _torch_dtype(dtype) -> str:
    """A dtype as torch's texts print it: torch.float32."""
    return "torch." + str(dtype).split(".")[-1]


def _not_differentiable(function: str, **weights) -> None:
    """torch's error for a weight that requires grad (with grad enabled): these losses have no
    derivative for it."""
    for name, w in weights.items():
        if w is not None and w.requires_grad and fg.is_grad_enabled():
            raise RuntimeError(f"The function '{function}' is not differentiable with respect to argument "
                               f"'{name}'. This input cannot have requires_grad True.")


def _weight_into(weight, shape: tuple, dtype):
    """An elementwise weight multiplied in place into a loss of `shape` (torch's `mul_`): it
    broadcasts to that shape without growing it (torch's errors otherwise), in `dtype`."""
    if weight is None:
        return None
    grown = broadcast_shapes(shape, tuple(weight.shape))      # (a: the loss, b: the weight)
    if tuple(grown) != tuple(shape):
        raise broadcast_shape_error(shape, grown)
    weight = cast(weight, dtype, implicit=True)
    return weight if tuple(weight.shape) == tuple(shape) else weight.expand(shape)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction: str = "mean", pos_weight=None):
    """Binary cross-entropy of sigmoid(input) against `target` (probabilities of the positive
    class), computed from the logits without overflow, as torch's one
    BinaryCrossEntropyWithLogitsBackward0 node: `weight` scales each element, `pos_weight`
    the positive term; both broadcast to the input's shape and take no gradient. The result
    has the target's dtype (torch computes in place into `1 - target`)."""
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    if tuple(target.size()) != tuple(input.size()):
        raise ValueError(f"Target size ({_torch_size(target)}) must be the same as input size ({_torch_size(input)})")
    return _bce_with_logits(input, target, weight, reduction, pos_weight)


def _bce_with_logits(input, target, weight, reduction: str, pos_weight):
    """torch's C++ binary_cross_entropy_with_logits (torch.binary_cross_entropy_with_logits):
    without F's check of the sizes, the input broadcast to the target's shape (torch computes
    into the target's shape: its in-place error where the broadcast is larger)."""
    _check_tensor_args("binary_cross_entropy_with_logits", input=input, target=target)
    if tuple(target.shape) != tuple(input.shape):
        # (target first: torch's failing op is `(1 - target).mul_(input)`, so its text names
        # the target's size as tensor a's)
        joint = broadcast_shapes(tuple(target.shape), tuple(input.shape))
        if tuple(joint) != tuple(target.shape):
            raise broadcast_shape_error(tuple(target.shape), joint)
        input = input.expand(tuple(joint))
    for position, (name, w) in enumerate((("weight", weight), ("pos_weight", pos_weight)), start=3):
        if w is not None and not isinstance(w, fg.Tensor):
            raise TypeError(f"binary_cross_entropy_with_logits(): argument '{name}' (position {position}) must "
                            f"be Tensor, not {type_name(w)}")
    _not_differentiable("binary_cross_entropy_with_logits", weight=weight, pos_weight=pos_weight)
    # torch's order: log_sigmoid(input), then pos_weight's terms, then (1 - target) * input
    if not _is_float(input):
        raise NotImplementedError(f"\"log_sigmoid_cpu\" not implemented for '{_dtype_name(input.dtype)}'")
    shape = tuple(input.shape)
    if pos_weight is not None:
        weighted = broadcast_shapes(tuple(pos_weight.shape), tuple(target.shape))
        if tuple(weighted) != shape:
            raise broadcast_shape_error(shape, weighted)
    if target.dtype == fg.bool:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if not _is_float(target):
        raise result_cast_error(_dtype_name(input.dtype), _dtype_name(target.dtype))
    dtype = target.dtype
    operands = [cast(input, dtype, implicit=True), target]
    weight = _weight_into(weight, shape, dtype)
    pos_weight = _weight_into(pos_weight, shape, dtype)
    operands += [w for w in (weight, pos_weight) if w is not None]
    return apply_op("bce_with_logits", operands,
                    {"reduction": reduction, "weighted": weight is not None, "pos_weighted": pos_weight is not None},
                    "BinaryCrossEntropyWithLogitsBackward0")


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
    """Binary cross-entropy of probabilities `input` against `target`, as torch's one
    BinaryCrossEntropyBackward0 node: each log is clamped at -100, so an input of exactly 0 or
    1 gives a finite loss; `weight` broadcasts to the input's shape and takes no gradient.

    torch's kernel checks that every input and target value lies in [0, 1], so this reads
    both tensors' values: inside `fg.compile` a computed input costs a graph break
    (`binary_cross_entropy_with_logits`, the stabler form torch recommends, reads nothing)."""
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    if tuple(target.size()) != tuple(input.size()):
        raise ValueError(f"Using a target size ({_torch_size(target)}) that is different to the input size "
                         f"({_torch_size(input)}) is deprecated. Please ensure they have the same size.")
    if weight is not None:      # (torch's _infer_size: a non-tensor weight fails on .size())
        new_size = infer_size(target.size(), weight.size())
        weight = weight.expand(new_size)
    _check_tensor_args("binary_cross_entropy", input=input, target=target)
    _not_differentiable("binary_cross_entropy", weight=weight)
    if not _is_float(input):
        raise NotImplementedError(f"\"binary_cross_entropy\" not implemented for '{_dtype_name(input.dtype)}'")
    if target.dtype != input.dtype:
        raise RuntimeError(f"Found dtype {_dtype_name(target.dtype)} but expected {_dtype_name(input.dtype)}")
    shape = tuple(input.shape)
    weight = _weight_into(weight, shape, input.dtype)
    _check_probabilities(input, target)
    operands = [input, target] + ([weight] if weight is not None else [])
    return apply_op("binary_cross_entropy", operands, {"reduction": reduction, "weighted": weight is not None},
                    "BinaryCrossEntropyBackward0")


def _check_probabilities(input, target) -> None:
    """torch's element-by-element check of binary_cross_entropy's operands: at the first
    element whose input or target lies outside [0, 1] (NaN included), the input's error, else
    the target's. It reads both tensors' values (see _check_bounds)."""
    if input.numel() == 0:
        return
    p = np.asarray(input._concrete()).reshape(-1)
    t = np.asarray(target._concrete()).reshape(-1)
    with np.errstate(invalid="ignore"):
        bad_p, bad_t = ~((p >= 0) & (p <= 1)), ~((t >= 0) & (t <= 1))
    bad = bad_p | bad_t
    if bad.any():
        which = "input" if bad_p[np.argmax(bad)] else "target"
        raise RuntimeError(f"all elements of {which} should be between 0 and 1")


def l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """Mean (or sum, or none) of |input - target|, as torch composes it (AbsBackward0, then
    MeanBackward0 or SumBackward0); shapes broadcast, with torch's warning when they differ."""
    if tuple(target.size()) != tuple(input.size()):
        warnings.warn(f"Using a target size (torch.Size({list(target.shape)})) that is different to the input "
                      f"size (torch.Size({list(input.shape)})). This will likely lead to incorrect results due to "
                      "broadcasting. Please ensure they have the same size.", UserWarning, stacklevel=user_stacklevel())
    reduction = _check_reduction(_legacy_reduction(size_average, reduce, reduction))
    # torch broadcasts the two first (broadcast_tensors: ExpandBackward0 on the one that grows), so
    # a 0-d float64 target of a float32 input is a dimensioned operand and promotes the loss
    input, target = _broadcast_pair(input, target)
    losses = (input - target).abs()
    if reduction == "none":
        return losses
    return losses.sum() if reduction == "sum" else losses.mean()


def one_hot(tensor, num_classes: int = -1):
    """int64 one-hot rows: out[..., k] = 1 where tensor == k (num_classes -1: max + 1)."""
    _check_tensor_args("one_hot", tensor=tensor)
    if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)):
        raise TypeError(f"one_hot(): argument 'num_classes' (position 2) must be int, not {type_name(num_classes)}")
    if tensor.dtype != fg.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.numel() == 0:
        if num_classes == -1:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return fg.zeros(tuple(tensor.shape) + (int(num_classes),), dtype=fg.int64)
    values = tensor.detach()
    low, high = int(values.min()), int(values.max())       # (torch reads them too: a graph break when traced)
    if low < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = high + 1
    elif high >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    classes = fg.arange(int(num_classes))
    return (values.unsqueeze(-1) == classes).long()


def _padding_row(padding_idx, num_embeddings: int, name: str):
    """A table's padding row (a negative one counted from the end), with torch's AssertionError
    outside the table (Embedding's text says `Padding_idx`, EmbeddingBag's `padding_idx`)."""
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings and padding_idx != 0:
        raise AssertionError(f"{name} must be within num_embeddings")
    return padding_idx + num_embeddings if padding_idx < 0 else padding_idx


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False):
    """Rows `weight[input]` (EmbeddingBackward0); the row at `padding_idx` gets no gradient, and
    with `scale_grad_by_freq` each row's gradient is divided by its index's count in `input`."""
    _check_tensor_args("embedding", input=input, weight=weight)
    padding_idx = _padding_row(padding_idx, weight.size(0), "Padding_idx")
    if sparse:
        raise NotImplementedError("fusegrad: F.embedding's sparse gradients are not supported")
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    if input.dtype != fg.int64:
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {TORCH_TYPE_NAMES[input.dtype.name]} instead (while checking "
                           "arguments for embedding)")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    return apply_op("embedding", [weight, input],
                    {"padding_idx": padding_idx, "scale_grad_by_freq": bool(scale_grad_by_freq)}, "EmbeddingBackward0")


_BAG_MODES = {"sum": "sum", "mean": "mean", "max": "max"}


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type: float = 2, scale_grad_by_freq: bool = False,
                  mode: str = "mean", sparse: bool = False, per_sample_weights=None, include_last_offset: bool = False,
                  padding_idx=None):
    """torch.nn.functional.embedding_bag: per bag of indices (the rows of a 2-d input, or the
    runs of a 1-d input that `offsets` start), the sum, mean or max of their rows of `weight`
    (EmbeddingBagBackward0), `per_sample_weights` weighting them in sum mode; an empty bag gives
    zeros; positions holding padding_idx count for nothing. torch's checks and texts, in its
    order. (The offsets' and indices' values are read: inside fg.compile a graph break.)"""
    _check_tensor_args("embedding_bag", optional=("offsets", "per_sample_weights"), input=input, weight=weight,
                       offsets=offsets, per_sample_weights=per_sample_weights)
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({_torch_size(per_sample_weights)}) is not None, "
                         f"then it must have the same shape as the input ({_torch_size(input)})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed "
                             f"length sequences. However, found offsets of type {_torch_class_text(offsets)}")
        offsets = fg.arange(0, input.numel(), input.size(1), dtype=input.dtype)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if mode not in _BAG_MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max":
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    if sparse:
        raise NotImplementedError("fusegrad: F.embedding_bag's sparse gradients are not supported")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    for name, t in (("indices", input), ("indices", offsets)):
        if t.dtype != fg.int64:
            raise RuntimeError(f"Expected tensor for argument #1 '{name}' to have one of the following scalar types: "
                               f"Long, Int; but got {TORCH_TYPE_NAMES[t.dtype.name]} instead (while checking "
                               "arguments for embedding_bag)")
    if per_sample_weights is not None and per_sample_weights.dtype != weight.dtype:
        raise RuntimeError("Expected tensor for argument #1 'weight' to have the same type as tensor for argument #1 "
                           f"'per_sample_weights'; but type {TORCH_TYPE_NAMES[weight.dtype.name]} does not equal "
                           f"{TORCH_TYPE_NAMES[per_sample_weights.dtype.name]} (while checking arguments for "
                           "embedding_bag)")
    bags, scale, num_bags = _bags_of(np.asarray(input.numpy()), np.asarray(offsets.numpy()), weight.size(0), mode,
                                     include_last_offset, padding_idx)
    if mode == "max":
        return apply_op("embedding_bag_max", [weight, input, fg.tensor(bags)], {"num_bags": num_bags},
                        "EmbeddingBagBackward0")[0]
    weights = fg.tensor(scale, dtype=weight.dtype) if per_sample_weights is None else per_sample_weights
    return apply_op("embedding_bag", [weight, input, fg.tensor(bags), weights],
                    {"num_bags": num_bags, "mode": mode, "scale_grad_by_freq": bool(scale_grad_by_freq)},
                    "EmbeddingBagBackward0")


def _torch_class_text(value) -> str:
    return "<class 'torch.Tensor'>" if isinstance(value, fg.Tensor) else str(type(value))


def _bags_of(indices: np.ndarray, offsets: np.ndarray, rows: int, mode: str, include_last_offset: bool,
             padding_idx):
    """(per index position its bag or -1, its weight in the bag's reduction, the bag count),
    with torch's checks of the offsets and indices."""
    count = indices.size
    if offsets.size and offsets[0] != 0:
        raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {offsets[0]}\n[ torch.LongTensor{{}} ]")
    if offsets.size and offsets[-1] > count:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {count} but got offsets[-1] of "
                           f"{offsets[-1]}")
    bad = np.flatnonzero((indices < 0) | (indices >= rows))
    if bad.size:
        raise RuntimeError(f"Index {bad[0]} of input takes value {indices[bad[0]]} which is not in the valid range "
                           f"[0, {rows})")
    num_bags = max(offsets.size - 1, 0) if include_last_offset else offsets.size
    ends = np.append(offsets[1:], count) if not include_last_offset else offsets[1:]
    starts = offsets[:num_bags]
    ends = ends[:num_bags]
    if np.any(ends < starts):
        raise RuntimeError("Expected i < index_size to be true, but got false.  (Could this error message be "
                           "improved?  If so, please report an enhancement request to PyTorch.)")
    bags = np.full(count, -1, np.int64)
    for b, (start, end) in enumerate(zip(starts.tolist(), ends.tolist())):
        bags[start:end] = b
    if padding_idx is not None:
        if padding_idx < 0:
            padding_idx += rows
        bags[indices == padding_idx] = -1
    kept = bags >= 0
    scale = kept.astype(np.float64)
    if mode == "mean":
        counts = np.bincount(bags[kept], minlength=num_bags)
        scale[kept] = 1.0 / counts[bags[kept]]
    return bags, scale, num_bags


def _embedding_renorm_(weight, input, max_norm: float, norm_type: float) -> None:
    """torch's embedding_renorm_, under no_grad: each row `input` names whose norm exceeds
    max_norm is scaled (in place) by max_norm / (norm + 1e-7), the factor taken in double and
    applied in the weight's dtype. (The indices' values are read: inside fg.compile a graph break.)"""
    rows = np.unique(np.asarray(input.numpy()).ravel())
    with fg.no_grad():
        index = fg.tensor(rows, dtype=fg.int64)
        norms = weight.index_select(0, index).norm(p=norm_type, dim=1).numpy().astype(np.float64)
        over = norms > max_norm
        # (one write, whether or not a row changes: torch's in-place op moves the version once)
        picked = fg.tensor(rows[over], dtype=fg.int64)
        scale = fg.tensor((max_norm / (norms[over] + 1e-7)).astype(weight.dtype.np))
        weight[picked] = weight.index_select(0, picked) * scale.unsqueeze(1)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    """Normalise over the trailing `normalized_shape` dims (biased variance, `eps` inside the
    square root), then scale by `weight` and shift by `bias` (NativeLayerNormBackward0)."""
    _check_tensor_args("layer_norm", input=input)
    if not isinstance(normalized_shape, (tuple, list, fg.Size)) or \
            not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in normalized_shape):
        kind = "int" if isinstance(normalized_shape, (int, np.integer)) else type(normalized_shape).__name__
        raise TypeError(f"layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not {kind}")
    for position, (arg, t) in enumerate((("weight", weight), ("bias", bias)), start=3):
        if t is not None and not isinstance(t, fg.Tensor):
            raise TypeError(f"layer_norm(): argument '{arg}' (position {position}) must be Tensor, not "
                            f"{type(t).__name__}")
    shape = tuple(int(s) for s in normalized_shape)
    ndim = len(shape)
    if ndim == 0:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           "element, but got normalized_shape = []")
    if input.dim() < ndim or tuple(input.shape[input.dim() - ndim:]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size{list(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(t.shape)} and normalized_shape = {list(shape)}")
    # (parameters of another dtype are torch's mixed-dtype error first, an integer input's too)
    _check_parameter_dtypes(input, [t for t in (weight, bias) if t is not None])
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"LayerNormKernelImpl\" not implemented for '{_dtype_name(input.dtype)}'")
    dtype = input.dtype.np
    operands = [input,
                weight if weight is not None else np.ones(shape, dtype),
                bias if bias is not None else np.zeros(shape, dtype)]
    return apply_op("layer_norm", operands, {"ndim": ndim, "eps": float(eps)}, "NativeLayerNormBackward0")


# ---- NumPy arrays as tensors ------------------------------------------------

def _arrays_as_tensors(args: tuple, kwargs: dict) -> tuple:
    """(args, kwargs) with each NumPy array among them taken as a tensor sharing its memory,
    as fusegrad's functions take them (API.md: NumPy arrays are accepted wherever a tensor
    is; torch raises its "must be Tensor" TypeError there)."""
    if any(isinstance(a, np.ndarray) for a in args):
        args = tuple(wrap_array(a) if isinstance(a, np.ndarray) else a for a in args)
    if kwargs and any(isinstance(v, np.ndarray) for v in kwargs.values()):
        kwargs = {k: wrap_array(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    return args, kwargs


def _accepting_arrays(fn):
    @functools.wraps(fn)
    def taking_arrays(*args, **kwargs):
        args, kwargs = _arrays_as_tensors(args, kwargs)
        return fn(*args, **kwargs)
    return taking_arrays


# The functional forms of the other nn files, re-exported here as torch.nn.functional has them.
from .normalization import batch_norm, group_norm, instance_norm, local_response_norm, rms_norm  # noqa: E402,F401
from .dropout import alpha_dropout, dropout1d, dropout2d, dropout3d, feature_alpha_dropout  # noqa: E402,F401
from .attention import multi_head_attention_forward, scaled_dot_product_attention  # noqa: E402,F401
from .activations import (celu, celu_, elu_, glu, gumbel_softmax, hardshrink, hardsigmoid, hardswish, hardtanh,  # noqa: E402,F401
                          hardtanh_, leaky_relu_, logsigmoid, mish, prelu, relu6, rrelu, rrelu_, selu, selu_,
                          softmin, softshrink, softsign, tanhshrink, threshold, threshold_)
from .losses import (cosine_embedding_loss, cosine_similarity, gaussian_nll_loss, hinge_embedding_loss,  # noqa: E402,F401
                     huber_loss, kl_div, margin_ranking_loss, multi_margin_loss, multilabel_soft_margin_loss,
                     pairwise_distance, poisson_nll_loss, smooth_l1_loss, soft_margin_loss, triplet_margin_loss)
from fusegrad.tracer.linalg_functions import pdist  # noqa: E402,F401  (torch.nn.functional.pdist)
from .conv import conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d  # noqa: E402,F401
from .pooling import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d,  # noqa: E402,F401
                      adaptive_max_pool1d, adaptive_max_pool2d, adaptive_max_pool3d, avg_pool1d, avg_pool2d,
                      avg_pool3d, lp_pool1d, lp_pool2d, lp_pool3d, max_pool1d, max_pool2d, max_pool3d,
                      max_unpool1d, max_unpool2d, max_unpool3d)
from .padding import fold, interpolate, pad, pixel_shuffle, pixel_unshuffle, unfold, upsample  # noqa: E402,F401
# (round 60c: the *_with_indices pools, the deprecated upsamplings, channel shuffle, two more losses)
from .pooling import (adaptive_max_pool1d_with_indices, adaptive_max_pool2d_with_indices,  # noqa: E402,F401
                      adaptive_max_pool3d_with_indices, max_pool1d_with_indices, max_pool2d_with_indices,
                      max_pool3d_with_indices)
from .padding import channel_shuffle, native_channel_shuffle, upsample_bilinear, upsample_nearest  # noqa: E402,F401
from .grid_sample import affine_grid, grid_sample  # noqa: E402,F401
from .losses import ctc_loss, multilabel_margin_loss, triplet_margin_with_distance_loss  # noqa: E402,F401
from .pooling import (fractional_max_pool2d, fractional_max_pool2d_with_indices,  # noqa: E402,F401
                      fractional_max_pool3d, fractional_max_pool3d_with_indices)

# Every public function takes NumPy arrays where it takes tensors (API.md), this file's and
# the re-exported ones alike.
for _name, _fn in list(globals().items()):
    if not _name.startswith("_") and callable(_fn) and not isinstance(_fn, type) and \
            getattr(_fn, "__module__", "").startswith("fusegrad.nn"):
        globals()[_name] = _accepting_arrays(_fn)
del _name, _fn
