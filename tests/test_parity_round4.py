"""Fourth torch-parity probe: fg.compile against eager torch (values, gradients and
which inputs get one), formatting and pinned details, compared with torch at run time."""
import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch")

from parity_support import assert_same, same_error  # noqa: E402  (after the skip)


def compiled_grads(fn, *data):
    """fn(L, *leaves) run by torch eagerly and by fg.compile; backward of the sum of its
    first output: (torch's value, grads), (ours)."""
    results = []
    for L, wrap in ((torch, lambda f: f), (fg, fg.compile)):
        leaves = [L.tensor(d, requires_grad=True) for d in data]
        out = wrap(lambda *xs: fn(L, *xs))(*leaves)
        first = out[0] if isinstance(out, tuple) else out
        first.sum().backward()
        results.append((first, [x.grad for x in leaves]))
    return results


# -------------------------------------------- reductions of 0-d values, compiled
@pytest.mark.parametrize("fn", [
    lambda L, x: x.sum().sum(),
    lambda L, x: (x.sum() * 1.5).sin().sum(),
    lambda L, x: x.mean().mean() * x.sum(),
    lambda L, x: x.max().max() + x.min().min(),
    lambda L, x: x.sum().norm(),
    lambda L, x: x.sum().softmax(0) * x.sum(),
    lambda L, x: x.sum().log_softmax(-1) + x.sum().sum(0),
])
def test_compiled_reductions_of_0d_values(fn):
    (tv, tg), (ov, og) = compiled_grads(fn, [[1.0, 2.0], [3.0, -4.0]])
    assert_same(ov, tv)
    assert_same(og[0], tg[0])


# ------------------------------- detach()/.data aliases of a compiled call's inputs
@pytest.mark.parametrize("fn", [
    lambda L, a, b: (a.detach() * b, a * 2),
    lambda L, a, b: (a * 2, a.detach() * b),
    lambda L, a, b: a.detach() * b + a.data * a,
    lambda L, a, b: (a.data * b).sum() + a.sum(),
])
def test_compiled_detach_alias_carries_no_gradient(fn):
    (tv, tg), (ov, og) = compiled_grads(fn, [1.0, -2.0], [3.0, 4.0])
    assert_same(ov, tv)
    # Gradient values of a detached alias never flow into the input.
    for o, t in zip(og, tg):
        if t is not None:
            assert_same(o, t)


def test_compiled_detached_input_passed_beside_its_source():
    for L, wrap in ((torch, lambda f: f), (fg, fg.compile)):
        a = L.tensor([1.0, -2.0], requires_grad=True)
        wrap(lambda x, y: (x * y).sum())(a.detach(), a).backward()
        assert a.grad.tolist() == [1.0, -2.0]


@pytest.mark.parametrize("fn", [
    lambda L, a, b: L.where(a > 0, 1.0, b),
    lambda L, a, b: a.detach() * b,
    lambda L, a, b: (a > 0).float() * b,
])
def test_compiled_input_no_gradient_reaches_keeps_grad_none(fn):
    (tv, tg), (ov, og) = compiled_grads(fn, [1.0, -2.0], [3.0, 4.0])
    assert_same(ov, tv)
    for o, t in zip(og, tg):
        assert_same(o, t)


# ----------------------------------------------------------------- size(dim)
@pytest.mark.parametrize("shape,dim", [((), 0), ((), -1), ((), 1), ((2, 3), "a"), ((2, 3), 1.0), ((2, 3), True),
                                       ((), 1.0), ((2, 3), 2), ((2, 3), -3)])
def test_size_of_bad_dim(shape, dim):
    same_error(lambda L: L.ones(shape).size(dim))


