"""The vector width LLVM compiles kernels for.

On CPUs with AVX-512, LLVM's tuning for Intel cores since Skylake-SP prefers
256-bit vectors (`prefer-256-bit`): the loop vectoriser then packs 8 float32 lanes,
not 16, even where the whole loop is arithmetic. fusegrad's kernels are: every
transcendental is an inline polynomial (codegen/vmath.py), so once a kernel's data
is in cache it is bound by arithmetic, not memory. Compiled for 512-bit vectors,
W1's fused chain (tanh * sigmoid + exp, 1M float32) ran in 1.62 ms against 2.25,
and W1 with its gradient in 8.8-9.2 ms against 11.4 (benchmarks/bench.py, same run,
2 threads; W2 unchanged, W3 4.0-4.8 against 4.9-5.3).

Numba takes its LLVM target features once, when its CPU code generator starts (the
first compilation in the process), from `NUMBA_CPU_FEATURES` or the host's. So
`prefer_wide_vectors` runs when fusegrad is imported: if the host has AVX-512F and
nothing chose the features yet, it gives Numba the host's features with
`-prefer-256-bit`. This is process-wide: Numba functions of your own compiled in
the same process get the wider vectors too (the same choice `NUMBA_CPU_FEATURES`
makes). It does nothing when `NUMBA_CPU_FEATURES` or `NUMBA_CPU_NAME` is set, when
Numba has already compiled something, or when `FUSEGRAD_VECTOR_WIDTH=256` (keep
LLVM's choice).
Numba's disk cache keys compiled code by these features, so the two settings never
load each other's code.
"""
from __future__ import annotations

import os

from numba.core import config as numba_config
from numba.core import registry as numba_registry

# What prefer_wide_vectors did, for explain() and the tests: "512-bit", or why not.
STATE = {"vector_width": "not set"}


def _numba_started() -> bool:
    """Has Numba's CPU code generator been made (its target features are then fixed)?"""
    return "_toplevel_target_context" in vars(numba_registry.cpu_target)


def prefer_wide_vectors() -> str:
    """Let LLVM use 512-bit vectors for the kernels where the CPU has them (see the module
    doc). Returns what was done, also kept in STATE["vector_width"]."""
    if os.environ.get("FUSEGRAD_VECTOR_WIDTH", "").strip() == "256":
        state = "LLVM's default (FUSEGRAD_VECTOR_WIDTH=256)"
    elif numba_config.CPU_FEATURES is not None:
        state = "LLVM's default (NUMBA_CPU_FEATURES is set)"
    elif numba_config.CPU_NAME not in (None, "host"):
        # (a CPU chosen for portable code, such as NUMBA_CPU_NAME=generic for a disk cache
        # shared between machines: the host's features would defeat it)
        state = "LLVM's default (NUMBA_CPU_NAME is set)"
    elif _numba_started():
        state = "LLVM's default (Numba compiled before fusegrad was imported)"
    else:
        import llvmlite.binding as llvm
        features = llvm.get_host_cpu_features().flatten()
        if "+avx512f" not in features.split(","):
            state = "LLVM's default (no AVX-512)"
        else:
            numba_config.CPU_FEATURES = features + ",-prefer-256-bit"
            state = "512-bit"
    STATE["vector_width"] = state
    return state


def has_avx512() -> bool:
    """Does the code Numba generates target AVX-512F? (Its features as set, else the host's;
    False when NUMBA_CPU_NAME picks another CPU, whose features are not known here.)
    codegen/vmath.py's `_ldexp_k` then uses LLVM's ldexp, which AVX-512 has as one
    instruction (vscalefps); elsewhere LLVM makes a vector ldexp a libm call per lane."""
    if "avx512" not in STATE:
        if numba_config.CPU_FEATURES is not None:
            features = numba_config.CPU_FEATURES
        elif numba_config.CPU_NAME not in (None, "host"):
            features = ""
        else:
            import llvmlite.binding as llvm
            features = llvm.get_host_cpu_features().flatten()
        STATE["avx512"] = "+avx512f" in features.split(",")
    return STATE["avx512"]


__all__ = ["prefer_wide_vectors", "has_avx512", "STATE"]
