"""Index-set splitting (codegen/segments.py): a kernel's innermost loop cut at cat's seams.

What is known over a segment (clamps that do not act, comparisons of the position with
constants, selects with a known condition), the generated loops, their vectorisation,
and compiled results against the reference executor: cat along the innermost dim with
two to four operands of any widths (size 1 and empty ones included), nested cats, cat
inside row kernels, slice assignment along the last dim, flat 1-d cats, the in-place
variant, and the loops that stay whole (too many seams, strided slices).
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fusegrad as fg
from fusegrad.codegen import generate, schedule
from fusegrad.codegen.segments import MAX_SEGMENTS, Segment, clamp_over, clamp_seams, interval, plan
from fusegrad.ir.ops.movement import Clamped
from test_codegen_kernels import PACKED, compile_source, function_asm, innermost_loops
from test_codegen_support import build, check, random_args


# ------------------------------------------------------------------ what is known over a segment
def test_interval_of_a_position_and_of_clamps():
    seg = Segment(1, 4, 10)                       # positions 4 .. 9 of dim 1
    assert interval(1, seg) == (4, 9)
    assert interval(0, seg) is None               # another loop's variable
    assert interval(None, seg) == (0, 0)          # a size-1 dim reads element 0
    assert interval(Clamped(1, 6, None), seg) == (0, 3)
    assert interval(Clamped(1, 0, 5), seg) == (4, 5)
    assert interval(Clamped(Clamped(1, 2, 6), 1, None), seg) == (1, 5)
    assert interval(Clamped(1, 0, 5, step=2), seg) is None


@pytest.mark.parametrize("entry, lo, hi, want", [
    (Clamped(1, 0, 511), 0, 512, "shift"),        # cat's first operand over its own columns
    (Clamped(1, 0, 511), 512, 1024, "high"),      # ... and past them
    (Clamped(1, 512, None), 512, 1024, "shift"),  # the second operand over its columns
    (Clamped(1, 512, None), 0, 512, "low"),
    (Clamped(1, 512, None), 0, 513, "low"),       # (position 512 reads element 0 too)
    (Clamped(1, 512, None), 0, 514, None),        # the clamp acts over part of the segment
    (Clamped(1, 2, 2), 2, 5, "shift"),            # t[:, 2:5] = v
    (Clamped(1, 2, 2), 5, 9, "high"),
    (Clamped(0, 0, 3), 0, 4, None),               # a clamp of another dim
    (Clamped(1, 0, 3, step=2), 0, 4, None),       # a strided slice's spread
    (Clamped(Clamped(1, 0, 6), 3, None), 3, 7, "shift"),
    (Clamped(Clamped(1, 0, 6), 3, None), 7, 9, "shift"),   # (its source is clamped at 6 there: 6 - 3)
    (Clamped(Clamped(1, 0, 6), 0, 2), 3, 9, "high"),
])
def test_clamp_over_a_segment(entry, lo, hi, want):
    assert clamp_over(entry, Segment(1, lo, hi)) == want


def test_clamp_seams_follow_nested_clamps():
    assert clamp_seams(Clamped(1, 0, 511), 1) == [0, 512]
    assert clamp_seams(Clamped(1, 512, None), 1) == [512]
    assert clamp_seams(Clamped(1, 0, 3), 0) == []           # another dim
    assert clamp_seams(Clamped(1, 2, 2, step=3), 1) == []   # strided: not cut
    assert sorted(clamp_seams(Clamped(Clamped(1, 0, 6), 3, None), 1)) == [0, 3, 7]


def test_plan_cuts_at_inner_seams_only_and_caps_the_count():
    assert plan([0, 512, 512, 1024], 1024) == [(0, 512), (512, 1024)]
    assert plan([0, 1024], 1024) is None                    # nothing inside
    assert plan(list(range(1, MAX_SEGMENTS)), 100) == [(k, k + 1) for k in range(MAX_SEGMENTS - 1)] + \
        [(MAX_SEGMENTS - 1, 100)]
    assert plan(list(range(1, MAX_SEGMENTS + 1)), 100) is None


# ------------------------------------------------------------------ the generated loops
def _inner_cat(e, x, y):
    return e.sum(e.tanh(e.op("cat", x, e.mul(y, 2.0), axis=1)), (0, 1))


def test_inner_cat_kernel_is_one_affine_loop_per_operand():
    program = build(_inner_cat, (64, 48), (64, 80), grad=True)
    kernel = schedule(program).kernels[0]       # (the next one: y's gradient, the slice times 2)
    text = generate(kernel, "fusegrad.codegen.vmath").functions[0][2]
    loops = re.findall(r"for i1 in range\(([^\n]*)\):", text)
    assert len(loops) == 2, text
    assert "min(i1" not in text and "max(i1" not in text and " if np.bool_" not in text, text
    assert re.search(r"a\d\[np\.uintp\(i0\), np\.uintp\(i1 - c\d\)\]", text), text


def test_inner_cat_hot_loops_vectorise():
    """The loop over each operand's columns is packed SIMD code with no gather (each
    operand read at an affine index); uncut, the clamped reads kept it scalar."""
    program = build(lambda e, x, y: e.exp(e.op("cat", x, e.mul(y, 3.0), axis=1)), (16, 256), (16, 256))
    (kernel,) = schedule(program).kernels
    source = generate(kernel, "fusegrad.codegen.vmath")
    fn = compile_source(source)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((16, 256), dtype=np.float32), rng.standard_normal((16, 256), dtype=np.float32)
    out = np.empty((16, 512), np.float32)
    by_id = {v.id: a for v, a in zip(program.inputs, [x, y])}
    fn(16, 512, *[by_id[v.id] for v in source.loads], *[p for p, _ in source.params], out)
    np.testing.assert_allclose(out, np.exp(np.concatenate([x, 3 * y], 1)), rtol=2e-6)
    loops = sorted(innermost_loops(function_asm(fn)), key=lambda loop: len(PACKED.findall("\n".join(loop))))
    for hot in loops[-2:]:
        text = "\n".join(hot)
        assert len(PACKED.findall(text)) > 10, text[:2000]
        assert not re.search(r"gather|scatter|\bcall", text), text[:2000]


def test_loop_stays_whole_past_the_segment_cap():
    """More seams than MAX_SEGMENTS allows: one loop, clamps and selects as before."""
    shapes = [(4, 3)] * (MAX_SEGMENTS + 1)
    program = build(lambda e, *xs: e.exp(e.op("cat", *xs, axis=1)), *shapes)
    (kernel,) = schedule(program).kernels
    text = generate(kernel, "fusegrad.codegen.vmath").functions[0][2]
    assert len(re.findall(r"for i1 in", text)) == 1 and "min(" in text
    check(program, random_args(program, np.random.default_rng(1)))


def test_strided_slice_assignment_is_not_cut():
    """x[:, 1::3] = v spreads v with a step: no seam is cut for it (each position's test
    reads the spread), and the result is the reference's."""
    program = build(lambda e, x, v: e.exp(e.op("index_put", x, v, index=(("s", 0, 4, 1), ("s", 1, 12, 3)))),
                    (4, 12), (4, 4))
    check(program, random_args(program, np.random.default_rng(2)))


