"""fg.compile: trace each call into one SSA program, then run it compiled.

Pipeline per call (each step a named function whose output `explain()` prints):

    trace      run the Python function with a Trace installed (tracer/trace.py)
    collect    outputs = every symbolic tensor still alive + in-place writes
    autograd   if outputs require grad through inputs that require grad,
               emit the backward program now (ir.autodiff) for later
    simplify   CSE + DCE (ir/passes.py)
    execute    the tiered policy (execute() below): a program whose kernels are
               ready runs them (runtime/executor.py); otherwise this call runs
               on the reference executor while the kernels compile on the
               background thread (runtime/background.py)
    write back materialise outputs, `.grad` of leaves, in-place updates; give
               outputs that need it a CompiledFunctionBackward grad_fn

Retracing every call is what makes arbitrary Python control flow correct;
caching happens below, keyed on the program's structure and shapes.
"""
from __future__ import annotations

import functools
import itertools
import types
import warnings
import weakref

import numpy as np

from fusegrad.ir import (OPS, Builder, Program, TensorType, Value, active_values, backward as emit_backward,
                         differentiated_inputs, threaded)
from fusegrad.ir.interpreter import run_freeing
from fusegrad.ir.ops.registry import checks_values
from fusegrad.ir.passes import simplify
from fusegrad.ir.printer import format_program
from fusegrad.ir.program import freeze_attrs
from fusegrad.ir.verifier import free_values
from fusegrad.tracer import Tensor, is_grad_enabled, trace_state
from fusegrad.tracer.dispatch import _memory_owner, _writable_memory, edge_of, refresh_view_history
from fusegrad.tracer.layout import replayed_view, views_an_expand, with_strides
from fusegrad.tracer.engine import (accumulate_into_grads, backward as engine_backward, grad_memory,
                                    has_grad_layout, modified_error, output_name, output_of)
from fusegrad.tracer.node import _FREED_MSG, RELEASES_STATE, SavedTensor, node_class
from fusegrad.tracer.trace import Trace, TraceContext
from fusegrad.tracer.trace_autograd import sum_groups

# The executor (program cache, fusion scheduling, code generation; not Numba, which loads
# with the first kernel) is imported with this module: every compiled call's first run
# needs it, and importing it there cost that call ~40 ms.
from . import background, executor, stats
from .gc_pause import gc_paused
from .background import wait_for_compiles  # noqa: F401  (fg.wait_for_compiles)

# Programs whose values hold fewer elements than this in total are "small": their
# first call, and every call of one with a graph break (which has computed most of
# its values already) or with fewer than SMALL_COMPILE_MIN_INSTRS instructions, runs
# on the reference executor; a small program seen HOT_CALLS times is compiled, since
# one kernel call then replaces many NumPy calls.
SMALL_PROGRAM_ELEMENTS = 4096
SMALL_COMPILE_MIN_INSTRS = 8
HOT_CALLS = 2

# A call that breaks the graph and whose program is small runs every traced segment on
# the reference executor, op by op: tracing then only adds its own cost to what eager
# execution does (the tutorial's while-loop: 0.42 ms traced, 0.25 ms eager). After
# EAGER_AFTER such calls in a row with one argument signature (shapes, dtypes,
# requires_grad), calls with that signature run the function eagerly.
EAGER_AFTER = 2

_GC_PAUSED = gc_paused()      # one instance: it holds no state of its own

# With tiered execution, a program whose kernels are in the disk cache loads them at once
# (and runs them) only when its reference run would take longer than the load: loading
# costs about 0.08 s a kernel, the reference executor about 0.5 ns per element an
# instruction writes. Below this many elements the call runs on the reference executor
# while the kernels load in the background (W1's warm first call: 0.15-0.23 s loading at
# once, about 0.05 s this way).
LOAD_NOW_MIN_ELEMENTS = 200_000_000


def _element_work(program: Program) -> int:
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


class _Run:
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


def execute(program: Program, args: list, known: dict | None, run: _Run):
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
    """
    if not program.instrs:
        run.path = "no instructions"
        env = {v.id: a for v, a in zip(program.inputs, args)}
        return [env[v.id] for v in program.outputs]
    if run.raised:
        return _reference(program, args, known, run, "the call raised")
    small = None                               # measured only when it decides something
    tiered = background.async_enabled()
    if run.breaks or (tiered and len(program.instrs) < SMALL_COMPILE_MIN_INSTRS):
        small = _is_small(program)
        if small:
            executor.note_reference_program(program)     # (a hit or a miss, as any lookup)
            return _reference(program, args, known, run, "small program")
    ex = executor
    structure, key = ex.program_key(program)
    compiled = ex.lookup(key)
    if compiled is not None:
        return _run_compiled(compiled, args, run, "compiled kernels")
    if small is None:
        small = _is_small(program)
    if tiered and small and ex.note_use(key) < HOT_CALLS:
        return _reference(program, args, known, run, "small program")
    if not tiered:
        return _run_compiled(ex.compile_now(program, key, structure), args, run, "compiled kernels")
    if ex.is_pending(key):
        return _reference(program, args, known, run, "kernels compiling in the background")
    if background.numba_ready():
        try:
            if ex.on_disk(key):
                if _element_work(program) >= LOAD_NOW_MIN_ELEMENTS:
                    return _run_compiled(ex.compile_now(program, key, structure, defer_parallel=True), args, run,
                                         "compiled kernels (loaded from the disk cache)")
                # The load starts after this call's reference run: loading holds the GIL for
                # most of its 0.1-0.2 s, and the reference run waited behind it (W1's warm
                # first call: 0.04-0.26 s with the load started first)
                outputs = _reference(program, args, known, run, "kernels loading from the disk cache in the background")
                ex.compile_in_background(program, key, structure, args, hold=run.hold)
                return outputs
            if ex.has_variants(structure):       # a new batch size: its kernels are usually ready
                compiled = ex.try_ready(program, key, structure)
                if compiled is not None:
                    return _run_compiled(compiled, args, run, "compiled kernels")
        except Exception as exc:                 # a codegen bug: report it, fall back, never raise
            return _run_compiled(ex.cache_failure(program, key, exc), args, run, "")
    ex.compile_in_background(program, key, structure, args, hold=run.hold)
    return _reference(program, args, known, run, "kernels compiling in the background")


def _reference(program: Program, args: list, known: dict | None, run: _Run, why: str):
    """Run on the reference executor, continuing from values a graph break computed."""
    run.path = f"reference executor ({why})"
    run.compiled = None
    stats.count(reference_calls=1)
    env = dict(known or {})
    for v, a in zip(program.inputs, args):
        env[v.id] = a
    # One thread: in full benchmark runs the warm first call of W1 took 0.36-0.47 s with its
    # reference calls split over threads and 0.18 s without (cold: 0.07-0.09 s either way).
    with threaded.single_threaded(), background.gil_to_caller():
        return run_freeing(program, env)


def _run_compiled(compiled, args: list, run: _Run, path: str):
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
    return compiled(args)


class _ForwardFn:
    """custom_call protocol for a compiled call's outputs (see ir/ops/custom.py)."""

    def __init__(self, out_types, results, vjp_fn):
        self.out_types = out_types
        self._results = results
        self.vjp_fn = vjp_fn

    def run(self, *arrays):
        return tuple(self._results)


