"""In-place writes inside a trace, and the version counters they move.

Eagerly an in-place write bumps the version counter its tensor shares with its views
and detach()es (not with `.data`), and a backward that needs a value saved before the
write raises. In a trace values are SSA: a write re-binds the tensor (and the tensors
over the same memory) to a new value, and a value some tensor on that counter held until
the write is marked stale, with the version it was held at; a backward whose VJPs read a
stale value raises torch's error (stale_saved). The counters themselves move when the
call returns (apply_writes).

TraceWrites is one part of tracer.trace.Trace (a mixin): its methods use the state
Trace.__init__ sets up.
"""
from __future__ import annotations

import weakref

import numpy as np

from fusegrad.ir import OPS, Value
from fusegrad.ir.program import Instr, _ids

from .dispatch import _default_name
from .layout import replayed_view
from .saved_checks import NO_GRAD_VIEW_SAVED, NoGradViewSaved, PartNamedWhenRaised, PartViewSaved, output_name
from .node import checking_order, guards_saved_inputs, qualified_name
from .tensor import Tensor


_STALE = object()      # what a view read of its base when that is unknown: never its base's now
_REGENERATED_VIEW = object()    # a stale entry's "new value" for a view that died before the write
_REGENERATED_GRAD_VIEW = object()   # the same, where the base written requires grad (so the view has history)
_NO_HISTORY = object()          # the "new value" of a detach() that died, written through its source: no node


def _no_tensor():
    """A stale entry's reference for a view that died before the write (a dead weakref)."""
    return None


def _memory_key(a: np.ndarray) -> int:
    # A tensor and its .data / detach() share the same ndarray object, and
    # every lifted array stays alive (in input_arrays) for the whole trace,
    # so the object's id identifies the memory for the trace's lifetime.
    return id(a)


def _vjp_runs(ins: Instr, active: set) -> bool:
    """Whether a backward over the values `active` runs `ins`'s VJP: an output and an input of it
    are active (a target's own instruction, with nothing active below it, is not reached, as
    torch's backward stops at the tensors it differentiates)."""
    return any(v.id in active for v in ins.outputs) and any(v.id in active for v in ins.inputs)


def _saving_needs(ins: Instr, needs: tuple, leads_nowhere, name: str) -> tuple:
    """`needs` (which of ins's inputs a backward differentiates) as torch's node saved for them:
    nothing for the gradient of an input in `leads_nowhere` (ids of the values of views made
    under no_grad, whose edges lead nowhere: `x @ v` saves v, not x), as eagerly
    (tracer/dispatch._saving_needs). `needs` itself where no input is such a value."""
    if not leads_nowhere or not any(v.id in leads_nowhere for v in ins.inputs) or \
            not guards_saved_inputs(name, tuple(v.type for v in ins.inputs)):
        return needs
    return tuple(need and v.id not in leads_nowhere for v, need in zip(ins.inputs, needs))


def _has_no_derivative(ins: Instr) -> bool:
    """Whether `ins` is an op recorded without a derivative (x // 2 on a tensor that requires
    grad): a backward that reaches it raises "derivative for aten::... is not implemented"."""
    for name, _ in ins.attrs:
        if name == "no_derivative":
            return True
    return False


