"""torch's further products and small linear algebra (tensordot, inner, vdot, chain_matmul; addmm,
addmv, addr, baddbmm, addbmm and their in-place forms; cross, dist, cdist; det, inverse, logdet,
slogdet, matrix_power), the in-place comparisons and logical ops (eq_, lt_, logical_and_, ...),
and gcd, lcm, ldexp, sinc, is_nonzero, is_same_size. New ops are in ir/ops/linalg_extra.py;
the rest are composites of existing ops recorded under torch's node names."""
from __future__ import annotations

import math
import numbers

import numpy as np

from fusegrad.ir import bool_
from fusegrad.ir.ops import broadcast_shapes, normalize_dim
from fusegrad.ir.ops.movement import _expand_infer
from fusegrad.ir.types import TORCH_SCALAR_NAMES, TensorType

from . import functional as F
from . import inplace
from .dispatch import apply_op
from .extra_functions import _apply, _float_dtype, _operand, _write
from .grad_mode import no_grad
from .node import hide_node
from .parser_errors import type_name
from .products import dot, mm
from .tensor import Tensor


def _name(t: Tensor) -> str:
    return TORCH_SCALAR_NAMES[t._dtype.name]


# ------------------------------------------------------------------ tensordot, inner, vdot, chain_matmul
def tensordot(a, b, dims=2, out=None) -> Tensor:
    """torch.tensordot: sums the products of a's dims `dims[0]` with b's `dims[1]` (an int n: a's
    last n with b's first n). torch's steps: a size-1 contracted dim is summed away first, the
    rest permuted and reshaped into one mm (MmBackward0), reshaped to a's free dims then b's
    (a one-element result: a dot of the flattened operands, or where one is not contiguous once
    permuted, the sum of the squeezed operands' products, as torch's).
    `out` is not supported (NotImplementedError when given)."""
    if out is not None:
        raise NotImplementedError("fusegrad: tensordot(out=) is not supported")
    a, b = F.as_tensor(a, "tensordot", "a"), F.as_tensor(b, "tensordot", "b", 2)
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, bool) or not isinstance(dims, (tuple, list, int, np.integer)):
        raise RuntimeError("tensordot expects dims to be int or tuple[list[int], list[int]] or list[list[int]] "
                           f"containing two lists, but got dims={dims}")
    if isinstance(dims, (tuple, list)):
        dims_a, dims_b = dims
        for name, d in (("dims_self", dims_a), ("dims_other", dims_b)):
            if not isinstance(d, (tuple, list)):
                position = 3 if name == "dims_self" else 4
                raise TypeError(f"tensordot(): argument '{name}' (position {position}) must be tuple of ints, "
                                f"not {type_name(d)}")
    else:
        dims = int(dims)
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.dim(), b.dim()):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        dims_a, dims_b = list(range(-dims, 0)), list(range(dims))
    dims_a, dims_b = [int(d) for d in dims_a], [int(d) for d in dims_b]
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    if a._dtype is not b._dtype:
        raise RuntimeError("both inputs should have same dtype")
    t1, t2, contracted = a, b, 1
    for da, db in zip(dims_a, dims_b):
        s1, s2 = a.shape[normalize_dim(da, a.dim())], b.shape[normalize_dim(db, b.dim())]
        if s2 == 1:
            t1 = F.sum(t1, da, keepdim=True)
        elif s1 == 1:
            t2 = F.sum(t2, db, keepdim=True)
        else:
            if s1 != s2:
                raise RuntimeError(f"contracted dimensions need to match, but first has size {s1} in dim {da} and "
                                   f"second has size {s2} in dim {db}")
            contracted *= s1
    set_a, set_b = _dim_set(dims_a, a.dim()), _dim_set(dims_b, b.dim())
    free_a = [d for d in range(a.dim()) if d not in set_a]
    free_b = [d for d in range(b.dim()) if d not in set_b]
    sizes = [t1.shape[d] for d in free_a] + [t2.shape[d] for d in free_b]
    p1 = F.permute(t1, free_a + [normalize_dim(d, a.dim()) for d in dims_a])
    p2 = F.permute(t2, [normalize_dim(d, b.dim()) for d in dims_b] + free_b)
    rows, cols = math.prod(sizes[:len(free_a)]), math.prod(sizes[len(free_a):])
    if rows == 1 and cols == 1:
        # torch's product of one element: a dot of the flattened operands (DotBackward0) where
        # both are contiguous, else the sum of the squeezed operands' products
        if p1.is_contiguous() and p2.is_contiguous():
            return F.reshape(dot(F.flatten(p1), F.flatten(p2)), tuple(sizes))
        return F.reshape(F.sum(F.mul(F.squeeze(p1), F.squeeze(p2))), tuple(sizes))
    return F.reshape(mm(F.reshape(p1, (rows, contracted)), F.reshape(p2, (contracted, cols))), tuple(sizes))


