"""fusegrad.nn against torch.nn: registration, names, reprs, Linear, losses, state dicts, fine-tuning."""
from __future__ import annotations

import copy
import math
import warnings
from collections import OrderedDict

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle for nn's values, names, reprs and errors")
import torch.nn.functional as TF  # noqa: E402

import fusegrad as fg  # noqa: E402
import fusegrad.nn.functional as F  # noqa: E402
from fusegrad import nn, optim  # noqa: E402

DTYPES = [(fg.float32, torch.float32, 1e-6), (fg.float64, torch.float64, 1e-12)]


def np_of(t) -> np.ndarray:
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach().numpy())


def assert_close(ours, theirs, rtol: float, atol: float | None = None) -> None:
    np.testing.assert_allclose(np_of(ours), np_of(theirs), rtol=rtol, atol=rtol if atol is None else atol)


def raised(fn) -> tuple[type, str]:
    with pytest.raises(Exception) as info:
        fn()
    return info.type, str(info.value)


def assert_same_error(ours, theirs) -> None:
    """Both calls raise the same exception class with the same text (torch's verbatim)."""
    their_type, their_text = raised(theirs)
    our_type, our_text = raised(ours)
    assert our_type is their_type, (our_type, our_text, their_type, their_text)
    assert our_text == their_text


def copy_weights(ours: nn.Module, theirs: torch.nn.Module) -> None:
    """Load torch's state into our module through load_state_dict with NumPy values."""
    result = ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    assert not result.missing_keys and not result.unexpected_keys


def mlp(lib, dtype=None):
    """The same architecture built from either library's nn namespace."""
    kw = {} if dtype is None else {"dtype": dtype}
    return lib.Sequential(lib.Linear(4, 8, **kw), lib.ReLU(), lib.Linear(8, 8, **kw), lib.Tanh(),
                          lib.Linear(8, 3, **kw))


class Net:
    """A custom Module built the same way on both sides (registration order, nesting, sharing)."""

    @staticmethod
    def build(lib):
        class Block(lib.Module):
            def __init__(self):
                super().__init__()
                self.scale = lib.Parameter(_ones(lib, 3))
                self.proj = lib.Linear(3, 3, bias=False)

            def forward(self, x):
                return self.proj(x) * self.scale

        class Model(lib.Module):
            def __init__(self):
                super().__init__()
                self.embed = lib.Linear(2, 3)
                self.gain = lib.Parameter(_ones(lib, 1))
                self.blocks = lib.Sequential(Block(), lib.ReLU(), Block())
                self.shared = self.embed          # the same module twice: listed once
                self.head = lib.Linear(3, 1)
                self.register_parameter("unused", None)

            def forward(self, x):
                return self.head(self.blocks(self.embed(x)) * self.gain)

        return Model()


def _ones(lib, n):
    return torch.ones(n) if lib is torch.nn else fg.ones(n)


# ---------------------------------------------------------------- Parameter

def test_parameter_is_a_leaf_tensor_printed_as_torch():
    data = fg.tensor([[1.0, -2.5], [0.25, 3.0]])
    p = nn.Parameter(data)
    tp = torch.nn.Parameter(torch.tensor([[1.0, -2.5], [0.25, 3.0]]))
    assert isinstance(p, fg.Tensor) and p.is_leaf and p.requires_grad and p.grad_fn is None
    assert repr(p) == repr(tp)
    frozen = nn.Parameter(fg.tensor([1.0, 2.0]), requires_grad=False)
    assert repr(frozen) == repr(torch.nn.Parameter(torch.tensor([1.0, 2.0]), requires_grad=False))
    assert repr(nn.Parameter()) == repr(torch.nn.Parameter())
    # shares memory with its data, as torch's Parameter does
    with fg.no_grad():
        data.mul_(2)
    assert p.detach().numpy()[0, 1] == -5.0
    # ops on a Parameter give plain tensors with history
    y = p * 2
    assert type(y) is fg.Tensor and y.grad_fn is not None


def test_parameter_of_a_non_leaf_takes_its_value_only():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    p = nn.Parameter(x * 3)
    assert p.is_leaf and p.requires_grad
    np.testing.assert_array_equal(p.detach().numpy(), [3.0, 6.0])


# ---------------------------------------------------------------- registration and traversal

def test_named_parameters_match_torch_names_and_order():
    ours, theirs = Net.build(nn), Net.build(torch.nn)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    assert [type(m).__name__ for m in ours.modules()] == [type(m).__name__ for m in theirs.modules()]
    assert [type(m).__name__ for m in ours.children()] == [type(m).__name__ for m in theirs.children()]
    assert list(ours.state_dict().keys()) == list(theirs.state_dict().keys())
    assert [n for n, _ in ours.named_parameters(prefix="net")] == \
        [n for n, _ in theirs.named_parameters(prefix="net")]
    assert [n for n, _ in ours.named_parameters(recurse=False)] == \
        [n for n, _ in theirs.named_parameters(recurse=False)]
    assert [n for n, _ in mlp(nn).named_parameters()] == [n for n, _ in mlp(torch.nn).named_parameters()]


