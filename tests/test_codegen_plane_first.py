"""Plane-first column kernels (codegen/kernel_source.py, _Generator._plane_first).

A sum over leading dims that keeps a plane (`x.sum(0)` of [R, K1, K2], a broadcast
parameter's gradient, `stack(...).mean(0)`) loops over the first kept dim first and
accumulates each row of the plane in a small per-block array, finishing the row's
epilogue at once, instead of per-block partials over the whole plane. Checked here:
when the generator chooses that order (and when it must not), the loops it writes,
their vectorisation, and compiled results against the reference executor for sums,
means, max/min, several tails, epilogues that read other arrays, a full store beside
the tail (a gradient), a cut innermost loop, all dtypes, size-1 and empty dims, serial
and parallel; through fg.compile, a gradient against eager and a new batch size that
compiles nothing.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fusegrad as fg
from fusegrad.codegen import generate, kernel_source, schedule
from fusegrad.ir import bool_, float64, int64
from test_codegen_kernels import PACKED, compile_source, function_asm, innermost_loops
from test_codegen_support import build, check, random_args


def _kernel_text(program, k=0) -> str:
    return generate(schedule(program).kernels[k], "fusegrad.codegen.vmath").functions[0][2]


def _sum0_times_two(e, x):
    return e.sum(e.mul(x, 2.0), (0,))


# ------------------------------------------------------------------ the loops it writes
def test_leading_sum_loops_over_the_first_kept_dim_with_a_row_accumulator():
    text = _kernel_text(build(_sum0_times_two, (3, 5, 7)))
    loops = re.findall(r"for (\w+) in", text)
    # chunks of i1 (kept) outside i0 (reduced, itself in chunks of 64), then i1 in the chunk
    assert loops[:6] == ["blk", "lo1", "rc", "i0", "i1", "i2"], text
    assert "sub = max(1, 4096 // max(1, n2))" in text, text
    assert "tacc0 = np.empty((sub, n2, ), np.float64)" in text and \
        "cacc0 = np.empty((sub, n2, ), np.float32)" in text, text
    assert "tacc0.fill(0.0)" in text and "np.full(" not in text and "part0" not in text, text
    # float32 over each chunk of 64 rows of i0, then float64
    cell = "[np.uintp(i1 - lo1), i2]"
    assert f"cacc0{cell} += " in text, text
    assert f"tacc0{cell} = fg_acc_add(tacc0{cell}, np.float64(cacc0{cell}))" in text, text
    # the chunk's epilogue is written inside the lo1 loop, right after its reduction
    assert re.search(r"r0 = np.float32\(tacc0\[np.uintp\(i1 - lo1\), i2\]\)\n\s+o0\[np.uintp\(i1\), i2\] = r0", text), text


@pytest.mark.parametrize("shape, axes, expected", [
    ((64, 48), (0,), True),                  # 2-d: chunks of the innermost dim
    ((64, 48), (1,), False),                 # a row sum (a row kernel)
    ((4, 5, 6), (0, 2), False),              # the innermost dim is reduced (a column local)
    ((4, 5, 6), (1,), True),                 # a middle dim: chunks of the first
    ((4, 5, 6), (2,), False),                # a row sum (a row kernel)
    ((4, 5, 6), (0,), True),
    ((3, 4, 5, 6), (0, 1), True),
    ((3, 4, 5, 6), (0, 2), True),            # kept (1, 3): a reduced dim between them
    ((3, 1, 5, 6), (0,), True),              # (a size-1 dim has no loop)
    ((3, 1, 6), (0,), True),                 # ... so this one is 2-d
    ((4, 5, 6), (0, 1), True),               # the innermost dim alone
])
def test_when_the_plane_comes_first(shape, axes, expected):
    text = _kernel_text(build(lambda e, x: e.sum(e.exp(x), axes), shape))
    assert (".fill(" in text) is expected, text


def test_tails_keeping_different_first_dims_keep_the_blocked_order():
    """Two tails whose kept dims start differently ((1, 2) and (2,)): per-block partials, as before."""
    program = build(lambda e, x: [e.sum(x, (0,)), e.sum(e.mul(x, x), (0, 1))], (3, 4, 5))
    text = _kernel_text(program)
    assert ".fill(" not in text and "part0" in text and "part1" in text, text
    check(program, random_args(program, np.random.default_rng(0)))


def test_a_middle_sum_adds_up_in_float32_runs_too():
    """[K1, R, K2] summed over R: the float32 run accumulator holds the dims inside R's loop."""
    text = _kernel_text(build(lambda e, x: e.sum(e.exp(x), (1,)), (4, 7, 9)))
    assert "cacc0 = np.empty((n2, ), np.float32)" in text and "cacc0[i2] += fg_exp(" in text, text
    assert "tacc0[np.uintp(i0 - lo0), i2] = fg_acc_add(tacc0[np.uintp(i0 - lo0), i2], np.float64(cacc0[i2]))" \
        in text, text


