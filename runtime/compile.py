"""fg.compile: trace each call into one SSA program, then run it compiled.

Pipeline per call (each step a named function whose output `explain()` prints):

    trace      run the Python function with a Trace installed (tracer/trace.py)
    collect    outputs = every symbolic tensor still alive + in-place writes
    autograd   if outputs require grad through inputs that require grad,
               emit the backward program now (ir.autodiff) for later
    simplify   CSE + DCE (ir/passes.py)
    execute    the tiered policy (runtime/tiered.py): a program whose kernels are
               ready runs them (runtime/executor.py); otherwise this call runs
               on the reference executor while the kernels compile on the
               background thread (runtime/background.py)
    write back materialise outputs, `.grad` of leaves, in-place updates; give
               outputs that need it a CompiledFunctionBackward grad_fn
               (runtime/compiled_backward.py)

Retracing every call is what makes arbitrary Python control flow correct;
caching happens below, keyed on the program's structure and shapes.
"""
from __future__ import annotations

import functools
import weakref

import numpy as np

from fusegrad.codegen.layout_copy import MIN_COPY_ELEMENTS, contiguous_copy, copy_into
from fusegrad.ir import (OPS, Builder, Program, TensorType, Value, active_values, backward as emit_backward,
                         differentiated_inputs)
from fusegrad.ir.backward_templates import structure_key
from fusegrad.ir.buffers import POOL
from fusegrad.ir.passes import simplify
from fusegrad.ir.printer import format_program
from fusegrad.ir.program import freeze_attrs
from fusegrad.ir.verifier import free_values
from fusegrad.tracer import Tensor, generator as random_generator, trace_state
from fusegrad.tracer.dispatch import READ_ONLY_MEMORY, _leads_nowhere, _memory_owner, _writable_memory, edge_of
from fusegrad.tracer.layout import replayed_view, views_an_expand, with_strides
from fusegrad.tracer.engine import backward as engine_backward, grad_memory, has_grad_layout
from fusegrad.tracer.forward_ad import DUAL_LEVEL, carries_tangents
from fusegrad.tracer.grad_mode import INFERENCE_MADE, check_inference_saved, is_inference_tensor
from fusegrad.tracer.node import _FREED_MSG, SavedTensor, node_class, saved_slots
from fusegrad.tracer.trace import Trace, TraceContext
from fusegrad.tracer.trace_writes import _vjp_runs
from fusegrad.tracer.trace_autograd import sum_groups

# The executor (program cache, fusion scheduling, code generation; not Numba, which loads
# with the first kernel) is imported with this module: every compiled call's first run
# needs it, and importing it there cost that call ~40 ms.
from . import background, executor, stats
from .backward_cache import keep as keep_backward, lookup
from .gc_pause import gc_paused
from .compiled_backward import (_NO_TENSOR, BackwardFn, ForwardFn, RaisingBackwardFn, forward_reach,
                                releasing_paths, saved_checks, shares_with_another, stale_by_cotangents)
from .in_place import MIN_INPUT_BYTES
from . import adaptive
from .tiered import COMPILED_KERNELS, Run, element_work, execute, live_program


# A call that breaks the graph and whose program is small runs every traced segment on
# the reference executor, op by op: tracing then only adds its own cost to what eager
# execution does (the tutorial's while-loop: 0.42 ms traced, 0.25 ms eager). After
# EAGER_AFTER such calls in a row with one argument signature (shapes, dtypes,
# requires_grad), calls with that signature run the function eagerly.
EAGER_AFTER = 2

_GC_PAUSED = gc_paused()      # one instance: it holds no state of its own

# Every live CompiledFunction: fg.clear_caches() forgets their decisions to run eagerly, which
# are cached results of measurements as the program cache holds compiled ones (after it, a
# call traces and compiles again, a miss, instead of counting a hit that compiles nothing).
_FUNCTIONS: "weakref.WeakSet[CompiledFunction]" = weakref.WeakSet()


def _forget_eager_decisions() -> None:
    for f in list(_FUNCTIONS):
        f._breaking = {}
        if f._trials is not None:
            f._trials = {}


stats.register_clearer(_forget_eager_decisions)


