"""torch.linalg's solvers and decompositions (fusegrad.linalg): solve, solve_triangular,
cholesky, qr, eigh, the full svd, pinv, lstsq and matrix_exp. LAPACK through NumPy/SciPy,
reference-run (batched over leading axes; the tracer checks shapes and dtypes with torch's
texts). Each VJP is torch's formula written in IR ops (matmuls, triangular solves, tril/triu),
so a create_graph gradient differentiates again."""
from __future__ import annotations

import numpy as np

from ..types import TensorType, int64
from .linalg import LinAlgError
from .registry import OPAQUE, OpDef, broadcast_shapes, register

_LAPACK = {"reference_why": "LAPACK through np.linalg"}


def _t(e, x):
    return e.transpose_last(x)


def _eye(e, n: int, dtype):
    """The n x n identity in IR (two iotas compared)."""
    row = e.op("iota", shape=(n, n), axis=0, dtype=int64)
    col = e.op("iota", shape=(n, n), axis=1, dtype=int64)
    return e.cast(e.eq(row, col), dtype)


def _matrices(x):
    """x (a batch of matrices) as one batch dim of matrices."""
    return x.reshape((int(np.prod(x.shape[:-2])),) + x.shape[-2:])


def _where(k: int, x) -> str:
    return f"(Batch element {k}): " if x.ndim > 2 else ""


def _batched(a, b):
    """a and b with their batch dims broadcast."""
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:])


def _pair_infer(types, attrs):
    a, b = types
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return [TensorType(batch + b.shape[-2:], a.dtype)]


# ------------------------------------------------------------------ solve
# linalg_solve(A, B; left, vector) = A^-1 B (left) or B A^-1; B a batch of matrices, or of
# vectors when `vector` (a column for left, a row otherwise). VJP (torch's linalg_solve_backward):
# gB = solve(A^T, G), gA = -gB X^T (left),
# gA = -X^T gB (right); broadcast batch dims are summed away by the autodiff.
def _solve_infer(types, attrs):
    if not attrs.get("vector"):
        return _pair_infer(types, attrs)
    a, b = types
    return [TensorType(broadcast_shapes(a.shape[:-2], b.shape[:-1]) + b.shape[-1:], a.dtype)]


def _solve_ref(a, b, left=True, vector=False):
    if vector:
        b = b[..., :, None] if left else b[..., None, :]
        return _solve_ref(a, b, left)[..., 0] if left else _solve_ref(a, b, left)[..., 0, :]
    a, b = _batched(a, b)
    if a.size == 0 or b.size == 0:
        return np.zeros(b.shape, dtype=b.dtype)
    try:
        if left:
            return np.linalg.solve(a, b).astype(b.dtype, copy=False)
        return np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2).astype(
            b.dtype).copy()
    except np.linalg.LinAlgError:
        bad = next(k for k, m in enumerate(_matrices(a)) if np.linalg.matrix_rank(m) < m.shape[-1])
        raise LinAlgError(f"torch.linalg.solve: {_where(bad, a)}The solver failed because the input matrix is "
                          "singular.") from None


def _solve_vjp(e, x, y, g, a, n):
    A, left, vector = x[0], a["left"], a.get("vector", False)
    gB = e.op("linalg_solve", _t(e, A), g[0], left=left, vector=vector)
    gA = None
    if n[0] and vector:
        col, row = tuple(gB.shape) + (1,), tuple(gB.shape[:-1]) + (1, gB.shape[-1])
        sol = y[0]
        gA = e.neg(e.mul(e.reshape(gB, col), e.reshape(sol, row)) if left else
                   e.mul(e.reshape(sol, col), e.reshape(gB, row)))
    elif n[0]:
        gA = e.neg(e.matmul(gB, _t(e, y[0])) if left else e.matmul(_t(e, y[0]), gB))
    return [gA, gB if n[1] else None]


