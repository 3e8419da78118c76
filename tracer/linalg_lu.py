"""LU factorizations and torch's legacy linear-algebra functions over ir/ops/linalg_lu.py and
ir/ops/linalg_decomp.py: the cores of linalg.lu_factor(_ex), linalg.lu, linalg.lu_solve (which
fusegrad.linalg wraps), and torch.svd, qr, cholesky, cholesky_solve, cholesky_inverse, lu,
lu_solve, lu_unpack, triangular_solve, nuclear_norm, frobenius_norm, the removed lstsq,
matrix_rank, eig and symeig (torch's RuntimeError), geqrf, orgqr (linalg.householder_product's
core) and ormqr over ir/ops/householder.py, and their Tensor methods (METHODS).
Pivots and infos are int64 (fusegrad has no int32; torch's are int32): an int64 pivots
tensor is what lu_solve and lu_unpack take here, where torch asks for int32."""
from __future__ import annotations

import numpy as np

from fusegrad.ir.ops import normalize_dim
from fusegrad.ir.types import TORCH_SCALAR_NAMES, int64

from . import functional as F
from .dispatch import apply_op
from .tensor import Tensor


def _name(t: Tensor) -> str:
    return TORCH_SCALAR_NAMES[t._dtype.name]


def result_type(kind: str, *fields: str) -> type:
    """torch.return_types.<kind> (functional.named_result; fusegrad.linalg sets each on
    fusegrad.return_types, where pickle finds it)."""
    return F.named_result(kind, *fields)


LuFactorResult = result_type("linalg_lu_factor", "LU", "pivots")
LuFactorExResult = result_type("linalg_lu_factor_ex", "LU", "pivots", "info")
LuResult = result_type("linalg_lu", "P", "L", "U")
LuUnpackResult = result_type("lu_unpack", "P", "L", "U")
LuWithInfoResult = result_type("_lu_with_info", "LU", "pivots", "info")
SvdResult = result_type("svd", "U", "S", "V")
QrResult = result_type("qr", "Q", "R")
TriangularSolveResult = result_type("triangular_solve", "solution", "cloned_coefficient")
RESULT_KINDS = ("linalg_lu_factor", "linalg_lu_factor_ex", "linalg_lu", "lu_unpack", "_lu_with_info", "svd", "qr",
                "triangular_solve")


def _not_implemented(kernel: str, t: Tensor) -> NotImplementedError:
    return NotImplementedError(f"\"{kernel}\" not implemented for '{_name(t)}'")


def _square(a: Tensor, prefix: str) -> None:
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{prefix}A must be batches of square matrices, but they are {a.shape[-2]} by "
                           f"{a.shape[-1]} matrices")


def _at_least_2d(a: Tensor, fn: str, name: str = "A") -> None:
    if a.dim() < 2:
        raise RuntimeError(f"{fn}: The input tensor {name} must have at least 2 dimensions.")


# ------------------------------------------------------------------ LU
def lu_factor_ex(A, pivot=True, check_errors=False, *, fn="torch.linalg.lu_factor_ex", dims_fn="torch.lu_factor"):
    """(LU, pivots, info) of LAPACK's getrf (LinalgLuFactorExBackward0; pivots and info int64).
    `check_errors` raises torch's RuntimeError, named `fn`, for a zero pivot. pivot=False raises
    torch's CPU error (LU without pivoting is CUDA-only in torch)."""
    a = F.as_tensor(A, "linalg_lu_factor_ex", "A")
    if a.dim() < 2:
        raise RuntimeError(f"{dims_fn}: Expected tensor with 2 or more dimensions. Got size: {list(a.shape)} "
                           "instead")
    if not a._dtype.is_floating_point:
        raise _not_implemented("lu_cpu", a)
    if not pivot and a.numel():
        # (an empty input is torch's result whatever `pivot` says: the CPU's refusal comes later)
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    return apply_op("lu_factor", [a], {"raises": fn if check_errors else False}, "LinalgLuFactorExBackward0")


