"""Parity round 10: differences from torch 2.13 found by sweeps of realistic scripts and of
numerics at boundary points.

Each test runs the same code on torch and fusegrad and compares values, printed forms and
exception texts, eagerly and (where the call can be traced) inside fg.compile.
"""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")


# --------------------------------------------------------------------- .grad written in place by a compiled call
def _grad_layouts(lib):
    """(parameter, existing .grad) pairs whose layouts differ (a transposed or strided .grad,
    or a transposed parameter), with the .grad's base when it is a view of a bigger tensor."""
    w1 = lib.ones(3, 2, requires_grad=True)
    w1.grad = lib.zeros(2, 3).t()
    w2 = lib.ones(3, 2, requires_grad=True)
    base = lib.zeros(3, 4)
    w2.grad = base[:, ::2]
    w3 = lib.ones(2, 3).t().detach().requires_grad_()
    w3.grad = lib.zeros(3, 2)
    return [w1, w2, w3], base


def _step(params):
    for w in params:
        (w * 2).sum().backward()


def _step_with_zero_grad(params):
    for w in params:
        w.grad.zero_()
        (w * 3).sum().backward()


# (the strided .grad's write runs by reference, with fusegrad's one-time note)
@pytest.mark.filterwarnings("ignore:fusegrad. index_put with these attributes:RuntimeWarning")
@pytest.mark.parametrize("step", [_step, _step_with_zero_grad], ids=["backward", "zero_grad then backward"])
def test_a_compiled_backward_accumulates_into_an_existing_grad_of_another_layout(step):
    """torch's AccumulateGrad adds into an existing .grad in place, whatever its layout; a
    compiled call wrote the sum into the old memory but left .grad on a new array of zeros."""
    theirs, their_base = _grad_layouts(torch)
    step(theirs)
    ours, our_base = _grad_layouts(fg)
    fg.compile(step)(ours)
    for t, o in zip(theirs, ours):
        np.testing.assert_array_equal(o.grad.numpy(), t.grad.numpy())
        assert o.grad.stride() == t.grad.stride()
    np.testing.assert_array_equal(our_base.numpy(), their_base.numpy())


# --------------------------------------------------------------------- transforms of containers of tensors
def _mlp_loss(params, x):
    hidden = (x @ params["w1"] + params["b"][0]).tanh()
    return (hidden * params["b"][1]).sum()


def _params(lib):
    rng = np.random.default_rng(0)
    return {"w1": lib.tensor(rng.standard_normal((3, 4)).astype(np.float32)),
            "b": [lib.tensor(rng.standard_normal(4).astype(np.float32)),
                  lib.tensor(rng.standard_normal(4).astype(np.float32))]}


def _flat(tree):
    if isinstance(tree, dict):
        return [x for v in tree.values() for x in _flat(v)]
    if isinstance(tree, (list, tuple)):
        return [x for v in tree for x in _flat(v)]
    return [tree]


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_grad_of_a_dict_of_tensors_comes_back_in_the_same_containers(compiled):
    """torch.func.grad and jax.grad differentiate with respect to a pytree argument (tuples,
    lists, dicts) and return the gradients in the same containers."""
    from torch.func import grad as torch_grad
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    theirs = torch_grad(_mlp_loss)(_params(torch), torch.tensor(x))
    fn = fg.grad(_mlp_loss)
    ours = (fg.compile(fn) if compiled else fn)(_params(fg), fg.tensor(x))
    assert type(ours) is dict and list(ours) == ["w1", "b"] and type(ours["b"]) is list
    for o, t in zip(_flat(ours), _flat(theirs)):
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)


def test_value_and_grad_of_tuples_namedtuples_and_argnums():
    from collections import namedtuple
    from torch.func import grad_and_value
    Pair = namedtuple("Pair", "a b")

    def f(lib, p, q):
        return (p.a * p.b * q[0] + q[1][0]).sum()

    def args(lib):
        return Pair(lib.tensor([1., 2.]), lib.tensor(3.)), (lib.tensor(4.), [lib.tensor([5., 6.])])
    t_grads, t_value = grad_and_value(lambda p, q: f(torch, p, q), argnums=(0, 1))(*args(torch))
    value, grads = fg.value_and_grad(lambda p, q: f(fg, p, q), argnums=(0, 1))(*args(fg))
    assert float(value) == float(t_value)
    assert type(grads[0]) is Pair and type(grads[1]) is tuple and type(grads[1][1]) is list
    for o, t in zip(_flat(grads), _flat(t_grads)):
        np.testing.assert_array_equal(o.numpy(), t.numpy())


