"""Higher-order derivatives against torch 2.13, op by op.

For every differentiable op of API.md (arithmetic with tensor and scalar operands on
either side, the unary ops, pow/clamp/maximum/minimum/where, the reductions, softmax,
matmul, shape ops, indexing, cat/stack and the two losses) and for inputs that are
random normals or points where derivatives are special (zeros for abs/relu/sqrt, clamp
boundaries, ties for max/min/maximum), in float32 and float64:

  eager     g = autograd.grad(f(x).sum(), x, create_graph=True), then
            autograd.grad((g * v).sum(), x), with and without allow_unused: the values of
            g and of the second derivative, g.requires_grad, g.grad_fn's name, and the
            error (class and text) or None where the second derivative does not use x;
  backward  loss.backward(create_graph=True) then x.grad.sum().backward(): the .grad
            they accumulate into (or the error torch raises);
  fg.grad   fg.grad(fg.grad(f)) against torch.func.grad(torch.func.grad(f)), third order
            for smooth ops, and Hessian-vector products through fg.grad;
  compiled  fg.compile of a Hessian-vector product built with create_graph inside, and
            fg.compile(fg.grad(fg.grad(f))) (few programs: each costs Numba compiles).

Values compare NaN-aware (infinities exactly) with float32 tolerances. torch returns a
lazy ZeroTensor where a second derivative is identically zero (abs, the 1- and
inf-norms); it compares as zeros. Differences outside the op table (the tracer names the
nodes a create_graph backward records) are strict xfails naming the difference.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle for higher-order derivatives")

DTYPES = ("float32", "float64")
RNG = np.random.default_rng(7)
RAND = RNG.standard_normal((3, 4))
# Zeros of both signs (abs, relu, sqrt, norms), clamp's bounds -0.5 and 0.5, ties: two 3s
# (max of all), two 2s in row 1 (max along dim 1), -0.0 and 0.0 in column 1 (min along 0).
SPECIAL = np.array([[0.0, -0.0, 3.0, -0.5],
                    [2.0, 0.5, 2.0, -1.0],
                    [1.0, 0.0, -2.0, 3.0]])
OTHER = RNG.standard_normal((3, 4))     # a second operand (constant, or with its own grad)
OTHER[0, 0] = 0.0                       # maximum/minimum tie with SPECIAL[0, 0], where's zero
V = RNG.standard_normal((3, 4))         # the direction the second derivative is taken along
POINTS = {"rand": RAND, "special": SPECIAL}


def _c(L, x, a):
    """A constant of x's dtype."""
    return L.tensor(np.asarray(a), dtype=x.dtype)


def _lib(x):
    return torch if isinstance(x, torch.Tensor) else fg


def _cross_entropy(L, x, reduction="mean"):
    return L.nn.functional.cross_entropy(x, L.tensor([0, 3, 1]), reduction=reduction)


