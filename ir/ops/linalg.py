"""matmul (NumPy semantics: 1-d promotion and batch broadcasting), addmm
(a linear layer: bias + mat1 @ mat2, one node as in torch), the numerically
stable softmax / log_softmax along one axis, and the reduced singular value
decomposition (svd: the nuclear norm's singular values)."""
from __future__ import annotations

import numpy as np

from .. import threaded
from ..blocked_copy import blocked_copyto
from ..buffers import POOL
from ..types import TensorType
from .elementwise import fresh_result
from .movement import _expand_infer
from .registry import COMPOSITE, MATMUL, OPAQUE, OpDef, broadcast_shapes, register


def _matmul_infer(types, attrs):
    a, b = types
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {a.dtype.name} != {b.dtype.name}")
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and {b.ndim}D")
    sa, sb = a.shape, b.shape
    if a.ndim == 1 and b.ndim == 1:
        if sa[0] != sb[0]:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{sa[0]}] and src [{sb[0]}] to have "
                               f"the same number of elements, but got {sa[0]} and {sb[0]} elements respectively")
        _check_matmul_dtype(a.dtype, "dot", sa[0], 1, always=True)
        return [TensorType((), a.dtype)]
    if a.ndim == 2 and b.ndim == 1:
        if sa[1] != sb[0]:
            raise RuntimeError(f"size mismatch, got input ({sa[0]}), mat ({sa[0]}x{sa[1]}), vec ({sb[0]})")
        _check_matmul_dtype(a.dtype, "addmv_impl_cpu", sa[1], sa[0])
        return [TensorType((sa[0],), a.dtype)]
    folded = _folded_kernel(sa, sb)
    if folded is not None:
        shape = _matmul_shape(sa, sb)
        _check_matmul_dtype(a.dtype, folded[0], folded[1], _prod(shape))
        return [TensorType(shape, a.dtype)]
    ma = sa if a.ndim >= 2 else (1,) + sa
    mb = sb if b.ndim >= 2 else sb + (1,)
    if ma[-1] != mb[-2]:
        if a.ndim <= 2 and b.ndim <= 2:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({ma[-2]}x{ma[-1]} and {mb[-2]}x{mb[-1]})")
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{_batch(ma, mb)}, {ma[-1]}] but got: [{_batch(ma, mb)}, {mb[-2]}].")
    shape = _matmul_shape(sa, sb)
    name = "addmm_impl_cpu_" if a.ndim <= 2 and b.ndim <= 2 else "bmm"
    _check_matmul_dtype(a.dtype, name, ma[-1], _prod(shape))
    return [TensorType(shape, a.dtype)]


def _matmul_shape(sa, sb):
    ma = sa if len(sa) >= 2 else (1,) + sa
    mb = sb if len(sb) >= 2 else sb + (1,)
    batch = broadcast_shapes(ma[:-2], mb[:-2])
    return batch + (ma[-2],) * (len(sa) >= 2) + (mb[-1],) * (len(sb) >= 2)


def _folded_kernel(sa, sb):
    """torch folds a >= 3-d operand times a 1-d or 2-d one into one mv/mm (for
    contiguous operands; a >= 3-d right operand only when its transpose folds
    without a copy, i.e. when the left is 1-d and b.shape[-2] is 1 or b is
    empty). Those calls check shapes as mv/mm do: the folded operand's
    sizes appear in the error text. Returns None when torch does not fold,
    else checks the folded shapes (raising torch's text) and returns the
    kernel's name and the contracted size."""
    if len(sa) >= 3 and len(sb) <= 2:
        rows, k = _prod(sa[:-1]), sa[-1]
        other = sb
    elif len(sb) >= 3 and len(sa) == 1 and (sb[-2] == 1 or 0 in sb):
        rows, k = _prod(sb[:-2]) * sb[-1], sb[-2]
        other = sa
    else:
        return None
    if len(other) == 1:
        if other[0] != k:
            raise RuntimeError(f"size mismatch, got input ({rows}), mat ({rows}x{k}), vec ({other[0]})")
        return "addmv_impl_cpu", k
    if other[0] != k:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{k} and {other[0]}x{other[1]})")
    return "addmm_impl_cpu_", k


def _check_matmul_dtype(dtype, kernel, k, numel, always=False):
    """torch has no bool matmul kernels (an empty product never reaches one)."""
    if dtype.name == "bool" and (always or (k and numel)):
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')


