"""fg.grad and fg.value_and_grad: argnums, argument kinds, results, composition
(second derivatives), and the JAX rule that they never touch `.grad`.

Oracles: torch.func.grad and torch's double backward (tests taking the `torch`
fixture, skipped with a reason without torch), closed-form derivatives and
central finite differences (no torch needed).
"""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg

TORCH_REASON = "torch is the oracle for gradients and second derivatives"


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch", reason=TORCH_REASON)


def np_(t) -> np.ndarray:
    assert isinstance(t, fg.Tensor), f"expected fg.Tensor, got {type(t).__name__}"
    return np.asarray(t.detach().numpy())


def _numeric_grad(f, x: np.ndarray, eps=1e-6) -> np.ndarray:
    """Central differences of scalar f (NumPy in, float out) at float64 x."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


# Scalar functions of one tensor, written once for both libraries.
FUNCS = {
    "square_sum": lambda L, x: (x ** 2).sum(),
    "sin_cube": lambda L, x: (x.sin() * x ** 3).sum(),
    "softmax_entropy": lambda L, x: -(x.softmax(0) * x.log_softmax(0)).sum(),
    "tanh_norm": lambda L, x: x.tanh().norm(),
    "exp_mean": lambda L, x: (x * 0.5).exp().mean(),
    "sigmoid_prod": lambda L, x: (x.sigmoid() * x.cos()).sum(),
    "sqrt_log": lambda L, x: ((x * x + 1).sqrt() * (x * x + 2).log()).sum(),
    "matmul": lambda L, x: ((L.tensor(np.arange(6.0).reshape(2, 3) / 5, dtype=x.dtype) @ x).tanh() ** 2).sum(),
}
X0 = np.array([0.3, -0.8, 1.4])


# --------------------------------------------------------------------------- basics

def test_grad_returns_tensor_gradient():
    x = fg.tensor([1.0, -2.0, 3.0])
    g = fg.grad(lambda t: (t ** 2).sum())(x)
    assert isinstance(g, fg.Tensor)
    assert tuple(g.shape) == (3,) and g.dtype == fg.float32
    np.testing.assert_allclose(np_(g), [2.0, -4.0, 6.0])


def test_value_and_grad_returns_value_and_gradient():
    x = fg.tensor([1.0, 2.0])
    value, g = fg.value_and_grad(lambda t: (t ** 3).sum())(x)
    assert isinstance(value, fg.Tensor) and isinstance(g, fg.Tensor)
    assert value.item() == pytest.approx(9.0)
    np.testing.assert_allclose(np_(g), [3.0, 12.0])


@pytest.mark.parametrize("name", FUNCS)
def test_grad_matches_torch_func_grad(torch, name):
    f = FUNCS[name]
    for dtype in ["float32", "float64"]:
        tg = torch.func.grad(lambda t: f(torch, t))(torch.tensor(X0, dtype=getattr(torch, dtype)))
        g = fg.grad(lambda t: f(fg, t))(fg.tensor(X0, dtype=getattr(fg, dtype)))
        assert g.dtype == getattr(fg, dtype)
        tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(np_(g), tg.numpy(), **tol)


@pytest.mark.parametrize("name", FUNCS)
def test_grad_matches_finite_differences(name):
    f = FUNCS[name]
    g = fg.grad(lambda t: f(fg, t))(fg.tensor(X0, dtype=fg.float64))
    numeric = _numeric_grad(lambda a: f(fg, fg.tensor(a, dtype=fg.float64)).item(), X0)
    np.testing.assert_allclose(np_(g), numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("transform", [fg.grad, fg.value_and_grad])
def test_an_output_of_several_elements_raises_with_its_shape(transform):
    with pytest.raises(RuntimeError) as got:
        transform(lambda t: t * 2)(fg.ones(2, 3))
    assert str(got.value) == (
        f"the function passed to fg.{transform.__name__} must return a tensor with one element (a one-element "
        "tensor, such as a scalar), but its output has shape (2, 3) (fg.Size([2, 3]), 6 elements)")


def test_one_element_non_scalar_output_is_accepted():
    value, g = fg.value_and_grad(lambda t: (t * t).sum().reshape(1, 1))(fg.tensor([1.0, 2.0]))
    assert tuple(value.shape) == (1, 1)
    np.testing.assert_allclose(np_(g), [2.0, 4.0])


# --------------------------------------------------------------------------- argnums

def f3(x, y, z):
    return (x * y.exp() + z * x * x).sum()


def _f3_grads(x, y, z):
    """Closed-form partial derivatives of f3."""
    return np.exp(y) + 2 * z * x, x * np.exp(y), x * x


ARGS3 = (np.array([1.0, -0.5]), np.array([0.2, 0.3]), np.array([2.0, -1.0]))


@pytest.mark.parametrize("argnums", [0, 1, 2, -1])
def test_argnums_int(argnums):
    args = [fg.tensor(a, dtype=fg.float64) for a in ARGS3]
    g = fg.grad(f3, argnums=argnums)(*args)
    assert isinstance(g, fg.Tensor)
    np.testing.assert_allclose(np_(g), _f3_grads(*ARGS3)[argnums], rtol=1e-12)


@pytest.mark.parametrize("argnums", [(0,), (0, 1), (2, 0), (0, 1, 2)], ids=str)
def test_argnums_tuple_gives_tuple(argnums):
    args = [fg.tensor(a, dtype=fg.float64) for a in ARGS3]
    gs = fg.grad(f3, argnums=argnums)(*args)
    assert isinstance(gs, tuple) and len(gs) == len(argnums)
    expected = _f3_grads(*ARGS3)
    for g, k in zip(gs, argnums):
        assert isinstance(g, fg.Tensor)
        np.testing.assert_allclose(np_(g), expected[k], rtol=1e-12)
    value, gs2 = fg.value_and_grad(f3, argnums=argnums)(*args)
    assert value.item() == pytest.approx(f3(*[fg.tensor(a, dtype=fg.float64) for a in ARGS3]).item())
    assert isinstance(gs2, tuple) and len(gs2) == len(argnums)


def test_unused_argument_gets_zero_gradient():
    g = fg.grad(lambda x, y: (x * 2).sum(), argnums=1)(fg.tensor([1.0]), fg.tensor([3.0, 4.0]))
    assert tuple(g.shape) == (2,)
    np.testing.assert_array_equal(np_(g), [0.0, 0.0])
    g = fg.grad(lambda x: fg.tensor(2.0))(fg.tensor([1.0, 2.0]))
    np.testing.assert_array_equal(np_(g), [0.0, 0.0])


def test_non_differentiated_arguments_and_keywords_pass_through():
    def f(x, n, scale=1.0):
        return (x ** n).sum() * scale

    g = fg.grad(f)(fg.tensor([1.0, 2.0]), 3, scale=2.0)
    np.testing.assert_allclose(np_(g), [6.0, 24.0])


# --------------------------------------------------------------------------- argument kinds

def test_numpy_array_arguments():
    for dt, fdt in [(np.float64, fg.float64), (np.float32, fg.float32)]:
        a = np.array([1.0, 2.0], dtype=dt)
        g = fg.grad(lambda t: (t * t).sum())(a)
        assert isinstance(g, fg.Tensor) and g.dtype == fdt
        np.testing.assert_allclose(np_(g), [2.0, 4.0])
        np.testing.assert_array_equal(a, [1.0, 2.0])  # the argument is not modified


def test_python_float_arguments():
    g = fg.grad(lambda x: x * x * x)(2.0)
    assert isinstance(g, fg.Tensor) and tuple(g.shape) == ()
    assert g.item() == pytest.approx(12.0)
    value, (gx, gy) = fg.value_and_grad(lambda x, y: x * y.sin(), argnums=(0, 1))(3.0, 0.5)
    assert isinstance(value, fg.Tensor) and isinstance(gx, fg.Tensor) and isinstance(gy, fg.Tensor)
    assert value.item() == pytest.approx(3.0 * np.sin(0.5), rel=1e-6)
    assert gx.item() == pytest.approx(np.sin(0.5), rel=1e-6)
    assert gy.item() == pytest.approx(3.0 * np.cos(0.5), rel=1e-6)


def test_mixed_argument_kinds():
    gs = fg.grad(lambda a, b, c: (a * b + c).sum(), argnums=(0, 1, 2))(
        fg.tensor([1.0, 2.0]), np.array([3.0, 4.0]), 5.0)
    assert all(isinstance(g, fg.Tensor) for g in gs)
    np.testing.assert_allclose(np_(gs[0]), [3.0, 4.0])
    np.testing.assert_allclose(np_(gs[1]), [1.0, 2.0])
    assert gs[2].item() == pytest.approx(2.0)


# --------------------------------------------------------------------------- composition

SCALAR_FUNCS = {
    "cube": lambda L, x: x ** 3,
    "sin_times_cube": lambda L, x: x.sin() * x ** 3,
    "exp_tanh": lambda L, x: (x.tanh() * 2).exp(),
    "sigmoid_sq": lambda L, x: x.sigmoid() ** 2,
    "sqrt_log": lambda L, x: (x * x + 1).sqrt() * (x * x + 2).log(),
    "rational": lambda L, x: 1 / (1 + x * x),
    "relu_times_x": lambda L, x: x.relu() * x,
}


@pytest.mark.parametrize("name", SCALAR_FUNCS)
def test_grad_of_grad_matches_torch(torch, name):
    f = SCALAR_FUNCS[name]
    for x0 in [0.7, -1.3]:
        t = torch.func.grad(torch.func.grad(lambda x: f(torch, x)))(torch.tensor(x0, dtype=torch.float64))
        g = fg.grad(fg.grad(lambda x: f(fg, x)))(fg.tensor(x0, dtype=fg.float64))
        assert isinstance(g, fg.Tensor) and tuple(g.shape) == ()
        np.testing.assert_allclose(g.item(), t.item(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", SCALAR_FUNCS)
def test_grad_of_grad_matches_torch_double_backward(torch, name):
    f = SCALAR_FUNCS[name]
    x = torch.tensor(0.9, dtype=torch.float64, requires_grad=True)
    (g1,) = torch.autograd.grad(f(torch, x), x, create_graph=True)
    (g2,) = torch.autograd.grad(g1, x)
    g = fg.grad(fg.grad(lambda t: f(fg, t)))(fg.tensor(0.9, dtype=fg.float64))
    np.testing.assert_allclose(g.item(), g2.item(), rtol=1e-10)


def test_grad_of_grad_matches_finite_differences():
    for name, f in SCALAR_FUNCS.items():
        x0 = 0.6
        d1 = fg.grad(lambda t: f(fg, t))
        second = fg.grad(d1)(fg.tensor(x0, dtype=fg.float64)).item()
        eps = 1e-5
        numeric = (d1(fg.tensor(x0 + eps, dtype=fg.float64)).item()
                   - d1(fg.tensor(x0 - eps, dtype=fg.float64)).item()) / (2 * eps)
        assert second == pytest.approx(numeric, rel=1e-6, abs=1e-8), name


def test_third_derivative_by_triple_composition(torch):
    f = lambda L, x: x.sin() * x ** 4  # noqa: E731
    t = torch.func.grad(torch.func.grad(torch.func.grad(lambda x: f(torch, x))))(torch.tensor(0.7, dtype=torch.float64))
    g = fg.grad(fg.grad(fg.grad(lambda x: f(fg, x))))(fg.tensor(0.7, dtype=fg.float64))
    np.testing.assert_allclose(g.item(), t.item(), rtol=1e-10)


def test_mixed_partial_derivatives(torch):
    def f(L, x, y):
        return x ** 2 * y ** 3 + (x * y).sin()

    for outer, inner in [(0, 1), (1, 0), (0, 0), (1, 1)]:
        tx, ty = torch.tensor(0.4, dtype=torch.float64), torch.tensor(-1.2, dtype=torch.float64)
        t = torch.func.grad(torch.func.grad(lambda a, b: f(torch, a, b), argnums=inner), argnums=outer)(tx, ty)
        g = fg.grad(fg.grad(lambda a, b: f(fg, a, b), argnums=inner), argnums=outer)(
            fg.tensor(0.4, dtype=fg.float64), fg.tensor(-1.2, dtype=fg.float64))
        np.testing.assert_allclose(g.item(), t.item(), rtol=1e-10, err_msg=f"d/d{outer} d/d{inner}")


def test_hessian_vector_product(torch):
    v = np.array([1.0, -2.0, 0.5])

    def hvp(L, grad, f):
        return grad(lambda x: (grad(f)(x) * L.tensor(v, dtype=L.float64)).sum())

    for name in ["sin_cube", "softmax_entropy", "tanh_norm", "matmul"]:
        f = FUNCS[name]
        t = hvp(torch, torch.func.grad, lambda x: f(torch, x))(torch.tensor(X0, dtype=torch.float64))
        g = hvp(fg, fg.grad, lambda x: f(fg, x))(fg.tensor(X0, dtype=fg.float64))
        np.testing.assert_allclose(np_(g), t.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)


def test_value_and_grad_of_grad(torch):
    f = SCALAR_FUNCS["sin_times_cube"]
    value, second = fg.value_and_grad(fg.grad(lambda x: f(fg, x)))(fg.tensor(0.5, dtype=fg.float64))
    t_second, t_first = torch.func.grad_and_value(torch.func.grad(lambda x: f(torch, x)))(
        torch.tensor(0.5, dtype=torch.float64))
    np.testing.assert_allclose(value.item(), t_first.item(), rtol=1e-12)
    np.testing.assert_allclose(second.item(), t_second.item(), rtol=1e-10)


def test_grad_of_grad_of_identity_is_zero_as_in_jax():
    for x in [fg.tensor(1.5), fg.tensor(-2.0, dtype=fg.float64)]:
        first = fg.grad(lambda t: t)(x)
        assert first.item() == 1.0
        second = fg.grad(fg.grad(lambda t: t))(x)
        assert isinstance(second, fg.Tensor) and tuple(second.shape) == () and second.dtype == x.dtype
        assert second.item() == 0.0
    assert fg.grad(fg.grad(lambda t: t * 3.0))(fg.tensor(2.0)).item() == 0.0
    inner = fg.grad(lambda s: (s * 3.0).sum())
    assert fg.grad(lambda t: inner(t).sum())(fg.tensor([2.0, 1.0])).tolist() == [0.0, 0.0]


# --------------------------------------------------------------------------- no side effects

def test_grad_never_touches_grad_of_arguments():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    fg.grad(lambda t: (t * t).sum())(x)
    fg.value_and_grad(lambda t: (t * t).sum())(x)
    assert x.grad is None
    (x * 5).sum().backward()
    before = x.grad.tolist()
    fg.grad(lambda t: (t ** 3).sum())(x)
    fg.grad(fg.grad(lambda t: (t ** 3).sum()))(fg.tensor(1.0, requires_grad=True))
    assert x.grad.tolist() == before
    assert x.requires_grad and x.is_leaf and x.grad_fn is None


def test_grad_does_not_fill_grad_of_closed_over_tensors():
    w = fg.tensor([2.0, 3.0], requires_grad=True)
    g = fg.grad(lambda t: (t * w).sum())(fg.tensor([1.0, 1.0]))
    np.testing.assert_allclose(np_(g), [2.0, 3.0])
    assert w.grad is None


def test_grad_does_not_modify_or_alias_its_arguments():
    x = fg.tensor([1.0, 2.0])
    g = fg.grad(lambda t: (t * t).sum())(x)
    g.add_(100.0)
    assert x.tolist() == [1.0, 2.0]
    assert x.requires_grad is False


def test_results_do_not_require_grad_for_plain_arguments(torch):
    g = fg.grad(lambda t: (t * t).sum())(fg.tensor([1.0, 2.0]))
    tg = torch.func.grad(lambda t: (t * t).sum())(torch.tensor([1.0, 2.0]))
    assert g.requires_grad == tg.requires_grad


def test_grad_of_argument_with_history_composes_with_backward(torch):
    res = []
    for L, grad in [(torch, torch.func.grad), (fg, fg.grad)]:
        x = L.tensor([0.5, -1.0], dtype=L.float64, requires_grad=True)
        y = x * 2
        g = grad(lambda t: (t ** 3).sum())(y)
        (g * L.tensor([1.0, 3.0], dtype=L.float64)).sum().backward()
        res.append((g.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-12)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-12)


def test_grad_works_inside_no_grad(torch):
    with torch.no_grad():
        t = torch.func.grad(lambda x: (x ** 2).sum())(torch.tensor([1.0, 2.0]))
    with fg.no_grad():
        g = fg.grad(lambda x: (x ** 2).sum())(fg.tensor([1.0, 2.0]))
        assert fg.is_grad_enabled() is False
    np.testing.assert_allclose(np_(g), t.numpy())
    assert fg.is_grad_enabled() is True


def test_python_control_flow_inside_grad():
    def f(x):
        y = x
        steps = 0
        while y.norm() < 100:
            y = y * 3
            steps += 1
        return y.sum() if y.sum() > 0 else -y.sum()

    x = np.array([0.1, 0.2])
    g = fg.grad(f)(fg.tensor(x, dtype=fg.float64))
    k = int(np.ceil(np.log(100 / np.linalg.norm(x)) / np.log(3)))
    np.testing.assert_allclose(np_(g), [3.0 ** k] * 2, rtol=1e-12)


def test_inplace_ops_inside_grad():
    def f(x):
        y = x * 1
        y.mul_(x)
        y[0] = y[0] * 3
        return y.sum()

    g = fg.grad(f)(fg.tensor([1.0, 2.0], dtype=fg.float64))
    np.testing.assert_allclose(np_(g), [6.0, 4.0])


def test_wrapped_function_keeps_its_name():
    def my_loss(x):
        return (x * x).sum()

    assert fg.grad(my_loss).__name__ == "my_loss"
    assert fg.value_and_grad(my_loss).__name__ == "my_loss"


def test_arguments_own_graph_is_untouched_by_grad():
    x = fg.tensor([0.5, -1.0], requires_grad=True)
    y = x.exp()
    fg.grad(lambda t: (t ** 3).sum())(y)
    fg.value_and_grad(lambda t: (t * t).sum())(y)
    y.sum().backward()  # y's graph was not consumed or freed by the transforms
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.5, -1.0]), rtol=1e-6)


# --- torch.func's levels: what f does to tensors other than its differentiated arguments

_REQUIRES_GRAD_IN_TRANSFORM = (
    "You are attempting to call Tensor.requires_grad_() (or perhaps using torch.autograd.functional.* APIs) inside "
    "of a function being transformed by a functorch transform. This is unsupported, please attempt to use the "
    "functorch transforms (e.g. grad, vjp, jacrev, jacfwd, hessian) or call requires_grad_() outside of a function "
    "being transformed instead.")


@pytest.mark.parametrize("flag", [True, False])
@pytest.mark.parametrize("compiled", [False, True])
def test_requires_grad_method_inside_grad_raises_torch_func_error(torch, flag, compiled):
    def body(L):
        def f(x):
            y = x.detach()
            y.requires_grad_(flag)
            return (y * x).sum()
        return f

    with pytest.raises(RuntimeError) as expected:
        torch.func.grad(body(torch))(torch.tensor([1.0, 2.0]))
    transform = fg.grad(body(fg))
    with pytest.raises(RuntimeError) as got:
        (fg.compile(transform) if compiled else transform)(fg.tensor([1.0, 2.0]))
    assert str(got.value) == str(expected.value) == _REQUIRES_GRAD_IN_TRANSFORM
    # the transform's bookkeeping is unwound: requires_grad_ works again after it
    assert fg.ones(2).requires_grad_().requires_grad


@pytest.mark.parametrize("make", ["setter", "factory", "linear"])
@pytest.mark.parametrize("compiled", [False, True])
def test_leaves_made_inside_grad_leave_no_history_on_the_result(torch, make, compiled):
    """A leaf f makes (the requires_grad setter, a factory's requires_grad=True, a layer's
    Parameters) lives at the transform's level, as in torch.func: the gradient returned is a
    plain tensor, not one with history into that leaf."""
    def body(L):
        def f(x):
            if make == "setter":
                y = L.ones(3)
                y.requires_grad = True
            elif make == "factory":
                y = L.ones(3, requires_grad=True)
            else:
                layer = L.nn.Linear(3, 3)
                with L.no_grad():
                    layer.weight.fill_(0.5)
                y = layer.weight.sum(0)
            return (y * x * x).sum()
        return f

    expected = torch.func.grad(body(torch))(torch.tensor([1.0, 2.0, 3.0]))
    transform = fg.grad(body(fg))
    got = (fg.compile(transform) if compiled else transform)(fg.tensor([1.0, 2.0, 3.0]))
    assert got.requires_grad is expected.requires_grad is False
    assert got.grad_fn is None
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)


def test_closed_over_parameter_still_gives_the_result_history(torch):
    w = fg.ones(3, requires_grad=True)
    g = fg.grad(lambda x: (w * x * x).sum())(fg.tensor([1.0, 2.0, 3.0]))
    tw = torch.ones(3, requires_grad=True)
    tg = torch.func.grad(lambda x: (tw * x * x).sum())(torch.tensor([1.0, 2.0, 3.0]))
    assert g.requires_grad is tg.requires_grad is True
    g.sum().backward()
    tg.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy())


@pytest.mark.parametrize("compiled", [False, True])
def test_argument_written_in_place_from_differentiated_value_keeps_no_history(torch, compiled):
    """torch.func wraps every argument at the transform's level: `s.add_(x)` on an argument
    passed as it is gives it x's value and no grad_fn afterwards (also through a view, a
    setitem and a dict)."""
    def f(x, s, d):
        s[0].add_(x)
        s[1] = x * 2
        d["t"].mul_(x)
        return (s * x).sum() + d["t"].sum()

    results = []
    for L, transform in ((torch, torch.func.grad(f)), (fg, fg.grad(f))):
        if compiled and L is fg:
            transform = fg.compile(transform)
        s, t = L.zeros(2, 3), L.ones(3)
        g = transform(L.tensor([1.0, 2.0, 3.0]), s, {"t": t})
        assert s.grad_fn is None and not s.requires_grad and t.grad_fn is None and not t.requires_grad
        results.append([np.asarray(v.detach().numpy()) for v in (g, s, t)])
    for got, expected in zip(results[1], results[0]):
        np.testing.assert_allclose(got, expected, rtol=1e-6)


@pytest.mark.parametrize("transform", [fg.grad, fg.value_and_grad], ids=["grad", "value_and_grad"])
@pytest.mark.parametrize("arg, what", [
    (np.array([1, 2]), "an integer array"), (np.array(3), "an integer array"), (np.array([True]), "a bool array"),
    ([np.array([1, 2])], "an integer array"), (np.int64(3), "a NumPy int64"), (3, "a Python int"),
], ids=["int array", "0-d int array", "bool array", "in a list", "numpy int64", "python int"])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_a_non_floating_argument_is_refused_alike_eagerly_and_compiled(transform, arg, what, compiled):
    f = transform(lambda a: (a * a).sum() if not isinstance(a, list) else (a[0] * a[0]).sum())
    f = fg.compile(f) if compiled else f
    with pytest.raises(TypeError) as error:
        f(arg)
    assert str(error.value) == f"grad requires real-valued (floating point) inputs, but argument 0 is {what}"


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_an_integer_tensor_argument_gets_torch_funcs_error(compiled):
    f = fg.grad(lambda a: (a * a).sum())
    f = fg.compile(f) if compiled else f
    with pytest.raises(RuntimeError) as error:
        f(fg.tensor([1, 2]))
    assert str(error.value) == "only Tensors of floating point dtype can require gradients"
