"""fg.linalg: torch.linalg's functions (CPU, real dtypes). The decompositions and solvers are ops
of ir/ops/linalg_decomp.py (LAPACK through NumPy/SciPy, reference-run, with VJPs in IR ops so
they differentiate again); det, inv, slogdet, matrix_power, cross reuse tracer/linalg_functions.py;
the norms are composites of the norm, svd, amax/amin and sum ops, recorded as torch records them.
Named results are torch.return_types.linalg_* structs (fg.return_types)."""
from __future__ import annotations

import math
import numbers

from fusegrad import return_types as _return_types
from fusegrad.ir.ops import broadcast_shapes, normalize_dim
from fusegrad.ir.ops.linalg import LinAlgError
from fusegrad.ir.types import TORCH_SCALAR_NAMES
from fusegrad.tracer import functional as F
from fusegrad.tracer import linalg_functions as _lf
from fusegrad.tracer import linalg_lu as _lu
from fusegrad.tracer.creation import ones_like
from fusegrad.tracer.dispatch import apply_op
from fusegrad.tracer.grad_mode import no_grad
from fusegrad.tracer.tensor import Tensor

__all__ = ["LinAlgError", "vector_norm", "matrix_norm", "norm", "det", "slogdet", "inv", "inv_ex", "solve",
           "solve_ex", "solve_triangular", "cholesky", "cholesky_ex", "qr", "eigh", "eigvalsh", "svd", "svdvals",
           "pinv", "matrix_rank", "lstsq", "multi_dot", "matrix_power", "cross", "vecdot", "diagonal", "matrix_exp",
           "matmul", "vander", "tensorinv", "tensorsolve",
           "lu_factor", "lu_factor_ex", "lu", "lu_solve", "cond"]


def _named(kind: str, *fields: str) -> type:
    """torch.return_types.<kind> (functional.named_result), also set as fusegrad.return_types.<kind>."""
    cls = F.named_result(kind, *fields)
    setattr(_return_types, kind, cls)       # (found there by pickle, as torch.return_types.<kind>)
    return cls


SlogdetResult = _named("linalg_slogdet", "sign", "logabsdet")
InvExResult = _named("linalg_inv_ex", "inverse", "info")
SolveExResult = _named("linalg_solve_ex", "result", "info")
CholeskyExResult = _named("linalg_cholesky_ex", "L", "info")
QrResult = _named("linalg_qr", "Q", "R")
EighResult = _named("linalg_eigh", "eigenvalues", "eigenvectors")
SvdResult = _named("linalg_svd", "U", "S", "Vh")
LstsqResult = _named("linalg_lstsq", "solution", "residuals", "rank", "singular_values")


def _name(t: Tensor) -> str:
    return TORCH_SCALAR_NAMES[t._dtype.name]


def _matrix(A, fn: str, square: bool = True, name: str = "A") -> Tensor:
    """A as a Tensor of >= 2 dims of a floating dtype (square ones where `square`): torch's texts."""
    a = F.as_tensor(A, fn.split(".")[-1])
    if a.dim() < 2:
        raise RuntimeError(f"{fn}: The input tensor {name} must have at least 2 dimensions.")
    if not a._dtype.is_floating_point:
        raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. Got {_name(a)}")
    if square and a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{fn}: A must be batches of square matrices, but they are {a.shape[-2]} by "
                           f"{a.shape[-1]} matrices")
    return a


def _no_out(out, fn):
    if out is not None:
        raise NotImplementedError(f"fusegrad: linalg.{fn}(out=) is not supported")


# ------------------------------------------------------------------ norms
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None) -> Tensor:
    """torch.linalg.vector_norm: the ord-norm of x's elements over `dim` (all when None),
    LinalgVectorNormBackward0; `dtype` computes in that floating dtype."""
    _no_out(out, "vector_norm")
    if isinstance(ord, str):
        raise TypeError("linalg_vector_norm(): argument 'ord' (position 2) must be Number, not str")
    return F.norm(x, ord, dim, keepdim, dtype=dtype)


