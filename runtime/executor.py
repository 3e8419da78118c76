"""Run programs through fused Numba kernels, with a program cache.

    compiled = compile_program(program)     # cached by structure + shapes
    outputs = compiled(arrays)              # same contract as ir.run_program
    print(compiled.explain())

`compile_program` keys a program on its structure (ops, attributes, wiring)
and its shape signature (shapes, dtypes). A hit returns the CompiledProgram
built before (counted in `cache_info().hits`); a miss schedules the program
(codegen/schedule.py), generates each kernel's source and fetches its Numba
dispatcher from the kernel cache (runtime/kernel_cache.py).

Fallbacks, none of which fail the call:
- an op without a kernel rule runs by its reference implementation inside
  the program, with a one-time warning naming the op;
- a kernel that fails to compile runs its instructions by reference
  (reported in explain()), and the caches stay usable;
- after MAX_SHAPE_VARIANTS distinct signatures of one program structure
  (shapes, dtypes, attribute values: a float attribute such as softplus's
  beta is part of the key, where lr and most Python scalars are inputs),
  fusegrad warns once and runs further new variants on the reference
  executor instead of compiling more kernels.
"""
from __future__ import annotations

import os
import threading
import time
import warnings
from collections import OrderedDict

import numpy as np

from fusegrad.codegen import KERNEL, VIEW, Schedule, generate, schedule
from fusegrad.codegen.in_place import in_place_source
from fusegrad.codegen.layout_copy import contiguous_copy, needs_copy
from fusegrad.ir import OPS, Program, TensorType, reference_apply, run_program
from fusegrad.ir.buffers import MIN_POOLED_BYTES, POOL
from fusegrad.ir.interpreter import apply_ref_into, apply_ref_small, into_writer
from fusegrad.ir.rounded import UFUNC_TYPES
from fusegrad.ir.printer import Namer, format_instr, format_program
from fusegrad.ir.program import exact_attrs
from fusegrad.ir.verifier import free_values

from . import background, disk_cache, in_place, stats

# Numba and the kernel cache are imported on first use, not with this module: the
# reference path of a first call needs program_key only, and importing Numba
# (~0.4-1 s) can then happen on the background compile thread instead.


def _kernel_cache():
    from . import kernel_cache
    return kernel_cache

MAX_SHAPE_VARIANTS = 32

# Parallel (prange) variants, by FUSEGRAD_PARALLEL (read when a program is compiled):
#   auto (default)  a kernel over at least PARALLEL_MIN_ELEMENTS elements whose serial run takes
#                   at least PARALLEL_MIN_SECONDS also runs its parallel variant a few times and
#                   keeps the faster (starting threads costs microseconds on an idle machine but
#                   milliseconds on a busy one, and the parallel variant compiles ~1-2 s longer);
#   always          such kernels always run their parallel variant;
#   never           kernels always run serially.
# Both variants compute the same blocks in the same order, so they agree to the last bits
# up to how LLVM vectorises each.
PARALLEL_MIN_ELEMENTS = 1 << 16
# (0.5 ms, measured on the 2-core machine: a fused chain of exp, tanh, sigmoid and log over
# 3e5 float32, median 0.84 ms serially, 0.54 in two threads; over 1e5, 0.31 serially and
# 0.32 in two threads: fastest 0.20, but waking the second thread varies)
PARALLEL_MIN_SECONDS = 5e-4
PARALLEL_SAMPLES = 3              # timed calls of each variant before choosing (fastest of each)
RECHECK_CALLS = 50                # a parallel choice is measured again after 50, 500, 5000... calls,
                                  # a serial one every 50 (see _ParallelChoice)


# ------------------------------------------------------------------ program cache
MAX_PROGRAMS = 4096               # program-cache entries kept (least recently used dropped)
_programs: OrderedDict = OrderedDict()
_variants: dict = {}              # structure key -> full keys compiled, oldest first
_warned_variants: set = set()
_warned_ops: set = set()
_lock = threading.Lock()


# Full keys of small programs that ran on the reference executor after a graph break (or,
# tiered, before they were hot): looked up as programs are, so a later call of the same
# program counts a hit. Kept apart from _programs: nothing compiled them, and a program of
# the same key traced without a break must still compile.
_reference_programs: dict = {}


def _clear() -> None:
    with _lock:
        _programs.clear()
        _variants.clear()
        _reference_programs.clear()
    _IN_PLACE_VARIANTS.clear()


stats.register_clearer(_clear)
stats.register_clearer(POOL.release_free)

_attr_text: dict = {}


def _attrs_key(attrs) -> str:
    """The text of an instruction's frozen attributes in a program key, kept per attributes
    (most calls of a compiled function repeat the same ones).

    Attributes with a float value are written out every time: a dict finds a key by `==`,
    and -0.0 == 0.0 == 0 (hardtanh's bounds, nan_to_num's replacements), so a kept text
    gave `hardtanh(x, -0.0, 1.0)` the program compiled for `hardtanh(x, 0.0, 1.0)`. (A bool
    and an int of one value, keepdim=True and keepdim=1, share a text: ops read them alike.)"""
    if exact_attrs(attrs) is not attrs:
        return repr(attrs)
    try:
        text = _attr_text.get(attrs)
    except TypeError:                   # (an unhashable value: written out each time)
        return repr(attrs)
    if text is None:
        text = repr(attrs)
        if len(_attr_text) < 100_000:
            _attr_text[attrs] = text
    return text


