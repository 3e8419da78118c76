"""torch's special functions lgamma, digamma, polygamma, erfinv, mvlgamma and i0 (their methods and
in-place forms), and the torch.special functions fusegrad adds with them (i0e, i1, i1e, ndtri,
log_ndtr, entr, xlog1py, ndtr), over the ops of ir/ops/special.py (float64 NumPy references rounded
to the operand's dtype; its docstring states their accuracy). Integer and bool operands compute in
float32, as in torch; the node names are torch's. fusegrad/special.py is the torch.special namespace.
"""
from __future__ import annotations

import math

import numpy as np

from fusegrad.ir import float32
from fusegrad.ir.types import TORCH_SCALAR_NAMES

from . import functional as F
from .dispatch import apply_op, result_cast_error
from .extra_functions import _apply, _float_dtype, _operand, _write
from .functional import REQUIRED, as_tensor, one_input
from .inplace_functions import _module_function
from .math_functions import _float_inplace
from .node import display_edges
from .parser_errors import no_arguments, type_name
from .tensor import Tensor


def _unary(op: str, node: str, doc: str):
    fn = F._unary_float(op, node)
    fn.__doc__ = fn.method.__doc__ = doc
    return fn


lgamma = _unary("lgamma", "LgammaBackward0",
                "torch.lgamma: log|Gamma(x)| (LgammaBackward0; its gradient is digamma). inf at 0, the negative "
                "integers and -inf, as torch's; accuracy in ir/ops/special.py.")
digamma = _unary("digamma", "DigammaBackward0",
                 "torch.digamma: Gamma'(x) / Gamma(x) (DigammaBackward0; its gradient is polygamma(1, x)). "
                 "digamma(+-0) = -+inf and NaN at the negative integers, as torch's.")
erfinv = _unary("erfinv", "ErfinvBackward0",
                "torch.erfinv: the inverse error function on (-1, 1), +-inf at +-1 and NaN beyond "
                "(ErfinvBackward0: sqrt(pi) / 2 * exp(erfinv(x)^2)).")
i0 = _unary("i0", "I0Backward0",
            "torch.i0: the modified Bessel function of the first kind of order 0, by Cephes' Chebyshev "
            "series (I0Backward0; its gradient is i1). NaN at +-inf, as torch's.")
i0e = _unary("i0e", "SpecialI0EBackward0", "torch.special.i0e: exp(-|x|) i0(x) (SpecialI0EBackward0).")
i1 = _unary("i1", "SpecialI1Backward0", "torch.special.i1: the modified Bessel function of the first kind of "
                                        "order 1 (SpecialI1Backward0). NaN at +-inf, as torch's.")
i1e = _unary("i1e", "SpecialI1EBackward0", "torch.special.i1e: exp(-|x|) i1(x) (SpecialI1EBackward0).")
ndtri = _unary("ndtri", "SpecialNdtriBackward0",
               "torch.special.ndtri: the standard normal quantile (Cephes' ndtri): -inf at 0, inf at 1, NaN "
               "outside [0, 1] (SpecialNdtriBackward0).")
log_ndtr = _unary("log_ndtr", "SpecialLogNdtrBackward0",
                  "torch.special.log_ndtr: log of the standard normal CDF, by torch's two branches "
                  "(SpecialLogNdtrBackward0).")
entr = _unary("entr", "SpecialEntrBackward0",
              "torch.special.entr: -x log x for x > 0, 0 at 0, -inf below 0 (SpecialEntrBackward0).")


def _in_place(fn, node: str):
    return no_arguments(_float_inplace(fn, node), fn.__name__ + "_")


# ------------------------------------------------------------------ polygamma
def _polygamma_plan(n, input, fn: str, input_position: int = 2):
    if not F._is_index(n) or isinstance(n, (bool, np.bool_)):
        raise TypeError(f"{fn}(): argument 'n' (position 1) must be int, not {type_name(n)}")
    a = as_tensor(input, fn, "input", input_position)
    if int(n) < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return "polygamma", [a], {"n": int(n)}, "PolygammaBackward0", _float_dtype([a], fn)


def polygamma(n, input) -> Tensor:
    """torch.polygamma: the n-th derivative of digamma (n = 0: digamma itself), PolygammaBackward0,
    whose gradient is polygamma(n + 1, x). (-1)^(n+1) inf at 0 and the negative integers (torch's
    own trigamma, for n = 1, is finite there by rounding: 1.29e15 at -1 in float32)."""
    return _apply(_polygamma_plan(n, input, "polygamma"))


def _polygamma_method(self, n) -> Tensor:
    """Tensor.polygamma(n)."""
    return _apply(_polygamma_plan(n, self, "polygamma"))


def _polygamma_(self, n) -> Tensor:
    """In-place Tensor.polygamma_(n) (self must be floating): torch records PolygammaBackward1."""
    op, operands, attrs, _, dtype = _polygamma_plan(n, self, "polygamma_")
    if not self._dtype.is_floating_point:
        raise result_cast_error("Float", TORCH_SCALAR_NAMES[self._dtype.name])
    return _write(self, (op, operands, attrs, "PolygammaBackward1", dtype))


