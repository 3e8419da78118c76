"""OneCycleLR, CyclicLR, CosineAnnealingWarmRestarts, SequentialLR and ChainedScheduler against
torch: every group's lr and momentum (SGD's `momentum`, Adam's `betas`) after each step bit for
bit, the warnings, the state_dicts (contents and round trips), step(epoch), combinations with
the other schedulers, and the argument errors' classes and texts."""
from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")


def _sched(lib):
    return lib.optim.lr_scheduler


def _optimizer(lib, kind):
    """Two groups (lrs 0.1 and 0.5) of one optimizer kind."""
    p, q = lib.ones(3, requires_grad=True), lib.ones(2, requires_grad=True)
    groups = [{"params": [p]}, {"params": [q], "lr": 0.5}]
    if kind == "sgd":
        return lib.optim.SGD(groups, lr=0.1, momentum=0.9)
    if kind == "adam":
        return lib.optim.Adam(groups, lr=0.1, betas=(0.9, 0.99))
    if kind == "adamw":
        return lib.optim.AdamW(groups, lr=0.1)
    return lib.optim.RMSprop(groups, lr=0.1)


def _plain_optimizer(lib):
    """An optimizer with neither momentum nor betas."""
    class Plain(lib.optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, dict(lr=0.1))
    return Plain([lib.ones(2, requires_grad=True)])


def _groups(opt):
    """What the schedulers write in the groups (lr, momentum / betas and their own keys)."""
    keys = ("lr", "momentum", "betas", "initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum")
    return [{key: group[key] for key in keys if key in group} for group in opt.param_groups]


def _schedule(lib, make, kind="sgd", steps=40, optimizer_first=True, epochs=None):
    """The groups after construction and after each step, the warnings, and the last state_dict."""
    opt = _optimizer(lib, kind)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scheduler = make(lib, opt)
        seen = [(scheduler.get_last_lr(), _groups(opt))]
        for epoch in (range(1, steps + 1) if epochs is None else epochs):
            if optimizer_first:
                opt.step()
            scheduler.step() if epochs is None else scheduler.step(epoch)
            seen.append((scheduler.get_last_lr(), _groups(opt), getattr(scheduler, "last_epoch", None)))
    return seen, [str(w.message) for w in caught], scheduler.state_dict()


ONE_CYCLE = {
    "defaults": lambda lib, opt: _sched(lib).OneCycleLR(opt, 1.0, total_steps=40),
    "per group, linear, three phases": lambda lib, opt: _sched(lib).OneCycleLR(
        opt, [0.5, 2.0], epochs=4, steps_per_epoch=10, anneal_strategy="linear", three_phase=True),
    "three phases cos": lambda lib, opt: _sched(lib).OneCycleLR(opt, 0.3, total_steps=41, pct_start=0.4,
                                                                three_phase=True),
    "momentum bounds": lambda lib, opt: _sched(lib).OneCycleLR(
        opt, 0.8, total_steps=45, pct_start=0.25, div_factor=10.0, final_div_factor=100.0,
        base_momentum=[0.8, 0.7], max_momentum=(0.99, 0.95)),
    "no momentum cycle": lambda lib, opt: _sched(lib).OneCycleLR(opt, 2.0, total_steps=40, cycle_momentum=False),
}

CYCLIC = {
    "triangular": lambda lib, opt: _sched(lib).CyclicLR(opt, 0.01, 0.1, step_size_up=4),
    "triangular2 uneven": lambda lib, opt: _sched(lib).CyclicLR(opt, [0.01, 0.05], [0.1, 1.0], step_size_up=3,
                                                                step_size_down=5, mode="triangular2"),
    "exp_range": lambda lib, opt: _sched(lib).CyclicLR(opt, 0.001, 0.2, step_size_up=5, mode="exp_range",
                                                       gamma=0.97, base_momentum=[0.7, 0.75], max_momentum=0.95),
    "scale_fn by cycle": lambda lib, opt: _sched(lib).CyclicLR(opt, 0.02, 0.3, step_size_up=2, step_size_down=4,
                                                               scale_fn=lambda x: 0.7 ** x),
    "scale_fn by iteration": lambda lib, opt: _sched(lib).CyclicLR(opt, 0.02, 0.3, step_size_up=6,
                                                                   scale_fn=lambda x: 1 / (1 + x),
                                                                   scale_mode="iterations"),
    "no momentum cycle": lambda lib, opt: _sched(lib).CyclicLR(opt, 0.01, 0.1, step_size_up=3,
                                                               cycle_momentum=False),
}