# f(L, x) -> a tensor; x is (3, 4).
CELLS = {
    # unary
    "neg": lambda L, x: -x,
    "abs": lambda L, x: x.abs(),
    "exp": lambda L, x: x.exp(),
    "log": lambda L, x: x.abs().log(),
    "sqrt": lambda L, x: x.abs().sqrt(),
    "sin": lambda L, x: x.sin(),
    "cos": lambda L, x: x.cos(),
    "tanh": lambda L, x: x.tanh(),
    "sigmoid": lambda L, x: x.sigmoid(),
    "relu": lambda L, x: x.relu(),
    "fn_forms": lambda L, x: L.exp(L.sin(x)) + L.neg(L.tanh(x)),
    # arithmetic, tensor and scalar operands on either side
    "add_tensor": lambda L, x: x * x + _c(L, x, OTHER),
    "add_scalar": lambda L, x: x + 2.0,
    "radd": lambda L, x: 2.0 + x * x,
    "add_self": lambda L, x: x + x,
    "sub_tensor": lambda L, x: _c(L, x, OTHER) - x * x,
    "sub_scalar": lambda L, x: x - 2.0,
    "rsub": lambda L, x: 2.0 - x,
    "mul_tensor": lambda L, x: x * _c(L, x, OTHER),
    "mul_scalar": lambda L, x: x * 3.0,
    "rmul": lambda L, x: 3.0 * x,
    "mul_self": lambda L, x: x * x,
    "div_tensor": lambda L, x: x / _c(L, x, OTHER),
    "div_scalar": lambda L, x: x / 3.0,
    "rdiv": lambda L, x: 3.0 / x,
    "div_by_x": lambda L, x: _c(L, x, OTHER) / x,
    "div_fn": lambda L, x: L.div(L.sub(x, 1.0), L.add(L.mul(x, x), 1.0)),
    "pow_2": lambda L, x: x ** 2,
    "pow_3": lambda L, x: x ** 3,
    "pow_half": lambda L, x: x.abs() ** 0.5,
    "pow_1": lambda L, x: x ** 1,
    "pow_neg": lambda L, x: (x * x + 1) ** -1.5,
    "pow_fn": lambda L, x: L.pow(x, 3),
    "rpow": lambda L, x: 2.0 ** x,
    "pow_tensor_exp": lambda L, x: x.abs() ** _c(L, x, OTHER),
    "pow_tensor_base": lambda L, x: _c(L, x, np.abs(OTHER) + 0.5) ** x,
    "pow_self": lambda L, x: (x.abs() + 0.5) ** x,
    # piecewise
    "clamp": lambda L, x: x.clamp(-0.5, 0.5) * x,
    "clamp_min": lambda L, x: x.clamp(min=0.0) ** 2,
    "clamp_max": lambda L, x: x.clamp(max=0.5),
    "clamp_tensor": lambda L, x: x.clamp(_c(L, x, OTHER * 0.1 - 0.5), _c(L, x, OTHER * 0.1 + 0.5)) * x,
    "clamp_x_bounds": lambda L, x: _c(L, x, OTHER).clamp(x - 1, x * x + 1),
    "maximum": lambda L, x: L.maximum(x, _c(L, x, OTHER)) * x,
    "minimum": lambda L, x: L.minimum(x * x, _c(L, x, OTHER)),
    "maximum_tie": lambda L, x: L.maximum(x, x.detach()) * x,
    "maximum_self": lambda L, x: L.maximum(x * x, x),
    "where": lambda L, x: L.where(x > 0, x * x, x.sin()),
    "where_const": lambda L, x: L.where(x > 0, x, _c(L, x, OTHER)),
    # reductions
    "sum": lambda L, x: (x * x).sum(),
    "sum_dim": lambda L, x: (x * x).sum(1),
    "sum_keepdim": lambda L, x: (x * x).sum(0, keepdim=True),
    "sum_tuple": lambda L, x: (x * x.sin()).sum((0, 1)),
    "sum_linear": lambda L, x: x.sum(1),
    "mean": lambda L, x: (x * x).mean(),
    "mean_dim": lambda L, x: x.exp().mean(1),
    "mean_linear": lambda L, x: x.mean(0, keepdim=True),
    "max": lambda L, x: x.max(),
    "min": lambda L, x: x.min(),
    "max_dim": lambda L, x: x.max(1)[0],
    "min_dim_keepdim": lambda L, x: x.min(0, keepdim=True)[0],
    "max_of_square": lambda L, x: (x * x).max(),
    "max_dim_of_square": lambda L, x: (x * x).max(1).values,
    "norm": lambda L, x: x.norm(),
    "norm_dim": lambda L, x: x.norm(dim=1),
    "norm_keepdim": lambda L, x: x.norm(dim=0, keepdim=True),
    "norm_1": lambda L, x: x.norm(p=1),
    "norm_inf": lambda L, x: x.norm(p=float("inf")),
    "norm_3": lambda L, x: x.norm(p=3, dim=1),
    "norm_half": lambda L, x: x.norm(p=0.5, dim=1),
    "norm_1_5": lambda L, x: x.norm(p=1.5),
    # softmax
    "softmax": lambda L, x: x.softmax(1) * _c(L, x, OTHER),
    "softmax_dim0": lambda L, x: x.softmax(0),
    "log_softmax": lambda L, x: x.log_softmax(1) * _c(L, x, OTHER),
    "log_softmax_dim0": lambda L, x: x.log_softmax(dim=0),
    # matmul
    "matmul_2d": lambda L, x: x @ _c(L, x, OTHER.T),
    "matmul_2d_right": lambda L, x: _c(L, x, OTHER.T) @ x,
    "matmul_self": lambda L, x: x @ x.T,
    "matmul_1d": lambda L, x: x[0] @ x[1],
    "matmul_mv": lambda L, x: x @ x[0],
    "matmul_vm": lambda L, x: x[:, 0] @ x,
    "matmul_batched": lambda L, x: x.reshape(3, 2, 2) @ x.reshape(3, 2, 2),
    "matmul_broadcast": lambda L, x: x.reshape(3, 2, 2) @ _c(L, x, OTHER[:2, :2]),
    "matmul_fn": lambda L, x: L.matmul(x.T, x.sin()),
    # shape ops, indexing, cat/stack
    "reshape": lambda L, x: x.reshape(4, 3) ** 2,
    "view": lambda L, x: x.view(12).sin(),
    "permute": lambda L, x: x.permute(1, 0).exp(),
    "transpose": lambda L, x: x.transpose(0, 1) * x.T,
    "t": lambda L, x: x.t().tanh(),
    "unsqueeze": lambda L, x: x.unsqueeze(1).cos(),
    "squeeze": lambda L, x: x[:1].squeeze(0) ** 3,
    "expand": lambda L, x: x[:1].expand(3, 4) * x,
    "flatten": lambda L, x: x.flatten().sigmoid(),
    "index": lambda L, x: x[0] * x[1],
    "slice": lambda L, x: x[:, 1:3] ** 2,
    "newaxis": lambda L, x: x[..., None] * x[:, None],
    "cat": lambda L, x: L.cat([x, x * x]) ** 2,
    "stack": lambda L, x: L.stack([x, x.sin()], 1) ** 2,
    "reshape_linear": lambda L, x: x.reshape(12),
    "index_linear": lambda L, x: x[1],
    "cat_linear": lambda L, x: L.cat([x, x]),
    # losses
    "mse": lambda L, x: L.nn.functional.mse_loss(x, _c(L, x, OTHER)),
    "mse_sum": lambda L, x: L.nn.functional.mse_loss(x, _c(L, x, OTHER), reduction="sum"),
    "mse_none": lambda L, x: L.nn.functional.mse_loss(x, _c(L, x, OTHER), reduction="none"),
    "mse_target": lambda L, x: L.nn.functional.mse_loss(_c(L, x, OTHER), x),
    "cross_entropy": lambda L, x: _cross_entropy(L, x),
    "cross_entropy_sum": lambda L, x: _cross_entropy(L, x, "sum"),
    "cross_entropy_none": lambda L, x: _cross_entropy(L, x, "none"),
}