def program_key(program: Program) -> tuple:
    """(structure, full key): structure is the ops, attribute names and wiring;
    the full key adds shapes, dtypes and attribute values.

    Runs on every call of a compiled function, so it is written for speed: values
    become slot numbers in definition order, and every item is a str, int, tuple or
    an interned TensorType (all hashed and compared in C)."""
    slot = {}
    signature = []
    for v in program.inputs:
        slot[v.id] = len(slot)
        signature.append(v.type)
    structure = [len(slot)]
    add_item, add_type = structure.append, signature.append
    try:
        for ins in program.instrs:
            ins_ = ins.inputs        # unrolled for one and two operands (a comprehension costs more)
            if len(ins_) == 1:
                wiring = (slot[ins_[0].id],)
            elif len(ins_) == 2:
                wiring = (slot[ins_[0].id], slot[ins_[1].id])
            else:
                wiring = tuple([slot[v.id] for v in ins_])
            outs = ins.outputs
            if len(outs) == 1:
                v = outs[0]
                slot[v.id] = len(slot)
                add_type(v.type)
            else:
                for v in outs:
                    slot[v.id] = len(slot)
                    add_type(v.type)
            attrs = ins.attrs
            if attrs:
                add_item((ins.op, tuple([k for k, _ in attrs]), wiring))
                add_type(_attrs_key(attrs))
            else:
                add_item((ins.op, wiring))
        outs = tuple([slot[v.id] for v in program.outputs])
    except KeyError:
        raise ValueError("compile_program: the program reads values it neither takes as inputs nor "
                         "defines (bind them as inputs)") from None
    structure = (tuple(structure), outs)
    return structure, (structure, tuple(signature))


def compile_program(program: Program) -> "CompiledProgram":
    """The CompiledProgram for `program`, from the program cache when possible (synchronous:
    its kernels compile, or load from disk, on its first call)."""
    structure, key = program_key(program)
    compiled = lookup(key)
    if compiled is not None:
        return compiled
    return compile_now(program, key, structure)


# ------------------------------------------------------------------ tiered use (runtime/compile.py)
_pending: dict = {}               # full key -> True while its compile runs in the background
_uses: dict = {}                  # full key -> calls that ran by reference (hotness of small programs)
MAX_USES_TRACKED = 4096


def lookup(key: tuple) -> "CompiledProgram | None":
    """The ready CompiledProgram for a full key (counted as a hit), or None."""
    with _lock:
        compiled = _programs.get(key)
        if compiled is not None:
            # Recency matters only once the cache may evict; until then skip the reordering,
            # which hashes and compares the (long) key a second time on every call.
            if len(_programs) > MAX_PROGRAMS // 2:
                _programs.move_to_end(key)
            stats.count(hits=1)
        return compiled


def note_reference_program(program: Program) -> None:
    """A small program about to run on the reference executor, compiling nothing: counted as
    a program-cache lookup counts, a hit when a program with its key ran so before, else a
    miss."""
    _, key = program_key(program)
    with _lock:
        seen = key in _reference_programs
        if not seen:
            if len(_reference_programs) >= MAX_PROGRAMS:
                _reference_programs.clear()
            _reference_programs[key] = True
    if seen:
        stats.count(hits=1)
    else:
        stats.count(misses=1)


def is_pending(key: tuple) -> bool:
    """Is a background compile of this key running or queued?"""
    return key in _pending


def note_use(key: tuple) -> int:
    """Count one reference run of this key; returns how many there have been."""
    with _lock:
        n = _uses.get(key, 0) + 1
        if len(_uses) >= MAX_USES_TRACKED and key not in _uses:
            _uses.clear()
        _uses[key] = n
        return n


def program_digest(key: tuple) -> str:
    """A stable name for a full key across processes (its repr is deterministic)."""
    import hashlib
    return hashlib.sha256(repr(key).encode()).hexdigest()[:32]


def on_disk(key: tuple) -> bool:
    """Was this exact program compiled to completion into the disk cache before?"""
    root = disk_cache.cache_dir()
    return root is not None and disk_cache.has_program(root, _kernel_cache().key_header_digest(),
                                                       program_digest(key))


def compile_now(program: Program, key: tuple, structure: tuple, defer_parallel: bool = False) -> "CompiledProgram":
    """Build (schedule, load kernels) synchronously and cache it; its kernels load on first call.
    With `defer_parallel` (fg.compile's tiered path) parallel variants compile in the background."""
    compiled = _build(program, key, structure)
    compiled.defer_parallel(defer_parallel)
    with _lock:
        _programs[key] = compiled
        while len(_programs) > MAX_PROGRAMS:
            _programs.popitem(last=False)
    return compiled


def has_variants(structure: tuple) -> bool:
    """Has a program with this structure (other shapes) been compiled in this process?"""
    return bool(_variants.get(structure))