# ------------------------------------------------------------------ mvlgamma
def _mvlgamma_plan(input, p, fn: str):
    a = as_tensor(input, fn)
    if p is REQUIRED:
        raise TypeError(f'{fn}() missing 1 required positional arguments: "p"')
    if not F._is_index(p) or isinstance(p, (bool, np.bool_)):
        raise TypeError(f"{fn}(): argument 'p' (position 2) must be int, not {type_name(p)}")
    if a._dtype.name == "bool":
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if int(p) < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    return "mvlgamma", [a], {"p": int(p)}, "MvlgammaBackward0", _float_dtype([a], fn)


def mvlgamma(input, p=REQUIRED) -> Tensor:
    """torch.mvlgamma: the multivariate log-gamma function of dimension p, sum_j lgamma(x - j/2) +
    p (p - 1) / 4 log(pi) (MvlgammaBackward0). torch 2.13 no longer checks x > (p - 1) / 2; neither
    does fusegrad."""
    return _apply(_mvlgamma_plan(input, p, "mvlgamma"))


def _mvlgamma_method(self, p=REQUIRED) -> Tensor:
    """Tensor.mvlgamma(p)."""
    return mvlgamma(self, p)


def _mvlgamma_(self, p=REQUIRED) -> Tensor:
    """In-place Tensor.mvlgamma_(p) (self must be floating; torch's own text for integers)."""
    plan = _mvlgamma_plan(self, p, "mvlgamma_")
    if not self._dtype.is_floating_point:
        raise RuntimeError(f"mvlgamma: result type {TORCH_SCALAR_NAMES[self._dtype.name]} can't be cast to the "
                           "desired output type Float")
    return _write(self, plan)


# ------------------------------------------------------------------ torch.special's composites and xlog1py
def _scalar_node(op: str, a: Tensor, number: float, node: str) -> Tensor:
    """`a op number` as torch's Scalar overload records it (MulBackward1, AddBackward1: one edge)."""
    out = apply_op(op, [a, F._scalar_array(number, a._dtype)], None, node)
    if out._grad_fn is not None:
        display_edges(out._grad_fn, out._grad_fn.next_functions[:1])
    return out


def ndtr(input=REQUIRED, *surplus) -> Tensor:
    """torch.special.ndtr: the standard normal CDF, as torch computes it: (1 + erf(x * sqrt(1/2))) * 0.5,
    recorded as its nodes (MulBackward1, ErfBackward0, AddBackward1, MulBackward1)."""
    a = as_tensor(one_input(input, surplus, "special_ndtr"), "special_ndtr")
    if not a._dtype.is_floating_point:
        a = F.cast(a, float32)
    scaled = _scalar_node("mul", a, math.sqrt(0.5), "MulBackward1")
    return _scalar_node("mul", _scalar_node("add", F.erf(scaled), 1, "AddBackward1"), 0.5, "MulBackward1")


_XLOG1PY_OVERLOADS = ("(Tensor input, Tensor other, *, Tensor out = None)",
                      "(Number self, Tensor other, *, Tensor out = None)",
                      "(Tensor input, Number other, *, Tensor out = None)")


def _xlog1py_plan(input, other, fn="special_xlog1py"):
    if not isinstance(input, (Tensor, np.ndarray)) and not isinstance(other, (Tensor, np.ndarray)):
        listed = "".join(f"\n * {overload}" for overload in _XLOG1PY_OVERLOADS)
        raise TypeError(f"{fn}() received an invalid combination of arguments - got ({type_name(input)}, "
                        f"{type_name(other)}), but expected one of:{listed}\n")
    a, b = _operand(input, fn, "input", 1), _operand(other, fn, "other", 2)
    name = "SpecialXlog1PyBackward0" if isinstance(a, Tensor) and isinstance(b, Tensor) else \
        "SpecialXlog1PyBackward1" if isinstance(b, Tensor) else "SpecialXlog1PyBackward2"
    if not isinstance(a, Tensor):
        a = F.tensor_from_scalar(a)
    return "xlog1py", [a, b], None, name, _float_dtype([a, b], fn)


def xlog1py(input, other) -> Tensor:
    """torch.special.xlog1py: input * log1p(other), 0 where input is 0 (NaN where other is NaN); a
    number may stand for either operand (SpecialXlog1PyBackward0, 1 or 2, as torch's overloads, whose
    nodes list the tensor operand's edge only)."""
    out = _apply(_xlog1py_plan(input, other))
    if out._grad_fn is not None and not (isinstance(input, Tensor) and isinstance(other, Tensor)):
        edges = out._grad_fn.next_functions
        display_edges(out._grad_fn, edges[1:] if isinstance(other, Tensor) else edges[:1])
    return out


i0_ = _module_function("i0_")                   # torch.i0_(t): t.i0_()

METHODS = {
    "lgamma": lgamma.method, "lgamma_": _in_place(lgamma, "LgammaBackward0"),
    "digamma": digamma.method, "digamma_": _in_place(digamma, "DigammaBackward0"),
    "erfinv": erfinv.method, "erfinv_": _in_place(erfinv, "ErfinvBackward0"),
    "i0": i0.method, "i0_": _in_place(i0, "I0Backward0"),
    "polygamma": _polygamma_method, "polygamma_": _polygamma_,
    "mvlgamma": _mvlgamma_method, "mvlgamma_": _mvlgamma_,
}
