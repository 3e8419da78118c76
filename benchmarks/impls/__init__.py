"""Implementations of the workloads, one module per framework family.

Each module has a function per workload (`w1` ... `w6`) that takes the
workload's NumPy data and returns a zero-argument `run()` performing one call
(value and gradients, or one training step) and returning the outputs in the
workload's order.  A workload a framework cannot express raises NotApplicable.
"""
import numpy as np


class NotApplicable(Exception):
    """This framework has no meaningful version of the workload; the message says why."""


def to_numpy(value):
    """A private NumPy copy of a torch/fusegrad/jax tensor, NumPy array or Python number."""
    if hasattr(value, "detach"):
        value = value.detach()
    if hasattr(value, "numpy"):
        value = value.numpy()
    return np.array(value, copy=True)
