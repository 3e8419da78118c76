"""PyTorch's autograd tutorials, translated word for word from `torch` to `fg`.

Covers every example of the 60-minute blitz autograd tutorial (both its
"Autograd: automatic differentiation" and its "A Gentle Introduction to
torch.autograd" editions), of the "Autograd mechanics" note (excluding
subgraphs, fine-tuning, multithreaded training, in-place correctness checks)
and of the "Broadcasting semantics" note. The expected values are the ones the
tutorials print with torch; they are checked without torch, except where a
test compares a training step with torch (that test skips without torch).

The note's examples on private saved-tensor attributes (`_saved_self`), hooks
and complex numbers are outside the API contract and are not translated.
"""
from __future__ import annotations

import re
import threading

import numpy as np
import pytest

import fusegrad as fg


def _nn():
    """fg.nn and fg.optim, or a skip saying why."""
    try:
        from fusegrad import nn, optim
    except ImportError as e:  # pragma: no cover - only while fg.nn is being written
        pytest.skip(f"fusegrad.nn / fusegrad.optim not importable yet: {e}")
    return nn, optim


def _torch():
    return pytest.importorskip("torch", reason="torch is the oracle for this training step")


# --------------------------------------------------------------------------- blitz: "Autograd: automatic differentiation"

def test_blitz_tensor_operations_print_as_torch(capsys):
    x = fg.ones(2, 2, requires_grad=True)
    print(x)
    y = x + 2
    print(y)
    print(y.grad_fn)
    z = y * y * 3
    out = z.mean()
    print(z, out)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0:2] == ["tensor([[1., 1.],", "        [1., 1.]], requires_grad=True)"]
    assert lines[2:4] == ["tensor([[3., 3.],", "        [3., 3.]], grad_fn=<AddBackward0>)"]
    assert re.fullmatch(r"<AddBackward0 object at 0x[0-9a-fA-F]+>", lines[4])
    assert lines[5:7] == ["tensor([[27., 27.],",
                          "        [27., 27.]], grad_fn=<MulBackward0>) tensor(27., grad_fn=<MeanBackward0>)"]


def test_blitz_requires_grad_(capsys):
    a = fg.randn(2, 2)
    a = ((a * 3) / (a - 1))
    print(a.requires_grad)
    a.requires_grad_(True)
    print(a.requires_grad)
    b = (a * a).sum()
    print(b.grad_fn)
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["False", "True"]
    assert re.fullmatch(r"<SumBackward0 object at 0x[0-9a-fA-F]+>", lines[2])


def test_blitz_gradients_are_4_5(capsys):
    x = fg.ones(2, 2, requires_grad=True)
    y = x + 2
    z = y * y * 3
    out = z.mean()
    out.backward()
    print(x.grad)
    assert capsys.readouterr().out == "tensor([[4.5000, 4.5000],\n        [4.5000, 4.5000]])\n"
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 2), 4.5, dtype=np.float32))


def test_blitz_backward_equals_backward_of_tensor_one():
    # "out.backward() is equivalent to out.backward(torch.tensor(1.))"
    grads = []
    for seed in (None, fg.tensor(1.)):
        x = fg.ones(2, 2, requires_grad=True)
        out = ((x + 2) * (x + 2) * 3).mean()
        out.backward() if seed is None else out.backward(seed)
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
    np.testing.assert_array_equal(grads[0], np.full((2, 2), 4.5))


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_blitz_crazy_things_while_loop(seed, capsys):
    fg.manual_seed(seed)
    x = fg.randn(3, requires_grad=True)

    y = x * 2
    k = 1  # how many times x was doubled: the loop's trip count plus the first `* 2`
    while y.data.norm() < 1000:
        y = y * 2
        k += 1

    print(y)

    gradients = fg.tensor([0.1, 1.0, 0.0001], dtype=fg.float)
    y.backward(gradients)

    print(x.grad)
    printed = capsys.readouterr().out
    assert "grad_fn=<MulBackward0>" in printed
    np.testing.assert_array_equal(y.detach().numpy(), x.detach().numpy() * np.float32(2.0 ** k))
    np.testing.assert_array_equal(x.grad.numpy(), gradients.numpy() * np.float32(2.0 ** k))
    assert np.linalg.norm(y.detach().numpy()) >= 1000 > np.linalg.norm(y.detach().numpy()) / 2