def test_float64_and_4d_rows_accumulate_in_float64():
    """Only a float32 sum over one reduced dim adds up in float32 runs (cacc)."""
    for fn, types in [(lambda e, x: e.sum(e.exp(x), (0,)), [((3, 4, 5), float64)]),
                      (lambda e, x: e.sum(e.exp(x), (0, 2)), [(3, 4, 5, 6)])]:
        text = _kernel_text(build(fn, *types))
        assert ".fill(" in text and "cacc" not in text, text


def test_a_total_beside_a_plane_accumulates_per_block():
    """A loss summed to one value beside a broadcast parameter's gradient (a training
    step's kernel): the plane row by row, the total in per-block partials."""
    program = build(lambda e, x, p: e.sum(e.tanh(e.add(x, e.expand(p, (7, 16, 33)))), (0, 1, 2)),
                    (7, 16, 33), (1, 16, 33), grad=True)
    text = _kernel_text(program)
    assert "tacc1.fill(0.0)" in text and "part0 = np.full((nblocks, 1, )" in text, text
    check(program, random_args(program, np.random.default_rng(2)), rtol=3e-6, atol=1e-5)


def test_a_tail_reducing_the_innermost_dim_beside_a_plane():
    """Tails keeping (1, 2) and (1,): plane first; the second sums each row's innermost loop
    in a local (float32 chunks), flushed into its one-element row accumulator."""
    program = build(lambda e, x: [e.sum(x, (0,)), e.sum(e.mul(x, x), (0, 2))], (3, 4, 2000))
    text = _kernel_text(program)
    assert "tacc1 = np.empty((sub, ), np.float64)" in text and "lacc1" in text and "csum1" in text, text
    assert "cacc0" in text, text
    assert "np.full(" not in text, text
    check(program, random_args(program, np.random.default_rng(1)), rtol=3e-6, atol=1e-5)


def test_the_hot_loop_vectorises():
    """The accumulation over the innermost (kept) dim is packed SIMD with no gather or call."""
    program = build(_sum0_times_two, (3, 16, 256))
    (kernel,) = schedule(program).kernels
    source = generate(kernel, "fusegrad.codegen.vmath")
    fn = compile_source(source)
    x = np.random.default_rng(0).standard_normal((3, 16, 256), dtype=np.float32)
    out = np.empty((16, 256), np.float32)
    fn(3, 16, 256, x, *[p for p, _ in source.params], out)
    np.testing.assert_allclose(out, (2 * x).sum(0), rtol=1e-6, atol=1e-6)
    hot = max(innermost_loops(function_asm(fn)), key=lambda loop: len(PACKED.findall("\n".join(loop))))
    text = "\n".join(hot)
    assert len(PACKED.findall(text)) > 4, text[:2000]
    assert not re.search(r"gather|\bcall", text), text[:2000]


