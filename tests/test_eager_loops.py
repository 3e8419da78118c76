"""Eager forms lent by codegen/eager_loops.py (ir.ops.EAGER_FORMS): float32 erf, exact GELU
and its gradient, leaky_relu and its gradient, elu and its gradient, and silu run as loops
over the vectorised math. Their values must be the compiled kernels' bit for bit, within an
ulp of the references (leaky_relu's: the same bits); float64, tanh GELU and calls the loop
policy declines must run the references themselves."""
import math

import numpy as np
import pytest

import fusegrad as fg
from fusegrad.codegen import eager_loops
from fusegrad.ir.ops import EAGER_FORMS, OPS, eager_form

SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.999, 1.001, 3.92, -3.92, 4.0, 30.0, -30.0, 1e-40, -1e-30, 3.4e38, -3.4e38,
            np.inf, -np.inf, np.nan]


def _sample(shape=(300, 70)):
    x = (np.random.default_rng(3).standard_normal(shape) * 3).astype(np.float32)
    x.flat[:len(SPECIALS)] = SPECIALS
    return x


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    nan = np.isnan(a)
    np.testing.assert_array_equal(nan, np.isnan(b))
    np.testing.assert_array_equal(a[~nan].view(np.uint32), b[~nan].view(np.uint32))


# (the references are called here as eager dispatch calls them: with NumPy's warnings off)
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.fixture
def loops_pay(monkeypatch):
    monkeypatch.setattr(eager_loops, "loop_pays", lambda size: True)


LENT = ("erf", "gelu", "gelu_backward", "leaky_relu", "leaky_relu_backward", "elu", "elu_backward", "silu",
        "layer_norm", "softmax", "log_softmax", "softmax_backward_data", "log_softmax_backward_data", "logsumexp",
        "fmod", "remainder", "div_floor", "erfc", "lerp", "rsqrt")


def test_the_forms_are_lent_and_the_reference_executor_keeps_the_references():
    assert set(LENT) <= set(EAGER_FORMS)
    for op in LENT:
        assert eager_form(OPS[op]) is EAGER_FORMS[op] is not OPS[op].ref
    assert eager_form(OPS["exp"]) is OPS["exp"].ref


def test_eager_values_and_gradient_are_the_compiled_kernels_bits(loops_pay):
    x = _sample()
    weights = fg.tensor(np.linspace(-2, 2, x.size, dtype=np.float32).reshape(x.shape))

    def loss(t):
        return (fg.nn.functional.gelu(t) * weights).sum()
    t = fg.tensor(x, requires_grad=True)
    _same_bits(fg.erf(t).detach().numpy(), fg.compile(lambda v: v.erf())(fg.tensor(x)).numpy())
    _same_bits(fg.nn.functional.gelu(t).detach().numpy(),
               fg.compile(lambda v: fg.nn.functional.gelu(v))(fg.tensor(x)).numpy())
    loss(t).backward()
    _, grad = fg.compile(fg.value_and_grad(loss))(fg.tensor(x))
    _same_bits(t.grad.numpy(), grad.numpy())


def test_eager_forms_are_within_an_ulp_of_the_references(loops_pay):
    x = _sample()
    ref_erf = OPS["erf"].ref(x)
    got = EAGER_FORMS["erf"](x)
    finite = np.isfinite(ref_erf)
    ulps = np.abs(got[finite].astype(np.float64) - ref_erf[finite]) / np.spacing(np.abs(ref_erf[finite]))
    assert ulps.max() <= 1
    # gelu and its gradient: an ulp of erf, scaled by x/2 (and 1 + erf cancelling below -3)
    g = np.random.default_rng(4).standard_normal(x.shape).astype(np.float32)
    for got, want in ((EAGER_FORMS["gelu"](x, approximate="none"), OPS["gelu"].ref(x, "none")),
                      (EAGER_FORMS["gelu_backward"](g, x, approximate="none"), OPS["gelu_backward"].ref(g, x, "none"))):
        np.testing.assert_allclose(got, want, rtol=3e-7, atol=4e-7 * np.abs(x).max(where=np.isfinite(x), initial=0))