class _Constant:
    """custom_call protocol for an array an expanded backward reads as it is (no inputs, no gradient)."""

    def __init__(self, type: TensorType, array):
        self.out_types = [type]
        self.array = array
        self.vjp_fn = None

    def run(self):
        return (self.array,)


_NOT_TWICE = ("fg.compile cannot differentiate this call's backward again (create_graph): the call wrote memory "
              "in place or wrote a leaf under no_grad; run it eagerly")


class _OnceDifferentiable:
    """custom_call protocol for a compiled backward run inside a create_graph backward where it
    has no IR form: its inputs are the cotangents, then the call's inputs (read only so that
    the gradient requires grad where they do); differentiating it raises _NOT_TWICE."""

    def __init__(self, back: "_BackwardFn", n_cotangents: int):
        self.back = back
        self.n = n_cotangents
        self.out_types = back.out_types
        self.vjp_fn = _Refusal()

    def run(self, *arrays):
        return self.back.run(*arrays[:self.n])


class _Refusal:
    """custom_call protocol of a backward that cannot be differentiated: raises _NOT_TWICE."""

    out_types = ()
    vjp_fn = None

    def run(self, *arrays):
        raise RuntimeError(_NOT_TWICE)

    def expand(self, e, xs, gs):
        raise RuntimeError(_NOT_TWICE)


class _BackwardFn:
    """custom_call protocol running the compiled backward program of one call."""

    def __init__(self, program: Program, saved: list, in_types, grad_present: list, run: _Run):
        self.program = program
        self.saved = saved
        self.out_types = in_types
        self.grad_present = grad_present
        self.vjp_fn = None
        self.run_info = run
        self.node = None        # weak reference to the CompiledFunctionBackward node
        self.checks = []        # (version box, version when saved, weak ref to the tensor, its name,
                                # the saved view's shape or None, index in saved) (_saved_checks)
        self._reached_saved = {}    # `given` -> indices of the saved values those cotangents reach
        self._reached_for = {}      # `given` -> per input, whether a gradient reaches it
        self.forward_reach = None   # `given` -> per input, whether those outputs depend on it (a call
                                    # with several outputs: _forward_reach), else None
        # The call's outputs share this one node, where eagerly each has its own: a backward
        # without retain_graph frees only the saved values it reached, so another output's
        # backward can still run (y1.backward(); y2.backward()) where it needs none of them.
        self._consumed = set()      # ids of the backward's instructions whose saved values a backward
                                    # freed (see reached_inputs)
        self._consumed_all = False  # a backward from every output freed them all
        self._last_users = None     # those the last run used (freed if the engine frees the node);
                                    # EVERY_USE for a backward from every output
        self.stale = {}         # which outputs get cotangents (a tuple of bools) -> (value, version
                                # box, version when saved, its name) of a saved value those reach that
                                # an in-place write inside the call replaced (Trace.stale_saved); the
                                # entry None (every output) is the default
        self.forward = None     # (forward program, its inputs, their arrays, the input values of the
                                # tensors gradients flow to), for expand; None where it cannot
        self.freed_outputs = None   # per output: behind values a backward inside the call freed
        self.totals = []            # (weak ref to an output, position of its total gradient among the
                                    # program's outputs) for outputs others are computed from
        self.fills_retained = frozenset()   # their indices: the engine leaves their retain_grad() to run()
        # Per output: the instructions on its backward path that hold state a backward without
        # retain_graph releases though they save no tensor (node.RELEASES_STATE: CopySlices, a
        # 0-d max over a dim), or None where there are none. Once the engine freed this node
        # after a run through some of them, a later run through any of those raises, as
        # torch's, and a run along the other outputs' paths does not.
        self.releasing = None
        self._released = set()
        self._last_given = None
        self.promoted = []          # (index in saved, weak ref to the caller's tensor) of a saved promoted
                                    # copy of that tensor (x32 in x64 / x32): see _saved_now

    def _saved_now(self) -> list:
        """The saved arrays for a run. torch's node saves a promoted operand itself, not the
        promoted copy, so a write of its memory after the call that bumps no version
        (`x32.data.copy_(...)`) reaches the backward: such a copy is made again from it."""
        if not self.promoted:
            return self.saved
        saved = list(self.saved)
        for k, ref in self.promoted:
            t = ref()
            if t is not None and t._data is not None and t._data.shape == saved[k].shape:
                saved[k] = t._data.astype(saved[k].dtype)
        return saved

    def reached(self) -> list:
        """Per input: whether any gradient reaches it (torch leaves .grad None where none does)."""
        return self.grad_present

    def reached_for(self, given: tuple) -> list:
        """Per input: whether a gradient reaches it from the outputs marked in `given`. torch's
        engine goes only where the graph of those outputs goes: an input that only the others
        depend on gets no gradient (and the engine does not go on into its history), one they
        depend on through a zero derivative gets zeros."""
        if all(given) or self.forward_reach is None:
            return self.grad_present
        found = self._reached_for.get(given)
        if found is None:
            found = self._reached_for[given] = [present and reached for present, reached
                                                in zip(self.grad_present, self.forward_reach(given))]
        return found

    def _check_stale(self, given=None) -> None:
        found = self.stale.get(given, self.stale.get(None)) if self.stale else None
        if found is not None:
            v, box, version, where = found
            raise modified_error(v.type.shape, v.type.dtype.name, where, box[0], version)

    def for_cotangents(self, given: tuple):
        """This backward for a pass that gives cotangents only to the outputs marked in `given`
        (the custom_call protocol): a saved value only the others reach is not checked, as
        torch's engine never reaches its node."""
        return self if all(given) else _GivenCotangents(self, given)

    def _releasing_along(self, given) -> set:
        """The state-releasing instructions a run with cotangents `given` passes (None: all)."""
        return set().union(*(ids for ids, g in zip(self.releasing, given or self.releasing) if g))

    def _check_not_freed(self, users: set, given=None) -> None:
        """torch's "backward through the graph a second time" error, where this run uses saved
        values that a backward without retain_graph freed."""
        node = self.node() if self.node is not None else None
        if node is not None and node._freed:
            # The engine freed the node after the last run: what that run used is gone. The node
            # stays usable for what it did not use (eagerly those are other nodes).
            if self._last_users is EVERY_USE:
                self._consumed_all = True
            elif self._last_users:
                self._consumed |= self._last_users
            if self.releasing is not None and self._last_users is not None:
                self._released |= self._releasing_along(self._last_given)
            self._last_users = None
            node._freed = False
        if self._released and self._released & self._releasing_along(given):
            raise RuntimeError(_FREED_MSG)
        if not self.saved:
            return                      # (nothing saved: nothing to free, as torch's (x + 1).sum())
        if self._consumed_all:
            freed = bool(users)
        else:
            freed = bool(self._consumed) if users is EVERY_USE else bool(users & self._consumed)
        if freed:
            raise RuntimeError(_FREED_MSG)

    def reached_saved(self, given: tuple) -> tuple:
        """(indices of the saved values that the backward program combines with a cotangent in
        `given`; ids of the instructions that do so): what a backward from these outputs reads,
        whose version checks it runs (see reached_inputs)."""
        found = self._reached_saved.get(given)
        if found is None:
            seeds = len(self.program.inputs) - len(self.saved)
            found = self._reached_saved[given] = reached_inputs(self.program, seeds, given)
        return found

    def expand(self, e, xs, gs, given=None) -> list:
        """This VJP as IR (the custom_call protocol's `expand`, for a create_graph backward): the
        call's forward re-emitted from its inputs `xs` as far as the backward reads it, then the
        backward program on cotangents `gs`, so that the gradient has a history of its own
        (second derivatives through a compiled call, which torch.compile refuses)."""
        self._check_stale(given)
        if self.forward is None:
            # No IR form: the compiled backward, whose result requires grad where an input does
            # and whose own backward raises (as torch.compile's CompiledFunctionBackwardBackward).
            grads = e.op("custom_call", *gs, *xs, fn=_OnceDifferentiable(self, len(gs)))
            return list(grads) if isinstance(grads, tuple) else [grads]
        program, inputs, arrays, input_values = self.forward
        env = {v.id: x for v, x in zip(input_values, xs)}
        constants = {v.id: (v, a) for v, a in zip(inputs, arrays)}

        def value(u):
            w = env.get(u.id)
            if w is None:       # an input that is not a tensor the gradient flows to: a constant
                v, a = constants[u.id]
                w = env[u.id] = e.op("custom_call", fn=_Constant(v.type, a))
            return w

        def emit(instrs):
            for ins in instrs:
                outs = e.op(ins.op, *[value(u) for u in ins.inputs], **dict(ins.attrs))
                for o, w in zip(ins.outputs, outs if isinstance(outs, tuple) else (outs,)):
                    env[o.id] = w
        seeds = self.program.inputs[:len(gs)]
        emit(_live_program(program, self.program.inputs[len(gs):]).instrs)
        env.update((v.id, g) for v, g in zip(seeds, gs))
        emit(self.program.instrs)
        grads = iter(self.program.outputs)
        return [value(next(grads)) if present else None for present in self.grad_present]

    def run(self, *cotangents, given=None):
        # (first: a saved value a write inside the call replaced is met before the nodes a
        # backward inside it freed, or it would not be here: see Trace.stale_saved)
        self._check_stale(given)
        # (a backward from every output, the common case, reaches everything: no scan)
        if self.freed_outputs is not None and any(f and (given is None or g)
                                                  for f, g in zip(self.freed_outputs, given or self.freed_outputs)):
            raise RuntimeError(_FREED_MSG)
        reached, users = self.reached_saved(given) if given is not None else (None, EVERY_USE)
        self._check_not_freed(users, given)
        for box, version, ref, where, shape, k in self.checks:
            if box[0] != version and (reached is None or k in reached):
                _raise_modified(box, version, ref(), where, shape)
        self._last_users, self._last_given = users, given
        results = execute(self.program, list(cotangents) + self._saved_now(), None, self.run_info)
        if self.totals:
            self.fill_retained(results)
        outs = iter(results)
        return tuple(next(outs) if present else np.zeros(t.shape, t.dtype.np)
                     for present, t in zip(self.grad_present, self.out_types))

    def fill_retained(self, results: list) -> None:
        """The retain_grad() of the call's outputs that others are computed from: their .grad
        gets their total gradient (what reaches them from outside and from the call's other
        outputs), as the eager engine gives a retained tensor (the engine leaves these to this
        node: see fills_retained)."""
        node = self.node() if self.node is not None else None
        pairs = []
        for ref, position in self.totals:
            t = ref()
            if t is not None and t._retains_grad and t._grad_fn is node:
                pairs.append((t, results[position]))
        if pairs:
            accumulate_into_grads(pairs, False)


