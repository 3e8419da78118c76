"""RMSprop and the learning-rate schedulers against torch: schedules bit for bit (torch's
chainable formulas, the closed forms for step(epoch), the order and deprecation
warnings), RMSprop trajectories to float32 rounding (torch's float32 sqrt is not
always correctly rounded), their argument checks and reprs, and a compiled training
step whose learning rate a scheduler changes (no recompile)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")

SCHEDULES = {
    "StepLR": lambda lib, opt: lib.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5),
    "MultiStepLR": lambda lib, opt: lib.optim.lr_scheduler.MultiStepLR(opt, milestones=[2, 5, 5, 9], gamma=0.3),
    "ExponentialLR": lambda lib, opt: lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9),
    "CosineAnnealingLR": lambda lib, opt: lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=7, eta_min=0.01),
    "LambdaLR": lambda lib, opt: lib.optim.lr_scheduler.LambdaLR(opt, lambda epoch: 0.95 ** epoch),
    "LambdaLR per group": lambda lib, opt: lib.optim.lr_scheduler.LambdaLR(
        opt, [lambda epoch: 1 / (epoch + 1), lambda epoch: epoch]),
    "MultiplicativeLR": lambda lib, opt: lib.optim.lr_scheduler.MultiplicativeLR(opt, lambda epoch: 0.97),
    "ConstantLR": lambda lib, opt: lib.optim.lr_scheduler.ConstantLR(opt, factor=0.4, total_iters=4),
    "LinearLR": lambda lib, opt: lib.optim.lr_scheduler.LinearLR(opt, start_factor=0.2, end_factor=0.9,
                                                                 total_iters=6),
    "PolynomialLR": lambda lib, opt: lib.optim.lr_scheduler.PolynomialLR(opt, total_iters=8, power=2.0),
}


def _schedule(lib, make, optimizer_first=True, epoch_argument=False, steps=25):
    """The lrs after each step (two groups), the warnings, and the last epoch."""
    p, q = lib.ones(3, requires_grad=True), lib.ones(2, requires_grad=True)
    opt = lib.optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.5}], lr=0.1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scheduler = make(lib, opt)
        lrs = [scheduler.get_last_lr()]
        for epoch in range(1, steps + 1):
            if optimizer_first:
                opt.step()
            scheduler.step(epoch) if epoch_argument else scheduler.step()
            lrs.append(scheduler.get_last_lr())
    return lrs, [str(w.message) for w in caught], scheduler.last_epoch, [g["lr"] for g in opt.param_groups]


@pytest.mark.parametrize("mode", [{}, {"optimizer_first": False}, {"epoch_argument": True}], ids=str)
@pytest.mark.parametrize("name", list(SCHEDULES))
def test_schedules_match_torch_bit_for_bit(name, mode):
    assert _schedule(fg, SCHEDULES[name], **mode) == _schedule(torch, SCHEDULES[name], **mode)


def test_scheduler_state_and_errors_match_torch():
    def observe(lib):
        opt = lib.optim.SGD([lib.ones(2, requires_grad=True)], lr=0.1)
        scheduler = lib.optim.lr_scheduler.StepLR(opt, 2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            next_lrs = scheduler.get_lr()
        errors = []
        for bad in (lambda: lib.optim.lr_scheduler.StepLR("x", 2),
                    lambda: lib.optim.lr_scheduler.StepLR(lib.optim.SGD([lib.ones(1, requires_grad=True)], lr=1),
                                                          2, last_epoch=3)):
            with pytest.raises(Exception) as info:
                bad()
            errors.append((type(info.value).__name__, str(info.value)))
        return next_lrs, [str(w.message) for w in caught], sorted(scheduler.state_dict()), errors
    assert observe(fg) == observe(torch)


def test_load_state_dict_resumes_the_schedule():
    opt = fg.optim.SGD([fg.ones(2, requires_grad=True)], lr=1.0)
    first = fg.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    for _ in range(3):
        opt.step()
        first.step()
    second = fg.optim.lr_scheduler.ExponentialLR(fg.optim.SGD([fg.ones(2, requires_grad=True)], lr=1.0), gamma=0.9)
    second.load_state_dict(first.state_dict())
    assert second.last_epoch == 3 and second.gamma == 0.5 and second.get_last_lr() == [0.125]


def _rmsprop(lib, **kwargs):
    rng = np.random.default_rng(0)
    p = lib.tensor(rng.standard_normal((20, 10)).astype(np.float32), requires_grad=True)
    opt = lib.optim.RMSprop([p], **kwargs)
    for _ in range(15):
        p.grad = lib.tensor(rng.standard_normal((20, 10)).astype(np.float32))
        opt.step()
    return p.detach().numpy(), sorted(opt.state[p]), float(opt.state[p]["step"])


@pytest.mark.parametrize("kwargs", [{}, {"momentum": 0.9}, {"centered": True},
                                    {"centered": True, "momentum": 0.5, "weight_decay": 0.1},
                                    {"maximize": True, "alpha": 0.3}], ids=str)
def test_rmsprop_follows_torch(kwargs):
    (ours, our_state, our_step), (theirs, their_state, their_step) = _rmsprop(fg, **kwargs), _rmsprop(torch, **kwargs)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6)
    assert our_state == their_state and our_step == their_step == 15.0


@pytest.mark.parametrize("kwargs", [{"lr": -1}, {"eps": -1}, {"momentum": -1}, {"weight_decay": -1}, {"alpha": -1}],
                         ids=str)
def test_rmsprop_argument_checks_match_torch(kwargs):
    def error(lib):
        with pytest.raises(ValueError) as info:
            lib.optim.RMSprop([lib.ones(2, requires_grad=True)], **kwargs)
        return str(info.value)
    assert error(fg) == error(torch)


def test_rmsprop_repr_matches_torch():
    assert repr(fg.optim.RMSprop([fg.ones(2, requires_grad=True)], lr=0.1, centered=True)) == \
        repr(torch.optim.RMSprop([torch.ones(2, requires_grad=True)], lr=0.1, centered=True))


def test_a_compiled_step_follows_its_schedule_without_recompiling():
    def train(lib, compiled):
        lib.manual_seed(0)
        layer = lib.nn.Linear(4, 1)
        opt = lib.optim.SGD(layer.parameters(), lr=0.2)
        scheduler = lib.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        x = lib.tensor(np.linspace(-1, 1, 32, dtype=np.float32).reshape(8, 4))

        def step(x):
            opt.zero_grad()
            loss = (layer(x) ** 2).mean()
            loss.backward()
            opt.step()
            return loss
        step = fg.compile(step) if compiled else step
        losses = []
        for _ in range(6):
            losses.append(step(x).item())
            scheduler.step()
        return losses
    eager = train(fg, False)
    before = fg.cache_info()
    compiled = train(fg, True)
    after = fg.cache_info()
    np.testing.assert_allclose(compiled, eager, rtol=1e-5)
    np.testing.assert_allclose(eager, train(torch, False), rtol=1e-5)
    assert after.misses - before.misses <= 1          # one program, whatever the lr


@pytest.mark.parametrize("kwargs", [{}, dict(mode="max", factor=0.5, patience=1, threshold_mode="abs", cooldown=2),
                                    dict(patience=0, min_lr=[0.05, 0.3], threshold=0.1), dict(eps=0.2)])
def test_reduce_lr_on_plateau_follows_torch(kwargs):
    metrics = [1.0, 0.9, 0.95, 0.95, 0.96, 0.8, 0.8, 0.81, 0.82, 0.83, 0.7, 0.7, 0.75, 0.9, 1.1, 1.2, 0.5]

    def run(lib):
        p, q = lib.ones(3, requires_grad=True), lib.ones(2, requires_grad=True)
        opt = lib.optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.5}], lr=0.1)
        scheduler = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
        seen = []
        for m in metrics:
            opt.step()
            scheduler.step(lib.tensor(m) if len(seen) % 2 else m)
            seen.append((scheduler.get_last_lr(), scheduler.num_bad_epochs, scheduler.cooldown_counter,
                         scheduler.best, scheduler.last_epoch))
        state = {k: v for k, v in scheduler.state_dict().items()}
        return seen, sorted(state)
    assert run(fg) == run(torch)


@pytest.mark.parametrize("bad", [
    lambda lib, opt: lib.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=1.0),
    lambda lib, opt: lib.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="up"),
    lambda lib, opt: lib.optim.lr_scheduler.ReduceLROnPlateau(opt, threshold_mode="x"),
    lambda lib, opt: lib.optim.lr_scheduler.ReduceLROnPlateau(opt, min_lr=[0.1, 0.2]),
    lambda lib, opt: lib.optim.lr_scheduler.ConstantLR(opt, factor=1.5),
    lambda lib, opt: lib.optim.lr_scheduler.LinearLR(opt, start_factor=0),
    lambda lib, opt: lib.optim.lr_scheduler.LinearLR(opt, end_factor=2),
    lambda lib, opt: lib.optim.lr_scheduler.MultiplicativeLR(opt, 0.5),
])
def test_new_schedulers_argument_errors_match_torch(bad):
    def error(lib):
        opt = lib.optim.SGD([lib.ones(2, requires_grad=True)], lr=0.1)
        with pytest.raises(Exception) as info:
            bad(lib, opt)
        return type(info.value).__name__, str(info.value)
    assert error(fg) == error(torch)
