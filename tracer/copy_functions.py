"""torch's `*_copy` functions (view_copy, t_copy, permute_copy, transpose_copy, expand_copy,
squeeze_copy, unsqueeze_copy, select_copy, slice_copy, diagonal_copy, detach_copy, alias_copy,
split_copy, split_with_sizes_copy, unbind_copy, unfold_copy), torch.adjoint, and the unsafe
split family (unsafe_chunk, unsafe_split, unsafe_split_with_sizes).

A `*_copy` function is its view function's result copied into new row-major memory (torch's
`op(self).clone(contiguous_format)`), one node of torch's name, `<View>Backward0_copy`, whose
next_functions are the input's: here the view's own node (the existing view op, with its
checks and texts) and a copy recorded under the `_copy` name (the `cast` op to the same dtype,
as clone), the view's node hidden from next_functions (node.hide_node), as an operand's
promotion is. A result never shares memory with its input. split_copy / split_with_sizes_copy /
unbind_copy give each part a copy node of its own, where torch's parts share one node (outputs
0, 1, ...); names, values and gradients are torch's. detach_copy of a tensor that requires grad
is torch's NotImplemented node (its backward raises "derivative for aten::detach_copy is not
implemented").

unsafe_chunk / unsafe_split / unsafe_split_with_sizes are split's parts under torch's node
names (UnsafeSplitBackward0, UnsafeSplitWithSizesBackward0), without split's refusal of an
in-place op on a part: torch's parts share the tensor's memory but are no views to autograd.
Here they stay views of the tensor (`_base` is the tensor, a write to a part gives the tensor a
CopySlices history), where torch's are unrelated to it.
"""
from __future__ import annotations

import operator

import numpy as np

from fusegrad.ir.ops import normalize_dim

from . import functional as F
from . import splitting
from .dispatch import apply_op
from .functional import as_tensor, int_argument
from .node import HIDDEN_NODES, display_edges
from .parser_errors import ArgParser, function_texts
from .shape_functions import diagonal, unfold
from .tensor import Tensor
from fusegrad.ir import DType

_OUT = "*, Tensor out = None"
_PARTS_OUT = "*, tuple of Tensors out = None"


def _copied(t: Tensor, view: Tensor, name: str) -> Tensor:
    """`view` (a view of `t` just made) copied into row-major memory under node name `name`."""
    if view is not t:
        node = view._grad_fn
        edge = t._grad_fn
        while node is not None and node is not edge and getattr(node, "op", None) is not None:
            HIDDEN_NODES.add(node)
            node = node.edges[0][0] if node.edges and node.edges[0] else None
    return _row_major(F._laid_out_row_major(apply_op("cast", [view], {"dtype": view._dtype}, name)))


def _row_major(out: Tensor) -> Tensor:
    """`out` (a result just made) with torch's contiguous strides, a size-1 dim's included
    (NumPy calls (1, 4) with strides (1, 1) C-ordered; torch's contiguous strides are (4, 1))."""
    data = out._data
    if data is not None and data.ndim > 1:
        canonical = np.empty(data.shape, data.dtype)
        if canonical.strides != data.strides:
            np.copyto(canonical, data)
            out._data = canonical
    return out


def _public(fn, *printed: str):
    """`fn` with torch's parser texts (its printed overloads) for a call torch's parser refuses."""
    return function_texts(fn, ArgParser(fn.__name__, *printed))


def view_copy(input, size) -> Tensor:
    """torch.view_copy(input, size): input.view(size) as a new tensor (ViewBackward0_copy); an input
    whose memory cannot be viewed so is copied as reshape does."""
    t = as_tensor(input, "view_copy")
    if isinstance(size, DType):
        # torch's view_copy.dtype overload: view(dtype) (with its checks) cloned into row-major
        # memory; not differentiable, so no history, as torch's
        return _row_major(Tensor._wrap(np.array(F.view(t, size)._data, order="C"), size))
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"view_copy(): argument 'size' must be tuple of ints, not {type(size).__name__}")
    return _copied(t, F.reshape(t, tuple(size)), "ViewBackward0_copy")


def t_copy(input) -> Tensor:
    """torch.t_copy: input.t() as a new tensor (TBackward0_copy)."""
    t = as_tensor(input, "t_copy")
    return _copied(t, F.t(t), "TBackward0_copy")


def permute_copy(input, dims) -> Tensor:
    """torch.permute_copy: input.permute(dims) as a new tensor (PermuteBackward0_copy)."""
    t = as_tensor(input, "permute_copy")
    return _copied(t, F.permute(t, dims=tuple(dims)), "PermuteBackward0_copy")


