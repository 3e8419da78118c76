"""x ** e for the Python exponents torch computes by multiplies and roots (ir/ops/elementwise.py
pow_const): the values are torch's bit for bit (x*x, x*x*x, 1/x, 1/(x*x), sqrt, 1/sqrt, with
sqrt's special values), the node is PowBackward0, gradients and second derivatives follow
torch's pow_backward, compiled kernels multiply instead of calling fg_pow, and any other
exponent stays a runtime operand (a new value compiles nothing)."""
import numpy as np
import pytest

import fusegrad as fg
from fusegrad.codegen import generate, schedule
from fusegrad.ir.ops.elementwise import POW_CONST_EXPONENTS

torch = pytest.importorskip("torch", reason="torch is the oracle for pow's values and nodes")

VALUES = [0.5, 1.5, 3.0, 0.0, -0.0, -2.0, 1e-30, 1e30, float("inf"), -float("inf"), float("nan")]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("exponent", [1, 2, 3, -1, -2, 0.5, -0.5, 2.0, 2.5])
@pytest.mark.parametrize("compiled", [False, True])
def test_values_gradients_and_node_match_torch(monkeypatch, exponent, dtype, compiled):
    monkeypatch.setenv("FUSEGRAD_ASYNC_COMPILE", "1")
    x = fg.tensor(VALUES, dtype=getattr(fg, dtype), requires_grad=True)
    tx = torch.tensor(VALUES, dtype=getattr(torch, dtype), requires_grad=True)

    def f(x):
        return x ** exponent
    y = (fg.compile(f) if compiled else f)(x)
    ty = tx ** exponent
    if not compiled:
        assert type(y.grad_fn).__name__ == type(ty.grad_fn).__name__ == "PowBackward0"
    got, want = y.detach().numpy(), ty.detach().numpy()
    if exponent in POW_CONST_EXPONENTS and not (exponent == 0.5 and torch.backends.cpu.get_cpu_capability()
                                                 .startswith("AVX512")):
        np.testing.assert_array_equal(got, want)                  # bit for bit here ...
    else:
        # a general exponent is libm's or SLEEF's pow in torch, by the CPU's vector width:
        # its AVX2 kernel is an ulp off 0.5 ** 2.5 in float64, its AVX-512 one is not; and
        # its AVX-512 sqrt (x ** 0.5) is an ulp off the correctly rounded root for about 0.7%
        # of arguments (0.5 ** 0.5 in float64), where fusegrad's, as its AVX2 one, is exact
        np.testing.assert_array_max_ulp(got, want, maxulp=1)
    numbers = ~np.isnan(want)
    assert np.array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))      # ... and signs of zeros
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=2e-7 if dtype == "float32" else 1e-15)


@pytest.mark.parametrize("exponent", [2, 3, -1, 0.5, -0.5])
def test_second_derivative_and_graph_match_torch(exponent):
    x = fg.tensor([0.5, 1.5, 3.0], requires_grad=True)
    tx = torch.tensor([0.5, 1.5, 3.0], requires_grad=True)
    (g,) = fg.autograd.grad((x ** exponent).sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad((tx ** exponent).sum(), tx, create_graph=True)
    assert type(g.grad_fn).__name__ == type(tg.grad_fn).__name__
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-6)
    (gg,) = fg.autograd.grad(g.sum(), x)
    (tgg,) = torch.autograd.grad(tg.sum(), tx)
    np.testing.assert_allclose(gg.numpy(), tgg.numpy(), rtol=1e-6)


def test_an_int_tensor_keeps_integer_pow():
    t = fg.tensor([1, 2, 3]) ** 2
    assert t.dtype is fg.int64 and t.tolist() == [1, 4, 9]
    assert (fg.tensor([4, 9]) ** 0.5).tolist() == [2.0, 3.0]       # promoted to float, a root


def _kernel_text(f, x):
    compiled = fg.compile(f)
    compiled(x)
    program = compiled.last_run.forward
    return "\n".join(generate(k, "fusegrad.codegen.vmath").functions[0][2] for k in schedule(program).kernels)


