"""torch's products with an added term (addmv, addr, baddbmm, addbmm and addmm with beta/alpha:
one op, `add_product`, recorded under each function's node name), torch.cross, the determinant
family (det, inverse, slogdet: LAPACK through NumPy, reference-run) and a few pointwise ops
(sinc, ldexp, gcd, lcm). Every VJP is written in IR ops, so each differentiates again."""
from __future__ import annotations

import numpy as np

from ..types import TensorType, float64
from .elementwise import _infer_map, _pow_ref
from .linalg import LinAlgError, _matmul_ref
from .registry import COMPOSITE, OPAQUE, OpDef, broadcast_shapes, register


# ------------------------------------------------------------------ add_product
# add_product(bias, m1, m2; kind, beta, alpha) = beta * bias + alpha * product(m1, m2), the
# product by `kind`: "mm" (2-d @ 2-d), "mv" (2-d @ 1-d), "r" (outer product of two vectors),
# "bmm" (3-d @ 3-d) or "addbmm" (the bmm summed over the batch). The bias broadcasts to the
# product (the tracer checks torch's texts first); beta = 0 ignores it (NaNs included), as torch.
def _product_shape(kind, a, b):
    if kind == "mm":
        return (a[0], b[1])
    if kind == "mv":
        return (a[0],)
    if kind == "r":
        return (a[0], b[0])
    if kind == "bmm":
        return (a[0], a[1], b[2])
    return (a[1], b[2])


def _add_product_infer(types, attrs):
    bias, m1, m2 = types
    if not (bias.dtype is m1.dtype is m2.dtype):
        raise RuntimeError(f"add_product: operands must share a dtype, got {bias.dtype.name}, {m1.dtype.name} "
                           f"and {m2.dtype.name}")
    shape = _product_shape(attrs["kind"], m1.shape, m2.shape)
    if broadcast_shapes(bias.shape, shape) != shape:
        raise RuntimeError(f"add_product: the bias {list(bias.shape)} does not broadcast to {list(shape)}")
    return [TensorType(shape, m1.dtype)]


def _product_ref(kind, m1, m2):
    if kind == "r":
        return np.multiply.outer(m1, m2)
    # (matmul's reference: a product contracting one element is a multiply, whose zeros keep
    # their sign where torch's keeps them: addmm(b, x[2, 1], y[1, 2], beta=0))
    product = _matmul_ref(m1, m2)
    return product.sum(axis=0, dtype=product.dtype) if kind == "addbmm" else product


# torch's addmm, addmv and addbmm skip the product when alpha is 0 (BLAS's gemm/gemv with alpha
# 0 reads neither matrix: a NaN in them does not reach the result); addr and baddbmm compute it.
_SKIPS_PRODUCT_AT_ZERO_ALPHA = ("mm", "mv", "addbmm")


def _add_product_ref(bias, m1, m2, kind, beta, alpha):
    product = np.asarray(_product_ref(kind, m1, m2))
    if alpha == 0 and kind in _SKIPS_PRODUCT_AT_ZERO_ALPHA:
        product = np.zeros_like(product)
    elif alpha != 1:
        product = product * product.dtype.type(alpha)
    if beta == 0:
        return product
    scaled = bias if beta == 1 else bias * bias.dtype.type(beta)
    return np.asarray(product + scaled, dtype=product.dtype)


def _emit_product(e, kind, m1, m2):
    if kind == "r":
        return e.mul(e.reshape(m1, (m1.shape[0], 1)), m2)
    product = e.matmul(m1, m2)
    return e.sum(product, (0,)) if kind == "addbmm" else product


def _scaled(e, x, factor):
    return x if factor == 1 else e.mul(x, factor)


def _add_product_decompose(e, xs, a):
    bias, m1, m2 = xs
    product = _scaled(e, _emit_product(e, a["kind"], m1, m2), a["alpha"])
    if a["alpha"] == 0 and a["kind"] in _SKIPS_PRODUCT_AT_ZERO_ALPHA:
        product = e.zeros_like(product)
    if a["beta"] == 0:
        return [product]
    return [e.add(product, _scaled(e, bias, a["beta"]))]


def _add_product_vjp(e, x, y, g, a, n):
    bias, m1, m2 = x
    kind, alpha = a["kind"], a["alpha"]
    gp = _scaled(e, g[0], alpha)            # the gradient of the product
    g1 = g2 = None
    if kind == "mv":
        g1 = e.mul(e.reshape(gp, (gp.shape[0], 1)), m2) if n[1] else None      # grad.ger(vec)
        g2 = e.matmul(e.transpose_last(m1), gp) if n[2] else None
    elif kind == "r":
        g1 = e.matmul(gp, m2) if n[1] else None
        g2 = e.matmul(e.transpose_last(gp), m1) if n[2] else None
    else:
        if kind == "addbmm":        # every batch element's product gets the whole gradient
            gp = e.expand(e.reshape(gp, (1,) + tuple(gp.shape)), (m1.shape[0],) + tuple(gp.shape))
        g1 = e.matmul(gp, e.transpose_last(m2)) if n[1] else None
        g2 = e.matmul(e.transpose_last(m1), gp) if n[2] else None
    return [_scaled(e, g[0], a["beta"]) if n[0] else None, g1, g2]


