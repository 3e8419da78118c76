"""_merge_siblings' cycle test by ancestor and descendant bit sets (_Scheduler._closure) must
agree with the graph search it replaces (_reaches) on every pair it is asked about.

The search per pair made scheduling cubic in an unrolled loop's length (an RNN of 200 steps:
13 s of its first call, warm disk cache; now 2.5 s)."""
import numpy as np
import pytest

import fusegrad as fg
from fusegrad.codegen.schedule import _Scheduler


def _rnn_loss(xs, W, U, b):
    h = fg.zeros(4, 8)
    for t in range(xs.shape[0]):
        h = (xs[t] @ W + h @ U + b).tanh()
    return h.square().sum()


def _layer_norm_loss(x, w, b):
    centred = x - x.mean(-1, keepdim=True)
    var = (centred * centred).mean(-1, keepdim=True)
    y = centred / (var + 1e-5).sqrt() * w + b
    return (y * y).sum() + y.amax(0).sum()


def _branchy_loss(x, w):
    a = (x * w).sin()
    b = (x + w).exp().sum(1, keepdim=True)
    c = a / b + (a * 2).tanh().mean(0)
    return (c * c).sum() + (a - c).abs().sum()


@pytest.mark.parametrize("loss,shapes,argnums", [
    (_rnn_loss, [(7, 4, 5), (5, 8), (8, 8), (8,)], (1, 2, 3)),
    (_layer_norm_loss, [(16, 32), (32,), (32,)], (0, 1, 2)),
    (_branchy_loss, [(16, 32), (32,)], (0, 1)),
])
def test_bit_set_cycle_test_agrees_with_the_search(monkeypatch, loss, shapes, argnums):
    asked = []
    real = _Scheduler._cycles_through

    def both(self, a, b, closure):
        fast = real(self, a, b, closure)
        assert fast == self._reaches({a, b}, set()), (a, b)
        asked.append(fast)
        return fast
    monkeypatch.setattr(_Scheduler, "_cycles_through", both)
    fg.clear_caches()
    rng = np.random.default_rng(0)
    args = [fg.from_numpy(rng.standard_normal(s).astype(np.float32)) for s in shapes]
    compiled = fg.compile(fg.value_and_grad(loss, argnums=argnums))
    value, grads = compiled(*args)
    eager_value, eager_grads = fg.value_and_grad(loss, argnums=argnums)(*args)
    assert value.item() == pytest.approx(eager_value.item(), rel=1e-5)
    for g, e in zip(grads, eager_grads):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-4, atol=1e-5)
    assert asked, "no pair reached the cycle test"
    fg.clear_caches()


def test_closure_of_a_small_graph():
    class Node:
        def __init__(self, name):
            self.name = name

        def __repr__(self):
            return self.name
    a, b, c, d = (Node(n) for n in "abcd")
    s = _Scheduler.__new__(_Scheduler)
    s.nodes = [a, b, c, d]
    s.preds = {a: set(), b: {a}, c: {b}, d: {a}}       # a -> b -> c, a -> d
    closure = s._closure()
    bit, above, below = closure
    assert below[a] == bit[b] | bit[c] | bit[d] and above[c] == bit[a] | bit[b] and above[a] == 0
    assert s._cycles_through(a, c, closure)         # a -> b -> c: merging a, c cycles
    assert not s._cycles_through(a, b, closure)     # a direct edge only
    assert not s._cycles_through(c, d, closure)
    s.preds[a] = {c}                                 # not a DAG: an internal error
    with pytest.raises(AssertionError, match="the fusion schedule has a cycle"):
        s._closure()


def test_a_long_sum_of_products_is_cut_into_kernels_of_at_most_16_arrays():
    """Rule 8 (codegen/schedule.py): vertical fusion, and the sibling merge of a kernel with
    its reader, stop at MAX_JOINED_ARRAYS arrays read; the sum is still exact in order."""
    from fusegrad.codegen.schedule import MAX_JOINED_ARRAYS
    rng = np.random.default_rng(3)
    a = rng.standard_normal((40, 8, 8)).astype(np.float32)
    w = rng.standard_normal((8, 8)).astype(np.float32)

    def f(a, w):
        acc = a[0] @ w
        for t in range(1, a.shape[0]):
            acc = acc + a[t] @ w
        return acc
    compiled = fg.compile(f)
    out = compiled(fg.from_numpy(a), fg.from_numpy(w))
    np.testing.assert_allclose(out.numpy(), f(fg.from_numpy(a), fg.from_numpy(w)).numpy(), rtol=1e-6, atol=1e-5)
    text = compiled.explain(fg.from_numpy(a), fg.from_numpy(w))
    kernels = text.split("\n[")[1:]
    kernels = [k for k in kernels if "] kernel" in k.split("\n")[0]]
    assert len(kernels) == 3, text[:3000]
    for k in kernels:
        reads = k.split("reads: ")[1].split("\n")[0].split()
        assert len(reads) <= MAX_JOINED_ARRAYS + 1      # (and the 0-d constant, if any)
