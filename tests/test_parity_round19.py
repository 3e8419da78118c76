"""Round 19 of torch parity: what this session's probes found (each test names the behaviour
and checks it against torch 2.13)."""
import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch")
from parity_support import outcome  # noqa: E402  (after the skip)


def _masked_fill_of_transposes(x):
    y = x.t().masked_fill(x.t() > 2, 0.0)
    z = (x * 1).t()
    z.masked_fill_(z > 3, -1.0)          # in place: the view keeps its layout
    return y, y.view(-1), z, (y * 2).sum()


@pytest.mark.parametrize("compiled", [False, True])
def test_masked_fill_result_is_row_major_as_torchs(compiled):
    """torch's out-of-place masked_fill fills a row-major clone, whatever its input's layout,
    so view(-1) of it works (fusegrad kept the transposed layout, and view raised)."""
    found = []
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    for lib in (torch, fg):
        x = lib.tensor(a, requires_grad=True)
        fn = fg.compile(_masked_fill_of_transposes) if lib is fg and compiled else _masked_fill_of_transposes
        y, flat, z, total = fn(x)
        total.backward()
        found.append((y.stride(), y.is_contiguous(), flat.tolist(), z.stride(), z.tolist(), x.grad.tolist()))
    assert found[0] == found[1]


def _raised(call):
    """The exception's class and text, or "ok" (the result itself is not compared)."""
    return outcome(lambda: [call(), "ok"][1])


@pytest.mark.parametrize("text", ["float64", "cpu:x", "cuda:0:1", "foo", "CPU", " cpu", "cpu ", "cpu:01", "cpu:-1",
                                  "cpu:", "_x", "a1", "cpu", "cpu:0", "meta"])
def test_device_strings_parse_as_torchs(text):
    """torch's parser takes a type name and an optional ':index' (no leading zero): anything
    else is an invalid device string, an unknown type name its own error."""
    assert _raised(lambda: fg.device(text)) == _raised(lambda: torch.device(text))
    if text not in ("cpu", "cpu:0", "meta"):
        assert _raised(lambda: fg.ones(2).to(text)) == _raised(lambda: torch.ones(2).to(text))


@pytest.mark.parametrize("index", [0, 1])
def test_to_a_bare_device_index_names_an_accelerator(index):
    assert _raised(lambda: fg.ones(2).to(index)) == _raised(lambda: torch.ones(2).to(index))


_PRODUCTS = {
    "linear": lambda lib, a, w: lib.nn.functional.linear(a, w.t()),
    "linear of a column-major weight": lambda lib, a, w: lib.nn.functional.linear(a, w.t().contiguous().t().t()),
    "a @ w": lambda lib, a, w: a @ w,
    "a @ column-major w": lambda lib, a, w: a @ w.t().contiguous().t(),
    "column-major a @ w": lambda lib, a, w: lib.matmul(a.t().contiguous().t(), w),
    "both column-major": lambda lib, a, w: lib.mm(a.t().contiguous().t(), w.t().contiguous().t()),
    "batch @ column-major w": lambda lib, a, w: (a.unsqueeze(0) * lib.ones(2, 1, 1)) @ w.t().contiguous().t(),
}


@pytest.mark.parametrize("product", sorted(_PRODUCTS))
def test_gradients_of_2d_products_take_torchs_layout(product):
    """torch computes the gradient of a column-major operand of mm/addmm (linear's weight.t())
    as a transposed product, so it is column-major too and the weight's own gradient is
    row-major: autograd.grad's gradients of a Linear weight are contiguous (view(-1) works)."""
    rng = np.random.default_rng(0)
    a_values, w_values = rng.standard_normal((4, 3)), rng.standard_normal((3, 5))
    found = []
    for lib in (torch, fg):
        a = lib.tensor(a_values, requires_grad=True)
        w = lib.tensor(w_values, requires_grad=True)
        out = _PRODUCTS[product](lib, a, w)
        grads = lib.autograd.grad((out * out).sum(), [a, w])
        found.append([(g.stride(), g.is_contiguous(), g.detach().numpy()) for g in grads])
    for (t_stride, t_contiguous, t_value), (f_stride, f_contiguous, f_value) in zip(*found):
        assert (f_stride, f_contiguous) == (t_stride, t_contiguous)
        np.testing.assert_allclose(f_value, t_value, rtol=1e-12)


