"""The kernel cache: a kernel's generated source -> its Numba dispatchers.

The key is the hash of the kernel's complete module text, whose header names
everything else that changes the machine code: the fusegrad, Numba, llvmlite
and Python versions, the math module and a hash of its source, and Numba's
thread settings. Two programs that fuse to the same kernel share one entry;
sizes are arguments, so a new batch size finds the same entry, and Numba
compiles once per argument-type signature (dtype, rank, layout).

Switch: FUSEGRAD_VECTOR_MATH=0 (read at each compile) makes kernels call
`fusegrad.codegen.libmath` (libm) instead of `fusegrad.codegen.vmath`
(vectorisable polynomials); it is part of the key.

`CompiledKernel.__call__` counts each new specialisation as compiled or as
loaded from the disk cache, logs it under FUSEGRAD_LOG=compile, and turns a
failure into KernelFailed (after one retry with a clean disk entry, which
covers corrupt cache files) so that the executor can fall back.
"""
from __future__ import annotations

import hashlib
import os
import sys
import threading
import time
import warnings

import llvmlite
import numba

from fusegrad.codegen import KernelSource
from fusegrad.ir.version import VERSION

from . import background, disk_cache, stats

_CODEGEN_MODULES = ("vmath", "libmath", "accumulate")


class KernelFailed(Exception):
    """A kernel could not be compiled (or loaded); the caller runs the reference instead."""


def math_module() -> str:
    """The module generated kernels import fg_* math from (see FUSEGRAD_VECTOR_MATH)."""
    off = os.environ.get("FUSEGRAD_VECTOR_MATH", "1").strip().lower() in ("0", "false", "no", "off")
    return "fusegrad.codegen.libmath" if off else "fusegrad.codegen.vmath"


_source_hash: str | None = None


def _codegen_hash() -> str:
    """Hash of the math and accumulation helpers that kernels inline (Numba's own
    cache does not notice when a called function changes)."""
    global _source_hash
    if _source_hash is None:
        import fusegrad.codegen as cg
        h = hashlib.sha256()
        folder = os.path.dirname(cg.__file__)
        for name in _CODEGEN_MODULES:
            try:
                with open(os.path.join(folder, name + ".py"), "rb") as f:
                    h.update(f.read())
            except OSError:
                h.update(name.encode())
        _source_hash = h.hexdigest()[:16]
    return _source_hash


def key_header_digest() -> str:
    """A short hash of everything but the kernel text that its machine code depends on
    (versions, math switch and source, threads): names the disk cache's program index."""
    return hashlib.sha256(key_header(math_module()).encode()).hexdigest()[:16]


def key_header(math: str) -> str:
    """The first lines of every kernel module: what the compiled code depends on."""
    return (f"# fusegrad kernel (generated; safe to delete)\n"
            f"# fusegrad {VERSION} | numba {numba.__version__} | llvmlite {llvmlite.__version__} | "
            f"python {sys.version_info[0]}.{sys.version_info[1]}\n"
            f"# math {math} {_codegen_hash()} | threads {numba.config.NUMBA_NUM_THREADS} "
            f"layer {numba.config.THREADING_LAYER}\n")


