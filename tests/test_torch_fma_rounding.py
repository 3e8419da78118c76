"""Ops whose torch CPU kernels are fused multiply-adds round once, as torch's do.

torch computes add/sub with alpha as fma(other, alpha, self) (ufunc/add.h), lerp as
fma(weight, end - self, self) or fma(weight - 1, end - self, end), and addcmul as
fma(value * t1, t2, self); a multiply then an add rounds twice and differs in the last bit
for 8-20% of float32 results. SGD's and Adam's steps are made of these ops, so their
parameters and moments drift from torch's step by step unless each rounds once. Eager
results use ir/fma.py (error-free transformations in NumPy), compiled kernels LLVM's fma:
both are checked bit for bit, against torch and against exact rational arithmetic.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import fusegrad as fg
from fusegrad import optim
from fusegrad.ir.fma import fma, fma32, fma64

SIZES = [1, 7, 1000]        # one element, a vector's tail only, vectors and a tail


def _data(n: int, dtype=np.float32, seed: int = 0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(n).astype(dtype) for _ in range(3)]


def _exact_fma32(a, b, c) -> np.ndarray:
    """float32 a * b + c from exact rationals, rounded once (ties to even)."""
    out = []
    for x, y, z in zip(a, b, c):
        value = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
        near = np.float32(float(value))       # within an ulp; pick the nearest float32 around it
        candidates = [np.nextafter(near, np.float32(-np.inf)), near, np.nextafter(near, np.float32(np.inf))]
        out.append(min(candidates, key=lambda q: (abs(Fraction(float(q)) - value),
                                                  int(np.array(q).view(np.int32)) & 1)))
    return np.array(out, np.float32)


# ------------------------------------------------------------------ the NumPy emulation
def test_fma32_rounds_halfway_sums_by_the_discarded_error():
    # (1 + 2**-12)**2 = 1 + 2**-11 + 2**-24 lies halfway between two float32; a tiny c decides
    x = np.float32(1 + 2 ** -12)
    for c in (np.float32(2 ** -60), np.float32(-2 ** -60), np.float32(0.0)):
        assert fma32(x, x, c) == _exact_fma32([x], [x], [c])[0]
    assert fma32(x, x, np.float32(2 ** -60)) == np.float32(1 + 2 ** -11 + 2 ** -23)   # up
    assert fma32(x, x, np.float32(0.0)) == np.float32(1 + 2 ** -11)                  # the tie: even
    a, b, c = _data(3000, seed=3)
    np.testing.assert_array_equal(fma32(a, b, c), _exact_fma32(a, b, c))
    # long operands are worked in blocks (ir/fma.py, _BLOCK): the halfway fix-up in each
    n = 40000
    tiny = np.where(np.arange(n) % 3 == 0, np.float32(2 ** -60), np.float32(-2 ** -60)).astype(np.float32)
    expected = np.where(np.arange(n) % 3 == 0, np.float32(1 + 2 ** -11 + 2 ** -23), np.float32(1 + 2 ** -11))
    np.testing.assert_array_equal(fma32(np.full(n, x), x, tiny), expected)
    np.testing.assert_array_equal(fma32(np.full((200, 200), x), np.full((200, 200), x), tiny[:1]),
                                  np.full((200, 200), np.float32(1 + 2 ** -11 + 2 ** -23)))


def test_fma_keeps_ieee_results_of_infinities_and_nan():
    inf, nan = np.inf, np.nan
    a = np.array([inf, -1.5, 2.0, nan, 0.0, -0.0])
    b = np.array([1.0, inf, 3.0, 1.0, inf, 1.0])
    c = np.array([1.0, 2.0, -inf, 1.0, 1.0, -0.0])
    with np.errstate(invalid="ignore"):
        expected = a * b + c        # (the product of these is exact: one rounding either way)
    for dtype in (np.float64, np.float32):
        got = fma(a.astype(dtype), b.astype(dtype), c.astype(dtype), dtype)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, expected.astype(dtype))
    assert np.signbit(fma64(-0.0, 0.0, -0.0))
    empty = np.zeros((0, 2), np.float32)
    assert fma(empty, empty, empty, np.float32).shape == (0, 2)
    assert fg.lerp(fg.ones(0, 2), fg.ones(2), 0.5).shape == (0, 2)


# ------------------------------------------------------------------ the ops against torch
def _exprs():
    return [
        ("add alpha", lambda L, a, b, c: L.add(a, b, alpha=0.3)),
        ("sub alpha", lambda L, a, b, c: L.sub(a, b, alpha=0.3)),
        ("rsub alpha", lambda L, a, b, c: L.rsub(a, b, alpha=0.3)),
        ("add int alpha", lambda L, a, b, c: L.add(a, b, alpha=3)),
        ("add broadcast", lambda L, a, b, c: L.add(a.reshape(-1, 1), b[:5], alpha=-0.7)),
        ("add_", lambda L, a, b, c: a.clone().add_(b, alpha=-0.01)),
        ("sub_", lambda L, a, b, c: a.clone().sub_(b, alpha=0.01)),
        ("lerp small", lambda L, a, b, c: L.lerp(a, b, 0.1)),
        ("lerp large", lambda L, a, b, c: a.clone().lerp_(b, 0.7)),
        ("lerp tensor weight", lambda L, a, b, c: L.lerp(a, b, c)),
        ("addcmul", lambda L, a, b, c: L.addcmul(a, b, c, value=0.3)),
        ("addcmul_", lambda L, a, b, c: a.clone().addcmul_(b, b, value=0.001)),
    ]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name, fn", _exprs(), ids=[name for name, _ in _exprs()])
def test_fused_ops_are_torchs_bit_for_bit(name, fn, n, dtype):
    torch = pytest.importorskip("torch", reason="torch is the oracle for its kernels' rounding")
    arrays = _data(n, dtype)
    ours = fn(fg, *[fg.tensor(x) for x in arrays]).numpy()
    theirs = fn(torch, *[torch.tensor(x) for x in arrays]).numpy()
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours, theirs)


def test_number_other_rounds_once_where_torchs_vectors_do():
    """add(t, number, alpha): torch's vectorised loop is an FMA (what fusegrad computes
    everywhere); in a tail of fewer than 16 float32 (8 float64) elements, GCC's vectorised
    remainder hoists alpha * number and rounds twice. Whole vectors are compared here."""
    torch = pytest.importorskip("torch", reason="torch is the oracle for its kernels' rounding")
    for dtype in (np.float32, np.float64):
        a = _data(1024, dtype)[0]
        np.testing.assert_array_equal(fg.add(fg.tensor(a), 2.5, alpha=0.3).numpy(),
                                      torch.add(torch.tensor(a), 2.5, alpha=0.3).numpy())


@pytest.mark.parametrize("name, fn", _exprs(), ids=[name for name, _ in _exprs()])
def test_compiled_kernels_compute_the_eager_bits(name, fn):
    arrays = _data(1000)
    eager = fn(fg, *[fg.tensor(x) for x in arrays]).numpy()
    compiled = fg.compile(lambda a, b, c: fn(fg, a, b, c))
    np.testing.assert_array_equal(compiled(*[fg.tensor(x) for x in arrays]).numpy(), eager)


def test_add_with_alpha_is_one_exact_rounding_eagerly_and_compiled():
    a, b, _ = _data(1000, seed=5)
    expected = _exact_fma32(b, np.full_like(b, np.float32(0.3)), a)
    np.testing.assert_array_equal(fg.add(fg.tensor(a), fg.tensor(b), alpha=0.3).numpy(), expected)
    compiled = fg.compile(lambda x, y: fg.add(x, y, alpha=0.3))
    np.testing.assert_array_equal(compiled(fg.tensor(a), fg.tensor(b)).numpy(), expected)


def test_alpha_is_a_runtime_input_of_the_compiled_program():
    """A new alpha (a learning rate a schedule changes) compiles nothing."""
    a, b, _ = _data(7)
    step = fg.compile(lambda x, y, alpha: fg.add(x, y, alpha=alpha))
    step(fg.tensor(a), fg.tensor(b), 0.5)
    before = fg.cache_info()
    out = step(fg.tensor(a), fg.tensor(b), 0.25)
    after = fg.cache_info()
    assert (after.misses - before.misses, after.kernels_compiled - before.kernels_compiled) == (0, 0)
    np.testing.assert_array_equal(out.numpy(), fma32(b, np.float32(0.25), a))


# ------------------------------------------------------------------ autograd through them
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_add_with_alpha_saves_no_tensor(compiled):
    """torch's AddBackward0 keeps alpha as a Scalar: a second backward is allowed."""
    def twice(x, w):
        y = fg.sub(x, w.view(3), alpha=2.0)
        y.sum().backward()
        y.sum().backward()
        return y
    x, w = fg.ones(3, requires_grad=True), fg.ones(3, requires_grad=True)
    (fg.compile(twice) if compiled else twice)(x, w)
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(w.grad.numpy(), [-4.0, -4.0, -4.0])


