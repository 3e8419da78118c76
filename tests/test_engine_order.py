"""A backward that fails does what torch's engine does: torch runs the nodes in its own
order (a node once all its gradients arrived; of those ready, a leaf's AccumulateGrad first,
then the node made last), raises at the first node whose saved tensor was changed or freed,
and by then has accumulated the leaves' gradients it completed and freed what the nodes
that ran saved. fusegrad's engine runs another topological order (the same gradients for
less work) and, when it raises, runs again in torch's order (tracer/engine.py,
_raise_in_engine_order). Checked against torch: the error's text, each leaf's .grad after
the error, and what a second backward through the same graph raises."""
import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle for its engine's order")

# Two saved tensors changed in place: which one the error names is the order's.
TWO_ERRORS = [
    "a = x.exp(); b = x.tanh(); a.add_(1); b.add_(1); loss = (a + b).sum()",
    "a = x.exp(); b = x.tanh(); a.add_(1); b.add_(1); loss = (b + a).sum()",
    "b = x.tanh(); a = x.exp(); a.add_(1); b.add_(1); loss = (a + b).sum()",
    "a = x.exp(); b = x.tanh(); a.add_(1); b.add_(1); loss = (a * 2 + b).sum()",
    "a = x.sigmoid(); c = a * 3; b = x.exp(); a.add_(1); b.add_(1); loss = (c + b).sum()",
    "a = x.exp(); b = (x * 2).tanh(); loss = b.sum() + a.sum(); a.add_(1); b.add_(1)",
    "a = x.exp(); b = (x * 2).tanh(); loss = a.sum() + b.sum(); a.add_(1); b.add_(1)",
    # an op without a derivative: torch's NotImplemented node runs first of the ready ones
    # (its sequence number is the largest, as AccumulateGrad's), wherever it was made
    "d = w // 2; e = (x * 3).relu().pow(2).mean(); e.backward(); loss = (d * 2).sum() + (e * 3).sum()",
    "d = w // 2; e = (x * 3).exp().mean(); e.backward(); loss = (e * 3).sum() + (d * 2).sum()",
    "d = (w // 2).sum(); e = (x * 3).exp().mean(); e.backward(); loss = (d * 2).sum() + (e * 3).sum()",
]

# One changed saved tensor, and a leaf whose gradient torch completes before (or after) it.
ONE_ERROR = [
    "a = x.exp(); b = (w * 3).sum(); loss = a.sum() + b; a.add_(1)",
    "b = (w * 3).sum(); a = x.exp(); loss = b + a.sum(); a.add_(1)",
    "a = x.exp(); b = (w * w).sum(); loss = a.sum() * b; a.add_(1)",
    "a = (x * w).exp(); c = w.tanh(); loss = a.sum() + c.sum(); a.add_(1)",
    "a = (x * w).exp(); c = w.tanh(); loss = c.sum() + a.sum(); c.add_(1)",
    "a = x.sigmoid(); loss = (a * w).sum() + (w * 2).sum(); a.mul_(2)",
    "a = x.exp(); loss = (a * w).sum() + w.sum() + (x * 2).sum(); a.add_(1)",
]


def _run(lib, program: str, how: str) -> list:
    x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    w = lib.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
    namespace = {"x": x, "w": w}
    for statement in program.split("; "):
        exec(statement, namespace)
    loss = namespace["loss"]
    seen = []
    for attempt in range(2):            # the second backward meets what the first one freed
        try:
            if how == "backward":
                loss.backward()
            else:
                lib.autograd.grad(loss, [x, w])
            seen.append("no error")
        except RuntimeError as exc:
            seen.append(str(exc))
    grads = [None if t.grad is None else t.grad.numpy().copy() for t in (x, w)]
    return seen, grads


def _assert_same(program: str, how: str) -> None:
    (errors, grads), (their_errors, their_grads) = _run(fg, program, how), _run(torch, program, how)
    assert errors == their_errors
    for ours, theirs in zip(grads, their_grads):
        assert (ours is None) == (theirs is None)
        if ours is not None:
            np.testing.assert_allclose(ours, theirs, rtol=1e-6)


@pytest.mark.parametrize("how", ["backward", "autograd.grad"])
@pytest.mark.parametrize("program", TWO_ERRORS)
def test_the_error_raised_is_the_one_torchs_engine_meets_first(program, how):
    _assert_same(program, how)