def _dim_set(dims, ndim: int) -> set:
    found = set()
    for d in dims:
        k = normalize_dim(d, ndim)
        if k in found:
            raise RuntimeError(f"dim {k} appears multiple times in the list of dims")
        found.add(k)
    return found


def inner(input, other) -> Tensor:
    """torch.inner: the sum of products over the last dims (a 0-d operand: a product); torch's
    tensordot(input, other, [-1], [-1])."""
    a, b = F.as_tensor(input, "inner"), F.as_tensor(other, "inner", "other", 2)
    if a.dim() == 0 or b.dim() == 0:
        return F.mul(a, b)
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(a.shape)} and {list(b.shape)}")
    return tensordot(a, b, ([-1], [-1]))


def vdot(input, other) -> Tensor:
    """torch.vdot: the dot product of two 1-d tensors of one dtype (VdotBackward0); for real
    tensors the same as dot."""
    a, b = F.as_tensor(input, "vdot"), F.as_tensor(other, "vdot", "other", 2)
    if a.dim() != 1 or b.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.dim()}D and {b.dim()}D tensors")
    if a._dtype is not b._dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {_name(a)} and {_name(b)}")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] to have "
                           f"the same number of elements, but got {a.shape[0]} and {b.shape[0]} elements respectively")
    if a._dtype is bool_:
        raise NotImplementedError("\"dot\" not implemented for 'Bool'")
    return apply_op("matmul", [a, b], None, "VdotBackward0")


_CHAIN_MATMUL_WARNING = ("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                         "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than "
                         "multiple parameters.")


def chain_matmul(*matrices) -> Tensor:
    """torch.chain_matmul (deprecated, warning once as torch): the product of 2-d matrices, in
    the order of fewest multiplications (linalg.multi_dot's), each an mm; one matrix: a clone."""
    F.warn_once(_CHAIN_MATMUL_WARNING)
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = matrices[0]
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    ms = [F.as_tensor(m, "chain_matmul", "matrices") for m in matrices]
    for m in ms:
        if m.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    if len(ms) == 1:
        return F.clone(ms[0])
    for k in range(len(ms) - 1):
        if ms[k]._dtype is not ms[k + 1]._dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                               f"{F._c_name(ms[0]._dtype)} and tensor {k + 1} {F._c_name(ms[k + 1]._dtype)}")
        if ms[k].shape[1] != ms[k + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {k} and {k + 1} with shapes {list(ms[k].shape)} and "
                               f"{list(ms[k + 1].shape)} cannot be multiplied")
    return chain_product(ms, chain_order([m.shape[0] for m in ms] + [ms[-1].shape[1]]), 0, len(ms) - 1)


def chain_order(p: list) -> list:
    """torch's matrix-chain dynamic programme (cost ties keep the first split): the order of fewest scalar multiplications (split[i][j]: where i..j splits)."""
    n = len(p) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def chain_product(ms, split, i, j):
    """The product of matrices ms[i..j] in the order `split` (chain_order's) gives."""
    if i == j:
        return ms[i]
    k = split[i][j]
    return mm(chain_product(ms, split, i, k), chain_product(ms, split, k + 1, j))