def test_grad_of_grad_through_a_container():
    """The inner gradient stays differentiable when the tensor inside the container requires grad."""
    inner = fg.grad(lambda p: (p["x"] ** 3).sum())
    assert float(fg.grad(lambda a: inner({"x": a})["x"])(fg.tensor(2.))) == 12.0


def test_container_arguments_keep_unused_leaves_and_python_floats():
    """An unused leaf gets zeros (JAX, torch.func); a Python float or NumPy array inside a
    container is a value to differentiate, as at the top level (JAX; torch.func raises)."""
    g = fg.grad(lambda p: p["a"].sum() * 2)({"a": fg.tensor([1., 2.]), "b": fg.tensor(5.)})
    assert g["a"].tolist() == [2.0, 2.0] and g["b"].tolist() == 0.0
    g = fg.grad(lambda p: p[0] * p[1])([3.0, np.float32(4.0)])
    assert [float(v) for v in g] == [4.0, 3.0]


def test_container_arguments_bad_input():
    f = fg.grad(lambda p: fg.tensor(1.0))
    # (empty containers are no bad input: torch.func 2.13 and JAX give empty gradients)
    assert f({}) == {} and f([]) == [] and f(()) == ()
    assert fg.value_and_grad(lambda p, y: y * 2)([], fg.tensor(1.0)) == (fg.tensor(2.0), [])
    with pytest.raises(RuntimeError, match="^only Tensors of floating point dtype can require gradients$"):
        f({"w": fg.tensor([1, 2])})
    with pytest.raises(TypeError, match="^argument 0 holds a str, which is not a valid differentiable input"):
        f((fg.tensor(1.), "s"))


# --------------------------------------------------------------------- error texts of nn
def _raised(fn):
    with pytest.raises(Exception) as info:
        fn()
    return info.type, str(info.value)


@pytest.mark.parametrize("shape", [(4, 3), (3,), (2, 4, 3)], ids=["2d", "1d", "3d"])
@pytest.mark.parametrize("dtypes", ["dfn", "fdn", "dff", "dfd", "fdf", "ffd", "fdd", "ddf"])
def test_linear_dtype_mismatch_texts(shape, dtypes):
    """F.linear's dtype errors are those of torch's addmm (with a bias: the bias against the
    weight first, then mat1 against mat2) and of its mm (no bias: C++ type names)."""
    def call(lib):
        kinds = {"d": lib.float64, "f": lib.float32}
        x, w = lib.ones(*shape, dtype=kinds[dtypes[0]]), lib.ones(2, 3, dtype=kinds[dtypes[1]])
        b = None if dtypes[2] == "n" else lib.ones(2, dtype=kinds[dtypes[2]])
        return lambda: lib.nn.functional.linear(x, w, b)
    assert _raised(call(fg)) == _raised(call(torch))


def test_linear_without_bias_checks_shapes_before_dtypes():
    def call(lib):
        return lambda: lib.nn.functional.linear(lib.ones(4, 3, dtype=lib.float64), lib.ones(2, 5))
    assert _raised(call(fg)) == _raised(call(torch))


@pytest.mark.parametrize("case", range(5))
def test_module_and_optimizer_type_errors_are_torch_verbatim(case):
    """torch's texts name torch's types (`torch.FloatTensor`, `torch.nn.Parameter`)."""
    def call(lib):
        m = lib.nn.Module()
        m.p = lib.nn.Parameter(lib.ones(1))
        m.register_buffer("b", lib.ones(1))
        return [lambda: setattr(m, "p", lib.ones(1)), lambda: m.register_buffer("c", 3),
                lambda: setattr(m, "b", 3), lambda: lib.optim.SGD(lib.ones(2), lr=0.1),
                lambda: m.register_parameter("q", lib.ones(1))][case]
    assert _raised(call(fg)) == _raised(call(torch))


def test_load_state_dict_size_mismatch_names_torch_sizes():
    def call(lib):
        model = lib.nn.Linear(3, 2)
        state = {"weight": lib.ones(3, 3), "bias": lib.ones(2)}
        return lambda: model.load_state_dict(state)
    assert _raised(call(fg)) == _raised(call(torch))


def test_mse_loss_size_warning_is_torch_verbatim():
    texts = []
    for lib in (torch, fg):
        with pytest.warns(UserWarning) as caught:
            lib.nn.functional.mse_loss(lib.ones(3, 1), lib.ones(3))
        texts.append(str(caught[0].message))
    assert texts[0] == texts[1]


# --------------------------------------------------------------------- numerics at boundary points
_INF = float("inf")