@pytest.mark.parametrize("how", ["backward", "autograd.grad"])
@pytest.mark.parametrize("program", ONE_ERROR)
def test_a_failed_backward_leaves_the_gradients_and_freed_nodes_torchs_does(program, how):
    _assert_same(program, how)


def test_a_custom_function_backward_runs_once_when_the_backward_fails():
    """User code (a custom Function's backward) is not run a second time to find torch's
    order: the error is the one met first in fusegrad's own order."""
    calls = []

    class Twice(fg.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            calls.append(1)
            return g * 2

    x = fg.tensor([1.0, 2.0], requires_grad=True)
    a = x.exp()
    loss = a.sum() + Twice.apply(x).sum()      # (fusegrad's order runs Twice's backward first)
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    assert len(calls) == 1


# Both operands of one node changed: torch's node unpacks its saved tensors by name (`other`
# before `self`, `min`/`max` before `self`, `mat2` before `self`), and the first that fails
# its check is the one the error names.
BOTH_OPERANDS_CHANGED = {
    "maximum": lambda L, u, v: L.maximum(u, v),
    "minimum": lambda L, u, v: L.minimum(u, v),
    "clamp_min": lambda L, u, v: L.clamp(u, min=v.reshape(2)),
    "clamp_max": lambda L, u, v: L.clamp(u, max=v.reshape(2)),
    "mul": lambda L, u, v: u * v,
    "div": lambda L, u, v: u / v,
    "pow": lambda L, u, v: u ** v,
    "matmul": lambda L, u, v: u.reshape(2, 1) @ v.reshape(1, 2),
    # (self before the vector: DotBackward0's self, tensor and MvBackward0's self, vec)
    "matmul 1-d @ 1-d": lambda L, u, v: u @ v.reshape(2),
    "matmul 2-d @ 1-d": lambda L, u, v: v @ u,
    "matmul 1-d @ 2-d": lambda L, u, v: u @ v.reshape(2, 1),
    "matmul 3-d @ 1-d": lambda L, u, v: v.reshape(1, 1, 2) @ u,
    "matmul 3-d @ 3-d": lambda L, u, v: v.reshape(1, 1, 2) @ u.reshape(1, 2, 1),
    "where": lambda L, u, v: L.where(u > 1.5, u * u, v.exp()),
}


@pytest.mark.parametrize("op", list(BOTH_OPERANDS_CHANGED))
def test_a_node_whose_saved_operands_both_changed_names_the_one_torch_checks_first(op):
    texts = []
    for lib in (torch, fg):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = lib.tensor([[3.0, 1.0]], requires_grad=True)
        u, v = x * 1, y * 1
        out = BOTH_OPERANDS_CHANGED[op](lib, u, v)
        u.add_(1)
        v.add_(1)
        with pytest.raises(RuntimeError) as raised:
            out.sum().backward()
        texts.append(str(raised.value))
    assert texts[1] == texts[0]


# A reduction's node that saves its input and its result (the norm of a loop's stopping
# test, max(), amax, std) checks `self` first; fusegrad's checked the result first.
INPUT_AND_RESULT_CHANGED = {
    "norm": lambda x: x.norm(),
    "norm p=1": lambda x: x.norm(p=1),
    "norm dim": lambda x: x.norm(dim=0),
    "max": lambda x: x.max(),
    "min": lambda x: x.min(),
    "amax": lambda x: x.amax(0),
    "amin": lambda x: x.amin(0),
    "std": lambda x: x.std(),
}


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("op", list(INPUT_AND_RESULT_CHANGED))
def test_a_reduction_whose_input_and_result_both_changed_names_the_input(op, compiled):
    def run(lib):
        def step(x):
            u = x * 1
            out = INPUT_AND_RESULT_CHANGED[op](u)
            u.add_(1)
            out.mul_(2)
            return out
        x = lib.tensor([1.5, 2.5, 3.5], requires_grad=True)
        out = (fg.compile(step) if compiled and lib is fg else step)(x)
        with pytest.raises(RuntimeError) as raised:
            out.sum().backward()
        return str(raised.value)
    assert run(fg) == run(torch)
