"""What torch's CPU kernels do that depends on the CPU: the vector width of ATen's kernels.

ATen compiles each elementwise kernel for several CPU capabilities and picks one at start
(aten/src/ATen/native/DispatchStub.cpp): AVX-512 where the CPU has AVX512F, BW, VL and DQ
with FMA, else AVX2 with FMA, unless ATEN_CPU_CAPABILITY names one. Its vectorised loop
(cpu_kernel_vec) runs whole blocks of two vectors (AVX-512: 32 float32 or 16 float64,
AVX2: 16 or 8) with the vector formula and the elements after the last whole block with
the scalar one (in each chunk a thread takes, and throughout for a strided operand). Where
the two formulas give different bits or special values (pow's float32 exponent, elu's NaN),
fusegrad follows the same split, so its results are torch's on the machine it runs on
(measured against torch 2.13 on an AVX-512 and an AVX2 machine).
"""
from __future__ import annotations

import functools
import os

import numpy as np

_AVX512_FEATURES = ("avx512f", "avx512bw", "avx512vl", "avx512dq", "fma")


@functools.lru_cache(maxsize=None)
def vector_bytes() -> int:
    """The bytes of one vector of torch's CPU kernels here: 64 with AVX-512, else 32 (AVX2,
    and the generic Vectorized of its DEFAULT capability)."""
    chosen = os.environ.get("ATEN_CPU_CAPABILITY", "").strip().lower()
    if chosen:
        return 64 if chosen == "avx512" else 32
    try:
        import llvmlite.binding as llvm
        features = set(llvm.get_host_cpu_features().flatten().split(","))
    except Exception:               # (no host features to read: torch's common case)
        return 32
    return 64 if all("+" + name in features for name in _AVX512_FEATURES) else 32


@functools.lru_cache(maxsize=None)
def block_elements(dtype) -> int:
    """The elements of one whole block of torch's vectorised loop for NumPy `dtype` (two
    vectors): 32 float32 with AVX-512, 16 with AVX2."""
    return 2 * vector_bytes() // np.dtype(dtype).itemsize


def vector_ranges(n: int, dtype) -> list:
    """The [lo, hi) ranges of a contiguous run of `n` elements that torch computes with its
    vector formula: the whole blocks of each chunk its at::parallel_for hands a thread (one
    chunk below its grain size), each chunk's tail taking the scalar formula."""
    from .ops.reduce import torch_parallel_tasks
    chunk = -(-n // torch_parallel_tasks(n)) if n else 1
    block = block_elements(dtype)
    return [(lo, lo + (min(n, lo + chunk) - lo) // block * block) for lo in range(0, n, chunk)]