def _prod(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _batch(ma, mb):
    return _prod(broadcast_shapes(ma[:-2], mb[:-2]))


def _is_outer(sa, sb) -> bool:
    """Two operands of at least 2 dims contracting one element (`x[n, 1] @ y[1, m]`, a linear
    layer's weight gradient for one input feature): every output element is one product, so
    the matmul is a broadcast multiply, bit for bit. NumPy's matmul took 0.58 ms for a
    [4096, 1] @ [1, 128] float32 (torch 0.05 ms), np.multiply 0.17 ms; in a kernel the
    multiply fuses with what reads it."""
    return len(sa) >= 2 and len(sb) >= 2 and sa[-1] == 1


def _adds_to_zero(sa, sb, dtype) -> bool:
    """Whether torch's matmul of these shapes, contracting one element, gives +0. where the
    product is -0.: its bmm (a batched operand b), mv, dot and an mm of one row or column
    accumulate onto a zero (measured), while an mm of more (2-d, or a batch folded into rows:
    3-d @ 2-d) keeps the product's sign."""
    if sa[-1] != 1 or np.dtype(dtype).kind != "f":
        return False
    keeps_sign = len(sa) >= 2 and len(sb) == 2 and _prod(sa[:-1]) > 1 and sb[-1] > 1
    return not keeps_sign


def _matmul_ref(a, b, column_major=None):
    if _is_outer(a.shape, b.shape):
        # (row-major, as every product torch returns: NumPy's multiply follows a transposed
        # operand's layout, and a later .view(-1) of the result then raised)
        product = np.multiply(a, b)
        product = product if product.flags.c_contiguous else np.ascontiguousarray(product)
    else:
        product = np.asarray(np.matmul(a, b))
    if _adds_to_zero(a.shape, b.shape, product.dtype):
        np.add(product, 0, out=product)
    return product


def _matmul_into(out, a, b, column_major=None):
    """_matmul_ref writing into `out` (C-contiguous, the output's shape and dtype)."""
    if _is_outer(a.shape, b.shape):
        np.multiply(a, b, out=out)
    else:
        np.matmul(a, b, out=out)
    if _adds_to_zero(a.shape, b.shape, out.dtype):
        np.add(out, 0, out=out)


def _matmul_rewrite(e, xs, attrs, graph):
    """An outer product (see _is_outer) is a broadcast `mul`, which fuses into kernels (plus a
    zero where torch's product accumulates onto one: _adds_to_zero)."""
    a, b = xs
    if not _is_outer(a.shape, b.shape):
        return None
    product = e.mul(a, b)
    return [e.add(product, 0.0) if _adds_to_zero(a.shape, b.shape, product.dtype.np) else product]


def _matmul_vjp(e, x, y, g, a, n):
    """Both operands promoted to >= 2-d, then ga = g @ b^T, gb = a^T @ g.

    Batch broadcasting is undone by the autodiff's sum_to, after reshaping
    the promoted 1-d operands back."""
    A, B = x
    if A.type.ndim == 1 and B.type.ndim == 1:
        # torch's dot_backward: grad * tensor, grad * self (MulBackward0 under create_graph);
        # self's is emitted first: its read decides the version check's order (torch's node
        # unpacks self, then tensor)
        gb = e.mul(g[0], A) if n[1] else None
        return [e.mul(g[0], B) if n[0] else None, gb]
    g_shape = list(g[0].shape)
    if A.type.ndim == 1:
        g_shape.insert(len(g_shape) - (B.type.ndim >= 2), 1)
    if B.type.ndim == 1:
        g_shape.append(1)
    G = e.reshape(g[0], tuple(g_shape))

    column_major = a.get("column_major") or (False, False)

    def grad_a():
        if column_major[0]:
            # torch's mm_mat1_backward for a column-major mat1: (mat2 @ grad^T)^T, column-major too
            return e.transpose_last(e.matmul(B, e.transpose_last(G)))
        if B.type.ndim == 1 and A.type.ndim >= 2:
            # torch's mv_backward: grad.ger(vec), an outer product computed as a broadcast
            # multiply (a create_graph gradient records MulBackward0; each element is one
            # product, so the values are the matmul's)
            return e.mul(G, B)
        B2 = e.reshape(B, B.shape + (1,)) if B.type.ndim == 1 else B
        ga = e.matmul(G, e.transpose_last(B2))
        return e.reshape(e.sum_to(ga, (1,) + A.shape), A.shape) if A.type.ndim == 1 else ga

    def grad_b():
        if column_major[1]:
            # torch's mm_mat2_backward for a column-major mat2 (linear's weight.t()): (grad^T @ mat1)^T,
            # so the weight's own gradient comes out row-major, as torch's
            return e.transpose_last(e.matmul(e.transpose_last(G), A))
        A2 = e.reshape(A, (1,) + A.shape) if A.type.ndim == 1 else A
        gb = e.matmul(e.transpose_last(A2), G)
        return e.reshape(e.sum_to(gb, B.shape + (1,)), B.shape) if B.type.ndim == 1 else gb
    # The first read decides which saved operand a version check names first (node.checking_order):
    # torch's node unpacks them by name, so the matrix before the vector for a product with a
    # vector (DotBackward0 and MvBackward0: self, then tensor or vec), mat2 before self otherwise.
    self_first = B.type.ndim == 1
    gb = grad_b() if n[1] and self_first else None
    ga = grad_a() if n[0] else None
    if n[1] and not self_first:
        gb = grad_b()
    return [ga, gb]


# extra["ref_into"]: the reference writing into given memory (the executor's buffer pool)
# Attribute `column_major` (eager 2-d products only; see mm_layout_attrs): which operands were
# column-major, whose gradients torch computes as transposed products of that layout.
register(OpDef("matmul", MATMUL, _matmul_infer, _matmul_ref, _matmul_vjp, rewrite=_matmul_rewrite,
               extra={"ref_into": _matmul_into}))


def mm_layout_attrs(m1: np.ndarray, m2: np.ndarray) -> dict | None:
    """The `column_major` attribute of a 2-d product (matmul, addmm) of arrays m1 and m2 when
    either is column-major, as torch tests it (strides (1, rows)): torch computes such an
    operand's gradient as the transpose of a row-major product, so it is column-major too
    (the gradient of linear's weight.t() is, and the weight's own is row-major). None when
    neither is: the attribute is absent, as in traced programs."""
    flags = (_column_major(m1), _column_major(m2))
    return {"column_major": flags} if flags[0] or flags[1] else None


def _column_major(m: np.ndarray) -> bool:
    size = m.itemsize
    return m.ndim == 2 and m.strides[0] == size and m.strides[1] == m.shape[0] * size


# ------------------------------------------------------------------ addmm
# bias + mat1 @ mat2 for 2-d mat1, mat2 and a bias broadcasting to the product:
# nn.functional.linear's op, recorded as one node (AddmmBackward0) as torch
# records it. Codegen sees the matmul and the add (its decomposition).
def _addmm_infer(types, attrs):
    bias, m1, m2 = types
    if m1.ndim != 2 or m2.ndim != 2:
        raise RuntimeError(f"addmm: mat1 and mat2 must be matrices, got {m1.ndim}-D and {m2.ndim}-D")
    (product,) = _matmul_infer([m1, m2], attrs)
    if bias.dtype is not product.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {bias.dtype.name} != "
                           f"{product.dtype.name}")
    _expand_infer([bias], {"shape": product.shape})      # the bias broadcasts to the product (expand's errors)
    return [product]