class CompiledFunction:
    """A function whose calls are traced into one program and run compiled."""

    def __init__(self, fn):
        self.fn = fn
        self.last_run: Run | None = None
        self.eager_calls = 0            # calls run eagerly (see EAGER_AFTER)
        self._breaking: dict = {}       # argument signature -> small graph-breaking calls in a row
        # argument signature -> adaptive.SpeedTrial (None: FUSEGRAD_ADAPTIVE=0 when it was made)
        self._trials: dict | None = {} if adaptive.enabled() else None
        self._tracing_forced = False
        _FUNCTIONS.add(self)
        # __name__, __doc__, __wrapped__...; not fn's __dict__: a compiled nn.Module's
        # attributes (training, parameters) are read live through __getattr__, never copied.
        functools.update_wrapper(self, fn, updated=())

    def __get__(self, obj, objtype=None):
        """A compiled function defined in a class body binds as a method (`@fg.compile def forward(self, x)`)."""
        return self if obj is None else BoundCompiledMethod(self, obj)

    def __getattr__(self, name):
        """Attributes this object lacks are the compiled callable's (a callable object's
        own attributes; a module is wrapped by fusegrad.nn.compiled.OptimizedModule instead)."""
        if name == "fn":            # not set yet (copy, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.fn, name)

    def __call__(self, *args, **kwargs):
        if trace_state.current() is not None:      # nested compile: inline into the outer trace
            return self.fn(*args, **kwargs)
        if DUAL_LEVEL[0] is not None and carries_tangents(list(args) + list(kwargs.values()), None):
            # (forward-mode AD's dual tensors: their tangents propagate through eager ops only)
            return self.fn(*args, **kwargs)
        for a in args:
            if isinstance(a, np.ndarray):       # (rare: most calls pass tensors, kept as given)
                args = tuple([_from_numpy(a) for a in args])
                break
        if kwargs:
            # (a keyword argument is an argument too: f(x=array) as f(array))
            kwargs = {name: _from_numpy(a) for name, a in kwargs.items()}
        signature = _signature(args) if self._breaking or self._trials is not None else None
        if signature is not None and self._breaking.get(signature, 0) >= EAGER_AFTER and not self._tracing_forced:
            # served by a cached decision, compiling nothing: a hit, run op by op
            self.eager_calls += 1
            stats.count(hits=1, reference_calls=1)
            return self.fn(*args, **kwargs)
        trial = start = None
        if self._trials is not None and not self._tracing_forced:
            trial = self._trials.get(signature)
            if trial is None:
                trial = self._trials[signature] = adaptive.SpeedTrial()
            if trial.runs_eagerly or trial.wants_eager_sample():
                # (measured faster eagerly, or being measured: runtime/adaptive.py) a hit, compiling nothing
                self.eager_calls += 1
                stats.count(hits=1)
                if trial.runs_eagerly:
                    return self.fn(*args, **kwargs)
                start = adaptive.clock()
                result = self.fn(*args, **kwargs)
                trial.add_eager(adaptive.clock() - start)
                return result
            if trial.wants_compiled_sample():
                start = adaptive.clock()
        # (why: runtime/gc_pause.py; gil_to_caller: the background compiles' Python work
        # gives the GIL back every 0.2 ms, not 5)
        with _GC_PAUSED, background.gil_to_caller():
            trace = Trace()
            trace.dry = self._tracing_forced        # explain's call leaves the caller's tensors as they were
            try:
                with TraceContext(trace):
                    result = self.fn(*args, **kwargs)
            except Exception:
                earlier = _finish_raised(trace)
                if earlier is not None:
                    raise earlier from None
                raise
            except BaseException:               # (KeyboardInterrupt: no more work than needed)
                _abandon(trace)
                raise
            run = Run()
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
        if trial is not None:
            clean = start is not None and not run.breaks and run.path == COMPILED_KERNELS and not background.pending()
            seconds = adaptive.clock() - start if clean else None
            work = sum(element_work(p) for p in (run.forward, run.backward) if p is not None) if clean else 0
            trial.add_compiled(seconds, timed=start is not None, element_work=work)
        if run.breaks and run.path == _SMALL_REFERENCE_PATH:
            signature = signature if signature is not None else _signature(args)
            self._breaking[signature] = self._breaking.get(signature, 0) + 1
        elif self._breaking:
            self._breaking.pop(signature if signature is not None else _signature(args), None)
        return result

    def runs_eagerly(self, *args) -> bool:
        """Whether calls with these arguments' signature now run the function eagerly (see
        EAGER_AFTER, and runtime/adaptive.py)."""
        signature = _signature(tuple(_from_numpy(a) for a in args))
        return self._breaking.get(signature, 0) >= EAGER_AFTER or self._measured_eager(signature) is not None

    def _measured_eager(self, signature):
        """The trial that found calls with `signature` faster eagerly, or None."""
        trial = self._trials.get(signature) if self._trials is not None else None
        return trial if trial is not None and trial.runs_eagerly else None

    def explain(self, *args, **kwargs) -> str:
        """Trace and run one call and describe it: programs, path, kernels, source, graph breaks.

        The call compiles its kernels before running (no background compile), so
        the kernels and their source are part of the description. It is a dry run:
        the caller's tensors keep their values, versions, history and `.grad`, and
        optimizers their state, as if it had not run (Python side effects of the
        function's own code, which tracing executes, are not undone)."""
        eager_before = self.runs_eagerly(*args)
        self._tracing_forced = True
        snapshots, breaking = _snapshot_states(), dict(self._breaking)
        try:
            with background.synchronous():
                self(*args, **kwargs)
        finally:
            self._tracing_forced = False
            _restore_states(snapshots)
            self._breaking = breaking       # (a dry run is no call: it never makes calls run eagerly)
        run = self.last_run
        parts = [f"# fg.compile({getattr(self.fn, '__name__', 'fn')}) — execution path: {run.path}",
                 f"background compiles pending: {background.pending()}"]
        measured = self._measured_eager(_signature(tuple(_from_numpy(a) for a in args)))
        if measured is not None:
            parts.append(f"calls with these argument shapes run eagerly (not traced): measured faster so "
                         f"({measured.summary()}; runtime/adaptive.py); this one was traced to explain it")
        elif eager_before or self.runs_eagerly(*args):
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
    """The state of every optimizer and random generator, which explain's dry run puts back."""
    return [(obj, obj.snapshot_state()) for obj in list(STATEFUL) + list(random_generator.LIVE)]


def _restore_states(snapshots: list) -> None:
    for obj, snapshot in snapshots:
        obj.restore_state(snapshot)


class BoundCompiledMethod:
    """A CompiledFunction defined in a class body, bound to an instance (`m.f` of
    `@fg.compile def f(self, x)`): calling it calls the compiled function with the instance
    first, as a method object does, and so do `explain` and `runs_eagerly` (a plain
    types.MethodType passed them on without the instance: `m.f.explain(x)` raised a
    missing-argument TypeError). Other attributes are the compiled function's."""

    __slots__ = ("__func__", "__self__")

    def __init__(self, compiled: "CompiledFunction", obj):
        self.__func__, self.__self__ = compiled, obj

    def __call__(self, *args, **kwargs):
        return self.__func__(self.__self__, *args, **kwargs)

    def explain(self, *args, **kwargs) -> str:
        """The compiled function's explain() of a call on this instance."""
        return self.__func__.explain(self.__self__, *args, **kwargs)

    def runs_eagerly(self, *args) -> bool:
        """The compiled function's runs_eagerly() of a call on this instance."""
        return self.__func__.runs_eagerly(self.__self__, *args)

    def __getattr__(self, name):
        return getattr(self.__func__, name)

    @property
    def __doc__(self):
        return self.__func__.__doc__

    @property
    def __signature__(self):
        """The function's signature without its first parameter, as a bound method's."""
        import inspect
        signature = inspect.signature(self.__func__.fn)
        return signature.replace(parameters=list(signature.parameters.values())[1:])

    def __eq__(self, other):
        return isinstance(other, BoundCompiledMethod) and self.__func__ is other.__func__ and \
            self.__self__ is other.__self__

    def __hash__(self):
        return hash((id(self.__func__), id(self.__self__)))

    def __repr__(self):
        return f"<bound method {getattr(self.__func__, '__qualname__', '?')} of {self.__self__!r}>"


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
        from fusegrad.tracer.creation import wrap_array
        t = wrap_array(a)
        if not t.dtype.is_floating_point:
            # (fg.grad's error for it names an array, as eagerly: runtime/transforms.py _as_input)
            t.__dict__["_from_array"] = True
        return t
    return a


def _finish_raised(trace: Trace) -> IndexError | None:
    """The function raised: finish what the call traced before the error, as torch had run
    it by then. The caller's tensors keep the writes made before the error, with their
    history and version bumps; gradients a backward in the call accumulated stay; tensors
    it made that outlive it (carried by the exception, or kept in a closure) get their
    values and history. Nothing compiles on this path: the programs run on the reference
    executor (Run.raised). Should finishing fail, what _abandon can keep is kept.

    Returns the IndexError of an op traced before the error, found as the ops run (an index
    the function computed, out of range: `b[b.argmin(1)]`, whose values tracing did not
    know): eagerly that op raised first, so the call raises it instead. Else None."""
    run = Run()
    run.raised = True
    try:
        _finish(trace, None, run)
    except IndexError as earlier:
        _abandon(trace)
        return earlier
    except Exception:
        _abandon(trace)
    return None


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