# g's grad_fn is named by the tracer (tracer/engine.py _create_graph_name) from the IR op of
# the create_graph backward program, as torch's formula names it (every cell here agrees).
# torch's pow(x, 0) backward is zeros with no history (g.requires_grad is False, and a
# second grad raises); ours is a masked product that depends on x (zeros, requiring grad).
CELLS["pow_0"] = lambda L, x: x ** 0


# ================================================================ comparison helpers
def _np(t):
    """A tensor's values as float64 NumPy (torch's ZeroTensor as zeros)."""
    if isinstance(t, torch.Tensor):
        if t._is_zerotensor():
            return np.zeros(tuple(t.shape))
        return t.detach().double().numpy()
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def _close(cell: str, what: str, ours, theirs, dtype: str) -> None:
    if theirs is None or ours is None:
        assert ours is None and theirs is None, f"{cell}: {what} is {ours!r}, torch's {theirs!r}"
        return
    assert tuple(ours.shape) == tuple(theirs.shape), f"{cell}: {what} shape {tuple(ours.shape)} != {tuple(theirs.shape)}"
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], f"{cell}: {what} dtype"
    rtol, atol = (2e-4, 1e-5) if dtype == "float32" else (1e-9, 1e-12)
    np.testing.assert_allclose(_np(ours), _np(theirs), rtol=rtol, atol=atol, equal_nan=True,
                               err_msg=f"{cell}: {what}")


