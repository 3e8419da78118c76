"""Hand-written NumPy: each workload's forward pass and its hand-derived backward pass.

These are also the reference outputs every other column is checked against.
"""
import numpy as np

import workloads as wl


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def w1(data):
    """f(x) = sum(tanh(x) * sigmoid(x) + exp(-x*x)); f'(x) = (1-t^2) s + t s (1-s) - 2 x e."""
    x = data["x"]

    def run():
        t, s, e = np.tanh(x), _sigmoid(x), np.exp(-(x * x))
        value = (t * s + e).sum()
        grad = (1 - t * t) * s + t * s * (1 - s) - 2 * x * e
        return value, grad
    return run


def w2(data):
    """sum(y*y) with y = (x - mean) / sqrt(var + eps) * w + b over the last axis; grads wrt x, w, b."""
    x, w, b = data["x"], data["w"], data["b"]

    def run():
        centred = x - x.mean(-1, keepdims=True)
        rstd = 1 / np.sqrt((centred * centred).mean(-1, keepdims=True) + wl.LAYERNORM_EPS)
        xhat = centred * rstd
        y = xhat * w + b
        value = (y * y).sum()
        dy = 2 * y
        dxhat = dy * w
        dx = rstd * (dxhat - dxhat.mean(-1, keepdims=True)
                     - xhat * (dxhat * xhat).mean(-1, keepdims=True))
        return value, dx, (dy * xhat).sum(0), dy.sum(0)
    return run


def softmax_cross_entropy(logits, targets):
    """Mean cross-entropy of integer targets and its gradient wrt the logits."""
    rows = np.arange(len(targets))
    shifted = logits - logits.max(1, keepdims=True)
    exp = np.exp(shifted)
    total = exp.sum(1, keepdims=True)
    loss = (np.log(total[:, 0]) - shifted[rows, targets]).mean()
    grad = exp / total
    grad[rows, targets] -= 1
    grad /= len(targets)
    return loss, grad


def w3(data):
    logits, targets = data["logits"], data["targets"]
    return lambda: softmax_cross_entropy(logits, targets)


def w4(data):
    """One SGD step of Linear-ReLU-Linear with cross-entropy, weights laid out [out, in] as torch."""
    x, y, lr = data["x"], data["y"], np.float32(data["lr"])
    w1_, b1, w2_, b2 = (data[name].copy() for name in ("w1", "b1", "w2", "b2"))

    def run():
        hidden = x @ w1_.T + b1
        active = np.maximum(hidden, 0)
        loss, dlogits = softmax_cross_entropy(active @ w2_.T + b2, y)
        dhidden = (dlogits @ w2_) * (hidden > 0)
        for param, grad in ((w2_, dlogits.T @ active), (b2, dlogits.sum(0)),
                            (w1_, dhidden.T @ x), (b1, dhidden.sum(0))):
            param -= lr * grad
        return loss, w1_, b1, w2_, b2
    return run


def w5_chain(x):
    for _ in range(wl.W5_STEPS):
        x = np.tanh(x * wl.W5_SCALE + wl.W5_SHIFT)
    return x


def w5(data):
    x = data["x"]
    return lambda: (w5_chain(x),)


def w6(data):
    """The tutorial loop; its backward is v times the product of the doublings."""
    v, rng = data["v"], np.random.default_rng(6)

    def run():
        x = rng.standard_normal(3, dtype=np.float32)
        y, factor = x * 2, 2.0
        while np.linalg.norm(y) < wl.W6_THRESHOLD:
            y, factor = y * 2, factor * 2
        return x, v * np.float32(factor)
    return run
