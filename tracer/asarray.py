"""torch.asarray and torch.can_cast.

asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None) as torch 2.13 runs it
(torch/csrc/utils/tensor_new.cpp):

- a Tensor: `obj` itself where no copy is asked for (copy not True) and none is needed (its own
  dtype); a copy where `copy=True` (clone: CloneBackward0) or another dtype (copy=None: `to`,
  ToCopyBackward0), made with autograd when the result is to require grad, else detached;
  copy=False with another dtype is torch's ValueError. requires_grad left out (or None)
  defaults to obj.requires_grad, with torch's warning (once a process) when that is True. An
  alias given requires_grad: a leaf's flag is set (on obj itself, as torch's requires_grad_);
  a non-leaf that is not to require grad is detached (same memory).
- a NumPy array: its memory shared (a tensor over it) unless copy=True or another dtype is
  asked for (copy=False then raises torch's ValueError, naming the array's dtype).
- anything else (numbers, nested sequences): a new tensor as fg.tensor makes it; copy=False
  raises torch's "can't alias arbitrary sequence into a tensor."
"""
from __future__ import annotations

import numpy as np

from fusegrad.ir import DType, from_numpy_dtype
from fusegrad.ir.types import TORCH_SCALAR_NAMES

from .creation import _dtype_arg, _from_numpy, _require_grad, copied_tensor
from .device import check_device
from .functional import warn_once
from .grad_mode import no_grad
from .parser_errors import ArgParser
from .tensor import Tensor

_ASARRAY = ArgParser("asarray", "(object obj, *, torch.dtype dtype = None, torch.device device = None, "
                                "bool? copy = None, bool? requires_grad = False)")
_CAN_CAST = ArgParser("can_cast", "(torch.dtype from_, torch.dtype to)")

_UNSPECIFIED_WARNING = ("torch.asarray: unspecified requires_grad now defaults to obj.requires_grad instead of False. "
                        "Pass requires_grad=False explicitly to get the old behavior and silence this warning. "
                        "(Triggered internally at /__w/pytorch/pytorch/torch/csrc/utils/tensor_new.cpp:1737.)")


def _scalar_name(dtype: DType) -> str:
    return TORCH_SCALAR_NAMES[dtype.name]


def _check_parsed(parser: ArgParser, args: tuple, kwargs: dict) -> None:
    error = parser.error(args, kwargs)
    if error is not None:
        raise error


def asarray(*args, **kwargs) -> Tensor:
    """torch.asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None): `obj` as
    a tensor, sharing memory with a Tensor or NumPy array where it can and `copy` is not True."""
    _check_parsed(_ASARRAY, args, kwargs)
    return _asarray(*args, **kwargs)


def _asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None) -> Tensor:
    check_device(device)
    dtype = _dtype_arg("asarray", dtype)
    if isinstance(obj, Tensor):
        return _of_tensor(obj, dtype, copy, requires_grad)
    requires_grad = bool(requires_grad)
    if isinstance(obj, np.ndarray):
        own = from_numpy_dtype(obj.dtype)
        wrong_dtype = dtype is not None and dtype is not own
        if copy is True or (copy is None and wrong_dtype):
            return copied_tensor(obj, dtype, requires_grad, None, warn_of_tensor=False)
        if wrong_dtype:
            raise ValueError(f"can't alias tensor with dtype '{_scalar_name(own)}' into dtype '{_scalar_name(dtype)}'.")
        t = _from_numpy(obj)
        if requires_grad:
            _require_grad(t)
        return t
    if copy is False:
        raise ValueError("can't alias arbitrary sequence into a tensor.")
    return copied_tensor(obj, dtype, requires_grad, None, warn_of_tensor=False)


def _of_tensor(obj: Tensor, dtype, copy, requires_grad) -> Tensor:
    if requires_grad is None:
        requires_grad = obj.requires_grad
        if requires_grad:
            warn_once(_UNSPECIFIED_WARNING)
        specified = False
    else:
        specified = True
    wrong_dtype = dtype is not None and dtype is not obj.dtype
    if copy is True or (copy is None and wrong_dtype):
        if requires_grad:
            out = obj.to(dtype) if wrong_dtype else obj.clone()
        else:
            with no_grad():
                out = obj.to(dtype) if wrong_dtype else obj.clone()
        if requires_grad and not out.requires_grad:
            _require_grad(out)
        return out
    if wrong_dtype:
        raise ValueError(f"can't alias tensor with dtype '{_scalar_name(obj.dtype)}' into dtype "
                         f"'{_scalar_name(dtype)}'.")
    if not specified or requires_grad == obj.requires_grad:
        return obj
    if obj.is_leaf:
        obj.requires_grad_(requires_grad)
        return obj
    return obj if requires_grad else obj.detach()


def can_cast(*args, **kwargs) -> bool:
    """torch.can_cast(from_, to): whether torch's type promotion casts `from_` to `to` (no
    floating type to an integral one, nothing but bool to bool)."""
    _check_parsed(_CAN_CAST, args, kwargs)
    names = dict(zip(("from_", "to"), args), **kwargs)
    src, dst = (_dtype_arg("can_cast", names[k]) for k in ("from_", "to"))
    if src.is_floating_point and not dst.is_floating_point and dst.name != "bool":
        return False
    return not (dst.name == "bool" and src.name != "bool")
