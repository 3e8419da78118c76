"""The grad_fn of a compiled call's outputs: CompiledFunctionBackward and its parts.

A compiled call whose outputs require grad gives them one node (torch's
CompiledFunctionBackward) whose apply runs the call's backward program, compiled,
on the values the call saved. Before it runs, it checks what torch's engine would:
saved values written in place since (the version-counter error, with the names
torch's nodes give them), a graph freed by an earlier backward, gradients given
that do not match. runtime/compile.py's `_finish` builds it.
"""
from __future__ import annotations

import itertools
import weakref

import numpy as np

from fusegrad.ir import Builder, Program, TensorType, Value, active_values
from fusegrad.tracer import Tensor
from fusegrad.tracer.dispatch import _memory_owner, refresh_view_history
from fusegrad.tracer.engine import accumulate_into_grads
from fusegrad.tracer.layout import same_elements
from fusegrad.tracer.saved_checks import (NoGradViewSaved, PartNamedWhenRaised, modified_error, output_name,
                                           output_of)
from fusegrad.tracer.node import _FREED_MSG, RELEASES_STATE
from fusegrad.tracer.trace import Trace

from . import background
from .tiered import Run, execute, live_program


class ForwardFn:
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


class _Detached:
    """custom_call protocol for a value re-emitted by a create_graph backward that the call
    computed off the gradient path (a detach(), .data, a no_grad value): the value itself,
    with no gradient through it (on tensors: its detach())."""

    def __init__(self, type: TensorType):
        self.out_types = [type]
        self.vjp_fn = None

    def run(self, array):
        return (array,)

    def apply_tensors(self, value):
        return [value.detach() if hasattr(value, "detach") else value]


class _FreedCheck:
    """custom_call protocol for a call's input as its create_graph backward re-reads it (the
    value itself): a backward through it raises torch's "backward through the graph a second
    time" once the call's node was freed (that backward with retain_graph=False, or a later
    one without retain_graph), as torch's second-derivative graph runs through the call's own
    nodes and their saved values."""

    def __init__(self, back: "BackwardFn", type: TensorType):
        self.out_types = [type]
        self.vjp_fn = _FreedCheckBackward(back, type)

    def run(self, array):
        return (array,)


class _FreedCheckBackward:
    """_FreedCheck's backward: the gradient itself, after the check (as IR under create_graph)."""

    def __init__(self, back: "BackwardFn", type: TensorType):
        self.back, self.out_types, self.vjp_fn = back, [type], None

    def _check(self) -> None:
        node = self.back.node() if self.back.node is not None else None
        if node is not None and node._freed:
            raise RuntimeError(_FREED_MSG)

    def run(self, g):
        self._check()
        return (g,)

    def expand(self, e, xs, gs) -> list:
        self._check()
        return list(gs)


_NOT_TWICE = ("fg.compile cannot differentiate this call's backward again (create_graph): the call wrote memory "
              "in place or wrote a leaf under no_grad; run it eagerly")


_READ_CHANGED = ("fg.compile cannot differentiate this call's backward again (create_graph): a tensor the call "
                 "read was changed in place since the call, and this backward re-runs the call from its "
                 "inputs' memory; call the function again, or run it eagerly")


class _OnceDifferentiable:
    """custom_call protocol for a compiled backward run inside a create_graph backward where it
    has no IR form: its inputs are the cotangents, then (where it reads saved values) the call's
    inputs (read only so that the gradient requires grad where they do); differentiating it
    raises _NOT_TWICE."""

    def __init__(self, back: "BackwardFn", n_cotangents: int):
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


