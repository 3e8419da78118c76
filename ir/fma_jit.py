"""Fused multiply-add loops over long arrays, compiled by Numba, and the `llvm_fma`
intrinsic they use, which codegen's math (fg_fma, vmath's _fma) uses too. Importing this
module compiles nothing (ir/fma.py imports it only when an operand is long); each loop is
compiled on its first call and cached on disk.

They compute what ir/fma.py's NumPy emulation does (LLVM's fma is the hardware
instruction: one rounding), in one pass instead of a dozen float64 temporaries: an SGD
update of 200k float32 parameters took 0.43 ms emulated in NumPy, against 0.06 ms for a
multiply then an add.
"""
from __future__ import annotations

from llvmlite import ir as llvm_ir
from numba import njit, types
from numba.extending import intrinsic


@intrinsic
def llvm_fma(typingctx, x, y, z):
    """x * y + z rounded once (llvm.fma) on three floats of one type; also codegen's fg_fma
    (codegen/libmath.py) and vmath's _fma."""
    if not (isinstance(x, types.Float) and x == y == z):
        return None

    def codegen(context, builder, sig, args):
        fty = llvm_ir.FloatType() if sig.return_type.bitwidth == 32 else llvm_ir.DoubleType()
        fn = builder.module.declare_intrinsic("llvm.fma", [fty], llvm_ir.FunctionType(fty, [fty] * 3))
        return builder.call(fn, args)
    return x(x, y, z), codegen


@njit(cache=True, nogil=True, error_model="numpy")
def fma_arrays(out, a, b, c):
    """out = a * b + c, element by element (1-d arrays of one length and float type)."""
    for i in range(out.size):
        out[i] = llvm_fma(a[i], b[i], c[i])


@njit(cache=True, nogil=True, error_model="numpy")
def fma_scaled(out, a, scale, c):
    """out = a * scale + c, element by element (`scale` one number of the arrays' type)."""
    for i in range(out.size):
        out[i] = llvm_fma(a[i], scale, c[i])
