"""Autograd semantics against torch 2.13: requires_grad propagation, leaves,
grad_fn nodes and their names, backward and fg.autograd.grad, higher-order
gradients, accumulation, retain_grad, detach/.data, in-place ops and version
counters, views, and grad modes.

Every behaviour is checked by running the same code in torch and fusegrad.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle for autograd semantics")

LIBS = [torch, fg]


@pytest.fixture(autouse=True)
def _quiet_torch_warnings():
    # torch warns when .grad of a non-leaf is read; not what these tests check.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


def np_(t) -> np.ndarray:
    t = t.detach()
    if getattr(t, "_is_zerotensor", lambda: False)():   # torch's lazy zeros (e.g. sgn's double backward)
        return np.zeros(tuple(t.shape))
    return np.asarray(t.numpy())


def assert_close(f, t, rtol=1e-5, atol=1e-6):
    if t is None:
        assert f is None, f"torch gives None, fusegrad {f!r}"
        return
    assert f is not None, f"torch gives {t!r}, fusegrad None"
    assert tuple(f.shape) == tuple(t.shape)
    assert str(f.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(np_(f), np_(t), rtol=rtol, atol=atol, equal_nan=True)


def leaves(L, *arrays, requires_grad=True):
    """The same float32 leaves in library L."""
    return [L.tensor(np.asarray(a, dtype=np.float32), requires_grad=requires_grad) for a in arrays]


def outcome(fn):
    """(result, None) or (None, exception)."""
    try:
        return fn(), None
    except Exception as e:  # noqa: BLE001 - compared with torch's by the caller
        return None, e


X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=np.float32)
W = np.array([[1.0, 2.0, -0.5], [0.3, -1.2, 0.7]], dtype=np.float32)


# --------------------------------------------------------------------------- requires_grad and leaves

def test_requires_grad_propagates_iff_an_input_requires_grad():
    x, y = fg.randn(5, 5), fg.randn(5, 5)
    z = fg.randn((5, 5), requires_grad=True)
    a = x + y
    assert a.requires_grad is False and a.grad_fn is None and a.is_leaf
    b = a + z
    assert b.requires_grad is True and b.grad_fn is not None and not b.is_leaf
    c = (a * 2).exp().sum()
    assert c.requires_grad is False


def test_is_leaf_matches_torch():
    def cases(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        c = L.tensor([1.0, 2.0])
        with L.no_grad():
            n = x * 2
        return {"leaf": x, "constant": c, "op_on_constants": c * 2 + 1, "op_on_leaf": x * 2,
                "no_grad_result": n, "detached": (x * 2).detach(), "view_of_leaf": x[0],
                "requires_grad_after": (c * 2).requires_grad_(), "sum": x.sum()}
    t, f = cases(torch), cases(fg)
    for k in t:
        assert f[k].is_leaf == t[k].is_leaf, k
        assert f[k].requires_grad == t[k].requires_grad, k
        assert (f[k].grad_fn is None) == (t[k].grad_fn is None), k


def test_requires_grad_setter_and_requires_grad_():
    a = fg.randn(2, 2)
    a = (a * 3) / (a - 1)
    assert a.requires_grad is False
    assert a.requires_grad_(True) is a
    assert a.requires_grad is True
    a.requires_grad = False
    assert a.requires_grad is False
    assert a.requires_grad_() is a and a.requires_grad is True
    b = (a * a).sum()
    assert type(b.grad_fn).__name__ == "SumBackward0"


def test_factory_requires_grad_inside_no_grad():
    for L in LIBS:
        with L.no_grad():
            r = L.ones(2, requires_grad=True)
        assert r.requires_grad is True and r.is_leaf


def test_grad_is_none_until_first_backward():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    assert x.grad is None
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])
    assert x.grad.requires_grad is False and x.grad.grad_fn is None


# --------------------------------------------------------------------------- grad_fn names and graph

GRAD_FN_CASES = {
    "add": lambda L, x, w: x + w,
    "add_scalar": lambda L, x, w: x + 2,
    "radd_scalar": lambda L, x, w: 2 + x,
    "sub": lambda L, x, w: x - w,
    "sub_scalar": lambda L, x, w: x - 2,
    "rsub_scalar": lambda L, x, w: 2 - x,
    "mul": lambda L, x, w: x * w,
    "mul_scalar": lambda L, x, w: x * 2,
    "div": lambda L, x, w: x / w,
    "div_scalar": lambda L, x, w: x / 2,
    "rdiv_scalar": lambda L, x, w: 2 / x,
    "neg": lambda L, x, w: -x,
    "pow_scalar": lambda L, x, w: x ** 2,
    "pow_method": lambda L, x, w: x.pow(2.5),
    "pow_tensor": lambda L, x, w: x ** w,
    "rpow_scalar": lambda L, x, w: 2 ** x,
    "abs": lambda L, x, w: x.abs(),
    "exp": lambda L, x, w: x.exp(),
    "log": lambda L, x, w: x.log(),
    "sqrt": lambda L, x, w: x.sqrt(),
    "sin": lambda L, x, w: x.sin(),
    "cos": lambda L, x, w: x.cos(),
    "tanh": lambda L, x, w: x.tanh(),
    "sigmoid": lambda L, x, w: x.sigmoid(),
    "relu": lambda L, x, w: x.relu(),
    "clamp": lambda L, x, w: x.clamp(-0.5, 0.5),
    "clamp_min": lambda L, x, w: x.clamp(min=0.0),
    "maximum": lambda L, x, w: L.maximum(x, w),
    "minimum": lambda L, x, w: L.minimum(x, w),
    "where": lambda L, x, w: L.where(x > 0, x, w),
    "sum": lambda L, x, w: x.sum(),
    "sum_dim": lambda L, x, w: x.sum(0),
    "sum_tuple": lambda L, x, w: x.sum((0, 1)),
    "mean": lambda L, x, w: x.mean(),
    "mean_dim": lambda L, x, w: x.mean(1),
    "max": lambda L, x, w: x.max(),
    "max_dim": lambda L, x, w: x.max(0)[0],
    "min": lambda L, x, w: x.min(),
    "min_dim": lambda L, x, w: x.min(1)[0],
    "norm": lambda L, x, w: x.norm(),
    "norm_dim": lambda L, x, w: x.norm(dim=1),
    "softmax": lambda L, x, w: x.softmax(1),
    "log_softmax": lambda L, x, w: x.log_softmax(1),
    "view": lambda L, x, w: x.view(6),
    "reshape": lambda L, x, w: x.reshape(3, 2),
    "flatten": lambda L, x, w: x.flatten(),
    "unsqueeze": lambda L, x, w: x.unsqueeze(0),
    "squeeze": lambda L, x, w: x.unsqueeze(0).squeeze(),
    "squeeze_dim": lambda L, x, w: x.unsqueeze(0).squeeze(0),
    "select": lambda L, x, w: x[0],
    "select_twice": lambda L, x, w: x[0, 1],
    "slice": lambda L, x, w: x[:, 1:3],
    "slice_step": lambda L, x, w: x[::2],
    "ellipsis_none": lambda L, x, w: x[..., None],
    "t": lambda L, x, w: x.t(),
    "T": lambda L, x, w: x.T,
    "transpose": lambda L, x, w: x.transpose(0, 1),
    "permute": lambda L, x, w: x.permute(1, 0),
    "expand": lambda L, x, w: x.expand(4, 2, 3),
    "expand_after_slice": lambda L, x, w: x[:1].expand(4, 3),
    "cat": lambda L, x, w: L.cat([x, w]),
    "stack": lambda L, x, w: L.stack([x, w]),
    "double": lambda L, x, w: x.double(),
    "double_float": lambda L, x, w: x.double().float(),
    "matmul_2d": lambda L, x, w: x @ w.t(),
    "matmul_1d": lambda L, x, w: x[0] @ w[0],
    "matmul_mv": lambda L, x, w: x @ w[0],
    "chain": lambda L, x, w: ((x * w).sum(1) + 1).mean(),
}


def _structure(node, depth=6):
    """A grad_fn graph as nested (class name, ((child, index), ...)) tuples."""
    if node is None:
        return None
    if depth == 0:
        return type(node).__name__
    return (type(node).__name__, tuple((_structure(n, depth - 1), i) for n, i in node.next_functions))


def _both(case):
    xs_t, xs_f = leaves(torch, np.abs(X) + 0.1, W), leaves(fg, np.abs(X) + 0.1, W)
    return case(torch, *xs_t), case(fg, *xs_f)


@pytest.mark.parametrize("name", GRAD_FN_CASES)
def test_grad_fn_name_matches_torch(name):
    t, f = _both(GRAD_FN_CASES[name])
    assert f.grad_fn is not None
    assert type(f.grad_fn).__name__ == type(t.grad_fn).__name__
    # The contract pins name() to torch's class name (torch's own name() adds a
    # "torch::autograd::" prefix for its C++-only nodes such as CopySlices).
    assert f.grad_fn.name() == type(t.grad_fn).__name__


@pytest.mark.parametrize("name", GRAD_FN_CASES)
def test_next_functions_graph_matches_torch(name):
    t, f = _both(GRAD_FN_CASES[name])
    assert _structure(f.grad_fn) == _structure(t.grad_fn)


def test_grad_fn_repr():
    y = fg.ones(2, 2, requires_grad=True) + 2
    assert re.fullmatch(r"<AddBackward0 object at 0x[0-9a-fA-F]+>", repr(y.grad_fn)), repr(y.grad_fn)


def test_leaves_have_no_grad_fn():
    assert fg.tensor([1.0], requires_grad=True).grad_fn is None
    assert fg.tensor([1.0]).grad_fn is None


def test_accumulate_grad_node_is_shared_per_leaf():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    (n0, i0), (n1, i1) = y.grad_fn.next_functions
    assert type(n0).__name__ == "AccumulateGrad" and (i0, i1) == (0, 0)
    assert n0 is n1
    a, b = x + 1, x.exp()
    assert a.grad_fn.next_functions[0][0] is b.grad_fn.next_functions[0][0]
    assert a.grad_fn.next_functions[0][0].variable is x
    assert n0.next_functions == ()
    assert n0.name() == "torch::autograd::AccumulateGrad" and type(n0).__name__ == "AccumulateGrad"   # as torch


def test_constant_inputs_appear_as_none_in_next_functions():
    for L in LIBS:
        x = L.tensor([1.0, 2.0], requires_grad=True)
        c = L.tensor([3.0, 4.0])
        (n0, _), (n1, _) = (x * c).grad_fn.next_functions
        assert type(n0).__name__ == "AccumulateGrad" and n1 is None


def test_graph_is_rebuilt_each_iteration_with_python_control_flow():
    for seed in range(4):
        rng = np.random.default_rng(seed)
        v = rng.standard_normal(3).astype(np.float32)
        x = fg.tensor(rng.standard_normal(3).astype(np.float32) * 10 ** (seed - 2), requires_grad=True)
        y, k = x * 2, 1
        while y.norm() < 1000:
            y, k = y * 2, k + 1
        y.backward(fg.tensor(v))
        np.testing.assert_array_equal(x.grad.numpy(), v * np.float32(2.0 ** k))


# --------------------------------------------------------------------------- backward

def test_backward_with_gradient_argument():
    for shape in [(3,), (2, 3)]:
        rng = np.random.default_rng(1)
        x0, g0 = rng.standard_normal(shape), rng.standard_normal(shape)
        res = []
        for L in LIBS:
            x = L.tensor(x0, requires_grad=True)
            (x.sin() * x).backward(gradient=L.tensor(g0))
            res.append(x.grad)
        assert_close(res[1], res[0], rtol=1e-10)


def test_backward_of_one_element_non_scalar_needs_no_gradient():
    for L in LIBS:
        x = L.tensor([[2.0]], requires_grad=True)
        (x * 3).backward()
        assert x.grad.tolist() == [[3.0]]


def test_backward_with_explicit_scalar_gradient():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward(fg.tensor(2.0))
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0])


def test_gradients_accumulate_across_backward_calls():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    for k in range(1, 4):
        (x * 3).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [3.0 * k] * 2)
    x.grad.zero_()
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])
    x.grad = None
    (x * 5).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 5.0])


def test_accumulation_keeps_the_same_grad_tensor():
    for L in LIBS:
        x = L.tensor([1.0, 2.0], requires_grad=True)
        (x * 3).sum().backward()
        g = x.grad
        (x * 3).sum().backward()
        assert x.grad is g  # torch accumulates in place into the existing .grad
        assert g.tolist() == [6.0, 6.0]


def test_retain_graph_allows_second_backward():
    for L in LIBS:
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = (x.exp() * x).sum()
        y.backward(retain_graph=True)
        first = x.grad.tolist()
        y.backward()
        np.testing.assert_allclose(x.grad.tolist(), np.array(first) * 2, rtol=1e-6)


SECOND_BACKWARD = {
    "x+x": lambda L, x: x + x,
    "2-x": lambda L, x: 2 - x,
    "x+2": lambda L, x: x + 2,
    "neg": lambda L, x: -x,
    "mean": lambda L, x: x.mean(),
    "view": lambda L, x: x.view(6),
    "select": lambda L, x: x[0],
    "t": lambda L, x: x.t(),
    "cat": lambda L, x: L.cat([x, x]),
    "expand": lambda L, x: x.expand(2, 2, 3),
    "double": lambda L, x: x.double(),
    "sum_dim": lambda L, x: x.sum(0),
    # torch also refuses a second backward through `x * 2` and `x / 2` (it saves
    # the wrapped Python scalar); the contract only pins the cases that save tensors.
    "x*x": lambda L, x: x * x,
    "exp": lambda L, x: x.exp(),
    "relu": lambda L, x: x.relu(),
    "pow": lambda L, x: x ** 2,
    "max": lambda L, x: x.max(),
    "matmul": lambda L, x: x @ x.t(),
    "tanh": lambda L, x: x.tanh(),
}


def _second_backward(L, name):
    x = L.tensor(X, requires_grad=True)
    loss = SECOND_BACKWARD[name](L, x).sum()
    loss.backward()
    _, err = outcome(loss.backward)
    return x.grad, err


@pytest.mark.parametrize("name", SECOND_BACKWARD)
def test_second_backward_without_retain_graph_as_torch(name):
    t_grad, t_err = _second_backward(torch, name)
    f_grad, f_err = _second_backward(fg, name)
    if t_err is None:
        assert f_err is None, f"torch allows a second backward here (nothing saved); fusegrad raises {f_err!r}"
        assert_close(f_grad, t_grad)
    else:
        assert isinstance(f_err, RuntimeError), f"torch raises {t_err!r}; fusegrad gives {f_err!r}"
        assert "Trying to backward through the graph a second time" in str(f_err)


# --------------------------------------------------------------------------- higher order

HIGHER_ORDER = {
    "cube": lambda L, x: x ** 3,
    "sin_mul": lambda L, x: x.sin() * x * x,
    "exp_tanh": lambda L, x: (x.tanh() * 2).exp(),
    "sigmoid_sq": lambda L, x: x.sigmoid() ** 2,
    "log_sqrt": lambda L, x: (x * x + 1).log() * (x * x + 1).sqrt(),
    "div": lambda L, x: 1 / (1 + x * x),
    "softmax": lambda L, x: x.softmax(0) * L.arange(3.0),
    "log_softmax": lambda L, x: x.log_softmax(0) * L.tensor([1.0, -2.0, 0.5]),
    "norm": lambda L, x: x.norm() * x,
    "cos_pow": lambda L, x: x.cos() ** 3,
}


@pytest.mark.parametrize("name", HIGHER_ORDER)
def test_second_derivative_with_create_graph_matches_torch(name):
    res = []
    for L in LIBS:
        x = L.tensor([0.3, -0.7, 1.1], dtype=L.float64, requires_grad=True)
        y = HIGHER_ORDER[name](L, x).sum()
        (g,) = L.autograd.grad(y, x, create_graph=True)
        assert g.requires_grad
        (h,) = L.autograd.grad((g * L.tensor([1.0, 2.0, 3.0], dtype=L.float64)).sum(), x)
        res.append((g, h))
    assert_close(res[1][0], res[0][0], rtol=1e-10, atol=1e-12)
    assert_close(res[1][1], res[0][1], rtol=1e-10, atol=1e-12)


def test_backward_create_graph_gives_differentiable_grad():
    res = []
    for L in LIBS:
        x = L.tensor([0.5, 2.0], dtype=L.float64, requires_grad=True)
        (x ** 3 * x.sin()).sum().backward(create_graph=True)
        g = x.grad
        assert g.requires_grad and g.grad_fn is not None
        x.grad = None
        g.sum().backward()
        res.append((g.detach(), x.grad))
    assert_close(res[1][0], res[0][0], rtol=1e-10)
    assert_close(res[1][1], res[0][1], rtol=1e-10)


def test_third_derivative():
    res = []
    for L in LIBS:
        x = L.tensor(0.7, dtype=L.float64, requires_grad=True)
        y = x.sin() * x ** 4
        (g1,) = L.autograd.grad(y, x, create_graph=True)
        (g2,) = L.autograd.grad(g1, x, create_graph=True)
        (g3,) = L.autograd.grad(g2, x)
        res.append(g3)
    assert_close(res[1], res[0], rtol=1e-10)


def test_hessian_vector_product_of_matmul_model():
    rng = np.random.default_rng(2)
    A, b0, v = rng.standard_normal((4, 3)), rng.standard_normal(3), rng.standard_normal(3)
    res = []
    for L in LIBS:
        b = L.tensor(b0, requires_grad=True)
        loss = ((L.tensor(A) @ b).tanh() ** 2).sum()
        (g,) = L.autograd.grad(loss, b, create_graph=True)
        (hv,) = L.autograd.grad((g * L.tensor(v)).sum(), b)
        res.append(hv)
    assert_close(res[1], res[0], rtol=1e-10)


# --------------------------------------------------------------------------- fg.autograd.grad

def test_autograd_grad_returns_tuple_and_leaves_grad_untouched():
    for L in LIBS:
        x, w = L.tensor([1.0, 2.0], requires_grad=True), L.tensor([3.0, -1.0], requires_grad=True)
        out = L.autograd.grad((x * w).sum(), [x, w])
        assert isinstance(out, tuple) and len(out) == 2
        assert out[0].tolist() == [3.0, -1.0] and out[1].tolist() == [1.0, 2.0]
        assert x.grad is None and w.grad is None


def test_autograd_grad_single_tensor_input_and_grad_outputs():
    res = []
    for L in LIBS:
        x = L.tensor(X, requires_grad=True)
        y = x.exp() * 2
        (g,) = L.autograd.grad(y, x, grad_outputs=L.tensor(W))
        res.append(g)
    assert_close(res[1], res[0])


def test_autograd_grad_allow_unused():
    for L in LIBS:
        x, unused = L.tensor([1.0], requires_grad=True), L.tensor([2.0], requires_grad=True)
        gx, gu = L.autograd.grad((x * 2).sum(), [x, unused], allow_unused=True)
        assert gx.tolist() == [2.0] and gu is None


def test_autograd_grad_unused_without_allow_unused_raises_torch_error():
    x, unused = fg.tensor([1.0], requires_grad=True), fg.tensor([2.0], requires_grad=True)
    tx, tu = torch.tensor([1.0], requires_grad=True), torch.tensor([2.0], requires_grad=True)
    with pytest.raises(RuntimeError) as t_err:
        torch.autograd.grad((tx * 2).sum(), [tx, tu])
    with pytest.raises(RuntimeError) as f_err:
        fg.autograd.grad((x * 2).sum(), [x, unused])
    assert str(f_err.value) == str(t_err.value)


def test_autograd_grad_multiple_outputs_sum_their_vjps():
    res = []
    for L in LIBS:
        x = L.tensor([1.0, 2.0], requires_grad=True)
        g = L.autograd.grad([(x * x).sum(), (x * 3).sum()], [x])
        res.append(g[0])
    assert_close(res[1], res[0])


def test_autograd_grad_retain_graph():
    for L in LIBS:
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x).sum()
        a = L.autograd.grad(y, x, retain_graph=True)[0]
        b = L.autograd.grad(y, x)[0]
        assert a.tolist() == b.tolist() == [2.0, 4.0]


def test_autograd_grad_wrt_non_leaf():
    res = []
    for L in LIBS:
        x = L.tensor([1.0, 2.0], requires_grad=True)
        h = x * 3
        (g,) = L.autograd.grad((h.exp()).sum(), h)
        res.append(g)
    assert_close(res[1], res[0])


# --------------------------------------------------------------------------- retain_grad

def test_retain_grad_on_non_leaf():
    res = []
    for L in LIBS:
        x = L.tensor(X, requires_grad=True)
        y = x * 2
        y.retain_grad()
        z = y.exp()
        (z * z).sum().backward()
        assert z.grad is None  # not retained
        res.append((y.grad, x.grad))
    assert_close(res[1][0], res[0][0])
    assert_close(res[1][1], res[0][1])


def test_retain_grad_survives_an_inplace_op():
    res = []
    for L in LIBS:
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.retain_grad()
        y.mul_(3.0)
        (y * y).sum().backward()
        res.append((y.grad, x.grad))
    assert_close(res[1][0], res[0][0])
    assert_close(res[1][1], res[0][1])


def test_retain_grad_accumulates_and_on_leaf_is_noop():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    x.retain_grad()
    y = x * 1
    y.retain_grad()
    (y * 3).sum().backward(retain_graph=True)
    (y * 3).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [6.0, 6.0])
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0])


# --------------------------------------------------------------------------- detach and .data

def test_detach_shares_memory_and_cuts_history():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    assert d.requires_grad is False and d.grad_fn is None and d.is_leaf
    d.zero_()
    assert y.tolist() == [0.0, 0.0]
    xd = x.detach()
    xd.add_(1.0)
    assert x.tolist() == [2.0, 3.0]


def test_data_shares_memory():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    x.data.mul_(10.0)
    assert x.tolist() == [10.0, 20.0]
    assert x.data.requires_grad is False
    x.data = fg.tensor([5.0, 6.0])
    assert x.tolist() == [5.0, 6.0] and x.requires_grad and x.is_leaf


def test_detach_shares_version_counter_but_data_does_not():
    # In torch, an in-place change through detach() is seen by autograd's
    # version check; one through .data is not.
    for L in LIBS:
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp()
        y.detach().add_(1.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
    res = []
    for L in LIBS:
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp()
        y.data.add_(1.0)
        y.sum().backward()  # uses the modified saved output, as torch does
        res.append(x.grad)
    assert_close(res[1], res[0])


# --------------------------------------------------------------------------- in-place ops with autograd

INPLACE_AUTOGRAD = {
    "add_tensor": lambda L, y, w: y.add_(w),
    "add_scalar": lambda L, y, w: y.add_(2.0),
    "sub_tensor": lambda L, y, w: y.sub_(w),
    "mul_tensor": lambda L, y, w: y.mul_(w),
    "mul_scalar": lambda L, y, w: y.mul_(3.0),
    "div_tensor": lambda L, y, w: y.div_(w),
    "div_scalar": lambda L, y, w: y.div_(4.0),
    "zero": lambda L, y, w: y.zero_(),
    "fill": lambda L, y, w: y.fill_(2.5),
    "copy": lambda L, y, w: y.copy_(w * 2),
    "copy_broadcast": lambda L, y, w: y.copy_(w[0]),
    "add_broadcast": lambda L, y, w: y.add_(w[:, :1]),
    "chain": lambda L, y, w: y.mul_(w).add_(1.0).div_(w),
    "iadd": lambda L, y, w: y.__iadd__(w),
    "setitem_row": lambda L, y, w: y.__setitem__(0, w[1]),
    "setitem_scalar": lambda L, y, w: y.__setitem__((1, 2), 5.0),
    "setitem_slice": lambda L, y, w: y.__setitem__((slice(None), slice(1, 3)), w[:, :2] * 3),
    "setitem_ellipsis": lambda L, y, w: y.__setitem__((Ellipsis, 0), w[0, 0]),
    "view_mul": lambda L, y, w: y[0].mul_(2.0),
    "view_add_tensor": lambda L, y, w: y[:, 1:].add_(w[:, 1:]),
    "transpose_view_fill": lambda L, y, w: y.t()[0].fill_(1.0),
    "view_of_view": lambda L, y, w: y.view(6)[2:4].mul_(w[0, :2]),
}


def _run_inplace(L, name):
    x, w = leaves(L, X, np.abs(W) + 0.5)
    y = x * 1.5
    INPLACE_AUTOGRAD[name](L, y, w)
    out = (y * L.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))).sum()
    out.backward()
    return y, x.grad, w.grad


@pytest.mark.parametrize("name", INPLACE_AUTOGRAD)
def test_inplace_on_non_leaf_gradients_match_torch(name):
    ty, tgx, tgw = _run_inplace(torch, name)
    fy, fgx, fgw = _run_inplace(fg, name)
    assert_close(fy, ty)
    assert_close(fgx, tgx)
    assert_close(fgw, tgw)


@pytest.mark.parametrize("name", INPLACE_AUTOGRAD)
def test_inplace_grad_fn_name_matches_torch(name):
    names = []
    for L in LIBS:
        x, w = leaves(L, X, np.abs(W) + 0.5)
        y = x * 1.5
        INPLACE_AUTOGRAD[name](L, y, w)
        names.append((type(y.grad_fn).__name__, y.grad_fn.name()))
    assert names[1] == names[0]


def test_setitem_on_non_leaf_with_value_requiring_grad():
    res = []
    for L in LIBS:
        x, v = leaves(L, X, W[0])
        y = x * 2
        y[0] = v
        assert type(y.grad_fn).__name__ == "CopySlices"
        (y * L.arange(6.0).reshape(2, 3)).sum().backward()
        res.append((x.grad, v.grad))
    assert_close(res[1][0], res[0][0])
    assert_close(res[1][1], res[0][1])


def test_inplace_on_tensor_not_requiring_grad_then_used():
    res = []
    for L in LIBS:
        x = L.tensor(X, requires_grad=True)
        c = L.ones(2, 3)
        c.mul_(x)  # c now requires grad through the in-place op
        assert c.requires_grad and not c.is_leaf
        (c * c).sum().backward()
        res.append(x.grad)
    assert_close(res[1], res[0])


def test_inplace_on_leaf_allowed_under_no_grad():
    for L in LIBS:
        x = L.tensor([1.0, 2.0], requires_grad=True)
        with L.no_grad():
            x.add_(1.0)
            x[0] = 10.0
            x.mul_(2.0)
        assert x.tolist() == [20.0, 6.0] and x.requires_grad and x.is_leaf and x.grad_fn is None


def test_inplace_on_leaf_requiring_grad_raises():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    for op in [lambda: x.add_(1.0), lambda: x.mul_(2.0), lambda: x.zero_(), lambda: x.fill_(1.0),
               lambda: x.copy_(fg.ones(2)), lambda: x.sub_(1.0), lambda: x.div_(2.0)]:
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation."):
            op()
    assert x.tolist() == [1.0, 2.0]


# Saved tensors and version counters: (forward, which tensor is changed in place).
SAVED = {
    "exp_out": (lambda L, a, b: a.exp(), "out"),
    "exp_in": (lambda L, a, b: a.exp(), "a"),
    "tanh_out": (lambda L, a, b: a.tanh(), "out"),
    "tanh_in": (lambda L, a, b: a.tanh(), "a"),
    "sigmoid_out": (lambda L, a, b: a.sigmoid(), "out"),
    "sigmoid_in": (lambda L, a, b: a.sigmoid(), "a"),
    "mul_a": (lambda L, a, b: a * b, "a"),
    "mul_b": (lambda L, a, b: a * b, "b"),
    "mul_out": (lambda L, a, b: a * b, "out"),
    "mul_const_a": (lambda L, a, b: a * b.detach(), "a"),
    "mul_const_b": (lambda L, a, b: a * b.detach(), "b"),
    "mul_scalar_a": (lambda L, a, b: a * 2.0, "a"),
    "add_a": (lambda L, a, b: a + b, "a"),
    "add_out": (lambda L, a, b: a + b, "out"),
    "sub_b": (lambda L, a, b: a - b, "b"),
    "div_a": (lambda L, a, b: a / b, "a"),
    "div_b": (lambda L, a, b: a / b, "b"),
    "div_const_a": (lambda L, a, b: a / b.detach(), "a"),
    "sin_in": (lambda L, a, b: a.sin(), "a"),
    "sin_out": (lambda L, a, b: a.sin(), "out"),
    "cos_in": (lambda L, a, b: a.cos(), "a"),
    "log_in": (lambda L, a, b: b.log(), "b"),
    "sqrt_out": (lambda L, a, b: b.sqrt(), "out"),
    "sqrt_in": (lambda L, a, b: b.sqrt(), "b"),
    "pow_in": (lambda L, a, b: a ** 2, "a"),
    "pow_out": (lambda L, a, b: a ** 2, "out"),
    "relu_out": (lambda L, a, b: a.relu(), "out"),
    "relu_in": (lambda L, a, b: a.relu(), "a"),
    "abs_in": (lambda L, a, b: a.abs(), "a"),
    "neg_in": (lambda L, a, b: -a, "a"),
    "sum_in": (lambda L, a, b: a.sum(), "a"),
    "mean_in": (lambda L, a, b: a.mean(), "a"),
    "max_in": (lambda L, a, b: a.max(), "a"),
    "softmax_out": (lambda L, a, b: a.softmax(1), "out"),
    "log_softmax_out": (lambda L, a, b: a.log_softmax(1), "out"),
    "matmul_a": (lambda L, a, b: a @ b.t(), "a"),
    "view_in": (lambda L, a, b: a.view(6), "a"),
    "select_in": (lambda L, a, b: a[0], "a"),
    "clamp_in": (lambda L, a, b: a.clamp(-0.5, 0.5), "a"),
    "where_a": (lambda L, a, b: L.where(b > 1, a, b), "a"),
    "maximum_a": (lambda L, a, b: L.maximum(a, b), "a"),
    "norm_in": (lambda L, a, b: a.norm(), "a"),
    "cat_in": (lambda L, a, b: L.cat([a, b]), "a"),
    "expand_in": (lambda L, a, b: a.expand(2, 2, 3), "a"),
    "exp_out_through_view": (lambda L, a, b: a.exp(), "out_view"),
    "mul_a_through_view": (lambda L, a, b: a * b, "a_view"),
    "exp_out_via_setitem": (lambda L, a, b: a.exp(), "out_setitem"),
    "exp_out_through_empty_view": (lambda L, a, b: a.exp(), "out_empty_view"),
}


def _modify(L, target, a, b, out):
    if target == "a":
        a.add_(1.0)
    elif target == "b":
        b.mul_(2.0)
    elif target == "out":
        out.add_(1.0)
    elif target == "out_view":
        out[0].mul_(2.0)
    elif target == "a_view":
        a[:, 0].add_(1.0)
    elif target == "out_setitem":
        out[1] = 0.0
    elif target == "out_empty_view":
        out[:, 3:].mul_(2.0)  # writes nothing, but is still an in-place op on out


def _saved_case(L, name):
    fwd, target = SAVED[name]
    x, w = leaves(L, X, np.abs(W) + 1.5)
    a, b = x * 1, w * 1
    out = fwd(L, a, b)
    _modify(L, target, a, b, out)
    _, err = outcome(lambda: (out * 1).sum().backward())
    return err, x.grad, w.grad


@pytest.mark.parametrize("name", SAVED)
def test_version_counter_error_fires_exactly_when_torch_does(name):
    t_err, tgx, tgw = _saved_case(torch, name)
    f_err, fgx, fgw = _saved_case(fg, name)
    if t_err is not None:
        assert f_err is not None, f"torch raises ({t_err}); fusegrad computes a gradient"
        assert isinstance(f_err, RuntimeError)
        assert str(f_err).startswith("one of the variables needed for gradient computation has been "
                                     "modified by an inplace operation"), str(f_err)
    else:
        assert f_err is None, f"torch allows this; fusegrad raises {f_err!r}"
        assert_close(fgx, tgx)
        assert_close(fgw, tgw)


def test_leaf_changed_under_no_grad_after_being_saved():
    for L in LIBS:
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * x
        with L.no_grad():
            x.add_(1.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
    for L in LIBS:  # add saves nothing: allowed, gradient is still 1
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x + x
        with L.no_grad():
            x.add_(1.0)
        y.sum().backward()
        assert x.grad.tolist() == [2.0, 2.0]


# --------------------------------------------------------------------------- views share memory

def test_views_share_memory_with_base():
    cases = [
        ("view", lambda b: b.view(3, 2), lambda v: v.__setitem__((0, 0), 100.0)),
        ("reshape", lambda b: b.reshape(6), lambda v: v.__setitem__(5, 100.0)),
        ("select", lambda b: b[1], lambda v: v.fill_(100.0)),
        ("slice", lambda b: b[:, 1:], lambda v: v.mul_(100.0)),
        ("step", lambda b: b[:, ::2], lambda v: v.add_(100.0)),
        ("none", lambda b: b[..., None], lambda v: v.zero_()),
        ("transpose", lambda b: b.transpose(0, 1), lambda v: v[0].fill_(100.0)),
        ("t", lambda b: b.t(), lambda v: v.__setitem__((2, 1), 100.0)),
        ("permute", lambda b: b.permute(1, 0), lambda v: v[1].copy_(v[1] * 0 + 100.0)),
        ("unsqueeze", lambda b: b.unsqueeze(0), lambda v: v[0, 0].fill_(100.0)),
        ("flatten", lambda b: b.flatten(), lambda v: v.__setitem__(slice(0, 3), 100.0)),
        ("detach", lambda b: b.detach(), lambda v: v.div_(100.0)),
        ("data", lambda b: b.data, lambda v: v.sub_(100.0)),
        ("T", lambda b: b.T, lambda v: v[:, 0].fill_(100.0)),
    ]
    for name, make_view, write in cases:
        res = []
        for L in LIBS:
            base = L.arange(6.0).reshape(2, 3)
            view = make_view(base)
            write(view)
            res.append((base.tolist(), view.tolist()))
        assert res[1] == res[0], name


def test_base_changes_are_seen_by_views():
    for name, make_view in [("select", lambda b: b[0]), ("view", lambda b: b.view(6)),
                            ("transpose", lambda b: b.t()), ("expand", lambda b: b[:1].expand(3, 3)),
                            ("slice", lambda b: b[1:, 1:])]:
        res = []
        for L in LIBS:
            base = L.arange(6.0).reshape(2, 3)
            view = make_view(base)
            base.mul_(2.0)
            base[1, 2] = -1.0
            res.append(view.tolist())
        assert res[1] == res[0], name


def test_view_of_non_leaf_sees_later_inplace_change_in_autograd():
    res = []
    for L in LIBS:
        x = L.tensor(X, requires_grad=True)
        y = x * 1
        v = y[0]
        y.mul_(2.0)
        assert v.tolist() == (y[0]).tolist()
        (v * L.tensor([1.0, 2.0, 3.0])).sum().backward()
        res.append(x.grad)
    assert_close(res[1], res[0])


def test_inplace_on_view_of_leaf_requiring_grad_raises():
    t_msg = None
    try:
        torch.tensor([1.0, 2.0], requires_grad=True)[0].mul_(2.0)
    except RuntimeError as e:
        t_msg = str(e)
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError) as err:
        x[0].mul_(2.0)
    assert str(err.value) == t_msg


# --------------------------------------------------------------------------- grad modes

def test_no_grad_context_manager():
    x = fg.tensor([1.0], requires_grad=True)
    assert (x ** 2).requires_grad
    with fg.no_grad():
        assert fg.is_grad_enabled() is False
        y = x ** 2
        assert y.requires_grad is False and y.grad_fn is None
    assert fg.is_grad_enabled() is True
    assert (x ** 2).requires_grad


def test_no_grad_as_decorator():
    x = fg.tensor([1.0], requires_grad=True)

    @fg.no_grad()
    def f(t):
        return t * 2, fg.is_grad_enabled()

    y, flag = f(x)
    assert flag is False and y.requires_grad is False
    assert fg.is_grad_enabled() is True
    assert f.__name__ == "f"


def test_no_grad_decorator_without_parentheses_as_torch():
    @torch.no_grad
    def tf(t):
        return t * 2

    @fg.no_grad
    def ff(t):
        return t * 2

    assert tf(torch.ones(1, requires_grad=True)).requires_grad is False
    assert ff(fg.ones(1, requires_grad=True)).requires_grad is False


def test_enable_grad_inside_no_grad():
    x = fg.tensor([1.0], requires_grad=True)
    with fg.no_grad():
        with fg.enable_grad():
            assert fg.is_grad_enabled()
            y = x * 2
        z = x * 2
    assert y.requires_grad and not z.requires_grad

    @fg.enable_grad()
    def f(t):
        return t * 2

    with fg.no_grad():
        assert f(x).requires_grad
        assert fg.is_grad_enabled() is False


def test_set_grad_enabled_function_context_and_decorator():
    x = fg.tensor([1.0], requires_grad=True)
    try:
        fg.set_grad_enabled(False)
        assert fg.is_grad_enabled() is False
        assert (x * 2).requires_grad is False
        fg.set_grad_enabled(True)
        assert fg.is_grad_enabled() is True
        with fg.set_grad_enabled(False):
            assert (x * 2).requires_grad is False
        assert fg.is_grad_enabled() is True
        with fg.no_grad():
            with fg.set_grad_enabled(True):
                assert (x * 2).requires_grad
            assert fg.is_grad_enabled() is False

        @fg.set_grad_enabled(False)
        def f(t):
            return t * 2

        assert fg.is_grad_enabled() is True
        assert f(x).requires_grad is False
        assert fg.is_grad_enabled() is True
    finally:
        fg.set_grad_enabled(True)


def test_grad_mode_restored_after_exception():
    with pytest.raises(ValueError):
        with fg.no_grad():
            raise ValueError("boom")
    assert fg.is_grad_enabled() is True

    @fg.no_grad()
    def f():
        raise ValueError("boom")

    with pytest.raises(ValueError):
        f()
    assert fg.is_grad_enabled() is True


def test_backward_inside_no_grad_still_fills_grad():
    res = []
    for L in LIBS:
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x).sum()
        with L.no_grad():
            y.backward()
        res.append(x.grad)
    assert_close(res[1], res[0])


def test_backward_on_a_leaf():
    for L in LIBS:
        x = L.tensor([1.0, 2.0], requires_grad=True)
        x.backward(L.tensor([3.0, 4.0]))
        assert x.grad.tolist() == [3.0, 4.0]


def test_no_grad_result_used_later_in_grad_mode():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    with fg.no_grad():
        c = x * 3
    y = (c * x).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), c.numpy())


# --------------------------------------------------------------------------- excluding subgraphs

def test_frozen_subgraph_has_no_history_and_gets_no_grad():
    rng = np.random.default_rng(3)
    frozen0, head0, x0 = rng.standard_normal((4, 3)), rng.standard_normal((2, 4)), rng.standard_normal(3)
    graphs = []
    for L in LIBS:
        w_frozen = L.tensor(frozen0, requires_grad=True)
        w_frozen.requires_grad = False
        w_head = L.tensor(head0, requires_grad=True)
        hidden = (w_frozen @ L.tensor(x0)).relu()
        assert hidden.requires_grad is False and hidden.grad_fn is None
        out = (w_head @ hidden).sum()
        out.backward()
        assert w_frozen.grad is None
        assert w_head.grad is not None
        graphs.append(_structure(out.grad_fn))
    # The graph reaches the head's leaf only: no node for the frozen part.
    assert graphs[1] == graphs[0]


# --------------------------------------------------------------------------- big graphs

def test_deep_chain_does_not_hit_recursion_limit():
    # The history is walked iteratively: a chain far deeper than Python's
    # recursion limit still differentiates.
    x = fg.tensor([1.0, 2.0], dtype=fg.float64, requires_grad=True)
    y = x
    n = 3000
    for _ in range(n):
        y = y * 1.0001 + 0.0
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0001 ** n] * 2, rtol=1e-9)


def test_wide_fan_out_accumulates():
    x = fg.tensor([1.0, 2.0], dtype=fg.float64, requires_grad=True)
    total = x * 0
    for k in range(200):
        total = total + x * k
    total.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [sum(range(200))] * 2)


def test_gradient_dtype_is_the_leaf_dtype_under_promotion():
    cases = [
        lambda L, a, b: (a * b).sum(),             # float32 leaf, float64 leaf
        lambda L, a, b: (a * b[0]).sum(),          # a 0-d float64 does not promote float32
        lambda L, a, b: (a.double() + b).sum(),
        lambda L, a, b: (a * L.tensor([1, 2])).sum() + b.sum(),  # int tensor promotes to float32
    ]
    for case in cases:
        res = []
        for L in LIBS:
            a = L.tensor([1.0, 2.0], requires_grad=True)
            b = L.tensor([3.0, 4.0], dtype=L.float64, requires_grad=True)
            out = case(L, a, b)
            out.backward()
            res.append((out, a.grad, b.grad))
        for f, t in zip(res[1], res[0]):
            assert_close(f, t)


# --------------------------------------------------------------------------- randomized programs

from hypothesis import given, settings, strategies as st  # noqa: E402

# Steps of a random program over a pool of values whose shapes all broadcast to (2, 3).
_UNARY_STEPS = {
    "tanh": lambda L, v: v.tanh(), "sigmoid": lambda L, v: v.sigmoid(), "sin": lambda L, v: v.sin(),
    "neg": lambda L, v: -v, "half": lambda L, v: v * 0.5, "square": lambda L, v: v * v,
    "relu": lambda L, v: v.relu(), "exp_tanh": lambda L, v: v.tanh().exp(),
    "rowsum": lambda L, v: v.sum(-1, keepdim=True), "colmean": lambda L, v: v.mean(0, keepdim=True),
    "softmax": lambda L, v: v.softmax(-1), "pow3": lambda L, v: v ** 3,
    # views
    "first_col": lambda L, v: v[..., :1] if v.dim() > 0 else v, "first_row": lambda L, v: v[0] if v.dim() == 2 else v,
    "unsqueeze_squeeze": lambda L, v: v.unsqueeze(0).squeeze(0), "reshape": lambda L, v: v.reshape(v.shape),
}
_BINARY_STEPS = {
    "add": lambda L, v, w: v + w, "sub": lambda L, v, w: v - w, "mul": lambda L, v, w: v * w,
    "div": lambda L, v, w: v / (1 + w * w), "maximum": lambda L, v, w: L.maximum(v, w),
    "where": lambda L, v, w: L.where(v > w, v, w * 2),
}
_INPLACE_STEPS = {
    "mul_": lambda L, v: v.mul_(0.5), "add_": lambda L, v: v.add_(1.0),
    "setitem": lambda L, v: v.__setitem__((Ellipsis, 0), 0.25) if v.dim() > 0 else v.fill_(0.25),
    "view_mul_": lambda L, v: v[..., :1].mul_(3.0) if v.dim() > 0 else v.mul_(3.0),
}
_STEP_NAMES = sorted(_UNARY_STEPS) + sorted(_BINARY_STEPS) + sorted(_INPLACE_STEPS)
_LEAF_VALUES = [np.array([[0.3, -1.2, 0.8], [1.5, -0.4, 0.1]]), np.array([0.7, -0.2, 1.1]), np.array([[0.9], [-1.3]])]


def _run_program(L, steps, leaf_flags):
    """Run the program; return (error or None, leaf gradients, loss)."""
    leaves_ = [L.tensor(v, dtype=L.float64, requires_grad=r) for v, r in zip(_LEAF_VALUES, leaf_flags)]
    try:
        loss = _forward(L, steps, leaves_)
    except RuntimeError as e:  # e.g. an in-place op on a view of a leaf
        return e, [None] * len(leaves_), None
    if loss is None or not loss.requires_grad:
        return None, [None] * len(leaves_), loss
    _, err = outcome(loss.backward)
    return err, [x.grad for x in leaves_], loss


def _forward(L, steps, leaves_):
    pool = list(leaves_)
    n_leaves = len(pool)
    for name, i, j in steps:
        v, w = pool[i % len(pool)], pool[j % len(pool)]
        if name in _UNARY_STEPS:
            pool.append(_UNARY_STEPS[name](L, v))
        elif name in _BINARY_STEPS:
            pool.append(_BINARY_STEPS[name](L, v, w))
        else:
            k = n_leaves + i % max(len(pool) - n_leaves, 1)  # in-place only on computed values
            if k < len(pool):
                _INPLACE_STEPS[name](L, pool[k])
    return sum((p * (k + 1)).sum() for k, p in enumerate(pool[n_leaves:])) if len(pool) > n_leaves else None


@settings(max_examples=25, deadline=None)
@given(steps=st.lists(st.tuples(st.sampled_from(_STEP_NAMES), st.integers(0, 20), st.integers(0, 20)),
                      min_size=1, max_size=8),
       leaf_flags=st.tuples(st.booleans(), st.booleans(), st.booleans()))
def test_random_programs_match_torch(steps, leaf_flags):
    t_err, t_grads, t_loss = _run_program(torch, steps, leaf_flags)
    f_err, f_grads, f_loss = _run_program(fg, steps, leaf_flags)
    if t_loss is not None:
        assert_close(f_loss, t_loss, rtol=1e-10, atol=1e-12)
    if t_err is not None:
        assert f_err is not None, f"torch raises {t_err}; fusegrad does not"
        assert type(f_err) is type(t_err) and str(f_err)[:60] == str(t_err)[:60], f"{f_err!r} vs torch {t_err!r}"
        return
    assert f_err is None, f"fusegrad raises {f_err!r}; torch does not"
    for f, t in zip(f_grads, t_grads):
        assert_close(f, t, rtol=1e-10, atol=1e-12)


def _second_order(L, steps):
    """First and second order (a weighted sum of the gradient, differentiated
    again) of a random program; None and zero gradients both come back as zeros."""
    leaves_ = [L.tensor(v, dtype=L.float64, requires_grad=True) for v in _LEAF_VALUES]
    loss = _forward(L, steps, leaves_)
    if loss is None:
        return None

    def dense(grads):
        return [L.zeros_like(x) if g is None else g.detach() for g, x in zip(grads, leaves_)]

    grads = L.autograd.grad(loss, leaves_, create_graph=True, allow_unused=True)
    weighted = [(g * (0.5 + k)).sum() for k, g in enumerate(grads) if g is not None and g.requires_grad]
    if not weighted:
        return dense(grads), dense([None] * len(leaves_))
    return dense(grads), dense(L.autograd.grad(sum(weighted), leaves_, allow_unused=True))


_PURE_STEPS = sorted(_UNARY_STEPS) + sorted(_BINARY_STEPS)


@settings(max_examples=25, deadline=None)
@given(steps=st.lists(st.tuples(st.sampled_from(_PURE_STEPS), st.integers(0, 20), st.integers(0, 20)),
                      min_size=1, max_size=6))
def test_random_programs_second_order_match_torch(steps):
    t, f = _second_order(torch, steps), _second_order(fg, steps)
    if t is None:
        assert f is None
        return
    for t_grads, f_grads in zip(t, f):
        for tg, fgrad in zip(t_grads, f_grads):
            assert_close(fgrad, tg, rtol=1e-9, atol=1e-12)


PIECEWISE_LINEAR = {"relu": lambda L, x: x.relu(), "abs": lambda L, x: x.abs(),
                    "clamp": lambda L, x: x.clamp(-0.5, 0.5), "max": lambda L, x: x.max(),
                    "linear": lambda L, x: x * 3}


@pytest.mark.parametrize("name", PIECEWISE_LINEAR)
def test_create_graph_gradient_requires_grad_as_torch(name):
    f = PIECEWISE_LINEAR[name]
    # torch's first-order gradients of piecewise-linear ops still hang off the
    # graph, so differentiating them again gives zeros rather than an error.
    res = []
    for L in LIBS:
        x = L.tensor([0.3, -0.7, 1.1], dtype=L.float64, requires_grad=True)
        (g,) = L.autograd.grad(f(L, x).sum(), x, create_graph=True)
        second = L.autograd.grad(g.sum(), x, allow_unused=True)[0] if g.requires_grad else None
        res.append((g.requires_grad, second))
    assert res[1][0] == res[0][0]
    assert_close(res[1][1], res[0][1])


def test_eager_backward_frees_gradients_it_no_longer_needs():
    """The backward of a 30-op chain keeps a few arrays alive at a time, not one per op
    (measured with tracemalloc, which sees NumPy's data allocations)."""
    import tracemalloc
    n = 1 << 18                                   # 1 MiB per float32 array
    x = fg.randn(n, requires_grad=True)
    y = x
    for _ in range(30):
        y = y.tanh()
    loss = y.sum()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        loss.backward()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    arrays = (peak - before) / (4 * n)
    assert arrays < 10, f"the backward held {arrays:.1f} arrays at its peak"
    # d/dx of tanh^30(x), by the chain rule in float64
    h = x.detach().numpy().astype(np.float64)
    grad = np.ones(n)
    for _ in range(30):
        t = np.tanh(h)
        grad = grad * (1 - t * t)
        h = t
    np.testing.assert_allclose(x.grad.numpy(), grad, rtol=1e-4, atol=1e-6)


def _write_through_another_view(L, a):
    y = a * 1
    v = y[0]
    w = y.view(6)
    w[2] = -1.0                 # the base changes through w ...
    v.add_(5)                   # ... then v, made before, is written: its history is the base's now
    return (y * y).sum() + (v * v).sum() + (w * w).sum()


def _write_base_then_old_view(L, a):
    y = a * 1
    v = y[0]
    w = y.view(6)
    y[:, 1:].mul_(3)
    y.mul_(0.5)
    v.add_(5)
    y = y + y
    return (y * y).sum() + (v * v).sum() + (w * w).sum()


@pytest.mark.parametrize("program", [_write_through_another_view, _write_base_then_old_view],
                         ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("compiled", [False, True])
def test_inplace_through_a_view_made_before_the_base_changed(program, compiled):
    results = []
    for lib in (torch, fg):
        a = lib.tensor(np.arange(6, dtype=np.float32).reshape(2, 3) / 3, requires_grad=True)
        fn = (lambda x: program(lib, x)) if lib is torch or not compiled else fg.compile(lambda x: program(fg, x))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            out = fn(a)
        out.backward()
        results.append((out.item(), a.grad.numpy()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-6)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-6)
