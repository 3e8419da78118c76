"""fg.distributions against torch.distributions: values and parameter gradients of
log_prob / entropy / mean / variance / cdf / kl_divergence, shapes, validation texts, and
sampling laws (fusegrad's random stream differs from torch's: statistics only)."""
import math

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch 2.13 is the oracle of these cases")
from parity_support import assert_same  # noqa: E402

FD, TD = fg.distributions, torch.distributions
rng = np.random.default_rng(0)


def _pos(*shape):
    return rng.uniform(0.5, 2.0, shape).astype(np.float32)


def _simplex(*shape):
    p = rng.uniform(0.1, 1.0, shape).astype(np.float32)
    return p / p.sum(-1, keepdims=True)


_cov = (lambda a: a @ np.swapaxes(a, -1, -2) + 3 * np.eye(3, dtype=np.float32))(
    rng.normal(size=(2, 3, 3)).astype(np.float32))
_tril = np.tril(rng.normal(size=(2, 3, 3)).astype(np.float32), -1) + np.diag(_pos(3))
_onehot = np.eye(3, dtype=np.float32)[rng.integers(0, 3, (4, 2))]

# name: (factory(D, params), params, value)
CASES = {
    "normal": (lambda D, p: D.Normal(*p), [rng.normal(size=(2, 3)).astype(np.float32), _pos(2, 3)],
               rng.normal(size=(4, 2, 3)).astype(np.float32)),
    "lognormal": (lambda D, p: D.LogNormal(*p), [rng.normal(size=3).astype(np.float32), _pos(3)], _pos(2, 3)),
    "uniform": (lambda D, p: D.Uniform(*p), [np.float32([0.0, -1.0]), np.float32([1.0, 2.0])], np.float32([0.5, 1.5])),
    "exponential": (lambda D, p: D.Exponential(*p), [_pos(3)], _pos(2, 3)),
    "laplace": (lambda D, p: D.Laplace(*p), [rng.normal(size=3).astype(np.float32), _pos(3)],
                rng.normal(size=(2, 3)).astype(np.float32)),
    "gamma": (lambda D, p: D.Gamma(*p), [_pos(3) * 2, _pos(3)], _pos(2, 3)),
    "beta": (lambda D, p: D.Beta(*p), [_pos(3) * 2, _pos(3) * 2], np.float32([[0.2, 0.5, 0.9]])),
    "dirichlet": (lambda D, p: D.Dirichlet(*p), [_pos(2, 3) * 2], _simplex(2, 3)),
    "poisson": (lambda D, p: D.Poisson(*p), [_pos(3) * 2], np.float32([[0, 1, 4], [2, 0, 7]])),
    "bernoulli_probs": (lambda D, p: D.Bernoulli(probs=p[0]), [np.float32([0.2, 0.5, 0.9])], np.float32([1, 0, 1])),
    "bernoulli_logits": (lambda D, p: D.Bernoulli(logits=p[0]), [np.float32([-1.0, 0.3, 2.0])],
                         np.float32([[1, 0, 1], [0, 0, 1]])),
    "binomial": (lambda D, p: D.Binomial(5, probs=p[0]), [np.float32([0.2, 0.5, 0.9])], np.float32([0, 3, 5])),
    "binomial_logits": (lambda D, p: D.Binomial(fg.tensor([4., 6.]) if D is FD else torch.tensor([4., 6.]),
                                                logits=p[0]), [np.float32([-0.5, 1.0])], np.float32([1, 6])),
    "categorical_probs": (lambda D, p: D.Categorical(probs=p[0]), [_simplex(2, 4)], np.int64([[0, 3], [2, 1]])),
    "categorical_logits": (lambda D, p: D.Categorical(logits=p[0]), [rng.normal(size=(2, 3)).astype(np.float32)],
                           np.int64([[0, 2], [1, 1], [2, 0]])),
    "onehot": (lambda D, p: D.OneHotCategorical(logits=p[0]), [rng.normal(size=(2, 3)).astype(np.float32)], _onehot),
    "mvn_tril": (lambda D, p: D.MultivariateNormal(p[0], scale_tril=p[1]),
                 [rng.normal(size=3).astype(np.float32), _tril], rng.normal(size=(4, 2, 3)).astype(np.float32)),
    "mvn_cov": (lambda D, p: D.MultivariateNormal(p[0], covariance_matrix=p[1]),
                [rng.normal(size=(2, 3)).astype(np.float32), _cov], rng.normal(size=(5, 1, 3)).astype(np.float32)),
    "mvn_prec": (lambda D, p: D.MultivariateNormal(p[0], precision_matrix=p[1]),
                 [rng.normal(size=3).astype(np.float32), _cov[0]], rng.normal(size=(2, 3)).astype(np.float32)),
    "independent": (lambda D, p: D.Independent(D.Normal(*p), 1), [rng.normal(size=(2, 3)).astype(np.float32),
                                                                   _pos(2, 3)], rng.normal(size=(2, 3)).astype(np.float32)),
}
NO_ENTROPY = {"poisson", "binomial_logits"}  # torch: none; inhomogeneous total_count
HAS_CDF = {"normal", "lognormal", "uniform", "exponential", "laplace"}
SKIP_MODE = {"dirichlet", "beta"}  # mode values checked in a case of their own