def linalg_lu(A, pivot=True):
    """torch.linalg.lu's core: (P, L, U) with A = P L U (LinalgLuBackward0 for L and U)."""
    a = F.as_tensor(A, "linalg_lu", "A")
    if a.dim() < 2:
        raise RuntimeError(f"linalg.lu: Expected tensor with 2 or more dimensions. Got size: {list(a.shape)} instead")
    if not a._dtype.is_floating_point:
        raise _not_implemented("lu_cpu", a)
    if not pivot and a.numel():
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    p, low, up = apply_op("linalg_lu", [a], None, "LinalgLuBackward0")
    if not pivot:
        # an empty input without pivoting: torch's L and U, and P an empty tensor of shape (0,)
        p = Tensor._wrap(np.empty((0,), a._dtype.np), a._dtype)
    return LuResult((p, low, up))


def _pivots_operand(p, fn: str) -> Tensor:
    pivots = F.as_tensor(p, fn, "pivots", 2)
    if pivots._dtype is not int64:
        raise RuntimeError(f"{fn}: pivots should be a Tensor of scalar type torch.int32")
    return pivots


def linalg_lu_solve(LU, pivots, B, left=True, adjoint=False) -> Tensor:
    """torch.linalg.lu_solve's core: X with A X = B (A^T X = B when adjoint; X A = B, X A^T = B
    when not left) from A's factors, batch dims broadcast (LinalgLuSolveBackward0)."""
    lu = F.as_tensor(LU, "linalg_lu_solve", "LU")
    piv = F.as_tensor(pivots, "linalg_lu_solve", "pivots", 2)
    b = F.as_tensor(B, "linalg_lu_solve", "B", 3)
    # torch's meta function's order: the dtypes (LU floating, B's the same, the pivots'), then
    # the shapes (LU at least 2-d and square, B at least 2-d)
    if not lu._dtype.is_floating_point:
        raise RuntimeError(f"torch.linalg.lu_solve: Expected a floating point or complex tensor as input. Got "
                           f"{_name(lu)}")
    if lu._dtype is not b._dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type "
                           f"{_name(lu)} and B of type {_name(b)} instead")
    piv = _pivots_operand(piv, "linalg.lu_solve")
    _at_least_2d(lu, "torch.linalg.lu_solve")
    _square(lu, "torch.linalg.lu_solve: ")
    _at_least_2d(b, "linalg.lu_solve", "B")
    if piv.dim() == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    if piv.shape[-1] != lu.shape[-1]:
        raise RuntimeError("linalg.lu_solve: Number of pivots per batch should be same as the dimension of the matrix")
    if tuple(piv.shape) != tuple(lu.shape[:-1]):
        raise RuntimeError(f"linalg.lu_solve: Expected LU.shape[:-1] and pivots.shape to be the same, but got "
                           f"pivots with shape {list(piv.shape)} instead")
    n = lu.shape[-1]
    if (b.shape[-2] if left else b.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation {eq} ({n}x{n} and "
                           f"{b.shape[-2]}x{b.shape[-1]})")
    return apply_op("lu_solve", [lu, piv, b], {"left": bool(left), "adjoint": bool(adjoint)},
                    "LinalgLuSolveBackward0")


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """torch.lu_unpack: (P, L, U) of a factorization (LuUnpackBackward0 for L and U; P float, of
    LU's dtype); an empty tensor for what is not unpacked. Pivots outside 1..m raise torch's error."""
    lu = F.as_tensor(LU_data, "lu_unpack", "LU_data")
    piv = F.as_tensor(LU_pivots, "lu_unpack", "LU_pivots", 2)
    if lu.dim() < 2:
        raise RuntimeError(f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(lu.shape)} instead")
    if piv._dtype is not int64:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype.\n"
                           "Note: this function is intended to be used with the output produced by "
                           "torch.linalg.lu_factor")
    return LuUnpackResult(apply_op("lu_unpack", [lu, piv], {"unpack_data": bool(unpack_data),
                                                            "unpack_pivots": bool(unpack_pivots)},
                                   "LuUnpackBackward0"))