WARM_RESTARTS = {
    "T_0": lambda lib, opt: _sched(lib).CosineAnnealingWarmRestarts(opt, 5),
    "T_mult, eta_min": lambda lib, opt: _sched(lib).CosineAnnealingWarmRestarts(opt, 3, T_mult=2, eta_min=0.01),
    "T_mult 3": lambda lib, opt: _sched(lib).CosineAnnealingWarmRestarts(opt, 2, T_mult=3, eta_min=1e-3),
}

COMBINED = {
    "sequential constant, exponential": lambda lib, opt: _sched(lib).SequentialLR(
        opt, [_sched(lib).ConstantLR(opt, factor=0.5, total_iters=3), _sched(lib).ExponentialLR(opt, 0.9)], [3]),
    "sequential linear, cosine, step": lambda lib, opt: _sched(lib).SequentialLR(
        opt, [_sched(lib).LinearLR(opt, 0.1, total_iters=5), _sched(lib).CosineAnnealingLR(opt, T_max=10),
              _sched(lib).StepLR(opt, 3, gamma=0.5)], milestones=[5, 15]),
    "sequential warmup, warm restarts": lambda lib, opt: _sched(lib).SequentialLR(
        opt, [_sched(lib).LinearLR(opt, 0.25, total_iters=4),
              _sched(lib).CosineAnnealingWarmRestarts(opt, 4, T_mult=2, eta_min=0.001)], milestones=[4]),
    "sequential multistep, polynomial, lambda": lambda lib, opt: _sched(lib).SequentialLR(
        opt, [_sched(lib).MultiStepLR(opt, [2, 4], 0.5), _sched(lib).PolynomialLR(opt, 6, 2.0),
              _sched(lib).LambdaLR(opt, lambda e: 0.9 ** e)], milestones=[6, 6 + 9]),
    "sequential of one": lambda lib, opt: _sched(lib).SequentialLR(opt, [_sched(lib).StepLR(opt, 4)], []),
    "chained constant, exponential": lambda lib, opt: _sched(lib).ChainedScheduler(
        [_sched(lib).ConstantLR(opt, factor=0.1, total_iters=2), _sched(lib).ExponentialLR(opt, gamma=0.9)]),
    "chained step, cosine, multiplicative (optimizer given)": lambda lib, opt: _sched(lib).ChainedScheduler(
        [_sched(lib).StepLR(opt, 3, 0.5), _sched(lib).CosineAnnealingLR(opt, T_max=8, eta_min=0.01),
         _sched(lib).MultiplicativeLR(opt, lambda e: 0.99)], optimizer=opt),
    "chained linear, cyclic": lambda lib, opt: _sched(lib).ChainedScheduler(
        [_sched(lib).CyclicLR(opt, 0.01, 0.1, step_size_up=3), _sched(lib).LinearLR(opt, 0.5, total_iters=6)]),
    "chained with a sequential inside": lambda lib, opt: _sched(lib).ChainedScheduler([
        _sched(lib).SequentialLR(opt, [_sched(lib).ConstantLR(opt, 0.5, 2), _sched(lib).ExponentialLR(opt, 0.95)],
                                 [4]),
        _sched(lib).StepLR(opt, 5, 0.5)]),
    "sequential with a chain first": lambda lib, opt: _sched(lib).SequentialLR(opt, [
        _sched(lib).ChainedScheduler([_sched(lib).ExponentialLR(opt, 0.9), _sched(lib).StepLR(opt, 4, 0.5)]),
        _sched(lib).LinearLR(opt, 0.2, total_iters=3)], [7]),
}


def _same_as_torch(make, **kwargs):
    ours, theirs = _schedule(fg, make, **kwargs), _schedule(torch, make, **kwargs)
    assert ours[0] == theirs[0]
    assert ours[1] == theirs[1]
    assert sorted(ours[2]) == sorted(theirs[2])
    return ours, theirs


