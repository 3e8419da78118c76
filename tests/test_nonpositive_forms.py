"""codegen/nonpositive_forms.py: exp of `x - amax(x)` runs as exp_small in kernels, nothing
else does, and the values stay those of the reference executor."""
from __future__ import annotations

import numpy as np
import pytest

from fusegrad.codegen import generate, schedule
from fusegrad.codegen.nonpositive_forms import nonpositive_forms
from fusegrad.ir import Instr, Program, float64, run_program
from fusegrad.runtime.executor import compile_program
from test_codegen_support import build, check, random_args


def _ops(program) -> list:
    return [ins.op for ins in program.instrs]


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_exps_take_the_nonpositive_form(op):
    program = build(lambda e, x: e.op(op, x, axis=1), (6, 9))
    sched = schedule(program)
    assert "exp_small" in _ops(sched.program) and "exp" not in _ops(sched.program), _ops(sched.program)
    (kernel,) = sched.kernels
    text = generate(kernel, "fusegrad.codegen.vmath").functions[0][2]
    assert "fg_exp_small(" in text and "fg_exp(" not in text, text


@pytest.mark.parametrize("make", [
    lambda e, x, y: e.exp(e.neg(e.mul(x, x))),                              # a Gaussian
    lambda e, x, y: e.exp(e.neg(e.op("abs", x))),                           # log-sigmoid's
    lambda e, x, y: e.exp(e.mul(e.neg(e.op("relu", x)), e.exp(y))),        # (<= 0) * (>= 0)
    lambda e, x, y: e.exp(e.neg(e.op("sqrt", x))),
], ids=["gaussian", "minus-abs", "product", "minus-sqrt"])
def test_exps_of_arguments_the_sign_rules_show_at_most_zero_take_the_form(make):
    program = build(make, (6, 6), (6, 6))
    assert "exp_small" in _ops(nonpositive_forms(program))
    args = random_args(program, np.random.default_rng(1), low=-20, high=20)
    check(program, args)


@pytest.mark.parametrize("make", [
    lambda e, x, y: e.exp(x),                                              # any argument
    lambda e, x, y: e.exp(e.sub(x, e.amax(y, (1,), keepdim=True))),         # another value's max
    lambda e, x, y: e.exp(e.sub(e.amax(x, (1,), keepdim=True), x)),         # max minus x: >= 0
    # not aligned: x - max(x, 1).T can be positive ([[0, 5], [1, 2]] gives 3 at [0, 1])
    lambda e, x, y: e.exp(e.sub(x, e.transpose_last(e.amax(x, (1,), keepdim=True)))),
    lambda e, x, y: e.exp(e.sub(x, e.reshape(e.amax(x, (1,)), (6, 1)))),    # (a reshape: not followed)
    lambda e, x, y: e.exp(e.neg(e.mul(x, y))),                              # sign of x * y unknown
    lambda e, x, y: e.exp(e.mul(e.op("abs", x), e.op("abs", y))),           # at least 0
    lambda e, x, y: e.exp(e.neg(e.neg(e.op("abs", x)))),
], ids=["plain", "other-max", "reversed", "transposed-max", "reshaped-max", "product-unknown", "nonnegative",
        "double-negation"])
def test_other_exps_keep_the_full_form(make):
    program = build(make, (6, 6), (6, 6))
    assert nonpositive_forms(program) is program
    assert "exp_small" not in _ops(schedule(program).program)


@pytest.mark.parametrize("dtype", [None, float64])
def test_kernels_with_the_form_match_the_reference(dtype):
    """softmax and log_softmax with their gradients, values spanning exp's underflow."""
    shape = (17, 130) if dtype is None else ((17, 130), dtype)

    def f(e, x, w):
        s = e.op("softmax", x, axis=1)
        ls = e.op("log_softmax", x, axis=1)
        return e.sum(e.add(e.mul(s, w), e.mul(ls, w)), (0, 1))
    program = build(f, shape, shape, grad=True)
    assert "exp_small" in _ops(schedule(program).program)
    rng = np.random.default_rng(7)
    args = random_args(program, rng, low=-120, high=40)
    check(program, args, rtol=1e-5, atol=1e-6)


def test_the_form_computes_the_full_forms_bits(monkeypatch):
    """A kernel with exp_small and the same kernel with exp (the pass turned off) give the same
    outputs bit for bit, denormal and zero exps included."""
    import sys
    import fusegrad as fg
    schedule_module = sys.modules["fusegrad.codegen.schedule"]     # (the package's `schedule` is the function)

    def f(e, x):
        return [e.op("log_softmax", x, axis=1), e.op("softmax", x, axis=1)]
    program = build(f, (33, 70))
    x = np.random.default_rng(3).uniform(-110, 30, (33, 70)).astype(np.float32)
    with_form = compile_program(program)
    assert "fg_exp_small(" in with_form.explain()
    got = with_form([x])
    fg.clear_caches()
    monkeypatch.setattr(schedule_module, "nonpositive_forms", lambda p: p)
    without = compile_program(program)
    assert "fg_exp_small(" not in without.explain() and "fg_exp(" in without.explain()
    for a, b in zip(got, without([x])):
        np.testing.assert_array_equal(a, b)


def test_reference_of_the_form_is_exps():
    """A step run by reference computes exp_small as exp (NumPy's, via ir/rounded.py)."""
    sched = schedule(build(lambda e, x: e.op("softmax", x, axis=0), (5, 4)))
    plain = Program(sched.program.inputs, [Instr("exp", i.inputs, i.outputs, i.attrs, i.loc) if i.op == "exp_small"
                                           else i for i in sched.program.instrs], sched.program.outputs)
    assert _ops(plain) != _ops(sched.program)
    x = np.random.default_rng(2).uniform(-110, 5, (5, 4)).astype(np.float32)
    np.testing.assert_array_equal(run_program(sched.program, [x])[0], run_program(plain, [x])[0])
