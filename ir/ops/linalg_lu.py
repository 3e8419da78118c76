"""LU with partial pivoting and the solvers torch builds on factors: lu_factor (LAPACK getrf's
LU, pivots and info), lu_unpack (P, L, U of a factorization), linalg_lu, lu_solve, and the
legacy cholesky_solve, cholesky_inverse and triangular_solve. No SciPy: getrf is written here
in NumPy (a loop over the columns, each step vectorised over the batch), choosing LAPACK's
pivots (the largest absolute value in the column, the first one on ties). Reference-run;
every VJP is torch's formula (FunctionsManual.cpp) in IR ops, so it differentiates again.
Pivots and info are int64: fusegrad has no int32 (torch's are int32)."""
from __future__ import annotations

import numpy as np

from ..types import TensorType, int64
from .linalg import LinAlgError
from .linalg_decomp import _batched, _narrow_last, _substitute, _t, _where
from .registry import OPAQUE, OpDef, broadcast_shapes, register

_WHY = {"reference_why": "LU with partial pivoting in NumPy"}


# ------------------------------------------------------------------ getrf
def getrf(x: np.ndarray):
    """LAPACK getrf of each matrix of x (..., m, n): (LU, pivots (1-based, int64, (..., k)),
    info (int64, (...)): 0 or the 1-based index of the first zero pivot). A zero pivot leaves
    its column unscaled and the factorization goes on, as getf2 does."""
    *batch, m, n = x.shape
    k = min(m, n)
    # (a copy, in the input's precision; the batch counted, as -1 is ambiguous for an empty matrix)
    a = np.array(x, dtype=x.dtype).reshape((int(np.prod(batch, dtype=np.int64)), m, n))
    count = a.shape[0]
    pivots = np.zeros((count, k), dtype=np.int64)
    info = np.zeros(count, dtype=np.int64)
    rows = np.arange(count)
    with np.errstate(all="ignore"):
        for j in range(k):
            p = j + np.argmax(np.abs(a[:, j:, j]), axis=-1)      # (argmax: the first on ties, as idamax)
            pivots[:, j] = p + 1
            swap = p != j
            if swap.any():
                top, other = a[rows, j].copy(), a[rows, p].copy()
                a[rows, j], a[rows, p] = other, top
            pivot = a[:, j, j]
            zero = pivot == 0
            info = np.where(zero & (info == 0), j + 1, info)
            if j + 1 < m:
                a[:, j + 1:, j] /= np.where(zero, 1, pivot)[:, None]
                a[:, j + 1:, j + 1:] -= a[:, j + 1:, j, None] * a[:, j, None, j + 1:]
    return a.reshape(x.shape), pivots.reshape((*batch, k)), info.reshape(tuple(batch))


def _lu_error(fn: str, x: np.ndarray, info: np.ndarray) -> RuntimeError | None:
    """torch's error for the first matrix with a zero pivot (a RuntimeError, not a LinAlgError, as torch's)."""
    flat = info.reshape(-1)
    bad = np.flatnonzero(flat)
    if not bad.size:
        return None
    k, i = int(bad[0]), int(flat[bad[0]])
    return RuntimeError(f"{fn}: {_where(k, x)}U[{i},{i}] is zero and using it on lu_solve would result in a division "
                        "by zero. If you still want to perform the factorization, consider calling linalg.lu(A, pivot) "
                        "or linalg.lu_factor_ex(A, pivot)")


def _lu_factor_infer(types, attrs):
    x = types[0]
    k = min(x.shape[-2:])
    return [x, TensorType(x.shape[:-2] + (k,), int64), TensorType(x.shape[:-2], int64)]


def _lu_factor_ref(x, raises=False):
    lu, pivots, info = getrf(x)
    if raises:
        error = _lu_error(raises, x, info)
        if error is not None:
            raise error
    return lu, pivots, info


def _lu_factor_vjp(e, x, y, g, a, n):
    # torch's lu_factor_ex_backward: linalg_lu_backward(grad[:, :k].tril(-1), grad[:k].triu(), P, L, U)
    lu, pivots = y[0], y[1]
    m, cols = lu.shape[-2:]
    k = min(m, cols)
    p, low, up = e.op("lu_unpack", lu, pivots, unpack_data=True, unpack_pivots=True)
    gl = e.op("tril", _narrow_last(e, g[0], k), diagonal=-1)
    gu = e.op("triu", _narrow_last(e, g[0], k, -2), diagonal=0)
    return [lu_backward(e, gl, gu, p, low, up)]