def test_size_of_numpy_int_dim():
    assert fg.ones(2, 3).size(np.int64(-1)) == torch.ones(2, 3).size(np.int64(-1))


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "randn", "rand"])
def test_creation_without_size(name):
    same_error(lambda L: getattr(L, name)())
    same_error(lambda L: getattr(L, name)(dtype=L.float64))
    for L in (torch, fg):
        assert tuple(getattr(L, name)(()).shape) == ()


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "randn_like", "rand_like"])
def test_like_of_0d(name):
    for L in (torch, fg):
        t = getattr(L, name)(L.tensor(2.5), requires_grad=True)
        assert tuple(t.shape) == () and t.requires_grad


# ------------------------- a compiled call's saved tensors: freed, modified in place
MODIFIED = "one of the variables needed for gradient computation has been modified by an inplace operation"


@pytest.mark.parametrize("wrap", [lambda f: f, fg.compile], ids=["eager", "compiled"])
def test_second_backward_through_compiled_call(wrap):
    for L, w in ((torch, lambda f: f), (fg, wrap)):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = w(lambda x: (x.exp() * 2).sum())(x)
        y.backward()
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
            y.backward()
        y = w(lambda x: (x.exp() * 2).sum())(x)
        y.backward(retain_graph=True)
        y.backward()
        z = w(lambda x: (x + 1).sum())(x)       # nothing saved: a second backward is allowed
        z.backward()
        z.backward()
        assert x.grad.tolist() == pytest.approx((6 * np.exp([1.0, 2.0]) + 2).tolist(), rel=1e-5)


@pytest.mark.parametrize("wrap", [lambda f: f, fg.compile], ids=["eager", "compiled"])
def test_saved_output_of_compiled_call_modified_in_place(wrap):
    for L, w in ((torch, lambda f: f), (fg, wrap)):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = w(lambda x: x.exp())(x)
        y.add_(1)
        with pytest.raises(RuntimeError, match=MODIFIED):
            y.sum().backward()


def test_saved_input_of_compiled_call_modified_in_place():
    texts = []
    for L, w in ((torch, lambda f: f), (fg, fg.compile)):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        a = x * 1
        y = w(lambda a: (a * a).sum())(a)
        a.add_(1)
        with pytest.raises(RuntimeError, match=MODIFIED) as err:
            y.backward()
        texts.append(str(err.value))
    assert texts[0] == texts[1]


def test_retain_grad_inside_compiled_function():
    results = []
    for L, w in ((torch, lambda f: f), (fg, fg.compile)):
        x = L.tensor([1.0, 2.0], requires_grad=True)

        def f(x):
            y = x * 3
            y.retain_grad()
            z = (y * y).sum()
            z.backward(retain_graph=True)
            z.backward()
            return y, y.grad * 1
        y, inner = w(f)(x)
        results.append((inner.tolist(), y.grad.tolist(), y.retains_grad, y.is_leaf, x.grad.tolist()))
    assert results[0] == results[1]


@pytest.mark.parametrize("fn", [
    lambda x: (x * 2).requires_grad_(False),
    lambda x: setattr(x * 2, "requires_grad", True),
    lambda x: setattr(x * 2, "requires_grad", False),
])
@pytest.mark.parametrize("wrap", [lambda f: f, fg.compile], ids=["eager", "compiled"])
def test_requires_grad_of_non_leaf_inside_compiled_function(fn, wrap):
    same_error(lambda L: (wrap if L is fg else (lambda f: f))(fn)(L.tensor([1.0, 2.0], requires_grad=True)))


def test_leaf_made_inside_a_compiled_call_gets_its_grad():
    """y = x.clone().requires_grad_() inside fg.compile is a leaf, as eagerly: a backward()
    there fills y.grad, and y still requires grad after the call."""
    def make(lib):
        def fn(x):
            y = x.clone().requires_grad_()
            (y * y * y).sum().backward()
            return y
        return fn
    expected = make(torch)(torch.tensor([1.0, -2.0]))
    got = fg.compile(make(fg))(fg.tensor([1.0, -2.0]))
    assert got.is_leaf and got.requires_grad and got.grad_fn is None
    np.testing.assert_allclose(got.grad.numpy(), expected.grad.numpy())
    assert expected.is_leaf and expected.requires_grad