# _BackwardFn's instructions used by a backward from every output: all of them.
EVERY_USE = frozenset({"every instruction"})


class _GivenCotangents:
    """A _BackwardFn run by a pass that gives cotangents to only some of the call's outputs."""

    def __init__(self, back: _BackwardFn, given: tuple):
        self.back, self.given = back, given
        self.out_types = back.out_types
        self.vjp_fn = None

    def reached(self) -> list:
        return self.back.reached()

    def expand(self, e, xs, gs) -> list:
        return self.back.expand(e, xs, gs, given=self.given)

    def run(self, *cotangents):
        return self.back.run(*cotangents, given=self.given)


# Per subset of the outputs, the saved values a backward reaches are found for calls with at
# most this many outputs that require grad (2**n - 2 subsets; the scan runs only for a call
# whose in-place writes replaced a saved value). Above it every backward checks them all.
STALE_SUBSETS_UP_TO = 4


def _stale_by_cotangents(trace: Trace, instrs: list, out_values: list, wrt: list, active: set) -> dict:
    """_BackwardFn.stale: the stale saved value each subset of the outputs reaches (see there)."""
    found = trace.stale_saved(instrs, active)
    if found is None:
        return {}

    def reached_by(given):
        reached = active_values(instrs, [v for v, g in zip(out_values, given) if g], wrt)
        return trace.stale_saved(instrs, reached)
    if len(out_values) > STALE_SUBSETS_UP_TO:
        return _LazyStale(found, reached_by)
    stale = {None: found}
    for given in itertools.product((False, True), repeat=len(out_values)):
        if any(given) and not all(given):
            stale[given] = reached_by(given)
    return stale


class _LazyStale(dict):
    """_BackwardFn.stale for a call with too many outputs to enumerate their subsets: the entry
    of a subset is worked out when a backward first gives cotangents to exactly those (it
    keeps the trace's instructions for that; only a call whose in-place writes replaced a
    saved value has one). Otherwise a dead output, such as a temporary detach() written with
    history, would make every backward check what only it reaches."""

    def __init__(self, found, reached_by):
        super().__init__({None: found})
        self._reached_by = reached_by

    def get(self, given, default=None):
        if given is not None and any(given) and not all(given) and given not in self:
            self[given] = self._reached_by(given)
        return dict.get(self, given, default)


def _forward_reach(instrs: list, out_values: list, groups: list):
    """_BackwardFn.forward_reach: for a subset of the call's outputs, per input (the values of
    `groups` it held), whether those outputs depend on it, worked out when first asked (it
    keeps the trace's instructions for that)."""
    wrt = [v for group in groups for v in group]

    def reach(given: tuple) -> list:
        active = active_values(instrs, [v for v, g in zip(out_values, given) if g], wrt)
        return [any(v.id in active for v in group) for group in groups]
    return reach


def _releasing_paths(trace: Trace, instrs: list, out_values: list, wrt: list):
    """Per output value, the ids of the state-releasing instructions (node.RELEASES_STATE) its
    backward runs through; None where the backward has none (see _BackwardFn.releasing)."""
    releasing = [ins for ins in instrs if trace.grad_instrs.get(id(ins)) in RELEASES_STATE]
    if not releasing:
        return None
    paths = []
    for v in out_values:
        active = active_values(instrs, [v], wrt)
        paths.append(frozenset(id(ins) for ins in releasing if any(o.id in active for o in ins.outputs)))
    return tuple(paths)