def lu_backward(e, gl, gu, p, low, up):
    """torch's linalg_lu_backward (pivot=True): the cotangent of A = P L U from those of L and U."""
    m, cols = low.shape[-2], up.shape[-1]
    k = min(m, cols)
    lh, uh = _t(e, low), _t(e, up)
    if m == cols:
        ga = e.add(e.op("tril", e.matmul(lh, gl), diagonal=-1), e.op("triu", e.matmul(gu, uh), diagonal=0))
        ga = e.op("solve_triangular", uh, ga, upper=False, left=False, unitriangular=False)
        ga = e.op("solve_triangular", lh, ga, upper=True, left=True, unitriangular=True)
    elif m < cols:      # wide: U = [U1 U2], U1 k x k
        gut = e.op("triu", gu, diagonal=0)
        ga = e.sub(e.matmul(lh, gl), e.matmul(gut, uh))
        u1h = _t(e, _narrow_last(e, up, k))
        ga = e.op("solve_triangular", u1h, e.op("tril", ga, diagonal=-1), upper=False, left=False,
                  unitriangular=False)
        gu2 = e.op("getitem", gu, index=_columns(gu.shape, k, cols))
        ga = e.op("cat", e.add(ga, e.op("triu", _narrow_last(e, gu, k), diagonal=0)), gu2, axis=ga.type.ndim - 1)
        ga = e.op("solve_triangular", lh, ga, upper=True, left=True, unitriangular=True)
    else:               # tall: L = [L1; L2], L1 k x k
        glt = e.op("tril", gl, diagonal=-1)
        ga = e.sub(e.matmul(gu, uh), e.matmul(lh, glt))
        l1h = _t(e, _narrow_last(e, low, k, -2))
        ga = e.op("solve_triangular", l1h, e.op("triu", ga, diagonal=0), upper=True, left=True, unitriangular=True)
        gl2 = e.op("getitem", gl, index=_rows(gl.shape, k, m))
        ga = e.op("cat", e.add(ga, e.op("tril", _narrow_last(e, gl, k, -2), diagonal=-1)), gl2,
                  axis=ga.type.ndim - 2)
        ga = e.op("solve_triangular", uh, ga, upper=False, left=False, unitriangular=False)
    return e.matmul(p, ga)


def _columns(shape, start, stop):
    return tuple([("s", 0, s, 1) for s in shape[:-1]] + [("s", start, stop, 1)])


def _rows(shape, start, stop):
    return tuple([("s", 0, s, 1) for s in shape[:-2]] + [("s", start, stop, 1), ("s", 0, shape[-1], 1)])


register(OpDef("lu_factor", OPAQUE, _lu_factor_infer, _lu_factor_ref, _lu_factor_vjp, nondiff_outputs=(1, 2),
               reference_only=True,
               extra={"node": "LinalgLuFactorExBackward0", "value_checks": lambda ins: dict(ins.attrs).get("raises"),
                      **_WHY},
               doc="lu_factor(A; raises) -> (LU, pivots, info): LU with partial pivoting, as LAPACK's getrf"))


# ------------------------------------------------------------------ lu_unpack
def _lu_unpack_infer(types, attrs):
    lu = types[0]
    *batch, m, n = lu.shape
    k = min(m, n)
    p = TensorType((*batch, m, m), lu.dtype) if attrs["unpack_pivots"] else TensorType((0,), lu.dtype)
    if not attrs["unpack_data"]:
        return [p, TensorType((0,), lu.dtype), TensorType((0,), lu.dtype)]
    return [p, TensorType((*batch, m, k), lu.dtype), TensorType((*batch, k, n), lu.dtype)]


def permutation(pivots: np.ndarray, m: int, dtype) -> np.ndarray:
    """The permutation matrices P (..., m, m) of getrf's pivots (A = P L U): the row swaps
    applied in turn to the identity's row order."""
    batch, k = pivots.shape[:-1], pivots.shape[-1]
    flat = pivots.reshape((int(np.prod(batch, dtype=np.int64)), k)) - 1     # (k may be 0: no -1)
    order = np.broadcast_to(np.arange(m), (flat.shape[0], m)).copy()
    rows = np.arange(flat.shape[0])
    for i in range(k):
        target = flat[:, i]
        first, second = order[rows, i].copy(), order[rows, target].copy()
        order[rows, i], order[rows, target] = second, first
    p = np.zeros((flat.shape[0], m, m), dtype=dtype)
    p[rows[:, None], order, np.arange(m)[None, :]] = 1      # (row order[i] of A is row i of L U)
    return p.reshape(batch + (m, m))