@pytest.mark.parametrize("kind", ["sgd", "adam"])
@pytest.mark.parametrize("name", list(ONE_CYCLE))
def test_one_cycle_lr_and_momentum_match_torch(name, kind):
    ours, theirs = _same_as_torch(ONE_CYCLE[name], kind=kind, steps=40)
    assert ours[2] == theirs[2]                    # the state_dict's values too


@pytest.mark.parametrize("kind", ["sgd", "adam", "adamw", "rmsprop"])
@pytest.mark.parametrize("name", list(CYCLIC))
def test_cyclic_lr_and_momentum_match_torch(name, kind):
    ours, theirs = _same_as_torch(CYCLIC[name], kind=kind, steps=36)
    assert "_scale_fn_ref" not in ours[2] and ours[2]["_scale_fn_custom"] is None
    assert ours[2] == theirs[2]


@pytest.mark.parametrize("name", list(WARM_RESTARTS))
def test_cosine_annealing_warm_restarts_matches_torch(name):
    ours, theirs = _same_as_torch(WARM_RESTARTS[name], steps=50)
    assert ours[2] == theirs[2]


@pytest.mark.parametrize("name", list(WARM_RESTARTS))
def test_warm_restarts_step_epoch_matches_torch(name):
    """Fractional and out-of-order epochs; no warnings (torch's step counts nothing)."""
    epochs = [0.5, 1, 1.25, 2.9, 3, 4.5, 7, 8.75, 9, 10.5, 2, 20.25, 21, 0, 33.3, 45, 46.5, 6, 100, 101.5,
              13, 14, 15.5, 31, 63, 64.75, 1, 5, 5.5, 6.5]
    ours, theirs = _same_as_torch(WARM_RESTARTS[name], epochs=epochs)
    assert ours[1] == [] and ours[2] == theirs[2]


@pytest.mark.parametrize("kind", ["sgd", "adam"])
@pytest.mark.parametrize("name", list(COMBINED))
def test_sequential_and_chained_match_torch(name, kind):
    ours, theirs = _same_as_torch(COMBINED[name], kind=kind, steps=35)
    assert ours[2] == theirs[2]


@pytest.mark.parametrize("make", [ONE_CYCLE["defaults"], CYCLIC["exp_range"], WARM_RESTARTS["T_mult, eta_min"],
                                  COMBINED["sequential linear, cosine, step"],
                                  COMBINED["chained constant, exponential"]],
                         ids=["OneCycleLR", "CyclicLR", "CosineAnnealingWarmRestarts", "SequentialLR",
                              "ChainedScheduler"])
def test_scheduler_before_optimizer_warns_as_torch(make):
    _same_as_torch(make, steps=6, optimizer_first=False)


@pytest.mark.parametrize("make", [ONE_CYCLE["per group, linear, three phases"], CYCLIC["triangular2 uneven"]],
                         ids=["OneCycleLR", "CyclicLR"])
def test_step_with_epoch_matches_torch(make):
    """No closed form: get_lr at the given epoch, with the deprecation warning."""
    _same_as_torch(make, epochs=[1, 2, 5, 3, 17, 30, 0, 12, 39, 40, 8])


def test_a_chain_reached_at_a_milestone_raises_as_torch():
    """SequentialLR sets the scheduler of a milestone to its epoch 0, which a ChainedScheduler
    cannot (torch's get_lr: NotImplementedError)."""
    def run(lib):
        opt = _optimizer(lib, "sgd")
        chain = _sched(lib).ChainedScheduler([_sched(lib).ExponentialLR(opt, 0.9), _sched(lib).StepLR(opt, 4)])
        scheduler = _sched(lib).SequentialLR(opt, [_sched(lib).LinearLR(opt, 0.2, total_iters=3), chain], [3])
        lrs = []
        with pytest.raises(NotImplementedError):
            for _ in range(3):
                opt.step()
                scheduler.step()
                lrs.append(scheduler.get_last_lr())
        return lrs, _groups(opt), scheduler.last_epoch
    assert run(fg) == run(torch)


