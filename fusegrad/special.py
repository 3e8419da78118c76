"""fg.special: torch.special's functions that fusegrad has (`import fusegrad as fg; fg.special.gammaln(x)`).

Each is the fusegrad function torch.special's is (and records the same node: expit is
SigmoidBackward0, gammaln LgammaBackward0, psi DigammaBackward0, multigammaln MvlgammaBackward0,
round RoundBackward1, ndtr torch's composite of mul, erf and add); their argument errors name
torch.special's functions (`special_gammaln(): argument 'input' ...`). The accuracy of the special
functions is stated in fusegrad/ir/ops/special.py. `out=` is not supported. torch.special's Bessel
functions of other kinds, orthogonal polynomials, zeta, gammainc and erfcx are not provided.
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