# ------------------------------------------------------------------ compiled against the reference
def _squared(e, x):
    return e.mul(x, x)


def _strided_into_slice(e, x, v, start, step):
    """x[..., start:][..., ::step] = v, as the tracer records it: a write into the slice, then
    the slice written back."""
    lead = tuple(("s", 0, n, 1) for n in x.type.shape[:-1])
    n = x.type.shape[-1]
    part = e.op("getitem", x, index=lead + (("s", start, n, 1),))
    part = e.op("index_put", part, v, index=lead + (("s", 0, n - start, step),))
    return e.op("index_put", x, part, index=lead + (("s", start, n, 1),))


CASES = {
    # cat along the innermost dim, fused with its consumer (and the backward's slices)
    "two": (lambda e, x, y: e.tanh(e.op("cat", x, e.mul(y, 2.0), axis=1)), [(5, 7), (5, 9)], True),
    "three_3d": (lambda e, x, y, z: e.exp(e.op("cat", x, y, z, axis=2)), [(2, 3, 4), (2, 3, 1), (2, 3, 6)], True),
    "four_unit_widths": (lambda e, a, b, c, d: e.mul(e.op("cat", a, b, c, d, axis=1), 3.0),
                         [(3, 1), (3, 1), (3, 2), (3, 1)], True),
    "nested": (lambda e, x, y, z: e.sin(e.op("cat", e.op("cat", x, e.mul(y, 3.0), axis=1), z, axis=1)),
               [(2, 3), (2, 4), (2, 2)], True),
    "broadcast_operand": (lambda e, x, b: e.add(e.op("cat", x, e.expand(b, (4, 5)), axis=1), 1.0),
                          [(4, 3), (1, 5)], True),
    # cat inside row kernels: a softmax and a row sum over the concatenated row
    "softmax_of_cat": (lambda e, x, y: e.op("softmax", e.op("cat", x, y, axis=1), axis=1),
                       [(6, 10), (6, 22)], True),
    "row_sum": (lambda e, x, y: e.sum(e.exp(e.op("cat", y, x, axis=1)), (1,)), [(7, 5), (7, 11)], True),
    "whole_sum": (lambda e, x, y: e.sum(e.exp(e.op("cat", x, y, axis=1)), (0, 1)), [(3, 2000), (3, 100)], True),
    # summed over the last dim in a kernel without row loops (chunked column locals)
    "sum_02": (lambda e, x, y: e.sum(e.exp(e.op("cat", x, e.mul(y, 2.0), axis=2)), (0, 2)), [(4, 3, 5), (4, 3, 7)],
               True),
    "sin_sum_02": (lambda e, x, y: e.sum(e.sin(e.op("cat", x, y, axis=2)), (0, 2)), [(2, 3, 6), (2, 3, 2)], False),
    # one dim: a flat loop in blocks
    "flat": (lambda e, x, y: e.sigmoid(e.op("cat", x, y, axis=0)), [(5000,), (3000,)], True),
    # ... and reduced to one value, squared (the phase's loop is the parallel one: not cut)
    "flat_sum_squared": (lambda e, x, y: _squared(e, e.sum(e.exp(e.op("cat", e.tanh(x), e.mul(y, 2.0), axis=0)), (0,))),
                         [(1,), (5,)], True),
    # slice assignment along the last dim (index_put's select)
    "setitem": (lambda e, x, v: e.exp(e.op("index_put", x, v, index=(("s", 0, 6, 1), ("s", 2, 5, 1)))),
                [(6, 9), (6, 3)], True),
    "setitem_column": (lambda e, x, v: e.mul(e.op("index_put", x, v, index=(("s", 0, 4, 1), ("i", 7))), 2.0),
                       [(4, 8), (4,)], True),
    # a strided assignment into a slice (x[2:][::2] = v): the loop is cut at the slice's seam,
    # and the strided spread's position is divided as a whole there ((i0 - 2) // 2; the
    # kernel divided 2 alone, `i0 - 2 // 2`, and wrote v to the wrong elements)
    # (no gradient: the backward's kernels split the forward's differently)
    "setitem_strided_in_slice": (lambda e, x, v: e.exp(_strided_into_slice(e, x, v, 2, 2)), [(9,), (4,)], False),
    "setitem_strided_in_slice_2d": (lambda e, x, v: e.mul(_strided_into_slice(e, x, v, 3, 3), 2.0),
                                    [(3, 10), (3, 3)], False),
    # along an outer dim the innermost loop is not cut (its select is loop-invariant)
    "outer_dim": (lambda e, x, y: e.tanh(e.op("cat", x, y, axis=0)), [(3, 8), (5, 8)], True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_matches_reference(name):
    fn, shapes, grad = CASES[name]
    program = build(fn, *shapes, grad=grad)
    compiled = check(program, random_args(program, np.random.default_rng(len(name))), rtol=3e-6, atol=1e-6)
    # (not rerun in NumPy: a sin's guard left unset by a dropped statement reads as fired)
    assert compiled.far_trig_calls == 0


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=2, max_size=4), st.integers(1, 5))
def test_cat_widths_share_one_kernel_and_match(widths, rows):
    """Any widths: one kernel source per number of operands (the seams are arguments), and
    the reference's values."""
    shapes = [(rows, w) for w in widths]
    program = build(lambda e, *xs: e.exp(e.op("cat", *[e.mul(x, float(k + 1)) for k, x in enumerate(xs)], axis=1)),
                    *shapes)
    check(program, random_args(program, np.random.default_rng(sum(widths))), rtol=3e-6, atol=1e-6)


