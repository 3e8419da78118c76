"""More of torch's math: rounding (floor, ceil, trunc, round, frac), rsqrt, log2, log10, exp2,
the hyperbolic and inverse trigonometric functions, atan2; logsumexp, tril and triu; and the
reference-run cumsum and prod (with prod's backward).

Each op keeps torch's formula where the order of operations decides the rounding, and its
backward formula as the VJP (derivatives.yaml). Kernels call Numba's scalar NumPy functions
(`np.log2`, `np.arcsin`, ...), which are libm's and accurate to an ulp but not vectorised;
these ops are rarer than exp/log/tanh, whose vectorisable forms live in codegen/vmath.py.
The float32 references compute in float64 and round once (ir/rounded.py), as torch's results
almost always are.
"""
from __future__ import annotations

import math

import numpy as np

from .. import rounded
from ..buffers import POOL
from ..torch_order_jit import LOOP_FROM, by_row_blocks, loop_pays
from .elementwise import BOOL_NEGATION, _infer_map, elementwise
from ..types import TensorType, int64
from .reduce import SELF_THEN_RESULT, _grad_to_input, _infer_reduce, reduced_shape
from .registry import COMPOSITE, OPAQUE, OTHER_THEN_SELF, NoDerivativeError, OpDef, register

_LN2, _LN10 = math.log(2.0), math.log(10.0)


def _zero_grad(e, x, y, g, a, n):
    # torch's floor/ceil/trunc/round backward: zeros_like(grad) (nothing saved)
    return [e.zero_gradient(g[0])]


# ------------------------------------------------------------------ rounding (float operands;
# tracer/math_functions.py copies an integer tensor, as torch does, and refuses bool)
elementwise("floor", np.floor, _zero_grad, "np.floor({0})", float_only=True)
elementwise("ceil", np.ceil, _zero_grad, "np.ceil({0})", float_only=True)
elementwise("trunc", np.trunc, _zero_grad, "np.trunc({0})", float_only=True)
elementwise("round", np.rint, _zero_grad, "np.rint({0})", float_only=True,
            doc="round half to even (torch.round, std::nearbyint)")
# torch's frac: a - trunc(a); its gradient passes through
elementwise("frac", lambda x: x - np.trunc(x), lambda e, x, y, g, a, n: [g[0]], "({0} - np.trunc({0}))",
            float_only=True)


def _ten_to(decimals: int) -> float:
    """10 ** |decimals| as a float: inf past the double range (torch's round then gives NaN)."""
    return 10.0 ** abs(decimals) if abs(decimals) <= 308 else math.inf


def _round_decimals_ref(x, decimals):
    # torch's round_decimals_kernel: nearbyint(a * 10**d) / 10**d, or for d < 0
    # nearbyint(a / 10**-d) * 10**-d, with 10**|d| in the operand's dtype
    scale = x.dtype.type(_ten_to(decimals))
    if decimals < 0:
        return np.rint(x / scale) * scale
    return np.rint(x * scale) / scale


register(OpDef("round_decimals", COMPOSITE, _infer_map("round_decimals", float_only=True),
               _round_decimals_ref, _zero_grad,
               decompose=lambda e, xs, a: [_round_decimals_emit(e, xs[0], a["decimals"])],
               doc="torch.round(x, decimals=d) (RoundBackward1, also for an explicit d=0)"))


def _round_decimals_emit(e, x, decimals):
    scale = e.const(_ten_to(decimals), x)
    if decimals < 0:
        return e.mul(e.op("round", e.div(x, scale)), scale)
    return e.div(e.op("round", e.mul(x, scale)), scale)


# ------------------------------------------------------------------ powers and logarithms
# torch's rsqrt: 1 / sqrt(a); backward -0.5 * grad * result**3
register(OpDef("rsqrt", COMPOSITE, _infer_map("rsqrt", float_only=True), lambda x: x.dtype.type(1) / np.sqrt(x),
               lambda e, x, y, g, a, n: [e.mul(e.mul(g[0], -0.5), e.mul(e.mul(y[0], y[0]), y[0]))],
               decompose=lambda e, xs, a: [e.div(e.const(1, xs[0]), e.sqrt(xs[0]))], doc="1 / sqrt(x)"))
