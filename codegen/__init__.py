"""fusegrad.codegen: fusion scheduling and Numba source generation.

    schedule(program)            -> Schedule: kernels, BLAS calls, views, reference steps
    generate(kernel, math_module) -> KernelSource: the kernel's Numba source
"""
from .target import prefer_wide_vectors

prefer_wide_vectors()       # before anything compiles: Numba fixes its target features then

from . import eager_loops  # noqa: F401  (lends eager execution its loops: ir.ops.EAGER_FORMS)
from .decompose import decompose_composites
from .kernel_source import KernelSource, generate
from .loopnest import NotFusable
from .schedule import FILL, KERNEL, MATMUL_CALL, REFERENCE, VIEW, Kernel, Schedule, Step, schedule

__all__ = ["schedule", "Schedule", "Step", "Kernel", "generate", "KernelSource", "decompose_composites",
           "NotFusable", "KERNEL", "MATMUL_CALL", "VIEW", "REFERENCE", "FILL"]
