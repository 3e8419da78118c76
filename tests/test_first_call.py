"""The tiered execution policy of fg.compile (runtime/tiered.py execute()):
a first call runs on the reference executor while kernels compile on the
background thread; later calls use the kernels once ready; small programs
compile once hot; failures fall back and are reported; a program whose kernels
are all in the disk cache loads them at once. Plus memory release.

Deterministic by counters and paths: fg.wait_for_compiles() (here
background.wait_for_compiles) is the only synchronisation; no timing asserts.
"""
import contextlib
import sys
import threading
import tracemalloc
import warnings

import numpy as np
import pytest

import fusegrad as fg
from fusegrad.ir import Builder, Emitter, TensorType, float32
import importlib

from fusegrad.runtime import background, executor
from fusegrad.runtime.executor import compile_program
from fusegrad.runtime.stats import cache_info, clear_caches

tiered = importlib.import_module("fusegrad.runtime.tiered")
BIG = tiered.SMALL_PROGRAM_ELEMENTS


def chain(x):
    return (fg.tanh(x) * fg.sigmoid(x) + fg.exp(-x * x)).sum()


def eager_value_and_grad(x):
    v, g = fg.value_and_grad(chain)(x)
    return v.item(), g.numpy()


def check(result, x):
    value, grad = result
    want_v, want_g = eager_value_and_grad(x)
    np.testing.assert_allclose(value.item(), want_v, rtol=1e-5)
    np.testing.assert_allclose(grad.numpy(), want_g, rtol=1e-5, atol=1e-6)


def delta(before, *keys):
    now = cache_info()
    return {k: getattr(now, k) - getattr(before, k) for k in keys}


@pytest.fixture
def asynchronous(monkeypatch):
    monkeypatch.setenv("FUSEGRAD_ASYNC_COMPILE", "1")
    clear_caches()
    yield
    background.wait_for_compiles()
    clear_caches()


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    background.wait_for_compiles()
    monkeypatch.setenv("FUSEGRAD_CACHE_DIR", str(tmp_path))
    clear_caches()
    yield tmp_path
    clear_caches()


def test_first_call_runs_by_reference_while_kernels_compile(asynchronous, fresh_cache):
    f = fg.compile(fg.value_and_grad(chain))
    x = fg.randn(BIG)
    before = cache_info()
    check(f(x), x)
    assert f.last_run.path.startswith("reference executor")
    # The compile runs only after the call returned (or finishes before the next call).
    background.wait_for_compiles()
    d = delta(before, "background_compiles", "reference_calls", "misses")
    assert d == {"background_compiles": 1, "reference_calls": 1, "misses": 1}
    before = cache_info()
    check(f(x), x)
    assert f.last_run.path == "compiled kernels"
    assert delta(before, "hits", "kernels_compiled", "disk_hits") == {"hits": 1, "kernels_compiled": 0,
                                                                    "disk_hits": 0}
    assert "background compiles pending: 0" in f.explain(x)


def test_calls_before_the_compile_finishes_stay_on_the_reference_path(asynchronous, fresh_cache):
    f = fg.compile(fg.value_and_grad(chain))
    x = fg.randn(BIG + 7)
    f(x)
    # The call above queued one compile; the same program must not queue another.
    key = executor.program_key(f.last_run.forward)[1]
    assert executor.is_pending(key) or executor.lookup(key) is not None
    before = cache_info()
    check(f(x), x)
    assert delta(before, "background_compiles")["background_compiles"] == 0
    background.wait_for_compiles()


def test_new_batch_size_compiles_nothing(asynchronous, fresh_cache):
    f = fg.compile(fg.value_and_grad(chain))
    x = fg.randn(BIG)
    f(x)
    background.wait_for_compiles()
    f(x)
    before = cache_info()
    y = fg.randn(BIG + 321)
    check(f(y), y)
    assert f.last_run.path == "compiled kernels"          # kernels ready: used at once
    assert delta(before, "kernels_compiled", "background_compiles") == {"kernels_compiled": 0,
                                                                       "background_compiles": 0}