def test_one_cycle_past_total_steps_raises_as_torch():
    def error(lib):
        opt = _optimizer(lib, "sgd")
        scheduler = _sched(lib).OneCycleLR(opt, 1.0, total_steps=5)
        for _ in range(5):
            opt.step()
            scheduler.step()
        with pytest.raises(ValueError) as info:
            scheduler.step()
        return str(info.value), _groups(opt)
    ours = error(fg)
    assert ours == error(torch) and ours[0] == "Tried to step 6 times. The specified number of total steps is 5"


def test_get_lr_outside_step_warns_as_torch():
    def observe(lib):
        opt = _optimizer(lib, "adam")
        schedulers = [_sched(lib).OneCycleLR(opt, 1.0, total_steps=10), _sched(lib).CyclicLR(opt, 0.1, 1.0),
                      _sched(lib).CosineAnnealingWarmRestarts(opt, 3)]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            values = [s.get_lr() for s in schedulers]
        return values, [str(w.message) for w in caught]
    assert observe(fg) == observe(torch)


def _resume(lib, make, kind, before, after, via_pickle=False):
    """Run `before` steps, save the optimizer's and scheduler's state, build both anew from
    another start, load, and run `after` more steps."""
    opt = _optimizer(lib, kind)
    scheduler = make(lib, opt)
    for _ in range(before):
        opt.step()
        scheduler.step()
    opt_state, state = opt.state_dict(), scheduler.state_dict()
    if via_pickle:
        state = pickle.loads(pickle.dumps(state))
    fresh_opt = _optimizer(lib, kind)
    fresh = make(lib, fresh_opt)
    fresh_opt.load_state_dict(opt_state)
    fresh.load_state_dict(state)
    seen = []
    for _ in range(after):
        fresh_opt.step()
        fresh.step()
        seen.append((fresh.get_last_lr(), _groups(fresh_opt)))
    return seen, fresh.state_dict()


RESUMABLE = {
    "OneCycleLR": (ONE_CYCLE["per group, linear, three phases"], "adam"),
    "CyclicLR": (CYCLIC["triangular2 uneven"], "sgd"),
    "CyclicLR exp_range": (CYCLIC["exp_range"], "adam"),
    "CosineAnnealingWarmRestarts": (WARM_RESTARTS["T_mult, eta_min"], "sgd"),
    "SequentialLR": (COMBINED["sequential linear, cosine, step"], "sgd"),
    "ChainedScheduler": (COMBINED["chained step, cosine, multiplicative (optimizer given)"], "adam"),
    "nested": (COMBINED["chained with a sequential inside"], "sgd"),
}


@pytest.mark.parametrize("name", list(RESUMABLE))
def test_state_dict_round_trip_resumes_as_uninterrupted(name):
    make, kind = RESUMABLE[name]
    opt = _optimizer(fg, kind)
    scheduler = make(fg, opt)
    straight = []
    for step in range(1, 31):
        opt.step()
        scheduler.step()
        if step > 12:
            straight.append((scheduler.get_last_lr(), _groups(opt)))
    via_pickle = name != "nested"          # (LambdaLR/MultiplicativeLR lambdas are not saved anyway)
    resumed, state = _resume(fg, make, kind, 12, 18, via_pickle=via_pickle)
    assert resumed == straight
    assert resumed == _resume(torch, make, kind, 12, 18, via_pickle=via_pickle)[0]
    assert sorted(state) == sorted(scheduler.state_dict())


def test_state_dict_leaves_its_argument_whole():
    for make in (CYCLIC["triangular"], COMBINED["sequential constant, exponential"],
                 COMBINED["chained constant, exponential"]):
        scheduler = make(fg, _optimizer(fg, "sgd"))
        state = scheduler.state_dict()
        keys = sorted(state)
        make(fg, _optimizer(fg, "sgd")).load_state_dict(state)
        assert sorted(state) == keys


class _Halving:
    """A callable scale function with state (CyclicLR saves its __dict__)."""

    def __init__(self, base):
        self.base = base

    def __call__(self, x):
        return self.base ** x