def test_strided_operands_and_a_broadcast_gradient(loops_pay):
    x = _sample((70, 300)).T                    # (a transpose: laid out in memory as (70, 300))
    _same_bits(EAGER_FORMS["erf"](x), EAGER_FORMS["erf"](np.ascontiguousarray(x)))
    g = np.float32(0.5) * np.ones((1, 70), np.float32)
    got = EAGER_FORMS["gelu_backward"](g, x, approximate="none")
    assert got.shape == x.shape and got.dtype == np.float32
    _same_bits(got, EAGER_FORMS["gelu_backward"](np.broadcast_to(g, x.shape).copy(), np.ascontiguousarray(x), approximate="none"))


def test_float64_tanh_and_declined_calls_run_the_references(monkeypatch):
    x = _sample()
    wide = x.astype(np.float64)
    # float64 erf: libm's (torch's values; the reference's Cody ranges are up to 4 ulp off)
    libm = np.array([math.erf(v) for v in wide.ravel().tolist()]).reshape(wide.shape)
    np.testing.assert_array_equal(EAGER_FORMS["erf"](wide).view(np.uint64), libm.view(np.uint64))
    np.testing.assert_array_equal(fg.erf(fg.tensor(wide)).numpy().view(np.uint64), libm.view(np.uint64))
    _same_bits(EAGER_FORMS["gelu"](x, approximate="tanh"), OPS["gelu"].ref(x, "tanh"))
    monkeypatch.setattr(eager_loops, "loop_pays", lambda size: False)
    _same_bits(EAGER_FORMS["erf"](x), OPS["erf"].ref(x))
    _same_bits(EAGER_FORMS["gelu"](x, approximate="none"), OPS["gelu"].ref(x, "none"))
    g = np.ones_like(x)
    _same_bits(EAGER_FORMS["gelu_backward"](g, x, approximate="none"), OPS["gelu_backward"].ref(g, x, "none"))
    assert EAGER_FORMS["erf"](np.zeros((0, 3), np.float32)).shape == (0, 3)


def test_eager_gelu_of_a_large_tensor_runs_one_loop_per_pass(loops_pay, monkeypatch):
    """The forward is one loop, the backward one more (not eleven NumPy passes)."""
    from fusegrad.codegen import eager_loops_jit
    calls = []
    for name in ("gelu_into", "gelu_backward_into", "erf_into"):
        real = getattr(eager_loops_jit, name)
        monkeypatch.setattr(eager_loops_jit, name, lambda *a, _n=name, _r=real: calls.append(_n) or _r(*a))
    x = fg.tensor(_sample((64, 64)), requires_grad=True)
    fg.nn.functional.gelu(x).sum().backward()
    assert calls == ["gelu_into", "gelu_backward_into"]
    assert math.isfinite(float(x.grad.numpy()[1, 1]))


F = fg.nn.functional
ACTIVATIONS = {"leaky_relu": lambda t: F.leaky_relu(t, 0.07), "elu": lambda t: F.elu(t, 1.3), "silu": F.silu}


def _reference_args(name, x):
    """The arrays eager dispatch hands the op: x, and the 0-d parameter of x's dtype."""
    return (x,) if name == "silu" else (x, x.dtype.type({"leaky_relu": 0.07, "elu": 1.3}[name]))


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_eager_activations_are_the_compiled_kernels_bits_and_near_the_references(loops_pay, name):
    f = ACTIVATIONS[name]
    x = _sample()
    t = fg.tensor(x, requires_grad=True)
    eager = f(t)
    _same_bits(eager.detach().numpy(), fg.compile(f)(fg.tensor(x)).numpy())
    reference = OPS[name].ref(*_reference_args(name, x))
    np.testing.assert_allclose(eager.detach().numpy(), reference, rtol=3e-7, atol=0)
    if name == "elu":               # (its gradient from the input: a loop too, the compiled kernel's bits)
        weights = np.linspace(-1, 1, x.size, dtype=np.float32).reshape(x.shape)
        (grad,) = fg.autograd.grad(eager, t, fg.tensor(weights))
        _, compiled = fg.compile(fg.value_and_grad(lambda v: (f(v) * fg.tensor(weights)).sum()))(fg.tensor(x))
        _same_bits(grad.numpy(), compiled.numpy())
    if name == "leaky_relu":        # (a select and one product: the reference's bits)
        _same_bits(eager.detach().numpy(), reference)
        g = np.random.default_rng(5).standard_normal(x.shape).astype(np.float32)
        (grad,) = fg.autograd.grad(eager, t, fg.tensor(g))
        _same_bits(grad.numpy(), OPS["leaky_relu_backward"].ref(g, x, np.float32(0.07)))


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_float64_activations_run_the_references(loops_pay, name):
    args = _reference_args(name, _sample().astype(np.float64))
    np.testing.assert_array_equal(EAGER_FORMS[name](*args).view(np.uint64), OPS[name].ref(*args).view(np.uint64))