def _outcome(fn):
    """(result, None) or (None, the exception)."""
    try:
        return fn(), None
    except Exception as exc:                # noqa: BLE001 - compared with torch's
        return None, exc


def _same_outcome(cell: str, what: str, ours, theirs, dtype: str) -> None:
    (o, oe), (t, te) = ours, theirs
    if te is not None:
        assert oe is not None, f"{cell}: {what}: torch raises {te!r}, fusegrad gives {o!r}"
        assert type(oe) is type(te) and str(oe) == str(te), f"{cell}: {what}: {oe!r} != torch's {te!r}"
        return
    assert oe is None, f"{cell}: {what}: fusegrad raises {oe!r}, torch does not"
    for k, (a, b) in enumerate(zip(o, t)):
        _close(cell, f"{what}[{k}]", a, b, dtype)


def _node_name(t):
    return None if t.grad_fn is None else type(t.grad_fn).__name__


# ================================================================ (a) eager autograd.grad
def _eager(L, cell: str, point: str, dtype: str) -> dict:
    x = L.tensor(POINTS[point], dtype=getattr(L, dtype), requires_grad=True)
    (g,) = L.autograd.grad(CELLS[cell](L, x).sum(), x, create_graph=True)
    v = _c(L, x, V)
    return {
        "g": g, "requires_grad": g.requires_grad, "name": _node_name(g),
        "second": _outcome(lambda: L.autograd.grad((g * v).sum(), x, retain_graph=True)),
        "second_allow_unused": _outcome(lambda: L.autograd.grad((g * v).sum(), x, allow_unused=True)),
    }


def _check_eager(cell: str, check_name: bool = True, check_requires_grad: bool = True) -> None:
    for point in POINTS:
        for dtype in DTYPES:
            where = f"{cell} at {point} {dtype}"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                theirs, ours = _eager(torch, cell, point, dtype), _eager(fg, cell, point, dtype)
            _close(where, "first derivative", ours["g"], theirs["g"], dtype)
            if check_requires_grad:
                assert ours["requires_grad"] == theirs["requires_grad"], f"{where}: g.requires_grad"
                _same_outcome(where, "second derivative", ours["second"], theirs["second"], dtype)
                _same_outcome(where, "second derivative (allow_unused)", ours["second_allow_unused"],
                              theirs["second_allow_unused"], dtype)
            if check_name:
                assert ours["name"] == theirs["name"], f"{where}: g.grad_fn {ours['name']} != torch's {theirs['name']}"


@pytest.mark.parametrize("cell", list(CELLS))
def test_second_derivative_eagerly(cell):
    _check_eager(cell)


def test_pow_zero_gradient_has_no_history_as_torch():
    _check_eager("pow_0")


# Two leaves: the second derivative with respect to the other leaf, and with respect to x
# where g does not depend on x (torch raises, or gives None with allow_unused).
PAIRS = {
    "mul": lambda L, x, w: x * w,
    "add": lambda L, x, w: x + w * w,
    "div": lambda L, x, w: x / (w * w + 1),
    "pow": lambda L, x, w: x.abs() ** w,
    "maximum": lambda L, x, w: L.maximum(x, w),
    "where": lambda L, x, w: L.where(x > w, x * w, w),
    "clamp": lambda L, x, w: x.clamp(w - 0.5, w + 0.5),
    "matmul": lambda L, x, w: x @ w.T,
    "cat": lambda L, x, w: L.cat([x * w, w]),
    "stack": lambda L, x, w: L.stack([x, w.exp()]) * w,
    "mse": lambda L, x, w: L.nn.functional.mse_loss(x, w),
    "softmax": lambda L, x, w: x.softmax(1) * w,
}


