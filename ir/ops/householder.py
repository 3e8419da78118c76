"""Householder QR in LAPACK's compact form: geqrf (the reflectors below the diagonal, R on and
above it, and the scalars tau), householder_product (orgqr: the first columns of the product of
the reflectors) and ormqr (that product, or its transpose, applied to a matrix from the left or
the right). No SciPy: the loops are written here in NumPy, one reflector a step, each step
vectorised over the batch, with LAPACK's dlarfg conventions (beta = -sign(alpha) ||x||, tau = 0
where the part below the diagonal is zero), so that the values equal torch's up to rounding.
float32 is computed in float64 and rounded once. Reference-run.

The VJPs of householder_product and ormqr are reverse mode through the reflector chain written
out in IR ops (one step per reflector: matmuls, slices, cat), so they differentiate again; geqrf
has no derivative in torch (its node raises NotImplementedError at backward)."""
from __future__ import annotations

import numpy as np

from ..types import TensorType, int64
from .registry import OPAQUE, NoDerivativeNotImplementedError, OpDef, register

_WHY = {"reference_why": "Householder reflections in NumPy"}


def _flat(x: np.ndarray, tail: int) -> tuple[np.ndarray, tuple]:
    """x as (count, *last `tail` dims), float64 (a copy), and its batch shape."""
    batch = x.shape[:x.ndim - tail]
    count = int(np.prod(batch, dtype=np.int64))
    return np.array(x, dtype=np.float64).reshape((count,) + x.shape[x.ndim - tail:]), batch


# ------------------------------------------------------------------ geqrf
def geqrf(x: np.ndarray):
    """LAPACK geqrf of each matrix of x (..., m, n): (a, tau), a holding R on and above the
    diagonal and the reflectors' vectors v_j below it (v_j[j] = 1 implied), tau (..., min(m, n))."""
    *_, m, n = x.shape
    k = min(m, n)
    a, batch = _flat(x, 2)
    tau = np.zeros((a.shape[0], k))
    with np.errstate(all="ignore"):
        for j in range(k):
            alpha = a[:, j, j].copy()
            below = a[:, j + 1:, j]
            xnorm = np.sqrt(np.einsum("bi,bi->b", below, below))
            zero = xnorm == 0                   # (dlarfg: H = I, tau = 0, the column left as it is)
            beta = -np.copysign(np.hypot(alpha, xnorm), alpha)
            tau[:, j] = np.where(zero, 0.0, (beta - alpha) / beta)
            a[:, j + 1:, j] *= np.where(zero, 1.0, 1.0 / (alpha - beta))[:, None]   # (dscal by the reciprocal)
            a[:, j, j] = np.where(zero, alpha, beta)
            if j + 1 < n:                       # H_j applied to the trailing columns: A -= tau v (v^T A)
                v = np.concatenate([np.ones((a.shape[0], 1)), a[:, j + 1:, j]], axis=1)
                w = np.einsum("bi,bij->bj", v, a[:, j:, j + 1:])
                a[:, j:, j + 1:] -= tau[:, j, None, None] * v[:, :, None] * w[:, None, :]
    return a.astype(x.dtype).reshape(x.shape), tau.astype(x.dtype).reshape(tuple(batch) + (k,))


def _geqrf_infer(types, attrs):
    x = types[0]
    return [x, TensorType(x.shape[:-2] + (min(x.shape[-2:]),), x.dtype)]


def _geqrf_vjp(e, x, y, g, a, n):
    # torch: derivatives.yaml's `self: not_implemented("geqrf")`
    raise NoDerivativeNotImplementedError("the derivative for 'geqrf' is not implemented.")


register(OpDef("geqrf", OPAQUE, _geqrf_infer, lambda x: geqrf(x), _geqrf_vjp, reference_only=True,
               extra={"node": "GeqrfBackward0", **_WHY},
               doc="geqrf(A) -> (a, tau): LAPACK's compact Householder QR"))


# ------------------------------------------------------------------ the reflectors
def _vectors(a: np.ndarray, k: int) -> np.ndarray:
    """The first k reflector vectors of compact a (count, m, >= k): unit lower trapezoidal (count, m, k)."""
    v = np.tril(a[:, :, :k], -1)
    v[:, np.arange(k), np.arange(k)] = 1.0
    return v