# ------------------------------------------------------------------ addmm and kin
def _scalar(value, fn: str, arg: str):
    if isinstance(value, Tensor) and value.dim() == 0:
        value = value.item()
    if not isinstance(value, (numbers.Number, np.number)) or isinstance(value, complex):
        raise TypeError(f"{fn}(): argument '{arg}' must be Number, not {type_name(value)}")
    return value


def _integral_scalar(value, dtype, strict: bool, arg: str):
    """beta or alpha for a `dtype` result: an integer result truncates a float (addmm, addmv,
    baddbmm, addbmm) or refuses it (addr: torch's text)."""
    if dtype.is_floating_point:
        return float(value)
    if isinstance(value, (float, np.floating)):
        if strict:
            raise RuntimeError(f"For integral input tensors, argument {arg} must not be a floating point number.")
        return int(value)
    return bool(value) if dtype is bool_ else int(value)


def _bias_fits(bias: Tensor, shape: tuple) -> None:
    _expand_infer([TensorType(tuple(bias.shape), bias._dtype)], {"shape": shape})   # (expand's texts)


def _product_call(kind: str, name: str, input, m1, m2, beta, alpha, fn: str, self_out=None) -> Tensor:
    bias = F.as_tensor(input, fn)
    a, b = F.as_tensor(m1, fn, "mat1", 2), F.as_tensor(m2, fn, "mat2", 3)
    beta, alpha = _scalar(beta, fn, "beta"), _scalar(alpha, fn, "alpha")
    shape, dtype = _PRODUCT_CHECKS[kind](bias, a, b)
    if kind == "r":
        bias, a, b = (F.cast(t, dtype) for t in (bias, a, b))
    beta = _integral_scalar(beta, dtype, kind == "r", "beta")
    alpha = _integral_scalar(alpha, dtype, kind == "r", "alpha")
    if self_out is not None:
        inplace.check_inplace(self_out)
        if tuple(self_out.shape) != shape:
            if kind == "r":
                raise RuntimeError(f"2D tensor expected, got {self_out.dim()}D tensor for input")
            raise RuntimeError(f"Bad in-place call: input tensor size {list(self_out.shape)} and output tensor size "
                               f"{list(shape)} should match")
    else:
        _bias_fits(bias, shape)
    if kind == "mm" and beta == 1 and alpha == 1 and bias._dtype.is_floating_point:
        return apply_op("addmm", [bias, a, b], F.mm_attrs(a, b) if self_out is None else None, name, out=self_out)
    return apply_op("add_product", [bias, a, b], {"kind": kind, "beta": beta, "alpha": alpha}, name, out=self_out)


def _check_mm_dtypes(bias, a, b) -> None:
    """addmm's (and addbmm's, which torch runs as addmm) dtype checks, in torch's order."""
    if bias._dtype is not b._dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {_name(bias)} and {_name(b)}")
    if a._dtype is not b._dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {_name(a)} and {_name(b)}")
    _no_bool(a, "addmm_impl_cpu_")


def _check_mm(bias, a, b):
    for arg, t in (("mat1", a), ("mat2", b)):
        if t.dim() != 2:
            raise RuntimeError(f"{arg} must be a matrix, got {t.dim()}-D tensor")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and "
                           f"{b.shape[0]}x{b.shape[1]})")
    _check_mm_dtypes(bias, a, b)
    return (a.shape[0], b.shape[1]), a._dtype


def _check_mv(bias, a, v):
    if a.dim() != 2 or v.dim() != 1 or bias.dim() > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {bias.dim()}, {a.dim()}, {v.dim()}")
    if not (bias._dtype is a._dtype is v._dtype):
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {_name(bias)}, {_name(a)}, and "
                           f"{_name(v)}")
    if a.shape[1] != v.shape[0] or (bias.numel() != 1 and bias.shape[0] != a.shape[0]):
        size = bias.shape[0] if bias.dim() else 1
        raise RuntimeError(f"size mismatch, got input ({size}), mat ({a.shape[0]}x{a.shape[1]}), vec ({v.shape[0]})")
    _no_bool(a, "addmv_impl_cpu")
    return (a.shape[0],), a._dtype