def _pair(L, cell, point, dtype):
    x = L.tensor(POINTS[point], dtype=getattr(L, dtype), requires_grad=True)
    w = L.tensor(OTHER, dtype=getattr(L, dtype), requires_grad=True)
    gx, gw = L.autograd.grad(PAIRS[cell](L, x, w).sum(), (x, w), create_graph=True)
    v = _c(L, x, V)
    res = {"names": (_node_name(gx), _node_name(gw)), "g": (gx, gw),
           "flags": (gx.requires_grad, gw.requires_grad)}
    res["dgx"] = _outcome(lambda: L.autograd.grad((gx * v).sum(), (x, w), retain_graph=True))
    res["dgx_unused"] = _outcome(lambda: L.autograd.grad((gx * v).sum(), (x, w), retain_graph=True,
                                                         allow_unused=True))
    res["dgw_unused"] = _outcome(lambda: L.autograd.grad((gw * v).sum(), (x, w), allow_unused=True))
    return res


@pytest.mark.parametrize("cell", PAIRS)
def test_mixed_second_derivatives_and_unused_inputs(cell):
    for point in POINTS:
        for dtype in DTYPES:
            where = f"{cell} at {point} {dtype}"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t, o = _pair(torch, cell, point, dtype), _pair(fg, cell, point, dtype)
            for a, b in zip(o["g"], t["g"]):
                _close(where, "first derivative", a, b, dtype)
            assert o["flags"] == t["flags"], f"{where}: requires_grad of (gx, gw)"
            assert o["names"] == t["names"], f"{where}: grad_fn of (gx, gw)"
            for key in ("dgx", "dgx_unused", "dgw_unused"):
                _same_outcome(where, key, o[key], t[key], dtype)


# ================================================================ (b) backward(create_graph=True)
BACKWARD_CELLS = ["exp", "tanh", "sigmoid", "relu", "abs", "mul_self", "pow_3", "rdiv", "clamp", "maximum_tie",
                  "max", "max_dim", "norm", "norm_inf", "softmax", "log_softmax", "matmul_self", "stack",
                  "mse", "cross_entropy", "mul_scalar", "sum_linear", "index_linear"]


def _backward_twice(L, cell, point, dtype):
    x = L.tensor(POINTS[point], dtype=getattr(L, dtype), requires_grad=True)
    CELLS[cell](L, x).sum().backward(create_graph=True)
    first, name, flag = x.grad.detach().clone(), _node_name(x.grad), x.grad.requires_grad
    _, err = _outcome(lambda: x.grad.sum().backward())
    return first, name, flag, err, x.grad


@pytest.mark.parametrize("cell", BACKWARD_CELLS)
def test_backward_create_graph_then_backward_of_grad_accumulates(cell):
    for point in POINTS:
        for dtype in DTYPES:
            where = f"{cell} at {point} {dtype}"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t, o = _backward_twice(torch, cell, point, dtype), _backward_twice(fg, cell, point, dtype)
            _close(where, "x.grad after the first backward", o[0], t[0], dtype)
            assert o[1] == t[1], f"{where}: x.grad.grad_fn {o[1]} != torch's {t[1]}"
            assert o[2] == t[2], f"{where}: x.grad.requires_grad"
            if t[3] is not None:
                assert o[3] is not None and type(o[3]) is type(t[3]) and str(o[3]) == str(t[3]), \
                    f"{where}: second backward: {o[3]!r} != torch's {t[3]!r}"
            else:
                assert o[3] is None, f"{where}: second backward raises {o[3]!r}; torch does not"
            _close(where, "x.grad after the second backward", o[4], t[4], dtype)


def test_backward_create_graph_accumulates_onto_an_existing_grad():
    res = []
    for L in (torch, fg):
        x = L.tensor(RAND, dtype=L.float64, requires_grad=True)
        (x * x).sum().backward()                            # a plain .grad first
        (x.sin() * x).sum().backward(create_graph=True)     # then one with history, added to it
        flag, name = x.grad.requires_grad, _node_name(x.grad)
        (x.grad * _c(L, x, V)).sum().backward()
        res.append((flag, name, x.grad))
    assert res[1][:2] == res[0][:2]
    _close("accumulate", "x.grad", res[1][2], res[0][2], "float64")


