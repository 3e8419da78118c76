"""torch.einsum: Einstein summation as a composite of fusegrad's own ops (diagonal, sum, permute,
expand, reshape and bmm), so it differentiates (again) and traces into fg.compile like any of
them. Parsing and checks follow torch's einsum (aten/src/ATen/native/Linear.cpp), with its texts.

The operands are contracted left to right, two at a time, each pair as one bmm (torch's
sumproduct_pair), after summing out the labels only one operand has and the output lacks.
torch's own graph differs in detail (its views and permutes; with three or more operands it
contracts in opt_einsum's order): values agree to rounding, gradients too, dtypes and errors
exactly. A repeated label is a diagonal view, as torch's.
"""
from __future__ import annotations

import importlib.util

from fusegrad.ir.ops import OPS
from fusegrad.ir.types import TORCH_SCALAR_NAMES

from . import functional as F
from .dispatch import apply_op
from .parser_errors import type_name
from .products import bmm
from .tensor import Tensor

_ELLIPSIS = "."


def _subscript_of(n) -> str:
    """torch's sublist format: Ellipsis, or an int in [0, 52) naming A-Z then a-z."""
    if n is Ellipsis:
        return "..."
    if 0 <= n < 26:
        return chr(ord("A") + n)
    if 26 <= n < 52:
        return chr(ord("a") + n - 26)
    raise ValueError("einsum(): subscript in subscript list is not within the valid range [0, 52)")


def einsum(*args) -> Tensor:
    """torch.einsum(equation, *operands), also einsum(equation, [operands]) and torch's sublist
    format einsum(op0, sublist0, op1, sublist1, ..., [sublist_out]).

    Labels are a-zA-Z; '...' covers the dims no label names (broadcast across operands, right
    aligned); a label repeated on one operand takes its diagonal; without '->' the output is the
    ellipsis dims, then the labels seen once, in ASCII order. Dims of size 1 broadcast. Labels
    missing from the output are summed. Integer operands give integer results; bool operands of a
    contraction raise torch's "bmm" error. Contractions run left to right (torch picks an
    opt_einsum order for three or more operands: the values agree to rounding)."""
    if len(args) < 2:
        raise ValueError("einsum(): must specify the equation string and at least one operand, or at least one "
                         "operand and its subscripts list")
    if isinstance(args[0], Tensor):
        equation = ",".join("".join(_subscript_of(s) for s in sub) for sub in args[1::2])
        if len(args) % 2 == 1:
            equation += "->" + "".join(_subscript_of(s) for s in args[-1])
            operands = args[:-1:2]
        else:
            operands = args[::2]
    else:
        equation, operands = args[0], args[1:]
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' (position 1) must be str, not {type_name(equation)}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    operands = list(operands)
    for k, x in enumerate(operands):
        if not isinstance(x, Tensor):
            raise TypeError(f"expected Tensor as element {k} in argument 1, but got {type_name(x)}")
    if len(operands) > 2 and importlib.util.find_spec("opt_einsum") is not None:
        # torch asks opt_einsum (where it is installed: torch.backends.opt_einsum.is_available())
        # for a contraction path first, and opt_einsum counts the subscripts against the operands
        given = len(equation.split("->")[0].split(","))
        if given != len(operands):
            raise ValueError(f"Number of einsum subscripts, {given}, must be equal to the number of operands, "
                             f"{len(operands)}.")
    return _einsum(equation, operands)


def _parse_operands(lhs: str, num_ops: int) -> list:
    """Each operand's labels (letters, and _ELLIPSIS for '...'), with torch's checks."""
    labels = [[] for _ in range(num_ops)]
    op, i, found_ellipsis = 0, 0, False
    while i < len(lhs):
        c = lhs[i]
        if c == ".":
            if found_ellipsis:
                raise RuntimeError(f"einsum(): found '.' for operand {op} for which an ellipsis was already found")
            if not (i + 2 < len(lhs) and lhs[i + 1] == "." and lhs[i + 2] == "."):
                raise RuntimeError(f"einsum(): found '.' for operand {op} that is not part of any ellipsis")
            labels[op].append(_ELLIPSIS)
            found_ellipsis = True
            i += 2
        elif c == ",":
            op += 1
            found_ellipsis = False
            if op >= num_ops:
                raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
        elif c != " ":
            if not c.isascii() or not c.isalpha():
                raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation string, "
                                   "subscripts must be in [a-zA-Z]")
            labels[op].append(c)
        i += 1
    if op != num_ops - 1:
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    return labels


