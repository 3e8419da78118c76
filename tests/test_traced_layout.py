"""Memory layout inside and after fg.compile, against torch: an elementwise result of a
transposed (or otherwise strided) operand is laid out as torch's TensorIterator lays it out,
in the trace (stride(), is_contiguous(), whether view() may reshape it) and in the array
the call returns; contiguous() is row-major in both."""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle for strides")

CASES = {
    "t * 2": lambda L, x: x.t() * 2,
    "t.exp() + 1": lambda L, x: x.t().exp() + 1,
    "t + t": lambda L, x: x.t() + x.t(),
    "t + column": lambda L, x: x.t() + L.ones(3, 1),
    "row-major first operand": lambda L, x: L.ones(3, 2) + x.t(),
    "t.relu()": lambda L, x: x.t().relu(),
    "permuted 3-d": lambda L, x: x.reshape(2, 3, 1).expand(2, 3, 4).permute(2, 1, 0) * 1,
    "strided slice": lambda L, x: x[:, ::2] * 2,
    "where": lambda L, x: L.where(x.t() > 1, x.t(), 0.0),
    "cast": lambda L, x: x.t().double(),
    "clone keeps the layout": lambda L, x: (x.t() * 2).clone(),
    "contiguous": lambda L, x: (x.t() * 2).contiguous(),
    "contiguous of a view": lambda L, x: x.t().contiguous(),
    "transpose back": lambda L, x: (x.t() * 2).t(),
    "reshape copies": lambda L, x: (x.t() * 2).reshape(-1),
    "a reduction is row-major": lambda L, x: (x.t() * 2).sum(0, keepdim=True),
    "softmax": lambda L, x: x.t().softmax(1),
    # a permute sunk past the copy left these transposed after the call (API probe)
    "op on contiguous of a view": lambda L, x: x.t().contiguous().tanh(),
    "op on contiguous of a permute": lambda L, x: x.reshape(1, 2, 3).permute(2, 0, 1).contiguous() * 1,
    "op on an expanded transpose": lambda L, x: x[:1].expand(2, 3).t().exp(),
    "view of an op on contiguous": lambda L, x: x.t().contiguous().tanh().view(-1),
}


def _strides(strides: tuple, shape) -> tuple:
    """The strides of the dims that have more than one element (the others may have any)."""
    return tuple(s for s, n in zip(strides, shape) if n != 1)


@pytest.mark.parametrize("name", list(CASES))
def test_layout_matches_torch_inside_and_after_the_call(name):
    fn = CASES[name]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    theirs = fn(torch, torch.from_numpy(x.copy()))
    inside = fg.compile(lambda a: (fn(fg, a).stride(), fn(fg, a).is_contiguous()))(fg.tensor(x))
    ours = fg.compile(lambda a: fn(fg, a))(fg.tensor(x))
    assert _strides(inside[0], theirs.shape) == _strides(theirs.stride(), theirs.shape)
    assert inside[1] == theirs.is_contiguous()
    assert _strides(ours.stride(), theirs.shape) == _strides(theirs.stride(), theirs.shape)
    assert ours.is_contiguous() == theirs.is_contiguous()
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize("op", ["relu", "tanh", "mul2"])
def test_view_of_an_elementwise_result_of_a_transpose_raises_as_torch(op):
    fn = {"relu": lambda t: t.relu(), "tanh": lambda t: t.tanh(), "mul2": lambda t: t * 2}[op]
    with pytest.raises(RuntimeError) as theirs:
        fn(torch.ones(2, 3).t()).view(-1)
    with pytest.raises(RuntimeError) as ours:
        fg.compile(lambda x: fn(x.t()).view(-1))(fg.ones(2, 3))
    assert str(ours.value) == str(theirs.value)


def test_an_in_place_op_keeps_the_layout_and_gradients_flow():
    def f(x):
        y = x.t() * 2
        y.add_(1)
        return y, y.stride()

    x = fg.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    y, inside = fg.compile(f)(x)
    tx = torch.arange(6, dtype=torch.float32).reshape(2, 3).requires_grad_()
    ty = tx.t() * 2
    ty.add_(1)
    assert inside == ty.stride() and y.stride() == ty.stride()
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