def _check_r(bias, v1, v2):
    for arg, t in (("vec1", v1), ("vec2", v2)):
        if t.dim() != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {arg}, but got {t.dim()}-D")
    return (v1.shape[0], v2.shape[0]), F._promoted([bias, v1, v2], "addr")[1]


def _check_batches(bias, a, b, kind):
    for arg, t in (("batch1", a), ("batch2", b)):
        if t.dim() != 3:
            raise RuntimeError(f"{arg} must be a 3D tensor")
    if kind == "addbmm":
        if a.shape[0] != b.shape[0]:
            raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {a.shape[0]} and "
                               f"{b.shape[0]}")
        if a.shape[2] != b.shape[1]:
            raise RuntimeError(f"Incompatible matrix sizes for bmm ({a.shape[1]}x{a.shape[2]} and "
                               f"{b.shape[1]}x{b.shape[2]})")
        _check_mm_dtypes(bias, a, b)
        return (a.shape[1], b.shape[2]), a._dtype
    if (b.shape[0], b.shape[1]) != (a.shape[0], a.shape[2]):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{a.shape[0]}, "
                           f"{a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}].")
    if not (bias._dtype is a._dtype is b._dtype):
        if bias._dtype is not a._dtype:
            raise RuntimeError(f"Input dtypes must be the same, got: input {F._c_name(bias._dtype)}, batch1: "
                               f"{F._c_name(a._dtype)}, batch2: {F._c_name(b._dtype)}")
        raise RuntimeError(f"expected scalar type {_name(a)} but found {_name(b)}")
    _no_bool(a, "baddbmm")
    return (a.shape[0], a.shape[1], b.shape[2]), a._dtype


def _no_bool(t: Tensor, kernel: str) -> None:
    if t._dtype is bool_:
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')


_PRODUCT_CHECKS = {"mm": _check_mm, "mv": _check_mv, "r": _check_r,
                   "bmm": lambda bias, a, b: _check_batches(bias, a, b, "bmm"),
                   "addbmm": lambda bias, a, b: _check_batches(bias, a, b, "addbmm")}


def _product_function(kind: str, fn: str, node: str, args: tuple, doc: str):
    first, second = args

    def function(input, arg1, arg2, *, beta=1, alpha=1, out=None) -> Tensor:
        if out is not None:
            raise NotImplementedError(f"fusegrad: {fn}(out=) is not supported")
        return _product_call(kind, node, input, arg1, arg2, beta, alpha, fn)

    def method_(self, arg1, arg2, *, beta=1, alpha=1) -> Tensor:
        _product_call(kind, node, self, arg1, arg2, beta, alpha, fn + "_", self_out=self)
        return self

    function.__name__ = function.__qualname__ = fn
    method_.__name__ = method_.__qualname__ = fn + "_"
    function.__doc__ = (f"torch.{fn}(input, {first}, {second}, *, beta=1, alpha=1): {doc} ({node}); beta = 0 "
                        "ignores input (NaNs included). `out=` is not supported.")
    method_.__doc__ = f"In-place torch.{fn}: self = beta * self + alpha * product (self keeps its shape)."
    return function, method_


addmm, _addmm_ = _product_function("mm", "addmm", "AddmmBackward0", ("mat1", "mat2"),
                                   "beta * input + alpha * mat1 @ mat2, input broadcast to the product")
addmv, _addmv_ = _product_function("mv", "addmv", "AddmvBackward0", ("mat", "vec"),
                                   "beta * input + alpha * mat @ vec")
addr, _addr_ = _product_function("r", "addr", "AddrBackward0", ("vec1", "vec2"),
                                 "beta * input + alpha * outer(vec1, vec2) (dtypes promote; bools: or/and)")