# ================================================================ (c) fg.grad(fg.grad(f))
SCALAR_CELLS = {
    "neg": lambda L, x: -x, "abs": lambda L, x: x.abs() * x, "exp": lambda L, x: x.exp(),
    "log": lambda L, x: x.abs().log(), "sqrt": lambda L, x: x.abs().sqrt(), "sin": lambda L, x: x.sin(),
    "cos": lambda L, x: x.cos(), "tanh": lambda L, x: x.tanh(), "sigmoid": lambda L, x: x.sigmoid(),
    "relu": lambda L, x: x.relu() * x, "rdiv": lambda L, x: 1.0 / x, "rsub": lambda L, x: 2.0 - x * x,
    "pow_3": lambda L, x: x ** 3, "pow_half": lambda L, x: x.abs() ** 0.5, "rpow": lambda L, x: 2.0 ** x,
    "pow_self": lambda L, x: (x.abs() + 0.5) ** x, "clamp": lambda L, x: x.clamp(-0.5, 0.5) * x,
    "maximum": lambda L, x: _lib(x).maximum(x * x, x), "where": lambda L, x: _lib(x).where(x > 0, x ** 3, x.sin()),
    "softmax": lambda L, x: (_lib(x).stack([x, x * x, -x]).softmax(0) * _c(_lib(x), x, [1.0, 2.0, 3.0])).sum(),
    "log_softmax": lambda L, x: (_lib(x).stack([x, x.sin()]).log_softmax(0) * _c(_lib(x), x, [1.0, -2.0])).sum(),
    "norm": lambda L, x: _lib(x).stack([x, x * x + 1]).norm(),
    "max": lambda L, x: _lib(x).stack([x * x, x.sin()]).max(),
    "mse": lambda L, x: _lib(x).nn.functional.mse_loss(x.sin(), _c(_lib(x), x, 0.25)),
    "matmul": lambda L, x: _lib(x).stack([x, x * x]) @ _c(_lib(x), x, [0.5, -1.5]),
}
SCALAR_POINTS = [0.7, -1.3, 0.0, 0.5]


@pytest.mark.parametrize("cell", SCALAR_CELLS)
def test_grad_of_grad_matches_torch_func(cell):
    f = SCALAR_CELLS[cell]
    for x0 in SCALAR_POINTS:
        for dtype in DTYPES:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t = torch.func.grad(torch.func.grad(lambda x: f(torch, x)))(torch.tensor(x0, dtype=getattr(torch, dtype)))
                o = fg.grad(fg.grad(lambda x: f(fg, x)))(fg.tensor(x0, dtype=getattr(fg, dtype)))
            _close(f"{cell} at {x0} {dtype}", "second derivative", o, t, dtype)


@pytest.mark.parametrize("cell", ["exp", "sin", "tanh", "sigmoid", "log", "rdiv", "pow_3", "softmax", "norm"])
def test_third_derivative_matches_torch_func(cell):
    f = SCALAR_CELLS[cell]
    for x0 in (0.7, -1.3):
        t = torch.func.grad(torch.func.grad(torch.func.grad(lambda x: f(torch, x))))(
            torch.tensor(x0, dtype=torch.float64))
        o = fg.grad(fg.grad(fg.grad(lambda x: f(fg, x))))(fg.tensor(x0, dtype=fg.float64))
        _close(f"{cell} at {x0}", "third derivative", o, t, "float64")


@pytest.mark.parametrize("cell", [c for c in CELLS if c not in ("pow_0",)])
def test_hessian_vector_product_through_fg_grad(cell):
    f = CELLS[cell]

    def hvp(L, grad):
        inner = grad(lambda x: f(L, x).sum())
        return grad(lambda x: (inner(x) * _c(L, x, V)).sum())

    for dtype in DTYPES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = hvp(torch, torch.func.grad)(torch.tensor(RAND, dtype=getattr(torch, dtype)))
            o = hvp(fg, fg.grad)(fg.tensor(RAND, dtype=getattr(fg, dtype)))
        _close(f"{cell} {dtype}", "Hessian-vector product", o, t, dtype)