def w5(x):
    for _ in range(10):
        x = fg.tanh(x * 0.999 + 0.001)
    return x


def test_small_program_compiles_on_first_call_by_default(monkeypatch):
    monkeypatch.setenv("FUSEGRAD_ASYNC_COMPILE", "0")
    f = fg.compile(w5)
    x = fg.randn(16)
    want = w5(x).numpy()
    np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-6, atol=1e-7)
    assert f.last_run.path == "compiled kernels"
    steps = f.last_run.compiled.steps
    assert len(steps) == 1 and type(steps[0]).__name__ == "_KernelStep"   # 30 ops, one kernel call


def test_small_program_compiles_in_background_once_hot(asynchronous, fresh_cache):
    f = fg.compile(w5)
    x = fg.randn(16)
    want = w5(x).numpy()
    before = cache_info()
    for _ in range(2):
        np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-6)
        assert f.last_run.path.startswith("reference executor")
    background.wait_for_compiles()
    assert delta(before, "background_compiles")["background_compiles"] == 1
    np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-6, atol=1e-7)
    assert f.last_run.path == "compiled kernels"


def test_small_programs_with_graph_breaks_stay_on_the_reference_path(asynchronous):
    @fg.compile
    def doubling(x):
        y = x * 2
        while y.norm() < 1000:
            y = y * 2
        return y

    x = fg.tensor([1.0, 2.0, 3.0])
    for _ in range(3):
        doubling(x)
        assert doubling.last_run.path == "reference executor (small program)"
    assert background.pending() == 0


def test_failed_background_compile_falls_back_and_is_reported(asynchronous, fresh_cache, monkeypatch):
    def broken(program):
        raise RuntimeError("scheduler exploded")

    monkeypatch.setattr(executor, "schedule", broken)
    f = fg.compile(fg.value_and_grad(chain))
    x = fg.randn(BIG + 3)
    check(f(x), x)                                   # never raises into the call
    background.wait_for_compiles()
    with pytest.warns(RuntimeWarning, match="background compile failed: RuntimeError: scheduler exploded"):
        check(f(x), x)
    assert "background compile failed" in f.last_run.path
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check(f(x), x)                               # reported once


@pytest.mark.parametrize("load_now", [False, True], ids=["in the background", "at once"])
def test_failed_load_of_a_program_on_disk_falls_back(asynchronous, fresh_cache, monkeypatch, load_now):
    f = fg.compile(fg.value_and_grad(chain))
    x = fg.randn(BIG)
    f(x)
    background.wait_for_compiles()
    clear_caches()

    def broken(program):
        raise RuntimeError("scheduler exploded")

    monkeypatch.setattr(executor, "schedule", broken)
    if load_now:
        monkeypatch.setattr(tiered, "LOAD_NOW_MIN_ELEMENTS", 1)
    else:                                           # the background job fails; the next call says so
        check(f(x), x)
        background.wait_for_compiles()
    with pytest.warns(RuntimeWarning, match="scheduler exploded"):
        check(f(x), x)
    assert f.last_run.path.startswith("reference executor")


def _reload_from_disk(fresh_cache):
    f = fg.compile(fg.value_and_grad(chain))
    x = fg.randn(BIG)
    f(x)
    background.wait_for_compiles()
    assert list((fresh_cache / "programs").rglob("*"))      # the program index entry
    clear_caches()                                            # as in a new process: in-memory caches empty
    return f, x


def test_program_whose_kernels_are_on_disk_loads_them_in_the_background(asynchronous, fresh_cache):
    """Its reference run costs less than loading the kernels: the call does not wait for
    them; the next call after the load runs them, and nothing is compiled."""
    f, x = _reload_from_disk(fresh_cache)
    before = cache_info()
    check(f(x), x)
    assert f.last_run.path == "reference executor (kernels loading from the disk cache in the background)"
    background.wait_for_compiles()
    check(f(x), x)
    assert f.last_run.path == "compiled kernels"
    d = delta(before, "kernels_compiled", "disk_hits", "background_compiles")
    assert d == {"kernels_compiled": 0, "disk_hits": d["disk_hits"], "background_compiles": 1}
    assert d["disk_hits"] >= 1