def test_nodes_list_the_operands_and_keep_alpha():
    x, w = fg.ones(3, requires_grad=True), fg.ones(3, requires_grad=True)
    y = fg.add(x, w.view(3), alpha=0.5)
    assert type(y.grad_fn).__name__ == "AddBackward0" and y.grad_fn._saved_alpha == 0.5
    assert [type(n).__name__ for n, _ in y.grad_fn.next_functions] == ["AccumulateGrad", "ViewBackward0"]
    z = fg.rsub(x, 3.0, alpha=2)
    assert type(z.grad_fn).__name__ == "RsubBackward1"
    assert [type(n).__name__ for n, _ in z.grad_fn.next_functions] == ["AccumulateGrad"]
    z.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [-2.0, -2.0, -2.0])


def test_integer_alpha_keeps_integer_arithmetic():
    a = fg.tensor([2 ** 62, 5])
    assert fg.add(a, a, alpha=3).tolist() == [(2 ** 62 * 4 + 2 ** 63) % 2 ** 64 - 2 ** 63, 20]
    assert fg.add(fg.tensor([True]), 1.0, alpha=2).tolist() == [3.0]


# ------------------------------------------------------------------ optimizers
SGD_CONFIGS = [dict(lr=0.1), dict(lr=0.1, momentum=0.9, weight_decay=0.01),
               dict(lr=0.01, momentum=0.9, nesterov=True), dict(lr=0.01, momentum=0.9, dampening=0.3)]