def _matrix_dims(a: Tensor, dim) -> tuple:
    dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if len(dims) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(str(d) for d in dims)}")
    d0, d1 = (normalize_dim(d, a.dim()) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    return d0, d1


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None) -> Tensor:
    """torch.linalg.matrix_norm: 'fro' (a vector 2-norm over the two dims), 'nuc' (the sum of the
    singular values), +-inf / +-1 (max / min absolute row / column sums: AmaxBackward0 over
    LinalgVectorNormBackward0) and +-2 (the largest / smallest singular value)."""
    _no_out(out, "matrix_norm")
    a = _matrix(A, "linalg.matrix_norm", square=False)
    if dtype is not None:
        a = F.cast(a, F._dtype_argument("linalg_matrix_norm", dtype))
    if ord not in ("fro", "nuc") and (isinstance(ord, str) or not isinstance(ord, numbers.Number)
                                      or ord not in (math.inf, -math.inf, 1, -1, 2, -2)):
        text = ord if isinstance(ord, str) else f"{ord:g}" if isinstance(ord, float) else ord
        raise RuntimeError(f"linalg.matrix_norm: Order {text} not supported.")
    d0, d1 = _matrix_dims(a, dim)
    if ord == "fro":
        return F.norm(a, 2, (d0, d1), keepdim)
    if ord == "nuc":
        return F._nuclear_norm(a, (d0, d1), keepdim)
    if abs(ord) == 2:
        return _singular_norm(a, (d0, d1), keepdim, ord > 0)
    # ord = +-inf: the rows' absolute sums (over d1), then their max / min over d0; +-1 the columns'
    summed, other = (d1, d0) if abs(ord) == math.inf else (d0, d1)
    sums = F.norm(a, 1.0, (summed,), keepdim)
    if not keepdim and other > summed:
        other -= 1
    return (F.amax if ord > 0 else F.amin)(sums, other, keepdim)