@pytest.mark.parametrize("op", ["fmod", "remainder", "div_floor"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_division_forms_are_the_references_bits(loops_pay, op, dtype):
    """fmod, remainder and div_floor (remainder's gradient) of floats: exact operations and
    torch's formulas, so the loops give the references' bits: zero divisors, signed zeros,
    infinities, NaN, a broadcast divisor; integers keep the references (a zero divisor raises)."""
    rng = np.random.default_rng(6)
    a = (rng.standard_normal(5000) * 100).astype(dtype)
    b = (rng.standard_normal(5000) * 3).astype(dtype)
    a[:8] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 5.0, -5.0, 1e-30]
    b[8:16] = [0.0, -0.0, np.inf, -np.inf, np.nan, 3.0, -3.0, 1e30]
    a[16:24], b[16:24] = -0.0, [1.0, -1.0, 0.0, -0.0, np.inf, -np.inf, 2.5, -2.5]
    for x, y in ((a, b), (a.reshape(50, 100), b[:100]), (a, np.asarray(dtype(-2.5)))):
        got = EAGER_FORMS[op](x, y)
        want = OPS[op].ref(x, y)
        assert got.dtype == want.dtype == dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    t = fg.tensor(a, requires_grad=True)
    np.testing.assert_array_equal(fg.remainder(t, fg.tensor(b)).detach().numpy().view(np.uint8),
                                  OPS["remainder"].ref(a, b).view(np.uint8))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        EAGER_FORMS[op](np.arange(5000), np.zeros(5000, np.int64))


def test_erfc_forms(loops_pay):
    """float32 erfc: the compiled kernel's bits (vectorised, within 1 ulp of libm's double
    erfc); float64: libm's erfc, the reference's bits."""
    x = _sample()
    _same_bits(EAGER_FORMS["erfc"](x), fg.compile(lambda v: fg.erfc(v))(fg.tensor(x)).numpy())
    want = OPS["erfc"].ref(x.astype(np.float64))
    finite = np.isfinite(want) & (want != 0)
    ulps = np.abs(EAGER_FORMS["erfc"](x)[finite] - want[finite]) / np.spacing(np.abs(want[finite]).astype(np.float32))
    assert ulps.max() <= 1
    wide = x.astype(np.float64)
    np.testing.assert_array_equal(EAGER_FORMS["erfc"](wide).view(np.uint64), OPS["erfc"].ref(wide).view(np.uint64))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lerp_form_is_the_references_bits(loops_pay, dtype):
    """torch's lerp, two FMAs chosen by |weight| < 0.5: the hardware FMA gives the bits of the
    reference's emulated one, for tensor and number weights, |weight| = 0.5, infinities, NaN."""
    rng = np.random.default_rng(7)
    a, b = (rng.standard_normal((2, 3000)) * 10).astype(dtype)
    w = (rng.random(3000) * 3 - 1).astype(dtype)
    a[:6] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e30]
    w[6:11] = [0.5, -0.5, np.nan, np.inf, 0.49999997]
    for weight in (w, np.asarray(dtype(0.3)), np.asarray(dtype(0.7)), np.asarray(dtype(-0.5))):
        got, want = EAGER_FORMS["lerp"](a, b, weight), OPS["lerp"].ref(a, b, weight)
        assert got.dtype == want.dtype == dtype
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    np.testing.assert_array_equal(fg.lerp(fg.tensor(a), fg.tensor(b), fg.tensor(w)).numpy().view(np.uint8),
                                  OPS["lerp"].ref(a, b, w).view(np.uint8))



@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rsqrt_form_is_the_references_bits(loops_pay, dtype):
    x = np.abs(_sample()).astype(dtype)
    x.flat[:6] = [0.0, -0.0, -1.0, np.inf, np.nan, 1e-45]
    got, want = EAGER_FORMS["rsqrt"](x), OPS["rsqrt"].ref(x)
    assert got.dtype == want.dtype == dtype
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))



