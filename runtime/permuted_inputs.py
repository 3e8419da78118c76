"""Program inputs that are transposes of contiguous memory, read in their memory order.

A compiled program's inputs are typed by their logical shapes, and its kernels loop in
index order. An argument laid out otherwise (a column-major `x.t()`, a `permute` of a
contiguous array) was therefore copied row-major before its kernel ran (in tiles:
codegen/layout_copy.py), and an elementwise result, which torch lays out as its operand,
was copied back column-major after it: two transposing passes around one kernel. On a
1024 x 1024 float32 chain that was 10.6 ms against 1.6 ms for the same data contiguous.

`lift_permuted_inputs` rewrites such an input as `permute(memory, dims)` of a new input
that is the argument's memory seen row-major (a NumPy view: nothing is copied). The
permute-sinking pass (ir/permute_sinking.py) then moves the permute past the elementwise
ops and reductions, so the kernels run over the memory as laid out and an elementwise
result comes out as a transposed view, torch's layout. A reader that needs the logical
layout (a matmul, an operand the permute cannot sink past) gets the permute back, where
it is the view step the input was before.

The rewrite is part of the program, so its cache key tells the two layouts apart: the
same function called with contiguous and with transposed arguments has two entries.
Only large inputs are rewritten (those a kernel would have copied): for a small one the
strided read costs less than a second compiled program.
"""
from __future__ import annotations

import numpy as np

from fusegrad.codegen.layout_copy import MIN_COPY_ELEMENTS
from fusegrad.ir import Program, TensorType, Value
from fusegrad.ir.program import Instr


def memory_order(array: np.ndarray) -> tuple | None:
    """The axes of `array` from slowest to fastest in memory, when reading it in that order is
    reading one C-contiguous block and that order is not already the index order; else None."""
    if array.ndim < 2 or array.flags.c_contiguous:
        return None
    # (a stable sort: axes of equal stride, size-1 ones, keep their index order; the order is
    # not the index order, or the array would be C-contiguous)
    order = tuple(sorted(range(array.ndim), key=lambda d: -array.strides[d]))
    return order if np.transpose(array, order).flags.c_contiguous else None


def lift_permuted_inputs(program: Program, args: list) -> tuple:
    """(program, args) with each large input that is a dense transpose of contiguous memory
    taken as that memory, row-major, and permuted back inside the program (see the module doc).
    Returns the originals when there is none."""
    lifted = [(k, order) for k, array in enumerate(args) if array.size >= MIN_COPY_ELEMENTS
              and (order := memory_order(array)) is not None]
    if not lifted:
        return program, args
    inputs, args, permutes = list(program.inputs), list(args), []
    for k, order in lifted:
        logical = inputs[k]
        memory = np.transpose(args[k], order)
        inputs[k] = Value(TensorType(memory.shape, logical.type.dtype))
        args[k] = memory
        # (the logical input becomes the permute's result: no reader of it changes)
        dims = tuple(int(d) for d in np.argsort(order))
        permutes.append(Instr("permute", (inputs[k],), (logical,), (("dims", dims),)))
    return Program(inputs, permutes + list(program.instrs), program.outputs), args
