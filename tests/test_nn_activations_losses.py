"""torch.nn's further activations and losses (fusegrad/nn/activations.py, losses.py,
ir/ops/nn_activations.py) against torch: values, gradients, grad_fn names, in-place forms,
modules' reprs, errors, and a few compiled cases."""
import warnings

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch 2.13 is the oracle of these cases")
TF = torch.nn.functional
F = fg.nn.functional

RNG = np.random.default_rng(0)


def _x(*shape, scale=3.0):
    x = np.asarray(RNG.standard_normal(shape) * scale, dtype=np.float32)
    if x.size >= 6:     # the kinks of the piecewise functions
        x.reshape(-1)[:6] = [-3.0, 3.0, 0.0, 1.0, -1.0, 0.5]
    return x


def _close(a, b, rtol=1e-5, atol=1e-6):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def _compare(fn_t, fn_f, *arrays, grads=None, names=True):
    """Forward and backward of fn(torch) and fn(fusegrad) on the same float arrays."""
    grads = range(len(arrays)) if grads is None else grads
    ts = [torch.tensor(a, requires_grad=i in grads and a.dtype.kind == "f") for i, a in enumerate(arrays)]
    fs = [fg.tensor(a, requires_grad=i in grads and a.dtype.kind == "f") for i, a in enumerate(arrays)]
    ty, fy = fn_t(*ts), fn_f(*fs)
    _close(fy, ty)
    if names:
        assert type(fy.grad_fn).__name__ == type(ty.grad_fn).__name__
    seed = np.asarray(RNG.standard_normal(tuple(ty.shape)), dtype=np.float32 if ty.dtype == torch.float32 else np.float64)
    ty.backward(torch.tensor(seed))
    fy.backward(fg.tensor(seed))
    for t, f in zip(ts, fs):
        if t.requires_grad:
            _close(f.grad, t.grad, rtol=1e-4, atol=1e-5)
    return fy


