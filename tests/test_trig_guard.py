"""Guarded near forms of sin/cos (codegen/trig_guard.py): kernels use the cheap range
reduction, exact below 2**20, and a call whose arguments reach that runs again in NumPy.

Checked: where the guard sits (fused into the kernel computing the argument, one per
shape of the arguments, float32 and float64); results against the reference executor and torch for
arguments below, at and beyond the limit, NaN and inf, forward and backward; the rerun
count that explain() reports.
"""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg
from fusegrad.codegen import KERNEL, schedule
from fusegrad.codegen.vmath import NEAR_LIMIT
from fusegrad.ir import float64, run_program
from fusegrad.runtime.executor import compile_program
from test_codegen_support import build

torch = pytest.importorskip("torch", reason="torch is the oracle for sin/cos of far arguments")

LIMIT = np.float32(NEAR_LIMIT)


def wave(e, x, w):
    """sin(x * w) + cos(x): two distinct arguments of one shape, so one guard."""
    return e.add(e.sin(e.mul(x, w)), e.cos(x))


def two_shapes(e, x, w):
    """sin(x) + cos(w): arguments of two shapes, so two guards."""
    return e.add(e.sin(x), e.cos(w))


def test_one_guard_per_shape_fused_into_the_kernel():
    sched = schedule(build(wave, (64, 32), (32,)))
    assert sched.guards == 1
    assert [s.kind for s in sched.steps] == [KERNEL]
    (guard,) = sched.program.outputs[-1:]
    assert guard.shape == ()
    assert guard.id in {v.id for v in sched.kernels[0].stores}
    assert [ins.op for ins in sched.program.instrs if ins.op.endswith("_near")] == ["sin_near", "cos_near"]
    # the two tests fold into one running flag (or-ed bit by bit: no branch), reduced once
    ops = [ins.op for ins in sched.program.instrs]
    assert ops.count("ge") == 2 and ops.count("bitwise_or") == 1 and "where" not in ops
    assert [ins.op for ins in sched.program.instrs].count("amax") == 1


def test_arguments_of_two_shapes_get_two_guards():
    sched = schedule(build(two_shapes, (64, 32), (32,)))
    assert sched.guards == 2
    assert all(g.shape == () for g in sched.program.outputs[-2:])


@pytest.mark.parametrize("where", [0, 1])
def test_a_far_argument_of_either_shape_reruns(where):
    p = build(two_shapes, (64, 32), (32,))
    x, w = np.zeros((64, 32), np.float32), np.zeros(32, np.float32)
    (x if where == 0 else w).flat[7] = 4e7
    got, want, reruns = _run_both(p, [x, w])
    assert reruns == 1
    np.testing.assert_array_equal(got[0], want[0])


def test_sin_of_one_argument_and_its_derivative_share_a_guard():
    p = build(lambda e, x: e.sin(x), (16,), grad=True)     # sin forward, cos backward: one argument
    assert schedule(p).guards == 1


def test_empty_operands_keep_the_full_forms_and_float64_is_guarded_too():
    sched = schedule(build(lambda e, x: e.sin(x), (0, 3)))
    assert sched.guards == 0 and not any(ins.op == "sin_near" for ins in sched.program.instrs)
    sched = schedule(build(wave, ((8, 4), float64), ((4,), float64)))
    assert sched.guards == 1 and {"sin_near", "cos_near"} <= {ins.op for ins in sched.program.instrs}


@pytest.mark.parametrize("far", [None, float(NEAR_LIMIT), -3e9, np.inf])
def test_float64_near_forms_match_numpy_and_far_arguments_rerun(far):
    """float64 kernels run fdlibm-style near forms (under 1 ulp: test_vmath); a call with an
    argument at or past the limit reruns by reference, NumPy's libm sin and cos."""
    p = build(wave, ((64, 32), float64), ((32,), float64))
    x = np.linspace(-40, 40, 64 * 32).reshape(64, 32)
    if far is not None:
        x[9, 30] = far
    w = np.full(32, 1.25)
    got, want, reruns = _run_both(p, [x, w])
    assert reruns == (far is not None)
    with np.errstate(invalid="ignore"):         # (sin and cos of inf: NaN, as wanted)
        expected = np.sin(x * w) + np.cos(x)
    np.testing.assert_allclose(got[0], expected, rtol=4e-16, atol=4e-16)
    np.testing.assert_allclose(got[0], want[0], rtol=4e-16, atol=4e-16)


