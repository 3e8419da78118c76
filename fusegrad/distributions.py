"""fg.distributions: the commonly used part of torch.distributions, written as composites
of fusegrad's Tensor ops (so log_prob, entropy, rsample... differentiate and trace into
fg.compile like any other code).

Parameters, shapes, validation (`validate_args`, torch's ValueError texts), formulas and
kl_divergence's registry follow torch 2.13's torch.distributions. Differences, by choice:
- Samples are torch's numbers for a seed where torch draws them with the generator's own
  transforms (Normal, LogNormal, Uniform, Exponential, Laplace, Cauchy, Geometric, Bernoulli,
  Categorical and OneHotCategorical through multinomial, MultivariateNormal); otherwise they have torch's
  shapes, dtypes and laws, not its values (below).
- Gamma, Dirichlet, Beta, Binomial and Poisson sample through NumPy from a seed drawn from
  fusegrad's generator (so fg.manual_seed reproduces them); they cannot run inside
  fg.compile (a clear RuntimeError says so). Gamma/Dirichlet/Beta rsample differentiate
  w.r.t. Gamma's rate only: torch's implicit gradient of the gamma sampler w.r.t.
  concentration is not implemented, and rsample raises NotImplementedError where it would
  be needed (concentration requiring grad). Gamma.cdf (torch: special.gammainc) raises
  NotImplementedError.
- LogNormal is its own class (torch: a TransformedDistribution of Normal by ExpTransform),
  with the same values, properties and repr.
- MultivariateNormal computes Cholesky factors and triangular solves with fusegrad ops
  (column by column), so they differentiate; precision_matrix is turned into scale_tril
  as cholesky(inverse(precision)) (torch: a flipped Cholesky, the same factor). The
  factorisation reads (A + A^T) / 2 (torch: A's lower triangle; the same for the symmetric
  matrices validation admits), which gives torch's symmetric gradient.
"""
import math
import numbers

import numpy as np

import fusegrad as fg
from fusegrad.nn import functional as F

__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Dirichlet", "Distribution", "Exponential",
           "Gamma", "Geometric", "Independent", "Laplace", "LogNormal", "MultivariateNormal", "Normal", "OneHotCategorical", "Poisson",
           "Uniform", "constraints", "kl_divergence", "register_kl"]

_EPS = {fg.float32: 1.1920928955078125e-07, fg.float64: 2.220446049250313e-16}
_TINY = {fg.float32: 1.1754943508222875e-38, fg.float64: 2.2250738585072014e-308}
_MIN = {fg.float32: -3.4028234663852886e+38, fg.float64: -1.7976931348623157e+308}


