"""Attention: F.scaled_dot_product_attention, F.multi_head_attention_forward and the modules
MultiheadAttention, TransformerEncoderLayer and TransformerEncoder.

scaled_dot_product_attention is torch's math reference written in existing ops (matmul,
masked_fill, softmax, dropout, matmul), so it differentiates and compiles as they do; torch's
CPU kernel records one ScaledDotProductFlashAttentionForCpuBackward0 node instead, a grad_fn
name fusegrad does not copy. The modules port torch's Python slow path; torch's fused fast
paths (eval mode with no gradient needed) compute the same values.
"""
from __future__ import annotations

import copy
import math
import warnings

import fusegrad as fg
from fusegrad.tracer.user_frame import user_stacklevel

from . import functional as F
from . import init
from .containers import ModuleList
from .layers import Dropout, LayerNorm, Linear
from .module import Module, Parameter

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward", "MultiheadAttention",
           "TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer", "TransformerDecoder", "Transformer"]

_CPP_NAMES = {"float32": "float", "float64": "double", "int64": "long int", "int32": "int", "int16": "short int",
              "int8": "signed char", "uint8": "unsigned char", "bool": "bool"}


def _cpp(dtype) -> str:
    return _CPP_NAMES.get(dtype.name, dtype.name)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale=None, enable_gqa: bool = False):
    """softmax(query @ key.T * scale + mask) @ value over the last two dims (batch dims
    broadcast), as torch's math reference: `scale` defaults to 1 / sqrt(E); a bool attn_mask
    keeps where True, a float one is added; is_causal masks above the diagonal (top-left
    aligned); dropout_p > 0 drops attention weights (always, as torch's function does);
    enable_gqa repeats key/value heads (dim -3) to the query's count. A row every position of
    which is masked gives zeros, as torch's CPU kernel. grad_fn: the composite's nodes, not
    torch's fused ScaledDotProductFlashAttentionForCpuBackward0."""
    F._check_tensor_args("scaled_dot_product_attention", query=query, key=key, value=value)
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError("Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
                           f"{query.dim()} key.dim: {key.dim()} and value.dim: {value.dim()} instead.")
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{_cpp(query.dtype)} key.dtype: {_cpp(key.dtype)} and value.dtype: {_cpp(value.dtype)} "
                           "instead.")
    if attn_mask is not None and attn_mask.dtype != fg.bool and not attn_mask.dtype.is_floating_point \
            and attn_mask.dtype != query.dtype:
        raise RuntimeError("Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {_cpp(attn_mask.dtype)} and  query.dtype: {_cpp(query.dtype)} instead.")
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if not query.dtype.is_floating_point:
        raise RuntimeError(f"expected scalar type Float but found {F._dtype_name(query.dtype)}")
    length, source = query.size(-2), key.size(-2)
    factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    if enable_gqa and query.dim() >= 3 and key.dim() >= 3:
        heads, kv_heads = query.size(-3), key.size(-3)
        if kv_heads == 0 or heads % kv_heads or heads % value.size(-3):
            raise RuntimeError("Number of heads in key and value must divide the number of heads in ")
        key = key.repeat_interleave(heads // kv_heads, -3)
        value = value.repeat_interleave(heads // value.size(-3), -3)
    scores = query.matmul(key.transpose(-2, -1)) * factor
    if is_causal:
        keep = fg.ones(length, source, dtype=fg.bool).tril()
        scores = scores.masked_fill(keep.logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == fg.bool:
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attn_mask
    weights = scores.softmax(-1)
    if attn_mask is not None:      # (torch's safe softmax: a fully masked row is zeros, not NaN)
        weights = weights.masked_fill((scores == float("-inf")).all(-1, keepdim=True), 0.0)
    if dropout_p > 0.0:
        weights = F.dropout(weights, dropout_p, True)
    return weights.matmul(value)


# ---- multi-head attention ----------------------------------------------------

def _none_or_dtype(input):
    if input is None:
        return None
    if isinstance(input, fg.Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _canonical_mask(mask, mask_name: str, other_type, other_name: str, target_type, check_other: bool = True):
    """torch's F._canonical_mask: a bool mask becomes an additive float one (-inf where True)."""
    if mask is None:
        return None
    is_float = mask.dtype.is_floating_point
    if mask.dtype != fg.bool and not is_float:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for both "
                      "instead.", stacklevel=user_stacklevel())
    if not is_float:
        mask = fg.zeros_like(mask, dtype=target_type).masked_fill_(mask, float("-inf"))
    return mask


def _pad_last(t):
    """F.pad(t, (0, 1)): one zero column appended along the last dim."""
    return fg.cat([t, fg.zeros(tuple(t.shape[:-1]) + (1,), dtype=t.dtype)], -1)


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads: int) -> bool:
    """torch's _mha_shape_check: whether the input is batched, with its AssertionErrors."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError("For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError("For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but found "
                                 f"{key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError("For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found "
                                 f"{attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError("For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError("For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError("For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                                     f"found {attn_mask.dim()}-D tensor instead")
            if attn_mask.dim() == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected:
                    raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                         f"torch.Size({list(attn_mask.shape)})")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D query tensor")


def _in_projection_packed(q, k, v, w, b=None):
    """torch's _in_projection_packed: q, k, v projected by the thirds of the packed weight."""
    E = q.size(-1)
    if k is v:
        if q is k:
            proj = F.linear(q, w, b)
            proj = proj.unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
            return proj[0], proj[1], proj[2]
        w_q, w_kv = w.split([E, E * 2])
        b_q, b_kv = (None, None) if b is None else b.split([E, E * 2])
        kv = F.linear(k, w_kv, b_kv).unflatten(-1, (2, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
        return F.linear(q, w_q, b_q), kv[0], kv[1]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return F.linear(q, w_q, b_q), F.linear(k, w_k, b_k), F.linear(v, w_v, b_v)


def multi_head_attention_forward(query, key, value, embed_dim_to_check: int, num_heads: int, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn: bool, dropout_p: float,
                                 out_proj_weight, out_proj_bias, training: bool = True, key_padding_mask=None,
                                 need_weights: bool = True, attn_mask=None, use_separate_proj_weight: bool = False,
                                 q_proj_weight=None, k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights: bool = True, is_causal: bool = False):
    """torch's F.multi_head_attention_forward (sequence-first (L, N, E) or unbatched (L, E)
    inputs): the in-projections, per-head scaled dot-product attention with the masks, the
    out-projection; returns (output, attention weights averaged over heads, per head, or
    None when not need_weights). static_k / static_v are not supported."""
    if static_k is not None or static_v is not None:
        raise NotImplementedError("fusegrad: multi_head_attention_forward's static_k/static_v are not supported")
    batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask), "attn_mask",
                                       query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims torch.Size({list(key.shape[:2])}) do not match "
                                 f"value's torch.Size({list(value.shape[:2])})")
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = (F.linear(query, q_proj_weight, b_q), F.linear(key, k_proj_weight, b_k),
                   F.linear(value, v_proj_weight, b_v))
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape torch.Size({list(key.shape)}) does not match value shape "
                                 f"torch.Size({list(value.shape)})")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is torch.Size({list(attn_mask.shape)}), but should "
                                   f"be {(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is torch.Size({list(attn_mask.shape)}), but should "
                                   f"be {(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None and bias_v is not None:
        k = fg.cat([k, bias_k.repeat(1, bsz, 1)])
        v = fg.cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")
    q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.view(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    v = v.view(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if add_zero_attn:
        zeros = (bsz * num_heads, 1, head_dim)
        k = fg.cat([k, fg.zeros(zeros, dtype=k.dtype)], 1)
        v = fg.cat([v, fg.zeros(zeros, dtype=v.dtype)], 1)
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    src_len = k.size(1)
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                                 f"torch.Size({list(key_padding_mask.shape)})")
        key_padding_mask = key_padding_mask.view(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1) \
            .reshape(bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask
    if not training:
        dropout_p = 0.0
    if need_weights:
        E = q.shape[-1]
        q_scaled = q * math.sqrt(1.0 / float(E))
        if is_causal and attn_mask is None:
            raise AssertionError("FIXME: is_causal not implemented for need_weights")
        if attn_mask is not None:
            weights = fg.baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
        else:
            weights = fg.bmm(q_scaled, k.transpose(-2, -1))
        weights = weights.softmax(-1)
        if dropout_p > 0.0:
            weights = F.dropout(weights, p=dropout_p)
        out = fg.bmm(weights, v)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = F.linear(out, out_proj_weight, out_proj_bias)
        out = out.view(tgt_len, bsz, out.size(1))
        weights = weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights
    if attn_mask is not None:
        if attn_mask.size(0) == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)
    q = q.view(bsz, num_heads, tgt_len, head_dim)
    k = k.view(bsz, num_heads, src_len, head_dim)
    v = v.view(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = F.linear(out, out_proj_weight, out_proj_bias)
    out = out.view(tgt_len, bsz, out.size(1))
    if not batched:
        out = out.squeeze(1)
    return out, None


class NonDynamicallyQuantizableLinear(Linear):
    """torch's Linear subclass for MultiheadAttention.out_proj (its repr names this class)."""


class MultiheadAttention(Module):
    """torch.nn.MultiheadAttention: `num_heads` heads of scaled dot-product attention over
    embed_dim / num_heads channels each. Parameters as torch's: in_proj_weight (3E, E), or
    q/k/v_proj_weight when kdim/vdim differ from embed_dim; in_proj_bias (3E); out_proj (a
    Linear); bias_k, bias_v with add_bias_kv. Initialised as torch: xavier_uniform_ in-projections,
    zero biases, out_proj.weight as Linear's."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim=None, vdim=None,
                 batch_first: bool = False, device=None, dtype=None) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        factory = {"dtype": dtype, "device": device}
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(fg.empty((embed_dim, embed_dim), **factory))
            self.k_proj_weight = Parameter(fg.empty((embed_dim, self.kdim), **factory))
            self.v_proj_weight = Parameter(fg.empty((embed_dim, self.vdim), **factory))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(fg.empty((3 * embed_dim, embed_dim), **factory))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(fg.empty(3 * embed_dim, **factory))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **factory)
        if add_bias_kv:
            self.bias_k = Parameter(fg.empty((1, 1, embed_dim), **factory))
            self.bias_v = Parameter(fg.empty((1, 1, embed_dim), **factory))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True, attn_mask=None,
                average_attn_weights: bool = True, is_causal: bool = False):
        """(attention output, attention weights or None), as torch's MultiheadAttention.forward
        (inputs (L, N, E), (N, L, E) with batch_first, or unbatched (L, E))."""
        batched = query.dim() == 3
        key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask),
                                           "attn_mask", query.dtype)
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if self.batch_first and batched:
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = (x.transpose(1, 0) for x in (query, key))
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        separate = {}
        if not self._qkv_same_embed_dim:
            separate = {"use_separate_proj_weight": True, "q_proj_weight": self.q_proj_weight,
                        "k_proj_weight": self.k_proj_weight, "v_proj_weight": self.v_proj_weight}
        out, weights = multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
            self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, average_attn_weights=average_attn_weights, is_causal=is_causal, **separate)
        if self.batch_first and batched:
            out = out.transpose(1, 0)
        return out, weights


def _activation_fn(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


class TransformerEncoderLayer(Module):
    """torch.nn.TransformerEncoderLayer: self-attention then a feed-forward block
    (linear1, activation, dropout, linear2), each with a residual connection and LayerNorm
    (after it, or before it with norm_first)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation="relu", layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _activation_fn(activation)
        from .layers import GELU, ReLU
        # (F.relu as a default argument, read while nn.functional was loading, is the function
        # before its wrapping for NumPy arrays: compared unwrapped)
        unwrapped = getattr(activation, "__wrapped__", activation)
        if unwrapped is getattr(F.relu, "__wrapped__", F.relu) or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif unwrapped is getattr(F.gelu, "__wrapped__", F.gelu) or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False):
        """The layer's output for `src` ((S, N, E), (N, S, E) with batch_first, or (S, E))."""
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               _none_or_dtype(src_mask), "src_mask", src.dtype)
        src_mask = _canonical_mask(src_mask, "src_mask", None, "", src.dtype, check_other=False)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal: bool = False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


def _left_aligned(padding_mask) -> bool:
    """Whether each row of a (N, S) additive padding mask keeps a prefix of its positions
    (torch's mask_check before its nested-tensor path; a value read)."""
    kept = (padding_mask == 0).long()
    return bool((kept[:, 1:] <= kept[:, :-1]).all()) if kept.shape[1] > 1 else True


def _causal_mask(size: int, dtype):
    """torch's _generate_square_subsequent_mask: -inf above the diagonal, 0 elsewhere."""
    return fg.full((size, size), float("-inf"), dtype=dtype).triu(diagonal=1)


class TransformerEncoder(Module):
    """torch.nn.TransformerEncoder: `num_layers` deep copies of `encoder_layer` applied in turn,
    then `norm` when given. torch's nested-tensor fast path is not taken (use_nested_tensor is
    kept for its repr and warning only), except that its effect on the result is: in eval
    mode with no gradient recorded, a src_key_padding_mask and no mask, the padded positions
    of the output are zeros, as torch's padded nested result has them."""

    def __init__(self, encoder_layer, num_layers: int, norm=None, enable_nested_tensor: bool = True,
                 mask_check: bool = True) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why = ""
        name = "encoder_layer"
        if not isinstance(encoder_layer, TransformerEncoderLayer):
            why = f"{name} was not TransformerEncoderLayer"
        elif encoder_layer.norm_first:
            why = f"{name}.norm_first was True"
        elif not encoder_layer.self_attn.batch_first:
            why = f"{name}.self_attn.batch_first was not True(use batch_first for better inference performance)"
        elif not encoder_layer.self_attn._qkv_same_embed_dim:
            why = f"{name}.self_attn._qkv_same_embed_dim was not True"
        elif encoder_layer.self_attn.in_proj_bias is None:
            why = f"{name}.self_attn was passed bias=False"
        elif not encoder_layer.activation_relu_or_gelu:
            why = f"{name}.activation_relu_or_gelu was not True"
        elif encoder_layer.norm1.eps != encoder_layer.norm2.eps:
            why = f"{name}.norm1.eps was not equal to {name}.norm2.eps"
        elif encoder_layer.self_attn.num_heads % 2 == 1:
            why = f"{name}.self_attn.num_heads is odd"
        if enable_nested_tensor and why:
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False because {why}",
                          stacklevel=user_stacklevel())
            self.use_nested_tensor = False

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        """Each layer in turn (is_causal None: detected by comparing `mask` with the causal
        mask, a value read), then norm."""
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask", _none_or_dtype(mask),
                                               "mask", src.dtype)
        mask = _canonical_mask(mask, "mask", None, "", src.dtype, check_other=False)
        first = self.layers[0]
        batch_first = first.self_attn.batch_first
        seq_len = src.size(0) if src.dim() == 2 else src.size(1 if batch_first else 0)
        causal = is_causal is True
        if is_causal is None and mask is not None:
            expected = _causal_mask(seq_len, mask.dtype)
            causal = tuple(mask.shape) == tuple(expected.shape) and bool((mask == expected).all())
        zero_padded = (self.use_nested_tensor and not first.training and src.dim() == 3
                       and src_key_padding_mask is not None and mask is None
                       and not (fg.is_grad_enabled() and (src.requires_grad or any(
                           p.requires_grad for p in first.parameters())))
                       and (not self.mask_check or _left_aligned(src_key_padding_mask)))
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, is_causal=causal, src_key_padding_mask=src_key_padding_mask)
        if zero_padded:
            padded = src_key_padding_mask != 0          # (-inf where padded, after _canonical_mask)
            if not batch_first:
                padded = padded.t()
            output = output.masked_fill(padded.unsqueeze(-1), 0.0)
        if self.norm is not None:
            output = self.norm(output)
        return output


