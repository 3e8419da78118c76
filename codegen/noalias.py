"""Teach Numba's `njit` a `noalias=True` option for generated kernels.

Numba compiles a function with `noalias` on its array arguments' data pointers when its
Flags say so (Flags.noalias: its parallel gufuncs set it after proving that no argument
aliases another), but no decorator option sets it. Without it, LLVM must prove at run
time that no output overlaps another array before it runs a loop's vectorised body, and it
gives up when that takes too many tests (outputs times arrays: LLVM's limit is 128 pointer
pairs), running only the scalar loop: 12 outputs of 48 arrays (an optimizer's fused update
of 12 parameters) already did. Measured: the serial kernels of a 200-op chain's value and
gradient (~130 arrays each, 1M elements) took 2.0 and 1.7 s scalar, 0.20 and 0.13 s so.

fusegrad's kernels satisfy noalias by construction: every output is new memory (a fresh or
pooled buffer no live value uses), and an in-place variant (codegen/in_place.py) stores
through the operand's own argument, leaving its output argument unused, only after the
executor checked that no other operand of the kernel shares that memory
(runtime/in_place.py). Two inputs may overlap (x and x.t()), but nothing writes them.

Importing this module adds the option (a mapping onto Flags.noalias) to Numba's CPU target
options; generated kernel modules import it before their decorators run. `SUPPORTED` is
False where this Numba has no such flag: kernels are then generated without the option.
"""
from __future__ import annotations


def _register() -> bool:
    try:
        from numba.core.compiler import Flags
        from numba.core.cpu import CPUTargetOptions
        from numba.core.options import TargetOptions
    except ImportError:
        return False
    if not hasattr(Flags, "noalias"):
        return False
    if not isinstance(getattr(CPUTargetOptions, "noalias", None), TargetOptions.Mapping):
        CPUTargetOptions.noalias = TargetOptions.Mapping("noalias")
    return True


SUPPORTED = _register()