def _singular_norm(a: Tensor, axes: tuple, keepdim: bool, largest: bool) -> Tensor:
    """The largest (smallest) singular value of the matrices over `axes` (torch: AmaxBackward0 /
    AminBackward0 over LinalgSvdBackward0), with torch's permute for keepdim."""
    rest = [d for d in range(a.dim()) if d not in axes]
    matrices = a if axes == (a.dim() - 2, a.dim() - 1) else F.permute(a, tuple(rest) + axes)
    out = (F.amax if largest else F.amin)(apply_op("svd", [matrices], None, "LinalgSvdBackward0")[1], -1)
    if keepdim:
        out = F.unsqueeze(F.unsqueeze(out, -1), -1)
        source = iter(range(len(rest)))
        order = [a.dim() - 2 if d == axes[0] else a.dim() - 1 if d == axes[1] else next(source)
                 for d in range(a.dim())]
        out = F.permute(out, tuple(order))
    return out


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None) -> Tensor:
    """torch.linalg.norm: a vector norm for one dim (or a 1-d input without dim), a matrix norm
    for two (or a 2-d input with an ord); without ord the 2-norm of the elements over `dim`."""
    _no_out(out, "norm")
    a = F.as_tensor(A, "norm")
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dim)}")
    if ord is not None:
        if dim is None and a.dim() not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                               f"Got {a.dim()}D.")
        if not isinstance(ord, str) and ((dim is None and a.dim() == 1) or (dim is not None and len(dim) == 1)):
            return vector_norm(a, ord, dim, keepdim, dtype=dtype)
        return matrix_norm(a, ord, (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
    return vector_norm(a, 2, dim, keepdim, dtype=dtype)


# ------------------------------------------------------------------ determinants and inverses
def det(A, *, out=None) -> Tensor:
    """torch.linalg.det (LinalgDetBackward0)."""
    _no_out(out, "det")
    return _lf.det(A)


def slogdet(A, *, out=None):
    """torch.linalg.slogdet: a torch.return_types.linalg_slogdet (sign, logabsdet)."""
    _no_out(out, "slogdet")
    return SlogdetResult(tuple(_lf.slogdet(A)))


def inv(A, *, out=None) -> Tensor:
    """torch.linalg.inv: LinalgInvExBackward0; a singular matrix raises fg.linalg.LinAlgError with
    torch's text (its first zero pivot of LU with partial pivoting)."""
    _no_out(out, "inv")
    a = _matrix(A, "linalg.inv")
    return apply_op("inverse", [a], {"raises": True}, "LinalgInvExBackward0")


def _lu_info(a: Tensor) -> Tensor:
    """LAPACK getrf's info per matrix (0, or the 1-based first zero pivot), as int64 (fusegrad
    has no int32: torch's info is int32)."""
    with no_grad():
        return apply_op("lu_info", [a], None)


def inv_ex(A, *, check_errors=False, out=None):
    """torch.linalg.inv_ex: (inverse, info); info (int64 here, int32 in torch) is 0 or the first
    zero pivot; a singular matrix's inverse holds NaN (torch's holds whatever LAPACK left).
    check_errors=True raises as inv."""
    _no_out(out, "inv_ex")
    a = _matrix(A, "linalg.inv")
    if check_errors:
        return InvExResult((inv(a), _zero_info(a)))
    info = _lu_info(a)
    return InvExResult((apply_op("inverse", [a], {"raises": False}, "LinalgInvExBackward0"), info))


def _int64():
    from fusegrad.ir.types import int64
    return int64


def _zero_info(a: Tensor) -> Tensor:
    """info = 0 for each matrix of a (int64)."""
    from fusegrad.tracer.creation import zeros
    return zeros(tuple(a.shape[:-2]), dtype=_int64())


# ------------------------------------------------------------------ solvers
def _is_vector_rhs(a: Tensor, b: Tensor) -> bool:
    return b.dim() == 1 or (b.dim() == a.dim() - 1 and tuple(b.shape) == tuple(a.shape[:-1]))


def solve(A, B, *, left=True, out=None) -> Tensor:
    """torch.linalg.solve: X with AX = B (left) or XA = B, batch dims broadcast; B a vector when
    1-d or of A's batch shape with one dim fewer (LinalgSolveExBackward0). A singular A raises
    fg.linalg.LinAlgError with torch's text."""
    _no_out(out, "solve")
    a = _matrix(A, "linalg.solve")
    b = F.as_tensor(B, "solve", "B", 2)
    if a._dtype is not b._dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type {_name(a)} "
                           f"and B of type {_name(b)} instead")
    vector = _is_vector_rhs(a, b)
    rows, cols = (b.shape[-1], 1) if vector else tuple(b.shape[-2:])
    if vector and not left and a.shape[-1] == 1:
        raise RuntimeError("linalg.solve: Vector broadcasting of the left hand side is not supported for left=False. "
                           "In this case linalg.solve is equivalent to B / A.squeeze(-1)")
    n, k = a.shape[-1], (rows if left else cols)
    if k != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation {eq} ({n}x{n} and "
                           f"{rows}x{cols})")
    return apply_op("linalg_solve", [a, b], {"left": bool(left), "vector": vector}, "LinalgSolveExBackward0")


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """torch.linalg.solve_ex: (result, info). fusegrad raises LinAlgError on a singular A whatever
    check_errors (info is then always 0)."""
    x = solve(A, B, left=left, out=out)
    return SolveExResult((x, _zero_info(F.as_tensor(A, "solve_ex"))))


_MISSING = object()


def solve_triangular(A, B, *, upper=_MISSING, left=True, unitriangular=False, out=None) -> Tensor:
    """torch.linalg.solve_triangular: X with AX = B (left) or XA = B for triangular A (upper or
    lower triangle read; unit diagonal assumed when unitriangular), batch dims broadcast
    (LinalgSolveTriangularBackward0); B is converted to A's dtype, as torch's result has it. A zero
    on A's diagonal gives NaN (torch's inf / NaN)."""
    _no_out(out, "solve_triangular")
    if upper is _MISSING:
        raise TypeError('linalg_solve_triangular() missing 1 required positional arguments: "upper"')
    a = F.as_tensor(A, "solve_triangular")
    b = F.as_tensor(B, "solve_triangular", "B", 2)
    for name, t in (("A", a), ("B", b)):
        if t.dim() < 2:
            raise RuntimeError(f"linalg.solve_triangular: The input tensor {name} must have at least 2 dimensions.")
    if not a._dtype.is_floating_point:
        raise NotImplementedError(f"\"triangular_solve_cpu\" not implemented for '{_name(a)}'")
    b = F.cast(b, a._dtype, implicit=True)      # (torch's result takes A's dtype, inside its node)
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"linalg.solve_triangular: A must be batches of square matrices, but they are "
                           f"{a.shape[-2]} by {a.shape[-1]} matrices")
    k = b.shape[-2] if left else b.shape[-1]
    if k != a.shape[-1]:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation {eq} "
                           f"({a.shape[-2]}x{a.shape[-1]} and {b.shape[-2]}x{b.shape[-1]})")
    return apply_op("solve_triangular", [a, b], {"upper": bool(upper), "left": bool(left),
                                                 "unitriangular": bool(unitriangular)},
                    "LinalgSolveTriangularBackward0")