def _addmm_ref(bias, m1, m2, column_major=None):
    return _matmul_ref(m1, m2) + bias


def _addmm_into(out, bias, m1, m2, column_major=None):
    """_addmm_ref writing into `out` (the same two roundings: the product, then the sum)."""
    _matmul_into(out, m1, m2)
    np.add(out, bias, out=out)


def _addmm_vjp(e, x, y, g, a, n):
    bias, m1, m2 = x
    c1, c2 = a.get("column_major") or (False, False)     # (torch's layout rule: see mm_layout_attrs)
    ga = None if not n[1] else e.transpose_last(e.matmul(m2, e.transpose_last(g[0]))) if c1 else \
        e.matmul(g[0], e.transpose_last(m2))
    gb = None if not n[2] else e.transpose_last(e.matmul(e.transpose_last(g[0]), m1)) if c2 else \
        e.matmul(e.transpose_last(m1), g[0])
    return [g[0] if n[0] else None, ga, gb]


def _addmm_decompose(e, xs, a):
    bias, m1, m2 = xs
    product = e.mul(m1, m2) if _is_outer(m1.shape, m2.shape) else e.matmul(m1, m2)
    return [e.add(product, bias)]


register(OpDef("addmm", COMPOSITE, _addmm_infer, _addmm_ref, _addmm_vjp, decompose=_addmm_decompose,
               doc="addmm(bias, mat1, mat2): bias + mat1 @ mat2 (a linear layer)",
               extra={"ref_into": _addmm_into, "unpack_order": (("in", 1), ("in", 2))}))     # torch's mat1, mat2


