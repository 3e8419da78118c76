"""torch's split, chunk, unbind, narrow and select: views of a tensor's parts along one dim.

split, chunk and unbind (and iterating a tensor, Tensor.__iter__) are the `split` op: one node
for all the parts, as torch's (SplitBackward0 / SplitWithSizesBackward0 / UnbindBackward0, the
parts its outputs 0, 1, ...: `a.grad_fn is b.grad_fn`), whose backward runs once, stacking the
parts' gradients. Each part is a view of the tensor, derived from it by a basic index. narrow and
select are the `getitem` op (a basic-index view, as `t[a:b]` and `t[i]`), recorded under torch's
node names SliceBackward0 / SelectBackward0.

torch refuses an in-place op on a part of split, chunk or unbind (or on a view of one) made with
grad mode on that requires grad: the parts carry `_multi_output` (their index), and
inplace.check_inplace raises torch's error for them (multi_output_view_error).
"""
from __future__ import annotations

import operator

from fusegrad.ir.ops import normalize_dim

from . import trace_state
from .dispatch import apply_op
from .functional import _is_index, as_tensor, int_argument
from .grad_mode import is_grad_enabled
from .node import short_name
from .parser_errors import ArgParser, type_name
from .tensor import Tensor


def _parts(t: Tensor, dim: int, sizes: list, name: str, squeeze: bool = False) -> tuple:
    """The parts of `t` of `sizes` elements along `dim` (`squeeze`: each without that dim,
    sizes all 1), one `split` op recorded under node name `name`."""
    if not sizes:
        return ()           # (unbind along an empty dim)
    out = apply_op("split", [t], {"axis": dim, "sizes": tuple(sizes), "squeeze": squeeze}, name)
    return _as_parts([out] if isinstance(out, Tensor) else list(out), name)


def _part(t: Tensor, dim: int, start: int, stop: int, name: str) -> Tensor:
    """t[..., start:stop] along `dim` (a view) under node name `name`."""
    index = tuple(("s", 0, s, 1) for s in t.shape[:dim]) + (("s", start, stop, 1),)
    return apply_op("getitem", [t], {"index": index}, name)


def _pick(t: Tensor, dim: int, i: int, name: str) -> Tensor:
    """t[..., i] along `dim` (a view without that dim) under node name `name`."""
    index = tuple(("s", 0, s, 1) for s in t.shape[:dim]) + (("i", i),)
    return apply_op("getitem", [t], {"index": index}, name)


def _as_parts(parts: list, name: str) -> tuple:
    """The views of a function returning several (see the module docstring); `name`: their
    node's, which torch's errors about them give (a compiled call's outputs have its node)."""
    if is_grad_enabled():
        for k, part in enumerate(parts):
            part._multi_output = k
            part.__dict__["_multi_output_node"] = name[:name.rindex("Backward")]
            if not part._requires_grad:
                # (of a tensor that needs no grad: torch's errors about it, once its base gains a
                # history in place, say it "was created in no_grad mode")
                part.__dict__["_multi_output_no_grad"] = True
            if part._sym is not None:
                # (made in a compiled call: a saved part whose counter moved raises this)
                trace_state.current().note_part(part, str(multi_output_rebased_error(part, None)))
    return tuple(parts)


def split(tensor, split_size_or_sections, dim=0) -> tuple:
    """torch.split: parts of `split_size_or_sections` elements along `dim` (the last one
    shorter), or of the sizes in a list of them (which must add up to the dim's size)."""
    t = as_tensor(tensor, "split")
    if _is_index(split_size_or_sections) and not isinstance(split_size_or_sections, bool):
        return _split_evenly(t, operator.index(split_size_or_sections), dim, "SplitBackward0")
    return _split_with_sizes(t, split_size_or_sections, dim)


# torch's split (a Python method) calls _VF.split, whose overloads word a bad dim
_SPLIT = ArgParser("split", "(Tensor input, int split_size, int dim = 0)",
                   "(Tensor input, tuple of ints split_size, int dim = 0)")