def _detect_is_causal_mask(mask, is_causal=None, size=None) -> bool:
    """torch's _detect_is_causal_mask: `is_causal` where given, else whether `mask` is the causal
    mask of `size` (a value read)."""
    make_causal = is_causal is True
    if is_causal is None and mask is not None:
        sz = size if size is not None else mask.size(-2)
        expected = _causal_mask(sz, mask.dtype)
        make_causal = tuple(mask.shape) == tuple(expected.shape) and bool((mask == expected).all())
    return make_causal


class TransformerDecoderLayer(Module):
    """torch.nn.TransformerDecoderLayer: self-attention, attention over the encoder's output
    (`memory`), then the feed-forward block, each with a residual connection and LayerNorm
    (after it, or before it with norm_first)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation=F.relu, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias,
                                            **factory)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first,
                                                 bias=bias, **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation_fn(activation) if isinstance(activation, str) else activation

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool = False, memory_is_causal: bool = False):
        """The layer's output for `tgt` attending to `memory`."""
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    _sa_block = TransformerEncoderLayer._sa_block      # (the same self-attention block)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal: bool = False):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                is_causal=is_causal, need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoder(Module):
    """torch.nn.TransformerDecoder: `num_layers` deep copies of `decoder_layer` applied in turn
    (each attending to `memory`), then `norm` when given."""

    def __init__(self, decoder_layer, num_layers: int, norm=None) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal: bool = False):
        """Each layer in turn (tgt_is_causal None: detected from `tgt_mask`), then norm."""
        output = tgt
        batch_first = self.layers[0].self_attn.batch_first
        seq_len = tgt.size(0) if tgt.dim() == 2 else tgt.size(1 if batch_first else 0)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                           memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """torch.nn.Transformer: an encoder (TransformerEncoder of num_encoder_layers layers and a
    LayerNorm) and a decoder (likewise), their matrices redrawn by xavier_uniform_ after
    construction, as torch's; forward(src, tgt) decodes tgt attending to the encoded src."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 2048, dropout: float = 0.1, activation=F.relu, custom_encoder=None,
                 custom_decoder=None, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        layer_arguments = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
                           norm_first, bias)
        # (built in torch's order: a layer, its norm, the stack of its copies; encoder first)
        for name, custom, layer_class, stack_class, count in (
                ("encoder", custom_encoder, TransformerEncoderLayer, TransformerEncoder, num_encoder_layers),
                ("decoder", custom_decoder, TransformerDecoderLayer, TransformerDecoder, num_decoder_layers)):
            if custom is None:
                layer = layer_class(*layer_arguments, **factory)
                custom = stack_class(layer, count, LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
            setattr(self, name, custom)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal: bool = False):
        """The decoder's output for `tgt` attending to the encoder's output for `src`."""
        is_batched = src.dim() == 3
        if is_batched and src.size(0 if self.batch_first else 1) != tgt.size(0 if self.batch_first else 1):
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.size(-1) != self.d_model or tgt.size(-1) != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None):
        """The causal mask of size sz: -inf above the diagonal, 0 elsewhere."""
        return _causal_mask(sz, fg.float32 if dtype is None else dtype)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)


scaled_dot_product_attention = F._accepting_arrays(scaled_dot_product_attention)
multi_head_attention_forward = F._accepting_arrays(multi_head_attention_forward)
