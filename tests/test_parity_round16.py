"""Parity round 16 (a probe of gradients at special points, and a contract test suite written
from API.md; torch 2.13 is the oracle): leaky_relu's and softplus's gradients are torch's
backward ops (so a create_graph gradient has torch's history and finite second derivatives),
compiled var/std/layer_norm compute their moments in float64 as eagerly, numbers beyond a
dtype raise torch's overflow error in where/clamp/leaky_relu/softplus, `.data = other` after
a tensor was saved is read by the backward, and creation functions take torch's arguments."""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")

from parity_support import exact_outcome as outcome  # noqa: E402  (after the torch check, as its users)


def assert_same(fn):
    assert outcome(lambda: fn(fg)) == outcome(lambda: fn(torch))


# ------------------------------------------------------------------ create_graph nodes
@pytest.mark.parametrize("slope", [0.1, 0.0, -0.5, 2.0])
def test_leaky_relu_create_graph_gradient_has_torchs_history(slope):
    def first(L):
        x = L.tensor([-1.0, 0.0, 2.0, -3.0], requires_grad=True)
        g, = L.autograd.grad((L.nn.functional.leaky_relu(x, slope) * x).sum(), x, create_graph=True)
        return x, g
    for L in (fg, torch):
        x, g = first(L)
        assert g.requires_grad and type(g.grad_fn).__name__ == "AddBackward0"
    ours, theirs = first(fg), first(torch)
    np.testing.assert_array_equal(ours[1].detach().numpy(), theirs[1].detach().numpy())
    second = [L.autograd.grad(g.sum(), x)[0].numpy() for L, (x, g) in ((fg, ours), (torch, theirs))]
    np.testing.assert_array_equal(second[0], second[1])


def test_leaky_relu_backward_node_names_and_second_derivative():
    for L in (fg, torch):
        x = L.tensor([-1.0, 0.0, 2.0], requires_grad=True)
        g, = L.autograd.grad(L.nn.functional.leaky_relu(x, 0.1).sum(), x, create_graph=True)
        assert type(g.grad_fn).__name__ == "LeakyReluBackwardBackward0"
        assert L.autograd.grad(g.sum(), x)[0].tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("beta,threshold", [(1.0, 20.0), (2.0, 15.0), (0.5, 3.0)])
def test_softplus_second_derivative_is_torchs_past_the_threshold(beta, threshold):
    """The double backward is torch's softplus_double_backward: finite (0) where exp(x * beta)
    overflows, not the NaN of differentiating exp / (exp + 1)."""
    def second(L):
        x = L.tensor([-3.0, 0.0, 9.0, 100.0, 1e4, float("inf")], requires_grad=True)
        g, = L.autograd.grad(L.nn.functional.softplus(x, beta, threshold).sum(), x, create_graph=True)
        assert type(g.grad_fn).__name__ == "SoftplusBackwardBackward0"
        return g, L.autograd.grad(g.sum(), x)[0]
    (g, gg), (tg, tgg) = second(fg), second(torch)
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=2e-6)
    np.testing.assert_allclose(gg.numpy(), tgg.numpy(), rtol=2e-6, atol=0)
    assert not np.isnan(gg.numpy()).any()


def test_softplus_grad_of_grad_transform_and_compiled():
    softplus = fg.nn.functional.softplus
    want = torch.func.grad(torch.func.grad(torch.nn.functional.softplus))
    for x in (1e4, 9.0, -2.0):
        expected = want(torch.tensor(x)).item()
        assert fg.grad(fg.grad(softplus))(fg.tensor(x)).item() == pytest.approx(expected, rel=2e-6, abs=0)
        assert fg.compile(fg.grad(fg.grad(softplus)))(fg.tensor(x)).item() == pytest.approx(expected, rel=2e-6,
                                                                                          abs=0)