# ------------------------------------------------------------------ softmax
def _axis_infer(types, attrs):
    return [types[0]]


# The references write into one array (`*_into(out, ...)`: a fresh array, or a buffer of
# the pool for eager calls, see ir/buffers.py) and work in place in it: on large inputs
# every extra temporary is another pass over memory and, fresh, a page fault per 4 KiB.
# Each row along a last-axis softmax depends only on itself, so a large one is computed
# in blocks of rows on threads (_by_rows), bit for bit as in one piece.
def _last_axis(out, axis) -> bool:
    """Is `axis` the last of several (each row then holds whole softmaxes)?"""
    return out.ndim >= 2 and axis % out.ndim == out.ndim - 1


def _by_rows(into):
    """`into(out, *arrays, axis)` in blocks of rows on threads where the axis is the last of
    several and the result is large (ir/threaded.py), else in one piece."""
    return threaded.in_row_blocks(into, _last_axis)


def _subtract_max(out, x, axis):
    """out = x minus its maximum along `axis`. A transposed x (torch's softmax of it is
    row-major, as `out`) is first copied into `out` in tiles: a subtraction reading it
    across its memory took 13 ms of a [4096, 1024] softmax's 17."""
    if x.shape == out.shape and x.dtype == out.dtype and not x.flags.c_contiguous and out.flags.c_contiguous:
        blocked_copyto(out, x)
        x = out
    np.subtract(x, np.maximum.reduce(x, axis=axis, keepdims=True), out=out)


def _scales_by_reciprocal(ndim: int, axis: int) -> bool:
    """Whether torch's softmax along `axis` of an `ndim`-d input multiplies by the reciprocal
    of the row's sum (its last-dim kernel, _vec_softmax_lastdim: 1 / sum once, then a product
    an element), not divides by the sum (its kernel for any other dim). The two differ by an
    ulp here and there; the product is also the cheaper loop."""
    return ndim >= 1 and axis % ndim == ndim - 1


@_by_rows
def _softmax_into(out, x, axis):
    if x.ndim == 0:         # exp(x - x) / exp(x - x): NaN for any non-finite x, as torch
        out[()] = 1 if np.isfinite(x) else np.nan
        return
    if not x.size:
        return
    _subtract_max(out, x, axis)
    np.exp(out, out=out)
    total = np.add.reduce(out, axis=axis, keepdims=True, dtype=x.dtype)
    if _scales_by_reciprocal(x.ndim, axis):
        out *= np.reciprocal(total)
    else:
        out /= total


@_by_rows
def _log_softmax_into(out, x, axis):
    if x.ndim == 0:         # x - x - log(exp(x - x)): NaN for any non-finite x, as torch
        out[()] = 0 if np.isfinite(x) else np.nan
        return
    if not x.size:
        return
    _subtract_max(out, x, axis)
    exps = np.exp(out, out=POOL.empty(out.shape, out.dtype))
    out -= np.log(np.add.reduce(exps, axis=axis, keepdims=True, dtype=x.dtype))


_softmax_ref = fresh_result(_softmax_into)
_log_softmax_ref = fresh_result(_log_softmax_into)


def _axes(x, attrs):
    """The softmax axis as reduction axes (none for a 0-d input)."""
    return (attrs["axis"],) if x.type.ndim else ()


# The VJPs are torch's _softmax_backward_data / _log_softmax_backward_data (below), so
# that a create_graph gradient records their nodes and differentiates by torch's rules.
def _softmax_vjp(e, x, y, g, a, n):
    return [e.op("softmax_backward_data", g[0], y[0], axis=a["axis"])]