def _run_both(program, args):
    compiled = compile_program(program)
    before = compiled.far_trig_calls
    got = compiled(args)
    return got, run_program(program, list(args)), compiled.far_trig_calls - before


@pytest.mark.parametrize("scale", [1.0, 1e3, float(LIMIT) * 0.999])
def test_arguments_below_the_limit_run_the_kernel(scale):
    p = build(wave, (64, 32), (32,))
    rng = np.random.default_rng(0)
    x = (rng.uniform(-1, 1, (64, 32)) * scale).astype(np.float32)
    w = np.ones(32, np.float32)
    got, want, reruns = _run_both(p, [x, w])
    assert reruns == 0
    for g, r in zip(got, want):
        np.testing.assert_allclose(g, r, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("far", [float(LIMIT), -float(LIMIT), 3e7, 1e30, float(np.finfo(np.float32).max), np.inf])
def test_an_argument_at_or_beyond_the_limit_reruns_in_numpy(far):
    p = build(wave, (64, 32), (32,))
    x = np.linspace(-3, 3, 64 * 32, dtype=np.float32).reshape(64, 32)
    x[17, 5] = far
    w = np.ones(32, np.float32)
    got, want, reruns = _run_both(p, [x, w])
    assert reruns == 1
    for g, r in zip(got, want):
        np.testing.assert_array_equal(g, r)          # the reference executor's own results
    t = torch.from_numpy(x)
    np.testing.assert_allclose(got[0], (t.sin() + t.cos()).numpy(), rtol=1e-6, atol=1e-6)


def test_nan_alone_does_not_rerun():
    p = build(wave, (64, 32), (32,))
    x = np.zeros((64, 32), np.float32)
    x[3, 3] = np.nan
    got, want, reruns = _run_both(p, [x, np.ones(32, np.float32)])
    assert reruns == 0
    assert np.isnan(got[0][3, 3]) and np.count_nonzero(np.isnan(got[0])) == 1
    np.testing.assert_allclose(got[0], want[0], rtol=2e-6, atol=2e-6)


def test_compiled_value_and_grad_with_far_arguments_match_torch():
    def loss(x):
        return (x.sin() * x.cos() + x.cos()).sum()
    step = fg.compile(fg.value_and_grad(loss))
    for scale in (1.0, 1e8):
        x = (np.random.default_rng(3).uniform(-1, 1, (128, 64)) * scale).astype(np.float32)
        value, grad = step(fg.tensor(x))
        t = torch.tensor(x, requires_grad=True)
        want = loss(t)
        want.backward()
        np.testing.assert_allclose(value.item(), want.item(), rtol=1e-4, atol=1e-3)
        np.testing.assert_allclose(grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-5)
    text = step.explain(fg.tensor(x))       # explain() runs the call too: a second rerun
    assert "sin/cos: near forms, exact for |x| < 2**20 (1 guard output(s)); " \
           "calls with a larger argument rerun in NumPy: 2" in text


def test_a_long_chain_of_sines_splits_into_kernels_and_keeps_one_guard():
    """150 chained sines: kernels of at most MAX_KERNEL_MATH math calls and MAX_KERNEL_INSTRS
    instructions (compile time grows faster than a kernel), each but the last full, the
    guard's running flag carried across them; a far value reached in the middle of the chain
    still reruns the call in NumPy."""
    from fusegrad.codegen.schedule import MAX_KERNEL_INSTRS, MAX_KERNEL_MATH

    def chain(e, x):
        for _ in range(150):
            x = e.sin(e.mul(x, e.const(0.5, x)))     # a contraction: rounding differences shrink
        return x
    p = build(chain, (8, 16))
    sched = schedule(p)
    assert sched.guards == 1
    assert len(sched.kernels) >= -(-150 // MAX_KERNEL_MATH)
    assert all(k.math <= MAX_KERNEL_MATH and len(k.members) <= MAX_KERNEL_INSTRS for k in sched.kernels)
    # (a sine's step is five instructions: mul, sin_near, and the guard's abs, ge and or)
    assert all(k.math == MAX_KERNEL_MATH or len(k.members) > MAX_KERNEL_INSTRS - 5 for k in sched.kernels[:-1])
    x = np.linspace(-1, 1, 128, dtype=np.float32).reshape(8, 16)
    got, want, reruns = _run_both(p, [x])
    assert reruns == 0
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-7)
    x[2, 3] = 1e9                   # the first sine's argument, 5e8, is far; the rest are small
    got, want, reruns = _run_both(p, [x])
    assert reruns == 1
    np.testing.assert_array_equal(got[0], want[0])