def cholesky(A, *, upper=False, out=None) -> Tensor:
    """torch.linalg.cholesky: L (lower, L L^T = A) or U = L^T (upper), from A's lower triangle
    (LinalgCholeskyExBackward0); not positive-definite raises fg.linalg.LinAlgError, torch's text."""
    _no_out(out, "cholesky")
    a = _matrix(A, "linalg.cholesky")
    return apply_op("cholesky", [a], {"upper": bool(upper), "raises": "linalg.cholesky"},
                    "LinalgCholeskyExBackward0")[0]


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """torch.linalg.cholesky_ex: (L, info), info (int64 here, int32 in torch) the order of the first
    leading minor that is not positive-definite, else 0; a failed matrix's L is zeros here (torch's
    holds LAPACK's partial factor)."""
    _no_out(out, "cholesky_ex")
    a = _matrix(A, "linalg.cholesky")
    raises = "linalg.cholesky_ex" if check_errors else False
    result = apply_op("cholesky", [a], {"upper": bool(upper), "raises": raises},
                      "LinalgCholeskyExBackward0")
    return CholeskyExResult(tuple(result))


def qr(A, mode="reduced", *, out=None):
    """torch.linalg.qr: (Q, R), a torch.return_types.linalg_qr; mode 'reduced', 'complete' or 'r'
    (Q an empty tensor). Differentiable as torch (not for mode='r', nor 'complete' with more rows
    than columns); fusegrad does not differentiate a wide (rows < columns) QR."""
    _no_out(out, "qr")
    a = _matrix(A, "linalg.qr", square=False)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           "or 'complete'")
    return QrResult(tuple(apply_op("qr", [a], {"mode": mode}, "LinalgQrBackward0")))


def _eigh_operand(A, UPLO, fn):
    a = F.as_tensor(A, fn)
    if a.dim() >= 2 and not a._dtype.is_floating_point:
        raise NotImplementedError(f"\"linalg_eigh_cpu\" not implemented for '{_name(a)}'")
    a = _matrix(a, "linalg.eigh")
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return a


def eigh(A, UPLO="L", *, out=None):
    """torch.linalg.eigh: (eigenvalues ascending, eigenvectors) of symmetric matrices from their
    UPLO triangle (LinalgEighBackward0; gradients of the eigenvectors need distinct eigenvalues)."""
    _no_out(out, "eigh")
    a = _eigh_operand(A, UPLO, "eigh")
    return EighResult(tuple(apply_op("eigh", [a], {"upper": UPLO == "U", "vectors": True}, "LinalgEighBackward0")))