class TraceWrites:
    """The in-place writes and version counters of a Trace (see the module docstring)."""

    def begin_write(self, t: Tensor, first: int) -> None:
        """A user-level in-place write of `t` starts (an op with `out=t`, an optimizer's update);
        `first`: the index of its first instruction (the op that computes the value written)."""
        root = self._counter_owner(t)
        box = root._vbox
        entry = self.writes.get(id(box))
        if entry is None:
            entry = self.writes[id(box)] = [box, 0, None if root._data is None else _memory_key(root._data)]
        self.writing = (box, box[0] + entry[1], first)
        # (values made from here on are the write's own or re-derived from its result: current
        # at the version it leaves, never stale by it, _stale_views)
        self.write_values_from = next(_ids)
        entry[1] += 1
        if t._data is not None:
            self.written_arrays.append(t._data)
        for ref in self.views.get(id(root), ()):
            view = ref()
            if view is not None and view._no_grad_view:
                view._rebased = True        # torch will not regenerate its history (see Tensor.grad_fn)
        if self.no_grad_views_made and self.view_bases and root._data is not None:
            # and those of the other tensors from outside the call on this counter, over this
            # memory, whose views are in use (x.detach() or a view's detach() written, where the
            # views are of x: torch's counter is one, so they are stale too; only views made
            # here are in self.views, so none to mark unless one was made under no_grad: an
            # optimizer's write-backs skip the scan)
            for bases in self.view_bases.values():
                for ref in bases.values():
                    base = ref()
                    if base is None or base is root or base._vbox is not box or \
                            not np.may_share_memory(base._data, root._data):
                        continue
                    for view_ref in self.views.get(id(base), ()):
                        view = view_ref()
                        if view is not None and view._no_grad_view:
                            view._rebased = True
        if self.outside_views or t._no_grad_view:
            # (the views of the written tensor's counter owner, and any other on its counter: a
            # detach() of the view, `a.detach().mul_(2)` after `a * 2`, whose owner is the trace's
            # stand-in for the view)
            for base_id, refs in self.outside_views.items():
                for ref in refs:
                    view = ref()
                    if view is not None and view._no_grad_view and (base_id == id(root) or view._vbox is box):
                        self._rebase_outside(view)
            if t._no_grad_view and t._data is not None:
                self._rebase_outside(t)

    def _rebase_outside(self, view: Tensor) -> None:
        """`view`, made before the call under no_grad (or a view of such a view), had its counter
        moved: its next use with grad raises, naming the node a view of a view was made by."""
        if view.__dict__.get("_view_node") is None and view._grad_fn is not None:
            view.__dict__["_view_node"] = view._grad_fn
        self.rebased_outside[id(view)] = view

    def write(self, t: Tensor, v: Value, requires: bool) -> None:
        """A user-level in-place write of `t` with value `v` (see begin_write and rebind)."""
        self.begin_write(t, len(self.instrs))
        try:
            self.rebind(t, v, requires)
        except BaseException as error:
            self._abort_write(error)
            raise
        finally:
            self.writing = None

    def _abort_write(self, error: BaseException | None = None) -> None:
        """The write under way raised (an overlap, a leaf): eagerly it bumped no version; unless
        the error came after the memory took the write (`error.write_done`: _write_through_view)."""
        if error is not None and getattr(error, "write_done", False):
            return
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

    def _replaced(self, t: Tensor, new, without_history: bool = False) -> None:
        """`t` is about to hold value `new` (None: to read its memory again): if a write on its
        counter is under way, the value it holds now (for memory from outside the call: the
        value it was lifted as, and its aliases) is stale from here on. `without_history`: t
        (a detach() written through its source) gets no node from the write."""
        box, version, first = self.writing
        if self._counter_owner(t)._vbox is not box:
            return
        if new is not None:
            # (what t holds after its latest write, by which torch names a saved tensor once
            # t itself is gone: see _saved_input_name)
            self.latest_values[weakref.ref(t)] = _NO_HISTORY if without_history else new
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
            # (where the first reader differs from the owner in requires_grad, `old` is that
            # reader's value, the owner reads an alias of its own: its counter decides; `d * x`
            # of d = x.data, then d written, makes the saved d stale, on d's counter)
            if first_requires is owner._requires_grad:
                reader = owner
            else:
                reader = self._first_reader(key, without_grad=not first_requires)
                if reader is None:
                    reader = owner
            owners_value = owner is not t and self._counter_owner(reader)._vbox is not box
            # The ops that saved it may have read it through one counter alone (a .data of a view
            # from outside, `w @ d`, with the view's stand-in on its base's: _mixed_counter_read),
            # or it is the memory's value such ops read after an earlier write (read_as): torch
            # checks their saved tensor on that counter. A write on it makes them raise (d.mul_(2));
            # a write on another (the base's) leaves them reading the memory's new value.
            saved_through = self.reader_counter(old) or self.read_as_counters.get(old.id)
            if saved_through is box:
                owners_value = False
            elif saved_through is not None and new is not None and new.type == old.type:
                self._rewritten_unversioned(old, new, including_the_write=True, counter=saved_through)
                owners_value = True
            for requires in (False, True):
                if requires is first_requires and owners_value:
                    continue
                value = old if requires is first_requires else self.aliases.get((old.id, requires))
                if value is not None and value is not old and new is not None and \
                        self.alias_counters.get(value.id, box) is not box:
                    # its reader has a counter of its own (a .data of the view t: c.data @ c): no
                    # version bump there, and what saved it reads the memory's new value, as torch's
                    self._rewritten_unversioned(value, new, including_the_write=True,
                                                counter=self.alias_counters[value.id])
                    continue
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
            if new is not None:
                # (an in-place op's original self: what its node saved is a clone of it)
                self.overwritten.add(old.id)
                source = self.memory_identities.get(old.id)
                if source is not None:
                    self.overwritten.add(source[0])
            entry = (box, version, weakref.ref(t), new, first)
            marked = self.stale.get(old.id)
            if marked is not None and marked[:2] == (box, version) and marked[4] == first and marked[2]() is not t:
                # this write marked t's value already as a copy of its source's (a detach() of v,
                # v written): what saved it saved t, and is named by t (a leaf made of it: no node)
                self.stale[old.id] = entry
            self._mark_stale(old, entry)
            if t._data is not None and (self.aliases or self.memory_identities):
                self._identity_replaced(t, old, box, version, new, first)
            self._read_as_moves_on(t, old, new, box)

    def _identity_replaced(self, t: Tensor, old: Value, box, version: int, new, first: int) -> None:
        """`t`, over memory from outside the call, held `old`, which the memory's other readers
        read through identities of their own (an alias for a reader that differs in
        requires_grad, _alias; the leaf's identity of a value a detach() of it wrote, rebind):
        those on the write's counter (`d = x.detach(); d.mul_(2); x.pow(3); d.add_(1)`) are
        stale too, what saved them named as the reader with grad (a leaf: no node)."""
        key = _memory_key(t._data)
        reader = self._grad_reader(key)
        if reader is None or reader is t or self._counter_owner(reader)._vbox is not box:
            reader = None       # (a .data's write: the leaf's counter stays)
        held = self.lifted.get(key)
        identities, pending = [], [old]
        while pending:      # (and identities of those: x's alias of the leaf's identity of d's value)
            v = pending.pop()
            found = [w for w in (self.aliases.get((v.id, False)), self.aliases.get((v.id, True)))
                     if w is not None and self.alias_counters.get(w.id) is box]
            if reader is not None and held is not None and self.memory_identities.get(held.id, (None,))[0] == v.id:
                found.append(held)
            for w in found:
                if w is not old and w not in identities:
                    identities.append(w)
                    pending.append(w)
        for w in identities:
            self._mark_stale(w, (box, version, weakref.ref(reader if reader is not None else t), new, first))

    def _read_as_moves_on(self, t: Tensor, old: Value, new, box) -> None:
        """`t` held `old` and is written on counter `box`: where `old` is what the nodes that
        saved a tensor on another counter read (a .data of the view t: read_as_source), their
        saved tensor is this memory, which now holds `new` (None: t reads its memory again,
        which the write under way gave its new value)."""
        target, counter = self.read_as_source(old)
        if counter is None or counter is box:
            return
        now = new if new is not None or t._data is None else self.lifted.get(_memory_key(t._data))
        if now is not None and now.type == old.type:
            self.move_read_as(target, now, counter)

    def read_as_source(self, v: Value) -> tuple:
        """(id of the value, the counter) where `v`, or the value `v` is a graft of (the memory's
        new value as a tensor with history holds it), is what nodes that saved a tensor on a
        known version counter read after a write through another (read_as_counters); else
        (None, None)."""
        if not self.read_as_counters:
            return None, None
        counter = self.read_as_counters.get(v.id)
        if counter is not None:
            return v.id, counter
        for source in self.graft_sources.get(v.id, ()):
            if self.read_as_counters.get(source.id) is not None:
                return source.id, self.read_as_counters[source.id]
        return None, None

    def move_read_as(self, target: int, now: Value, counter) -> None:
        """The nodes reading value `target` (read_as) read `now` instead: the memory's value after
        a write that left their saved tensor's version `counter` as it was."""
        for k, (value, at) in list(self.read_as.items()):
            if value.id == target:
                self.read_as[k] = (now, at)
        self.read_as_counters.setdefault(now.id, counter)

    def _mark_stale(self, value: Value, entry: tuple) -> None:
        """`value` (and the values standing for the same saved tensor: same_counter) is stale
        from here on: see _replaced."""
        self.stale.setdefault(value.id, entry)
        if self.read_as_counters:
            # `value` is an identity of the memory's new value (for its readers that differ in
            # requires_grad: rebind, _alias), and what nodes that saved such a reader read now is
            # that new value (read_as), checked on the counter of this write
            # (stale for those nodes only: others read `source` itself, on its own counter, as
            # `c ** 2` saved c after a no_grad write through a view of c, then `t1 = c.data;
            # t1.mul_(...)` wrote the memory on t1's: stale_read_as)
            for source in (self.memory_identities.get(value.id, (None,))[0], self.alias_of.get(value.id)):
                if source is not None and self.read_as_counters.get(source) is entry[0]:
                    self.stale_read_as.setdefault(source, entry)
        pending = list(self.same_counter.get(value.id, ()))
        while pending:
            # (a copy of a copy too: the promoted cast of fg.grad's stand-in for an argument)
            copy = pending.pop()
            if copy.id not in self.stale:
                self.stale[copy.id] = entry
                pending += self.same_counter.get(copy.id, ())

    def promoted_operands(self, saved: list) -> dict:
        """{index in `saved` (values a backward reads): (the caller's tensor whose value, or a
        view of it made in the call, the saved one is a promoted copy of; the view's shape or
        None)} (see hold_promoted): a change of that tensor after the call makes the backward
        raise, as torch's check of the operand it saved."""
        if not self.promoted_from and not self.same_counter:
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
        # fg.grad's stand-in for a differentiated argument (share_counter), and a promoted copy
        # of that: the argument's counter too
        copy_of = {copy.id: v_id for v_id, copies in self.same_counter.items() for copy in copies}
        for copy_id in copy_of:
            v_id, seen = copy_of[copy_id], {copy_id}
            while v_id not in by_value and v_id in copy_of and v_id not in seen:
                seen.add(v_id)
                v_id = copy_of[v_id]
            if v_id in by_value:
                by_value.setdefault(copy_id, by_value[v_id])
        found = {}
        for k, v in enumerate(saved):
            source = self.promoted_from.get(v.id)
            if source is None:
                if v.id in copy_of and v.id in by_value:
                    found[k] = (by_value[v.id], None)
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

    def share_counter(self, copy: Tensor) -> None:
        """`copy`, just made by a copy op, stands for the tensor it copies in what nodes save
        (fg.grad's stand-in for a differentiated argument, eagerly a view of it): a write of that
        tensor after makes a backward that reads the copy raise, as eagerly."""
        ins = self.instrs[-1] if self.instrs else None
        if ins is not None and ins.outputs[0] is copy._sym:
            self.same_counter.setdefault(ins.inputs[0].id, []).append(copy._sym)

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
        source, requires = next(((v_id, requires) for (v_id, requires), w in self.aliases.items() if w is v),
                                (None, False))
        for u, array in zip(self.inputs, self.input_arrays):
            if u.id == source:
                key = _memory_key(array)
                owner = self._first_reader(key)
                if self.lifted.get(key) is not u or key in self.mutated or owner is None:
                    return None
                # (x read after x.data read it first: the alias is x's reading, on x's counter)
                return array, self._counter_owner(owner)._vbox is box or requires
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
        # (the index is by the memory each was lifted over; a tensor given other memory by a
        # `.data =` in the call is found by a scan)
        candidates = self.lifted_tensors if self.data_moved else self.lifted_by_memory.get(key, ())
        return next((x for x in candidates if x._data is not None and _memory_key(x._data) == key
                     and not (without_grad and x._requires_grad)), None)

    def no_grad_view_where(self, v):
        """The `where` of saved value `v` when it is a view made under no_grad (made here, or
        read from one: NoGradViewSaved), else None. Also for the memory's new value that a
        `.data` write made an op's VJP read in place of such a view (read_as)."""
        if v.id in self.no_grad_view_values:
            return NO_GRAD_VIEW_SAVED
        # (a part promoted to an op's dtype, a 0-d part of unbind in maximum(x32, p64): the
        # part is what torch's node saved)
        part = self.part_values.get(self.promoted_from.get(v.id, v).id)
        if part is not None:
            message, base = part
            if base is None or base() is not None and base()._requires_grad:
                return PartViewSaved(message)
        read = self.no_grad_view_reads.get(v.id)
        if read is None and self.read_as:
            read = next((self.no_grad_view_reads[key] for key, (value, _) in self.read_as.items()
                         if value is v and key in self.no_grad_view_reads), None)
        return None if read is None else NoGradViewSaved(*read)

    def stale_saved(self, instrs, active: set, found_at: list | None = None, leads_nowhere: set | None = None):
        """The first value (from the last instruction back, as a backward meets them) that an
        active instruction's VJP reads and an in-place write replaced: (value, counter,
        version it was saved at, torch's ", which is output N of Op," or ""), or None.
        None too where the backward meets first a node an earlier backward freed (torch raises
        the freed-graph error there: _freed_met_first) or an op without a derivative. Only a
        trace with such writes pays for the scan. `found_at` (a list), when given, receives the
        instruction whose VJP reads it. `leads_nowhere`: ids of values whose edges lead nowhere
        (views made under no_grad): torch's node saved only what the gradients of its other
        inputs read (checked_at), so one that reads only such values checks only the outputs it
        saved, as a node a backward() runs idle (tracer/saved_checks._check_idle)."""
        if not self.stale and not self.stale_read_as:
            return None
        positions = None
        for ins in reversed(instrs):
            if not _vjp_runs(ins, active):
                continue
            if self.freed and self._freed_and_saving(ins, active):
                return None
            # (torch's NotImplemented node raises before any behind it; a node whose formula
            # raises, pow with a bool tensor exponent, checks what it saved first)
            raises = _has_no_derivative(ins)
            if raises and not OPS[ins.op].extra.get("unpack_order"):
                return None
            if not any(v.id in self.stale or v.id in self.read_as for v in ins.inputs + ins.outputs):
                if raises:
                    return None
                continue
            # Stale for this instruction: replaced by a write after it (the write's own ops
            # read the value before it, as an in-place op's node saves it). A value a .data write
            # replaced is read as the memory's new value (read_as), stale when that is.
            if positions is None:
                positions = {id(x): k for k, x in enumerate(self.instrs)}
                made_at = {out.id: k for k, x in enumerate(self.instrs) for out in x.outputs}
                grafts = {}         # value id -> the grafts of it: the memory's value as tensors hold it
                for x in self.instrs:
                    if x.op == "graft":
                        for u in x.inputs:
                            grafts.setdefault(u.id, []).append(x.outputs[0])
            at = positions[id(ins)]
            stale = {}
            for v in ins.inputs + ins.outputs:
                entry = self.read_as.get(v.id)
                if entry is None or entry[1] <= at:
                    read = ()
                else:
                    # (the memory's new value, also as the tensors holding it after the write hold
                    # it, grafted onto their history: a later write replaces that)
                    read = (entry[0],) + tuple(grafts.get(entry[0].id, ()))
                made = made_at.get(read[0].id, -1) if read else -1
                for w in (v,) + read:       # (its own counter moved first: t1 = a.data; ...; t1.div_(2))
                    # (the memory's new value is stale only by a write after the one that made it:
                    # that write's own marks, as its .data writer takes the grafted value, are not
                    # on the saved tensor's counter)
                    marked = self.stale.get(w.id) if w is v else \
                        self.stale.get(w.id) or self.stale_read_as.get(w.id)
                    if marked is not None and marked[4] >= at and (w is v or marked[4] > made):
                        stale[v.id] = marked
                        break
            if not stale:
                if raises:
                    return None
                continue
            name = self.grad_instrs.get(id(ins)) or _default_name(ins.op)
            needs = _saving_needs(ins, tuple(v.id in active for v in ins.inputs), leads_nowhere, name)
            # (in the order the eager engine checks them: torch's node's, see checking_order)
            for kind, k in checking_order(ins.op, ins.attrs, tuple(v.type for v in ins.inputs), needs, name):
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
                    where = self.no_grad_view_where(v)
                    if where is None:
                        where = self._saved_input_name(named, *stale[v.id][2:4])
                    return (named,) + stale[v.id][:2] + (where,)
            if raises:
                return None
        return None

    def checked_at(self, instrs, active: set, leads_nowhere: set | None = None,
                   skipped: set | None = None) -> dict:
        """value id -> position (in this trace) of the first node, as a backward meets them from
        the last instruction back, that checks that value among what it saved (plus a fraction
        ordering the values one node checks: larger for those it unpacks first). torch's engine
        raises the version error of the first saved tensor it unpacks that changed, whether a
        write inside the call changed it (stale_saved) or one after it (the compiled backward's
        checks): the positions order the two kinds against each other. With `leads_nowhere`
        (ids of the values of views made under no_grad, whose edges lead nowhere): torch's node
        saved only what the gradients of its other inputs need (`x @ v` saves v, not x; `v * v`
        nothing, relu(v) its result: tracer/dispatch._saving_needs); `skipped` (a set) receives
        the ids of the inputs it would have saved for those views' gradients and did not."""
        positions = {id(x): k for k, x in enumerate(self.instrs)}
        found: dict = {}
        # (a value a `.data` write replaced after the node saved it: its VJP reads the memory's
        # new value, which is what the backward program holds and checks: vjp_reads)
        reads = self.vjp_reads(instrs)
        for ins in reversed(instrs):
            if not _vjp_runs(ins, active):
                continue
            at = positions[id(ins)]
            read = reads.get(id(ins))
            needs = tuple(v.id in active for v in ins.inputs)
            name = self.grad_instrs.get(id(ins)) or _default_name(ins.op)
            types = tuple(v.type for v in ins.inputs)
            saving = _saving_needs(ins, needs, leads_nowhere, name)
            if saving is not needs and skipped is not None:
                kept = set(checking_order(ins.op, ins.attrs, types, saving, name))
                skipped.update(ins.inputs[k].id for kind, k in checking_order(ins.op, ins.attrs, types, needs, name)
                               if kind == "in" and (kind, k) not in kept)
            order = checking_order(ins.op, ins.attrs, types, saving, name)
            for rank, (kind, k) in enumerate(order):
                # (within one node, the value torch unpacks first is met first: a fraction of the
                # step to the next instruction, larger for earlier ones; mm unpacks mat2 first)
                position = at + (len(order) - rank) / (len(order) + 1)
                v = ins.outputs[k] if kind == "out" else ins.inputs[k]
                found.setdefault(v.id, position)
                if read is not None:
                    found.setdefault((read.outputs[k] if kind == "out" else read.inputs[k]).id, position)
        return found

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
            if new is _NO_HISTORY:
                return ""
        elif t._sym is not None and not t._requires_grad:
            return ""           # (a tensor of the call without grad has no node: a detach() written through its source)
        if t is not None and (self.is_callers_leaf(t) or t.__dict__.get("_transform_input")
                              or (t._traced_leaf and t.__dict__.get("_leaf_value") is not None and t.is_leaf)):
            # (a leaf has no node, whatever was grafted onto its values, nor fg.grad's stand-in;
            # nor a leaf made in the call whose memory an alias wrote)
            return ""
        callers_non_leaf = t is not None and t._data is not None and t._grad_fn is not None
        now = t._sym if t is not None and t._sym is not None else new
        if now is not None and type(now) is Value:
            # (a value grafted onto a gradient path is named by that path's history: none for a
            # leaf made in the call that died, written through its detach())
            now = self.through_grafts(now)
        found = None if now is None or (callers_non_leaf and t._sym is None) else self.grad_producer(now)
        if t is not None and t._base is not None and (found is not None or t._requires_grad or callers_non_leaf):
            # a view, saved, then written (through itself or its base): torch regenerates its
            # history from the base's, one as_strided (a part of split from outside the call:
            # regenerating raises, named when the backward raises)
            if t._multi_output is not None and t._data is not None:
                return PartNamedWhenRaised(t)
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
                self.memory_identities[v_held.id] = (v.id, t._data, len(self.written_arrays))
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
                self.memory_identities[self.lifted[key].id] = (v.id, t._data, len(self.written_arrays))
                reader = None if unversioned or not t._requires_grad else self._first_reader(key, without_grad=True)
                if reader is not None and reader is not t and \
                        self._counter_owner(reader)._vbox is not self._counter_owner(t)._vbox:
                    # they read it through a .data (a counter of its own): for them the write
                    # bumps no version, and what saved their value reads the new one, as torch's
                    # saved tensor is the memory (s.data.t() saved by a @ s.data.t(), then
                    # s written under no_grad)
                    # (checked on the reader's counter: a later write through the reader itself
                    # makes what saved it raise, as torch's `s1 * x; x.div_(2) under no_grad;
                    # s1.mul_(x)` of s1 = x.data, alias seed 234178)
                    self._rewritten_unversioned(held, self.lifted[key], including_the_write=True,
                                                counter=self._counter_owner(reader)._vbox)
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
        # (the views from outside first: a view made here of one of them, a caller's leaf over
        # a base without grad, is re-derived from that leaf's new value: Trace._mark_view)
        if id(t) in self.outside_views:
            self._refresh_outside_views(t)
        if id(t) in self.views:
            self._refresh_views(t)
        if self.detach_source:
            self._follow_detach(t)
        for sibling in siblings:
            # (not one already reading memory again, nor a stand-in for t that t replaced when
            # it was first read, re-derived from its base's value as the stand-in was: the
            # stand-in's value is t's)
            if sibling._sym is not None and not (self.stand_ins and self._superseded(sibling)
                                                 and sibling._base is t._base):
                self._follow_memory(t, sibling)
        if t._data is not None and key in self.view_bases:
            self._refresh_memory_views(t, key)
        if memory_view is not None and memory_view is not t and memory_view is not self.graft_writer \
                and not self._grafted_from(memory_view, t):
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
        for was, requires in ((held, self.lifted_grad.get(key)), (self.aliases.get((held.id, False)), False),
                              (self.aliases.get((held.id, True)), True)):
            if was is not None:
                # (the counter of the tensor from outside the call that read it so: a saved `was`
                # is checked on it, not on the writer's)
                # (or the one counter the ops that saved it read it through: _mixed_counter_read)
                reader = self._grad_reader(key) if requires else self._first_reader(key, without_grad=True)
                counter = self.reader_counter(was) or (None if reader is None else self._counter_owner(reader)._vbox)
                self._rewritten_unversioned(was, self.lifted[key], including_the_write=was is not own, counter=counter)
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
        # Each tensor over the memory takes a write's value once: three that hold values of their
        # own (x, x.detach() and x.data, each written) would otherwise pass it on to each other
        # without end, as each graft is a write of its own (alias fuzzer seed 99887)
        outermost = self.grafted_in_write is None
        if outermost:
            self.grafted_in_write = {id(t)}
        elif id(source) in self.grafted_in_write:
            return
        self.grafted_in_write.add(id(source))
        try:
            self._record_graft(t, source)
        finally:
            if outermost:
                self.grafted_in_write = None

    def _record_graft(self, t: Tensor, source: Tensor) -> None:
        """_graft_into's graft itself: the instruction, recorded as a write of `source`."""
        from .grad_mode import enable_grad, no_grad
        found = self.grad_producer(source._sym)
        name = self._node_name(found[0]) if found is not None else None
        # The writer keeps the value it wrote, with that write's own history (`d.mul_(b)` on
        # d = v.detach(): d's gradient reaches b), so the graft's refresh of the aliases skips it
        previous, self.graft_writer = self.graft_writer, (t if t._requires_grad else None)
        # (where t was written through a view of it, the graft carries which part: see _region_write)
        region = self.write_region[1] if self.write_region is not None and self.write_region[0] is t else None
        previous_region, self.graft_region = self.graft_region, region
        previous_pair, self.grafting = self.grafting, (t, source)
        try:
            # (a source without a gradient path gets none from the writer's history: v.detach().add_(b))
            with enable_grad() if source._requires_grad else no_grad():
                self.record("graft", [t, source], None, name, source)
        finally:
            self.graft_writer = previous
            self.graft_region = previous_region
            self.grafting = previous_pair

    def _grafted_from(self, writer: Tensor, t: Tensor) -> bool:
        """Whether `t` is taking `writer`'s value by the graft being recorded: t's new value is
        what its memory view `writer` holds, so writing it back into that view again would
        be the same write (and, where the view's base has other views whose detach()es hold
        values of their own, each would graft back into the next without end)."""
        return self.grafting is not None and self.grafting[0] is writer and self.grafting[1] is t

    def _node_name(self, ins: Instr) -> str:
        """torch's name of the node of `ins`, an instruction recorded with grad (a graft takes its
        source's: the graft's own op name must never show, in a grad_fn or an error)."""
        return self.grad_instrs.get(id(ins)) or _default_name(ins.op)

    def _grafted(self, v: Value, source: Value, found: tuple) -> Value:
        """A graft of `v` onto `source`'s gradient path (`found`: source's producer), recorded
        for gradients under the name of source's node (its grad_fn stays as it was)."""
        out = Value(source.type)
        ins = Instr("graft", (v, source), (out,), ())
        self.graft_sources[out.id] = ins.inputs
        self.instrs.append(ins)
        self.grad_instrs[id(ins)] = self._node_name(found[0])
        return out
