"""Views and detach() aliases inside a trace.

Eagerly a view shares its base's memory; in a trace values are SSA, so a view is recorded
as (base, chain of view ops), an in-place write through it becomes a write of the base (as
eager's CopySlices), and after any write to a base its live views are derived from it
again. A detach() or `.data` alias is one memory with its source under another identity:
a write through either is grafted into the other.

TraceViews is one part of tracer.trace.Trace (a mixin): its methods use the state
Trace.__init__ sets up.
"""
from __future__ import annotations

import weakref

import numpy as np

from fusegrad.ir import OPS, Value
from fusegrad.ir.program import Instr

from .dispatch import INTERNAL_VIEWS, no_grad_view_rebased_error, propagate_multi_output
from .grad_mode import is_grad_enabled
from .layout import contiguous_strides, strides_of
from .tensor import Tensor
from .trace_writes import _REGENERATED_GRAD_VIEW, _REGENERATED_VIEW, _STALE, _memory_key, _no_tensor


class TraceViews:
    """The views and aliases of a Trace (see the module docstring)."""

    def note_part(self, t: Tensor, message: str) -> None:
        """`t`, a part of split/chunk/unbind made here (or a view of one), saved and its counter
        moved, raises `message` when unpacked (PartViewSaved): torch regenerates its history
        then and refuses to for such a part. Not where its base needs no grad when the check is
        made (a part of a tensor without grad: torch's grad_fn of it is None, and the plain
        version error follows), which a later in-place write with grad can change."""
        base = None if t._requires_grad or t._base is None else weakref.ref(t._base)
        self.part_values[t._sym.id] = (message, base)

    def _mark_view(self, t: Tensor, src: Tensor, op: str, frozen: tuple, src_value: Value) -> None:
        if op == "reshape" and not self._reshape_is_view(src, frozen):
            return      # a reshape that copies (torch's reshape of a strided tensor)
        base = src._base if src._base is not None else src
        t._base = base
        if op == "permute":
            self.permuted = True
        t._view_chain = (src._view_chain if src._base is not None else ()) + ((op, frozen),)
        self.views.setdefault(id(base), []).append(weakref.ref(t))
        root = src.__dict__.get("_leaf_root")
        if root is not None:
            t.__dict__["_leaf_root"] = (root[0], root[1] + ((op, frozen),))
        elif src._base is not None and self._keeps_leaf(src, base):
            # a view of a caller's leaf that is itself a view of a tensor without grad: its value
            # is re-derived from that leaf, not from the base (its gradient goes to the leaf)
            t.__dict__["_leaf_root"] = (src, ((op, frozen),))
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
            # (a view of a view: what that one read, also for a view made before the call that
            # the call rebound to its part of its base's new value, `x.mul_(2); x[0]` for x = a.t())
            root = self.view_values.get(src_value.id, (_STALE,))[0]
            if root is _STALE and src._data is not None and base._data is not None and base._sym is not None \
                    and _memory_key(base._data) in self.mutated:
                # a view made before the call whose memory the call wrote through an alias
                # (x.data.mul_(2), x.detach().zero_()): it holds its part of its base's new value
                # (the trace keeps the views of written memory current: _refresh_outside_views)
                root = base._sym
        self.view_values[t._sym.id] = (root, t._view_chain)
        if type(root) is np.ndarray:
            box = self.view_counters[t._sym.id] = self._counter_owner(t)._vbox
            if self.aliases:
                self.alias_counters.setdefault(t._sym.id, box)    # (see alias_memory)
        elif self.mutated:
            # (a view of a value the call wrote to the caller's memory is that memory after the
            # call, on its own base's counter: `t1 = a.data; t1.zero_(); t1.t()` is on t1's)
            self.view_counters[t._sym.id] = self._counter_owner(t)._vbox
        propagate_multi_output(t, src)
        if t._multi_output is not None:
            no_grad = t.__dict__.get("_multi_output_no_grad", False)
            name = self.grad_instrs.get(id(self.instrs[-1])) if self.instrs else None
            if t._sym is not None and (no_grad or name is not None and self.instrs[-1].outputs[0] is t._sym):
                # (saved, its counter moved: "Output 0 of Select ..." at the backward, PartViewSaved;
                # of a part without grad, the no_grad text, which names no node)
                from .splitting import multi_output_rebased_error
                self.note_part(t, str(multi_output_rebased_error(t, None, name)))
        if (src._no_grad_view or (base._requires_grad and not is_grad_enabled())) and not INTERNAL_VIEWS[0]:
            # as eagerly (dispatch._make_view): a view made under no_grad of a tensor that
            # requires grad requires grad, with no gradient path to its base
            t._no_grad_view = True
            self.no_grad_views_made = True
            if not is_grad_enabled():
                t._requires_grad = True
                self.no_grad_view_values[t._sym.id] = t._sym
                self.no_grad_view_counters[t._sym.id] = self._counter_owner(t)._vbox
            else:       # a view of such a view: its node names it in the error (rebased_error)
                t._view_node = self.grad_fn_of(t)
        elif (not is_grad_enabled() or src.__dict__.get("_no_grad_mode")) and not INTERNAL_VIEWS[0]:
            # as eagerly: every view made under no_grad is marked (and a view of one); once its
            # base gains a history in place, its use with grad raises (_refresh_views)
            t.__dict__["_no_grad_mode"] = True
        elif not base._requires_grad and not INTERNAL_VIEWS[0]:
            t.__dict__["_nodeless"] = True      # (as eagerly: dispatch._make_view)

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
        from .dispatch import no_grad_view_error
        base = view._base
        if requires and not graft and view.__dict__.get("_no_grad_mode") and is_grad_enabled():
            raise no_grad_view_error(view)  # (as eagerly: dispatch._inplace_on_view)
        if requires:
            view.__dict__.pop("_nodeless", None)    # (a write with history gives the view its node)
        leaf_view = graft and (self._keeps_leaf(view, base) or view.__dict__.get("_leaf_root") is not None)
        # (a leaf view written through its detach() or .data keeps its identity: _keeps_leaf)
        result = self.symbolic(v, (requires or view._requires_grad) and not leaf_view)
        chain, written, refused = self._region_write(view, result, graft)
        if refused:
            # The memory takes the write all the same (torch's did, before the error it raises
            # later, so a call that raises keeps it: _finish_raised), then the write is refused
            self._write_region_of(view, base, chain, written, fill, v, graft, leaf_view)
            from .dispatch import _OVERLAP_MSG
            error = RuntimeError(_OVERLAP_MSG)
            error.write_done = True         # (its version bump stays: Trace._abort_write)
            raise error
        return self._write_region_of(view, base, chain, written, fill, v, graft, leaf_view)

    def _write_region_of(self, view: Tensor, base: Tensor, chain: tuple, written: Tensor, fill: bool, v: Value,
                         graft: bool, leaf_view: bool) -> Tensor:
        """Write `written` into `base` where `chain` reaches (_write_through_view's second half)."""
        from .dispatch import _scatter
        if graft and base._grad_fn is None and base._requires_grad:
            # A leaf written through a detach() or .data of its view (`x[0].detach().add_(1)`):
            # eagerly its memory changes, not its identity, so it stays that leaf (rebind sums
            # the gradient over the values it held), as for a write under no_grad
            from .grad_mode import no_grad
            with no_grad():
                new_base = _scatter(base, chain, written, fill)
            self._rebind_written(base, chain, new_base._sym, False)
            self._hold_view_value(base, v)
            return view
        if leaf_view:
            from .grad_mode import no_grad
            with no_grad():
                new_base = _scatter(base, chain, written, fill)
        else:
            new_base = _scatter(base, chain, written, fill)
        if view._data is not None and not any(ref() is view for ref in self.outside_views.get(id(base), ())):
            # A view made before the call (its memory is the base's): it holds the new value too.
            self.outside_views.setdefault(id(base), []).append(weakref.ref(view))
            self._claim_memory(view)
        self._rebind_written(base, chain, new_base._sym, new_base._requires_grad)    # re-derives every view of it
        # the value written is the view's memory from here on (sqrt_ through a view saves it):
        # a later write of the base makes it stale, as the values the views held
        self._hold_view_value(base, v)
        return view

    def _region_write(self, view: Tensor, result: Tensor, graft: bool) -> tuple:
        """The chain from `view`'s base to what the write reaches, and the value written there:
        `view` and all of `result`, but for a graft into a view through an expand (a detach of
        `x.expand(3, 3)`, written through its row `d[2, 1:]`) only the part the write reached.
        Its other rows are the same memory: the whole new value of the detach (rows 0 and 1 as
        they were) written back through the expand would undo the write."""
        region, self.graft_region = (self.graft_region if graft else None), None
        if region is None or not any(op == "expand" for op, _ in view._view_chain):
            return view._view_chain, result, False
        from .dispatch import view_of
        # Refused where the writer keeps the value it wrote, with its history (see _graft_into),
        # so that its other rows would not see the write: refused rather than wrong (torch
        # computes the values, and its backward raises this error: CopySlices over overlapping
        # memory). The memory takes the write first (_write_through_view).
        return view._view_chain + region, view_of(result, region), self.graft_writer is not None

    def _rebind_written(self, base: Tensor, chain: tuple, v: Value, requires: bool) -> None:
        """`base` takes value `v`, written where `chain` reaches: its aliases take that part
        (write_region, read by _graft_into)."""
        previous, self.write_region = self.write_region, (base, chain)
        try:
            self.rebind(base, v, requires)
        finally:
            self.write_region = previous

    @staticmethod
    def _keeps_leaf(view: Tensor, base: Tensor) -> bool:
        """`view` is a leaf that requires grad over a base that does not (base.t().requires_grad_()):
        a write of the base regenerates no history for it (eagerly refresh_view_history leaves
        it), so it stays that leaf, holding its part of the base's new value."""
        return view._requires_grad and view._grad_fn is None and not base._requires_grad \
            and not view._no_grad_view and view._data is not None

    def _rebind_leaf_view(self, base: Tensor, view: Tensor) -> None:
        """`view` (see _keeps_leaf) takes its part of `base`'s value now, as a write under no_grad
        of a leaf: rebind sums its gradient over every value it held (see held_values)."""
        key = _memory_key(view._data)
        if key not in self.lifted:          # its memory's value before the write, read as its own
            self.lifted[key] = self._input(view._data)
            if self.dry:
                self.keep_state(view)
            self.lifted_grad[key] = True
            self.lifted_tensors.append(view)
            self.lifted_by_memory.setdefault(key, []).append(view)
            self.leaf_tensors.setdefault(key, view)
        again = self._view_without_grad(base, view)
        self._quiet_unless_writing(view)
        self.rebind(view, again._sym, False)

    @staticmethod
    def _view_without_grad(base: Tensor, view: Tensor) -> Tensor:
        """`view`'s chain applied to `base`'s value now, recorded without history."""
        from .dispatch import view_of
        from .grad_mode import no_grad
        with no_grad():
            return view_of(base, view._view_chain)

    def _view_again(self, base: Tensor, view: Tensor) -> Tensor:
        """`view`'s chain applied to `base`'s value now (recorded ops). A view that requires grad
        keeps its gradient path under no_grad (an optimizer's write), as eagerly; so does one
        whose base gained a history (torch regenerates its history when it is next used with
        grad), unless it was made under no_grad (or is the trace's stand-in for a detach() or
        .data of a view, which has none: _origin_view)."""
        from .dispatch import view_of
        if not is_grad_enabled() and (view._requires_grad or base._requires_grad and not (
                view._no_grad_view or view.__dict__.get("_no_grad_mode") or id(view) in self.stand_ins)):
            from .grad_mode import enable_grad
            with enable_grad():
                return view_of(base, view._view_chain)
        return view_of(base, view._view_chain)

    def rebased_error(self, t: Tensor) -> RuntimeError:
        """torch's error for using a view made under no_grad (or a part of split, chunk or
        unbind) whose base was written since."""
        if t._multi_output is not None:
            from .splitting import multi_output_rebased_error
            return multi_output_rebased_error(t, t.__dict__.get("_view_node"))
        return no_grad_view_rebased_error(t.__dict__.get("_view_node"), t._output_nr)

    def _refresh_outside_views(self, base: Tensor) -> None:
        """`base` was written: the views of it made before the call that the call has read
        (or written) are its memory, so they hold their part of its new value."""
        for ref in list(self.outside_views[id(base)]):
            view = ref()
            if view is None or view._base is not base or (self.stand_ins and self._superseded(view)):
                continue
            if self._keeps_leaf(view, base) or self._unrebased_no_grad_view(view, base):
                self._rebind_leaf_view(base, view)
                continue
            if (view.__dict__.get("_no_grad_mode") and base._requires_grad) or self._part_rebased(view, base):
                # made under no_grad (or a view of such a view): torch will not regenerate its
                # history now that its base has one, so its next use with grad raises; nor for a
                # part of split/chunk/unbind whose counter the write moved
                self._rebase_outside(view)
            # (a view from outside holds no value of its own; what the call read of its memory, an
            # argument's, is lifted under the memory's key)
            before = view._sym if view._sym is not None or view._data is None else \
                self.lifted.get(_memory_key(view._data))
            again = self._view_again(base, view)
            self._quiet_unless_writing(view)
            self.rebind(view, again._sym, view._requires_grad or again._requires_grad)
            # (the counter of the tensors the ops recorded with grad read it through, where that is
            # one: an argument's .data read on its own counter is not the view's)
            counter = None
            if before is not None and view._data is not None:
                reader = self._grad_reader(_memory_key(view._data))
                counter = self.reader_counter(before) or (None if reader is None else self._counter_owner(reader)._vbox)
            if before is not None and counter is self._counter_owner(view)._vbox and self.writing is not None \
                    and counter is not self.writing[0] and view._sym is not None and view._sym.type == before.type:
                # a write on another counter (a `.data` of the base): what nodes saved of the
                # view's old value is this memory, read as its new value, and stale only where a
                # later write moves the view's own counter (torch's saved view is the memory)
                self._rewritten_unversioned(before, view._sym, including_the_write=True, counter=counter)

    def _part_rebased(self, view: Tensor, base: Tensor) -> bool:
        """Whether `view`, from outside the call, is a part of split/chunk/unbind (or a view of
        one) made with grad whose version counter the call has moved: torch refuses to
        regenerate its history, so its next use with grad raises (its multi-output error)."""
        if view._multi_output is None or not (base._requires_grad or view._requires_grad):
            return False        # (a part of a tensor without grad: once the base has history)
        entry = self.writes.get(id(self._counter_owner(view)._vbox))
        return entry is not None and entry[1] > 0

    def _stale_views(self, base: Tensor) -> None:
        """`base` is written: every value a view of it made here held (also views no longer
        alive: `h[0] * h[1]` saved two) shares its counter, so a backward reading one raises,
        as torch's check of the saved view does (named as torch's regenerated view)."""
        box, version, first = self.writing
        if self._counter_owner(base)._vbox is not box:
            return
        regenerated = _REGENERATED_GRAD_VIEW if base._requires_grad else _REGENERATED_VIEW
        for v in self._view_values(base):
            if v.id > self.write_values_from:
                # re-derived by this write already (a graft passing it on to the memory's other
                # tensors reaches base again: `t1 = a.data; t3 = t1[None]; t1.add_(t1)` after a
                # read of `a`): t3's new value is current at the version the write leaves
                continue
            if self.read_as_counters and self._read_view_again(base, v, box):
                continue
            self._mark_stale(v, (box, version, _no_tensor, regenerated, first))

    def _read_view_again(self, base: Tensor, v: Value, box) -> bool:
        """`v`, a view of `base` made here, is what nodes that saved a tensor on another version
        counter than `box` read (read_as_source: `d = x.data` of a view x from outside, saved by
        `w @ d`, then x's base written): their saved tensor is the memory, so they read their
        part of base's new value. False where that is not so or cannot be re-derived."""
        target, counter = self.read_as_source(v)
        entry = self.view_values.get(v.id)
        if counter is None or counter is box or entry is None or base._base is not None or base._sym is None:
            return False
        w = base._sym
        for op, frozen in entry[1]:
            w = self.builder.emit(op, w, **dict(frozen))
        if w.type != v.type:
            return False
        self.view_values[w.id] = (base._sym, entry[1])
        self.move_read_as(target, w, counter)
        return True

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
            root = view.__dict__.get("_leaf_root")
            bumped = self.writing is not None and self.writing[0] is self._counter_owner(base)._vbox
            if (base._requires_grad or root is not None) and view._multi_output is not None and not view._rebased \
                    and bumped:
                # a part of split/chunk/unbind, its base written (on its counter: not through a
                # .data): torch will not regenerate its history either; its error names the node
                # that made it
                view.__dict__["_view_node"] = self.grad_fn_of(view)
                view._rebased = True
            requires = None
            if root is not None and root[0]._base is base and not bumped:
                # (a write through a .data: torch keeps the view's history, to the leaf)
                from .dispatch import view_of
                again = view_of(root[0], root[1])       # (the leaf itself re-derived first)
            elif view._no_grad_view:
                # made under no_grad of a tensor that requires grad: it takes the new value and
                # keeps having no history (a leaf without a gradient), as eagerly
                again = self._view_without_grad(base, view)
                requires = True
            else:
                again = self._view_again(base, view)
            if self.writing is not None:
                self._replaced(view, again._sym)
            view._sym = again._sym
            # (a view of a leaf over a base without grad keeps requiring grad, as eagerly its
            # regenerated AsStridedBackward0 does; one made under no_grad never required it)
            view._requires_grad = requires if requires is not None else \
                again._requires_grad or (root is not None and bumped and view._requires_grad)
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
        strides = strides_of(t)
        if strides != contiguous_strides(tuple(t.shape)) or t._layout is not None:
            # (also a layout t was given row-major, `contiguous(mT(p))` of matmul's fold: d may
            # outlive t, and the value under them is p's transposed array)
            # eagerly d is t's memory: x.t().detach() has strides (1, 3), and its view(-1) raises
            # (after the call d is that memory, see memory_homes; d's own layout counts where a
            # write to d made it a value of its own)
            d._layout = strides
            self.laid_out.append(weakref.ref(d))
            # (and the value d is the memory of, which may be one written in the call, made by an
            # op that lays nothing out: x.t() * 1 filled, then detached, after which it dies)
            self.forward_layouts.setdefault(t._sym.id, strides)
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
                written[1] is base and base._sym is root or (
                    # written last through another tensor over the same array (x.detach()'s source
                    # x, a leaf view written through a base): base reads that memory, and so t
                    written[1] is not base and written[1]._data is base._data and base._sym is None
                    and root is base._data)
        return (t, base, t._view_chain, True) if valid else None

    def release_detach_links(self) -> None:
        """The call has returned, so no write can reach a detach() any more: stop holding
        the tensors detached from (a value_and_grad's loss and gradients before their
        detach() would otherwise be kept alive and become outputs, each written by a
        kernel). A detach still shares its source's memory after the call: see memory_homes."""
        self.detach_source.clear()

    def detach_in_place(self, t: Tensor) -> None:
        """`t.detach_()` of a traced tensor: from now on t holds its value through an identity op
        outside the grad set, so nothing read from it later has a gradient path back (its memory
        is the same: the value is an identity alias of the one before)."""
        t._sym = self._identity_of(t)

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
            # (a write that bumps no counter of the source: through a .data, or through a
            # detach() of one, d.data of d = v.detach())
            unversioned = not link[2] or self._write_misses_counter_of(source)
            # (the views made before the call of that base which the call read, each lifted over
            # its own memory: what saved them reads their part of the write, x.pow(2) then
            # x[0].data.fill_(1) for x = y.view(2, 2))
            outside_before = [(view, self.lifted.get(_memory_key(view._data)))
                              for view in (ref() for ref in self.outside_views.get(id(base), ()))
                              if view is not None and view._data is not None] \
                if unversioned and outside and self.outside_views else ()
            self._graft_into(t, source)
            self.took_value[source._sym.id] = t._sym
            if unversioned and source._sym.type is before.type:
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
                for view, view_before in outside_before:
                    view_now = view._sym
                    if view_before is not None and view_now is not None and view_now is not view_before \
                            and view_now.type is view_before.type:
                        self._rewritten_unversioned(view_before, view_now, including_the_write=True,
                                                    counter=self._counter_owner(view)._vbox)
                        self._reread_views(view, view_now)
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
        part of `now` (see read_as). Views made here of a view from outside the call (`x.t()` of
        x = y[0:2]) are held under its base, their chains starting with the view's own: those
        are re-derived from `now` by the rest of their chains."""
        prefix = ()
        if base._base is not None and base._data is not None:
            prefix = base._view_chain
            base = base._base
        for v in self._view_values(base):
            entry = self.view_values.get(v.id)
            if entry is None or v.id in self.stale or entry[1][:len(prefix)] != prefix:
                # (a value an in-place write replaced is memory no more: what saved it, as an
                # in-place op's node saves its operand's old value, keeps it: v3.mul_(a))
                continue
            w = now
            chain = entry[1][len(prefix):]
            for op, frozen in chain:
                w = self.builder.emit(op, w, **dict(frozen))
            if w.type is v.type:
                # (w is that view of the memory holding `now`: saved, it is a view of the memory
                # the call leaves, where `now` is what the call leaves there (compile._saved_arrays),
                # on the counter the view shares)
                self.view_values[w.id] = (now, chain)
                box = self.view_counters.get(v.id)
                if box is not None:
                    self.view_counters[w.id] = box
                self._rewritten_unversioned(v, w, including_the_write=True, counter=box)

    def _rewritten_unversioned(self, before: Value, now: Value, including_the_write: bool = False,
                               counter=None) -> None:
        """The memory that held `before` holds `now`, written through a `.data` alias: no
        version bump, so no backward raises, and the values nodes saved before the write (a
        saved tensor is that memory) read the new values (see read_as). The write's own
        instructions read `before`, as an in-place op's node saves the value it overwrites
        (unless `including_the_write`: `before` is another tensor's value, not the writer's).
        `counter`: the version counter of the tensor that held `before`, where known (read_as_counter)."""
        first = self.writing[2] if self.writing is not None and not including_the_write else len(self.instrs)
        if counter is not None:
            known = self.read_as_counters.get(now.id, counter)
            self.read_as_counters[now.id] = counter if known is counter else None
        # (not where the nodes reading `before` checked it on the counter of the write under way:
        # they raise for it, torch's saved d for `d = v.data; w @ d; v.base.sub_(3); d.mul_(2)`)
        moved = self.writing is not None and self.read_as_counters.get(before.id) is self.writing[0]
        for key, (value, at) in list(self.read_as.items()):
            if value is before and not moved:
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

    def _write_misses_counter_of(self, t: Tensor) -> bool:
        """Whether the user-level write under way bumps no version counter of `t` (it goes
        through a `.data`, whose counter is its own): what saved t reads the memory's new value
        then, where a bumped counter would make the backward raise."""
        return self.writing is not None and self._counter_owner(t)._vbox is not self.writing[0]

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
                    self._replaced(alias, new, without_history=found is None)
                if found is None and alias.__dict__.get("_leaf_value") is not None and alias.is_leaf:
                    # a leaf made in the call (v.detach().requires_grad_()) stays that leaf when
                    # its memory is written through v: its gradient sums the uses of each value
                    # it held, and what saved an earlier one is stale (held_values)
                    self.leaf_values.setdefault(id(alias), (alias, [alias._sym]))[1].append(new)
                old, alias._sym = alias._sym, new
                if found is None and old.type is new.type and self._write_misses_counter_of(alias):
                    # a write that bumps no counter of this alias (through a .data, or a detach()
                    # of one): what saved its value reads the memory's new one, as torch's saved
                    # tensor is that memory (where the write bumps its counter, the backward raises)
                    self._rewritten_unversioned(old, new, including_the_write=True)
                    self._reread_views(alias, new)
                if self.writing is not None and self._view_values(alias):
                    # (views of the alias that died saved its old value: d[0] * w, then
                    # a2.add_(1) where d = a2.detach(); they share the counter, so it raises)
                    self._stale_views(alias)
                if id(alias) in self.views:
                    self._refresh_views(alias)
                self._refresh_aliases(alias)

    def assign_data(self, t: Tensor, value: Tensor) -> None:
        """`t.data = value` inside a trace: a write of t that keeps its history (see rebind)
        where the value fits t's memory."""
        if value._data is None and tuple(t.shape) == tuple(value.shape) and t._dtype is value._dtype:
            self.rebind(t, value._sym, False)
            return
        if t._data is not None and value._data is None:
            # A tensor from outside the call takes a value of another shape or dtype computed
            # here: it becomes one of the call's symbolic tensors, given its value as the call
            # ends (Module.double() inside a call; before, its dtype change was dropped, or it
            # was left without a value).
            if self.dry:
                self.keep_state(t)
            self.alive.append(weakref.ref(t))
            self.data_moved = True
            t._data, t._sym, t._dtype = value._data, value._sym, value._dtype
            if t._requires_grad and t._grad_fn is None:
                # a leaf that requires grad (a Parameter of Module.double()) stays one: as a leaf
                # made in the call by requires_grad_(), gradients there accumulate into it
                self.new_leaf(t)
            return
        t._data, t._sym, t._dtype = value._data, value._sym, value._dtype