# log2 / log10 backward: grad / (self * ln 2) and grad / (self * ln 10); exp2: grad * result * ln 2
elementwise("log2", rounded.RoundedUfunc(np.log2),
            lambda e, x, y, g, a, n: [e.div(g[0], e.mul(x[0], _LN2))], "fg_log2({0})", float_only=True)
elementwise("log10", rounded.RoundedUfunc(np.log10),
            lambda e, x, y, g, a, n: [e.div(g[0], e.mul(x[0], _LN10))], "fg_log10({0})", float_only=True)
elementwise("exp2", rounded.RoundedUfunc(np.exp2),
            lambda e, x, y, g, a, n: [e.mul(e.mul(g[0], y[0]), _LN2)], "fg_exp2({0})", float_only=True)

# ------------------------------------------------------------------ hyperbolic and trigonometric
elementwise("sinh", rounded.RoundedUfunc(np.sinh),
            lambda e, x, y, g, a, n: [e.mul(g[0], e.op("cosh", x[0]))], "fg_sinh({0})", float_only=True)
elementwise("cosh", rounded.RoundedUfunc(np.cosh),
            lambda e, x, y, g, a, n: [e.mul(g[0], e.op("sinh", x[0]))], "fg_cosh({0})", float_only=True)
# tan backward: grad * (1 + result**2)
elementwise("tan", rounded.RoundedUfunc(np.tan),
            lambda e, x, y, g, a, n: [e.mul(g[0], e.add(e.mul(y[0], y[0]), 1))], "fg_tan({0})",
            float_only=True)


def _one_minus_square_rsqrt(e, x):
    return e.op("rsqrt", e.add(e.neg(e.mul(x, x)), 1))


# asin: grad * (1 - self**2).rsqrt(); acos: -grad * (1 - self**2).rsqrt(); atan: grad / (self**2 + 1)
elementwise("asin", rounded.RoundedUfunc(np.arcsin),
            lambda e, x, y, g, a, n: [e.mul(g[0], _one_minus_square_rsqrt(e, x[0]))], "fg_asin({0})",
            float_only=True)
elementwise("acos", rounded.RoundedUfunc(np.arccos),
            lambda e, x, y, g, a, n: [e.mul(e.neg(g[0]), _one_minus_square_rsqrt(e, x[0]))],
            "fg_acos({0})", float_only=True)
elementwise("atan", rounded.RoundedUfunc(np.arctan),
            lambda e, x, y, g, a, n: [e.div(g[0], e.add(e.mul(x[0], x[0]), 1))], "fg_atan({0})",
            float_only=True)


def _atan2_ref(y, x, bool_self=False):
    if y.dtype.char == "f" and y.size <= rounded.EXACT_UP_TO:
        return np.asarray(np.arctan2(y.astype(np.float64), x.astype(np.float64)), np.float32)
    return np.arctan2(y, x)


def _atan2_vjp(e, x, y, g, a, n):
    # torch's atan2_backward: recip = 1 / (self**2 + other**2), 0 where that sum is 0 (measured:
    # atan2(0, 0) and atan2(1e-30, 0) have zero gradients in float32, atan2(1e-20, 1e-20) infinite);
    # self: grad * other * recip, other: grad * -self * recip
    # (a bool self, the attribute `bool_self` set by the tracer: torch's `-self` raises when
    # other's gradient is computed)
    if a.get("bool_self") and n[1]:
        raise NoDerivativeError(BOOL_NEGATION)
    top, bottom = x
    total = e.add(e.mul(top, top), e.mul(bottom, bottom))
    recip = e.where(e.eq(total, 0), 0, e.op("reciprocal", total))
    return [e.mul(e.mul(g[0], bottom), recip) if n[0] else None,
            e.mul(e.mul(g[0], e.neg(top)), recip) if n[1] else None]


elementwise("atan2", _atan2_ref, _atan2_vjp, "fg_atan2({0}, {1})", float_only=True,
            extra={"unpack_order": OTHER_THEN_SELF})


