"""torch.norm_except_dim and torch._weight_norm: the functions behind weight normalisation
(nn.utils.weight_norm and nn.utils.parametrizations.weight_norm).

`_weight_norm(v, g, dim)` is v * g / ||v|| with the norm over every dim but `dim`. Where
torch's fused kernel runs (dim the first or last) it is one op, weight_norm
(ir/ops/normalization.py), recorded as torch's WeightNormInterfaceBackward0 with v's and g's
edges; any other dim (and -1, meaning the norm of the whole tensor) is torch's composite
`v * (g / norm_except_dim(v, 2, dim))`, made of the same ops as there.
"""
from __future__ import annotations

from .dispatch import apply_op
from .parser_errors import type_name
from .tensor import Tensor


def norm_except_dim(v: Tensor, pow: int = 2, dim: int = 0) -> Tensor:
    """The `pow`-norm of `v` over every dim but `dim`, kept as size-1 dims (dim -1: the norm of
    the whole tensor, 0-d)."""
    if not isinstance(v, Tensor):
        raise TypeError(f"norm_except_dim(): argument 'v' (position 1) must be Tensor, not {type_name(v)}")
    if dim == -1:
        return _aten_norm(v, pow, tuple(range(v.dim())), "NormBackward0")
    last = v.dim() - 1
    if dim == 0:
        shape = [1] * v.dim()
        shape[0] = v.shape[0]
        return _aten_norm(v.contiguous().view(v.shape[0], -1), pow, (1,), "NormBackward1").view(shape)
    if dim == last:
        shape = [1] * v.dim()
        shape[last] = v.shape[last]
        return _aten_norm(v.contiguous().view(-1, v.shape[last]), pow, (0,), "NormBackward1").view(shape)
    return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)


def _aten_norm(v: Tensor, p, axes: tuple, name: str) -> Tensor:
    """torch's C++ at::norm of `v` over `axes` (NormBackward0 over all dims, NormBackward1 over
    some; Tensor.norm from Python is linalg.vector_norm's node)."""
    return apply_op("norm", [v], {"p": float(p), "axes": axes, "keepdim": False}, name)


def _weight_norm(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    """v * g / norm_except_dim(v, 2, dim): torch's fused form (one WeightNormInterfaceBackward0
    node) where dim is the first or the last, its composite elsewhere."""
    for name, t, position in (("v", v, 1), ("g", g, 2)):
        if not isinstance(t, Tensor):
            raise TypeError(f"_weight_norm(): argument '{name}' (position {position}) must be Tensor, "
                            f"not {type_name(t)}")
    v, g = v.contiguous(), g.contiguous()
    if dim == 0 or dim == v.dim() - 1:
        if g.dtype != v.dtype:
            g = g.to(v.dtype)
        return apply_op("weight_norm", [v, g], {"dim": dim % max(v.dim(), 1)}, "WeightNormInterfaceBackward0")
    return v * (g / norm_except_dim(v, 2, dim))
