"""The simplifying passes of ir/passes.py, checked against the reference executor."""
from __future__ import annotations

import numpy as np

from fusegrad.ir import Builder, Emitter, run_program
from fusegrad.ir.passes import rewrite_identities, simplify
from fusegrad.ir.printer import format_program
from test_codegen_support import build, random_args


def _ops(program):
    return [ins.op for ins in program.instrs]


def test_exp_of_log_softmax_becomes_softmax():
    program = build(lambda e, x: e.exp(e.op("log_softmax", x, axis=1)), (5, 7))
    rewritten = simplify(rewrite_identities(program))
    assert _ops(rewritten) == ["softmax"], format_program(rewritten)
    assert dict(rewritten.instrs[0].attrs) == {"axis": 1}
    x = random_args(program, np.random.default_rng(0), low=-40, high=40)
    np.testing.assert_allclose(run_program(rewritten, x)[0], run_program(program, x)[0], rtol=1e-6, atol=1e-7)


def test_log_softmax_kept_when_its_value_is_read_too():
    def both(e, x):
        ls = e.op("log_softmax", x, axis=0)
        return [ls, e.exp(ls)]
    rewritten = simplify(rewrite_identities(build(both, (6,))))
    assert _ops(rewritten) == ["log_softmax", "softmax"]


def test_exp_of_anything_else_is_kept():
    for make in (lambda e, x: e.exp(x), lambda e, x: e.exp(e.log(x)), lambda e, x: e.exp(e.op("softmax", x, axis=0))):
        program = build(make, (4,))
        assert _ops(rewrite_identities(program)) == _ops(program)


def test_rewrite_keeps_inputs_outputs_and_order():
    b = Builder()
    e = Emitter(b)
    x = b.input(build(lambda e, x: x, (3, 2)).inputs[0].type)
    y = e.add(e.exp(e.op("log_softmax", x, axis=1)), x)
    b.program.outputs = [y, x]
    rewritten = rewrite_identities(b.program)
    assert rewritten.inputs == b.program.inputs
    assert rewritten.outputs[1] is x and rewritten.outputs[0] is y
    args = [np.arange(6, dtype=np.float32).reshape(3, 2)]
    np.testing.assert_allclose(run_program(rewritten, args)[0], run_program(b.program, args)[0], rtol=1e-6)
