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
"""
from __future__ import annotations

import os
import sys
import weakref

import numpy as np

from fusegrad.ir import (OPS, Builder, Program, TensorType, Value, active_values, backward as emit_backward,
                         from_numpy_dtype)
from fusegrad.ir.ops import ELEMENTWISE, infer_types
from fusegrad.ir.ops.registry import _INFERRED      # infer_types' memo, read inline on the hot path
from fusegrad.ir.ops.registry import VALUE_CHECKED, check_values_now
from fusegrad.ir.program import Instr, _ids
from fusegrad.ir.interpreter import reference_apply

from . import trace_state
from .dispatch import (_FILLS, _PARTIAL_OVERLAP, INTERNAL_VIEWS, ZERO_DIM_TYPES, _check_no_partial_overlap, _default_name,
                       no_grad_view_rebased_error)
from .layout import (contiguous_strides, replay_on_ids, replayed_view, traced_elementwise_layout,
                     traced_partial_overlap)
from .engine import modified_error, output_name
from .grad_mode import is_grad_enabled
from .hooks import ANY_LEAF_HOOKS, run_on_tensor
from .node import _FREED_MSG, RELEASES_STATE, checking_order, qualified_name, saved_slots
from .tensor import Tensor


_new = object.__new__
_next_id = _ids.__next__        # Value's ids (ir.program), for Values made inline on the hot path

_STALE = object()      # what a view read of its base when that is unknown: never its base's now
_REGENERATED_VIEW = object()    # a stale entry's "new value" for a view that died before the write
_REGENERATED_GRAD_VIEW = object()   # the same, where the base written requires grad (so the view has history)


def _no_tensor():
    """A stale entry's reference for a view that died before the write (a dead weakref)."""
    return None


def _memory_key(a: np.ndarray) -> int:
    # A tensor and its .data / detach() share the same ndarray object, and
    # every lifted array stays alive (in input_arrays) for the whole trace,
    # so the object's id identifies the memory for the trace's lifetime.
    return id(a)


_INTERNAL_DIRS = tuple(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), layer) + os.sep
                       for layer in ("ir", "tracer", "runtime", "codegen", "fusegrad"))
_is_internal: dict = {}     # code file name -> whether it is fusegrad's own (every graph break asks)


def _is_view_memory(base: np.ndarray, chain: tuple, array: np.ndarray) -> bool:
    """Whether `array` is exactly `base` seen through view chain `chain` (same memory, layout)."""
    view = replay_on_ids(base, chain)       # (the chain's NumPy references: views of base itself)
    return (view.shape == array.shape and view.strides == array.strides and view.dtype == array.dtype
            and view.__array_interface__["data"][0] == array.__array_interface__["data"][0])


def _vjp_runs(ins: Instr, active: set) -> bool:
    """Whether a backward over the values `active` runs `ins`'s VJP: an output and an input of it
    are active (a target's own instruction, with nothing active below it, is not reached, as
    torch's backward stops at the tensors it differentiates)."""
    return any(v.id in active for v in ins.outputs) and any(v.id in active for v in ins.inputs)


def _has_no_derivative(ins: Instr) -> bool:
    """Whether `ins` is an op recorded without a derivative (x // 2 on a tensor that requires
    grad): a backward that reaches it raises "derivative for aten::... is not implemented"."""
    for name, _ in ins.attrs:
        if name == "no_derivative":
            return True
    return False


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
    while f is not None and f.f_code.co_filename == __file__:      # (the trace's own frames)
        f = f.f_back
    tensor_file = sys.modules[Tensor.__module__].__file__
    while f is not None and f.f_code.co_filename == tensor_file:
        name = f.f_code.co_name.strip("_")
        f = f.f_back
    return name


def sum_groups(builder, grads: list, groups: list) -> list:
    """Per group of consecutive gradients (one group per differentiated tensor: the values
    it held), their sum, or None when none of them has one."""
    out, k = [], 0
    for group in groups:
        present = [g for g in grads[k:k + len(group)] if g is not None]
        k += len(group)
        total = present[0] if present else None
        for g in present[1:]:
            total = builder.emit("add", total, g)
        out.append(total)
    return out


def _memory_of(x):
    """The memory operand `x` reads, where it is memory from outside the call: its array, or
    a view made in the call of a tensor from outside it seen through its view chain; else None."""
    if type(x) is np.ndarray:
        return None
    if x._data is not None:
        return x._data
    base = x._base
    if base is None or base._data is None:
        return None
    return replayed_view(base._data, x._view_chain)