def test_blitz_loop_trip_count_depends_on_values():
    trips = set()
    for scale in (1e-3, 1.0, 100.0):
        x = fg.tensor([scale, -scale, scale / 2], requires_grad=True)
        y, k = x * 2, 1
        while y.data.norm() < 1000:
            y, k = y * 2, k + 1
        y.backward(fg.tensor([0.1, 1.0, 0.0001], dtype=fg.float))
        np.testing.assert_array_equal(x.grad.numpy(), np.array([0.1, 1.0, 0.0001], dtype=np.float32) * 2.0 ** k)
        trips.add(k)
    assert len(trips) == 3


def test_blitz_no_grad(capsys):
    x = fg.randn(3, requires_grad=True)
    print(x.requires_grad)
    print((x ** 2).requires_grad)

    with fg.no_grad():
        print((x ** 2).requires_grad)
    assert capsys.readouterr().out.splitlines() == ["True", "True", "False"]


def test_blitz_detach(capsys):
    x = fg.randn(3, requires_grad=True)
    print(x.requires_grad)
    y = x.detach()
    print(y.requires_grad)
    print(x.eq(y).all())
    assert capsys.readouterr().out.splitlines() == ["True", "False", "tensor(True)"]


# --------------------------------------------------------------------------- blitz: "A Gentle Introduction to torch.autograd"

def test_gentle_intro_differentiation_in_autograd(capsys):
    a = fg.tensor([2., 3.], requires_grad=True)
    b = fg.tensor([6., 4.], requires_grad=True)

    Q = 3*a**3 - b**2

    external_grad = fg.tensor([1., 1.])
    Q.backward(gradient=external_grad)

    # Check if collected gradients are correct
    print(9*a**2 == a.grad)
    print(-2*b == b.grad)
    assert capsys.readouterr().out.splitlines() == ["tensor([True, True])", "tensor([True, True])"]
    assert Q.tolist() == [-12.0, 65.0]
    assert type(Q.grad_fn).__name__ == "SubBackward0"


def test_gentle_intro_aggregate_q_into_a_scalar():
    a = fg.tensor([2., 3.], requires_grad=True)
    b = fg.tensor([6., 4.], requires_grad=True)
    Q = 3*a**3 - b**2
    Q.sum().backward()
    assert a.grad.tolist() == [36.0, 81.0]
    assert b.grad.tolist() == [-12.0, -8.0]


def test_gentle_intro_exclusion_from_the_dag(capsys):
    x = fg.rand(5, 5)
    y = fg.rand(5, 5)
    z = fg.rand((5, 5), requires_grad=True)

    a = x + y
    print(f"Does `a` require gradients?: {a.requires_grad}")
    b = x + z
    print(f"Does `b` require gradients?: {b.requires_grad}")
    assert capsys.readouterr().out.splitlines() == ["Does `a` require gradients?: False",
                                                    "Does `b` require gradients?: True"]


def _tiny_model(nn, L=None):
    """A small stand-in for resnet18: a frozen-able body and a last layer `fc`."""
    class TinyNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(12, 8), nn.ReLU(), nn.Linear(8, 6), nn.ReLU())
            self.fc = nn.Linear(6, 4)

        def forward(self, x):
            return self.fc(self.body(x))

    return TinyNet()


def _copy_params(src_model, dst_model, torch):
    """Copy fg parameters into the torch twin, by name."""
    dst = dict(dst_model.named_parameters())
    with torch.no_grad():
        for name, p in src_model.named_parameters():
            dst[name].copy_(torch.tensor(p.detach().numpy()))


