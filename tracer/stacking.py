"""torch's composite joining functions: atleast_1d/2d/3d and hstack, vstack, dstack,
column_stack. Each is what torch's implementation does, in its ops (a view or unsqueeze per
tensor, then one cat), so their nodes are torch's: ViewBackward0 for a 0-d tensor made 1-d,
UnsqueezeBackward0 for an added dim, CatBackward0 for the join.
"""
from __future__ import annotations

import numpy as np

from . import functional as F
from .parser_errors import type_name
from .tensor import Tensor


def _tensors(args: tuple, fn: str):
    """(the tensors, whether one tensor was given alone) of atleast_*'s arguments: one tensor,
    several, or one list or tuple of them."""
    if len(args) == 1 and isinstance(args[0], (Tensor, np.ndarray)):
        return [F.as_tensor(args[0], fn)], True
    items = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
    for k, x in enumerate(items):
        if not isinstance(x, (Tensor, np.ndarray)):
            if len(args) == 1 and not isinstance(args[0], (list, tuple)):
                raise TypeError(f"{fn}() received an invalid combination of arguments - got ({type_name(x)}), but "
                                f"expected one of:\n * (Tensor input)\n      didn't match because some of the arguments "
                                f"have invalid types: (!{type_name(x)}!)\n * (tuple of Tensors tensors)\n      didn't "
                                f"match because some of the arguments have invalid types: (!{type_name(x)}!)\n")
            raise TypeError(f"expected Tensor as element {k} in argument 0, but got {type_name(x)}")
    return [F.as_tensor(x, fn) for x in items], False


def _each(make, fn: str):
    def at_least(*tensors):
        ts, alone = _tensors(tensors, fn)
        made = [make(t) for t in ts]
        return made[0] if alone else tuple(made)
    at_least.__name__ = at_least.__qualname__ = fn
    return at_least


def _one_d(t: Tensor) -> Tensor:
    return F.reshape(t, (1,)) if t.dim() == 0 else t


def _two_d(t: Tensor) -> Tensor:
    if t.dim() == 0:
        return F.reshape(t, (1, 1))
    return F.unsqueeze(t, 0) if t.dim() == 1 else t


def _three_d(t: Tensor) -> Tensor:
    if t.dim() == 0:
        return F.reshape(t, (1, 1, 1))
    if t.dim() == 1:
        return F.unsqueeze(F.unsqueeze(t, 0), -1)
    return F.unsqueeze(t, -1) if t.dim() == 2 else t


atleast_1d = _each(_one_d, "atleast_1d")
atleast_1d.__doc__ = "torch.atleast_1d: each tensor with at least one dim (a 0-d one viewed as shape (1,))."
atleast_2d = _each(_two_d, "atleast_2d")
atleast_2d.__doc__ = "torch.atleast_2d: each tensor with at least two dims (a 1-d one unsqueezed at 0)."
atleast_3d = _each(_three_d, "atleast_3d")
atleast_3d.__doc__ = "torch.atleast_3d: each tensor with at least three dims ((n,) -> (1, n, 1), (m, n) -> (m, n, 1))."


def _joined(tensors, fn: str, shape, dim, kernel: str | None = None) -> Tensor:
    """`tensors` made `shape` and joined along `dim(them)`; `kernel`: the name torch's check of
    an empty list gives (row_stack's is vstack's), `fn` by default."""
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{fn}(): argument 'tensors' (position 1) must be tuple of Tensors, not {type_name(tensors)}")
    if not tensors:
        raise RuntimeError(f"{kernel or fn} expects a non-empty TensorList")
    ts, _ = _tensors((tuple(tensors),), fn)
    ts = [shape(t) for t in ts]
    return F.cat(ts, dim(ts))


def hstack(tensors) -> Tensor:
    """torch.hstack: join along dim 1 (dim 0 for 1-d tensors), after atleast_1d."""
    return _joined(tensors, "hstack", _one_d, lambda ts: 0 if ts[0].dim() == 1 else 1)


def vstack(tensors) -> Tensor:
    """torch.vstack: join along dim 0, after atleast_2d."""
    return _joined(tensors, "vstack", _two_d, lambda ts: 0)


def row_stack(tensors) -> Tensor:
    """torch.row_stack, vstack's other name (its argument errors name row_stack)."""
    return _joined(tensors, "row_stack", _two_d, lambda ts: 0, kernel="vstack")


def dstack(tensors) -> Tensor:
    """torch.dstack: join along dim 2, after atleast_3d."""
    return _joined(tensors, "dstack", _three_d, lambda ts: 2)


def column_stack(tensors) -> Tensor:
    """torch.column_stack: 0-d and 1-d tensors as columns (reshaped to (n, 1)), then joined
    along dim 1."""
    return _joined(tensors, "column_stack", lambda t: F.reshape(t, (-1, 1)) if t.dim() <= 1 else t, lambda ts: 1)