ACTIVATIONS = {
    "relu6": lambda m, x: m.relu6(x),
    "hardtanh": lambda m, x: m.hardtanh(x, -0.5, 2.0),
    "hardsigmoid": lambda m, x: m.hardsigmoid(x),
    "hardswish": lambda m, x: m.hardswish(x),
    "selu": lambda m, x: m.selu(x),
    "celu": lambda m, x: m.celu(x, 1.5),
    "mish": lambda m, x: m.mish(x),
    "softsign": lambda m, x: m.softsign(x),
    "softmin": lambda m, x: m.softmin(x, 0),
    "softmin_dtype": lambda m, x: m.softmin(x, -1, dtype=(torch if m is TF else fg).float64),
    "logsigmoid": lambda m, x: m.logsigmoid(x),
    "tanhshrink": lambda m, x: m.tanhshrink(x),
    "threshold": lambda m, x: m.threshold(x, 0.1, 20.0),
    "glu": lambda m, x: m.glu(x),
    "glu_dim0": lambda m, x: m.glu(x, 0),
    "hardshrink": lambda m, x: m.hardshrink(x, 1.0),
    "softshrink": lambda m, x: m.softshrink(x, 1.0),
    "rrelu_eval": lambda m, x: m.rrelu(x, 0.1, 0.3),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@pytest.mark.parametrize("shape", [(4, 6), (2, 4, 2), (6,)])
def test_activation_matches_torch(name, shape):
    f = ACTIVATIONS[name]
    _compare(lambda x: f(TF, x), lambda x: f(F, x), _x(*shape))


@pytest.mark.parametrize("name", ["relu6", "hardsigmoid", "selu", "mish", "logsigmoid", "softshrink", "threshold"])
def test_activation_0d_empty_float64(name):
    f = ACTIVATIONS[name]
    _compare(lambda x: f(TF, x), lambda x: f(F, x), np.float32(-0.7).reshape(()))
    _compare(lambda x: f(TF, x), lambda x: f(F, x), np.zeros((0, 3), np.float32))
    _compare(lambda x: f(TF, x), lambda x: f(F, x), _x(3, 4).astype(np.float64))


def test_special_values():
    x = np.array([np.nan, np.inf, -np.inf, -0.5, 0.5, 100.0, -100.0], np.float32)
    for name in ["relu6", "hardtanh", "hardsigmoid", "hardswish", "selu", "mish", "logsigmoid", "hardshrink",
                 "softshrink", "threshold"]:
        f = ACTIVATIONS[name]
        _close(f(F, fg.tensor(x)), f(TF, torch.tensor(x)))


INPLACE = {
    "hardtanh_": lambda m, x: m.hardtanh_(x, -0.5, 2.0),
    "relu6": lambda m, x: m.relu6(x, inplace=True),
    "hardsigmoid": lambda m, x: m.hardsigmoid(x, inplace=True),
    "hardswish": lambda m, x: m.hardswish(x, inplace=True),
    "selu_": lambda m, x: m.selu_(x),
    "celu_": lambda m, x: m.celu_(x, 2.0),
    "mish": lambda m, x: m.mish(x, inplace=True),
    "threshold_": lambda m, x: m.threshold_(x, 0.1, 2.0),
    "rrelu_": lambda m, x: m.rrelu_(x),
    "elu_": lambda m, x: m.elu_(x, 0.5),
    "leaky_relu_": lambda m, x: m.leaky_relu_(x, 0.2),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_forms(name):
    f = INPLACE[name]

    def run(m, x):
        y = x * 1
        out = f(m, y)
        assert out is y
        return y
    _compare(lambda x: run(TF, x), lambda x: run(F, x), _x(3, 5))


def test_integer_inputs():
    i = np.arange(-3, 4)
    for fn in [lambda m, x: m.hardtanh(x), lambda m, x: m.relu6(x), lambda m, x: m.threshold(x, 1, 5),
               lambda m, x: m.softsign(x), lambda m, x: m.tanhshrink(x)]:
        _close(fn(F, fg.tensor(i)), fn(TF, torch.tensor(i)))


@pytest.mark.parametrize("shape,channels", [((5, 6), 6), ((5, 6, 2), 6), ((6,), 1), ((5, 6), 1), ((), 1)])
def test_prelu(shape, channels):
    x = np.asarray(RNG.standard_normal(shape), np.float32)
    w = np.asarray(RNG.random(channels), np.float32)
    y = _compare(TF.prelu, F.prelu, x, w)
    t = TF.prelu(torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True))
    assert [type(n).__name__ for n, _ in y.grad_fn.next_functions] == \
           [type(n).__name__ for n, _ in t.grad_fn.next_functions]


def test_rrelu_training_distribution():
    x = fg.tensor(-np.ones(20000, np.float32), requires_grad=True)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    slopes = -y.detach().numpy()
    assert 0.1 <= slopes.min() and slopes.max() <= 0.3
    assert abs(slopes.mean() - 0.2) < 0.005 and abs(slopes.std() - 0.2 / np.sqrt(12)) < 0.005
    assert type(y.grad_fn).__name__ == "RreluWithNoiseBackward0"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), slopes)       # the gradient is each element's slope
    pos = F.rrelu(fg.tensor([1.0, 2.0]), training=True)
    np.testing.assert_array_equal(pos.numpy(), [1.0, 2.0])


