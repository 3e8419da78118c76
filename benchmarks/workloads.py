"""The six workloads W1-W6: sizes, input data, minimal bytes moved, and how results are checked.

A workload is framework-neutral: `make_data` returns float32 (and int64) NumPy
arrays from a fixed seed, and each implementation in impls/ turns them into
its own tensors.  Every implementation's run() returns a tuple of array-likes
in the workload's output order (below), which `check` compares with the
NumPy implementation's outputs, so a fast but wrong cell is flagged.

Output order: W1-W3 (value, *gradients); W4 (loss, W1, b1, W2, b2) after the
SGD step; W5 (y,); W6 (x, x.grad).
"""
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

TOLERANCE = 1e-3  # largest error allowed, relative to the largest reference magnitude (float32)


def max_relative_error(outputs, expected):
    """Largest |output - expected| over all arrays, each relative to its expected array's max |value|."""
    if len(outputs) != len(expected):
        return float("inf")
    worst = 0.0
    for out, ref in zip(outputs, expected):
        out, ref = np.asarray(out, dtype=np.float64), np.asarray(ref, dtype=np.float64)
        if out.shape != ref.shape:
            return float("inf")
        scale = max(float(np.max(np.abs(ref), initial=0.0)), 1e-30)
        worst = max(worst, float(np.max(np.abs(out - ref), initial=0.0)) / scale)
    return worst


def compare_to_reference(outputs, reference, data):
    """Default check: the outputs equal the NumPy implementation's (None: nothing to compare with)."""
    if reference is None:
        return None
    return max_relative_error(outputs, reference)


def compare_sgd_updates(outputs, reference, data):
    """W4: the loss, and each parameter's change by the step (the change carries the gradient)."""
    if reference is None:
        return None
    initial = [data[name] for name in ("w1", "b1", "w2", "b2")]

    def loss_and_updates(values):
        return (values[0], *(np.asarray(p) - p0 for p, p0 in zip(values[1:], initial)))

    return max_relative_error(loss_and_updates(outputs), loss_and_updates(reference))


def doubling_loop_gradient(x, v):
    """W6's gradient by its definition: y = x * 2**n with n the doublings until |y| >= 1000."""
    y = np.asarray(x, dtype=np.float32) * np.float32(2)
    factor = 2.0
    while np.linalg.norm(y) < 1000:
        y = y * np.float32(2)
        factor *= 2.0
    return v * np.float32(factor)


def compare_doubling_loop(outputs, reference, data):
    """W6: x is random on every call, so check x.grad against the loop's rule for that x."""
    x, grad = outputs
    return max_relative_error((grad,), (doubling_loop_gradient(x, data["v"]),))


@dataclass(frozen=True)
class Workload:
    """One benchmark workload; `min_bytes` is None where the workload is not memory-bound."""
    key: str
    title: str
    make_data: Callable[[bool], dict]
    min_bytes: Optional[Callable[[dict], int]] = None
    check: Callable = compare_to_reference


def _randn(rng, *shape):
    return rng.standard_normal(shape, dtype=np.float32)


def _w1_data(quick):
    rng = np.random.default_rng(1)
    return {"x": _randn(rng, (1 << 22) // (16 if quick else 1))}


def _w2_data(quick):
    rng = np.random.default_rng(2)
    rows, features = (256 if quick else 4096), 1024
    return {"x": _randn(rng, rows, features),
            "w": 1 + 0.1 * _randn(rng, features),
            "b": 0.1 * _randn(rng, features)}


def _w3_data(quick):
    rng = np.random.default_rng(3)
    rows, classes = (512 if quick else 8192), 512
    return {"logits": _randn(rng, rows, classes),
            "targets": rng.integers(0, classes, rows, dtype=np.int64)}


def _w4_data(quick):
    rng = np.random.default_rng(4)
    batch, n_in, n_hidden, n_out = (32 if quick else 512), 784, 256, 10

    def uniform(fan_in, *shape):  # torch.nn.Linear's default initialisation
        bound = 1 / np.sqrt(fan_in)
        return rng.uniform(-bound, bound, shape).astype(np.float32)

    return {"x": _randn(rng, batch, n_in),
            "y": rng.integers(0, n_out, batch, dtype=np.int64),
            "w1": uniform(n_in, n_hidden, n_in), "b1": uniform(n_in, n_hidden),
            "w2": uniform(n_hidden, n_out, n_hidden), "b2": uniform(n_hidden, n_out),
            "lr": 0.01}


def _w5_data(quick):
    return {"x": _randn(np.random.default_rng(5), 16)}


def _w6_data(quick):
    return {"v": np.array([0.1, 1.0, 0.0001], dtype=np.float32)}


def _read_once_write_once(*names):
    """Minimal bytes of a single pass: read the named inputs, write a gradient of each."""
    return lambda data: 2 * sum(data[name].nbytes for name in names)


WORKLOADS = [
    Workload("W1", "elementwise chain 4M, value+grad", _w1_data, _read_once_write_once("x")),
    Workload("W2", "layernorm-like 4096x1024, 3 grads", _w2_data, _read_once_write_once("x", "w", "b")),
    Workload("W3", "softmax cross-entropy 8192x512, value+grad", _w3_data,
             lambda data: 2 * data["logits"].nbytes + data["targets"].nbytes),
    Workload("W4", "MLP 784-256-10 SGD step, batch 512", _w4_data, check=compare_sgd_updates),
    Workload("W5", "300 tiny ops on 16 floats, per call", _w5_data),
    Workload("W6", "tutorial while-loop + backward, per call", _w6_data, check=compare_doubling_loop),
]
BY_KEY = {workload.key: workload for workload in WORKLOADS}

# Parameters of the workloads' functions, identical in every framework.
LAYERNORM_EPS = 1e-5
W5_STEPS = 100  # three ops each: mul, add, tanh
W5_SCALE, W5_SHIFT = 0.999, 0.001
W6_THRESHOLD = 1000.0