def transpose_copy(input, dim0, dim1) -> Tensor:
    """torch.transpose_copy: input.transpose(dim0, dim1) as a new tensor (TransposeBackward0_copy)."""
    t = as_tensor(input, "transpose_copy")
    return _copied(t, F.transpose(t, dim0, dim1), "TransposeBackward0_copy")


def expand_copy(input, size, *, implicit=False) -> Tensor:
    """torch.expand_copy: input.expand(size) as a new tensor, each element its own (ExpandBackward0_copy)."""
    t = as_tensor(input, "expand_copy")
    return _copied(t, F.expand(t, size=tuple(size)), "ExpandBackward0_copy")


def squeeze_copy(input, dim=F._MISSING) -> Tensor:
    """torch.squeeze_copy: input.squeeze() / squeeze(dim) as a new tensor (SqueezeBackward0_copy,
    SqueezeBackward1_copy for one dim, SqueezeBackward2_copy for a tuple of dims)."""
    t = as_tensor(input, "squeeze_copy")
    view = F.squeeze(t) if dim is F._MISSING else F.squeeze(t, dim)
    kind = 0 if dim is F._MISSING else (2 if isinstance(dim, (tuple, list)) else 1)
    return _copied(t, view, f"SqueezeBackward{kind}_copy")


def unsqueeze_copy(input, dim) -> Tensor:
    """torch.unsqueeze_copy: input.unsqueeze(dim) as a new tensor (UnsqueezeBackward0_copy)."""
    t = as_tensor(input, "unsqueeze_copy")
    return _copied(t, F.unsqueeze(t, dim), "UnsqueezeBackward0_copy")


def select_copy(input, dim, index) -> Tensor:
    """torch.select_copy: input.select(dim, index) as a new tensor (SelectBackward0_copy)."""
    t = as_tensor(input, "select_copy")
    return _copied(t, splitting.select(t, dim, index), "SelectBackward0_copy")


def slice_copy(input, dim=0, start=None, end=None, step=1) -> Tensor:
    """torch.slice_copy: input[..., start:end:step] along `dim` as a new tensor (SliceBackward0_copy)."""
    t = as_tensor(input, "slice_copy")
    dim, step = int_argument(dim, "slice_copy", "dim", 2), int_argument(step, "slice_copy", "step", 5)
    if t.dim() == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = normalize_dim(dim, t.dim())
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    key = (slice(None),) * d + (slice(start, end, step),)
    return _copied(t, t[key], "SliceBackward0_copy")


def diagonal_copy(input, offset=0, dim1=0, dim2=1) -> Tensor:
    """torch.diagonal_copy: input.diagonal(offset, dim1, dim2) as a new tensor (DiagonalBackward0_copy)."""
    t = as_tensor(input, "diagonal_copy")
    return _copied(t, diagonal(t, offset, dim1, dim2), "DiagonalBackward0_copy")


def alias_copy(input) -> Tensor:
    """torch.alias_copy: a new tensor of input's values (AliasBackward0_copy)."""
    t = as_tensor(input, "alias_copy")
    return _copied(t, t, "AliasBackward0_copy")


def detach_copy(input) -> Tensor:
    """torch.detach_copy: a new tensor of input's values. torch records a NotImplemented node for
    an input that requires grad (its result requires grad; its backward raises)."""
    t = as_tensor(input, "detach_copy")
    if not t.requires_grad:
        return _row_major(F._laid_out_row_major(apply_op("cast", [t], {"dtype": t._dtype}, "CloneBackward0")))
    out = _row_major(F._laid_out_row_major(apply_op("index_put", [t, F.detach(t)],
                                         {"index": (), "no_derivative": "detach_copy"}, "NotImplemented")))
    if out._grad_fn is not None:
        display_edges(out._grad_fn, out._grad_fn.edges[:1])    # (torch's node lists the input alone)
    return out


def _parts_copied(t: Tensor, parts, name: str) -> tuple:
    return tuple(_copied(t, part, name) for part in parts)


def split_copy(input, split_size, dim=0) -> tuple:
    """torch.split_copy: the parts of split(input, split_size, dim), each a new tensor
    (SplitBackward0_copy)."""
    t = as_tensor(input, "split_copy")
    size = int_argument(split_size, "split_copy", "split_size", 2)
    return _parts_copied(t, splitting.split(t, size, dim), "SplitBackward0_copy")