# ----------------------------------------------------------------------------- constraints
class _Constraints:
    """torch.distributions.constraints: objects whose check(value) says elementwise (per
    event) whether a value is allowed; their reprs are torch's."""

    class Constraint:
        is_discrete = False
        event_dim = 0

        def check(self, value):
            raise NotImplementedError

        def __repr__(self):
            return self.__class__.__name__[1:] + "()"

    class _Dependent(Constraint):
        def __init__(self, *, is_discrete=False, event_dim=0):
            self.is_discrete, self.event_dim = is_discrete, event_dim

        def check(self, x):
            raise ValueError("Cannot determine validity of dependent constraint")

    class _Real(Constraint):
        def check(self, value):
            return value == value

    class _Boolean(Constraint):
        is_discrete = True

        def check(self, value):
            return (value == 0) | (value == 1)

    class _OneHot(Constraint):
        is_discrete, event_dim = True, 1

        def check(self, value):
            return ((value == 0) | (value == 1)).all(-1) & value.sum(-1).eq(1)

    class _Bounded(Constraint):
        def __init__(self, lower_bound=None, upper_bound=None):
            self.lower_bound, self.upper_bound = lower_bound, upper_bound

        def __repr__(self):
            fields = [f"{k}={getattr(self, k)}" for k in ("lower_bound", "upper_bound") if getattr(self, k) is not None]
            return f"{self.__class__.__name__[1:]}({', '.join(fields)})"

    class _GreaterThan(_Bounded):
        def check(self, value):
            return self.lower_bound < value

    class _GreaterThanEq(_Bounded):
        def check(self, value):
            return self.lower_bound <= value

    class _LessThan(_Bounded):
        def check(self, value):
            return value < self.upper_bound

    class _Interval(_Bounded):
        def check(self, value):
            return (self.lower_bound <= value) & (value <= self.upper_bound)

    class _IntegerInterval(_Bounded):
        is_discrete = True

        def check(self, value):
            return (value % 1 == 0) & (self.lower_bound <= value) & (value <= self.upper_bound)

    class _IntegerGreaterThan(_Bounded):
        is_discrete = True

        def check(self, value):
            return (value % 1 == 0) & (value >= self.lower_bound)

    class _Simplex(Constraint):
        event_dim = 1

        def check(self, value):
            return fg.all(value >= 0, dim=-1) & ((value.sum(-1) - 1).abs() < 1e-6)

    class _LowerCholesky(Constraint):
        event_dim = 2

        def check(self, value):
            lower = (value.tril() == value).reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)
            return lower & (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)

    class _PositiveDefinite(Constraint):
        event_dim = 2

        def check(self, value):
            symmetric = fg.isclose(value, value.mT, atol=1e-6).reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)
            array = value.detach().numpy()
            definite = np.linalg.eigvalsh(0.5 * (array + np.swapaxes(array, -1, -2))).min(-1) > 0
            return symmetric & fg.tensor(np.asarray(definite))

    class _IndependentConstraint(Constraint):
        def __init__(self, base_constraint, reinterpreted_batch_ndims):
            self.base_constraint, self.reinterpreted_batch_ndims = base_constraint, reinterpreted_batch_ndims
            self.is_discrete = base_constraint.is_discrete
            self.event_dim = base_constraint.event_dim + reinterpreted_batch_ndims

        def check(self, value):
            result = self.base_constraint.check(value)
            if result.dim() < self.reinterpreted_batch_ndims:
                expected = self.base_constraint.event_dim + self.reinterpreted_batch_ndims
                raise ValueError(f"Expected value.dim() >= {expected} but got {value.dim()}")
            n = self.reinterpreted_batch_ndims
            return result.reshape(tuple(result.shape[:result.dim() - n]) + (-1,)).all(-1)

        def __repr__(self):
            return f"{self.__class__.__name__[1:]}({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"

    def __init__(self):
        self.dependent = self._Dependent()
        self.real = self._Real()
        self.boolean = self._Boolean()
        self.one_hot = self._OneHot()
        self.positive = self._GreaterThan(0.0)
        self.nonnegative = self._GreaterThanEq(0.0)
        self.unit_interval = self._Interval(0.0, 1.0)
        self.nonnegative_integer = self._IntegerGreaterThan(0)
        self.positive_integer = self._IntegerGreaterThan(1)
        self.simplex = self._Simplex()
        self.lower_cholesky = self._LowerCholesky()
        self.positive_definite = self._PositiveDefinite()
        self.real_vector = self._IndependentConstraint(self.real, 1)
        self.greater_than, self.greater_than_eq = self._GreaterThan, self._GreaterThanEq
        self.less_than = lambda upper_bound: self._LessThan(upper_bound=upper_bound)
        self.interval, self.integer_interval = self._Interval, self._IntegerInterval
        self.independent = self._IndependentConstraint

    def is_dependent(self, constraint):
        """Whether `constraint` depends on the distribution's other parameters."""
        return isinstance(constraint, self._Dependent)


constraints = _Constraints()


# ----------------------------------------------------------------------------- helpers
class lazy_property:
    """torch.distributions.utils.lazy_property: computed on first access (with grad enabled)
    and then stored on the instance."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        with fg.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def broadcast_all(*values):
    """torch.distributions.utils.broadcast_all: numbers become tensors of the first tensor's
    dtype (float32 if none), then all broadcast together."""
    if not all(isinstance(v, (fg.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    dtype = next((v.dtype for v in values if isinstance(v, fg.Tensor)), fg.float32)
    return fg.broadcast_tensors(*[v if isinstance(v, fg.Tensor) else fg.tensor(v, dtype=dtype) for v in values])


def clamp_probs(probs):
    """torch.distributions.utils.clamp_probs: probabilities clamped to [eps, 1 - eps]."""
    eps = _EPS[probs.dtype]
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """torch's probs_to_logits: log-odds (binary) or log-probabilities, from clamped probs."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return fg.log(ps_clamped) - fg.log1p(-ps_clamped)
    return fg.log(ps_clamped)


def logits_to_probs(logits, is_binary=False):
    """torch's logits_to_probs: sigmoid (binary) or softmax over the last dim."""
    return fg.sigmoid(logits) if is_binary else F.softmax(logits, dim=-1)


def _sum_rightmost(value, dim):
    return value if dim == 0 else value.reshape(tuple(value.shape[:value.dim() - dim]) + (-1,)).sum(-1)


def _size(shape):
    return fg.Size(tuple(shape))


def _numpy_rng(what):
    """A NumPy generator seeded from fusegrad's stream (so fg.manual_seed repeats it)."""
    if fg.is_compiling():
        raise RuntimeError(f"fusegrad: {what} samples through NumPy and cannot run inside fg.compile; "
                           "draw the sample outside the compiled function")
    return np.random.default_rng(fg.randint(0, 2 ** 62, (2,)).tolist())


