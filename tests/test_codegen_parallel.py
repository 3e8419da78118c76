"""Large kernels: the prange variants, and accurate reductions.

A kernel's parallel variant runs blocks of rows (or of elements, for a
reduction to one value) on Numba's threads and combines partial results at
the end. FUSEGRAD_PARALLEL=auto (the default) times both variants of a large
kernel and keeps the faster; always/never force one. Sums accumulate in
float64, so a float32 sum of millions of elements matches the float64 sum
within 1e-5 relative.
"""
from __future__ import annotations

import numba
import numpy as np

import fusegrad as fg

from fusegrad.runtime import executor
from fusegrad.runtime.executor import compile_program
from fusegrad.runtime.stats import clear_caches
from test_codegen_support import build, check, random_args


def _layer(e, x, w):
    """Softmax rows plus a sum over the batch axis (a tail reduction accumulated per block of rows)."""
    return [e.op("softmax", e.mul(x, w), axis=1), e.sum(e.tanh(x), (0,))]


def test_float32_sum_of_millions_is_accurate(monkeypatch):
    monkeypatch.setenv("FUSEGRAD_PARALLEL", "always")
    n = 1 << 22
    p = build(lambda e, x: [e.sum(x, (0,)), e.op("mean", e.mul(x, x), axes=(0,), keepdim=False)], (n,))
    x = (np.random.default_rng(0).random(n) + 100.0).astype(np.float32)   # a large common offset
    clear_caches()
    compiled = compile_program(p)
    total, mean_sq = compiled([x])
    x64 = x.astype(np.float64)
    assert abs(float(total) - x64.sum()) <= 1e-5 * x64.sum()
    assert abs(float(mean_sq) - (x64 * x64).mean()) <= 1e-5 * (x64 * x64).mean()
    assert [s.parallel for s in compiled.steps] == [True]