register(OpDef("linalg_solve", OPAQUE, _solve_infer, _solve_ref, _solve_vjp, reference_only=True,
               extra={"node": "LinalgSolveExBackward0", "value_checks": True, **_LAPACK},
               doc="linalg_solve(A, B; left): X with AX = B (left) or XA = B"))


# ------------------------------------------------------------------ lu_info
# lu_info(A): LAPACK getrf's info per matrix, 0 or the first zero pivot (1-based), int64 (inv_ex).
def _lu_info_ref(x):
    from .linalg_extra import _zero_pivot
    return np.array([_zero_pivot(m) or 0 for m in _matrices(x)], dtype=np.int64).reshape(x.shape[:-2])


register(OpDef("lu_info", OPAQUE, lambda types, attrs: [TensorType(types[0].shape[:-2], int64)], _lu_info_ref, None,
               reference_only=True, extra={"reference_why": "LU's pivots in NumPy"},
               doc="lu_info(A): 0, or the 1-based index of LU's first zero pivot, per matrix"))


# ------------------------------------------------------------------ solve_triangular
def _substitute(m: np.ndarray, rhs: np.ndarray, lower: bool, unit: bool) -> np.ndarray:
    """m X = rhs for batches of triangular m (..., n, n) and rhs (..., n, k), by forward or back
    substitution: a Python loop over the n rows, each step vectorised over the batch and the
    columns. A zero on the diagonal gives inf/NaN, as LAPACK's trtrs (no error)."""
    n = m.shape[-1]
    x = np.zeros(rhs.shape, dtype=np.result_type(m, rhs))
    rows = range(n) if lower else range(n - 1, -1, -1)
    with np.errstate(all="ignore"):
        for i in rows:
            done = slice(0, i) if lower else slice(i + 1, n)
            acc = rhs[..., i, :] - np.einsum("...j,...jk->...k", m[..., i, done], x[..., done, :])
            x[..., i, :] = acc if unit else acc / m[..., i, i][..., None]
    return x


def _solve_triangular_ref(a, b, upper, left=True, unitriangular=False):
    a, b = _batched(a, b)
    if left:
        out = _substitute(a, b, not upper, unitriangular)
    else:                   # X A = B  <=>  A^T X^T = B^T
        out = np.swapaxes(_substitute(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2), upper, unitriangular), -1, -2)
    return np.ascontiguousarray(out, dtype=b.dtype)


def _triangle(e, x, upper, unitriangular):
    return e.op("triu" if upper else "tril", x, diagonal=(1 if upper else -1) if unitriangular else 0)


def _solve_triangular_vjp(e, x, y, g, a, n):
    A, upper, left, unit = x[0], a["upper"], a["left"], a["unitriangular"]
    gB = e.op("solve_triangular", _t(e, A), g[0], upper=not upper, left=left, unitriangular=unit)
    gA = None
    if n[0]:
        gA = _triangle(e, e.neg(e.matmul(gB, _t(e, y[0])) if left else e.matmul(_t(e, y[0]), gB)), upper, unit)
    return [gA, gB if n[1] else None]


register(OpDef("solve_triangular", OPAQUE, _pair_infer, _solve_triangular_ref, _solve_triangular_vjp,
               reference_only=True, extra={"node": "LinalgSolveTriangularBackward0", **_LAPACK},
               doc="solve_triangular(A, B; upper, left, unitriangular): a triangular system's solution"))


# ------------------------------------------------------------------ cholesky
# cholesky(A; upper, raises) -> (L, info): info (int64) is 0, or the order of the first leading
# minor that is not positive-definite; `raises` (the function's name, or False) raises torch's
# LinAlgError there instead.
def _cholesky_infer(types, attrs):
    return [types[0], TensorType(types[0].shape[:-2], int64)]


