"""fg.optim.swa_utils (AveragedModel, the averaging functions, SWALR, update_bn) against
torch.optim.swa_utils on the same training run."""
import importlib

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle")

import fusegrad as fg  # noqa: E402


def _run(T):
    S = importlib.import_module(T.__name__ + ".optim.swa_utils")
    net = T.nn.Sequential(T.nn.Linear(3, 4), T.nn.BatchNorm1d(4), T.nn.ReLU(), T.nn.Linear(4, 1))
    with T.no_grad():
        for layer in (net[0], net[3]):
            layer.weight.copy_(T.tensor(np.linspace(-1, 1, layer.weight.numel()).reshape(tuple(layer.weight.shape)),
                                        dtype=T.float32))
            layer.bias.fill_(0.1)
    opt = T.optim.SGD(net.parameters(), lr=0.1)
    models = [S.AveragedModel(net), S.AveragedModel(net, multi_avg_fn=S.get_ema_multi_avg_fn(0.9), use_buffers=True),
              S.AveragedModel(net, avg_fn=S.get_ema_avg_fn(0.8))]
    schedule = S.SWALR(opt, swa_lr=0.05, anneal_epochs=3, anneal_strategy="linear")
    x = T.tensor(np.linspace(-2, 2, 24).reshape(8, 3), dtype=T.float32)
    y = T.tensor(np.linspace(0, 1, 8).reshape(8, 1), dtype=T.float32)
    lrs = []
    for _ in range(5):
        opt.zero_grad()
        T.nn.functional.mse_loss(net(x), y).backward()
        opt.step()
        for m in models:
            m.update_parameters(net)
        schedule.step()
        lrs.append(schedule.get_last_lr()[0])
    S.update_bn([(x, y), (x * 0.5, y)], models[0])
    states = [[v.detach().numpy().astype(float) for v in m.state_dict().values()] for m in models]
    return lrs, states, sorted(schedule.state_dict()), [int(m.n_averaged) for m in models], models[0].training


def test_training_run_as_torch():
    ours, theirs = _run(fg), _run(torch)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)
    for a_states, b_states in zip(ours[1], theirs[1]):
        assert len(a_states) == len(b_states)
        for a, b in zip(a_states, b_states):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert ours[2:] == theirs[2:]


@pytest.mark.parametrize("case", ["decay", "strategy", "epochs", "both-functions"])
def test_errors_as_torch(case):
    def outcome(T):
        S = importlib.import_module(T.__name__ + ".optim.swa_utils")
        net = T.nn.Linear(2, 1)
        opt = T.optim.SGD(net.parameters(), lr=0.1)
        make = {"decay": lambda: S.get_ema_avg_fn(2),
                "strategy": lambda: S.SWALR(opt, 0.1, anneal_strategy="x"),
                "epochs": lambda: S.SWALR(opt, 0.1, anneal_epochs=-1),
                "both-functions": lambda: S.AveragedModel(net, avg_fn=S.get_swa_avg_fn(),
                                                          multi_avg_fn=S.get_swa_multi_avg_fn())}[case]
        try:
            make()
        except Exception as error:       # noqa: BLE001
            return type(error).__name__, str(error)
        return "passed"
    assert outcome(fg) == outcome(torch)