def test_parallel_and_serial_variants_agree(monkeypatch):
    p = build(_layer, (1024, 300), (300,))
    args = random_args(p, np.random.default_rng(1))
    results = {}
    for policy in ("always", "never"):
        monkeypatch.setenv("FUSEGRAD_PARALLEL", policy)
        clear_caches()
        compiled = check(p, args, rtol=1e-5, atol=1e-4)     # sums of 1024 values of either sign
        assert [s.parallel for s in compiled.steps] == [policy == "always"]
        results[policy] = compiled(args)
    for a, b in zip(results["always"], results["never"]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_auto_policy_measures_and_settles(monkeypatch):
    from fusegrad.runtime import background
    monkeypatch.setenv("FUSEGRAD_PARALLEL", "auto")
    monkeypatch.delenv("FUSEGRAD_ASYNC_COMPILE", raising=False)
    monkeypatch.setattr(executor, "PARALLEL_MIN_SECONDS", 0.0)   # always worth measuring here
    p = build(_layer, (1024, 300), (300,))
    args = random_args(p, np.random.default_rng(2))
    clear_caches()
    compiled = compile_program(p)
    (step,) = compiled.steps
    # Without tiered execution the first call compiles what later calls run: the serial
    # variant, run (untimed), then the parallel variant, as its run took long enough to
    # measure; nothing goes to the background thread. PARALLEL_SAMPLES timed serial calls
    # follow, then PARALLEL_SAMPLES parallel ones, which decide.
    jobs = []
    monkeypatch.setattr(background, "submit", lambda job, hold=False: jobs.append(job))
    compiled(args)
    assert step.compiled.parallel_ready() and jobs == []
    assert step.choice.decided is None and step.choice.times == {False: [], True: []}
    before = fg.cache_info()
    for _ in range(2 * executor.PARALLEL_SAMPLES):
        compiled(args)
    after = fg.cache_info()
    assert step.choice.decided is not None and jobs == []
    assert len(step.choice.times[True]) == executor.PARALLEL_SAMPLES
    assert len(step.choice.times[False]) == executor.PARALLEL_SAMPLES
    assert (after.kernels_compiled, after.disk_hits, after.parallel_variants, after.compile_seconds) == \
        (before.kernels_compiled, before.disk_hits, before.parallel_variants, before.compile_seconds)
    assert "measured" in compiled.explain()


def test_a_first_call_compiles_no_parallel_variant_for_a_short_kernel(monkeypatch):
    """Without tiered execution the first call compiles the parallel variant only where the
    serial run took at least PARALLEL_MIN_SECONDS; a shorter one settles serial at its first
    timed call and never compiles it."""
    monkeypatch.setenv("FUSEGRAD_PARALLEL", "auto")
    monkeypatch.delenv("FUSEGRAD_ASYNC_COMPILE", raising=False)
    monkeypatch.setattr(executor, "PARALLEL_MIN_SECONDS", 1e3)    # no run is this long
    p = build(_layer, (1024, 300), (300,))
    args = random_args(p, np.random.default_rng(3))
    clear_caches()
    compiled = compile_program(p)
    (step,) = compiled.steps
    compiled(args)
    compiled(args)
    assert not step.compiled.parallel_ready() and step.choice.decided is False
    assert "too short to split" in step.choice.describe()


def test_with_tiered_execution_the_parallel_variant_compiles_in_the_background(monkeypatch):
    from fusegrad.runtime import background
    monkeypatch.setenv("FUSEGRAD_PARALLEL", "auto")
    monkeypatch.setenv("FUSEGRAD_ASYNC_COMPILE", "1")
    monkeypatch.setattr(executor, "PARALLEL_MIN_SECONDS", 0.0)
    p = build(_layer, (1024, 300), (300,))
    args = random_args(p, np.random.default_rng(2))
    clear_caches()
    compiled = compile_program(p)
    (step,) = compiled.steps
    # The serial variant compiles on the first call (untimed), then PARALLEL_SAMPLES timed
    # calls; the parallel variant then compiles on the background thread (no call waits for
    # it), and once it is ready PARALLEL_SAMPLES timed parallel calls decide.
    jobs = []
    monkeypatch.setattr(background, "submit", lambda job, hold=False: jobs.append(job))
    for _ in range(executor.PARALLEL_SAMPLES + 3):
        compiled(args)
    assert step.choice.decided is None and len(jobs) == 1 and not step.compiled.parallel_ready()
    assert step.choice.times[True] == []                 # every call so far ran serially
    jobs[0]()                                             # the background compile, run here
    assert step.compiled.parallel_ready()
    for _ in range(executor.PARALLEL_SAMPLES):
        compiled(args)
    assert step.choice.decided is not None
    assert len(step.choice.times[True]) == executor.PARALLEL_SAMPLES
    assert len(step.choice.times[False]) >= executor.PARALLEL_SAMPLES
    assert "measured" in compiled.explain()


def test_auto_policy_ignores_times_taken_during_a_background_compile(monkeypatch):
    from fusegrad.runtime import background
    choice = executor._ParallelChoice(True, "auto")
    monkeypatch.setattr(background, "pending", lambda: 1)
    for _ in range(10):
        choice.record(choice.next(), 0.5)
    assert choice.decided is None and choice.times == {False: [], True: []}
    monkeypatch.setattr(background, "pending", lambda: 0)
    for seconds in [0.010, 0.011, 0.012, 0.009, 0.004, 0.005]:      # three serial, then three parallel
        choice.record(choice.next(), seconds)
    assert choice.decided is True and "measured 4.00 ms parallel, 10.00 ms serial" in choice.describe()


def test_auto_policy_measures_again_later():
    """A serial choice made on a bad moment (here: parallel looked slow) is revisited
    after RECHECK_CALLS calls by timing only the parallel variant again, against the
    latest serial calls; a parallel choice after RECHECK_CALLS calls, then ten times as many."""
    choice = executor._ParallelChoice(True, "auto")
    for seconds in [0.010, 0.010, 0.010, 0.012, 0.011, 0.013]:       # parallel looks slower
        choice.record(choice.next(), seconds)
    assert choice.decided is False and choice.calls_left == executor.RECHECK_CALLS
    for k in range(executor.RECHECK_CALLS - 1):
        use = choice.next()
        assert use is False
        choice.record(use, 0.009 + k * 1e-5)
    for seconds in [0.004, 0.005, 0.004]:                             # measured again: parallel only
        use = choice.next()
        assert use is True
        choice.record(use, seconds)
    assert choice.decided is True and "measured 4.00 ms parallel, 9.46 ms serial" in choice.describe()
    assert choice.calls_left == executor.RECHECK_CALLS
    for _ in range(executor.RECHECK_CALLS - 1):
        assert choice.next() is True
    for seconds in [0.010, 0.010, 0.010, 0.004, 0.005, 0.004]:       # both variants measured again
        choice.record(choice.next(), seconds)
    assert choice.decided is True and choice.calls_left == 10 * executor.RECHECK_CALLS


def test_auto_policy_checks_a_serial_choice_at_a_steady_interval():
    choice = executor._ParallelChoice(True, "auto")
    for seconds in [0.010] * executor.PARALLEL_SAMPLES + [0.012] * executor.PARALLEL_SAMPLES:
        choice.record(choice.next(), seconds)
    for _ in range(3):
        assert choice.decided is False and choice.calls_left == executor.RECHECK_CALLS
        for _ in range(executor.RECHECK_CALLS - 1):
            use = choice.next()
            assert use is False
            choice.record(use, 0.010)
        for _ in range(executor.PARALLEL_SAMPLES):                   # parallel stays slower
            use = choice.next()
            assert use is True
            choice.record(use, 0.012)
    assert choice.decided is False and "measured 12.00 ms parallel, 10.00 ms serial" in choice.describe()


def _pointwise(e, x):
    """W1's gradient-like pointwise chain: one vector kernel, no reduction."""
    return e.add(e.mul(e.tanh(x), e.sigmoid(x)), e.exp(e.neg(e.mul(x, x))))


def test_a_vector_kernel_runs_in_blocks_of_elements(monkeypatch):
    """A kernel of one loop over a vector runs it in blocks of BLOCK elements, the unit of
    parallel work (prange over the whole vector as one loop vectorised worse: W1's gradient
    took 5.5 ms in two threads, 3.9 in blocks), indexing from the block start unsigned; both
    variants compute every element, at sizes around the block's."""
    from fusegrad.codegen import generate, schedule
    from fusegrad.codegen.kernel_source import BLOCK
    (kernel,) = schedule(build(_pointwise, (3 * BLOCK + 5,))).kernels
    text = generate(kernel, "fusegrad.codegen.vmath").module_text("# test", cache=False)
    parallel = text[text.index("def kernel_parallel"):]
    assert f"for blk in prange((n0 + {BLOCK - 1}) // {BLOCK}):" in parallel
    assert f"for i0 in range(blk * {BLOCK}, min(n0, blk * {BLOCK} + {BLOCK})):" in parallel
    assert "a0[np.uintp(i0)]" in parallel
    rng = np.random.default_rng(4)
    for policy in ("always", "never"):
        monkeypatch.setenv("FUSEGRAD_PARALLEL", policy)
        for n in (1, BLOCK - 1, BLOCK + 1, 16 * BLOCK + 1, 20 * BLOCK + 5):
            p = build(_pointwise, (n,))
            clear_caches()
            compiled = check(p, random_args(p, rng), rtol=1e-6, atol=1e-6)
            split = policy == "always" and n >= executor.PARALLEL_MIN_ELEMENTS and numba.config.NUMBA_NUM_THREADS > 1
            assert [s.parallel for s in compiled.steps] == [split]