def eigvalsh(A, UPLO="L", *, out=None) -> Tensor:
    """torch.linalg.eigvalsh: the eigenvalues of symmetric matrices, ascending (LinalgEighBackward0:
    V diag(g) V^T)."""
    _no_out(out, "eigvalsh")
    a = _eigh_operand(A, UPLO, "eigvalsh")
    return apply_op("eigh", [a], {"upper": UPLO == "U", "vectors": False}, "LinalgEighBackward0")[0]


def svd(A, full_matrices=True, *, driver=None, out=None):
    """torch.linalg.svd: (U, S, Vh) with A = U diag(S) Vh, S descending (LinalgSvdBackward0; U and Vh
    are defined up to signs, so only sign-invariant functions of them have meaningful gradients).
    `driver` (CUDA only in torch) is accepted and ignored."""
    _no_out(out, "svd")
    a = _matrix(A, "linalg.svd", square=False)
    return SvdResult(tuple(apply_op("linalg_svd", [a], {"full_matrices": bool(full_matrices)},
                                    "LinalgSvdBackward0")))


def svdvals(A, *, driver=None, out=None) -> Tensor:
    """torch.linalg.svdvals: the singular values, descending (LinalgSvdBackward0)."""
    _no_out(out, "svdvals")
    a = _matrix(A, "linalg.svd", square=False)
    return apply_op("svd", [a], None, "LinalgSvdBackward0")[1]


def _tolerance(value, name):
    if value is None:
        return None
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise NotImplementedError(f"fusegrad: linalg {name} as a tensor of several values is not supported")
        value = value.item()
    return float(value)


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None) -> Tensor:
    """torch.linalg.pinv: the pseudo-inverse, singular values below max(atol, rtol * largest)
    dropped (rtol defaults to eps * max(m, n) when atol is absent or 0, else 0), LinalgPinvBackward0.
    atol / rtol: numbers (or one-element tensors)."""
    _no_out(out, "pinv")
    a = F.as_tensor(A, "pinv")
    if a.dim() < 2 or not a._dtype.is_floating_point:
        raise RuntimeError(f"linalg.pinv({_name(a)}{{{list(a.shape)}}}): expected a tensor with 2 or more "
                           "dimensions of float, double, cfloat or cdouble types")
    attrs = {"atol": _tolerance(atol, "atol"), "rtol": _tolerance(rtol, "rtol"), "hermitian": bool(hermitian)}
    return apply_op("pinv", [a], attrs, "LinalgPinvBackward0")


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None) -> Tensor:
    """torch.linalg.matrix_rank: the number of singular values (eigenvalue magnitudes when hermitian)
    above max(atol, rtol * largest), rtol's default as pinv's; an int64 tensor of A's batch shape."""
    _no_out(out, "matrix_rank")
    a = F.as_tensor(A, "matrix_rank")
    if a.dim() < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions.")
    if not a._dtype.is_floating_point:
        raise RuntimeError("This function doesn't handle types other than float and double")
    a = _matrix(a, "linalg.matrix_rank", square=bool(hermitian))
    atol, rtol = _tolerance(atol, "atol"), _tolerance(rtol, "rtol")
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else _eps(a) * max(a.shape[-2:])
    with no_grad():
        values = F.abs(eigvalsh(a)) if hermitian else svdvals(a)
        if values.shape[-1] == 0:
            return F.sum(F.cast(F.gt(values, 0), _int64()), -1)
        top = F.amax(values, -1, True)
        threshold = F.clamp_min(F.mul(top, rtol), atol or 0.0)
        return F.sum(F.cast(F.gt(values, threshold), _int64()), -1)