# ------------------------------------------------------------------ logsumexp
def _logsumexp_ref(x, axes, keepdim):
    # torch's logsumexp_out_impl: maxes = amax(x, dims, keepdim=True) with +-inf set to 0,
    # log(sum(exp(x - maxes))) + maxes; an empty operand is log(sum(exp(x)))
    with np.errstate(all="ignore"):
        if x.size == 0:
            return np.asarray(np.log(np.sum(np.exp(x), axis=axes, keepdims=keepdim, dtype=x.dtype)))
        maxes = np.maximum.reduce(x, axis=axes, keepdims=True)
        maxes = np.where(np.abs(maxes) == np.inf, x.dtype.type(0), maxes)
        # exp(x - maxes) in one buffer of the pool, in place: two fresh temporaries of x's
        # size cost a page fault per 4 KiB each (2048x2048 float32: 23 -> 5 ms)
        shifted = np.subtract(x, maxes, out=POOL.empty(x.shape, x.dtype))
        total = np.sum(np.exp(shifted, out=shifted), axis=axes, keepdims=True, dtype=x.dtype)
        del shifted
        result = np.log(total) + maxes
        return np.asarray(result if keepdim else np.squeeze(result, axis=axes))


def _logsumexp_decompose(e, xs, a):
    x, axes, keepdim = xs[0], a["axes"], a["keepdim"]
    if x.type.numel == 0:
        return [e.log(e.sum(e.exp(x), axes, keepdim))]
    maxes = e.amax(x, axes, keepdim=True)
    maxes = e.where(e.eq(e.op("abs", maxes), math.inf), 0, maxes)
    result = e.add(e.log(e.sum(e.exp(e.sub(x, e.expand(maxes, x.shape))), axes, keepdim=True)), maxes)
    return [result if keepdim else e.reshape(result, _infer_reduce([x.type], a)[0].shape)]


def _logsumexp_vjp(e, x, y, g, a, n):
    # torch's logsumexp_backward: grad * (self - result).exp(), both unsqueezed to self's shape
    axes, keepdim = a["axes"], a["keepdim"]
    result = _grad_to_input(e, y[0], x[0], axes, keepdim)
    return [e.mul(_grad_to_input(e, g[0], x[0], axes, keepdim), e.exp(e.sub(x[0], result)))]


def _infer_logsumexp(types, attrs):
    return _infer_reduce([_infer_map("logsumexp", float_only=True)(types, attrs)[0]], attrs)


register(OpDef("logsumexp", COMPOSITE, _infer_logsumexp, _logsumexp_ref, _logsumexp_vjp,
               decompose=_logsumexp_decompose, doc="log(sum(exp(x), axes)), torch's stable formula",
               extra={"row_major_result": True, **SELF_THEN_RESULT}))     # (torch's LogsumexpBackward0)


# ------------------------------------------------------------------ cumsum
def _cumsum_ref(x, axis, reverse):
    # torch's CPU kernel accumulates a float32 sum in double, rounding each result once
    wide = np.float64 if x.dtype.kind == "f" else x.dtype
    if x.ndim == 0:
        return np.array(x, copy=True)
    if x.dtype.kind == "f" and axis % x.ndim == x.ndim - 1 and x.size >= LOOP_FROM and x.shape[-1] > 1 \
            and loop_pays(x.size):
        # rows summed in a Numba loop (ir/reference_loops.py), the same additions in double
        from ..reference_loops import running_sums_into
        rows = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
        return by_row_blocks(running_sums_into, rows, reverse).reshape(x.shape)
    # (a sum starts from +0, as torch's: a leading -0. sums to 0; the result is row-major)
    if reverse:
        return np.ascontiguousarray(np.flip(np.cumsum(np.flip(x, axis), axis, dtype=wide), axis) + 0, x.dtype)
    return np.ascontiguousarray(np.cumsum(x, axis, dtype=wide) + 0, x.dtype)


def _cumsum_vjp(e, x, y, g, a, n):
    # torch's cumsum_backward: the gradient summed from each place to the end (a reversed cumsum)
    return [e.op("cumsum", g[0], axis=a["axis"], reverse=not a["reverse"])]


register(OpDef("cumsum", OPAQUE, lambda types, attrs: [types[0]], _cumsum_ref, _cumsum_vjp, reference_only=True,
               doc="cumsum(x; axis, reverse): running sums along axis (from its end when reverse)",
               extra={"reference_why": "a running sum (no kernel rule for scans)"}))