def test_linear_weight_gradients_flatten_with_view_as_torchs():
    found = []
    for lib in (torch, fg):
        lib.manual_seed(0)
        layer, x = lib.nn.Linear(3, 2), lib.ones(4, 3)
        grads = lib.autograd.grad(layer(x).sum(), list(layer.parameters()))
        transform = torch.func.grad if lib is torch else fg.grad
        weight_grad = transform(lambda w: lib.nn.functional.linear(x, w).sum())(layer.weight.detach())
        seen = []
        layer.weight.register_hook(lambda g: seen.append(g.stride()))
        layer(x).sum().backward()
        found.append((lib.cat([g.view(-1) for g in grads]).tolist(), weight_grad.stride(), seen,
                      layer.weight.grad.stride()))
    assert found[0] == found[1]


@pytest.mark.parametrize("expression", ["x + 2**63", "x * 2**63", "x - (-2**63 - 1)", "x.add_(2**63)", "x // 2**63",
                                        "x % 2**63", "x + (2**64 - 1)", "x + 2**64", "x ** 2**63", "x.pow_(2**63)",
                                        "x ** (2**63 - 1)", "f + 2**63", "x.sub(2**63)", "x.mul_(2**63)"])
def test_python_ints_up_to_2_64_wrap_into_int64_as_torchs(expression):
    """torch unpacks a Python int below 2**64 as uint64 and keeps its bits in an int64
    operand (2**63 is -2**63); from 2**64 on it raises, as does an int power that large."""
    def run(lib):
        result = eval(expression, {"x": lib.tensor([1, 2]), "f": lib.tensor([1.0, 2.0])})
        return str(result.dtype).split(".")[-1], result.tolist()
    assert outcome(lambda: run(torch)) == outcome(lambda: run(fg))


_OUTPUT_PAIRS = ["x.clone(), x.clone()", "x * 2, x * 2", "x @ x, x @ x", "x.sum(0), x.sum(0)", "x * 2, (x * 2)[0]",
                 "x * 2, (x * 2).pow(1)", "x * 2, (x * 2).detach()", "x.exp(), x.exp()"]


@pytest.mark.parametrize("body", _OUTPUT_PAIRS)
def test_compiled_outputs_of_equal_values_have_their_own_memory(body):
    """The passes merge equal values (and drop x ** 1), but each tensor a compiled call
    returns is its own memory, as eagerly: an in-place write to one after the call leaves
    the other as it was (it changed both, and a gradient through the other was wrong)."""
    fn = eval("lambda x: (" + body + ")")
    results = []
    for compiled in (False, True):
        x = fg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        a, b = (fg.compile(fn) if compiled else fn)(x)
        with fg.no_grad():
            b.mul_(10)
        a.sum().backward()
        results.append([a.detach().numpy(), b.detach().numpy(), x.grad.numpy()])
    for eager, compiled in zip(*results):
        np.testing.assert_allclose(compiled, eager, rtol=1e-6)


def test_compiled_identity_power_returns_a_new_tensor():
    x = fg.tensor([1.0, 2.0, 3.0])
    y = fg.compile(lambda t: t ** 1)(x)
    y.mul_(10)
    assert x.tolist() == [1.0, 2.0, 3.0] and y.tolist() == [10.0, 20.0, 30.0]


def _eager_and_compiled(fn, make):
    """fn's outcome (values, or exception class and text) in torch, fusegrad eagerly and compiled."""
    def run(lib, compiled):
        result = (fg.compile(fn) if compiled else fn)(lib, *make(lib))
        return [(tuple(r.shape), str(r.dtype).split(".")[-1], r.detach().tolist()) for r in result]
    return [outcome(lambda: run(lib, compiled)) for lib, compiled in ((torch, False), (fg, False), (fg, True))]


