"""Tensor.resize_ / resize_as_ (tracer/inplace_views.py) against torch: shapes, strides, version
counters, storage, the values kept, and torch's errors."""
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle")

import fusegrad as fg  # noqa: E402


def _state(t):
    return tuple(t.shape), t.stride(), t._version, t.storage_offset(), t.untyped_storage().nbytes(), t.tolist()


def _steps(T):
    x = T.arange(6.)
    y = T.arange(6.).view(2, 3).t()
    return [
        ("same-shape", lambda: x.resize_(6)),
        ("tuple", lambda: x.resize_((3, 2))),
        ("list", lambda: x.resize_([2])),
        ("size", lambda: x.resize_(T.Size([2, 1]))),
        ("float", lambda: x.resize_(2.0)),
        ("negative", lambda: x.resize_((2, -1))),
        ("nothing", lambda: x.resize_()),
        ("empty", lambda: x.resize_(0)),
        ("memory-format", lambda: x.resize_(4, memory_format=T.contiguous_format)),
        ("transposed-same", lambda: y.resize_(3, 2)),
        ("transposed-new-shape", lambda: y.resize_(2, 3)),
        ("resize_as_", lambda: T.zeros(2, 3).resize_as_(T.ones(3))),
        ("requires-grad", lambda: T.ones(2, requires_grad=True).resize_(3)),
        ("non-leaf", lambda: (T.ones(2, requires_grad=True) * 2).resize_(3)),
    ]


def _run(T):
    log = []
    for name, step in _steps(T):
        try:
            log.append((name, _state(step())))
        except Exception as error:       # noqa: BLE001  (compared with torch's)
            log.append((name, type(error).__name__, str(error)))
    return log


def test_resize_as_torch():
    assert _run(fg) == _run(torch)


def test_growing_keeps_the_values():
    def grow(T):
        w = T.arange(3.)
        w.resize_(5)
        return w[:3].tolist(), tuple(w.shape), w._version
    assert grow(fg) == grow(torch)


def test_resizing_a_view_keeps_its_memory():
    def shrink(T):
        a = T.arange(4.)
        v = a[1:]
        v.resize_(2)
        v.mul_(10)
        return a.tolist(), v.tolist(), v.storage_offset(), a._version
    assert shrink(fg) == shrink(torch)


def test_cell_functions_as_torch():
    # torch.lstm_cell, gru_cell, rnn_tanh_cell, rnn_relu_cell (fusegrad/nn/rnn.py): values, node
    # names and every gradient
    import numpy as np

    def run(T):
        rng = np.random.default_rng(0)

        def t(*shape):
            return T.tensor(rng.standard_normal(shape), requires_grad=True)
        x, h, c = t(3, 4), t(3, 5), t(3, 5)
        w4 = (t(20, 4), t(20, 5), t(20), t(20))
        w3 = (t(15, 4), t(15, 5), t(15), t(15))
        w1 = (t(5, 4), t(5, 5), t(5), t(5))
        outs = [*T.lstm_cell(x, (h, c), *w4), T.gru_cell(x, h, *w3), T.rnn_tanh_cell(x, h, *w1),
                T.rnn_relu_cell(x, h, *w1[:2]), T.lstm_cell(x, (h, c), *w4[:2])[0]]
        sum((o * (k + 1)).sum() for k, o in enumerate(outs)).backward()
        leaves = [x, h, c, *w4, *w3, *w1]
        return [type(o.grad_fn).__name__ for o in outs], [o.detach().numpy() for o in outs], \
            [p.grad.numpy() for p in leaves]
    ours, theirs = run(fg), run(torch)
    assert ours[0] == theirs[0]
    for a, b in zip(ours[1] + ours[2], theirs[1] + theirs[2]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
