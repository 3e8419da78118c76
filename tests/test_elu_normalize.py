"""F.elu / nn.ELU and F.normalize against torch: values, gradients (first and second order),
in-place forms, node names, bad input, and compiled calls against eager ones."""
import numpy as np
import pytest

import fusegrad as fg
from gradcheck import check_grads

torch = pytest.importorskip("torch")

DATA = np.array([[-2.0, -0.5, 0.0, 1.5], [3.0, -1e-8, -30.0, 0.1], [-100.0, 88.0, -0.0, 1e-30]], np.float32)


@pytest.mark.parametrize("alpha", [1.0, 0.5, 2, True])
@pytest.mark.parametrize("inplace", [False, True])
def test_elu_as_torch(alpha, inplace):
    found = []
    for lib in (torch, fg):
        x = lib.tensor(DATA, requires_grad=True)
        y = lib.nn.functional.elu(x * 1, alpha, inplace)
        (y * lib.arange(12.0).reshape(3, 4)).sum().backward()
        found.append((y.tolist(), x.grad.tolist(), y.grad_fn.name()))
    assert found[0] == found[1]


@pytest.mark.parametrize("call", [
    lambda lib, F: F.elu(lib.ones(2), alpha="a"), lambda lib, F: F.elu("a"),
    lambda lib, F: F.elu(lib.tensor([True])), lambda lib, F: F.elu(lib.tensor([1, 2])),
    lambda lib, F: F.elu(lib.ones(2, requires_grad=True), inplace=True),
    lambda lib, F: F.normalize(lib.tensor([1, 2])), lambda lib, F: F.normalize(lib.ones(2), dim=2),
    lambda lib, F: F.normalize(lib.ones(2), p=0),
])
def test_bad_input_as_torch(call):
    with pytest.raises(Exception) as theirs:
        call(torch, torch.nn.functional)
    with pytest.raises(type(theirs.value)) as ours:
        call(fg, fg.nn.functional)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("p,dim", [(2.0, 1), (1, 0), (3.0, -1), (2.0, (0, 1))])
def test_normalize_as_torch(p, dim):
    data = DATA.copy()
    data[2] = 0.0                                   # a zero row: the eps clamp
    found = []
    for lib in (torch, fg):
        x = lib.tensor(data, requires_grad=True)
        y = lib.nn.functional.normalize(x, p=p, dim=dim)
        (y * lib.arange(12.0).reshape(3, 4)).sum().backward()
        found.append((np.asarray(y.tolist()), np.asarray(x.grad.tolist()), y.grad_fn.name(),
                      [type(n).__name__ for n, _ in y.grad_fn.next_functions]))
    np.testing.assert_allclose(found[1][0], found[0][0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(found[1][1], found[0][1], rtol=1e-5, atol=1e-6)
    assert found[1][2:] == found[0][2:]


def test_elu_module_second_derivatives_and_compiled():
    assert repr(fg.nn.ELU(alpha=0.5, inplace=True)) == repr(torch.nn.ELU(alpha=0.5, inplace=True)) \
        .replace("torch", "fg")
    check_grads(lambda x: fg.nn.functional.elu(x, 0.7), np.array([-1.5, -0.2, 0.3, 2.0]), order=2)

    def f(x):
        return (fg.nn.ELU()(x) * fg.nn.functional.normalize(x)).sum()

    x = fg.tensor(DATA / 10)
    value, grad = fg.compile(fg.value_and_grad(f))(x)
    want_value, want_grad = fg.value_and_grad(f)(x)
    np.testing.assert_allclose(value.item(), want_value.item(), rtol=1e-5)
    np.testing.assert_allclose(grad.numpy(), want_grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("inplace", [False, True])
def test_elu_double_backward_is_torchs_elu_backward_node(inplace):
    """elu's gradient is torch's elu_backward op: a create_graph gradient of the out-of-place
    form records EluBackwardBackward0, and second derivatives (to the input, and to a weight
    that scales the incoming gradient) match torch in float64, at 0, -0.0, NaN and -inf too,
    from the input and from the result of the in-place form."""
    xs = np.array([-3.0, -1.0, -0.0, 0.0, 0.5, 2.0, np.nan, -np.inf, -1e-300, 40.0])
    found = []
    for lib in (torch, fg):
        x = lib.tensor(xs, requires_grad=True)
        w = lib.tensor(np.cos(np.arange(10.0)), requires_grad=True)
        y = lib.nn.functional.elu(x * 1, 1.3, inplace)
        (g,) = lib.autograd.grad((y * w).sum(), x, create_graph=True)
        hx, hw = lib.autograd.grad((g * g).sum(), [x, w])
        found.append((y.grad_fn.name(), g.grad_fn.name(), g.detach().numpy(), hx.numpy(), hw.numpy()))
    theirs, ours = found
    assert ours[:2] == theirs[:2]
    for o, t in zip(ours[2:], theirs[2:]):
        np.testing.assert_array_equal(o, t)
    compiled = fg.compile(fg.grad(lambda v: (fg.grad(lambda u: fg.nn.functional.elu(u, 1.3).sum())(v) ** 2).sum()))
    eager = fg.grad(lambda v: (fg.grad(lambda u: fg.nn.functional.elu(u, 1.3).sum())(v) ** 2).sum())
    finite = fg.tensor(xs[np.isfinite(xs)])
    np.testing.assert_allclose(compiled(finite).numpy(), eager(finite).numpy(), rtol=1e-12, atol=0)
