"""torch's fixed-rank products: mm, bmm, mv, dot and outer. Each checks the ranks, sizes
and dtypes its torch kernel checks (with that kernel's text) and records the one
`matmul` op under that kernel's grad_fn name; `outer` is torch's broadcast multiply."""
from __future__ import annotations

from fusegrad.ir.ops.linalg import _check_matmul_dtype
from fusegrad.ir.types import TORCH_SCALAR_NAMES

from . import functional as F
from .dispatch import apply_op
from .tensor import Tensor


def _operands(fn: str, input, other, other_name: str):
    return F.as_tensor(input, fn), F.as_tensor(other, fn, other_name, 2)


def mm(input, mat2) -> Tensor:
    """The product of two matrices (2-d only, one dtype; MmBackward0)."""
    a, b = _operands("mm", input, mat2, "mat2")
    if a.dim() != 2:
        raise RuntimeError("self must be a matrix")
    if b.dim() != 2:
        raise RuntimeError("mat2 must be a matrix")
    F._check_mm(tuple(a.shape), tuple(b.shape), a._dtype, b._dtype)
    return apply_op("matmul", [a, b], F.mm_attrs(a, b), "MmBackward0")


def bmm(input, mat2) -> Tensor:
    """Batched product of [b, n, k] and [b, k, m] (3-d only, one batch size, one dtype; BmmBackward0)."""
    a, b = _operands("bmm", input, mat2, "mat2")
    if a.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b.dim() != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    (batch, rows, k), (batch2, k2, cols) = tuple(a.shape), tuple(b.shape)
    if (batch2, k2) != (batch, k):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{batch}, {k}] "
                           f"but got: [{batch2}, {k2}].")
    if a._dtype is not b._dtype:
        if not (a.numel() and b.numel()):
            # torch returns an empty operand's product before it checks the dtypes, in mat2's dtype
            F.check_empty_product_dtype(a, b)
            a = F.cast(a, b._dtype)
        elif rows * k * cols >= F.BMM_BLAS_SIZE:
            raise F.bmm_dtype_error(a._dtype, b._dtype, rows, k, cols)
        else:
            _check_matmul_dtype(a._dtype, "bmm", k, batch * rows * cols)    # (a bool self is refused first)
            raise F.bmm_dtype_error(a._dtype, b._dtype, rows, k, cols)
    return apply_op("matmul", [a, b], None, "BmmBackward0")


def mv(input, vec) -> Tensor:
    """A matrix times a vector (2-d and 1-d, one dtype; MvBackward0)."""
    a, v = _operands("mv", input, vec, "vec")
    if a.dim() == 0:        # (torch's mv reads self's size(0) before it checks the dims)
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    if a.dim() != 2 or v.dim() != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {a.dim()}, {v.dim()}")
    F._check_mv(tuple(a.shape), tuple(v.shape), a._dtype, v._dtype)
    return apply_op("matmul", [a, v], None, "MvBackward0")


def dot(input, tensor) -> Tensor:
    """The inner product of two vectors of one size and dtype (DotBackward0)."""
    a, b = _operands("dot", input, tensor, "tensor")
    if a.dim() != 1 or b.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.dim()}D and {b.dim()}D tensors")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] to have "
                           f"the same number of elements, but got {a.shape[0]} and {b.shape[0]} elements respectively")
    if a._dtype is not b._dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{TORCH_SCALAR_NAMES[a._dtype.name]} and {TORCH_SCALAR_NAMES[b._dtype.name]}")
    return apply_op("matmul", [a, b], None, "DotBackward0")


def outer(input, vec2, *, _name: str = "outer") -> Tensor:
    """input[i] * vec2[j] (two vectors; dtypes promote as for `*`): torch's
    `input.reshape(-1, 1) * vec2` (MulBackward0 over ViewBackward0)."""
    a, b = _operands(_name, input, vec2, "vec2")
    if a.dim() != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {a.dim()}-D")
    if b.dim() != 1:
        raise RuntimeError(f"outer: Expected 1-D argument vec2, but got {b.dim()}-D")
    return F.mul(F.reshape(a, (a.shape[0], 1)), b)


def ger(input, vec2) -> Tensor:
    """torch.ger, the deprecated name of outer: the outer product of two vectors."""
    return outer(input, vec2, _name="ger")
