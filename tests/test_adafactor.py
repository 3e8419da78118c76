"""fg.optim.Adafactor (fusegrad/optim/extra.py) against torch.optim.Adafactor: parameters after
several steps (matrices factored, vectors in full), options, state, errors; and as a compiled step."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle")

import fusegrad as fg  # noqa: E402


def _net(T):
    net = T.nn.Sequential(T.nn.Linear(3, 4), T.nn.Tanh(), T.nn.Linear(4, 2))
    with T.no_grad():
        for k, p in enumerate(net.parameters()):
            p.copy_(T.tensor(np.sin(np.arange(p.numel()) + k).reshape(tuple(p.shape)), dtype=T.float32))
    return net


def _train(T, options, compiled=False):
    net = _net(T)
    opt = T.optim.Adafactor(net.parameters(), **options)
    x = T.tensor(np.linspace(-1, 1, 15).reshape(5, 3), dtype=T.float32)

    def step():
        opt.zero_grad()
        (net(x) ** 2).sum().backward()
        opt.step()
    run = fg.compile(step) if compiled else step
    for _ in range(4):
        run()
    state = opt.state_dict()["state"]
    return [p.detach().numpy().copy() for p in net.parameters()], sorted(state[0]), sorted(state[1]), \
        float(state[0]["step"])


@pytest.mark.parametrize("options", [{}, {"lr": 0.05, "weight_decay": 0.1, "d": 2.0, "maximize": True},
                                     {"eps": (1e-6, 1e-2), "beta2_decay": -0.5}])
def test_steps_as_torch(options):
    ours, theirs = _train(fg, options), _train(torch, options)
    for a, b in zip(ours[0], theirs[0]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert ours[1:] == theirs[1:]


def test_compiled_step_matches_eager():
    eager, compiled = _train(fg, {}), _train(fg, {}, compiled=True)
    for a, b in zip(eager[0], compiled[0]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bad", [{"lr": -1}, {"beta2_decay": 0.5}, {"eps": (-1, 1e-3)}, {"eps": (None, -1)},
                                 {"d": 0.5}, {"weight_decay": -1}])
def test_errors_as_torch(bad):
    def outcome(T):
        try:
            T.optim.Adafactor(_net(T).parameters(), **bad)
        except ValueError as error:
            return str(error)
    assert outcome(fg) == outcome(torch) is not None