# ------------------------------------------------------------------ compiled against the reference
CASES = {
    "sum0": (_sum0_times_two, [(3, 5, 7)], True),
    "sum0_2d": (lambda e, x: e.sigmoid(e.sum(e.exp(x), (0,))), [(70, 33)], True),
    "sum01_innermost": (lambda e, x: e.sum(e.mul(x, x), (0, 1)), [(3, 4, 70)], True),
    "bias_and_loss_2d": (lambda e, x, b: e.sum(e.tanh(e.add(x, e.expand(b, (9, 40)))), (0, 1)), [(9, 40), (1, 40)], True),
    "sum0_keepdim": (lambda e, x: e.sum(e.exp(x), (0,), keepdim=True), [(4, 3, 9)], True),
    "sum01_4d": (lambda e, x: e.sum(e.tanh(x), (0, 1)), [(2, 3, 4, 5)], True),
    "sum02_4d": (lambda e, x: e.sum(e.mul(x, x), (0, 2)), [(2, 3, 4, 5)], True),
    "mean_sigmoid": (lambda e, x: e.sigmoid(e.op("mean", x, axes=(0,), keepdim=False)), [(5, 4, 6)], True),
    "amax": (lambda e, x: e.op("amax", x, axes=(0,), keepdim=False), [(5, 4, 6)], False),
    "amin_keep": (lambda e, x: e.op("amin", e.neg(x), axes=(0,), keepdim=True), [(5, 4, 6)], False),
    "middle": (lambda e, x: e.sum(e.exp(x), (1,)), [(4, 7, 9)], True),
    "middle_keepdim_4d": (lambda e, x: e.op("mean", x, axes=(1, 2), keepdim=True), [(3, 4, 5, 6)], True),
    "two_tails": (lambda e, x: [e.sum(x, (0,)), e.op("amax", e.exp(x), axes=(0,), keepdim=False)], [(3, 4, 6)],
                  False),
    "epilogue_reads_an_array": (lambda e, x, w: e.mul(e.sum(e.exp(x), (0,)), w), [(3, 4, 6), (4, 6)], True),
    # x + pos broadcast over a batch: x's gradient is a full store beside pos's (the tail)
    "broadcast_parameter": (lambda e, x, p: e.tanh(e.add(x, e.expand(p, (6, 4, 7)))), [(6, 4, 7), (1, 4, 7)], True),
    "stack_mean": (lambda e, a, b: e.sigmoid(e.op("mean", e.op("stack", a, e.mul(b, 2.0), axis=0), axes=(0,),
                                                  keepdim=False)), [(4, 9), (4, 9)], True),
    # a cat along the innermost dim: that loop cut into segments inside the plane-first nest
    "cat_inner": (lambda e, x, y: e.sum(e.exp(e.op("cat", x, e.mul(y, 2.0), axis=2)), (0,)),
                  [(3, 4, 5), (3, 4, 7)], True),
    "float64": (lambda e, x: e.sum(e.exp(x), (0,)), [((3, 4, 5), float64)], True),
    "int64": (lambda e, x: e.sum(e.mul(x, x), (0,)), [((3, 4, 5), int64)], False),
    "int64_max": (lambda e, x: e.op("amax", x, axes=(0, 1), keepdim=False), [((3, 4, 5, 2), int64)], False),
    "bool_any": (lambda e, x: e.op("amax", x, axes=(0,), keepdim=False), [((3, 4, 5), bool_)], False),
    "bool_sum": (lambda e, x: e.sum(x, (0,)), [((3, 4, 5), bool_)], False),
    "empty_reduced_dim": (lambda e, x: e.sum(e.exp(x), (0,)), [(0, 4, 5)], False),
    "empty_kept_dim": (lambda e, x: e.sum(e.exp(x), (0,)), [(3, 0, 5)], False),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("policy", ["never", "always"])
def test_compiled_matches_reference(monkeypatch, name, policy):
    monkeypatch.setenv("FUSEGRAD_PARALLEL", policy)
    fn, shapes, grad = CASES[name]
    program = build(fn, *shapes, grad=grad)
    check(program, random_args(program, np.random.default_rng(len(name))), rtol=3e-6, atol=1e-6)


@pytest.mark.parametrize("plane_rows, segments", [(1, 1), (16, 1), (16, 8), (1, 3)])
@pytest.mark.parametrize("name", ["sum0", "sum0_2d", "broadcast_parameter", "two_tails", "middle", "sum02_4d"])
def test_chunks_and_segments_match_reference(monkeypatch, name, plane_rows, segments):
    """Many chunks of the plane dim (a last one short), blocks of several chunks, with and
    without segments of the reduced dim: PLANE_ROWS and PLANE_SEGMENTS made small, so that
    small shapes take each path."""
    monkeypatch.setattr(kernel_source, "PLANE_ROWS", plane_rows)
    monkeypatch.setattr(kernel_source, "PLANE_SEGMENTS", segments)
    fn, shapes, grad = CASES[name]
    program = build(fn, *shapes, grad=grad)
    text = _kernel_text(program)
    assert f"sub = max(1, {plane_rows} // " in text, text
    check(program, random_args(program, np.random.default_rng(plane_rows)), rtol=3e-6, atol=1e-6)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=3, max_size=4), st.integers(1, 2), st.booleans())
def test_any_shape_matches_reference(shape, leading, keepdim):
    """Sums over the leading dims of any 3-d or 4-d shape (size 1 and 0 included)."""
    leading = min(leading, len(shape) - 2)
    program = build(lambda e, x: e.sigmoid(e.sum(e.mul(x, 3.0), tuple(range(leading)), keepdim=keepdim)), tuple(shape))
    check(program, random_args(program, np.random.default_rng(sum(shape))), rtol=3e-6, atol=1e-6)


# ------------------------------------------------------------------ through fg.compile
def test_broadcast_parameter_gradient_matches_eager_and_a_new_batch_compiles_nothing():
    def loss(x, pos):
        return ((x + pos).tanh() ** 2).sum()
    rng = np.random.default_rng(5)
    pos = rng.standard_normal((16, 33), dtype=np.float32)
    compiled = fg.compile(fg.value_and_grad(loss, argnums=(0, 1)))
    for batch in (3, 7):
        x = rng.standard_normal((batch, 16, 33), dtype=np.float32)
        before = fg.cache_info().kernels_compiled
        value, grads = compiled(x, pos)
        if batch == 7:
            assert fg.cache_info().kernels_compiled == before    # (the loop order is structure only)
        want_value, want_grads = fg.value_and_grad(loss, argnums=(0, 1))(x, pos)
        np.testing.assert_allclose(value.item(), want_value.item(), rtol=1e-5)
        for g, w in zip(grads, want_grads):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-5)
    text = compiled.explain(x, pos)
    assert ".fill(0.0)" in text
    assert "plane first: chunks of dim 1 accumulate their sums in cache, each finished at once" in text