def try_ready(program: Program, key: tuple, structure: tuple) -> "CompiledProgram | None":
    """Build now and cache it if every kernel is already compiled in this process (a
    new batch size of a known program); else None."""
    compiled = _build(program, key, structure)
    compiled.defer_parallel(True)
    if compiled.schedule is not None and not all(s.ready() for s in compiled.steps if isinstance(s, _KernelStep)):
        return None
    with _lock:
        _programs[key] = compiled
    return compiled


def compile_in_background(program: Program, key: tuple, structure: tuple, args: list,
                          hold: bool = False, donated: dict | None = None) -> bool:
    """Queue a compile of `program` on the background thread; False if one is already queued.

    The job schedules the program, generates and loads its kernels, and runs it
    once on a copy of `args` (Numba compiles a kernel for the argument types of
    its first call); only then does the program enter the cache, so a call never
    waits for it. A failure caches a reference-executor entry that says why."""
    with _lock:
        if key in _pending or key in _programs:
            return False
        _pending[key] = True
    stats.count(background_compiles=1)
    # No copy of the arguments: they stay alive in the job, and a later call's write-back
    # into them only changes which (valid) values the warm-up run reads, not its types.
    copies = list(args)

    def job():
        try:
            compiled = _build(program, key, structure)
            compiled.defer_parallel(True)
            compiled.warm_up(copies, donated)
            if compiled.schedule is not None and not compiled.failed_kernels():
                root = disk_cache.cache_dir()
                if root is not None:
                    disk_cache.mark_program(root, _kernel_cache().key_header_digest(), program_digest(key))
        except Exception as exc:          # a codegen bug: fall back, report, never raise later
            compiled = _failed(program, exc, "background compile")
        with _lock:
            _programs[key] = compiled
            _pending.pop(key, None)
            while len(_programs) > MAX_PROGRAMS:
                _programs.popitem(last=False)

    background.submit(job, hold=hold)
    return True


def _failed(program: Program, exc: Exception, what: str) -> "CompiledProgram":
    compiled = CompiledProgram(program, None, f"{what} failed: {type(exc).__name__}: {exc}")
    compiled.failure = compiled.reference_reason
    stats.log_compile("%s failed: %s: %s", what, type(exc).__name__, exc)
    return compiled


def cache_failure(program: Program, key: tuple, exc: Exception) -> "CompiledProgram":
    """Cache a reference-executor entry for a program whose compile raised (reported once)."""
    compiled = _failed(program, exc, "compile")
    with _lock:
        _programs[key] = compiled
    return compiled


def _build(program: Program, key: tuple, structure: tuple) -> "CompiledProgram":
    """The miss path of compile_program, without touching the cache dict."""
    stats.count(misses=1)
    with _lock:
        seen = _variants.setdefault(structure, [])
        nearest = seen[-1] if seen else None
        too_many = len(seen) >= MAX_SHAPE_VARIANTS
    why = _miss_reason(program, key, nearest)
    if too_many:
        if structure not in _warned_variants:
            _warned_variants.add(structure)
            warnings.warn(f"fusegrad: this program has been compiled for {MAX_SHAPE_VARIANTS} different signatures "
                          f"(shapes, dtypes, or the values of constant attributes, such as a softplus beta or a "
                          f"layer_norm eps that changes between calls); further new signatures run on the "
                          f"reference executor without compiling", RuntimeWarning, stacklevel=3)
        compiled = CompiledProgram(program, None,
                                   f"more than {MAX_SHAPE_VARIANTS} signatures (shapes, dtypes, attribute values) "
                                   f"of this program structure")
    else:
        compiled = CompiledProgram(program, schedule(program))
        with _lock:
            # (only a program that scheduled is a variant: a later miss of the structure compares
            # its key with this one's to say why it missed)
            if key not in seen:
                seen.append(key)
    compiled.miss_reason = why
    return compiled


def _miss_reason(program: Program, key: tuple, nearest: tuple | None) -> str:
    """Which part of the key differs from the latest earlier entry with the same structure."""
    if nearest is None:
        return "no earlier program with this structure (ops, attributes and wiring)"
    labels = []
    for k, v in enumerate(program.inputs):
        labels.append(f"input {k}")
    for n, ins in enumerate(program.instrs):
        labels += [f"instruction {n} ({ins.op}) output {m}" for m in range(len(ins.outputs))]
        if ins.attrs:
            labels.append(f"instruction {n} ({ins.op}) attributes")
    diffs = [f"{label}: {_show(old)} -> {_show(new)}"
             for label, old, new in zip(labels, nearest[1], key[1]) if old != new]
    more = f" (and {len(diffs) - 3} more)" if len(diffs) > 3 else ""
    return "new shape signature: " + "; ".join(diffs[:3]) + more


def _show(item) -> str:
    if isinstance(item, tuple) and len(item) == 2:          # (shape, dtype) of a value
        try:
            return str(TensorType(*item))
        except Exception:                                   # (not a type: explain, never raise)
            return repr(item)
    return str(item)


