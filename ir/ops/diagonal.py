"""Diagonals, windows and rearrangements: torch's ops that record one node of their own.

Two strided views, each with its gradient op and its write-back op:
  `diagonal(x; offset, dim1, dim2)`: torch.diagonal, a view (DiagonalBackward0); its gradient
      `diagonal_backward(g; shape, offset, dim1, dim2)` (zeros with g on that diagonal), and
      `diagonal_put(x, v; ...)`: x with that diagonal replaced by v, what a write through the
      view does to its base (tracer.dispatch._scatter_through, the op's extra["write_back"]).
  `unfold(x; dim, size, step)`: Tensor.unfold, windows of `size` every `step` along `dim` as a
      new last dim, a view (UnfoldBackward0); its gradient `unfold_backward` (windows added
      back, overlaps summing) and `unfold_put`.
Both views are NumPy views of x's memory (np.diagonal made writable, or an ndarray over the
memory's owner with the window strides), so eagerly they share memory and version counter
with their base; in compiled programs they are view steps.

Copies, each one torch node: `diagonal_copy` (torch.diag of a matrix, DiagonalBackward0_copy),
`diag_embed` (DiagEmbedBackward0), `trace` (TraceBackward0), `roll` (RollBackward0), `rot90`
(Rot90Backward0) and `block_diag` (BlockDiagBackward0). All run by their NumPy reference in
compiled programs (reference_only: no kernel rule).
"""
from __future__ import annotations

import numpy as np

from ..iteration_order import preserved_copy, preserved_result_order
from ..types import ZERO_DIM, DIMMED, TensorType, float32, float64, int64, result_type
from .movement import memory_view
from .registry import MOVEMENT, OpDef, register


def _writable_like(view: np.ndarray, x: np.ndarray) -> np.ndarray:
    if x.flags.writeable and not view.flags.writeable:
        view.flags.writeable = True
    return view


def strided_view(x: np.ndarray, shape: tuple, strides: tuple) -> np.ndarray:
    """A view of x's memory with `shape` and byte `strides` from x's first element, whose chain
    of bases ends at the array owning the memory (so eager dispatch sees a view); where NumPy
    will not lend that memory as a buffer (a strided stand-in of a layout rule), as_strided's."""
    view = memory_view(x, shape, strides)
    if view is None:
        return np.lib.stride_tricks.as_strided(x, tuple(shape), tuple(strides), writeable=x.flags.writeable)
    return view


# --------------------------------------------------------------------- diagonal
def diagonal_shape(shape: tuple, offset: int, dim1: int, dim2: int) -> tuple:
    """torch.diagonal's result shape: the other dims, then the diagonal's length."""
    n1, n2 = shape[dim1], shape[dim2]
    length = max(min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2), 0)
    return tuple(s for k, s in enumerate(shape) if k not in (dim1, dim2)) + (length,)


def _check_dims(ndim: int, dim1: int, dim2: int) -> None:
    if dim1 == dim2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    if not (0 <= dim1 < ndim and 0 <= dim2 < ndim):
        raise ValueError(f"diagonal: dims {dim1}, {dim2} must be normalised for a {ndim}-d tensor")


def _diagonal_infer(types, attrs):
    t = types[0]
    _check_dims(t.ndim, attrs["dim1"], attrs["dim2"])
    return [TensorType(diagonal_shape(t.shape, attrs["offset"], attrs["dim1"], attrs["dim2"]), t.dtype)]


def _diagonal_ref(x, offset, dim1, dim2):
    return _writable_like(np.diagonal(x, offset, dim1, dim2), x)


def _diag_attrs(a) -> dict:
    return {"offset": a["offset"], "dim1": a["dim1"], "dim2": a["dim2"]}


def _diagonal_vjp(e, x, y, g, a, n):
    return [e.op("diagonal_backward", g[0], shape=x[0].shape, **_diag_attrs(a))]


register(OpDef("diagonal", MOVEMENT, _diagonal_infer, _diagonal_ref, _diagonal_vjp, view=True,
               doc="diagonal(x; offset, dim1, dim2): torch.diagonal, a view (the diagonal as the last dim)",
               extra={"write_back": "diagonal_put"}))
