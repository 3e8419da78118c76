"""Tracing: inside a compiled function's call, Tensor ops append to one SSA
program instead of executing.

Concrete tensors that a traced op touches (arguments, parameters, constants
made inside the function) become program inputs, keyed by their memory so a
tensor and its `.data` are one input. Python scalars become 0-d inputs
(runtime arguments, never part of the cache key). In-place ops are
functional updates: the tensor's memory is re-bound to the new value and
written back when the call returns. `backward()`, `autograd.grad` and thus
`fg.grad` and optimizer steps append their backward into the same program.

Reading a value (`bool()`, `item()`, `print`) runs the program traced so far
with the reference executor (a graph break) and tracing continues.

The Trace class is in four parts: this module holds its state, the lifting of
values and the recording of ops (the hot path) and graph breaks;
trace_writes.py the in-place writes and version counters, trace_views.py the
views and detach() aliases, trace_autograd.py the backward passes and grad_fn
nodes inside a call.
"""
from __future__ import annotations

import os
import sys
import weakref

import numpy as np

from fusegrad.ir import OPS, Builder, Program, TensorType, Value, from_numpy_dtype
from fusegrad.ir.ops import ELEMENTWISE, infer_types
from fusegrad.ir.ops.registry import _INFERRED      # infer_types' memo, read inline on the hot path
from fusegrad.ir.ops.registry import VALUE_CHECKED, check_values_now
from fusegrad.ir.program import Instr, _ids
from fusegrad.ir.interpreter import reference_apply

from . import parser_errors, trace_state
from .dispatch import (_FILLS, _OVERLAP_MSG, _PARTIAL_OVERLAP, ZERO_DIM_TYPES, _check_no_partial_overlap,
                       _overlaps_itself, part_views)
from .layout import (contiguous_strides, odd_unit_strides, replay_on_ids, replayed_view, same_elements,
                     traced_elementwise_layout, traced_partial_overlap, traced_result_layout)
from .grad_mode import is_grad_enabled
from .tensor import Tensor
from .trace_autograd import TraceAutograd
from .trace_views import TraceViews
from .trace_writes import TraceWrites, _memory_key


_new = object.__new__
_next_id = _ids.__next__        # Value's ids (ir.program), for Values made inline on the hot path

_INTERNAL_DIRS = tuple(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), layer) + os.sep
                       for layer in ("ir", "tracer", "runtime", "codegen", "fusegrad"))
# the files of the Trace class and its parts (_reading_method skips their frames)
_TRACE_FILES = frozenset([__file__] + [sys.modules[part.__module__].__file__
                                       for part in (TraceWrites, TraceViews, TraceAutograd)])
_ARGUMENT_CHECKS_FILE = parser_errors.__file__
_is_internal: dict = {}     # code file name -> whether it is fusegrad's own (every graph break asks)


def _is_view_memory(base: np.ndarray, chain: tuple, array: np.ndarray) -> bool:
    """Whether `array` is exactly `base` seen through view chain `chain` (same memory, layout)."""
    return same_elements(replay_on_ids(base, chain), array)     # (the chain's NumPy references: views of base)


def user_location() -> str:
    """file:line of the innermost frame outside fusegrad's own code (for graph-break reports)."""
    f = sys._getframe(1)
    while f is not None:
        name = f.f_code.co_filename
        internal = _is_internal.get(name)
        if internal is None:
            internal = _is_internal[name] = os.path.abspath(name).startswith(_INTERNAL_DIRS)
        if not internal:
            return f"{name}:{f.f_lineno}"
        f = f.f_back
    return "<unknown>"


def _reading_method() -> str:
    """The outermost Tensor method on the stack (bool, item, numpy, repr...) that needs a value."""
    f, name = sys._getframe(1), "value"
    while f is not None and f.f_code.co_filename in _TRACE_FILES:      # (the trace's own frames)
        f = f.f_back
    tensor_file = Tensor._init.__code__.co_filename      # (Tensor.__module__ is "fusegrad", its public home)
    while f is not None and f.f_code.co_filename in (tensor_file, _ARGUMENT_CHECKS_FILE):
        if f.f_code.co_filename == tensor_file:     # (item() and others pass through parser_errors)
            name = f.f_code.co_name.strip("_")
        f = f.f_back
    return name


def _memory_of(x, detach_source: dict):
    """The memory operand `x` reads, where it is memory from outside the call: its array, or
    a view made in the call of a tensor from outside it seen through its view chain (also of
    a detach() or .data of such a tensor made in the call after the call wrote it, which holds
    a value of the call: by its source, Trace.detach_source); else None."""
    if type(x) is np.ndarray:
        return None
    if x._data is not None:
        return x._data
    base = x._base
    if base is None:
        return _detached_memory(x, detach_source)
    memory = base._data if base._data is not None else _detached_memory(base, detach_source)
    return None if memory is None else replayed_view(memory, x._view_chain)


def _detached_memory(x, detach_source: dict):
    """The memory of the tensor from outside the call that `x` is a detach() or .data of, or None."""
    link = detach_source.get(id(x)) if detach_source else None
    if link is None or link[0]() is not x:
        return None
    return link[1]._data