# ================================================================ (d) inside fg.compile
def _model(L, x):
    """Many ops at once, so that one compiled program covers them."""
    w = _c(L, x, OTHER)
    y = (x * w + 1.0).tanh() + (x / (w * w + 1)).sigmoid() * x - 2.0 ** (x * 0.5) + x.clamp(-0.5, 0.5) ** 2
    z = y.softmax(1) * w + y.log_softmax(0) + (y @ w.T).sum(0, keepdim=True).T.relu().mean() + y.norm(dim=1)[:, None]
    return z.sum() + L.nn.functional.mse_loss(y.sin(), w) + L.maximum(y.exp(), x).max(1)[0].sum() + (x.abs() ** 3).sum()


def _hvp_create_graph(L, x):
    x = x.detach().requires_grad_()
    (g,) = L.autograd.grad(_model(L, x), x, create_graph=True)
    (hv,) = L.autograd.grad((g * _c(L, x, V)).sum(), x)
    return g.detach(), hv


@pytest.mark.parametrize("dtype", ["float32"])
def test_compiled_hessian_vector_product_with_create_graph_inside(dtype):
    compiled = fg.compile(lambda x: _hvp_create_graph(fg, x))
    for point in POINTS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = _hvp_create_graph(torch, torch.tensor(POINTS[point], dtype=getattr(torch, dtype)))
            eager = _hvp_create_graph(fg, fg.tensor(POINTS[point], dtype=getattr(fg, dtype)))
            o = compiled(fg.tensor(POINTS[point], dtype=getattr(fg, dtype)))
        for k, what in enumerate(("gradient", "Hessian-vector product")):
            _close(f"compiled at {point}", what, o[k], t[k], dtype)
            _close(f"eager at {point}", what, eager[k], t[k], dtype)


def _scalar_model(L, x):
    lib = _lib(x)
    y = (x * 0.7).sin() * x ** 3 + (x * x + 1).sqrt().log() - 1.0 / (x * x + 2) + x.tanh().exp() + x.sigmoid() ** 2
    return y + lib.stack([x, x * x, x.cos()]).softmax(0)[1] + lib.maximum(x, x * 0.5).relu() * x


def test_compiled_grad_of_grad():
    compiled = fg.compile(fg.grad(fg.grad(lambda x: _scalar_model(fg, x))))
    for x0 in (0.7, -1.3, 0.0, 2.0):
        t = torch.func.grad(torch.func.grad(lambda x: _scalar_model(torch, x)))(torch.tensor(x0, dtype=torch.float64))
        o = compiled(fg.tensor(x0, dtype=fg.float64))
        _close(f"compiled grad(grad(f)) at {x0}", "second derivative", o, t, "float64")


WHOLE_TENSOR_WRITES = {
    "zero_": lambda w, s: w.zero_(),
    "fill_ (number)": lambda w, s: w.fill_(2.0),
    "fill_ (0-d tensor)": lambda w, s: w.fill_(s.sum()),
    "copy_": lambda w, s: w.copy_(s * 2),
}


@pytest.mark.parametrize("write", WHOLE_TENSOR_WRITES)
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_a_gradient_through_a_whole_tensor_write_is_torchs_under_create_graph(write, compiled):
    """The gradient of what a write replaced whole (copy_, fill_, zero_) is torch's fresh
    zeros_like(grad): it does not require grad (it was the grad with every element zeroed,
    which did, so a create_graph gradient through it had history where torch's has none)."""
    def grads(L):
        x = L.tensor(RAND, requires_grad=True)
        s = L.tensor(OTHER, requires_grad=True)

        def f(x, s):
            w = x * 3
            WHOLE_TENSOR_WRITES[write](w, s)
            return L.autograd.grad(w.tanh().sum(), [x, s], create_graph=True, allow_unused=True)
        out = (fg.compile(f) if compiled and L is fg else f)(x, s)
        return [None if g is None else (g.requires_grad, g.grad_fn is None, g.detach().numpy().copy())
                for g in out]
    ours, theirs = grads(fg), grads(torch)
    assert [None if g is None else g[:2] for g in ours] == [None if g is None else g[:2] for g in theirs]
    for o, t in zip(ours, theirs):
        if t is not None:
            np.testing.assert_allclose(o[2], t[2], rtol=1e-5, atol=1e-6)