def _build(lib, name, grad=True):
    factory, params, value = CASES[name]
    ts = [lib.tensor(p, requires_grad=grad) for p in params]
    D = FD if lib is fg else TD
    return factory(D, ts), ts, lib.tensor(value)


def _finite(t):
    return t[(t == t) & (t.abs() != math.inf)] if t.dim() else t


@pytest.mark.parametrize("name", CASES)
def test_values_and_parameter_gradients(name):
    outs = {}
    for lib in (torch, fg):
        d, params, value = _build(lib, name)
        res = {"log_prob": d.log_prob(value), "mean": d.mean, "variance": d.variance, "stddev": d.stddev}
        if name not in NO_ENTROPY:
            res["entropy"] = d.entropy()
        if name in HAS_CDF:
            res["cdf"] = d.cdf(value)
            res["icdf"] = d.icdf(lib.tensor(np.float32([0.1, 0.7, 0.3])[:d.batch_shape[-1]]))
        if name not in SKIP_MODE:
            res["mode"] = d.mode
        loss = sum(_finite(v).sum() for k, v in res.items() if v.requires_grad)
        loss.backward()
        res["grads"] = [p.grad for p in params]
        outs[lib] = (d, res)
    (td, tres), (fd, fres) = outs[torch], outs[fg]
    assert tuple(fd.batch_shape) == tuple(td.batch_shape) and tuple(fd.event_shape) == tuple(td.event_shape)
    assert repr(fd).replace("fg.Size", "torch.Size") == repr(td)
    for key in tres:
        if key == "grads":
            for ours, theirs in zip(fres[key], tres[key]):
                assert_same(ours, theirs, rtol=1e-4, atol=1e-5)
        else:
            assert_same(fres[key], tres[key], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["dirichlet", "beta"])
def test_dirichlet_beta_mode(name):
    for conc in ([2.0, 3.0, 0.5], [0.5, 0.3, 0.2]):
        t = (torch.tensor(conc), fg.tensor(conc))
        if name == "beta":
            assert_same(FD.Beta(t[1][0], t[1][1]).mode, TD.Beta(t[0][0], t[0][1]).mode)
        else:
            assert_same(FD.Dirichlet(t[1]).mode, TD.Dirichlet(t[0]).mode)


KL_PAIRS = ["normal", "bernoulli_probs", "categorical_logits", "onehot", "uniform", "exponential", "laplace", "gamma",
            "beta", "poisson", "mvn_tril", "mvn_cov", "independent"]