def _eps(a: Tensor) -> float:
    import numpy as np
    return float(np.finfo(a._dtype.np).eps)


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A, B, rcond=None, *, driver=None):
    """torch.linalg.lstsq: the least-squares solution of AX = B (batch dims broadcast), with residuals
    (drivers other than gelsy, m > n: fusegrad gives them even for a rank-deficient A, where torch's
    are empty), rank (not for gels) and singular_values (gelsd, gelss); NumPy's SVD-based solver
    computes every driver's solution. The solution differentiates through pinv(A), as torch."""
    a = F.as_tensor(A, "lstsq")
    b = F.as_tensor(B, "lstsq", "B", 2)
    if not a._dtype.is_floating_point or not b._dtype.is_floating_point:
        raise RuntimeError("This function doesn't handle types other than float and double")
    driver = "gelsy" if driver is None else driver
    if driver not in _DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if a.dim() < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if b.dim() > a.dim() or a.dim() - b.dim() > 1:
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and "
                           "(input.dim() - other.dim()) <= 1")
    vector = b.dim() == a.dim() - 1
    rows = b.shape[-1] if vector else b.shape[-2]
    if a._dtype is not b._dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
                           f"input's dtype {_name(a)} and other's dtype {_name(b)}")
    if a.shape[-2] != rows:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-{1 if vector else 2})")
    broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-1 if vector else -2]))    # (torch's text where not)
    sol, residuals, rank, values = apply_op("lstsq", [a, b], {"driver": driver, "vector": vector},
                                            "LinalgLstsqBackward0")
    return LstsqResult((sol, residuals, rank, values))


# ------------------------------------------------------------------ products and the rest
def multi_dot(tensors, *, out=None) -> Tensor:
    """torch.linalg.multi_dot: the chained product, in the order of fewest multiplications (torch's
    matrix-chain order), of 2-d matrices (the first may be a row vector, the last a column vector):
    MmBackward0 nodes under a final ViewBackward0."""
    _no_out(out, "multi_dot")
    ts = [F.as_tensor(t, "multi_dot") for t in tensors]
    n = len(ts)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    first, last = ts[0].dim(), ts[-1].dim()
    if first not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {first}D")
    if last not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {last}D")
    for i in range(1, n - 1):
        if ts[i].dim() != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {ts[i].dim()}D")
    short = {"float32": "float", "float64": "double", "int64": "long", "bool": "bool"}
    for i, t in enumerate(ts):
        if t._dtype is not ts[0]._dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                               f"{short.get(ts[0]._dtype.name)} and tensor {i} {short.get(t._dtype.name)}")
    mats = list(ts)
    if first == 1:
        mats[0] = F.unsqueeze(mats[0], 0)
    if last == 1:
        mats[-1] = F.unsqueeze(mats[-1], -1)
    for i in range(n - 1):
        if mats[i].shape[-1] != mats[i + 1].shape[-2]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(ts[i].shape)} and "
                               f"{list(ts[i + 1].shape)} cannot be multiplied")
    from fusegrad.tracer.products import mm
    dims = [mats[0].shape[0]] + [m.shape[1] for m in mats]
    if n == 2:
        result = mm(mats[0], mats[1])
    else:       # torch's matrix-chain order (tracer/linalg_functions.chain_order, chain_matmul's)
        result = _lf.chain_product(mats, _lf.chain_order(dims), 0, n - 1)
    shape = ([] if first == 1 else [result.shape[0]]) + ([] if last == 1 else [result.shape[1]])
    return F.reshape(result, tuple(shape))


def matrix_power(A, n, *, out=None) -> Tensor:
    """torch.linalg.matrix_power (torch.matrix_power's steps)."""
    _no_out(out, "matrix_power")
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not {type(n).__name__}")
    return _lf.matrix_power(A, n)


def cross(input, other, *, dim=-1, out=None) -> Tensor:
    """torch.linalg.cross: the vector product along `dim` (default -1), LinalgCrossBackward0."""
    _no_out(out, "cross")
    return _lf.cross(input, other, dim=dim)


def vecdot(x, y, *, dim=-1, out=None) -> Tensor:
    """torch.linalg.vecdot: sum(x * y, dim) of floating tensors of one dtype, broadcast (SumBackward1
    over MulBackward0, as torch for real tensors)."""
    _no_out(out, "vecdot")
    a, b = F.as_tensor(x, "vecdot", "x"), F.as_tensor(y, "vecdot", "y", 2)
    if not a._dtype.is_floating_point:
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as input. Got {_name(a)}")
    if a._dtype is not b._dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type {_name(a)} "
                           f"and y of type {_name(b)} instead")
    return F.sum(F.mul(a, b), dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1) -> Tensor:
    """torch.linalg.diagonal: torch.diagonal with the last two dims as defaults (a view)."""
    from fusegrad.tracer.shape_functions import diagonal as _diagonal
    return _diagonal(A, offset, dim1, dim2)