def test_gentle_intro_training_step_matches_torch():
    torch = _torch()
    nn, optim = _nn()
    fg.manual_seed(0)
    model = _tiny_model(nn)
    t_model = _tiny_model(torch.nn)
    _copy_params(model, t_model, torch)
    data0 = np.random.default_rng(0).random((1, 12)).astype(np.float32)
    labels0 = np.random.default_rng(1).random((1, 4)).astype(np.float32)

    results = []
    for L, m, opt_mod in [(fg, model, optim), (torch, t_model, torch.optim)]:
        data, labels = L.tensor(data0), L.tensor(labels0)
        prediction = m(data)  # forward pass
        loss = (prediction - labels).sum()
        loss.backward()  # backward pass
        opt = opt_mod.SGD(m.parameters(), lr=1e-2, momentum=0.9)
        opt.step()  # gradient descent
        results.append((loss.item(), {n: (p.grad.numpy().copy(), p.detach().numpy().copy())
                                      for n, p in m.named_parameters()}))
    (f_loss, f_params), (t_loss, t_params) = results
    assert f_loss == pytest.approx(t_loss, rel=1e-5)
    assert list(f_params) == list(t_params)
    for name in t_params:
        np.testing.assert_allclose(f_params[name][0], t_params[name][0], rtol=1e-5, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(f_params[name][1], t_params[name][1], rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("optimize", ["model.fc.parameters()", "model.parameters()"])
def test_finetuning_frozen_base(optimize):
    """The note's and the gentle introduction's fine-tuning example."""
    nn, optim = _nn()
    fg.manual_seed(1)
    model = _tiny_model(nn)

    # Freeze all the parameters in the network
    for param in model.parameters():
        param.requires_grad = False
    # Replace the last fully-connected layer
    # Parameters of newly constructed modules have requires_grad=True by default
    model.fc = nn.Linear(6, 10)

    # Optimize only the classifier
    params = model.fc.parameters() if optimize == "model.fc.parameters()" else model.parameters()
    optimizer = optim.SGD(params, lr=1e-2, momentum=0.9)

    frozen = {n: p.detach().numpy().copy() for n, p in model.named_parameters() if not n.startswith("fc.")}
    head = {n: p.detach().numpy().copy() for n, p in model.named_parameters() if n.startswith("fc.")}
    assert set(head) == {"fc.weight", "fc.bias"}
    assert tuple(model.fc.weight.shape) == (10, 6)
    data = fg.rand(3, 12)
    for _ in range(2):
        optimizer.zero_grad()
        hidden = model.body(data)
        # No intermediate buffers are saved until the computation gets to the last layer.
        assert hidden.requires_grad is False and hidden.grad_fn is None
        prediction = model(data)
        assert prediction.requires_grad
        loss = (prediction ** 2).mean()
        loss.backward()
        optimizer.step()
    for n, p in model.named_parameters():
        if n in frozen:
            assert p.requires_grad is False and p.grad is None, n
            np.testing.assert_array_equal(p.detach().numpy(), frozen[n], err_msg=n)
        else:
            assert p.requires_grad and p.grad is not None, n
            assert not np.array_equal(p.detach().numpy(), head[n]), f"{n} was not updated"


def test_finetuning_matches_torch():
    torch = _torch()
    nn, optim = _nn()
    fg.manual_seed(2)
    model, t_model = _tiny_model(nn), _tiny_model(torch.nn)
    for m, L in [(model, nn), (t_model, torch.nn)]:
        for param in m.parameters():
            param.requires_grad = False
        m.fc = L.Linear(6, 10)
    _copy_params(model, t_model, torch)
    data0 = np.random.default_rng(3).random((3, 12)).astype(np.float32)
    outs = []
    for L, m, opt_mod in [(fg, model, optim), (torch, t_model, torch.optim)]:
        optimizer = opt_mod.SGD(m.fc.parameters(), lr=1e-2, momentum=0.9)
        for _ in range(3):
            optimizer.zero_grad()
            loss = (m(L.tensor(data0)) ** 2).mean()
            loss.backward()
            optimizer.step()
        outs.append([p.detach().numpy().copy() for p in m.fc.parameters()])
    for f, t in zip(*outs):
        np.testing.assert_allclose(f, t, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- "Autograd mechanics" note

def test_note_requires_grad_example():
    x = fg.randn(5, 5)  # requires_grad=False by default
    y = fg.randn(5, 5)  # requires_grad=False by default
    z = fg.randn((5, 5), requires_grad=True)
    a = x + y
    assert a.requires_grad is False
    b = a + z
    assert b.requires_grad is True


def test_note_multithreaded_autograd():
    results = []

    # Define a train function to be used in different threads
    def train_fn():
        x = fg.ones(5, 5, requires_grad=True)
        # forward
        y = (x + 3) * (x + 4) * 0.5
        # backward
        y.sum().backward()
        # potential optimizer update
        results.append(x.grad.numpy().copy())

    # User write their own threading code to drive the train_fn
    threads = []
    for _ in range(10):
        p = threading.Thread(target=train_fn, args=())
        p.start()
        threads.append(p)

    for p in threads:
        p.join()

    assert len(results) == 10
    for g in results:
        np.testing.assert_array_equal(g, np.full((5, 5), 4.5, dtype=np.float32))


def test_note_no_grad_in_one_thread_does_not_leak_into_another():
    seen = {}
    inside, release = threading.Event(), threading.Event()

    def worker():
        with fg.no_grad():
            inside.set()
            release.wait(5)

    t = threading.Thread(target=worker)
    t.start()
    inside.wait(5)
    seen["main"] = fg.is_grad_enabled()
    seen["op"] = (fg.ones(1, requires_grad=True) * 2).requires_grad
    release.set()
    t.join()
    assert seen == {"main": True, "op": True}


def test_note_inplace_correctness_check():
    # "Once you access self.saved_tensors it is checked, and if it is greater
    # than the saved value an error is raised."
    x = fg.randn(5, requires_grad=True)
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError, match="one of the variables needed for gradient computation has been "
                                           "modified by an inplace operation"):
        y.sum().backward()


# --------------------------------------------------------------------------- "Broadcasting semantics" note

def test_broadcasting_general_semantics():
    x = fg.empty(5, 7, 3)
    y = fg.empty(5, 7, 3)
    # same shapes are always broadcastable (i.e. the above rules always hold)
    assert (x + y).size() == (5, 7, 3)

    x = fg.empty((0,))
    y = fg.empty(2, 2)
    # x and y are not broadcastable, because x does not have at least 1 dimension
    with pytest.raises(RuntimeError, match=re.escape(
            "The size of tensor a (0) must match the size of tensor b (2) at non-singleton dimension 1")):
        x + y

    # can line up trailing dimensions
    x = fg.empty(5, 3, 4, 1)
    y = fg.empty(3, 1, 1)
    # x and y are broadcastable.
    assert (x + y).size() == (5, 3, 4, 1)

    # but:
    x = fg.empty(5, 2, 4, 1)
    y = fg.empty(3, 1, 1)
    # x and y are not broadcastable, because in the 3rd trailing dimension 2 != 3
    with pytest.raises(RuntimeError):
        x + y


def test_broadcasting_resulting_sizes(capsys):
    # can line up trailing dimensions to make reading easier
    x = fg.empty(5, 1, 4, 1)
    y = fg.empty(3, 1, 1)
    print((x + y).size())

    # but not necessary:
    x = fg.empty(1)
    y = fg.empty(3, 1, 7)
    print((x + y).size())

    assert capsys.readouterr().out.splitlines() == ["fg.Size([5, 3, 4, 1])", "fg.Size([3, 1, 7])"]

    x = fg.empty(5, 2, 4, 1)
    y = fg.empty(3, 1, 1)
    with pytest.raises(RuntimeError) as err:
        (x + y).size()
    assert str(err.value) == ("The size of tensor a (2) must match the size of tensor b (3) "
                              "at non-singleton dimension 1")


def test_broadcasting_in_place_semantics(capsys):
    x = fg.empty(5, 3, 4, 1)
    y = fg.empty(3, 1, 1)
    print((x.add_(y)).size())
    assert capsys.readouterr().out == "fg.Size([5, 3, 4, 1])\n"

    # but:
    x = fg.empty(1, 3, 1)
    y = fg.empty(3, 1, 7)
    with pytest.raises(RuntimeError) as err:
        (x.add_(y)).size()
    try:
        import torch
    except ImportError:
        return
    with pytest.raises(RuntimeError) as t_err:
        torch.empty(1, 3, 1).add_(torch.empty(3, 1, 7))
    assert str(err.value) == str(t_err.value)


def test_broadcasting_backwards_compatibility():
    assert fg.add(fg.ones(4, 1), fg.randn(4)).size() == (4, 4)


def test_broadcasting_gradients_sum_to_input_shapes():
    x = fg.ones(5, 1, 4, 1, requires_grad=True)
    y = fg.ones(3, 1, 1, requires_grad=True)
    (x * y).sum().backward()
    assert x.grad.shape == (5, 1, 4, 1) and y.grad.shape == (3, 1, 1)
    np.testing.assert_array_equal(x.grad.numpy(), np.full((5, 1, 4, 1), 3.0))
    np.testing.assert_array_equal(y.grad.numpy(), np.full((3, 1, 1), 20.0))