def test_program_whose_kernels_are_on_disk_and_whose_reference_run_is_long_loads_them_at_once(
        asynchronous, fresh_cache, monkeypatch):
    f, x = _reload_from_disk(fresh_cache)
    monkeypatch.setattr(tiered, "LOAD_NOW_MIN_ELEMENTS", 1)
    before = cache_info()
    check(f(x), x)
    assert f.last_run.path == "compiled kernels (loaded from the disk cache)"
    d = delta(before, "kernels_compiled", "disk_hits", "background_compiles")
    assert d == {"kernels_compiled": 0, "disk_hits": d["disk_hits"], "background_compiles": 0}
    assert d["disk_hits"] >= 1


def test_clear_caches_waits_for_background_compiles(asynchronous):
    f = fg.compile(fg.value_and_grad(chain))
    f(fg.randn(BIG + 11))
    clear_caches()
    assert background.pending() == 0


# ------------------------------------------------------------------ memory

def _matmul_chain(n, depth):
    """x @ w @ w ... : one library step per matmul, so intermediates are separate arrays."""
    b = Builder()
    e = Emitter(b)
    x = b.input(TensorType((n, n), float32))
    w = b.input(TensorType((n, n), float32))
    h = x
    for _ in range(depth):
        h = e.op("matmul", h, w)
    b.program.outputs = [h]
    return b.program


def _peak_bytes(fn):
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        out = fn()
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return out, peak


@pytest.mark.parametrize("path", ["compiled", "reference"])
def test_intermediates_are_freed_after_their_last_reader(path, monkeypatch):
    monkeypatch.setenv("FUSEGRAD_ASYNC_COMPILE", "0")
    n, depth = 256, 12
    program = _matmul_chain(n, depth)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((n, n), dtype=np.float32) / 16 for _ in range(2)]
    if path == "compiled":
        compiled = compile_program(program)
        compiled(args)
        run = lambda: compiled(args)  # noqa: E731
    else:
        env = dict(zip([v.id for v in program.inputs], args))
        run = lambda: tiered.run_freeing(program, dict(env))  # noqa: E731
    (out,), peak = _peak_bytes(run)
    want = args[0]
    for _ in range(depth):
        want = want @ args[1]
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-6)
    array = n * n * 4
    assert peak < 4 * array          # holding all 12 intermediates would need 12


def test_parallel_variant_compiles_in_the_background(asynchronous, monkeypatch):
    """FUSEGRAD_PARALLEL=always on the tiered path: calls run the serial variant until the
    parallel one is ready, then switch; nothing waits for it."""
    import numba
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs two Numba threads")
    monkeypatch.setenv("FUSEGRAD_PARALLEL", "always")
    f = fg.compile(fg.value_and_grad(chain))
    x = fg.randn(executor.PARALLEL_MIN_ELEMENTS)
    f(x)
    background.wait_for_compiles()
    check(f(x), x)                      # compiled; asks for the parallel variant in the background
    (step,) = [s for s in f.last_run.compiled.steps if isinstance(s, executor._KernelStep)]
    assert step.status in ("compiled kernel, serial while the parallel variant compiles in the background",
                           "compiled kernel, parallel")   # the latter if the disk cache had it
    background.wait_for_compiles()
    assert step.compiled.parallel_ready()
    check(f(x), x)
    assert step.compiled.parallel_failure is None
    assert step.status == "compiled kernel, parallel"


def test_explain_compiles_synchronously_even_when_async(monkeypatch):
    """explain() shows kernels and source on a first call, not the reference path."""
    import fusegrad as fg
    monkeypatch.setenv("FUSEGRAD_ASYNC_COMPILE", "1")
    f = fg.compile(lambda t: (t.exp() * t).sum())
    text = f.explain(fg.randn(10_000))
    assert "execution path: compiled kernels" in text
    assert "def kernel(" in text