def _log_softmax_vjp(e, x, y, g, a, n):
    return [e.op("log_softmax_backward_data", g[0], y[0], axis=a["axis"])]


def _softmax_decompose(e, xs, a):
    x, axis = xs[0], _axes(xs[0], a)
    ex = e.exp(e.sub(x, e.amax(x, axis, keepdim=True)))
    total = e.sum(ex, axis, keepdim=True)
    if _scales_by_reciprocal(x.type.ndim, a["axis"]):
        return [e.mul(ex, e.div(e.const(1, total), total))]
    return [e.div(ex, total)]


def _log_softmax_decompose(e, xs, a):
    x, axis = xs[0], _axes(xs[0], a)
    shifted = e.sub(x, e.amax(x, axis, keepdim=True))
    return [e.sub(shifted, e.log(e.sum(e.exp(shifted), axis, keepdim=True)))]


register(OpDef("softmax", COMPOSITE, _axis_infer, _softmax_ref, _softmax_vjp, decompose=_softmax_decompose,
               extra={"ref_into": _softmax_into}))
register(OpDef("log_softmax", COMPOSITE, _axis_infer, _log_softmax_ref, _log_softmax_vjp,
               decompose=_log_softmax_decompose, extra={"ref_into": _log_softmax_into}))


# ------------------------------------------------------------------ softmax backward
# softmax_backward_data(grad, result; axis) = result * (grad - sum(grad * result)) and
# log_softmax_backward_data(grad, result; axis) = grad - exp(result) * sum(grad), the
# sums along `axis` (none for 0-d operands).
def _backward_data_infer(types, attrs):
    g, y = types
    if g != y or not y.dtype.is_floating_point:
        raise TypeError(f"softmax backward: expected a gradient and a result of one type, got {g} and {y}")
    return [y]


def _ref_axes(y, axis):
    return (axis,) if y.ndim else ()


@_by_rows
def _softmax_backward_data_into(out, g, y, axis):
    np.multiply(g, y, out=out)
    dot = np.add.reduce(out, axis=_ref_axes(y, axis), keepdims=True, dtype=y.dtype)
    np.subtract(g, dot, out=out)
    out *= y


@_by_rows
def _log_softmax_backward_data_into(out, g, y, axis):
    total = np.add.reduce(g, axis=_ref_axes(y, axis), keepdims=True, dtype=y.dtype)
    np.exp(y, out=out)
    out *= total
    np.subtract(g, out, out=out)


_softmax_backward_data_ref = fresh_result(_softmax_backward_data_into)
_log_softmax_backward_data_ref = fresh_result(_log_softmax_backward_data_into)


def _softmax_backward_data_decompose(e, xs, a):
    g, y = xs
    return [e.mul(y, e.sub(g, e.sum(e.mul(g, y), _axes(y, a), keepdim=True)))]


def _log_softmax_backward_data_decompose(e, xs, a):
    g, y = xs
    return [e.sub(g, e.mul(e.exp(y), e.sum(g, _axes(y, a), keepdim=True)))]


def _softmax_backward_data_vjp(e, x, y, g, a, n):
    # torch: grad_output -> _softmax_backward_data(grad, output); output ->
    # softmax_double_backward: grad * grad_output - (output * grad_output).sum * grad
    # - grad_output * (output * grad).sum (sums along axis, kept).
    grad_out, out = x
    gg, axes = g[0], _axes(out, a)
    d_grad = e.op("softmax_backward_data", gg, out, axis=a["axis"]) if n[0] else None
    d_out = None
    if n[1]:
        dot = e.sum(e.mul(out, grad_out), axes, keepdim=True)
        d_out = e.sub(e.sub(e.mul(gg, grad_out), e.mul(dot, gg)),
                      e.mul(grad_out, e.sum(e.mul(out, gg), axes, keepdim=True)))
    return [d_grad, d_out]


def _log_softmax_backward_data_vjp(e, x, y, g, a, n):
    # torch: grad_output -> grad - (grad * output.exp()).sum; output ->
    # -grad_output.sum * output.exp() * grad (sums along axis, kept).
    grad_out, out = x
    gg, axes = g[0], _axes(out, a)
    d_grad = e.sub(gg, e.sum(e.mul(gg, e.exp(out)), axes, keepdim=True)) if n[0] else None
    d_out = e.mul(e.mul(e.neg(e.sum(grad_out, axes, keepdim=True)), e.exp(out)), gg) if n[1] else None
    return [d_grad, d_out]


