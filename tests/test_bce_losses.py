"""F.binary_cross_entropy_with_logits / F.binary_cross_entropy and nn.BCEWithLogitsLoss /
nn.BCELoss: values, gradients (first and second order), dtypes, grad_fn names, errors and
module reprs against torch; gradients against finite differences (no torch needed); the
kernels against the reference executor; compiled against eager."""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg
from fusegrad.ir import float32, float64
from gradcheck import check_grads
from test_codegen_support import build, check

try:
    import torch
except ImportError:          # the torch-free checks below still run
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="torch is the oracle")

nan, inf = float("nan"), float("inf")
rng = np.random.RandomState(0)
X = (rng.randn(4, 3) * 3).astype(np.float32)        # logits
P = rng.rand(4, 3).astype(np.float32)               # probabilities
T = rng.rand(4, 3).astype(np.float32)               # soft targets
W = rng.rand(3).astype(np.float32)
PW = (rng.rand(3) * 2).astype(np.float32)


def leaf(L, a, dtype=None):
    return (L.tensor(a) if dtype is None else L.tensor(a, dtype=dtype)).requires_grad_()


def loss_and_grads(L, loss, *xs):
    """The loss and its gradients for xs (torch.autograd.grad, create_graph=False)."""
    summed = loss.sum() if loss.dim() else loss
    return (loss,) + tuple(L.autograd.grad(summed, xs))


def _logits_case(reduction, weights):
    def case(L):
        F = L.nn.functional
        x, t = leaf(L, X), leaf(L, T)
        extra = {}
        if "w" in weights.replace("pw", ""):
            extra["weight"] = L.tensor(W)
        if "pw" in weights:
            extra["pos_weight"] = L.tensor(PW)
        return loss_and_grads(L, F.binary_cross_entropy_with_logits(x, t, reduction=reduction, **extra), x, t)
    return case


def _probabilities_case(reduction, weighted):
    def case(L):
        p, t = leaf(L, P), leaf(L, T)
        extra = {"weight": L.tensor(W)} if weighted else {}
        return loss_and_grads(L, L.nn.functional.binary_cross_entropy(p, t, reduction=reduction, **extra), p, t)
    return case


def _logits_extremes(L):
    x = leaf(L, [-200.0, 0.0, 200.0, inf, -inf, nan, -0.0])
    t = leaf(L, [1.0, 0.5, 0.0, 1.0, 0.0, 1.0, 1.0])
    return loss_and_grads(L, L.nn.functional.binary_cross_entropy_with_logits(x, t, reduction="none"), x, t)


def _probability_extremes(L):
    # 0 and 1 (logs clamped at -100), a tiny input (the gradient's 1e-12 clamp), -0.0
    p = leaf(L, [0.0, 1.0, 0.5, 1e-20, -0.0, 1.0, 0.0])
    t = leaf(L, [0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0])
    return loss_and_grads(L, L.nn.functional.binary_cross_entropy(p, t, reduction="none"), p, t)


def _second_order(probabilities):
    def case(L):
        F = L.nn.functional
        if probabilities:
            x, t = leaf(L, P), leaf(L, T)
            loss = F.binary_cross_entropy(x, t, weight=L.tensor(W))
        else:
            x, t = leaf(L, X), leaf(L, T)
            loss = F.binary_cross_entropy_with_logits(x, t, pos_weight=L.tensor(PW), weight=L.tensor(W))
        gx, gt = L.autograd.grad(loss, (x, t), create_graph=True)
        second = L.autograd.grad((gx * gx).sum() + (gt * gx).sum(), (x, t))
        if probabilities:
            # (torch records the input's gradient as one BinaryCrossEntropyBackwardBackward0
            # node; fusegrad records the formula's ops: values compared, not that node's name)
            gx = gx.detach()
        return (gx, gt) + second
    return case


def _mixed_dtypes(L):
    F = L.nn.functional
    x64, x32 = leaf(L, X, L.float64), leaf(L, X)
    a = F.binary_cross_entropy_with_logits(x64, L.tensor(T))                 # float32: the target's
    b = F.binary_cross_entropy_with_logits(x32, L.tensor(T, dtype=L.float64), weight=L.tensor(W, dtype=L.float64))
    c = F.binary_cross_entropy(L.tensor(P), L.tensor(T), weight=L.tensor(W, dtype=L.float64))
    return (a, b, c) + L.autograd.grad(a + b, (x64, x32))