def test_shared_parameter_listed_once():
    for lib in (nn, torch.nn):
        a, b = lib.Linear(3, 3), lib.Linear(3, 3)
        b.weight = a.weight
        seq = lib.Sequential(a, b)
        names = [n for n, _ in seq.named_parameters()]
        assert names == ["0.weight", "0.bias", "1.bias"]
        assert len(list(seq.parameters())) == 3


def test_reassigning_kinds_and_deleting():
    m = nn.Linear(2, 2)
    m.weight = None
    assert m.weight is None and [n for n, _ in m.named_parameters()] == ["bias"]
    m.extra = nn.ReLU()
    assert [n for n, _ in m.named_children()] == ["extra"]
    del m.extra
    assert list(m.children()) == []
    m.plain = 3
    assert m.plain == 3 and "plain" not in m._parameters


@pytest.mark.parametrize("assign", [
    lambda lib, m: setattr(m, "weight", (torch.zeros(2, 3) if lib is torch.nn else fg.zeros(2, 3))),
    lambda lib, m: getattr(m, "missing"),
    lambda lib, m: m.register_parameter("a.b", None),
    lambda lib, m: m.register_parameter("", None),
    lambda lib, m: m.add_module("x", 3),
    lambda lib, m: m.train("yes"),
])
def test_registration_errors_match_torch(assign):
    assert_same_error(lambda: assign(nn, nn.Linear(3, 2)), lambda: assign(torch.nn, torch.nn.Linear(3, 2)))


def test_assignment_type_errors():
    m = nn.Linear(2, 2)
    m.register_buffer("b", fg.zeros(1))
    cases = [
        (lambda: m.register_parameter("x", fg.zeros(2)),
         "cannot assign 'torch.FloatTensor' object to parameter 'x' (torch.nn.Parameter or None required)"),
        (lambda: m.register_buffer("c", 3), "cannot assign 'int' object to buffer 'c' (torch Tensor or None required)"),
        (lambda: setattr(m, "weight", 3),
         "cannot assign 'int' as parameter 'weight' (torch.nn.Parameter or None expected)"),
        (lambda: setattr(m, "b", 3), "cannot assign 'int' as buffer 'b' (torch.nn.Buffer, torch.Tensor or None expected)"),
        (lambda: nn.Sequential(nn.ReLU()).__setitem__(0, 3),
         "cannot assign 'int' as child module '0' (torch.nn.Module or None expected)"),
    ]
    for call, text in cases:
        with pytest.raises(TypeError) as info:
            call()
        assert str(info.value) == text
    with pytest.raises(KeyError, match="attribute 'weight' already exists"):
        m.register_buffer("weight", fg.zeros(1))


def test_train_eval_and_requires_grad_():
    for lib in (nn, torch.nn):
        model = mlp(lib)
        assert model.training and all(m.training for m in model.modules())
        assert model.eval() is model and not any(m.training for m in model.modules())
        model.train()
        assert all(m.training for m in model.modules())
        assert model.requires_grad_(False) is model
        assert not any(p.requires_grad for p in model.parameters())


# ---------------------------------------------------------------- repr

def test_reprs_match_torch():
    assert repr(mlp(nn)) == repr(mlp(torch.nn))
    assert repr(Net.build(nn)) == repr(Net.build(torch.nn))
    for make in (lambda lib: lib.Linear(3, 2), lambda lib: lib.Linear(3, 2, bias=False),
                 lambda lib: lib.ReLU(inplace=True), lambda lib: lib.Flatten(), lambda lib: lib.Identity(),
                 lambda lib: lib.Sigmoid(), lambda lib: lib.Softmax(dim=1), lambda lib: lib.LogSoftmax(dim=-1),
                 lambda lib: lib.MSELoss(), lambda lib: lib.CrossEntropyLoss(), lambda lib: lib.Module(),
                 lambda lib: lib.Sequential()):
        assert repr(make(nn)) == repr(make(torch.nn))


# ---------------------------------------------------------------- Linear

def test_linear_init_follows_torch_bounds_and_seed():
    fg.manual_seed(0)
    a = nn.Linear(50, 40)
    fg.manual_seed(0)
    b = nn.Linear(50, 40)
    np.testing.assert_array_equal(a.weight.detach().numpy(), b.weight.detach().numpy())
    np.testing.assert_array_equal(a.bias.detach().numpy(), b.bias.detach().numpy())
    bound = 1 / math.sqrt(50)
    w, bias = a.weight.detach().numpy(), a.bias.detach().numpy()
    assert w.shape == (40, 50) and bias.shape == (40,) and w.dtype == np.float32
    assert np.abs(w).max() <= bound and np.abs(bias).max() <= bound
    # a uniform draw of 2000 values comes close to both ends and is centred
    assert np.abs(w).max() > 0.98 * bound and abs(w.mean()) < 0.05 * bound
    t = torch.nn.Linear(50, 40)
    assert float(t.weight.detach().abs().max()) <= bound  # the same bound torch uses
    assert a.weight.is_leaf and a.weight.requires_grad and a.weight.grad is None