def _parse_output(rhs: str, offset: int, counts: dict, ell_dims: int) -> list:
    out, i, found_ellipsis = [], 0, False
    while i < len(rhs):
        c = rhs[i]
        if c == ".":
            if found_ellipsis:
                raise RuntimeError("einsum(): found '.' for output but an ellipsis (...) was already found")
            if not (i + 2 < len(rhs) and rhs[i + 1] == "." and rhs[i + 2] == "."):
                raise RuntimeError("einsum(): found '.' for output that is not part of any ellipsis (...)")
            out += [(_ELLIPSIS, k) for k in range(ell_dims)]
            found_ellipsis = True
            i += 2
        elif c != " ":
            if not c.isascii() or not c.isalpha():
                raise RuntimeError(f"einsum(): invalid subscript given at index {offset + i} in the equation string, "
                                   "subscripts must be in [a-zA-Z]")
            if c in out or not counts.get(c):
                raise RuntimeError(f"einsum(): output subscript {c}"
                                   + (" appears more than once in the output" if c in out else
                                      " does not appear in the equation for any input operand"))
            out.append(c)
        i += 1
    return out


def _einsum(equation: str, operands: list) -> Tensor:
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    arrow = equation.find("->")
    lhs = equation if arrow < 0 else equation[:arrow]
    op_labels = _parse_operands(lhs, len(operands))
    counts: dict = {}
    ell_dims = 0
    for k, (t, labels) in enumerate(zip(operands, op_labels)):
        named = [c for c in labels if c != _ELLIPSIS]
        for c in named:
            counts[c] = counts.get(c, 0) + 1
        if _ELLIPSIS in labels:
            ell_dims = max(ell_dims, t.dim() - len(named))
            if len(named) > t.dim():
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(named)}) is more than "
                                   f"the number of dimensions ({t.dim()}) for operand {k}")
        elif len(named) != t.dim():
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(named)}) does not match the "
                               f"number of dimensions ({t.dim()}) for operand {k} and no ellipsis was given")
    if arrow < 0:
        output = [(_ELLIPSIS, k) for k in range(ell_dims)] + sorted(c for c, n in counts.items() if n == 1)
    else:
        output = _parse_output(equation[arrow + 2:], arrow + 2, counts, ell_dims)

    # Each operand with one label per dim (an ellipsis dim is (_ELLIPSIS, k), right aligned),
    # its repeated labels taken as diagonals; sizes broadcast across operands.
    seen: dict = {}
    terms = []
    for k, (t, labels) in enumerate(zip(operands, op_labels)):
        dims = []
        for c in labels:
            if c == _ELLIPSIS:
                covered = t.dim() - (len(labels) - 1)
                dims += [(_ELLIPSIS, ell_dims - covered + j) for j in range(covered)]
            else:
                dims.append(c)
        first: dict = {}
        for d, label in enumerate(dims):
            size = t.shape[d]
            if label in first:
                if size != t.shape[first[label]]:
                    raise RuntimeError(f"einsum(): subscript {label} is repeated for operand {k} but the sizes don't "
                                       f"match, {size} != {t.shape[first[label]]}")
                continue
            first[label] = d
            previous = seen.get(label, 1)
            if size != 1 and previous != 1 and size != previous:
                if isinstance(label, tuple):
                    raise RuntimeError(f"einsum(): dimension {label[1] - (ell_dims - covered)} covered by ellipsis "
                                       f"in operand {k}has size {size} which does not broadcast with previously seen "
                                       f"ellipsis with size {previous} for the respective dimension")
                raise RuntimeError(f"einsum(): subscript {label} has size {size} for operand {k} which does not "
                                   f"broadcast with previously seen size {previous}")
            if previous == 1:
                seen[label] = size
        terms.append(_diagonals(t, dims))

    # Sum out what only one operand has and the output lacks, then contract left to right.
    def needed(label, skip: int) -> bool:
        return label in output or any(label in dims for j, (_, dims) in enumerate(terms) if j != skip)

    for k, (t, dims) in enumerate(terms):
        summed = [d for d, label in enumerate(dims) if not needed(label, k)]
        if summed:
            terms[k] = (F.sum(t, summed), [label for d, label in enumerate(dims) if d not in summed])
    result, dims = terms[0]
    for k in range(1, len(terms)):
        keep = set(output).union(*(set(d) for _, d in terms[k + 1:]))
        result, dims = _contract(result, dims, *terms[k], keep)
    order = [dims.index(label) for label in output]
    if order != list(range(len(dims))):
        result = F.permute(result, order)
    return result