# ------------------------------------------------------------------ prod
def _prod_infer(types, attrs):
    x, axis = types[0], attrs["axis"]
    if axis is None:
        return [TensorType((), x.dtype)]
    return [TensorType(reduced_shape(x.shape, (axis,), attrs["keepdim"]), x.dtype)]


def _prod_ref(x, axis, keepdim):
    if axis is None:
        return np.asarray(np.multiply.reduce(x.ravel(), dtype=x.dtype))
    return np.asarray(np.multiply.reduce(x, axis=axis, keepdims=keepdim, dtype=x.dtype))


def _prod_vjp(e, x, y, g, a, n):
    return [e.op("prod_backward", g[0], x[0], y[0], axis=a["axis"], keepdim=a["keepdim"])]


def _others_product(x: np.ndarray, axis: int) -> np.ndarray:
    """Each element's product of the others along `axis` (torch's prod_safe_zeros_backward:
    exclusive running products from both ends, so that zeros need no division)."""
    ones = np.ones_like(np.take(x, [0], axis=axis))
    left = np.cumprod(np.concatenate([ones, np.take(x, range(x.shape[axis] - 1), axis=axis)], axis), axis)
    flipped = np.flip(x, axis)
    right = np.cumprod(np.concatenate([ones, np.take(flipped, range(x.shape[axis] - 1), axis=axis)], axis), axis)
    return left * np.flip(right, axis)


def _prod_backward_ref(grad, x, result, axis, keepdim):
    # torch's prod_backward: grad * result / input where the input holds no zero at all, else
    # grad times each element's product of the others (a full reduction as of the flattened input)
    if x.ndim == 0:
        return np.array(grad, copy=True)
    shape = x.shape
    if axis is None:
        if np.count_nonzero(x == 0) > 1:        # (torch: zeros, without the products' signs)
            return np.zeros(shape, x.dtype)
        x, axis, keepdim = x.ravel(), 0, False
    if not keepdim:
        grad, result = np.expand_dims(grad, axis), np.expand_dims(result, axis)
    with np.errstate(all="ignore"):
        if not (x == 0).any():
            out = grad * (result / x)
        elif x.shape[axis] == 0:
            out = np.zeros_like(x)
        else:
            out = grad * _others_product(x, axis)
    return np.ascontiguousarray(out.reshape(shape), dtype=x.dtype)


def _prod_backward_vjp(e, x, y, g, a, n):
    """prod_backward(grad, x, result) = grad * others(x), each element's product of the others:
    its derivative in grad and in x (through others, which is x's whole dependence: result's
    cotangent is None), from prod_double_backward. A 0-d x: prod is the identity."""
    grad, inp = x[0], x[1]
    if inp.type.ndim == 0:
        return [g[0] if n[0] else None, None, None]
    d_grad, d_x = e.op("prod_double_backward", g[0], grad, inp, axis=a["axis"], keepdim=a["keepdim"])
    return [d_grad if n[0] else None, d_x if n[1] else None, None]


