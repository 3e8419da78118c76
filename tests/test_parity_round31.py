"""Round 31 of torch parity (probes L and M): an arithmetic operator with a NumPy array
operand has NumPy's result dtype, as torch's does (its operator declines the array and
NumPy computes the result, which Tensor.__array_wrap__ wraps)."""
import numpy as np
import pytest

import fusegrad as fg
from parity_support import exact_outcome

torch = pytest.importorskip("torch", reason="torch is the oracle")

ARRAY_OPERANDS = [
    "f + np.array([2.0, 3.0])", "f + np.array([2, 3])", "i + np.array([2.0, 3.0], np.float32)",
    "i / np.array([2, 3])", "f / np.array(2)", "i // np.array([2, 3])", "i % np.array([2.0, 3.0])",
    "f ** np.array([2, 3])", "i ** np.array([2, 3])", "f @ np.array([2.0, 3.0])",
    "f - np.array([2, 3], np.int32)", "f * np.array([2, 3], np.float16)", "i * np.array([2, 3], np.uint8)",
    "i - np.array([True, False])", "f + np.array(2.0)", "f * np.array(2.0, np.float32)",
    "f - np.array(2)", "f + np.float64(2.0)",
]


def _run(L, code):
    f = L.tensor([1.5, -2.0])
    i = L.tensor([3, 4])
    return eval(code, {"np": np, "f": f, "i": i})


@pytest.mark.filterwarnings("ignore::DeprecationWarning")      # (torch's __array_wrap__ under NumPy 2)
@pytest.mark.parametrize("code", ARRAY_OPERANDS)
def test_an_array_operand_promotes_as_numpy_does(code):
    assert exact_outcome(lambda: _run(fg, code)) == exact_outcome(lambda: _run(torch, code))


def test_an_array_operand_of_a_tensor_that_requires_grad_still_differentiates():
    """torch refuses (NumPy calls numpy() on it); fusegrad takes arrays wherever tensors go,
    so the promoted result keeps its history (API.md)."""
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = x * np.array([3, 4])
    assert y.dtype is fg.float64
    y.sum().backward()
    assert x.grad.dtype is fg.float32 and x.grad.tolist() == [3.0, 4.0]


def _elu_second_derivative(L, alpha, in_place, compiled=False):
    def second(x):
        y = x * 1
        y = L.nn.functional.elu(y, alpha, inplace=in_place)
        g1, = L.autograd.grad(y.sum(), x, create_graph=True)
        g2, = L.autograd.grad(g1.sum(), x)
        return g2
    x = L.tensor([-1.0, -0.0, 0.0, 1.0, float("nan")], requires_grad=True)
    return fg.compile(second)(x) if compiled else second(x)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("in_place", [False, True], ids=["elu", "elu_"])
@pytest.mark.parametrize("alpha", [1.0, 2.0])
def test_elu_second_derivative_at_zero_is_zero_as_torch(alpha, in_place, compiled):
    """torch's elu_double_backward masks with x < 0 (the first derivative with x <= 0): at 0
    the second derivative is 0, not alpha."""
    got = exact_outcome(lambda: _elu_second_derivative(fg, alpha, in_place, compiled))
    assert got == exact_outcome(lambda: _elu_second_derivative(torch, alpha, in_place))


def test_nested_grad_of_elu_at_zero():
    elu = fg.nn.functional.elu
    assert fg.grad(fg.grad(lambda t: elu(t)))(0.0).item() == 0.0
    assert fg.grad(fg.grad(lambda t: elu(t)))(-1.0).item() == pytest.approx(np.exp(-1.0))


def test_data_assigned_a_value_of_another_shape_inside_compile():
    """`w.data = <computed in the call>` of another shape or dtype: w gets the value, as eagerly
    (before, w was left without a value, or its dtype change was dropped)."""
    w = fg.tensor([1.0, 2.0])
    v = fg.tensor([1.0, 2.0])

    @fg.compile
    def grow(x):
        w.data = fg.cat([w.detach(), w.detach()])
        v.data = v.detach().double()
        return x * v

    out = grow(fg.ones(2))
    assert w.tolist() == [1.0, 2.0, 1.0, 2.0] and tuple(w.shape) == (4,)
    assert v.dtype is fg.float64 and out.dtype is fg.float64 and out.tolist() == [1.0, 2.0]
    assert (w + 1).tolist() == [2.0, 3.0, 2.0, 3.0]