ERRORS = [
    lambda m, t: m.hardtanh(t.randn(3), 1.0, 0.0),
    lambda m, t: m.hardtanh(t.tensor([True])),
    lambda m, t: m.hardsigmoid(t.arange(3)),
    lambda m, t: m.selu(t.arange(3)),
    lambda m, t: m.mish(t.arange(3)),
    lambda m, t: m.logsigmoid(t.arange(3)),
    lambda m, t: m.celu(t.randn(3), 0.0),
    lambda m, t: m.softshrink(t.randn(3), -1.0),
    lambda m, t: m.softshrink(t.randn(3).double(), -0.5),
    lambda m, t: m.threshold(t.tensor([True]), 0, 1),
    lambda m, t: m.glu(t.tensor(1.0)),
    lambda m, t: m.glu(t.randn(3, 5)),
    lambda m, t: m.glu(t.randn(4, 4), 2),
    lambda m, t: m.glu(t.arange(4)),
    lambda m, t: m.prelu(t.randn(2, 3), t.randn(2)),
    lambda m, t: m.prelu(t.tensor(1.0), t.randn(2)),
    lambda m, t: m.prelu(t.randn(2, 3), t.randn(1, 3)),
    lambda m, t: m.prelu(t.randn(2, 3), t.randn(3).double()),
    lambda m, t: m.rrelu(t.randn(3), 0.5, 0.1),
    lambda m, t: m.smooth_l1_loss(t.randn(3), t.randn(3), beta=-1.0),
    lambda m, t: m.smooth_l1_loss(t.arange(3), t.arange(3)),
    lambda m, t: m.smooth_l1_loss(t.randn(3), t.randn(3), reduction="foo"),
    lambda m, t: m.huber_loss(t.randn(3), t.randn(3), delta=0.0),
    lambda m, t: m.huber_loss(t.randn(3), t.randn(3), weight=t.ones(2)),
    lambda m, t: m.soft_margin_loss(t.randn(3), t.randn(3, requires_grad=True)),
    lambda m, t: m.kl_div(t.arange(3), t.arange(3), reduction="sum"),
    lambda m, t: m.kl_div(t.randn(3), t.randn(3), reduction="foo"),
    lambda m, t: m.cosine_similarity(t.arange(3), t.arange(3), dim=0),
    lambda m, t: m.cosine_embedding_loss(t.randn(3, 4), t.randn(3, 4), t.ones(3, 4)),
    lambda m, t: m.cosine_embedding_loss(t.randn(3, 4), t.randn(3, 4), t.tensor(1.0)),
    lambda m, t: m.cosine_embedding_loss(t.randn(4), t.randn(4), t.ones(3)),
    lambda m, t: m.margin_ranking_loss(t.randn(3, 4), t.randn(3, 4), t.ones(3)),
    lambda m, t: m.triplet_margin_loss(t.randn(3, 4), t.randn(3, 4), t.randn(3, 4), margin=0),
    lambda m, t: m.triplet_margin_loss(t.randn(3, 4), t.randn(4), t.randn(3, 4)),
    lambda m, t: m.poisson_nll_loss(t.randn(3), t.randn(3), reduction="foo"),
    lambda m, t: m.gaussian_nll_loss(t.randn(3, 4), t.randn(3, 4), t.ones(2)),
    lambda m, t: m.gaussian_nll_loss(t.randn(3, 4), t.randn(3, 4), -1.0),
    lambda m, t: m.gaussian_nll_loss(t.randn(3, 4), t.randn(3, 4), 1.0, reduction="x"),
    lambda m, t: m.multilabel_soft_margin_loss(t.randn(3, 4), t.randn(3, 4), reduction="x"),
    lambda m, t: m.multi_margin_loss(t.randn(2, 3, 4), t.tensor([1, 1])),
    lambda m, t: m.multi_margin_loss(t.randn(2, 3), t.tensor([1, 1, 1])),
    lambda m, t: m.multi_margin_loss(t.randn(2, 3), t.tensor([1, 3])),
    lambda m, t: m.multi_margin_loss(t.randn(2, 3), t.tensor([1, -1])),
    lambda m, t: m.multi_margin_loss(t.randn(2, 3), t.tensor([1.0, 0.0])),
    lambda m, t: m.multi_margin_loss(t.randn(2, 3), t.tensor([1, 0]), weight=t.ones(4)),
    lambda m, t: m.multi_margin_loss(t.randn(2, 3), t.tensor([1, 0]), weight=t.ones(3).double()),
    lambda m, t: m.multi_margin_loss(t.randn(2, 3), t.tensor([1, 0]), weight=t.ones(1, 3)),
    lambda m, t: m.multi_margin_loss(t.randn(2, 3), t.tensor([1, 0]), p=3),
    lambda m, t: m.multi_margin_loss(t.randn(2, 0), t.zeros(2, dtype=t.int64)),
    lambda m, t: m.multi_margin_loss(t.randn(2, 3), t.tensor([1, 0]), weight=t.ones(3, requires_grad=True)),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors_match_torch(k):
    with pytest.raises(Exception) as expected:
        ERRORS[k](TF, torch)
    with pytest.raises(type(expected.value)) as got:
        ERRORS[k](F, fg)
    assert str(got.value) == str(expected.value)


# ---------------------------------------------------------------- losses

def _target_like(x, kind):
    if kind == "signs":
        return np.where(RNG.random(x.shape) > 0.5, 1.0, -1.0).astype(x.dtype)
    if kind == "probs":
        p = RNG.random(x.shape).astype(x.dtype)
        return p / p.sum(-1, keepdims=True)
    if kind == "counts":
        return RNG.integers(0, 5, x.shape).astype(x.dtype)
    if kind == "binary":
        return (RNG.random(x.shape) > 0.5).astype(x.dtype)
    return np.asarray(RNG.standard_normal(x.shape), x.dtype)


LOSSES = {
    "smooth_l1": (lambda m, x, t, r: m.smooth_l1_loss(x, t, reduction=r, beta=0.7), "normal"),
    "smooth_l1_beta0": (lambda m, x, t, r: m.smooth_l1_loss(x, t, reduction=r, beta=0.0), "normal"),
    "huber": (lambda m, x, t, r: m.huber_loss(x, t, reduction=r, delta=0.6), "normal"),
    "soft_margin": (lambda m, x, t, r: m.soft_margin_loss(x, t, reduction=r), "signs"),
    "kl": (lambda m, x, t, r: m.kl_div(x, t, reduction=r), "probs"),
    "kl_log_target": (lambda m, x, t, r: m.kl_div(x, t, reduction=r, log_target=True), "normal"),
    "hinge": (lambda m, x, t, r: m.hinge_embedding_loss(x, t, margin=0.8, reduction=r), "signs"),
    "poisson": (lambda m, x, t, r: m.poisson_nll_loss(x, t, reduction=r), "counts"),
    "poisson_full": (lambda m, x, t, r: m.poisson_nll_loss(x.abs() + 0.1, t, log_input=False, full=True,
                                                           reduction=r), "counts"),
    "gaussian": (lambda m, x, t, r: m.gaussian_nll_loss(x, t, (x * 0 + 1.5).detach(), reduction=r), "normal"),
    "gaussian_full_float": (lambda m, x, t, r: m.gaussian_nll_loss(x, t, 0.8, full=True, reduction=r), "normal"),
    "multilabel": (lambda m, x, t, r: m.multilabel_soft_margin_loss(x, t, reduction=r), "binary"),
}


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_matches_torch(name, reduction):
    fn, kind = LOSSES[name]
    x = _x(4, 5)
    t = _target_like(x, kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _compare(lambda a, b: fn(TF, a, b, reduction), lambda a, b: fn(F, a, b, reduction), x, t,
                 grads=(0, 1) if name in ("smooth_l1", "huber") else (0,))


def test_kl_div_batchmean_and_warning():
    x, t = _x(4, 5), _target_like(_x(4, 5), "probs")
    _compare(lambda a, b: TF.kl_div(a, b, reduction="batchmean"), lambda a, b: F.kl_div(a, b, reduction="batchmean"),
             x, t, grads=(0,))
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(fg.tensor(x), fg.tensor(t))


def test_legacy_flags_and_broadcast_warning():
    x, t = _x(4, 5), _x(4, 5)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        out = F.smooth_l1_loss(fg.tensor(x), fg.tensor(t), size_average=False)
    _close(out, TF.smooth_l1_loss(torch.tensor(x), torch.tensor(t), reduction="sum"))
    with pytest.warns(UserWarning, match="that is different to the input size"):
        out = F.smooth_l1_loss(fg.tensor(x), fg.tensor(t[0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _close(out, TF.smooth_l1_loss(torch.tensor(x), torch.tensor(t[0])))
    _close(F.smooth_l1_loss(fg.tensor(x), fg.tensor(t).double()),
           TF.smooth_l1_loss(torch.tensor(x), torch.tensor(t).double()))


def test_huber_weight():
    x, t, w = _x(3, 4), _x(3, 4), np.asarray(RNG.random((3, 4)), np.float32)
    for r in ("none", "mean", "sum"):
        _compare(lambda a, b: TF.huber_loss(a, b, r, weight=torch.tensor(w)),
                 lambda a, b: F.huber_loss(a, b, r, weight=fg.tensor(w)), x, t)


@pytest.mark.parametrize("dim", [1, 0, -1])
def test_cosine_similarity(dim):
    x1, x2 = _x(4, 5), _x(4, 5)
    x2[0] = 0       # a zero row: the clamped norm
    _compare(lambda a, b: TF.cosine_similarity(a, b, dim), lambda a, b: F.cosine_similarity(a, b, dim), x1, x2)
    _compare(lambda a, b: TF.cosine_similarity(a, b), lambda a, b: F.cosine_similarity(a, b), x1, x2[:1])


@pytest.mark.parametrize("p,keepdim", [(2.0, False), (1.0, True), (3.0, False)])
def test_pairwise_distance(p, keepdim):
    x1, x2 = _x(4, 5), _x(4, 5)
    _compare(lambda a, b: TF.pairwise_distance(a, b, p, keepdim=keepdim),
             lambda a, b: F.pairwise_distance(a, b, p, keepdim=keepdim), x1, x2)
    _compare(lambda a, b: TF.pairwise_distance(a, b), lambda a, b: F.pairwise_distance(a, b), x1[0], x2[0])


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_pair_losses(reduction):
    x1, x2 = _x(4, 5), _x(4, 5)
    y = np.array([1.0, -1.0, 1.0, -1.0], np.float32)
    _compare(lambda a, b: TF.cosine_embedding_loss(a, b, torch.tensor(y), 0.2, reduction=reduction),
             lambda a, b: F.cosine_embedding_loss(a, b, fg.tensor(y), 0.2, reduction=reduction), x1, x2)
    _compare(lambda a, b: TF.cosine_embedding_loss(a, b, torch.tensor(-1.0), reduction=reduction),
             lambda a, b: F.cosine_embedding_loss(a, b, fg.tensor(-1.0), reduction=reduction), x1[0], x2[0])
    _compare(lambda a, b: TF.margin_ranking_loss(a, b, torch.tensor(y), 0.3, reduction=reduction),
             lambda a, b: F.margin_ranking_loss(a, b, fg.tensor(y), 0.3, reduction=reduction), x1[:, 0], x2[:, 0])


@pytest.mark.parametrize("swap,p", [(False, 2.0), (True, 2.0), (True, 1.0)])
@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_triplet_margin_loss(swap, p, reduction):
    a, pos, neg = _x(4, 5, scale=1.0), _x(4, 5, scale=1.0), _x(4, 5, scale=1.0)
    _compare(lambda *z: TF.triplet_margin_loss(*z, margin=1.5, p=p, swap=swap, reduction=reduction),
             lambda *z: F.triplet_margin_loss(*z, margin=1.5, p=p, swap=swap, reduction=reduction), a, pos, neg)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_multi_margin_loss(p, reduction, weighted):
    x = _x(5, 4, scale=0.5)
    target = np.array([0, 3, 1, 2, 3])
    w = np.asarray(RNG.random(4), np.float32)

    def run(m, t, a):
        return m.multi_margin_loss(a, t.tensor(target), p=p, margin=0.7, weight=t.tensor(w) if weighted else None,
                                   reduction=reduction)
    _compare(lambda a: run(TF, torch, a), lambda a: run(F, fg, a), x)
    _compare(lambda a: TF.multi_margin_loss(a, torch.tensor([2]), reduction=reduction),
             lambda a: F.multi_margin_loss(a, fg.tensor([2]), reduction=reduction), x[0], names=False)


def test_multilabel_soft_margin_weight():
    x, t, w = _x(3, 4), _target_like(_x(3, 4), "binary"), np.asarray(RNG.random(4), np.float32)
    _compare(lambda a: TF.multilabel_soft_margin_loss(a, torch.tensor(t), torch.tensor(w)),
             lambda a: F.multilabel_soft_margin_loss(a, fg.tensor(t), fg.tensor(w)), x)


def test_gaussian_nll_homoscedastic():
    x, t, v = _x(3, 4), _x(3, 4), np.asarray(RNG.random(3) + 0.5, np.float32)
    _compare(lambda a, b: TF.gaussian_nll_loss(a, torch.tensor(t), b), lambda a, b: F.gaussian_nll_loss(a, fg.tensor(t), b),
             x, v)
    _compare(lambda a, b: TF.gaussian_nll_loss(a, torch.tensor(t), b), lambda a, b: F.gaussian_nll_loss(a, fg.tensor(t), b),
             x, v[:, None])


# ---------------------------------------------------------------- modules

MODULES = [
    ("ReLU6", (), {}), ("ReLU6", (True,), {}), ("Hardtanh", (), {}), ("Hardtanh", (-2, 2, True), {}),
    ("Hardsigmoid", (), {}), ("Hardsigmoid", (True,), {}), ("Hardswish", (), {}), ("SELU", (), {}),
    ("SELU", (True,), {}), ("CELU", (), {}), ("CELU", (2.0, True), {}), ("Mish", (), {}), ("Mish", (True,), {}),
    ("Softsign", (), {}), ("Softmin", (), {}), ("Softmin", (1,), {}), ("LogSigmoid", (), {}), ("Tanhshrink", (), {}),
    ("Threshold", (0.1, 20), {}), ("Threshold", (0.1, 20, True), {}), ("GLU", (), {}), ("PReLU", (), {}),
    ("PReLU", (3, 0.1), {}), ("Hardshrink", (), {}), ("Softshrink", (0.3,), {}), ("RReLU", (), {}),
    ("RReLU", (0.1, 0.3, True), {}),
    ("SmoothL1Loss", (), {"beta": 0.5}), ("HuberLoss", (), {"delta": 2.0}), ("KLDivLoss", (), {"log_target": True}),
    ("CosineSimilarity", (), {"dim": 0}), ("PairwiseDistance", (), {"p": 1.0}), ("CosineEmbeddingLoss", (0.5,), {}),
    ("MarginRankingLoss", (), {}), ("HingeEmbeddingLoss", (), {}), ("SoftMarginLoss", (), {"reduction": "sum"}),
    ("PoissonNLLLoss", (), {"full": True}), ("GaussianNLLLoss", (), {"eps": 1e-3}), ("TripletMarginLoss", (), {}),
    ("MultiLabelSoftMarginLoss", (), {}), ("MultiMarginLoss", (2, 0.5), {}),
]


@pytest.mark.parametrize("name,args,kwargs", MODULES)
def test_module_repr_and_attributes(name, args, kwargs):
    t, f = getattr(torch.nn, name)(*args, **kwargs), getattr(fg.nn, name)(*args, **kwargs)
    assert repr(f) == repr(t)
    assert [(k, tuple(v.shape)) for k, v in f.named_parameters()] == \
           [(k, tuple(v.shape)) for k, v in t.named_parameters()]
    for attr in ("reduction", "inplace", "dim", "beta", "delta", "margin", "p", "eps", "lambd", "lower", "upper"):
        if hasattr(t, attr):
            assert getattr(f, attr) == getattr(t, attr)


def test_prelu_module_trains():
    t, f = torch.nn.PReLU(4, init=0.2), fg.nn.PReLU(4, init=0.2)
    _close(f.weight, t.weight)
    x = _x(3, 4, 2)
    _compare(lambda a: t(a), lambda a: f(a), x)
    _close(f.weight.grad, t.weight.grad)


def test_modules_forward():
    x, y = _x(4, 6), _x(4, 6)
    pairs = [(torch.nn.GLU(0), fg.nn.GLU(0)), (torch.nn.Softshrink(0.3), fg.nn.Softshrink(0.3)),
             (torch.nn.CELU(0.5), fg.nn.CELU(0.5))]
    for t, f in pairs:
        _close(f(fg.tensor(x)), t(torch.tensor(x)))
    _close(fg.nn.SmoothL1Loss(beta=0.5)(fg.tensor(x), fg.tensor(y)),
           torch.nn.SmoothL1Loss(beta=0.5)(torch.tensor(x), torch.tensor(y)))
    rrelu = fg.nn.RReLU()
    rrelu.eval()
    _close(rrelu(fg.tensor(x)), torch.nn.RReLU().eval()(torch.tensor(x)))


# ---------------------------------------------------------------- fg.compile

def test_compiled_activations_and_losses():
    x0, t0 = _x(4, 6), _x(4, 6)
    w0 = np.asarray(RNG.random(6), np.float32)

    def model(m, x, w, t):
        h = m.hardswish(x) + m.mish(x) * m.hardtanh(x, -2.0, 2.0) + m.selu(x) + m.logsigmoid(x)
        h = m.prelu(h, w) + m.softshrink(x, 0.5)
        return m.smooth_l1_loss(m.glu(h), t[:, :3]) + m.soft_margin_loss(h, t.sign()) + m.huber_loss(h, t)

    compiled = fg.compile(lambda x, w, t: model(F, x, w, t))
    for _ in range(2):
        tx, tw = torch.tensor(x0, requires_grad=True), torch.tensor(w0, requires_grad=True)
        fx, fw = fg.tensor(x0, requires_grad=True), fg.tensor(w0, requires_grad=True)
        ty, fy = model(TF, tx, tw, torch.tensor(t0)), compiled(fx, fw, fg.tensor(t0))
        _close(fy, ty, rtol=1e-5, atol=1e-5)
        ty.backward()
        fy.backward()
        _close(fx.grad, tx.grad, rtol=1e-4, atol=1e-5)
        _close(fw.grad, tw.grad, rtol=1e-4, atol=1e-5)


def test_compiled_multi_margin_and_distances():
    x0 = _x(5, 4, scale=0.5)
    target = np.array([0, 3, 1, 2, 3])

    def loss(m, t, x):
        return (m.multi_margin_loss(x, t.tensor(target), p=2) + m.triplet_margin_loss(x, x.flip(0), x * 0.5)
                + m.cosine_similarity(x, x.flip(1)).sum() + m.kl_div(x, x.detach().softmax(1), reduction="batchmean"))

    compiled = fg.compile(lambda x: loss(F, fg, x))
    tx, fx = torch.tensor(x0, requires_grad=True), fg.tensor(x0, requires_grad=True)
    ty, fy = loss(TF, torch, tx), compiled(fx)
    _close(fy, ty, rtol=1e-5, atol=1e-5)
    ty.backward()
    fy.backward()
    _close(fx.grad, tx.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["hardtanh", "softshrink", "hardshrink", "threshold", "mish", "selu", "glu",
                                  "logsigmoid", "hardswish"])
def test_double_backward(name):
    """A create_graph gradient requires grad as torch's (piecewise-linear ones too, whose second
    derivative is zero) and differentiates to torch's values."""
    f = ACTIVATIONS[name]
    x0 = _x(4, 6)
    tx, fx = torch.tensor(x0, requires_grad=True), fg.tensor(x0, requires_grad=True)
    (tg,) = torch.autograd.grad(f(TF, tx).sum(), tx, create_graph=True)
    (fg_,) = fg.autograd.grad(f(F, fx).sum(), fx, create_graph=True)
    assert fg_.requires_grad
    _close(fg_, tg)
    (tg * tg).sum().backward()
    (fg_ * fg_).sum().backward()
    _close(fx.grad, tx.grad, rtol=1e-4, atol=1e-5)