def _prod_double_backward_ref(gg, grad, x, axis, keepdim):
    """The cotangents of prod_backward's grad and x for cotangent `gg` of its result (torch's
    values: exact products, so zeros need care). Per slice along axis, with P the product of its
    nonzero elements, S the sum of gg_i / x_i over them, Z its zeros' gg sum:
      grad: sum_i gg_i * others_i
      x_k:  grad * sum_{i != k} gg_i * prod_{j != i, k} x_j, which is
            no zero:    grad * P / x_k * (S - gg_k / x_k)
            one zero:   grad * P * S at the zero, grad * Z * P / x_k elsewhere
            two zeros:  grad * (Z - gg_k) * P at each zero (the other's gg), 0 elsewhere
            more:       0"""
    shape = x.shape
    if axis is None:
        x, gg, axis, keepdim = x.ravel(), gg.ravel(), 0, False
    if not keepdim:
        grad = np.expand_dims(grad, axis)
    x, gg = np.moveaxis(x, axis, -1), np.moveaxis(gg, axis, -1)
    grad = np.moveaxis(grad, axis, -1)
    with np.errstate(all="ignore"):
        d_grad = np.sum(gg * np.moveaxis(_others_product(np.moveaxis(x, -1, axis), axis), axis, -1),
                        axis=-1, keepdims=True, dtype=x.dtype)
        zero = x == 0
        zeros = np.count_nonzero(zero, axis=-1)[..., None]
        inverse = 1 / np.where(zero, 1, x)
        product = np.prod(np.where(zero, 1, x), axis=-1, keepdims=True, dtype=x.dtype)
        quotients = np.where(zero, 0, gg * inverse)
        total = np.sum(quotients, axis=-1, keepdims=True, dtype=x.dtype)
        zero_sum = np.sum(np.where(zero, gg, 0), axis=-1, keepdims=True, dtype=x.dtype)
        d_x = np.select(
            [zeros == 0, zeros == 1, zeros == 2],
            [grad * product * inverse * (total - quotients),
             np.where(zero, grad * product * total, grad * zero_sum * product * inverse),
             np.where(zero, grad * (zero_sum - gg) * product, 0)],
            0).astype(x.dtype)
    d_x = np.moveaxis(d_x, -1, axis).reshape(shape)
    d_grad = np.moveaxis(d_grad, -1, axis)
    if not keepdim:
        d_grad = np.squeeze(d_grad, axis)
    # (np.array, not ascontiguousarray, which makes a 0-d result 1-d)
    return np.array(d_grad, dtype=x.dtype, order="C"), np.array(d_x, order="C")


def _prod_double_backward_vjp(e, x, y, g, a, n):
    raise NoDerivativeError("fusegrad: the derivative of prod's double backward (a third derivative through "
                            "prod) is not implemented")


register(OpDef("prod", OPAQUE, _prod_infer, _prod_ref, _prod_vjp, reference_only=True,
               doc="prod(x; axis, keepdim): the product over axis (None: all elements)",
               extra={"reference_why": "a product reduction (no kernel rule)", "row_major_result": True}))
register(OpDef("prod_backward", OPAQUE, lambda types, attrs: [types[1]], _prod_backward_ref, _prod_backward_vjp,
               reference_only=True, doc="prod_backward(grad, x, result; axis, keepdim): torch's prod_backward",
               extra={"reference_why": "prod's gradient (no kernel rule)"}))
register(OpDef("prod_double_backward", OPAQUE, lambda types, attrs: [types[1], types[2]], _prod_double_backward_ref,
               _prod_double_backward_vjp, reference_only=True,
               doc="prod_double_backward(gg, grad, x; axis, keepdim) -> (grad's, x's cotangent) of prod_backward",
               extra={"reference_why": "prod's second derivative (no kernel rule)"}))


# ------------------------------------------------------------------ tril / triu
def _triangle_ref(lower: bool):
    def ref(x, diagonal):
        keep = np.tril if lower else np.triu
        return np.ascontiguousarray(keep(x, diagonal)) if x.size else np.array(x, copy=True)
    return ref


def _triangle_decompose(lower: bool):
    # where(col - row <= diagonal, x, 0) for tril (>= for triu) over the last two dims: iotas
    # and a select, which fuse into the kernel that reads x
    def decompose(e, xs, a):
        x = xs[0]
        rows, cols = x.shape[-2:]
        col = e.op("iota", shape=(rows, cols), axis=1, dtype=int64)
        row = e.op("iota", shape=(rows, cols), axis=0, dtype=int64)
        offset = e.sub(col, row)
        keep = e.le(offset, e.const(a["diagonal"], int64)) if lower else e.ge(offset, e.const(a["diagonal"], int64))
        return [e.where(e.expand(keep, x.shape), x, e.zeros_like(x))]
    return decompose


for _name, _lower in (("tril", True), ("triu", False)):
    register(OpDef(_name, COMPOSITE, lambda types, attrs: [types[0]], _triangle_ref(_lower),
                   (lambda op: lambda e, x, y, g, a, n: [e.op(op, g[0], diagonal=a["diagonal"])])(_name),
                   decompose=_triangle_decompose(_lower),
                   doc=f"{_name}(x; diagonal): x with the elements {'above' if _lower else 'below'} the diagonal "
                       "of its last two dims zeroed"))
