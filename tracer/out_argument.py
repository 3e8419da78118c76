"""torch's `out=` argument of its functions (`torch.add(a, b, out=c)`, as the Tensors
tutorial writes): the result is computed as without it, then written into `out`, which is
returned.

torch's rules, in its order: `out` must be a Tensor (a tuple of them for the functions
returning values and indices); no argument may require grad while grad mode is on (out=
functions have no derivative); the result's type must be castable to out's dtype (a float
result cannot go into an integer `out`; matmul and its kin want out's dtype exactly); an
`out` of another shape is resized, with torch's deprecation warning unless it was empty.
The write is a `copy_`, so it bumps out's version, is seen through its views, and is traced
inside fg.compile. Resizing replaces the memory of a plain eager tensor; a view, or a tensor
of a compiled call, of the wrong shape is refused (NotImplementedError).

Which functions take it: those whose torch signature has `Tensor out` (tracer/parser_errors.py
FUNCTIONS, fusegrad/__init__.py wraps them; ALSO_TAKING_OUT for the others), except the
creation functions.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

from fusegrad.ir.types import TORCH_SCALAR_NAMES

from . import trace_state
from .dispatch import result_cast_error
from .grad_mode import is_grad_enabled, no_grad
from .parser_errors import type_name
from .tensor import Tensor
from .user_frame import user_stacklevel

# Creation functions also take `out` in torch, where it sets the result's dtype: not here.
NOT_TAKING_OUT = frozenset({"arange", "linspace", "eye", "randint", "bernoulli", "zeros", "ones", "empty", "full", "randn", "rand"})
# Functions that take `out` in torch whose bad calls have no parser text here (so they are not
# in parser_errors.FUNCTIONS, whose printed overloads say which take it): listed from torch
# 2.13's docstrings ("out (Tensor, optional)"), creation functions left out as above.
ALSO_TAKING_OUT = frozenset("""
    addbmm addcdiv addcmul addmm addmv addr amax amin aminmax angle baddbmm bitwise_not bucketize cat
    chain_matmul column_stack concat concatenate copysign cross cummax cummin cumprod deg2rad diag
    diff digamma divide dstack erfinv float_power fmax fmin fmod frexp gcd greater greater_equal
    ger heaviside histc histogram hstack hypot i0 inner inverse isneginf isposinf kron kthvalue lcm ldexp
    lerp less less_equal lgamma logaddexp logaddexp2 logcumsumexp logit masked_select matrix_power
    median mode msort multiply mvlgamma nan_to_num nanmean nanmedian nanquantile narrow_copy nextafter
    nonzero norm not_equal polygamma quantile rad2deg renorm row_stack searchsorted sgn sinc sort stack
    subtract take_along_dim topk vdot vstack xlogy""".split())
# Functions whose `out` must have the result's dtype exactly (torch's matmul family).
_EXACT_DTYPE = frozenset({"matmul", "mm", "bmm", "mv", "dot", "outer", "ger"})

_RESIZED = ("An output with one or more elements was resized since it had shape [{}], which does not match the "
            "required output shape [{}]. This behavior is deprecated, and in a future PyTorch release outputs will "
            "not be resized unless they have zero elements. You can explicitly reuse an out tensor t by resizing "
            "it, inplace, to zero elements with t.resize_(0).")


def _requires_grad(value) -> bool:
    if isinstance(value, Tensor):
        return value.requires_grad
    if isinstance(value, (list, tuple)):
        return any(_requires_grad(item) for item in value)
    return False


def with_out(fn, name: str):
    """`fn` taking torch's keyword `out` (see the module doc)."""
    @functools.wraps(fn)        # (its signature is fn's: missing_argument_texts reads it)
    def call(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        for target in outs:
            if not isinstance(target, Tensor):
                raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type_name(target)}")
        if is_grad_enabled() and (_requires_grad(args) or _requires_grad(tuple(kwargs.values()))
                                  or _requires_grad(outs)):
            raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                               "differentiation, but one of the arguments requires grad.")
        result = fn(*args, **kwargs)
        results = result if isinstance(result, tuple) else (result,)
        if len(results) != len(outs):
            raise TypeError(f"{name}(): argument 'out' must be a tuple of {len(results)} Tensors")
        with no_grad():
            for value, target in zip(results, outs):
                _write(value, target, name)
        return out if not isinstance(result, tuple) else type(result)(tuple(outs))
    return call


def _write(value: Tensor, out: Tensor, name: str) -> None:
    if name in _EXACT_DTYPE and value.dtype is not out.dtype:
        from .functional import _c_name
        raise RuntimeError(f"Expected out tensor to have dtype {_c_name(value.dtype)}, but got "
                           f"{_c_name(out.dtype)} instead")
    if value.dtype.category > out.dtype.category:
        raise result_cast_error(TORCH_SCALAR_NAMES[value.dtype.name], TORCH_SCALAR_NAMES[out.dtype.name])
    if tuple(value.shape) != tuple(out.shape):
        _resize(out, tuple(value.shape))
    out.copy_(value)


def _resize(out: Tensor, shape: tuple) -> None:
    """torch's resize of an `out` of another shape: new memory for a plain eager tensor."""
    if out._sym is not None or out._base is not None or trace_state.current() is not None:
        raise NotImplementedError(f"fusegrad: out= of shape {list(out.shape)} where the result has shape "
                                  f"{list(shape)}: resizing a view or a tensor of a compiled call is not supported")
    if out.numel():
        warnings.warn(_RESIZED.format(", ".join(map(str, out.shape)), ", ".join(map(str, shape))), UserWarning,
                      stacklevel=user_stacklevel())
    out._data = np.zeros(shape, out.dtype.np)
    out._vbox[0] += 1
