"""Eager work over transposed tensors runs in their memory order.

An eager backward over a transposed argument (`chain(x.t())`, generality.py's strided-t-chain)
took 350 ms where the same function of a row-major argument took 38: the backward's `g * y` of
an expanded g and a transposed y ran row-major (threaded.memory_order stopped at the expand),
its tanh'(y) wrote into a row-major pooled buffer (one element a page of y), and mixed layouts
then met in the gradients' sums, which copied them into torch's layout with one np.copyto (29
ms for 4M elements transposed). Each step now follows the operands' memory, as torch's
TensorIterator does, and a transposing copy goes in tiles (ir/blocked_copy.py)."""
import numpy as np
import pytest

import fusegrad as fg
from fusegrad.ir import threaded
from fusegrad.ir.interpreter import StraightLine
from fusegrad.ir.program import Builder
from fusegrad.ir.types import TensorType, float32
from fusegrad.ir.blocked_copy import blocked_copyto
from fusegrad.tracer.layout import copy_in_order, row_major

torch = pytest.importorskip("torch", reason="torch is the oracle")

N = 512                  # (large enough for the pooled and threaded paths: 512 * 520 elements)


def _array(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_an_expand_leaves_the_memory_order_to_the_next_operand():
    y = _array((N + 8, N), 0).T
    g = np.broadcast_to(np.float32(1.5), y.shape)
    assert threaded.memory_order(y.shape, [g, y]) == [1, 0]
    assert threaded.memory_order(y.shape, [g, np.ascontiguousarray(y)]) is None
    out = threaded.call(np.multiply, [g, y], TensorType(y.shape, float32), None, None)
    assert out.strides == y.strides
    np.testing.assert_array_equal(out, g * y)


def test_a_threaded_call_into_a_transposed_array_writes_it_in_its_order():
    a, b = _array((N + 8, N), 1).T, _array((N + 8, N), 2).T
    out = np.empty((N + 8, N), np.float32).T
    result = threaded.call(np.add, [a, b], TensorType(a.shape, float32), None, None, out=out)
    assert result.base is out.base or result.base is out
    np.testing.assert_array_equal(out, a + b)


def test_a_pooled_elementwise_step_writes_in_its_operands_memory_order():
    """tanh's derivative (an op with its own into-writer) over a transposed y: the result is
    laid out as y, with the values of the row-major computation."""
    shape = (N, N + 8)
    b = Builder()
    g, y = b.input(TensorType(shape, float32)), b.input(TensorType(shape, float32))
    b.program.outputs.append(b.emit("tanh_backward", g, y))
    line = StraightLine(b.program)
    gs, ys = _array(shape[::-1], 3).T, np.tanh(_array(shape[::-1], 4)).T
    (result,) = line([gs, ys])
    assert result.strides == ys.strides
    (expected,) = line([np.ascontiguousarray(gs), np.ascontiguousarray(ys)])
    assert expected.flags.c_contiguous
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("shape,order", [
    ((300, 200), [1, 0]),
    ((64, 40, 30), [2, 0, 1]),
    ((64, 40, 30), [1, 2, 0]),
    ((3, 200, 1, 150), [3, 1, 2, 0]),
    ((20000, 3), [1, 0]),
])
def test_blocked_copyto_equals_one_copy(shape, order):
    source = _array([shape[d] for d in order], 5).transpose(np.argsort(order))
    assert source.shape == shape
    out = np.empty(shape, np.float32)
    blocked_copyto(out, source)
    np.testing.assert_array_equal(out, source)
    laid = copy_in_order(source[::-1], list(range(len(shape))))
    assert laid.flags.c_contiguous
    np.testing.assert_array_equal(laid, source[::-1])
    np.testing.assert_array_equal(row_major(source), source)
    assert row_major(out) is out


def _gradients(L):
    """Gradients whose contributions are laid out as transposes: leaves' .grad, a retained
    non-leaf's, and what a hook sees."""
    x = L.from_numpy(_array((N, N + 8), 6)).requires_grad_()
    w = L.from_numpy(_array((N + 8, N), 7))
    xf = L.from_numpy(_array((N + 8, N), 8)).t().detach().requires_grad_()
    seen = []
    (x * w.t()).sum().backward()
    out = [x.grad]
    (x.tanh() * w.t()).sum().backward()
    out.append(x.grad)
    (xf.sigmoid() * 3).sum().backward()
    out.append(xf.grad)
    (xf.sigmoid() + x.exp()).sum().backward()
    out.append(xf.grad)
    h = x.t().exp()
    h.retain_grad()
    (h * xf.t()).sum().backward()
    out.append(h.grad)
    v = x * 1
    v.register_hook(lambda grad: seen.append(grad.clone()))
    (v * w.t()).sum().backward()
    base = L.from_numpy(_array((N, N + 8), 9)).requires_grad_()
    t = base.t()
    chain = (t.tanh() * t.sigmoid() + (-(t * t)).exp()).sum()
    out += seen + list(L.autograd.grad(chain, [base]))
    return out


def test_gradients_through_transposes_match_torchs_values_and_strides():
    for ours, theirs in zip(_gradients(fg), _gradients(torch)):
        assert ours.stride() == theirs.stride()
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2e-5, atol=2e-5)


def test_contiguous_of_a_large_transpose_is_row_major_and_equal():
    a = _array((N + 8, N), 10)
    t = fg.from_numpy(a).t().contiguous()
    assert t.stride() == (N + 8, 1) and t.is_contiguous()
    np.testing.assert_array_equal(t.numpy(), a.T)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [-1, 0])
def test_a_softmax_of_a_large_transpose_is_row_major_and_torchs(fn, dim):
    """torch's softmax of a transpose is row-major; its input is copied in tiles first."""
    a = _array((N + 8, N), 11)
    ours = getattr(fg, fn)(fg.from_numpy(a).t(), dim)
    theirs = getattr(torch, fn)(torch.from_numpy(a).t(), dim)
    assert ours.stride() == theirs.stride() == (N + 8, 1)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-7)
