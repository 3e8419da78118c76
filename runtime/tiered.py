"""Which path runs a traced program: its compiled kernels, or the reference executor.

The tiered policy (`execute`): a program whose kernels are ready runs them; a small
program (or one after a graph break) runs on the NumPy reference executor; with tiered
execution on (FUSEGRAD_ASYNC_COMPILE=1) a program whose kernels are not ready runs on the
reference executor while they compile, or load from the disk cache, on the background
thread (runtime/background.py). Also the per-call dead-code pass (`live_program`).
"""
from __future__ import annotations

import warnings

from fusegrad.ir import Program, threaded
from fusegrad.ir.interpreter import run_freeing
from fusegrad.ir.ops.registry import checks_values

from . import background, executor, stats
from .permuted_inputs import lift_permuted_inputs


# Programs whose values hold fewer elements than this in total are "small": their
# first call, and every call of one with a graph break (which has computed most of
# its values already) or with fewer than SMALL_COMPILE_MIN_INSTRS instructions, runs
# on the reference executor; a small program seen HOT_CALLS times is compiled, since
# one kernel call then replaces many NumPy calls.
SMALL_PROGRAM_ELEMENTS = 4096
SMALL_COMPILE_MIN_INSTRS = 8
HOT_CALLS = 2

# With tiered execution, a program whose kernels are in the disk cache loads them at once
# (and runs them) only when its reference run would take longer than the load: loading
# costs about 0.08 s a kernel, the reference executor about 0.5 ns per element an
# instruction writes. Below this many elements the call runs on the reference executor
# while the kernels load in the background (W1's warm first call: 0.15-0.23 s loading at
# once, about 0.05 s this way).
LOAD_NOW_MIN_ELEMENTS = 200_000_000


def element_work(program: Program) -> int:
    """Elements the instructions of `program` write, in all (what a reference run costs)."""
    return sum(v.type.numel for ins in program.instrs for v in ins.outputs)


def _is_small(program: Program) -> bool:
    """Whether the program's values hold fewer than SMALL_PROGRAM_ELEMENTS elements in all."""
    total = 0
    for ins in program.instrs:
        for v in ins.outputs:
            total += v.type.numel
            if total >= SMALL_PROGRAM_ELEMENTS:
                return False
    return True


COMPILED_KERNELS = "compiled kernels"      # Run.path of a call that ran its program's kernels


class Run:
    """What one call did: the programs, which path ran, graph breaks (for explain)."""

    def __init__(self):
        self.forward: Program | None = None
        self.backward: Program | None = None
        self.path = ""
        self.compiled = None
        self.backward_compiled = None
        self.breaks = []
        self.backward_start = None
        self.hold = False           # hold background compiles until the call returns
        self.raised = False         # the function raised: its programs run on the reference executor


