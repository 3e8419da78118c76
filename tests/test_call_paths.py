"""Behaviour kept by the per-call fast paths: the outputs of a compiled call that must not
share memory the call writes back, cross_entropy's target check inside fg.compile, and
which nodes an eager backward frees."""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg
from fusegrad.tracer.trace import Trace


def _values(*tensors):
    return [t.detach().numpy().copy() for t in tensors]


@pytest.mark.parametrize("make_output", [
    lambda x: x.clone(),                    # may be handed out as the input's own array
    lambda x: x.view(-1)[0:2],              # a view of memory the call writes
    lambda x: x.reshape(3) * 1,             # a fresh array
])
def test_outputs_keep_the_values_read_before_an_in_place_write(make_output):
    def f(x):
        y = make_output(x)
        x.add_(1)
        return y

    eager_x, compiled_x = fg.tensor([1.0, 2.0, 3.0]), fg.tensor([1.0, 2.0, 3.0])
    eager = f(eager_x)
    compiled = fg.compile(f)(compiled_x)
    for ours, theirs in zip(_values(compiled, compiled_x), _values(eager, eager_x)):
        np.testing.assert_array_equal(ours, theirs)
    assert compiled._version == eager._version


@pytest.mark.parametrize("reduce", ["sum", "amax", "mean"])
def test_a_one_element_reduction_keeps_its_value_after_an_in_place_write(reduce):
    """The executor may hand out the operand's own memory for a one-element reduction."""
    def f(x):
        y = getattr(x, reduce)()
        x.mul_(3)
        return y

    eager_x, compiled_x = fg.tensor([2.0]), fg.tensor([2.0])
    eager, compiled = f(eager_x), fg.compile(f)(compiled_x)
    assert compiled.item() == eager.item() == 2.0
    assert compiled_x.item() == eager_x.item() == 6.0


def test_written_outputs_of_a_step_are_its_parameters_new_values():
    """An optimizer writes every parameter back; the loss (a fresh array) is left as computed."""
    fg.manual_seed(0)
    model = fg.nn.Linear(4, 3)
    opt = fg.optim.SGD(model.parameters(), lr=0.5)
    x, y = fg.randn(8, 4), fg.tensor([0, 1, 2, 0, 1, 2, 0, 1])

    def step(x, y):
        opt.zero_grad()
        loss = fg.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    before = _values(model.weight, model.bias)
    with fg.no_grad():
        expected_loss = fg.nn.functional.cross_entropy(model(x), y).item()
    loss = fg.compile(step)(x, y)
    assert loss.item() == pytest.approx(expected_loss, rel=1e-6)
    after = _values(model.weight, model.bias)
    assert not np.array_equal(after[0], before[0])
    np.testing.assert_allclose(after[0], before[0] - 0.5 * model.weight.grad.numpy(), rtol=1e-6)


def test_cross_entropy_inside_compile_hands_no_memory_to_python(monkeypatch):
    """The bounds check reads the targets without `numpy()`: memory handed to Python inside a
    trace is copied at every later read, in case Python writes it between ops."""
    exposed = []
    monkeypatch.setattr(Trace, "expose", lambda self, array: exposed.append(array))
    logits, targets = fg.randn(6, 4, requires_grad=True), fg.tensor([0, 3, 1, 2, 2, 1])
    loss = fg.compile(lambda a, t: fg.nn.functional.cross_entropy(a, t))(logits, targets)
    assert exposed == []
    np.testing.assert_allclose(loss.item(), fg.nn.functional.cross_entropy(logits, targets).item(), rtol=1e-6)


def test_cross_entropy_inside_compile_still_checks_target_bounds():
    loss_fn = fg.compile(lambda a, t: fg.nn.functional.cross_entropy(a, t))
    with pytest.raises(IndexError, match="^Target 4 is out of bounds.$"):
        loss_fn(fg.randn(3, 4), fg.tensor([0, 4, 1]))


def test_backward_frees_only_the_nodes_it_runs_through():
    x = fg.randn(3, requires_grad=True)
    y = x * 2
    z = y * y
    w = y.exp()
    fg.autograd.grad(z.sum(), [y])          # runs z's nodes only: y's own node keeps its values
    w.sum().backward()                      # through y's node: still possible
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(2 * x.detach().numpy()), rtol=1e-6)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        z.sum().backward()
