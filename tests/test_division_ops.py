"""Rounding division, remainder and integer bitwise ops (`//`, `%`, div(rounding_mode=...),
`&`, `|`, `^`, `<<`, `>>`) against torch: values bit for bit (zeros' signs included; a NaN's sign bit is
not compared), dtypes, gradients, node names and errors, eager and compiled; and the
float kernels against the NumPy reference executor."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import fusegrad as fg
from fusegrad.codegen import REFERENCE, schedule
from fusegrad.ir import float32, float64, int64
from test_codegen_support import build, check

torch = pytest.importorskip("torch", reason="torch is the oracle for division semantics")

SPECIALS_A = [5.0, -5.0, -4.0, 4.0, 0.0, -0.0, np.inf, 3.0, np.nan, 5.0, -np.inf, 7.5, -7.5, 1e30, -3.0]
SPECIALS_B = [2.0, 2.0, 2.0, -2.0, 3.0, 3.0, 2.0, np.inf, 1.0, 0.0, -np.inf, -2.5, 2.5, 3.0, -0.0]

FLOAT_EXPRS = {
    "floordiv": lambda L, a, b: a // b,
    "mod": lambda L, a, b: a % b,
    "trunc": lambda L, a, b: L.div(a, b, rounding_mode="trunc"),
    "floor": lambda L, a, b: L.div(a, b, rounding_mode="floor"),
    "floor_divide": lambda L, a, b: L.floor_divide(a, b),
    "remainder": lambda L, a, b: L.remainder(a, b),
    "rfloordiv": lambda L, a, b: 7 // a,
    "rmod": lambda L, a, b: -7 % a,
    "scalar": lambda L, a, b: a % 2.5 + a // -2,
}


def _same(got, want):
    got, want = got.numpy(), want.numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    if want.dtype.kind == "f":
        signed = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got)[signed], np.signbit(want)[signed])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("expr", FLOAT_EXPRS.values(), ids=FLOAT_EXPRS.keys())
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_float_values_are_torchs(expr, dtype, compiled):
    a, b = np.array(SPECIALS_A * 3, dtype), np.array(SPECIALS_B * 3, dtype)
    want = expr(torch, torch.tensor(a), torch.tensor(b))
    fn = (lambda x, y: expr(fg, x, y))
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # no warning: the kernels compute these
        got = (fg.compile(fn) if compiled else fn)(fg.tensor(a), fg.tensor(b))
    _same(got, want)


INT_EXPRS = {
    "floordiv": lambda L, a, b: a // b, "mod": lambda L, a, b: a % b,
    "trunc": lambda L, a, b: L.div(a, b, rounding_mode="trunc"), "float_divisor": lambda L, a, b: a // 2.5,
    "and": lambda L, a, b: a & b, "or": lambda L, a, b: a | 8, "xor": lambda L, a, b: a ^ b,
    "rand": lambda L, a, b: 3 & a, "bool_or_int": lambda L, a, b: (a > 0) | 1,
    "functions": lambda L, a, b: L.bitwise_and(a, b) + L.bitwise_or(a, b) - L.bitwise_xor(a, 5),
    "lshift": lambda L, a, b: a << (b * 13 - 3), "rshift": lambda L, a, b: a >> (b * 13 - 3),
    "shift_scalars": lambda L, a, b: (a << 3) + (3 << b.abs()) - (a >> 1) + (L.tensor([1]) << 63).sum(),
}


@pytest.mark.parametrize("expr", INT_EXPRS.values(), ids=INT_EXPRS.keys())
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_integer_values_are_torchs(expr, compiled):
    a, b = np.array([5, -5, 7, -7, 0, 12]), np.array([2, 3, -2, -3, 5, 5])
    want = expr(torch, torch.tensor(a), torch.tensor(b))
    fn = (lambda x, y: expr(fg, x, y))
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # integer division by reference: no warning
        got = (fg.compile(fn) if compiled else fn)(fg.tensor(a), fg.tensor(b))
    _same(got, want)


ERRORS = [
    "L.tensor([5, 4]) // L.tensor([2, 0])", "L.tensor([5, 4]) % 0", "L.div(L.tensor([5]), 0, rounding_mode='trunc')",
    "L.tensor([True]) // L.tensor([True])", "L.tensor([True]) % L.tensor([True])",
    "L.div(L.tensor([True]), L.tensor([True]), rounding_mode='trunc')", "L.tensor([1.5]) & L.tensor([1.5])",
    "L.tensor([1.5], dtype=L.float64) ^ 1", "L.tensor([3]) | 2.5", "L.div(L.tensor([1.0]), 2, rounding_mode='round')",
    "L.tensor([1.5]) << 1", "L.tensor([True]) >> L.tensor([True])", "L.tensor([3]) << 1.5",
]


@pytest.mark.parametrize("code", ERRORS)
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_errors_are_torchs(code, compiled):
    with pytest.raises(Exception) as theirs:
        eval(code, {"L": torch})
    run = (lambda: eval(code, {"L": fg}))
    with pytest.raises(type(theirs.value)) as ours:
        (fg.compile(run) if compiled else run)()
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_gradients_and_nodes_are_torchs(compiled):
    def fn(L, x, y):
        outs = [x % y, x.remainder(2.0), L.div(x, y, rounding_mode="floor"), L.div(x, 3.0, rounding_mode="trunc")]
        return outs, sum(o * (k + 2) for k, o in enumerate(outs)).sum()
    results = []
    for L in (torch, fg):
        x = L.tensor([5.0, -3.0, 7.5, -0.5], requires_grad=True)
        y = L.tensor([2.0, 2.0, -2.5, 0.25], requires_grad=True)
        if L is fg and compiled:
            outs, loss = fg.compile(lambda x, y: fn(fg, x, y))(x, y)
            names = None
        else:
            outs, loss = fn(L, x, y)
            names = [o.grad_fn.name() for o in outs] + [(x // 2).grad_fn.name(), (7 % x).grad_fn.name()]
        loss.backward()
        results.append((names, x.grad.tolist(), y.grad.tolist()))
    if compiled:
        assert results[1][1:] == results[0][1:]
    else:
        assert results[1] == results[0]


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_in_place_floor_divide_and_remainder(compiled):
    def fn(L, t, i):
        t //= 2
        t.remainder_(1.5)
        i %= 3
        i.floor_divide_(-2)
        return t, i
    results = []
    for L in (torch, fg):
        t, i = L.tensor([5.0, -5.0, 7.0]), L.tensor([5, -5, 7])
        run = fg.compile(lambda t, i: fn(fg, t, i)) if (L is fg and compiled) else (lambda t, i: fn(L, t, i))
        out = run(t, i)
        results.append(([o.tolist() for o in out], t.tolist(), i.tolist(), t._version, i._version))
    assert results[1][:3] == results[0][:3]
    if not compiled:            # (a compiled call bumps the counters of what it wrote once)
        assert results[1][3:] == results[0][3:]
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        fg.tensor([5]).floor_divide_(2.5)


@pytest.mark.parametrize("op", ["div_floor", "div_trunc", "remainder"])
@pytest.mark.parametrize("dtype", [float32, float64])
def test_float_kernels_equal_the_reference(op, dtype):
    """The kernel formulas (codegen's fg_div_floor, ...) against the NumPy references, exactly."""
    rng = np.random.default_rng(23)
    p = build(lambda e, a, b: [e.op(op, e.mul(a, 3.0), b)], ((64, 33), dtype), ((33,), dtype))
    assert REFERENCE not in [step.kind for step in schedule(p).steps]
    a = rng.uniform(-50, 50, (64, 33)).astype(dtype.np)
    b = rng.choice(np.array(SPECIALS_B + [0.5, -7.0, 1e-3], dtype.np), 33)
    a[0, :15] = np.array(SPECIALS_A, dtype.np) / 3
    with np.errstate(all="ignore"):
        check(p, [a, b], rtol=0, atol=0)


def test_integer_division_runs_by_reference_without_a_warning():
    p = build(lambda e, a, b: [e.op("div_floor", a, b), e.op("remainder", a, b)], ((8,), int64), ((8,), int64))
    steps = schedule(p).steps
    assert [step.kind for step in steps] == [REFERENCE, REFERENCE]
    assert all(not step.missing_rule and "a zero divisor raises" in step.why for step in steps)


@pytest.mark.parametrize("op", ["lshift", "rshift", "bitwise_and", "bitwise_or", "bitwise_xor"])
def test_integer_bitwise_kernels_equal_the_reference(op):
    """Shift counts outside [0, 64) included: the kernels clamp them as the references do."""
    rng = np.random.default_rng(31)
    p = build(lambda e, a, b: [e.op(op, e.add(a, a), b)], ((40, 33), int64), ((33,), int64))
    assert REFERENCE not in [step.kind for step in schedule(p).steps]
    a = rng.integers(-2 ** 40, 2 ** 40, (40, 33))
    b = np.arange(-5, 95, 3)[:33]
    check(p, [a, b])