# ------------------------------------------------------------------ legacy functions
def svd(input, some=True, compute_uv=True):
    """torch.svd: (U, S, V), V = Vh^T (TransposeBackward0 over LinalgSvdBackward0); some=False
    gives full U and V. compute_uv=False: S alone (linalg.svdvals) with U (m x m) and V (n x n)
    zeros, as torch."""
    a = F.as_tensor(input, "svd")
    if a.dim() < 2:
        raise RuntimeError(f"linalg.svd: input should have at least 2 dimensions, but has {a.dim()} dimensions "
                           "instead")
    if not a._dtype.is_floating_point:
        raise RuntimeError(f"linalg.svd: Expected a floating point or complex tensor as input. Got {_name(a)}")
    if not compute_uv:
        from .creation import zeros
        s = apply_op("svd", [a], None, "LinalgSvdBackward0")[1]
        *batch, m, n = a.shape
        return SvdResult((zeros(tuple(batch) + (m, m), dtype=a._dtype), s,
                          zeros(tuple(batch) + (n, n), dtype=a._dtype)))
    u, s, vh = apply_op("linalg_svd", [a], {"full_matrices": not some}, "LinalgSvdBackward0")
    return SvdResult((u, s, F.transpose(vh, -2, -1)))


def qr(input, some=True):
    """torch.qr (deprecated, warns once): linalg.qr in mode 'reduced' (some) or 'complete'."""
    F.warn_once("torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future PyTorch "
                "release.\nThe boolean parameter 'some' has been replaced with a string parameter 'mode'.\n"
                "Q, R = torch.qr(A, some)\nshould be replaced with\nQ, R = torch.linalg.qr(A, 'reduced' if some "
                "else 'complete') (Triggered internally at /__w/pytorch/pytorch/aten/src/ATen/native/"
                "BatchLinearAlgebra.cpp:2505.)")
    a = F.as_tensor(input, "qr")
    _at_least_2d(a, "linalg.qr")
    if not a._dtype.is_floating_point:
        raise RuntimeError(f"linalg.qr: Expected a floating point or complex tensor as input. Got {_name(a)}")
    return QrResult(apply_op("qr", [a], {"mode": "reduced" if some else "complete"}, "LinalgQrBackward0"))


def cholesky(input, upper=False) -> Tensor:
    """torch.cholesky (deprecated, warns once): the Cholesky factor (CholeskyBackward0); a matrix
    that is not positive-definite raises torch's LinAlgError, named 'cholesky'."""
    F.warn_once("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future "
                "PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\nL = torch.linalg.cholesky(A)\n"
                "and\nU = torch.cholesky(A, upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH\n"
                "This transform will produce equivalent results for all valid (symmetric positive definite) inputs. "
                "(Triggered internally at /__w/pytorch/pytorch/aten/src/ATen/native/BatchLinearAlgebra.cpp:1765.)")
    a = F.as_tensor(input, "cholesky")
    _at_least_2d(a, "cholesky")
    if not a._dtype.is_floating_point:
        raise _not_implemented("cholesky_cpu", a)
    _square(a, "cholesky: ")
    return apply_op("cholesky", [a], {"upper": bool(upper), "raises": "cholesky"}, "CholeskyBackward0")[0]


def _same_dtype(b: Tensor, a: Tensor) -> None:
    if b._dtype is not a._dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {_name(b)} and A of type "
                           f"{_name(a)} instead.")


def _check_rhs(a: Tensor, b: Tensor, fn: str) -> None:
    """torch's check that the right-hand sides `b` of a solve with square `a` have a's rows."""
    if a.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for {fn}: each A matrix is {a.shape[-2]} by "
                           f"{a.shape[-1]} but each b matrix is {b.shape[-2]} by {b.shape[-1]}")


