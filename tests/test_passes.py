"""The simplifying passes of ir/passes.py, checked against the reference executor."""
from __future__ import annotations

import numpy as np

from fusegrad.ir import Builder, Emitter, run_program
from fusegrad.ir.passes import rewrite_identities, simplify
from fusegrad.ir.printer import format_program
from fusegrad.ir.types import float64
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


def test_permute_of_permute_is_one_permute_or_none():
    composed = build(lambda e, x: e.permute(e.permute(x, (1, 2, 0)), (2, 0, 1)), (2, 3, 4))
    assert _ops(simplify(rewrite_identities(composed))) == []          # they cancel
    twice = build(lambda e, x: e.permute(e.permute(x, (1, 2, 0)), (1, 2, 0)), (2, 3, 4))
    rewritten = simplify(rewrite_identities(twice))
    assert _ops(rewritten) == ["permute"] and dict(rewritten.instrs[0].attrs)["dims"] == (2, 0, 1)
    x = random_args(twice, np.random.default_rng(1))
    np.testing.assert_array_equal(run_program(rewritten, x)[0], run_program(twice, x)[0])


def test_transpose_of_a_product_is_the_product_of_transposes():
    """(x^T g)^T -- the gradient of W in x @ W.T -- becomes g^T x: no transposed result in memory."""
    def weight_grad(e, x, g):
        return e.permute(e.matmul(e.permute(x, (1, 0)), g), (1, 0))
    program = build(weight_grad, (8, 5), (8, 3))
    rewritten = simplify(rewrite_identities(program))
    assert _ops(rewritten) == ["permute", "matmul"], format_program(rewritten)
    (transpose, product) = rewritten.instrs
    assert transpose.inputs[0] is program.inputs[1] and product.inputs == (transpose.outputs[0], program.inputs[0])
    args = random_args(program, np.random.default_rng(2))
    np.testing.assert_allclose(run_program(rewritten, args)[0], run_program(program, args)[0], rtol=1e-6)


def test_transpose_of_a_shared_product_is_kept():
    def both(e, a, b):
        p = e.matmul(a, b)
        return [p, e.permute(p, (1, 0))]
    program = build(both, (4, 5), (5, 3))
    assert _ops(simplify(rewrite_identities(program))) == ["matmul", "permute"]


def test_cse_keeps_constants_that_differ_only_in_the_sign_of_zero():
    """-0.0 == 0.0 == 0 in Python, so attributes compared by `==` would merge a const -0.0 into
    a const 0 (hardtanh's gradient below a bound of -0.0 came out -0.0 where torch's is +0.0)."""
    def zeros(e, x):
        return [e.add(x, e.const(-0.0, x)), e.where(e.lt(x, e.const(0.0, x)), e.const(0, x), x)]
    program = build(zeros, (3,))
    kept = simplify(program)
    assert _ops(kept).count("const") == 3, format_program(kept)
    x = [np.array([-0.0, -1.0, 2.0], np.float32)]
    first, second = run_program(kept, x)
    assert np.signbit(first).tolist() == [True, True, False]        # (-0.0 + -0.0 is -0.0)
    assert np.signbit(second).tolist() == [True, False, False]      # the const 0 where x < 0, +0.0
    merged = simplify(build(lambda e, x: [e.add(x, e.const(1.0, x)), e.add(x, e.const(1.0, x))], (3,)))
    assert _ops(merged) == ["const", "add"]                          # equal constants still merge


def test_exact_attrs_tells_apart_what_equality_merges():
    from fusegrad.ir.program import exact_attrs
    plain = (("axes", (0, 1)), ("keepdim", True))
    assert exact_attrs(plain) is plain
    assert exact_attrs((("value", 0.0),)) != exact_attrs((("value", -0.0),))
    assert exact_attrs((("value", 0),)) != exact_attrs((("value", 0.0),))
    assert exact_attrs((("bounds", (1.0, -0.0)),)) != exact_attrs((("bounds", (1.0, 0.0)),))
    assert exact_attrs((("value", 0.5),)) == exact_attrs((("value", 0.5),))


def test_an_identity_cast_read_by_the_program_is_its_operand():
    """The trace's identity values (a cast to the dtype the operand has) cost a copy when run;
    one the program only reads is its operand, one it returns stays a copy (clone()), and a
    cast that changes the dtype stays."""
    def reads(e, x):
        c = e.op("cast", x, dtype=x.dtype)
        return [e.exp(c), e.mul(c, c)]
    program = build(reads, (4, 3))
    rewritten = simplify(rewrite_identities(program))
    assert _ops(rewritten) == ["exp", "mul"], format_program(rewritten)
    assert rewritten.instrs[1].inputs == (program.inputs[0], program.inputs[0])
    args = random_args(program, np.random.default_rng(3))
    for got, want in zip(run_program(rewritten, args), run_program(program, args)):
        np.testing.assert_array_equal(got, want)

    returned = build(lambda e, x: [e.op("cast", x, dtype=x.dtype), e.exp(x)], (4, 3))
    assert _ops(simplify(rewrite_identities(returned))) == ["cast", "exp"]
    widened = build(lambda e, x: e.exp(e.op("cast", x, dtype=float64)), (4, 3))
    assert _ops(simplify(rewrite_identities(widened))) == ["cast", "exp"]