register(OpDef("add_product", COMPOSITE, _add_product_infer, _add_product_ref, _add_product_vjp,
               decompose=_add_product_decompose,
               doc="add_product(bias, m1, m2; kind, beta, alpha): beta * bias + alpha * m1 @ m2 "
                   "(addmm, addmv, addr, baddbmm, addbmm)",
               # (torch's nodes unpack mat1/mat/vec1/batch1 before mat2/vec/vec2/batch2)
               extra={"unpack_order": (("in", 1), ("in", 2))}))


# ------------------------------------------------------------------ cross
# cross(a, b; axis): the vector product along `axis` (size 3), a and b broadcast; torch's
# linalg_cross backward: cross(b, g) for a, cross(g, a) for b.
def _cross_infer(types, attrs):
    a, b = types
    return [TensorType(broadcast_shapes(a.shape, b.shape), a.dtype)]


def _cross_ref(a, b, axis):
    shape = broadcast_shapes(a.shape, b.shape)
    a, b = np.broadcast_to(a, shape), np.broadcast_to(b, shape)
    a0, a1, a2 = (np.take(a, i, axis=axis) for i in range(3))
    b0, b1, b2 = (np.take(b, i, axis=axis) for i in range(3))
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=axis).astype(a.dtype, copy=False)


def _cross_vjp(e, x, y, g, a, n):
    ga = e.op("cross", x[1], g[0], axis=a["axis"]) if n[0] else None
    gb = e.op("cross", g[0], x[0], axis=a["axis"]) if n[1] else None
    return [ga, gb]


register(OpDef("cross", OPAQUE, _cross_infer, _cross_ref, _cross_vjp, reference_only=True,
               extra={"node": "LinalgCrossBackward0", "reference_why": "three slices along one axis"},
               doc="cross(a, b; axis): the vector product of 3-vectors along `axis`"))


# ------------------------------------------------------------------ det, inverse, slogdet
# Batched over leading axes (the tracer checks the shapes and dtype with torch's texts).
# inverse's attribute `raises`: a singular matrix raises torch's LinAlgError (a user's call);
# inside a VJP (raises=False) its inverse is NaN instead, as nothing reads it there (see det).
def _square_infer(types, attrs):
    return [types[0]]


def _batch_infer(types, attrs):
    return [TensorType(types[0].shape[:-2], types[0].dtype)]


def _zero_pivot(m: np.ndarray) -> int | None:
    """The 1-based index of LU's first zero diagonal element (partial pivoting, as LAPACK's
    getrf), or None."""
    u = m.astype(np.float64, copy=True)
    k = u.shape[0]
    for j in range(k):
        p = j + int(np.argmax(np.abs(u[j:, j])))
        if u[p, j] == 0:
            return j + 1
        u[[j, p]] = u[[p, j]]
        u[j + 1:, j:] -= np.outer(u[j + 1:, j] / u[j, j], u[j, j:])
    return None


def _singular_error(x: np.ndarray) -> LinAlgError:
    matrices = x.reshape((-1,) + x.shape[-2:])
    for k, m in enumerate(matrices):
        pivot = _zero_pivot(m)
        if pivot is not None:
            where = f"(Batch element {k}): " if x.ndim > 2 else ""
            return LinAlgError(f"linalg.inv: {where}The diagonal element {pivot} is zero, the inversion could not be "
                               "completed because the input matrix is singular.")
    return LinAlgError("linalg.inv: The inversion could not be completed because the input matrix is singular.")


def _inverse_ref(x, raises=True):
    if x.size == 0:
        return np.empty_like(x)
    try:
        return np.linalg.inv(x).astype(x.dtype, copy=False)
    except np.linalg.LinAlgError:
        if raises:
            raise _singular_error(x) from None
    matrices = x.reshape((-1,) + x.shape[-2:])
    out = np.empty_like(matrices)
    for k, m in enumerate(matrices):
        try:
            out[k] = np.linalg.inv(m)
        except np.linalg.LinAlgError:
            out[k] = np.nan
    return out.reshape(x.shape)


def _inverse_vjp(e, x, y, g, a, n):
    yt = e.transpose_last(y[0])
    return [e.neg(e.matmul(e.matmul(yt, g[0]), yt))]


def _batch_scalar(e, v):
    """A batch of numbers as a batch of 1x1 matrices (to scale matrices)."""
    return e.reshape(v, tuple(v.shape) + (1, 1))


def _det_ref(x):
    return np.asarray(np.linalg.det(x) if x.shape[-1] else np.ones(x.shape[:-2]), dtype=x.dtype)


def _det_vjp(e, x, y, g, a, n):
    if x[0].shape[-1] == 1:         # det of a 1x1 matrix is its entry: the gradient is g (NaN, inf, 0 too)
        return [e.reshape(g[0], x[0].shape)]
    # g * det * A^-T; where det is 0 the gradient is 0, as torch's for a singular matrix
    scale = _batch_scalar(e, e.mul(g[0], y[0]))
    inverse_t = e.transpose_last(e.op("inverse", x[0], raises=False))
    grad = e.mul(scale, inverse_t)
    return [e.where(_batch_scalar(e, e.eq(y[0], 0)), 0.0, grad)]