def cholesky_solve(input, input2, upper=False) -> Tensor:
    """torch.cholesky_solve: X with (L L^T) X = B (U^T U when upper), B = input, L = input2,
    batch dims broadcast (CholeskySolveBackward0)."""
    b = F.as_tensor(input, "cholesky_solve")
    low = F.as_tensor(input2, "cholesky_solve", "input2", 2)
    for t, name in ((b, "b"), (low, "u")):
        if t.dim() < 2:
            raise RuntimeError(f"{name} should have at least 2 dimensions, but has {t.dim()} dimensions instead")
    _same_dtype(b, low)
    if not b._dtype.is_floating_point:
        raise _not_implemented("cholesky_solve_cpu", b)
    _square(low, "")
    _check_rhs(low, b, "cholesky_solve")
    return apply_op("cholesky_solve", [b, low], {"upper": bool(upper)}, "CholeskySolveBackward0")


def cholesky_inverse(input, upper=False) -> Tensor:
    """torch.cholesky_inverse: (L L^T)^-1 (U^T U when upper) of a Cholesky factor
    (CholeskyInverseBackward0); a zero on the diagonal raises torch's LinAlgError."""
    low = F.as_tensor(input, "cholesky_inverse")
    _at_least_2d(low, "cholesky_inverse")
    if not low._dtype.is_floating_point:
        raise _not_implemented("cholesky_inverse_out_cpu", low)
    _square(low, "cholesky_inverse: ")
    return apply_op("cholesky_inverse", [low], {"upper": bool(upper)}, "CholeskyInverseBackward0")


def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False):
    """torch.triangular_solve (deprecated, warns once): (solution, cloned_coefficient), op(A) X = b
    for triangular A (op the transpose when `transpose`), batch dims broadcast; the second is A
    broadcast and copied (TriangularSolveBackward0 for both)."""
    F.warn_once("torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangularand will be removed "
                "in a future PyTorch release.\ntorch.linalg.solve_triangular has its arguments reversed and does not "
                "return a copy of one of the inputs.\nX = torch.triangular_solve(B, A).solution\nshould be replaced "
                "with\nX = torch.linalg.solve_triangular(A, B). (Triggered internally at /__w/pytorch/pytorch/aten/"
                "src/ATen/native/BatchLinearAlgebra.cpp:2273.)")
    b = F.as_tensor(input, "triangular_solve")
    a = F.as_tensor(A, "triangular_solve", "A", 2)
    for t, name in ((b, "b"), (a, "A")):
        if t.dim() < 2:
            raise RuntimeError(f"torch.triangular_solve: Expected {name} to have at least 2 dimensions, but it has "
                               f"{t.dim()} dimensions instead")
    _same_dtype(b, a)
    if not b._dtype.is_floating_point:
        raise _not_implemented("triangular_solve_cpu", b)
    _square(a, "")
    _check_rhs(a, b, "triangular_solve")
    return TriangularSolveResult(apply_op("triangular_solve", [b, a], {
        "upper": bool(upper), "transpose": bool(transpose), "unitriangular": bool(unitriangular)},
        "TriangularSolveBackward0"))


def lu(A, pivot=True, get_infos=False):
    """torch.lu / Tensor.lu (deprecated, warns once): (LU, pivots), or a torch.return_types._lu_with_info
    (LU, pivots, info) with get_infos; never raises for a singular matrix, as torch's."""
    F.warn_once("torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will be "
                "removed in a future PyTorch release.\nLU, pivots = torch.lu(A, compute_pivots)\nshould be replaced "
                "with\nLU, pivots = torch.linalg.lu_factor(A, compute_pivots)\nand\nLU, pivots, info = torch.lu(A, "
                "compute_pivots, get_infos=True)\nshould be replaced with\nLU, pivots, info = "
                "torch.linalg.lu_factor_ex(A, compute_pivots) (Triggered internally at /__w/pytorch/pytorch/aten/src/"
                "ATen/native/BatchLinearAlgebra.cpp:2073.)")
    result = lu_factor_ex(A, pivot, False)
    return LuWithInfoResult(result) if get_infos else tuple(result[:2])


