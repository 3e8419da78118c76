"""Tensor.register_hook as torch's: leaf hooks see the total gradient before it is
accumulated (or returned by autograd.grad), non-leaf hooks run before the node's VJP
and before retain_grad keeps the value, results are checked with torch's texts, handles
remove them; eager, create_graph (leaf hooks) and inside fg.compile (leaf hooks)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")


def _outcome(lib, case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # (create_graph's reference-cycle warning)
        try:
            values = case(lib)
        except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
            return ("error", type(exc).__name__, str(exc))
    return ("values", [v.detach().numpy() if hasattr(v, "detach") else v for v in (values or [])])


def leaf_hook_then_removed(lib):
    x = lib.ones(3, requires_grad=True)
    handle = x.register_hook(lambda g: g * 2)
    (x * 3).sum().backward()
    with_hook = x.grad.clone()
    handle.remove()
    x.grad = None
    (x * 3).sum().backward()
    return [with_hook, x.grad]


def first_half(g):
    return g[:2]


def hook_changing_the_size(lib):
    x = lib.ones(3, requires_grad=True)
    x.register_hook(first_half)
    (x * 1).sum().backward()


def hook_returning_a_number(lib):
    x = lib.ones(3, requires_grad=True)
    x.register_hook(lambda g: 5)
    (x * 1).sum().backward()


def hook_changing_the_dtype(lib):
    x = lib.ones(3, requires_grad=True)
    x.register_hook(lambda g: g.double())
    (x * 1).sum().backward()


def non_leaf_hook(lib, retain_first=False):
    x = lib.ones(3, requires_grad=True)
    y = x * 2
    if retain_first:
        y.retain_grad()
    y.register_hook(lambda g: g * 10)
    if not retain_first:
        y.retain_grad()
    (y * 3).sum().backward()
    return [x.grad, y.grad]          # (retain_grad keeps the value after the hook, either way)


def autograd_grad_with_respect_to_a_hooked_non_leaf(lib):
    x = lib.ones(3, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g * 2)
    return [lib.autograd.grad((y * 3).sum(), y)[0], lib.autograd.grad((y * 3).sum(), x)[0]]


def what_a_leaf_hook_sees_under_create_graph(lib):
    x = lib.ones(3, requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append((g.requires_grad, g.grad_fn is None)))
    (x * x).sum().backward(create_graph=True)
    return [seen, x.grad]


def hooks_run_in_registration_order(lib):
    x = lib.ones(1, requires_grad=True)
    x.register_hook(lambda g: g + 1)
    x.register_hook(lambda g: g * 10)
    (x * 1).sum().backward()
    return [x.grad]


def hook_modifying_the_gradient_in_place(lib):
    x = lib.ones(2, requires_grad=True)
    y = x + x                       # (both of add's gradients are one array in the engine)
    x.register_hook(lambda g: g.mul_(2))
    y.sum().backward()
    return [x.grad]


def leaf_hook_runs_once_on_the_total(lib):
    x = lib.ones(2, requires_grad=True)
    calls = []
    x.register_hook(lambda g: calls.append(g.clone()))
    (x * 2 + x * 3).sum().backward()
    return calls


def handle_as_a_context_manager(lib):
    x = lib.ones(2, requires_grad=True)
    with x.register_hook(lambda g: g * 100):
        (x * 1).sum().backward()
    inside = x.grad.clone()
    (x * 1).sum().backward()
    return [inside, x.grad]


def hook_in_the_middle_of_a_graph(lib):
    x = lib.ones(2, requires_grad=True)
    y = x.exp()
    a, b = y * 2, y * 3
    a.register_hook(lambda g: g * 0)
    (a + b).sum().backward()
    return [x.grad]


def clipping_a_weight_gradient(lib):
    layer = lib.nn.Linear(3, 2)
    with lib.no_grad():
        layer.weight.fill_(1.0)
        layer.bias.fill_(0.5)
    layer.weight.register_hook(lambda g: g.clamp(max=0.1))
    layer(lib.ones(4, 3)).sum().backward()
    return [layer.weight.grad, layer.bias.grad]


def _compiled(lib, fn):
    return fg.compile(fn) if lib is fg else fn


def leaf_hook_then_a_compiled_calls_backward_outside(lib):
    x = lib.ones(3, requires_grad=True)
    x.register_hook(lambda g: g * 2)
    _compiled(lib, lambda x: (x * 3).sum())(x).backward()
    return [x.grad]


def leaf_hook_then_backward_inside_a_compiled_step(lib):
    x = lib.ones(3, requires_grad=True)
    x.register_hook(lambda g: g * 2)

    def step(x):
        loss = (x * 3).sum()
        loss.backward()
        return loss
    _compiled(lib, step)(x)
    return [x.grad]


CASES = {
    "leaf hook, then removed": leaf_hook_then_removed,
    "no grad": lambda lib: [lib.ones(2).register_hook(lambda g: g)],
    "size changed": hook_changing_the_size,
    "number returned": hook_returning_a_number,
    "dtype changed": hook_changing_the_dtype,
    "non-leaf": non_leaf_hook,
    "non-leaf, retained first": lambda lib: non_leaf_hook(lib, retain_first=True),
    "autograd.grad of a leaf": lambda lib: (lambda x: (x.register_hook(lambda g: g * 2),
                                                       lib.autograd.grad((x * 3).sum(), x))[1])(
        lib.ones(3, requires_grad=True)),
    "autograd.grad of a non-leaf": autograd_grad_with_respect_to_a_hooked_non_leaf,
    "create_graph, leaf": what_a_leaf_hook_sees_under_create_graph,
    "order": hooks_run_in_registration_order,
    "in place": hook_modifying_the_gradient_in_place,
    "once": leaf_hook_runs_once_on_the_total,
    "context manager": handle_as_a_context_manager,
    "middle": hook_in_the_middle_of_a_graph,
    "clip a weight": clipping_a_weight_gradient,
    "compiled, backward outside": leaf_hook_then_a_compiled_calls_backward_outside,
    "compiled, backward inside": leaf_hook_then_backward_inside_a_compiled_step,
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    ours, theirs = _outcome(fg, CASES[name]), _outcome(torch, CASES[name])
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "error":
        assert ours == theirs
        return
    assert len(ours[1]) == len(theirs[1])
    for o, t in zip(ours[1], theirs[1]):
        if isinstance(t, np.ndarray):
            np.testing.assert_allclose(o, t, rtol=1e-6)
        else:
            assert o == t


def test_a_hook_on_a_value_computed_inside_compile_is_refused_clearly():
    def f(x):
        y = x * 2
        y.register_hook(lambda g: g)
        return y.sum()
    with pytest.raises(NotImplementedError, match="register_hook on a tensor computed inside fg.compile"):
        fg.compile(f)(fg.ones(3, requires_grad=True))


def test_a_non_leaf_hook_runs_in_a_create_graph_backward():
    """(test_parity_round23 compares more cases with torch)"""
    x = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    y.register_hook(lambda g: g * 2)
    (g,) = fg.autograd.grad(y.sum(), x, create_graph=True)
    assert g.tolist() == [4.0, 8.0, 12.0] and g.requires_grad      # 2 * (2x)
    (gg,) = fg.autograd.grad(g.sum(), x)
    assert gg.tolist() == [4.0, 4.0, 4.0]


def test_a_removed_non_leaf_hook_no_longer_runs():
    x = fg.ones(2, requires_grad=True)
    y = x * 2
    handle = y.register_hook(lambda g: g * 10)
    handle.remove()
    handle.remove()                 # (a second remove does nothing)
    (y * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 6.0])
