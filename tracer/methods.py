"""Binds the functional forms to `Tensor` as methods and operators, in one
explicit table (no namespace wrapping at import time: grep finds them here)."""
from __future__ import annotations

import numpy as np

from fusegrad.ir import bool_, float32, float64, int64
from fusegrad.ir.types import TORCH_TYPE_NAMES

from . import functional as F
from . import indexing, inplace
from .tensor import Tensor


def _reflected(fn):
    def method(self, other):
        return fn(other, self)
    return method


def _tensor_other(fn):
    """A method whose `other` must be a tensor: torch names it argument 'other' (position 1)."""
    def method(self, other):
        return fn(self, F.as_tensor(other, fn.__name__, "other", 1))
    method.__name__ = fn.__name__
    return method


def _binary_operator(fn, scalars: bool = True):
    def method(self, other):
        t = type(other)
        if t is Tensor or (scalars and (t is float or t is int)):     # the common cases first
            return fn(self, other)
        ok = isinstance(other, (Tensor, np.ndarray)) or (scalars and F._is_scalar(other))
        if not ok:
            return NotImplemented
        return fn(self, other)
    method.__name__ = fn.__name__
    return method


METHODS = {
    # arithmetic
    "add": F.add, "sub": F.sub, "mul": F.mul, "div": F.div, "pow": F.pow, "neg": F.neg, "matmul": _tensor_other(F.matmul),
    "true_divide": F.div, "multiply": F.mul, "subtract": F.sub, "negative": F.neg,
    "maximum": _tensor_other(F.maximum), "minimum": _tensor_other(F.minimum), "clamp": F.clamp, "clip": F.clamp, "where": lambda self, c, o: F.where(c, self, o),
    # unary
    "exp": F.exp, "log": F.log, "sqrt": F.sqrt, "sin": F.sin, "cos": F.cos, "tanh": F.tanh,
    "sigmoid": F.sigmoid, "relu": F.relu, "abs": F.abs, "sign": F.sign,
    # comparisons
    "lt": F.lt, "le": F.le, "gt": F.gt, "ge": F.ge, "eq": F.eq, "ne": F.ne,
    "logical_not": F.logical_not, "logical_and": F.logical_and, "all": F.all, "any": F.any,
    # reductions
    "sum": F.sum, "mean": F.mean, "max": F.max, "min": F.min, "amax": F.amax, "amin": F.amin,
    "argmax": F.argmax, "argmin": F.argmin, "norm": F.norm, "softmax": F.softmax, "log_softmax": F.log_softmax,
    # shapes
    "reshape": F.reshape, "view": F.view, "flatten": F.flatten, "permute": F.permute, "transpose": F.transpose,
    "t": F.t, "unsqueeze": F.unsqueeze, "squeeze": F.squeeze, "expand": F.expand, "expand_as": F.expand_as,
    "broadcast_to": F.broadcast_to, "clone": F.clone, "contiguous": F.contiguous, "to": F.to,
    "reshape_as": lambda self, other: F.reshape(self, tuple(other.shape)),
    "view_as": lambda self, other: F.view(self, tuple(other.shape)),
    # casts
    "float": lambda self: F.cast(self, float32), "double": lambda self: F.cast(self, float64),
    "long": lambda self: F.cast(self, int64), "bool": lambda self: F.cast(self, bool_),
    "type": lambda self, dtype=None: F.cast(self, dtype) if dtype is not None else TORCH_TYPE_NAMES[self.dtype.name],
    # in-place
    "add_": inplace.binary_inplace("add", "AddBackward0"),
    "sub_": inplace.binary_inplace("sub", "SubBackward0"),
    "mul_": inplace.binary_inplace("mul", "MulBackward0"),
    "div_": inplace.binary_inplace("div", "DivBackward0"),
    "pow_": inplace.binary_inplace("pow", "PowBackward0"),
    "exp_": inplace.unary_inplace("exp", "ExpBackward0"),
    "log_": inplace.unary_inplace("log", "LogBackward0"),
    "sqrt_": inplace.unary_inplace("sqrt", "SqrtBackward0"),
    "tanh_": inplace.unary_inplace("tanh", "TanhBackward0"),
    "sigmoid_": inplace.unary_inplace("sigmoid", "SigmoidBackward0"),
    "relu_": inplace.unary_inplace("relu", "ReluBackward0"),
    "neg_": inplace.unary_inplace("neg", "NegBackward0"),
    "abs_": inplace.unary_inplace("abs", "AbsBackward0"),
    "clamp_": inplace.clamp_, "zero_": inplace.zero_, "fill_": inplace.fill_, "copy_": inplace.copy_,
}

OPERATORS = {
    "__add__": _binary_operator(F.add), "__radd__": _binary_operator(F.add),
    "__sub__": _binary_operator(F.sub), "__rsub__": _binary_operator(F.rsub),
    "__mul__": _binary_operator(F.mul), "__rmul__": _binary_operator(F.mul),
    "__truediv__": _binary_operator(F.div), "__rtruediv__": _binary_operator(F.rdiv),
    "__pow__": _binary_operator(F.pow), "__rpow__": _binary_operator(_reflected(F.pow)),
    "__matmul__": _binary_operator(F.matmul, False),
    "__rmatmul__": _binary_operator(_reflected(F.matmul), False),
    "__lt__": _binary_operator(F.lt), "__le__": _binary_operator(F.le), "__gt__": _binary_operator(F.gt),
    "__ge__": _binary_operator(F.ge), "__eq__": _binary_operator(F.eq), "__ne__": _binary_operator(F.ne),
    "__neg__": F.neg, "__pos__": lambda self: self, "__abs__": F.abs, "__invert__": F.logical_not,
    "__and__": F.logical_and,
    "__iadd__": METHODS["add_"], "__isub__": METHODS["sub_"], "__imul__": METHODS["mul_"],
    "__itruediv__": METHODS["div_"],
    "__getitem__": indexing.getitem, "__setitem__": indexing.setitem,
}


def bind_methods() -> None:
    """Install METHODS and OPERATORS on Tensor (called once by tracer/__init__)."""
    for name, fn in {**METHODS, **OPERATORS}.items():
        setattr(Tensor, name, fn)
    Tensor.T = property(F.T)
    Tensor.mT = property(F.mT)