def _written_back_in_place(program: Program, inputs: list, mutated: list) -> dict | None:
    """Input index -> output index, for the caller's memory the call writes back that the
    kernel computing its final value may write directly (CompiledProgram.__call__: one
    array fewer, and no copy-back; an optimizer step's parameter update): memory that is
    a program input itself, C-contiguous and writable, of at least MIN_INPUT_BYTES,
    that no other input and no other written tensor overlaps (the executor then checks
    that nothing in the program reads it after that kernel)."""
    outputs = None
    donated = {}
    # (each array's memory owner once: an optimizer step of n parameters writes 2n-4n tensors,
    # and testing each against every input and every other write took 650 tests a call)
    inputs_over, loose_inputs = _arrays_by_owner(inputs)
    written_over, loose_written = _arrays_by_owner([a for a, _ in mutated])
    for array, tensor in mutated:
        if tensor._sym is None or array.nbytes < MIN_INPUT_BYTES or not array.flags.c_contiguous \
                or not array.flags.writeable:
            continue
        owner = _memory_owner_array(array)
        found = [k for k, a in inputs_over.get(id(owner), ()) if a is array]
        if len(found) != 1 or not _owns_memory(owner):
            continue                    # (memory of a buffer that is no array: not followed)
        # no other input and no other written array over its memory (nor over a buffer that
        # is no array and may hold it)
        if len(inputs_over[id(owner)]) > 1 or any(np.may_share_memory(a, owner) for _, a in loose_inputs) or \
                any(other is not array for _, other in written_over[id(owner)]) or \
                any(np.may_share_memory(other, owner) for _, other in loose_written):
            continue
        if outputs is None:
            outputs = {}
            for q, v in enumerate(program.outputs):
                outputs.setdefault(v.id, q)
        q = outputs.get(tensor._sym.id)
        if q is not None:
            donated[found[0]] = q
    return donated or None


def _arrays_by_owner(arrays: list) -> tuple:
    """({id of a memory owner: [(index, array) over it]}, [(index, array) over a buffer that
    is no array]) of `arrays`: arrays over an owner (_owns_memory) overlap arrays over
    another owner never, those over the same one maybe; the others need testing."""
    by_owner, loose = {}, []
    for k, a in enumerate(arrays):
        owner = _memory_owner_array(a)
        if _owns_memory(owner):
            by_owner.setdefault(id(owner), []).append((k, a))
        else:
            loose.append((k, a))
    return by_owner, loose


def _memory_owner_array(array: np.ndarray) -> np.ndarray:
    """The array that owns `array`'s memory (NumPy points a view's base at the owner; a
    base that is not an array, a buffer, leaves `array` standing for it)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _owns_memory(array: np.ndarray) -> bool:
    """Whether `array` (a _memory_owner_array) is the only array over its memory: one NumPy
    allocated, or a flat buffer of the pool (over a mapping of its own: ir/buffers.py)."""
    return array.base is None or POOL.holds(array)


try:                                    # (NumPy 2 moved it)
    from numpy.lib.array_utils import byte_bounds as _byte_bounds
except ImportError:                     # pragma: no cover - NumPy 1.x
    _byte_bounds = np.byte_bounds


class _DistinctMemory:
    """Hands each tensor a call returns memory of its own: the passes merge equal values and
    drop identities (`(x * 2, x * 2)`, `x.clone()`, `x ** 1`), so the executor may give two
    outputs one array, or an output an input's memory, where eagerly each is a new tensor (an
    in-place write to one then showed through the other, or through the caller's input).
    Such an output gets a copy. Byte ranges are compared among arrays of one memory owner,
    and worked out only once a second array of that owner comes: most outputs are fresh
    arrays of owners of their own (a training step's inputs are dozens of parameters, state
    tensors and 0-d numbers, whose bounds cost 2-3 us each)."""

    def __init__(self, inputs: list):
        self.given: dict = {}           # value id -> the array its tensors hold
        # id of the array owning the memory -> the arrays (or their byte ranges, once
        # compared) handed out over it: the call's inputs, then its outputs
        self.held: dict = {}
        for a in inputs:
            if a.size:
                self.held.setdefault(id(_memory_owner_array(a)), []).append(a)

    def own(self, array: np.ndarray, value_id: int) -> np.ndarray:
        """`array` (of value `value_id`), or a copy of it where its memory was handed out
        already for another value (tensors of one value, `y.data = z`, share it)."""
        given = self.given.get(value_id)
        if given is not None or not array.size:
            return array if given is None else given
        owner = id(_memory_owner_array(array))
        held = self.held.get(owner)
        if held is None:
            self.held[owner] = [array]
        else:
            low, high = _byte_bounds(array)
            for k, other in enumerate(held):
                if type(other) is np.ndarray:
                    other = held[k] = _byte_bounds(other)
                if low < other[1] and other[0] < high:
                    array = array.copy()
                    self.held[id(array)] = [array]
                    break
            else:
                held.append((low, high))
        self.given[value_id] = array
        return array

    def replace(self, value_id: int, array: np.ndarray) -> np.ndarray:
        """Value `value_id`'s tensors hold `array` now (a row-major copy of what `own` gave):
        views of it made in the call are views of this memory (see _share_memory)."""
        self.given[value_id] = array
        return array


def _aliases_any(array: np.ndarray, others) -> bool:
    """Whether `array` may share memory with one of `others`."""
    return any(np.may_share_memory(array, other) for other in others)


def _writable(array: np.ndarray, tensor=None) -> np.ndarray:
    """Where a write-back goes: `array`, or for an expand's read-only view of writable memory
    (an argument `x.expand(2, 3)` filled in the call) a writable view of that memory, so
    every alias gets the value, as eagerly."""
    if array.flags.writeable:
        return array
    if not (0 in array.strides or views_an_expand(tensor)):
        raise RuntimeError(READ_ONLY_MEMORY)      # (a read-only array from outside: fg.from_numpy)
    memory = _writable_memory(array)
    return array if memory is None else memory


def _row_major(array: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of `array`, made in tiles when it is large and laid out across
    (a transposed result of a sunk permute: NumPy's row-by-row copy of a [1024, 4096] float32
    transpose took 34 ms, the tiled one ~5: codegen/layout_copy.py)."""
    return contiguous_copy(array) if array.size >= MIN_COPY_ELEMENTS else np.array(array, order="C", copy=True)


