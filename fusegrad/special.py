"""fg.special: torch.special's functions that fusegrad has (`import fusegrad as fg; fg.special.gammaln(x)`).

Each is the fusegrad function torch.special's is (and records the same node: expit is
SigmoidBackward0, gammaln LgammaBackward0, psi DigammaBackward0, multigammaln MvlgammaBackward0,
round RoundBackward1, ndtr torch's composite of mul, erf and add); their argument errors name
torch.special's functions (`special_gammaln(): argument 'input' ...`). The accuracy of the special
functions is stated in fusegrad/ir/ops/special.py (of the Bessel functions, airy_ai, erfcx, gammainc,
gammaincc, zeta and the orthogonal polynomials in fusegrad/ir/ops/special_extra.py). `out=` is not
supported.
"""
from __future__ import annotations

from fusegrad.tracer import functional as _F
from fusegrad.tracer import math_functions as _math
from fusegrad.tracer import extra_functions as _extra
from fusegrad.tracer import linalg_functions as _linalg
from fusegrad.tracer import special_functions as _special
from fusegrad.tracer.extra_functions import _apply
from fusegrad.tracer.functional import REQUIRED as _REQUIRED, as_tensor as _as_tensor, one_input as _one_input

__all__ = ["digamma", "entr", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammaln", "i0", "i0e", "i1", "i1e",
           "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri", "polygamma",
           "psi", "round", "sinc", "softmax", "xlog1py", "xlogy"]


def _one_tensor(fn, name: str, doc: str):
    """torch.special.<name>: `fn` of one tensor, its argument errors naming special_<name>."""
    torch_name = "special_" + name

    def function(input=_REQUIRED, *surplus):
        return fn(_as_tensor(_one_input(input, surplus, torch_name), torch_name))
    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    return function


expit = _one_tensor(_F.sigmoid, "expit", "torch.special.expit: the logistic sigmoid, 1 / (1 + exp(-x)) (SigmoidBackward0).")
erf = _one_tensor(_F.erf, "erf", "torch.special.erf: the error function (ErfBackward0).")
erfc = _one_tensor(_extra.erfc, "erfc", "torch.special.erfc: 1 - erf(x) (ErfcBackward0).")
erfinv = _one_tensor(_special.erfinv, "erfinv", "torch.special.erfinv: the inverse error function (ErfinvBackward0).")
gammaln = _one_tensor(_special.lgamma, "gammaln", "torch.special.gammaln: log|Gamma(x)|, torch.lgamma (LgammaBackward0).")
digamma = _one_tensor(_special.digamma, "digamma", "torch.special.digamma: torch.digamma (DigammaBackward0).")
psi = _one_tensor(_special.digamma, "psi", "torch.special.psi: torch.digamma (DigammaBackward0).")
i0 = _one_tensor(_special.i0, "i0", "torch.special.i0: torch.i0 (I0Backward0).")
i0e = _one_tensor(_special.i0e, "i0e", _special.i0e.__doc__)
i1 = _one_tensor(_special.i1, "i1", _special.i1.__doc__)
i1e = _one_tensor(_special.i1e, "i1e", _special.i1e.__doc__)
ndtri = _one_tensor(_special.ndtri, "ndtri", _special.ndtri.__doc__)
log_ndtr = _one_tensor(_special.log_ndtr, "log_ndtr", _special.log_ndtr.__doc__)
entr = _one_tensor(_special.entr, "entr", _special.entr.__doc__)
sinc = _one_tensor(_linalg.sinc, "sinc", "torch.special.sinc: sin(pi x) / (pi x), 1 at 0 (SincBackward0).")
exp2 = _one_tensor(_math.exp2, "exp2", "torch.special.exp2: 2**x (Exp2Backward0).")
expm1 = _one_tensor(_F.expm1, "expm1", "torch.special.expm1: exp(x) - 1 (Expm1Backward0).")
log1p = _one_tensor(_F.log1p, "log1p", "torch.special.log1p: log(1 + x) (Log1PBackward0).")
ndtr = _special.ndtr
xlog1py = _special.xlog1py


def logit(input, eps=None):
    """torch.special.logit: log(x / (1 - x)), x clamped to [eps, 1 - eps] when eps is given (LogitBackward0)."""
    return _extra.logit(_as_tensor(input, "special_logit"), eps)


def polygamma(n, input):
    """torch.special.polygamma: torch.polygamma (PolygammaBackward0)."""
    return _apply(_special._polygamma_plan(n, input, "special_polygamma"))