def matrix_exp(A) -> Tensor:
    """torch.linalg.matrix_exp: exp(A) of square matrices (SciPy's Pade approximant; torch uses a
    Taylor-based method, equal to rounding), LinalgMatrixExpBackward0."""
    a = _matrix(A, "linalg.matrix_exp")
    return apply_op("matrix_exp", [a], None, "LinalgMatrixExpBackward0")


def matmul(input, other, *, out=None) -> Tensor:
    """torch.linalg.matmul: an alias of fg.matmul."""
    _no_out(out, "linalg.matmul")
    return F.matmul(input, other)


def vander(x, *, N=None) -> Tensor:
    """torch.linalg.vander: the Vandermonde matrices of the last dim of x, columns x**0 ..
    x**(N - 1) (N the last dim's size by default): ones, then a cumulative product, concatenated
    (CatBackward0), as torch composes it."""
    if not isinstance(x, Tensor):
        x = F.as_tensor(x, "linalg.vander")
    if x.dim() < 1:
        raise RuntimeError("N must be greater than 1.")
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    powers = x.unsqueeze(-1).expand(*x.shape, n - 1).cumprod(-1)
    return F.cat([ones_like(powers[..., :1]), powers], -1)


def tensorinv(A, ind=2, *, out=None) -> Tensor:
    """torch.linalg.tensorinv: the inverse of A read as a matrix of its first `ind` dims by the
    others; the result's shape is A.shape[ind:] + A.shape[:ind]."""
    _no_out(out, "linalg.tensorinv")
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, columns = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != columns:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {columns} != {rows}")
    return inv(A.reshape(rows, -1)).reshape(*A.shape[ind:], *A.shape[:ind])


def tensorsolve(A, B, dims=None, *, out=None) -> Tensor:
    """torch.linalg.tensorsolve: X with tensordot(A, X, X.ndim) == B (`dims`: A's dims moved to
    its end first); X's shape is A.shape[B.ndim:]."""
    _no_out(out, "linalg.tensorsolve")
    if dims is not None:
        dims = [d % A.dim() for d in dims]
        A = A.permute(*[d for d in range(A.dim()) if d not in dims], *dims)
    result_shape = A.shape[B.dim():]
    rows = math.prod(B.shape)
    if rows != math.prod(result_shape):
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {math.prod(result_shape)} != {rows}")
    return solve(A.reshape(rows, rows), B.reshape(rows)).reshape(result_shape)


# ------------------------------------------------------------------ LU (tracer/linalg_lu.py, ir/ops/linalg_lu.py)
for _kind in _lu.RESULT_KINDS:          # (torch.return_types.<kind>, set on fusegrad.return_types)
    _named(_kind, *F.RETURN_TYPES[_kind].fields)
del _kind


def lu_factor(A, *, pivot=True, out=None):
    """torch.linalg.lu_factor: (LU, pivots) of LU with partial pivoting, LAPACK getrf's pivots
    (1-based; int64 here, int32 in torch), LinalgLuFactorExBackward0. A zero pivot (a singular
    matrix) raises torch's RuntimeError; pivot=False raises as torch on the CPU."""
    _no_out(out, "lu_factor")
    lu_, pivots, _ = _lu.lu_factor_ex(A, pivot, True, fn="torch.linalg.lu_factor")
    return _lu.LuFactorResult((lu_, pivots))


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """torch.linalg.lu_factor_ex: (LU, pivots, info), info (int64 here) 0 or the first zero pivot
    (1-based); check_errors=True raises for it as lu_factor."""
    _no_out(out, "lu_factor_ex")
    return _lu.LuFactorExResult(_lu.lu_factor_ex(A, pivot, check_errors))