# The whole graph of a create_graph gradient, node names breadth first (from g.grad_fn along
# next_functions), where torch's derivative formulas and our VJPs build the same graph: a
# formula's number makes MulBackward1 / DivBackward1 (torch's Scalar overloads), abs's sign
# is SgnBackward0, a getitem's gradient SliceBackwardBackward0 / SelectBackwardBackward0, and
# a full reduction's 0-d gradient expands without an unsqueeze.
GRAPH_CELLS = {
    "abs": lambda L, x, y: x.abs(), "sqrt": lambda L, x, y: (x + 2).sqrt(),
    "pow_2": lambda L, x, y: x ** 2, "pow_3": lambda L, x, y: x ** 3, "sum": lambda L, x, y: x.sum() * x,
    "mean": lambda L, x, y: x.mean() * x, "slice": lambda L, x, y: x[1:3] ** 2,
    "select": lambda L, x, y: x.reshape(2, 2)[1] ** 2, "cat": lambda L, x, y: L.cat([x, y]) ** 2,
    "stack": lambda L, x, y: L.stack([x, y]) ** 2, "mul_scalar": lambda L, x, y: x * 3 * y,
    "div_scalar": lambda L, x, y: x / 3 * y, "sqrt_product": lambda L, x, y: (x * y + 2).sqrt(),
    "mse": lambda L, x, y: L.nn.functional.mse_loss(x, y), "tanh_sigmoid": lambda L, x, y: x.sigmoid() * x.tanh(),
    # mm's formulas t() the saved operands; a permute's VJP is named by its forward node, and a
    # gradient no view can reshape is copied first (CloneBackward0, UnsafeViewBackward0)
    "matmul": lambda L, x, y: x.reshape(2, 2) @ y.reshape(2, 2),
    "matmul_exp": lambda L, x, y: (x.reshape(2, 2) @ y.reshape(2, 2)).exp(),
    "t": lambda L, x, y: x.reshape(2, 2).t() * x.reshape(2, 2),
    "transpose": lambda L, x, y: x.reshape(2, 2).transpose(0, 1) * y.reshape(2, 2),
    "T": lambda L, x, y: x.reshape(2, 2).T * y.reshape(2, 2),
    "permute": lambda L, x, y: x.reshape(2, 2).permute(1, 0) * y.reshape(2, 2),
    # broadcasting undone as torch's sum_to: grad.sum(dims, keepdim=True), then a view when
    # leading dims go, or grad.sum() to a 0-d shape
    "broadcast": lambda L, x, y: x.reshape(2, 2) * y[:2] * y[:2],
    "broadcast_0d": lambda L, x, y: x * y.sum() * y.sum(),
    "sum_dim": lambda L, x, y: x.reshape(2, 2).sum(0) * y[:2],
    "expand": lambda L, x, y: x[None].expand(2, 4) ** 2,
}


def _graph_names(t) -> list:
    names, seen, queue = [], set(), [t.grad_fn]
    while queue:
        node = queue.pop(0)
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        names.append(type(node).__name__)
        queue += [n for n, _ in node.next_functions]
    return names


@pytest.mark.parametrize("cell", sorted(GRAPH_CELLS))
def test_create_graph_gradient_graph_names_match_torch(cell):
    graphs = []
    for L in (torch, fg):
        x = L.tensor([0.3, -0.7, 1.2, 0.9], requires_grad=True)
        y = L.tensor([0.5, 0.4, -1.1, 2.0], requires_grad=True)
        grads = L.autograd.grad(GRAPH_CELLS[cell](L, x, y).sum(), [x, y], create_graph=True, allow_unused=True)
        graphs.append([None if g is None else (_graph_names(g), np.round(g.detach().numpy(), 5).tolist())
                       for g in grads])
    assert graphs[1] == graphs[0]