class BackwardFn:
    """custom_call protocol running the compiled backward program of one call."""

    def __init__(self, program: Program, saved: list, in_types, grad_present: list, run: Run):
        self.program = program
        self.saved = saved
        self.saved_values = None    # the call's forward values behind `saved`, where they are not the
                                    # program's inputs (a kept program: runtime/backward_cache.py)
        self.out_types = in_types
        self.grad_present = grad_present
        self.vjp_fn = None
        self.run_info = run
        self.node = None        # weak reference to the CompiledFunctionBackward node
        self.checks = []        # (version box, version when saved, weak ref to the tensor, its name,
                                # the saved view's shape or None, index in saved) (saved_checks)
        self.check_ranks = None     # per saved value, how soon a backward meets its check (compile._check_ranks)
        self.saves_numbers_only = False     # reads only numbers torch's nodes keep as attributes
        self.unread_reach = None    # ((index in saved, indices of the outputs whose backward checks it), ...):
                                    # values the program only returns, for their checks (compile._saved_unread)
        self._reached_saved = {}    # `given` -> indices of the saved values those cotangents reach
        self._programs_for = {}     # `given` -> the backward program without the absent cotangents
        self._reached_for = {}      # `given` -> per input, whether a gradient reaches it
        self.forward_reach = None   # `given` -> per input, whether those outputs depend on it (a call
                                    # with several outputs: forward_reach), else None
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
        # (a call with stale values only) value id -> where a backward meets the node that checks
        # it (Trace.checked_at), and the ids of `saved`'s values: orders the stale check against
        # the checks of values changed after the call
        self.met_at = None
        self.saved_ids = ()
        # (a call with views made under no_grad among its inputs or made in it, or leaves made in
        # it that died there) `given` -> (value id -> where a backward meets the node that checks
        # it, as met_at; ids of values the backward program reads that torch's nodes did not
        # save, for the gradient of such a view): see idle_checks in runtime/compile.py
        self.idle_checks = None
        # (where some are) the position in `checks`' indices from which they are views made under
        # no_grad in the call that the program does not read, checked where a node torch's
        # backward meets saved them (compile._unsaved_no_grad_view_checks)
        self.unsaved_from = None
        self.reads_inputs = True    # (without a forward form) whether its saved values depend on the inputs
        self.forward = None     # (forward program, its inputs, their arrays, the input values of the
                                # tensors gradients flow to, ids of its instructions off the gradient
                                # path), for expand; None where it cannot
        self.read_versions = ()     # (version box, version after the call) of each tensor from outside
                                    # the call that it read: expand re-runs the call from their memory
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
        self.idle_stale = None      # like `stale`, for the paths to the leaves made in the call that
                                    # died there (see check_idle)
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

    def check_idle(self, given=None, idle: bool = False) -> None:
        """A backward() without inputs reached this node (`given`: which outputs have a
        cotangent, None for all): torch's graph runs the nodes on the way to leaves the call
        made that died there, which check what they saved, whether or not the node's inputs
        need a gradient (custom_call's protocol). `idle`: no gradient this node computes reaches
        an input that takes one (the only ones reached are views made under no_grad), so it
        does not run, but torch's nodes inside it still check what they saved, changed since
        the call (see idle_checks)."""
        found = self.idle_stale.get(given, self.idle_stale.get(None)) if self.idle_stale else None
        if idle and self.idle_checks is not None and self.checks:
            met = self.idle_checks(given)[0]
            # (a value changed after the call whose node the backward meets before the stale one
            # raises first)
            self._raise_first_met(met, None, met.get(found[0].id, -1) if found is not None else None)
        if found is not None:
            _raise_stale(found)

    def _check_versions(self, reached, after: int | None = None, given=None) -> None:
        """torch's in-place error for a saved value (those in `reached`; None: every one) that
        changed in place since the call. With `after`, only those whose node a backward meets
        before the one at that position (met_at), the first met of them. A value torch's nodes
        did not save (idle_checks) is not checked (`given`: the outputs with cotangents)."""
        skip = self.idle_checks(given)[1] if self.idle_checks is not None else None
        if self.unsaved_from is not None and any(box[0] != version and k >= self.unsaved_from
                                                 for box, version, _, _, _, k in self.checks):
            # (one of the views the program does not read changed: where a node the backward
            # meets saved it, the first met of all the changed values raises)
            self._raise_first_met(self.idle_checks(given)[0], reached, after, skip)
        if after is not None:
            self._raise_first_met(self.met_at, reached, after, skip)
            return
        changed = []
        for check in self.checks:
            box, version, _, _, _, k = check
            if box[0] != version and (reached is None or k in reached) and not (skip and self.saved_ids[k] in skip) \
                    and not self._unsaved(k):
                changed.append(check)
        if not changed:
            return
        ranks = self.check_ranks
        if len(changed) > 1 and ranks is not None and all(ranks[check[5]] is not None for check in changed):
            # (the one whose node the backward meets first, and of one node's, the one it unpacks first)
            changed.sort(key=lambda check: -ranks[check[5]])
        box, version, ref, where, shape, k = changed[0]
        _raise_modified(box, version, ref(), where, shape, self._saved_array(k))

    def _raise_first_met(self, met: dict, reached, after: int | None, skip=None) -> None:
        """The version error of the saved value changed since the call (among `reached`; None:
        any) whose node, by `met` (value id -> position), a backward meets first, of those
        it meets before the node at position `after` (None: all of them)."""
        first = None
        for box, version, ref, where, shape, k in self.checks:
            if box[0] != version and (reached is None or k in reached or self._unsaved(k)):
                v_id = self.saved_ids[k]
                at = met.get(v_id)
                if at is not None and (after is None or at > after) and (first is None or at > first[0]) \
                        and not (skip and v_id in skip):
                    first = (at, box, version, ref, where, shape, k)
        if first is not None:
            _, box, version, ref, where, shape, k = first
            _raise_modified(box, version, ref(), where, shape, self._saved_array(k))

    def _unsaved(self, k: int) -> bool:
        """Whether check index `k` is of a view the program does not read (see unsaved_from)."""
        return self.unsaved_from is not None and k >= self.unsaved_from

    def _saved_array(self, k: int):
        """The saved array of check index `k` (None for a view the program does not read)."""
        return None if self._unsaved(k) else self.saved[k]

    def _check_stale(self, given=None, reached=None) -> None:
        """torch's error for a saved value an in-place write inside the call replaced, where the
        outputs given cotangents reach one; a value changed after the call whose node the
        backward meets first raises instead (`reached`: the saved values the run reads)."""
        found = self.stale.get(given, self.stale.get(None)) if self.stale else None
        if found is not None:
            if self.met_at is not None and self.checks:
                at = self.met_at.get(found[0].id)
                if at is not None:
                    self._check_versions(reached, after=at, given=given)
            _raise_stale(found)

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
        if not self.saved or self.saves_numbers_only:
            # (nothing saved: nothing to free, as torch's (x + 1).sum(); or only numbers its
            # nodes keep as attributes, torch's x.add(y, alpha=2))
            return
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
            found = reached_inputs(self.program, seeds, given)
            if self.unread_reach:
                # (a value only checked is reached where its node's backward runs)
                found = (found[0] | {k for k, reach in self.unread_reach if any(given[j] for j in reach)}, found[1])
            self._reached_saved[given] = found
        return found

    def program_for(self, given: tuple) -> Program:
        """The backward program for a pass that gives cotangents only to the outputs marked in
        `given` (cached): torch's engine never runs the nodes only the other outputs reach, so
        their zero cotangents must not meet the local derivatives there (0 times log's
        infinite derivative at 0 would make a NaN gradient). See without_absent_seeds."""
        found = self._programs_for.get(given)
        if found is None:
            found = self._programs_for[given] = without_absent_seeds(self.program, given)
        return found

    def expand(self, e, xs, gs, given=None) -> list:
        """This VJP as IR (the custom_call protocol's `expand`, for a create_graph backward): the
        call's forward re-emitted from its inputs `xs` as far as the backward reads it, then the
        backward program on cotangents `gs`, so that the gradient has a history of its own
        (second derivatives through a compiled call, which torch.compile refuses)."""
        reached = self.reached_saved(given)[0] if given is not None else None
        self._check_stale(given, reached)
        # A saved value changed in place since: torch's error, as run() raises it. Another tensor
        # the call read changed in place: re-running the call from its memory would give the
        # gradient at the new values (torch's graph holds the old ones where it needs them)
        self._check_versions(reached, given=given)
        if self.forward is not None and any(box[0] != version for box, version in self.read_versions):
            raise RuntimeError(_READ_CHANGED)
        if self.forward is None:
            # No IR form: the compiled backward, whose result requires grad where an input does
            # and whose own backward raises (as torch.compile's CompiledFunctionBackwardBackward).
            # (a backward whose saved values do not depend on the inputs is a function of the
            # cotangents alone: its gradient requires grad only where they do, as torch's of
            # `a * 2` is a constant)
            grads = e.op("custom_call", *gs, *(xs if self.reads_inputs else ()),
                         fn=_OnceDifferentiable(self, len(gs)))
            return list(grads) if isinstance(grads, tuple) else [grads]
        program, inputs, arrays, input_values, off_path = self.forward
        # (where the call saved values, the inputs pass a check that its node is not freed then)
        env = {v.id: e.op("custom_call", x, fn=_FreedCheck(self, v.type)) if self.saved else x
               for v, x in zip(input_values, xs)}
        constants = {v.id: (v, a) for v, a in zip(inputs, arrays)}

        def value(u):
            w = env.get(u.id)
            if w is None:       # an input that is not a tensor the gradient flows to: a constant
                v, a = constants[u.id]
                w = env[u.id] = e.op("custom_call", fn=_Constant(v.type, a))
            return w

        def emit(instrs, off_path=frozenset()):
            for ins in instrs:
                if all(o.id in env for o in ins.outputs):
                    # (a value gradients flow to, bound to its tensor above: the identity alias
                    # the trace reads a leaf through after a detach() of it read it first)
                    continue
                outs = e.op(ins.op, *[value(u) for u in ins.inputs], **dict(ins.attrs))
                for o, w in zip(ins.outputs, outs if isinstance(outs, tuple) else (outs,)):
                    # (a value the call computed off the gradient path stays off it here)
                    env[o.id] = e.op("custom_call", w, fn=_Detached(o.type)) if id(ins) in off_path else w
        seeds = self.program.inputs[:len(gs)]
        # (the forward values this call saved: the program's own inputs, or, for a backward program
        # kept from an earlier call of the same structure, this call's values in their places)
        saved_values = self.saved_values if self.saved_values is not None else self.program.inputs[len(gs):]
        emit(live_program(program, saved_values).instrs, off_path)
        for place, v in zip(self.program.inputs[len(gs):], saved_values):
            if place.id != v.id:
                env[place.id] = value(v)
        env.update((v.id, g) for v, g in zip(seeds, gs))
        backward = self.program if given is None or all(given) else self.program_for(given)
        emit(backward.instrs)
        grads = iter(backward.outputs)
        return [value(next(grads)) if present else None for present in self.grad_present]

    def run(self, *cotangents, given=None):
        # (a backward from every output, the common case, reaches everything: no scan)
        reached, users = self.reached_saved(given) if given is not None else (None, EVERY_USE)
        # (first: a saved value a write inside the call replaced is met before the nodes a
        # backward inside it freed, or it would not be here: see Trace.stale_saved)
        self._check_stale(given, reached)
        if self.freed_outputs is not None and any(f and (given is None or g)
                                                  for f, g in zip(self.freed_outputs, given or self.freed_outputs)):
            raise RuntimeError(_FREED_MSG)
        self._check_not_freed(users, given)
        self._check_versions(reached, given=given)
        self._last_users, self._last_given = users, given
        program = self.program if given is None or all(given) else self.program_for(given)
        with background.gil_to_caller():        # (as a compiled call's forward: runtime/compile.py)
            results = execute(program, list(cotangents) + self._saved_now(), None, self.run_info)
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