def reached_inputs(program: Program, seeds: int, given: tuple) -> tuple:
    """What a backward program reads when only the seeds marked in `given` are non-zero:
    (indices, after the first `seeds` inputs, of the inputs whose value reaches a gradient;
    ids of the instructions that combine a value depending on a given seed with one that does
    not: each stands for an eager node's use of its saved values). An input reaches a gradient
    where such an instruction reads it, directly or through values computed from it; a value
    computed from an absent seed alone is zero and reaches nothing."""
    live = {v.id for v, g in zip(program.inputs[:seeds], given) if g}
    zero = {v.id for v, g in zip(program.inputs[:seeds], given) if not g}
    constant = set()        # computed from no input at all (a mask of a whole-tensor copy_): nothing saved
    needed, users = set(), set()
    for ins in program.instrs:
        ids = [v.id for v in ins.inputs]
        if any(i in live for i in ids):
            live.update(v.id for v in ins.outputs)
            read = [i for i in ids if i not in live and i not in zero and i not in constant]
            if read:
                needed.update(read)
                users.add(id(ins))
        elif any(i in zero for i in ids):
            zero.update(v.id for v in ins.outputs)
        elif all(i in constant for i in ids):
            constant.update(v.id for v in ins.outputs)
    for ins in reversed(program.instrs):
        if any(v.id in needed for v in ins.outputs):
            needed.update(v.id for v in ins.inputs if v.id not in zero)
    return {k for k, v in enumerate(program.inputs[seeds:]) if v.id in needed}, users


def _raise_modified(box, version, tensor, where, shape=None) -> None:
    """torch's error for a saved tensor changed in place after the call (as the eager engine's);
    `where` names the call's output, None for an input (named by its history now); `shape`:
    the saved view's, where the call saved a view of the tensor."""
    if tensor is None:
        raise modified_error(shape or (), "", where or "", box[0], version)
    if where is None:
        if tensor._base is not None:
            refresh_view_history(tensor)    # a view of a base written since: torch's AsStrided
        where = output_of(tensor._grad_fn, tensor._output_nr)
    raise modified_error(tensor.shape if shape is None else shape, tensor.dtype.name, where, box[0], version)


def _shares_with_another(t: Tensor, by_memory: dict) -> bool:
    """Whether another tensor of `by_memory` ({id of the array owning memory: the tensors over
    it}) shares t's memory."""
    return any(other is not t and np.may_share_memory(t._data, other._data)
               for other in by_memory.get(id(_memory_owner(t._data)), ()))


def _saved_checks(saved_arrays: list, grad_outs: list, others: list, read: list, promoted: dict,
                  unversioned=frozenset()) -> list:
    """Version checks for the saved arrays that are the memory of the call's outputs that
    require grad or of the tensors in `others` (its other outputs, such as a max's
    indices, its inputs that require grad, the tensors it wrote in place), or a view of
    memory the call read (`read`: a weight saved transposed, an argument or a module's
    buffer that needs no grad), or a promoted copy of a caller's tensor or of a view of it
    (`promoted`: saved index -> (tensor, the view's shape or None); x64 * x32 saves x32 as
    float64, torch's node x32 itself): an in-place change after the call raises, as torch's
    check of the saved tensor does. Not those in `unversioned` (indices of the caller's
    memory saved through a `.data`, whose counter its tensor's writes never move)."""
    checks = []
    for k, (t, view_shape) in promoted.items():
        # (a view is named by its shape, and when it requires grad as the view torch regenerates)
        where = output_name("AsStridedBackward0", 0) if view_shape is not None and t._requires_grad else None
        checks.append((t._vbox, t._vbox[0], weakref.ref(t), where, view_shape, k))
    owners = {}
    for k, t in enumerate(grad_outs):
        owners.setdefault(id(t._data), (t, f", which is output {k} of CompiledFunction,"))
    for t in others:
        if t._data is not None:
            owners.setdefault(id(t._data), (t, None))
    by_memory = None
    for k, a in enumerate(saved_arrays):
        if k in promoted or k in unversioned:
            continue
        t, where = owners.get(id(a), (None, None))
        if t is not None:
            checks.append((t._vbox, t._vbox[0], weakref.ref(t), where, None, k))
            continue
        if by_memory is None:
            by_memory = {}
            for x in read:
                if x._data is not None:
                    by_memory.setdefault(id(_memory_owner(x._data)), []).append(x)
        t = next((x for x in by_memory.get(id(_memory_owner(a)), ()) if np.may_share_memory(a, x._data)), None)
        if t is not None:
            # torch names a saved view by its shape, and (when it requires grad) as the
            # view its engine regenerates: "which is output 0 of AsStrided"
            view = a.shape != t._data.shape or a.strides != t._data.strides
            where = output_name("AsStridedBackward0", 0) if view and t._requires_grad else None
            checks.append((t._vbox, t._vbox[0], weakref.ref(t), where, a.shape if view else None, k))
    return checks


class _RaisingBackwardFn:
    """custom_call protocol for outputs whose backward raises torch's error when it runs: it
    was freed inside the call, or it goes through an op without a derivative (x // 2).
    `stale`: a saved value a write inside the call replaced, which the backward meets before
    the freed nodes (Trace.stale_saved): torch's version error, not the freed one."""

    def __init__(self, in_types, message: str = _FREED_MSG, stale=None):
        self.out_types = in_types
        self.vjp_fn = None
        self.message = message
        self.stale = stale

    def run(self, *cotangents):
        if self.stale is not None:
            v, box, version, where = self.stale
            raise modified_error(v.type.shape, v.type.dtype.name, where, box[0], version)
        raise RuntimeError(self.message)