def _log_softmax_backward_data_rewrite(e, xs, a, graph):
    # Of a log_softmax's own result: exp(result) is the softmax of its input, which
    # (once decomposed) shares the forward's exp(x - max) and its sum.
    src = graph.producer(xs[1])
    if src is None or src.op != "log_softmax" or dict(src.attrs) != dict(a):
        return None
    g = xs[0]
    probs = e.op("softmax", src.inputs[0], **dict(src.attrs))
    return [e.sub(g, e.mul(probs, e.sum(g, _axes(g, a), keepdim=True)))]


register(OpDef("softmax_backward_data", COMPOSITE, _backward_data_infer, _softmax_backward_data_ref,
               _softmax_backward_data_vjp, decompose=_softmax_backward_data_decompose,
               extra={"ref_into": _softmax_backward_data_into},
               doc="softmax_backward_data(grad, result; axis): softmax's VJP, as torch's op"))
register(OpDef("log_softmax_backward_data", COMPOSITE, _backward_data_infer, _log_softmax_backward_data_ref,
               _log_softmax_backward_data_vjp, decompose=_log_softmax_backward_data_decompose,
               rewrite=_log_softmax_backward_data_rewrite, extra={"ref_into": _log_softmax_backward_data_into},
               doc="log_softmax_backward_data(grad, result; axis): log_softmax's VJP, as torch's op"))


# ------------------------------------------------------------------ svd
# svd(x) -> (U, S, Vh), reduced (full_matrices=False), batched over leading axes: LAPACK's
# gesdd through NumPy, run by reference everywhere. Only S carries a gradient (torch's
# LinalgSvdBackward0 for the singular values: U diag(gS) Vh); U and Vh are read as
# constants by that VJP, so a second derivative does not flow through them.
def _svd_infer(types, attrs):
    x = types[0]
    if x.ndim < 2 or not x.dtype.is_floating_point:
        raise TypeError(f"svd: expected a floating point matrix or batch of matrices, got {x}")
    *batch, m, n = x.shape
    k = min(m, n)
    return [TensorType((*batch, m, k), x.dtype), TensorType((*batch, k), x.dtype),
            TensorType((*batch, k, n), x.dtype)]


class LinAlgError(RuntimeError):
    """torch's torch.linalg.LinAlgError (torch._C._LinAlgError): a RuntimeError raised where
    a decomposition fails, with torch's text."""


LinAlgError.__name__ = LinAlgError.__qualname__ = "_LinAlgError"      # (the name torch's class prints)


def _svd_ref(x):
    try:
        u, s, vh = np.linalg.svd(x, full_matrices=False)
    except np.linalg.LinAlgError:
        # (LAPACK's gesdd does not converge on a NaN: torch's error, naming the batch element)
        raise _svd_failure(x) from None
    return u.astype(x.dtype, copy=False), s.astype(x.dtype, copy=False), vh.astype(x.dtype, copy=False)


def _svd_failure(x) -> LinAlgError:
    """torch's error for an svd that did not converge on `x`."""
    where = ""
    if x.ndim > 2:
        matrices = x.reshape((-1,) + x.shape[-2:])
        bad = next((k for k, m in enumerate(matrices) if np.isnan(m).any()), None)
        if bad is None:
            bad = next((k for k, m in enumerate(matrices) if not np.isfinite(m).all()), 0)
        where = f"(Batch element {bad}): "
    return LinAlgError(f"linalg.svd: {where}The algorithm failed to converge because the input matrix contained "
                       "non-finite values.")


def _svd_vjp(e, x, y, g, a, n):
    u, s, vh = y
    gs = g[1]
    scaled = e.mul(u, e.reshape(gs, tuple(gs.shape[:-1]) + (1, gs.shape[-1])))
    return [e.matmul(scaled, vh)]


register(OpDef("svd", OPAQUE, _svd_infer, _svd_ref, _svd_vjp, nondiff_outputs=(0, 2), reference_only=True,
               extra={"node": "LinalgSvdBackward0", "reference_why": "LAPACK through np.linalg.svd"},
               doc="svd(x) -> (U, S, Vh): the reduced singular value decomposition (singular values differentiable)"))