@pytest.mark.parametrize("name", KL_PAIRS)
def test_kl_divergence_and_gradients(name):
    factory, params, _ = CASES[name]
    other = [p + np.float32(0.3) if name != "uniform" else p * np.float32(1.5) for p in params]
    if name in ("bernoulli_probs",):
        other = [np.float32([0.4, 0.1, 0.6])]
    if name in ("mvn_cov",):
        other = [params[0] + 1, params[1] + 2 * np.eye(3, dtype=np.float32)]
    if name in ("mvn_tril",):
        other = [params[0] + 1, params[1][::-1].copy()]
    results = []
    for lib, D in ((torch, TD), (fg, FD)):
        ps = [lib.tensor(p, requires_grad=True) for p in params]
        qs = [lib.tensor(p, requires_grad=True) for p in other]
        kl = D.kl_divergence(factory(D, ps), factory(D, qs))
        kl.sum().backward()
        results.append((kl, [t.grad for t in ps + qs]))
    assert_same(results[1][0], results[0][0], rtol=1e-4, atol=1e-5)
    for ours, theirs in zip(results[1][1], results[0][1]):
        assert_same(ours, theirs, rtol=1e-4, atol=1e-4)


def test_kl_special_values_and_registry():
    t = TD.kl_divergence(TD.Uniform(0.0, 1.0), TD.Uniform(0.5, 2.0))
    assert_same(FD.kl_divergence(FD.Uniform(0.0, 1.0), FD.Uniform(0.5, 2.0)), t)
    pr = [[0.0, 0.5, 0.5], [0.3, 0.3, 0.4]]
    qr = [[0.2, 0.8, 0.0], [0.3, 0.3, 0.4]]
    assert_same(FD.kl_divergence(FD.Categorical(fg.tensor(pr)), FD.Categorical(fg.tensor(qr))),
                TD.kl_divergence(TD.Categorical(torch.tensor(pr)), TD.Categorical(torch.tensor(qr))))
    assert_same(FD.kl_divergence(FD.Bernoulli(fg.tensor([0.0, 1.0, 0.3])), FD.Bernoulli(fg.tensor([0.5, 0.0, 1.0]))),
                TD.kl_divergence(TD.Bernoulli(torch.tensor([0.0, 1.0, 0.3])), TD.Bernoulli(torch.tensor([0.5, 0.0, 1.0]))))
    for D in (TD, FD):
        with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for p type "
                                                      "Categorical and q type Normal"):
            D.kl_divergence(D.Categorical(D.Normal(0.0, 1.0).loc.reshape(1).exp()), D.Normal(0.0, 1.0))

    class MyNormal(FD.Normal):  # a subclass finds its base's registration
        pass

    @FD.register_kl(MyNormal, FD.Laplace)
    def _kl(p, q):
        return p.loc * 0 + 7.0
    assert FD.kl_divergence(MyNormal(0.0, 1.0), FD.Laplace(0.0, 1.0)).item() == 7.0
    assert FD.kl_divergence(MyNormal(0.0, 1.0), FD.Normal(1.0, 1.0)).item() == pytest.approx(0.5)
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution subclass"):
        FD.register_kl(int, FD.Normal)


def _message(fn, lib):
    D = FD if lib is fg else TD
    with pytest.raises(Exception) as info:
        fn(D, lib)
    return type(info.value), str(info.value).replace("fg.Size", "torch.Size")


