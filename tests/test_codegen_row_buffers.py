"""Row buffers: a costly value (softmax's exp) that several phases of one row kernel read is
computed in the earliest phase, written to the row's buffer there, and read back by the
later phases. A kernel whose later phase was built first wrote the buffer only in that
later phase, so an earlier reader saw the previous row's values (or uninitialised memory):
silently wrong, nondeterministic results for softmax followed by two dependent row
reductions, the pattern of every double backward through softmax (fuzz sweep)."""
from __future__ import annotations

import re
import warnings

import numpy as np

import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")


NORMALISERS = {
    "softmax": lambda L, x: L.softmax(x, -1),
    "log_softmax": lambda L, x: L.log_softmax(x, -1),
    "exp/sum": lambda L, x: x.exp() / x.exp().sum(-1, keepdim=True),
    "x - max": lambda L, x: x - x.max(-1, keepdim=True)[0],
    "tanh": lambda L, x: x.tanh(),
}


def _two_dependent_row_sums(L, normalise, x, c, y):
    k = normalise(L, x)
    p = (c * k).sum(1, keepdim=True)
    q = ((y - p) * k).sum(1, keepdim=True)
    return (k * p).sum(), (k * q).sum()


@pytest.mark.parametrize("shape", [(2, 3), (5, 7), (4, 1000)])
@pytest.mark.parametrize("name", sorted(NORMALISERS))
def test_two_dependent_row_reductions_after_a_normaliser(name, shape):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(shape).astype(np.float32) for _ in range(3)]
    normalise = NORMALISERS[name]
    expected = [t.double().numpy() for t in _two_dependent_row_sums(torch, normalise,
                                                                    *[torch.tensor(a, dtype=torch.float64)
                                                                      for a in arrays])]
    compiled = fg.compile(lambda x, c, y: _two_dependent_row_sums(fg, normalise, x, c, y))
    for _ in range(3):              # the wrong values changed from call to call
        ours = compiled(*[fg.tensor(a) for a in arrays])
        for o, e in zip(ours, expected):
            np.testing.assert_allclose(o.numpy(), e, rtol=2e-4, atol=2e-4 * (1 + np.abs(e).max()))


def test_the_costly_value_is_computed_once_per_row():
    x = fg.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    compiled = fg.compile(lambda x, c, y: _two_dependent_row_sums(fg, NORMALISERS["softmax"], x, c, y))
    text = compiled.explain(x, x * 2, x - 1)
    serial = text.split("def kernel(")[1].split("@njit")[0]
    assert len(re.findall(r"fg_exp_small\(", serial)) == 1, serial      # (exp of x - max(x))
    assert re.search(r"rb0\[[^\]]*\] = t\d+", serial)


def test_double_backward_through_softmax_of_a_broadcast_input_compiled():
    """The fuzz sweep's case: the first-order gradient the compiled call returned was wrong too."""
    def run(L, x, w, m):
        loss = (L.softmax(x + m, -1) * w).sum()
        (g,) = L.autograd.grad(loss, [m], create_graph=True)
        g.sum().backward()
        return g, m.grad
    rng = np.random.default_rng(1)
    x, w = (rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2))
    m = rng.standard_normal((1, 3)).astype(np.float32)
    theirs = run(torch, torch.tensor(x), torch.tensor(w), torch.tensor(m, requires_grad=True))
    compiled = fg.compile(lambda x, w, m: run(fg, x, w, m))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            ours = compiled(fg.tensor(x), fg.tensor(w), fg.tensor(m, requires_grad=True))
            for o, t in zip(ours, theirs):
                np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), rtol=1e-4, atol=1e-6)


# --------------------------------------------------------------------- random row-phase programs
# Programs shaped like the failure: a normaliser over the last axis, then row reductions that
# read it and each other (each one a later phase of the row kernel), with outputs that are
# whole sums (tails), rows or row values, compiled against the reference executor.
from test_codegen_support import build, check, random_args  # noqa: E402

_ROW_SHAPE = (4, 6)


def _row_phase_program(seed: int):
    """A normaliser k of x over the last axis; a chain of 1-3 row reductions of k times an
    input or the previous reduction's residual (each a later phase); outputs: whole sums of
    k times some of the reductions (tails), and the last reduction itself or not."""
    rng = np.random.default_rng(seed)
    normaliser = int(rng.integers(0, 3))
    chain = [(int(rng.integers(0, 3)), int(rng.integers(0, 2))) for _ in range(int(rng.integers(1, 4)))]
    tails = [bool(t) for t in rng.integers(0, 2, size=len(chain))]
    tails[-1] = True
    keep_row = bool(rng.integers(0, 2))

    def body(e, x, c, y):
        k = [lambda: e.op("softmax", x, axis=1), lambda: e.exp(e.sub(x, e.amax(x, (1,), True))),
             lambda: e.tanh(x)][normaliser]()
        reductions, previous = [], None
        for source, kind in chain:
            operand = [c, y, e.sub(y, previous) if previous is not None else c][source]
            previous = (e.sum if kind == 0 else e.amax)(e.mul(operand, k), (1,), True)
            reductions.append(previous)
        outs = [e.sum(e.mul(k, r), (0, 1), False) for r, tail in zip(reductions, tails) if tail]
        return outs + ([reductions[-1]] if keep_row else [])
    return build(body, _ROW_SHAPE, _ROW_SHAPE, _ROW_SHAPE, grad=bool(seed % 2))


@pytest.mark.parametrize("seed", range(6))
def test_random_row_phase_programs(seed):
    p = _row_phase_program(seed)
    check(p, random_args(p, np.random.default_rng(seed)), rtol=1e-4, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6, 60))
def test_random_row_phase_programs_sweep(seed):
    p = _row_phase_program(seed)
    check(p, random_args(p, np.random.default_rng(seed)), rtol=1e-4, atol=1e-5)