def _steps(lib, params, opt, steps: int, compiled: bool):
    grads = [np.random.default_rng(9 + k).standard_normal((64, 33)).astype(np.float32) for k in range(steps)]

    def step(g):
        params[0].grad = g
        opt.step()
    run = fg.compile(step) if compiled else step
    for g in grads:
        run(lib.tensor(g))


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("config", SGD_CONFIGS, ids=str)
def test_sgd_steps_are_torchs_bit_for_bit(config, compiled):
    torch = pytest.importorskip("torch", reason="torch.optim is the oracle")
    start = np.random.default_rng(1).standard_normal((64, 33)).astype(np.float32)
    ours, theirs = [fg.nn.Parameter(fg.tensor(start))], [torch.nn.Parameter(torch.tensor(start))]
    _steps(fg, ours, optim.SGD(ours, **config), 4, compiled)
    _steps(torch, theirs, torch.optim.SGD(theirs, **config), 4, False)
    np.testing.assert_array_equal(ours[0].detach().numpy(), theirs[0].detach().numpy())


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("betas", [(0.9, 0.999), (0.3, 0.9)], ids=["lerp-low", "lerp-high"])
def test_adam_moments_are_torchs_bit_for_bit(betas, compiled):
    """The moments (lerp and addcmul of the gradients) match bit for bit; the parameter goes
    through a square root and a division, which torch's float32 kernels do not round
    correctly (MKL; 4 ulp apart after four steps on an AVX-512 machine, 8 on an AVX2 one),
    so it is compared within a few ulp."""
    torch = pytest.importorskip("torch", reason="torch.optim is the oracle")
    start = np.random.default_rng(1).standard_normal((64, 33)).astype(np.float32)
    ours, theirs = [fg.nn.Parameter(fg.tensor(start))], [torch.nn.Parameter(torch.tensor(start))]
    opt, t_opt = optim.Adam(ours, lr=0.01, betas=betas), torch.optim.Adam(theirs, lr=0.01, betas=betas)
    _steps(fg, ours, opt, 4, compiled)
    _steps(torch, theirs, t_opt, 4, False)
    for key in ("exp_avg", "exp_avg_sq"):
        np.testing.assert_array_equal(opt.state[ours[0]][key].numpy(), t_opt.state[theirs[0]][key].numpy(),
                                      err_msg=key)
    np.testing.assert_array_max_ulp(ours[0].detach().numpy(), theirs[0].detach().numpy(), maxulp=16)


