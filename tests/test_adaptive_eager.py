"""A compiled function whose calls measure faster eagerly runs eagerly (runtime/adaptive.py).

The trial is told what each timed call cost, so the decisions are deterministic: no test
here times anything. Oracles: torch (values of a training step that
switches to eager), the function's own eager run, cache_info() and explain().
"""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg
from fusegrad.runtime import adaptive

torch = pytest.importorskip("torch")


@pytest.fixture
def clock(monkeypatch):
    """costs(compiled_seconds, eager_seconds): what the trial records for every timed call of
    each kind (whatever the real clock says)."""
    def install(compiled: float, eager: float):
        add_compiled, add_eager = adaptive.SpeedTrial.add_compiled, adaptive.SpeedTrial.add_eager
        monkeypatch.setattr(adaptive.SpeedTrial, "add_compiled",
                            lambda self, seconds, timed, element_work=0:
                            add_compiled(self, None if seconds is None else compiled, timed, element_work))
        monkeypatch.setattr(adaptive.SpeedTrial, "add_eager", lambda self, seconds: add_eager(self, eager))
    monkeypatch.setenv("FUSEGRAD_ADAPTIVE", "1")
    return install


def _training(lib, compiled_step, steps: int):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 3))
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.tensor(np.linspace(-0.5, 0.5, p.numel(), dtype=np.float32).reshape(tuple(p.shape))))
    opt = lib.optim.Adam(model.parameters(), lr=0.01)
    x = lib.tensor(np.linspace(-1, 1, 40, dtype=np.float32).reshape(10, 4))
    y = lib.tensor([0, 1, 2, 0, 1, 2, 0, 1, 2, 0])

    def step(x, y):
        opt.zero_grad()
        loss = lib.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()
    run = compiled_step(step)
    losses = [float(run(x, y)) for _ in range(steps)]
    return run, losses, [p.detach().numpy().copy() for p in model.parameters()]


def _settle_steps() -> int:
    return adaptive.TRIAL_AFTER + 2 * adaptive.SAMPLES + 5


def _settled(x):
    """A compiled (x * 2 + 1).tanh().sum() called with `x` until its trial has decided."""
    f = fg.compile(lambda x: (x * 2 + 1).tanh().sum())
    for _ in range(_settle_steps()):
        f(x)
    return f, x


def test_calls_measured_faster_eagerly_run_eagerly_with_torchs_values(clock):
    clock(compiled=0.002, eager=0.001)
    steps = _settle_steps()
    run, losses, params = _training(fg, fg.compile, steps)
    _, want_losses, want_params = _training(torch, lambda f: f, steps)
    assert run.eager_calls == 1 + adaptive.SAMPLES + 4    # the warm-up, the trial's eager half, then every call
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5, atol=1e-6)
    for got, want in zip(params, want_params):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    x = fg.tensor(np.linspace(-1, 1, 40, dtype=np.float32).reshape(10, 4))
    y = fg.tensor([0, 1, 2, 0, 1, 2, 0, 1, 2, 0])
    assert run.runs_eagerly(x, y)
    assert "run eagerly (not traced): measured faster so (eager 1.000 ms against compiled 2.000 ms" \
        in run.explain(x, y)


def test_an_eager_call_counts_a_hit_and_compiles_nothing(clock):
    clock(compiled=0.002, eager=0.001)
    f, x = _settled(fg.ones(3))
    before = fg.cache_info()
    f(x)
    after = fg.cache_info()
    assert f.runs_eagerly(x)
    assert (after.hits, after.misses, after.kernels_compiled) == (before.hits + 1, before.misses,
                                                                 before.kernels_compiled)


def test_calls_stay_compiled_unless_eager_is_clearly_faster(clock):
    clock(compiled=0.002, eager=0.0018)
    f, x = _settled(fg.ones(3))
    assert not f.runs_eagerly(x)
    assert f.eager_calls == 1 + adaptive.SAMPLES        # (the first eager call warms up, untimed)


def test_eager_calls_slower_than_compiled_end_the_trial_early(clock):
    # (the trial costs at most four slow calls: the untimed warm-up and three samples)
    clock(compiled=0.002, eager=0.003)
    f, x = _settled(fg.ones(3))
    assert not f.runs_eagerly(x) and f.eager_calls == 1 + 3


def test_a_long_call_of_a_small_program_is_tried_too(clock):
    # many tiny ops: a long compiled call that tracing dominates (a deep model's step)
    clock(compiled=0.010, eager=0.005)
    f, x = _settled(fg.ones(3))
    assert f.runs_eagerly(x)


def test_a_program_writing_many_elements_is_never_run_eagerly(clock):
    clock(compiled=0.002, eager=0.001)
    f, x = _settled(fg.ones(adaptive.MAX_TRIAL_ELEMENTS // 2))   # three elementwise results: more than the limit
    assert not f.runs_eagerly(x) and f.eager_calls == 0


def test_each_signature_has_its_own_trial(clock):
    clock(compiled=0.002, eager=0.001)
    f = fg.compile(lambda x: (x * 2).sum())
    small, other = fg.ones(3), fg.ones(5)
    for _ in range(_settle_steps()):
        f(small)
    f(other)
    assert f.runs_eagerly(small) and not f.runs_eagerly(other)


def test_switched_off_by_the_environment(clock, monkeypatch):
    clock(compiled=0.002, eager=0.001)
    monkeypatch.setenv("FUSEGRAD_ADAPTIVE", "0")
    f = fg.compile(lambda x: (x * 2).sum())
    x = fg.ones(3)
    for _ in range(_settle_steps()):
        f(x)
    assert not f.runs_eagerly(x) and f.eager_calls == 0


def test_clear_caches_forgets_the_decision_to_run_eagerly(clock):
    # the decision is a cached measurement: after clear_caches() the next call traces and
    # compiles again (a miss), as a cleared program cache makes any compiled call do
    clock(compiled=0.002, eager=0.001)
    f, x = _settled(fg.ones(3))
    assert f.runs_eagerly(x)
    fg.clear_caches()
    assert not f.runs_eagerly(x)
    eager_before = f.eager_calls
    f(x)
    info = fg.cache_info()
    assert (info.hits, info.misses, f.eager_calls) == (0, 1, eager_before)