def test_fg_compile_cat_matches_eager_and_says_where_it_cut():
    """Through fg.compile: value and gradients of a cat along the last dim equal eager's,
    and explain() names the cut."""
    def loss(x, y):
        return (fg.cat([x.tanh(), y * 2, x[:, :1]], dim=-1).sigmoid() ** 2).sum()
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((33, 17), dtype=np.float32), rng.standard_normal((33, 40), dtype=np.float32)
    compiled = fg.compile(fg.value_and_grad(loss, argnums=(0, 1)))
    assert "innermost loop (dim 1) cut at 17, 57: one affine loop per segment" in compiled.explain(x, y)
    value, grads = compiled(x, y)
    want_value, want_grads = fg.value_and_grad(loss, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(value.item(), want_value.item(), rtol=1e-5)
    for g, w in zip(grads, want_grads):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)


def _check_nested_write(n, a, b, s, c, t, rows):
    """x[..., a:b:s][..., c::t] = v (a write into a view of a view, as the tracer records it)
    fused with its reader: the reference's values, wherever the loop is cut."""
    lead = tuple(("s", 0, r, 1) for r in rows)
    m = len(range(a, b, s))
    outer, inner = lead + (("s", a, b, s),), lead + (("s", c, m, t),)

    def fn(e, x, v):
        part = e.op("index_put", e.op("getitem", x, index=outer), v, index=inner)
        return e.tanh(e.op("index_put", x, part, index=outer))
    program = build(fn, rows + (n,), rows + (len(range(c, m, t)),))
    check(program, random_args(program, np.random.default_rng(n * 1000 + a * 100 + c * 10 + t)))