class CompiledFunction:
    """A function whose calls are traced into one program and run compiled."""

    def __init__(self, fn):
        self.fn = fn
        self.last_run: _Run | None = None
        self.eager_calls = 0            # calls run eagerly (see EAGER_AFTER)
        self._breaking: dict = {}       # argument signature -> small graph-breaking calls in a row
        self._tracing_forced = False
        # __name__, __doc__, __wrapped__...; not fn's __dict__: a compiled nn.Module's
        # attributes (training, parameters) are read live through __getattr__, never copied.
        functools.update_wrapper(self, fn, updated=())

    def __get__(self, obj, objtype=None):
        """A compiled function defined in a class body binds as a method (`@fg.compile def forward(self, x)`)."""
        return self if obj is None else types.MethodType(self, obj)

    def __getattr__(self, name):
        """Attributes this object lacks are the compiled callable's (a callable object's
        own attributes; a module is wrapped by fusegrad.nn.compiled.OptimizedModule instead)."""
        if name == "fn":            # not set yet (copy, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.fn, name)

    def __call__(self, *args, **kwargs):
        if trace_state.current() is not None:      # nested compile: inline into the outer trace
            return self.fn(*args, **kwargs)
        for a in args:
            if isinstance(a, np.ndarray):       # (rare: most calls pass tensors, kept as given)
                args = tuple([_from_numpy(a) for a in args])
                break
        signature = _signature(args) if self._breaking else None
        if signature is not None and self._breaking.get(signature, 0) >= EAGER_AFTER and not self._tracing_forced:
            # served by a cached decision, compiling nothing: a hit, run op by op
            self.eager_calls += 1
            stats.count(hits=1, reference_calls=1)
            return self.fn(*args, **kwargs)
        with _GC_PAUSED:                            # (why: runtime/gc_pause.py)
            trace = Trace()
            trace.dry = self._tracing_forced        # explain's call leaves the caller's tensors as they were
            try:
                with TraceContext(trace):
                    result = self.fn(*args, **kwargs)
            except Exception:
                _finish_raised(trace)
                raise
            except BaseException:               # (KeyboardInterrupt: no more work than needed)
                _abandon(trace)
                raise
            run = _Run()
            run.hold = True
            try:
                _finish(trace, result, run)
            except BaseException:
                _abandon(trace)
                raise
            finally:
                run.hold = False
                background.release()
        self.last_run = run
        if run.breaks and run.path == _SMALL_REFERENCE_PATH:
            signature = signature if signature is not None else _signature(args)
            self._breaking[signature] = self._breaking.get(signature, 0) + 1
        elif self._breaking:
            self._breaking.pop(signature if signature is not None else _signature(args), None)
        return result

    def runs_eagerly(self, *args) -> bool:
        """Whether calls with these arguments' signature now run the function eagerly (see EAGER_AFTER)."""
        return self._breaking.get(_signature(tuple(_from_numpy(a) for a in args)), 0) >= EAGER_AFTER

    def explain(self, *args, **kwargs) -> str:
        """Trace and run one call and describe it: programs, path, kernels, source, graph breaks.

        The call compiles its kernels before running (no background compile), so
        the kernels and their source are part of the description. It is a dry run:
        the caller's tensors keep their values, versions, history and `.grad`, and
        optimizers their state, as if it had not run (Python side effects of the
        function's own code, which tracing executes, are not undone)."""
        eager_before = self.runs_eagerly(*args)
        self._tracing_forced = True
        snapshots = _snapshot_states()
        try:
            with background.synchronous():
                self(*args, **kwargs)
        finally:
            self._tracing_forced = False
            _restore_states(snapshots)
        run = self.last_run
        parts = [f"# fg.compile({getattr(self.fn, '__name__', 'fn')}) — execution path: {run.path}",
                 f"background compiles pending: {background.pending()}"]
        if eager_before or self.runs_eagerly(*args):
            parts.append(f"calls with these argument shapes run eagerly (not traced): the last {EAGER_AFTER} or "
                         f"more broke the graph and their programs were small; this one was traced to explain it")
        fwd = run.forward
        if run.backward_start is not None:
            parts += ["## forward program", format_program(fwd),
                      f"## backward program (instructions from #{run.backward_start} on, emitted by "
                      f"autodiff inside the call)",
                      "\n".join(_lines_after(fwd, run.backward_start))]
        else:
            parts += ["## forward program", format_program(fwd)]
        if run.backward is not None:
            parts += ["## backward program (for gradients flowing into the call's inputs)",
                      format_program(run.backward)]
        if run.breaks:
            parts.append("## graph breaks")
            parts += [f"{loc}: {why}" for loc, why in run.breaks]
        else:
            parts.append("## graph breaks\nnone")
        backward = run.backward_compiled
        if backward is None and run.backward is not None:
            # The backward runs when gradients flow back (after this call): schedule it now, from
            # the program cache, so that its kernels and their source are described too.
            try:
                backward = executor.compile_program(run.backward)
            except Exception as exc:             # a codegen bug: say so, never raise from explain
                parts.append(f"## backward kernels\nnot available: {type(exc).__name__}: {exc}")
        forward, forward_title = run.compiled, "forward kernels and generated source"
        if forward is None and run.path == _SMALL_REFERENCE_PATH and run.forward.instrs:
            # Not compiled: the reference executor costs less on a program this small. Its kernels
            # are scheduled (from the program cache) to show what fusion makes of it.
            try:
                forward = executor.compile_program(run.forward)
                forward_title += (" (not used by calls of these shapes: a program this small runs on the "
                                  "reference executor)")
            except Exception as exc:             # a codegen bug: say so, never raise from explain
                parts.append(f"## forward kernels\nnot available: {type(exc).__name__}: {exc}")
        for title, compiled in ((forward_title, forward), ("backward kernels and generated source", backward)):
            if compiled is not None:
                parts += [f"## {title}", compiled.explain()]
        return "\n\n".join(parts)


_SMALL_REFERENCE_PATH = "reference executor (small program)"


# Objects that keep state outside tensors which a compiled call may change (fusegrad.optim's
# optimizers add themselves): explain's dry run takes each one's `snapshot_state()` before
# its call and gives it back with `restore_state(snapshot)` after.
STATEFUL: weakref.WeakSet = weakref.WeakSet()


def _snapshot_states() -> list:
    return [(obj, obj.snapshot_state()) for obj in list(STATEFUL)]


def _restore_states(snapshots: list) -> None:
    for obj, snapshot in snapshots:
        obj.restore_state(snapshot)


def _signature(args: tuple) -> tuple:
    """What decides whether a call may run eagerly: each argument's shape, dtype and
    requires_grad (its type, for anything but a tensor)."""
    return tuple([(a._value_shape(), a._dtype, a._requires_grad) if isinstance(a, Tensor) else type(a)
                  for a in args])


def _lines_after(program: Program, start: int):
    text = format_program(program).splitlines()
    return text[1 + start:-1]


def _from_numpy(a):
    """An argument as the traced function sees it: a NumPy array as a tensor over its memory
    (API.md); everything else as it is. A Python float stays a Python float, as eagerly and
    in torch.compile: a float32 tensor in its place would round it (x64 * 0.1, 1e300) and
    change what the function does with it (isinstance, round, returning it)."""
    if isinstance(a, np.ndarray):
        from fusegrad.tracer.creation import from_numpy
        return from_numpy(a)
    return a


def _finish_raised(trace: Trace) -> None:
    """The function raised: finish what the call traced before the error, as torch had run
    it by then. The caller's tensors keep the writes made before the error, with their
    history and version bumps; gradients a backward in the call accumulated stay; tensors
    it made that outlive it (carried by the exception, or kept in a closure) get their
    values and history. Nothing compiles on this path: the programs run on the reference
    executor (_Run.raised). Should finishing fail, what _abandon can keep is kept."""
    run = _Run()
    run.raised = True
    try:
        _finish(trace, None, run)
    except Exception:
        _abandon(trace)


def _abandon(trace: Trace) -> None:
    """A call that raised and could not be finished (_finish_raised), was interrupted
    (KeyboardInterrupt), or whose finishing raised: keep its in-place writes to the caller's
    tensors made before the error (with their version bumps) and the gradients a backward in
    it accumulated, and give the tensors it made that outlive it (carried by the exception,
    or kept in a closure) their values (without history: the call's graph is gone). One whose value cannot be computed stays symbolic,
    and using it says so (tensor.py); a write whose value cannot be computed is dropped. A
    detach or view of a tensor made in the call shares that tensor's array, as on success
    (_share_memory). A dry run (explain) writes nothing back: the caller's tensors get their
    state back (Trace.restore_states)."""
    homes = trace.memory_homes()
    written_back = []
    for array, tensor in trace.written_tensors():
        if tensor._sym is None or trace.dry:
            continue
        try:
            value = trace.materialize(tensor, partial=True)
        except Exception:           # the op that failed the call, or one after it
            value = None
        tensor._sym = None
        if value is not None and value.shape == array.shape:
            np.copyto(_writable(array, tensor), value, casting="unsafe")
            written_back.append(tensor)
    if not trace.dry:
        trace.apply_writes(written_back)
    done = []
    for t in trace.alive_tensors():
        if t._sym is not None and t._data is None:
            try:
                t._data = trace.materialize(t, partial=True)
            except Exception:       # the op that failed the call, or one after it
                continue
            done.append(t)
    _share_memory(done, _homes_of(done, homes, trace.known), trace.known)
    for t in done:
        t._sym, t._requires_grad = None, False
    for leaf, before in trace.grad_leaves.values():
        # (as _finish: a .grad the call gave owns writable memory laid out as its leaf, so a
        # later backward accumulates into it; the program may have computed a broadcast view)
        grad = leaf._grad
        if grad is not None and grad is not before and grad._data is not None and leaf._data is not None \
                and not (grad._data.flags.writeable and has_grad_layout(grad._data, leaf._data)):
            grad._data = grad_memory(grad._data, leaf._data)
    if trace.dry:
        trace.restore_states()