def _same_values(ours, theirs):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, equal_nan=True)
    np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_cross_entropy_ignores_a_non_finite_row_it_skips(reduction, compiled):
    """An ignored row (a padding row of -inf logits) is not read: no NaN; its 'none' loss is +0."""
    x, t = [[0., 1., 2.], [-_INF, -_INF, -_INF], [1., 2., 3.]], [1, -100, 0]

    def f(lib):
        return lambda x, t: lib.nn.functional.cross_entropy(x, t, reduction=reduction)
    theirs = f(torch)(torch.tensor(x), torch.tensor(t))
    ours = (fg.compile(f(fg)) if compiled else f(fg))(fg.tensor(x), fg.tensor(t))
    _same_values(ours.tolist(), theirs.tolist())


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_nll_loss_with_an_ignored_class_whose_log_probability_is_infinite(compiled):
    lp = [[-_INF, -1., -2.], [-3., -1., -2.]]

    def f(lib):
        return lambda x, t: lib.nn.functional.nll_loss(x, t, ignore_index=0, reduction="none")
    theirs = f(torch)(torch.tensor(lp), torch.tensor([0, 1]))
    ours = (fg.compile(f(fg)) if compiled else f(fg))(fg.tensor(lp), fg.tensor([0, 1]))
    _same_values(ours.tolist(), theirs.tolist())


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("name", ["sum", "mean"])
def test_sum_and_mean_of_a_0d_negative_zero(name, compiled):
    """torch's sum starts from 0: a 0-d -0. sums (and averages) to +0."""
    theirs = getattr(torch.tensor(-0.), name)()
    fn = lambda x: getattr(x, name)()      # noqa: E731
    ours = (fg.compile(fn) if compiled else fn)(fg.tensor(-0.))
    _same_values(ours.item(), theirs.item())


@pytest.mark.parametrize("kwargs", [{"dim": (0, 1, 2)}, {"p": "fro", "dim": (0, 1, 1)}, {"dim": [0, 1, 2]},
                                    {"p": None, "dim": (0, 1, 2)}, {"p": 2, "dim": (0, 1, 2)}])
def test_frobenius_norm_over_more_than_two_dims(kwargs):
    """torch.norm takes "fro" (its default p) over more than two dims to linalg.matrix_norm,
    which refuses them; p=None or a number is a vector norm over all of them."""
    def call(lib):
        return lambda: lib.ones(2, 3, 4).norm(**kwargs)
    try:
        theirs = ("ok", float(call(torch)()))
    except RuntimeError as e:
        theirs = ("error", str(e))
    try:
        ours = ("ok", float(call(fg)()))
    except RuntimeError as e:
        ours = ("error", str(e))
    if theirs[0] == "ok":
        assert ours[0] == "ok" and abs(ours[1] - theirs[1]) < 1e-5
    else:
        assert ours == theirs


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_accumulating_into_an_expanded_grad_raises_torchs_overlap_error(compiled):
    def call(lib, wrap):
        w = lib.ones(3, 2, requires_grad=True)
        w.grad = lib.zeros(1, 2).expand(3, 2)
        return lambda: wrap(lambda w: (w * 2).sum().backward())(w)
    assert _raised(call(fg, fg.compile if compiled else (lambda f: f))) == _raised(call(torch, lambda f: f))


# --------------------------------------------------------------------- more in-place unary methods
@pytest.mark.parametrize("name", ["sin_", "cos_", "reciprocal_", "sign_"])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_unary_inplace_methods(name, dtype):
    """Values, dtype, grad_fn and gradient as torch's, or torch's error for a result type that
    cannot be written back (an int tensor's sin_)."""
    def outcome(lib):
        x = lib.tensor([-1.5, 0.0, 2.0], dtype=getattr(lib, dtype))
        w = x.clone().requires_grad_(True) if dtype == "float32" else None
        if w is not None:
            x = w * 1.0
        try:
            y = getattr(x, name)()
        except Exception as e:  # noqa: BLE001 - the oracle decides what is raised
            return type(e).__name__, str(e)
        assert y is x
        grad = None
        if w is not None:
            y.sum().backward()
            grad = w.grad.tolist()
        return y.tolist(), str(y.dtype).split(".")[-1], type(y.grad_fn).__name__ if y.grad_fn else None, grad
    ours, theirs = outcome(fg), outcome(torch)
    if isinstance(theirs[0], str):
        assert ours == theirs
    else:
        np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
        assert ours[1:3] == theirs[1:3]
        if theirs[3] is not None:
            np.testing.assert_allclose(ours[3], theirs[3], rtol=1e-6)
