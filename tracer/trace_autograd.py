"""Autograd inside a trace: `backward()` and `autograd.grad` in a compiled call append
their backward program (ir.autodiff) to the call's program, and `grad_fn` of a traced
tensor is a node made on demand for the instruction that produced it.

TraceAutograd is one part of tracer.trace.Trace (a mixin): its methods use the state
Trace.__init__ sets up.
"""
from __future__ import annotations


import numpy as np

from fusegrad.ir import OPS, Value, active_values, backward as emit_backward
from fusegrad.ir.backward_templates import GRADIENT_TEMPLATES, replay, structure_key, template_of
from fusegrad.ir.program import Instr

from .dispatch import _default_name
from .saved_checks import modified_error
from . import hooks, trace_state
from .hooks import ANY_LEAF_HOOKS, run_on_tensor
from .layout import _strided_stand_in, contiguous_strides, elementwise_strides, is_contiguous
from .node import _FREED_MSG, RELEASES_STATE, saved_slots
from .tensor import Tensor
from .trace_writes import _vjp_runs


_POST_ACCUMULATE_REFUSAL = ("fusegrad: a backward() inside fg.compile that accumulates into a leaf with a "
                            "post-accumulate-grad hook is not supported; run the step eagerly")

_ACCUMULATOR_HOOKS_REFUSAL = ("fusegrad: a backward() inside fg.compile that accumulates into a leaf whose "
                              "AccumulateGrad node has hooks (register_prehook / register_hook) is not "
                              "supported; run the step eagerly")


def _accumulator_hooked(leaf: Tensor) -> bool:
    """Whether leaf's AccumulateGrad node (if it has one yet) has hooks of its own."""
    ref = leaf._grad_acc
    node = ref() if ref is not None else None
    registered = hooks.NODE_HOOKS.get(node) if node is not None else None
    return bool(registered) and any(registered.values())


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