def _cholesky_ref(x, upper=False, raises="linalg.cholesky"):
    out = np.zeros_like(x)
    info = np.zeros(x.shape[:-2], dtype=np.int64)
    flat_out, flat_info = _matrices(out), info.reshape(-1)
    for k, m in enumerate(_matrices(x)):
        try:
            flat_out[k] = np.linalg.cholesky(m)
        except np.linalg.LinAlgError:
            order = next(j for j in range(1, m.shape[0] + 1) if not _positive_definite(m[:j, :j]))
            if raises:
                raise LinAlgError(f"{raises}: {_where(k, x)}The factorization could not be completed because "
                                  f"the input is not positive-definite (the leading minor of order {order} is not "
                                  "positive-definite).") from None
            flat_info[k] = order
    return (np.ascontiguousarray(np.swapaxes(out, -1, -2)) if upper else out), info


def _positive_definite(m) -> bool:
    try:
        np.linalg.cholesky(m)
        return True
    except np.linalg.LinAlgError:
        return False


def _cholesky_vjp(e, x, y, g, a, n):
    # torch's cholesky_backward: P = tril(L^H gL); gA = L^-H (P + tril(P, -1)^H) / 2 L^-1
    L, gL = y[0], g[0]
    if a["upper"]:
        L, gL = _t(e, L), _t(e, gL)
    p = e.op("tril", e.matmul(_t(e, L), gL), diagonal=0)
    sym = e.mul(e.add(p, _t(e, e.op("tril", p, diagonal=-1))), 0.5)
    ga = e.op("solve_triangular", _t(e, L), sym, upper=True, left=True, unitriangular=False)
    return [e.op("solve_triangular", L, ga, upper=False, left=False, unitriangular=False)]


register(OpDef("cholesky", OPAQUE, _cholesky_infer, _cholesky_ref, _cholesky_vjp, nondiff_outputs=(1,),
               reference_only=True, extra={"node": "LinalgCholeskyExBackward0",
                                           "value_checks": lambda ins: dict(ins.attrs).get("raises", True), **_LAPACK},
               doc="cholesky(A; upper, raises) -> (L, info): the Cholesky factor of symmetric positive-definite A"))


# ------------------------------------------------------------------ qr
def _qr_infer(types, attrs):
    x = types[0]
    *batch, m, n = x.shape
    k = m if attrs["mode"] == "complete" else min(m, n)
    q = TensorType((0,), x.dtype) if attrs["mode"] == "r" else TensorType((*batch, m, k), x.dtype)
    return [q, TensorType((*batch, k, n), x.dtype)]


def _qr_ref(x, mode):
    if mode == "r":
        r = np.linalg.qr(x, mode="r") if x.size else np.zeros(x.shape[:-2] + (min(x.shape[-2:]), x.shape[-1]))
        return np.zeros((0,), dtype=x.dtype), np.ascontiguousarray(r, dtype=x.dtype)
    if not x.size:
        m, n = x.shape[-2:]
        k = m if mode == "complete" else min(m, n)
        q = np.broadcast_to(np.eye(m, k, dtype=x.dtype), x.shape[:-2] + (m, k)).copy()
        return q, np.zeros(x.shape[:-2] + (k, n), dtype=x.dtype)
    q, r = np.linalg.qr(x, mode=mode)
    return np.ascontiguousarray(q, dtype=x.dtype), np.ascontiguousarray(r, dtype=x.dtype)


def _qr_vjp(e, x, y, g, a, n):
    # A = QR, m >= n: M = R gR^T - gQ^T Q; gA = (gQ + Q copyltu(M)) R^-T
    m, cols = x[0].shape[-2:]
    if a["mode"] == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use "
                           "linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
    if a["mode"] == "complete" and m > cols:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    if m < cols:
        raise NotImplementedError("fusegrad: the gradient of linalg.qr of a wide matrix (nrows < ncols) is not "
                                  "implemented")
    (q, r), (gq, gr) = y, g
    mm = e.sub(e.matmul(r, _t(e, gr)), e.matmul(_t(e, gq), q))
    copyltu = e.add(e.op("tril", mm, diagonal=0), _t(e, e.op("tril", mm, diagonal=-1)))
    b = e.add(gq, e.matmul(q, copyltu))
    return [e.op("solve_triangular", _t(e, r), b, upper=False, left=False, unitriangular=False)]