# ------------------------------------------------------------------ steps
class _OpStep:
    """A non-kernel step: BLAS matmul, a NumPy view, a fill or a reference op."""

    def __init__(self, step, slots: dict):
        self.step = step
        self.instr = step.instr
        self.ins = [slots[v.id] for v in step.instr.inputs]
        self.outs = [slots[v.id] for v in step.instr.outputs]
        # One output of a reference that NumPy never splits over threads (a small product,
        # np.matmul through _matmul_ref): the call is prepared once, as eager dispatch's is.
        # reference_apply looked up the op, rebuilt its attributes and output types and
        # checked for a ufunc on every call: 8 us of a 64x64 product's 16 in a training step.
        ref = OPS[self.instr.op].ref
        self.direct = None
        if len(self.outs) == 1 and type(ref) not in UFUNC_TYPES:
            self.direct = (ref, dict(self.instr.attrs), self.instr.outputs[0].dtype.np, self.outs[0])

    def run(self, env: list, donated=None) -> None:
        if self.direct is not None:
            ref, attrs, want, out = self.direct
            env[out] = apply_ref_small(ref, [env[s] for s in self.ins], attrs, want)
            return
        results = reference_apply(self.instr, [env[s] for s in self.ins])
        for s, r in zip(self.outs, results):
            env[s] = r


class _ViewStep(_OpStep):
    """A NumPy view of one operand (a weight's transpose before its product): the reference
    called directly, without reference_apply's floating-point state and result checks (a
    view computes nothing and keeps its operand's dtype)."""

    def __init__(self, step, slots: dict):
        super().__init__(step, slots)
        self.ref, self.attrs = OPS[self.instr.op].ref, dict(self.instr.attrs)
        (self.operand,), (self.out,) = self.ins, self.outs

    def run(self, env: list, donated=None) -> None:
        out = self.ref(env[self.operand], **self.attrs)
        env[self.out] = out if type(out) is np.ndarray else np.asarray(out)


class _CopiedViewStep(_ViewStep):
    """A view that only kernels read, across its memory (schedule.Step.copied): one contiguous
    copy, made in tiles, serves every kernel that reads it (each would copy it otherwise)."""

    def run(self, env: list, donated=None) -> None:
        out = self.ref(env[self.operand], **self.attrs)
        env[self.out] = contiguous_copy(out) if needs_copy(out) else np.asarray(out)


def _huge_pooled(shape: tuple, dtype) -> np.ndarray:
    """A kernel's or BLAS step's output memory: a pool buffer, on huge pages where it is large (ir/buffers.py)."""
    return POOL.empty(shape, dtype, huge_pages=True)


class _IntoStep(_OpStep):
    """An op whose reference can write its one large output into given memory (BLAS
    products; ir.interpreter.into_writer): it writes into a pooled buffer (ir/buffers.py)."""

    def __init__(self, step, slots: dict, writer):
        super().__init__(step, slots)
        out = step.instr.outputs[0].type
        self.writer, self.shape, self.dtype = writer, out.shape, out.dtype.np
        self.attrs = dict(step.instr.attrs)

    def run(self, env: list, donated=None) -> None:
        env[self.outs[0]] = apply_ref_into(self.writer, [env[s] for s in self.ins],
                                           _huge_pooled(self.shape, self.dtype), self.attrs)


# plain kernel's name -> {pairs: CompiledKernel of its in-place variant} made in this process
_IN_PLACE_VARIANTS: dict = {}


class Warming:
    """`donated` of a warm-up run (CompiledProgram.warm_up): nothing is written over an input;
    each kernel also compiles the in-place variant that a call writing back `slots` (input
    index -> output slot, the call's own `donated`) will run."""

    def __init__(self, slots: dict):
        self.slots = slots