@pytest.mark.parametrize("alpha", [1.0, -1.0, 0.5])
def test_elu_keeps_the_sign_of_zeros_as_torch(loops_pay, alpha):
    """torch's elu takes x itself where x >= 0, so zeros keep their sign whatever alpha's, in
    the reference, the compiled kernel and the eager loop alike."""
    torch = pytest.importorskip("torch", reason="torch is the oracle")
    x = _sample()
    x.flat[:4] = [0.0, -0.0, 0.0, -0.0]
    want = torch.nn.functional.elu(torch.tensor(x), alpha).numpy()
    for got in (F.elu(fg.tensor(x), alpha).numpy(), fg.compile(lambda v: F.elu(v, alpha))(fg.tensor(x)).numpy(),
                OPS["elu"].ref(x, np.float32(alpha))):
        np.testing.assert_array_equal(np.signbit(got.flat[:4]), [False, True, False, True])
        np.testing.assert_allclose(got, want, rtol=3e-7, atol=0)


def _layer_norm_operands(shape, dtype, ndim=1):
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    normalized = shape[len(shape) - ndim:]
    rows = x.reshape(-1, math.prod(normalized))
    rows[0, :3] = [np.inf, 1.0, 2.0][:rows.shape[1]]    # a row with an infinity, one with a NaN,
    rows[1, 0] = np.nan                                 # one constant (variance 0: 1/sqrt(eps))
    rows[2] = 7.0
    return x, rng.standard_normal(normalized).astype(dtype), rng.standard_normal(normalized).astype(dtype)


@pytest.mark.parametrize("shape, ndim", [((64, 300), 1), ((9, 8, 33), 2), ((5, 1), 1)])
def test_layer_norm_form_is_the_references_bits_in_float32(loops_pay, monkeypatch, shape, ndim):
    """One loop a row, in float64 rounded once as the reference (its sums reassociated, which
    moves a float64 result by an ulp or so: the float32 rounding does not see it here)."""
    from fusegrad.codegen import eager_loops_jit
    calls = []
    real = eager_loops_jit.layer_norm_into
    monkeypatch.setattr(eager_loops_jit, "layer_norm_into", lambda *a: calls.append(1) or real(*a))
    x, w, b = _layer_norm_operands(shape, np.float32, ndim)
    want = OPS["layer_norm"].ref(x, w, b, ndim=ndim, eps=1e-5)
    _same_bits(EAGER_FORMS["layer_norm"](x, w, b, ndim=ndim, eps=1e-5), want)
    normalized = shape[len(shape) - ndim:]
    got = F.layer_norm(fg.tensor(x), normalized, fg.tensor(w), fg.tensor(b)).numpy()
    _same_bits(got, want)
    assert calls
    # a transposed operand (its rows gathered first) and the default weight and bias
    xt = np.ascontiguousarray(np.swapaxes(x, 0, 1)).swapaxes(0, 1)
    _same_bits(F.layer_norm(fg.tensor(xt), normalized).numpy(),
               OPS["layer_norm"].ref(x, np.ones(normalized, np.float32), np.zeros(normalized, np.float32),
                                     ndim=ndim, eps=1e-5))


