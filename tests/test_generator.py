"""fg.Generator: torch.Generator's API and numbers, and the `generator=` keyword of the random
functions, against torch 2.13 (each draw bit for bit)."""
import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch")
from parity_support import outcome  # noqa: E402  (after the skip)

# Each draws from a generator `g` seeded 3 (and returns the values as a list).
DRAWS = {
    "randn": lambda L, g: L.randn(3, generator=g),
    "rand": lambda L, g: L.rand(2, 2, generator=g),
    "randn-float64": lambda L, g: L.randn(20, dtype=L.float64, generator=g),
    "randint": lambda L, g: L.randint(0, 10, (5,), generator=g),
    "randperm": lambda L, g: L.randperm(6, generator=g),
    "normal": lambda L, g: L.normal(0.0, 2.0, (3,), generator=g),
    "rand_like": lambda L, g: L.rand_like(L.ones(2, 3), generator=g),
    "randn_like-transposed": lambda L, g: L.randn_like(L.ones(2, 3).t(), generator=g),
    "uniform_": lambda L, g: L.empty(3).uniform_(-1, 1, generator=g),
    "normal_": lambda L, g: L.empty(17).normal_(generator=g),
    "bernoulli": lambda L, g: L.bernoulli(L.full((6,), 0.5), generator=g),
    "bernoulli_": lambda L, g: L.empty(6).bernoulli_(0.3, generator=g),
    "init.uniform_": lambda L, g: L.nn.init.uniform_(L.empty(3), generator=g),
    "init.normal_": lambda L, g: L.nn.init.normal_(L.empty(3), generator=g),
    "init.xavier_uniform_": lambda L, g: L.nn.init.xavier_uniform_(L.empty(2, 3), generator=g),
    "init.xavier_normal_": lambda L, g: L.nn.init.xavier_normal_(L.empty(2, 3), generator=g),
    "init.kaiming_uniform_": lambda L, g: L.nn.init.kaiming_uniform_(L.empty(2, 3), generator=g),
    "init.kaiming_normal_": lambda L, g: L.nn.init.kaiming_normal_(L.empty(2, 3), generator=g),
    "init.trunc_normal_": lambda L, g: L.nn.init.trunc_normal_(L.empty(4), a=-0.5, b=0.5, generator=g),
}


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_draws_from_a_generator_are_torchs_and_leave_the_global_one_alone(name):
    """Each function draws from the given generator (uniform_, normal_ and bernoulli took the
    keyword and drew from the global generator); the global stream is untouched."""
    found = []
    for lib in (fg, torch):
        lib.manual_seed(7)
        g = lib.Generator().manual_seed(3)
        first = DRAWS[name](lib, g).tolist()
        second = DRAWS[name](lib, g).tolist()       # (the generator's stream moves on)
        found.append((first, second, lib.rand(2).tolist()))
    assert found[0] == found[1]


def test_generator_api_as_torchs():
    def api(lib):
        g = lib.Generator()
        seeded = g.manual_seed(5)
        state = g.get_state()
        a = lib.randn(4, generator=g).tolist()
        g.set_state(state)
        b = lib.randn(4, generator=g).tolist()
        reseeded = g.seed()
        return (g.initial_seed() == reseeded, lib.Generator().initial_seed(), seeded is g, str(g.device),
                a == b, list(state.shape), isinstance(lib.manual_seed(1), lib.Generator))
    assert api(fg) == api(torch)


def test_generator_states_are_interchangeable_with_torchs():
    g, t = fg.Generator().manual_seed(11), torch.Generator().manual_seed(11)
    fg.randn(5, generator=g)
    torch.randn(5, generator=t)
    assert g.get_state().tolist() == t.get_state().tolist()
    t2 = torch.Generator().set_state(torch.tensor(np.array(g.get_state().tolist(), dtype=np.uint8)))
    assert fg.rand(3, generator=g).tolist() == torch.rand(3, generator=t2).tolist()


@pytest.mark.parametrize("call", [
    lambda L: L.randn(3, generator=5),
    lambda L: L.rand(2, generator="g"),
    lambda L: L.rand_like(L.ones(2), generator=3),
], ids=["randn-int", "rand-str", "rand_like-int"])
def test_a_generator_argument_that_is_no_generator_raises_torchs_type_error(call):
    theirs, ours = outcome(lambda: call(torch)), outcome(lambda: call(fg))
    assert theirs[0] == ours[0] == "TypeError"
    assert ours[1].split(" but expected")[0] == theirs[1].split(" but expected")[0]


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like"])
def test_non_random_like_functions_take_no_generator(name):
    def run(lib):
        return getattr(lib, name)(lib.ones(2), generator=lib.Generator()).shape
    assert outcome(lambda: run(fg)) == outcome(lambda: run(torch))