register(OpDef("diagonal_copy", MOVEMENT, _diagonal_infer, lambda x, **a: np.array(_diagonal_ref(x, **a)),
               _diagonal_vjp, reference_only=True,
               doc="diagonal_copy(x; offset, dim1, dim2): the diagonal as a copy (torch.diag of a matrix)",
               extra={"node": "DiagonalBackward0_copy", "reference_why": "a strided copy"}))


def _diagonal_backward_infer(types, attrs):
    g, shape = types[0], tuple(attrs["shape"])
    _check_dims(len(shape), attrs["dim1"], attrs["dim2"])
    if diagonal_shape(shape, attrs["offset"], attrs["dim1"], attrs["dim2"]) != g.shape:
        raise ValueError(f"diagonal_backward: a gradient of shape {g.shape} is no diagonal of {shape}")
    return [TensorType(shape, g.dtype)]


def _diagonal_backward_ref(g, shape, offset, dim1, dim2):
    out = np.zeros(shape, g.dtype)
    _writable_like(np.diagonal(out, offset, dim1, dim2), out)[...] = g
    return out


register(OpDef("diagonal_backward", MOVEMENT, _diagonal_backward_infer, _diagonal_backward_ref,
               lambda e, x, y, g, a, n: [e.op("diagonal", g[0], **_diag_attrs(a))], reference_only=True,
               doc="diagonal_backward(g; shape, offset, dim1, dim2): zeros of `shape` with g on that diagonal",
               extra={"reference_why": "a strided write"}))


def _diagonal_put_infer(types, attrs):
    x, v = types
    if diagonal_shape(x.shape, attrs["offset"], attrs["dim1"], attrs["dim2"]) != v.shape or x.dtype is not v.dtype:
        raise ValueError(f"diagonal_put: {v} is not the diagonal of {x}")
    return [x]


def _diagonal_put_ref(x, v, offset, dim1, dim2):
    out = preserved_copy(x)
    _writable_like(np.diagonal(out, offset, dim1, dim2), out)[...] = v
    return out


def _diagonal_put_vjp(e, x, y, g, a, n):
    gx = e.op("diagonal_put", g[0], e.zeros_like(x[1]), **_diag_attrs(a)) if n[0] else None
    return [gx, e.op("diagonal", g[0], **_diag_attrs(a)) if n[1] else None]


register(OpDef("diagonal_put", MOVEMENT, _diagonal_put_infer, _diagonal_put_ref, _diagonal_put_vjp,
               reference_only=True, doc="diagonal_put(x, v; offset, dim1, dim2): x with that diagonal v, "
               "functionally (a write through a diagonal view)", extra={"reference_why": "a strided write",
                                                                           "result_order": preserved_result_order}))


# --------------------------------------------------------------------- unfold
def unfold_shape(shape: tuple, dim: int, size: int, step: int) -> tuple:
    """Tensor.unfold's result shape (a 0-d tensor: (size,))."""
    if not shape:
        return (size,)
    out = list(shape)
    out[dim] = (shape[dim] - size) // step + 1
    return tuple(out) + (size,)


def _unfold_infer(types, attrs):
    t = types[0]
    return [TensorType(unfold_shape(t.shape, attrs["dim"], attrs["size"], attrs["step"]), t.dtype)]


def _unfold_ref(x, dim, size, step):
    if x.ndim == 0:
        return strided_view(x, (size,), (x.itemsize,))
    strides = list(x.strides)
    strides[dim] = x.strides[dim] * step
    return strided_view(x, unfold_shape(x.shape, dim, size, step), tuple(strides) + (x.strides[dim],))


def _unfold_attrs(a) -> dict:
    return {"dim": a["dim"], "size": a["size"], "step": a["step"]}


register(OpDef("unfold", MOVEMENT, _unfold_infer, _unfold_ref,
               lambda e, x, y, g, a, n: [e.op("unfold_backward", g[0], shape=x[0].shape, **_unfold_attrs(a))],
               view=True, doc="unfold(x; dim, size, step): Tensor.unfold, windows as a last dim (a view)",
               extra={"write_back": "unfold_put"}))