def test_layer_norm_form_in_float64_and_where_it_declines(loops_pay, monkeypatch):
    x, w, b = _layer_norm_operands((40, 257), np.float64)
    want = OPS["layer_norm"].ref(x, w, b, ndim=1, eps=1e-3)
    got = EAGER_FORMS["layer_norm"](x, w, b, ndim=1, eps=1e-3)
    nan = np.isnan(want)
    np.testing.assert_array_equal(nan, np.isnan(got))
    np.testing.assert_allclose(got[~nan], want[~nan], rtol=1e-14, atol=1e-14)
    torch = pytest.importorskip("torch", reason="torch is the oracle")
    expected = torch.nn.functional.layer_norm(torch.tensor(x), (257,), torch.tensor(w), torch.tensor(b), 1e-3).numpy()
    np.testing.assert_allclose(F.layer_norm(fg.tensor(x), (257,), fg.tensor(w), fg.tensor(b), 1e-3).numpy()[~nan],
                               expected[~nan], rtol=1e-12, atol=1e-12)
    # mixed dtypes, empty operands and calls the policy declines: the reference itself
    x32 = x.astype(np.float32)
    _same_bits(EAGER_FORMS["layer_norm"](x32, w, b, ndim=1, eps=1e-5),
               OPS["layer_norm"].ref(x32, w, b, ndim=1, eps=1e-5))
    empty = np.zeros((0, 257), np.float32)
    w32, b32 = w.astype(np.float32), b.astype(np.float32)
    assert EAGER_FORMS["layer_norm"](empty, w32, b32, ndim=1, eps=1e-5).shape == (0, 257)
    monkeypatch.setattr(eager_loops, "loop_pays", lambda size: False)
    x32, w32, b32 = _layer_norm_operands((64, 300), np.float32)
    _same_bits(EAGER_FORMS["layer_norm"](x32, w32, b32, ndim=1, eps=1e-5),
               OPS["layer_norm"].ref(x32, w32, b32, ndim=1, eps=1e-5))


SOFTMAX_ROWS = np.array([[np.inf, 1, 2, 3], [-np.inf] * 4, [-np.inf, 0, 1, -np.inf], [np.nan, 1, 2, 3],
                         [1e30, -1e30, 0, 5], [3.4e38, 3.4e38, -3.4e38, 0], [1, 1, 1, 1], [-0.0, 0.0, 1e-45, -1e-45]])


def _softmax_input(shape, dtype):
    """Random rows of `shape`, the first of them SOFTMAX_ROWS' special ones (tiled along the row)."""
    x = (np.random.default_rng(12).standard_normal(shape) * 4).astype(dtype)
    rows = x.reshape(-1, shape[-1])
    special = np.resize(SOFTMAX_ROWS.astype(dtype), (len(SOFTMAX_ROWS), shape[-1])) if shape[-1] >= 4 else None
    if special is not None and len(rows) >= len(special):
        rows[:len(special)] = special
    return x


