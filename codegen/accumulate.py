"""Helpers that generated kernels call to fold values into reductions.

`fg_acc_add` is a float addition that LLVM may reassociate, so a reduction
loop `acc = fg_acc_add(acc, x)` vectorises (several partial sums added at the
end: a blocked summation) while every other operation in the kernel keeps
strict IEEE semantics: the fast-math flag sits on this one instruction and
stays on it when LLVM inlines the call. Kernels accumulate sums in float64,
so float32 sums keep about 1e-9 relative accuracy; a float32 sum over a
kernel's innermost loop first adds up chunks of 1024 elements in float32
(kernel_source.CHUNK), one partial sum per vector lane, which keeps the
float32 result within about an ulp (as torch's float32 sums).

`fg_acc_max` / `fg_acc_min` are LLVM's `maximum` / `minimum` (IEEE 754-2019:
NaN propagates, as in NumPy and torch), which LLVM vectorises as reductions;
a compare-and-branch version would not vectorise.

`fg_acc_quotient(x, y, r)` is x / y from r = 1 / y computed once outside a loop (a row's
sum or norm divides every element): x * r, corrected by its residual with two fused
multiply-adds (Markstein's sequence). A bare x * r is within an ulp, but not exact where
the quotient is representable: the row maximum divided by itself gave 0.99999994, which
`floor`, `== 1` and casts to int turn into wrong answers. The corrected quotient is the
correctly rounded one (so exact quotients are exact). Where x * r is infinite (an
infinite numerator, an overflowing quotient) its residual is NaN, and the result is x * r
itself, IEEE's +-inf (one unordered compare and a blend); the result takes x * r's sign
(-0 / y stays -0). Quotients in the subnormal range may be 1-2 ulp off, and one within an
ulp of the largest float whose product x * r rounds up to inf gives inf. Cost on W2 (two
quotients an element): 2.04 ms with the bare correction; 2.46 with the residual taken of
x * r clamped to the finite range by llvm.maximum/minimum, 2.28 with the NaN select (same
run: 2.43 / 2.28); 3.04 with a division.
"""
from __future__ import annotations

from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from .vmath import _copysign, _fma   # (llvm.copysign; a * b + c rounded once, as vmath's residuals use it)


@njit(fastmath={"reassoc"}, error_model="numpy", nogil=True)
def fg_acc_add(acc, x):
    """acc + x, reassociable."""
    return acc + x


def _float_pair_intrinsic(name: str):
    def typer(typingctx, a, b):
        if not (isinstance(a, types.Float) and a == b):
            return None

        def codegen(context, builder, sig, args):
            fty = ir.FloatType() if sig.return_type.bitwidth == 32 else ir.DoubleType()
            fn = builder.module.declare_intrinsic(name, [fty], ir.FunctionType(fty, [fty, fty]))
            return builder.call(fn, args)
        return a(a, b), codegen
    typer.__name__ = typer.__qualname__ = name.replace(".", "_")
    return intrinsic(typer)


fg_acc_max = _float_pair_intrinsic("llvm.maximum")   # max(acc, x); NaN if either is NaN
fg_acc_min = _float_pair_intrinsic("llvm.minimum")   # min(acc, x); NaN if either is NaN


@intrinsic
def _select_nan(typingctx, a, b):
    """b where a is NaN, else a: one unordered compare and a select (a vector blend)."""
    if not (isinstance(a, types.Float) and a == b):
        return None

    def codegen(context, builder, sig, args):
        x, y = args
        return builder.select(builder.fcmp_unordered("uno", x, x), y, x)
    return a(a, b), codegen


@njit(error_model="numpy", nogil=True)
def fg_acc_quotient(x, y, r):
    """x / y given r = 1 / y (all one float type; r a normal number): see the module docstring."""
    q = x * r
    # Where x * r is infinite (x infinite, or the quotient overflowing) the residual is NaN:
    # the result is then q itself, IEEE's +-inf (and a NaN q stays NaN). copysign: -0 / y
    # stays -0 (the correction gave +0).
    d = _fma(_fma(-q, y, x), r, q)
    return _copysign(_select_nan(d, q), q)