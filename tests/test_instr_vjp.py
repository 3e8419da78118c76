"""Per-signature VJP programs (ir.autodiff.VJPS): the eager engine's node-by-node
backward (each node's VJP evaluated as it is emitted the first time its
signature is seen, then its program run by ir.interpreter.StraightLine) and
whole-graph backward programs that copy cached VJPs, against backward programs
emitted afresh, on the random programs of test_codegen_random."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import fusegrad as fg
from fusegrad.ir import Builder, Emitter, TensorType, float32, run_program
from fusegrad.ir.autodiff import VJPS, backward, vjp_program
from fusegrad.ir.interpreter import StraightLine
from fusegrad.tracer.dispatch import apply_op
from test_codegen_random import apply_ops, programs
from test_codegen_support import build, random_args


def _random_program(shapes, ops, grad):
    def body(e, *xs):
        return apply_ops(e, ops, xs)[len(xs):][-2:]
    return build(body, *shapes, grad=grad)


@settings(max_examples=25, deadline=None)
@given(programs)
def test_straight_line_runs_programs_as_the_interpreter_does(spec):
    shapes, ops, grad, seed = spec
    program = _random_program(shapes, ops, grad)
    args = random_args(program, np.random.default_rng(seed))
    for got, want in zip(StraightLine(program)(args), run_program(program, args)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


@settings(max_examples=25, deadline=None)
@given(programs)
def test_node_by_node_backward_equals_the_whole_graph_backward(spec):
    shapes, ops, _, seed = spec
    forward = _random_program(shapes, ops, grad=False)
    whole = _random_program(shapes, ops, grad=True)     # outputs, then the inputs' gradients
    args = random_args(whole, np.random.default_rng(seed))
    n_in, n_out = len(forward.inputs), len(forward.outputs)
    want = run_program(whole, args)[n_out:]
    VJPS.clear()
    for _ in range(2):      # each signature's first backward is evaluated, its second lowered
        leaves = [fg.from_numpy(a.copy()).requires_grad_() for a in args[:n_in]]
        outs = run_program(forward, leaves, lambda ins, xs: _as_tuple(apply_op(ins.op, list(xs), dict(ins.attrs))))
        seeds = [fg.from_numpy(a) for a in args[n_in:n_in + n_out]]
        used = [o for o in outs if o.requires_grad]
        got = fg.autograd.grad(used, leaves, [s for o, s in zip(outs, seeds) if o.requires_grad], allow_unused=True)
        # The whole-graph program has no gradient for an input no output reaches.
        assert sum(g is not None for g in got) == len(want)
        for g, w in zip([g for g in got if g is not None], want):
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-6, atol=1e-6)
    assert VJPS.built > 0


@settings(max_examples=25, deadline=None)
@given(programs)
def test_copied_vjps_compute_what_fresh_emission_does(spec):
    shapes, ops, _, seed = spec

    def whole_program(reuse):
        b = Builder()
        e = Emitter(b)
        xs = [b.input(TensorType(shape, float32)) for shape in shapes]
        outs = apply_ops(e, ops, xs)[len(xs):][-2:]
        forward = list(b.program.instrs)
        seeds = [b.input(o.type) for o in outs]
        grads = backward(b, forward, outs, seeds, xs, reuse=reuse)
        b.program.outputs = outs + [g for g in grads if g is not None]
        return b.program

    VJPS.clear()
    fresh = whole_program(False)
    whole_program(True)                     # first sighting of each signature: emitted afresh
    copied = whole_program(True)            # second: built once, then copied
    assert VJPS.built > 0
    args = random_args(fresh, np.random.default_rng(seed))
    for got, want in zip(run_program(copied, args), run_program(fresh, args)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def _as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


def test_a_signature_is_evaluated_once_then_lowered_and_reused():
    t, s = TensorType((3,), float32), TensorType((), float32)
    # d(x * c)/dx reads the constant c (input 1), not x; only input 0 gets a gradient.
    plan = vjp_program("mul", (), (t, s), (t,), (True, False), (True,))
    assert plan.reads == (("in", 1),) and plan.grad_index == (0, None)
    cache = VJPS
    cache.clear()
    x = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    counts = []
    for _ in range(3):
        (x * 3).backward(fg.ones(3))
        counts.append((cache.hits, cache.misses, cache.built))
    # First backward: evaluated as emitted; second: lowered (built once); third: reused.
    assert counts == [(0, 1, 0), (0, 2, 1), (1, 2, 1)]
    np.testing.assert_array_equal(x.grad.numpy(), [9.0, 9.0, 9.0])


@pytest.mark.parametrize("modified", ["input", "output"])
def test_both_paths_check_the_same_saved_tensors(modified):
    # The evaluated and the lowered VJP read (and version-check) the same values, in the same order.
    VJPS.clear()
    texts = []
    for _ in range(3):
        a = fg.tensor([[0.5, 1.0, 2.0]], requires_grad=True) * 1
        out = a * a.detach().requires_grad_() if modified == "input" else a.exp()
        (a if modified == "input" else out).add_(1.0)
        with pytest.raises(RuntimeError) as err:
            out.sum().backward()
        texts.append(str(err.value))
    assert texts[0] == texts[1] == texts[2]
    assert "modified by an inplace operation" in texts[0]


def test_constants_are_computed_once_and_read_only():
    b = Builder()
    e = Emitter(b)
    x = b.input(TensorType((3,), float32))
    b.program.outputs = [e.add(x, e.expand(e.const(2.0, x), (3,))), e.zeros_like(x)]
    line = StraightLine(b.program)
    assert len(line.steps) == 1                     # only the add runs per call
    total, zeros = line([np.arange(3, dtype=np.float32)])
    np.testing.assert_array_equal(total, [2.0, 3.0, 4.0])
    assert not zeros.flags.writeable
    with pytest.raises(ValueError):
        zeros[0] = 1.0


def test_a_constant_gradient_accumulates_into_a_writable_grad():
    # sign's VJP is zeros (a constant the plan computes once and shares): .grad must be a copy.
    x = fg.tensor([-1.0, 2.0], requires_grad=True)
    x.sign().sum().backward()
    x.sign().sum().backward()
    x.grad += 1
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])
    (g,) = fg.autograd.grad((x.sign() * 1).sum(), x)
    g += 5
    np.testing.assert_array_equal(g.numpy(), [5.0, 5.0])


def test_large_steps_write_into_dying_intermediates_only():
    # Above REUSE_MIN_ELEMENTS a ufunc step writes into an argument that dies there, if an
    # earlier ufunc step made it; never into an input, a constant or an output read later.
    from fusegrad.ir.interpreter import REUSE_MIN_ELEMENTS
    shape = (128, REUSE_MIN_ELEMENTS // 128)
    b = Builder()
    e = Emitter(b)
    x = b.input(TensorType(shape, float32))
    row = b.input(TensorType((1, shape[1]), float32))
    t = e.tanh(x)                       # made here: reusable where it dies
    u = e.mul(t, t)                     # t dies here (read twice)
    w = e.add(u, row)                   # u dies; row broadcasts
    kept = e.neg(w)                     # an output, read again below: never written into
    out = e.sub(e.mul(kept, 2.0), x)    # the const 2 is folded; x is an input
    b.program.outputs = [kept, out, e.exp(out)]
    line = StraightLine(b.program)
    assert sum(step[-1] is not None and step[-1] >= 0 for step in line.steps) >= 3
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(shape).astype(np.float32), rng.standard_normal((1, shape[1])).astype(np.float32)]
    copies = [a.copy() for a in args]
    for _ in range(2):                  # a second run must not see the first run's buffers
        got = line(args)
        for g, want in zip(got, run_program(b.program, copies)):
            np.testing.assert_array_equal(g, want)
        for a, c in zip(args, copies):
            np.testing.assert_array_equal(a, c)


def test_a_viewed_intermediate_is_never_written_into():
    # t is made by a ufunc step and dies at neg(t), but reshape(t) returned a view of its
    # memory that is read afterwards: writing neg's result into t would change the view.
    from fusegrad.ir.interpreter import REUSE_MIN_ELEMENTS
    shape = (128, REUSE_MIN_ELEMENTS // 128)
    b = Builder()
    e = Emitter(b)
    x, y = b.input(TensorType(shape, float32)), b.input(TensorType(shape, float32))
    t = e.mul(x, y)
    flat = e.op("reshape", t, shape=(REUSE_MIN_ELEMENTS,))
    negated = e.op("reshape", e.neg(t), shape=(REUSE_MIN_ELEMENTS,))
    b.program.outputs = [e.add(flat, negated)]
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(shape).astype(np.float32) for _ in range(2)]
    (got,) = StraightLine(b.program)(args)
    (want,) = run_program(b.program, args)
    np.testing.assert_array_equal(got, want)
    assert not want.any()


def test_an_unhashable_attribute_is_emitted_afresh():
    # A traced instruction may carry an unhashable attribute value; its VJP cannot be
    # cached, so backward emits it by the rule every time (same gradient).
    VJPS.clear()
    for _ in range(3):
        b = Builder()
        e = Emitter(b)
        x = b.input(TensorType((6,), float32))
        y = e.op("reshape", x, shape=[2, 3])           # a list: unhashable
        z = e.mul(y, y)
        seed = b.input(z.type)
        (g,) = backward(b, list(b.program.instrs), [z], [seed], [x])
        b.program.outputs = [g]
        (got,) = run_program(b.program, [np.arange(6, dtype=np.float32), np.ones((2, 3), np.float32)])
        np.testing.assert_array_equal(got, 2 * np.arange(6, dtype=np.float32))
    assert VJPS.built == 1          # only mul(y, y) was cached


def test_a_compiled_calls_backward_is_not_kept_by_the_cache():
    # custom_call (a compiled call's backward) carries a per-call object: caching its VJP
    # by signature would keep every call's saved arrays alive.
    import gc
    import weakref
    f = fg.compile(lambda x: (x * 2).tanh())
    x = fg.randn(64, requires_grad=True)
    nodes = []
    for _ in range(4):
        y = f(x)
        nodes.append(weakref.ref(y.grad_fn))
        y.sum().backward()
        del y
    gc.collect()
    assert all(ref() is None for ref in nodes)
    assert not any(key[0] == "custom_call" for key in VJPS.entries)


def test_a_one_step_program_runs_on_the_short_path_as_the_interpreter_does():
    # One step with one output (most nodes' VJPs) skips the slot list: its outputs may
    # also be inputs or folded constants, its result is coerced to the IR dtype, and
    # floating-point warnings stay silenced.
    import warnings
    b = Builder()
    e = Emitter(b)
    x = b.input(TensorType((3,), float32))
    b.program.outputs = [e.log(x), x, e.zeros_like(x)]
    line = StraightLine(b.program)
    assert line.single is not None
    args = [np.array([0.0, 1.0, -1.0], np.float32)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = line(args)
    want = run_program(b.program, args)
    assert got[1] is args[0]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)

    b = Builder()
    e = Emitter(b)
    x = b.input(TensorType((2, 3), float32))
    b.program.outputs = [e.sum(x, (0, 1))]              # NumPy returns a scalar here
    (total,) = StraightLine(b.program)([np.ones((2, 3), np.float32)])
    assert type(total) is np.ndarray and total.dtype == np.float32 and total.shape == () and total == 6