def _modules(L):
    nn = L.nn
    bce = nn.BCELoss()(L.tensor([0.2, 0.9]), L.tensor([0.0, 1.0]))
    logits = nn.BCEWithLogitsLoss(pos_weight=L.tensor([2.0]))(L.tensor([[0.2], [0.9]]), L.tensor([[0.0], [1.0]]))
    weighted = nn.BCELoss(weight=L.tensor([1.0, 3.0]), reduction="sum")(L.tensor([0.2, 0.9]), L.tensor([0.0, 1.0]))
    return bce, logits, weighted


CASES = {
    **{f"logits {r} {w or 'plain'}": _logits_case(r, w) for r in ("mean", "sum", "none") for w in ("", "w", "pw", "wpw")},
    **{f"probabilities {r} {'weighted' if w else 'plain'}": _probabilities_case(r, w)
       for r in ("mean", "sum", "none") for w in (False, True)},
    "logits extremes": _logits_extremes,
    "probability extremes": _probability_extremes,
    "logits second order": _second_order(False),
    "probabilities second order": _second_order(True),
    "mixed dtypes": _mixed_dtypes,
    "weight broadcast": lambda L: L.nn.functional.binary_cross_entropy(
        L.tensor(P), L.tensor(T), weight=L.tensor([[0.5], [1.0], [2.0], [3.0]])),
    "pos_weight column": lambda L: L.nn.functional.binary_cross_entropy_with_logits(
        L.tensor(X), L.tensor(T), pos_weight=L.tensor([[0.5], [1.0], [2.0], [3.0]])),
    "empty": lambda L: (L.nn.functional.binary_cross_entropy(L.zeros(0), L.zeros(0)),
                        L.nn.functional.binary_cross_entropy_with_logits(L.zeros(0), L.zeros(0)),
                        L.nn.functional.binary_cross_entropy_with_logits(L.zeros(0, 2), L.zeros(0, 2), reduction="sum")),
    "0-d": lambda L: (L.nn.functional.binary_cross_entropy(L.tensor(0.25), L.tensor(1.0)),
                      L.nn.functional.binary_cross_entropy_with_logits(L.tensor(0.25), L.tensor(1.0), reduction="none")),
    "weight without grad mode": lambda L: _without_grad(L, lambda: L.nn.functional.binary_cross_entropy_with_logits(
        L.ones(2), L.ones(2), weight=L.ones(2, requires_grad=True))),
    "modules": _modules,
}


def _without_grad(L, fn):
    with L.no_grad():
        return fn()


ERRORS = {
    "logits target size": lambda F, L: F.binary_cross_entropy_with_logits(L.ones(3), L.ones(2)),
    "input out of range": lambda F, L: F.binary_cross_entropy(L.tensor([0.5, 2.0]), L.tensor([0.5, 0.5])),
    # element by element: the first bad element's input, then its target
    "target out of range first": lambda F, L: F.binary_cross_entropy(L.tensor([0.5, 2.0]), L.tensor([3.0, 0.5])),
    "nan input": lambda F, L: F.binary_cross_entropy(L.tensor([0.5, nan]), L.tensor([1.0, 0.5])),
    "nan target": lambda F, L: F.binary_cross_entropy(L.tensor([0.5, 0.5]), L.tensor([nan, 0.5])),
    "target size": lambda F, L: F.binary_cross_entropy(L.ones(3) / 2, L.ones(2)),
    "logits reduction": lambda F, L: F.binary_cross_entropy_with_logits(L.ones(3), L.ones(3), reduction="x"),
    "reduction": lambda F, L: F.binary_cross_entropy(L.ones(3) / 2, L.ones(3), reduction="x"),
    "target dtype": lambda F, L: F.binary_cross_entropy(L.ones(2).double() / 2, L.ones(2)),
    "logits long target": lambda F, L: F.binary_cross_entropy_with_logits(L.ones(3), L.tensor([1, 0, 1])),
    "long target": lambda F, L: F.binary_cross_entropy(L.ones(3) / 2, L.tensor([1, 0, 1])),
    "logits bool target": lambda F, L: F.binary_cross_entropy_with_logits(L.ones(3), L.ones(3, dtype=L.bool)),
    "bool target": lambda F, L: F.binary_cross_entropy(L.ones(3) / 2, L.ones(3, dtype=L.bool)),
    "logits long input": lambda F, L: F.binary_cross_entropy_with_logits(L.ones(2, dtype=L.long), L.ones(2)),
    "long input": lambda F, L: F.binary_cross_entropy(L.ones(2, dtype=L.long), L.ones(2, dtype=L.long)),
    "weight mismatch": lambda F, L: F.binary_cross_entropy_with_logits(L.ones(3), L.ones(3), weight=L.ones(4)),
    "weight grows": lambda F, L: F.binary_cross_entropy_with_logits(L.ones(3), L.ones(3), weight=L.ones(2, 2, 3)),
    "pos_weight grows": lambda F, L: F.binary_cross_entropy_with_logits(L.ones(3), L.ones(3), pos_weight=L.ones(2, 3)),
    "pos_weight mismatch": lambda F, L: F.binary_cross_entropy_with_logits(L.ones(3), L.ones(3), pos_weight=L.ones(4)),
    "probabilities weight grows": lambda F, L: F.binary_cross_entropy(L.ones(3) / 2, L.ones(3), weight=L.ones(2, 3)),
    "probabilities weight mismatch": lambda F, L: F.binary_cross_entropy(L.ones(3) / 2, L.ones(3), weight=L.ones(4)),
    "weight requires grad": lambda F, L: F.binary_cross_entropy_with_logits(
        L.ones(3), L.ones(3), weight=L.ones(3, requires_grad=True)),
    "pos_weight requires grad": lambda F, L: F.binary_cross_entropy_with_logits(
        L.ones(3), L.ones(3), pos_weight=L.ones(3, requires_grad=True)),
    "probabilities weight requires grad": lambda F, L: F.binary_cross_entropy(
        L.ones(3) / 2, L.ones(3), weight=L.ones(3, requires_grad=True)),
    "logits weight list": lambda F, L: F.binary_cross_entropy_with_logits(L.ones(2), L.ones(2), weight=[1.0, 2.0]),
    "weight list": lambda F, L: F.binary_cross_entropy(L.ones(2) / 2, L.ones(2), weight=[1.0, 2.0]),
    "target list": lambda F, L: F.binary_cross_entropy(L.ones(2) / 2, [1.0, 2.0]),
    "logits target float": lambda F, L: F.binary_cross_entropy_with_logits(L.ones(2), 1.0),
}