register(OpDef("qr", OPAQUE, _qr_infer, _qr_ref, _qr_vjp, reference_only=True,
               extra={"node": "LinalgQrBackward0", **_LAPACK},
               doc="qr(A; mode) -> (Q, R): the QR decomposition ('reduced', 'complete' or 'r': Q empty)"))


# ------------------------------------------------------------------ eigh
def _eigh_infer(types, attrs):
    x = types[0]
    return [TensorType(x.shape[:-1], x.dtype), x]


def _eigh_ref(x, upper=False, vectors=True):
    if not x.size:
        return np.zeros(x.shape[:-1], dtype=x.dtype), np.zeros_like(x)
    w, v = np.linalg.eigh(x, UPLO="U" if upper else "L")
    return np.ascontiguousarray(w, dtype=x.dtype), np.ascontiguousarray(v, dtype=x.dtype)


def _eigh_vjp(e, x, y, g, a, n):
    # torch's linalg_eig_backward (hermitian): gA = V (D) V^T, D = skew(V^T gV)/2 / (l_j - l_i) off the
    # diagonal, gL on it; only gL's diagonal when the eigenvectors are not used (eigvalsh)
    (lam, v), (gl, gv) = y, g
    k = lam.shape[-1]
    diag = e.op("diag_embed", gl, offset=0, dim1=gl.type.ndim - 1, dim2=gl.type.ndim)
    if a.get("vectors", True):
        vg = e.matmul(_t(e, v), gv)
        skew = e.mul(e.sub(vg, _t(e, vg)), 0.5)
        gaps = e.sub(e.reshape(lam, tuple(lam.shape[:-1]) + (1, k)), e.reshape(lam, tuple(lam.shape) + (1,)))
        eye = _eye(e, k, lam.dtype)
        off = e.div(skew, e.add(gaps, eye))
        diag = e.add(e.mul(off, e.sub(1.0, eye)), diag)
    return [e.matmul(v, e.matmul(diag, _t(e, v)))]


register(OpDef("eigh", OPAQUE, _eigh_infer, _eigh_ref, _eigh_vjp, reference_only=True,
               extra={"node": "LinalgEighBackward0", **_LAPACK},
               doc="eigh(A; upper, vectors) -> (eigenvalues ascending, eigenvectors) of a symmetric matrix"))


# ------------------------------------------------------------------ linalg_svd
# The svd with every output differentiable (ir/ops/linalg.py's `svd` differentiates S alone).
def _linalg_svd_infer(types, attrs):
    x = types[0]
    *batch, m, n = x.shape
    k = min(m, n)
    ku, kv = (m, n) if attrs["full_matrices"] else (k, k)
    return [TensorType((*batch, m, ku), x.dtype), TensorType((*batch, k), x.dtype),
            TensorType((*batch, kv, n), x.dtype)]


def _linalg_svd_ref(x, full_matrices):
    from .linalg import _svd_failure
    *batch, m, n = x.shape
    if not x.size:
        ku, kv = (m, n) if full_matrices else (min(m, n),) * 2
        return (np.broadcast_to(np.eye(m, ku, dtype=x.dtype), (*batch, m, ku)).copy(),
                np.zeros((*batch, min(m, n)), dtype=x.dtype),
                np.broadcast_to(np.eye(kv, n, dtype=x.dtype), (*batch, kv, n)).copy())
    try:
        u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
    except np.linalg.LinAlgError:
        raise _svd_failure(x) from None
    return tuple(np.ascontiguousarray(t, dtype=x.dtype) for t in (u, s, vh))


def _narrow_last(e, x, size, axis=-1):
    """x's first `size` entries along its last (axis=-1) or second-to-last (-2) dim."""
    shape = tuple(x.shape)
    index = [("s", 0, s, 1) for s in shape]
    index[axis] = ("s", 0, size, 1)
    return e.op("getitem", x, index=tuple(index))


