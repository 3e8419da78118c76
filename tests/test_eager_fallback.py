"""fg.compile's cost model for small graph-breaking functions: after EAGER_AFTER calls in a
row that break the graph and trace small programs, calls with the same argument signature
run eagerly (same values and gradients, no program cache traffic)."""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg
from fusegrad.runtime.compile import EAGER_AFTER
from fusegrad.runtime.tiered import SMALL_PROGRAM_ELEMENTS


def doubling_loop(x, v):
    y = x * 2
    while y.norm() < 1000:          # a graph break every iteration
        y = y * 2
    y.backward(v)
    return y


def _run(fn, values, v):
    x = fg.tensor(values, requires_grad=True)
    y = fn(x, v)
    return y.detach().numpy().copy(), x.grad.numpy().copy()


def test_small_graph_breaking_calls_turn_eager_with_the_same_results():
    compiled = fg.compile(doubling_loop)
    rng = np.random.default_rng(0)
    v = fg.ones(3)
    for call in range(EAGER_AFTER + 3):
        values = rng.standard_normal(3).astype(np.float32).tolist()
        before = fg.cache_info()
        got = _run(compiled, values, v)
        after = fg.cache_info()
        want = _run(doubling_loop, values, v)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
        eager = call >= EAGER_AFTER
        assert compiled.eager_calls == max(0, call - EAGER_AFTER + 1)
        if eager:       # not traced: served by the cached decision, compiling nothing
            assert (after.hits - before.hits, after.misses - before.misses) == (1, 0)
            assert after.reference_calls - before.reference_calls == 1
            assert after.kernels_compiled == before.kernels_compiled
    assert compiled.runs_eagerly(fg.zeros(3, requires_grad=True), v)


def test_another_signature_is_traced_again():
    compiled = fg.compile(doubling_loop)
    v3, v4 = fg.ones(3), fg.ones(4)
    for _ in range(EAGER_AFTER):
        _run(compiled, [0.5, -1.0, 2.0], v3)
    assert compiled.runs_eagerly(fg.zeros(3, requires_grad=True), v3)
    assert not compiled.runs_eagerly(fg.zeros(4, requires_grad=True), v4)
    assert not compiled.runs_eagerly(fg.zeros(3), v3)          # requires_grad is part of it
    calls = compiled.eager_calls
    _run(compiled, [0.5, -1.0, 2.0, 1.0], v4)
    assert compiled.eager_calls == calls


def test_functions_without_breaks_or_with_large_programs_stay_traced():
    def no_break(x):
        return (x * 2).tanh().sum()

    def large_break(x):
        y = x * 2
        if y.sum() > 0:             # a graph break over a large program
            y = y + 1
        return y.sum()

    big = fg.ones(SMALL_PROGRAM_ELEMENTS)
    for fn, arg in ((no_break, fg.ones(3)), (large_break, big)):
        compiled = fg.compile(fn)
        for _ in range(EAGER_AFTER + 1):
            compiled(arg)
        assert compiled.eager_calls == 0 and not compiled.runs_eagerly(arg)


def test_explain_traces_and_says_calls_run_eagerly():
    compiled = fg.compile(doubling_loop)
    v = fg.ones(3)
    for _ in range(EAGER_AFTER):
        _run(compiled, [0.5, -1.0, 2.0], v)
    text = compiled.explain(fg.tensor([1.0, 2.0, 3.0], requires_grad=True), v)
    assert "calls with these argument shapes run eagerly (not traced)" in text
    assert "## graph breaks" in text and "bool() reads the value of a bool[] tensor" in text


def test_a_graph_breaking_function_hits_the_cache_from_its_second_call():
    """Its small program runs on the reference executor and compiles nothing: the first call
    is a miss, every later call with the same shapes a hit (traced, then run eagerly)."""
    @fg.compile
    def f(x):
        if x.sum() > 0:
            return (x * 2.5).exp()
        return (x * 3.5).exp()

    x = fg.ones(5, 11)          # (a program no other test traces: its first call is a miss)
    deltas = []
    for _ in range(EAGER_AFTER + 2):
        before = fg.cache_info()
        np.testing.assert_allclose(f(x).numpy(), np.exp(2.5 * np.ones((5, 11))), rtol=1e-6)
        after = fg.cache_info()
        deltas.append((after.hits - before.hits, after.misses - before.misses,
                       after.kernels_compiled - before.kernels_compiled, after.reference_calls - before.reference_calls))
    assert deltas == [(0, 1, 0, 1)] + [(1, 0, 0, 1)] * (EAGER_AFTER + 1)
    assert f.eager_calls == 2


def test_explain_is_no_call_for_the_switch_to_eager_running():
    """explain() is a dry run: however often it traces a graph-breaking function, calls of
    those shapes keep being traced until two real calls in a row break the graph."""
    compiled = fg.compile(doubling_loop)
    x, v = fg.tensor([1.0, 2.0, 3.0], requires_grad=True), fg.ones(3)
    for _ in range(EAGER_AFTER + 1):
        compiled.explain(x, v)
    assert not compiled.runs_eagerly(x, v)
    for _ in range(EAGER_AFTER):
        _run(compiled, [0.5, -1.0, 2.0], v)
    assert compiled.runs_eagerly(x, v)


@pytest.mark.parametrize("own_generator", [False, True], ids=["global", "fg.Generator"])
def test_explain_leaves_random_streams_where_they_were(own_generator):
    """The draws explain's dry run makes (randn, dropout) are put back: the numbers after it
    are those a run without the explain gets."""
    gen = fg.Generator().manual_seed(7) if own_generator else None
    compiled = fg.compile(lambda x: fg.nn.functional.dropout(x + fg.randn(4, generator=gen), 0.5))

    def draws_after(explain: bool):
        fg.manual_seed(5)
        if gen is not None:
            gen.manual_seed(7)
        if explain:
            compiled.explain(fg.zeros(4))
        return fg.randn(6).tolist(), (fg.randn(3, generator=gen).tolist() if gen is not None else None)
    assert draws_after(True) == draws_after(False)
