"""Program and kernel caches, by counters (fg.cache_info()), and the fallbacks.

Each test points the disk cache at its own empty folder and empties the
in-memory caches first, so "compiled" means compiled by this test.
"""
from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

from fusegrad.ir import run_program
from fusegrad.ir.ops import OPS
from fusegrad.runtime import executor
from fusegrad.runtime.executor import compile_program
from fusegrad.runtime.stats import CacheInfo, cache_info, clear_caches
from test_codegen_support import build, random_args


@pytest.fixture(autouse=True)
def _synchronous_compiles(monkeypatch):
    """Counters and paths are asserted call by call: compile on first use, not in the background."""
    monkeypatch.setenv("FUSEGRAD_ASYNC_COMPILE", "0")


def delta(before: CacheInfo) -> dict:
    now = cache_info()
    return {k: getattr(now, k) - getattr(before, k) for k in ("hits", "misses", "kernels_compiled", "disk_hits")}


def layer(e, x, w):
    """A normalised, activated layer: broadcasting, a row reduction, a tail reduction."""
    h = e.tanh(e.add(e.mul(x, w), 0.25))
    return [e.op("softmax", h, axis=1), e.op("mean", h, axes=(0,), keepdim=False)]


def run(p, seed=0):
    args = random_args(p, np.random.default_rng(seed))
    out = compile_program(p)(args)
    for got, want in zip(out, run_program(p, args)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_cache_info_is_a_snapshot():
    info = cache_info()
    assert isinstance(info, CacheInfo)
    assert all(isinstance(getattr(info, k), int) for k in ("hits", "misses", "kernels_compiled", "disk_hits"))
    assert isinstance(info.compile_seconds, float)
    with pytest.raises(AttributeError):
        info.hits = 3


def test_second_call_compiles_nothing(fresh):
    before = cache_info()
    run(build(layer, (6, 5), (5,)))
    first = delta(before)
    assert first["misses"] == 1 and first["kernels_compiled"] >= 1
    before = cache_info()
    run(build(layer, (6, 5), (5,)), seed=1)     # traced again: same structure and shapes
    assert delta(before) == {"hits": 1, "misses": 0, "kernels_compiled": 0, "disk_hits": 0}


@pytest.mark.parametrize("bounds", [((0.0, 1.0), (-0.0, 1.0)), ((-0.0, 1.0), (0.0, 1.0)), ((0, 1), (-0.0, 1.0))])
def test_signed_zero_attributes_key_distinct_programs(fresh, bounds):
    """Attributes are compared by `==` in a dict, where -0.0 == 0.0 == 0: a program with
    hardtanh's lower bound -0.0 must not run the one compiled for 0.0 (or 0), whose result
    has the other sign where x is below the bound."""
    import fusegrad as fg
    x = fg.tensor([-1.0, -0.0, 0.5, 3.0])
    for low, high in bounds:
        before = cache_info()
        got = fg.compile(lambda t: fg.nn.functional.hardtanh(t, low, high))(x).numpy()
        assert delta(before)["misses"] == 1
        want = np.clip(x.numpy(), np.float32(low), np.float32(high))
        want[0] = np.float32(low)               # (x < low: the bound itself, with its sign)
        assert np.array_equal(np.signbit(got), np.signbit(want)) and np.array_equal(got, want)


def test_float_attributes_key_by_value_not_by_equality(fresh):
    """nan_to_num's replacements are attributes: 0 and -0.0 are two programs."""
    import fusegrad as fg
    x = fg.tensor([np.nan, np.inf, -np.inf, 1.0])
    for value in (0.0, -0.0, 0.0):
        got = fg.compile(lambda t: t.nan_to_num(nan=value, posinf=value, neginf=value))(x).numpy()
        assert np.signbit(got[:3]).tolist() == [np.signbit(value)] * 3


def test_program_cache_evicts_the_least_recently_used(fresh, monkeypatch):
    """Near capacity the cache keeps recency (a hit makes a program recent); below half
    of it, hits skip the reordering (eviction cannot happen yet)."""
    monkeypatch.setattr(executor, "MAX_PROGRAMS", 4)
    programs = [build(layer, (batch, 5), (5,)) for batch in (2, 3, 4, 5, 6, 7)]
    for p in programs[:4]:
        run(p)
    run(programs[0])                            # a hit: programs[0] is now the most recent
    run(programs[4])                            # evicts programs[1], the least recently used
    before = cache_info()
    run(programs[0])
    assert delta(before)["hits"] == 1
    before = cache_info()
    run(programs[1])
    assert delta(before)["misses"] == 1


def test_new_batch_size_compiles_nothing_new(fresh):
    run(build(layer, (6, 5), (5,)))
    before = cache_info()
    for batch in (3, 17, 64):
        run(build(layer, (batch, 5), (5,)))
    d = delta(before)
    assert d["misses"] == 3                     # new shapes: scheduled again...
    assert d["kernels_compiled"] == 0 and d["disk_hits"] == 0   # ...with the same kernels


def test_new_broadcast_pattern_compiles_a_new_kernel(fresh):
    run(build(layer, (6, 5), (5,)))
    before = cache_info()
    run(build(layer, (6, 5), (6, 5)))            # the weight no longer broadcasts
    assert delta(before)["kernels_compiled"] >= 1


def test_clear_caches_then_kernels_come_from_disk(fresh):
    run(build(layer, (6, 5), (5,)))
    clear_caches()
    before = cache_info()
    run(build(layer, (6, 5), (5,)))
    d = delta(before)
    assert d["misses"] == 1 and d["kernels_compiled"] == 0 and d["disk_hits"] >= 1


def test_disk_cache_off(fresh, monkeypatch):
    monkeypatch.setenv("FUSEGRAD_DISK_CACHE", "0")
    p = build(lambda e, x: e.cos(e.mul(x, x)), (4, 3))
    run(p)
    assert not any(fresh.rglob("*.py"))
    assert "(in memory)" in compile_program(p).explain()


def test_failed_compile_falls_back_and_caches_stay_usable(fresh, monkeypatch):
    monkeypatch.setattr(OPS["exp"], "expr", "np.no_such_function({0})")
    p = build(lambda e, x: e.mul(e.exp(x), 2.0), (4, 3))
    compiled = compile_program(p)
    args = random_args(p, np.random.default_rng(0))
    with pytest.warns(RuntimeWarning, match="failed to compile"):
        np.testing.assert_allclose(compiled(args)[0], run_program(p, args)[0], rtol=1e-6)
    assert "reference fallback" in compiled.explain()
    np.testing.assert_allclose(compiled(args)[0], run_program(p, args)[0], rtol=1e-6)   # stays on the fallback
    monkeypatch.undo()
    run(build(lambda e, x: e.mul(e.exp(x), 3.0), (4, 3)))           # the caches still work


def test_too_many_shape_variants_run_on_the_reference_executor(fresh, monkeypatch):
    monkeypatch.setattr(executor, "MAX_SHAPE_VARIANTS", 2)
    body = lambda e, x: e.sigmoid(e.mul(x, 3.0))  # noqa: E731
    run(build(body, (2, 3)))
    run(build(body, (4, 3)))
    before = cache_info()
    with pytest.warns(RuntimeWarning, match=r"compiled for 2 different signatures \(shapes, dtypes, or the values of constant attributes"):
        run(build(body, (5, 3)))
    assert delta(before)["kernels_compiled"] == 0
    assert "reference executor" in compile_program(build(body, (5, 3))).explain()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run(build(body, (6, 3)))                 # warned once only


def test_compile_log(fresh, monkeypatch, caplog):
    monkeypatch.setenv("FUSEGRAD_LOG", "compile")
    caplog.set_level(logging.INFO, logger="fusegrad")
    run(build(lambda e, x: e.sin(e.add(x, x)), (3, 3)))
    assert any("compiled kernel" in r.getMessage() and " s" in r.getMessage() for r in caplog.records)
