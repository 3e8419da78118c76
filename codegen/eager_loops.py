"""Eager forms of float32 ops whose NumPy references are slow (ir.ops.EAGER_FORMS): erf, exact
GELU and its gradient, leaky_relu and its gradient, elu and its gradient, and silu, as loops over the vectorised
math, so that eager code gets the speed and the values of compiled code.

erf's reference evaluates Cody's ranges in float64, correctly rounded to float32 but slow: an
eager exact GELU of 4M float32 elements took 50 ms (torch: 0.8), its backward, eleven NumPy
passes, 50 ms more. The activations' references are np.where over temporaries, on one thread:
leaky_relu 31 ms, elu 30, silu 12 (torch 0.8-8.6). The loops take 1-3 ms each (measured on
2048x2048). They compute what a compiled kernel computes, operation for operation (as the op
table's kernel expressions and decompositions say), so eager and compiled results are the
same bits; against the references they differ by at most the vectorised math's 1 ulp (erf,
exp, expm1), and leaky_relu's not at all.

The loops are Numba functions, defined in codegen/eager_loops_jit.py and imported on the first
call that takes them (torch_order_jit.loop_pays: Numba set up in the process, or a purely eager
process's calls past a million elements). float64, empty arrays and calls the policy declines
run the references."""
from __future__ import annotations

import numpy as np

from fusegrad.ir.ops import EAGER_FORMS, OPS
from fusegrad.ir.torch_order_jit import loop_pays, sliced_blocks


def _flat_loop(loop, operands: list, scalars: tuple) -> np.ndarray:
    """loop(*flat operands, out, *scalars) over the elements of same-shaped float32 operands
    in row-major order (on threads where large); returns out in their shape."""
    flat = [np.ascontiguousarray(a).reshape(-1) for a in operands]
    out = np.empty(flat[0].shape, np.float32)
    return sliced_blocks(loop, flat, out, *scalars).reshape(operands[0].shape)


def _lend(op: str, loop: str, arrays: int = 1, applies=None) -> None:
    """Lend `op` the eager form running codegen/eager_loops_jit.py's `loop` on its first
    `arrays` arguments (float32 arrays, broadcast to one shape) and the rest as float32
    scalars (0-d arrays), where `applies(**attrs)` (default: always), the arrays are float32
    and the policy (torch_order_jit.loop_pays) takes it; elsewhere the op's reference."""
    reference = OPS[op].ref

    def eager_form(*args, **attrs):
        operands = [np.asarray(a) for a in args[:arrays]]
        scalars = [np.asarray(a) for a in args[arrays:]]
        if (applies is not None and not applies(**attrs)) \
                or any(a.dtype != np.float32 for a in operands + scalars) \
                or any(s.ndim for s in scalars) or not _takes_loop(operands[-1]):
            return reference(*args, **attrs)
        if len({a.shape for a in operands}) > 1:
            operands = np.broadcast_arrays(*operands)
        from . import eager_loops_jit
        return _flat_loop(getattr(eager_loops_jit, loop), operands, tuple(s[()] for s in scalars))
    eager_form.__name__ = eager_form.__qualname__ = f"{op}_eager"
    eager_form.__doc__ = f"{op}: codegen/eager_loops_jit.py's {loop} where it applies, else the reference."
    EAGER_FORMS[op] = eager_form


def _takes_loop(x: np.ndarray) -> bool:
    return x.size > 0 and loop_pays(x.size)


def _exact(approximate="none") -> bool:
    return approximate == "none"


def _from_input(from_result=False) -> bool:
    return not from_result


_lend("erf", "erf_into")
_lend("gelu", "gelu_into", applies=_exact)
_lend("gelu_backward", "gelu_backward_into", arrays=2, applies=_exact)
_lend("leaky_relu", "leaky_relu_into")
_lend("leaky_relu_backward", "leaky_relu_backward_into", arrays=2)
_lend("elu", "elu_into")
_lend("elu_backward", "elu_backward_into", arrays=2, applies=_from_input)
_lend("silu", "silu_into")