@pytest.mark.parametrize("call", ["x.all(())", "x.any(dim=[])", "(x > 1).all(dim=(), keepdim=True)",
                                  "lib.any(x, dim=())", "x.all((0,))", "x.bool().all(())"])
def test_all_and_any_over_no_dims_reduce_nothing(call):
    """torch's all/any with dim=() reduce no dim (a new bool tensor of x's shape); sum and mean
    with dim=() reduce every dim."""
    found = _eager_and_compiled(lambda lib, x: (eval(call, {"lib": lib, "x": x}),),
                                lambda lib: (lib.tensor([[0.0, 1.0, 2.0], [3.0, float("nan"), 5.0]]),))
    assert found[0] == found[1] == found[2]


def test_elu_gradient_at_nan_passes_the_gradient_through():
    def fn(lib, x):
        y = lib.nn.functional.elu(x, alpha=0.7)
        (grad,) = lib.autograd.grad((y * 1.5).sum(), [x])
        return y, grad
    found = _eager_and_compiled(fn, lambda lib: (lib.tensor([float("nan"), 1.0, -2.0], requires_grad=True),))
    for eager in found[1:]:
        np.testing.assert_allclose(np.array(eager[1][2]), np.array(found[0][1][2]), rtol=1e-6)
        assert np.isnan(eager[0][2][0]) and np.isnan(found[0][0][2][0])


@pytest.mark.parametrize("shape", [(0,), (2, 0), (0, 3)])
def test_logsumexp_over_no_dims_of_an_empty_tensor_is_minus_infinity(shape):
    found = _eager_and_compiled(lambda lib, x: (x.logsumexp(()),), lambda lib: (lib.zeros(*shape),))
    assert found[0] == found[1] == found[2]


def test_a_fill_through_an_empty_expand_in_a_compiled_call():
    def fn(lib, x):
        v = x.broadcast_to((2, 0))
        w = v.tanh().sum()
        with lib.no_grad():
            v[0].zero_()
        return (v + w,)
    found = _eager_and_compiled(fn, lambda lib: (lib.zeros(2, 0),))
    assert found[0] == found[1] == found[2]


@pytest.mark.parametrize("make", ["(x.detach() * 1).requires_grad_()", "x.detach().requires_grad_()"])
def test_retain_grad_of_a_leaf_made_in_a_compiled_call_is_a_no_op(make):
    """retain_grad() on a leaf does nothing (torch); in a compiled call a leaf made there from
    a computed value was kept as a retained non-leaf too, and its .grad counted twice."""
    def fn(lib, x):
        v = eval(make)
        v.retain_grad()
        (v * 1.0).sum().backward()
        w = (x.detach() * 1).requires_grad_()
        w.retain_grad()
        lib.autograd.grad((w * w).sum(), [w])
        return v.grad, (w.grad is None) * lib.ones(1)
    found = _eager_and_compiled(fn, lambda lib: (lib.ones(2, 2, requires_grad=True),))
    assert found[0] == found[1] == found[2]


@pytest.mark.parametrize("call", ["x.split([1, 1], -1)", "x.split([1, 1], 1)", "x.select(-1, 5)", "x.select(1, -5)",
                                  "x.__setitem__(lib.tensor([0, 1]), lib.ones(1, 3, 4))",
                                  "x.__setitem__(lib.tensor([0, 1]), lib.ones(1, 2, 1, 3))",
                                  "x.__setitem__(x > 0, lib.ones(1, 5))"])
def test_error_texts_name_dims_and_value_shapes_as_torchs(call):
    """split_with_sizes names the dim as given, select() normalised; an index_put's value
    shape is printed without its leading 1s."""
    found = _eager_and_compiled(lambda lib, x: (eval(call, {"lib": lib, "x": x}),),
                                lambda lib: (lib.arange(12.0).reshape(3, 4),))
    assert found[0] == found[1] == found[2] and isinstance(found[0], tuple)