def lu_solve(b, LU_data, LU_pivots) -> Tensor:
    """torch.lu_solve (deprecated, warns once): linalg.lu_solve(LU_data, LU_pivots, b)."""
    F.warn_once("torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be removed in a future "
                "PyTorch release.\nNote that torch.linalg.lu_solve has its arguments reversed.\nX = torch.lu_solve(B, "
                "LU, pivots)\nshould be replaced with\nX = torch.linalg.lu_solve(LU, pivots, B) (Triggered internally "
                "at /__w/pytorch/pytorch/aten/src/ATen/native/BatchLinearAlgebra.cpp:2230.)")
    return linalg_lu_solve(LU_data, LU_pivots, b)


def _removed(text: str):
    def removed(*args, **kwargs):
        raise RuntimeError(text)
    return removed


_LSTSQ_TEXT = (
    "This function was deprecated since version 1.9 and is now removed. `torch.lstsq` is deprecated in favor of "
    "`torch.linalg.lstsq`.\n`torch.linalg.lstsq` has reversed arguments and does not return the QR decomposition in "
    "the returned tuple (although it returns other information about the problem).\n\nTo get the QR decomposition "
    "consider using `torch.linalg.qr`.\n\nThe returned solution in `torch.lstsq` stored the residuals of the solution "
    "in the last m - n columns of the returned value whenever m > n. In torch.linalg.lstsq, the residuals are in the "
    "field 'residuals' of the returned named tuple.\n\nThe unpacking of the solution, as in\nX, _ = torch.lstsq(B, "
    "A).solution[:A.size(1)]\nshould be replaced with:\nX = torch.linalg.lstsq(A, B).solution")
_MATRIX_RANK_TEXT = (
    "This function was deprecated since version 1.9 and is now removed.\nPlease use the `torch.linalg.matrix_rank` "
    "function instead. The parameter 'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'.")
_EIG_TEXT = (
    "This function was deprecated since version 1.9 and is now removed. `torch.linalg.eig` returns complex tensors of "
    "dtype `cfloat` or `cdouble` rather than real tensors mimicking complex tensors.\n\nL, _ = torch.eig(A) should be "
    "replaced with:\nL_complex = torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, eigenvectors=True) should be "
    "replaced with:\nL_complex, V_complex = torch.linalg.eig(A)")
_SYMEIG_TEXT = (
    "This function was deprecated since version 1.9 and is now removed. The default behavior has changed from using "
    "the upper triangular portion of the matrix by default to using the lower triangular portion.\n\nL, _ = "
    "torch.symeig(A, upper=upper) should be replaced with:\nL = torch.linalg.eigvalsh(A, UPLO='U' if upper else "
    "'L')\n\nand\n\nL, V = torch.symeig(A, eigenvectors=True) should be replaced with:\nL, V = torch.linalg.eigh(A, "
    "UPLO='U' if upper else 'L')")
lstsq = _removed(_LSTSQ_TEXT)
lstsq.__doc__ = "torch.lstsq: removed in torch (its RuntimeError, naming torch.linalg.lstsq)."
matrix_rank = _removed(_MATRIX_RANK_TEXT)
matrix_rank.__doc__ = "torch.matrix_rank: removed in torch (its RuntimeError, naming torch.linalg.matrix_rank)."
eig = _removed(_EIG_TEXT)
eig.__doc__ = "torch.eig: removed in torch (its RuntimeError, naming torch.linalg.eig)."
symeig = _removed(_SYMEIG_TEXT)
symeig.__doc__ = "torch.symeig: removed in torch (its RuntimeError, naming torch.linalg.eigh)."
for _f, _n in ((lstsq, "lstsq"), (matrix_rank, "matrix_rank"), (eig, "eig"), (symeig, "symeig")):
    _f.__name__ = _f.__qualname__ = _n
del _f, _n