def _linalg_svd_vjp(e, x, y, g, a, n):
    # torch's svd_backward (real): gA = U [skew(U^T gU) S + S skew(V^T gV)] / E + diag(gS) ... V^T,
    # E_ij = S_j^2 - S_i^2 (1 on the diagonal), plus the projections of gU (m > n) or gV (m < n)
    (u, s, vh), (gu, gs, gvh) = y, g
    m, cols = x[0].shape[-2:]
    k = s.shape[-1]
    if a["full_matrices"] and m != cols:
        u, gu = _narrow_last(e, u, k), _narrow_last(e, gu, k)
        vh, gvh = _narrow_last(e, vh, k, -2), _narrow_last(e, gvh, k, -2)
    v, gv = _t(e, vh), _t(e, gvh)
    row = tuple(s.shape[:-1]) + (1, k)         # S along the last dim (S.unsqueeze(-2))
    col = tuple(s.shape) + (1,)                # S.unsqueeze(-1)
    s_row, s_col = e.reshape(s, row), e.reshape(s, col)

    def skew(m_):
        return e.sub(m_, _t(e, m_))
    uhgu, vhgv = skew(e.matmul(_t(e, u), gu)), skew(e.matmul(_t(e, v), gv))
    s2 = e.mul(s, s)
    eye = _eye(e, k, s.dtype)
    gaps = e.add(e.sub(e.reshape(s2, row), e.reshape(s2, col)), eye)
    ga = e.div(e.add(e.mul(uhgu, s_row), e.mul(s_col, vhgv)), gaps)
    ga = e.add(e.mul(ga, e.sub(1.0, eye)), e.op("diag_embed", gs, offset=0, dim1=gs.type.ndim - 1, dim2=gs.type.ndim))
    if m > cols:
        gus = e.div(gu, s_row)
        ga = e.matmul(e.add(e.matmul(u, ga), e.sub(gus, e.matmul(u, e.matmul(_t(e, u), gus)))), vh)
    elif m < cols:
        gvs = _t(e, e.div(gv, s_row))
        ga = e.matmul(u, e.add(e.matmul(ga, vh), e.sub(gvs, e.matmul(e.matmul(gvs, v), vh))))
    else:
        ga = e.matmul(u, e.matmul(ga, vh))
    return [ga]


register(OpDef("linalg_svd", OPAQUE, _linalg_svd_infer, _linalg_svd_ref, _linalg_svd_vjp, reference_only=True,
               extra={"node": "LinalgSvdBackward0", **_LAPACK},
               doc="linalg_svd(A; full_matrices) -> (U, S, Vh), every output differentiable"))


# ------------------------------------------------------------------ pinv
def _pinv_infer(types, attrs):
    x = types[0]
    return [TensorType(x.shape[:-2] + (x.shape[-1], x.shape[-2]), x.dtype)]


def _pinv_ref(x, atol, rtol, hermitian):
    m, n = x.shape[-2:]
    if not x.size:
        return np.zeros(x.shape[:-2] + (n, m), dtype=x.dtype)
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else np.finfo(x.dtype).eps * max(m, n)
    atol = 0.0 if atol is None else atol
    if hermitian:
        w, v = np.linalg.eigh(x)
        top = np.abs(w).max(axis=-1, keepdims=True)
        keep = np.abs(w) > np.maximum(atol, rtol * top)
        inv = np.where(keep, 1 / np.where(keep, w, 1), 0)
        return np.ascontiguousarray((v * inv[..., None, :]) @ np.swapaxes(v, -1, -2), dtype=x.dtype)
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    keep = s > np.maximum(atol, rtol * s[..., :1])
    inv = np.where(keep, 1 / np.where(keep, s, 1), 0)
    return np.ascontiguousarray(np.swapaxes(vh, -1, -2) * inv[..., None, :] @ np.swapaxes(u, -1, -2),
                                dtype=x.dtype)