def _cholesky(a):
    """Lower Cholesky factor of the symmetric positive-definite matrices `a` (..., n, n),
    column by column in fusegrad ops (so it differentiates and traces). It factors
    (a + a^T) / 2, so its gradient is symmetric as torch.linalg.cholesky's."""
    a = 0.5 * (a + a.mT)
    n = a.shape[-1]
    rows = fg.arange(n)
    cols = []
    for j in range(n):
        v = a[..., :, j]
        if j:
            done = fg.stack(cols, -1)
            v = v - (done * done[..., j:j + 1, :]).sum(-1)
        cols.append(v / v[..., j:j + 1].sqrt() * (rows >= j).to(a.dtype))
    return fg.stack(cols, -1)


def _solve_lower(tril, b):
    """tril^-1 b for lower-triangular `tril` (..., n, n) and vectors `b` (..., n), by
    forward substitution (shapes broadcast)."""
    ys = []
    for i in range(tril.shape[-1]):
        v = b[..., i]
        for k, y in enumerate(ys):
            v = v - tril[..., i, k] * y
        ys.append(v / tril[..., i, i])
    return fg.stack(ys, -1)


def _batch_mahalanobis(tril, x):
    """|tril^-1 x|^2 over the last dim (torch.distributions.multivariate_normal's)."""
    return _solve_lower(tril, x).pow(2).sum(-1)


# ----------------------------------------------------------------------------- Distribution
class Distribution:
    """torch.distributions.Distribution: the base class (batch_shape, event_shape, sample,
    rsample, log_prob, ... and argument validation with torch's texts)."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value):
        """Set whether validation is on by default (torch: on unless python -O)."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=fg.Size(), event_shape=fg.Size(), validate_args=None):
        self._batch_shape, self._event_shape = _size(batch_shape), _size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            for param, constraint in self.arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(getattr(type(self), param, None), lazy_property):
                    continue
                value = getattr(self, param)
                if not bool(constraint.check(value).all()):
                    raise ValueError(f"Expected parameter {param} ({type(value).__name__} of shape "
                                     f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                                     f"{constraint!r}, but found invalid values:\n{value}")

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def arg_constraints(self):
        return {}

    @property
    def support(self):
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return self.variance.sqrt()

    def expand(self, batch_shape, _instance=None):
        """A view of this distribution with its parameters expanded to `batch_shape` (the
        parameters found in the instance's __dict__, as torch's subclasses do by hand)."""
        new = self._get_checked_instance(type(self), _instance)
        batch_shape = _size(batch_shape)
        for name in self.arg_constraints:
            if name in self.__dict__:
                value = self.__dict__[name]
                setattr(new, name, value.expand(batch_shape + tuple(value.shape[len(self.batch_shape):])))
        for name, value in self.__dict__.items():
            if name.startswith("_") and name not in ("_batch_shape", "_event_shape", "_validate_args"):
                new.__dict__[name] = value
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=fg.Size()):
        """A sample (no gradient) of shape sample_shape + batch_shape + event_shape."""
        with fg.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=fg.Size()):
        raise NotImplementedError

    def sample_n(self, n):
        return self.sample(fg.Size((n,)))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return fg.exp(self.entropy())

    def _extended_shape(self, sample_shape=fg.Size()):
        return _size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value):
        if not isinstance(value, fg.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.size()) - len(self._event_shape)
        if tuple(value.size()[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: {value.size()} vs "
                             f"{self._event_shape}.")
        actual_shape, expected_shape = value.size(), self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual_shape} vs "
                                 f"{expected_shape}.")
        support = self.support
        if not bool(support.check(value).all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                             f"within the support ({support!r}) of the distribution {self!r}, but found invalid "
                             f"values:\n{value}")

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                                      "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self):
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"
                         for p in names)
        return self.__class__.__name__ + "(" + args + ")"


class ExponentialFamily(Distribution):
    """torch.distributions.ExponentialFamily (a marker base here)."""


def _scalar_batch(*values):
    return all(isinstance(v, numbers.Number) for v in values)