@pytest.mark.parametrize("shape", [(300, 70), (5, 8, 33), (100,), (64, 1), (70, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_forms_against_torch_and_the_references(loops_pay, shape, dtype):
    """The row loops (vectorised exp, sums in float64) against torch (NaN where torch's are,
    within float32's or float64's rounding elsewhere) and the references, forward and backward."""
    torch = pytest.importorskip("torch", reason="torch is the oracle")
    x = _softmax_input(shape, dtype)
    g = np.random.default_rng(13).standard_normal(shape).astype(dtype)
    tol = dict(rtol=4e-6, atol=4e-7) if dtype == np.float32 else dict(rtol=1e-13, atol=1e-15)
    for op in ("softmax", "log_softmax"):
        got, ref = EAGER_FORMS[op](x, axis=-1), OPS[op].ref(x, axis=-1)
        want = getattr(torch, op)(torch.tensor(x), -1).numpy()
        assert got.dtype == dtype and got.shape == shape
        np.testing.assert_allclose(got, want, **tol)
        np.testing.assert_allclose(got, ref, **tol)
        backward = op + "_backward_data"
        got_grad = EAGER_FORMS[backward](g, want, axis=-1)
        np.testing.assert_allclose(got_grad, OPS[backward].ref(g, want, axis=-1), **tol)
        # through eager dispatch and the eager engine, against torch's autograd
        t = fg.tensor(x, requires_grad=True)
        getattr(t, op)(-1).backward(fg.tensor(g))
        tt = torch.tensor(x, requires_grad=True)
        getattr(tt, op)(-1).backward(torch.tensor(g))
        np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), **tol)


def test_softmax_forms_run_the_loops_for_pooled_and_fresh_results_only_along_the_last_axis(loops_pay, monkeypatch):
    """A mid-size result (written into a buffer of the pool: the into form), a large one (a fresh
    array: the eager form) and the backward both take the loops; another axis, a strided or
    broadcast operand (a sum's gradient), and calls the policy declines run the references' bits."""
    from fusegrad.codegen import eager_loops_jit
    calls = []
    for name in ("softmax_rows_into", "log_softmax_rows_into", "softmax_backward_rows_into",
                 "log_softmax_backward_rows_into"):
        real = getattr(eager_loops_jit, name)
        monkeypatch.setattr(eager_loops_jit, name, lambda *a, _n=name, _r=real: calls.append(_n) or _r(*a))
    for rows in (64, 1100):                     # 64K and 1.1M float32 elements
        t = fg.tensor(_softmax_input((rows, 1024), np.float32), requires_grad=True)
        g = fg.tensor(np.random.default_rng(rows).standard_normal((rows, 1024), dtype=np.float32))
        t.softmax(-1).backward(g)
        t.log_softmax(1).backward(g)
    assert calls.count("softmax_rows_into") >= 2 and calls.count("log_softmax_rows_into") >= 2
    assert calls.count("softmax_backward_rows_into") >= 2 and calls.count("log_softmax_backward_rows_into") >= 2
    calls.clear()
    x = _softmax_input((300, 70), np.float32)
    for op in ("softmax", "log_softmax"):
        _same_bits(getattr(fg.tensor(x), op)(0).numpy(), OPS[op].ref(x, axis=0))
        _same_bits(EAGER_FORMS[op](x.T, axis=0), OPS[op].ref(x.T, axis=0))
    _same_bits(EAGER_FORMS["softmax"](x.T, axis=-1), OPS["softmax"].ref(x.T, axis=-1))
    y = OPS["softmax"].ref(x, axis=-1)
    ones = np.broadcast_to(np.float32(1), x.shape)
    _same_bits(EAGER_FORMS["softmax_backward_data"](ones, y, axis=-1),
               OPS["softmax_backward_data"].ref(ones, y, axis=-1))
    assert not calls
    monkeypatch.setattr(eager_loops, "loop_pays", lambda size: False)
    calls.clear()
    for op in ("softmax", "log_softmax"):
        _same_bits(EAGER_FORMS[op](x, axis=-1), OPS[op].ref(x, axis=-1))
    assert not calls


def test_softmax_forms_count_a_sixteenth_of_their_elements_toward_setting_numba_up(monkeypatch):
    """They save less than erf's or layer_norm's loops, so a purely eager process does not pay
    Numba's set-up on its first large softmax (torch_order_jit.loop_pays counts elements)."""
    counted = []
    monkeypatch.setattr(eager_loops, "loop_pays", lambda size: counted.append(size) or False)
    x = _softmax_input((64, 1024), np.float32)
    _same_bits(EAGER_FORMS["softmax"](x, axis=-1), OPS["softmax"].ref(x, axis=-1))
    w, b = np.ones(1024, np.float32), np.zeros(1024, np.float32)
    EAGER_FORMS["layer_norm"](x, w, b, ndim=1, eps=1e-5)
    assert counted == [x.size // 16, x.size]


@pytest.mark.parametrize("shape, dims, keepdim", [((300, 70), (1,), False), ((5, 8, 33), (1, 2), True),
                                                  ((5, 8, 33), (-1,), False), ((64,), (0,), True)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_logsumexp_form_against_torch(loops_pay, monkeypatch, shape, dims, keepdim, dtype):
    """A row loop over the trailing dims (infinite maxima shift by 0, as torch's), within
    rounding of torch and of the reference; other dims keep the reference's bits."""
    torch = pytest.importorskip("torch", reason="torch is the oracle")
    from fusegrad.codegen import eager_loops_jit
    calls = []
    real = eager_loops_jit.logsumexp_rows_into
    monkeypatch.setattr(eager_loops_jit, "logsumexp_rows_into", lambda *a: calls.append(1) or real(*a))
    x = _softmax_input(shape, dtype)
    axes = tuple(sorted(d % len(shape) for d in dims))
    got = fg.tensor(x).logsumexp(dims, keepdim=keepdim).numpy()
    want = torch.tensor(x).logsumexp(dims, keepdim=keepdim).numpy()
    assert calls and got.shape == want.shape and got.dtype == dtype
    tol = dict(rtol=2e-6, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(got, want, **tol)
    np.testing.assert_allclose(got, OPS["logsumexp"].ref(x, axes=axes, keepdim=keepdim), **tol)
    calls.clear()
    if len(shape) > 1:
        _same_bits(EAGER_FORMS["logsumexp"](x, axes=(0,), keepdim=keepdim),
                   OPS["logsumexp"].ref(x, axes=(0,), keepdim=keepdim))
        assert not calls