class _KernelStep:
    """A fused kernel: allocate its outputs, call its Numba dispatcher."""

    def __init__(self, kernel, slots: dict, math: str):
        self.kernel = kernel
        self.source = generate(kernel, math)
        self.compiled = _kernel_cache().get_kernel(self.source, math)
        self.extents = [kernel.space[d] for d in self.source.extents]
        self.loads = [(slots[v.id], scalar, v.dtype.np) for v, scalar in
                      zip(self.source.loads, self.source.scalar_loads)]
        self.params = [dtype.np.type(value) for value, dtype in self.source.params]
        self.stores = [(slots[v.id], v.shape, v.dtype.np) for v in self.source.stores]
        # outputs large enough to page-fault when fresh come from the buffer pool
        self.allocators = [_huge_pooled if v.type.numel * v.dtype.np.itemsize >= MIN_POOLED_BYTES else np.empty
                           for v in self.source.stores]
        numel = 1
        for s in kernel.space:
            numel *= s
        import numba
        eligible = (self.source.parallel_loop and numel >= PARALLEL_MIN_ELEMENTS
                    and numba.config.NUMBA_NUM_THREADS > 1)
        self.choice = _ParallelChoice(eligible, parallel_policy())
        self.slots = slots
        self.status = "not run yet"
        self.defer_parallel = False
        # In-place outputs (runtime/in_place.py): the candidates CompiledProgram plans, the
        # program's fallback flag (a one-item list it shares), and what the last call did.
        self.in_place = None                # an in_place.Candidates, when the step has any
        self.fell_back = [False]
        self.in_place_done: dict = {}
        self.in_place_kernels: dict = {}    # ((k, j), ...) -> CompiledKernel of that variant
        self.last_kernel = self.compiled    # the plain kernel or the variant the last call ran
        self.math = math

    def _in_place_kernel(self, taken: dict):
        """The kernel variant storing the outputs of `taken` (k -> (array, j)) into their
        operands (codegen/in_place.in_place_source), made once per set of pairs."""
        key = tuple(sorted((k, j) for k, (_, j) in taken.items()))
        kernel = self.in_place_kernels.get(key)
        if kernel is None:
            kernel = self.in_place_kernels[key] = _kernel_cache().get_kernel(
                in_place_source(self.source, dict(key)), self.math)
            _IN_PLACE_VARIANTS.setdefault(self.compiled.name, {})[key] = kernel
        return kernel

    def ready(self) -> bool:
        """Can this step run without compiling: its kernel, or (for a step that writes in
        place) an in-place variant of it, compiled in this process? (A training step's
        parameter updates only ever ran their variants.)"""
        if self.compiled.ready():
            return True
        return any(k.ready() for k in _IN_PLACE_VARIANTS.get(self.compiled.name, {}).values())

    @property
    def parallel(self) -> bool:
        """Does this step run (or has it settled on) the parallel variant?"""
        return self.choice.decided is True

    def run(self, env: list, donated=None) -> None:
        warming = None
        if type(donated) is Warming:
            warming, donated = donated.slots, None
        if self.compiled.failure is not None:
            self._reference(env)
            return
        args = list(self.extents)
        for slot, scalar, _ in self.loads:
            operand = env[slot]
            if scalar:
                operand = operand[()]
            elif needs_copy(operand):
                # A strided operand would make Numba run the loop unvectorised (layout_copy).
                operand = contiguous_copy(operand)
            args.append(operand)
        args.extend(self.params)
        compiled = self.compiled
        taken = None
        if self.in_place:
            # outputs written over operands that die here (runtime/in_place.py), by the
            # kernel's in-place variant
            taken = in_place.choose(self.in_place, args, len(self.extents), env, self.stores, donated,
                                    not self.fell_back[0])
            if taken:
                compiled = self._in_place_kernel(taken)
                if compiled.failure is not None:
                    compiled, taken = self.compiled, None
        if taken:
            outs = [taken[k][0] if k in taken else allocate(shape, dtype)
                    for k, (allocate, (_, shape, dtype)) in enumerate(zip(self.allocators, self.stores))]
            self.in_place_done = {k: j for k, (_, j) in taken.items()}      # (for explain; no arrays kept)
        else:
            outs = [allocate(shape, dtype) for allocate, (_, shape, dtype) in zip(self.allocators, self.stores)]
            self.in_place_done = {}
        self.last_kernel = compiled
        args.extend(outs)
        choice = self.choice
        use = choice.next()
        compiling_parallel = False
        if use and not compiled.parallel_ready() and background.async_enabled() and \
                (choice.decided is None or self.defer_parallel):
            # With tiered execution no call waits for the parallel variant that the
            # measurement (or the tiered path) asks for: it compiles (or loads) on the
            # background thread while calls stay serial. (Without it, the first call
            # compiled it: below.)
            compiled.prepare_parallel_in_background(args)
            use, compiling_parallel = False, True
        # (a call after the choice settled is not timed: _ParallelChoice.record keeps no time then)
        timed = choice.decided is None or choice.calls_left is not None
        start = time.perf_counter() if timed else 0.0
        try:
            fresh = compiled(args, use)
        except _kernel_cache().KernelFailed:
            if compiled is not self.compiled:
                # (the in-place variant failed to compile: nothing ran; the plain kernel runs)
                self.in_place = None
                return self.run(env, donated)
            self._reference(env)
            return
        if use and compiled.parallel_failure is not None:
            choice.settle(False, f"serial (parallel variant failed: {compiled.parallel_failure})")
        elif not fresh:
            if timed:
                choice.record(use, time.perf_counter() - start)
        elif not use and choice.decided is None and compiled.last_run_seconds >= PARALLEL_MIN_SECONDS and \
                not background.async_enabled():
            # A first call without tiered execution compiles what later calls run: the
            # parallel variant too, for a kernel long enough to measure it (else it
            # compiled on a background thread during the next calls, which ran serially
            # meanwhile with the compiler on one of the two cores: W3's first 1.7 s of
            # calls took 6-12 ms, against 2 once it was ready).
            compiled.compile_parallel_now(args)
        self._serial_while_compiling = compiling_parallel
        self._status = None
        if warming:
            self._prepare_input_variant(args, env, warming)
        for (slot, _, _), out in zip(self.stores, outs):
            env[slot] = out

    @property
    def status(self) -> str:
        """How the last call ran the kernel (explain()): composed when read, not on every call."""
        if self._status is not None:
            return self._status
        return "compiled kernel, " + ("serial while the parallel variant compiles in the background"
                                      if self._serial_while_compiling else self.choice.describe())

    @status.setter
    def status(self, text: str) -> None:
        self._status = text

    def _prepare_input_variant(self, args: list, env: list, donated: dict) -> None:
        """(Warm-up, on the background thread.) Compile the in-place variant that a call writing
        `donated` back will run, so that such a call compiles nothing."""
        if not (self.in_place and self.in_place.inputs):
            return
        taken = in_place.choose(self.in_place, args, len(self.extents), env, self.stores, donated,
                                not self.fell_back[0])
        if taken and {k: j for k, (_, j) in taken.items()} != self.in_place_done:
            self._in_place_kernel(taken).compile_for(args)

    def _reference(self, env: list) -> None:
        """Run the kernel's instructions one by one with their NumPy implementations."""
        self.fell_back[0] = True         # (its results may be views: no intermediate is taken after this)
        self.in_place_done = {}
        if not self.status.startswith("reference"):
            warnings.warn(f"fusegrad: kernel {self.compiled.name} failed to compile "
                          f"({self.compiled.failure}); its instructions run by reference", RuntimeWarning,
                          stacklevel=3)
        self.status = f"reference fallback (compile failed: {self.compiled.failure})"
        local: dict = {}
        for ins in self.kernel.instrs:
            args = [local[v.id] if v.id in local else env[self.slots[v.id]] for v in ins.inputs]
            for v, r in zip(ins.outputs, reference_apply(ins, args)):
                local[v.id] = r
        for v, (slot, _, _) in zip(self.source.stores, self.stores):
            env[slot] = local[v.id]