def _split_evenly(t: Tensor, size: int, dim, name: str) -> tuple:
    if not _is_index(dim) or isinstance(dim, bool):
        raise _SPLIT.refusal((t, size, dim), {})
    if t.dim() == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    dim = normalize_dim(operator.index(dim), t.dim())
    length = t.shape[dim]
    if size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={size}")
    if size == 0 and length != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {length}")
    count = max(-(-length // size), 1) if size else 1
    return _parts(t, dim, [min(length, (k + 1) * size) - k * size for k in range(count)], name)


def split_with_sizes(input, split_sizes, dim=0) -> tuple:
    """torch.split_with_sizes: parts of the sizes in `split_sizes` along `dim` (which must add
    up to the dim's size), as split with a list."""
    return _split_with_sizes(as_tensor(input, "split_with_sizes"), split_sizes, dim)


def _split_with_sizes(t: Tensor, sizes, dim) -> tuple:
    if isinstance(sizes, Tensor) or not isinstance(sizes, (list, tuple)) or not all(
            _is_index(s) and not isinstance(s, bool) for s in sizes):
        got = type_name(sizes)
        raise TypeError(f"split_with_sizes(): argument 'split_sizes' (position 2) must be tuple of ints, not {got}")
    sizes = [operator.index(s) for s in sizes]
    return _parts(t, split_sizes_dim(t, sizes, dim), sizes, "SplitWithSizesBackward0")


def split_sizes_dim(t: Tensor, sizes: list, dim, fn: str = "split_with_sizes") -> int:
    """torch's checks of split_with_sizes (and unsafe_split_with_sizes, named `fn` in its
    parser's texts) after the sizes' types, in its order; returns the dim, wrapped."""
    if t.dim() == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    given = int_argument(dim, fn, "dim", 3)      # (its error names the dim as given)
    dim = normalize_dim(given, t.dim())
    length = t.shape[dim]
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                           f"split_sizes={sizes}")
    if sum(sizes) != length:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {length} (input tensor's size "
                           f"at dimension {given}), but got split_sizes={sizes}")
    return dim


def chunk_layout(input, chunks, dim, fn: str = "chunk"):
    """torch's checks of chunk (and unsafe_chunk, named `fn` in its parser's texts), in its
    order: (tensor, dim, the parts' length, chunks); a length of 0 means `chunks` empty parts."""
    t = as_tensor(input, fn)
    chunks = int_argument(chunks, fn, "chunks", 2)
    if t.dim() == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = normalize_dim(int_argument(dim, fn, "dim", 3), t.dim())      # (dim 0 for a 0-d tensor)
    return t, d, -(-t.shape[d] // chunks), chunks


def chunk(input, chunks, dim=0) -> tuple:
    """torch.chunk: at most `chunks` parts of equal length along `dim` (the last one shorter)."""
    t, d, size, chunks = chunk_layout(input, chunks, dim)
    if size == 0:                       # (an empty dim) torch: `chunks` empty parts
        return _parts(t, d, [0] * chunks, "SplitWithSizesBackward0")
    return _split_evenly(t, size, d, "SplitBackward0")


def unbind(input, dim=0) -> tuple:
    """torch.unbind: the slices along `dim`, each without that dim."""
    t = as_tensor(input, "unbind")
    d = normalize_dim(int_argument(dim, "unbind", "dim", 2), t.dim())
    if t.dim() == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    return _parts(t, d, [1] * t.shape[d], "UnbindBackward0", squeeze=True)


def narrow(input, dim, start, length) -> Tensor:
    """torch.narrow: `length` elements along `dim` from `start` (negative counts from the end)."""
    t = as_tensor(input, "narrow")
    dim = int_argument(dim, "narrow", "dim", 2)
    start = int_argument(start.item() if isinstance(start, Tensor) and start.dim() == 0 else start, "narrow", "start", 3)
    length = int_argument(length, "narrow", "length", 4)
    if t.dim() == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    d = normalize_dim(dim, t.dim())
    size = t.shape[d]
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return _part(t, d, start, start + length, "SliceBackward0")


def select(input, dim, index) -> Tensor:
    """torch.select: the slice at `index` along `dim`, without that dim (a view)."""
    t = as_tensor(input, "select")
    dim, index = int_argument(dim, "select", "dim", 2), int_argument(index, "select", "index", 3)
    if t.dim() == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = normalize_dim(dim, t.dim())
    size = t.shape[d]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(t.shape)} at dimension {d}")
    return _pick(t, d, index % size, "SelectBackward0")


_MULTI_OUTPUT_TAIL = (" This view is the output of a function that returns multiple views. Such functions do not "
                      "allow the output views to be modified inplace. You should replace the inplace operation by an "
                      "out-of-place one.")


def _short_name(t: Tensor, node) -> str:
    made_by = t.__dict__.get("_multi_output_node")
    if made_by is not None:
        return made_by
    return short_name(type(node).__name__ if node is not None else "SplitBackward0")


def multi_output_view_error(t: Tensor) -> RuntimeError:
    """torch's error for an in-place op on a part of split/chunk/unbind (or a view of one)."""
    # (eagerly the node as recorded: reading t.grad_fn after its base was written raises the
    # rebased error; a traced tensor's node is the trace's)
    # (a part is named by the function that made it, without asking for its node: a traced
    # part rebased since would raise that error first; a rebased view of one by the node noted)
    if "_multi_output_node" in t.__dict__:
        node = None
    elif t._sym is None:
        node = t._grad_fn
    else:
        node = t.__dict__.get("_view_node") if t._rebased else t.grad_fn
    return RuntimeError(f"Output {t._multi_output} of {_short_name(t, node)} is a view and is being modified "
                        "inplace." + _MULTI_OUTPUT_TAIL)


def multi_output_no_grad_error(t: Tensor, what: str) -> RuntimeError | None:
    """torch's error for a part of split/chunk/unbind of a tensor that needed no grad (or a view
    of one) once its base has a history (`what`: "is being modified inplace", or that its base
    was); None for another part."""
    if not t.__dict__.get("_multi_output_no_grad"):
        return None
    return RuntimeError(f"A view was created in no_grad mode and {what} with grad mode enabled." + _MULTI_OUTPUT_TAIL)


def multi_output_rebased_error(t: Tensor, node, node_name: str | None = None) -> RuntimeError:
    """torch's error for a part of split/chunk/unbind (or a view of one; `node`: the one that
    made it, or its class name `node_name`) used with grad after its base was written in place:
    torch will not regenerate its history."""
    no_grad = multi_output_no_grad_error(t, "its base or another view of its base has been modified inplace")
    if no_grad is not None:
        return no_grad
    made_by = short_name(node_name) if node_name is not None and "_multi_output_node" not in t.__dict__ \
        else _short_name(t, node)
    return RuntimeError(f"Output {t._multi_output} of {made_by} is a view and its base or another view of "
                        "its base has been modified inplace." + _MULTI_OUTPUT_TAIL)


def _split_method(self, split_size, dim=0) -> tuple:
    return split(self, split_size, dim)


# (torch's Tensor.split is Python: a call of the wrong arity gets CPython's text, which names it)
_split_method.__name__, _split_method.__qualname__, _split_method.__doc__ = "split", "Tensor.split", split.__doc__

# Tensor methods (tracer/methods.py binds them)
METHODS = {"split": _split_method, "split_with_sizes": split_with_sizes, "chunk": chunk, "unbind": unbind, "narrow": narrow, "select": select}