def test_long_operands_take_the_compiled_loop_after_a_while_with_the_same_bits(monkeypatch):
    """ir/fma.py hands long operands to ir/fma_jit.py's Numba loops once a process has made
    JIT_AFTER such calls; the bits are the emulation's."""
    from fusegrad.ir import fma as fma_module, fma_jit
    looped = []
    for name in ("fma_scaled", "fma_arrays"):
        monkeypatch.setattr(fma_jit, name, lambda *args, loop=getattr(fma_jit, name), name=name:
                            (looped.append(name), loop(*args))[1])
    monkeypatch.setattr(fma_module, "JIT_FROM", 64)
    monkeypatch.setattr(fma_module, "JIT_AFTER", 1)
    monkeypatch.setattr(fma_module, "_LARGE_CALLS", [0])
    rng = np.random.default_rng(11)
    for dtype, emulate in ((np.float32, fma32), (np.float64, fma64)):
        a, b, c = (rng.standard_normal((8, 40)).astype(dtype) for _ in range(3))
        scale = np.array(dtype(0.3))
        for args in ((a, scale, c), (scale, a, c), (a, b, c)):
            first = fma(*args, dtype)           # (the first long call: NumPy)
            again = fma(*args, dtype)           # (then the compiled loop)
            expected = emulate(*args).astype(dtype)
            np.testing.assert_array_equal(first, expected)
            np.testing.assert_array_equal(again, expected)
            assert again.dtype == dtype and again.shape == (8, 40)
    assert fma_module._LARGE_CALLS[0] == 12
    # (the process's first long call is NumPy's; every later one is a loop's)
    assert looped == ["fma_scaled"] * 3 + ["fma_arrays"] * 2 + ["fma_scaled"] * 4 + ["fma_arrays"] * 2


def test_scaled_add_refuses_integer_operands_and_mismatched_shapes():
    from fusegrad.ir import OPS, TensorType, float32, int64
    infer = OPS["scaled_add"].infer
    with pytest.raises(TypeError, match="scaled_add: expected a floating point operand, got int64"):
        infer([TensorType((3,), int64)] * 3, {"negate": False})
    with pytest.raises(RuntimeError, match="must match the size of tensor b"):
        infer([TensorType((3,), float32), TensorType((2,), float32), TensorType((), float32)], {"negate": False})
    assert infer([TensorType((2, 3), float32), TensorType((3,), float32), TensorType((), float32)],
                 {"negate": True}) == [TensorType((2, 3), float32)]