def split_with_sizes_copy(input, split_sizes, dim=0) -> tuple:
    """torch.split_with_sizes_copy: the parts of split_with_sizes, each a new tensor
    (SplitWithSizesBackward0_copy)."""
    t = as_tensor(input, "split_with_sizes_copy")
    return _parts_copied(t, splitting.split_with_sizes(t, split_sizes, dim), "SplitWithSizesBackward0_copy")


def unbind_copy(input, dim=0) -> tuple:
    """torch.unbind_copy: the slices of unbind(input, dim), each a new tensor (UnbindBackward0_copy)."""
    t = as_tensor(input, "unbind_copy")
    return _parts_copied(t, splitting.unbind(t, dim), "UnbindBackward0_copy")


def unfold_copy(input, dimension, size, step) -> Tensor:
    """torch.unfold_copy: input.unfold(dimension, size, step) as a new tensor (UnfoldBackward0_copy)."""
    t = as_tensor(input, "unfold_copy")
    return _copied(t, unfold(t, dimension, size, step), "UnfoldBackward0_copy")


def adjoint(input) -> Tensor:
    """torch.adjoint / Tensor.adjoint: the last two dims transposed (a view; TransposeBackward0;
    the conjugate is the tensor itself for real dtypes)."""
    t = as_tensor(input, "adjoint")
    if t.dim() == 0:
        # torch's TORCH_WARN_ONCE, and the tensor itself (its conj() of a real tensor), not an error
        F.warn_once("adjoint() is deprecated on 0-D tensors. Consider using x.conj(). (Triggered internally at "
                    "/__w/pytorch/pytorch/aten/src/ATen/native/TensorShape.cpp:4390.)")
        return t
    if t.dim() < 2:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of matrices. Got 1-D tensor.")
    return F.transpose(t, -2, -1)


def _unsafe_parts(t: Tensor, dim: int, sizes: list, name: str) -> tuple:
    if not sizes:
        return ()
    out = apply_op("split", [t], {"axis": dim, "sizes": tuple(sizes), "squeeze": False}, name)
    return tuple([out] if isinstance(out, Tensor) else out)


