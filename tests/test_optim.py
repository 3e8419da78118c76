"""fusegrad.optim against torch.optim: five steps on the same model and data must match."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch.optim is the oracle for the update formulas and error texts")

import fusegrad as fg  # noqa: E402
import fusegrad.nn.functional as F  # noqa: E402
from fusegrad import nn, optim  # noqa: E402

DTYPES = [(fg.float32, torch.float32, 1e-6), (fg.float64, torch.float64, 1e-12)]
STEPS = 5


def build_pair(fdt, tdt, seed=0):
    """The same small MLP in both libraries with identical weights."""
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 6, dtype=tdt), torch.nn.Tanh(), torch.nn.Linear(6, 3, dtype=tdt))
    ours = nn.Sequential(nn.Linear(4, 6, dtype=fdt), nn.Tanh(), nn.Linear(6, 3, dtype=fdt))
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in theirs.parameters():
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)) * 0.5, dtype=tdt))
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def data(fdt, tdt, seed=1):
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((8, 4)), rng.standard_normal((8, 3))
    return (fg.tensor(x, dtype=fdt), fg.tensor(y, dtype=fdt)), (torch.tensor(x, dtype=tdt), torch.tensor(y, dtype=tdt))


def run_steps(ours, theirs, opt, t_opt, fdt, tdt, steps=STEPS):
    (x, y), (tx, ty) = data(fdt, tdt)
    for _ in range(steps):
        opt.zero_grad()
        t_opt.zero_grad()
        F.mse_loss(ours(x), y).backward()
        torch.nn.functional.mse_loss(theirs(tx), ty).backward()
        opt.step()
        t_opt.step()


def assert_params_match(ours, theirs, tol):
    for (name, p), (tname, tp) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert name == tname and p.dtype == (fg.float32 if tp.dtype == torch.float32 else fg.float64)
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=tol, atol=tol, err_msg=name)


SGD_CONFIGS = [
    dict(lr=0.1),
    dict(lr=0.1, momentum=0.9),
    dict(lr=0.05, momentum=0.9, weight_decay=0.01),
    dict(lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.1),
    dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
    dict(lr=0.05, momentum=0.5, maximize=True),
]

ADAM_CONFIGS = [
    dict(),
    dict(lr=0.01),
    dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05),
    dict(lr=0.01, amsgrad=True),
    dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True),
    dict(lr=0.01, maximize=True, amsgrad=True, weight_decay=0.01),
    dict(lr=0.01, betas=(0.4, 0.9)),   # beta1 < 0.5: torch's lerp takes its other branch
]


@pytest.mark.parametrize("fdt, tdt, tol", DTYPES)
@pytest.mark.parametrize("config", SGD_CONFIGS, ids=str)
def test_sgd_matches_torch(fdt, tdt, tol, config):
    ours, theirs = build_pair(fdt, tdt)
    run_steps(ours, theirs, optim.SGD(ours.parameters(), **config), torch.optim.SGD(theirs.parameters(), **config),
              fdt, tdt)
    assert_params_match(ours, theirs, tol)


@pytest.mark.parametrize("fdt, tdt, tol", DTYPES)
@pytest.mark.parametrize("config", ADAM_CONFIGS, ids=str)
def test_adam_matches_torch(fdt, tdt, tol, config):
    ours, theirs = build_pair(fdt, tdt)
    run_steps(ours, theirs, optim.Adam(ours.parameters(), **config), torch.optim.Adam(theirs.parameters(), **config),
              fdt, tdt)
    assert_params_match(ours, theirs, tol)


@pytest.mark.parametrize("fdt, tdt, tol", DTYPES)
def test_adamw_matches_torch(fdt, tdt, tol):
    ours, theirs = build_pair(fdt, tdt)
    run_steps(ours, theirs, optim.AdamW(ours.parameters(), lr=0.01),
              torch.optim.AdamW(theirs.parameters(), lr=0.01), fdt, tdt)
    assert_params_match(ours, theirs, tol)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "RMSprop"])
def test_capturable_step_raises_torchs_cpu_error(name):
    """capturable=True is for CUDA graphs: torch's step on the CPU raises (a parameter without
    a gradient is skipped before the check)."""
    def outcome(lib):
        p = lib.nn.Parameter(lib.ones(2))
        idle = lib.nn.Parameter(lib.ones(2))
        opt = getattr(lib.optim, name)([idle, p], lr=0.1, capturable=True)
        opt.step()                      # (no gradients yet: nothing checked)
        p.grad = lib.ones(2)
        try:
            opt.step()
        except AssertionError as error:
            return str(error), p.tolist()
        return None, p.tolist()
    assert outcome(fg) == outcome(torch)


def test_adam_capturable_formula_runs_compiled_as_in_torch_compile():
    # (torch.compile skips the device check; the tensor-valued bias corrections round
    # differently from Python floats only in the last bits: float64 shows the same formula)
    ours, theirs = build_pair(fg.float64, torch.float64)
    opt = optim.Adam(ours.parameters(), lr=0.01, capturable=True, amsgrad=True)
    t_opt = torch.optim.Adam(theirs.parameters(), lr=0.01, amsgrad=True)
    step = fg.compile(opt.step)
    rng = np.random.default_rng(0)
    for _ in range(3):
        grads = [rng.standard_normal(tuple(p.shape)) for p in ours.parameters()]
        for p, tp, g in zip(ours.parameters(), theirs.parameters(), grads):
            p.grad, tp.grad = fg.tensor(g), torch.tensor(g)
        step()
        t_opt.step()
    assert_params_match(ours, theirs, 1e-12)


def test_adam_state_matches_torch():
    ours, theirs = build_pair(fg.float32, torch.float32)
    opt, t_opt = optim.Adam(ours.parameters(), lr=0.01), torch.optim.Adam(theirs.parameters(), lr=0.01)
    run_steps(ours, theirs, opt, t_opt, fg.float32, torch.float32, steps=3)
    for p, tp in zip(ours.parameters(), theirs.parameters()):
        state, t_state = opt.state[p], t_opt.state[tp]
        assert list(state) == list(t_state)
        assert state["step"].item() == t_state["step"].item() == 3.0
        assert state["step"].dtype == fg.float32
        for key in ("exp_avg", "exp_avg_sq"):
            # moments average float32 gradients that differ from torch's in the last bits
            scale = np.abs(t_state[key].numpy()).max()
            np.testing.assert_allclose(state[key].numpy(), t_state[key].numpy(), rtol=1e-6, atol=1e-6 * scale)


@pytest.mark.parametrize("make", [
    lambda lib_optim, params: lib_optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=0.1),
    lambda lib_optim, params: lib_optim.Adam(params, lr=0.1, weight_decay=0.1),
])
def test_parameters_without_grad_are_skipped(make):
    ours, theirs = build_pair(fg.float64, torch.float64)
    # only the last layer takes part in the loss: the first gets no .grad at all
    opt, t_opt = make(optim, ours.parameters()), make(torch.optim, theirs.parameters())
    (x, y), (tx, ty) = data(fg.float64, torch.float64)
    first = ours[0].weight.detach().numpy().copy()
    for _ in range(3):
        opt.zero_grad()
        t_opt.zero_grad()
        F.mse_loss(ours[2](x[:, :1].expand(8, 6)), y).backward()
        torch.nn.functional.mse_loss(theirs[2](tx[:, :1].expand(8, 6)), ty).backward()
        opt.step()
        t_opt.step()
    assert ours[0].weight.grad is None
    np.testing.assert_array_equal(ours[0].weight.detach().numpy(), first)
    assert len(opt.state) == len(t_opt.state) == 2
    assert_params_match(ours, theirs, 1e-12)


def test_param_groups_with_their_own_hyperparameters():
    ours, theirs = build_pair(fg.float64, torch.float64)

    def groups(model):
        return [{"params": model[0].parameters()}, {"params": model[2].parameters(), "lr": 0.01, "momentum": 0.5}]

    opt = optim.SGD(groups(ours), lr=0.1, momentum=0.9)
    t_opt = torch.optim.SGD(groups(theirs), lr=0.1, momentum=0.9)
    assert [list(g) for g in opt.param_groups] == [list(g) for g in t_opt.param_groups]
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.01]
    run_steps(ours, theirs, opt, t_opt, fg.float64, torch.float64)
    assert_params_match(ours, theirs, 1e-12)
    extra = nn.Parameter(fg.zeros(2))
    opt.add_param_group({"params": [extra], "lr": 1.0})
    assert opt.param_groups[-1]["momentum"] == 0.9 and opt.param_groups[-1]["params"][0] is extra


def test_zero_grad_sets_none_by_default():
    ours, _ = build_pair(fg.float32, torch.float32)
    opt = optim.SGD(ours.parameters(), lr=0.1)
    (x, y), _ = data(fg.float32, torch.float32)
    F.mse_loss(ours(x), y).backward()
    opt.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in ours.parameters())
    opt.zero_grad()
    assert all(p.grad is None for p in ours.parameters())


def test_step_with_closure_returns_loss():
    ours, theirs = build_pair(fg.float64, torch.float64)
    opt, t_opt = optim.SGD(ours.parameters(), lr=0.1), torch.optim.SGD(theirs.parameters(), lr=0.1)
    (x, y), (tx, ty) = data(fg.float64, torch.float64)

    def closure():
        opt.zero_grad()
        loss = F.mse_loss(ours(x), y)
        loss.backward()
        return loss

    def t_closure():
        t_opt.zero_grad()
        loss = torch.nn.functional.mse_loss(theirs(tx), ty)
        loss.backward()
        return loss

    with fg.no_grad():  # the closure runs with grad enabled anyway, as in torch
        loss = opt.step(closure)
    t_loss = t_opt.step(t_closure)
    assert abs(loss.item() - t_loss.item()) < 1e-12
    assert_params_match(ours, theirs, 1e-12)


def test_state_dict_round_trip_continues_identically():
    ours, theirs = build_pair(fg.float64, torch.float64)
    opt = optim.Adam(ours.parameters(), lr=0.01)
    t_opt = torch.optim.Adam(theirs.parameters(), lr=0.01)
    run_steps(ours, theirs, opt, t_opt, fg.float64, torch.float64, steps=2)
    saved = opt.state_dict()
    t_saved = t_opt.state_dict()
    assert sorted(saved["state"]) == sorted(t_saved["state"])
    assert [g["params"] for g in saved["param_groups"]] == [g["params"] for g in t_saved["param_groups"]]
    fresh = optim.Adam(ours.parameters(), lr=0.5)
    fresh.load_state_dict(saved)
    assert fresh.param_groups[0]["lr"] == 0.01
    run_steps(ours, theirs, fresh, t_opt, fg.float64, torch.float64, steps=2)
    assert_params_match(ours, theirs, 1e-12)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_repr_and_defaults_list_groups_as_torch(name):
    # torch's device-dispatch flags (foreach, fused) are accepted and listed; they change nothing here
    ours = getattr(optim, name)(nn.Linear(2, 2).parameters(), lr=0.1)
    theirs = getattr(torch.optim, name)(torch.nn.Linear(2, 2).parameters(), lr=0.1)
    assert repr(ours) == repr(theirs)
    assert list(ours.defaults) == list(theirs.defaults)


def _linear_params(lib):
    return (torch.nn.Linear(2, 2) if lib is torch.optim else nn.Linear(2, 2)).parameters()


@pytest.mark.parametrize("make", [
    lambda o, p: o.SGD([], lr=0.1),
    lambda o, p: o.SGD(p, lr=-1.0),
    lambda o, p: o.SGD(p, lr=0.1, momentum=-0.5),
    lambda o, p: o.SGD(p, lr=0.1, weight_decay=-1),
    lambda o, p: o.SGD(p, lr=0.1, nesterov=True),
    lambda o, p: o.SGD(p, lr=0.1, momentum=0.9, dampening=0.1, nesterov=True),
    lambda o, p: o.Adam(p, lr=-0.01),
    lambda o, p: o.Adam(p, eps=-1.0),
    lambda o, p: o.Adam(p, betas=(1.0, 0.9)),
    lambda o, p: o.Adam(p, betas=(0.9, 1.5)),
    lambda o, p: o.Adam(p, betas=(0, 0.9)),
    lambda o, p: o.Adam(p, weight_decay=-0.1),
    lambda o, p: o.Adam([{"params": p}, {"params": []}, 3]),
    lambda o, p: o.SGD({"params": p}, lr=0.1),
    lambda o, p: o.SGD(list(p) + [3], lr=0.1),
    lambda o, p: o.SGD([{"params": set(p)}], lr=0.1),
])
def test_bad_arguments_raise_torch_errors(make):
    their_type = their_text = our_type = our_text = None
    try:
        make(torch.optim, _linear_params(torch.optim))
    except Exception as e:  # noqa: BLE001 - the oracle decides what is raised
        their_type, their_text = type(e), str(e)
    try:
        make(optim, _linear_params(optim))
    except Exception as e:  # noqa: BLE001
        our_type, our_text = type(e), str(e)
    assert their_type is not None
    assert (our_type, our_text) == (their_type, their_text)


def test_optimizer_rejects_a_tensor_and_non_leaves():
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts, but got torch.FloatTensor"):
        optim.SGD(nn.Parameter(fg.zeros(2)), lr=0.1)
    x = fg.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([x * 2], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        optim.SGD([{"params": [x]}, {"params": [x]}], lr=0.1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        optim.SGD([x, x], lr=0.1)
    assert any("duplicate parameters" in str(w.message) for w in caught)


@pytest.mark.parametrize("make", [
    lambda p: optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True),
    lambda p: optim.Adam(p, lr=0.01, weight_decay=0.01, amsgrad=True),
], ids=["sgd", "adam"])
def test_compiled_training_step_matches_eager_without_graph_breaks(make):
    """forward + cross_entropy + backward + step traced by fg.compile as one program."""
    def train(compiled):
        fg.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
        opt = make(model.parameters())
        x, y = fg.randn(16, 4), fg.randint(0, 3, (16,))

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        fn = fg.compile(step) if compiled else step
        losses = [fn(x, y).item() for _ in range(3)]
        params = [p.detach().numpy().copy() for p in model.parameters()]
        report = fn.explain(x, y) if compiled else ""  # (runs one more step)
        return losses, params, report

    eager_losses, eager_params, _ = train(False)
    losses, params, report = train(True)
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-6)
    for ours, expected in zip(params, eager_params):
        np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6)
    if "## graph breaks" in report:
        assert "## graph breaks\nnone" in report