def _memory_owner_array(array: np.ndarray) -> np.ndarray:
    """The array that owns `array`'s memory (NumPy points a view's base at the owner; a
    base that is not an array, a buffer, leaves `array` standing for it)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _aliases_any(array: np.ndarray, others) -> bool:
    """Whether `array` may share memory with one of `others`."""
    return any(np.may_share_memory(array, other) for other in others)


def _writable(array: np.ndarray, tensor=None) -> np.ndarray:
    """Where a write-back goes: `array`, or for an expand's read-only view of writable memory
    (an argument `x.expand(2, 3)` filled in the call) a writable view of that memory, so
    every alias gets the value, as eagerly."""
    if array.flags.writeable or not (0 in array.strides or views_an_expand(tensor)):
        return array            # (a read-only snapshot stays read-only: the write raises)
    memory = _writable_memory(array)
    return array if memory is None else memory


def _live_program(traced: Program, outputs: list) -> Program:
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


def _finish(trace: Trace, result, run: _Run) -> None:
    homes = trace.memory_homes()
    trace.release_detach_links()
    alive = [t for t in trace.alive_tensors() if t._sym is not None]
    # A detach or view that outlives the call is, eagerly, memory of the tensor it comes
    # from: the program outputs that tensor's value once (even if the tensor itself died),
    # and the alias is made from it after the call (_share_memory).
    shared = _homes_of(alive, homes)
    mutated = trace.written_tensors()
    outputs, seen = [], set()
    for v in [t._sym for t in alive if id(t) not in shared] + \
             [home[1] for home in shared.values() if home[1] is not None] + [t._sym for _, t in mutated]:
        if v.id not in seen:
            seen.add(v.id)
            outputs.append(v)
    program = _live_program(trace.program, outputs)

    # Gradients that will flow back into this call from the eager engine: from its
    # symbolic outputs, and from the caller's tensors it wrote in place with history
    # (eagerly `x.add_(w)` makes x a non-leaf whose grad_fn is the in-place op's).
    written = _written_with_history(trace, mutated)
    # (A view made under no_grad of a tensor that requires grad is a leaf without a gradient.)
    # (nor one whose base was written since: torch will not regenerate its history, its use raises)
    grad_outs = [t for t in alive if t._requires_grad and t._data is None and not t._traced_leaf
                 and not (t._no_grad_view and (t._rebased or trace.grad_producer(t._sym) is None))] + written
    boundary = list(trace.leaf_tensors.values()) + list(trace.boundary.values())
    # leaves made inside the call by requires_grad_() (their outputs' gradients reach them too)
    boundary += [t for t in (ref() for ref in trace.new_leaves)
                 if t is not None and t._sym is not None and t._requires_grad and t.__dict__.get("_leaf_value")]
    backward = None
    gradients_may_flow = bool(grad_outs and boundary)   # (outputs recorded with grad, whatever the mode now)
    freed = gradients_may_flow and _freed_behind(trace, grad_outs)
    met_stale_first = _stale_before_freed(trace, outputs, grad_outs, boundary) if freed else None
    # per output, where only some are behind values an in-call backward freed (the others
    # keep their graph): a later backward from those raises (_BackwardFn.freed_outputs)
    freed_each = tuple(_reaches_freed(trace, t) for t in grad_outs) if gradients_may_flow and trace.freed \
        and not freed else None
    no_derivative = grads = None        # (no_derivative: torch's error for a backward through an op without one)
    if gradients_may_flow and not freed:
        b = Builder(Program())
        seeds = [b.input(t._sym.type) for t in grad_outs]
        # Differentiated: what every output that requires grad depends on (a view or detach
        # made from another output's memory is not a program output, but its op is on the path).
        reached = _live_program(trace.program, outputs + [t._sym for t in grad_outs])
        instrs = [ins for ins in reached.instrs if id(ins) in trace.grad_instrs]
        groups = [trace.held_values(x, trace.input_value(x)) for x in boundary]
        wrt, out_values = [v for group in groups for v in group], [t._sym for t in grad_outs]
        # (the active set is needed here only when the call wrote something in place)
        active = active_values(instrs, out_values, wrt) if trace.stale else None
        # An output that other outputs are computed from (y in `return (y * y).sum(), y`): its
        # total gradient, its own cotangent plus what flows back into it from the others, is an
        # output of the backward too, for its retain_grad() (_BackwardFn.fill_retained)
        # So too an output written through its .data (or under no_grad) after others read it:
        # its value is a graft onto its history, and its total is what reaches that history.
        history = [trace.through_grafts(v) for v in out_values]
        read = {v.id for ins in instrs for v in ins.inputs} if len(grad_outs) > 1 else ()
        inner = [k for k, t in enumerate(grad_outs) if t._sym.id in read or history[k] is not t._sym]
        try:
            emitted = emit_backward(b, instrs, out_values, seeds, wrt + [history[k] for k in inner], active=active,
                                    reads=trace.vjp_reads(instrs))
            grads = sum_groups(b, emitted[:len(wrt)], groups)
            totals = emitted[len(wrt):]
        except RuntimeError as exc:
            if not getattr(exc, "no_derivative", False):
                raise
            # (x // 2 on a tensor that requires grad: torch raises when a backward runs, not here;
            # a value replaced in place that the backward reads before that op raises first)
            no_derivative, grads = str(exc), None
            if active is not None:
                met_stale_first = trace.stale_saved(instrs, active)
    if grads is not None:
        b.program.outputs = [g for g in grads if g is not None]
        totals_at = []          # (index among grad_outs, position among the backward's outputs)
        for k, g in zip(inner, totals):
            if g is not None:
                totals_at.append((k, len(b.program.outputs)))
                b.program.outputs.append(g)
        stale = _stale_by_cotangents(trace, instrs, out_values, wrt, active) if active is not None else {}
        bwd = simplify(b.program)
        saved = free_values(bwd)
        backward = (Program(seeds + saved, bwd.instrs, bwd.outputs), saved, [g is not None for g in grads])
        outputs = outputs + [v for v in saved if v.id not in seen]
        program = _live_program(trace.program, outputs)
        # What a create_graph backward re-emits (_BackwardFn.expand): not where the call wrote
        # memory (its inputs now hold later values) or a leaf held several values.
        if not mutated and all(len(group) == 1 for group in groups):
            forward_form = (program, trace.inputs, trace.input_arrays, [group[0] for group in groups])
        else:
            forward_form = None

    run.forward = program
    run.breaks = trace.breaks
    run.backward_start = trace.backward_start if trace.backward_start is not None and \
        trace.backward_start < len(program.instrs) else None
    arrays = execute(program, trace.input_arrays, trace.known, run)
    by_id = {v.id: a for v, a in zip(program.outputs, arrays)}
    if trace.laid_out:
        _lay_out_outputs(trace, by_id)

    written = [array for array, tensor in mutated if tensor._sym is not None] if mutated else ()
    # An array owning its memory (no base) overlaps a written one only if it is that one's
    # owner: the full overlap test runs only for views and for those (a training step's
    # outputs are fresh arrays, and it writes every parameter and optimizer state back)
    owners = {id(_memory_owner_array(w)) for w in written} if written else ()
    for t in alive:
        if id(t) not in shared:
            array = by_id[t._sym.id]
            if t._layout is None and t._base is None and not array.flags.c_contiguous:
                # a value the trace laid out row-major (x.t().contiguous().tanh()) that a sunk
                # permute left transposed: row-major, as torch's (its view(-1) must work)
                array = by_id[t._sym.id] = np.ascontiguousarray(array)
            t._data = array
            if written and (array.base is not None or id(array) in owners) and _aliases_any(array, written):
                # The executor may hand out an input's own memory for a value that is a copy
                # eagerly (a sum over one element is its operand, reshaped); the write-back of
                # that input below would show through it
                t._data = t._data.copy()
    _share_memory(alive, shared, by_id)
    for t in alive:
        t._sym = None
    by_memory = {}                  # the gradients given so far, by the array owning their memory
    for leaf, before in trace.grad_leaves.values():
        # A gradient can be an expand's read-only broadcast view or a transposed product; a
        # .grad owns writable memory (a later backward accumulates into it in place) laid out
        # as its leaf, as in torch (tracer.engine.grad_memory). A .grad the call accumulated
        # into in place keeps its memory and layout, as torch's AccumulateGrad keeps them
        # (the write-back below fills it).
        grad = leaf._grad
        if grad is None or grad is before or grad._data is None:
            continue
        if _shares_with_another(grad, by_memory):
            # the program gave two equal values one array (two leaves' gradients of (a + b).mean()):
            # an accumulation into one .grad would change the other
            grad._data = grad._data.copy() if leaf._data is None else grad_memory(grad._data, leaf._data)
        elif leaf._data is None:        # a leaf made inside the call: its own layout is row-major
            if not grad._data.flags.writeable:
                grad._data = grad._data.copy()
        elif not has_grad_layout(grad._data, leaf._data):
            grad._data = grad_memory(grad._data, leaf._data)
        by_memory.setdefault(id(_memory_owner(grad._data)), []).append(grad)
    saved_arrays, unversioned = _saved_arrays(trace, backward[1], by_id, mutated) if backward is not None \
        else (None, None)
    written_back = []
    for array, tensor in mutated:
        if tensor._sym is not None:
            if not trace.dry:       # (a dry run, explain, leaves the caller's memory as it was)
                np.copyto(_writable(array, tensor), by_id[tensor._sym.id], casting="unsafe")
                written_back.append(tensor)
            tensor._sym = None
    if not trace.dry:
        trace.apply_writes(written_back)
    for t in alive:
        if id(t) in shared and t._base is not None:
            t._view_version = t._vbox[0]     # its history is current (not regenerated eagerly)
            if t._rebased:
                # a view made under no_grad whose base the call wrote since: stale, so that its
                # history is asked for again and torch's error raised (refresh_view_history)
                t._view_version = -1

    if backward is not None or freed or no_derivative:
        in_types = [TensorType(tuple(x.shape), x.dtype) for x in boundary]
        if backward is not None:
            bwd_program, saved, present = backward
            run.backward = bwd_program
            back = _BackwardFn(bwd_program, saved_arrays, in_types, present, run)
            back.totals = [(weakref.ref(grad_outs[k]), position) for k, position in totals_at]
            back.fills_retained = frozenset(k for k, _ in totals_at)
            promoted = trace.promoted_operands(saved)
            back.checks = _saved_checks(back.saved, grad_outs, alive + boundary + [t for _, t in mutated],
                                        trace.lifted_tensors, promoted, unversioned)
            back.releasing = _releasing_paths(trace, instrs, out_values, wrt)
            if len(grad_outs) > 1:
                back.forward_reach = _forward_reach(instrs, out_values, groups)
            back.promoted = [(k, weakref.ref(t)) for k, (t, view_shape) in promoted.items() if view_shape is None]
            back.stale = stale
            back.forward = forward_form
            if freed_each is not None and any(freed_each):
                back.freed_outputs = freed_each
        else:
            # A backward inside the call already freed what these outputs' backward needs (a
            # training step returning its loss), or it runs through an op without a derivative:
            # their grad_fn raises, as torch's would.
            back = _RaisingBackwardFn(in_types, no_derivative or _FREED_MSG, met_stale_first)
        _attach_backward(grad_outs, boundary, in_types, back)
    else:
        # No gradient can flow back into the call: its outputs are plain values (except
        # leaves made inside it, which require grad as they would eagerly, and views made
        # under no_grad of a tensor that requires grad, which require grad as their base)
        for t in alive:
            if not t._traced_leaf and not t._no_grad_view:
                t._requires_grad = False
    if trace.dry:
        trace.restore_states()
    else:
        for tensors, gradients, retain_graph, create_graph in trace.outside_backwards:
            # a backward in the call goes on into the history its inputs had before it
            engine_backward(tensors, gradients, retain_graph=retain_graph, create_graph=create_graph)


def _lay_out_outputs(trace: Trace, by_id: dict) -> None:
    """Give the output arrays of values traced as not row-major (an elementwise op on a
    transpose: Tensor._layout) those strides, so that after the call they are laid out as
    the trace said and as torch lays them out (kernels write their outputs row-major; where
    a sunk permute already gave the array that layout, nothing is copied)."""
    for ref in trace.laid_out:
        t = ref()
        if t is None or t._sym is None or t._layout is None:
            continue
        array = by_id.get(t._sym.id)
        if array is not None and array.ndim == len(t._layout):
            by_id[t._sym.id] = with_strides(array, t._layout)


def _homes_of(tensors: list, homes: dict, computed: dict | None = None) -> dict:
    """id(t) -> t's entry of Trace.memory_homes for those of `tensors` that have one; with
    `computed` (value id -> array: what a failed call got to compute), only those whose
    root is a value computed there."""
    out = {}
    for t in tensors:
        home = homes.get(id(t))
        if home is not None and home[0]() is t and (computed is None or (home[1] is not None and
                                                                        home[1].id in computed)):
            out[id(t)] = home
    return out


def _share_memory(alive: list, shared: dict, by_id: dict) -> None:
    """Give each detach and view that outlives the call its memory as eagerly: the array of
    the tensor it comes from (a program output, or the memory of a tensor from outside the
    call) seen through its view chain, and that tensor's version counter (see
    Trace.memory_homes). A saved value of the backward that such a tensor holds is read
    from its memory, so that an in-place change of it after the call is caught by the
    version check, as torch's is."""
    for t in alive:
        home = shared.get(id(t))
        if home is None:
            continue
        _, root_value, root_array, chain, version = home
        array = by_id[root_value.id] if root_value is not None else root_array
        for op, attrs in chain:
            array = OPS[op].ref(array, **dict(attrs))
        t._data, t._vbox = array, version
        if root_value is not None and t._sym.id in by_id:
            by_id[t._sym.id] = array


