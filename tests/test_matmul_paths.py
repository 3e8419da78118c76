"""A matmul of a batch records torch's nodes: torch's matmul folds a batch into a 2-d product
(mm or mv), through a transpose when the matrix is the left operand, or expands both batches
and calls bmm; each path leaves its own chain of views, copies and products in the graph
(tracer/functional.py, matmul). The chain decides `grad_fn.next_functions` and which saved
tensor a version error names, and whether a write after the product breaks its backward at all
(a copy made on the way is not written). torch is the oracle; without it these tests skip."""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle for matmul's graph and errors")

SHAPES = [((2, 3, 4), (2, 4, 5)), ((2, 2, 3, 4), (2, 2, 4, 5)), ((4,), (2, 4, 5)), ((3, 4), (2, 4, 5)),
          ((2, 3, 4), (4,)), ((2, 3, 4), (4, 5)), ((1, 3, 4), (2, 4, 5)), ((2, 3, 4), (1, 4, 5)),
          ((2, 1, 3, 4), (3, 4, 5)), ((4,), (2, 2, 4, 5)), ((3, 4), (2, 2, 4, 5)), ((2, 1, 4), (2, 4, 1)),
          ((1, 3, 4), (1, 4, 5)), ((2, 0, 4), (2, 4, 5)), ((5, 2, 3, 4), (2, 4, 1)), ((1, 4), (3, 4, 2))]
NEEDS_GRAD = [(True, True), (True, False), (False, True)]


def chain(node) -> str:
    """The graph below `node` as nested class names: AddBackward0(AccumulateGrad, None)."""
    if node is None:
        return "None"
    below = [chain(n) for n, _ in node.next_functions]
    return type(node).__name__ + (f"({', '.join(below)})" if below else "")


def product(lib, sa, sb, needs, transposed):
    rng = np.random.default_rng(0)
    a = lib.tensor(rng.standard_normal(sa).astype(np.float32), requires_grad=needs[0])
    b = lib.tensor(rng.standard_normal(sb).astype(np.float32), requires_grad=needs[1])
    # (a transposed twice: the same values through two views, as a strided operand)
    x = a.transpose(-2, -1).transpose(-2, -1) if transposed and a.dim() >= 2 else a
    y = x @ b
    node = chain(y.grad_fn)
    if y.numel():
        y.sum().backward()
    return node, y.detach().numpy(), y.stride(), [None if t.grad is None else t.grad.numpy() for t in (a, b)]


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("needs", NEEDS_GRAD, ids=str)
@pytest.mark.parametrize("sa,sb", SHAPES, ids=str)
def test_graph_values_strides_and_gradients_match_torch(sa, sb, needs, transposed):
    node, value, strides, grads = product(fg, sa, sb, needs, transposed)
    want_node, want_value, want_strides, want_grads = product(torch, sa, sb, needs, transposed)
    assert node == want_node
    assert value.shape == want_value.shape and strides == want_strides
    np.testing.assert_allclose(value, want_value, rtol=1e-5, atol=1e-6)
    for got, want in zip(grads, want_grads):
        assert (got is None) == (want is None)
        if want is not None:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def write_after_product(lib, compile_fn, sa, sb, written):
    """A product of two non-leaves, then one of them written in place, then backward: torch's
    outcome ('ok') or its exception's class and text."""
    a = lib.randn(*sa, requires_grad=True)
    b = lib.randn(*sb, requires_grad=True)

    def f(a, b):
        x, z = a * 1, b * 1
        y = x @ z
        (x if written == 0 else z).add_(1)
        y.sum().backward()
        return y
    try:
        compile_fn(f)(a, b)
        return "ok"
    except RuntimeError as e:
        return f"{type(e).__name__}: {str(e).split('Hint')[0]}"


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("written", [0, 1])
@pytest.mark.parametrize("sa,sb", [((2, 3, 4), (2, 4, 5)), ((1, 3, 4), (2, 4, 5)), ((2, 3, 4), (1, 4, 5)),
                                   ((3, 4), (2, 4, 5)), ((4,), (2, 4, 5)), ((2, 1, 3, 4), (3, 4, 5))], ids=str)
def test_a_write_after_a_batched_product_breaks_its_backward_as_in_torch(sa, sb, written, compiled):
    # e.g. 3-d @ 3-d saves the operands' views (output 0 of ViewBackward0); 2-d @ 3-d saves a
    # copy of b's transpose, so writing b breaks nothing
    want = write_after_product(torch, lambda f: f, sa, sb, written)
    got = write_after_product(fg, fg.compile if compiled else (lambda f: f), sa, sb, written)
    assert got == want


@pytest.mark.parametrize("make", [
    lambda L: L.zeros(2, 0, 5), lambda L: L.randn(0, 3), lambda L: L.tensor([[], []]),
    lambda L: L.zeros(2, 0, 5).transpose(0, 2), lambda L: L.zeros(4, 5)[:, 2:2],
    lambda L: L.zeros(6, 0).reshape(2, 3, 0, 1), lambda L: L.zeros(0, 3) @ L.zeros(3, 4),
    lambda L: L.zeros(2, 0, 5) + 1, lambda L: L.zeros(2, 0, 5).transpose(0, 2).contiguous(),
])
def test_strides_of_an_empty_tensor_are_torchs(make):
    # NumPy gives an empty array zero strides; torch the contiguous ones (or its view's)
    assert make(fg).stride() == make(torch).stride()