def parallel_policy() -> str:
    """FUSEGRAD_PARALLEL ("auto", "always" or "never"), read now; anything else means "auto"."""
    policy = os.environ.get("FUSEGRAD_PARALLEL", "auto").strip().lower()
    return policy if policy in ("auto", "always", "never") else "auto"


class _ParallelChoice:
    """Which variant of one kernel step runs: serial, parallel, or (auto) the faster of the two.

    A measured choice is measured again later: a choice made while something else held
    a core (the machine is shared, the process may have just started) must not last the
    whole process. A parallel choice is checked again after RECHECK_CALLS calls, then
    after ten times as many, and so on. A serial choice is checked every RECHECK_CALLS
    calls, and cheaply: only the parallel variant runs again (PARALLEL_SAMPLES calls),
    against the serial times of the latest calls, so a core that was busy during the
    measurement costs at most RECHECK_CALLS slow calls once it is free again."""

    def __init__(self, eligible: bool, policy: str):
        self.times: dict = {False: [], True: []}
        self.decided = None                 # None while measuring
        self.note = ""
        self.parallel_choices = 0           # measured choices of the parallel variant so far
        self.calls_left = None              # calls until the next measurement (measured choices)
        if not eligible or policy == "never":
            self.settle(False, "serial")
        elif policy == "always":
            self.settle(True, "parallel")

    def settle(self, parallel: bool, note: str) -> None:
        self.decided, self.note = parallel, note

    def next(self) -> bool:
        """The variant for the next call: serial until it has PARALLEL_SAMPLES timed calls,
        then parallel. (Not alternating: the first parallel call after a serial one wakes
        the idle thread pool, which can cost milliseconds; the fastest of consecutive
        parallel calls is what back-to-back calls get.)"""
        if self.decided is not None:
            if self.calls_left is not None:
                self.calls_left -= 1
                if self.calls_left <= 0:                    # measure again
                    recent_serial = self.times[False] if self.decided is False else []
                    self.decided, self.calls_left = None, None
                    self.times = {False: recent_serial, True: []}
            if self.decided is not None:
                return self.decided
        return len(self.times[False]) >= PARALLEL_SAMPLES

    def record(self, parallel: bool, seconds: float) -> None:
        """Time of a call that compiled nothing; decide once there is enough to compare.

        A time taken while a background compile runs is dropped: the compiling thread
        takes one of the two cores and would make the parallel variant look slow."""
        if background.pending():
            return
        if self.decided is not None:
            if self.decided is False and self.calls_left is not None and not parallel:
                # A measured serial choice keeps its latest times for the next check.
                self.times[False] = self.times[False][1 - PARALLEL_SAMPLES:] + [seconds]
            return
        self.times[parallel].append(seconds)
        serial, par = self.times[False], self.times[True]
        if not parallel and len(serial) == 1 and serial[0] < PARALLEL_MIN_SECONDS:
            self.settle(False, f"serial ({serial[0] * 1e3:.2f} ms, too short to split)")
        elif len(par) >= PARALLEL_SAMPLES and len(serial) >= PARALLEL_SAMPLES:
            best_s, best_p = min(serial), min(par)
            faster = best_p < 0.8 * best_s
            self.settle(faster, f"{'parallel' if faster else 'serial'} "
                        f"(measured {best_p * 1e3:.2f} ms parallel, {best_s * 1e3:.2f} ms serial)")
            if faster:
                self.calls_left = RECHECK_CALLS * 10 ** self.parallel_choices
                self.parallel_choices += 1
            else:
                self.calls_left = RECHECK_CALLS

    def describe(self) -> str:
        return self.note if self.decided is not None else "serial and parallel (measuring which is faster)"