def multigammaln(input, p=_REQUIRED):
    """torch.special.multigammaln: torch.mvlgamma (MvlgammaBackward0)."""
    return _apply(_special._mvlgamma_plan(input, p, "special_multigammaln"))


def xlogy(input, other):
    """torch.special.xlogy: torch.xlogy, input * log(other), 0 where input is 0 (XlogyBackward0)."""
    return _extra.xlogy(input, other)


def _dim_given(dim, fn: str):
    if dim is _REQUIRED:
        raise TypeError(f'{fn}() missing 1 required positional arguments: "dim"')


def logsumexp(input, dim=_REQUIRED, keepdim=False):
    """torch.special.logsumexp: torch.logsumexp (LogsumexpBackward0); `dim` is required."""
    _dim_given(dim, "special_logsumexp")
    return _math.logsumexp(_as_tensor(input, "special_logsumexp"), dim, keepdim)


def softmax(input, dim=_REQUIRED, *, dtype=None):
    """torch.special.softmax: torch.softmax (SoftmaxBackward0); `dim` is required."""
    _dim_given(dim, "special_softmax")
    return _F.softmax(_as_tensor(input, "special_softmax"), dim, dtype=dtype)


def log_softmax(input, dim=_REQUIRED, *, dtype=None):
    """torch.special.log_softmax: torch.log_softmax (LogSoftmaxBackward0); `dim` is required."""
    _dim_given(dim, "special_log_softmax")
    return _F.log_softmax(_as_tensor(input, "special_log_softmax"), dim, dtype=dtype)


def round(input=_REQUIRED, *surplus, decimals=0):  # noqa: A001
    """torch.special.round: torch.round(input, decimals=decimals), which records RoundBackward1
    (the decimals overload) even for decimals=0."""
    a = _as_tensor(_one_input(input, surplus, "special_round"), "special_round")
    return _math.round(a, decimals=decimals)


# ------------------------------------------------------------------ Bessel, Airy, erfcx, igamma, zeta, polynomials
# (ops in fusegrad/ir/ops/special_extra.py, whose docstring states their accuracy against torch)
import numpy as _np  # noqa: E402

from fusegrad.ir.types import TORCH_SCALAR_NAMES  # noqa: E402
from fusegrad.ir.ops import broadcast_shapes as _broadcast_shapes  # noqa: E402
from fusegrad.tracer.dispatch import result_cast_error as _result_cast_error  # noqa: E402
from fusegrad.tracer.extra_functions import _float_dtype, _not_implemented, _operand, _write  # noqa: E402
from fusegrad.tracer.functional import _promoted  # noqa: E402
from fusegrad.tracer.node import display_edges as _display_edges  # noqa: E402
from fusegrad.tracer.parser_errors import type_name as _type_name  # noqa: E402
from fusegrad.tracer.tensor import Tensor as _Tensor  # noqa: E402


def _unary_float(op: str, node: str | None, doc: str):
    """torch.special.<op>(input): float32 for integer and bool inputs, as torch's unary float ops."""
    torch_name = "special_" + op

    def function(input=_REQUIRED, *surplus):
        a = _as_tensor(_one_input(input, surplus, torch_name), torch_name)
        return _apply((op, [a], None, node, _float_dtype([a], torch_name)))
    function.__name__ = function.__qualname__ = op
    function.__doc__ = doc
    return function


_NO_GRAD = " torch defines no derivative: the result never requires grad."
bessel_j0 = _unary_float("bessel_j0", None, "torch.special.bessel_j0: J0(x)." + _NO_GRAD)
bessel_j1 = _unary_float("bessel_j1", None, "torch.special.bessel_j1: J1(x)." + _NO_GRAD)
bessel_y0 = _unary_float("bessel_y0", None, "torch.special.bessel_y0: Y0(x), -inf at 0, NaN below." + _NO_GRAD)
bessel_y1 = _unary_float("bessel_y1", None, "torch.special.bessel_y1: Y1(x), -inf at 0, NaN below." + _NO_GRAD)
modified_bessel_i0 = _unary_float("modified_bessel_i0", None, "torch.special.modified_bessel_i0: I0(x)." + _NO_GRAD)
modified_bessel_i1 = _unary_float("modified_bessel_i1", None, "torch.special.modified_bessel_i1: I1(x)." + _NO_GRAD)
modified_bessel_k0 = _unary_float("modified_bessel_k0", None,
                                  "torch.special.modified_bessel_k0: K0(x), inf at 0, NaN below." + _NO_GRAD)
