"""Round 27 of torch parity (a re-run of the earlier probes on the tree): get_last_lr() hands out
copies of tensor learning rates, which later steps fill in place, and `2**63 / bool_tensor`
divides as torch does (its reciprocal is a float tensor) while the forms that promote the int
with the bool tensor keep torch's error."""
import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch")
from parity_support import exact_outcome  # noqa: E402  (after the skip)


def _lr_history(L, make_scheduler, tensor_lr: bool, steps: int = 4):
    p = L.nn.Parameter(L.ones(2))
    optimizer = L.optim.SGD([p], lr=L.tensor(0.1) if tensor_lr else 0.1)
    scheduler = make_scheduler(L, optimizer)
    history = []
    for _ in range(steps):
        p.grad = L.ones(2)
        optimizer.step()
        scheduler.step()
        history.append(scheduler.get_last_lr())
    # read after all steps: an earlier reading must not have changed since
    return [[float(v) for v in lrs] for lrs in history], [type(v).__name__ for v in history[-1]]


SCHEDULERS = {
    "LambdaLR returning a tensor": lambda L, o: L.optim.lr_scheduler.LambdaLR(o, lambda e: L.tensor(0.5) ** e),
    "StepLR": lambda L, o: L.optim.lr_scheduler.StepLR(o, 1, 0.5),
    "CosineAnnealingLR": lambda L, o: L.optim.lr_scheduler.CosineAnnealingLR(o, T_max=5),
    "ExponentialLR": lambda L, o: L.optim.lr_scheduler.ExponentialLR(o, 0.9),
    "ChainedScheduler": lambda L, o: L.optim.lr_scheduler.ChainedScheduler(
        [L.optim.lr_scheduler.StepLR(o, 1, 0.5), L.optim.lr_scheduler.ExponentialLR(o, 0.9)]),
    "SequentialLR": lambda L, o: L.optim.lr_scheduler.SequentialLR(
        o, [L.optim.lr_scheduler.ConstantLR(o, factor=0.5, total_iters=2),
            L.optim.lr_scheduler.ExponentialLR(o, 0.9)], milestones=[2]),
}


@pytest.mark.parametrize("tensor_lr", [False, True])
@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_get_last_lr_readings_stay_as_they_were(name, tensor_lr):
    expected = _lr_history(torch, SCHEDULERS[name], tensor_lr)
    got = _lr_history(fg, SCHEDULERS[name], tensor_lr)
    assert got[1] == expected[1]
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-6)


@pytest.mark.parametrize("source", [
    "2**63 / L.tensor([True, False])",
    "2**63 / L.tensor(True)",
    "(2**63 + 5) / L.tensor([True, False])",
    "2**64 / L.tensor([True])",
    "L.tensor([True, False]) / 2**63",
    "L.tensor([True, False]) + 2**63",
    "2**63 / L.tensor([1, 2])",
])
@pytest.mark.parametrize("compiled", [False, True])
def test_a_python_int_past_int64_divided_by_a_bool_tensor(source, compiled):
    def run(L):
        f = eval(f"lambda L: {source}")
        return (fg.compile(f) if compiled and L is fg else f)(L)
    assert exact_outcome(lambda: run(fg)) == exact_outcome(lambda: run(torch))