def _unfold_backward_ref(g, shape, dim, size, step):
    out = np.zeros(shape, g.dtype)
    ids = _unfold_ref(np.arange(out.size).reshape(shape), dim, size, step)
    if g.size:
        # the windows added back in their row-major order (overlapping windows sum)
        np.add.at(out.reshape(-1), ids.reshape(-1), g.reshape(-1))
    return out


register(OpDef("unfold_backward", MOVEMENT, lambda types, attrs: [TensorType(tuple(attrs["shape"]), types[0].dtype)],
               _unfold_backward_ref,
               lambda e, x, y, g, a, n: [e.op("unfold", g[0], **_unfold_attrs(a))], reference_only=True,
               doc="unfold_backward(g; shape, dim, size, step): the windows added back into zeros of `shape`",
               extra={"reference_why": "a scatter of windows"}))


def _unfold_put_ref(x, v, dim, size, step):
    out = preserved_copy(x)
    _unfold_ref(out, dim, size, step)[...] = v      # (an overlapping write raised before it got here)
    return out


def _unfold_put_vjp(e, x, y, g, a, n):
    gx = e.op("unfold_put", g[0], e.zeros_like(x[1]), **_unfold_attrs(a)) if n[0] else None
    return [gx, e.op("unfold", g[0], **_unfold_attrs(a)) if n[1] else None]


register(OpDef("unfold_put", MOVEMENT, lambda types, attrs: [types[0]], _unfold_put_ref, _unfold_put_vjp,
               reference_only=True, doc="unfold_put(x, v; dim, size, step): x with its windows v, functionally",
               extra={"reference_why": "a strided write", "result_order": preserved_result_order}))


# --------------------------------------------------------------------- diag_embed
def _diag_embed_infer(types, attrs):
    t, offset, dim1, dim2 = types[0], attrs["offset"], attrs["dim1"], attrs["dim2"]
    _check_dims(t.ndim + 1, dim1, dim2)
    n = t.shape[-1] + abs(offset)
    rest = iter(t.shape[:-1])
    return [TensorType(tuple(n if k in (dim1, dim2) else next(rest) for k in range(t.ndim + 1)), t.dtype)]


def _diag_embed_ref(x, offset, dim1, dim2):
    # (diagonal_backward's value: zeros of the embedded shape with x on that diagonal)
    shape = _diag_embed_infer([TensorType(x.shape, float32)], {"offset": offset, "dim1": dim1, "dim2": dim2})[0].shape
    return _diagonal_backward_ref(x, shape, offset, dim1, dim2)


register(OpDef("diag_embed", MOVEMENT, _diag_embed_infer, _diag_embed_ref,
               lambda e, x, y, g, a, n: [e.op("diagonal", g[0], **_diag_attrs(a))], reference_only=True,
               doc="diag_embed(x; offset, dim1, dim2): torch.diag_embed, x's last dim on a diagonal of zeros",
               extra={"reference_why": "a strided write"}))


# --------------------------------------------------------------------- trace
def _trace_infer(types, attrs):
    t = types[0]
    if t.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {t.ndim}")
    return [TensorType((), t.dtype if t.dtype.is_floating_point else int64)]


def _trace_ref(x):
    # torch's CPU kernel adds the diagonal in order in its accumulation type (double for float)
    if x.dtype.kind == "f":
        return np.asarray(np.trace(x, dtype=np.float64), x.dtype)
    return np.asarray(np.trace(x, dtype=np.int64))


def _trace_vjp(e, x, y, g, a, n):
    rows, cols = x[0].shape
    ones = e.expand(g[0], (min(rows, cols),))
    return [e.op("diagonal_backward", ones, shape=x[0].shape, offset=0, dim1=0, dim2=1)]


register(OpDef("trace", MOVEMENT, _trace_infer, _trace_ref, _trace_vjp, reference_only=True,
               doc="trace(x): the sum of a matrix's diagonal (torch.trace)",
               extra={"reference_why": "a sum of a strided diagonal"}))


# --------------------------------------------------------------------- roll
def _roll_ref(x, shifts, dims):
    # (a row-major copy: np.ascontiguousarray would make a 0-d result 1-d)
    if not dims:
        return np.array(np.roll(x.reshape(-1), shifts[0]).reshape(x.shape), order="C")
    return np.array(np.roll(x, shifts, dims), order="C")