class Trace:
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
        self.aliases: dict = {}             # (value id, requires_grad) -> identity of it (see _alias)
        self.alias_counters: dict = {}      # such an identity's id -> version counter of its first reader
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
        self.never_freed: set = set()       # ids of instructions that save only Python scalars (keep_scalar_operands)
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
        self.dry = False                    # a dry run (explain): the caller's tensors are restored after
        self.kept_states: dict = {}         # id(tensor from outside) -> (tensor, its state before; see keep_state)
        self.writes: dict = {}              # id(version counter) -> [counter, in-place writes here, memory
                                            # key written (None: a tensor made in the call)]
        self.writing = None                 # (counter, its version before, index of its first instruction)
                                            # while an in-place write runs
        self.stale: dict = {}               # value id -> (counter, version, ...): what memory held until a write
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
        # id(base tensor) -> (weak reference to the base, values views of it made here held, alive
        # or not); see _hold_view_value (an id outlives its tensor: the reference tells them apart)
        self.view_held: dict = {}
        self.graft_writer = None            # the detach() alias whose write is being grafted into its source
        self.filling = False                # the write under way is a fill (one value everywhere)
        self.laid_out: list = []            # weak references to traced values laid out as not row-major
                                            # (Tensor._layout: an elementwise op on a transpose)

    # ------------------------------------------------------------ values
    @property
    def program(self) -> Program:
        """The program recorded so far."""
        return self.builder.program

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
            if self.dry:
                self.keep_state(x)
            self.lifted_grad[key] = x._requires_grad
            self.lifted_tensors.append(x)
        elif self.lifted_grad.get(key, x._requires_grad) is not x._requires_grad:
            v = self._alias(v, x._requires_grad)
            # (the counter of the first tensor to read it so: a detach() shares its source's,
            # a .data has its own; see alias_memory)
            self.alias_counters.setdefault(v.id, self._counter_owner(x)._vbox)
        if x._requires_grad:
            group = self.leaf_tensors if x._grad_fn is None else self.boundary
            reader = group.get(key)
            if reader is None:
                group[key] = x
                if self.mutated and key in self.mutated and x._grad_fn is not None:
                    # the caller's non-leaf first read after another tensor over its memory
                    # wrote it (y.detach().fill_(2) before y's first use): what it is here
                    self.first_values[id(x)] = (x, v)
            elif reader is not x:
                v = self._own_variable(x, v, group, key)
        return v

    def _outside_view(self, x: Tensor) -> bool:
        """`x`, a view made before the call, is read or written for the first time: note it, so
        that writes to its base reach it (_refresh_outside_views). True when the call has written
        the base already: x now holds its view of the base's new value (not its memory's)."""
        base = x._base
        self.outside_views.setdefault(id(base), []).append(weakref.ref(x))
        self._claim_memory(x)
        self._note_view_base(base)
        if not self.memory_written(base):
            return False
        if x._no_grad_view or (x.__dict__.get("_no_grad_mode") and base._requires_grad):
            self.rebased_outside[id(x)] = x
        again = self._view_again(base, x)
        self._quiet_unless_writing(x)
        self.rebind(x, again._sym, again._requires_grad)
        return True

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
            group[(key, id(x))] = x
        return w

    def _alias(self, v: Value, requires_grad: bool) -> Value:
        """Memory lifted as `v` read through a tensor that differs in requires_grad (a
        detach() or .data alias, or the tensor such an alias was made from): a distinct
        identity value, so that gradient flows only through the uses of the tensor that
        requires grad, as eagerly."""
        key = (v.id, requires_grad)
        w = self.aliases.get(key)
        if w is None:
            w = self.aliases[key] = self.builder.emit("cast", v, dtype=v.dtype)
        return w

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
        if requires:
            for x in inputs:
                if isinstance(x, Tensor) and x._rebased:
                    raise self.rebased_error(x)
        if self.rebased_outside and is_grad_enabled():
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
            t = _new(Tensor)
            dtype = out_type.dtype
            t._data, t._dtype, t._grad_fn, t._vbox = None, dtype, None, [0]
            t._sym = v
            t._requires_grad = requires and 0 not in opdef.nondiff_outputs and dtype.is_floating_point
            self.alive.append(weakref.ref(t))
            if opdef.view and isinstance(inputs[0], Tensor):
                self._mark_view(t, inputs[0], op, frozen, values[0])
            elif opdef.group == ELEMENTWISE and len(out_type.shape) > 1:
                for x in inputs:
                    # an operand not laid out row-major (a view, a strided argument, such a result)
                    if type(x) is not np.ndarray and (x._base is not None or x._layout is not None or (
                            x._data is not None and not x._data.flags.c_contiguous)):
                        self._lay_out(t, inputs)
                        break
            return t
        outs = tuple([Value(t) for t in out_types])
        ins = Instr(op, values, outs, frozen)
        self.instrs.append(ins)
        if requires:
            self.grad_instrs[id(ins)] = name
        if out is not None:
            # (a graft carries the write it passes on: a fill through a detach of an expand's view
            # writes each memory location once, as the fill itself)
            fill = self.filling if op == "graft" else name in _FILLS
            if opdef.group == ELEMENTWISE and self.writing is None:
                if traced_partial_overlap(out, inputs):
                    raise RuntimeError(_PARTIAL_OVERLAP)        # (as eagerly: x.sub_(x[1, 1]))
                if out._data is not None:
                    # tensors from outside the call over one memory (x.T.add_(x.detach())), and
                    # views made here of such a tensor: their arrays tell, as eagerly (values the
                    # call gave them change no layout)
                    _check_no_partial_overlap(out._data, [a for a in map(_memory_of, inputs) if a is not None])
            previous_fill, self.filling = self.filling, fill
            try:
                if self.writing is not None or op == "graft":     # part of a write under way
                    return self._write(out, outs[0], requires, fill, graft=op == "graft")
                self.begin_write(out, len(self.instrs) - 1)
                try:
                    return self._write(out, outs[0], requires, fill)
                except BaseException:
                    self._abort_write()
                    raise
                finally:
                    self.writing = None
            finally:
                self.filling = previous_fill
        return tuple(self.symbolic(v, requires and k not in opdef.nondiff_outputs and v.dtype.is_floating_point)
                     for k, v in enumerate(outs))

    def _lay_out(self, t: Tensor, inputs) -> None:
        """Give elementwise result `t` the layout torch's TensorIterator gives it from its
        operands (x.t() * 2 has strides (1, 3), and its view(-1) raises), which the call's
        output then has too (runtime/compile.py lays the array out so)."""
        t._layout = traced_elementwise_layout(t._sym.type.shape, [x for x in inputs if type(x) is not np.ndarray])
        if t._layout is not None:
            self.laid_out.append(weakref.ref(t))

    def keep_row_major(self, t: Tensor) -> None:
        """`t` (a traced `contiguous()` result) is row-major, in the trace and after the call."""
        t._layout = contiguous_strides(t._sym.type.shape)
        self.laid_out.append(weakref.ref(t))

    def _write(self, out: Tensor, v: Value, requires: bool, fill: bool = False, graft: bool = False) -> Tensor:
        if out._base is not None:
            return self._write_through_view(out, v, requires, fill, graft)
        self.rebind(out, v, requires)
        return out

    # ------------------------------------------------------------ version counters
    # Eagerly an in-place write bumps the version counter its tensor shares with its views
    # and detach()es (not with `.data`), and a backward that needs a value saved before
    # the write raises. Here a write re-binds tensors to new values, so a value some
    # tensor on that counter held until the write is marked stale, with the version it
    # was held at; a backward whose VJPs read a stale value raises torch's error
    # (stale_saved). The counters themselves move when the call returns (apply_writes).
    def begin_write(self, t: Tensor, first: int) -> None:
        """A user-level in-place write of `t` starts (an op with `out=t`, an optimizer's update);
        `first`: the index of its first instruction (the op that computes the value written)."""
        root = self._counter_owner(t)
        box = root._vbox
        entry = self.writes.get(id(box))
        if entry is None:
            entry = self.writes[id(box)] = [box, 0, None if root._data is None else _memory_key(root._data)]
        self.writing = (box, box[0] + entry[1], first)
        entry[1] += 1
        for ref in self.views.get(id(root), ()):
            view = ref()
            if view is not None and view._no_grad_view:
                view._rebased = True        # torch will not regenerate its history (see Tensor.grad_fn)
        if self.outside_views or t._no_grad_view:
            for ref in self.outside_views.get(id(root), ()):
                view = ref()
                if view is not None and view._no_grad_view:
                    self.rebased_outside[id(view)] = view
            if t._no_grad_view and t._data is not None:
                self.rebased_outside[id(t)] = t

    def write(self, t: Tensor, v: Value, requires: bool) -> None:
        """A user-level in-place write of `t` with value `v` (see begin_write and rebind)."""
        self.begin_write(t, len(self.instrs))
        try:
            self.rebind(t, v, requires)
        except BaseException:
            self._abort_write()
            raise
        finally:
            self.writing = None

    def _abort_write(self) -> None:
        """The write under way raised (an overlap, a leaf): eagerly it bumped no version."""
        box = self.writing[0]
        self.writes[id(box)][1] -= 1

    def _counter_owner(self, t: Tensor) -> Tensor:
        """The tensor whose version counter `t` shares eagerly: up through views' bases and
        detach()es' sources (not `.data`'s)."""
        while True:
            if t._base is not None:
                t = t._base
                continue
            link = self.detach_source.get(id(t))
            if link is not None and link[2] and link[0]() is t:
                t = link[1]
                continue
            return t

    def _replaced(self, t: Tensor, new) -> None:
        """`t` is about to hold value `new` (None: to read its memory again): if a write on its
        counter is under way, the value it holds now (for memory from outside the call: the
        value it was lifted as, and its aliases) is stale from here on."""
        box, version, first = self.writing
        if self._counter_owner(t)._vbox is not box:
            return
        if new is not None:
            # (what t holds after its latest write, by which torch names a saved tensor once
            # t itself is gone: see _saved_input_name)
            self.latest_values[weakref.ref(t)] = new
        old = t._sym
        if old is None and t._data is not None:
            key = _memory_key(t._data)
            old = self.lifted.get(key)
            if old is None:
                return
            # The memory's value as each reader saw it: as lifted, by the first tensor to read
            # it, and through an identity alias by readers that differ from it in requires_grad.
            first_requires = self.lifted_grad.get(key, t._requires_grad)
            grad_reader = self._grad_reader(key)
            owner = self._memory_owner(key, t)
            # (one value for every reader alike in requires_grad: where the first one keeps its
            # counter, as x beside the x.data written here, the value is taken as x's, whose
            # saved value stays current: y = x @ w; x.data.add_(3), as torch)
            owners_value = owner is not t and self._counter_owner(owner)._vbox is not box
            for requires in (False, True):
                if requires is first_requires and owners_value:
                    continue
                value = old if requires is first_requires else self.aliases.get((old.id, requires))
                if value is not None and (requires is t._requires_grad or self._shares_counter(key, requires, box)):
                    # (named as torch names the saved tensor: by the tensor that read it, a
                    # leaf or the caller's non-leaf, not by the writer's new history)
                    holder = grad_reader if requires is not t._requires_grad and grad_reader is not None else t
                    self._mark_stale(value, (box, version, weakref.ref(holder), new, first))
            if grad_reader is not None and grad_reader is not t and grad_reader._sym is not None and \
                    self._counter_owner(grad_reader)._vbox is box:
                # the leaf (or caller's non-leaf) holds a value of its own, written here under
                # no_grad: that is the memory's value too, and torch's saved tensor is it
                self._mark_stale(grad_reader._sym, (box, version, weakref.ref(grad_reader), new, first))
            return
        if old is not None:
            self._mark_stale(old, (box, version, weakref.ref(t), new, first))

    def _mark_stale(self, value: Value, entry: tuple) -> None:
        """`value` (and the values standing for the same saved tensor: same_counter) is stale
        from here on: see _replaced."""
        self.stale.setdefault(value.id, entry)
        for copy in self.same_counter.get(value.id, ()):
            self.stale.setdefault(copy.id, entry)

    def promoted_operands(self, saved: list) -> dict:
        """{index in `saved` (values a backward reads): (the caller's tensor whose value, or a
        view of it made in the call, the saved one is a promoted copy of; the view's shape or
        None)} (see hold_promoted): a change of that tensor after the call makes the backward
        raise, as torch's check of the operand it saved."""
        if not self.promoted_from:
            return {}
        by_value, by_array = {}, {}
        for x in self.lifted_tensors:
            v = self.lifted.get(_memory_key(x._data)) if x._data is not None else None
            if v is not None:
                by_value.setdefault(v.id, x)
                by_array.setdefault(id(x._data), x)
        for (v_id, _), w in self.aliases.items():
            if v_id in by_value:
                by_value.setdefault(w.id, by_value[v_id])
        found = {}
        for k, v in enumerate(saved):
            source = self.promoted_from.get(v.id)
            if source is None:
                continue
            tensor = by_value.get(source.id)
            if tensor is not None:
                found[k] = (tensor, None)
                continue
            # a view of the caller's memory the call has not written (its root is the array)
            root = self.view_values.get(source.id, (None,))[0]
            tensor = by_array.get(id(root)) if type(root) is np.ndarray else None
            if tensor is not None:
                found[k] = (tensor, source.type.shape)
        return found

    def hold_promoted(self, copy: Tensor) -> None:
        """`copy` (just made by a cast) is an op's operand promoted to the op's dtype: torch's
        node saves the operand itself, so an in-place write of the operand after the op makes
        a backward that reads the copy raise, as eagerly (functional._coerce)."""
        ins = self.instrs[-1] if self.instrs else None
        if ins is not None and ins.op == "cast" and ins.outputs[0] is copy._sym:
            self.same_counter.setdefault(ins.inputs[0].id, []).append(copy._sym)
            self.promoted_from[copy._sym.id] = ins.inputs[0]

    def alias_memory(self, v: Value):
        """(the caller's memory, versioned) that `v`, an identity alias of a lifted value (the
        detach() read beside x in `x * x.detach()`), stands for, where the call did not write
        that memory; else None. torch's node saves that memory: a backward reading `v` reads
        it, and (`versioned`: the alias's readers share its tensor's version counter, as a
        detach() does, not a .data) a write of the tensor after the call makes it raise."""
        box = self.alias_counters.get(v.id)
        if box is None:
            return None
        view = self.view_values.get(v.id)
        if view is not None:
            # a view of memory read through such an alias (x.detach().t()): that memory, seen
            # through the view's chain
            root, chain = view
            owner = self._first_reader(_memory_key(root)) if type(root) is np.ndarray else None
            memory = replayed_view(root, chain) if owner is not None and _memory_key(root) not in self.mutated \
                else None
            return None if memory is None else (memory, self._counter_owner(owner)._vbox is box)
        source = next((v_id for (v_id, _), w in self.aliases.items() if w is v), None)
        for u, array in zip(self.inputs, self.input_arrays):
            if u.id == source:
                key = _memory_key(array)
                owner = self._first_reader(key)
                if self.lifted.get(key) is not u or key in self.mutated or owner is None:
                    return None
                return array, self._counter_owner(owner)._vbox is box
        return None

    def _shares_counter(self, key, requires: bool, box) -> bool:
        """Whether the tensors of this memory that read it with `requires` (requires_grad) share
        version counter `box`: the one that requires grad (a leaf or the caller's non-leaf), and
        for those without grad the first of them to read it (`x.data` has a counter of its own,
        so its writes leave x's values current and x's writes its own, as eagerly)."""
        reader = self._grad_reader(key) if requires else self._first_reader(key, without_grad=True)
        return reader is None or self._counter_owner(reader)._vbox is box

    def _first_reader(self, key, without_grad: bool = False):
        """The first tensor from outside the call to read memory `key` (`without_grad`: of those
        that do not require grad), or None."""
        return next((x for x in self.lifted_tensors if x._data is not None and _memory_key(x._data) == key
                     and not (without_grad and x._requires_grad)), None)

    def stale_saved(self, instrs, active: set, found_at: list | None = None):
        """The first value (from the last instruction back, as a backward meets them) that an
        active instruction's VJP reads and an in-place write replaced: (value, counter,
        version it was saved at, torch's ", which is output N of Op," or ""), or None.
        None too where the backward meets first a node an earlier backward freed (torch raises
        the freed-graph error there: _freed_met_first) or an op without a derivative. Only a
        trace with such writes pays for the scan. `found_at` (a list), when given, receives the
        instruction whose VJP reads it."""
        if not self.stale:
            return None
        positions = None
        for ins in reversed(instrs):
            if not _vjp_runs(ins, active):
                continue
            if self.freed and self._freed_and_saving(ins, active):
                return None
            if _has_no_derivative(ins):     # (torch's NotImplemented node raises before any behind it)
                return None
            if not any(v.id in self.stale or v.id in self.read_as for v in ins.inputs + ins.outputs):
                continue
            # Stale for this instruction: replaced by a write after it (the write's own ops
            # read the value before it, as an in-place op's node saves it). A value a .data write
            # replaced is read as the memory's new value (read_as), stale when that is.
            if positions is None:
                positions = {id(x): k for k, x in enumerate(self.instrs)}
            at = positions[id(ins)]
            stale = {}
            for v in ins.inputs + ins.outputs:
                entry = self.read_as.get(v.id)
                read = entry[0] if entry is not None and entry[1] > at else v
                for w in (v, read):     # (its own counter moved first: t1 = a.data; ...; t1.div_(2))
                    if w.id in self.stale and self.stale[w.id][4] >= at:
                        stale[v.id] = self.stale[w.id]
                        break
            if not stale:
                continue
            needs = tuple(v.id in active for v in ins.inputs)
            # (in the order the eager engine checks them: torch's node's, see checking_order)
            for kind, k in checking_order(ins.op, ins.attrs, tuple(v.type for v in ins.inputs), needs,
                                          self.grad_instrs.get(id(ins)) or _default_name(ins.op)):
                if kind == "out":
                    v = ins.outputs[k]
                    if v.id in stale and stale[v.id][4] > at:
                        box, version = stale[v.id][:2]
                        differentiable = v.type.dtype.is_floating_point and k not in OPS[ins.op].nondiff_outputs
                        if found_at is not None:
                            found_at.append(ins)
                        return v, box, version, self._output_name(ins, k) if differentiable else ""
                    continue
                v = ins.inputs[k]
                # A write's own first op reads the value before it: its node saves that for
                # the operand it overwrites (input 0), but another operand over the written
                # memory (`h.mul_(h)`) is the tensor torch saves, and the write changes it.
                if v.id in stale and (stale[v.id][4] > at or k > 0):
                    named = self.promoted_from.get(v.id, v)     # (torch names the operand itself)
                    if found_at is not None:
                        found_at.append(ins)
                    return (named,) + stale[v.id][:2] + (self._saved_input_name(named, *stale[v.id][2:4]),)
        return None

    def _saved_input_name(self, v: Value, ref, new) -> str:
        """torch's ", which is output N of Op," for a saved input: named by its tensor's history
        now, as torch names it (a tensor no longer alive: its history after the write; a view
        that died before it: the view torch's engine regenerates, when it has history)."""
        if new is _REGENERATED_VIEW or new is _REGENERATED_GRAD_VIEW:
            history = new is _REGENERATED_GRAD_VIEW or self.grad_producer(v) is not None
            return output_name("AsStridedBackward0", 0) if history else ""
        t = ref()
        if t is None:
            new = self.latest_values.get(ref, new)
        if t is not None and (self.is_callers_leaf(t) or t.__dict__.get("_transform_input")):
            return ""       # (a leaf has no node, whatever was grafted onto its values; nor fg.grad's stand-in)
        callers_non_leaf = t is not None and t._data is not None and t._grad_fn is not None
        now = t._sym if t is not None and t._sym is not None else new
        found = None if now is None or (callers_non_leaf and t._sym is None) else self.grad_producer(now)
        if t is not None and t._base is not None and (found is not None or t._requires_grad or callers_non_leaf):
            # a view, saved, then written (through itself or its base): torch regenerates its
            # history from the base's, one as_strided
            return output_name("AsStridedBackward0", 0)
        if found is None and callers_non_leaf:
            # the caller's non-leaf, not written here or only without history: its node as it is
            return output_name(t._grad_fn.name(), t._output_nr)
        return "" if found is None else self._output_name(*found)

    def _output_name(self, ins: Instr, k: int) -> str:
        return output_name(qualified_name(self.grad_instrs.get(id(ins)) or _default_name(ins.op)), k)

    def counter_of(self, t: Tensor) -> list:
        """The version counter (a one-item list) `t` shares eagerly (see _counter_owner)."""
        return self._counter_owner(t)._vbox

    def version_now(self, box) -> int:
        """A version counter's value now, counting this call's writes."""
        entry = self.writes.get(id(box))
        return box[0] + (entry[1] if entry is not None and entry[0] is box else 0)

    def keep_state(self, t: Tensor) -> None:
        """In a dry run, remember the state of `t` (a tensor from outside the call) the first
        time the call reads or writes it, for restore_states."""
        if id(t) not in self.kept_states:
            self.kept_states[id(t)] = (t, (t._data, t._dtype, t._requires_grad, t._grad_fn, t._vbox, t._vbox[0],
                                           dict(t.__dict__)))

    def restore_states(self) -> None:
        """The end of a dry run: the caller's tensors the call read or wrote get back their
        history, flags, version and `.grad` as they were before it (their memory was never
        written: _finish skips the write-back)."""
        for t, (data, dtype, requires, grad_fn, vbox, version, attrs) in self.kept_states.values():
            t._data, t._dtype, t._requires_grad, t._grad_fn, t._vbox, t._sym = data, dtype, requires, grad_fn, vbox, None
            vbox[0] = version
            t.__dict__.clear()
            t.__dict__.update(attrs)
        # After the states: a `.grad` set before the call first read its tensor (zero_grad()
        # then the forward) is in the state kept as it was after that write
        for leaf, before in self.grad_leaves.values():
            leaf._grad = before

    def apply_writes(self, written_back: list) -> None:
        """The call returns: version counters take its in-place writes, as eagerly; those of
        memory from outside the call only where it is written back (`written_back`: its
        tensors: a write through x.data and one through x count on their own counters, whichever
        wrote last), at least once (a write by a path that counts none)."""
        counters = {id(t._vbox): t._vbox for t in written_back}
        memory = {_memory_key(t._data) for t in written_back}
        for box, count, key in self.writes.values():
            if counters.pop(id(box), None) is not None or key is None or key in memory:
                box[0] += count
        for box_id, box in counters.items():
            if box_id not in self.quiet_counters:
                box[0] += 1
        self.writes.clear()

    def rebind(self, t: Tensor, v: Value, requires: bool) -> None:
        """An in-place write: `t` now holds value `v`."""
        if not requires and t._requires_grad and t._sym is not None and v.type == t._sym.type:
            found = self.grad_producer(t._sym)
            if found is not None:
                # A write not recorded for gradients (under no_grad, `t.data = ...`) leaves
                # t's history as it was, as eagerly: the new value goes on t's gradient path.
                v, requires = self._grafted(v, t._sym, found), True
        before = self.value_of(t) if not requires and t._requires_grad and (
            t.is_leaf or (t._data is not None and t._grad_fn is not None)) else None
        if before is not None and v.type == before.type:
            # A leaf written under no_grad (an optimizer step) stays that leaf, and the caller's
            # non-leaf keeps its history: the gradient sums over every value it held (see
            # held_values), as eagerly the new values sit on the same gradient path.
            self.leaf_values.setdefault(id(t), (t, [before]))[1].append(v)
        siblings = ()
        if self.writing is not None:
            self._replaced(t, v)
        memory_view = None
        if t._data is not None:
            if self.dry:
                self.keep_state(t)
            key = _memory_key(t._data)
            if t._base is None and (self.memory_views or t._origin is not None):
                memory_view = self.memory_views.get(key) if t._origin is None else self._origin_view(t)
            leaf, held = self.leaf_tensors.get(key), self.lifted.get(key)
            if leaf is None and self.boundary:
                # the caller's non-leaf, read but not yet written here, counts as a leaf: its
                # history stays, and the values its memory holds sit on it (held_values); one
                # written here takes the new value as a graft instead (_follow_memory)
                leaf = self.boundary.get(key)
                if leaf is not None and leaf._sym is not None:
                    leaf = None
            same_type = held is not None and held.type == v.type
            owner = self._memory_owner(key, t) if same_type else None
            # t's write leaves the counter of the memory's own tensor as it was (t is its .data)
            unversioned = same_type and self._counter_owner(owner)._vbox is not self._counter_owner(t)._vbox
            if leaf is not None and leaf is not t and same_type:
                # Another tensor's write to the memory of a leaf that requires grad and was read
                # (x.data.add_(1), x.detach()[0] = 4 after y = x * 3): the leaf stays that leaf,
                # its gradient the sum over every value it held, as for a write under no_grad.
                # The leaf holds the value through an identity outside the grad set where the
                # write is recorded with history (x.detach().mul_(x)): it is the writer's, so
                # gradient reaching the leaf stops there rather than also flowing down the
                # write's history. So too for a write through its .data or its detach() (d =
                # x.detach(); d.add_(1); y - d), whose later reads must give the leaf no
                # gradient. A detach() shares the leaf's counter, so the leaf's identity is its
                # requires-grad alias of the value: a backward's saved value that is an alias of
                # a value the call leaves in memory is read from that memory (_saved_arrays), so
                # an in-place change of the leaf after the call is caught by the version check.
                v_held = self.builder.emit("cast", v, dtype=v.dtype) if requires or unversioned else \
                    self._alias(v, True)
                self.leaf_values.setdefault(id(leaf), (leaf, [held]))[1].append(v_held)
                self.lifted[key] = v_held
                if leaf._sym is not None:
                    # the leaf itself was written in the call (it holds a value of its own, not
                    # its memory's): it reads the new value too
                    leaf._sym = v_held
            elif same_type and (self.lifted_grad.get(key, t._requires_grad) is not t._requires_grad
                                or (requires and self.lifted_grad.get(key) is False)):
                # The memory's readers that differ from the writer in requires_grad (x.data,
                # after a no_grad write of x) read the new value through an identity of their
                # own: one value read by both would give x the gradient of the alias's uses.
                # (So too where the write gives a writer that required no grad a history and
                # the readers require none: d = a.detach(); d.mul_(w); a * w gives a none.)
                self.lifted[key] = self.builder.emit("cast", v, dtype=v.dtype)
                reader = None if unversioned or not t._requires_grad else self._first_reader(key, without_grad=True)
                if reader is not None and reader is not t and \
                        self._counter_owner(reader)._vbox is not self._counter_owner(t)._vbox:
                    # they read it through a .data (a counter of its own): for them the write
                    # bumps no version, and what saved their value reads the new one, as torch's
                    # saved tensor is the memory (s.data.t() saved by a @ s.data.t(), then
                    # s written under no_grad)
                    self._rewritten_unversioned(held, self.lifted[key], including_the_write=True)
                    self._reread_views(reader, self.lifted[key])
            else:
                self.lifted[key] = v
            if unversioned:
                self._memory_rewritten(key, held, t, owner)
            self.mutated[key] = (t._data, t)
            # The other tensors over this memory that hold values of their own see t's write
            # (every one: a graft into one makes it the memory's last writer, and the others
            # must still be followed when it writes again)
            writers = self.writers.setdefault(key, {})
            siblings = [w for w in writers.values() if w is not t and w._sym is not None]
            writers[id(t)] = t
        t._sym = v
        t._requires_grad = t._requires_grad or requires
        if t._data is None:
            self.alive.append(weakref.ref(t))
        if self.writing is not None:
            # (first: the views' values re-derived next are current)
            if self._view_values(t):
                self._stale_views(t)
            if t._data is not None and key in self.view_bases:
                # the views made here of another tensor over this memory on t's counter: x[0]
                # saved by x[0] * w, then x.detach().zero_()
                for ref in list(self.view_bases[key].values()):
                    other = ref()
                    if other is not None and other is not t and self._view_values(other):
                        self._stale_views(other)
        if id(t) in self.views:
            self._refresh_views(t)
        if id(t) in self.outside_views:
            self._refresh_outside_views(t)
        if self.detach_source:
            self._follow_detach(t)
        for sibling in siblings:
            if sibling._sym is not None:        # (not already reading memory again)
                self._follow_memory(t, sibling)
        if t._data is not None and key in self.view_bases:
            self._refresh_memory_views(t, key)
        if memory_view is not None and memory_view is not t and memory_view is not self.graft_writer:
            # t is a detach() or .data of a view made before the call: its write is the view's
            # memory, so it reaches the view's base (and through it the base's other views)
            box = self._counter_owner(memory_view)._vbox
            if self._counter_owner(t)._vbox is not box:
                self._quiet(box)        # (t is the view's .data)
            self._graft_into(t, memory_view)
            if t._sym is not None:
                # t keeps a value of its own (with a history): the view's next write reaches it
                # as its sibling (_follow_memory)
                self.mutated[key] = (t._data, t)

    def _memory_rewritten(self, key, held: Value, t: Tensor, owner: Tensor) -> None:
        """Memory `key` from outside the call, which held `held`, was written by `t` without a
        version bump (through a `.data`): the nodes that saved this memory (through any tensor
        over it, and views of its owner) read its new value, as torch's saved tensors do (where
        a write bumped their tensor's counter, the backward raises first: see _replaced).
        (The write's own op reads the writer's value from before it, which torch's in-place
        node saves; another tensor over the memory, x in x.data.div_(x), its node reads after
        the write, as torch's saved x is that memory.)"""
        own = held if self.lifted_grad.get(key) is t._requires_grad else self.aliases.get((held.id, t._requires_grad))
        for was in (held, self.aliases.get((held.id, False)), self.aliases.get((held.id, True))):
            if was is not None:
                self._rewritten_unversioned(was, self.lifted[key], including_the_write=was is not own)
        self._reread_views(owner, self.lifted[key])

    def _refresh_memory_views(self, t: Tensor, key) -> None:
        """`t`, from outside the call, was written: the views of the other tensors over its memory
        (its detach()es, .data, its source) read their part of the new value, as eagerly."""
        for ref in list(self.view_bases[key].values()):
            other = ref()
            if other is None or other is t or other._sym is not None:
                continue        # (one holding a value of its own was handled by _follow_memory)
            if id(other) in self.views:
                self._refresh_views(other)
            if id(other) in self.outside_views:
                self._refresh_outside_views(other)

    def _follow_memory(self, t: Tensor, sibling: Tensor) -> None:
        """`t`, a tensor from outside the call, was written in place, and `sibling` (another one
        over the same memory: `x.detach()` or `x.data` of an argument `x` the call wrote before)
        still holds its own earlier write. Eagerly it sees t's write: with no gradient path
        it reads the memory again (its latest value); one that requires grad takes the new
        value on its own gradient path (graft), as a traced detach's source does."""
        if not sibling._requires_grad:
            if self.writing is not None:
                self._replaced(sibling, None)
            sibling._sym = None
            if id(sibling) in self.views:
                self._refresh_views(sibling)
        elif sibling is not self.graft_writer:
            # (also a writer with a history of its own: t.add_(a0.sigmoid()) on t = a0.detach();
            # not back into the writer whose graft this write is)
            self._graft_into(t, sibling)

    def _graft_into(self, t: Tensor, source: Tensor) -> None:
        """`source` takes t's value on its own gradient path (graft), recorded for gradients
        whatever the grad mode: a write that reaches a tensor through memory it shares never
        changes its history, eagerly (`with no_grad(): y.detach().add_(1)` included)."""
        from .grad_mode import enable_grad, no_grad
        found = self.grad_producer(source._sym)
        name = self._node_name(found[0]) if found is not None else None
        # The writer keeps the value it wrote, with that write's own history (`d.mul_(b)` on
        # d = v.detach(): d's gradient reaches b), so the graft's refresh of the aliases skips it
        previous, self.graft_writer = self.graft_writer, (t if t._requires_grad else None)
        try:
            # (a source without a gradient path gets none from the writer's history: v.detach().add_(b))
            with enable_grad() if source._requires_grad else no_grad():
                self.record("graft", [t, source], None, name, source)
        finally:
            self.graft_writer = previous

    def _node_name(self, ins: Instr) -> str:
        """torch's name of the node of `ins`, an instruction recorded with grad (a graft takes its
        source's: the graft's own op name must never show, in a grad_fn or an error)."""
        return self.grad_instrs.get(id(ins)) or _default_name(ins.op)

    def _grafted(self, v: Value, source: Value, found: tuple) -> Value:
        """A graft of `v` onto `source`'s gradient path (`found`: source's producer), recorded
        for gradients under the name of source's node (its grad_fn stays as it was)."""
        out = Value(source.type)
        ins = Instr("graft", (v, source), (out,), ())
        self.instrs.append(ins)
        self.grad_instrs[id(ins)] = self._node_name(found[0])
        return out

    # ------------------------------------------------------------ views
    # Eagerly a view shares its base's memory; here values are SSA, so a view is
    # recorded as (base, chain of view ops), an in-place write through it becomes
    # a write of the base (as eager's CopySlices), and after any write to a base
    # its live views are derived from it again.
    def _mark_view(self, t: Tensor, src: Tensor, op: str, frozen: tuple, src_value: Value) -> None:
        if op == "reshape" and not self._reshape_is_view(src, frozen):
            return      # a reshape that copies (torch's reshape of a strided tensor)
        base = src._base if src._base is not None else src
        t._base = base
        t._view_chain = (src._view_chain if src._base is not None else ()) + ((op, frozen),)
        self.views.setdefault(id(base), []).append(weakref.ref(t))
        self._hold_view_value(base, t._sym)
        if base._data is not None:
            self._note_view_base(base)
        # What this view reads: the base's value, or (memory from outside the call that the call
        # has not written) the base's array. After the call the view is the base's memory while
        # the base still holds that (see _memory_link).
        if base._data is not None and base._sym is None:
            root = base._data
        elif src._base is None:
            root = src_value
        else:
            root = self.view_values.get(src_value.id, (_STALE,))[0] if src._data is None else _STALE
        self.view_values[t._sym.id] = (root, t._view_chain)
        if type(root) is np.ndarray and self.aliases:
            self.alias_counters.setdefault(t._sym.id, self._counter_owner(t)._vbox)    # (see alias_memory)
        if (src._no_grad_view or (base._requires_grad and not is_grad_enabled())) and not INTERNAL_VIEWS[0]:
            # as eagerly (dispatch._make_view): a view made under no_grad of a tensor that
            # requires grad requires grad, with no gradient path to its base
            t._no_grad_view = True
            if not is_grad_enabled():
                t._requires_grad = True
            else:       # a view of such a view: its node names it in the error (rebased_error)
                t._view_node = self.grad_fn_of(t)
        elif (not is_grad_enabled() or src.__dict__.get("_no_grad_mode")) and not INTERNAL_VIEWS[0]:
            # as eagerly: every view made under no_grad is marked (and a view of one); once its
            # base gains a history in place, its use with grad raises (_refresh_views)
            t.__dict__["_no_grad_mode"] = True

    @staticmethod
    def _reshape_is_view(src: Tensor, frozen: tuple) -> bool:
        """Whether `src.reshape(shape)` is a view, as eagerly: NumPy's reshape of src's layout
        (a contiguous tensor always; a view or strided tensor where its strides allow)."""
        if src._base is None and src._layout is None and (src._data is None or src._data.flags.c_contiguous):
            return True
        from .layout import layout_stand_in
        stand_in = layout_stand_in(src)
        if stand_in.size == 0:
            return True         # torch views an empty tensor in any shape (and NumPy shares no memory)
        return bool(np.may_share_memory(OPS["reshape"].ref(stand_in, **dict(frozen)), stand_in))

    def _write_through_view(self, view: Tensor, v: Value, requires: bool, fill: bool = False,
                            graft: bool = False) -> Tensor:
        """`view` was written in place with value `v`: write the base (eager's CopySlices);
        `fill`: every element of it got one value (see dispatch._scatter); `graft`: the write
        came through a detach() or .data of the view (_follow_detach)."""
        from .dispatch import _scatter, view_of
        base = view._base
        result = self.symbolic(v, requires or view._requires_grad)
        if graft and base._grad_fn is None and base._requires_grad:
            # A leaf written through a detach() or .data of its view (`x[0].detach().add_(1)`):
            # eagerly its memory changes, not its identity, so it stays that leaf (rebind sums
            # the gradient over the values it held), as for a write under no_grad
            from .grad_mode import no_grad
            with no_grad():
                new_base = _scatter(base, view._view_chain, result, fill)
            self.rebind(base, new_base._sym, False)
            self._hold_view_value(base, v)
            return view
        new_base = _scatter(base, view._view_chain, result, fill)
        if view._data is not None and not any(ref() is view for ref in self.outside_views.get(id(base), ())):
            # A view made before the call (its memory is the base's): it holds the new value too.
            self.outside_views.setdefault(id(base), []).append(weakref.ref(view))
            self._claim_memory(view)
        self.rebind(base, new_base._sym, new_base._requires_grad)     # re-derives every view of it
        # the value written is the view's memory from here on (sqrt_ through a view saves it):
        # a later write of the base makes it stale, as the values the views held
        self._hold_view_value(base, v)
        return view

    def _view_again(self, base: Tensor, view: Tensor) -> Tensor:
        """`view`'s chain applied to `base`'s value now (recorded ops). A view that requires grad
        keeps its gradient path under no_grad (an optimizer's write), as eagerly."""
        from .dispatch import view_of
        if view._requires_grad and not is_grad_enabled():
            from .grad_mode import enable_grad
            with enable_grad():
                return view_of(base, view._view_chain)
        return view_of(base, view._view_chain)

    def rebased_error(self, t: Tensor) -> RuntimeError:
        """torch's error for using a view made under no_grad whose base was written since."""
        return no_grad_view_rebased_error(t.__dict__.get("_view_node"), t._output_nr)

    def _refresh_outside_views(self, base: Tensor) -> None:
        """`base` was written: the views of it made before the call that the call has read
        (or written) are its memory, so they hold their part of its new value."""
        for ref in list(self.outside_views[id(base)]):
            view = ref()
            if view is None or view._base is not base or (self.stand_ins and self._superseded(view)):
                continue
            if view.__dict__.get("_no_grad_mode") and base._requires_grad:
                # made under no_grad (or a view of such a view): torch will not regenerate its
                # history now that its base has one, so its next use with grad raises
                self.rebased_outside[id(view)] = view
            again = self._view_again(base, view)
            self._quiet_unless_writing(view)
            self.rebind(view, again._sym, view._requires_grad or again._requires_grad)

    def _stale_views(self, base: Tensor) -> None:
        """`base` is written: every value a view of it made here held (also views no longer
        alive: `h[0] * h[1]` saved two) shares its counter, so a backward reading one raises,
        as torch's check of the saved view does (named as torch's regenerated view)."""
        box, version, first = self.writing
        if self._counter_owner(base)._vbox is not box:
            return
        regenerated = _REGENERATED_GRAD_VIEW if base._requires_grad else _REGENERATED_VIEW
        for v in self._view_values(base):
            self._mark_stale(v, (box, version, _no_tensor, regenerated, first))

    def _hold_view_value(self, base: Tensor, v: Value) -> None:
        """A view of `base` held value `v` (its memory): a later write of base makes it stale."""
        entry = self.view_held.get(id(base))
        if entry is None or entry[0]() is not base:     # (a dead tensor's id, reused)
            entry = self.view_held[id(base)] = (weakref.ref(base), [])
        entry[1].append(v)

    def _view_values(self, base: Tensor) -> list:
        """The values views of `base` made here held (see _hold_view_value)."""
        entry = self.view_held.get(id(base))
        return entry[1] if entry is not None and entry[0]() is base else []

    def _refresh_views(self, base: Tensor) -> None:
        refs, self.views[id(base)] = self.views[id(base)], []
        for ref in refs:
            view = ref()
            if view is None or view._base is not base:
                continue
            again = self._view_again(base, view)
            if self.writing is not None:
                self._replaced(view, again._sym)
            view._sym, view._requires_grad = again._sym, again._requires_grad
            if base._requires_grad and view.__dict__.get("_no_grad_mode"):
                view._rebased = True        # torch will not regenerate its history (see Tensor.grad_fn)
            self.views[id(base)].append(ref)
            if self.detach_aliases:
                self._refresh_aliases(view)

    def retain(self, t: Tensor) -> None:
        """`t.retain_grad()` on a traced non-leaf: a backward also fills its `.grad`."""
        if not any(r() is t for r in self.retained):
            self.retained.append(weakref.ref(t))

    def detach(self, t: Tensor, shares_version: bool = True) -> Tensor:
        """`t.detach()` / `t.data` of a traced tensor: a value with no gradient path (an identity
        op outside the grad set). Eagerly the two share memory, so they stay linked: an in-place
        write to either gives the other the new value (see _follow_detach), and after the call
        they share one array (see memory_homes). `.data` does not share the version
        counter (`shares_version=False`)."""
        d = self.symbolic(self._identity_of(t), False)
        if shares_version:
            # (a backward reading d's value raises after a write of t, even once d is gone:
            # fg.grad's differentiated argument is a detach() that does not outlive the grad)
            self.same_counter.setdefault(t._sym.id, []).append(d._sym)
        # t is held (for the call), not weakly: a temporary view or detach (y[0].detach(),
        # y.detach().detach()) must outlive its detach for a write to reach the tensor under it.
        self.detach_source[id(d)] = (weakref.ref(d), t, shares_version)
        self.detach_aliases.setdefault(id(t), []).append(weakref.ref(d))
        return d

    def memory_homes(self) -> dict:
        """Where each symbolic tensor's memory is, eagerly, another tensor's: id(t) ->
        (weak ref to t, root value or None, root array or None, view chain, version counter).

        A detach() or .data is its source's memory; a view made here is its base's, seen
        through its view chain; following those links up from t ends at a root tensor: a
        symbolic one (its value, `root value`, is what the program outputs) or one from
        outside the call (its array, `root array`). After the call t is that memory seen
        through the chain, as eagerly, and shares the version counter of the highest tensor
        it reaches by links that share one (all but `.data`). Only links still valid count:
        a detach whose source was not written since, a view whose base holds the value it
        was derived from. Call it before release_detach_links (which drops the sources)."""
        links = {}
        for t in self.alive_tensors():
            if t._sym is not None and t._data is None:
                link = self._memory_link(t)
                if link is not None:
                    links[id(t)] = link
        homes = {}
        for t_id, (t, parent, chain, shares) in links.items():
            owner, sharing, seen = (parent if shares else t), shares, {t_id}
            root = parent
            while id(root) in links and id(root) not in seen:
                seen.add(id(root))
                _, up, up_chain, up_shares = links[id(root)]
                chain = up_chain + chain
                sharing = sharing and up_shares
                if sharing:
                    owner = up
                root = up
            symbolic = root._data is None
            homes[t_id] = (weakref.ref(t), root._sym if symbolic else None, None if symbolic else root._data,
                           chain, owner._vbox)
        return homes

    def _memory_link(self, t: Tensor):
        """(t, the tensor whose memory t is, view chain, shares its version counter) or None."""
        link = self.detach_source.get(id(t))
        if link is not None and link[0]() is t:
            source = link[1]
            took = self.took_value
            if source._sym is not None and (self.identity_source.get(t._sym.id) is source._sym
                                            or took.get(source._sym.id) is t._sym
                                            or took.get(t._sym.id) is source._sym):
                return t, source, (), link[2]
            return None
        base = t._base
        derived = self.view_values.get(t._sym.id)
        if base is None or derived is None or derived[1] != t._view_chain:
            return None
        root = derived[0]
        if base._data is None:
            valid = base._sym is root
        else:       # memory from outside the call: the same array unwritten, or the value it read
            written = self.mutated.get(_memory_key(base._data))
            valid = root is base._data and base._sym is None if written is None else \
                written[1] is base and base._sym is root
        return (t, base, t._view_chain, True) if valid else None

    def release_detach_links(self) -> None:
        """The call has returned, so no write can reach a detach() any more: stop holding
        the tensors detached from (a value_and_grad's loss and gradients before their
        detach() would otherwise be kept alive and become outputs, each written by a
        kernel). A detach still shares its source's memory after the call: see memory_homes."""
        self.detach_source.clear()

    def _identity_of(self, t: Tensor) -> Value:
        """A new value equal to t's (an identity cast outside the grad set), remembered as such."""
        v = self.builder.emit("cast", t._sym, dtype=t._sym.dtype)
        self.identity_source[v.id] = t._sym
        return v

    def _follow_detach(self, t: Tensor) -> None:
        """`t` was written in place. If it is a detach() of a traced tensor, that tensor takes the
        new value on its own gradient path (graft), which refreshes its aliases, this one among
        them; otherwise its own detach() aliases take the new value."""
        link = self.detach_source.get(id(t))
        if link is not None and link[0]() is t and link[1]._sym is not None:
            source = link[1]
            before = source._sym
            # The .data of a view writes its base's memory: what saved the base reads it too.
            # (A base from outside the call holds its memory's value, `lifted`.)
            base = source._base
            outside = base is not None and base._data is not None
            key = _memory_key(base._data) if outside else None

            def base_value():
                return self.lifted.get(key) if outside else base._sym if base is not None else None
            base_before = base_value()
            if not link[2]:
                # a .data write: the source's counter (its base's) takes no bump for it
                self._quiet(self._counter_owner(source)._vbox)
            self._graft_into(t, source)
            self.took_value[source._sym.id] = t._sym
            if not link[2] and source._sym.type is before.type:
                # (including the write's own op: it reads t's value, an identity of `before`, so
                # `before` there is the source as another operand, v.data.div_(v), whose memory
                # torch's node saved)
                self._rewritten_unversioned(before, source._sym, including_the_write=True)
                self._reread_views(source, source._sym)
                base_now = base_value()
                if base_before is not None and base_now is not base_before and base_now.type is base_before.type:
                    if outside:
                        self._memory_rewritten(key, base_before, base, self._memory_owner(key, base))
                    else:
                        self._rewritten_unversioned(base_before, base_now)
                        self._reread_views(base, base_now)
            return
        self._refresh_aliases(t)

    def is_callers_leaf(self, t: Tensor) -> bool:
        """Whether `t` is a leaf from outside the call that requires grad, as the call read it
        (it stays a leaf whatever reaches its memory: an in-place op of its own raises)."""
        return t._data is not None and self.leaf_tensors.get(_memory_key(t._data)) is t

    def _grad_reader(self, key):
        """The tensor that reads memory `key` (from outside the call) with requires_grad (a leaf or
        the caller's non-leaf), or None."""
        reader = self.leaf_tensors.get(key)
        return reader if reader is not None else self.boundary.get(key)

    def _memory_owner(self, key, t: Tensor) -> Tensor:
        """The tensor whose memory `key` (from outside the call) is: the one reading it with
        requires_grad, else the first to read it (`t` if none did)."""
        owner = self._grad_reader(key)
        if owner is None:
            owner = self._first_reader(key)
        return t if owner is None else owner

    def _reread_views(self, base: Tensor, now: Value) -> None:
        """`base`'s memory now holds `now` (a `.data` write): the values its views made here held
        (a.t() saved by a.t() @ a) are that memory too, so the VJPs that saved them read their
        part of `now` (see read_as)."""
        for v in self._view_values(base):
            entry = self.view_values.get(v.id)
            if entry is None or v.id in self.stale:
                # (a value an in-place write replaced is memory no more: what saved it, as an
                # in-place op's node saves its operand's old value, keeps it: v3.mul_(a))
                continue
            w = now
            for op, frozen in entry[1]:
                w = self.builder.emit(op, w, **dict(frozen))
            if w.type is v.type:
                self._rewritten_unversioned(v, w, including_the_write=True)

    def _rewritten_unversioned(self, before: Value, now: Value, including_the_write: bool = False) -> None:
        """The memory that held `before` holds `now`, written through a `.data` alias: no
        version bump, so no backward raises, and the values nodes saved before the write (a
        saved tensor is that memory) read the new values (see read_as). The write's own
        instructions read `before`, as an in-place op's node saves the value it overwrites
        (unless `including_the_write`: `before` is another tensor's value, not the writer's)."""
        first = self.writing[2] if self.writing is not None and not including_the_write else len(self.instrs)
        for key, (value, at) in list(self.read_as.items()):
            if value is before:
                self.read_as[key] = (now, at)
            elif self.promoted_from.get(value.id) is before:
                self.read_as[key] = (self._promoted_again(now, value.type.dtype), at)
        self.read_as[before.id] = (now, first)
        # An op's operand promoted to its dtype (x32 in x64 / x32): torch's node saved the
        # operand, so its VJP reads the memory's new values promoted again
        for copy in self.same_counter.get(before.id, ()):
            if self.promoted_from.get(copy.id) is before and copy.id not in self.read_as:
                self.read_as[copy.id] = (self._promoted_again(now, copy.type.dtype), first)

    def _promoted_again(self, now: Value, dtype) -> Value:
        """`now` promoted to `dtype`, for the VJPs that read a promoted copy of the value it replaced."""
        copy = self.builder.emit("cast", now, dtype=dtype)
        self.promoted_from[copy.id] = now
        return copy

    def vjp_reads(self, instrs) -> dict:
        """{id(instr): the instruction as its VJP reads it} for the instructions among `instrs`
        that saved a value a `.data` write replaced after them (see read_as): ir.autodiff's `reads`."""
        if not self.read_as:
            return {}
        positions = {id(x): k for k, x in enumerate(self.instrs)}
        read_as, found = self.read_as, {}

        def read_at(v: Value, at: int) -> Value:
            entry = read_as.get(v.id)           # (the value now, if written after instruction `at`)
            return entry[0] if entry is not None and entry[1] > at else v
        for ins in instrs:
            at = positions.get(id(ins))
            if at is None:
                continue
            inputs = tuple(read_at(v, at) for v in ins.inputs)
            outputs = tuple(read_at(v, at) for v in ins.outputs)
            if inputs != ins.inputs or outputs != ins.outputs:
                found[id(ins)] = Instr(ins.op, inputs, outputs, ins.attrs, ins.loc)
        return found

    def _refresh_aliases(self, t: Tensor) -> None:
        """t's value changed: its detach()es (and theirs, and their views) read it again."""
        for ref in self.detach_aliases.get(id(t), ()):
            alias = ref()
            if alias is not None and alias is not t and alias is not self.graft_writer and alias._sym is not None:
                new = self._identity_of(t)
                found = self.grad_producer(alias._sym) if alias._requires_grad else None
                if found is not None:
                    # an alias with a history of its own (d = v.data; d.div_(v)) keeps it, as
                    # eagerly: the memory's new value goes on its gradient path
                    new = self._grafted(new, alias._sym, found)
                    self.took_value[new.id] = t._sym
                if self.writing is not None:
                    self._replaced(alias, new)
                alias._sym = new
                if id(alias) in self.views:
                    self._refresh_views(alias)
                self._refresh_aliases(alias)

    def assign_data(self, t: Tensor, value: Tensor) -> None:
        """`t.data = value` inside a trace: a write of t that keeps its history (see rebind)
        where the value fits t's memory."""
        if value._data is None and tuple(t.shape) == tuple(value.shape) and \
                (t._data is not None or t._dtype is value._dtype):
            self.rebind(t, value._sym, False)
            return
        t._data, t._sym, t._dtype = value._data, value._sym, value._dtype

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

    def _materialize_value(self, v: Value, partial: bool = False) -> np.ndarray:
        for w, array in zip(self.inputs[self.inputs_known:], self.input_arrays[self.inputs_known:]):
            self.known[w.id] = array
        self.inputs_known = len(self.inputs)
        if v.id not in self.known:
            if not partial:
                self.breaks.append((user_location(), f"{_reading_method()}() reads the value of a {v.type} tensor"))
            known = self.known
            for k in range(self.instrs_known, len(self.instrs)):
                ins = self.instrs[k]
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

    # ------------------------------------------------------------ autograd
    def through_grafts(self, v: Value) -> Value:
        """The value whose history `v` carries: v itself, or where v is a graft of a write that
        kept a tensor's history (a write through its .data, or under no_grad), the value grafted
        onto, followed down."""
        found = self.grad_producer(v)
        while found is not None and found[0].op == "graft":
            v = found[0].inputs[1]
            found = self.grad_producer(v)
        return v

    def input_value(self, x: Tensor):
        """The program input (or its requires-grad identity alias) that stands for the caller's
        tensor `x` as it was when the call read it: an in-place write inside the call re-binds x
        to a later value, but gradients flow to the value the caller passed in."""
        if x._sym is None:
            held = self.leaf_values.get(id(x))
            if held is not None and held[0] is x:       # its memory was written through an alias
                return held[1][0]
            return self.value_of(x)
        made_here = x.__dict__.get("_leaf_value")
        if made_here is not None:           # a leaf made inside the call: the value it became a leaf with
            return made_here
        first = self.first_values.get(id(x))
        if first is not None and first[0] is x:     # first read after its memory was written here
            return first[1]
        for v, a in zip(self.inputs, self.input_arrays):
            if a is x._data:
                return self.aliases.get((v.id, x._requires_grad), v) \
                    if self.lifted_grad.get(id(a), x._requires_grad) is not x._requires_grad else v
        return self.value_of(x)

    def held_values(self, x: Tensor, first=None) -> list:
        """The values leaf `x` held in this call: eagerly a write under no_grad changes a
        leaf's memory, not its identity, so d/dx sums the uses of each (`first`: what stands
        for the value it had before the first write, if not the one it was read as). For a
        tensor made in the call (a retain_grad() non-leaf), the value its node made: a write
        that kept its history (through its .data, under no_grad) leaves its node, where
        torch's retain_grad hook reads the gradient, as it was."""
        held = self.leaf_values.get(id(x))
        if held is None or held[0] is not x:
            if x._data is None and x._sym is not None and first is None:
                return [self.through_grafts(x._sym)]
            return [self.value_of(x) if first is None else first]
        values = [held[1][0] if first is None else first] + held[1][1:]
        if self.aliases:
            # where a .data or detach() alias lifted x's memory first, x read each value its
            # memory held through a requires-grad identity of it (_alias): that identity is
            # x's value (the raw one is the alias's, whose uses give x no gradient)
            values = [self.aliases.get((v.id, x._requires_grad), v) for v in values]
        return values

    def gradients(self, outputs, seeds, inputs, create_graph: bool, retain_graph: bool = True,
                  retained: list | None = None, partial: list | None = None, outside: int = 0):
        """Emit d(outputs)/d(inputs) into the program; returns symbolic gradients (None if unused).

        Without retain_graph, the instructions it differentiates are marked freed, as
        torch frees the saved tensors of the nodes a backward traverses. With `retained`
        (a list), the retain_grad() tensors on the backward's path are differentiated too
        and (tensor, gradient) pairs appended to it: torch's backward fills their .grad.
        A backward that raises (a freed node, a replaced saved value) appends to `partial`
        (a list, when given) the (tensor, gradient) pairs torch's engine filled before it
        met the error (_before_the_failure). The last `outside` inputs are tensors from outside
        the call, differentiated at the values they came in with."""
        if self.backward_start is None:
            self.backward_start = len(self.program.instrs)
        instrs = [ins for ins in self.program.instrs if id(ins) in self.grad_instrs]
        out_values = [self.value_of(o) for o in outputs]
        seed_values = [self.value_of(s) for s in seeds]
        # (a tensor from outside the call: the value it came in with, whose history it had)
        groups = [self.held_values(x, None if k < len(inputs) - outside else self.input_value(x))
                  for k, x in enumerate(inputs)]
        wrt = [v for group in groups for v in group]
        active = active_values(instrs, out_values, wrt)
        on_path, kept = [], ()
        if retained is not None:
            taken = {v.id for v in wrt}
            kept = [t for t in (r() for r in self.retained) if t is not None]
            # (each differentiated at the value its node made: see held_values)
            on_path = [t for t in kept if t._sym is not None and self.through_grafts(t._sym).id in active
                       and t._sym.id not in taken]
            groups += [self.held_values(t) for t in on_path]
            wrt += [v for group in groups[len(inputs):] for v in group]
        # (whichever of a replaced saved value and a freed node the backward meets first raises:
        # stale_saved stops at a freed node)
        failed = []
        error = None
        if self.stale:
            found = self.stale_saved(instrs, active, failed)
            if found is not None:
                v, box, version, where = found
                error = modified_error(v.type.shape, v.type.dtype.name, where, self.version_now(box), version)
        if error is None and self.freed:
            freed = self._freed_met_first(instrs, active)
            if freed is not None:
                failed, error = [freed], RuntimeError(_FREED_MSG)
        if error is not None:
            if partial is not None:
                partial += self._before_the_failure(instrs, active, instrs.index(failed[0]), out_values,
                                                    seed_values, inputs, groups[:len(inputs)], on_path,
                                                    retain_graph)
            raise error
        if not retain_graph:
            # (the instructions whose VJP ran: an active output and an active input; a target's
            # own instruction with nothing active below stays usable, as torch's node)
            for ins in instrs:
                if id(ins) not in self.never_freed and _vjp_runs(ins, active):
                    self.freed.add(id(ins))
        # (taken before the backward is emitted: _producers() scans instructions once, and
        # those of the backward join the recorded-with-grad set only below)
        requiring = self._requiring_grad() if create_graph else ()
        before = len(self.program.instrs)
        grads = sum_groups(self.builder, emit_backward(self.builder, instrs, out_values, seed_values, wrt,
                                                       active=active, reads=self.vjp_reads(instrs)), groups)
        if create_graph:
            self._record_with_grad(self.program.instrs[before:], requiring)
        grads = [None if g is None else self.symbolic(g, id(g) in requiring) for g in grads]
        for k, x in enumerate(inputs if ANY_LEAF_HOOKS[0] else ()):
            # a leaf's register_hook functions, traced on its symbolic gradient (tracer/hooks.py)
            if grads[k] is not None and x._grad_fn is None and x.__dict__.get("_hooks"):
                grads[k] = run_on_tensor(x._hooks, grads[k], create_graph)
        if retained is not None:
            retained.extend((t, g) for t, g in zip(on_path, grads[len(inputs):]) if g is not None)
            grads = grads[:len(inputs)]
            # a target that retains its grad gets a copy of the gradient returned (torch's hook clones)
            kept_ids = {id(t) for t in kept}
            retained.extend((x, g.clone()) for x, g in zip(inputs, grads) if g is not None and id(x) in kept_ids)
        return grads

    def _before_the_failure(self, instrs, active: set, failed: int, out_values, seed_values, inputs, groups,
                            on_path, retain_graph: bool) -> list:
        """A backward through `instrs` raises at instrs[failed]: torch's engine has run the nodes
        made after it (it runs them latest first), filling the .grad of each leaf whose
        gradient they complete (its AccumulateGrad runs at once) and of each retain_grad()
        tensor whose node is the failing one or ran; without retain_graph those nodes are
        freed. Returns those (tensor, gradient) pairs (a backward without create_graph)."""
        later = instrs[failed + 1:]
        # (values the nodes not run yet read: a gradient reaching them is not complete)
        early = {id(v) for ins in instrs[:failed + 1] if _vjp_runs(ins, active) for v in ins.inputs}
        positions = {id(ins): k for k, ins in enumerate(instrs)}

        def complete(x, group) -> bool:
            if not group or any(id(v) in early for v in group):
                return False
            # a retain_grad() non-leaf: its hook runs as its node starts, the failing one or one that ran
            found = self.grad_producer(x._sym) if x._sym is not None else None
            return found is None or positions.get(id(found[0]), -1) >= failed
        candidates = [(x, group) for x, group in zip(inputs, groups) if complete(x, group)]
        candidates += [(t, group) for t, group in ((t, self.held_values(t)) for t in on_path) if complete(t, group)]
        if not retain_graph:
            active = active_values(instrs, out_values, [v for _, group in candidates for v in group])
            for ins in later:
                if id(ins) not in self.never_freed and _vjp_runs(ins, active):
                    self.freed.add(id(ins))
        if not candidates:
            return []
        wrt = [v for _, group in candidates for v in group]
        active = active_values(later, out_values, wrt)
        grads = sum_groups(self.builder, emit_backward(self.builder, later, out_values, seed_values, wrt,
                                                       active=active, reads=self.vjp_reads(later)),
                           [group for _, group in candidates])
        return [(x, self.symbolic(g, False)) for (x, _), g in zip(candidates, grads) if g is not None]

    def _requiring_grad(self) -> set:
        """The ids of the values of this trace that require grad: floating outputs of the
        instructions recorded with grad, and the tensors from outside or leaves behind them."""
        requiring = {i for i, (ins, k) in self._producers().items()
                     if ins.outputs[k].type.dtype.is_floating_point and k not in OPS[ins.op].nondiff_outputs}
        requiring.update(self._grad_sources())
        return requiring

    def _record_with_grad(self, emitted, requiring: set) -> None:
        """A create_graph backward's instructions `emitted`: record with grad those that read a
        value requiring grad (a seed that does, a forward value a VJP reads), as eagerly each
        op of a gradient's history is, and add their outputs to `requiring`. A gradient that
        reads none (d(2x)/dx) is a plain tensor, as torch's."""
        for ins in emitted:
            opdef = OPS[ins.op]
            if opdef.vjp is not None and any(id(u) in requiring for u in ins.inputs):
                self.grad_instrs[id(ins)] = None
                requiring.update(id(v) for k, v in enumerate(ins.outputs)
                                 if v.type.dtype.is_floating_point and k not in opdef.nondiff_outputs)

    # ------------------------------------------------------------ grad_fn inside a trace
    def grad_fn_of(self, t: Tensor):
        """torch's grad_fn of a traced tensor that requires grad: a node of the class torch
        names the op that made it (MulBackward0...), whose next_functions lead to the nodes
        of its traced inputs, the AccumulateGrad of leaves and the grad_fn of tensors from
        outside the call. For inspection and printing only: backward inside a trace
        differentiates the program, not these nodes."""
        found = self.grad_producer(t._sym)
        return None if found is None else self._node_for(found[0])

    def grad_producer(self, v: Value):
        """(the instruction recorded with grad that defines v, its output index), or None."""
        return self._producers().get(id(v))

    def keep_scalar_operands(self, t: Tensor) -> None:
        """`t` is `alpha * b` made by add/sub(alpha=): its instruction is never freed (as
        node.keep_scalar_operands eagerly)."""
        found = self.grad_producer(t._sym)
        if found is not None:
            self.never_freed.add(id(found[0]))

    def saves_for_backward(self, ins: Instr, needs: tuple | None = None) -> bool:
        """Does `ins`'s VJP read forward values (those torch saves for its node), given which
        inputs need a gradient (all by default), or is its node one that holds state a backward
        releases (node.RELEASES_STATE)? A backward through a freed node raises then."""
        if self.grad_instrs.get(id(ins)) in RELEASES_STATE:
            return True
        needs = (True,) * len(ins.inputs) if needs is None else needs
        in_slots, out_slots = saved_slots(ins.op, ins.attrs, tuple(v.type for v in ins.inputs), needs)
        return bool(in_slots or out_slots)

    def _producers(self) -> dict:
        """id(value) -> (instruction recorded with grad that defines it, output index);
        extended as the program grows."""
        for ins in self.instrs[self._producers_upto:]:
            if id(ins) in self.grad_instrs:
                for k, out in enumerate(ins.outputs):
                    self._producer_map[id(out)] = (ins, k)
        self._producers_upto = len(self.instrs)
        return self._producer_map

    def _node_for(self, ins: Instr):
        """The node of an instruction recorded with grad, and of every such instruction it
        reads from (made once each, inputs first, without recursion: graphs can be deep)."""
        from .dispatch import edge_of
        from .node import grad_accumulator, node_class
        producers, nodes, sources = self._producers(), self._nodes, None
        stack = [ins]
        while stack:
            top = stack[-1]
            if id(top) in nodes:
                stack.pop()
                continue
            waiting = [p[0] for p in (producers.get(id(u)) for u in top.inputs)
                       if p is not None and id(p[0]) not in nodes]
            if waiting:
                stack.extend(waiting)
                continue
            stack.pop()
            if sources is None:
                sources = self._grad_sources()
            edges = []
            for u in top.inputs:
                found, t = producers.get(id(u)), sources.get(id(u))
                if found is not None:
                    edges.append((nodes[id(found[0])], found[1]))
                elif t is not None:
                    edges.append(edge_of(t) if t._grad_fn is not None else (grad_accumulator(t), 0))
                else:
                    edges.append(None)
            name = self.grad_instrs.get(id(top)) or _default_name(top.op)
            nodes[id(top)] = node_class(name)(top.op, top.attrs, tuple(u.type for u in top.inputs),
                                              tuple(v.type for v in top.outputs), tuple(edges),
                                              (None,) * len(top.inputs), {})
        return nodes[id(ins)]

    def _grad_sources(self) -> dict:
        """id(value) -> the tensor from outside the call (a leaf or a non-leaf) or the leaf
        made inside it that the value stands for, for every such tensor that requires grad."""
        sources = {}
        for t in list(self.leaf_tensors.values()) + list(self.boundary.values()):
            # every value a leaf held: history recorded before an in-place update (an
            # optimizer step) reads the value it had then
            for v in self.held_values(t):
                sources[id(v)] = t
            sources[id(self.value_of(t))] = t
        for ref in self.new_leaves:
            t = ref()
            if t is not None and t._sym is not None:
                sources[id(t._sym)] = t
        return sources

    def grad_source_tensors(self) -> list:
        """Every tensor that requires grad that this trace's values stand for: the caller's
        (leaves and non-leaves) and the leaves made in the call."""
        return list(self._grad_sources().values())

    def leaves_behind(self, t: Tensor) -> list:
        """The tensors that require grad (the caller's, or leaves made in the call) that traced
        `t`'s value reads through instructions recorded with grad: `engine.leaves_behind` for a
        tensor of this trace."""
        producers, sources = self._producers(), self._grad_sources()
        found, seen, stack = [], set(), [t._sym]
        while stack:
            v = stack.pop()
            if id(v) in seen:
                continue
            seen.add(id(v))
            source = sources.get(id(v))
            if source is not None:
                found.append(source)
                continue
            producer = producers.get(id(v))
            if producer is not None:
                stack.extend(producer[0].inputs)
        return found

    def _freed_met_first(self, instrs, active: set):
        """torch's "backward through the graph a second time" error is raised at a node an earlier
        backward freed (without retain_graph) that saved values for its VJP (x * x, x * 2; not
        x + y, whose backward reads nothing): the last such instruction the backward runs (the
        first it meets), or None. Not a target's own instruction with nothing active below it
        (its VJP does not run: autograd.grad(z, [loss]) after loss.backward())."""
        for ins in reversed(instrs):
            if _vjp_runs(ins, active) and self._freed_and_saving(ins, active):
                return ins
        return None

    def _freed_and_saving(self, ins: Instr, active: set) -> bool:
        """Whether a backward through `ins` (its VJP runs) raises the freed-graph error."""
        return id(ins) in self.freed and self.saves_for_backward(ins, tuple(v.id in active for v in ins.inputs))

    def backward(self, roots, seeds, inputs, create_graph: bool, retain_graph: bool = True) -> None:
        """`loss.backward()` inside a trace: accumulate symbolic gradients into leaves' `.grad`."""
        if inputs is not None:
            leaves = list(inputs)
        else:
            for root in roots:
                self.value_of(root)     # (a root that is itself a leaf joins leaf_tensors here)
            leaves = list(self.leaf_tensors.values()) + [t for t in (r() for r in self.retained)
                                                         if t is not None and t._sym is not None]
            leaves += [t for t in (r() for r in self.new_leaves)
                       if t is not None and t._sym is not None and t._requires_grad]
        # Tensors from outside the call with a history of their own (a non-leaf argument, the
        # output of an eager module): their gradients continue through that history when the
        # call returns (compile._finish), as eagerly the backward would go on into it
        outside = list(self.boundary.values()) if inputs is None else []
        # with `inputs`, the retain_grad() tensors on the way get their .grad too (as torch's)
        retained = [] if inputs is not None else None
        partial = [] if not create_graph else None
        try:
            grads = self.gradients(roots, seeds, leaves + outside, create_graph, retain_graph, retained, partial,
                                   outside=len(outside))
        except RuntimeError:
            # (what torch's engine filled before the error; tensors from outside the call come
            # after every node of the call)
            outside_ids = {id(t) for t in outside}
            self.fill_retained([(t, g) for t, g in partial or () if id(t) not in outside_ids])
            raise
        grads, outside_grads = grads[:len(leaves)], grads[len(leaves):]
        if retained:
            given = {id(t) for t in leaves}
            self.fill_retained([(t, g) for t, g in retained if id(t) not in given], create_graph)
        reached = [(t, g) for t, g in zip(outside, outside_grads) if g is not None]
        if reached:
            # (the history each has now, before the call: a write in the call gives it a new one)
            self.outside_backwards.append(([_history_now(t) for t, _ in reached], [g for _, g in reached],
                                           retain_graph, create_graph))
        self.fill_retained([(leaf, g) for leaf, g in zip(leaves, grads) if g is not None], create_graph)

    def fill_retained(self, pairs, create_graph: bool = False) -> None:
        """Accumulate each (tensor, gradient) of `pairs` into the tensor's `.grad`: a leaf's,
        or a retain_grad() non-leaf's, as torch's AccumulateGrad and retain_grad hook do."""
        from .functional import add
        from .grad_mode import enable_grad, no_grad
        with (enable_grad() if create_graph else no_grad()):
            for leaf, g in pairs:
                self.grad_leaves.setdefault(id(leaf), (leaf, leaf._grad))
                if leaf._grad is None:
                    leaf._grad = g
                elif create_graph or not leaf.is_leaf:      # (a retained non-leaf: a new tensor, as torch's hook)
                    leaf._grad = add(leaf._grad, g)
                else:       # torch's AccumulateGrad adds into the existing .grad in place
                    leaf._grad.add_(g)


def _history_now(t: Tensor) -> Tensor:
    """A stand-in for tensor `t` from outside the call that a backward in the call goes on
    into: its shape and the history it has now. A write to `t` later in the call gives `t` the
    call's node when the call returns (compile._finish), and the gradient of the value the
    backward saw belongs to the history before it, as eagerly (x.add_(b) then a backward:
    b's gradient comes once, from the write's node)."""
    if t._grad_fn is None:
        return t
    stand_in = Tensor._wrap(np.empty(t._value_shape(), dtype=t._dtype.np))
    stand_in._grad_fn, stand_in._output_nr, stand_in._requires_grad = t._grad_fn, t._output_nr, True
    return stand_in


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
