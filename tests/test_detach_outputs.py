"""A compiled call writes each value once, and a detach() that outlives the call shares
its tensor's memory, as eagerly.

Inside a trace `y.detach()` is an identity op (its value must not be on y's gradient
path), and the trace holds `y` while the call runs so that an in-place write through
either reaches the other. After the call those links end: `y` is an output only if
something outside the call still holds it, and a detach returned with its tensor is the
same array, so `d.add_(1)` after the call changes `y` as torch's does. The regression
this guards: fg.value_and_grad's loss and gradients before their detach() stayed alive
through the trace's links, so every compiled training step wrote its gradients twice.
"""
import numpy as np
import pytest

import fusegrad as fg


@pytest.fixture(autouse=True)
def _tiered(monkeypatch):
    """Tiny programs: run them on the reference executor (no Numba compile per test)."""
    monkeypatch.setenv("FUSEGRAD_ASYNC_COMPILE", "1")


def _loss(x, w):
    return ((x * w).tanh() ** 2).sum()


@pytest.mark.parametrize("argnums", [0, (0, 1)])
def test_value_and_grad_outputs_each_value_once(argnums):
    f = fg.compile(fg.value_and_grad(_loss, argnums=argnums))
    x, w = fg.randn(4, 3), fg.randn(4, 3)
    value, grads = f(x, w)
    n_grads = 1 if isinstance(argnums, int) else len(argnums)
    outputs = f.last_run.forward.outputs
    # the value and each gradient: nothing of the computation before their detach()
    assert sorted(tuple(v.type.shape) for v in outputs) == [()] + [(4, 3)] * n_grads
    expected_value, expected_grads = fg.value_and_grad(_loss, argnums=argnums)(x, w)
    np.testing.assert_allclose(value.numpy(), expected_value.numpy(), rtol=1e-6)
    for got, want in zip(grads if n_grads > 1 else (grads,), expected_grads if n_grads > 1 else (expected_grads,)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_a_dropped_tensor_is_not_an_output_of_the_call():
    def f(x):
        y = x * 2
        return y.detach() + 1, y.data * 3      # y itself dies with the call
    compiled = fg.compile(f)
    compiled(fg.ones(3))
    assert len(compiled.last_run.forward.outputs) == 2


def _returned_pair(lib, how, after):
    """(y, its detach or .data) returned by a call, then `after` applied to one of them."""
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)

    def f(x):
        y = x * 2
        d = y.detach() if how == "detach" else y.data
        if after == "written in the call":
            y.add_(5)                 # before returning: d sees it eagerly
        return y, d
    return f, x


@pytest.mark.parametrize("how", ["detach", "data"])
@pytest.mark.parametrize("after", ["d.add_ after", "y.mul_ under no_grad after", "written in the call"])
def test_a_returned_detach_shares_memory_with_its_tensor(how, after):
    torch = pytest.importorskip("torch", reason="torch is the oracle for memory sharing and versions")
    results = []
    for lib, compiled in ((torch, False), (fg, False), (fg, True)):
        f, x = _returned_pair(lib, how, after)
        y, d = (fg.compile(f) if compiled else f)(x)
        if after == "d.add_ after":
            d.add_(1)
        elif after == "y.mul_ under no_grad after":
            with lib.no_grad():
                y.mul_(10)
        # Versions are compared after the call only: a compiled call's outputs start new
        # version counters (a write inside the call is not counted on them).
        same_version = y._version == d._version if after != "written in the call" else None
        results.append((y.detach().tolist(), d.tolist(), same_version, y.data_ptr() == d.data_ptr()))
    assert results[1] == results[0]
    assert results[2] == results[0]


def test_a_returned_detach_keeps_its_tensors_gradient_path():
    def f(x):
        y = x * 3
        return y, y.detach()
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y, d = fg.compile(f)(x)
    assert y.requires_grad and not d.requires_grad
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])