def _slogdet_infer(types, attrs):
    out = TensorType(types[0].shape[:-2], types[0].dtype)
    return [out, out]


def _slogdet_ref(x):
    if not x.shape[-1]:
        ones = np.ones(x.shape[:-2], dtype=x.dtype)
        return ones, np.zeros_like(ones)
    sign, logabsdet = np.linalg.slogdet(x)
    return np.asarray(sign, dtype=x.dtype), np.asarray(logabsdet, dtype=x.dtype)


def _slogdet_vjp(e, x, y, g, a, n):
    inverse_t = e.transpose_last(e.op("inverse", x[0], raises=False))
    return [e.mul(_batch_scalar(e, g[1]), inverse_t)]


_LAPACK = {"reference_why": "LAPACK through np.linalg"}
register(OpDef("inverse", OPAQUE, _square_infer, _inverse_ref, _inverse_vjp, reference_only=True,
               extra={"node": "LinalgInvExBackward0",
                      "value_checks": lambda ins: dict(ins.attrs).get("raises", True), **_LAPACK},
               doc="inverse(x; raises): the inverses of a batch of square matrices"))
register(OpDef("det", OPAQUE, _batch_infer, _det_ref, _det_vjp, reference_only=True,
               extra={"node": "LinalgDetBackward0", **_LAPACK}, doc="det(x): the determinants of square matrices"))
register(OpDef("slogdet", OPAQUE, _slogdet_infer, _slogdet_ref, _slogdet_vjp, nondiff_outputs=(0,),
               reference_only=True, extra={"node": "LinalgSlogdetBackward0", **_LAPACK},
               doc="slogdet(x) -> (sign, log|det|) of square matrices (log|det| differentiable)"))


# ------------------------------------------------------------------ sinc, ldexp
# sinc(x) = sin(pi x) / (pi x), 1 at 0, computed in x's dtype as torch's kernel;
# torch's sinc_backward: g * (pi x cos(pi x) - sin(pi x)) / (pi x^2), 0 where pi x^2 is 0.
def _sinc_ref(x):
    px = x * x.dtype.type(np.pi)
    with np.errstate(all="ignore"):
        out = np.sin(px) / px
    return np.where(x == 0, x.dtype.type(1), out).astype(x.dtype, copy=False)


def _sinc_vjp(e, x, y, g, a, n):
    px = e.mul(x[0], np.pi)
    squared = e.mul(e.mul(x[0], x[0]), np.pi)
    out = e.div(e.mul(g[0], e.sub(e.mul(px, e.cos(px)), e.sin(px))), squared)
    return [e.where(e.eq(squared, 0), 0.0, out)]


def _sinc_decompose(e, xs, a):
    px = e.mul(xs[0], np.pi)
    return [e.where(e.eq(xs[0], 0), 1.0, e.div(e.sin(px), px))]


register(OpDef("sinc", COMPOSITE, _infer_map("sinc", float_only=True), _sinc_ref, _sinc_vjp,
               decompose=_sinc_decompose, extra={"node": "SincBackward0"}, doc="sinc(x): sin(pi x) / (pi x)"))


# ldexp(a, b) = a * 2**b (torch's self * pow(2., other), the power in the result dtype), both
# operands in the float result dtype; LdexpBackward0: g * pow(2., b) for a, g * result * ln 2
# for b, so it saves b and the result, not a (a write of a after the op is no error).
def _ldexp_ref(a, b):
    return np.asarray(a * _pow_ref(np.asarray(2.0, a.dtype), b), dtype=a.dtype)


def _two_to_the(e, b):
    """pow(2., b) as torch's (IR number_pow, the Python number a float64 constant)."""
    return e.op("number_pow", e.const(2.0, float64), b)


def _ldexp_vjp(e, x, y, g, a, n):
    return [e.mul(g[0], _two_to_the(e, x[1])) if n[0] else None,
            e.mul(e.mul(g[0], y[0]), float(np.log(2.0))) if n[1] else None]


register(OpDef("ldexp", COMPOSITE, _infer_map("ldexp", float_only=True), _ldexp_ref, _ldexp_vjp,
               decompose=lambda e, xs, a: [e.mul(xs[0], _two_to_the(e, xs[1]))], extra={"node": "LdexpBackward0"},
               doc="ldexp(a, b): a * 2**b"))


# ------------------------------------------------------------------ gcd, lcm
# Of int64 operands (the tracer refuses others with torch's text); no gradient (integers).
def _lcm_ref(a, b):
    return np.abs(np.lcm(a, b))


for _name, _ref in (("gcd", np.gcd), ("lcm", _lcm_ref)):
    register(OpDef(_name, COMPOSITE, _infer_map(_name, integer_only=True), _ref, None, reference_only=True,
                   extra={"reference_why": f"NumPy's {_name}"}, doc=f"{_name}(a, b) of integers"))
