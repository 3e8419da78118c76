"""Eager dispatch plans (tracer/dispatch.py): a call signature's types, shape rule, saved
slots and node class are worked out once and reused. Reuse must never carry one call's
facts into another: each test runs the same signature twice, changing what the plan
must not have fixed (values, grad mode, requires_grad, which operand is a constant,
attribute values), and checks values, grads and nodes against torch or closed forms."""
import warnings

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
        assert v._base is base and v._vbox is base._vbox
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


# ---------------------------------------------------------------- the loop-test fast paths
# W6's loop (`while y.norm() < 1000: y = y * 2`) runs t.norm(), a comparison, bool() and
# randn(n, requires_grad=True) once per step: each has a fast path for its common call,
# which must give what the general path (and torch) gives.
NORM_VECTORS = [[3.0, 4.0], [], [-0.0, 0.0], [2.5], [1e30, 1e30], [float("nan"), 1.0],
                [float("inf"), 1.0], [1e-30, 1e-30], list(np.linspace(-3, 3, 4096)),
                list(np.linspace(-3, 3, 4097))]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("values", NORM_VECTORS, ids=lambda v: f"n{len(v)}" if len(v) > 2 else str(v))
def test_default_norm_of_a_vector_matches_torch(values, dtype):
    torch = pytest.importorskip("torch", reason="torch is the oracle for norm's values and node")
    x = fg.tensor(values, dtype=getattr(fg, dtype), requires_grad=True)
    tx = torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # torch overflows to inf silently ([1e30, 1e30])
        n = x.norm()
    tn = tx.norm()
    assert n.dtype.name == str(tn.dtype).split(".")[-1] and n.shape == () and n.requires_grad
    assert type(n.grad_fn).__name__ == type(tn.grad_fn).__name__ == "LinalgVectorNormBackward0"
    np.testing.assert_allclose(n.item(), tn.item(), rtol=2e-7 if dtype == "float32" else 1e-15)
    # the same call through the general path (explicit arguments) gives the same bits
    assert fg.norm(x, p=2, dim=0).item() == n.item() or np.isnan(n.item())
    if values and np.isfinite(tn.item()):
        n.backward()
        tn.backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-30)


def test_default_norm_saves_its_input_and_output_as_torch():
    x = fg.tensor([3.0, 4.0], requires_grad=True)
    y = x * 1
    n = y.norm()
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        n.backward()


@pytest.mark.parametrize("value", [0.0, -0.0, 1.0, float("nan"), 3, 0, True, False])
@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
def test_bool_of_a_one_element_tensor(value, shape):
    t = fg.tensor(value).reshape(shape)
    assert bool(t) is bool(value)


def test_bool_of_other_sizes_keeps_torchs_errors():
    with pytest.raises(RuntimeError, match="^Boolean value of Tensor with more than one value is ambiguous$"):
        bool(fg.ones(2))
    with pytest.raises(RuntimeError, match="^Boolean value of Tensor with no values is ambiguous$"):
        bool(fg.ones(0))


def test_bool_inside_a_compiled_call_reads_the_traced_value():
    def f(x):
        y = x * 2
        return y * 3 if bool(y.sum() > 5) else y
    compiled = fg.compile(f)
    for values in ([1.0, 1.0], [3.0, 3.0]):
        x = fg.tensor(values)
        np.testing.assert_array_equal(compiled(x).numpy(), f(x).numpy())


@pytest.mark.parametrize("make", ["randn", "rand", "zeros", "ones", "empty"])
def test_plain_sizes_and_requires_grad(make):
    fn = getattr(fg, make)
    for size in [(3,), (0,), (2, 3), (1, 0, 2)]:
        t = fn(*size, requires_grad=True)
        assert tuple(t.shape) == size and t.requires_grad and t.is_leaf and t.grad_fn is None
        assert t.dtype is fg.float32
    with pytest.raises(RuntimeError, match=r"^Trying to create tensor with negative dimension -1: \[2, -1\]$"):
        fn(2, -1) if make != "zeros" else fg.empty(2, -1)
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype can require "
                                           "gradients$"):
        fg.zeros(2, dtype=fg.int64, requires_grad=True)
