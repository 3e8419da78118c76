"""What a backward checks of the values its nodes saved, as torch's nodes do when they
unpack them: a value written in place since it was saved raises torch's version-counter
error (`modified_error`), naming the tensor as torch does ("output 0 of TanhBackward0"), a
graph whose saved values were freed raises the freed-graph error. Used by the eager engine
(engine.py), custom Functions and compiled calls' backward nodes.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fusegrad.ir import OPS, Program, Value
from fusegrad.ir.ops.registry import OPAQUE
from fusegrad.ir.types import EXPAND_TYPE_NAMES
from fusegrad.ir.verifier import free_values

from .dispatch import apply_op, refresh_view_history
from .grad_mode import ARGUMENT_LEAVES_LEFT, no_grad
from .node import AccumulateGrad, SavedTensor, _FREED_MSG, saved_slots, short_name
from .saved_hooks import PackedSaved
from .tensor import Tensor

if TYPE_CHECKING:
    from .engine import GraphProgram


def check_dead_leaf_paths(node, given=None, needs=None) -> None:
    """An opaque node (a compiled call's custom_call) that a backward() runs, with cotangents
    for the outputs marked in `given` (None: all): torch's engine would also run the nodes
    inside it on the way to leaves the call made that died there, which check what they
    saved (the fn's `check_idle`, ir/ops/custom.py's protocol). `needs`: which inputs' edges
    lead to a node the backward runs (None: none do). Where no gradient the node computes
    is used (none of those reaches the call's inputs: custom_call's VJP then computes
    nothing), torch's nodes inside it still run, idle, and check what they saved."""
    back = getattr(dict(node.attrs).get("fn"), "vjp_fn", None)
    check = getattr(back, "check_idle", None)
    if check is None:
        return
    idle = needs is None
    if not idle:
        reached = back.reached_for(given) if given is not None else back.reached()
        idle = not any(need and r for need, r in zip(needs, reached))
    check(given, idle)


def _check_idle(node, given=None) -> None:
    """A node torch's backward() runs though no gradient it computes is used (its edges lead
    nowhere): torch's node then unpacks, so checks, what it saved: the outputs (relu's, exp's
    result), and the inputs a node that guards none saved (`v.pow(2)`'s v; node.guards_saved_inputs:
    one that guards saved none for such edges), in torch's unpack order. `given`: which of its
    outputs have a gradient (a compiled call's node checks only what those reach)."""
    if OPS[node.op].group == OPAQUE:
        check_dead_leaf_paths(node, None if given is None or all(given) else given)
        return
    if node._freed:
        if node._had_saved and saved_slots(node.op, node.attrs, node.in_types, (True,) * len(node.in_types),
                                           node.name())[1]:
            raise RuntimeError(_FREED_MSG)
        return
    if node.op in _UNPACK_ORDER:
        _check_in_unpack_order(node)
    for slot, saved in node.saved.items():
        if saved.box[0] != saved.version:
            _raise_modified(saved, node, slot[1])


def check_unreached(node, live) -> None:
    """A node on the backward's path that no defined gradient reaches (everything below norm(0),
    whose gradient is undefined): torch's engine still runs it, and its apply unpacks, so checks,
    every value it saved (a stale one raises the version error, a freed graph the freed-graph
    error); fusegrad computes nothing there, but checks the same."""
    if node.op is None or OPS[node.op].group == OPAQUE:
        return
    if not any(edge is not None and edge[0] in live for edge in node.edges):
        return              # (an idle node: _check_idle's rule)
    if node._freed:
        if node._had_saved:
            raise RuntimeError(_FREED_MSG)
        return
    _check_unread(node, ())


# op -> the saved slots in the order torch's node unpacks them, where the op's VJP reads
# them in another order (OpDef.extra["unpack_order"]: div, pow, mse_loss)
_UNPACK_ORDER = {name: opdef.extra["unpack_order"] for name, opdef in OPS.items() if "unpack_order" in opdef.extra}


def _check_in_unpack_order(node) -> None:
    """The version checks of a node's saved values in the order torch's node unpacks them."""
    for slot in _UNPACK_ORDER[node.op]:
        saved = node.saved.get(slot)
        if saved is not None and saved.box[0] != saved.version:
            _raise_modified(saved, node, slot[1])


def _check_unread(node, reads) -> None:
    """The version check of the values a node saved that this backward's VJP does not read
    (a result saved for another input's gradient: x ** e): torch's node unpacks, and so
    checks, every value it saved, whichever gradients it computes. (Not a compiled call's node:
    the inputs it keeps are for a create_graph re-expansion; its own checks are its saved values'.)"""
    if node.op == "custom_call":
        return
    outer = _outer_level_slots(node)
    for slot, saved in node.saved.items():
        if slot not in reads and saved.box[0] != saved.version and (outer is None or slot in outer):
            _raise_modified(saved, node, slot[1])


def _outer_level_slots(node):
    """The slots a node recorded inside fg.grad / fg.value_and_grad would have saved at the
    caller's level, where the leaves that transform made for its arguments need no gradient;
    None where no edge leads to such a leaf. torch.func records an op at each level, and the
    caller's node saves only what the caller's gradients need: `(u * w).sum()` with w the
    transform's leaf saves w, not u, so writing u after the transform returned is no error."""
    edges = node.edges
    if not ARGUMENT_LEAVES_LEFT[0]:
        return None         # (no transform has made a leaf yet: the common case, no walk)
    done = [edge is not None and _only_transform_leaves(edge[0]) for edge in edges]
    if True not in done:
        return None
    needs = tuple(edge is not None and not leaf_done for edge, leaf_done in zip(edges, done))
    inputs, outputs = saved_slots(node.op, node.attrs, node.in_types, needs, node.name())
    return {("in", i) for i in inputs} | {("out", k) for k in outputs}


def transform_level_only(node) -> bool:
    """Whether `node` belongs to a returned transform's level only: every leaf the graph below it
    reaches is one the transform made for an argument (`u * u` of fg.grad's leaf u). At the
    caller's level, torch.func's, no such node was recorded."""
    return ARGUMENT_LEAVES_LEFT[0] and not isinstance(node, AccumulateGrad) and _only_transform_leaves(node)


def _only_transform_leaves(node) -> bool:
    """Whether every leaf the graph below `node` reaches is one a returned transform made for an
    argument: at the caller's level no gradient flows there."""
    stack, seen, found = [node], {id(node)}, False
    while stack:
        n = stack.pop()
        if isinstance(n, AccumulateGrad):
            if not n.variable.__dict__.get("_transform_done", False):
                return False
            found = True
            continue
        for edge in n.edges:
            if edge is not None and id(edge[0]) not in seen:
                seen.add(id(edge[0]))
                stack.append(edge[0])
    return found


def _checked_array(saved, node, output_nr: int):
    """A node's saved value (an array), after the version check."""
    if saved is None:
        raise RuntimeError(f"internal error: the backward of {node.name()} reads a value it did not save")
    if saved.box[0] != saved.version:
        _raise_modified(saved, node, output_nr)
    if saved.tensor is not None and saved.tensor.__dict__.get("_detached_at", -1) > node._seq:
        raise RuntimeError(_DETACHED_SAVED)
    return _current_array(saved)


# torch's text (its two sentences run together, as there)
_DETACHED_SAVED = ("Trying to use a saved tensor that has been detached in-place, i.e. with .detach_().This is "
                   "not supported, please use out-of-place `.detach()` instead")


def _promoted_source(saved):
    """The operand a saved dtype-promoted copy was made of (`x32` for `x64 / x32`), or None."""
    return saved.tensor.__dict__.get("_promoted_from") if saved.tensor is not None else None


def _current_array(saved):
    """A saved value's array. torch's node saves a promoted operand itself, not the copy
    promotion made, so a write of its memory that bumps no version (`x32.data.copy_(...)`)
    reaches the backward: such a copy is made again from the operand's memory."""
    if type(saved) is PackedSaved:
        with no_grad():             # (torch's engine unpacks in the backward's grad mode: off)
            return saved.array
    source = _promoted_source(saved)
    if source is not None and source._data is not None:
        return source._data.astype(saved.array.dtype)
    t = saved.tensor
    if t is not None and t._data is not saved.array and t._data is not None and t.__dict__.get("_data_assigned"):
        # `x.data = other` after x was saved: torch's node saved x itself (its TensorImpl), whose
        # data the assignment replaced without a version bump, so the backward reads the new data
        return t._data
    return saved.array


def _check_saved(graph: GraphProgram, program: Program) -> None:
    """The freed-graph and version checks of the saved values `program` reads (none is bound)."""
    for v in free_values(program):
        saved = graph.bindings.get(v.id)
        if saved is None:
            owner = graph.owner.get(v.id)
            if owner is not None and owner._freed:
                raise RuntimeError(_FREED_MSG)
        elif not isinstance(saved, np.ndarray) and saved.box[0] != saved.version:
            _raise_modified(saved, graph.owner.get(v.id), graph.output_nr.get(v.id, 0))


def _bind(graph: GraphProgram, program: Program, create_graph: bool) -> dict:
    """Values the backward program reads from the forward graph, after the version checks."""
    return {v.id: _saved_value(graph, v, create_graph) for v in free_values(program)}


def _saved_value(graph: GraphProgram, v: Value, create_graph: bool):
    """The saved forward value `v` (a Tensor with create_graph, else an array), version-checked."""
    saved = graph.bindings.get(v.id)
    if saved is None:
        owner = graph.owner.get(v.id)
        if owner is not None and owner._freed:
            raise RuntimeError(_FREED_MSG)
        raise RuntimeError(f"internal error: backward reads {v} which no node saved")
    if isinstance(saved, np.ndarray):
        return saved
    if saved.box[0] != saved.version:
        _raise_modified(saved, graph.owner.get(v.id), graph.output_nr.get(v.id, 0))
    if create_graph:
        if saved.tensor is None:
            return _output_tensor(graph, v, saved)
        source = _promoted_source(saved)
        if source is None or source._data is None:
            return saved.tensor
        # (promoted again from the operand's memory, with the promotion's history: _current_array;
        # the copy stands for the operand in what the gradient's nodes save, as torch's save the
        # operand itself: it shares its version counter, see functional._coerce)
        copy = apply_op("cast", [source], {"dtype": saved.tensor._dtype}, "ToCopyBackward0")
        copy._vbox = source._vbox
        copy.__dict__["_promoted_from"] = source
        return copy
    return _current_array(saved)


def _raise_modified(saved, owner, output_nr: int):
    """torch's error for a saved tensor changed in place since it was saved (named as the
    operand a dtype promotion copied, when it is such a copy: torch saved the operand)."""
    source = _promoted_source(saved)
    if source is None and saved.tensor is not None:
        source = saved.tensor.__dict__.get("_index_of")     # (a mask's nonzero: the mask, as torch saved)
    version = saved.version
    if source is not None:
        saved = SavedTensor(source._data, saved.box, source)
    raise modified_error(saved.array.shape, saved.array.dtype.name, _modified_history(saved, owner, output_nr),
                         saved.box[0], version)


class NoGradViewSaved(str):
    """In place of torch's ", which is output N of Op," where a compiled call's saved value is a
    view made under no_grad (there or before the call), or a view of one made by `node`: torch's
    node saved the view itself, and unpacking it after its counter moved regenerates the view's
    history, which raises the rebased-view error first (`error()`). A str (empty): code that
    only names the tensor reads it as no name."""

    def __new__(cls, node=None, output_nr: int = 0):
        where = super().__new__(cls, "")
        where.node, where.output_nr = node, output_nr
        return where

    def error(self) -> RuntimeError:
        """torch's rebased-view error, naming the view of a view by its node."""
        from .dispatch import no_grad_view_rebased_error
        return no_grad_view_rebased_error(self.node, self.output_nr)


NO_GRAD_VIEW_SAVED = NoGradViewSaved()      # a view made under no_grad itself


class PartViewSaved(NoGradViewSaved):
    """As NoGradViewSaved, for a saved part of split/chunk/unbind made in a compiled call (or a
    view of one): unpacking it after its counter moved raises torch's multi-output error,
    whose text (`message`) was worded when the part was made."""

    def __new__(cls, message: str):
        where = super().__new__(cls)
        where.message = message
        return where

    def error(self) -> RuntimeError:
        return RuntimeError(self.message)


class PartNamedWhenRaised(str):
    """In place of torch's ", which is output 0 of AsStrided," for a saved view from outside a
    compiled call that is a part of split/chunk/unbind (or a view of one): torch's node saved
    the view, and unpacking it after its counter moved asks for its history, which torch
    refuses to regenerate for such a part (its multi-output error). `resolve()` raises that, or
    names the view as its history then names it. A str (the AsStrided text): code that only
    names the tensor reads it so."""

    def __new__(cls, tensor: Tensor):
        import weakref
        where = super().__new__(cls, output_name("AsStridedBackward0", 0))
        where.ref = weakref.ref(tensor)
        return where

    def resolve(self) -> str:
        t = self.ref()
        if t is None or t._base is None:
            return str(self)
        refresh_view_history(t)             # (raises torch's error for a part)
        return output_of(t._grad_fn, t._output_nr)


_MODIFIED_PREFIX = "one of the variables needed for gradient computation has been modified by an inplace operation"


def modified_error(shape, dtype_name: str, where: str, version: int, expected: int) -> RuntimeError:
    """torch's error for a tensor a backward needs that was changed in place since it was
    saved: its type and shape, `where` (", which is output N of Op," or ""), its version now
    and the version it was saved at."""
    kind = EXPAND_TYPE_NAMES.get(dtype_name, "Tensor")      # (bool: CPUBoolType, as torch's text)
    return RuntimeError(
        f"one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [{kind} [{', '.join(str(s) for s in shape)}]]{where} is at version {version}; "
        f"expected version {expected} instead. Hint: enable anomaly detection to find the operation "
        f"that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).")


def output_of(node, output_nr: int) -> str:
    """torch's ", which is output N of Op," naming a node's output (torch drops "Backward0",
    or "Backward" before another number: ExpBackward0 is "Exp", MaxBackward1 is "Max1");
    "" for no node (a leaf)."""
    if node is None:
        return ""
    return output_name(node.name(), output_nr)


def output_name(node_name: str, output_nr: int) -> str:
    """torch's ", which is output N of Op," for output `output_nr` of a node named `node_name`."""
    return f", which is output {output_nr} of {short_name(node_name)},"


def _modified_history(saved, owner, output_nr: int) -> str:
    """`output_of` for a modified saved tensor: for a saved output, the node that made it
    (nothing for an output that takes no gradient, such as max's indices: torch's has no
    grad_fn); for a saved input, the tensor's history now; nothing for a leaf."""
    if saved.tensor is None:
        out_type = owner.out_types[output_nr]
        if not out_type.dtype.is_floating_point or output_nr in OPS[owner.op].nondiff_outputs:
            return ""
        return output_of(owner, output_nr)
    t = saved.tensor
    if t.__dict__.get("_transform_input"):
        # fg.grad's stand-in for an argument: while the transform runs, a leaf of torch.func's
        # level (no node); once it returned, the caller's tensor, named by its history
        t = t.__dict__.get("_transform_source")
        if t is None:
            return ""
    if t._base is not None:
        refresh_view_history(t)      # a view of a base written since: torch's AsStrided
    return output_of(t._grad_fn, t._output_nr)


def _output_tensor(graph: GraphProgram, v: Value, saved) -> Tensor:
    """A saved output as a tensor carrying its node's history (for create_graph)."""
    for (node, k), value in graph.values.items():
        if value is v:
            array = saved.array
            if isinstance(node, AccumulateGrad) and saved.tensor is None and node.variable.requires_grad:
                # a leaf's value packed by saved_tensors_hooks: torch's unpacked tensor takes the
                # leaf's gradient edge; here it is the leaf itself (its values unless written since)
                return node.variable
            t = Tensor._wrap(array)
            t._vbox = saved.box
            if not isinstance(node, AccumulateGrad):
                t._grad_fn, t._output_nr, t._requires_grad = node, k, True
            return t
    raise RuntimeError(f"internal error: no node for {v}")