# ------------------------------------------------------------------ the compiled program
class CompiledProgram:
    """A scheduled program: kernels and library steps, callable like run_program."""

    def __init__(self, program: Program, sched: Schedule | None, reference_reason: str | None = None):
        self.program = program
        self.schedule = sched
        self.reference_reason = reference_reason
        self.miss_reason = ""
        self.failure: str | None = None     # why a background compile failed (reported once)
        self.failure_reported = False
        self.calls = 0
        self.far_trig_calls = 0      # calls rerun by reference for a sin/cos argument >= 2**20
        if sched is None:
            return
        prog = sched.program
        if free_values(prog):
            raise ValueError("compile_program: the program reads values it neither takes as inputs nor defines")
        self.slots = {v.id: k for k, v in enumerate(prog.inputs)}
        for ins in prog.instrs:
            for v in ins.outputs:
                self.slots.setdefault(v.id, len(self.slots))
        self.input_types = [(self.slots[v.id], v.dtype.np, v.shape) for v in prog.inputs]
        self.output_slots = [self.slots[v.id] for v in prog.outputs]
        # Trig guards (codegen/trig_guard.py): the schedule's last outputs, not the program's.
        split = len(self.output_slots) - sched.guards
        self.output_slots, self.guard_slots = self.output_slots[:split], self.output_slots[split:]
        math = _kernel_cache().math_module()
        self.steps = []
        for step in sched.steps:
            if step.kind == KERNEL:
                self.steps.append(_KernelStep(step.kernel, self.slots, math))
            else:
                self.steps.append(_op_step(step, self.slots))
                if step.kind == "reference" and step.missing_rule:
                    _warn_reference(step.instr.op, step.why)
        self.runs = [(step.run, _frees) for step, _frees in zip(self.steps, self._last_reads())]
        self._plan_in_place(len(prog.inputs))

    def _plan_in_place(self, n_inputs: int) -> None:
        """Give each kernel step its in-place output candidates (runtime/in_place.py);
        FUSEGRAD_IN_PLACE=0 (read when a program is compiled) turns them off, for comparison."""
        if not in_place.enabled():
            return
        fell_back = [False]
        kernels = [s for s in self.steps if isinstance(s, _KernelStep)]
        for step in kernels:
            step.fell_back = fell_back

        def pairs(step):
            if not isinstance(step, _KernelStep):
                return ()
            return [(k, j, step.loads[j][0]) for k, j in step.source.in_place]
        keep = set(self.output_slots) | set(self.guard_slots)
        # (a program with trig guards reruns from its inputs: none of them is written over)
        plans = in_place.plan(self.steps, n_inputs, keep, _reads, _outputs,
                              lambda s: isinstance(s, (_KernelStep, _IntoStep)), pairs, inputs_ok=not self.guard_slots)
        for step, candidates in zip(self.steps, plans):
            if candidates:
                step.in_place = in_place.Candidates(candidates, step.stores)

    def _last_reads(self) -> list:
        """Per step, the slots it is the last reader of (freed right after it, so a
        call's intermediates do not all stay alive until the end; outputs are kept)."""
        last = {}
        for n, step in enumerate(self.steps):
            for slot in _reads(step):
                last[slot] = n
        keep = set(self.output_slots) | set(self.guard_slots)
        frees = [[] for _ in self.steps]
        for slot, n in last.items():
            if slot not in keep:
                frees[n].append(slot)
        return frees

    def defer_parallel(self, on: bool) -> None:
        """Compile parallel variants on the background thread instead of on the call that
        first wants one (fg.compile's tiered path; compile_program stays synchronous)."""
        for step in getattr(self, "steps", ()):
            if isinstance(step, _KernelStep):
                step.defer_parallel = on

    def failed_kernels(self) -> list:
        """Kernels of this program that could not be compiled (they run by reference)."""
        if self.schedule is None:
            return []
        return [s for s in self.steps if isinstance(s, _KernelStep) and s.compiled.failure is not None]

    def warm_up(self, args, donated: dict | None = None) -> None:
        """Run once (on the background thread) so that every kernel compiles or loads for
        these argument types, and the in-place variants a call with `donated` runs (nothing is
        written over the arguments); not counted as a call."""
        import warnings as _w
        with _w.catch_warnings():
            _w.simplefilter("ignore")        # a failed kernel is reported when the program runs
            self(args, Warming(donated or {}))
        self.calls -= 1

    def __call__(self, args, donated: dict | None = None) -> list:
        """Run on `args` (one array per program input); returns the outputs.

        `donated` maps an input's index to the index of the output whose value the caller
        writes back into that input's memory after the call: the kernel computing that
        output may write it there directly (runtime/in_place.py), when nothing else in the
        program reads the input afterwards. The caller vouches that no other input overlaps
        that memory. The output is then the input's array itself."""
        self.calls += 1
        if self.schedule is None:
            return run_program(self.program, list(args))
        if len(args) != len(self.input_types):
            raise ValueError(f"program takes {len(self.input_types)} inputs, got {len(args)}")
        env = [None] * len(self.slots)
        for k, ((slot, dtype, shape), a) in enumerate(zip(self.input_types, args)):
            if type(a) is np.ndarray and a.dtype is dtype and a.shape == shape:
                env[slot] = a                   # the common case (a traced call's own arrays)
                continue
            if type(a) is not np.ndarray:
                a = np.asarray(a)
            if a.shape != shape:
                raise ValueError(f"input {k} has shape {list(a.shape)}; the program was compiled for "
                                 f"{list(shape)}")
            env[slot] = a if a.dtype == dtype else a.astype(dtype)
        if type(donated) is Warming:
            donated = Warming({k: self.output_slots[q] for k, q in donated.slots.items()})
        elif donated:
            donated = {k: self.output_slots[q] for k, q in donated.items()}
        for run, frees in self.runs:
            run(env, donated)
            for slot in frees:
                env[slot] = None
        for s in self.guard_slots:
            if env[s][()]:
                # A sin/cos argument reached the near forms' limit: their results are wrong.
                self.far_trig_calls += 1
                return run_program(self.program, list(args))
        return [env[s] for s in self.output_slots]

    @property
    def kernels(self) -> list:
        """The program's fused kernels, in order; empty for the reference executor."""
        return [] if self.schedule is None else self.schedule.kernels

    def explain(self) -> str:
        """The kernels, the instructions each fuses, fusion decisions and the generated source."""
        if self.schedule is None:
            return (f"reference executor ({self.reference_reason}; {self.miss_reason})\n" +
                    format_program(self.program))
        name = Namer()
        kinds = [s.step.kind if isinstance(s, _OpStep) else KERNEL for s in self.steps]
        summary = ", ".join(f"{kinds.count(k)} {k}" for k in dict.fromkeys(kinds))
        parts = [f"compiled program: {len(self.steps)} steps ({summary}); calls so far: {self.calls}",
                 f"compiled because: {self.miss_reason}"]
        if self.guard_slots:
            parts.append(f"sin/cos: near forms, exact for |x| < 2**20 ({len(self.guard_slots)} guard output(s)); "
                         f"calls with a larger argument rerun in NumPy: {self.far_trig_calls}")
        parts += ["program (composite ops decomposed, permutes sunk):", format_program(self.schedule.program, name)]
        for n, step in enumerate(self.steps, 1):
            if isinstance(step, _OpStep):
                parts.append(f"[{n}] {step.step.kind}: {format_instr(step.instr, name)}    # {step.step.why}")
                continue
            k = step.kernel
            ran = step.last_kernel        # (the in-place variant, when the last call wrote in place)
            head = (f"[{n}] kernel {k.id} ({k.layout}) over {list(k.space)}"
                    + (f" reducing axes {list(k.axes)}" if k.axes else "")
                    + f", {k.analysis.phases} phase(s); "
                    f"ran: {step.status}; module {ran.name}"
                    + (f" in {ran.root}" if ran.root else " (in memory)"))
            lines = [head, "  fuses:"]
            lines += ["    " + format_instr(ins, name) for ins in k.instrs if ins not in k.inlined]
            if k.inlined:
                lines.append("  recomputes inline: " + "; ".join(format_instr(i, name) for i in k.inlined))
            if step.source.cut:
                dim, positions = step.source.cut
                lines.append(f"  innermost loop (dim {dim}) cut at {', '.join(map(str, positions))}: one affine loop "
                             "per segment, where clamped reads (a cat or a slice along it) would keep it scalar")
            if step.source.plane_dim is not None:
                lines.append(f"  plane first: chunks of dim {step.source.plane_dim} accumulate their sums in cache, "
                             "each finished at once (no plane-sized partial sums per block)")
            lines.append("  reads: " + " ".join(name(v) for v in step.source.loads))
            lines.append("  writes: " + " ".join(name(v) for v in step.source.stores))
            if step.in_place_done:
                lines.append("  in place (last call): " + ", ".join(
                    f"{name(step.source.stores[k])} written over {name(step.source.loads[j])}"
                    for k, j in sorted(step.in_place_done.items())) + " (its last reader)")
            lines.append("  source:")
            lines += ["    " + line for line in ran.text.splitlines()]
            parts.append("\n".join(lines))
        if self.schedule.notes:
            parts.append("fusion decisions (why not fused):")
            for ins, kernel, why in self.schedule.notes:
                if ins is None:
                    parts.append(f"  kernels {kernel[0].id} and {kernel[1].id} not merged: {why}")
                    continue
                where = f"kernel {kernel.id}" if kernel is not None else "its producers"
                parts.append(f"  {format_instr(ins, name)}: not fused into {where}: {why}")
        return "\n".join(parts)


