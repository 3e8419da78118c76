"""fusegrad's generator is torch's: after the same seed, rand, randn, randint, uniform_,
normal_, the *_like forms and nn's initialisers give torch's numbers, bit for bit
(tracer/generator.py). Also its own properties: reproducible, torch's error texts, and
the float32/float64 fused multiply-add emulation it relies on."""
from __future__ import annotations

from fractions import Fraction

import numpy as np

import pytest

import fusegrad as fg
from fusegrad.ir import fma

torch = pytest.importorskip("torch", reason="torch is the oracle")
from parity_support import assert_values_equal, seeded_both  # noqa: E402  (after the skip)

SEEDS = (0, 7, 2 ** 40 + 3, -5)
# 16 and over: torch's block fill (a partial last block is redrawn); under 16: pairs, one cached
SIZES = ((1,), (3,), (15,), (16,), (17,), (2, 20), (1000,))


_same, _both = assert_values_equal, seeded_both


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rand_and_randn_give_torchs_numbers(seed, size, dtype):
    ours, theirs = _both(seed, lambda L: (L.rand(*size, dtype=getattr(L, dtype)),
                                         L.randn(*size, dtype=getattr(L, dtype)),
                                         L.randn(size, dtype=getattr(L, dtype)),    # a cached pair value carries over
                                         L.rand(size)))
    for o, t in zip(ours, theirs):
        _same(o, t)


@pytest.mark.parametrize("seed", SEEDS)
def test_randint_gives_torchs_numbers(seed):
    ours, theirs = _both(seed, lambda L: (L.randint(10, (7,)), L.randint(-3, 4, (2, 9)),
                                         L.randint(0, 2 ** 40, (5,)), L.randint(5, 6, (3,)),
                                         L.randint(high=4, size=(3,)), L.randint(low=2, high=9, size=(2, 2)),
                                         L.randint(7, size=(4,))))
    for o, t in zip(ours, theirs):
        _same(o, t)


@pytest.mark.parametrize("kwargs", [{"size": (3,)}, {"high": 3}, {"low": 1, "size": (3,)}])
def test_randint_without_high_or_size_raises_torchs_error(kwargs):
    with pytest.raises(TypeError) as theirs:
        torch.randint(**kwargs)
    with pytest.raises(TypeError) as ours:
        fg.randint(**kwargs)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("seed", SEEDS[:2])
@pytest.mark.parametrize("make", [
    lambda L: L.zeros(5, 4).T,                   # transposed: filled in memory order
    lambda L: L.zeros(40),
    lambda L: L.zeros(4, 8)[:, ::2],             # strided
    lambda L: L.zeros(3, dtype=L.float64),
])
def test_uniform_and_normal_in_place_give_torchs_numbers(seed, make):
    def run(L):
        a, b = make(L), make(L)
        a.uniform_(-0.37, 0.81)
        b.normal_(0.3, 1.7)
        c = make(L).uniform_(**{"from": 2, "to": 3})
        return a, b, c, L.randn_like(a), L.rand_like(b)
    ours, theirs = _both(seed, run)
    for o, t in zip(ours, theirs):
        _same(o, t)
        assert o.stride() == t.stride()


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_layers_and_initialisers_start_from_torchs_weights(seed):
    def run(L):
        model = L.nn.Sequential(L.nn.Linear(784, 256), L.nn.ReLU(), L.nn.Linear(256, 10), L.nn.Linear(10, 1, bias=False))
        weights = [p for p in model.parameters()]
        for name in ("xavier_uniform_", "xavier_normal_", "kaiming_normal_", "kaiming_uniform_", "normal_", "uniform_"):
            w = L.empty(20, 30)
            getattr(L.nn.init, name)(w)
            weights.append(w)
        return weights
    ours, theirs = _both(seed, run)
    for o, t in zip(ours, theirs):
        _same(o, t)


def test_a_model_built_from_a_seed_trains_as_torchs():
    def run(L):
        L.manual_seed(0)
        model = L.nn.Sequential(L.nn.Linear(4, 8), L.nn.ReLU(), L.nn.Linear(8, 3))
        opt = L.optim.SGD(model.parameters(), lr=0.1)
        x, y = L.randn(16, 4), L.randint(0, 3, (16,))
        for _ in range(3):
            opt.zero_grad()
            loss = L.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        return loss
    np.testing.assert_allclose(run(fg).item(), run(torch).item(), rtol=1e-5)


def test_the_generator_is_reproducible_and_moves_on():
    fg.manual_seed(11)
    a, b = fg.randn(20), fg.randn(20)
    fg.manual_seed(11)
    np.testing.assert_array_equal(fg.randn(20).numpy(), a.numpy())
    assert not np.array_equal(a.numpy(), b.numpy())
    assert fg.initial_seed() == 11
    assert fg.manual_seed(-1).initial_seed() == 2 ** 64 - 1


@pytest.mark.parametrize("call", [
    "L.zeros(3).uniform_(1, 0)", "L.zeros(3).uniform_(1.5, 0.5)", "L.zeros(3).normal_(0, -1)",
    "L.zeros(3, requires_grad=True).uniform_()", "L.zeros(3, requires_grad=True).normal_()",
    "L.zeros(3, dtype=L.bool).uniform_()", "L.zeros(3, dtype=L.int64).normal_()",
    "L.zeros(3).uniform_(0, float('inf'))", "L.zeros(3, dtype=L.float64).uniform_(float('nan'), 1)",
    "L.zeros(3).uniform_('a')", "L.zeros(3).uniform_(a=0)", "L.randn_like(L.zeros(2, dtype=L.int64))",
    "L.manual_seed(2 ** 64)",
])
def test_bad_input_raises_torchs_error(call):
    def run(L):
        try:
            eval(call, {"L": L})
        except Exception as exc:  # noqa: BLE001 (the class is what is compared)
            return type(exc).__name__, str(exc)
        return None
    assert run(fg) == run(torch) != None  # noqa: E711


def test_in_place_sampling_records_torchs_node():
    for L in (fg, torch):
        x = L.ones(3, requires_grad=True)
        y = (x * 2).uniform_()
        assert type(y.grad_fn).__name__ == "UniformBackward0"
        y.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.zeros(3, np.float32))
        assert type((x * 2).normal_().grad_fn).__name__ == "NormalBackward0"


def test_fused_multiply_add_emulation_rounds_once():
    """The float64 FMA (Dekker + TwoSum) against exact rational arithmetic; the float32 one
    against the double-precision value rounded once."""
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(2000) * 10.0 ** rng.integers(-3, 3, 2000) for _ in range(3))
    ours = fma.fma64(a, b, c)
    exact = [float(Fraction(x) * Fraction(y) + Fraction(z)) for x, y, z in zip(a, b, c)]
    np.testing.assert_array_equal(ours, np.array(exact))
    a32, b32, c32 = (v.astype(np.float32) for v in (a, b, c))
    exact32 = np.array([_nearest_float32(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)))
                        for x, y, z in zip(a32, b32, c32)])
    np.testing.assert_array_equal(fma.fma32(a32, b32, c32), exact32)


def _nearest_float32(value: Fraction) -> np.float32:
    """The float32 nearest an exact rational (ties to even), without a double rounding."""
    guess = np.float32(float(value))
    candidates = [np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(np.inf))]
    return min(candidates, key=lambda f: (abs(Fraction(float(f)) - value), int(f.view(np.int32)) & 1))
