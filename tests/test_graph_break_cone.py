"""A graph break computes only what the value it reads depends on (Trace._run_cone).

Reading a value inside fg.compile (`.item()`, `bool()`, a library's bounds check of a
target) runs the instructions that value depends on, on the reference executor. It ran
every instruction traced before the read: cross_entropy(logits, y.reshape(-1)) computed the
whole forward in NumPy at its bounds check (8x slower than with a flat target), and then
the compiled program computed it again. The other instructions run once, at the end of the
call."""
import numpy as np
import pytest

import fusegrad as fg
import fusegrad.tracer.trace as trace_module

F = fg.nn.functional


@pytest.fixture
def reference_ops(monkeypatch):
    """The ops that graph breaks run on the reference executor, in order."""
    ran = []
    real = trace_module.reference_apply

    def counting(ins, args):
        ran.append(ins.op)
        return real(ins, args)
    monkeypatch.setattr(trace_module, "reference_apply", counting)
    return ran


def test_a_break_runs_only_the_cone_of_the_value_it_reads(reference_ops):
    def f(x, y):
        heavy = (x.exp() * x.sin()).tanh()          # unrelated to the value read below
        if (y * 2).sum().item() > 0:                # a break reading y's cone only
            return heavy.sum() + 1
        return heavy.sum() - 1
    x = fg.from_numpy(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    y = fg.tensor([1.0, 2.0])
    compiled = fg.compile(f)
    result = compiled(x, y)
    assert "exp" not in reference_ops and "sin" not in reference_ops and "tanh" not in reference_ops
    assert set(reference_ops) <= {"mul", "sum"}
    expected = float((np.tanh(np.exp(x.numpy()) * np.sin(x.numpy()))).sum() + 1)
    assert result.item() == pytest.approx(expected, rel=1e-6)
    assert "reads the value" in compiled.explain(x, y)


def test_a_later_break_reuses_what_an_earlier_one_computed(reference_ops):
    def f(x):
        a = x * 3
        b = x + 1
        first = a.sum().item()                      # runs mul, sum
        second = (a * b).sum().item()               # runs add, mul, sum (not a's mul again)
        return x * first + second
    x = fg.tensor([1.0, 2.0, 3.0])
    result = fg.compile(f)(x)
    assert reference_ops.count("mul") == 2 and reference_ops.count("add") == 1
    a, b = np.array([3.0, 6.0, 9.0]), np.array([2.0, 3.0, 4.0])
    np.testing.assert_allclose(result.numpy(), np.array([1.0, 2.0, 3.0]) * a.sum() + (a * b).sum(), rtol=1e-6)


def test_cross_entropy_of_a_reshaped_target_does_not_run_the_forward_at_its_check(reference_ops):
    rng = np.random.default_rng(0)
    x = fg.from_numpy(rng.standard_normal((8, 5), dtype=np.float32))
    w = fg.from_numpy(rng.standard_normal((5, 3), dtype=np.float32))
    y = fg.tensor([[0, 1, 2, 1], [2, 2, 0, 1]])

    def loss(w, x, y):
        return F.cross_entropy(F.gelu(x @ w), y.reshape(-1))
    value, grad = fg.compile(fg.value_and_grad(loss))(w, x, y)
    assert "matmul" not in reference_ops and "erf" not in " ".join(reference_ops)
    eager_value, eager_grad = fg.value_and_grad(loss)(w, x, y)
    assert value.item() == pytest.approx(eager_value.item(), rel=1e-5)
    np.testing.assert_allclose(grad.numpy(), eager_grad.numpy(), rtol=1e-4, atol=1e-6)


def test_values_outside_every_cone_are_still_computed_and_written():
    def f(x, buf):
        buf.mul_(2)                                  # an in-place write no break reads
        n = int((x > 0).sum())                       # a break
        return x[:n] * 10
    x = fg.tensor([1.0, 2.0, -1.0])
    buf = fg.tensor([1.0, 5.0])
    out = fg.compile(f)(x, buf)
    assert out.tolist() == [10.0, 20.0]
    assert buf.tolist() == [2.0, 10.0]


def test_an_error_in_the_cone_is_raised_at_the_break():
    def f(x, idx):
        picked = x[idx * 1]                          # out of range: its value is read below
        return picked.sum().item()
    with pytest.raises(IndexError):
        fg.compile(f)(fg.tensor([1.0, 2.0]), fg.tensor([0, 5]))