# ----------------------------------------------------------------------------- continuous
class _LocScale:
    """The (loc, scale) parameters of Normal, Laplace and Cauchy: broadcast together, their
    shape the batch shape (none for two numbers); real samples, reparameterised."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        batch = fg.Size() if _scalar_batch(loc, scale) else self.loc.size()
        super().__init__(batch, validate_args=validate_args)

    mode = property(lambda self: self.loc)


class Normal(_LocScale, ExponentialFamily):
    """torch.distributions.Normal(loc, scale)."""

    mean = property(lambda self: self.loc)
    stddev = property(lambda self: self.scale)
    variance = property(lambda self: self.stddev.pow(2))

    def rsample(self, sample_shape=fg.Size()):
        eps = fg.randn(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale ** 2
        log_scale = math.log(self.scale) if isinstance(self.scale, numbers.Real) else self.scale.log()
        return -((value - self.loc) ** 2) / (2 * var) - log_scale - math.log(math.sqrt(2 * math.pi))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + fg.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value):
        return self.loc + self.scale * fg.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + fg.log(self.scale)


class LogNormal(Distribution):
    """torch.distributions.LogNormal(loc, scale): exp of a Normal (torch builds it as a
    TransformedDistribution; here its own class with the same values and repr)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.base_dist = Normal(loc, scale, validate_args=validate_args)
        super().__init__(self.base_dist.batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogNormal, _instance)
        new.base_dist = self.base_dist.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    loc = property(lambda self: self.base_dist.loc)
    scale = property(lambda self: self.base_dist.scale)
    mean = property(lambda self: (self.loc + self.scale.pow(2) / 2).exp())
    mode = property(lambda self: (self.loc - self.scale.square()).exp())

    @property
    def variance(self):
        scale_sq = self.scale.pow(2)
        return scale_sq.expm1() * (2 * self.loc + scale_sq).exp()

    def rsample(self, sample_shape=fg.Size()):
        return self.base_dist.rsample(sample_shape).exp()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        x = value.log()
        return 0.0 - x + self.base_dist.log_prob(x)

    def cdf(self, value):
        return self.base_dist.cdf(value.log())

    def icdf(self, value):
        return self.base_dist.icdf(value).exp()

    def entropy(self):
        return self.base_dist.entropy() + self.loc


class Uniform(Distribution):
    """torch.distributions.Uniform(low, high): the half-open interval [low, high)."""

    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        batch = fg.Size() if _scalar_batch(low, high) else self.low.size()
        super().__init__(batch, validate_args=validate_args)

    @property
    def arg_constraints(self):
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    @property
    def support(self):
        return constraints.interval(self.low, self.high)

    mean = property(lambda self: (self.high + self.low) / 2)
    mode = property(lambda self: math.nan * self.high)
    stddev = property(lambda self: (self.high - self.low) / 12 ** 0.5)
    variance = property(lambda self: (self.high - self.low).pow(2) / 12)

    def rsample(self, sample_shape=fg.Size()):
        rand = fg.rand(self._extended_shape(sample_shape), dtype=self.low.dtype)
        return self.low + rand * (self.high - self.low)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        lb = self.low.le(value).type_as(self.low)
        ub = self.high.gt(value).type_as(self.low)
        return fg.log(lb.mul(ub)) - fg.log(self.high - self.low)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return fg.log(self.high - self.low)


class Exponential(ExponentialFamily):
    """torch.distributions.Exponential(rate)."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(fg.Size() if isinstance(rate, numbers.Number) else self.rate.size(), validate_args=validate_args)

    mean = property(lambda self: self.rate.reciprocal())
    mode = property(lambda self: fg.zeros_like(self.rate))
    stddev = property(lambda self: self.rate.reciprocal())
    variance = property(lambda self: self.rate.pow(-2))

    def rsample(self, sample_shape=fg.Size()):
        # (torch's: an exponential_ draw divided by the rate)
        return fg.empty(self._extended_shape(sample_shape), dtype=self.rate.dtype).exponential_() / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - fg.exp(-self.rate * value)

    def icdf(self, value):
        return -fg.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - fg.log(self.rate)


class Laplace(_LocScale, Distribution):
    """torch.distributions.Laplace(loc, scale)."""

    mean = property(lambda self: self.loc)
    variance = property(lambda self: 2 * self.scale.pow(2))
    stddev = property(lambda self: (2 ** 0.5) * self.scale)

    def rsample(self, sample_shape=fg.Size()):
        eps = _EPS[self.loc.dtype]
        u = fg.rand(self._extended_shape(sample_shape), dtype=self.loc.dtype) * (2 - eps) + (eps - 1)
        return self.loc - self.scale * u.sign() * fg.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -fg.log(2 * self.scale) - fg.abs(value - self.loc) / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * fg.expm1(-(value - self.loc).abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * fg.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + fg.log(2 * self.scale)


class Cauchy(_LocScale, Distribution):
    """torch.distributions.Cauchy(loc, scale): samples loc + scale * a cauchy_() draw."""

    mean = property(lambda self: fg.full(self._extended_shape(), math.nan, dtype=self.loc.dtype))
    variance = property(lambda self: fg.full(self._extended_shape(), math.inf, dtype=self.loc.dtype))

    def rsample(self, sample_shape=fg.Size()):
        eps = fg.empty(self._extended_shape(sample_shape), dtype=self.loc.dtype).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return fg.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return fg.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()


def _standard_gamma(concentration, what):
    """Gamma(concentration, 1) samples (NumPy), clamped to the dtype's tiny as torch does."""
    if fg.is_grad_enabled() and concentration.requires_grad:
        raise NotImplementedError(f"fusegrad: {what}.rsample does not differentiate w.r.t. concentration (torch's "
                                  "implicit gamma-sampler gradient is not implemented); use sample() or detach it")
    array = concentration.detach().numpy()
    values = _numpy_rng(what).standard_gamma(array).astype(array.dtype)
    return fg.tensor(np.maximum(values, _TINY[concentration.dtype]), dtype=concentration.dtype)