def _op_step(step, slots: dict) -> _OpStep:
    """The executor step of a non-kernel schedule step: one whose op can write into given
    memory writes into a pooled buffer when its output is large enough to be worth it."""
    ins = step.instr
    writer = into_writer(OPS[ins.op], [v.type for v in ins.inputs], [v.type for v in ins.outputs],
                         dict(ins.attrs))
    if writer is not None:
        return _IntoStep(step, slots, writer)
    if step.kind == VIEW and len(ins.inputs) == 1 and len(ins.outputs) == 1:
        return (_CopiedViewStep if step.copied else _ViewStep)(step, slots)
    return _OpStep(step, slots)


def _outputs(step) -> list:
    """The env slots a step writes."""
    if isinstance(step, _OpStep):
        return step.outs
    return [slot for slot, _, _ in step.stores]


def _reads(step) -> list:
    """The env slots a step reads."""
    if isinstance(step, _OpStep):
        return step.ins
    inner = {v.id for ins in step.kernel.instrs for v in ins.outputs}
    reads = [slot for slot, _, _ in step.loads]
    reads += [step.slots[v.id] for ins in step.kernel.instrs for v in ins.inputs
              if v.id not in inner and v.id in step.slots]
    return reads


def _warn_reference(op: str, why: str) -> None:
    if op not in _warned_ops:
        _warned_ops.add(op)
        warnings.warn(f"fusegrad: {why} (in compiled programs)", RuntimeWarning, stacklevel=4)