def _summary(value):
    if isinstance(value, (tuple, list)):
        return tuple(_summary(v) for v in value)
    if hasattr(value, "grad_fn"):
        return (str(value.dtype).split(".")[-1], tuple(value.shape), value.detach().numpy().astype(np.float64),
                None if value.grad_fn is None else type(value.grad_fn).__name__)
    return value


def _assert_same(ours, theirs, rtol, atol):
    if isinstance(ours, tuple) and ours and isinstance(ours[0], tuple):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _assert_same(a, b, rtol, atol)
        return
    dtype, shape, values, node = ours
    assert (dtype, shape, node) == (theirs[0], theirs[1], theirs[3]), (ours, theirs)
    np.testing.assert_allclose(values, theirs[2], rtol=rtol, atol=atol, equal_nan=True)
    # signs of zeros too (-0.0 losses and gradients where torch makes them)
    assert np.array_equal(np.signbit(values[values == 0]), np.signbit(theirs[2][values == 0]))


@needs_torch
@pytest.mark.parametrize("name", list(CASES))
def test_values_gradients_and_nodes_match_torch(name):
    _assert_same(_summary(CASES[name](fg)), _summary(CASES[name](torch)), rtol=2e-6, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(name):
    outcomes = []
    for L in (fg, torch):
        with pytest.raises(Exception) as info:
            ERRORS[name](L.nn.functional, L)
        outcomes.append((type(info.value).__name__, str(info.value).replace("torch.Size", "Size")
                         .replace("fg.Size", "Size")))
    assert outcomes[0] == outcomes[1]


@needs_torch
def test_module_reprs_and_buffers_match_torch():
    def describe(L):
        modules = (L.nn.BCELoss(), L.nn.BCELoss(reduction="sum"), L.nn.BCEWithLogitsLoss(),
                   L.nn.BCEWithLogitsLoss(weight=L.ones(2), pos_weight=L.ones(2)))
        return [(repr(m), m.reduction, sorted(name for name, _ in m.named_buffers()), list(m.parameters()))
                for m in modules]
    assert describe(fg) == describe(torch)


@pytest.mark.parametrize("weights", ["", "w", "pw", "wpw"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_logits_gradients_match_finite_differences(reduction, weights):
    w = np.abs(W).astype(np.float64) + 0.5
    pw = np.abs(PW).astype(np.float64) + 0.5

    def f(x, t):
        extra = {}
        if "w" in weights.replace("pw", ""):
            extra["weight"] = fg.tensor(w, dtype=fg.float64)
        if "pw" in weights:
            extra["pos_weight"] = fg.tensor(pw, dtype=fg.float64)
        return fg.nn.functional.binary_cross_entropy_with_logits(x, t, reduction=reduction, **extra)
    check_grads(f, X, T, order=2)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_probability_gradients_match_finite_differences(reduction, weighted):
    p = np.clip(P, 0.1, 0.9)        # (a step of eps must stay inside (0, 1))

    def f(x, t):
        weight = fg.tensor(np.abs(W) + 0.5, dtype=fg.float64) if weighted else None
        return fg.nn.functional.binary_cross_entropy(x, t, weight=weight, reduction=reduction)
    check_grads(f, p, T, order=2, eps=1e-7)


@pytest.mark.parametrize("dtype", [float32, float64], ids=["f32", "f64"])
def test_kernels_match_the_reference(dtype):
    r = np.random.default_rng(5)
    shape = (6, 7)

    def body(e, x, t, w, pw, p):
        return [e.op("bce_with_logits", x, t, w, pw, reduction="none", weighted=True, pos_weighted=True),
                e.op("bce_with_logits", x, t, reduction="mean", weighted=False, pos_weighted=False),
                e.op("binary_cross_entropy", p, t, w, reduction="sum", weighted=True),
                e.op("binary_cross_entropy", p, t, reduction="none", weighted=False)]
    program = build(body, *[(shape, dtype)] * 5, grad=True)
    args = [r.uniform(-6, 6, shape), r.uniform(0, 1, shape), r.uniform(0.5, 2, shape), r.uniform(0.5, 3, shape),
            r.uniform(0.05, 0.95, shape)]
    args = [a.astype(dtype.np) for a in args] + [r.uniform(-1, 1, o.shape).astype(dtype.np)
                                                 for o in program.inputs[5:]]
    check(program, args, rtol=2e-5, atol=2e-6)


def _training_losses(L, compiled, probabilities=False, steps=4):
    L.manual_seed(0)
    r = np.random.RandomState(3)
    net = L.nn.Sequential(L.nn.Linear(5, 8), L.nn.ReLU(), L.nn.Linear(8, 2))
    with L.no_grad():
        for p in net.parameters():
            p.copy_(L.tensor(r.uniform(-0.5, 0.5, tuple(p.shape)).astype(np.float32)))
    opt = L.optim.SGD(net.parameters(), lr=0.5, momentum=0.9)
    if probabilities:
        criterion, head = L.nn.BCELoss(weight=L.tensor([1.0, 2.0])), L.nn.Sigmoid()
    else:
        criterion, head = L.nn.BCEWithLogitsLoss(pos_weight=L.tensor([0.5, 3.0])), L.nn.Identity()
    x = L.tensor(r.randn(16, 5).astype(np.float32))
    y = L.tensor((r.rand(16, 2) < 0.4).astype(np.float32))

    def step(x, y):
        opt.zero_grad()
        loss = criterion(head(net(x)), y)
        loss.backward()
        opt.step()
        return loss
    step = fg.compile(step) if compiled else step
    return [step(x, y).item() for _ in range(steps)] + [p.detach().numpy().copy() for p in net.parameters()]


@pytest.mark.parametrize("probabilities", [False, True], ids=["logits", "probabilities"])
def test_a_compiled_training_step_matches_eager_and_torch(probabilities):
    eager, compiled = _training_losses(fg, False, probabilities), _training_losses(fg, True, probabilities)
    for e, c in zip(eager, compiled):
        np.testing.assert_allclose(c, e, rtol=1e-5, atol=1e-6)
    if torch is not None:
        for e, t in zip(eager, _training_losses(torch, False, probabilities)):
            np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-6)


def test_a_compiled_probability_loss_reads_its_input_at_a_graph_break():
    x, t = fg.tensor(P * 2 - 1), fg.tensor(T)
    f = fg.compile(lambda x, t: fg.nn.functional.binary_cross_entropy(x.sigmoid(), t))
    np.testing.assert_allclose(f(x, t).numpy(), fg.nn.functional.binary_cross_entropy(x.sigmoid(), t).numpy(),
                               rtol=1e-6)
    assert "## graph breaks\nnone" not in f.explain(x, t)
    # the logits form reads nothing: one program, no break
    g = fg.compile(lambda x, t: fg.nn.functional.binary_cross_entropy_with_logits(x, t))
    assert "## graph breaks\nnone" in g.explain(x, t)
    # out-of-range values computed inside the call raise torch's error there too
    bad = fg.compile(lambda x, t: fg.nn.functional.binary_cross_entropy(x * 3, t))
    with pytest.raises(RuntimeError, match="^all elements of input should be between 0 and 1$"):
        bad(fg.tensor(P), t)
