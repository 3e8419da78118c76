"""jax.jit of jax.value_and_grad (or of a whole SGD step) for each workload.

JAX dispatches asynchronously, so every run() blocks until its results exist.
"""
import jax
import jax.numpy as jnp

import workloads as wl
from impls import NotApplicable


def _w1_loss(x):
    return (jnp.tanh(x) * jax.nn.sigmoid(x) + jnp.exp(-(x * x))).sum()


def _w2_loss(x, w, b):
    centred = x - x.mean(-1, keepdims=True)
    var = (centred * centred).mean(-1, keepdims=True)
    y = centred / jnp.sqrt(var + wl.LAYERNORM_EPS) * w + b
    return (y * y).sum()


def _cross_entropy(logits, targets):
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(log_probs, targets[:, None], axis=1).mean()


def _value_and_grad(loss, args, argnums):
    """run() for jit(value_and_grad(loss)) at `args`: returns (value, *gradients)."""
    step = jax.jit(jax.value_and_grad(loss, argnums=argnums))

    def run():
        value, grads = step(*args)
        return jax.block_until_ready((value, *grads))
    return run


def w1(data):
    return _value_and_grad(_w1_loss, (jnp.asarray(data["x"]),), (0,))


def w2(data):
    args = tuple(jnp.asarray(data[name]) for name in ("x", "w", "b"))
    return _value_and_grad(_w2_loss, args, (0, 1, 2))


def w3(data):
    args = (jnp.asarray(data["logits"]), jnp.asarray(data["targets"]))
    return _value_and_grad(_cross_entropy, args, (0,))


def _mlp_loss(params, x, y):
    w1, b1, w2, b2 = params
    hidden = jax.nn.relu(x @ w1.T + b1)
    return _cross_entropy(hidden @ w2.T + b2, y)


def w4(data):
    """One jitted SGD step; the updated parameters are carried from call to call."""
    lr = data["lr"]

    @jax.jit
    def sgd_step(params, x, y):
        loss, grads = jax.value_and_grad(_mlp_loss)(params, x, y)
        return loss, tuple(p - lr * g for p, g in zip(params, grads))

    state = {"params": tuple(jnp.asarray(data[name]) for name in ("w1", "b1", "w2", "b2"))}
    x, y = jnp.asarray(data["x"]), jnp.asarray(data["y"])

    def run():
        loss, state["params"] = sgd_step(state["params"], x, y)
        return jax.block_until_ready((loss, *state["params"]))
    return run


def _w5_chain(x):
    for _ in range(wl.W5_STEPS):
        x = jnp.tanh(x * wl.W5_SCALE + wl.W5_SHIFT)
    return x


def w5(data):
    chain, x = jax.jit(_w5_chain), jnp.asarray(data["x"])
    return lambda: jax.block_until_ready((chain(x),))


def w6(data):
    raise NotApplicable("jax.jit cannot take the reverse-mode gradient of a while loop "
                        "whose trip count depends on values (lax.while_loop has no VJP)")