@pytest.mark.parametrize("n, a, b, s, c, t, rows", [
    (9, 2, 9, 1, 0, 2, ()),         # the cut at 2, then every other element of the slice
    (10, 3, 10, 1, 1, 3, (3,)),
    (12, 1, 11, 2, 1, 2, ()),       # (a strided outer slice: not cut)
])
def test_writes_through_nested_slices_match(n, a, b, s, c, t, rows):
    _check_nested_write(n, a, b, s, c, t, rows)


@settings(max_examples=12, deadline=None)
@given(st.integers(4, 12), st.data())
def test_writes_through_random_nested_slices_match(n, data):
    a = data.draw(st.integers(0, n - 2), label="outer start")
    b = data.draw(st.integers(a + 1, n), label="outer stop")
    s = data.draw(st.sampled_from([1, 1, 2]), label="outer step")
    c = data.draw(st.integers(0, len(range(a, b, s)) - 1), label="inner start")
    t = data.draw(st.sampled_from([1, 2, 3]), label="inner step")
    rows = data.draw(st.sampled_from([(), (3,)]), label="leading dims")
    _check_nested_write(n, a, b, s, c, t, rows)


def test_fg_compile_strided_write_into_a_view_of_written_memory():
    """Found by the alias fuzzer (seed 92111): the memory zeroed, then a strided write through
    a view of it, compiled: the written elements hold the value, as eagerly and in torch."""
    def run(compiled):
        s1 = fg.tensor([1.5, -0.5, -2.0, 0.75, -0.5, -1.0])

        def f(a2):
            s1.zero_()
            a2[::2] = 5.0
            return a2.sum()
        out = (fg.compile(f) if compiled else f)(s1[2:])
        return out.item(), s1.numpy().tolist()
    assert run(True) == run(False) == (10.0, [0.0, 0.0, 5.0, 0.0, 5.0, 0.0])


def test_stencil_gradient_is_cut_in_five_segments():
    """The gradient of a three-point stencil adds three slice-gradients (selects over clamped
    shifts): 4 seams, 5 segments, and eager's values."""
    def loss(x):
        return ((x[:, 2:] - 2 * x[:, 1:-1] + x[:, :-2]) ** 2).sum()
    x = np.random.default_rng(5).standard_normal((40, 300)).astype(np.float32)
    compiled = fg.compile(fg.value_and_grad(loss))
    assert "innermost loop (dim 1) cut at 1, 2, 298, 299: one affine loop per segment" in compiled.explain(x)
    value, grad = compiled(x)
    want_value, want_grad = fg.value_and_grad(loss)(x)
    np.testing.assert_allclose(value.item(), want_value.item(), rtol=1e-5)
    np.testing.assert_allclose(grad.numpy(), want_grad.numpy(), rtol=1e-5, atol=1e-5)


def test_in_place_output_over_a_cut_loop():
    """x[:, 2:5] = v over a dying x: the kernel stores in each segment, and may still write
    its output over x (codegen/in_place.py)."""
    from fusegrad.codegen.in_place import in_place_pairs
    program = build(lambda e, x, v: e.exp(e.op("index_put", e.mul(x, 2.0), v, index=(("s", 0, 6, 1), ("s", 2, 5, 1)))),
                    (6, 9), (6, 3))
    (kernel,) = schedule(program).kernels
    source = generate(kernel, "fusegrad.codegen.vmath")
    text = source.functions[0][2]
    assert len(re.findall(r"^\s*o0\[", text, flags=re.MULTILINE)) == 3, text
    full = {0}
    pairs = in_place_pairs(text, source.loads, source.stores, full)
    x_slot = [k for k, v in enumerate(source.loads) if v.type.shape == (6, 9)]
    assert [(0, j) for j in x_slot] == list(pairs)
    check(program, random_args(program, np.random.default_rng(4)))