class CompiledKernel:
    """One kernel module (serial and maybe parallel dispatchers) and its compile record."""

    def __init__(self, name: str, source: KernelSource, text: str):
        self.name = name
        self.source = source
        self.text = text
        self.root: str | None = None      # disk cache folder, None when compiled from memory
        self.module = None
        self.failure: str | None = None   # why it could not be compiled
        self.parallel_failure: str | None = None   # why its parallel variant could not
        self.compiles = 0
        self.disk_loads = 0
        self._hits_seen: dict = {}        # dispatcher name -> Numba cache hits already counted
        self._lock = threading.RLock()    # the background thread compiles too
        self._retried = False
        self._parallel_requested = False
        self.last_run_seconds = 0.0       # the latest call's run, without compiling or loading

    def load(self) -> None:
        """Import the kernel's module through the disk cache, or build it in memory when the cache
        is off or unusable (that warns). Numba compiles each variant at its first call."""
        root = disk_cache.cache_dir()
        if root is not None:
            try:
                self.module = disk_cache.import_kernel_module(root, self.name, self.text)
                self.root = root
                return
            except Exception as exc:   # unwritable folder, unreadable file...
                warnings.warn(f"fusegrad: disk cache at {root} unusable ({exc}); compiling in memory",
                              RuntimeWarning, stacklevel=4)
        self.module = disk_cache.memory_module(self.name, self.text.replace("cache=True", "cache=False"))

    def dispatcher(self, parallel: bool):
        """The module's Numba dispatcher: the parallel variant if asked for and present, else the serial."""
        return getattr(self.module, "kernel_parallel" if parallel and self.source.parallel_loop else "kernel")

    def ready(self) -> bool:
        """Has the serial variant been compiled or loaded in this process?"""
        return self.failure is not None or len(self.dispatcher(False).overloads) > 0

    def parallel_ready(self) -> bool:
        """Can the parallel variant run without compiling first (or will it never run)?"""
        if not self.source.parallel_loop or self.parallel_failure is not None or self.failure is not None:
            return True
        return len(self.dispatcher(True).overloads) > 0

    def prepare_parallel_in_background(self, args: list) -> None:
        """Compile (or load from disk) the parallel variant for these arguments' types on the
        background thread; calls keep using the serial variant until it is ready (tiered
        execution: runtime/background.py)."""
        if self._parallel_requested:
            return
        self._parallel_requested = True
        signature = _signature_of(args)
        if signature is None:             # an argument Numba cannot type: compile on use instead
            self._parallel_requested = False
            return
        background.submit(lambda: self._compile_parallel(signature))

    def compile_parallel_now(self, args: list) -> None:
        """Compile (or load from disk) the parallel variant for these arguments' types on this
        thread, unless it is ready or on its way (a synchronous first call: see
        executor._KernelStep.run)."""
        if self._parallel_requested or self.parallel_ready():
            return
        signature = _signature_of(args)
        if signature is not None:         # (else: it compiles on first use)
            self._parallel_requested = True
            self._compile_parallel(signature)

    def _compile_parallel(self, signature: tuple) -> None:
        exc = self._compile_signature(True, signature)
        if exc is not None:
            self.parallel_failure = f"{type(exc).__name__}: {exc}"
            stats.log_compile("parallel variant of kernel %s failed (%s); running it serially",
                              self.name, self.parallel_failure)

    def _compile_signature(self, parallel: bool, signature: tuple) -> Exception | None:
        """Compile (or load) one dispatcher for `signature` unless it has an overload already;
        records the compile, returns the exception of a failed one."""
        disp = self.dispatcher(parallel)
        with self._lock:
            if disp.overloads:
                return None
            start = time.perf_counter()
            try:
                disp.compile(signature)
            except Exception as exc:
                return exc
            self._record(disp, time.perf_counter() - start, parallel)
        return None

    def compile_for(self, args: list) -> None:
        """Compile (or load from disk) the serial variant for these arguments' types without
        running it (a warm-up preparing a kernel a later call will run). A failure is kept and
        reported when the kernel is called."""
        if self.failure is not None or self.dispatcher(False).overloads:
            return
        signature = _signature_of(args)
        if signature is None:             # an argument Numba cannot type: compile on use instead
            return
        self._compile_signature(False, signature)     # (a failure: compiled again, and reported, at its first call)

    def __call__(self, args: list, parallel: bool = False) -> bool:
        """Run the kernel (its parallel variant if asked and it has one); True when
        this call had to compile or load a new specialisation."""
        if self.failure is not None:
            raise KernelFailed(self.failure)
        parallel = parallel and self.source.parallel_loop and self.parallel_failure is None
        disp = self.dispatcher(parallel)
        if not disp.overloads:
            stats.log_compile("compiling kernel %s%s ...", self.name, " (parallel)" if parallel else "")
            with self._lock:                  # one thread compiles a dispatcher at a time
                return self._run(disp, args, parallel)
        return self._run(disp, args, parallel)

    def _run(self, disp, args: list, parallel: bool) -> bool:
        before = len(disp.overloads)
        start = ran = time.perf_counter()
        try:
            if not before:
                # Compile (or load) first, then run: last_run_seconds is the run alone, what
                # the parallel-variant decision of a first call needs (executor._KernelStep).
                signature = _signature_of(args)
                if signature is not None:
                    disp.compile(signature)
                    ran = time.perf_counter()
            disp(*args)
        except Exception as exc:
            if self.root is None or self._retried or not _raised_by_cache_load(exc):
                if parallel:
                    # The serial variant is the same loops without prange: use it.
                    self.parallel_failure = f"{type(exc).__name__}: {exc}"
                    stats.log_compile("parallel variant of kernel %s failed (%s); running it serially",
                                      self.name, self.parallel_failure)
                    return self(args, False)
                self._fail(exc)
            # A corrupt disk entry (Numba's index or data file): rebuild it once.
            self._retried = True
            warnings.warn(f"fusegrad: disk cache entry for kernel {self.name} unreadable "
                          f"({type(exc).__name__}: {exc}); recompiling", RuntimeWarning, stacklevel=3)
            disk_cache.purge(self.root, self.name)
            self._hits_seen.clear()
            self.load()
            return self(args, parallel)
        finished = time.perf_counter()
        self.last_run_seconds = finished - ran
        if len(disp.overloads) == before:
            return False
        background.mark_numba_ready()
        # (the compile or load alone; with the first run where Numba typed the arguments itself)
        self._record(disp, (ran if ran != start else finished) - start, parallel)
        return True

    def _record(self, disp, seconds: float, parallel: bool) -> None:
        if parallel:
            # The parallel variant of a kernel that already runs (compiled or loaded, usually on
            # the background thread while calls run serially: runtime/background.py) counts
            # apart, so the counters a later call with the same shapes leaves are its own
            # (kernels_compiled and disk_hits rose whenever that thread finished)
            stats.count(parallel_variants=1)
            stats.log_compile("compiled or loaded kernel %s (parallel) in %.3f s", self.name, seconds)
            return
        loaded = False
        if self.root is not None:
            hits = sum(disp.stats.cache_hits.values())
            loaded = hits > self._hits_seen.get(parallel, 0)
            self._hits_seen[parallel] = hits
        if loaded:
            self.disk_loads += 1
            stats.count(disk_hits=1, compile_seconds=seconds)
            stats.log_compile("loaded kernel %s from the disk cache in %.3f s", self.name, seconds)
        else:
            self.compiles += 1
            stats.count(kernels_compiled=1, compile_seconds=seconds)
            stats.log_compile("compiled kernel %s%s in %.3f s", self.name, " (parallel)" if parallel else "",
                              seconds)

    def _fail(self, exc: Exception):
        self.failure = f"{type(exc).__name__}: {str(exc).strip()}"
        stats.log_compile("kernel %s failed to compile: %s", self.name, self.failure)
        raise KernelFailed(self.failure) from exc