class TraceAutograd:
    """The backward passes and grad_fn nodes of a Trace (see the module docstring)."""

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
        own = self.own_values.get(id(x))
        if own is not None:         # a second tensor that requires grad over lifted memory (_own_variable)
            return own
        v = self.input_lifted_from(x._data)
        if v is not None:
            return self.aliases.get((v.id, x._requires_grad), v) \
                if self.lifted_grad.get(id(x._data), x._requires_grad) is not x._requires_grad else v
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
            own = self.own_values.get(id(x))
            if own is not None and first is None:
                # a second tensor over lifted memory not read since a write gave the memory a
                # new value: the identity it was read as (value_of would read the new one)
                return [own]
            return [self.value_of(x) if first is None else first]
        values = [held[1][0] if first is None else first] + held[1][1:]
        if self.aliases and id(x) not in self.own_values:
            # (not for a second tensor that requires grad over the memory, which has its own
            # identity: the memory's requires-grad alias is the first one's, _own_variable)
            # where a .data or detach() alias lifted x's memory first, x read each value its
            # memory held through a requires-grad identity of it (_alias): that identity is
            # x's value (the raw one is the alias's, whose uses give x no gradient)
            values = [self.aliases.get((v.id, x._requires_grad), v) for v in values]
        return values

    def gradients(self, outputs, seeds, inputs, create_graph: bool, retain_graph: bool = True,
                  retained: list | None = None, partial: list | None = None, outside: int = 0,
                  lay_out: bool = False):
        """Emit d(outputs)/d(inputs) into the program; returns symbolic gradients (None if unused).

        Without retain_graph, the instructions it differentiates are marked freed, as
        torch frees the saved tensors of the nodes a backward traverses. With `retained`
        (a list), the retain_grad() tensors on the backward's path are differentiated too
        and (tensor, gradient) pairs appended to it: torch's backward fills their .grad.
        A backward that raises (a freed node, a replaced saved value) appends to `partial`
        (a list, when given) the (tensor, gradient) pairs torch's engine filled before it
        met the error (_before_the_failure). The last `outside` inputs are tensors from outside
        the call, differentiated at the values they came in with. With `lay_out`, the gradients
        (returned to the caller: autograd.grad, fg.grad) are laid out as torch's backward makes them."""
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
        grads = self._emit_gradients(instrs, out_values, seed_values, wrt, active, groups)
        if create_graph:
            self._record_with_grad(self.program.instrs[before:], requiring)
        grads = [None if g is None else self.symbolic(g, id(g) in requiring) for g in grads]
        if lay_out:
            self._lay_out_gradients(self.program.instrs[before:], grads)
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

    def _emit_gradients(self, instrs, out_values, seed_values, wrt, active, groups) -> list:
        """Append the backward of `instrs` to the program: per group of `wrt`, its gradient
        Value (or None). In the plain case (nothing rewritten through a `.data`, no replaced
        saved value, one value a tensor) what is emitted is kept by the structure of what it
        differentiates and replayed on a later trace of that structure (ir/backward_templates)."""
        plain = not (self.read_as or self.stale) and all(len(group) == 1 for group in groups)
        keyed = structure_key(instrs, out_values, wrt, seed_values) if plain else None
        template = GRADIENT_TEMPLATES.get(keyed[0]) if keyed is not None else None
        if template is not None:
            return replay(template, keyed[1], self.program.instrs)
        before = len(self.program.instrs)
        grads = sum_groups(self.builder, emit_backward(self.builder, instrs, out_values, seed_values, wrt,
                                                       active=active, reads=self.vjp_reads(instrs)), groups)
        if keyed is not None:
            template = template_of(self.program.instrs[before:], keyed[1], grads)
            if template is not None:
                GRADIENT_TEMPLATES.put(keyed[0], template)
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
                # (and every value it held: the one it became a leaf with, those a write of its
                # memory through another tensor gave it since)
                made = t.__dict__.get("_leaf_value")
                if made is not None:
                    sources[id(made)] = t
                for v in self.held_values(t):
                    sources[id(v)] = t
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
            # (not a leaf fg.grad made for an argument once the transform returned: at the
            # caller's level, torch.func's, that argument needs no gradient; engine._transform_leaf)
            leaves = [t for t in leaves if not t.__dict__.get("_transform_done", False)]
        if hooks.ANY_POST_ACCUMULATE_HOOKS[0] and any(hooks.post_accumulate_hooks(t) for t in leaves):
            # (the leaves' .grad get their values when the call returns: the hooks could not
            # run where torch's do, inside the backward)
            raise NotImplementedError(_POST_ACCUMULATE_REFUSAL)
        if hooks.ANY_NODE_HOOKS[0] and any(_accumulator_hooked(t) for t in leaves):
            raise NotImplementedError(_ACCUMULATOR_HOOKS_REFUSAL)      # (as post-accumulate hooks)
        # Tensors from outside the call with a history of their own (a non-leaf argument, the
        # output of an eager module): their gradients continue through that history, as eagerly
        # the backward would go on into it (_backward_into_history)
        # (with `inputs`, those that are themselves such tensors are where the backward stops)
        given = {id(t) for t in inputs} if inputs is not None else ()
        outside = [t for t in self.boundary.values() if id(t) not in given]
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
            self.fill_retained([(t, g) for t, g in retained if id(t) not in given], create_graph)
        in_call = [(leaf, g) for leaf, g in zip(leaves, grads) if g is not None]
        reached = [(t, g) for t, g in zip(outside, outside_grads) if g is not None]
        # (with `inputs`, the history is only gone into for those from before the call)
        behind = None if inputs is None else [t for t in inputs if t._sym is None and t._data is not None]
        if not reached or (behind is not None and not behind):
            self.fill_retained(in_call, create_graph)
            return
        # (the history each has now, before the call: a write in the call gives it a new one)
        history = [_history_now(t) for t, _ in reached]
        if create_graph:
            # (its gradients must keep a history through the call: the backward goes on into it
            # when the call returns, compile._finish; .grad read later in the call misses it)
            self.fill_retained(in_call, create_graph)
            self.outside_backwards.append((history, [g for _, g in reached], retain_graph, create_graph))
            return
        try:
            upstream = self._backward_into_history(history, [g for _, g in reached], retain_graph, behind)
        except RuntimeError:
            # (torch's engine has accumulated the leaves no node of that history sends a gradient to)
            from .engine import filled_behind
            waiting = filled_behind(history)
            self.fill_retained([(t, g) for t, g in in_call if id(t) not in waiting])
            raise
        # A leaf both parts reach gets their sum at once, as torch's AccumulateGrad gets its input buffer
        from .functional import add
        from .grad_mode import no_grad
        extra = {id(t): g for t, g in upstream}
        with no_grad():
            merged = [(t, add(g, extra.pop(id(t))) if id(t) in extra else g) for t, g in in_call]
        self.fill_retained(merged + [(t, g) for t, g in upstream if id(t) in extra])

    def _backward_into_history(self, history: list, grads: list, retain_graph: bool, inputs=None) -> list:
        """A backward in the call reached tensors whose history comes from before it (the
        output of an eager or separately compiled model, a view of a weight made once): it
        goes on into that history now, as eagerly, so that an optimizer step, a gradient
        clip or a read of `.grad` later in the call sees what it gives the leaves there.
        The gradients reaching those tensors are computed so far (a graph break); the eager
        engine takes them through the history (to `inputs` only, where given), with the
        version counters as the call's writes so far left them (torch's check of a saved
        tensor modified before the backward). Returns (tensor, gradient) for each leaf and
        retain_grad() tensor there, for the caller to accumulate."""
        from .engine import gradients_into_history
        seeds = [Tensor._wrap(np.array(self._materialize_value(g._sym, reason="backward() goes on into history "
                                                                            "from before the call")))
                 if g._sym is not None else g for g in grads]
        pending = [(entry[0], entry[1]) for entry in self.writes.values() if entry[1]]
        for box, count in pending:
            box[0] += count
        try:
            with trace_state.eager_section():
                # (explain()'s dry run frees nothing: the history stays for the real call; nor
                # does a backward while a create_graph one into it waits for the call's end)
                pairs = gradients_into_history(history, seeds, retain_graph or self.dry or bool(self.outside_backwards),
                                               inputs)
        finally:
            for box, count in pending:
                box[0] -= count
        if hooks.ANY_POST_ACCUMULATE_HOOKS[0] and any(hooks.post_accumulate_hooks(t) for t, _ in pairs):
            raise NotImplementedError(_POST_ACCUMULATE_REFUSAL)
        return pairs

    def _lay_out_gradients(self, emitted: list, grads: list) -> None:
        """Lay out each gradient as torch's backward makes it: an elementwise VJP follows its
        operands' layout (d/dw of (u * w).sum() is u, transposed when u is), a view its operand's.
        The backward is emitted as IR, not recorded op by op, so the layouts of its values are
        worked out here: from the arguments' strides, the forward's elementwise results as
        recorded (Trace._lay_out) and views (their ops replayed on stand-ins), TensorIterator's
        rule for the backward's elementwise ops, row-major for anything else."""
        if not any(g is not None and len(g._sym.type.shape) > 1 for g in grads):
            return
        known = dict(self.forward_layouts)      # value id -> element strides, where not row-major
        for v, a in zip(self.inputs, self.input_arrays):
            if a.ndim > 1 and a.size and not a.flags.c_contiguous:
                known.setdefault(v.id, tuple(b // a.itemsize for b in a.strides))
        if not known and not self.permuted:
            return      # (every value is row-major, or an expand of one: so are the gradients)
        backward = {id(ins) for ins in emitted}
        for ins in self.program.instrs:
            opdef = OPS[ins.op]
            if len(ins.outputs) != 1 or ins.outputs[0].id in known:
                continue
            # (a view of a row-major value matters too: an expand's zero strides leave the
            # layout to the other operands)
            if not (opdef.view or (opdef.pointwise and id(ins) in backward and any(v.id in known for v in ins.inputs))):
                continue
            shape = ins.outputs[0].type.shape
            arrays = [_strided_stand_in(v.type.shape, known.get(v.id) or contiguous_strides(v.type.shape))
                      for v in ins.inputs]
            if opdef.pointwise:
                strides = elementwise_strides(shape, arrays)
            else:
                try:
                    strides = OPS[ins.op].ref(arrays[0], **dict(ins.attrs)).strides    # (int8: element strides)
                except Exception:       # noqa: BLE001 (a view the stand-in cannot take: row-major)
                    continue
            if strides is not None and not is_contiguous(shape, strides):
                known[ins.outputs[0].id] = tuple(strides)
        for g in grads:
            if g is not None and g._sym.id in known:
                g._layout = self.value_layouts[g._sym.id] = known[g._sym.id]

    def fill_retained(self, pairs, create_graph: bool = False) -> None:
        """Accumulate each (tensor, gradient) of `pairs` into the tensor's `.grad`: a leaf's,
        or a retain_grad() non-leaf's, as torch's AccumulateGrad and retain_grad hook do."""
        from .functional import _laid_out_row_major, add
        from .grad_mode import enable_grad, no_grad
        with (enable_grad() if create_graph else no_grad()):
            for leaf, g in pairs:
                self.grad_leaves.setdefault(id(leaf), (leaf, leaf._grad))
                if leaf._grad is None:
                    # (a leaf's is laid out as the leaf after the call, compile._finish; a
                    # retained non-leaf's is torch's contiguous clone)
                    leaf._grad = g if leaf.is_leaf else _laid_out_row_major(g.clone())
                elif create_graph or not leaf.is_leaf:      # (a retained non-leaf: a new tensor, as torch's hook)
                    leaf._grad = add(leaf._grad, g)
                else:       # torch's AccumulateGrad adds into the existing .grad in place
                    leaf._grad.add_(g)