@pytest.mark.parametrize("fn", [
    lambda D, L: D.Normal(L.tensor([0.0, 1.0]), L.tensor([1.0, -1.0])),
    lambda D, L: D.Normal(0.0, 0.0),
    lambda D, L: D.Bernoulli(probs=L.tensor([0.3, 1.5])),
    lambda D, L: D.Bernoulli(0.3).log_prob(L.tensor(0.5)),
    lambda D, L: D.Bernoulli(),
    lambda D, L: D.Bernoulli(probs=0.3, logits=0.1),
    lambda D, L: D.Categorical(L.tensor(1.0)),
    lambda D, L: D.Categorical(logits=L.tensor(1.0)),
    lambda D, L: D.Categorical(L.tensor([0.5, -0.5])),
    lambda D, L: D.Categorical(L.ones(2, 3)).log_prob(L.zeros(4, 3)),
    lambda D, L: D.Categorical(L.ones(2, 3)).log_prob(L.tensor([0, 3])),
    lambda D, L: D.Normal(0.0, 1.0).log_prob(1.0),
    lambda D, L: D.Uniform(1.0, 0.0),
    lambda D, L: D.Uniform(0.0, 1.0).log_prob(L.tensor(1.5)),
    lambda D, L: D.Exponential(L.tensor([1.0, 0.0])),
    lambda D, L: D.Poisson(1.0).log_prob(L.tensor(0.5)),
    lambda D, L: D.MultivariateNormal(L.zeros(2), L.eye(3)).log_prob(L.zeros(3)),
    lambda D, L: D.MultivariateNormal(L.tensor(0.0), L.eye(3)),
    lambda D, L: D.MultivariateNormal(L.zeros(3)),
    lambda D, L: D.MultivariateNormal(L.zeros(3), scale_tril=L.ones(3)),
    lambda D, L: D.MultivariateNormal(L.zeros(2), scale_tril=L.tensor([[1.0, 1.0], [0.0, 1.0]])),
    lambda D, L: D.MultivariateNormal(L.zeros(2), covariance_matrix=L.tensor([[1.0, 2.0], [2.0, 1.0]])),
    lambda D, L: D.Independent(D.Normal(L.zeros(3), 1.0), 2),
    lambda D, L: D.OneHotCategorical(logits=L.zeros(3)).log_prob(L.tensor([1.0, 1.0, 0.0])),
    lambda D, L: D.kl_divergence(D.MultivariateNormal(L.zeros(2), L.eye(2)), D.MultivariateNormal(L.zeros(3), L.eye(3))),
    lambda D, L: D.Binomial(5, L.tensor([0.3, 0.2])).log_prob(L.tensor([6.0, 1.0])),
    lambda D, L: D.Binomial(L.tensor([2.0, 3.0]), L.tensor([0.3, 0.2])).entropy(),
])
def test_validation_errors(fn):
    assert _message(fn, fg) == _message(fn, torch)


def test_validate_args_off_and_default():
    assert FD.Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0
    assert math.isnan(FD.Bernoulli(0.3, validate_args=False).log_prob(fg.tensor(0.5)).item()) is False
    FD.Distribution.set_default_validate_args(False)
    try:
        FD.Normal(0.0, -1.0)
    finally:
        FD.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        FD.Normal(0.0, -1.0)


@pytest.mark.parametrize("name", [n for n in CASES if n not in ("binomial_logits",)])
def test_sample_shapes_dtypes_and_expand(name):
    td, _, _ = _build(torch, name, grad=False)
    fd, _, _ = _build(fg, name, grad=False)
    for shape in ((), (5,), (2, 3)):
        ours, theirs = fd.sample(shape), td.sample(shape)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        assert ours.grad_fn is None
    assert bool(fd.support.check(fd.sample((7,))).all())
    new_batch = (4,) + tuple(td.batch_shape)
    te, fe = td.expand(new_batch), fd.expand(new_batch)
    assert tuple(fe.batch_shape) == tuple(te.batch_shape) and tuple(fe.event_shape) == tuple(te.event_shape)
    assert tuple(fe.sample().shape) == tuple(te.sample().shape)
    assert_same(fe.mean, te.mean, rtol=1e-4, atol=1e-5)
    if td.has_enumerate_support:
        assert_same(fd.enumerate_support(), td.enumerate_support())
        assert_same(fd.enumerate_support(False), td.enumerate_support(False))