@pytest.mark.parametrize("exponent", POW_CONST_EXPONENTS)
def test_compiled_kernels_multiply_instead_of_calling_pow(monkeypatch, exponent):
    monkeypatch.setenv("FUSEGRAD_ASYNC_COMPILE", "1")
    x = fg.rand(64, requires_grad=True)
    text = _kernel_text(fg.value_and_grad(lambda x: (x ** exponent).sum()), x)
    assert "fg_pow" not in text or exponent in (-2.0, -0.5), text      # their gradients use x ** -3 / -1.5
    assert "fg_pow" in _kernel_text(fg.value_and_grad(lambda x: (x ** 2.5).sum()), x)


def test_other_exponents_share_one_program():
    exponent = [2.5]
    f = fg.compile(lambda x: x ** exponent[0])
    x = fg.rand(8)
    f(x)
    before = fg.cache_info()
    for exponent[0] in (2.7, 1.25, -3.0):
        np.testing.assert_allclose(f(x).numpy(), x.numpy() ** exponent[0], rtol=1e-6)
    after = fg.cache_info()
    assert after.misses == before.misses and after.hits == before.hits + 3
    exponent[0] = 2.0                        # pow_const: a program of its own
    np.testing.assert_array_equal(f(x).numpy(), x.numpy() * x.numpy())
    assert fg.cache_info().misses == after.misses + 1


@pytest.mark.parametrize("exponent", [0, 1, 2, 0.5])
def test_the_base_is_saved_as_torch_saves_it(exponent):
    # PowBackward0 saves self for every exponent (even 0, whose gradient is zeros): an in-place
    # change of the base before the backward raises torch's version error.
    for L in (torch, fg):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * 1
        z = y ** exponent
        y.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.sum().backward()


def test_the_gradient_of_x_to_the_zero_is_plain_zeros():
    values = [float("nan"), float("inf"), -0.0, 2.0]
    x, tx = fg.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    (g,) = fg.autograd.grad((x ** 0).sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad((tx ** 0).sum(), tx, create_graph=True)
    assert not g.requires_grad and not tg.requires_grad
    np.testing.assert_array_equal(g.numpy(), tg.numpy())
    assert not np.signbit(g.numpy()).any()


@pytest.mark.parametrize("exponent", [np.array([2.0, 3.0]), np.array([2.0]), np.array(2.0)],
                         ids=["2 values", "1 value", "0-d"])
def test_an_array_exponent_is_a_tensor_exponent(exponent):
    # only a Python (or NumPy) number selects pow_const; an array exponent broadcasts as torch's tensor one
    x = fg.tensor([[1.5, 2.0]], requires_grad=True)
    tx = torch.tensor([[1.5, 2.0]], requires_grad=True)
    y, ty = fg.pow(x, exponent), torch.pow(tx, torch.from_numpy(exponent).float())
    assert tuple(y.shape) == tuple(ty.shape)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-6)
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("exponent", POW_CONST_EXPONENTS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_compiled_program_matches_the_reference_executor(exponent, dtype):
    # the op itself in an IR program with its backward: compiled kernels vs the reference executor
    from fusegrad.ir import float32 as f32, float64 as f64
    from test_codegen_support import build, check, random_args
    program = build(lambda e, x: e.sum(e.op("pow_const", x, exponent=exponent), (0, 1)),
                    ((6, 130), f32 if dtype == "float32" else f64), grad=True)
    check(program, random_args(program, np.random.default_rng(11), low=0.1, high=3.0), rtol=1e-5, atol=1e-6)


def test_the_op_refuses_integer_operands():
    from fusegrad.ir import Builder, Emitter, TensorType, int64
    b = Builder()
    x = b.input(TensorType((3,), int64))
    with pytest.raises(TypeError, match="pow"):
        Emitter(b).op("pow_const", x, exponent=2.0)