baddbmm, _baddbmm_ = _product_function("bmm", "baddbmm", "BaddbmmBackward0", ("batch1", "batch2"),
                                       "beta * input + alpha * bmm(batch1, batch2)")
addbmm, _addbmm_ = _product_function("addbmm", "addbmm", "AddbmmBackward0", ("batch1", "batch2"),
                                     "beta * input + alpha * the sum over the batch of bmm(batch1, batch2)")


# ------------------------------------------------------------------ cross, dist, cdist
_CROSS_WARNING = ("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                  "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree with "
                  "that of linalg.cross in a future release.")


def cross(input, other, dim=None) -> Tensor:
    """torch.cross: the vector product along `dim` (LinalgCrossBackward0); the operands broadcast.
    Without dim (deprecated, warning once as torch) the first dim of size 3 of the broadcast
    shape, where torch.linalg.cross would take -1."""
    a, b = F.as_tensor(input, "cross"), F.as_tensor(other, "cross", "other", 2)
    if a.dim() != b.dim():
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    shape = broadcast_shapes(tuple(a.shape), tuple(b.shape))
    if dim is None:
        F.warn_once(_CROSS_WARNING)
        dim = next((d for d, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    axis = normalize_dim(F.int_argument(dim, "cross", "dim", 3), len(shape))
    if a.shape[axis] != 3 or b.shape[axis] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {F.int_argument(dim, 'cross', 'dim', 3)} must have "
                           f"length 3. Got {a.shape[axis]} and {b.shape[axis]}")
    if a._dtype is not b._dtype:
        raise RuntimeError(f"expected scalar type {_name(a)} but found {_name(b)}")
    if a._dtype is bool_:
        raise NotImplementedError("\"cross\" not implemented for 'Bool'")
    return apply_op("cross", [a, b], {"axis": axis}, "LinalgCrossBackward0")


def _norm_of(diff: Tensor, p, axes: tuple, name: str) -> Tensor:
    hide_node(diff)         # (torch's node takes the operands itself)
    return apply_op("norm", [diff], {"p": float(p), "axes": axes, "keepdim": False}, name)


def dist(input, other, p=2) -> Tensor:
    """torch.dist: the p-norm of input - other (broadcast; float operands), DistBackward0."""
    a, b = F.as_tensor(input, "dist"), F.as_tensor(other, "dist", "other", 2)
    p = _scalar(p, "dist", "p")
    if a._dtype is b._dtype and a._dtype.is_floating_point:
        # (one node, saving both operands as torch's: ir/ops/reduce.py)
        return apply_op("dist", [a, b], {"p": float(p)}, "DistBackward0")
    diff = F.sub(a, b)      # (torch's dist is the norm of a - b: dtypes promote as sub's)
    if not diff._dtype.is_floating_point:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got {_name(diff)} "
                           f"instead.")
    return _norm_of(diff, p, tuple(range(diff.dim())), "DistBackward0")


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """torch.cdist: the p-norm distances between the rows of x1 [..., P, M] and x2 [..., R, M]
    (batch dims broadcast), [..., P, R] (CdistBackward0). fusegrad always computes the
    differences directly: `compute_mode` is accepted and ignored (torch's matrix-product form
    for p = 2 and more than 25 rows can differ from it by rounding, most for near points)."""
    a, b = F.as_tensor(x1, "cdist", "x1"), F.as_tensor(x2, "cdist", "x2", 2)
    if a.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {a.dim()}D")
    if b.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {b.dim()}D")
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {a.shape[-1]} X2: {b.shape[-1]}")
    if not a._dtype.is_floating_point:
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {_name(a)}")
    if not b._dtype.is_floating_point:
        raise RuntimeError(f"cdist only supports floating-point dtypes, X2 got: {_name(b)}")
    p = _scalar(p, "cdist", "p")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if a._dtype is not b._dtype:
        raise RuntimeError(f"expected scalar type {_name(a)} but found {_name(b)}")
    return apply_op("cdist", [a, b], {"p": float(p)}, "CdistBackward0")       # (ir/ops/reduce.py)


