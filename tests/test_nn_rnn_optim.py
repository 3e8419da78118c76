"""Recurrent layers (nn.RNN/LSTM/GRU and their cells), the optimizers Adagrad, Adamax,
NAdam, RAdam, Adadelta, Rprop, ASGD and nn.init's orthogonal_/dirac_/sparse_ against
torch 2.13: values and gradients with torch's weights copied in, parameter names, default
initialisation (the same seed draws torch's numbers), shapes of unbatched inputs, reprs,
error texts, optimizer trajectories and state dicts, and compiled training steps."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import fusegrad as fg
import fusegrad.nn.functional as F
from parity_support import same_error

torch = pytest.importorskip("torch", reason="torch 2.13 is the oracle of these cases")


def _lib_tensor(lib, array, requires_grad=False):
    return lib.tensor(np.asarray(array, dtype=np.float32), requires_grad=requires_grad)


def _flatten(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flatten(o)]
    return [out]


# ---- recurrent layers ---------------------------------------------------------------------

RNN_CASES = [
    ("RNNCell", (5, 7), {}, (3, 5), True),
    ("RNNCell", (5, 7), dict(nonlinearity="relu", bias=False), (5,), True),
    ("RNNCell", (5, 7), {}, (3, 5), False),
    ("LSTMCell", (5, 7), {}, (3, 5), True),
    ("LSTMCell", (5, 7), {}, (5,), False),
    ("GRUCell", (5, 7), {}, (3, 5), True),
    ("GRUCell", (5, 7), dict(bias=False), (5,), True),
    ("RNN", (5, 7), {}, (4, 3, 5), True),
    ("RNN", (5, 7, 2), dict(nonlinearity="relu", bidirectional=True, batch_first=True), (3, 4, 5), True),
    ("RNN", (5, 7), {}, (4, 5), False),
    ("LSTM", (5, 7), {}, (4, 3, 5), False),
    ("LSTM", (5, 7), dict(num_layers=2, bidirectional=True, proj_size=3), (4, 3, 5), True),
    ("LSTM", (5, 7), dict(num_layers=2, batch_first=True, bias=False), (3, 4, 5), True),
    ("LSTM", (5, 7), dict(num_layers=2), (4, 5), True),
    ("GRU", (5, 7), dict(num_layers=3, bidirectional=True), (4, 3, 5), True),
    ("GRU", (5, 7), dict(batch_first=True), (4, 5), True),
]


def _hidden(name, args, kw, xshape):
    """The shapes of the initial states the module takes for an input of `xshape`."""
    if "Cell" in name:
        shape = (xshape[0], args[1]) if len(xshape) == 2 else (args[1],)
        return [shape, shape] if name == "LSTMCell" else [shape]
    layers = args[2] if len(args) > 2 else kw.get("num_layers", 1)
    first = layers * (2 if kw.get("bidirectional") else 1)
    batch = () if len(xshape) == 2 else ((xshape[0],) if kw.get("batch_first") else (xshape[1],))
    shapes = [(first,) + batch + (kw.get("proj_size", 0) or args[1],)]
    if name == "LSTM":
        shapes.append((first,) + batch + (args[1],))
    return shapes


def _run_rnn(lib, name, args, kw, xshape, with_hidden, state):
    module = getattr(lib.nn, name)(*args, **kw)
    module.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
    rng = np.random.default_rng(1)
    x = _lib_tensor(lib, rng.standard_normal(xshape), True)
    hidden = [_lib_tensor(lib, rng.standard_normal(s), True) for s in _hidden(name, args, kw, xshape)]
    call = [x]
    if with_hidden:
        call.append(tuple(hidden) if "LSTM" in name else hidden[0])
    outs = _flatten(module(*call))
    loss = sum((o * _lib_tensor(lib, rng.standard_normal(tuple(o.shape)))).sum() for o in outs)
    loss.backward()
    grads = [x.grad] + ([h.grad for h in hidden] if with_hidden else []) + [p.grad for p in module.parameters()]
    return outs, grads, [n for n, _ in module.named_parameters()]


@pytest.mark.parametrize("name,args,kw,xshape,with_hidden", RNN_CASES,
                         ids=[f"{c[0]}-{c[2]}-{c[3]}-{c[4]}" for c in RNN_CASES])
def test_recurrent_values_and_gradients_match_torch(name, args, kw, xshape, with_hidden):
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # (torch: "LSTM with projections is not supported with oneDNN")
        reference = getattr(torch.nn, name)(*args, **kw)
        state = {k: v.detach().numpy() for k, v in reference.state_dict().items()}
        theirs = _run_rnn(torch, name, args, kw, xshape, with_hidden, state)
    ours = _run_rnn(fg, name, args, kw, xshape, with_hidden, state)
    assert ours[2] == theirs[2]
    assert [tuple(o.shape) for o in ours[0]] == [tuple(o.shape) for o in theirs[0]]
    for a, b in zip(ours[0] + ours[1], theirs[0] + theirs[1]):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("make", [
    lambda lib: lib.nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2),
    lambda lib: lib.nn.GRU(3, 4, bias=False),
    lambda lib: lib.nn.RNN(3, 4, 2, "relu"),
    lambda lib: lib.nn.LSTMCell(3, 4),
    lambda lib: lib.nn.RNNCell(3, 4, nonlinearity="relu"),
], ids=["lstm", "gru", "rnn", "lstmcell", "rnncell"])
def test_default_initialisation_draws_torchs_weights(make):
    torch.manual_seed(5)
    fg.manual_seed(5)
    theirs, ours = make(torch), make(fg)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert tuple(p.shape) == tuple(q.shape) and p.requires_grad
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=name)


def test_reprs_match_torch():
    makes = [
        lambda lib: lib.nn.LSTM(10, 20, num_layers=2, batch_first=True),
        lambda lib: lib.nn.RNN(3, 4, nonlinearity="relu", dropout=0.5, num_layers=2, bidirectional=True, bias=False),
        lambda lib: lib.nn.LSTM(3, 4, proj_size=2),
        lambda lib: lib.nn.GRU(3, 4),
        lambda lib: lib.nn.RNNCell(3, 4, nonlinearity="relu", bias=False),
        lambda lib: lib.nn.LSTMCell(3, 4),
        lambda lib: lib.nn.GRUCell(3, 4, bias=False),
    ]
    for make in makes:
        assert repr(make(fg)) == repr(make(torch))
    assert [[n for n in ws] for ws in fg.nn.GRU(3, 4, 2, bidirectional=True)._all_weights] == \
        torch.nn.GRU(3, 4, 2, bidirectional=True)._all_weights


BAD_CALLS = {
    "cell input size": lambda lib: lib.nn.LSTMCell(10, 20)(lib.zeros(3, 5)),
    "cell batch": lambda lib: lib.nn.GRUCell(10, 20)(lib.zeros(3, 10), lib.zeros(2, 20)),
    "cell hidden size": lambda lib: lib.nn.RNNCell(10, 20)(lib.zeros(3, 10), lib.zeros(3, 7)),
    "cell hidden1 size": lambda lib: lib.nn.LSTMCell(10, 20)(lib.zeros(3, 10), (lib.zeros(3, 20), lib.zeros(3, 7))),
    "cell 3-d": lambda lib: lib.nn.RNNCell(10, 20)(lib.zeros(3, 3, 10)),
    "cell 3-d hidden": lambda lib: lib.nn.GRUCell(10, 20)(lib.zeros(3, 10), lib.zeros(1, 3, 20)),
    "cell lstm 3-d hx": lambda lib: lib.nn.LSTMCell(10, 20)(lib.zeros(3, 10), (lib.zeros(3, 20), lib.zeros(1, 3, 20))),
    "cell unbatched hidden": lambda lib: lib.nn.RNNCell(10, 20)(lib.zeros(10), lib.zeros(3, 20)),
    "cell dtype": lambda lib: lib.nn.GRUCell(10, 20)(lib.zeros(3, 10, dtype=lib.float64)),
    "cell nonlinearity": lambda lib: lib.nn.RNNCell(10, 20, nonlinearity="x")(lib.zeros(3, 10)),
    "input size": lambda lib: lib.nn.LSTM(10, 20, 2)(lib.zeros(5, 3, 7)),
    "4-d": lambda lib: lib.nn.LSTM(10, 20)(lib.zeros(5, 3, 10, 2)),
    "rnn 1-d": lambda lib: lib.nn.RNN(10, 20)(lib.zeros(10)),
    "hidden[1]": lambda lib: lib.nn.LSTM(10, 20, 2)(lib.zeros(5, 3, 10), (lib.zeros(2, 3, 20), lib.zeros(2, 4, 20))),
    "hidden[0]": lambda lib: lib.nn.LSTM(10, 20, 2)(lib.zeros(5, 3, 10), (lib.zeros(1, 3, 20), lib.zeros(2, 3, 20))),
    "unbatched hx": lambda lib: lib.nn.LSTM(10, 20, 2)(lib.zeros(5, 10), (lib.zeros(2, 3, 20), lib.zeros(2, 3, 20))),
    "dtype": lambda lib: lib.nn.LSTM(10, 20)(lib.zeros(5, 3, 10, dtype=lib.float64)),
    "hidden size": lambda lib: lib.nn.GRU(10, 20)(lib.zeros(5, 3, 10), lib.zeros(2, 3, 20)),
    "batched 2-d hx": lambda lib: lib.nn.GRU(10, 20)(lib.zeros(5, 3, 10), lib.zeros(3, 20)),
    "unbatched 3-d hx": lambda lib: lib.nn.RNN(10, 20)(lib.zeros(5, 10), lib.zeros(1, 3, 20)),
    "nonlinearity": lambda lib: lib.nn.RNN(10, 20, nonlinearity="x"),
    "proj_size on GRU": lambda lib: lib.nn.GRU(10, 20, proj_size=3),
    "proj_size too big": lambda lib: lib.nn.LSTM(10, 20, proj_size=30),
    "dropout": lambda lib: lib.nn.LSTM(10, 20, dropout=2),
    "hidden 0": lambda lib: lib.nn.LSTM(10, 0),
    "layers 0": lambda lib: lib.nn.LSTM(10, 20, 0),
    "float input_size": lambda lib: lib.nn.LSTM(10.0, 20),
    "int bias": lambda lib: lib.nn.GRU(10, 20, bias=1),
}


@pytest.mark.parametrize("case", list(BAD_CALLS))
def test_recurrent_errors_match_torch(case):
    same_error(BAD_CALLS[case])


def test_dropout_between_layers_only_in_training():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fg.nn.GRU(3, 4, dropout=0.5)
    assert [str(w.message) for w in caught] == [
        "dropout option adds dropout after all but last recurrent layer, so non-zero dropout expects "
        "num_layers greater than 1, but got dropout=0.5 and num_layers=1"]
    model = fg.nn.LSTM(3, 4, num_layers=2, dropout=0.9)
    x = fg.randn(6, 2, 3)
    model.eval()
    first, second = model(x)[0], model(x)[0]
    np.testing.assert_array_equal(first.detach().numpy(), second.detach().numpy())
    model.train()
    assert not np.array_equal(model(x)[0].detach().numpy(), first.detach().numpy())


def test_compiled_lstm_training_step_matches_eager():
    def train(compiled):
        fg.manual_seed(0)
        lstm, head = fg.nn.LSTM(3, 5, batch_first=True, proj_size=2), fg.nn.Linear(2, 2)
        params = list(lstm.parameters()) + list(head.parameters())
        opt = fg.optim.SGD(params, lr=0.1)
        x, y = fg.randn(4, 3, 3), fg.randint(0, 2, (4,))

        def step(x, y):
            opt.zero_grad()
            out, (h, c) = lstm(x)
            loss = F.cross_entropy(head(out[:, -1]), y) + c.pow(2).mean()
            loss.backward()
            opt.step()
            return loss
        fn = fg.compile(step) if compiled else step
        losses = [fn(x, y).item() for _ in range(3)]
        return losses, [p.detach().numpy().copy() for p in params]
    eager, compiled = train(False), train(True)
    np.testing.assert_allclose(compiled[0], eager[0], rtol=1e-5)
    for a, b in zip(compiled[1], eager[1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_compiled_gru_forward_and_backward_match_torch():
    torch.manual_seed(0)
    reference = torch.nn.GRU(4, 6, batch_first=True)
    module = fg.nn.GRU(4, 6, batch_first=True)
    module.load_state_dict({k: fg.tensor(v.detach().numpy()) for k, v in reference.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 2, 4)).astype(np.float32)
    tx, fx = torch.tensor(x, requires_grad=True), fg.tensor(x, requires_grad=True)

    @fg.compile
    def run(x):
        out, h = module(x)
        return out.sum() + (h * h).sum()
    run(fx).backward()
    out, h = reference(tx)
    (out.sum() + (h * h).sum()).backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    for (name, p), (_, q) in zip(module.named_parameters(), reference.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=2e-6, err_msg=name)


# ---- optimizers --------------------------------------------------------------------------

OPTIM_CASES = [
    ("Adagrad", {}),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.5, maximize=True)),
    ("Adamax", {}),
    ("Adamax", dict(lr=0.01, weight_decay=0.1, maximize=True)),
    ("NAdam", {}),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("NAdam", dict(weight_decay=0.1, momentum_decay=0.01, maximize=True)),
    ("RAdam", {}),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, betas=(0.8, 0.9))),
    ("RAdam", dict(weight_decay=0.1, maximize=True)),
    ("Adadelta", {}),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1, maximize=True)),
    ("Rprop", {}),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2), maximize=True)),
    ("ASGD", {}),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=5, weight_decay=0.1, maximize=True)),
]


def _optimize(lib, name, kwargs, steps=12):
    rng = np.random.default_rng(0)
    p = _lib_tensor(lib, rng.standard_normal((6, 5)), True)
    q = _lib_tensor(lib, rng.standard_normal(4), True)
    r = _lib_tensor(lib, rng.standard_normal(3), True)      # (never given a gradient)
    opt = getattr(lib.optim, name)([{"params": [p, r]}, {"params": [q], "lr": 0.03}], **kwargs)
    for i in range(steps):
        p.grad = _lib_tensor(lib, rng.standard_normal((6, 5)) * (1 if i % 3 else -1))
        q.grad = _lib_tensor(lib, np.where(rng.random(4) < 0.3, 0, rng.standard_normal(4)))
        opt.step()
    state_dict = opt.state_dict()
    state = {index: {key: (value.detach().numpy() if hasattr(value, "numpy") else value, str(value.dtype))
                     for key, value in entry.items()} for index, entry in state_dict["state"].items()}
    return [t.detach().numpy() for t in (p, q, r)], state, state_dict["param_groups"], repr(opt)


@pytest.mark.parametrize("name,kwargs", OPTIM_CASES, ids=[f"{n}-{k}" for n, k in OPTIM_CASES])
def test_optimizer_follows_torch(name, kwargs):
    ours, theirs = _optimize(fg, name, kwargs), _optimize(torch, name, kwargs)
    for a, b in zip(ours[0], theirs[0]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert list(ours[1]) == list(theirs[1])
    for index in theirs[1]:
        assert list(ours[1][index]) == list(theirs[1][index])
        for key, (value, dtype) in theirs[1][index].items():
            assert ours[1][index][key][1].split(".")[-1] == dtype.split(".")[-1], key
            np.testing.assert_allclose(ours[1][index][key][0], value, rtol=1e-6, atol=1e-7, err_msg=key)
    assert ours[2] == theirs[2]
    assert ours[3] == theirs[3]


@pytest.mark.parametrize("name,kwargs", [("NAdam", dict(weight_decay=0.1)), ("ASGD", dict(t0=2, lambd=0.01)),
                                         ("Rprop", {}), ("RAdam", dict(lr=0.01)), ("Adagrad", dict(lr_decay=0.1))])
def test_optimizer_state_dict_round_trip(name, kwargs):
    first = _optimize(fg, name, kwargs, steps=3)
    rng = np.random.default_rng(0)
    p = fg.tensor(rng.standard_normal((6, 5)).astype(np.float32), requires_grad=True)
    opt = getattr(fg.optim, name)([p], **kwargs)
    p.grad = fg.ones(6, 5)
    opt.step()
    clone = getattr(fg.optim, name)([fg.zeros(6, 5, requires_grad=True)], **kwargs)
    clone.load_state_dict(opt.state_dict())
    assert sorted(clone.state_dict()["state"][0]) == sorted(opt.state_dict()["state"][0])
    assert first[1]         # (states were made)


OPTIM_BAD = {
    "Adagrad": [dict(lr=-1), dict(lr_decay=-1), dict(weight_decay=-1), dict(initial_accumulator_value=-1),
                dict(eps=-1)],
    "Adamax": [dict(eps=-1), dict(betas=(1.0, 0.9)), dict(betas=(0.9, -0.1)), dict(weight_decay=-1)],
    "NAdam": [dict(momentum_decay=-1), dict(betas=(0.9, 1.0))],
    "RAdam": [dict(lr=-0.1), dict(weight_decay=-1)],
    "Adadelta": [dict(rho=1.5), dict(eps=-1), dict(weight_decay=-1)],
    "Rprop": [dict(etas=(1.5, 1.2)), dict(etas=(0.5, 0.9))],
    "ASGD": [dict(weight_decay=-1), dict(lr=-1)],
}


@pytest.mark.parametrize("name,kwargs", [(n, k) for n, ks in OPTIM_BAD.items() for k in ks], ids=str)
def test_optimizer_argument_checks_match_torch(name, kwargs):
    same_error(lambda lib: getattr(lib.optim, name)([lib.ones(2, requires_grad=True)], **kwargs))


@pytest.mark.parametrize("name", ["Adamax", "NAdam", "RAdam", "Adadelta", "Rprop", "ASGD"])
def test_capturable_step_raises_torchs_cpu_error(name):
    def step(lib):
        p = lib.ones(2, requires_grad=True)
        p.grad = lib.ones(2)
        getattr(lib.optim, name)([p], capturable=True).step()
    same_error(step)


@pytest.mark.parametrize("name,kwargs", [("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1)),
                                         ("Adamax", dict(lr=0.01)), ("NAdam", dict(lr=0.01, weight_decay=0.1)),
                                         ("RAdam", dict(lr=0.01)), ("Adadelta", dict(weight_decay=0.1)),
                                         ("Rprop", {}), ("ASGD", dict(t0=2, lambd=0.01))])
def test_compiled_training_step_matches_eager(name, kwargs):
    """forward + loss + backward + step in one fg.compile program, as eager, without graph breaks
    (RAdam's rectified branch starts at its 6th step)."""
    steps = 7 if name == "RAdam" else 3
    def train(compiled):
        fg.manual_seed(0)
        model = fg.nn.Sequential(fg.nn.Linear(4, 8), fg.nn.ReLU(), fg.nn.Linear(8, 3))
        opt = getattr(fg.optim, name)(model.parameters(), **kwargs)
        x, y = fg.randn(16, 4), fg.randint(0, 3, (16,))

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        fn = fg.compile(step) if compiled else step
        losses = [fn(x, y).item() for _ in range(steps)]
        report = fn.explain(x, y) if compiled else ""
        return losses, [p.detach().numpy().copy() for p in model.parameters()], report
    eager, compiled = train(False), train(True)
    np.testing.assert_allclose(compiled[0], eager[0], rtol=1e-6)
    for a, b in zip(compiled[1], eager[1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    if "## graph breaks" in compiled[2]:
        assert "## graph breaks\nnone" in compiled[2]


# ---- nn.init -----------------------------------------------------------------------------

@pytest.mark.parametrize("shape,gain", [((5, 3), 1), ((3, 7), 2.0), ((4, 2, 3), 0.5), ((6, 6), 1)])
def test_orthogonal_matches_torch(shape, gain):
    fg.manual_seed(1)
    torch.manual_seed(1)
    ours = fg.nn.init.orthogonal_(fg.nn.Parameter(fg.empty(*shape)), gain)
    theirs = torch.nn.init.orthogonal_(torch.empty(*shape), gain)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)
    assert ours.requires_grad and ours.grad_fn is None


@pytest.mark.parametrize("shape,groups", [((4, 2, 3), 1), ((6, 3, 3, 3), 2), ((4, 4, 3, 3, 3), 4), ((2, 5, 4), 1)])
def test_dirac_matches_torch(shape, groups):
    ours = fg.nn.init.dirac_(fg.empty(*shape), groups)
    np.testing.assert_array_equal(ours.numpy(), torch.nn.init.dirac_(torch.empty(*shape), groups).numpy())


def test_sparse_matches_torch():
    fg.manual_seed(1)
    torch.manual_seed(1)
    ours, theirs = fg.nn.init.sparse_(fg.empty(10, 6), 0.3), torch.nn.init.sparse_(torch.empty(10, 6), 0.3)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("call", [
    lambda lib: lib.nn.init.orthogonal_(lib.empty(3)),
    lambda lib: lib.nn.init.dirac_(lib.empty(3, 3)),
    lambda lib: lib.nn.init.dirac_(lib.empty(3, 3, 3), groups=2),
    lambda lib: lib.nn.init.sparse_(lib.empty(3, 3, 3), 0.1),
], ids=["orthogonal-1d", "dirac-2d", "dirac-groups", "sparse-3d"])
def test_init_errors_match_torch(call):
    same_error(call)


def test_deprecated_init_aliases_warn_as_torch():
    def observe(lib):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.nn.init.orthogonal(lib.empty(3, 3))
            lib.nn.init.uniform(lib.empty(3))
        return [(w.category.__name__, str(w.message)) for w in caught]
    assert observe(fg) == observe(torch)
