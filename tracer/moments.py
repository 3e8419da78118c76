"""torch.var and torch.std with torch's three overloads: `(dim, unbiased, keepdim)`,
`(dim=None, *, correction, keepdim)` and `(unbiased)`; one recorded op each
(VarBackward0 / StdBackward0)."""
from __future__ import annotations

import builtins
import numbers
import warnings

import numpy as np

from . import functional as F
from .dispatch import apply_op
from .tensor import Tensor
from .user_frame import user_stacklevel

_MISSING = F._MISSING
_SIGNATURES = ("\n * (Tensor input, tuple of ints dim, bool unbiased = True, bool keepdim = False, *, Tensor out = None)"
               "\n * (Tensor input, tuple of ints dim = None, *, Number correction = None, bool keepdim = False, "
               "Tensor out = None)\n * (Tensor input, bool unbiased = True)\n")


def _invalid(fn: str, given: list) -> TypeError:
    return TypeError(f"{fn}() received an invalid combination of arguments - got ({', '.join(given)}), "
                     f"but expected one of:{_SIGNATURES}")


def _moment(op: str, name: str, input, dim, unbiased, keepdim, correction) -> Tensor:
    a = F.as_tensor(input, op)
    dim = F._int_list_tensor(dim)                   # (a one-element integer tensor is an int dim)
    if isinstance(dim, (bool, np.bool_)):          # var(x, True): the (unbiased) overload
        if unbiased is not _MISSING or keepdim is not _MISSING or correction is not None:
            raise _invalid(op, ["Tensor", "bool", "..."])
        dim, unbiased = None, bool(dim)
    if unbiased is not _MISSING and correction is not None:
        raise _invalid(op, ["Tensor", "correction=" + type(correction).__name__, "unbiased=bool"])
    if unbiased is not _MISSING and not isinstance(unbiased, (bool, np.bool_)):
        raise _invalid(op, ["Tensor", type(dim).__name__, type(unbiased).__name__])
    if correction is not None and not isinstance(correction, numbers.Real):      # (a bool is 0 or 1, as torch)
        raise _invalid(op, ["Tensor", "correction=" + type(correction).__name__])
    if dim is not None and not (F._is_index(dim) or isinstance(dim, (tuple, list))):
        raise _invalid(op, ["Tensor", type(dim).__name__])
    keepdim = False if keepdim is _MISSING else keepdim
    if not isinstance(keepdim, (bool, np.bool_)):
        raise _invalid(op, ["Tensor", type(dim).__name__, "keepdim=" + type(keepdim).__name__])
    if not a._dtype.is_floating_point:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    axes = F._dims(dim, a.dim(), op)
    if correction is None:
        correction = 0 if unbiased is False else 1
    # torch's reduction factor: input numel over output numel (0 for an empty input)
    out_numel = 1
    for k, size in enumerate(a.shape):
        out_numel *= 1 if k in axes else size
    if a.numel() // builtins.max(out_numel, 1) - correction <= 0:
        warnings.warn(f"{op}(): degrees of freedom is <= 0. Correction should be strictly less than the reduction "
                      f"factor (input numel divided by output numel).", UserWarning, stacklevel=user_stacklevel())
    return apply_op(op, [a], {"axes": axes, "correction": float(correction), "keepdim": bool(keepdim)}, name)


@F._call_form_texts
@F._numpy_spellings(keepdim_at=3)
def var(input, dim=None, unbiased=_MISSING, keepdim=_MISSING, *, correction=None) -> Tensor:
    """Variance over `dim` (all dims when None): the sum of squared deviations from the mean
    divided by n - correction (correction 1, Bessel's, unless `unbiased=False` or given)."""
    return _moment("var", "VarBackward0", input, dim, unbiased, keepdim, correction)


@F._call_form_texts
@F._numpy_spellings(keepdim_at=3)
def std(input, dim=None, unbiased=_MISSING, keepdim=_MISSING, *, correction=None) -> Tensor:
    """Standard deviation over `dim`: the square root of `var` with the same arguments."""
    return _moment("std", "StdBackward0", input, dim, unbiased, keepdim, correction)