@pytest.mark.parametrize("make", [
    lambda D, L: D.Normal(L.tensor([0.5, -1.0]), L.tensor([1.0, 2.0])),
    lambda D, L: D.Uniform(L.tensor([0.0, -2.0]), L.tensor([1.0, 3.0])),
    lambda D, L: D.Exponential(L.tensor([0.5, 3.0])),
    lambda D, L: D.Laplace(L.tensor([0.5, -1.0]), L.tensor([1.0, 0.5])),
    lambda D, L: D.LogNormal(L.tensor([0.0, 0.3]), L.tensor([0.5, 0.25])),
    lambda D, L: D.Gamma(L.tensor([0.5, 3.0]), L.tensor([2.0, 1.0])),
    lambda D, L: D.Beta(L.tensor([0.5, 3.0]), L.tensor([2.0, 1.0])),
    lambda D, L: D.Poisson(L.tensor([0.5, 7.0])),
    lambda D, L: D.Bernoulli(L.tensor([0.1, 0.7])),
    lambda D, L: D.Binomial(10, L.tensor([0.1, 0.7])),
    lambda D, L: D.Categorical(L.tensor([0.1, 0.2, 0.7])),
    lambda D, L: D.OneHotCategorical(L.tensor([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]])),
    lambda D, L: D.MultivariateNormal(L.tensor([1.0, -1.0]), L.tensor([[2.0, 0.5], [0.5, 1.0]])),
])
def test_sampling_statistics(make):
    fg.manual_seed(0)
    d = make(FD, fg)
    x = d.sample((20000,)).to(fg.float64)
    theirs = make(TD, torch)
    mean, var = theirs.mean.double(), theirs.variance.double()
    if isinstance(theirs, TD.Categorical):   # torch's mean and variance are NaN: use the law's
        k = torch.arange(3, dtype=torch.float64)
        mean = (theirs.probs.double() * k).sum()
        var = (theirs.probs.double() * (k - mean) ** 2).sum()
    assert_same(x.mean(0), mean, rtol=0.05, atol=0.03)
    assert_same(x.var(0), var, rtol=0.07, atol=0.03)
    if isinstance(d, FD.MultivariateNormal):
        c = x - x.mean(0)
        assert_same((c.mT @ c) / 20000, make(TD, torch).covariance_matrix.double(), rtol=0.07, atol=0.03)


def test_rsample_gradients_are_reparameterised():
    loc, scale = fg.tensor([0.5, -1.0], requires_grad=True), fg.tensor([1.0, 2.0], requires_grad=True)
    x = FD.Normal(loc, scale).rsample((3,))
    x.sum().backward()
    assert_same(loc.grad, torch.tensor([3.0, 3.0]))
    assert_same(scale.grad, torch.from_numpy(((x.detach() - loc.detach()) / scale.detach()).sum(0).numpy()))
    rate = fg.tensor([0.5, 3.0], requires_grad=True)
    y = FD.Exponential(rate).rsample()
    y.sum().backward()
    assert_same(rate.grad, torch.from_numpy((-y.detach() / rate.detach()).numpy()))
    low, high = fg.tensor([0.0], requires_grad=True), fg.tensor([2.0], requires_grad=True)
    u = FD.Uniform(low, high).rsample()
    u.sum().backward()
    r = (u.detach() - low.detach()) / 2.0
    assert_same(high.grad, torch.from_numpy(r.numpy()))
    assert_same(low.grad, torch.from_numpy((1 - r).numpy()))
    mloc = fg.tensor([1.0, 2.0], requires_grad=True)
    tril = fg.tensor([[1.0, 0.0], [0.5, 2.0]], requires_grad=True)
    z = FD.MultivariateNormal(mloc, scale_tril=tril).rsample((4,))
    z.sum().backward()
    assert_same(mloc.grad, torch.tensor([4.0, 4.0]))
    eps = np.linalg.solve(np.float32([[1.0, 0.0], [0.5, 2.0]]), (z.detach().numpy() - np.float32([1, 2])).T)
    assert_same(tril.grad, torch.from_numpy(np.ones((2, 1), np.float32) * eps.sum(1)[None, :]), rtol=1e-4)  # as torch's L @ eps
    rate = fg.tensor([2.0], requires_grad=True)
    g = FD.Gamma(fg.tensor([3.0]), rate).rsample()
    g.sum().backward()
    assert_same(rate.grad, torch.from_numpy((-g.detach() / rate.detach()).numpy()))
    with pytest.raises(NotImplementedError, match="concentration"):
        FD.Gamma(fg.tensor([3.0], requires_grad=True), 1.0).rsample()


