"""Eager dispatch plans (tracer/dispatch.py): a call signature's types, shape rule, saved
slots and node class are worked out once and reused. Reuse must never carry one call's
facts into another: each test runs the same signature twice, changing what the plan
must not have fixed (values, grad mode, requires_grad, which operand is a constant,
attribute values), and checks values, grads and nodes against torch or closed forms."""
import numpy as np
import pytest

import fusegrad as fg
from fusegrad.tracer import dispatch


def _fresh_plans():
    dispatch._PLANS.clear()


def test_second_call_reuses_the_plan_and_gives_the_same_results():
    _fresh_plans()
    x = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    first = x * 2
    assert len(dispatch._PLANS) == 1
    plan = next(iter(dispatch._PLANS.values()))
    second = x * 2
    assert next(iter(dispatch._PLANS.values())) is plan and len(dispatch._PLANS) == 1
    assert first.grad_fn is not second.grad_fn
    assert type(second.grad_fn).__name__ == "MulBackward0"
    second.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


def test_grad_mode_is_read_per_call_not_fixed_by_the_plan():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    with fg.no_grad():
        z = x.exp()
    w = x.exp()
    assert y.grad_fn is not None and z.grad_fn is None and not z.requires_grad
    assert type(w.grad_fn).__name__ == "ExpBackward0"


def test_requires_grad_is_part_of_the_signature():
    a = fg.tensor([1.0, 2.0])
    b = fg.tensor([3.0, 4.0], requires_grad=True)
    plain = a * a
    assert plain.grad_fn is None
    a.requires_grad_(True)
    tracked = a * b
    tracked.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 2.0])


def test_a_constant_operand_keeps_torchs_saved_scalar_rule():
    # x * 2 saves the wrapped scalar (a second backward raises); x * y saves tensors.
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    for _ in range(2):
        y = x * 2
        y.sum().backward()
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
            y.sum().backward()


def test_attributes_change_the_result_under_one_plan_shape():
    x = fg.tensor([[1.0, -2.0], [3.0, 4.0]], requires_grad=True)
    for p, expected in ((2.0, np.sqrt(30.0)), (1.0, 10.0), (2.0, np.sqrt(30.0))):
        n = x.norm(p)
        assert n.item() == pytest.approx(expected, rel=1e-6)
    s0, s1 = x.sum(0), x.sum(1)
    np.testing.assert_array_equal(s0.detach().numpy(), [4.0, 2.0])
    np.testing.assert_array_equal(s1.detach().numpy(), [-1.0, 7.0])


def test_views_made_through_a_plan_share_memory_and_version():
    base = fg.tensor([[1.0, 2.0], [3.0, 4.0]])
    for _ in range(2):
        v = base.t()
        v.mul_(1.0)
        assert v._base is base and v._version is base._version
    row = base[0]                   # an unhashable index: the general path
    row.fill_(7.0)
    np.testing.assert_array_equal(base.numpy()[0], [7.0, 7.0])


def test_a_shape_error_is_raised_every_time_and_nothing_is_kept():
    a, b = fg.ones(2), fg.ones(3)
    before = len(dispatch._PLANS)
    for _ in range(2):
        with pytest.raises(RuntimeError, match=r"The size of tensor a \(2\) must match the size of tensor b "
                                               r"\(3\) at non-singleton dimension 0"):
            a + b
    assert len(dispatch._PLANS) == before


def test_plans_match_torch_over_a_small_random_chain():
    torch = pytest.importorskip("torch", reason="torch is the oracle for this chain's values and gradients")
    rng = np.random.default_rng(0)
    data = rng.standard_normal((3, 4)).astype(np.float32)
    results = []
    for lib in (fg, torch):
        x = lib.tensor(data, requires_grad=True)
        for _ in range(2):          # the second pass runs every op through its plan
            y = ((x * 1.5 + 0.5).tanh() * x).sigmoid().sum(1).norm()
            y.backward()
        results.append((y.item(), x.grad.numpy().copy()))
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-6)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-5, atol=1e-7)