def _even_sizes(t: Tensor, size: int, dim, fn: str) -> tuple:
    if t.dim() == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    # torch's get_num_splits checks split_size before it wraps dim
    if size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={size}")
    d = normalize_dim(int_argument(dim, fn, "dim", 3), t.dim())
    length = t.shape[d]
    if size == 0 and length != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {length}")
    count = max(-(-length // size), 1) if size else 1
    return d, [min(length, (k + 1) * size) - k * size for k in range(count)]


def unsafe_split(input, split_size, dim=0) -> tuple:
    """torch.unsafe_split: split's parts (UnsafeSplitBackward0), which torch lets be written in place."""
    t = as_tensor(input, "unsafe_split")
    size = int_argument(split_size, "unsafe_split", "split_size", 2)
    d, sizes = _even_sizes(t, size, dim, "unsafe_split")
    return _unsafe_parts(t, d, sizes, "UnsafeSplitBackward0")


def unsafe_chunk(input, chunks, dim=0) -> tuple:
    """torch.unsafe_chunk: chunk's parts (UnsafeSplitBackward0), which torch lets be written in place."""
    t, d, size, chunks = splitting.chunk_layout(input, chunks, dim, "unsafe_chunk")
    if size == 0:
        return _unsafe_parts(t, d, [0] * chunks, "UnsafeSplitWithSizesBackward0")
    d, sizes = _even_sizes(t, size, d, "unsafe_chunk")
    return _unsafe_parts(t, d, sizes, "UnsafeSplitBackward0")


def unsafe_split_with_sizes(input, split_sizes, dim=0) -> tuple:
    """torch.unsafe_split_with_sizes: split_with_sizes's parts (UnsafeSplitWithSizesBackward0)."""
    t = as_tensor(input, "unsafe_split_with_sizes")
    if isinstance(split_sizes, Tensor) or not isinstance(split_sizes, (list, tuple)):
        raise TypeError("unsafe_split_with_sizes(): argument 'split_sizes' (position 2) must be tuple of ints, "
                        f"not {type(split_sizes).__name__}")
    sizes = [operator.index(s) for s in split_sizes]
    d = splitting.split_sizes_dim(t, sizes, dim, "unsafe_split_with_sizes")
    return _unsafe_parts(t, d, sizes, "UnsafeSplitWithSizesBackward0")


def _is_pinned(self, device=None) -> bool:
    """Tensor.is_pinned(): False (fusegrad's memory is never pinned host memory, as a CPU tensor's
    in a CPU-only torch)."""
    return False


_OPTION_NAMES = {"float32": "float", "float64": "double", "int64": "long int", "bool": "bool"}


def _options(dtype) -> str:
    return (f"TensorOptions(dtype={_OPTION_NAMES[dtype.name]}, device=cpu, layout=Strided, requires_grad=false "
            "(default), pinned_memory=false (default), memory_format=(nullopt))")


def _legacy_new(self, *args, device=None) -> Tensor:
    """Tensor.new (torch's legacy constructor, in self's dtype): `new()` is empty, `new(2, 3)` or
    `new(Size)` a tensor of that shape (zeros here; torch leaves it uninitialised), `new(t)` a
    tensor over t's memory (t of self's dtype), `new(data)` a copy of a sequence or array."""

    from .creation import legacy_array
    from .device import check_device
    check_device(device)
    dtype = self._dtype
    return Tensor._wrap(legacy_array(args, dtype, "new", lambda t: TypeError(
        f"expected {_options(dtype)} (got {_options(t._dtype)})")))


# Tensor methods and torch's device flags of a CPU tensor (properties, all False; is_pinned
# a method), installed on Tensor by install_methods()
METHODS = {"adjoint": adjoint, "unsafe_chunk": unsafe_chunk, "unsafe_split": unsafe_split,
           "unsafe_split_with_sizes": unsafe_split_with_sizes, "is_pinned": _is_pinned, "new": _legacy_new}
FLAGS = ("is_mps", "is_xpu", "is_ipu", "is_mtia", "is_maia", "is_vulkan", "is_xla", "is_nested")


def install_methods() -> None:
    """Bind METHODS and the FLAGS (read-only properties, False) on Tensor where it lacks them."""
    from .tensor import read_only
    for name, fn in METHODS.items():
        if name not in Tensor.__dict__:
            setattr(Tensor, name, fn)
    for name in FLAGS:
        if name not in Tensor.__dict__:
            setattr(Tensor, name, read_only(property(lambda self: False, doc=f"torch's Tensor.{name}: False "
                                                     "(a CPU tensor)"), name))

# the public fg.* forms, with torch's parser texts
PUBLIC = {
    "view_copy": _public(view_copy, f"(Tensor input, torch.dtype dtype, {_OUT})",
                         f"(Tensor input, tuple of ints size, {_OUT})"),
    "t_copy": _public(t_copy, f"(Tensor input, {_OUT})"),
    "permute_copy": _public(permute_copy, f"(Tensor input, tuple of ints dims, {_OUT})"),
    "transpose_copy": _public(transpose_copy, f"(Tensor input, int dim0, int dim1, {_OUT})"),
    "expand_copy": _public(expand_copy, "(Tensor input, tuple of ints size, *, bool implicit = False, "
                                        "Tensor out = None)"),
    "squeeze_copy": _public(squeeze_copy, f"(Tensor input, {_OUT})", f"(Tensor input, int dim, {_OUT})",
                            f"(Tensor input, tuple of ints dim, {_OUT})"),
    "unsqueeze_copy": _public(unsqueeze_copy, f"(Tensor input, int dim, {_OUT})"),
    "select_copy": _public(select_copy, f"(Tensor input, int dim, int index, {_OUT})"),
    "slice_copy": _public(slice_copy, "(Tensor input, int dim = 0, int? start = None, int? end = None, "
                                      f"int step = 1, {_OUT})"),
    "diagonal_copy": _public(diagonal_copy, f"(Tensor input, int offset = 0, int dim1 = 0, int dim2 = 1, {_OUT})"),
    "detach_copy": _public(detach_copy, f"(Tensor input, {_OUT})"),
    "alias_copy": _public(alias_copy, f"(Tensor input, {_OUT})"),
    "split_copy": _public(split_copy, f"(Tensor input, int split_size, int dim = 0, {_PARTS_OUT})"),
    "split_with_sizes_copy": _public(split_with_sizes_copy, "(Tensor input, tuple of ints split_sizes, "
                                                            f"int dim = 0, {_PARTS_OUT})"),
    "unbind_copy": _public(unbind_copy, f"(Tensor input, int dim = 0, {_PARTS_OUT})"),
    "unfold_copy": _public(unfold_copy, f"(Tensor input, int dimension, int size, int step, {_OUT})"),
    "adjoint": _public(adjoint, "(Tensor input)"),
    "unsafe_chunk": _public(unsafe_chunk, "(Tensor input, int chunks, int dim = 0)"),
    "unsafe_split": _public(unsafe_split, "(Tensor input, int split_size, int dim = 0)"),
    "unsafe_split_with_sizes": _public(unsafe_split_with_sizes, "(Tensor input, tuple of ints split_sizes, "
                                                                "int dim = 0)"),
}
