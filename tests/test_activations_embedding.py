"""expm1, log1p, F.silu/leaky_relu/softplus (and their modules), F.l1_loss/L1Loss,
F.one_hot, F.embedding/Embedding: values over special values, gradients (torch's backward
formulas), in-place forms, errors and reprs against torch; their kernels against the
reference executor."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import fusegrad as fg
from fusegrad.ir import float32, float64
from test_codegen_support import build, check, random_args

torch = pytest.importorskip("torch", reason="torch is the oracle")


def _outcome(lib, case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # (l1_loss's size warning is compared elsewhere)
        try:
            r = case(lib)
        except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
            return ("error", type(exc).__name__, str(exc))
    return ("tensor", r.detach().numpy(), str(r.dtype).split(".")[-1],
            None if r.grad_fn is None else type(r.grad_fn).__name__)


nan, inf = float("nan"), float("inf")
V = [-100., -20., -3., -0.5, -1e-8, -0., 0., 1e-8, 0.7, 3., 15., 25., 100., nan, inf, -inf]
A = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
def X(L, grad=True):
    return L.tensor(V, requires_grad=grad)



def G(L, f, src=None):
    """x.grad of sum(f(x) * w) for a fixed ramp w."""
    x = L.tensor(A if src is None else src, requires_grad=True); y = f(L, x)
    w = L.tensor(np.linspace(-1, 1, y.numel(), dtype=np.float32).reshape(tuple(y.shape)))
    (y * w).sum().backward(); return x.grad


def F(L):
    return L.nn.functional


CASES = {
 "expm1": lambda L: X(L).expm1(), "log1p": lambda L: X(L).log1p(), "expm1 int": lambda L: L.expm1(L.tensor([1, 2])), "log1p f64": lambda L: L.log1p(X(L).double()),
 "silu": lambda L: F(L).silu(X(L)), "leaky": lambda L: F(L).leaky_relu(X(L)), "leaky .2": lambda L: F(L).leaky_relu(X(L), 0.2),
 "softplus": lambda L: F(L).softplus(X(L)), "softplus b2": lambda L: F(L).softplus(X(L), beta=2, threshold=10), "softplus f64": lambda L: F(L).softplus(X(L).double(), 0.5),
 "silu int": lambda L: F(L).silu(L.tensor([1, 2])), "leaky int": lambda L: F(L).leaky_relu(L.tensor([1, -2])), "softplus int": lambda L: F(L).softplus(L.tensor([1])),
 "g expm1": lambda L: G(L, lambda L, x: x.expm1()), "g log1p": lambda L: G(L, lambda L, x: x.abs().log1p()), "g silu": lambda L: G(L, lambda L, x: F(L).silu(x)),
 "g leaky": lambda L: G(L, lambda L, x: F(L).leaky_relu(x, 0.3)), "g softplus": lambda L: G(L, lambda L, x: F(L).softplus(x * 10, 1.5, 5)),
 "g silu inplace": lambda L: G(L, lambda L, x: F(L).silu(x * 1, inplace=True)), "g leaky inplace": lambda L: G(L, lambda L, x: F(L).leaky_relu(x * 1, 0.1, inplace=True)),
 "leaky neg inplace": lambda L: G(L, lambda L, x: F(L).leaky_relu(x * 1, -0.5, inplace=True)),
 "l1": lambda L: F(L).l1_loss(L.tensor(A, requires_grad=True), L.tensor(A[::-1].copy())), "l1 sum": lambda L: F(L).l1_loss(L.tensor(A, requires_grad=True), L.tensor(A * 2), reduction="sum"),
 "l1 none": lambda L: F(L).l1_loss(L.tensor(A, requires_grad=True), L.tensor(A * 2), reduction="none"), "l1 bad": lambda L: F(L).l1_loss(L.ones(2), L.ones(2), reduction="bad"),
 "l1 int": lambda L: F(L).l1_loss(L.tensor([1]), L.tensor([2])), "L1Loss": lambda L: L.nn.L1Loss()(L.tensor(A), L.zeros(4, 5)),
 "g l1": lambda L: G(L, lambda L, x: F(L).l1_loss(x, x.detach() * 0.5)),
 "onehot": lambda L: F(L).one_hot(L.tensor([0, 2]), 4), "onehot auto": lambda L: F(L).one_hot(L.tensor([[1], [0]])), "onehot float": lambda L: F(L).one_hot(L.tensor([0., 2.])),
 "onehot neg": lambda L: F(L).one_hot(L.tensor([-1]), 3), "onehot big": lambda L: F(L).one_hot(L.tensor([5]), 3), "onehot empty": lambda L: F(L).one_hot(L.tensor([], dtype=L.int64)),
 "onehot empty n": lambda L: F(L).one_hot(L.tensor([], dtype=L.int64), 3), "onehot float n": lambda L: F(L).one_hot(L.tensor([1]), 2.0),
 "emb": lambda L: F(L).embedding(L.tensor([[0, 2], [3, 3]]), L.tensor(A, requires_grad=True)), "emb oob": lambda L: F(L).embedding(L.tensor([5]), L.tensor(A)),
 "emb float": lambda L: F(L).embedding(L.tensor([1.]), L.tensor(A)), "emb 1d": lambda L: F(L).embedding(L.tensor([0]), L.ones(4)),
 "g emb": lambda L: G(L, lambda L, x: F(L).embedding(L.tensor([[0, 2], [3, 3], [0, 1]]), x)), "g emb pad": lambda L: G(L, lambda L, x: F(L).embedding(L.tensor([[0, 2], [3, 3], [0, 1]]), x, padding_idx=3)),
 "g emb pad neg": lambda L: G(L, lambda L, x: F(L).embedding(L.tensor([0, 2, 3]), x, padding_idx=-4)),
 "Embedding": lambda L: (L.manual_seed(0), L.nn.Embedding(6, 3, padding_idx=2).weight)[1], "Embedding fwd": lambda L: (L.manual_seed(1), L.nn.Embedding(6, 3)(L.tensor([5, 0])))[1],
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    ours, theirs = _outcome(fg, CASES[name]), _outcome(torch, CASES[name])
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "tensor":
        assert ours[1].shape == theirs[1].shape and ours[2:] == theirs[2:], (ours, theirs)
        # forward values to an ulp or two (NumPy's exp/log1p against torch's SLEEF); gradients
        # near silu's zero amplify that (1 + x * (1 - sigmoid(x)) cancels). Forward atol: a few
        # float32 denormal steps, where torch's own result depends on the CPU (softplus(-100)
        # is 27 denormal steps, correctly rounded, with torch's AVX-512 kernels and 28 with AVX2)
        rtol = 1e-5 if name.startswith("g ") else 3e-7
        np.testing.assert_allclose(ours[1], theirs[1], rtol=rtol, atol=1e-7 if name.startswith("g ") else 1e-44,
                                   equal_nan=True)
    else:
        assert ours == theirs


def test_module_reprs_match_torch():
    def reprs(lib):
        nn = lib.nn
        return [repr(m) for m in (nn.SiLU(), nn.SiLU(True), nn.LeakyReLU(), nn.LeakyReLU(0.2, True), nn.Softplus(),
                                  nn.Softplus(2, 10), nn.Embedding(4, 3), nn.Embedding(4, 3, padding_idx=0), nn.L1Loss())]
    assert reprs(fg) == reprs(torch)


@pytest.mark.parametrize("dtype", [float32, float64], ids=["f32", "f64"])
def test_kernels_match_the_reference(dtype):
    rng = np.random.default_rng(3)

    def body(e, x):
        return [e.op("expm1", x), e.op("log1p", e.op("abs", x)), e.op("silu", x),
                e.op("softplus", x, beta=1.5, threshold=4.0), e.op("leaky_relu", x, e.const(0.2, x))]
    p = build(body, ((6, 7), dtype), grad=True)
    args = random_args(p, rng)
    args[0] = args[0] * 6
    check(p, args, rtol=1e-5)


def test_a_compiled_model_with_the_new_layers_matches_eager():
    def model_loss(lib, compiled):
        lib.manual_seed(0)
        net = lib.nn.Sequential(lib.nn.Embedding(10, 4, padding_idx=0), lib.nn.Flatten(), lib.nn.Linear(12, 6),
                                lib.nn.SiLU(), lib.nn.Linear(6, 6), lib.nn.LeakyReLU(0.1), lib.nn.Linear(6, 3),
                                lib.nn.Softplus())
        tokens = lib.tensor([[0, 3, 9], [4, 4, 1]])
        target = lib.tensor(np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3))

        def loss_fn(tokens):
            loss = lib.nn.functional.l1_loss(net(tokens), target)
            loss.backward()
            return loss
        loss = (fg.compile(loss_fn) if compiled else loss_fn)(tokens)
        return [loss.detach().numpy()] + [p.grad.numpy() for p in net.parameters()]
    eager, compiled, theirs = model_loss(fg, False), model_loss(fg, True), model_loss(torch, False)
    for e, c, t in zip(eager, compiled, theirs):
        np.testing.assert_allclose(c, e, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-6)
    assert not eager[1][0].any()          # the padding row got no gradient