def _raised_by_cache_load(exc: BaseException) -> bool:
    """Did Numba raise `exc` while reading its on-disk cache (rather than compiling)?"""
    tb = exc.__traceback__
    while tb is not None:
        if os.path.basename(tb.tb_frame.f_code.co_filename) == "caching.py" and \
                "numba" in tb.tb_frame.f_code.co_filename:
            return True
        tb = tb.tb_next
    return False


_kernels: dict = {}
_lock = threading.Lock()


def get_kernel(source: KernelSource, math: str) -> CompiledKernel:
    """The cached CompiledKernel for `source` (loading its module on a miss)."""
    text = source.module_text(key_header(math), cache=True)
    digest = hashlib.sha256(text.encode()).hexdigest()
    with _lock:
        kernel = _kernels.get(digest)
        if kernel is None:
            kernel = CompiledKernel(f"fusegrad_kernel_{digest[:24]}", source, text)
            try:
                kernel.load()
            except Exception as exc:       # the generated module does not even import
                kernel.failure = f"{type(exc).__name__}: {exc}"
            _kernels[digest] = kernel
    return kernel


def clear() -> None:
    """Forget every cached CompiledKernel (run by `clear_caches()`)."""
    with _lock:
        _kernels.clear()


stats.register_clearer(clear)


def _signature_of(args: list) -> tuple | None:
    """The Numba types of a kernel call's arguments, or None if Numba cannot type one."""
    import numba
    try:
        return tuple(numba.typeof(a) for a in args)
    except Exception:
        return None