def _check_pivots(pivots: np.ndarray, m: int) -> None:
    if pivots.size and (pivots.min() < 1 or pivots.max() > m):
        raise RuntimeError("pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive."
                           "Did you properly pass the result of lu_factor?")


def _lu_unpack_ref(lu, pivots, unpack_data=True, unpack_pivots=True):
    m, n = lu.shape[-2:]
    k = min(m, n)
    empty = np.zeros((0,), dtype=lu.dtype)
    if unpack_pivots:
        _check_pivots(pivots, m)
        p = permutation(np.broadcast_to(pivots, lu.shape[:-2] + pivots.shape[-1:]), m, lu.dtype)
    else:
        p = empty
    if not unpack_data:
        return p, empty, empty.copy()
    low = np.tril(lu[..., :, :k], -1)
    low[..., np.arange(k), np.arange(k)] = 1
    return p, np.ascontiguousarray(low), np.ascontiguousarray(np.triu(lu[..., :k, :]))


def unpack_backward(e, gl, gu, m: int, n: int):
    """torch's lu_unpack_backward: gL's strict lower triangle and gU's upper one, in one m x n matrix."""
    k = min(m, n)
    low, up = e.op("tril", gl, diagonal=-1), e.op("triu", gu, diagonal=0)
    if m == n:
        return e.add(low, up)
    if m < n:           # L is m x m, U m x n: L's part goes into the first k columns
        rest = e.zeros_like(e.op("getitem", up, index=_columns(up.shape, k, n)))
        return e.add(up, e.op("cat", low, rest, axis=up.type.ndim - 1))
    rest = e.zeros_like(e.op("getitem", low, index=_rows(low.shape, k, m)))
    return e.add(low, e.op("cat", up, rest, axis=low.type.ndim - 2))


def _lu_unpack_vjp(e, x, y, g, a, n):
    if not a["unpack_data"]:
        return [e.zeros_like(x[0]), None]
    m, cols = x[0].shape[-2:]
    return [unpack_backward(e, g[1], g[2], m, cols), None]


register(OpDef("lu_unpack", OPAQUE, _lu_unpack_infer, _lu_unpack_ref, _lu_unpack_vjp, nondiff_inputs=(1,),
               nondiff_outputs=(0,), reference_only=True,
               extra={"node": "LuUnpackBackward0", "value_checks": lambda ins: dict(ins.attrs).get("unpack_pivots"),
                      **_WHY},
               doc="lu_unpack(LU, pivots; unpack_data, unpack_pivots) -> (P, L, U)"))


# ------------------------------------------------------------------ linalg_lu
def _linalg_lu_infer(types, attrs):
    return _lu_unpack_infer([types[0]], {"unpack_data": True, "unpack_pivots": True})


def _linalg_lu_ref(x):
    lu, pivots, _ = getrf(x)
    return _lu_unpack_ref(lu, pivots)


def _linalg_lu_vjp(e, x, y, g, a, n):
    return [lu_backward(e, g[1], g[2], *y)]


register(OpDef("linalg_lu", OPAQUE, _linalg_lu_infer, _linalg_lu_ref, _linalg_lu_vjp, nondiff_outputs=(0,),
               reference_only=True, extra={"node": "LinalgLuBackward0", **_WHY},
               doc="linalg_lu(A) -> (P, L, U): A = P L U, partial pivoting"))


# ------------------------------------------------------------------ lu_solve
# lu_solve(LU, pivots, B; left, adjoint): X with AX = B, A^T X = B (adjoint), XA = B (not left)
# or X A^T = B, A = P L U the factorization; batch dims broadcast.
def _lu_solve_infer(types, attrs):
    lu, _, b = types
    return [TensorType(broadcast_shapes(lu.shape[:-2], b.shape[:-2]) + b.shape[-2:], lu.dtype)]