modified_bessel_k1 = _unary_float("modified_bessel_k1", None,
                                  "torch.special.modified_bessel_k1: K1(x), inf at 0, NaN below." + _NO_GRAD)
scaled_modified_bessel_k0 = _unary_float("scaled_modified_bessel_k0", None,
                                         "torch.special.scaled_modified_bessel_k0: exp(x) K0(x)." + _NO_GRAD)
scaled_modified_bessel_k1 = _unary_float("scaled_modified_bessel_k1", None,
                                         "torch.special.scaled_modified_bessel_k1: exp(x) K1(x)." + _NO_GRAD)
spherical_bessel_j0 = _unary_float("spherical_bessel_j0", None,
                                   "torch.special.spherical_bessel_j0: sin(x) / x, 1 at 0, 0 at +-inf." + _NO_GRAD)
airy_ai = _unary_float("airy_ai", None, "torch.special.airy_ai: Ai(x), NaN at +-inf." + _NO_GRAD)
erfcx = _unary_float("erfcx", "SpecialErfcxBackward0",
                     "torch.special.erfcx: exp(x^2) erfc(x) (SpecialErfcxBackward0: 2 x erfcx(x) - 2 / sqrt(pi)).")


# ---- igamma / igammac: two tensors, floating only (torch's kernels are not defined for integers)
def _igamma_plan(op: str, input, other, fn: str):
    a, b = _as_tensor(input, fn, "input", 1), _as_tensor(other, fn, "other", 2)
    dtype = _promoted([a, b], fn)[1]
    if not dtype.is_floating_point:
        # (torch's TensorIterator broadcasts the shapes before its kernel refuses the dtype)
        _broadcast_shapes(tuple(a.shape), tuple(b.shape))
        raise _not_implemented(f"{op}_cpu", dtype)
    return op, [a, b], None, "IgammaBackward0" if op == "igamma" else "IgammacBackward0", dtype


def gammainc(input, other):
    """torch.special.gammainc: the regularized lower incomplete gamma function P(input, other)
    (IgammaBackward0: differentiable in `other` only; backward through `input` raises torch's
    "the derivative for 'igamma: input' is not implemented.")."""
    return _apply(_igamma_plan("igamma", input, other, "special_gammainc"))


def gammaincc(input, other):
    """torch.special.gammaincc: the regularized upper incomplete gamma function Q(input, other)
    (IgammacBackward0; differentiable in `other` only)."""
    return _apply(_igamma_plan("igammac", input, other, "special_gammaincc"))


def igamma(input, other):
    """torch.igamma: torch.special.gammainc."""
    return _apply(_igamma_plan("igamma", input, other, "igamma"))


def igammac(input, other):
    """torch.igammac: torch.special.gammaincc."""
    return _apply(_igamma_plan("igammac", input, other, "igammac"))


def _igamma_method(op: str):
    def method(self, other):
        return _apply(_igamma_plan(op, self, other, op))

    def in_place(self, other):
        plan = _igamma_plan(op, self, other, op + "_")
        if not self._dtype.is_floating_point:
            raise _result_cast_error("Float", TORCH_SCALAR_NAMES[self._dtype.name])
        return _write(self, plan)
    method.__name__, in_place.__name__ = op, op + "_"
    method.__doc__ = f"Tensor.{op}(other): torch.{op}(self, other)."
    in_place.__doc__ = f"In-place Tensor.{op}_(other) (self must be floating)."
    return method, in_place


# ---- zeta and the polynomials: a tensor and a tensor or a number (torch's three overloads)
def _tensor_or_number_plan(op: str, first, second, fn: str, names: tuple, nodes: tuple | None):
    if not isinstance(first, (_Tensor, _np.ndarray)) and not isinstance(second, (_Tensor, _np.ndarray)) or \
            not _is_operand(first) or not _is_operand(second):
        first_name = "input" if names[0] == "self" else names[0]
        listed = "".join(f"\n * {overload}" for overload in (
            f"(Tensor {first_name}, Tensor {names[1]}, *, Tensor out = None)",
            f"(Number {names[0]}, Tensor {names[1]}, *, Tensor out = None)",
            f"(Tensor {first_name}, Number {names[1]}, *, Tensor out = None)"))
        raise TypeError(f"{fn}() received an invalid combination of arguments - got ({_type_name(first)}, "
                        f"{_type_name(second)}), but expected one of:{listed}\n")
    a, b = _operand(first, fn, names[0], 1), _operand(second, fn, names[1], 2)
    dtype = _float_dtype([a, b], fn)
    node = None
    if nodes is not None:
        node = nodes[0] if isinstance(a, _Tensor) and isinstance(b, _Tensor) else \
            nodes[1] if isinstance(b, _Tensor) else nodes[2]
    if not isinstance(a, _Tensor):
        a = _F.tensor_from_scalar(a)
    return op, [a, b], None, node, dtype