def _double_inside(L, compiled):
    layer = L.nn.Linear(2, 1)
    with L.no_grad():
        layer.weight.copy_(L.tensor([[0.5, -1.0]]))
        layer.bias.fill_(0.25)

    def step(x):
        layer.double()
        loss = layer(x).sum()
        loss.backward()
        return loss
    run = fg.compile(step) if compiled else step
    x = L.ones(3, 2, dtype=L.float64)
    found = []
    for _ in range(2):
        loss = run(x)
        found.append((loss.item(), str(layer.weight.dtype).split(".")[-1], layer.weight.is_leaf,
                      layer.weight.grad.tolist(), str(layer.bias.grad.dtype).split(".")[-1]))
    return found


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_module_double_inside_a_training_step(compiled):
    """Module.double() in a compiled step (`p.data = p.double()` of leaves that require grad):
    they stay leaves, of the new dtype, and the step's backward accumulates into them."""
    assert _double_inside(fg, compiled) == _double_inside(torch, False)


NORMS_OF_EMPTY = [
    "L.zeros(0).norm(float('inf'), dim=0)", "L.zeros(0).norm(float('inf'), dim=-1)", "L.zeros(0).norm(float('inf'))",
    "L.zeros(2, 0).norm(float('-inf'), dim=1)", "L.zeros(2, 0).norm(float('inf'), dim=(0, 1))",
    "L.zeros(2, 0).norm(-1, dim=[-1, 0])", "L.zeros(2, 0).norm(float('inf'), dim=0)",
]


@pytest.mark.parametrize("code", NORMS_OF_EMPTY)
def test_norm_without_identity_over_an_empty_dim_names_it_as_given(code):
    assert exact_outcome(lambda: eval(code, {"L": fg})) == exact_outcome(lambda: eval(code, {"L": torch}))


@pytest.mark.parametrize("args", [(-0.0, -17.0, 3), (-0.0, -0.0, 2), (0.0, -0.0, 3), (-0.0, 5.0, 4), (-1.0, 1.0, 11)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_linspace_keeps_the_sign_of_a_zero_as_torch(args, dtype):
    """torch's kernel computes each value with one fused multiply-add: -0. * 0. + -0. is -0."""
    got = exact_outcome(lambda: fg.linspace(*args, dtype=getattr(fg, dtype)))
    assert got == exact_outcome(lambda: torch.linspace(*args, dtype=getattr(torch, dtype)))


SETITEM_ON_EMPTY = [
    "L.zeros(0, 3).__setitem__([1, 0], L.tensor([1.0, 2.0]))",
    "L.zeros(2, 0).__setitem__((slice(None), [1, 0]), L.tensor([1.0, 2.0, 3.0]))",
    "L.zeros(0, 3).__setitem__([1, 0], 1.0)",
    "L.zeros(0, 3).__setitem__(L.tensor([], dtype=L.int64), L.tensor([1.0, 2.0]))",
    "L.zeros(2, 3).__setitem__([5, 0], L.tensor([1.0, 2.0]))",
]


@pytest.mark.parametrize("code", SETITEM_ON_EMPTY)
def test_setitem_checks_an_index_into_an_empty_dim_first(code):
    """torch's IndexError for a non-empty index into a dim of size 0 comes before the value's
    shape check."""
    assert exact_outcome(lambda: eval(code, {"L": fg})) == exact_outcome(lambda: eval(code, {"L": torch}))


RANDINT_LIKE = [
    "L.randint_like(x, 10)", "L.randint_like(x, 3, 10, dtype=L.int64)", "L.randint_like(x.t(), 5)",
    "L.randint_like(x, 4, requires_grad=True)", "L.randint_like(x, 2.5)", "L.randint_like(x)",
    "L.randint_like(x, 1, 2, 3)", "L.randint_like(x, 5, 2)", "L.randint_like(L.zeros(2, dtype=L.int64), 7)",
    "L.randint_like(L.zeros(2, dtype=L.int64), 5, requires_grad=True)", "L.randint_like(x, 0, 2, dtype=L.bool)",
    "L.randint_like(x, L.tensor(6))", "L.randint_like(x, x)", "L.randint_like(x, 1, None)",
]


@pytest.mark.parametrize("code", RANDINT_LIKE)
def test_randint_like_draws_and_checks_as_torch(code):
    """The *_like form of randint: input's shape, dtype (floats for a float input) and layout,
    the same samples after the same seed, torch's parser texts."""
    def run(L):
        L.manual_seed(3)
        try:
            value = eval(code, {"L": L, "x": L.zeros(2, 3)})
        except Exception as exc:        # noqa: BLE001 - the error is the outcome compared
            return ("error", type(exc).__name__, str(exc))
        return str(value.dtype).split(".")[-1], value.tolist(), tuple(value.stride()), value.requires_grad
    assert run(fg) == run(torch)