def _solve_factored(lu, pivots, b, adjoint):
    """op(A) X = B for A = P L U (op: the transpose when adjoint); lu and b broadcast."""
    p, low, up = _lu_unpack_ref(lu, pivots)
    p, b = _batched(p, b)
    low, up = np.broadcast_to(low, p.shape), np.broadcast_to(up, p.shape)
    if not adjoint:     # L U X = P^T B
        y = _substitute(low, np.swapaxes(p, -1, -2) @ b, True, True)
        return _substitute(up, y, False, False)
    # U^T L^T P^T X = B
    y = _substitute(np.swapaxes(up, -1, -2), b, True, False)
    return p @ _substitute(np.swapaxes(low, -1, -2), y, False, True)


def _lu_solve_ref(lu, pivots, b, left=True, adjoint=False):
    batch = broadcast_shapes(lu.shape[:-2], b.shape[:-2])
    if lu.size == 0 or b.size == 0:
        return np.zeros(batch + b.shape[-2:], dtype=lu.dtype)
    pivots = np.broadcast_to(pivots, lu.shape[:-2] + pivots.shape[-1:])      # (LU's batch, then both's)
    lu, b = _batched(lu, b)
    pivots = np.broadcast_to(pivots, lu.shape[:-2] + pivots.shape[-1:])
    if left:
        out = _solve_factored(lu, pivots, b, adjoint)
    else:               # X op(A) = B  <=>  op(A)^T X^T = B^T
        out = np.swapaxes(_solve_factored(lu, pivots, np.swapaxes(b, -1, -2), not adjoint), -1, -2)
    return np.ascontiguousarray(out, dtype=lu.dtype)


def _lu_solve_vjp(e, x, y, g, a, n):
    # torch: B: lu_solve(LU, pivots, gX, left, !adjoint); LU: linalg_lu_solve_LU
    (lu, pivots, _), sol, gx = x, y[0], g[0]
    left, adjoint = a["left"], a["adjoint"]
    gb = e.op("lu_solve", lu, pivots, gx, left=left, adjoint=not adjoint) if n[2] else None
    glu = None
    if n[0]:
        p, low, up = e.op("lu_unpack", lu, pivots, unpack_data=True, unpack_pivots=True)
        lh, uh = _t(e, low), _t(e, up)
        if left != adjoint:
            prod = e.matmul(gx, _t(e, sol)) if left else e.matmul(_t(e, gx), sol)
            gr = e.op("solve_triangular", uh, e.neg(prod), upper=False, left=True, unitriangular=False)
            gl = e.op("solve_triangular", lh, e.matmul(gr, uh), upper=True, left=True, unitriangular=True)
            glu = e.add(e.op("tril", gl, diagonal=-1), e.op("triu", gr, diagonal=0))
        else:
            prod = e.matmul(sol, _t(e, gx)) if left else e.matmul(_t(e, sol), gx)
            gr = e.neg(e.matmul(e.matmul(_t(e, p), prod), p))
            gr = e.op("solve_triangular", lh, gr, upper=True, left=False, unitriangular=True)
            gu = e.op("solve_triangular", uh, e.matmul(lh, gr), upper=False, left=False, unitriangular=False)
            glu = e.add(e.op("tril", gr, diagonal=-1), e.op("triu", gu, diagonal=0))
    return [glu, None, gb]


register(OpDef("lu_solve", OPAQUE, _lu_solve_infer, _lu_solve_ref, _lu_solve_vjp, nondiff_inputs=(1,),
               reference_only=True, extra={"node": "LinalgLuSolveBackward0", **_WHY},
               doc="lu_solve(LU, pivots, B; left, adjoint): the solution of a system from its LU factors"))


# ------------------------------------------------------------------ cholesky_solve
# cholesky_solve(B, L; upper): X with A X = B, A = L L^T (U^T U when upper); batch dims broadcast.
def _cholesky_solve_infer(types, attrs):
    b, low = types
    return [TensorType(broadcast_shapes(b.shape[:-2], low.shape[:-2]) + b.shape[-2:], b.dtype)]


def _cholesky_solve_ref(b, low, upper=False):
    low, b = _batched(low, b)
    if upper:
        low = np.swapaxes(low, -1, -2)
    y = _substitute(low, b, True, False)
    return np.ascontiguousarray(_substitute(np.swapaxes(low, -1, -2), y, False, False), dtype=b.dtype)