def pinv_backward(e, grad, pinv, a):
    """torch's pinv_backward: the cotangent of A given that of pinv(A), in IR ops."""
    m, n = a.shape[-2:]
    ph, gh = _t(e, pinv), _t(e, grad)
    if m <= n:
        k = e.matmul(gh, pinv)
        kph = e.matmul(k, ph)
        out = e.add(e.neg(_t(e, e.matmul(pinv, k))), kph)
        out = e.sub(out, e.matmul(e.matmul(a, pinv), kph))
        return e.add(out, e.matmul(e.matmul(ph, pinv), e.sub(gh, e.matmul(k, a))))
    k = e.matmul(pinv, gh)
    phk = e.matmul(ph, k)
    out = e.add(e.neg(_t(e, e.matmul(k, pinv))), e.matmul(e.matmul(e.sub(gh, e.matmul(a, k)), pinv), ph))
    return e.sub(e.add(out, phk), e.matmul(e.matmul(phk, pinv), a))


register(OpDef("pinv", OPAQUE, _pinv_infer, _pinv_ref,
               lambda e, x, y, g, a, n: [pinv_backward(e, g[0], y[0], x[0])], reference_only=True,
               extra={"node": "LinalgPinvBackward0", **_LAPACK},
               doc="pinv(A; atol, rtol, hermitian): the Moore-Penrose pseudo-inverse"))


# ------------------------------------------------------------------ lstsq
# lstsq(A, B; driver, vector) -> (solution, residuals, rank, singular_values), B a batch of vectors
# when `vector`; the solution's VJP is
# torch's linalg_lstsq_backward (through pinv(A)), the residuals' below; rank and singular_values
# carry no gradient.
def _lstsq_infer(types, attrs):
    a, b = types
    if attrs.get("vector"):
        b = TensorType(b.shape + (1,), b.dtype)
        solution, *rest = _lstsq_infer([a, b], {"driver": attrs["driver"]})
        return [TensorType(solution.shape[:-1], solution.dtype), *rest]
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    (m, n), k, driver = a.shape[-2:], b.shape[-1], attrs["driver"]
    residuals = batch + (k,) if m > n and driver != "gelsy" else (0,)
    rank = (0,) if driver == "gels" else batch
    values = batch + (min(m, n),) if driver in ("gelsd", "gelss") else (0,)
    return [TensorType(batch + (n, k), a.dtype), TensorType(residuals, a.dtype), TensorType(rank, int64),
            TensorType(values, a.dtype)]


def _lstsq_ref(a, b, driver, vector=False):
    if vector:
        sol, *rest = _lstsq_ref(a, b[..., None], driver)
        return (sol[..., 0], *rest)
    a, b = _batched(a, b)
    (m, n), batch = a.shape[-2:], a.shape[:-2]
    sol = np.zeros(batch + (n, b.shape[-1]), dtype=a.dtype)
    rank = np.zeros(batch, dtype=np.int64)
    values = np.zeros(batch + (min(m, n),), dtype=a.dtype)
    flat, flat_rank, flat_values = _matrices(sol), rank.reshape(-1), values.reshape((-1, min(m, n)))
    for k, (ma, mb) in enumerate(zip(_matrices(a), _matrices(b))):
        if ma.size and mb.size:
            flat[k], _, flat_rank[k], flat_values[k] = np.linalg.lstsq(ma, mb, rcond=None)
    residuals = np.zeros((0,), dtype=a.dtype)
    if m > n and driver != "gelsy":
        residuals = np.square(a @ sol - b).sum(axis=-2).astype(a.dtype)
    return (sol, residuals, rank if driver != "gels" else np.zeros((0,), dtype=np.int64),
            values if driver in ("gelsd", "gelss") else np.zeros((0,), dtype=a.dtype))