def nuclear_norm(input, dim=None, keepdim=False) -> Tensor:
    """torch.nuclear_norm (warns once, as torch's at::nuclear_norm): linalg.matrix_norm(A, 'nuc')
    over `dim` (the last two dims by default); `nuclear_norm(A, keepdim)` with a bool second."""
    F.warn_once("at::nuclear_norm is deprecated and it is just left for JIT compatibility. It will be removed in a "
                "future PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead (Triggered "
                "internally at /__w/pytorch/pytorch/aten/src/ATen/native/LinearAlgebra.cpp:3229.)")
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    a = F.as_tensor(input, "nuclear_norm")
    _at_least_2d(a, "linalg.matrix_norm")
    if not a._dtype.is_floating_point:
        raise RuntimeError(f"linalg.matrix_norm: Expected a floating point or complex tensor as input. Got {_name(a)}")
    dims = (a.dim() - 2, a.dim() - 1) if dim is None else tuple(d % a.dim() for d in dim)
    return F._nuclear_norm(a, dims, bool(keepdim))


def frobenius_norm(input, dim, keepdim=False) -> Tensor:
    """torch.frobenius_norm (warns once, as torch's at::frobenius_norm): the 2-norm of the elements
    over `dim` (at most two dims), NormBackward1."""
    a = F.as_tensor(input, "frobenius_norm")
    dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions instead.")
    if not a._dtype.is_floating_point:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got {_name(a)} instead.")
    F.warn_once("at::frobenius_norm is deprecated and it is just left for JIT compatibility. It will be removed in a "
                "future PyTorch release. Please use `linalg.vector_norm(A, 2., dim, keepdim)` instead (Triggered "
                "internally at /__w/pytorch/pytorch/aten/src/ATen/native/LinearAlgebra.cpp:3175.)")
    axes = tuple(sorted({normalize_dim(d, a.dim()) for d in dims}))
    return apply_op("norm", [a], {"p": 2.0, "axes": axes, "keepdim": bool(keepdim)}, "NormBackward1")


METHODS = {
    "svd": svd, "qr": qr, "cholesky": cholesky, "cholesky_solve": cholesky_solve,
    "cholesky_inverse": cholesky_inverse, "triangular_solve": triangular_solve, "lu": lu,
    "lu_solve": lu_solve, "lstsq": lstsq, "eig": eig, "symeig": symeig,
}


def bind_methods() -> None:
    """Set METHODS on Tensor where it has no such attribute (the legacy methods torch keeps)."""
    for name, fn in METHODS.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, fn)


# ------------------------------------------------------------------ Householder QR (ir/ops/householder.py)
GeqrfResult = result_type("geqrf", "a", "tau")
RESULT_KINDS = RESULT_KINDS + ("geqrf",)


def geqrf(input):
    """torch.geqrf / Tensor.geqrf: LAPACK's compact QR, a torch.return_types.geqrf (a, tau): R on
    and above a's diagonal, the Householder vectors below it, tau (..., min(m, n)) their scalars.
    Both outputs carry a GeqrfBackward0 node, whose backward raises torch's NotImplementedError."""
    a = F.as_tensor(input, "geqrf")
    if a.dim() < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if not a._dtype.is_floating_point:
        raise _not_implemented("geqrf_cpu", a)
    return GeqrfResult(apply_op("geqrf", [a], None, "GeqrfBackward0"))


def _batch_text(t: Tensor) -> str:
    return "[" + ", ".join(str(s) for s in t.shape[:-1]) + "]"