def _viewed_chain(shape):
    """Ufunc steps on a large array, with a reshape view of an intermediate that is read
    after the ufunc step where the intermediate dies (that one must not be written into)."""
    b = Builder()
    e = Emitter(b)
    x = b.input(TensorType(shape, float32))
    y = b.input(TensorType(shape, float32))
    t = e.tanh(e.mul(x, y))
    flat = e.op("reshape", t, shape=(shape[0] * shape[1],))
    u = e.exp(e.neg(t))                     # t dies here, but `flat` views it
    v = e.sub(e.mul(u, u), x)               # u dies (read twice); x is an input
    back = e.op("reshape", flat, shape=shape)
    b.program.outputs = [e.add(v, back), e.sigmoid(v)]
    return b.program


def test_reference_run_writes_into_dying_intermediates_only(monkeypatch):
    from fusegrad.ir import interpreter
    shape = (64, interpreter.REUSE_MIN_ELEMENTS // 32)
    program = _viewed_chain(shape)
    rng = np.random.default_rng(2)
    args = [rng.standard_normal(shape).astype(np.float32) for _ in range(2)]
    copies = [a.copy() for a in args]
    written_into = []
    plain = interpreter._large_ufunc

    def recording(ufunc, arrays, out_types, out):
        written_into.append(out is not None)
        return plain(ufunc, arrays, out_types, out)
    monkeypatch.setattr(interpreter, "_large_ufunc", recording)
    env = dict(zip([v.id for v in program.inputs], args))
    got = interpreter.run_freeing(program, env)
    want = interpreter.run_program(program, copies)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    for a, c in zip(args, copies):
        np.testing.assert_array_equal(a, c)          # inputs are never written into
    # mul(x, y) and neg(t) make new arrays (inputs; a viewed t); tanh, exp, mul(u, u),
    # sub, sigmoid can reuse: tanh into mul's, exp into neg's, mul into exp's, sub into mul's.
    assert written_into.count(True) >= 4 and written_into[:2] == [False, True]


@contextlib.contextmanager
def _busy_worker():
    """The background worker runs a job (Python waiting on an event) until the block ends."""
    started, finish = threading.Event(), threading.Event()

    def job():
        started.set()
        finish.wait(10)
    background.submit(job)
    try:
        assert started.wait(10)
        yield
    finally:
        finish.set()
        assert background.wait_for_compiles(10)


def test_reference_runs_take_the_gil_back_quickly_while_the_worker_is_busy():
    """While a background job runs Python, the caller's reference run shortens the GIL switch
    interval (its NumPy operations would otherwise each wait up to 5 ms for the GIL), and
    puts it back after; with the worker idle nothing changes."""
    before = sys.getswitchinterval()
    with background.gil_to_caller():
        assert sys.getswitchinterval() == before
    with _busy_worker():
        with background.gil_to_caller():
            assert sys.getswitchinterval() == pytest.approx(background._MAIN_SWITCH_INTERVAL)
        assert sys.getswitchinterval() == before


def _interval_during_call() -> float:
    seen = []

    @fg.compile
    def f(x):
        seen.append(sys.getswitchinterval())       # (runs while the call traces)
        return x * 2
    f(fg.ones(3))
    return seen[0]


def test_a_compiled_call_takes_the_gil_back_quickly_while_the_worker_is_busy():
    """A compiled call enters gil_to_caller too (tracing, kernels: all wait for the GIL), and
    leaves the interval alone when nothing is pending."""
    assert background.wait_for_compiles(10)
    before = sys.getswitchinterval()
    assert _interval_during_call() == before
    with _busy_worker():
        assert _interval_during_call() == pytest.approx(background._MAIN_SWITCH_INTERVAL)
        assert background._MAIN_SWITCH_INTERVAL < before
        assert sys.getswitchinterval() == before