# BackwardFn's instructions used by a backward from every output: all of them.
EVERY_USE = frozenset({"every instruction"})


class _GivenCotangents:
    """A BackwardFn run by a pass that gives cotangents to only some of the call's outputs."""

    def __init__(self, back: BackwardFn, given: tuple):
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


def stale_by_cotangents(trace: Trace, instrs: list, out_values: list, wrt: list, active: set,
                        leads_nowhere: set | None = None) -> dict:
    """BackwardFn.stale: the stale saved value each subset of the outputs reaches (see there;
    `leads_nowhere`: Trace.stale_saved's)."""
    found = trace.stale_saved(instrs, active, leads_nowhere=leads_nowhere)
    if found is None:
        return {}

    def reached_by(given):
        reached = active_values(instrs, [v for v, g in zip(out_values, given) if g], wrt)
        return trace.stale_saved(instrs, reached, leads_nowhere=leads_nowhere)
    if len(out_values) > STALE_SUBSETS_UP_TO:
        return _LazyStale(found, reached_by)
    stale = {None: found}
    for given in itertools.product((False, True), repeat=len(out_values)):
        if any(given) and not all(given):
            stale[given] = reached_by(given)
    return stale


class _LazyStale(dict):
    """BackwardFn.stale for a call with too many outputs to enumerate their subsets: the entry
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


def forward_reach(instrs: list, out_values: list, groups: list):
    """BackwardFn.forward_reach: for a subset of the call's outputs, per input (the values of
    `groups` it held), whether those outputs depend on it, worked out when first asked (it
    keeps the trace's instructions for that)."""
    wrt = [v for group in groups for v in group]

    def reach(given: tuple) -> list:
        active = active_values(instrs, [v for v, g in zip(out_values, given) if g], wrt)
        return [any(v.id in active for v in group) for group in groups]
    return reach


def releasing_paths(trace: Trace, instrs: list, out_values: list, wrt: list):
    """Per output value, the ids of the state-releasing instructions (node.RELEASES_STATE) its
    backward runs through; None where the backward has none (see BackwardFn.releasing)."""
    releasing = [ins for ins in instrs if trace.grad_instrs.get(id(ins)) in RELEASES_STATE]
    if not releasing:
        return None
    paths = []
    for v in out_values:
        active = active_values(instrs, [v], wrt)
        paths.append(frozenset(id(ins) for ins in releasing if any(o.id in active for o in ins.outputs)))
    return tuple(paths)


def without_absent_seeds(program: Program, given: tuple) -> Program:
    """`program` (a backward program whose first inputs are the cotangents of the call's
    outputs) for a pass in which only the seeds marked in `given` are given: values computed
    from absent seeds alone are dropped (eagerly those nodes never run), and where an
    instruction combines such a value with a given one (the sum of two outputs' gradients)
    the dropped value is an exact zero. The inputs stay the same."""
    b = Builder(Program(list(program.inputs), [], []))
    absent = {v.id for v, g in zip(program.inputs, given) if not g}
    live = {v.id for v, g in zip(program.inputs, given) if g}
    values = {v.id: v for v in program.inputs}

    def zeros(v: Value) -> Value:
        zero = b.emit("const", value=0, dtype=v.dtype, shape=())
        return b.emit("expand", zero, shape=v.shape) if v.shape else zero

    for ins in program.instrs:
        if any(v.id in live for v in ins.inputs):
            live.update(v.id for v in ins.outputs)
        elif any(v.id in absent for v in ins.inputs):
            # (from absent seeds and saved values only: a node eagerly never run)
            absent.update(v.id for v in ins.outputs)
            continue
        args = [zeros(v) if v.id in absent else values[v.id] for v in ins.inputs]
        for old, new in zip(ins.outputs, b.append(ins.op, args, [v.type for v in ins.outputs], ins.attrs, ins.loc)):
            values[old.id] = new
    b.program.outputs = [zeros(v) if v.id in absent else values[v.id] for v in program.outputs]
    return live_program(b.program, b.program.outputs)


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


def _raise_stale(found) -> None:
    """torch's version error for a Trace.stale_saved entry (value, counter, version, where)."""
    v, box, version, where = found
    if isinstance(where, NoGradViewSaved):
        raise where.error()
    if type(where) is PartNamedWhenRaised:
        where = where.resolve()
    raise modified_error(v.type.shape, v.type.dtype.name, where, box[0], version)


def _raise_modified(box, version, tensor, where, shape=None, saved=None) -> None:
    """torch's error for a saved tensor changed in place after the call (as the eager engine's);
    `where` names the call's output, None for an input (named by its history now); `shape`:
    the saved view's, where the call saved a view of the tensor; `saved`: the saved array,
    which describes a tensor no longer alive (torch's node holds it)."""
    if isinstance(where, NoGradViewSaved):
        # torch's node saved the view itself: unpacking it asks for its history, which raises
        raise where.error()
    if type(where) is PartNamedWhenRaised:
        where = where.resolve()
    if tensor is None:
        shape = shape if shape is not None or saved is None else saved.shape
        raise modified_error(shape or (), saved.dtype.name if saved is not None else "", where or "", box[0],
                             version)
    if where is None:
        if tensor._base is not None:
            refresh_view_history(tensor)    # a view of a base written since: torch's AsStrided
        where = output_of(tensor._grad_fn, tensor._output_nr)
    raise modified_error(tensor.shape if shape is None else shape, tensor.dtype.name, where, box[0], version)


def shares_with_another(t: Tensor, by_memory: dict) -> bool:
    """Whether another tensor of `by_memory` ({id of the array owning memory: the tensors over
    it}) shares t's memory."""
    return any(other is not t and np.may_share_memory(t._data, other._data)
               for other in by_memory.get(id(_memory_owner(t._data)), ()))


def _NO_TENSOR():
    """The tensor of a check made on a counter alone: none (the error names the saved shape)."""
    return None


def saved_checks(saved_arrays: list, grad_outs: list, others: list, read: list, promoted: dict,
                  unversioned=frozenset(), read_as_inputs=None, counters=None, readers=None) -> list:
    """Version checks for the saved arrays that are the memory of the call's outputs that
    require grad or of the tensors in `others` (its other outputs, such as a max's
    indices, its inputs that require grad, the tensors it wrote in place), or a view of
    memory the call read (`read`: a weight saved transposed, an argument or a module's
    buffer that needs no grad), or a promoted copy of a caller's tensor or of a view of it
    (`promoted`: saved index -> (tensor, the view's shape or None); x64 * x32 saves x32 as
    float64, torch's node x32 itself): an in-place change after the call raises, as torch's
    check of the saved tensor does. Not those in `unversioned` (indices of the caller's
    memory saved through a `.data`, whose counter its tensor's writes never move).
    `read_as_inputs()`: the indices of the outputs an op of the call saved as its input (`b = a
    * a` saves a), which torch names by the tensor's node at the time of the error (`a.add_(1)`
    made it Add's); the others are named as outputs of the call's node. `counters` (per saved
    array, or None): the version counter a view made in the call shares (Trace.view_counters),
    which picks among the read tensors over its memory (x and x.data share an array, not a
    counter). `readers` (per saved array, or None): the tensor whose read lifted a saved input
    value (Trace.lifted_from): where it is none of the call's outputs, torch's node saved that
    tensor (an argument's detach() beside the argument: the operand the op was given)."""
    checks = []
    for k, (t, view_shape) in promoted.items():
        # (a view is named by its shape, and when it requires grad as the view torch regenerates)
        where = output_name("AsStridedBackward0", 0) if view_shape is not None and t._requires_grad else None
        checks.append((t._vbox, t._vbox[0], weakref.ref(t), where, view_shape, k))
    owners = {}     # id(array) -> (tensor, its name), each tensor whose memory the array is, in order
    saved_ids = {id(a) for a in saved_arrays}
    named_now = read_as_inputs() if read_as_inputs is not None and any(
        id(t._data) in saved_ids for t in grad_outs) else ()
    for k, t in enumerate(grad_outs):
        owners.setdefault(id(t._data), []).append(
            (t, None if k in named_now else f", which is output {k} of CompiledFunction,"))
    for t in others:
        if t._data is not None:
            owners.setdefault(id(t._data), []).append((t, None))
    by_memory = None
    for k, a in enumerate(saved_arrays):
        if k in promoted or k in unversioned:
            continue
        over = owners.get(id(a))
        if over is not None:
            # (the first of them, or the one on the counter the saved value is known to be
            # read through: c's where c and c.data are both outputs, and c's node saved c)
            box = counters[k] if counters is not None else None
            reader = readers[k] if readers is not None else None
            if reader is not None and reader._data is a and (box is None or reader._vbox is box) and \
                    all(where is None for _, where in over):
                t, where = reader, None
            else:
                t, where = next((owner for owner in over if owner[0]._vbox is box), over[0])
            checks.append((t._vbox, t._vbox[0], weakref.ref(t), where, None, k))
            continue
        if by_memory is None:
            # (the memory the call read, then its outputs' and the tensors it made or wrote: a
            # view of an output saved, `h.t()` of a returned h by a product, is checked by h's
            # counter, as torch's saved view shares it)
            by_memory, seen = {}, set()
            for x in [*read, *grad_outs, *others]:
                if x._data is not None and id(x) not in seen:
                    seen.add(id(x))
                    by_memory.setdefault(id(_memory_owner(x._data)), []).append(x)
        candidates = [x for x in by_memory.get(id(_memory_owner(a)), ()) if np.may_share_memory(a, x._data)]
        box = counters[k] if counters is not None else None
        t = next((x for x in candidates if x._vbox is box), None) if box is not None else None
        if t is None and box is not None:
            if candidates:
                # the view's counter is none of the read tensors' (a view of `a.data` made in
                # the call, written there): that of a tensor of the call on it, else the counter
                # alone (a `.data` of a view from outside, saved, its memory written through
                # another: `d = x.data; w @ d; x.data.add_(1); x.mul_(2)` checks d's)
                t = next((x for x in others if x._vbox is box and x._data is not None
                          and np.may_share_memory(a, x._data)), None)
                if t is None:
                    checks.append((box, box[0], _NO_TENSOR, "", a.shape, k))
                    continue
            else:
                # a value the call read through one of two tensors over the caller's memory
                # that differ in requires_grad (x after `x.data` read it: Trace.alias_counters),
                # saved as its own array (the alias's copy): the tensor on that counter, as
                # torch's saved tensor is x
                t = next((x for x in list(read) + list(others) if x._vbox is box and x._data is not None), None)
            if t is None:           # no tensor on it: the counter alone
                checks.append((box, box[0], _NO_TENSOR, "", a.shape, k))
                continue
        if t is None and candidates:
            # (the one whose memory the saved array is, where one is: torch's node saved that
            # tensor, a view from outside, `c0 @ a0` of a split's part c0 beside its base a0;
            # else the first over that memory)
            t = next((x for x in candidates if same_elements(x._data, a)), candidates[0])
        if t is not None:
            # torch names a saved view by its shape, and (when it requires grad) as the
            # view its engine regenerates: "which is output 0 of AsStrided"
            view = a.shape != t._data.shape or a.strides != t._data.strides
            where = output_name("AsStridedBackward0", 0) if view and t._requires_grad else None
            checks.append((t._vbox, t._vbox[0], weakref.ref(t), where, a.shape if view else None, k))
    return checks


class RaisingBackwardFn:
    """custom_call protocol for outputs whose backward raises torch's error when it runs: it
    was freed inside the call, or it goes through an op without a derivative (x // 2).
    `stale`: a saved value a write inside the call replaced, which the backward meets before
    the freed nodes (Trace.stale_saved): torch's version error, not the freed one."""

    def __init__(self, in_types, message: str = _FREED_MSG, stale=None, error_class=RuntimeError):
        self.out_types = in_types
        self.vjp_fn = None
        self.message = message
        self.error_class = error_class      # (NotImplementedError for unique's missing derivative, as torch's)
        self.stale = stale

    def run(self, *cotangents):
        if self.stale is not None:
            _raise_stale(self.stale)
        raise self.error_class(self.message)

    def expand(self, e, xs, gs):
        """Under create_graph: the same error (torch's, such as heaviside's missing derivative)."""
        self.run()