def test_leaky_relu_and_softplus_gradients_compiled_equal_eager():
    F = fg.nn.functional

    def loss(x):
        return (F.softplus(x, beta=2.0) * F.leaky_relu(x, 0.3)).sum()
    x = fg.tensor(np.random.default_rng(0).standard_normal(3000).astype(np.float32) * 10)
    value, grad = fg.compile(fg.value_and_grad(loss))(x)
    eager_value, eager_grad = fg.value_and_grad(loss)(x)
    xt = torch.tensor(x.numpy(), requires_grad=True)
    (torch.nn.functional.softplus(xt, beta=2.0) * torch.nn.functional.leaky_relu(xt, 0.3)).sum().backward()
    np.testing.assert_allclose(grad.numpy(), eager_grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(eager_grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-5)
    assert value.item() == pytest.approx(eager_value.item(), rel=1e-5)


# ------------------------------------------------------------------ moments in float64
_FAR_FROM_ZERO = [[c, c] for c in (999999.8125, 999999.75, 999999.9375, 999999.875)]


@pytest.mark.parametrize("fn", ["var", "std"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_compiled_var_and_std_of_data_far_from_zero_equal_torch(fn, keepdim):
    """A float32 mean of values near 1e6 rounds by half an ulp (0.03): squared deviations from
    it gave a variance 20% off. torch (and the eager reference) accumulate in float64."""
    def call(L, x):
        return getattr(x, fn)(0, keepdim=keepdim)
    expected = call(torch, torch.tensor(_FAR_FROM_ZERO)).numpy()
    x = fg.tensor(_FAR_FROM_ZERO)
    np.testing.assert_allclose(call(fg, x).numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(fg.compile(lambda x: call(fg, x))(x).numpy(), expected, rtol=1e-6)
    value, _ = fg.compile(fg.value_and_grad(lambda x: call(fg, x).sum()))(x)
    assert value.item() == pytest.approx(float(expected.sum()), rel=1e-6)


# ------------------------------------------------------------------ numbers beyond a dtype
@pytest.mark.parametrize("case", [
    lambda L, x: L.where(x > 0, x, 1e39),
    lambda L, x: L.where(x > 0, -1e39, x),
    lambda L, x: L.where(x > 0, 1e39, 0.0),
    lambda L, x: L.where(x > 0, x, float("inf")),
    lambda L, x: L.where(x > 0, x, 2 ** 70),
    lambda L, x: L.where(x.long() > 0, x.long(), 2 ** 63),
    lambda L, x: L.where(x.long() > 0, x.long(), 3),
    lambda L, x: L.where(x.double() > 0, x.double(), 1e39),
    lambda L, x: x.clamp(max=1e39),
    lambda L, x: x.clamp(-1e39, 0.0),
    lambda L, x: x.clamp(max=float("inf")),
    lambda L, x: x.long().clamp(max=2 ** 70),
    lambda L, x: x.long().clamp(max=2 ** 63),
    lambda L, x: x.long().clamp(max=1e39),
    lambda L, x: x.double().clamp(max=1e39),
    lambda L, x: L.clamp_min(x, 1e39),
    lambda L, x: L.clamp_max(x, -1e39),
    lambda L, x: x.clone().clamp_(max=1e39),
    lambda L, x: L.nn.functional.leaky_relu(x, 1e39),
    lambda L, x: L.nn.functional.leaky_relu(x.double(), 1e39),
    lambda L, x: L.nn.functional.softplus(x, beta=1e39),
    lambda L, x: L.nn.functional.softplus(x, threshold=-1e39),
])
def test_numbers_beyond_the_dtype_raise_torchs_overflow_error(case, recwarn):
    assert_same(lambda L: case(L, L.tensor([1.0, -1.0])))
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_overflow_error_inside_compile():
    with pytest.raises(RuntimeError, match="^value cannot be converted to type float without overflow$"):
        fg.compile(lambda x: fg.where(x > 0, x, 1e39))(fg.tensor([1.0, -1.0]))


# ------------------------------------------------------------------ .data assignment
def test_data_assigned_after_saving_is_what_backward_reads():
    """torch's node saves an input tensor itself: `x.data = other` swaps its data (no version
    bump), so the backward reads the new values; a saved output is torch's copy of the old."""
    def grads(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * x
        x.data = L.tensor([4.0, 5.0, 6.0])
        y.sum().backward()
        a = x.grad
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x.exp()
        z = y * y
        y.data = L.zeros(3)
        z.sum().backward()
        b = x.grad
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x.exp()
        y.data = L.zeros(3)
        y.sum().backward()
        w, c = L.tensor([1.0, 2.0, 3.0], requires_grad=True), L.tensor([2.0, 2.0, 2.0])
        loss = (w * c).sum()
        c.data = L.tensor([5.0, 5.0, 5.0])
        loss.backward()
        return [t.numpy().tolist() for t in (a, b, x.grad, w.grad)]
    ours, theirs = grads(fg), grads(torch)
    np.testing.assert_allclose(np.array(ours), np.array(theirs), rtol=1e-6)
    assert ours[0] == [8.0, 10.0, 12.0] and ours[1] == [0.0, 0.0, 0.0]


# ------------------------------------------------------------------ creation arguments
@pytest.mark.parametrize("case", [
    lambda L, t: L.ones_like(t, None),
    lambda L, t: L.zeros_like(t, L.float64),
    lambda L, t: L.empty_like(t, None),
    lambda L, t: L.full_like(t, 1, None),
    lambda L, t: L.zeros_like(t, dtype=L.float64),
    lambda L, t: L.full_like(t, np.bool_(True)),
    lambda L, t: L.full((2,), L.tensor([3.0])),
    lambda L, t: L.full((2,), L.tensor(3.0)),
    lambda L, t: L.full((2,), L.tensor(3)),
    lambda L, t: L.full((2,), np.bool_(True)),
    lambda L, t: L.full((2,), np.bool_(False)),
    lambda L, t: L.full((2,), True),
    lambda L, t: L.full((2,), np.int64(3)),
    lambda L, t: L.arange(0, 1e20),
    lambda L, t: L.arange(1e20),
    lambda L, t: L.arange(0, 1e19, 1),
    lambda L, t: L.arange(0, -1e20, -1),
    lambda L, t: L.arange(0, 2 ** 62),
])
def test_creation_arguments_as_torch(case):
    def call(L):
        result = case(L, L.ones(2))
        return result[:3] if result.numel() > 3 else result
    assert_same(call)


# ------------------------------------------------------------------ graph details
def _node_names(node, out=None):
    out = [] if out is None else out
    if node is None:
        out.append("None")
        return out
    out.append(type(node).__name__)
    for child, _ in node.next_functions:
        _node_names(child, out)
    return out


@pytest.mark.parametrize("case", [
    lambda L, x: x.sum(dtype=L.float64),
    lambda L, x: x.mean(dtype=L.float64),
    lambda L, x: x.sum(0, dtype=L.float64),
    lambda L, x: (x * 2).mean(0, dtype=L.float64),
])
def test_a_reduction_with_a_dtype_casts_inside_its_node(case):
    graphs = [_node_names(case(L, L.ones(3, requires_grad=True)).grad_fn) for L in (fg, torch)]
    assert graphs[0] == graphs[1]


@pytest.mark.parametrize("shapes", [((2, 3), (3,)), ((4, 2, 3), (3,)), ((3,), (3,)), ((3,), (3, 2))])
def test_product_with_a_vector_create_graph_as_torch(shapes):
    """mv's gradient of the matrix is torch's ger (MulBackward0), dot's are products with the
    other operand (MulBackward0); values and second derivatives are torch's."""
    def run(L):
        sa, sb = shapes
        x = L.tensor(np.arange(np.prod(sa), dtype=np.float64).reshape(sa) + 1, requires_grad=True)
        v = L.tensor(np.arange(np.prod(sb), dtype=np.float64).reshape(sb) * 0.5 + 1, requires_grad=True)
        gx, gv = L.autograd.grad(((x @ v) ** 2).sum(), (x, v), create_graph=True)
        second = L.autograd.grad(gx.sum() + (gv * gv).sum(), (x, v))
        return type(gx.grad_fn).__name__, [t.detach().numpy() for t in (gx, gv, *second)]
    (name, ours), (want, theirs) = run(fg), run(torch)
    assert name == want
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12)


# ------------------------------------------------------------------ random-program probe findings
def test_compiled_backward_through_some_outputs_skips_the_others_derivatives():
    """A backward from one output of a compiled call does not run the VJPs only the others
    reach (their zero cotangents times log's infinite derivative at 0 gave NaN)."""
    def two(L, x):
        return x * 2, x.log()

    def written(L, x, y):
        y.div_(x)
        return x * 2

    def rewritten(L, x):
        v = x.sum()
        x.pow_(0.5)
        return v
    for F in (lambda f: f, fg.compile):
        got, want = [], []
        for L, out in ((fg, got), (torch, want)):
            run = F(two) if L is fg else two
            x = L.tensor([0.0, 1.0], requires_grad=True)
            run(L, x)[0].sum().backward()
            out.append(x.grad.tolist())
            run = F(written) if L is fg else written
            x, y = L.tensor([0.0, 1.0], requires_grad=True), L.tensor([1.0, 1.0])
            run(L, x, y).sum().backward()
            out.append(x.grad.tolist())
            run = F(rewritten) if L is fg else rewritten
            leaf = L.tensor(-0.8, requires_grad=True)
            run(L, leaf * 1).backward()
            out.append(leaf.grad.tolist())
            x = L.tensor([0.0, 1.0], requires_grad=True)
            a, _ = (F(two) if L is fg else two)(L, x)
            g, = L.autograd.grad((a * a).sum(), x, create_graph=True)
            out.append(L.autograd.grad(g.sum(), x)[0].tolist())
        assert got == want


@pytest.mark.parametrize("shape,dims", [((0, 2, 4), (1,)), ((2, 3, 0), (0, 1)), ((3, 0, 2, 2), (2,)), ((0,), (0,))])
def test_flatten_of_an_empty_tensor(shape, dims):
    def call(L):
        return L.zeros(shape).flatten(*dims)
    assert tuple(call(fg).shape) == tuple(call(torch).shape)
    assert tuple(fg.compile(lambda x: x.flatten(*dims))(fg.zeros(shape)).shape) == tuple(call(torch).shape)


def test_l1_loss_broadcasts_first_as_torch():
    for target in (lambda L: L.tensor(2.0, dtype=L.float64, requires_grad=True), lambda L: L.ones(2, 3)):
        results = []
        for L in (fg, torch):
            x = L.ones(3, requires_grad=True)
            with pytest.warns(UserWarning):
                y = L.nn.functional.l1_loss(x, target(L))
            results.append((str(y.dtype).split(".")[-1], round(float(y), 6), _node_names(y.grad_fn)))
        assert results[0] == results[1]


@pytest.mark.parametrize("exponent", [0.5, -0.5, 2, 3.0, -1, -2.0, 0])
def test_in_place_pow_of_a_number_computes_as_x_to_it(exponent):
    values = [float("-inf"), -0.0, 4.0, float("inf"), float("nan"), -2.0]

    def run(x):
        y = x * 1
        y.pow_(exponent)
        return y
    want = repr(run(torch.tensor(values)).tolist())
    assert repr(run(fg.tensor(values)).tolist()) == want
    assert repr(fg.compile(run)(fg.tensor(values)).tolist()) == want


@pytest.mark.parametrize("shape,index", [((0, 0), [0, -1]), ((0, 3), [0]), ((3, 0), [5]), ((2, 0, 0), [0]),
                                         ((0, 2, 0), [0]), ((0, 0), [])])
def test_an_index_into_an_empty_dim_raises_as_torch(shape, index):
    assert_same(lambda L: L.zeros(shape)[index])
    expected = outcome(lambda: torch.zeros(shape)[index])
    assert outcome(lambda: fg.compile(lambda x: x[index])(fg.zeros(shape))) == expected

    def put(L):
        x = L.zeros(shape)
        x[index] = 1
        return x
    assert_same(put)


@pytest.mark.parametrize("mode", ["floor", "trunc"])
@pytest.mark.parametrize("written", ["self", "other", "neither"])
@pytest.mark.parametrize("needs", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("compiled", [False, True])
def test_rounding_division_saves_its_operands_as_torch(mode, written, needs, compiled):
    """DivBackward2's zero gradients come from formulas that read other (and self): torch's
    version check fires when a value they read was written in place."""
    def run(L, wrap):
        def f(a, b):
            a1, b1 = a * 1, b * 1
            y = L.div(a1, b1, rounding_mode=mode)
            if written == "self":
                a1.mul_(2)
            if written == "other":
                b1.mul_(2)
            return y
        a = L.tensor([1.5, -2.5], requires_grad=needs[0])
        b = L.tensor([0.7, 0.4], requires_grad=needs[1])
        try:
            wrap(f)(a, b).sum().backward()
        except RuntimeError as exc:
            return str(exc)
        return [None if t.grad is None else t.grad.tolist() for t in (a, b)]
    assert run(fg, fg.compile if compiled else (lambda f: f)) == run(torch, lambda f: f)


@pytest.mark.parametrize("shapes", [((), ()), ((2, 3), ()), ((), (3,))])
@pytest.mark.parametrize("compiled", [False, True])
def test_mv_of_a_0d_tensor_raises_as_torch(shapes, compiled):
    expected = outcome(lambda: torch.ones(shapes[0]).mv(torch.ones(shapes[1])))
    run = fg.compile(lambda a, b: a.mv(b)) if compiled else (lambda a, b: a.mv(b))
    assert outcome(lambda: run(fg.ones(shapes[0]), fg.ones(shapes[1]))) == expected


@pytest.mark.parametrize("shapes", [((3, 4), (1,)), ((3, 4), (4,)), ((3, 4), (2, 3, 4)), ((4,), (4,)), ((4,), (3,)),
                                    ((3, 4), (5, 4)), ((3, 4), (5, 3)), ((2, 3, 4), (4,)), ((3, 4), ()),
                                    ((2, 3, 4), (5, 4)), ((4,), (5, 4))])
@pytest.mark.parametrize("bias", [None, "float64", "float32"])
@pytest.mark.parametrize("weight_dtype", ["float64", "float32"])
def test_linear_checks_in_torchs_order(shapes, bias, weight_dtype):
    """torch takes weight.t() first, addmm (a bias) checks dtypes before shapes, mm and the
    matmul of a 1-d weight (mv, dot) shapes before dtypes."""
    def call(L):
        xs, ws = shapes
        b = None if bias is None else L.ones(ws[0] if len(ws) == 2 else 1, dtype=getattr(L, bias))
        return L.nn.functional.linear(L.ones(xs), L.ones(ws, dtype=getattr(L, weight_dtype)), b)
    assert_same(call)