class Gamma(ExponentialFamily):
    """torch.distributions.Gamma(concentration, rate). rsample differentiates w.r.t. rate only
    (see the module's docstring); cdf is not implemented (torch: special.gammainc)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        batch = fg.Size() if _scalar_batch(concentration, rate) else self.concentration.size()
        super().__init__(batch, validate_args=validate_args)

    mean = property(lambda self: self.concentration / self.rate)
    mode = property(lambda self: ((self.concentration - 1) / self.rate).clamp(min=0))
    variance = property(lambda self: self.concentration / self.rate.pow(2))

    def rsample(self, sample_shape=fg.Size()):
        shape = self._extended_shape(sample_shape)
        return _standard_gamma(self.concentration.expand(shape), "Gamma") / self.rate.expand(shape)

    def log_prob(self, value):
        value = fg.as_tensor(value, dtype=self.rate.dtype)
        if self._validate_args:
            self._validate_sample(value)
        return (fg.xlogy(self.concentration, self.rate) + fg.xlogy(self.concentration - 1, value)
                - self.rate * value - fg.lgamma(self.concentration))

    def cdf(self, value):
        raise NotImplementedError("fusegrad: Gamma.cdf needs torch.special.gammainc, which fusegrad does not have")

    def entropy(self):
        return (self.concentration - fg.log(self.rate) + fg.lgamma(self.concentration)
                + (1.0 - self.concentration) * fg.digamma(self.concentration))


class Dirichlet(ExponentialFamily):
    """torch.distributions.Dirichlet(concentration): rsample as Gamma's (no gradient w.r.t.
    concentration, see the module's docstring)."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def rsample(self, sample_shape=fg.Size()):
        shape = self._extended_shape(sample_shape)
        gammas = _standard_gamma(self.concentration.expand(shape), "Dirichlet")
        values = gammas / gammas.sum(-1, keepdim=True)
        return values.clamp(min=_TINY[values.dtype], max=1 - _EPS[values.dtype])

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (fg.xlogy(self.concentration - 1.0, value).sum(-1) + fg.lgamma(self.concentration.sum(-1))
                - fg.lgamma(self.concentration).sum(-1))

    mean = property(lambda self: self.concentration / self.concentration.sum(-1, True))

    @property
    def mode(self):
        concm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concm1 / concm1.sum(-1, True)
        mask = (self.concentration < 1).all(dim=-1, keepdim=True)
        corner = F.one_hot(mode.argmax(-1), concm1.shape[-1]).to(mode.dtype)
        return fg.where(mask, corner, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (fg.lgamma(self.concentration).sum(-1) - fg.lgamma(a0) - (k - a0) * fg.digamma(a0)
                - ((self.concentration - 1.0) * fg.digamma(self.concentration)).sum(-1))


class Beta(ExponentialFamily):
    """torch.distributions.Beta(concentration1, concentration0): a two-category Dirichlet, as
    in torch (so its repr lists no parameters, as torch's)."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        if _scalar_batch(concentration1, concentration0):
            both = fg.tensor([float(concentration1), float(concentration0)])
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            both = fg.stack([concentration1, concentration0], -1)
        self._dirichlet = Dirichlet(both, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    concentration1 = property(lambda self: self._dirichlet.concentration[..., 0])
    concentration0 = property(lambda self: self._dirichlet.concentration[..., 1])
    mean = property(lambda self: self.concentration1 / (self.concentration1 + self.concentration0))
    mode = property(lambda self: self._dirichlet.mode[..., 0])

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=fg.Size()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(fg.stack([value, 1.0 - value], -1))

    def entropy(self):
        return self._dirichlet.entropy()


class MultivariateNormal(Distribution):
    """torch.distributions.MultivariateNormal(loc, covariance_matrix=None,
    precision_matrix=None, scale_tril=None): exactly one of the three. Cholesky factors and
    triangular solves are fusegrad ops (see the module's docstring)."""

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        for name, matrix in (("scale_tril", scale_tril), ("covariance_matrix", covariance_matrix),
                             ("precision_matrix", precision_matrix)):
            if matrix is not None:
                if matrix.dim() < 2:
                    raise ValueError(f"{name} matrix must be at least two-dimensional, "
                                     "with optional leading batch dimensions")
                batch_shape = fg.broadcast_shapes(matrix.shape[:-2], loc.shape[:-1])
                setattr(self, name, matrix.expand(tuple(batch_shape) + (-1, -1)))
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = _cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _cholesky(fg.inverse(precision_matrix))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = tuple(batch_shape)
        loc_shape, cov_shape = batch_shape + tuple(self.event_shape), batch_shape + tuple(self.event_shape) * 2
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        tril = self._unbroadcasted_scale_tril
        return fg.matmul(tril, tril.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        inverse = fg.inverse(self._unbroadcasted_scale_tril)
        return fg.matmul(inverse.mT, inverse).expand(self._matrix_shape())

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(tuple(self._batch_shape) + tuple(self._event_shape))

    def rsample(self, sample_shape=fg.Size()):
        eps = fg.randn(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + fg.matmul(self._unbroadcasted_scale_tril, eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + m) - half_log_det

    def entropy(self):
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        h = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        return h if len(self._batch_shape) == 0 else h.expand(self._batch_shape)


# ----------------------------------------------------------------------------- discrete
class _ProbsOrLogits:
    """The probs/logits pair of Bernoulli, Binomial and Categorical: one is given, the other
    computed lazily."""

    def _one_of(self, probs, logits):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")

    @property
    def param_shape(self):
        return self._param.size()


class _BinaryProbsOrLogits(_ProbsOrLogits):
    """One probability (or log-odds) per batch element, of Bernoulli and Geometric: broadcast,
    its shape the batch shape (none for a number), the other form computed lazily."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._one_of(probs, logits)
        given = probs if probs is not None else logits
        (param,) = broadcast_all(given)
        if probs is not None:
            self.probs = param
        else:
            self.logits = param
        self._param = param
        super().__init__(fg.Size() if isinstance(given, numbers.Number) else param.size(), validate_args=validate_args)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)


class Bernoulli(_BinaryProbsOrLogits, ExponentialFamily):
    """torch.distributions.Bernoulli(probs=None, logits=None)."""

    support = constraints.boolean
    has_enumerate_support = True

    mean = property(lambda self: self.probs)
    variance = property(lambda self: self.probs * (1 - self.probs))

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return fg.where(self.probs == 0.5, fg.full_like(mode, math.nan), mode)

    def sample(self, sample_shape=fg.Size()):
        with fg.no_grad():
            return fg.bernoulli(self.probs.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand=True):
        values = fg.arange(2, dtype=self._param.dtype).reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class Geometric(_BinaryProbsOrLogits, Distribution):
    """torch.distributions.Geometric(probs=None, logits=None): the failures before the first
    success, in {0, 1, ...}; samples floor(log(u) / log1p(-p)), u a uniform_(tiny, 1) draw."""

    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        super().__init__(probs, logits, validate_args)
        if self._validate_args and probs is not None and not bool((self.probs > 0).all()):
            # (torch's extra check beyond unit_interval)
            raise ValueError(f"Expected parameter probs ({type(self.probs).__name__} of shape {tuple(self.probs.shape)}) "
                             f"of distribution {self!r} to be positive but found invalid values:\n"
                             f"{self.probs.data[~(self.probs > 0)]}")

    mean = property(lambda self: 1.0 / self.probs - 1.0)
    mode = property(lambda self: fg.zeros_like(self.probs))
    variance = property(lambda self: (1.0 / self.probs - 1.0) / self.probs)

    def sample(self, sample_shape=fg.Size()):
        with fg.no_grad():
            u = fg.empty(self._extended_shape(sample_shape), dtype=self.probs.dtype).uniform_(_TINY[self.probs.dtype], 1)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = probs.clone(memory_format=fg.contiguous_format)
        probs[(probs == 1) & (value == 0)] = 0
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs


class Binomial(_ProbsOrLogits, Distribution):
    """torch.distributions.Binomial(total_count=1, probs=None, logits=None). Samples through
    NumPy (see the module's docstring)."""

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        self._one_of(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.type_as(self.probs)
            self._param = self.probs
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.type_as(self.logits)
            self._param = self.logits
        super().__init__(self._param.size(), validate_args=validate_args)

    logits = Bernoulli.logits
    probs = Bernoulli.probs

    @property
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    mean = property(lambda self: self.total_count * self.probs)
    mode = property(lambda self: ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count))
    variance = property(lambda self: self.total_count * self.probs * (1 - self.probs))

    def sample(self, sample_shape=fg.Size()):
        shape = tuple(self._extended_shape(sample_shape))
        with fg.no_grad():
            n = self.total_count.expand(shape).numpy().astype(np.int64)
            p = self.probs.expand(shape).numpy()
            values = _numpy_rng("Binomial").binomial(n, p)
        return fg.tensor(np.asarray(values), dtype=self._param.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_factorial_n = fg.lgamma(self.total_count + 1)
        log_factorial_k = fg.lgamma(value + 1)
        log_factorial_nmk = fg.lgamma(self.total_count - value + 1)
        logits = self.logits
        clamped = (logits.clamp(min=0) + logits - logits.clamp(max=0)) / 2
        normalize_term = (self.total_count * clamped + self.total_count * fg.log1p(fg.exp(-fg.abs(logits)))
                          - log_factorial_n)
        return value * logits - log_factorial_k - log_factorial_nmk - normalize_term

    def _homogeneous_count(self, what):
        total_count = int(self.total_count.max())
        if not self.total_count.min() == total_count:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return total_count

    def entropy(self):
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(fg.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        total_count = self._homogeneous_count("enumerate_support")
        values = fg.arange(1 + total_count, dtype=self._param.dtype).reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class Categorical(_ProbsOrLogits, Distribution):
    """torch.distributions.Categorical(probs=None, logits=None): samples are int64 category
    indices, drawn by inverse CDF (torch: multinomial)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._one_of(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.size()[-1]
        batch_shape = self._param.size()[:-1] if self._param.dim() > 1 else fg.Size()
        super().__init__(batch_shape, validate_args=validate_args)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self):
        return fg.full(self._extended_shape(), math.nan, dtype=self.probs.dtype)

    @property
    def variance(self):
        return fg.full(self._extended_shape(), math.nan, dtype=self.probs.dtype)

    mode = property(lambda self: self.probs.argmax(dim=-1))

    def sample(self, sample_shape=fg.Size()):
        # (torch's: multinomial with replacement of every sample at once, one row per batch element)
        sample_shape = fg.Size(sample_shape)
        probs_2d = self.probs.reshape(-1, self._num_events)
        samples_2d = fg.multinomial(probs_2d, sample_shape.numel(), True).T
        return samples_2d.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = fg.broadcast_tensors(value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        logits = fg.clamp(self.logits, min=_MIN[self.logits.dtype])
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = fg.arange(self._num_events, dtype=fg.int64).reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class OneHotCategorical(Distribution):
    """torch.distributions.OneHotCategorical(probs=None, logits=None): a Categorical whose
    samples are one-hot vectors of the probs' dtype."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(OneHotCategorical, _instance)
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    _param = property(lambda self: self._categorical._param)
    probs = property(lambda self: self._categorical.probs)
    logits = property(lambda self: self._categorical.logits)
    param_shape = property(lambda self: self._categorical.param_shape)
    mean = property(lambda self: self._categorical.probs)
    variance = property(lambda self: self._categorical.probs * (1 - self._categorical.probs))

    @property
    def mode(self):
        probs = self._categorical.probs
        return F.one_hot(probs.argmax(-1), probs.shape[-1]).to(probs.dtype)

    def sample(self, sample_shape=fg.Size()):
        probs = self._categorical.probs
        indices = self._categorical.sample(sample_shape)
        return F.one_hot(indices, self._categorical._num_events).to(probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.max(-1)[1])

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self.event_shape[0]
        values = fg.eye(n, dtype=self._param.dtype).reshape((n,) + (1,) * len(self.batch_shape) + (n,))
        return values.expand((n,) + tuple(self.batch_shape) + (n,)) if expand else values


class Poisson(ExponentialFamily):
    """torch.distributions.Poisson(rate). Samples through NumPy (see the module's docstring)."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(fg.Size() if isinstance(rate, numbers.Number) else self.rate.size(), validate_args=validate_args)

    mean = property(lambda self: self.rate)
    mode = property(lambda self: self.rate.floor())
    variance = property(lambda self: self.rate)

    def sample(self, sample_shape=fg.Size()):
        shape = tuple(self._extended_shape(sample_shape))
        with fg.no_grad():
            values = _numpy_rng("Poisson").poisson(self.rate.expand(shape).numpy())
        return fg.tensor(np.asarray(values), dtype=self.rate.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - (value + 1).lgamma()


# ----------------------------------------------------------------------------- Independent
class Independent(Distribution):
    """torch.distributions.Independent(base_distribution, reinterpreted_batch_ndims): the
    rightmost batch dims of the base become event dims."""

    arg_constraints = {}

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        if reinterpreted_batch_ndims > len(base_distribution.batch_shape):
            raise ValueError("Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                             f"actual {reinterpreted_batch_ndims} vs {len(base_distribution.batch_shape)}")
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        event_dim = reinterpreted_batch_ndims + len(base_distribution.event_shape)
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, reinterpreted_batch_ndims
        super().__init__(shape[:len(shape) - event_dim], shape[len(shape) - event_dim:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Independent, _instance)
        batch_shape = tuple(batch_shape)
        new.base_dist = self.base_dist.expand(batch_shape + tuple(self.event_shape[:self.reinterpreted_batch_ndims]))
        new.reinterpreted_batch_ndims = self.reinterpreted_batch_ndims
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    has_rsample = property(lambda self: self.base_dist.has_rsample)

    @property
    def has_enumerate_support(self):
        return False if self.reinterpreted_batch_ndims > 0 else self.base_dist.has_enumerate_support

    @property
    def support(self):
        result = self.base_dist.support
        return constraints.independent(result, self.reinterpreted_batch_ndims) if self.reinterpreted_batch_ndims \
            else result

    mean = property(lambda self: self.base_dist.mean)
    mode = property(lambda self: self.base_dist.mode)
    variance = property(lambda self: self.base_dist.variance)

    def sample(self, sample_shape=fg.Size()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=fg.Size()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return _sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        return _sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand=True):
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self):
        return self.__class__.__name__ + f"({self.base_dist}, {self.reinterpreted_batch_ndims})"


# ----------------------------------------------------------------------------- KL
_KL_REGISTRY = {}
_KL_MEMOIZE = {}


def register_kl(type_p, type_q):
    """torch.distributions.register_kl: a decorator registering `fun(p, q)` as the KL
    divergence of the pair of Distribution subclasses."""
    if not (isinstance(type_p, type) and issubclass(type_p, Distribution)):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not (isinstance(type_q, type) and issubclass(type_q, Distribution)):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun
    return decorator


def _dispatch_kl(type_p, type_q):
    """The most specific registered pair (by the classes' MRO depth, p first)."""
    matches = [(p, q) for p, q in _KL_REGISTRY if issubclass(type_p, p) and issubclass(type_q, q)]
    if not matches:
        return NotImplemented
    best = min(matches, key=lambda m: (type_p.__mro__.index(m[0]), type_q.__mro__.index(m[1])))
    return _KL_REGISTRY[best]


def kl_divergence(p, q):
    """torch.distributions.kl_divergence(p, q): KL(p || q), batched over batch_shape;
    NotImplementedError with torch's text for an unregistered pair."""
    key = (type(p), type(q))
    if key not in _KL_MEMOIZE:
        _KL_MEMOIZE[key] = _dispatch_kl(*key)
    fun = _KL_MEMOIZE[key]
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {p.__class__.__name__} and q type "
                                  f"{q.__class__.__name__}")
    return fun(p, q)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1 = fg.where(p.probs == 0, 0.0, fg.where(q.probs == 0, math.inf, t1))
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2 = fg.where(p.probs == 1, 0.0, fg.where(q.probs == 1, math.inf, t2))
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = fg.where((q.probs == 0).expand_as(t), math.inf, t)
    t = fg.where((p.probs == 0).expand_as(t), 0.0, t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return fg.where((q.low > p.low) | (q.high < p.high), math.inf, result)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    # (torch's: https://arxiv.org/abs/1905.10965)
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    t2 = (4 * p.scale * q.scale).log()
    return t1 - t2


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - fg.log1p(-q.probs) / p.probs - q.logits


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    return -scale_ratio.log() + loc_abs_diff / q.scale + scale_ratio * fg.exp(-loc_abs_diff / p.scale) - 1


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = fg.lgamma(q.concentration) - fg.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * fg.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sum_params_p = p.concentration1 + p.concentration0
    sum_params_q = q.concentration1 + q.concentration0
    t1 = q.concentration1.lgamma() + q.concentration0.lgamma() + sum_params_p.lgamma()
    t2 = p.concentration1.lgamma() + p.concentration0.lgamma() + sum_params_q.lgamma()
    t3 = (p.concentration1 - q.concentration1) * fg.digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * fg.digamma(p.concentration0)
    t5 = (sum_params_q - sum_params_p) * fg.digamma(sum_params_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with"
                         "                          different event shapes cannot be computed")
    q_tril, p_tril = q._unbroadcasted_scale_tril, p._unbroadcasted_scale_tril
    half_term1 = q_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) - p_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    n = p.event_shape[0]
    term2 = sum(_solve_lower(q_tril, p_tril[..., :, j]).pow(2).sum(-1) for j in range(n))
    term3 = _batch_mahalanobis(q_tril, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)