def _saved_arrays(trace: Trace, saved: list, by_id: dict, mutated: list) -> list:
    """The backward's saved arrays. The value a call leaves in memory it writes back (an
    argument's final value) is read from that memory, as eagerly: a change of it after the
    call is caught by that tensor's version counter, as torch's is (see _saved_checks).
    Any other saved array that is (or overlaps) memory the call writes back is copied
    first: the backward needs the value the call read (eagerly `y.mul_(x)` saves y's
    original value), not what the write-back puts there. An identity alias of memory the
    call read and did not write (`x * x.detach()`) is that memory (Trace.alias_memory).
    Returns the arrays and the indices of those read through a `.data` (unversioned: no
    version check, _saved_checks)."""
    final = {t._sym.id: array for array, t in mutated if t._sym is not None}
    # (read through a tensor that differs in requires_grad, memory's value is an identity alias)
    final.update({w.id: final[v_id] for (v_id, _), w in trace.aliases.items() if v_id in final})
    written = [array for array, t in mutated if t._sym is not None]
    arrays, unversioned = [], set()
    for v in saved:
        array, memory, versioned = by_id[v.id], final.get(v.id), True
        if memory is None and final and v.id in trace.view_values:
            memory = _view_of_final(trace.view_values[v.id], final)
        if memory is None and trace.aliases:
            memory, versioned = trace.alias_memory(v) or (None, True)
        if memory is not None and memory.shape == array.shape and memory.dtype == array.dtype:
            if not versioned:
                unversioned.add(len(arrays))
            arrays.append(memory)
        elif written and any(np.may_share_memory(array, w) for w in written):
            arrays.append(array.copy())
        else:
            arrays.append(array)
    return arrays, unversioned