def _cholesky_solve_vjp(e, x, y, g, a, n):
    # torch's cholesky_solve_backward
    low, sol = x[1], y[0]
    gb = e.op("cholesky_solve", g[0], low, upper=a["upper"])
    glow = None
    if n[1]:
        common = e.matmul(gb, _t(e, sol))
        common = e.add(common, _t(e, common))
        glow = e.neg(e.matmul(low, common) if a["upper"] else e.matmul(common, low))
    return [gb if n[0] else None, glow]


register(OpDef("cholesky_solve", OPAQUE, _cholesky_solve_infer, _cholesky_solve_ref, _cholesky_solve_vjp,
               reference_only=True, extra={"node": "CholeskySolveBackward0", **_WHY},
               doc="cholesky_solve(B, L; upper): the solution of (L L^T) X = B"))


# ------------------------------------------------------------------ cholesky_inverse
def _cholesky_inverse_ref(low, upper=False):
    if low.size == 0:
        return np.zeros_like(low)
    diagonal = np.diagonal(low, axis1=-2, axis2=-1).reshape((-1, low.shape[-1]))
    for k, d in enumerate(diagonal):
        zero = np.flatnonzero(d == 0)
        if zero.size:
            raise LinAlgError(f"cholesky_inverse: {_where(k, low)}The diagonal element {int(zero[0]) + 1} is zero, the "
                              "inversion could not be completed because the input matrix is singular.")
    factor = np.swapaxes(low, -1, -2) if upper else low
    eye = np.broadcast_to(np.eye(low.shape[-1], dtype=low.dtype), low.shape)
    inv = _substitute(factor, eye, True, False)             # L^-1; A^-1 = L^-T L^-1
    return np.ascontiguousarray(np.swapaxes(inv, -1, -2) @ inv, dtype=low.dtype)


def _cholesky_inverse_vjp(e, x, y, g, a, n):
    # torch's cholesky_inverse_backward
    low, inv = x[0], y[0]
    common = e.add(g[0], _t(e, g[0]))
    common = e.matmul(inv, e.matmul(common, inv))
    return [e.neg(e.matmul(low, common) if a["upper"] else e.matmul(common, low))]


register(OpDef("cholesky_inverse", OPAQUE, lambda types, attrs: [types[0]], _cholesky_inverse_ref,
               _cholesky_inverse_vjp, reference_only=True,
               extra={"node": "CholeskyInverseBackward0", "value_checks": True, **_WHY},
               doc="cholesky_inverse(L; upper): (L L^T)^-1 (U^T U when upper)"))


# ------------------------------------------------------------------ triangular_solve
# triangular_solve(b, A; upper, transpose, unitriangular) -> (X, A broadcast): op(A) X = b, op the
# transpose when `transpose`; torch's deprecated form returns a copy of A as its second output.
def _triangular_solve_infer(types, attrs):
    b, a = types
    batch = broadcast_shapes(b.shape[:-2], a.shape[:-2])
    return [TensorType(batch + b.shape[-2:], b.dtype), TensorType(batch + a.shape[-2:], a.dtype)]


def _triangular_solve_ref(b, a, upper=True, transpose=False, unitriangular=False):
    a, b = _batched(a, b)
    m = np.swapaxes(a, -1, -2) if transpose else a
    x = _substitute(m, b, upper == transpose, unitriangular)
    return np.ascontiguousarray(x, dtype=b.dtype), np.array(a, dtype=a.dtype)


def _triangular_solve_vjp(e, x, y, g, a, n):
    # torch's triangular_solve_backward
    A, sol = x[1], y[0]
    upper, transpose, unit = a["upper"], a["transpose"], a["unitriangular"]
    gb = e.op("triangular_solve", g[0], A, upper=upper, transpose=not transpose, unitriangular=unit)[0]
    ga = None
    if n[1]:
        ga = e.neg(e.matmul(sol, _t(e, gb)) if transpose else e.matmul(gb, _t(e, sol)))
        ga = e.op("triu", ga, diagonal=int(unit)) if upper else e.op("tril", ga, diagonal=-int(unit))
        ga = e.add(ga, g[1])
    return [gb if n[0] else None, ga]


register(OpDef("triangular_solve", OPAQUE, _triangular_solve_infer, _triangular_solve_ref, _triangular_solve_vjp,
               reference_only=True, extra={"node": "TriangularSolveBackward0", **_WHY},
               doc="triangular_solve(b, A; upper, transpose, unitriangular) -> (X, A's copy)"))