def _lstsq_vjp(e, x, y, g, a, n):
    # the residuals ||AX - B||^2 (per column) at the optimum X: 2 (AX - B) diag(gR) X^T for A,
    # -2 (AX - B) diag(gR) for B (X's own change does not move them to first order)
    (A, B), (X, residuals), gx = x, y[:2], g[0]
    if a.get("vector"):         # as one-column matrices
        B, X, gx = (e.reshape(v, tuple(v.shape) + (1,)) for v in (B, X, gx))
    pinv = e.op("pinv", A, atol=None, rtol=None, hermitian=False)
    ga = pinv_backward(e, e.matmul(gx, _t(e, B)), pinv, A) if n[0] else None
    gb = e.matmul(_t(e, pinv), gx) if n[1] else None
    if residuals.shape != (0,):
        gr = g[1]
        scaled = e.mul(e.sub(e.matmul(A, X), B), e.mul(e.reshape(gr, tuple(gr.shape[:-1]) + (1, gr.shape[-1])), 2.0))
        ga = e.add(ga, e.matmul(scaled, _t(e, X))) if n[0] else None
        gb = e.sub(gb, scaled) if n[1] else None
    if gb is not None and a.get("vector"):
        gb = e.reshape(gb, tuple(gb.shape[:-1]))
    return [ga, gb]


register(OpDef("lstsq", OPAQUE, _lstsq_infer, _lstsq_ref, _lstsq_vjp, nondiff_outputs=(2, 3),
               reference_only=True, extra={"node": "LinalgLstsqBackward0", **_LAPACK},
               doc="lstsq(A, B; driver) -> (solution, residuals, rank, singular_values)"))


# ------------------------------------------------------------------ matrix_exp
# exp(A) by scaling and squaring with the degree-13 Pade approximant (Higham 2005, the method
# of torch's and SciPy's expm; NumPy only: SciPy is no dependency); VJP: exp of the block matrix
# [[A^T, G], [0, A^T]], its upper right block (torch's differential_analytic_matrix_function).
_PADE13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800., 129060195264000.,
           10559470521600., 670442572800., 33522128640., 1323241920., 40840800., 960960., 16380., 182., 1.)
_THETA13 = 5.371920351148152


def _expm(a: np.ndarray) -> np.ndarray:
    """exp of each square matrix of a batch (float64 arithmetic)."""
    a = a.astype(np.float64)
    norms = np.abs(a).sum(-2).max(-1)                   # the 1-norm of each matrix
    with np.errstate(divide="ignore"):
        squarings = np.maximum(0, np.ceil(np.log2(norms / _THETA13))).astype(np.int64)
    squarings = np.where(np.isfinite(norms), squarings, 0)
    a = a / (2.0 ** squarings)[..., None, None]
    b, eye = _PADE13, np.broadcast_to(np.eye(a.shape[-1]), a.shape)
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    r = np.linalg.solve(v - u, v + u)
    for k in range(int(squarings.max(initial=0))):      # (matrices needing fewer squarings stop early)
        r = np.where((squarings > k)[..., None, None], r @ r, r)
    return r


def _matrix_exp_ref(x):
    if not x.size:
        return np.zeros_like(x)
    with np.errstate(all="ignore"):
        return np.ascontiguousarray(_expm(x), dtype=x.dtype)


def _matrix_exp_vjp(e, x, y, g, a, n):
    at = _t(e, x[0])
    k = at.shape[-1]
    top = e.op("cat", at, g[0], axis=at.type.ndim - 1)
    bottom = e.op("cat", e.zeros_like(at), at, axis=at.type.ndim - 1)
    big = e.op("matrix_exp", e.op("cat", top, bottom, axis=at.type.ndim - 2))
    index = [("s", 0, s, 1) for s in big.shape[:-2]] + [("s", 0, k, 1), ("s", k, 2 * k, 1)]
    return [e.op("getitem", big, index=tuple(index))]


register(OpDef("matrix_exp", OPAQUE, lambda types, attrs: [types[0]], _matrix_exp_ref, _matrix_exp_vjp,
               reference_only=True, extra={"node": "LinalgMatrixExpBackward0",
                                           "reference_why": "Pade approximant in NumPy"},
               doc="matrix_exp(A): the matrix exponential"))