def _apply(v: np.ndarray, tau: np.ndarray, c: np.ndarray, left: bool, order) -> np.ndarray:
    """c (count, r, s) times the reflectors H_i = I - tau_i v_i v_i^T, i in `order`: each applied
    from the left (H_i c) or the right (c H_i) in turn."""
    for i in order:
        vi, ti = v[:, :, i], tau[:, i, None, None]
        if left:
            c -= ti * vi[:, :, None] * np.einsum("bi,bij->bj", vi, c)[:, None, :]
        else:
            c -= ti * np.einsum("bij,bj->bi", c, vi)[:, :, None] * vi[:, None, :]
    return c


def householder_product(a: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """LAPACK orgqr: the first n columns of H_0 H_1 ... H_{k-1} (a (..., m, n), tau (..., k))."""
    *_, m, n = a.shape
    k = tau.shape[-1]
    flat, _ = _flat(a, 2)
    t, _ = _flat(tau, 1)
    q = np.broadcast_to(np.eye(m, n), flat.shape).copy()
    with np.errstate(all="ignore"):
        q = _apply(_vectors(flat, k), t, q, True, range(k - 1, -1, -1))
    return q.astype(a.dtype).reshape(a.shape)


def _householder_product_infer(types, attrs):
    return [types[0]]


def _iota_eye(e, rows: int, cols: int, dtype):
    """The rows x cols identity (ones on the main diagonal) in IR."""
    row = e.op("iota", shape=(rows, cols), axis=0, dtype=int64)
    col = e.op("iota", shape=(rows, cols), axis=1, dtype=int64)
    return e.cast(e.eq(row, col), dtype)


def _column(e, x, i: int):
    """x[..., :, i:i+1]."""
    index = [("s", 0, s, 1) for s in x.shape]
    index[-1] = ("s", i, i + 1, 1)
    return e.op("getitem", x, index=tuple(index))


def _leading(e, x, size: int):
    """x[..., :size] (along the last dim)."""
    index = [("s", 0, s, 1) for s in x.shape]
    index[-1] = ("s", 0, size, 1)
    return e.op("getitem", x, index=tuple(index))


def reflectors_backward(e, a, tau, gq, cols: int):
    """The cotangents of (a, tau) from gq, that of Q = H_0 ... H_{k-1} I[:, :cols] (the first
    `cols` columns of the product; cols = m gives ormqr's full Q). With R_i = H_i ... H_{k-1} I[:, :cols]
    and W_i = H_{i-1} ... H_0 gq: g tau_i = -(W_i^T v_i) . (R_{i+1}^T v_i) and
    g v_i = -tau_i (W_i R_{i+1}^T v_i + R_{i+1} W_i^T v_i), of which the part strictly below the
    diagonal is a's (its diagonal and upper part are not read)."""
    *batch, m, width = a.shape
    k = tau.shape[-1]
    dtype = a.dtype
    if k == 0:
        return e.zeros_like(a), e.zeros_like(tau)
    nd = len(batch) + 2
    v_all = e.add(e.op("tril", _leading(e, a, k), diagonal=-1), _iota_eye(e, m, k, dtype))
    vs = [_column(e, v_all, i) for i in range(k)]
    taus = [e.reshape(_column(e, tau, i), tuple(batch) + (1, 1)) for i in range(k)]
    # R_{i+1} for i = k-1 .. 0: the product of the later reflectors on I[:, :cols]
    r = e.expand(_iota_eye(e, m, cols, dtype), tuple(batch) + (m, cols))
    after = [None] * k
    for i in range(k - 1, -1, -1):
        after[i] = r
        if i:
            r = e.sub(r, e.mul(taus[i], e.matmul(vs[i], e.matmul(e.transpose_last(vs[i]), r))))
    w = gq
    gvs, gtaus = [], []
    for i in range(k):
        v, ti, r = vs[i], taus[i], after[i]
        rv = e.matmul(e.transpose_last(r), v)          # R_{i+1}^T v_i  (..., cols, 1)
        wv = e.matmul(e.transpose_last(w), v)          # W_i^T v_i
        gtaus.append(e.neg(e.sum(e.mul(rv, wv), axes=(nd - 2,), keepdim=False)))   # (..., 1)
        gvs.append(e.mul(e.neg(ti), e.add(e.matmul(w, rv), e.matmul(r, wv))))
        if i + 1 < k:
            w = e.sub(w, e.mul(ti, e.matmul(v, e.matmul(e.transpose_last(v), w))))
    gv = gvs[0] if k == 1 else e.op("cat", *gvs, axis=nd - 1)
    gtau = gtaus[0] if k == 1 else e.op("cat", *gtaus, axis=nd - 2)
    if width > k:
        gv = e.op("cat", gv, e.zeros_like(e.op("getitem", a, index=tuple(
            [("s", 0, s, 1) for s in a.shape[:-1]] + [("s", k, width, 1)]))), axis=nd - 1)
    return e.op("tril", gv, diagonal=-1), gtau


def _householder_product_vjp(e, x, y, g, a, n):
    if not x[0].type.numel or not x[1].type.numel:
        return [None, None]         # (torch's householder_product_backward: no gradient of empty operands)
    ga, gtau = reflectors_backward(e, x[0], x[1], g[0], x[0].shape[-1])
    return [ga if n[0] else None, gtau if n[1] else None]


register(OpDef("householder_product", OPAQUE, _householder_product_infer,
               lambda a, tau: householder_product(a, tau), _householder_product_vjp, reference_only=True,
               extra={"node": "LinalgHouseholderProductBackward0",
                      # (torch's node saves input, tau and its result, though the formula here reads no result)
                      "always_saves": (("in", 0), ("in", 1), ("out", 0)), **_WHY},
               doc="householder_product(A, tau): the first n columns of the product of A's reflectors (orgqr)"))


# ------------------------------------------------------------------ ormqr
def ormqr(a: np.ndarray, tau: np.ndarray, c: np.ndarray, left: bool = True, transpose: bool = False) -> np.ndarray:
    """LAPACK ormqr: op(Q) c (left) or c op(Q), Q = H_0 ... H_{k-1} (m x m) of the compact a and
    tau, op the transpose where `transpose`."""
    k = tau.shape[-1]
    flat, _ = _flat(a, 2)
    t, _ = _flat(tau, 1)
    out, _ = _flat(c, 2)
    # Q C = H_0 (... (H_{k-1} C)): the last reflector first; Q^T C and C Q the first first
    forward = left == transpose
    order = range(k) if forward else range(k - 1, -1, -1)
    with np.errstate(all="ignore"):
        out = _apply(_vectors(flat, k), t, out, left, order)
    return out.astype(c.dtype).reshape(c.shape)


def _ormqr_vjp(e, x, y, g, a, n):
    # gC = op(Q)^T G (left) or G op(Q)^T: ormqr again with the transpose flipped; gQ of the full
    # m x m Q from the four products, then back through the reflectors
    A, tau, c = x
    left, transpose = a["left"], a["transpose"]
    gc = e.op("ormqr", A, tau, g[0], left=left, transpose=not transpose) if n[2] else None
    ga = gtau = None
    if (n[0] or n[1]) and A.type.numel and tau.type.numel:     # (torch: no gradient of empty reflectors)
        t = e.transpose_last
        if left:
            gq = e.matmul(c, t(g[0])) if transpose else e.matmul(g[0], t(c))
        else:
            gq = e.matmul(t(g[0]), c) if transpose else e.matmul(t(c), g[0])
        ga, gtau = reflectors_backward(e, A, tau, gq, A.shape[-2])
    return [ga if n[0] else None, gtau if n[1] else None, gc]


register(OpDef("ormqr", OPAQUE, lambda types, attrs: [types[2]], ormqr, _ormqr_vjp, reference_only=True,
               extra={"node": "OrmqrBackward0", "always_saves": (("in", 0), ("in", 1), ("in", 2), ("out", 0)),
                      **_WHY},
               doc="ormqr(A, tau, C; left, transpose): Q C, Q^T C, C Q or C Q^T for Q of A's reflectors"))