def _view_of_final(entry: tuple, final: dict):
    """A saved view's value as a view of the memory the call leaves (`entry`: the view's
    (root, chain) in Trace.view_values; `final`: value id -> memory holding that value), or
    None where its root is not such a value. (t = x.unsqueeze(0) written through, then t * t:
    torch saves t, a view of x's memory, so a change of x after the call is caught.)"""
    root, chain = entry
    memory = final.get(root.id) if isinstance(root, Value) else None     # (not an array: memory unwritten)
    if memory is None:
        return None
    return replayed_view(memory, chain)     # (None where NumPy cannot: the computed copy is kept)


def _written_with_history(trace: Trace, mutated: list) -> list:
    """The caller's tensors the call wrote in place by an op recorded with grad: after the
    call they are outputs of it (torch gives them the in-place op's grad_fn). Not a leaf: one
    that requires grad can be written only under no_grad or through memory it shares (its
    detach()), and stays a leaf, as eagerly."""
    leaves = {id(t) for t in trace.leaf_tensors.values()}
    return [t for _, t in mutated
            if t._requires_grad and id(t) not in leaves and t._sym is not None
            and trace.grad_producer(t._sym) is not None]


def _attach_backward(grad_outs: list, boundary: list, in_types: list, back) -> None:
    """Give the call's outputs one CompiledFunctionBackward grad_fn whose VJP is `back`
    (gradients flow to `boundary`, the call's inputs that require grad, of `in_types`)."""
    out_types = [TensorType(tuple(t.shape), t.dtype) for t in grad_outs]
    fwd = _ForwardFn(out_types, [t._data for t in grad_outs], back)
    fwd.fills_retained = getattr(back, "fills_retained", frozenset())
    node = node_class("CompiledFunctionBackward")(
        "custom_call", freeze_attrs({"fn": fwd}), tuple(in_types), tuple(out_types),
        tuple(None if x._no_grad_view else edge_of(x) for x in boundary), (None,) * len(boundary), {})
    for k, t in enumerate(grad_outs):
        t._grad_fn, t._output_nr = node, k
        if t._retains_grad and k not in fwd.fills_retained:
            # retain_grad() inside the call: the engine fills its .grad at this node (as
            # Tensor.retain_grad registers it), with what flows into this output
            if node.retained is None:
                node.retained = {}
            node.retained[k] = weakref.ref(t)
    if isinstance(back, _BackwardFn):
        # A create_graph backward reads the call's inputs (_BackwardFn.expand): the node keeps
        # them as torch's nodes keep saved inputs (a leaf itself, else its array).
        for i, x in enumerate(boundary):
            node.saved[("in", i)] = SavedTensor(x._data, x._vbox, x if x._grad_fn is None else None)
        node._had_saved = bool(back.saved)
        back.node = weakref.ref(node)


def _freed_behind(trace: Trace, grad_outs: list) -> bool:
    """Would a backward through `grad_outs` reach values that a backward inside the call,
    without retain_graph, freed? True when every output was made by a freed instruction
    and one freed instruction behind them saved values for its VJP (torch raises there)."""
    if not trace.freed:
        return False

    def freed_producer(v):
        found = trace.grad_producer(v)
        return found[0] if found is not None and id(found[0]) in trace.freed else None
    stack = []
    for t in grad_outs:
        ins = freed_producer(t._sym)
        if ins is None:
            return False
        stack.append(ins)
    seen = set()
    while stack:
        ins = stack.pop()
        if id(ins) in seen:
            continue
        seen.add(id(ins))
        if trace.saves_for_backward(ins):
            return True
        stack += [p for p in (freed_producer(v) for v in differentiated_inputs(ins)) if p is not None]
    return False


def _stale_before_freed(trace: Trace, outputs: list, grad_outs: list, boundary: list):
    """For outputs every backward from which meets nodes an in-call backward freed: the saved
    value an in-place write inside the call replaced that the backward meets first, or None
    (see Trace.stale_saved)."""
    if not trace.stale:
        return None
    reached = _live_program(trace.program, outputs + [t._sym for t in grad_outs])
    instrs = [ins for ins in reached.instrs if id(ins) in trace.grad_instrs]
    wrt = [v for x in boundary for v in trace.held_values(x, trace.input_value(x))]
    return trace.stale_saved(instrs, active_values(instrs, [t._sym for t in grad_outs], wrt))


def _reaches_freed(trace: Trace, t) -> bool:
    """Would a backward from `t` reach an instruction whose saved values a backward inside
    the call freed (torch raises there), through any path of instructions recorded with grad?"""
    stack, seen = [t._sym], set()
    while stack:
        found = trace.grad_producer(stack.pop())
        if found is None or id(found[0]) in seen:
            continue
        ins = found[0]
        seen.add(id(ins))
        if id(ins) in trace.freed and trace.saves_for_backward(ins):
            return True
        stack += differentiated_inputs(ins)
    return False


def compile(fn=None, *, fullgraph: bool = False, dynamic=None, backend="inductor", mode=None, options=None,
            disable: bool = False):
    """`@fg.compile` / `fg.compile(fn)`: trace every call into one program and run it compiled.

    torch.compile's keyword arguments are accepted, so code written for it runs
    (`@fg.compile(fullgraph=True)` too): `disable=True` returns `fn` itself; the others
    choose among torch's backends and modes and change nothing here (kernels are
    shape-generic, as `dynamic=True` asks; a graph break is handled, not refused)."""
    if fn is None:
        return functools.partial(compile, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, disable=disable)
    if not callable(fn):
        raise NotCallableError(f"A callable function is expected, but {type(fn)} is provided.")
    if disable:
        return fn
    return CompiledFunction(fn)


class NotCallableError(TypeError, AssertionError):
    """fg.compile of something not callable: a TypeError, and torch.compile's AssertionError
    (with its text) for code written against torch."""