@pytest.mark.parametrize("fdt, tdt, tol", DTYPES)
@pytest.mark.parametrize("shape", [(5, 4), (4,), (2, 3, 4)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_forward_and_gradients_match_torch(fdt, tdt, tol, shape, bias):
    theirs = torch.nn.Linear(4, 3, bias=bias, dtype=tdt)
    ours = nn.Linear(4, 3, bias=bias, dtype=fdt)
    copy_weights(ours, theirs)
    x_np = np.random.default_rng(1).standard_normal(shape)
    tx = torch.tensor(x_np, dtype=tdt, requires_grad=True)
    x = fg.tensor(x_np, dtype=fdt, requires_grad=True)
    ty, y = theirs(tx), ours(x)
    assert tuple(y.shape) == tuple(ty.shape) and y.dtype == fdt
    assert_close(y, ty, tol)
    (ty * ty).sum().backward()
    (y * y).sum().backward()
    assert_close(x.grad, tx.grad, tol)
    assert_close(ours.weight.grad, theirs.weight.grad, tol)
    if bias:
        assert_close(ours.bias.grad, theirs.bias.grad, tol)


@pytest.mark.parametrize("x", [lambda lib: lib.zeros(4, 3), lambda lib: lib.zeros(3), lambda lib: lib.zeros(5, 4, 3),
                               lambda lib: lib.zeros(()), lambda lib: lib.zeros(4, 2, dtype=lib.float64)])
def test_linear_errors_match_torch(x):
    assert_same_error(lambda: nn.Linear(2, 3)(x(fg)), lambda: torch.nn.Linear(2, 3)(x(torch)))


# ---------------------------------------------------------------- Sequential

def test_sequential_indexing_slicing_and_replacement():
    ours, theirs = mlp(nn), mlp(torch.nn)
    assert len(ours) == len(theirs) == 5
    assert [type(m).__name__ for m in ours] == [type(m).__name__ for m in theirs]
    assert repr(ours[-1]) == repr(theirs[-1]) and repr(ours[1:3]) == repr(theirs[1:3])
    assert repr(ours[::2]) == repr(theirs[::2])
    ours[-1], theirs[-1] = nn.Linear(8, 10), torch.nn.Linear(8, 10)
    assert repr(ours) == repr(theirs)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    del ours[1], theirs[1]
    assert repr(ours) == repr(theirs)
    ours.append(nn.Sigmoid()), theirs.append(torch.nn.Sigmoid())
    assert repr(ours) == repr(theirs)
    named = OrderedDict([("first", nn.Linear(2, 2)), ("act", nn.ReLU())])
    tnamed = OrderedDict([("first", torch.nn.Linear(2, 2)), ("act", torch.nn.ReLU())])
    assert repr(nn.Sequential(named)) == repr(torch.nn.Sequential(tnamed))
    assert_same_error(lambda: mlp(nn)[7], lambda: mlp(torch.nn)[7])
    assert_same_error(lambda: mlp(nn)[-6], lambda: mlp(torch.nn)[-6])
    assert_same_error(lambda: nn.Sequential(nn.ReLU(), 3), lambda: torch.nn.Sequential(torch.nn.ReLU(), 3))


@pytest.mark.parametrize("fdt, tdt, tol", DTYPES)
def test_sequential_forward_backward_match_torch(fdt, tdt, tol):
    ours, theirs = mlp(nn, fdt), mlp(torch.nn, tdt)
    copy_weights(ours, theirs)
    x_np = np.random.default_rng(2).standard_normal((6, 4))
    target = np.random.default_rng(3).integers(0, 3, 6)
    t_loss = TF.cross_entropy(theirs(torch.tensor(x_np, dtype=tdt)), torch.tensor(target))
    loss = F.cross_entropy(ours(fg.tensor(x_np, dtype=fdt)), fg.tensor(target))
    assert_close(loss, t_loss, tol)
    t_loss.backward()
    loss.backward()
    for (name, p), (tname, tp) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert name == tname
        assert_close(p.grad, tp.grad, 10 * tol)


# ---------------------------------------------------------------- zero_grad, state_dict, dtype

def test_zero_grad_sets_none_or_zeros():
    model = mlp(nn)
    (model(fg.randn(3, 4)) ** 2).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_state_dict_shares_memory_and_round_trips():
    model = mlp(nn)
    state = model.state_dict()
    assert list(state) == list(mlp(torch.nn).state_dict())
    assert all(not v.requires_grad and type(v) is fg.Tensor for v in state.values())
    assert all(isinstance(v, nn.Parameter) for v in model.state_dict(keep_vars=True).values())
    other = mlp(nn)
    assert repr(other.load_state_dict(state)) == repr(mlp(torch.nn).load_state_dict(mlp(torch.nn).state_dict()))
    x = fg.randn(2, 4)
    np.testing.assert_array_equal(other(x).detach().numpy(), model(x).detach().numpy())
    # loaded values are copies: changing one model leaves the other alone
    with fg.no_grad():
        other[0].weight.mul_(0)
    assert model[0].weight.detach().numpy().any()


@pytest.mark.parametrize("state", [
    lambda lib: {"weight": lib.zeros(3, 3), "bias": lib.zeros(2)},
    lambda lib: {"weight": lib.zeros(2, 3)},
    lambda lib: {"weight": lib.zeros(2, 3), "bias": lib.zeros(2), "x": lib.zeros(1), "y": lib.zeros(1)},
    lambda lib: {"bias": lib.zeros(2), "z": lib.zeros(1), "weight": lib.zeros(1)},
])
def test_load_state_dict_errors_match_torch(state):
    assert_same_error(lambda: nn.Linear(3, 2).load_state_dict(state(fg)),
                      lambda: torch.nn.Linear(3, 2).load_state_dict(state(torch)))


def test_load_state_dict_non_strict_reports_keys():
    ours = nn.Linear(3, 2).load_state_dict({"weight": np.zeros((2, 3)), "q": np.zeros(1)}, strict=False)
    theirs = torch.nn.Linear(3, 2).load_state_dict({"weight": torch.zeros(2, 3), "q": torch.zeros(1)}, strict=False)
    assert repr(ours) == repr(theirs)
    assert ours.missing_keys == ["bias"] and ours.unexpected_keys == ["q"]


def test_double_converts_parameters_in_place():
    model = mlp(nn)
    first = model[0].weight
    value = first.detach().numpy().copy()
    assert model.double() is model
    assert model[0].weight is first and first.dtype == fg.float64
    np.testing.assert_array_equal(first.detach().numpy(), value.astype(np.float64))
    assert model(fg.randn(2, 4, dtype=fg.float64)).dtype == fg.float64
    assert model.float()[0].weight.dtype == fg.float32


def test_deepcopy_gives_independent_parameters():
    model = mlp(nn)
    clone = copy.deepcopy(model)
    assert repr(clone) == repr(model)
    assert all(isinstance(p, nn.Parameter) for p in clone.parameters())
    with fg.no_grad():
        clone[0].weight.fill_(0.0)
    assert model[0].weight.detach().numpy().any()


# ---------------------------------------------------------------- functional: activations

@pytest.mark.parametrize("fdt, tdt, tol", DTYPES)
@pytest.mark.parametrize("name, call", [
    ("relu", lambda lib_f, x: lib_f.relu(x)),
    ("softmax0", lambda lib_f, x: lib_f.softmax(x, dim=0)),
    ("softmax-1", lambda lib_f, x: lib_f.softmax(x, -1)),
    ("log_softmax", lambda lib_f, x: lib_f.log_softmax(x, dim=1)),
    ("tanh", lambda lib_f, x: lib_f.tanh(x)),
    ("sigmoid", lambda lib_f, x: lib_f.sigmoid(x)),
])
def test_activations_match_torch(fdt, tdt, tol, name, call):
    x_np = np.random.default_rng(4).standard_normal((3, 5)) * 3
    w_np = np.random.default_rng(5).standard_normal((3, 5))
    tx = torch.tensor(x_np, dtype=tdt, requires_grad=True)
    x = fg.tensor(x_np, dtype=fdt, requires_grad=True)
    ty, y = call(TF, tx), call(F, x)
    assert_close(y, ty, tol)
    (ty * torch.tensor(w_np, dtype=tdt)).sum().backward()
    (y * fg.tensor(w_np, dtype=fdt)).sum().backward()
    assert_close(x.grad, tx.grad, tol)


def test_softmax_implicit_dim_warns_and_picks_torch_dim():
    for shape in [(4,), (2, 3), (2, 3, 4)]:
        x_np = np.random.default_rng(6).standard_normal(shape)
        with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
            ours = F.softmax(fg.tensor(x_np))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = TF.softmax(torch.tensor(x_np, dtype=torch.float32))
        assert_close(ours, theirs, 1e-6)


def test_relu_module_inplace_matches_torch():
    x_np = np.random.default_rng(7).standard_normal((2, 3))
    tx = torch.tensor(x_np, requires_grad=True)
    x = fg.tensor(x_np, dtype=fg.float64, requires_grad=True)
    th, h = tx * 2, x * 2
    ty, y = torch.nn.ReLU(inplace=True)(th), nn.ReLU(inplace=True)(h)
    assert y is h
    assert_close(h, th, 1e-12)
    (ty * ty).sum().backward()
    (y * y).sum().backward()
    assert_close(x.grad, tx.grad, 1e-12)


# ---------------------------------------------------------------- functional: losses

def _ce_case(shape, classes_dim_size, seed, ignore=None):
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal(shape) * 2
    target_shape = shape[:1] + shape[2:] if len(shape) > 1 else ()
    target = rng.integers(0, classes_dim_size, target_shape)
    if ignore is not None and target.ndim:
        target.reshape(-1)[::3] = ignore
    return logits, target


@pytest.mark.parametrize("fdt, tdt, tol", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(6, 4), (4,), (2, 3, 5), (2, 3, 2, 2)])
@pytest.mark.parametrize("options", [{}, {"weight": True}, {"ignore_index": 1}, {"label_smoothing": 0.2},
                                     {"weight": True, "ignore_index": -100, "label_smoothing": 0.1,
                                      "ignore": -100}])
def test_cross_entropy_matches_torch(fdt, tdt, tol, reduction, shape, options):
    options = dict(options)
    ignore = options.pop("ignore", None)
    classes = shape[1] if len(shape) > 1 else shape[0]
    logits, target = _ce_case(shape, classes, seed=len(shape) + classes, ignore=ignore)
    t_kwargs, kwargs = dict(options, reduction=reduction), dict(options, reduction=reduction)
    if options.get("weight"):
        w = np.linspace(0.5, 2.0, classes)
        t_kwargs["weight"], kwargs["weight"] = torch.tensor(w, dtype=tdt), fg.tensor(w, dtype=fdt)
    tx = torch.tensor(logits, dtype=tdt, requires_grad=True)
    x = fg.tensor(logits, dtype=fdt, requires_grad=True)
    t_loss = TF.cross_entropy(tx, torch.tensor(target), **t_kwargs)
    loss = F.cross_entropy(x, fg.tensor(target), **kwargs)
    assert tuple(loss.shape) == tuple(t_loss.shape) and loss.dtype == fdt
    assert_close(loss, t_loss, 10 * tol)
    u = np.random.default_rng(8).standard_normal(tuple(t_loss.shape))
    (t_loss * torch.tensor(u, dtype=tdt)).sum().backward()
    (loss * fg.tensor(u, dtype=fdt)).sum().backward()
    assert_close(x.grad, tx.grad, 10 * tol)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_cross_entropy_with_probability_targets(reduction, smoothing):
    rng = np.random.default_rng(9)
    logits, probs = rng.standard_normal((5, 4)), rng.dirichlet(np.ones(4), 5)
    w = np.array([1.0, 2.0, 0.5, 1.5])
    tx = torch.tensor(logits, requires_grad=True)
    x = fg.tensor(logits, dtype=fg.float64, requires_grad=True)
    t_loss = TF.cross_entropy(tx, torch.tensor(probs), weight=torch.tensor(w), reduction=reduction,
                              label_smoothing=smoothing)
    loss = F.cross_entropy(x, fg.tensor(probs), weight=fg.tensor(w), reduction=reduction, label_smoothing=smoothing)
    assert_close(loss, t_loss, 1e-12)
    t_loss.sum().backward()
    loss.sum().backward()
    assert_close(x.grad, tx.grad, 1e-12)


def test_cross_entropy_all_ignored_and_empty_batch_give_torch_values():
    x = np.random.default_rng(10).standard_normal((3, 4))
    ignored = np.full(3, -100)
    for reduction in ("mean", "sum"):
        ours = F.cross_entropy(fg.tensor(x), fg.tensor(ignored), reduction=reduction)
        theirs = TF.cross_entropy(torch.tensor(x, dtype=torch.float32), torch.tensor(ignored), reduction=reduction)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        ours = F.cross_entropy(fg.zeros(0, 4), fg.zeros(0, dtype=fg.int64), reduction=reduction)
        theirs = TF.cross_entropy(torch.zeros(0, 4), torch.zeros(0).long(), reduction=reduction)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_cross_entropy_first_under_inference_mode_then_with_grad_as_torch():
    """nll_loss's class indices are made once per class count: one first made under
    inference_mode would be an inference tensor, which the next loss with grad cannot save."""
    x = np.random.default_rng(11).standard_normal((4, 13)).astype(np.float32)
    target = [3, 0, 12, 7]
    results = []
    for lib, f in ((fg, F), (torch, TF)):
        t = lib.tensor(target)
        with lib.inference_mode():
            first = f.cross_entropy(lib.tensor(x), t)
        leaf = lib.tensor(x, requires_grad=True)
        loss = f.cross_entropy(leaf, t)
        loss.backward()
        results.append((first.numpy(), loss.detach().numpy(), leaf.grad.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("call", [
    lambda lib, f: f.cross_entropy(lib.zeros(3, 4), lib.tensor([0, 5, 1])),
    lambda lib, f: f.cross_entropy(lib.zeros(3, 4), lib.tensor([0, -1, 1])),
    lambda lib, f: f.cross_entropy(lib.zeros(3, 4), lib.tensor([0, 1])),
    lambda lib, f: f.cross_entropy(lib.zeros(3, 4), lib.tensor([0.0, 1.0, 1.0])),
    lambda lib, f: f.cross_entropy(lib.zeros(3, 4), lib.tensor([[0, 1, 1]])),
    lambda lib, f: f.cross_entropy(lib.zeros(3, 4), lib.zeros(3, 1, dtype=lib.int64)),
    lambda lib, f: f.cross_entropy(lib.zeros(3, 4), lib.tensor([0, 1, 1]), reduction="foo"),
    lambda lib, f: f.cross_entropy(lib.zeros(3, 4), lib.tensor([True, False, True])),
    lambda lib, f: f.cross_entropy(lib.zeros(3, 4), lib.tensor([0, 1, 1]), weight=lib.ones(3)),
    lambda lib, f: f.cross_entropy(lib.zeros(3, 4, dtype=lib.float64), lib.tensor([0, 1, 1]), weight=lib.ones(4)),
    lambda lib, f: f.cross_entropy(lib.zeros(3, 4), lib.tensor([0, 1, 1]), label_smoothing=1.5),
    lambda lib, f: f.cross_entropy(lib.zeros(3, 4), lib.zeros(3, 4, dtype=lib.int64)),
    lambda lib, f: f.cross_entropy(lib.zeros(3, 4), lib.zeros(3, 4), ignore_index=1),
    lambda lib, f: f.cross_entropy(lib.zeros(4), lib.tensor([1, 2])),
    lambda lib, f: f.cross_entropy(lib.zeros(2, 3, 4), lib.zeros(2, 4, 1, dtype=lib.int64)),
    lambda lib, f: f.cross_entropy(lib.zeros(2, 3, 4, 5), lib.zeros(2, 4, 4, dtype=lib.int64)),
    lambda lib, f: f.cross_entropy(lib.zeros(2, 3, 4, 5), lib.zeros(2, 4, dtype=lib.int64)),
    lambda lib, f: f.mse_loss(lib.zeros(3, 4), lib.zeros(3, 4), reduction="bar"),
    lambda lib, f: f.mse_loss(lib.zeros(3, 4), lib.zeros(3, 4), weight=lib.ones(4)),
])
def test_loss_errors_match_torch(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same_error(lambda: call(fg, F), lambda: call(torch, TF))


def test_mse_loss_broadcast_error_matches_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same_error(lambda: F.mse_loss(fg.zeros(3, 4), fg.zeros(2)),
                          lambda: TF.mse_loss(torch.zeros(3, 4), torch.zeros(2)))


@pytest.mark.parametrize("fdt, tdt, tol", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_mse_loss_matches_torch(fdt, tdt, tol, reduction, weighted):
    rng = np.random.default_rng(11)
    a, b, w = rng.standard_normal((4, 3)), rng.standard_normal((4, 3)), rng.random((4, 3))
    ta, tb = torch.tensor(a, dtype=tdt, requires_grad=True), torch.tensor(b, dtype=tdt, requires_grad=True)
    fa, fb = fg.tensor(a, dtype=fdt, requires_grad=True), fg.tensor(b, dtype=fdt, requires_grad=True)
    t_kw = {"weight": torch.tensor(w, dtype=tdt)} if weighted else {}
    f_kw = {"weight": fg.tensor(w, dtype=fdt)} if weighted else {}
    t_loss = TF.mse_loss(ta, tb, reduction=reduction, **t_kw)
    loss = F.mse_loss(fa, fb, reduction=reduction, **f_kw)
    assert tuple(loss.shape) == tuple(t_loss.shape)
    assert_close(loss, t_loss, tol)
    t_loss.sum().backward()
    loss.sum().backward()
    assert_close(fa.grad, ta.grad, tol)
    assert_close(fb.grad, tb.grad, tol)


def test_mse_loss_broadcasting_warns_like_torch():
    a, b = np.ones((3, 1)), np.arange(3.0)
    with pytest.warns(UserWarning) as ours:
        value = F.mse_loss(fg.tensor(a), fg.tensor(b))
    with pytest.warns(UserWarning) as theirs:
        expected = TF.mse_loss(torch.tensor(a, dtype=torch.float32), torch.tensor(b, dtype=torch.float32))
    assert str(ours[0].message) == str(theirs[0].message)
    assert_close(value, expected, 1e-6)


def test_loss_modules_match_functional():
    x, t = fg.randn(4, 3), fg.tensor([0, 2, 1, 2])
    w = fg.tensor([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(nn.CrossEntropyLoss(weight=w, reduction="sum")(x, t).numpy(),
                                  F.cross_entropy(x, t, weight=w, reduction="sum").numpy())
    np.testing.assert_array_equal(nn.NLLLoss()(x.log_softmax(1), t).numpy(), F.cross_entropy(x, t).numpy())
    y = fg.randn(4, 3)
    np.testing.assert_array_equal(nn.MSELoss(reduction="none")(x, y).numpy(),
                                  F.mse_loss(x, y, reduction="none").numpy())
    assert [n for n, _ in nn.CrossEntropyLoss(weight=w).named_buffers()] == ["weight"]


def test_flatten_identity_match_torch():
    x_np = np.random.default_rng(12).standard_normal((2, 3, 4))
    for make in (lambda lib: lib.Flatten(), lambda lib: lib.Flatten(0, 1), lambda lib: lib.Identity()):
        ours = make(nn)(fg.tensor(x_np))
        theirs = make(torch.nn)(torch.tensor(x_np))
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert_close(ours, theirs, 0)


# ---------------------------------------------------------------- fine-tuning

def test_fine_tuning_frozen_parameters_get_no_grad():
    fg.manual_seed(0)
    model = mlp(nn)
    for p in model.parameters():
        p.requires_grad = False
    model[-1] = nn.Linear(8, 3)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable == ["4.weight", "4.bias"]
    opt = optim.SGD(model[-1].parameters(), lr=0.1, momentum=0.9)
    x, y = fg.randn(16, 4), fg.randint(0, 3, (16,))
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    frozen = [p for n, p in model.named_parameters() if not n.startswith("4.")]
    assert frozen and all(p.grad is None for p in frozen)
    assert all(p.grad is not None for p in model[-1].parameters())


def test_fine_tuning_graph_reaches_only_the_new_layer():
    """Frozen layers record no history, so backward has no node for them (as in torch)."""
    for lib, make_x in ((nn, lambda: fg.randn(4, 4)), (torch.nn, lambda: torch.randn(4, 4))):
        model = mlp(lib)
        model.requires_grad_(False)
        model[-1] = lib.Linear(8, 3)
        out = model(make_x()).sum()
        leaves, stack, seen = [], [out.grad_fn], set()
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            if type(node).__name__ == "AccumulateGrad":
                leaves.append(node.variable)
            stack.extend(n for n, _ in node.next_functions)
        assert sorted(id(t) for t in leaves) == sorted(id(p) for p in model[-1].parameters())


def test_finetune_example_runs(capsys):
    import pathlib
    import runpy
    path = pathlib.Path(__file__).resolve().parent.parent / "examples" / "finetune.py"
    runpy.run_path(str(path), run_name="__main__")
    out = capsys.readouterr().out
    assert "leaves reached by backward: ['fc.bias', 'fc.weight']" in out
    losses = [float(line.split("loss")[1]) for line in out.splitlines() if "[fine-tune]" in line]
    assert len(losses) >= 2 and losses[-1] < losses[0]
    frozen = [line for line in out.splitlines() if line.strip().startswith("features.")]
    assert len(frozen) == 4 and all(line.endswith("grad is None: True") for line in frozen)


def test_losses_trace_inside_compile():
    """cross_entropy and mse_loss are public Tensor ops: compiled values and errors equal eager ones."""
    x_np = np.random.default_rng(13).standard_normal((6, 4))
    x, t = fg.tensor(x_np, requires_grad=True), fg.tensor([0, 3, 1, 2, 2, -100])
    compiled = fg.compile(lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1) + F.mse_loss(x, x * 0.5))
    loss = compiled(x, t)
    expected = F.cross_entropy(x, t, label_smoothing=0.1) + F.mse_loss(x, x * 0.5)
    np.testing.assert_allclose(loss.item(), expected.item(), rtol=1e-6)
    loss.backward()
    grad = x.grad.numpy().copy()
    x.grad = None
    expected.backward()
    np.testing.assert_allclose(grad, x.grad.numpy(), rtol=1e-5, atol=1e-7)
    with pytest.raises(IndexError, match="Target 4 is out of bounds."):
        compiled(x, fg.tensor([0, 4, 1, 2, 2, 1]))


def _history(t, depth=2):
    """grad_fn class names of `t` and of its next_functions, `depth` levels down."""
    node = t.grad_fn
    if node is None or depth == 0:
        return type(node).__name__ if node is not None else None
    return (type(node).__name__, tuple(None if n is None else _history_node(n, depth - 1)
                                       for n, _ in node.next_functions))


def _history_node(node, depth):
    if depth == 0:
        return type(node).__name__
    return (type(node).__name__, tuple(None if n is None else _history_node(n, depth - 1)
                                       for n, _ in node.next_functions))


@pytest.mark.parametrize("shape", [(4, 3), (1, 3), (3,), (5, 4, 3)], ids=str)
@pytest.mark.parametrize("x_grad", [False, True])
def test_linear_records_torchs_nodes(shape, x_grad):
    """F.linear with a bias is one AddmmBackward0 node (TBackward0 for the weight; ViewBackward0
    around it for other ranks), with torch's values and gradients."""
    x_np = np.linspace(-1, 1, int(np.prod(shape)), dtype=np.float32).reshape(shape)
    w_np = np.arange(6, dtype=np.float32).reshape(2, 3) / 5
    results = []
    for lib, functional in ((torch, TF), (fg, F)):
        x = lib.tensor(x_np, requires_grad=x_grad)
        w, b = lib.tensor(w_np, requires_grad=True), lib.tensor([0.5, -1.0], requires_grad=True)
        y = functional.linear(x, w, b)
        (y * y).sum().backward()
        results.append((_history(y, 3), y.detach().numpy(), w.grad.numpy(), b.grad.numpy(),
                        x.grad.numpy() if x_grad else None))
    assert results[0][0] == results[1][0]
    for want, got in zip(results[0][1:], results[1][1:]):
        if want is not None:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_records_one_node(reduction):
    results = []
    for lib, functional in ((torch, TF), (fg, F)):
        x = lib.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3), requires_grad=True)
        t = lib.tensor(np.linspace(0, 2, 6, dtype=np.float32).reshape(2, 3), requires_grad=True)
        loss = functional.mse_loss(x * 1, t, reduction=reduction)
        (loss.sum() if reduction == "none" else loss).backward()
        results.append((_history(loss, 2), loss.detach().numpy(), x.grad.numpy(), t.grad.numpy()))
    assert results[0][0] == results[1][0] and results[0][0][0] == "MseLossBackward0"
    for want, got in zip(results[0][1:], results[1][1:]):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


NLL_CASES = [{}, {"reduction": "sum"}, {"reduction": "none"}, {"ignore_index": 2},
             {"weight": [1.0, 2.0, 0.5, 3.0]}, {"weight": [1.0, 2.0, 0.5, 3.0], "reduction": "none"},
             {"weight": [1.0, 2.0, 0.5, 3.0], "ignore_index": 1}]


@pytest.mark.parametrize("kwargs", NLL_CASES, ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()) or "mean")
@pytest.mark.parametrize("fn", ["cross_entropy", "nll_loss"])
def test_class_index_losses_record_nll_loss_node(fn, kwargs):
    """cross_entropy / nll_loss of (N, C) and (C,) inputs: one NllLossBackward0 node whose
    next_functions are torch's, with torch's values and gradients."""
    x_np = np.random.default_rng(21).standard_normal((5, 4)).astype(np.float32)
    for rows in (slice(None), 0):                         # (N, C) and (C,) inputs
        results = []
        for lib, functional in ((torch, TF), (fg, F)):
            x = lib.tensor(x_np[rows], requires_grad=True)
            target = lib.tensor([0, 3, 1, 2, 2] if rows != 0 else 3)
            kw = dict(kwargs, **({"weight": lib.tensor(kwargs["weight"])} if "weight" in kwargs else {}))
            inp = x if fn == "cross_entropy" else x.log_softmax(-1)
            loss = getattr(functional, fn)(inp, target, **kw)
            (loss.sum() if kwargs.get("reduction") == "none" else loss).backward()
            results.append((_history(loss, 2), loss.detach().numpy(), x.grad.numpy()))
        assert results[0][0] == results[1][0] and results[0][0][0] == "NllLossBackward0"
        for want, got in zip(results[0][1:], results[1][1:]):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_compiled_cross_entropy_with_weights_and_ignored_targets_equals_eager():
    x = fg.tensor(np.random.default_rng(22).standard_normal((6, 4)).astype(np.float32), requires_grad=True)
    t, w = fg.tensor([0, 3, -100, 2, 2, 1]), fg.tensor([1.0, 2.0, 0.5, 3.0])
    step = fg.compile(fg.value_and_grad(lambda x: F.cross_entropy(x, t, weight=w)))
    value, grad = step(x)
    eager_value, eager_grad = fg.value_and_grad(lambda x: F.cross_entropy(x, t, weight=w))(x)
    np.testing.assert_allclose(value.item(), eager_value.item(), rtol=1e-6)
    np.testing.assert_allclose(grad.detach().numpy(), eager_grad.detach().numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("shape", [(0,), (3, 0), (2, 3, 0), (0, 0)])
def test_linear_without_input_features_is_its_bias(shape):
    """Linear(0, 2) maps any input to its bias (the 1-d and 3-d inputs once raised torch's
    "cannot reshape tensor of 0 elements" error from a (-1, 0) reshape)."""
    seen = []
    for lib in (torch, fg):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")         # torch's "Initializing zero-element tensors"
            layer = lib.nn.Linear(0, 2)
        with lib.no_grad():
            layer.bias.copy_(lib.tensor([0.5, -1.0]))
        x = lib.ones(*shape, requires_grad=True)
        y = layer(x)
        y.sum().backward()
        seen.append((tuple(y.shape), type(y.grad_fn).__name__, y.detach().numpy().tolist(), tuple(x.grad.shape),
                     layer.bias.grad.tolist()))
    assert seen[1] == seen[0]


@pytest.mark.parametrize("call", [
    lambda L: L.nn.Sequential(L.nn.ReLU()) * 0, lambda L: L.nn.Sequential(L.nn.ReLU()) * 1.5,
    lambda L: L.nn.Sequential().insert(0, 3), lambda L: L.nn.Sequential() + 3,
    lambda L: L.nn.Sequential() + L.nn.ReLU(), lambda L: L.nn.Sequential().__iadd__(L.nn.Linear(1, 1)),
], ids=["times 0", "times float", "insert non-module", "plus int", "plus module", "iadd module"])
def test_sequential_errors_name_classes_as_torch(call):
    """The texts print classes as torch's do: fusegrad's mirrors under torch's module path."""
    outcomes = []
    for L in (torch, fg):
        with pytest.raises(Exception) as error:
            call(L)
        outcomes.append((type(error.value).__name__, str(error.value)))
    assert outcomes[1] == outcomes[0]