def test_cyclic_callable_scale_fn_state_matches_torch():
    def run(lib):
        opt = _optimizer(lib, "sgd")
        scheduler = _sched(lib).CyclicLR(opt, 0.01, 0.1, step_size_up=2, scale_fn=_Halving(0.5))
        for _ in range(5):
            opt.step()
            scheduler.step()
        state = scheduler.state_dict()
        saved = dict(state)
        other_opt = _optimizer(lib, "sgd")
        other = _sched(lib).CyclicLR(other_opt, 0.01, 0.1, step_size_up=2, scale_fn=_Halving(0.9))
        other.load_state_dict(state)
        lrs = []
        for _ in range(8):
            other_opt.step()
            other.step()
            lrs.append(other.get_last_lr())
        return saved, other._scale_fn_custom.base, lrs
    ours = run(fg)
    assert ours[0]["_scale_fn_custom"] == {"base": 0.5} and ours[1] == 0.5
    assert ours == run(torch)


def test_cycled_momentum_drives_the_optimizers_as_torch():
    """The optimizers take the momentum / beta1 the schedulers write (to float32 rounding)."""
    def train(lib, kind, make):
        opt = _optimizer(lib, kind)
        scheduler = make(lib, opt)
        params = [p for group in opt.param_groups for p in group["params"]]
        rng = np.random.default_rng(0)
        for _ in range(20):
            for p in params:
                p.grad = lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32))
            opt.step()
            scheduler.step()
        return [p.detach().numpy().copy() for p in params]
    for kind in ("sgd", "adam"):
        for make in (ONE_CYCLE["defaults"], CYCLIC["exp_range"]):
            for ours, theirs in zip(train(fg, kind, make), train(torch, kind, make)):
                np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def _sgd1(lib):
    return lib.optim.SGD([lib.ones(2, requires_grad=True)], lr=0.1)


