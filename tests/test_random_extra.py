"""randperm, normal, the generator's state (get/set_rng_state, torch's bytes), seed,
fg.random, trunc_normal_, the dtype helpers, norm(dtype=) and the in-place view ops
(unsqueeze_, squeeze_, t_, transpose_), against torch 2.13 (tracer/random_extra.py,
tracer/inplace_views.py)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")
from parity_support import assert_values_equal, seeded_both  # noqa: E402  (after the skip)

SEEDS = (0, 7, 2 ** 40 + 3, -5)


_same, _both = assert_values_equal, seeded_both


def _raises_both(ours, theirs):
    with pytest.raises(Exception) as t:
        theirs()
    with pytest.raises(type(t.value)) as o:
        ours()
    assert str(o.value) == str(t.value)


def _states_equal():
    np.testing.assert_array_equal(fg.get_rng_state().numpy(), torch.get_rng_state().numpy().astype(np.int64))


# ---------------------------------------------------------------------- randperm
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", [0, 1, 2, 10, 100, 1000, 10 ** 5])
def test_randperm_is_torchs_and_so_is_the_stream_after(seed, n):
    ours, theirs = _both(seed, lambda L: (L.randperm(n), L.randn(5), L.randn(20)))
    for o, t in zip(ours, theirs):
        _same(o, t)
    _states_equal()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_randperm_dtypes_and_requires_grad(dtype):
    ours, theirs = _both(3, lambda L: L.randperm(37, dtype=getattr(L, dtype)))
    _same(ours, theirs)
    ours, theirs = _both(3, lambda L: L.randperm(5, dtype=L.float32, requires_grad=True))
    assert ours.requires_grad and theirs.requires_grad and ours.is_leaf
    _same(ours, theirs)


def test_randperm_with_the_generator_manual_seed_returns():
    g = fg.manual_seed(4)
    a = fg.randperm(9, generator=g)
    torch.manual_seed(4)
    _same(a, torch.randperm(9))


@pytest.mark.parametrize("call", [
    lambda L: L.randperm(-1), lambda L: L.randperm(3.0), lambda L: L.randperm(True), lambda L: L.randperm(),
    lambda L: L.randperm(3, dtype=L.bool), lambda L: L.randperm(3, requires_grad=True),
    lambda L: L.randperm(2 ** 24 + 2, dtype=L.float32), lambda L: L.randperm(3, generator=5),
])
def test_randperm_errors(call):
    _raises_both(lambda: call(fg), lambda: call(torch))


# ---------------------------------------------------------------------- state
@pytest.mark.parametrize("seed", SEEDS)
def test_state_bytes_are_torchs(seed):
    _both(seed, lambda L: None)
    _states_equal()
    for draw in (lambda L: L.randn(3), lambda L: L.rand(624 * 2 - 5), lambda L: L.randn(1), lambda L: L.rand(5),
                 lambda L: L.randint(0, 2 ** 40, (3,)), lambda L: L.randperm(11)):
        draw(fg)
        draw(torch)
        _states_equal()
    assert fg.get_rng_state().dtype is fg.int64 and tuple(fg.get_rng_state().shape) == (5056,)


def test_state_round_trip_and_interchange():
    fg.manual_seed(5)
    fg.randn(3)                                  # a cached Box-Muller value is in the state
    state = fg.get_rng_state()
    first = (fg.randn(20), fg.randn(3), fg.randperm(7))
    fg.set_rng_state(state)
    for a, b in zip(first, (fg.randn(20), fg.randn(3), fg.randperm(7))):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    # torch's state into fusegrad (a uint8 array, or an int64 tensor of its bytes) and back
    torch.manual_seed(11)
    torch.randn(7)
    fg.set_rng_state(torch.get_rng_state().numpy())
    assert fg.initial_seed() == 11
    _same(fg.randn(9), torch.randn(9))
    fg.set_rng_state(fg.tensor(torch.get_rng_state().numpy()))
    _same(fg.randn(33), torch.randn(33))
    fg.manual_seed(12)
    fg.randn(5)
    torch.set_rng_state(torch.tensor(fg.get_rng_state().numpy(), dtype=torch.uint8))
    assert torch.initial_seed() == 12
    _same(fg.randn(9), torch.randn(9))


def test_state_errors():
    with pytest.raises(TypeError, match="^RNG state must be a torch.ByteTensor$"):
        fg.set_rng_state(fg.zeros(5056))
    with pytest.raises(TypeError, match="^expected a torch.ByteTensor, but got list$"):
        fg.set_rng_state([1, 2])
    for size in (10, 5048):
        _raises_both(lambda: fg.set_rng_state(fg.zeros(size, dtype=fg.int64)),
                     lambda: torch.set_rng_state(torch.zeros(size, dtype=torch.uint8)))
    _raises_both(lambda: fg.set_rng_state(fg.zeros(5056, dtype=fg.int64)),
                 lambda: torch.set_rng_state(torch.zeros(5056, dtype=torch.uint8)))


def test_seed_initial_seed_and_the_random_namespace():
    s = fg.seed()
    assert fg.initial_seed() == s and 0 <= s < 2 ** 64
    for name in ("get_rng_state", "set_rng_state", "manual_seed", "seed", "initial_seed", "fork_rng"):
        assert hasattr(fg.random, name) and hasattr(torch.random, name)
    fg.random.manual_seed(3)
    with fg.random.fork_rng():
        fg.randn(4)
    torch.random.manual_seed(3)
    _same(fg.randn(4), torch.randn(4))
    assert fg.random.initial_seed() == 3


# ---------------------------------------------------------------------- normal
NORMAL_CALLS = [
    lambda L: L.normal(L.zeros(2, 3) + 1, L.ones(3) * 2),
    lambda L: L.normal(L.zeros(40) + 0.5, L.ones(40) * 0.3),
    lambda L: L.normal(L.zeros(5, 1), L.ones(1, 33)),
    lambda L: L.normal(L.zeros(17), 2.5),
    lambda L: L.normal(L.zeros(3) + 1, 2.5),
    lambda L: L.normal(L.zeros(3) + 1),
    lambda L: L.normal(1.5, L.ones(20) * 3),
    lambda L: L.normal(1.5, L.ones(2) * 3),
    lambda L: L.normal(1.5, 2.0, (4,)),
    lambda L: L.normal(1.5, 2.0, (40,)),
    lambda L: L.normal(1.5, 2.0, size=(3, 7), dtype=L.float64),
    lambda L: L.normal(L.zeros(20) + 0.1, L.ones(20, dtype=L.float64) * 0.7),
    lambda L: L.normal(L.zeros(20, dtype=L.float64) + 0.1, L.ones(20) * 0.7),
    lambda L: L.normal(L.zeros(3) + 0.1, L.ones(3, dtype=L.int64) * 2),
    lambda L: L.normal(L.zeros(20) + 0.1, L.tensor(0.7, dtype=L.float64)),
    lambda L: L.normal(1.5, L.ones(20, dtype=L.float64) * 3),
    lambda L: L.normal(L.tensor(0.3), L.tensor(2.)),
    lambda L: L.normal(mean=L.zeros(2), std=L.ones(2)),
]


@pytest.mark.parametrize("seed", SEEDS[:3])
@pytest.mark.parametrize("call", NORMAL_CALLS)
def test_normal_overloads_give_torchs_numbers(seed, call):
    ours, theirs = _both(seed, lambda L: (call(L), L.randn(3)))
    for o, t in zip(ours, theirs):
        _same(o, t)


def test_normal_nodes_and_gradients():
    for L in (fg, torch):
        m, s = L.zeros(2, 3, requires_grad=True), L.ones(3, requires_grad=True)
        r = L.normal(m, s)
        assert type(r.grad_fn).__name__ == "NormalBackward3"
        assert [type(f).__name__ for f, _ in r.grad_fn.next_functions] == ["AccumulateGrad"] * 2
        r.sum().backward()
        assert not m.grad.numpy().any() and tuple(s.grad.shape) == (3,)
        assert type(L.normal(m, 2.).grad_fn).__name__ == "NormalBackward1"
        assert len(L.normal(m, 2.).grad_fn.next_functions) == 1
        assert type(L.normal(1., s).grad_fn).__name__ == "NormalBackward2"
        assert L.normal(m, L.ones(3)).grad_fn.next_functions[1] == (None, 0)
        leaf = L.normal(1., 2., size=(2,), requires_grad=True)
        assert leaf.requires_grad and leaf.is_leaf


@pytest.mark.parametrize("call", [
    lambda L: L.normal(1., 2.), lambda L: L.normal(), lambda L: L.normal(L.zeros(2), "a"),
    lambda L: L.normal(L.zeros(2), 1., (2,)), lambda L: L.normal(1., 2., size=3),
    lambda L: L.normal(L.zeros(2), -1.), lambda L: L.normal(L.zeros(2), -L.ones(2)),
    lambda L: L.normal(1., -L.ones(2)), lambda L: L.normal(1., -1., (2,)),
    lambda L: L.normal(L.zeros(2), L.ones(3)), lambda L: L.normal(L.zeros(2, dtype=L.int64), 1.),
    lambda L: L.normal(1., L.ones(2, dtype=L.int64)), lambda L: L.normal(L.zeros(2, dtype=L.int64), L.ones(2)),
    lambda L: L.normal(L.zeros(2), float("nan")), lambda L: L.normal(L.zeros(2), 1., generator=5),
    lambda L: L.normal(1, 2, size=(2,), dtype=L.int64),
])
def test_normal_errors(call):
    _raises_both(lambda: call(fg), lambda: call(torch))


def test_tensor_normal_and_uniform_in_place():
    ours, theirs = _both(1, lambda L: (L.zeros(30).normal_(2., 3.), L.zeros(5).uniform_(-1., 4.)))
    for o, t in zip(ours, theirs):
        _same(o, t)


# ---------------------------------------------------------------------- trunc_normal_
@pytest.mark.parametrize("args", [(0.1, 0.02, -0.04, 0.04), (0., 0.02), (0., 1., -2., 2.), (0.5, 1., 2., 3.)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_trunc_normal_is_torchs(args, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = _both(2, lambda L: (L.nn.init.trunc_normal_(L.empty(30, 50, dtype=getattr(L, dtype)), *args),
                                           L.randn(3)))
    for o, t in zip(ours, theirs):
        _same(o, t)


# ---------------------------------------------------------------------- dtype helpers, relu_, norm(dtype=)
def test_dtype_helpers():
    assert fg.is_floating_point(fg.zeros(1)) and not fg.is_floating_point(fg.zeros(1, dtype=fg.int64))
    assert fg.is_tensor(fg.zeros(1)) and not fg.is_tensor(1.0)
    names = ("float32", "float64", "int64", "bool")
    for a in names:
        for b in names:
            assert fg.promote_types(getattr(fg, a), getattr(fg, b)).name == \
                str(torch.promote_types(getattr(torch, a), getattr(torch, b))).split(".")[1]
    operands = [lambda L: L.zeros(2, dtype=L.int64), lambda L: L.tensor(1., dtype=L.float64), lambda L: 2.5,
                lambda L: True, lambda L: 3, lambda L: L.zeros(2, dtype=L.bool), lambda L: L.zeros(2)]
    for a in operands:
        for b in operands:
            assert fg.result_type(a(fg), b(fg)).name == str(torch.result_type(a(torch), b(torch))).split(".")[1]
    _raises_both(lambda: fg.result_type("a", 1), lambda: torch.result_type("a", 1))
    _raises_both(lambda: fg.result_type(fg.zeros(1), "a"), lambda: torch.result_type(torch.zeros(1), "a"))
    _raises_both(lambda: fg.promote_types(fg.float32, 1), lambda: torch.promote_types(torch.float32, 1))
    _raises_both(lambda: fg.is_floating_point(1.), lambda: torch.is_floating_point(1.))
    x = fg.tensor([-1., 2.])
    assert fg.relu_(x) is x and x.tolist() == [0., 2.]


@pytest.mark.parametrize("call", [
    lambda L, x: x.norm(dtype=L.float64), lambda L, x: x.norm(2, 1, True, dtype=L.float64),
    lambda L, x: x.norm(p=1, dim=0, dtype=L.float64), lambda L, x: x.norm(dtype=L.float32),
    lambda L, x: L.norm(x, "fro", dtype=L.float64), lambda L, x: x.norm(float("inf"), dtype=L.float64),
])
def test_norm_dtype(call):
    xs = [L.tensor([[1., 2.], [3., 4.]], requires_grad=True) for L in (fg, torch)]
    o, t = call(fg, xs[0]), call(torch, xs[1])
    _same(o, t)
    assert type(o.grad_fn).__name__ == type(t.grad_fn).__name__
    assert [type(f).__name__ for f, _ in o.grad_fn.next_functions] == \
        [type(f).__name__ for f, _ in t.grad_fn.next_functions]
    o.sum().backward()
    t.sum().backward()
    np.testing.assert_allclose(xs[0].grad.numpy(), xs[1].grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("call", [
    lambda L: L.zeros(2).double().norm(dtype=L.float32), lambda L: L.zeros(2).norm(dtype=L.int64),
    lambda L: L.zeros(2).norm(dtype="a"), lambda L: L.tensor([1, 2]).norm(dtype=L.float32),
])
def test_norm_dtype_errors(call):
    _raises_both(lambda: call(fg), lambda: call(torch))


# ---------------------------------------------------------------------- in-place view ops
VIEW_STEPS = [
    (lambda x: x.unsqueeze_(0), "UnsqueezeBackward1"), (lambda x: x.unsqueeze_(-1), "UnsqueezeBackward1"),
    (lambda x: x.t_(), "TBackward1"), (lambda x: x.transpose_(0, 1), "TransposeBackward1"),
    (lambda x: x.squeeze_(), "SqueezeBackward3"), (lambda x: x.unsqueeze_(1).squeeze_(1), "SqueezeBackward4"),
    (lambda x: x.unsqueeze_(1).squeeze_((1, 0)), "SqueezeBackward5"),
]


@pytest.mark.parametrize("step,name", VIEW_STEPS)
def test_inplace_view_ops(step, name):
    results = []
    for L in (fg, torch):
        leaf = L.arange(6.).reshape(2, 3).requires_grad_()
        x = leaf * 1
        v = x._version
        y = step(x)
        assert y is x and type(x.grad_fn).__name__ == name
        results.append((tuple(x.shape), x.stride(), x._version - v >= 1, x.detach().numpy().copy()))
        (x * L.arange(float(x.numel())).reshape(x.shape)).sum().backward()
        results.append(leaf.grad.numpy())
        plain = L.zeros(2, 3)
        step(plain)
        results.append((tuple(plain.shape), plain.stride(), plain._version))
    ours, theirs = results[:3], results[3:]
    assert ours[0][:3] == theirs[0][:3]
    np.testing.assert_array_equal(ours[0][3], theirs[0][3])
    np.testing.assert_array_equal(ours[1], theirs[1])
    assert ours[2] == theirs[2]


def test_inplace_view_op_on_a_view_and_errors():
    for L in (fg, torch):
        b = L.zeros(4, 3, requires_grad=True).clone()
        v = b[:2]
        v.unsqueeze_(0)
        assert v._base is b and tuple(v.shape) == (1, 2, 3)
        assert type(v.grad_fn.next_functions[0][0]).__name__ == "SliceBackward0"
    for call in (lambda L: L.zeros(2, 3, requires_grad=True).unsqueeze_(0),
                 lambda L: L.zeros(2, 3, requires_grad=True).t_(),
                 lambda L: L.zeros(2, 3, requires_grad=True)[0].unsqueeze_(0),
                 lambda L: L.zeros(2, 3).transpose_(0, 5), lambda L: L.zeros(2, 3).unsqueeze_(4),
                 lambda L: L.zeros(2, 3, 4).t_(), lambda L: L.zeros(2, 3).squeeze_(3)):
        _raises_both(lambda: call(fg), lambda: call(torch))


def test_inplace_view_ops_refused_inside_compile():
    @fg.compile
    def f(x):
        y = x * 2
        y.unsqueeze_(0)
        return y

    with pytest.raises(NotImplementedError, match="unsqueeze_"):
        f(fg.ones(3))