def _finish(trace: Trace, result, run: Run) -> None:
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
    program = live_program(trace.program, outputs)

    # Gradients that will flow back into this call from the eager engine: from its
    # symbolic outputs, and from the caller's tensors it wrote in place with history
    # (eagerly `x.add_(w)` makes x a non-leaf whose grad_fn is the in-place op's).
    written = _written_with_history(trace, mutated)
    # (A view made under no_grad of a tensor that requires grad is a leaf without a gradient.)
    # (nor one whose base was written since: torch will not regenerate its history, its use raises)
    grad_outs = [t for t in alive if t._requires_grad and t._data is None and not t._traced_leaf
                 and not (t._no_grad_view and (t._rebased or trace.grad_producer(trace.through_grafts(t._sym)) is None))] \
        + written       # (a write through its .data grafts the new value onto the history it has: none)
    boundary = list(trace.leaf_tensors.values()) + list(trace.boundary.values())
    # leaves made inside the call by requires_grad_() (their outputs' gradients reach them too)
    boundary += [t for t in (ref() for ref in trace.new_leaves)
                 if t is not None and t._sym is not None and t._requires_grad and t.__dict__.get("_leaf_value")]
    # (not a leaf fg.grad made for an argument, once the transform returned: at the caller's
    # level, torch.func's, that argument needs no gradient; see engine._transform_leaf)
    boundary = [t for t in boundary if not t.__dict__.get("_transform_done", False)]
    # The call's node's edges: each input's node as the call read it, before the call's writes
    # move the version counters (a view whose base the call wrote kept the node it had: torch's
    # node took it at the op, and a part of split would raise if asked again)
    edges = [_boundary_edge(t) for t in boundary] if grad_outs else []
    backward = None
    # (outputs recorded with grad, whatever the mode now; a leaf made in the call that died
    # there, a local `(x + 1).detach().requires_grad_()`, still gives the outputs built from it a
    # backward, whose gradient reaches nothing the caller can see)
    gradients_may_flow = bool(grad_outs and (boundary or trace.new_leaves))
    freed = gradients_may_flow and _freed_behind(trace, grad_outs)
    met_stale_first = _stale_before_freed(trace, outputs, grad_outs, boundary) if freed else None
    # per output, where only some are behind values an in-call backward freed (the others
    # keep their graph): a later backward from those raises (BackwardFn.freed_outputs)
    freed_each = tuple(_reaches_freed(trace, t) for t in grad_outs) if gradients_may_flow and trace.freed \
        and not freed else None
    no_derivative = grads = keyed = cached = ranks = unread = None   # (no_derivative: torch's error for a backward through an op without one)
    no_derivative_class = RuntimeError
    if gradients_may_flow and not freed:
        b = Builder(Program())
        seeds = [b.input(t._sym.type) for t in grad_outs]
        # Differentiated: what every output that requires grad depends on (a view or detach
        # made from another output's memory is not a program output, but its op is on the path).
        reached = live_program(trace.program, outputs + [t._sym for t in grad_outs])
        instrs = [ins for ins in reached.instrs if id(ins) in trace.grad_instrs]
        groups = [trace.held_values(x, trace.input_value(x)) for x in boundary]
        wrt, out_values = [v for group in groups for v in group], [t._sym for t in grad_outs]
        # (the active set is needed here only when the call wrote something in place; it
        # includes the paths to leaves made in the call that died there, whose nodes torch's
        # backward runs too, checking what they saved)
        gone = _gone_leaves(trace) if trace.stale else ()
        reach = wrt + gone if trace.stale else None
        active = active_values(instrs, out_values, reach) if trace.stale else None
        # An output that other outputs are computed from (y in `return (y * y).sum(), y`): its
        # total gradient, its own cotangent plus what flows back into it from the others, is an
        # output of the backward too, for its retain_grad() (BackwardFn.fill_retained)
        # So too an output written through its .data (or under no_grad) after others read it:
        # its value is a graft onto its history, and its total is what reaches that history.
        history = [trace.through_grafts(v) for v in out_values]
        read = {v.id for ins in instrs for v in ins.inputs} if len(grad_outs) > 1 else ()
        inner = [k for k, t in enumerate(grad_outs) if t._sym.id in read or history[k] is not t._sym]
        # The plain case's backward program is kept by its structure (runtime/backward_cache.py):
        # nothing rewritten in place, one value a tensor, no grafts and no totals of outputs
        keyed = structure_key(instrs, out_values, wrt) if not (trace.stale or trace.read_as or inner) and \
            all(len(group) == 1 for group in groups) else None
        cached = lookup(keyed[0]) if keyed is not None else None
        if cached is None:
            try:
                emitted = emit_backward(b, instrs, out_values, seeds, wrt + [history[k] for k in inner],
                                        active=active, reads=trace.vjp_reads(instrs))
                grads = sum_groups(b, emitted[:len(wrt)], groups)
                totals = emitted[len(wrt):]
            except RuntimeError as exc:
                if not getattr(exc, "no_derivative", False):
                    raise
                # (x // 2 on a tensor that requires grad: torch raises when a backward runs, not
                # here; a value replaced in place that the backward reads before that op raises first)
                no_derivative, no_derivative_class, grads = str(exc), type(exc), None
                if active is not None:
                    met_stale_first = trace.stale_saved(instrs, active)
    if cached is not None:
        totals_at, stale, met_at = [], {}, None
        saved = [keyed[1][slot] for slot in cached[1]]      # (this call's values the program reads)
        if INFERENCE_MADE[0]:
            _refuse_saved_inference(trace, saved)
        backward = (cached[0], saved, list(cached[2]))
        ranks, unread = cached[3], cached[4]
    elif grads is not None:
        b.program.outputs = [g for g in grads if g is not None]
        totals_at = []          # (index among grad_outs, position among the backward's outputs)
        for k, g in zip(inner, totals):
            if g is not None:
                totals_at.append((k, len(b.program.outputs)))
                b.program.outputs.append(g)
        # (the paths to leaves made in the call that died there only when a backward() without
        # inputs runs them: BackwardFn.idle_stale below; autograd.grad and backward(inputs=)
        # stop where torch's engine does)
        stale, met_at = {}, None
        if active is not None:
            reaching = active_values(instrs, out_values, wrt)
            # (torch's nodes saved nothing for the gradients of views made under no_grad)
            nowhere = {v.id for v in _leading_nowhere(trace, boundary, groups)} or None
            stale = stale_by_cotangents(trace, instrs, out_values, wrt, reaching, leads_nowhere=nowhere)
            if stale:
                # (where a backward meets each saved value's check: a value changed after the
                # call whose node comes first raises before the stale one, as torch's engine
                # meets them)
                met_at = trace.checked_at(instrs, reaching, nowhere)
        bwd = simplify(b.program)
        saved = free_values(bwd)
        unread = _saved_unread(instrs, out_values, wrt, saved)
        if unread:
            # (outputs of the backward that nothing uses, BackwardFn.run takes the gradients
            # before them: so they are saved, and so version-checked, as torch's node saved them)
            bwd.outputs = bwd.outputs + [v for v, _ in unread]
            saved = free_values(bwd)
            position = {v.id: k for k, v in enumerate(saved)}
            unread = tuple((position[v.id], reach) for v, reach in unread)
        # (worked out once for a kept program, and where the stale scan did it already; None
        # otherwise: the changed value checked first is the first saved)
        ranks = _check_ranks(trace, instrs, out_values, wrt, saved, met_at) \
            if keyed is not None or met_at is not None else None
        if INFERENCE_MADE[0]:
            _refuse_saved_inference(trace, saved)
        backward = (Program(seeds + saved, bwd.instrs, bwd.outputs), saved, [g is not None for g in grads])
        if keyed is not None:
            keep_backward(keyed[0], backward[0], saved, keyed[1], backward[2], ranks, unread)
    if backward is not None:
        outputs = outputs + [v for v in saved if v.id not in seen]
        program = live_program(trace.program, outputs)
        # What a create_graph backward re-emits (BackwardFn.expand): not where the call wrote
        # memory (its inputs now hold later values) or a leaf held several values.
        if not mutated and all(len(group) == 1 for group in groups):
            # (with the instructions recorded off the gradient path: detach(), .data, no_grad)
            forward_form = (program, trace.inputs, trace.input_arrays, [group[0] for group in groups],
                            frozenset(id(ins) for ins in program.instrs if id(ins) not in trace.grad_instrs))
        else:
            forward_form = None

    run.forward = program
    run.breaks = trace.breaks
    run.backward_start = trace.backward_start if trace.backward_start is not None and \
        trace.backward_start < len(program.instrs) else None
    donated = _written_back_in_place(program, trace.input_arrays, mutated) if mutated and not trace.dry else None
    arrays = execute(program, trace.input_arrays, trace.known, run, donated)
    by_id = {v.id: a for v, a in zip(program.outputs, arrays)}
    if trace.laid_out or trace.value_layouts:        # (forward_layouts' values are in laid_out too)
        _lay_out_outputs(trace, by_id)

    written_arrays = [array for array, tensor in mutated if tensor._sym is not None] if mutated else ()
    # An array owning its memory (no base) overlaps a written one only if it is that one's
    # owner: the full overlap test runs only for views and for those (a training step's
    # outputs are fresh arrays, and it writes every parameter and optimizer state back)
    owners = {id(_memory_owner_array(w)) for w in written_arrays} if written_arrays else ()
    distinct = _DistinctMemory(trace.input_arrays)
    for t in alive:
        if id(t) not in shared:
            array = distinct.own(by_id[t._sym.id], t._sym.id)
            if array is not by_id[t._sym.id]:
                by_id[t._sym.id] = array        # (views of it and its saved value: this memory)
            if t._layout is None and t._base is None and not array.flags.c_contiguous:
                # a value the trace laid out row-major (x.t().contiguous().tanh()) that a sunk
                # permute left transposed: row-major, as torch's (its view(-1) must work)
                array = by_id[t._sym.id] = distinct.replace(t._sym.id, _row_major(array))
            t._data = array
            if written_arrays and (array.base is not None or id(array) in owners) and \
                    _aliases_any(array, written_arrays):
                # The executor may hand out an input's own memory for a value that is a copy
                # eagerly (a sum over one element is its operand, reshaped); the write-back of
                # that input below would show through it
                t._data = t._data.copy()
    for home in shared.values():
        # (a detach or view that outlives the call of a value no returned tensor holds: its
        # memory is its own too, `(x * 2, (x * 2).detach())`)
        if home[1] is not None and home[1].id in by_id:
            root = distinct.own(by_id[home[1].id], home[1].id)
            if any(stride == 0 and size > 1 for stride, size in zip(root.strides, root.shape)):
                # a value no view op made, which the program computed as a broadcast (x ** 0 is
                # an expand of 1): eagerly it is memory of its own, which its views share
                root = distinct.replace(home[1].id, np.ascontiguousarray(root))
            by_id[home[1].id] = root
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
        if shares_with_another(grad, by_memory):
            # the program gave two equal values one array (two leaves' gradients of (a + b).mean()):
            # an accumulation into one .grad would change the other
            grad._data = grad._data.copy() if leaf._data is None else grad_memory(grad._data, leaf._data)
        elif leaf._data is None or leaf._retains_grad:
            # a leaf made inside the call (its own layout is row-major), a retained non-leaf
            # (torch's hook stores a contiguous clone)
            if not (grad._data.flags.writeable and grad._data.flags.c_contiguous):
                grad._data = np.ascontiguousarray(grad._data) if grad._data.flags.writeable else grad._data.copy()
        elif not has_grad_layout(grad._data, leaf._data):
            grad._data = _row_major(grad._data) if leaf._data.flags.c_contiguous else grad_memory(grad._data, leaf._data)
        by_memory.setdefault(id(_memory_owner(grad._data)), []).append(grad)
    saved_arrays, unversioned = _saved_arrays(trace, backward[1], by_id, mutated) if backward is not None \
        else (None, None)
    written_back = []
    for array, tensor in mutated:
        if tensor._sym is not None:
            if not trace.dry:       # (a dry run, explain, leaves the caller's memory as it was)
                value = by_id[tensor._sym.id]
                if value is not array:          # (else a kernel wrote it there: _written_back_in_place)
                    np.copyto(_writable(array, tensor), value, casting="unsafe")
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
            back = BackwardFn(bwd_program, saved_arrays, in_types, present, run)
            if cached is not None:
                back.saved_values = saved
            back.totals = [(weakref.ref(grad_outs[k]), position) for k, position in totals_at]
            back.fills_retained = frozenset(k for k, _ in totals_at)
            promoted = trace.promoted_operands(saved)
            back.checks = saved_checks(back.saved, grad_outs, alive + boundary + [t for _, t in mutated],
                                        trace.lifted_tensors, promoted, unversioned,
                                        lambda: _saved_as_inputs(trace, instrs, out_values, wrt),
                                        [trace.current_view_counter(v) or trace.current_alias_counter(v)
                                         or trace.reader_counter(v) or trace.read_as_counter(v) for v in saved],
                                        [trace.lifted_from.get(v.id) for v in saved])
            if trace.no_grad_view_values or trace.no_grad_view_reads or trace.part_values:
                back.checks = _no_grad_view_checks(back.checks, saved, trace)
            unsaved = _unsaved_no_grad_view_checks(trace, saved)
            if unsaved:
                back.unsaved_from = len(saved)
                back.checks = back.checks + [(box, box[0], _NO_TENSOR, where, None, len(saved) + j)
                                             for j, (_, box, where) in enumerate(unsaved)]
            back.releasing = releasing_paths(trace, instrs, out_values, wrt)
            if len(grad_outs) > 1:
                back.forward_reach = forward_reach(instrs, out_values, groups)
            back.promoted = [(k, weakref.ref(t)) for k, (t, view_shape) in promoted.items() if view_shape is None]
            back.stale = stale
            back.met_at = met_at
            back.check_ranks = ranks
            back.saves_numbers_only = _saves_only_numbers(trace, instrs, saved)
            back.unread_reach = unread or None
            back.idle_stale = _idle_stale(trace, instrs, out_values, gone, boundary, groups)
            if back.checks:
                back.idle_checks = _idle_checks(trace, instrs, out_values, wrt, gone, boundary, groups)
            if met_at is not None or back.idle_checks is not None:
                back.saved_ids = [v.id for v in saved] + [v.id for v, _, _ in unsaved]
            back.forward = forward_form
            if forward_form is not None:
                back.read_versions = [(t._vbox, t._vbox[0]) for t in trace.lifted_tensors]
            else:
                # (whether a saved value depends on an input through ops a gradient flows through)
                reached = active_values(program.instrs, saved, wrt)
                back.reads_inputs = any(v.id in reached for v in saved)
            if freed_each is not None and any(freed_each):
                back.freed_outputs = freed_each
        else:
            # A backward inside the call already freed what these outputs' backward needs (a
            # training step returning its loss), or it runs through an op without a derivative:
            # their grad_fn raises, as torch's would.
            back = RaisingBackwardFn(in_types, no_derivative or _FREED_MSG, met_stale_first, no_derivative_class)
        _attach_backward(grad_outs, boundary, edges, in_types, back)
    else:
        # No gradient can flow back into the call: its outputs are plain values (except
        # leaves made inside it, which require grad as they would eagerly, and views made
        # under no_grad of a tensor that requires grad, which require grad as their base)
        for t in alive:
            if not t._traced_leaf and not t._no_grad_view:
                t._requires_grad = False
        for t in written:
            # a caller's tensor written with a value whose history lies inside the call only
            # (fg.grad's argument: a closed-over running statistic updated from it) is no leaf
            # that requires grad afterwards (eagerly its node leads to the transform's dead
            # leaf; its later uses compute the same gradients)
            if t._grad_fn is None:
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
    # First the layouts the values were made with, also of values whose tensor died in the
    # call (the memory of a detach() or .data of one, which eagerly is that tensor's:
    # (x.t() * 2).detach() has strides (1, 3)); then the tensors' own, which a later rule
    # may have changed (keep_row_major); then the gradients' (Trace._lay_out_gradients).
    layouts = dict(trace.forward_layouts)
    for ref in trace.laid_out:
        t = ref()
        if t is not None and t._sym is not None and t._layout is not None:
            layouts[t._sym.id] = t._layout
    layouts.update(trace.value_layouts)
    for v_id, strides in layouts.items():
        array = by_id.get(v_id)
        if array is not None and array.ndim == len(strides):
            by_id[v_id] = with_strides(array, strides, copy_into)


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
    call is caught by that tensor's version counter, as torch's is (see saved_checks).
    Any other saved array that is (or overlaps) memory the call writes back is copied
    first: the backward needs the value the call read (eagerly `y.mul_(x)` saves y's
    original value), not what the write-back puts there. An identity alias of memory the
    call read and did not write (`x * x.detach()`) is that memory (Trace.alias_memory).
    Returns the arrays and the indices of those read through a `.data` (unversioned: no
    version check, saved_checks)."""
    final = {t._sym.id: array for array, t in mutated if t._sym is not None}
    # (read through a tensor that differs in requires_grad, memory's value is an identity alias)
    final.update({w.id: final[v_id] for (v_id, _), w in trace.aliases.items() if v_id in final})
    written = [array for array, t in mutated if t._sym is not None]
    # (and through the identity its other readers read a write's value by: a.data.sub_(1) after
    # a * a saved a, which torch's node keeps as a's memory, checked by a's counter; that memory
    # itself where the writer's last value is another, re-derived from its base's after the
    # write, while no later write reached it)
    for w_id, (v_id, memory, writes_before) in trace.memory_identities.items():
        if v_id in final:
            final[w_id] = final[v_id]
        elif any(memory is array for array in written) and not any(
                np.may_share_memory(memory, later) for later in trace.written_arrays[writes_before:]):
            final[w_id] = memory
    arrays, unversioned = [], set()
    for v in saved:
        array, memory, versioned = by_id[v.id], final.get(v.id), True
        if memory is None and final and v.id in trace.view_values:
            memory = _view_of_final(trace.view_values[v.id], final, () if v.id in trace.stale else written)
        if memory is None and trace.aliases:
            memory, versioned = trace.alias_memory(v) or (None, True)
        if v.id in trace.own_counters:
            unversioned.add(len(arrays))        # (an _unsafe_view's: kron's views of its operands)
        if memory is not None and memory.shape == array.shape and memory.dtype == array.dtype:
            if not versioned:
                unversioned.add(len(arrays))
            arrays.append(memory)
        elif written and any(np.may_share_memory(array, w) for w in written):
            arrays.append(array.copy())
        else:
            arrays.append(array)
    return arrays, unversioned


def _view_of_final(entry: tuple, final: dict, written: list):
    """A saved view's value as a view of the memory the call leaves (`entry`: the view's
    (root, chain) in Trace.view_values; `final`: value id -> memory holding that value;
    `written`: the caller's memory the call writes back, empty for a value a write replaced),
    or None where its root is neither such a value nor such memory. (t = x.unsqueeze(0)
    written through, then t * t: torch saves t, a view of x's memory, so a change of x after
    the call is caught. A view made of the caller's memory, `x[0]` after
    `x.data[0].fill_(1)`, reads that memory: a `.data` write later in the call re-derives it
    (Trace.read_as), so one that no write replaced is the memory's final content; one that a
    write replaced is what an in-place op's node saved, a clone of the old value.)"""
    root, chain = entry
    if isinstance(root, np.ndarray):
        return replayed_view(root, chain) if any(root is array for array in written) else None
    memory = final.get(root.id) if isinstance(root, Value) else None     # (a stale marker: none)
    if memory is None:
        return None
    return replayed_view(memory, chain)     # (None where NumPy cannot: the computed copy is kept)


def _written_with_history(trace: Trace, mutated: list) -> list:
    """The caller's tensors the call wrote in place by an op recorded with grad: after the
    call they are outputs of it (torch gives them the in-place op's grad_fn). Not a leaf: one
    that requires grad can be written only under no_grad or through memory it shares (its
    detach()), and stays a leaf, as eagerly."""
    leaves = {id(t) for t in trace.leaf_tensors.values()}
    # (nor a view made under no_grad: torch refuses its writes with grad enabled, so it gains no
    # history from the call; a view of its base re-derived after a write of the base, then
    # written under no_grad, had a producer all the same, and the call's node became its grad_fn)
    return [t for _, t in mutated
            if t._requires_grad and id(t) not in leaves and t._sym is not None and not t._no_grad_view
            and trace.grad_producer(t._sym) is not None]


def _boundary_edge(t):
    """The edge of the call's node to `t`, one of the call's inputs that require grad: the
    caller's node of `t` as it was when the call read it (no refresh: its base written in the
    call since made the trace raise where torch regenerates nothing), or None (dispatch's
    _leads_nowhere: a view made under no_grad without a node of its own; a view of one made
    with grad on, `s.t()`, has its TBackward0, which torch's engine runs)."""
    if t._no_grad_view:
        return None if t._grad_fn is None else (t._grad_fn, t._output_nr)
    return edge_of(t)


def _attach_backward(grad_outs: list, boundary: list, edges: list, in_types: list, back) -> None:
    """Give the call's outputs one CompiledFunctionBackward grad_fn whose VJP is `back`
    (gradients flow to `boundary`, the call's inputs that require grad, of `in_types`, along
    `edges`: _boundary_edge of each, taken before the call's writes)."""
    out_types = [TensorType(tuple(t.shape), t.dtype) for t in grad_outs]
    fwd = ForwardFn(out_types, [t._data for t in grad_outs], back)
    fwd.fills_retained = getattr(back, "fills_retained", frozenset())
    node = node_class("CompiledFunctionBackward")(
        "custom_call", freeze_attrs({"fn": fwd}), tuple(in_types), tuple(out_types),
        tuple(edges), (None,) * len(boundary), {})
    for k, t in enumerate(grad_outs):
        t._grad_fn, t._output_nr = node, k
        if t._retains_grad and k not in fwd.fills_retained:
            # retain_grad() inside the call: the engine fills its .grad at this node (as
            # Tensor.retain_grad registers it), with what flows into this output
            if node.retained is None:
                node.retained = {}
            node.retained[k] = weakref.ref(t)
    if isinstance(back, BackwardFn):
        # A create_graph backward reads the call's inputs (BackwardFn.expand): the node keeps
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


def _refuse_saved_inference(trace: Trace, saved: list) -> None:
    """torch's error where the call's backward saves an inference tensor it was given (made
    inside inference_mode): eagerly the op that saves it raises; here the call does."""
    inference = {id(x._data): x for x in trace.lifted_tensors if x._data is not None and is_inference_tensor(x)}
    if not inference:
        return
    by_value = {v.id: inference[id(a)] for v, a in zip(trace.inputs, trace.input_arrays) if id(a) in inference}
    for (v_id, _), alias in trace.aliases.items():
        if v_id in by_value:
            by_value[alias.id] = by_value[v_id]
    for v in saved:
        check_inference_saved(by_value.get(v.id))


def _saved_as_inputs(trace: Trace, instrs: list, out_values: list, wrt: list) -> set:
    """The indices of the outputs (their values `out_values`) that an op of the call saves as
    one of its inputs (`b = a * a` saves a; `a * 2` saves only the 2), as torch's node does
    (runtime/compiled_backward.saved_checks)."""
    positions = {v.id: k for k, v in enumerate(out_values)}
    active = active_values(instrs, out_values, wrt)
    found = set()
    for ins in instrs:
        read = [i for i, v in enumerate(ins.inputs) if v.id in positions]
        if read:
            needs = tuple(v.id in active for v in ins.inputs)
            saved_inputs = saved_slots(ins.op, ins.attrs, tuple(v.type for v in ins.inputs), needs,
                                       trace.grad_instrs.get(id(ins)))[0]
            found.update(positions[ins.inputs[i].id] for i in read if i in saved_inputs)
    return found


def _gone_leaves(trace: Trace) -> list:
    """The values of the leaves made in the call by requires_grad_() that died there (a local
    `v.detach().requires_grad_()`; not fg.grad's own leaves): torch's graph holds their
    AccumulateGrad, so a backward from the outputs runs the nodes on the way to them."""
    return [state["_leaf_value"] for ref, state in zip(trace.new_leaves, trace.new_leaf_states)
            if ref() is None and "_leaf_value" in state and not state.get("_transform_done", False)]


def _saves_only_numbers(trace: Trace, instrs: list, saved: list) -> bool:
    """Whether the backward reads only Python numbers that torch's nodes keep as Scalar
    attributes (add's and sub's alpha, lerp's number weight: Trace.never_freed), which no
    backward frees: a second backward through the call then runs, as torch's does."""
    if not trace.never_freed or not saved:
        return False
    ids = {v.id for v in saved}
    if not ids <= {v.id for v in trace.inputs}:
        return False
    for ins in instrs:
        numbers = OPS[ins.op].extra.get("scalar_attributes", ()) if id(ins) in trace.never_freed else ()
        if any(v.id in ids and k not in numbers for k, v in enumerate(ins.inputs)):
            return False
    return True


def _saved_unread(instrs: list, out_values: list, wrt: list, read: list) -> list:
    """The values torch's nodes save whatever their formulas read (OpDef.extra["always_saves"]:
    a pool's input, layer_norm's bias, of which a backward reads only the shape) and this
    backward program does not read (`read`), of the instructions whose VJP the backward runs:
    (value, the indices of the outputs whose backward runs that VJP) pairs."""
    candidates = [ins for ins in instrs if "always_saves" in OPS[ins.op].extra]
    if not candidates:
        return []
    have, active, unread = {v.id for v in read}, None, []
    for ins in candidates:
        slots = OPS[ins.op].extra["always_saves"]
        values = [ins.inputs[k] if kind == "in" else ins.outputs[k] for kind, k in slots]
        if all(v.id in have for v in values):
            continue
        if active is None:
            active = active_values(instrs, out_values, wrt)
        if _vjp_runs(ins, active):
            reach = _outputs_reached(instrs, ins, out_values)
            for v in values:
                if v.id not in have:
                    have.add(v.id)
                    unread.append((v, reach))
    return unread


def _outputs_reached(instrs: list, ins, out_values: list) -> frozenset:
    """The indices of the outputs computed from `ins`'s results through `instrs`."""
    live, after = {v.id for v in ins.outputs}, False
    for other in instrs:
        if after and any(v.id in live for v in other.inputs):
            live.update(v.id for v in other.outputs)
        after = after or other is ins
    return frozenset(k for k, v in enumerate(out_values) if v.id in live)


def _check_ranks(trace: Trace, instrs: list, out_values: list, wrt: list, saved: list, met_at: dict | None):
    """Per saved value, where a backward meets the node that checks it (Trace.checked_at: the
    larger, the sooner; None where no node does): of several saved tensors changed after the
    call, torch's engine raises for the one it unpacks first (BackwardFn._check_versions)."""
    if met_at is None:
        met_at = trace.checked_at(instrs, active_values(instrs, out_values, wrt))
    return tuple([met_at.get(v.id) for v in saved])


def _stale_before_freed(trace: Trace, outputs: list, grad_outs: list, boundary: list):
    """For outputs every backward from which meets nodes an in-call backward freed: the saved
    value an in-place write inside the call replaced that the backward meets first, or None
    (see Trace.stale_saved)."""
    if not trace.stale:
        return None
    reached = live_program(trace.program, outputs + [t._sym for t in grad_outs])
    instrs = [ins for ins in reached.instrs if id(ins) in trace.grad_instrs]
    wrt = [v for x in boundary for v in trace.held_values(x, trace.input_value(x))]
    return trace.stale_saved(instrs, active_values(instrs, [t._sym for t in grad_outs], wrt))


def _idle_stale(trace: Trace, instrs: list, out_values: list, gone: list, boundary: list, groups: list):
    """BackwardFn.idle_stale: what a backward() that needs no gradient of the call's inputs
    still checks, as torch's engine runs every node it reaches. On the paths to leaves the call
    made that died there, every saved value; on those to a view made under no_grad (an input
    whose edge leads nowhere, `groups`: the values each of `boundary` held; or one made in the
    call), what the nodes saved for the gradients of their other inputs, and their outputs
    (relu's result written over by a copy_: torch raises)."""
    sources = []
    if gone:
        sources.append(stale_by_cotangents(trace, instrs, out_values, gone, active_values(instrs, out_values, gone)))
    views = _leading_nowhere(trace, boundary, groups)
    if views and trace.stale:
        sources.append(stale_by_cotangents(trace, instrs, out_values, views, active_values(instrs, out_values, views),
                                           leads_nowhere={v.id for v in views}))
    sources = [found for found in sources if found]
    if not sources:
        return None
    # (each a map from the subsets of outputs given cotangents, kept lazy where a call has many
    # outputs: a copy of its entries would hold only the one for all of them, seed 221577)
    return sources[0] if len(sources) == 1 else _FirstStale(sources)


class _FirstStale:
    """BackwardFn.idle_stale from several maps like BackwardFn.stale (the paths to leaves the
    call made that died there, then those to views made under no_grad): for a subset of the
    outputs, the first map's stale value that is not None."""

    def __init__(self, sources: list):
        self.sources = sources

    def get(self, given, default=None):
        # (`default` unused: each map falls back to its own entry for all the outputs)
        for source in self.sources:
            found = source.get(given, source.get(None))
            if found is not None:
                return found
        return None


def _leading_nowhere(trace: Trace, boundary: list, groups: list) -> list:
    """The values whose gradient edges lead nowhere: those the call's inputs that are views
    made under no_grad held (`groups`: the values each of `boundary` held), and the views made
    in the call under no_grad (Trace.no_grad_view_values)."""
    return [v for t, group in zip(boundary, groups) if _leads_nowhere(t) for v in group] + \
        list(trace.no_grad_view_values.values())


def _no_grad_view_checks(checks: list, saved: list, trace: Trace) -> list:
    """`checks` (saved_checks) with those of saved views made under no_grad (in the call, or
    read from one: Trace.no_grad_view_where) raising torch's rebased-view error: its node saved
    the view, and unpacking it regenerates the view's history, which raises first."""
    marked = []
    for box, version, ref, where, shape, k in checks:
        view = trace.no_grad_view_where(saved[k])
        marked.append((box, version, ref, where if view is None else view, shape, k))
    return marked


def _unsaved_no_grad_view_checks(trace: Trace, saved: list) -> list:
    """(value, its version counter, the `where` its check raises with) of each view made under
    no_grad in the call that the backward program does not read: torch's nodes may still save
    it (`v ** 2` saves v though v's edge leads nowhere, so no gradient of the call needs it),
    and unpacking it after its base changed raises the rebased-view error. BackwardFn checks
    them where a backward meets such a node (idle_checks' `met`)."""
    if not trace.no_grad_view_values:
        return []
    read = {v.id for v in saved}
    return [(v, trace.no_grad_view_counters[v.id], trace.no_grad_view_where(v))
            for v in trace.no_grad_view_values.values() if v.id not in read]


def _idle_checks(trace: Trace, instrs: list, out_values: list, wrt: list, gone: list, boundary: list,
                 groups: list):
    """BackwardFn.idle_checks, for a call whose inputs include views made under no_grad (a
    leaf without a gradient of its own: its edge leads nowhere), or that made such views or
    leaves that died there; else None. Per outputs given cotangents (None: all), which saved
    values torch's nodes inside the call check when a backward() runs them (Trace.checked_at:
    a node saved nothing for the gradient of such a view, `x @ v` saves v, `v * v` nothing,
    relu(v) its result), also where no gradient reaches anything (the call's own node is then
    idle: it computes nothing, but checks these), and which the backward program reads that
    torch's nodes did not save. Worked out when first asked (it keeps the trace's instructions
    for that)."""
    nowhere = _leading_nowhere(trace, boundary, groups)
    if not nowhere and not gone:
        return None
    views = {v.id for v in nowhere}
    # (the paths to the views made in the call, which no input holds, are followed too)
    targets = wrt + list(gone) + list(trace.no_grad_view_values.values())
    found = {}

    def checks(given):
        entry = found.get(given)
        if entry is None:
            outs = out_values if given is None else [v for v, g in zip(out_values, given) if g]
            skipped = set()
            met = trace.checked_at(instrs, active_values(instrs, outs, targets), views, skipped)
            entry = found[given] = (met, skipped - met.keys())
        return entry
    return checks


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
    _check_torch_compile_arguments(dynamic, backend, mode, options)
    if disable:
        return fn
    return CompiledFunction(fn)


# torch.compile's modes, and the backends torch._dynamo registers (list_backends(exclude_tags=())):
# code written for torch.compile names one of them; a name torch refuses is refused here too.
TORCH_COMPILE_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
TORCH_BACKENDS = frozenset([
    "aot_eager", "aot_eager_decomp_partition", "aot_eager_decomp_partition_crossref",
    "aot_eager_decomp_partition_with_mode", "aot_eager_default_partitioner", "aot_ts", "cudagraphs",
    "dynamo_accuracy_minifier_backend", "dynamo_minifier_backend", "eager", "eager_debug", "eager_noexcept",
    "inductor", "invoke_subgraph", "onnxrt", "openxla", "openxla_eval", "pre_dispatch_eager", "ts", "tvm"])


class InvalidBackend(RuntimeError):
    """torch._dynamo.exc.InvalidBackend: fg.compile(backend=...) names no backend torch has."""


def _check_torch_compile_arguments(dynamic, backend, mode, options) -> None:
    """torch.compile's checks of its keyword arguments, in its order, with its texts (the
    arguments themselves change nothing here: see compile)."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if isinstance(backend, str):
        if backend not in TORCH_BACKENDS:
            raise InvalidBackend(f"Invalid backend: {backend!r}, see `torch._dynamo.list_backends()` for available "
                                 "backends.")
        if backend == "inductor":
            if mode is not None and mode not in TORCH_COMPILE_MODES:
                raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(TORCH_COMPILE_MODES)}")
            if options is not None and not isinstance(options, dict):
                raise AttributeError(f"'{type(options).__name__}' object has no attribute 'items'")
    if dynamic is not None and not isinstance(dynamic, bool):
        raise AssertionError(f"Expected enable to be a bool, got {type(dynamic)}")


class NotCallableError(TypeError, AssertionError):
    """fg.compile of something not callable: a TypeError, and torch.compile's AssertionError
    (with its text) for code written against torch."""
