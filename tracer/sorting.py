"""torch.sort, torch.argsort and torch.topk (and their methods), over the IR op `sort`
(ir/ops/sort.py): values and int64 indices along one dim, SortBackward0 / TopkBackward0.

Ties keep their positions' order, as torch's `stable=True` (its default sort may order
them otherwise); NaN is the largest value, as in torch.
"""
from __future__ import annotations

import numpy as np

from fusegrad.ir.ops import normalize_dim

from . import functional as F
from .dispatch import apply_op
from .parser_errors import type_name
from .tensor import Tensor

_SORT_SIGNATURES = ("\n * (Tensor input, *, bool stable, int dim = -1, bool descending = False, tuple of Tensors out "
                    "= None)\n * (Tensor input, int dim = -1, bool descending = False, *, tuple of Tensors out = None)\n")


def _input(x, fn: str) -> Tensor:
    if not isinstance(x, (Tensor, np.ndarray)):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not {type_name(x)}")
    return F.as_tensor(x, fn)


def _sorted(a: Tensor, axis: int, descending: bool, k, name: str) -> tuple:
    return apply_op("sort", [a], {"axis": axis, "descending": bool(descending), "k": k}, name)


def sort(input, dim=-1, descending=False, stable=None):
    """torch.sort: (values, indices) sorted along `dim` (ascending unless `descending`)."""
    a = _input(input, "sort")
    for key, value, ok in (("dim", dim, F._is_index(dim) and not isinstance(dim, (bool, np.bool_))),
                           ("descending", descending, isinstance(descending, (bool, np.bool_))),
                           ("stable", stable, stable is None or isinstance(stable, (bool, np.bool_)))):
        if not ok:
            raise TypeError(f"sort() received an invalid combination of arguments - got (Tensor, {key}="
                            f"{type_name(value)}), but expected one of:{_SORT_SIGNATURES}")
    axis = normalize_dim(int(dim), a.dim())
    # (torch's overload with `stable` records SortBackward1)
    values, indices = _sorted(a, axis, descending, None, "SortBackward0" if stable is None else "SortBackward1")
    return F.RETURN_TYPES["sort"]((values, indices))


def argsort(input, dim=-1, descending=False, stable=False) -> Tensor:
    """torch.argsort: the indices that sort `input` along `dim` (sort's indices)."""
    return sort(_input(input, "argsort"), dim, descending, stable)[1]


def topk(input, k, dim=-1, largest=True, sorted=True):
    """torch.topk: the `k` largest (or smallest) values along `dim` and their indices, in
    sorted order (`sorted=False` gives the same order here)."""
    a = _input(input, "topk")
    if not F._is_index(k) or isinstance(k, (bool, np.bool_)):
        raise TypeError(f"topk(): argument 'k' (position 2) must be int, not {type_name(k)}")
    if not F._is_index(dim) or isinstance(dim, (bool, np.bool_)):
        raise TypeError(f"topk(): argument 'dim' (position 3) must be int, not {type_name(dim)}")
    for key, value in (("largest", largest), ("sorted", sorted)):
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"topk(): argument '{key}' must be bool, not {type_name(value)}")
    axis = normalize_dim(int(dim), a.dim())
    size = a.shape[axis] if a.dim() else 1
    if not 0 <= int(k) <= size:
        raise RuntimeError("selected index k out of range")
    values, indices = _sorted(a, axis, largest, int(k), "TopkBackward0")
    return F.RETURN_TYPES["topk"]((values, indices))


def _sort_method(self, dim=-1, descending=False, stable=None):
    """Tensor.sort."""
    return sort(self, dim, descending, stable)


def _argsort_method(self, dim=-1, descending=False, stable=False):
    """Tensor.argsort."""
    return argsort(self, dim, descending, stable)


def _topk_method(self, k, dim=-1, largest=True, sorted=True):
    """Tensor.topk."""
    return topk(self, k, dim, largest, sorted)


METHODS = {"sort": _sort_method, "argsort": _argsort_method, "topk": _topk_method}