def pdist(input, p=2) -> Tensor:
    """torch.pdist / F.pdist: the p-norm distance of each pair of rows i < j of a 2-d input, in
    row-major pair order (PdistBackward0)."""
    a = F.as_tensor(input, "pdist", "input")
    if a.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {a.dim()}D")
    if not a._dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    p = _scalar(p, "pdist", "p")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    return apply_op("pdist", [a], {"p": float(p)}, "PdistBackward0")       # (ir/ops/reduce.py)


# ------------------------------------------------------------------ det, inverse, slogdet, logdet, matrix_power
def _square(t: Tensor, fn: str, needs_float: bool = True) -> None:
    if t.dim() < 2:
        raise RuntimeError(f"{fn}: The input tensor A must have at least 2 dimensions.")
    if needs_float and not t._dtype.is_floating_point:
        raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. Got {_name(t)}")
    if t.shape[-1] != t.shape[-2]:
        raise RuntimeError(f"{fn}: A must be batches of square matrices, but they are {t.shape[-2]} by "
                           f"{t.shape[-1]} matrices")


def det(input) -> Tensor:
    """torch.det (linalg.det): the determinants of square float matrices, batched
    (LinalgDetBackward0: g * det * A^-T, 0 where det is 0, as torch's for a singular matrix)."""
    a = F.as_tensor(input, "det")
    _square(a, "linalg.det")
    return apply_op("det", [a], None, "LinalgDetBackward0")


def inverse(input) -> Tensor:
    """torch.inverse (linalg.inv): the inverses of square float matrices, batched
    (LinalgInvExBackward0); a singular one raises torch's LinAlgError text (its zero pivot by
    LU with partial pivoting)."""
    a = F.as_tensor(input, "inverse")
    _square(a, "linalg.inv")
    return apply_op("inverse", [a], {"raises": True}, "LinalgInvExBackward0")


SlogdetResult = F.named_pair("slogdet", "sign", "logabsdet")     # torch.return_types.slogdet


def slogdet(input):
    """torch.slogdet (linalg.slogdet): (sign, logabsdet) of square float matrices, batched; a
    torch.return_types.slogdet (LinalgSlogdetBackward0; the sign carries no gradient). At an
    exactly singular matrix the gradient is NaN (torch's is +-inf)."""
    a = F.as_tensor(input, "slogdet")
    _square(a, "linalg.slogdet")
    return SlogdetResult(apply_op("slogdet", [a], None, "LinalgSlogdetBackward0"))


def logdet(input) -> Tensor:
    """torch.logdet: log det of square float matrices, NaN where det < 0 (torch's
    where(sign == -1, nan, logabsdet): WhereBackward0 over LinalgSlogdetBackward0)."""
    a = F.as_tensor(input, "logdet")
    _square(a, "logdet")
    sign, logabsdet = apply_op("slogdet", [a], None, "LinalgSlogdetBackward0")
    return F.where(F.eq(sign, -1), math.nan, logabsdet)


def matrix_power(input, n) -> Tensor:
    """torch.matrix_power (linalg.matrix_power): A**n of square matrices by torch's steps: n = 0
    the identity (a clone overwritten: CopyBackwards), n = 1 a clone, n < 0 of the inverse,
    2 and 3 by matmuls, larger n by binary powers."""
    a = F.as_tensor(input, "matrix_power")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"matrix_power(): argument 'n' (position 2) must be int, not {type_name(n)}")
    _square(a, "linalg.matrix_power", needs_float=False)
    n = int(n)
    if n == 0:
        from .creation import eye
        return F.clone(a).copy_(F.expand(eye(a.shape[-1], dtype=a._dtype), tuple(a.shape)))
    if n < 0:
        a, n = inverse(a), -n
    if n == 1:
        return F.clone(a)
    if n == 2:
        return F.matmul(a, a)
    if n == 3:
        return F.matmul(F.matmul(a, a), a)
    z = result = None
    while n > 0:
        bit, n = n % 2, n // 2
        z = a if z is None else F.matmul(z, z)
        if bit:
            result = z if result is None else F.matmul(result, z)
    return result


