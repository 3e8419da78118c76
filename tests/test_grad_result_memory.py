"""Eager `fg.autograd.grad` (and fg.grad / value_and_grad) return gradient memory that only the
backward made without copying it (tracer/engine.py `_handed_over`). What must hold either way:
a returned gradient is writable memory of its own (writing it changes no seed, no forward value,
no other returned gradient, and no later result), and the pool never hands its buffer out again
while the gradient is alive."""
import numpy as np
import pytest

import fusegrad as fg
from fusegrad.ir.buffers import POOL

# [256, 256] float32 is 256 KiB: its results come from the buffer pool (ir/buffers.py)
SHAPE = (256, 256)


def _leaf(seed=0):
    return fg.from_numpy(np.random.default_rng(seed).standard_normal(SHAPE).astype(np.float32)).requires_grad_()


def _root(array):
    """The array owning `array`'s memory (through its views' .base)."""
    while array.base is not None:
        array = array.base
    return array


def _log_softmax_loss(x):
    return -x.log_softmax(-1)[:, 3].sum()


def _exp_loss(x):
    return (x.exp() * x).sum()


LOSSES = {"log_softmax": _log_softmax_loss, "exp": _exp_loss}


def test_a_pooled_gradient_is_returned_without_a_copy():
    x = _leaf()
    g, = fg.autograd.grad(_exp_loss(x), x)
    assert POOL.holds(_root(g.numpy()))
    assert g.numpy().flags.writeable


@pytest.mark.parametrize("loss", list(LOSSES))
def test_a_held_gradient_keeps_its_values_through_later_backwards(loss):
    x = _leaf()
    g1, = fg.autograd.grad(LOSSES[loss](x), x)
    kept = g1.numpy().copy()
    for seed in range(1, 4):    # the same shapes again: the pool would reuse a buffer it thought free
        y = _leaf(seed)
        g2, = fg.autograd.grad(LOSSES[loss](y), y)
        assert not np.shares_memory(g1.numpy(), g2.numpy())
    np.testing.assert_array_equal(g1.numpy(), kept)


def test_writing_a_gradient_changes_nothing_else():
    x = _leaf()
    y = x.exp()
    v = fg.from_numpy(np.full(SHAPE, 0.5, dtype=np.float32))
    before = {"x": x.detach().numpy().copy(), "y": y.detach().numpy().copy(), "v": v.numpy().copy()}
    g, = fg.autograd.grad(y * 1, x, v, retain_graph=True)
    g.add_(100.0)
    np.testing.assert_array_equal(x.detach().numpy(), before["x"])
    np.testing.assert_array_equal(y.detach().numpy(), before["y"])
    np.testing.assert_array_equal(v.numpy(), before["v"])
    g_again, = fg.autograd.grad(y * 1, x, v)
    np.testing.assert_allclose(g_again.numpy(), before["v"] * before["y"], rtol=1e-6)


def test_a_seed_passed_through_is_the_seed_itself():
    """As torch's engine: a grad_outputs tensor an add passes through unchanged is returned
    itself, for both operands (torch: `ga is gb is v`)."""
    a, b = _leaf(0), _leaf(1)
    v = fg.from_numpy(np.ones(SHAPE, dtype=np.float32))
    ga, gb = fg.autograd.grad(a + b, (a, b), v)
    assert ga is v and gb is v


def test_one_gradient_for_two_inputs_is_two_tensors_memory():
    """An add's backward gives both operands one array: the second input gets a copy."""
    a, b = _leaf(0), _leaf(1)
    z = (a + b).exp()
    ga, gb = fg.autograd.grad(z.sum(), (a, b))
    assert not np.shares_memory(ga.numpy(), gb.numpy())
    np.testing.assert_array_equal(ga.numpy(), gb.numpy())


def test_value_and_grad_results_match_torch():
    torch = pytest.importorskip("torch", reason="torch is the oracle for the gradient's values")
    x_np = np.random.default_rng(5).standard_normal(SHAPE).astype(np.float32)
    value, g = fg.value_and_grad(_log_softmax_loss)(fg.from_numpy(x_np))
    xt = torch.from_numpy(x_np.copy()).requires_grad_()
    (-xt.log_softmax(-1)[:, 3].sum()).backward()
    np.testing.assert_allclose(g.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-6)
    # and the result is its own: a second call leaves it as it was
    kept = g.numpy().copy()
    fg.value_and_grad(_log_softmax_loss)(fg.from_numpy(x_np * 2))
    np.testing.assert_array_equal(g.numpy(), kept)