class Trace(TraceWrites, TraceViews, TraceAutograd):
    """One call's program under construction, and the bookkeeping to finish it."""

    def __init__(self):
        self.builder = Builder(Program())
        self.inputs = self.builder.program.inputs   # (aliases of the program's lists, for the hot path)
        self.instrs = self.builder.program.instrs
        self.input_arrays: list = []        # one per program input
        self.constants: dict = {}           # id of a read-only constant's array -> its input (see _input)
        self.lifted: dict = {}              # memory key -> Value (latest value of that memory)
        self.lifted_grad: dict = {}         # memory key -> requires_grad of the tensor that lifted it
        self.lifted_tensors: list = []      # the caller's tensors whose memory the call read, in order
        # memory key -> those of lifted_tensors lifted over it, in order (TraceWrites._first_reader);
        # data_moved: a `.data =` assignment in the call gave a tensor other memory (then it scans)
        self.lifted_by_memory: dict = {}
        self.data_moved = False
        self.aliases: dict = {}             # (value id, requires_grad) -> identity of it (see _alias)
        self.alias_of: dict = {}            # such an identity's id -> the id of the value it stands for
        self.graft_sources: dict = {}       # a graft's value id -> its inputs (see TraceWrites._grafted)
        # ids of lifted values read through tensors on different version counters alike in
        # requires_grad (x and x.data), and for those, the counters of the tensors through which
        # ops recorded with grad read them (None: unknown): see reader_counter
        self.mixed_counters: set = set()
        self.reader_counters: dict = {}
        self.alias_counters: dict = {}      # such an identity's id -> version counter of its first reader
        self.alias_sources: dict = {}       # such an identity's id -> (memory key, the value it reads)
        self.lifted_from: dict = {}         # a lifted input's value id -> the tensor whose read lifted it
        # a view made here of the caller's memory: its value id -> the version counter it shares
        # (its base's: x[-1] of x, not of x.data over the same array), which guards it when saved
        self.view_counters: dict = {}
        self.no_grad_views_made = False     # whether a view made here is a view made under no_grad (its flag set)
        # value id -> value of the views made here under no_grad of a tensor that requires grad:
        # their edges lead nowhere, and a backward finding one changed raises torch's
        # rebased-view error
        self.no_grad_view_values: dict = {}
        self.no_grad_view_counters: dict = {}   # their value id -> the version counter the view shares
        self.overwritten: set = set()      # ids of values a later in-place write replaced (Trace._replaced)
        # value id -> (the error a saved part of split made here raises, PartViewSaved; its
        # base where it needs no grad: see note_part)
        self.part_values: dict = {}
        # value id -> (node, output_nr) of the values an op with grad read from a view made
        # under no_grad (from outside the call, or a view of one made here by that node):
        # torch's node saved the view itself, whose unpack after a write moved its counter
        # raises the rebased-view error naming it (stale_saved, the compiled backward's checks)
        self.no_grad_view_reads: dict = {}
        self.mutated: dict = {}             # memory key -> (array, tensor) written in place
        # memory key -> {id: tensor} of the tensors from outside the call over that memory that
        # were written here (each then holds a value of its own until it reads memory again)
        self.writers: dict = {}
        self.grad_instrs: dict = {}         # id of an instruction recorded with grad -> torch's node name
                                            # (None: the op's default; see grad_fn_of)
        self._nodes: dict = {}              # id of such an instruction -> its grad_fn node (made on demand)
        self._producer_map: dict = {}       # id(value) -> (its instruction recorded with grad, output index)
        self._producers_upto = 0            # how many instructions _producer_map has seen
        self.freed: set = set()             # ids of instructions a backward without retain_graph ran through
        # A backward in the call that reaches tensors with history from before it: (those tensors,
        # their gradients, retain_graph, create_graph), run eagerly when the call returns
        self.outside_backwards: list = []
        self.never_freed: set = set()       # ids of instructions that save only Python numbers (_saves_numbers_only)
        self.own_counters: set = set()      # ids of values torch's _unsafe_view made: their own version counters
        self.views: dict = {}               # id(base tensor) -> weak references to views of it made here
        self.outside_views: dict = {}       # id(base tensor) -> weak references to views of it made before
                                            # the call that it reads or writes
        # views made under no_grad before the call (of a tensor that requires grad) whose memory the
        # call wrote: torch will not regenerate their history, so a use with grad raises (id -> tensor)
        self.rebased_outside: dict = {}
        # memory key -> the view from outside the call over that memory (its array): a write
        # through another tensor over it (its detach() or .data) writes the view's base too
        self.memory_views: dict = {}
        self.stand_ins: dict = {}           # id -> such a view the trace made (see _origin_view), held
        # id -> version counter of a view from outside the call that holds its part of a write
        # counted on another counter (its base's .data, a .data of it): it takes no bump of its
        # own for holding it (apply_writes)
        self.quiet_counters: dict = {}
        self.view_bases: dict = {}          # memory key -> {id: weak reference} of the tensors from outside
                                            # the call over that memory with views (here or before) in use
        self.alive: list = []               # weak references to symbolic tensors made by this trace
        self.leaf_tensors: dict = {}        # memory key -> concrete leaf that requires grad
        self.boundary: dict = {}            # memory key -> concrete non-leaf that requires grad
        self.own_values: dict = {}          # id(tensor) -> Value of a second tensor over lifted memory
        self.own_reads: dict = {}           # id(tensor) -> (memory value it was last read from, its Value now)
        self.exposed: list = []             # arrays handed to Python writable during the trace (expose)
        self.detach_source: dict = {}       # id(d) -> (weakref d, t, shares version) for d = t.detach()
        self.detach_aliases: dict = {}      # id(t) -> weakrefs to its detach()es
        self.identity_source: dict = {}     # value id -> the value it is an identity cast of
        # value id of a value grafted from another over the same memory (a tensor's, from its
        # detach()'s write; a detach's with a history of its own, from its source's) -> that
        # value (the two are one memory, as an identity is: see _memory_link)
        self.took_value: dict = {}
        self.leaf_values: dict = {}         # id(leaf) -> (leaf, values it held): a leaf written under no_grad
        self.first_values: dict = {}        # id(caller's non-leaf) -> (it, its value when first read), where
                                            # the call had written its memory through another tensor by then
        self.view_values: dict = {}         # value id of a view -> (what it read of its base, view chain)
        self.known: dict = {}               # value id -> array known so far (inputs, graph breaks)
        self.inputs_known = 0               # how many inputs `known` holds (entered at graph breaks)
        self.instrs_known = 0               # how many instructions graph breaks have run (instrs only grow)
        self.breaks: list = []              # (location, reason)
        self.backward_start: int | None = None
        self.grad_leaves: dict = {}         # id -> (leaf, grad before the call)
        self.retained: list = []            # weak references to traced non-leaves that called retain_grad()
        self.new_leaves: list = []          # weak references to leaves made here by requires_grad_()
        # their __dict__s, in the same order (`_leaf_value`, `_transform_done`), read for those that
        # die in the call: torch's graph keeps a leaf's AccumulateGrad (see compile._gone_leaves)
        self.new_leaf_states: list = []
        self.dry = False                    # a dry run (explain): the caller's tensors are restored after
        self.kept_states: dict = {}         # id(tensor from outside) -> (tensor, its state before; see keep_state)
        self.writes: dict = {}              # id(version counter) -> [counter, in-place writes here, memory
                                            # key written (None: a tensor made in the call)]
        self.writing = None                 # (counter, its version before, index of its first instruction)
                                            # while an in-place write runs
        self.write_values_from = -1         # the first Value id made during the write under way
        self.stale: dict = {}               # value id -> (counter, version, ...): what memory held until a write
        self.stale_read_as: dict = {}       # the same, for the nodes that read the value in place of
                                            # one on another counter only (read_as, _mark_stale)
        self.latest_values: dict = {}       # weak ref to a tensor written here -> its value after the latest write
        # value id -> values that stand for the same saved tensor, stale when it is: the promoted
        # copies made of it for an op (x64 * x32 reads x32 as float64; torch's node saves the
        # operand itself: see hold_promoted) and the values of its detach()es (one counter)
        self.same_counter: dict = {}
        self.promoted_from: dict = {}       # a promoted copy's value id -> the operand's value
        # value id -> (the value its memory holds now, index of the write's first instruction),
        # for memory written through a `.data` alias (no version bump): the VJPs of instructions
        # before the write that saved it read the new values, as torch's do (see vjp_reads)
        self.read_as: dict = {}
        # read_as's new value id -> the version counter of the tensor whose value it replaced for
        # the VJPs (torch's node saved that tensor, so its counter is what a backward checks),
        # or None where values read through several counters map to it (see read_as_counter)
        self.read_as_counters: dict = {}
        # value id -> (value id, memory, writes before): an identity of a value written to the
        # caller's memory (a NumPy array), through which that memory's readers that differ from
        # the writer in requires_grad read it (rebind); a backward that saves the identity saves
        # the memory, where no later write reached it (runtime.compile._saved_arrays)
        self.memory_identities: dict = {}
        self.written_arrays: list = []      # the caller's memory each user-level write wrote, in order
        # id(base tensor) -> (weak reference to the base, values views of it made here held, alive
        # or not); see _hold_view_value (an id outlives its tensor: the reference tells them apart)
        self.view_held: dict = {}
        self.graft_writer = None            # the detach() alias whose write is being grafted into its source
        self.grafting = None                # (writer, source) of the graft being recorded
        # ids of the tensors one write's grafts reached so far (see _graft_into), or None
        self.grafted_in_write = None
        # A write through a view of tensor t, while t takes its new value: (t, the view's chain),
        # and the part of the graft under way that the write reached (see TraceViews._region_write)
        self.write_region = None
        self.graft_region = None
        self.filling = False                # the write under way is a fill (one value everywhere)
        self.laid_out: list = []            # weak references to traced values laid out as not row-major
                                            # (Tensor._layout: an elementwise op on a transpose)
        # value id -> element strides: gradients laid out so (trace_autograd._lay_out_gradients),
        # kept by value, as a detach() of one that outlives it is its memory
        self.value_layouts: dict = {}
        self.forward_layouts: dict = {}     # value id -> element strides of each elementwise result laid out
        self.permuted = False               # whether a permute view was recorded (a layout not row-major)

    # ------------------------------------------------------------ values
    @property
    def program(self) -> Program:
        """The program recorded so far."""
        return self.builder.program

    def input_lifted_from(self, array: np.ndarray):
        """The program input that holds `array` (the caller's memory as the call read it), or None."""
        for v, a in zip(self.inputs, self.input_arrays):
            if a is array:
                return v
        return None

    def _input(self, array: np.ndarray) -> Value:
        # Hot (every scalar operand is one): `known` learns inputs only at a graph break.
        # a shared read-only constant (functional._scalar_array: `x * 2` in a loop) is one input
        # however often it is read (its id is stable: input_arrays holds it)
        shared = not array.flags.writeable
        if shared:
            v = self.constants.get(id(array))
            if v is not None:
                return v
        t = ZERO_DIM_TYPES.get(array.dtype) if not array.shape else None
        v = Value(t if t is not None else TensorType(array.shape, from_numpy_dtype(array.dtype)))
        self.inputs.append(v)
        self.input_arrays.append(array)
        if shared:
            self.constants[id(array)] = v
        return v

    def value_of(self, x) -> Value:
        """The program value standing for a Tensor or a scalar constant."""
        if isinstance(x, np.ndarray):
            return self._input(x)
        if x._sym is not None:
            return x._sym
        key = _memory_key(x._data)
        v = self.lifted.get(key)
        if v is not None and x._base is not None and self.stand_ins and \
                id(self.memory_views.get(key)) in self.stand_ins and \
                (self._made_under_no_grad(x, x._base) or self.memory_written(x._base)) and self._outside_view(x):
            # (a view made before the call whose memory a stand-in for it read first, through a
            # detach() of it, `a.detach().mul_(2)`: where the call wrote its base, it is the view
            # from outside all the same, re-derived from the base's new value, with the history
            # the base gained, as torch regenerates it; one made under no_grad raises at its use
            # with grad where the call moved its counter, as torch's)
            # (its base's new value unknown here, the memory written only through its own
            # detach(): what the memory holds now)
            return x._sym if x._sym is not None else v
        if v is None:
            if x._base is not None and self._outside_view(x):
                return x._sym
            if x._origin is not None and self._origin_view(x) is not None and key in self.lifted:
                # (a detach() or .data of a view made before the call: the memory is read as
                # the view's, which a write of its base reaches; the view lifted it just now)
                return self.value_of(x)
            if self.exposed and not x._requires_grad and self._exposed_memory(x._data):
                # Python can write this memory between ops (a numpy() array handed out, a user
                # array given to from_numpy): each read takes its value now, as eager ops do.
                return self._input(x._data.copy())
            v = self.lifted[key] = self._input(x._data)
            self.lifted_from[v.id] = x
            if self.dry:
                self.keep_state(x)
            self.lifted_grad[key] = x._requires_grad
            self.lifted_tensors.append(x)
            self.lifted_by_memory.setdefault(key, []).append(x)
        elif self.lifted_grad.get(key, x._requires_grad) is not x._requires_grad:
            held, v = v, self._alias(v, x._requires_grad)
            self.alias_sources.setdefault(v.id, (key, held))
            # (the counter of the first tensor to read it so: a detach() shares its source's,
            # a .data has its own; see alias_memory)
            self.alias_counters.setdefault(v.id, self._counter_owner(x)._vbox)
        else:
            readers = self.lifted_by_memory.get(key)
            if readers and readers[0] is not x and v.id not in self.mixed_counters and \
                    self._counter_owner(x)._vbox is not self._counter_owner(readers[0])._vbox:
                self._mixed_counter_read(v)
        if x._requires_grad:
            group = self.leaf_tensors if x._grad_fn is None else self.boundary
            reader = group.get(key)
            other = (self.boundary if group is self.leaf_tensors else self.leaf_tensors).get(key) \
                if reader is None else None
            if other is not None and other is not x:
                # a leaf over the memory of a tensor from outside with a history of its own, or that
                # tensor after such a leaf (`u = t.detach().requires_grad_()`): separate variables,
                # eagerly, so x gets its own identity as a second reader of one kind does
                v = self._own_variable(x, v, group, key)
            elif reader is None:
                group[key] = x
                if self.mutated and key in self.mutated:
                    if x._grad_fn is not None:
                        # the caller's non-leaf first read after another tensor over its memory
                        # wrote it (y.detach().fill_(2) before y's first use): what it is here
                        self.first_values[id(x)] = (x, v)
                    elif id(x) not in self.leaf_values:
                        # a leaf first read after such a write (x.data.mul_(2)): it holds the
                        # value it came in with and the memory's new one, whose uses give it
                        # gradient (held_values; a later write under no_grad adds a third)
                        came_in = self.input_lifted_from(x._data)
                        if came_in is not None and came_in is not v:
                            if self.lifted_grad[key] is not x._requires_grad:
                                # (a detach() of x lifted the memory and wrote it: x's
                                # identity of the value it came in with is its own, which
                                # nothing here read; the alias's uses give x no gradient)
                                came_in = self._alias(came_in, x._requires_grad)
                            self.leaf_values[id(x)] = (x, [came_in, v])
            elif reader is not x:
                v = self._own_variable(x, v, group, key)
        return v

    def _mixed_counter_read(self, v: Value) -> None:
        """Lifted value `v` is read through a second version counter (x.data after x): from
        here on the ops recorded with grad note the counters they read it through
        (_note_counter_reads), so that a saved `v` is checked on the reading tensor's (torch's
        node saved that tensor). One already read by such an op: the counter is unknown."""
        self.mixed_counters.add(v.id)
        if any(v in ins.inputs for ins in self.instrs if id(ins) in self.grad_instrs):
            self.reader_counters[v.id] = [None]

    def _note_counter_reads(self, op: str, frozen: tuple, inputs, values) -> None:
        """An op recorded with grad reads `values` through `inputs`: the counters of those it
        saves (see _mixed_counter_read)."""
        if not any(v.id in self.mixed_counters for v in values):
            return
        from .node import saved_slots
        needs = tuple(type(x) is not np.ndarray and x._requires_grad for x in inputs)
        for k in saved_slots(op, frozen, tuple(v.type for v in values), needs)[0]:
            x, v = inputs[k], values[k]
            if v.id in self.mixed_counters and type(x) is not np.ndarray:
                self.reader_counters.setdefault(v.id, []).append(self._counter_owner(x)._vbox)

    def reader_counter(self, v: Value):
        """The version counter of the tensors through which the ops recorded with grad read
        lifted value `v`, where it was read through several (x, and x.data on its own counter)
        and those ops read it through one: what a saved `v` is checked on. Else None."""
        boxes = self.reader_counters.get(v.id)
        if not boxes or any(box is not boxes[0] for box in boxes):
            return None
        return boxes[0]

    def read_as_counter(self, v: Value):
        """The version counter a saved `v` is checked on, where `v` is the memory's new value that
        the VJPs of the nodes that saved a tensor over it read after a `.data` write (read_as):
        that tensor's (`y = c * x; c.data.copy_(...)`: c's, not the `.data`'s). Else None: also
        where a later write in the call replaced it (the value torch saved there is an in-place
        op's original self, a clone, which no write after the call reaches: `t1.mul_(a.sum())`
        of `t1 = a.data` written before)."""
        box = self.read_as_counters.get(v.id)
        return None if box is None or v.id in self.overwritten else box

    def _outside_view(self, x: Tensor) -> bool:
        """`x`, a view made before the call, is read or written for the first time: note it, so
        that writes to its base reach it (_refresh_outside_views). True when the call has written
        the base already: x now holds its view of the base's new value (not its memory's)."""
        base = x._base
        if base._origin is not None and base._data is not None:
            # (a view of a detach() or .data of a view, `s[1:2].data[:, :2]`: writes of that
            # view's base reach the detach() through the view, and so x)
            self._origin_view(base)
        self.outside_views.setdefault(id(base), []).append(weakref.ref(x))
        self._claim_memory(x)
        self._note_view_base(base)
        if not self.memory_written(base):
            return False
        if self._keeps_leaf(x, base) or self._unrebased_no_grad_view(x, base):
            self._rebind_leaf_view(base, x)
            return True
        if self._made_under_no_grad(x, base) or self._part_rebased(x, base):
            self._rebase_outside(x)
        again = self._view_again(base, x)
        self._quiet_unless_writing(x)
        self.rebind(x, again._sym, again._requires_grad)
        return True

    def _unrebased_no_grad_view(self, view: Tensor, base: Tensor) -> bool:
        """`view`, made before the call under no_grad of a base that requires grad, whose memory
        the call wrote only through tensors on other version counters (a `.data` of the base
        and its views): torch regenerates no history for it, so it is neither rebased (its use
        raises nothing) nor given a gradient path to the base; it stays the leaf it was, holding
        its part of the memory's new value (_rebind_leaf_view)."""
        return self._made_under_no_grad(view, base) and view._data is not None and \
            id(self._counter_owner(view)._vbox) not in self.writes

    @staticmethod
    def _made_under_no_grad(view: Tensor, base: Tensor) -> bool:
        """`view` was made under no_grad of a base that requires grad (or is a view of such a
        view): torch regenerates no history for it when its base's counter moves."""
        return view._no_grad_view or bool(view.__dict__.get("_no_grad_mode") and base._requires_grad)

    def current_view_counter(self, v: Value):
        """The version counter a view made here of the caller's memory shares (view_counters),
        where a write in the call did not replace its value since (stale): else None, as for
        current_alias_counter (the value torch saved there is an in-place op's original self,
        a clone: `c.div_(y)` of a view c; a node that saved the view itself raises in the
        backward for that write first, Trace.stale_saved)."""
        box = self.view_counters.get(v.id)
        return None if box is None or v.id in self.stale else box

    def current_alias_counter(self, v: Value):
        """The version counter of the tensor that read alias value `v` (alias_counters), where
        `v` is still its memory's value when the call ends: a saved tensor of torch's is then
        that memory. None otherwise (the memory was written after the read: the value torch
        saved there is a clone, an in-place op's original self, which no later write reaches)."""
        box = self.alias_counters.get(v.id)
        source = self.alias_sources.get(v.id)
        if box is None or source is None or self.lifted.get(source[0]) is not source[1]:
            return None
        return box

    def _quiet_unless_writing(self, view: Tensor) -> None:
        """`view` (from outside the call) takes its part of its base's new value: that counts on
        its counter only where the write under way does (see quiet_counters)."""
        box = self._counter_owner(view)._vbox
        if self.writing is None or self.writing[0] is not box:
            self._quiet(box)

    def _quiet(self, box) -> None:
        """Version counter `box` takes no bump of its own when the call returns for a write back
        of memory it holds (see quiet_counters); a write counted on it still counts."""
        self.quiet_counters[id(box)] = box

    def _origin_view(self, x: Tensor):
        """The view from outside the call whose memory `x` (a detach() or .data of a view, with no
        `_base`: see Tensor._pass_origin) is, read once so that writes of its base reach it; None
        where x's memory is no longer that view's (its base's `.data` was replaced)."""
        key = _memory_key(x._data)
        view = self.memory_views.get(key)
        if view is None:
            base, chain = x._origin[0](), x._origin[1]
            if base is None or base._data is None or not _is_view_memory(base._data, chain, x._data):
                return None
            # A stand-in for the view (which may be gone: `y[0].detach()`), held here
            view = Tensor._wrap(x._data, x._dtype)
            view._base, view._view_chain, view._vbox = base, chain, base._vbox
            self.memory_views[key] = view
            self.stand_ins[id(view)] = view
            self.value_of(view)
        return view

    def _claim_memory(self, view: Tensor) -> None:
        """`view`, made before the call, is read or written: writes through other tensors over
        its memory reach its base through it, in place of a stand-in (only one view of a memory
        follows its base: two would pass each write back and forth)."""
        key = _memory_key(view._data)
        held = self.memory_views.get(key)
        if held is None or (held is not view and id(held) in self.stand_ins):
            self.memory_views[key] = view

    def _superseded(self, view: Tensor) -> bool:
        """Whether `view` is a stand-in that a view of the caller's has replaced (_claim_memory)."""
        return id(view) in self.stand_ins and self.memory_views.get(_memory_key(view._data)) is not view

    def memory_written(self, t: Tensor) -> bool:
        """Whether the call has written `t` or (for a tensor from outside the call) its memory."""
        return t._sym is not None or (t._data is not None and _memory_key(t._data) in self.mutated)

    def _note_view_base(self, base: Tensor) -> None:
        """`base`, a tensor from outside the call, has views in use: a write to its memory through
        another tensor (`base.detach()`, `.data`, the tensor it was detached from) reaches them."""
        bases = self.view_bases.setdefault(_memory_key(base._data), {})
        if id(base) not in bases:
            bases[id(base)] = weakref.ref(base)

    def expose(self, array: np.ndarray) -> None:
        """`array` was handed to Python writable during the trace (t.numpy(), fg.from_numpy):
        later reads of its memory copy it at that moment (see value_of)."""
        self.exposed.append(array)

    def _exposed_memory(self, array: np.ndarray) -> bool:
        return any(np.may_share_memory(array, a) for a in self.exposed)

    def _own_variable(self, x: Tensor, v: Value, group: dict, key) -> Value:
        """A second tensor that requires grad over memory another one lifted (two
        `x.detach().requires_grad_()` of one tensor): eagerly they are separate
        variables, each with its own gradient, so it gets its own identity value. The
        cast is not recorded for gradients, so none flows from one to the other."""
        w = self.own_values.get(id(x))
        if w is None:
            w = self.own_values[id(x)] = self.builder.emit("cast", v, dtype=v.dtype)
            self.own_reads[id(x)] = (v, w)
            group[(key, id(x))] = x
            return w
        source, now = self.own_reads[id(x)]
        if source is not v:
            # The memory was written since (through the other tensor, or a detach() of either):
            # x reads the new value, and its gradient sums over each value it held (held_values),
            # as for a leaf written under no_grad.
            now = self.builder.emit("cast", v, dtype=v.dtype)
            self.own_reads[id(x)] = (v, now)
            self.leaf_values.setdefault(id(x), (x, [w]))[1].append(now)
        return now

    def _alias(self, v: Value, requires_grad: bool) -> Value:
        """Memory lifted as `v` read through a tensor that differs in requires_grad (a
        detach() or .data alias, or the tensor such an alias was made from): a distinct
        identity value, so that gradient flows only through the uses of the tensor that
        requires grad, as eagerly."""
        key = (v.id, requires_grad)
        w = self.aliases.get(key)
        if w is None:
            w = self.aliases[key] = self.builder.emit("cast", v, dtype=v.dtype)
            self.alias_of[w.id] = v.id
        return w

    def new_leaf(self, t: Tensor) -> None:
        """Make symbolic tensor `t` a leaf of this call (requires_grad_() on a value made here, or
        a caller's leaf that `.data =` gave such a value): backward() here accumulates into its
        .grad, its gradients flow to its value as a leaf."""
        t._traced_leaf = True
        t.__dict__["_leaf_value"] = t._sym
        self.new_leaves.append(weakref.ref(t))
        self.new_leaf_states.append(t.__dict__)     # (outlives the tensor: see __init__)

    def symbolic(self, v: Value, requires_grad: bool) -> Tensor:
        """A new symbolic Tensor standing for value `v` (no data until the call ends); the trace
        keeps a weak reference so it can give the tensor its value if it outlives the call."""
        t = object.__new__(Tensor)
        t._init(None, v.dtype)
        t._sym = v
        t._requires_grad = requires_grad
        self.alive.append(weakref.ref(t))
        return t

    def alive_tensors(self) -> list:
        """The symbolic tensors of this trace still alive, in creation order, each once."""
        seen, tensors = set(), []
        for ref in self.alive:
            t = ref()
            if t is not None and id(t) not in seen:
                seen.add(id(t))
                tensors.append(t)
        return tensors

    # ------------------------------------------------------------ recording
    def _operand(self, x) -> Value:
        """The value of one op input: a traced tensor's, a lifted tensor's, or a new scalar input's."""
        if type(x) is np.ndarray:               # a Python scalar's 0-d constant: a new input
            return self._input(x)
        v = x._sym
        return v if v is not None else self.value_of(x)

    def _saves_numbers_only(self, ins, inputs) -> None:
        """`ins` took Python numbers where torch's signature has a Scalar
        (OpDef.extra["scalar_attributes"]: add's alpha, lerp's number weight): if its VJP
        reads nothing else, its node saves no tensor and a backward frees nothing there (as
        dispatch._reads_a_constant decides eagerly)."""
        from .node import saved_slots
        numbers = {i for i in OPS[ins.op].extra["scalar_attributes"] if type(inputs[i]) is np.ndarray}
        needs = tuple(type(x) is not np.ndarray and x._requires_grad for x in inputs)
        in_slots, out_slots = saved_slots(ins.op, ins.attrs, tuple(v.type for v in ins.inputs), needs)
        if numbers and not out_slots and set(in_slots) <= numbers:
            self.never_freed.add(id(ins))

    def record(self, op, inputs, attrs, name, out):
        """Append `op(inputs; attrs)` to the program; returns its symbolic result(s).

        The hot path of a compiled call (once per traced op, ~1.5 us): the Builder's,
        `infer_types`' and `symbolic`'s work is inlined here, with one pass over the inputs."""
        opdef = OPS[op]
        # Unrolled for the common arities: on Python 3.11 a loop or comprehension here
        # costs a few hundred nanoseconds an op.
        if len(inputs) == 1:
            values = (self._operand(inputs[0]),)
            types = (values[0].type,)
            any_requires = type(inputs[0]) is not np.ndarray and inputs[0]._requires_grad
        elif len(inputs) == 2:
            a, b = inputs
            # _operand inlined: a traced tensor's value, a Python scalar's new input, or a lift.
            if type(a) is np.ndarray:
                va, ra = self._input(a), False
            else:
                va, ra = a._sym or self.value_of(a), a._requires_grad
            if type(b) is np.ndarray:
                vb = self.constants.get(id(b))
                if vb is None:
                    vb = self._input(b)
                rb = False
            else:
                vb, rb = b._sym or self.value_of(b), b._requires_grad
            values = (va, vb)
            types = (va.type, vb.type)
            any_requires = ra or rb
        else:
            values = tuple([self._operand(x) for x in inputs])
            types = tuple([v.type for v in values])
            any_requires = any(type(x) is not np.ndarray and x._requires_grad for x in inputs)
        frozen = tuple(sorted(attrs.items())) if attrs else ()
        try:
            out_types = _INFERRED.get((op, types, frozen))
        except TypeError:                           # an unhashable attribute: infer_types copes
            out_types = None
        if out_types is None:
            out_types = infer_types(opdef, types, attrs or {}, frozen)
        if op in VALUE_CHECKED:
            # an op that raises on values (an index out of range): checked now where its inputs'
            # values are known, so the call raises where eager execution does, with the writes
            # made before it kept (a later error met while tracing would otherwise come first)
            check_values_now(op, types, [x if type(x) is np.ndarray else x._data if x._sym is None else None
                                         for x in inputs], attrs or {})
        requires = any_requires and opdef.vjp is not None and is_grad_enabled()
        if requires and not (out_types[0].dtype.is_floating_point and 0 not in opdef.nondiff_outputs) and \
                not any(t.dtype.is_floating_point and k not in opdef.nondiff_outputs for k, t in enumerate(out_types)):
            requires = False    # (no output gets a history: an integer cast records nothing, as eagerly)
        if requires and self.mixed_counters:
            self._note_counter_reads(op, frozen, inputs, values)
        if requires and op != "graft":
            # (a graft is the memory's own update of a tensor over it, no use of it: torch's
            # error comes when the user's code uses a view made under no_grad after the write)
            for x, v in zip(inputs, values):
                if isinstance(x, Tensor):
                    # (in the operands' order, views from outside the call too: torch collects
                    # the edges one operand after the other)
                    if x._rebased or (self.rebased_outside and self.rebased_outside.get(id(x)) is x):
                        raise self.rebased_error(x)
                    if x._base is not None and (x._requires_grad or x._base._requires_grad):
                        x.__dict__.pop("_nodeless", None)   # (its node is asked for: dispatch._make_view)
                    if x._no_grad_view:
                        # (a view of such a view is named by its node: one made here keeps it in
                        # _view_node, one from outside has it as its grad_fn; none for the view itself)
                        self.no_grad_view_reads[v.id] = (x.__dict__.get("_view_node", x._grad_fn), x._output_nr)
        if self.rebased_outside and is_grad_enabled() and op != "graft":
            # (with grad on, whether or not the op records: eagerly every op regenerates a
            # stale view's history first, dispatch.refresh_view_history)
            for x in inputs:
                if self.rebased_outside.get(id(x)) is x:
                    raise self.rebased_error(x)
        if len(out_types) == 1 and out is None:
            # (Value(...), Instr(...) and Tensor._init written out: once per traced op)
            out_type = out_types[0]
            v = _new(Value)
            v.type, v.id = out_type, _next_id()
            ins = _new(Instr)
            ins.op, ins.inputs, ins.outputs, ins.attrs, ins.loc = op, values, (v,), frozen, None
            self.instrs.append(ins)
            if requires:
                self.grad_instrs[id(ins)] = name
                if len(values) > 2 and "scalar_attributes" in opdef.extra:
                    self._saves_numbers_only(ins, inputs)
            t = _new(Tensor)
            dtype = out_type.dtype
            t._data, t._dtype, t._grad_fn, t._vbox = None, dtype, None, [0]
            t._sym = v
            t._requires_grad = requires and 0 not in opdef.nondiff_outputs and dtype.is_floating_point
            self.alive.append(weakref.ref(t))
            if opdef.view and isinstance(inputs[0], Tensor):
                # (a split into one part: that part's own view op, as for several below)
                views = part_views(opdef, types, attrs)
                view_op, view_attrs = (op, frozen) if views is None else views[0]
                self._mark_view(t, inputs[0], view_op, view_attrs, values[0])
            elif opdef.pointwise and len(out_type.shape) > 1:
                for x in inputs:
                    # an operand not laid out row-major (a view, a strided argument, such a result)
                    if type(x) is not np.ndarray and (x._base is not None or x._layout is not None or (
                            x._data is not None and (not x._data.flags.c_contiguous
                                                     or 1 in x._data.shape and odd_unit_strides((x._data,))))):
                        self._lay_out(t, inputs)
                        break
            elif len(out_type.shape) > 1 and "result_order" in opdef.extra:
                self._lay_out_by_rule(t, opdef.extra["result_order"], inputs, frozen)
            return t
        if out is not None and out._data is not None and 0 in out._data.strides and self.writing is None and \
                op != "graft" and name not in _FILLS and _overlaps_itself(out._data):
            # a tensor from outside over an expand's memory (its detach(), which has no view of
            # its own to tell): refused before anything is recorded, as eagerly (_write_inplace)
            raise RuntimeError(_OVERLAP_MSG)
        outs = tuple([Value(t) for t in out_types])
        ins = Instr(op, values, outs, frozen)
        self.instrs.append(ins)
        if op == "graft":
            self.graft_sources[outs[0].id] = values
        if requires:
            self.grad_instrs[id(ins)] = name
            if len(values) > 2 and "scalar_attributes" in opdef.extra:
                self._saves_numbers_only(ins, inputs)
        if out is not None:
            # (a graft carries the write it passes on: a fill through a detach of an expand's view
            # writes each memory location once, as the fill itself)
            fill = self.filling if op == "graft" else name in _FILLS
            if opdef.group == ELEMENTWISE and self.writing is None:
                if traced_partial_overlap(out, inputs):
                    raise RuntimeError(_PARTIAL_OVERLAP)        # (as eagerly: x.sub_(x[1, 1]))
                self.check_outside_overlap(out, inputs)
            previous_fill, self.filling = self.filling, fill
            try:
                if self.writing is not None or op == "graft":     # part of a write under way
                    return self._write(out, outs[0], requires, fill, graft=op == "graft")
                self.begin_write(out, len(self.instrs) - 1)
                try:
                    return self._write(out, outs[0], requires, fill)
                except BaseException as error:
                    self._abort_write(error)
                    raise
                finally:
                    self.writing = None
            finally:
                self.filling = previous_fill
        results = tuple([self.symbolic(v, requires and k not in opdef.nondiff_outputs and v.dtype.is_floating_point)
                         for k, v in enumerate(outs)])
        if opdef.view and isinstance(inputs[0], Tensor):
            # (split's parts: each a view of the operand by its own single-output view op)
            for t, (view_op, view_attrs) in zip(results, part_views(opdef, types, attrs or {})):
                self._mark_view(t, inputs[0], view_op, view_attrs, values[0])
        elif "result_order" in opdef.extra:
            # (sort's values and indices: each laid out by the rule, as eagerly)
            for t in results:
                if len(t._sym.type.shape) > 1:
                    self._lay_out_by_rule(t, opdef.extra["result_order"], inputs, frozen)
        return results

    def check_outside_overlap(self, out: Tensor, operands) -> None:
        """torch's partial-overlap error for an in-place write of `out` where an operand reads
        memory from outside the call that the written memory partly overlaps: tensors from
        outside the call over one memory (x.T.add_(x.detach())), and views made here of such a
        tensor (x.data[None].sub_(x), `x.copy_(x.data[0, 2])`): their arrays tell, as eagerly
        (values the call gave them change no layout)."""
        target = _memory_of(out, self.detach_source)
        if target is not None:
            _check_no_partial_overlap(target, [a for a in (_memory_of(x, self.detach_source) for x in operands)
                                               if a is not None])

    def _lay_out(self, t: Tensor, inputs) -> None:
        """Give elementwise result `t` the layout torch's TensorIterator gives it from its
        operands (x.t() * 2 has strides (1, 3), and its view(-1) raises), which the call's
        output then has too (runtime/compile.py lays the array out so)."""
        t._layout = traced_elementwise_layout(t._sym.type.shape, [x for x in inputs if type(x) is not np.ndarray])
        if t._layout is not None:
            self.laid_out.append(weakref.ref(t))
            self.forward_layouts[t._sym.id] = t._layout     # (for the gradients' layouts: _lay_out_gradients)

    def _lay_out_by_rule(self, t: Tensor, order_rule, inputs, frozen) -> None:
        """Give result `t` of an op with a result-order rule (OpDef.extra["result_order"]:
        advanced indexing) the layout torch gives it from its inputs' strides."""
        t._layout = traced_result_layout(t._sym.type.shape, order_rule, inputs, dict(frozen))
        if t._layout is not None:
            self.laid_out.append(weakref.ref(t))
            self.forward_layouts[t._sym.id] = t._layout

    def keep_row_major(self, t: Tensor) -> None:
        """`t` (a traced `contiguous()` result) is row-major, in the trace and after the call."""
        t._layout = contiguous_strides(t._sym.type.shape)
        self.laid_out.append(weakref.ref(t))
        self.forward_layouts.pop(t._sym.id, None)

    def _write(self, out: Tensor, v: Value, requires: bool, fill: bool = False, graft: bool = False) -> Tensor:
        if out._base is not None:
            return self._write_through_view(out, v, requires, fill, graft)
        self.rebind(out, v, requires)
        return out

    # ------------------------------------------------------------ graph breaks
    def materialize(self, t: Tensor, partial: bool = False) -> np.ndarray:
        """Run what is traced so far and return t's value (a graph break). `partial` (a call
        that raised, runtime.compile._abandon): the instructions run until one raises, and a
        value computed before it is returned (the error is raised for one after it)."""
        return self._materialize_value(t._sym, partial)

    def written_tensors(self) -> list:
        """(array, tensor) for each tensor from outside the call that the call wrote and that
        holds a value of its own, the memory's last writer last: they all hold the memory's
        final value (each write reaches the others: rebind), so each is written back, and each
        one written with history is an output of the call."""
        found = []
        for key, (array, last) in self.mutated.items():
            for t in self.writers.get(key, {}).values():
                if t is not last and t._sym is not None:
                    found.append((t._data, t))
            found.append((array, last))
        return found

    def written_memory(self, t: Tensor):
        """The value the memory of `t` (a tensor from outside the call that reads its memory:
        `t._sym` is None) holds now, where the call wrote it through another tensor over it (its
        detach()), computed as at a graph break; None where the call did not write it."""
        key = _memory_key(t._data)
        v = self.lifted.get(key) if key in self.mutated else None
        return self._materialize_value(v) if v is not None else None

    def _materialize_value(self, v: Value, partial: bool = False, reason: str | None = None) -> np.ndarray:
        for w, array in zip(self.inputs[self.inputs_known:], self.input_arrays[self.inputs_known:]):
            self.known[w.id] = array
        self.inputs_known = len(self.inputs)
        if v.id not in self.known:
            if not partial:
                self.breaks.append((user_location(), reason or
                                    f"{_reading_method()}() reads the value of a {v.type} tensor"))
            known = self.known
            if not partial:
                self._run_cone(v)
                return known[v.id]
            for k in range(self.instrs_known, len(self.instrs)):
                ins = self.instrs[k]
                if ins.outputs[0].id in known:
                    continue            # (run for an earlier break's cone)
                try:
                    outs = reference_apply(ins, [known[x.id] for x in ins.inputs])
                except Exception:
                    self.instrs_known = k       # (what came before it is known; it raises again)
                    if partial and v.id in known:
                        return known[v.id]
                    raise
                for o, a in zip(ins.outputs, outs):
                    known[o.id] = a
                if partial and v.id in known:
                    self.instrs_known = k + 1
                    return known[v.id]
            self.instrs_known = len(self.instrs)
        return self.known[v.id]

    def _run_cone(self, v: Value) -> None:
        """Compute `v` on the reference executor from what is known: only the instructions
        it depends on, in program order. A break reading a value that depends on little
        (a target reshaped in the call, read by cross_entropy's bounds check) costs that
        little, not the reference run of all the work traced before it (a model's forward,
        which the compiled program computes again anyway). The others run later, at the
        end of the call, on whichever path runs the program."""
        known, instrs = self.known, self.instrs
        needed, cone = {v.id}, []
        for k in range(len(instrs) - 1, self.instrs_known - 1, -1):
            ins = instrs[k]
            if any(o.id in needed for o in ins.outputs) and ins.outputs[0].id not in known:
                cone.append(ins)
                needed.difference_update(o.id for o in ins.outputs)
                needed.update(x.id for x in ins.inputs if x.id not in known)
                if not needed:
                    break               # (every value it needs is produced at or after k)
        for ins in reversed(cone):
            outs = reference_apply(ins, [known[x.id] for x in ins.inputs])
            for o, a in zip(ins.outputs, outs):
                known[o.id] = a
        # (the prefix whose instructions have all run: later breaks start after it)
        k = self.instrs_known
        while k < len(instrs) and instrs[k].outputs[0].id in known:
            k += 1
        self.instrs_known = k


class TraceContext:
    """Installs a Trace for the duration of a compiled call."""

    def __init__(self, trace: Trace):
        self.trace = trace

    def __enter__(self):
        self.prev = trace_state.set_current(self.trace)
        return self.trace

    def __exit__(self, *exc):
        trace_state.set_current(self.prev)
        return False