# ------------------------------------------------------------------ in-place comparisons and logical ops
def _comparison_inplace(fn, name: str, node: str):
    """t.eq_(other) and kin: the comparison's 1/0 written into t in t's dtype (torch's
    EqBackward0 for a number, EqBackward1 for a tensor: zero gradients)."""
    def method(self, other) -> Tensor:
        inplace.check_inplace(self)
        result = fn(self, other)
        inplace.check_result_fits(self, tuple(result.shape), bool_)
        inplace.check_write_overlaps(self, other)
        number = node + ("1" if isinstance(other, (Tensor, np.ndarray)) else "0")
        apply_op("index_put", [self, F.cast(result, self._dtype)], {"index": ()}, number, out=self)
        return self
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place {fn.__name__}: 1 where it holds, else 0, in self's dtype ({node}0/1)."
    return method


def _logical_inplace(fn, name: str, unary: bool = False):
    """t.logical_and_(other) and kin: the result written into t in t's dtype. torch records no
    node (t keeps its grad_fn) and does not refuse a leaf that requires grad; its version counts."""
    def method(self, *other) -> Tensor:
        if not unary and len(other) == 1 and not isinstance(other[0], Tensor):
            raise TypeError(f"{name}(): argument 'other' (position 1) must be Tensor, not {type_name(other[0])}")
        result = fn(self, *other)
        inplace.check_result_fits(self, tuple(result.shape), bool_)
        with no_grad():
            inplace.copy_(self, F.cast(result, self._dtype))
        return self
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place {fn.__name__}, in self's dtype (no node recorded, as torch)."
    return method


# ------------------------------------------------------------------ gcd, lcm, ldexp, sinc
def _integer_plan(op: str, input, other, fn: str):
    a, b = F.as_tensor(input, fn), F.as_tensor(other, fn, "other", 2)
    dtype = F._promoted([a, b], fn)[1]
    if dtype.is_floating_point or dtype is bool_:
        raise NotImplementedError(f'"{op}_cpu" not implemented for \'{TORCH_SCALAR_NAMES[dtype.name]}\'')
    return op, [a, b], None, None, dtype


def gcd(input, other) -> Tensor:
    """torch.gcd: the greatest common divisor of integers (non-negative; gcd(0, 0) = 0)."""
    return _apply(_integer_plan("gcd", input, other, "gcd"))


def lcm(input, other) -> Tensor:
    """torch.lcm: the least common multiple of integers (non-negative; 0 where either is 0)."""
    return _apply(_integer_plan("lcm", input, other, "lcm"))


def _gcd_(self, other) -> Tensor:
    """In-place torch.gcd."""
    return _write(self, _integer_plan("gcd", self, other, "gcd_"))


def _lcm_(self, other) -> Tensor:
    """In-place torch.lcm."""
    return _write(self, _integer_plan("lcm", self, other, "lcm_"))


def _ldexp_plan(input, other, fn="ldexp"):
    a, b = F.as_tensor(input, fn), _operand(other, fn, "other", 2)
    if not isinstance(b, Tensor):
        raise TypeError(f"{fn}(): argument 'other' (position 2) must be Tensor, not {type_name(b)}")
    if a._dtype.is_floating_point and b._dtype is bool_:
        # (torch's float path takes exp of the exponent in its own dtype; an integer or bool
        # input goes through pow, which takes a bool)
        raise NotImplementedError("\"ldexp_cpu_exp\" not implemented for 'Bool'")
    return "ldexp", [a, b], None, "LdexpBackward0", _float_dtype([a, b], fn)