def test_reinforce_loss_matches_torch():
    logits = rng.normal(size=(5, 4)).astype(np.float32)
    actions = np.int64([0, 3, 1, 1, 2])
    adv = rng.normal(size=5).astype(np.float32)
    grads = []
    for lib, D in ((torch, TD), (fg, FD)):
        w = lib.tensor(logits, requires_grad=True)
        pi = D.Categorical(logits=w)
        a = pi.sample()
        assert tuple(a.shape) == (5,) and str(a.dtype).endswith("int64")
        loss = -(pi.log_prob(lib.tensor(actions)) * lib.tensor(adv)).mean() - 0.01 * pi.entropy().mean()
        loss.backward()
        grads.append((loss, w.grad))
    assert_same(grads[1][0], grads[0][0])
    assert_same(grads[1][1], grads[0][1])


def test_vae_loss_compiled_equals_eager():
    def vae_loss(mu, logvar, x):
        q = FD.Normal(mu, (0.5 * logvar).exp())
        z = q.rsample((2,))
        recon = ((z - x) ** 2).sum()
        prior = FD.Normal(fg.zeros_like(mu), fg.ones_like(mu))
        cat = FD.Categorical(logits=mu)
        return recon + FD.kl_divergence(q, prior).sum() + cat.log_prob(fg.tensor([1, 0])).sum() + z.sum() * 0

    compiled = fg.compile(vae_loss)
    results = []
    for fn in (vae_loss, compiled, compiled):
        mu = fg.tensor([[0.1, -0.3, 0.2], [0.5, 0.0, -1.0]], requires_grad=True)
        logvar = fg.tensor([[0.0, -1.0, 0.5], [0.2, 0.1, -0.4]], requires_grad=True)
        fg.manual_seed(7)
        loss = fn(mu, logvar, fg.ones(2, 3))
        loss.backward()
        results.append((loss.detach(), mu.grad, logvar.grad))
    for other in results[1:]:
        for ours, theirs in zip(other, results[0]):
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)


def test_numpy_sampled_distributions_refuse_compile():
    @fg.compile
    def draw(rate):
        return FD.Poisson(rate).sample()
    with pytest.raises(RuntimeError, match="cannot run inside fg.compile"):
        draw(fg.tensor([1.0]))


def test_discrete_samples_and_rsamples_compiled_equal_eager():
    def f(logits):
        c = FD.Categorical(logits=logits)
        a = c.sample((3,))
        b = FD.Bernoulli(logits=logits).sample()
        oh = FD.OneHotCategorical(logits=logits).sample()
        m = FD.MultivariateNormal(logits, scale_tril=fg.eye(3)).rsample()
        return (c.log_prob(a).sum() + b.sum() + oh.sum() + m.sum() + FD.Laplace(logits, 1.0).rsample().sum()
                + FD.Uniform(logits, logits + 1).rsample().sum())

    compiled = fg.compile(f)
    results = []
    for fn in (f, compiled):
        logits = fg.tensor([[0.1, -0.3, 0.2], [0.5, 0.0, -1.0]], requires_grad=True)
        fg.manual_seed(3)
        loss = fn(logits)
        loss.backward()
        results.append((loss.detach().numpy(), logits.grad.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