def _is_operand(x) -> bool:
    return isinstance(x, (_Tensor, _np.ndarray, bool, int, float, _np.number))


def zeta(input, other):
    """torch.special.zeta: Hurwitz's zeta function zeta(input, other) = sum_k (other + k)^-input; a
    number may stand for either operand (SpecialZetaBackward0, 1 or 2, as torch's overloads: the
    gradient w.r.t. `other` is -input zeta(input + 1, other); w.r.t. `input` backward raises torch's
    "the derivative for 'zeta' is not implemented.")."""
    out = _apply(_tensor_or_number_plan("zeta", input, other, "special_zeta", ("self", "other"),
                                        ("SpecialZetaBackward0", "SpecialZetaBackward1", "SpecialZetaBackward2")))
    if out._grad_fn is not None and not (isinstance(input, _Tensor) and isinstance(other, _Tensor)):
        edges = out._grad_fn.next_functions
        _display_edges(out._grad_fn, edges[1:] if isinstance(other, _Tensor) else edges[:1])
    return out


def _polynomial(op: str, what: str):
    fn = "special_" + op

    def function(x, n):
        return _apply(_tensor_or_number_plan(op, x, n, fn, ("x", "n"), None))
    function.__name__ = function.__qualname__ = op
    function.__doc__ = (f"torch.special.{op}(x, n): {what}, by torch's recurrence in the result's dtype; n "
                        "(a tensor or a number) is truncated to an integer, a negative (or non-finite) n gives 0."
                        + _NO_GRAD)
    return function


chebyshev_polynomial_t = _polynomial("chebyshev_polynomial_t", "the Chebyshev polynomial of the first kind T_n(x)")
chebyshev_polynomial_u = _polynomial("chebyshev_polynomial_u", "the Chebyshev polynomial of the second kind U_n(x)")
chebyshev_polynomial_v = _polynomial("chebyshev_polynomial_v", "the Chebyshev polynomial of the third kind V_n(x)")
chebyshev_polynomial_w = _polynomial("chebyshev_polynomial_w", "the Chebyshev polynomial of the fourth kind W_n(x)")
shifted_chebyshev_polynomial_t = _polynomial("shifted_chebyshev_polynomial_t", "T_n(2x - 1)")
shifted_chebyshev_polynomial_u = _polynomial("shifted_chebyshev_polynomial_u", "U_n(2x - 1)")
shifted_chebyshev_polynomial_v = _polynomial("shifted_chebyshev_polynomial_v", "V_n(2x - 1)")
shifted_chebyshev_polynomial_w = _polynomial("shifted_chebyshev_polynomial_w", "W_n(2x - 1)")
hermite_polynomial_h = _polynomial("hermite_polynomial_h",
                                   "the physicists' Hermite polynomial H_n(x) (NaN for n > 128 in float32, 512 in float64)")
hermite_polynomial_he = _polynomial("hermite_polynomial_he",
                                    "the probabilists' Hermite polynomial He_n(x) (NaN past the same n)")
laguerre_polynomial_l = _polynomial("laguerre_polynomial_l", "the Laguerre polynomial L_n(x)")
legendre_polynomial_p = _polynomial("legendre_polynomial_p", "the Legendre polynomial P_n(x)")

__all__ += ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
            "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "erfcx", "gammainc",
            "gammaincc", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
            "legendre_polynomial_p", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
            "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
            "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
            "shifted_chebyshev_polynomial_w", "spherical_bessel_j0", "zeta"]

# Tensor.igamma / igammac and their in-place forms (torch's only Tensor methods among these): bound
# here, beside the functions, as fusegrad may reach into the tracer layer's Tensor
_Tensor.igamma, _Tensor.igamma_ = _igamma_method("igamma")
_Tensor.igammac, _Tensor.igammac_ = _igamma_method("igammac")