def lu(A, *, pivot=True, out=None):
    """torch.linalg.lu: (P, L, U) with A = P L U, L unit lower triangular (m x k), U upper (k x n)
    (LinalgLuBackward0 for L and U; P has no gradient). A singular matrix does not raise."""
    _no_out(out, "lu")
    return _lu.linalg_lu(A, pivot)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None) -> Tensor:
    """torch.linalg.lu_solve: X with AX = B from lu_factor's (LU, pivots); adjoint solves A^T X = B,
    left=False X A = B (LinalgLuSolveBackward0). pivots: the int64 tensor lu_factor returns."""
    _no_out(out, "lu_solve")
    return _lu.linalg_lu_solve(LU, pivots, B, left, adjoint)


def _ord_text(ord) -> str:
    """ord as torch's C++ prints it in cond's texts (a double: 3, 2.5, inf)."""
    value = float(ord)
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:g}"


def cond(A, p=None, *, out=None) -> Tensor:
    """torch.linalg.cond: the condition number for p = None / +-2 (the ratio of the extreme singular
    values, SqueezeBackward1 over DivBackward0), +-1, +-inf, 'fro' (norm(A) norm(A^-1), a singular
    matrix's inf: NanToNumBackward0 over MulBackward0) or 'nuc' (sum(S) sum(1 / S)); 0 for
    empty matrices."""
    _no_out(out, "cond")
    a = F.as_tensor(A, "linalg_cond", "A")
    if isinstance(p, str):
        if a.dim() < 2:
            raise RuntimeError(f"linalg.cond(ord={p}): The input tensor A must have at least 2 dimensions.")
        if a.shape[-1] != a.shape[-2]:
            raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but they are "
                               f"{a.shape[-2]} by {a.shape[-1]} matrices")
        if p not in ("fro", "nuc"):
            raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    else:
        if a.dim() < 2:
            raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
        p = 2 if p is None else p
        if abs(float(p)) not in (1.0, 2.0, math.inf):
            raise RuntimeError(f"linalg.cond got an invalid norm type: {_ord_text(p)}")
    if a.numel() == 0:
        from fusegrad.tracer.creation import zeros
        return zeros(tuple(a.shape[:-2]), dtype=a._dtype if a._dtype.is_floating_point else None)
    if p == "nuc":
        s = svdvals(a)
        return F.mul(F.sum(s, -1), F.sum(F.reciprocal(s), -1))
    if not isinstance(p, str) and abs(float(p)) == 2:
        s = svdvals(a)
        first, last = s[..., :1], s[..., -1:]
        return F.squeeze(F.div(last, first) if p < 0 else F.div(first, last), -1)
    if not isinstance(p, str) and a.shape[-1] != a.shape[-2]:
        text = f"{float(p):f}" if isinstance(p, float) and not math.isinf(p) else _ord_text(p)
        raise RuntimeError(f"linalg.cond(ord={text}): A must be batches of square matrices, but they are "
                           f"{a.shape[-2]} by {a.shape[-1]} matrices")
    inverse, info = inv_ex(a)
    # (in place, as torch: the write bumps the version of the inverse LinalgInvExBackward0 saved, so a
    # backward through cond raises torch's version-counter error, as torch's does)
    inverse.masked_fill_(F.unsqueeze(F.unsqueeze(F.gt(info, 0), -1), -1), math.inf)
    result = F.mul(matrix_norm(a, p), matrix_norm(inverse, p))
    return result.nan_to_num_(math.inf, math.inf, -math.inf)



# ------------------------------------------------------------------ Householder (tracer/linalg_lu.py, ir/ops/householder.py)
def householder_product(A, tau, *, out=None) -> Tensor:
    """torch.linalg.householder_product: the first n columns of the product of the Householder
    reflectors stored in A (..., m, n) below its diagonal with scalars tau (..., k), as geqrf
    returns them (LinalgHouseholderProductBackward0)."""
    _no_out(out, "householder_product")
    return _lu.householder_product(A, tau)


__all__.append("householder_product")