def ldexp(input, other) -> Tensor:
    """torch.ldexp: input * 2**other (a float result: integers promote to float32), LdexpBackward0.
    2**other is computed in the result dtype (torch's pow(2, other) is float32 for an integer
    other, so a float64 input with |other| > 127 differs: torch gives inf or 0 there)."""
    return _apply(_ldexp_plan(input, other))


def _ldexp_(self, other) -> Tensor:
    """In-place torch.ldexp (self must be floating)."""
    if not self._dtype.is_floating_point:
        raise RuntimeError(f"ldexp can't be cast to the desired output type {_name(self)}")
    return _write(self, _ldexp_plan(self, other, "ldexp_"))


def _sinc_plan(input, fn="sinc"):
    a = F.as_tensor(input, fn)
    return "sinc", [a], None, "SincBackward0", _float_dtype([a], fn)


def sinc(input) -> Tensor:
    """torch.sinc: sin(pi x) / (pi x), 1 at 0 (integers promote to float32), SincBackward0."""
    return _apply(_sinc_plan(input))


def _sinc_(self) -> Tensor:
    """In-place torch.sinc (self must be floating)."""
    return _write(self, _sinc_plan(self, "sinc_"))


# ------------------------------------------------------------------ predicates
def is_nonzero(input) -> bool:
    """torch.is_nonzero: the one element of a tensor as a bool (torch's errors for none or more)."""
    t = F.as_tensor(input, "is_nonzero")
    if t.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if t.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(t.item())


def is_same_size(input, other) -> bool:
    """torch.is_same_size: whether two tensors have one shape."""
    a, b = F.as_tensor(input, "is_same_size"), F.as_tensor(other, "is_same_size", "other", 2)
    return tuple(a.shape) == tuple(b.shape)


_COMPARISONS = {"eq_": (F.eq, "EqBackward"), "ne_": (F.ne, "NeBackward"), "lt_": (F.lt, "LtBackward"),
                "le_": (F.le, "LeBackward"), "gt_": (F.gt, "GtBackward"), "ge_": (F.ge, "GeBackward"),
                "greater_": (F.gt, "GtBackward"), "greater_equal_": (F.ge, "GeBackward"),
                "less_": (F.lt, "LtBackward"), "less_equal_": (F.le, "LeBackward"),
                "not_equal_": (F.ne, "NeBackward")}

METHODS = {
    "inner": inner, "vdot": vdot,
    "addmm": addmm, "addmm_": _addmm_, "addmv": addmv, "addmv_": _addmv_, "addr": addr, "addr_": _addr_,
    "baddbmm": baddbmm, "baddbmm_": _baddbmm_, "addbmm": addbmm, "addbmm_": _addbmm_,
    "cross": cross, "dist": dist, "det": det, "inverse": inverse, "logdet": logdet, "slogdet": slogdet,
    "matrix_power": matrix_power,
    **{name: _comparison_inplace(fn, name, node) for name, (fn, node) in _COMPARISONS.items()},
    "logical_and_": _logical_inplace(F.logical_and, "logical_and_"),
    "logical_or_": _logical_inplace(F.logical_or, "logical_or_"),
    "logical_xor_": _logical_inplace(F.logical_xor, "logical_xor_"),
    "logical_not_": _logical_inplace(F.logical_not, "logical_not_", unary=True),
    "gcd": gcd, "gcd_": _gcd_, "lcm": lcm, "lcm_": _lcm_, "ldexp": ldexp, "ldexp_": _ldexp_,
    "sinc": sinc, "sinc_": _sinc_, "is_nonzero": is_nonzero, "is_same_size": is_same_size,
}


def _module_in_place():
    """torch.gcd_(t, o), lcm_, ldexp_ and sinc_: the tensor's in-place methods."""
    from .inplace_functions import _module_function
    return {name: _module_function(name) for name in ("gcd_", "lcm_", "ldexp_", "sinc_")}


FUNCTIONS_IN_PLACE = _module_in_place()
gcd_, lcm_, ldexp_, sinc_ = (FUNCTIONS_IN_PLACE[name] for name in ("gcd_", "lcm_", "ldexp_", "sinc_"))
