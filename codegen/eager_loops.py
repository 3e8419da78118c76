"""Eager forms of float32 erf and exact GELU, forward and backward (ir.ops.registry.EAGER_FORMS):
loops over the vectorised math, so that eager code gets the speed and the values of compiled code.

Their references evaluate Cody's erf in float64, correctly rounded to float32 but slow: an
eager exact GELU of 4M float32 elements took 50 ms (torch: 0.8), and its backward, eleven NumPy
passes, 50 ms more. The loops here take 2-3 ms each. They compute what a compiled kernel
computes, operation for operation (as ir/ops/erf_gelu.py decomposes gelu and gelu_backward), so
eager and compiled results are the same bits; against the references they differ by at most
fg_erf's and fg_exp's 1 ulp.

The loops are Numba functions, defined in codegen/eager_loops_jit.py and imported on the first
call that takes them (torch_order_jit.loop_pays: Numba set up in the process, or a purely eager
process's calls past a million elements). float64, empty arrays and calls the policy declines
run the references."""
from __future__ import annotations

import numpy as np

from fusegrad.ir.ops import EAGER_FORMS, OPS
from fusegrad.ir.torch_order_jit import loop_pays, sliced_blocks


def _takes_loop(x: np.ndarray) -> bool:
    return x.dtype == np.float32 and x.size > 0 and loop_pays(x.size)


def _flat_loop(loop, *operands: np.ndarray) -> np.ndarray:
    """loop(*flat operands, out) over the elements of same-shaped float32 operands in row-major
    order (on threads where large); returns out in their shape."""
    flat = [np.ascontiguousarray(a).reshape(-1) for a in operands]
    return sliced_blocks(loop, flat, np.empty(flat[0].shape, np.float32)).reshape(operands[0].shape)


def _lend_erf(reference):
    def erf_eager(x):
        """erf: fg_erf's loop on float32 (within 1 ulp), else the reference."""
        x = np.asarray(x)
        if not _takes_loop(x):
            return reference(x)
        from .eager_loops_jit import erf_into
        return _flat_loop(erf_into, x)
    return erf_eager


def _lend_gelu(reference):
    def gelu_eager(x, approximate="none"):
        """Exact GELU: one loop over fg_erf on float32; the tanh form and others: the reference."""
        x = np.asarray(x)
        if approximate != "none" or not _takes_loop(x):
            return reference(x, approximate)
        from .eager_loops_jit import gelu_into
        return _flat_loop(gelu_into, x)
    return gelu_eager


def _lend_gelu_backward(reference):
    def gelu_backward_eager(grad, x, approximate="none"):
        """Exact GELU's gradient: one loop on float32 operands; others: the reference."""
        grad, x = np.asarray(grad), np.asarray(x)
        if approximate != "none" or grad.dtype != np.float32 or not _takes_loop(x):
            return reference(grad, x, approximate)
        if grad.shape != x.shape:
            grad, x = np.broadcast_arrays(grad, x)
        from .eager_loops_jit import gelu_backward_into
        return _flat_loop(gelu_backward_into, grad, x)
    return gelu_backward_eager


EAGER_FORMS["erf"] = _lend_erf(OPS["erf"].ref)
EAGER_FORMS["gelu"] = _lend_gelu(OPS["gelu"].ref)
EAGER_FORMS["gelu_backward"] = _lend_gelu_backward(OPS["gelu_backward"].ref)