BAD = {
    "OneCycleLR not an optimizer": lambda lib, opt: _sched(lib).OneCycleLR("x", 1.0, total_steps=5),
    "OneCycleLR no length": lambda lib, opt: _sched(lib).OneCycleLR(opt, 1.0),
    "OneCycleLR epochs only": lambda lib, opt: _sched(lib).OneCycleLR(opt, 1.0, epochs=3),
    "OneCycleLR total_steps 0": lambda lib, opt: _sched(lib).OneCycleLR(opt, 1.0, total_steps=0),
    "OneCycleLR total_steps float": lambda lib, opt: _sched(lib).OneCycleLR(opt, 1.0, total_steps=2.5),
    "OneCycleLR epochs 0": lambda lib, opt: _sched(lib).OneCycleLR(opt, 1.0, epochs=0, steps_per_epoch=3),
    "OneCycleLR steps_per_epoch float": lambda lib, opt: _sched(lib).OneCycleLR(opt, 1.0, epochs=2,
                                                                                 steps_per_epoch=1.5),
    "OneCycleLR pct_start int": lambda lib, opt: _sched(lib).OneCycleLR(opt, 1.0, total_steps=5, pct_start=1),
    "OneCycleLR pct_start > 1": lambda lib, opt: _sched(lib).OneCycleLR(opt, 1.0, total_steps=5, pct_start=1.5),
    "OneCycleLR anneal": lambda lib, opt: _sched(lib).OneCycleLR(opt, 1.0, total_steps=5, anneal_strategy="exp"),
    "OneCycleLR max_lr length": lambda lib, opt: _sched(lib).OneCycleLR(opt, [1.0, 2.0, 3.0], total_steps=5),
    "OneCycleLR momentum length": lambda lib, opt: _sched(lib).OneCycleLR(opt, 1.0, total_steps=5,
                                                                           base_momentum=[0.8]),
    "OneCycleLR no momentum": lambda lib, opt: _sched(lib).OneCycleLR(_plain_optimizer(lib), 1.0, total_steps=5),
    "CyclicLR not an optimizer": lambda lib, opt: _sched(lib).CyclicLR(None, 0.1, 1.0),
    "CyclicLR base_lr length": lambda lib, opt: _sched(lib).CyclicLR(opt, [0.1], 1.0),
    "CyclicLR max_lr length": lambda lib, opt: _sched(lib).CyclicLR(opt, 0.1, (1.0, 2.0, 3.0)),
    "CyclicLR mode": lambda lib, opt: _sched(lib).CyclicLR(opt, 0.1, 1.0, mode="sawtooth"),
    "CyclicLR no momentum": lambda lib, opt: _sched(lib).CyclicLR(_plain_optimizer(lib), 0.1, 1.0),
    "CyclicLR max_momentum length": lambda lib, opt: _sched(lib).CyclicLR(opt, 0.1, 1.0, max_momentum=[0.9] * 3),
    "WarmRestarts T_0 0": lambda lib, opt: _sched(lib).CosineAnnealingWarmRestarts(opt, 0),
    "WarmRestarts T_0 float": lambda lib, opt: _sched(lib).CosineAnnealingWarmRestarts(opt, 2.0),
    "WarmRestarts T_mult 0": lambda lib, opt: _sched(lib).CosineAnnealingWarmRestarts(opt, 2, T_mult=0),
    "WarmRestarts T_mult float": lambda lib, opt: _sched(lib).CosineAnnealingWarmRestarts(opt, 2, T_mult=1.5),
    "WarmRestarts eta_min": lambda lib, opt: _sched(lib).CosineAnnealingWarmRestarts(opt, 2, eta_min="0"),
    "WarmRestarts negative epoch": lambda lib, opt: _sched(lib).CosineAnnealingWarmRestarts(opt, 2).step(-1),
    "WarmRestarts resume without initial_lr": lambda lib, opt: _sched(lib).CosineAnnealingWarmRestarts(
        opt, 2, last_epoch=3),
    "SequentialLR none": lambda lib, opt: _sched(lib).SequentialLR(opt, [], []),
    "SequentialLR milestones": lambda lib, opt: _sched(lib).SequentialLR(
        opt, [_sched(lib).StepLR(opt, 2), _sched(lib).ExponentialLR(opt, 0.9)], [2, 4]),
    "SequentialLR other optimizer": lambda lib, opt: _sched(lib).SequentialLR(
        opt, [_sched(lib).StepLR(opt, 2), _sched(lib).StepLR(_sgd1(lib), 2)], [2]),
    "SequentialLR plateau": lambda lib, opt: _sched(lib).SequentialLR(
        opt, [_sched(lib).StepLR(opt, 2), _sched(lib).ReduceLROnPlateau(opt)], [2]),
    "SequentialLR not a scheduler": lambda lib, opt: _sched(lib).SequentialLR(opt, [object()], []),
    "ChainedScheduler none": lambda lib, opt: _sched(lib).ChainedScheduler([]),
    "ChainedScheduler other optimizer": lambda lib, opt: _sched(lib).ChainedScheduler(
        [_sched(lib).StepLR(opt, 2), _sched(lib).StepLR(_sgd1(lib), 2)]),
    "ChainedScheduler given optimizer": lambda lib, opt: _sched(lib).ChainedScheduler(
        [_sched(lib).StepLR(opt, 2)], optimizer=_sgd1(lib)),
    "ChainedScheduler plateau": lambda lib, opt: _sched(lib).ChainedScheduler(
        [_sched(lib).ReduceLROnPlateau(opt)]),
    "ChainedScheduler not a scheduler": lambda lib, opt: _sched(lib).ChainedScheduler(
        [_sched(lib).StepLR(opt, 2), 3.0], optimizer=opt),
}


@pytest.mark.parametrize("name", list(BAD))
def test_argument_errors_match_torch(name):
    def error(lib):
        p, q = lib.ones(3, requires_grad=True), lib.ones(2, requires_grad=True)
        opt = lib.optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.5}], lr=0.1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(Exception) as info:
                BAD[name](lib, opt)
        return type(info.value).__name__, str(info.value)
    assert error(fg) == error(torch)


def test_exports():
    names = ["OneCycleLR", "CyclicLR", "CosineAnnealingWarmRestarts", "SequentialLR", "ChainedScheduler"]
    assert all(name in fg.optim.lr_scheduler.__all__ for name in names)
    assert all(issubclass(getattr(fg.optim.lr_scheduler, name), fg.optim.lr_scheduler.LRScheduler)
               for name in names)