register(OpDef("roll", MOVEMENT, lambda types, attrs: [types[0]], _roll_ref,
               lambda e, x, y, g, a, n: [e.op("roll", g[0], shifts=tuple(-s for s in a["shifts"]), dims=a["dims"])],
               reference_only=True,
               doc="roll(x; shifts, dims): torch.roll (no dims: the flattened elements rolled)",
               extra={"reference_why": "a rotation of elements (no kernel rule)"}))


# --------------------------------------------------------------------- rot90
def _rot90_infer(types, attrs):
    t, (d0, d1) = types[0], attrs["dims"]
    shape = list(t.shape)
    if attrs["k"] % 2:
        shape[d0], shape[d1] = shape[d1], shape[d0]
    return [TensorType(tuple(shape), t.dtype)]


def _flipped(x, axes):
    out = np.empty_like(x)          # (laid out as x, as torch's flip)
    np.copyto(out, np.flip(x, axes))
    return out


def _rot90_ref(x, k, dims):
    # torch: k=1 flip(d1).transpose(d0, d1); k=2 flip(d0, d1); k=3 flip(d0).transpose; k=0 clone
    d0, d1 = dims
    if k == 0:
        out = np.empty_like(x)
        np.copyto(out, x)
        return out
    if k == 2:
        return _flipped(x, (d0, d1))
    return np.swapaxes(_flipped(x, (d1,) if k == 1 else (d0,)), d0, d1)


register(OpDef("rot90", MOVEMENT, _rot90_infer, _rot90_ref,
               lambda e, x, y, g, a, n: [e.op("rot90", g[0], k=(-a["k"]) % 4, dims=a["dims"])],
               reference_only=True, doc="rot90(x; k, dims): torch.rot90 with k in 0..3 (a copy)",
               extra={"reference_why": "a rotation (no kernel rule)"}))


# --------------------------------------------------------------------- block_diag
def _block(shape: tuple) -> tuple:
    """A block_diag operand's block: a 0-d one is 1 x 1, a vector one row."""
    return (1, 1) if not shape else ((1, shape[0]) if len(shape) == 1 else tuple(shape))


def _block_diag_infer(types, attrs):
    for k, t in enumerate(types):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {k} has "
                               f"{t.ndim} dimensions")
    blocks = [_block(t.shape) for t in types]
    dtype = result_type([(t.dtype, DIMMED if t.ndim else ZERO_DIM) for t in types]) if types else float32
    return [TensorType((sum(r for r, _ in blocks), sum(c for _, c in blocks)), dtype)]


def _block_diag_ref(*xs):
    out_type = _block_diag_infer([TensorType(x.shape, float64) for x in xs], {})[0]
    dtype = _block_diag_dtype(xs) if xs else np.dtype(np.float32)
    out = np.zeros(out_type.shape, dtype)
    r = c = 0
    for x in xs:
        rows, cols = _block(x.shape)
        out[r:r + rows, c:c + cols] = x.reshape(rows, cols)
        r, c = r + rows, c + cols
    return out


def _block_diag_dtype(xs) -> np.dtype:
    from ..types import from_numpy_dtype
    return result_type([(from_numpy_dtype(x.dtype), DIMMED if x.ndim else ZERO_DIM) for x in xs]).np


def _block_diag_vjp(e, x, y, g, a, n):
    out, r, c = [], 0, 0
    for v, need in zip(x, n):
        rows, cols = _block(v.shape)
        if need:
            part = e.op("getitem", g[0], index=(("s", r, r + rows, 1), ("s", c, c + cols, 1)))
            out.append(e.cast(e.reshape(part, v.shape), v.dtype))
        else:
            out.append(None)
        r, c = r + rows, c + cols
    return out


register(OpDef("block_diag", MOVEMENT, _block_diag_infer, _block_diag_ref, _block_diag_vjp, reference_only=True,
               doc="block_diag(*xs): torch.block_diag, the operands as blocks of a zero matrix (promoted)",
               extra={"reference_why": "blocks written into zeros"}))