def _diagonals(t: Tensor, dims: list) -> tuple:
    """t with each repeated label's dims replaced by their diagonal, at the first's place."""
    dims = list(dims)
    for d2 in range(len(dims) - 1, -1, -1):
        d1 = dims.index(dims[d2])
        if d1 != d2:
            t = F.movedim(_diagonal(t, d1, d2), -1, d1)
            del dims[d2]
    return t, dims


def _diagonal(t: Tensor, d1: int, d2: int) -> Tensor:
    """torch.diagonal(t, 0, d1, d2): the diagonal as the last dim (a view where fusegrad has the
    diagonal op, else a copy through index_select)."""
    if "diagonal" in OPS:
        return apply_op("diagonal", [t], {"offset": 0, "dim1": d1, "dim2": d2}, "DiagonalBackward0")
    from .creation import arange
    from .gathering import index_select
    rest = [d for d in range(t.dim()) if d not in (d1, d2)]
    n = t.shape[d1]
    flat = F.reshape(F.permute(t, rest + [d1, d2]), tuple(t.shape[d] for d in rest) + (n * n,))
    return index_select(flat, -1, arange(n) * (n + 1))


def _contract(a: Tensor, la: list, b: Tensor, lb: list, keep: set) -> tuple:
    """The product of two terms summed over the labels both have and `keep` lacks: one bmm, or
    where none is summed a broadcast multiply (torch's sumproduct_pair)."""
    if not any(c in lb and c not in keep for c in la):
        labels = la + [c for c in lb if c not in la]
        return F.mul(_aligned(a, la, labels), _aligned(b, lb, labels)), labels
    if a._dtype is not b._dtype:
        raise RuntimeError(f"expected scalar type {TORCH_SCALAR_NAMES[a._dtype.name]} but found "
                           f"{TORCH_SCALAR_NAMES[b._dtype.name]}")
    batch = [c for c in la if c in lb and c in keep]
    summed = [c for c in la if c in lb and c not in keep]
    left = [c for c in la if c not in lb]
    right = [c for c in lb if c not in la]
    for c in summed:        # (a size-1 dim against a longer one: that one summed first)
        da, db = la.index(c), lb.index(c)
        if a.shape[da] == 1 and b.shape[db] != 1:
            b = F.sum(b, db, keepdim=True)
        elif b.shape[db] == 1 and a.shape[da] != 1:
            a = F.sum(a, da, keepdim=True)
    size = {c: max(a.shape[la.index(c)] if c in la else 1, b.shape[lb.index(c)] if c in lb else 1)
            for c in la + lb}

    def matrices(t, labels, rows, cols):
        t = F.permute(t, [labels.index(c) for c in batch + rows + cols])
        t = F.expand(t, tuple(size[c] for c in batch) + tuple(t.shape[len(batch):]))
        return F.reshape(t, (_prod(size[c] for c in batch), _prod(t.shape[len(batch):len(batch) + len(rows)]),
                             _prod(t.shape[len(batch) + len(rows):])))

    product = bmm(matrices(a, la, left, summed), matrices(b, lb, summed, right))
    labels = batch + left + right
    return F.reshape(product, tuple(size[c] for c in labels)), labels


def _aligned(t: Tensor, dims: list, labels: list) -> Tensor:
    """t's dims in the order of `labels`, size 1 where t lacks one."""
    t = F.permute(t, [dims.index(c) for c in labels if c in dims])
    return F.reshape(t, tuple(t.shape[[c for c in labels if c in dims].index(c)] if c in dims else 1 for c in labels))


def _prod(sizes) -> int:
    n = 1
    for s in sizes:
        n *= s
    return n