def householder_product(A, tau) -> Tensor:
    """torch.linalg.householder_product (torch.orgqr, Tensor.orgqr): the first n columns of the
    product H_0 ... H_{k-1} of the reflectors I - tau_i v_i v_i^T stored in A (..., m, n), m >= n >= k
    (LinalgHouseholderProductBackward0)."""
    fn = "torch.linalg.householder_product"
    a = F.as_tensor(A, "linalg_householder_product")
    t = F.as_tensor(tau, "linalg_householder_product", "tau", 2)
    if a.dim() < 2:
        raise RuntimeError(f"{fn}: input must have at least 2 dimensions.")
    if a.shape[-2] < a.shape[-1]:
        raise RuntimeError(f"{fn}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if t.dim() and a.shape[-1] < t.shape[-1]:
        raise RuntimeError(f"{fn}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if a.dim() - t.dim() != 1:
        raise RuntimeError(f"{fn}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
                           f"{t.dim()} and input.ndim is equal to {a.dim()}")
    if a.dim() > 2 and tuple(t.shape[:-1]) != tuple(a.shape[:-2]):
        raise RuntimeError(f"{fn}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{_batch_text(t)}")
    if t._dtype is not a._dtype:
        raise RuntimeError(f"{fn}: tau dtype {_name(t)} does not match input dtype {_name(a)}")
    if not a._dtype.is_floating_point:
        raise _not_implemented("orgqr_cpu", a)
    return apply_op("householder_product", [a, t], None, "LinalgHouseholderProductBackward0")


def orgqr(input, input2) -> Tensor:
    """torch.orgqr / Tensor.orgqr: linalg.householder_product(input, input2)."""
    return householder_product(input, input2)


def ormqr(input, input2, input3, left=True, transpose=False) -> Tensor:
    """torch.ormqr / Tensor.ormqr: op(Q) C (left) or C op(Q), Q = H_0 ... H_{k-1} the full m x m
    product of the reflectors in input (m x k) with scalars input2, C = input3, op the transpose
    where `transpose` (OrmqrBackward0). torch's checks in its order; batch dims must be equal."""
    fn = "torch.ormqr"
    a = F.as_tensor(input, "ormqr")
    t = F.as_tensor(input2, "ormqr", "input2", 2)
    c = F.as_tensor(input3, "ormqr", "input3", 3)
    if a.dim() < 2:
        raise RuntimeError(f"{fn}: input must have at least 2 dimensions.")
    if c.dim() < 2:
        raise RuntimeError(f"{fn}: other must have at least 2 dimensions.")
    side = -2 if left else -1
    if c.shape[side] != a.shape[-2]:
        raise RuntimeError(f"{fn}: other.shape[{side}] must be equal to input.shape[-2]")
    if not t.dim() or t.shape[-1] != min(c.shape[side], a.shape[-1]):
        raise RuntimeError(f"{fn}: tau.shape[-1] must be equal to min(other.shape[{side}], input.shape[-1])")
    if a.dim() - t.dim() != 1:
        raise RuntimeError(f"{fn}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
                           f"{t.dim()} and input.ndim is equal to {a.dim()}")
    if a.dim() != c.dim():
        raise RuntimeError(f"{fn}: Expected other to have the same number of dimensions as input, but got other.ndim "
                           f"equal to {c.dim()} and input.ndim is equal to {a.dim()}")
    if a.dim() > 2:
        if tuple(t.shape[:-1]) != tuple(a.shape[:-2]):
            raise RuntimeError(f"{fn}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                               f"{_batch_text(t)}")
        if tuple(c.shape[:-2]) != tuple(a.shape[:-2]):
            raise RuntimeError(f"{fn}: Expected batch dimensions of other to be equal to input.shape[:-2], but got "
                               "[" + ", ".join(str(s) for s in c.shape[:-2]) + "]")
    for other, what in ((t, "tau"), (c, "other")):
        if other._dtype is not a._dtype:
            raise RuntimeError(f"{fn}: Expected input and {what} to have the same dtype, but input has dtype"
                               f"{_name(a)} and {what} has dtype {_name(other)}")
    if not a._dtype.is_floating_point:
        raise _not_implemented("ormqr_cpu", a)
    return apply_op("ormqr", [a, t, c], {"left": bool(left), "transpose": bool(transpose)}, "OrmqrBackward0")


METHODS.update({"geqrf": geqrf, "orgqr": orgqr, "ormqr": ormqr})