def execute(program: Program, args: list, known: dict | None, run: Run, donated: dict | None = None):
    """Run `program` by the tiered policy; records the path taken in `run.path`.

    1. kernels ready (program cache hit): run them;
    2. small program after a graph break: reference; with tiered execution on
       (FUSEGRAD_ASYNC_COMPILE=1) also a small program not hot yet or with few instructions;
    3. tiered execution off (the default): compile now and run the kernels;
    4. every kernel in the disk cache and Numba initialised: load them now and run when
       the reference run would cost more than the load (LOAD_NOW_MIN_ELEMENTS), else
       load them on the background thread and run this call on the reference executor;
    5. otherwise: compile on the background thread (at most once per program key)
       and run this call on the reference executor; a later call finds the kernels
       ready, and none ever waits for them.

    `donated` (input index -> output index) passes on to compiled kernels: see
    CompiledProgram.__call__; the reference executor ignores it.
    """
    if not program.instrs:
        run.path = "no instructions"
        env = {v.id: a for v, a in zip(program.inputs, args)}
        return [env[v.id] for v in program.outputs]
    if run.raised:
        return run_reference(program, args, known, run, "the call raised")
    small = None                               # measured only when it decides something
    tiered = background.async_enabled()
    if run.breaks or (tiered and len(program.instrs) < SMALL_COMPILE_MIN_INSTRS):
        small = _is_small(program)
        if small:
            executor.note_reference_program(program)     # (a hit or a miss, as any lookup)
            return run_reference(program, args, known, run, "small program")
    ex = executor
    # (the compiled path reads transposed arguments in their memory order: permuted_inputs;
    # the reference executor takes the program as traced)
    traced, traced_args = program, args
    program, args = lift_permuted_inputs(program, args)
    structure, key = ex.program_key(program)
    compiled = ex.lookup(key)
    if compiled is not None:
        return run_compiled(compiled, args, run, COMPILED_KERNELS, donated)
    if small is None:
        small = _is_small(program)
    if tiered and small and ex.note_use(key) < HOT_CALLS:
        return run_reference(traced, traced_args, known, run, "small program")
    if not tiered:
        return run_compiled(ex.compile_now(program, key, structure), args, run, COMPILED_KERNELS, donated)
    if ex.is_pending(key):
        return run_reference(traced, traced_args, known, run, "kernels compiling in the background")
    if background.numba_ready():
        try:
            if ex.on_disk(key):
                if element_work(program) >= LOAD_NOW_MIN_ELEMENTS:
                    return run_compiled(ex.compile_now(program, key, structure, defer_parallel=True), args, run,
                                         "compiled kernels (loaded from the disk cache)", donated)
                # The load starts after this call's reference run: loading holds the GIL for
                # most of its 0.1-0.2 s, and the reference run waited behind it (W1's warm
                # first call: 0.04-0.26 s with the load started first)
                outputs = run_reference(traced, traced_args, known, run,
                                        "kernels loading from the disk cache in the background")
                ex.compile_in_background(program, key, structure, args, hold=run.hold, donated=donated)
                return outputs
            if ex.has_variants(structure):       # a new batch size: its kernels are usually ready
                compiled = ex.try_ready(program, key, structure)
                if compiled is not None:
                    return run_compiled(compiled, args, run, COMPILED_KERNELS, donated)
        except Exception as exc:                 # a codegen bug: report it, fall back, never raise
            return run_compiled(ex.cache_failure(program, key, exc), args, run, "")
    ex.compile_in_background(program, key, structure, args, hold=run.hold, donated=donated)
    return run_reference(traced, traced_args, known, run, "kernels compiling in the background")


def run_reference(program: Program, args: list, known: dict | None, run: Run, why: str):
    """Run on the reference executor, continuing from values a graph break computed."""
    run.path = f"reference executor ({why})"
    run.compiled = None
    stats.count(reference_calls=1)
    env = dict(known or {})
    for v, a in zip(program.inputs, args):
        env[v.id] = a
    # One thread: in full benchmark runs the warm first call of W1 took 0.36-0.47 s with its
    # reference calls split over threads and 0.18 s without (cold: 0.07-0.09 s either way).
    # (The callers of execute() hold background.gil_to_caller() for the whole call.)
    with threaded.single_threaded():
        return run_freeing(program, env)


def run_compiled(compiled, args: list, run: Run, path: str, donated: dict | None = None):
    run.compiled = compiled
    if compiled.schedule is None:
        run.path = f"reference executor ({compiled.reference_reason})"
        if compiled.failure is not None and not compiled.failure_reported:
            # (a flag on the object: a set of id()s would match a later program at a dead one's address)
            compiled.failure_reported = True
            warnings.warn(f"fusegrad: {compiled.failure}; this program runs on the reference executor",
                          RuntimeWarning, stacklevel=4)
    else:
        run.path = path
        if donated:
            return compiled(args, donated)
    return compiled(args)


def live_program(traced: Program, outputs: list) -> Program:
    """dead_code_elimination specialised for the per-call path: most traced
    instructions have one output and are live, so test the first output first.
    An instruction that may raise on its values (an index out of range: registry.checks_values)
    is kept though nothing reads it, its result an output of the program (so no later pass
    drops it): the call raises where eager execution does."""
    live = {v.id for v in outputs}
    kept, checked = [], []
    add = live.add
    for ins in reversed(traced.instrs):
        outs = ins.outputs
        if outs[0].id in live or (len(outs) > 1 and any(v.id in live for v in outs)) or checks_values(ins):
            if outs[0].id not in live and len(outs) == 1:
                checked.append(outs[0])
            kept.append(ins)
            for v in ins.inputs:
                add(v.id)
    kept.reverse()
    return Program(traced.inputs, kept, outputs + checked[::-1] if checked else outputs)
