"""Parity round 15 (an nn/optim probe against torch 2.13; torch is the oracle):
nn.functional's softmax and log_softmax with an integer or bool `dtype` raise torch's error,
Module.train() calls each child's own train(), eager mse_loss sums in torch's order, and
the optimizers refuse `fused=True` with `foreach` or `differentiable` as torch's do."""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")


def outcome(fn):
    """A call's result (dtype and values) or its error's class and text."""
    try:
        result = fn()
    except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
        return ("error", type(exc).__name__, str(exc))
    return ("value", str(result.dtype).split(".")[-1], np.asarray(result.detach().numpy()).tolist())


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", ["int64", "bool", "float64", "float32"])
@pytest.mark.parametrize("dim", [0, 1])
def test_functional_softmax_with_a_dtype_as_torch(name, dtype, dim):
    def call(L):
        x = L.tensor([[1.0, 2.0], [3.0, 5.0]], requires_grad=True)
        return getattr(L.nn.functional, name)(x, dim, dtype=getattr(L, dtype))
    expected = outcome(lambda: call(torch))
    got = outcome(lambda: call(fg))
    assert got[:2] == expected[:2]
    if expected[0] == "value":
        np.testing.assert_allclose(got[2], expected[2], rtol=1e-6)
    else:
        assert got == expected


def test_train_calls_each_childs_own_train():
    """A child that overrides train() (to keep a frozen backbone in eval mode) is obeyed."""
    def modes(L):
        class Frozen(L.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = L.nn.Linear(2, 2)

            def train(self, mode=True):
                return super().train(False)

        model = L.nn.Sequential(L.nn.Linear(2, 2), Frozen(), L.nn.ReLU())
        model.train()
        return [m.training for m in model.modules()]
    assert modes(fg) == modes(torch) == [True, True, False, False, True]


@pytest.mark.parametrize("shape", [(10,), (1000,), (40000,), (30, 70), (3, 400, 50), (0,), ()])
@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mse_loss_sums_bit_for_bit_as_torch(shape, reduction, dtype):
    rng = np.random.default_rng(sum(shape) + len(shape))
    a, b = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
    expected = torch.nn.functional.mse_loss(torch.tensor(a), torch.tensor(b), reduction=reduction).numpy()
    got = fg.nn.functional.mse_loss(fg.tensor(a), fg.tensor(b), reduction=reduction).numpy()
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
@pytest.mark.parametrize("flags", [dict(fused=True, foreach=True), dict(fused=True, differentiable=True),
                                   dict(fused=True, foreach=True, differentiable=True), dict(fused=True),
                                   dict(foreach=True, differentiable=True)])
def test_fused_optimizer_flag_checks_as_torch(name, flags):
    def make(L):
        return getattr(L.optim, name)([L.zeros(2, requires_grad=True)], lr=0.1, **flags)
    def result(L):
        try:
            make(L)
        except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
            return type(exc).__name__, str(exc)
        return "ok"
    assert result(fg) == result(torch)


def _hooked_run(L) -> list:
    """Forward pre-hooks and hooks (prepend, with_kwargs, replacing inputs and outputs, removal,
    deepcopy) on a small model; what they saw and the outputs."""
    import copy
    seen = []
    L.manual_seed(0)
    model = L.nn.Sequential(L.nn.Linear(3, 2), L.nn.ReLU())
    handles = [
        model[0].register_forward_pre_hook(lambda mod, args: (args[0] * 2,)),
        model[0].register_forward_hook(lambda mod, args, out: out + 1),
        model[0].register_forward_hook(lambda mod, args, out: seen.append(("first", tuple(out.shape))), prepend=True),
        model.register_forward_hook(lambda mod, args, kwargs, out: seen.append(("kwargs", sorted(kwargs))),
                                    with_kwargs=True),
        model[1].register_forward_pre_hook(lambda mod, args, kwargs: ((args[0] - 0.5,), kwargs), with_kwargs=True),
        model[1].register_forward_pre_hook(lambda mod, args: args[0] * 3),     # one input, not a tuple
    ]
    x = L.ones(4, 3)
    seen.append(model(x).detach().numpy().tolist())
    seen.append(copy.deepcopy(model)(x).detach().numpy().tolist())
    for handle in handles:
        handle.remove()
    handles[0].remove()             # (again: nothing happens)
    seen.append(model(x).detach().numpy().tolist())
    with model[0].register_forward_hook(lambda mod, args, out: out * 2):
        seen.append(model(x).detach().numpy().tolist())
    seen.append(model(x).detach().numpy().tolist())
    return seen


def test_module_forward_hooks_as_torch():
    assert _hooked_run(fg) == _hooked_run(torch)


def test_calculate_gain_of_linear_is_the_int_one():
    for name in ("linear", "conv2d", "sigmoid"):
        got, expected = fg.nn.init.calculate_gain(name), torch.nn.init.calculate_gain(name)
        assert (type(got), got) == (type(expected), expected)
