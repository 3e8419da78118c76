"""W1-W6 written once against torch's API and run by both torch and fusegrad.

fusegrad's public API is torch's (shared/spec/API.md), so each workload is one
function here for both frameworks, eager and compiled.  A Framework object
supplies the little that differs: the library module, how a function is
compiled, how value-and-gradient is taken, and how arrays become tensors.

Compiled variants: torch.compile compiles the loss (AOTAutograd compiles its
backward too) and torch.autograd.grad runs outside; fg.compile compiles
fg.value_and_grad(loss) as a whole, so the backward is inside the program.
For W4 and W6 both compile the whole step, backward() and opt.step() included.
"""
import os

import workloads as wl


def w1_loss(x):
    return (x.tanh() * x.sigmoid() + (-(x * x)).exp()).sum()


def w2_loss(x, w, b):
    centred = x - x.mean(-1, keepdim=True)
    var = (centred * centred).mean(-1, keepdim=True)
    y = centred / (var + wl.LAYERNORM_EPS).sqrt() * w + b
    return (y * y).sum()


def w5_chain(x):
    for _ in range(wl.W5_STEPS):
        x = (x * wl.W5_SCALE + wl.W5_SHIFT).tanh()
    return x


def w6_loop(x, v):
    """The tutorial: keep doubling until the norm reaches 1000, then a vector-Jacobian product."""
    y = x * 2
    while y.norm() < wl.W6_THRESHOLD:
        y = y * 2
    y.backward(v)
    return y


class Framework:
    """A torch-like library, eager (compile is the identity) or compiled."""

    def __init__(self, lib, compile_fn=None):
        self.lib = lib
        self.compile = compile_fn or (lambda fn: fn)

    def tensor(self, array):
        """A tensor holding its own copy of a NumPy array (in-place updates stay private)."""
        return self.lib.from_numpy(array.copy())

    def value_and_grad(self, loss, argnums):
        """A function of loss's arguments returning (value, tuple of gradients wrt argnums)."""
        raise NotImplementedError


class Torch(Framework):
    def __init__(self, compiled):
        import torch
        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", torch.get_num_threads())))
        super().__init__(torch, torch.compile if compiled else None)

    def value_and_grad(self, loss, argnums):
        loss, grad = self.compile(loss), self.lib.autograd.grad

        def value_and_grad(*args):
            leaves = [args[i].requires_grad_() for i in argnums]
            value = loss(*args)
            return value, grad(value, leaves)
        return value_and_grad


class Fusegrad(Framework):
    def __init__(self, compiled):
        import fusegrad as fg
        super().__init__(fg, fg.compile if compiled else None)

    def value_and_grad(self, loss, argnums):
        return self.compile(self.lib.value_and_grad(loss, argnums=argnums))


def _value_and_grad_run(fw, loss, arrays, argnums):
    args = [fw.tensor(array) for array in arrays]
    value_and_grad = fw.value_and_grad(loss, argnums)

    def run():
        value, grads = value_and_grad(*args)
        return (value, *grads)
    return run


def w1(fw, data):
    return _value_and_grad_run(fw, w1_loss, [data["x"]], (0,))


def w2(fw, data):
    return _value_and_grad_run(fw, w2_loss, [data[name] for name in ("x", "w", "b")], (0, 1, 2))


def w3(fw, data):
    cross_entropy = fw.lib.nn.functional.cross_entropy
    return _value_and_grad_run(fw, lambda logits, targets: cross_entropy(logits, targets),
                               [data["logits"], data["targets"]], (0,))


def _linear(fw, weight, bias):
    """nn.Linear holding the workload's initial weights, so every framework starts alike."""
    out_features, in_features = weight.shape
    layer = fw.lib.nn.Linear(in_features, out_features)
    with fw.lib.no_grad():
        layer.weight.copy_(fw.tensor(weight))
        layer.bias.copy_(fw.tensor(bias))
    return layer


def w4(fw, data):
    """One SGD step (zero_grad, forward, cross-entropy, backward, step) of Linear-ReLU-Linear."""
    hidden_layer, output_layer = _linear(fw, data["w1"], data["b1"]), _linear(fw, data["w2"], data["b2"])
    params = [hidden_layer.weight, hidden_layer.bias, output_layer.weight, output_layer.bias]
    optimizer = fw.lib.optim.SGD(params, lr=data["lr"])
    functional = fw.lib.nn.functional

    def sgd_step(x, y):
        optimizer.zero_grad()
        loss = functional.cross_entropy(output_layer(functional.relu(hidden_layer(x))), y)
        loss.backward()
        optimizer.step()
        return loss

    step, x, y = fw.compile(sgd_step), fw.tensor(data["x"]), fw.tensor(data["y"])
    return lambda: (step(x, y), *params)


def w5(fw, data):
    chain, x = fw.compile(w5_chain), fw.tensor(data["x"])
    return lambda: (chain(x),)


def w6(fw, data):
    """A fresh random leaf every call, as in the tutorial; returns (x, x.grad)."""
    loop, v = fw.compile(w6_loop), fw.tensor(data["v"])

    def run():
        x = fw.lib.randn(3, requires_grad=True)
        loop(x, v)
        return x, x.grad
    return run
