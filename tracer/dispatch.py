"""Apply one op to tensors: run it eagerly (NumPy reference) or record it
into the active trace, and attach a grad_fn node when gradients are needed.

This is the only place that creates nodes, so every user-level function in
`functional.py` reduces to `apply_op(op, inputs, attrs, name)`.
"""
from __future__ import annotations

import math

import numpy as np

from fusegrad.ir import OPS, TensorType, bool_, float32, float64, from_numpy_dtype, int64
from fusegrad.ir import threaded
from fusegrad.ir.types import TORCH_SCALAR_NAMES
from fusegrad.ir.buffers import POOL
from fusegrad.ir.interpreter import apply_ref, apply_ref_into, apply_ref_small, into_writer
from fusegrad.ir.ops import ELEMENTWISE, OPAQUE, REDUCE, eager_form, infer_types
from fusegrad.ir.program import freeze_attrs

from . import trace_state
from .hooks import ANY_NODE_HOOKS
from .grad_mode import (INFERENCE_DEPTH, INFERENCE_MADE, _state as _grad_state, check_inference_saved,
                        is_grad_enabled, is_inference_mode_enabled, is_inference_tensor, mark_inference)
from .saved_hooks import HOOKS as SAVED_HOOKS, pack_node
from .node import SavedTensor, display_edges, grad_accumulator, guards_saved_inputs, node_class, saved_slots, short_name
from .layout import (broadcasts_a_unit_dim, byte_range, dense, elementwise_layout, in_result_order, odd_unit_strides,
                     replay_on_ids)
from .tensor import Tensor
from .forward_ad import apply_with_tangents, carries_tangents

# Whether a forward-mode AD level is entered (tracer/forward_ad.py sets it): one global read per op.
DUAL_ACTIVE = False

_TRACE_STATE = trace_state._state

# The type of a 0-d constant operand (a Python scalar's array), by NumPy dtype; eager
# dispatch and trace recording both look it up for every scalar operand.
ZERO_DIM_TYPES = {np.dtype(d.np): TensorType((), d) for d in (float32, float64, int64, bool_)}

# Movement ops whose NumPy reference returns a view of input 0 (declared in the op table).
_VIEW_OPS = frozenset(name for name, op in OPS.items() if op.view)


def _memory_owner(a: np.ndarray) -> np.ndarray:
    """The array that owns `a`'s memory (the end of its chain of bases)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _same_memory(view: np.ndarray, source: np.ndarray) -> bool:
    """Whether NumPy returned a view of `source` (empty views included), not a copy."""
    return _memory_owner(view) is _memory_owner(source)


def _default_name(op: str) -> str:
    """torch's node name for `op`: the op table's (extra["node"]) or the op's name in
    torch's spelling (log_softmax -> LogSoftmaxBackward0)."""
    node = OPS[op].extra.get("node") if op in OPS else None
    return node or "".join(part.capitalize() for part in op.split("_")) + "Backward0"


def type_of(x) -> TensorType:
    """The abstract type of a Tensor or of a NumPy constant operand."""
    if isinstance(x, np.ndarray):
        return TensorType(x.shape, from_numpy_dtype(x.dtype))
    return TensorType(x._data.shape, x._dtype)


# > 0 while the machinery of in-place writes re-derives views (view_of, _scatter): those are
# not the user's views made under no_grad (see _make_view).
INTERNAL_VIEWS = [0]

_NO_GRAD_VIEW_TAIL = (
    "is being modified inplace with grad mode enabled. Given that this use case is ambiguous and error-prone, "
    "it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the "
    "no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be "
    "tracked).")


def _no_grad_view_subject(node, output_nr: int) -> str:
    """How torch's errors name a view made under no_grad: itself, or a view of one by its node."""
    if node is None:
        return "A view was created in no_grad mode and "
    name = short_name(type(node).__name__)      # (SqueezeBackward1: "Squeeze1", as torch's text)
    return f"Output {output_nr} of {name} is a view of a view which was created in no_grad mode and "


def no_grad_view_rebased_error(node=None, output_nr: int = 0) -> RuntimeError:
    """torch's error for the history of a view made under no_grad (or of a view of one, made by
    `node`) after its base, or a view of the base, was written in place (in any grad mode)."""
    return RuntimeError(_no_grad_view_subject(node, output_nr) + "its base or another view of its base has been "
                        "modified inplace with grad mode enabled. " + _NO_GRAD_VIEW_TAIL.split(". ", 1)[1])


def no_grad_view_error(t) -> RuntimeError:
    """torch's error for an in-place op with grad enabled on a view made under no_grad of a
    tensor that requires grad (or on a view of one, named by its node: "Output 0 of Select")."""
    # torch names the view's node as recorded, not regenerated: reading t.grad_fn after its base
    # was written would raise the rebased error instead. (A view of such a view made in a trace
    # keeps its node in _view_node; a view made under no_grad has none.)
    return RuntimeError(_no_grad_view_subject(t.__dict__.get("_view_node", t._grad_fn), t._output_nr)
                        + _NO_GRAD_VIEW_TAIL)


def _check_multi_output_write(out, inputs) -> None:
    """torch's error for a part of split/chunk/unbind that needs no grad, written in place with
    grad enabled by a value that requires grad (its part that requires grad: check_inplace)."""
    if not out._requires_grad and is_grad_enabled() and \
            any(isinstance(x, Tensor) and x._requires_grad for x in inputs):
        from .splitting import _MULTI_OUTPUT_TAIL
        raise RuntimeError("A view was created in no_grad mode and is being modified inplace with grad mode "
                           "enabled." + _MULTI_OUTPUT_TAIL)


def edge_of(t):
    """Where the gradient of tensor `t` flows: its grad_fn, or its leaf's AccumulateGrad."""
    if t._base is not None:
        t.__dict__.pop("_nodeless", None)       # (torch's gradient_edge gives the view its node: see _make_view)
        if t._view_version != t._vbox[0]:
            refresh_view_history(t)
    if t._grad_fn is not None:
        return (t._grad_fn, t._output_nr)
    if t._no_grad_view:
        return None                     # torch's next_functions shows (None, 0)
    return (grad_accumulator(t), 0)


def _leads_nowhere(x) -> bool:
    """Whether tensor `x`'s gradient edge leads nowhere: a view made under no_grad of a tensor
    that requires grad, with no history of its own (torch's next_functions shows (None, 0))."""
    return x._no_grad_view and x._grad_fn is None


def _saving_needs(inputs, needs: tuple, name: str, in_types: tuple) -> tuple:
    """`needs` (which inputs require grad) as a node's saving sees it: torch's node saves what
    the gradients of inputs whose edges lead somewhere read (should_compute_output), so not
    for a view made under no_grad (`x @ v` saves v, not x; `v * v` saves nothing), where it
    guards its saved inputs at all (node.guards_saved_inputs: `v.pow(2)` saves v)."""
    saving = tuple([need and not (type(x) is not np.ndarray and _leads_nowhere(x)) for x, need in zip(inputs, needs)])
    return saving if saving == needs or guards_saved_inputs(name, in_types) else needs


def apply_op(op: str, inputs: list, attrs: dict | None = None, name: str | None = None, out=None):
    """Apply `op` to `inputs` (Tensors, or NumPy constants for Python scalars).

    Returns a Tensor (a tuple for multi-output ops). With `out`, the result is
    written into that tensor in place (its version is bumped) and it becomes
    the node's output, as torch's in-place ops do.
    """
    if DUAL_ACTIVE and carries_tangents(inputs, out):
        # (forward-mode AD: an operand holds a tangent, tracer/forward_ad.py; it calls back here)
        return apply_with_tangents(apply_op, op, inputs, attrs, name, out)
    if out is not None and out._multi_output is not None:
        _check_multi_output_write(out, inputs)
    trace = _TRACE_STATE.trace         # trace_state.current(), inlined (hot)
    if trace is not None:
        return trace.record(op, inputs, attrs, name, out)
    if out is None:
        # The signature of this call: (op, node name, attributes, then shape, dtype and
        # requires_grad of each input; None marks a constant). Unrolled for one and two
        # inputs, the common arities: this runs once per eager op.
        n = len(inputs)
        try:
            if n == 2:
                a, b = inputs
                if type(a) is np.ndarray:
                    sa, da, ra = a.shape, a.dtype, None
                else:
                    if a._base is not None and a._view_version != a._vbox[0] and _grad_state.enabled:
                        refresh_view_history(a, deferring=True)     # its base may have gained history since
                    # (a view made under no_grad without history of its own needs no saving: its
                    # edge leads nowhere, see _Plan.in_slots)
                    sa, da, ra = a._data.shape, a._dtype, \
                        a._requires_grad if not a._no_grad_view else (a._requires_grad, a._grad_fn is None)
                if type(b) is np.ndarray:
                    sb, db, rb = b.shape, b.dtype, None
                else:
                    if b._base is not None and b._view_version != b._vbox[0] and _grad_state.enabled:
                        refresh_view_history(b, deferring=True)
                    sb, db, rb = b._data.shape, b._dtype, \
                        b._requires_grad if not b._no_grad_view else (b._requires_grad, b._grad_fn is None)
                key = (op, name, tuple(attrs.items()) if attrs else None, sa, da, ra, sb, db, rb)
            elif n == 1:
                a = inputs[0]
                if type(a) is np.ndarray:
                    key = (op, name, tuple(attrs.items()) if attrs else None, a.shape, a.dtype, None)
                else:
                    if a._base is not None and a._view_version != a._vbox[0] and _grad_state.enabled:
                        refresh_view_history(a, deferring=True)
                    key = (op, name, tuple(attrs.items()) if attrs else None, a._data.shape, a._dtype,
                           a._requires_grad if not a._no_grad_view else (a._requires_grad, a._grad_fn is None))
            else:
                for x in inputs:
                    if type(x) is not np.ndarray and x._base is not None and x._view_version != x._vbox[0] \
                            and _grad_state.enabled:
                        refresh_view_history(x, deferring=True)
                key = (op, name, tuple(attrs.items()) if attrs else None,
                       *[(x.shape, x.dtype, None) if type(x) is np.ndarray
                         else (x._data.shape, x._dtype, x._requires_grad, _leads_nowhere(x)) for x in inputs])
            plan = _PLANS.get(key)
        except TypeError:               # an unhashable attribute (slices in an index): no plan
            key = plan = None
        if plan is None and key is not None:
            plan = _make_plan(key, op, inputs, attrs, name)
        if plan is not None:
            return _run_plan(plan, inputs, attrs)
    return _apply_general(op, inputs, attrs or {}, name, out)


class _Plan:
    """What eager dispatch of one call signature needs, worked out once: the
    types, the shape rule's result, which inputs and outputs a recorded node
    saves, its class, and which outputs get a history. Every op and signature
    goes through it; only in-place calls (`out=`) and unhashable attributes
    take the general path."""

    __slots__ = ("op", "ref", "frozen", "in_types", "out_types", "want", "small", "needs", "may_record",
                 "in_slots", "out_slots", "node_class", "marks_saved", "history", "view", "consts_at",
                 "no_consts", "saved_inputs", "saved_outputs", "pooled", "row_major", "elementwise", "out_dtype",
                 "saves", "direct", "unit_broadcast", "result_order", "part_views")

    def __init__(self, op, inputs, attrs, name):
        opdef = OPS[op]
        self.op, self.ref = op, eager_form(opdef)
        self.frozen = freeze_attrs(attrs)
        self.in_types = tuple(type_of(x) for x in inputs)
        self.out_types = tuple(infer_types(opdef, self.in_types, attrs, self.frozen))
        self.want = self.out_types[0].dtype.np if len(self.out_types) == 1 else None
        # Small enough never to be split over threads (ir.threaded): the lean reference call.
        self.small = self.want is not None and all(t.numel < threaded.MIN_ELEMENTS
                                                    for t in self.in_types + self.out_types)
        # A result large enough to page-fault when fresh is written into a buffer of the pool
        # (ir/buffers.py) by the op's `ref_into`, or by its ufunc when the ufunc's own result
        # dtype is the output's: None, or the callable writing it (ir.interpreter.into_writer).
        self.pooled = into_writer(opdef, self.in_types, self.out_types, attrs, eager=True) if self.small else None
        # The op's reference specialised to this signature (OpDef.extra["eager_ref"]): called
        # with the arrays alone, raising no floating-point warnings, so nothing is silenced.
        eager_ref = opdef.extra.get("eager_ref") if self.small and self.pooled is None else None
        self.direct = eager_ref(self.in_types, attrs) if eager_ref is not None else None
        self.needs = tuple(type(x) is not np.ndarray and x._requires_grad for x in inputs)
        # Integer and bool results never require grad (torch).
        self.history = tuple(k not in opdef.nondiff_outputs and t.dtype.is_floating_point
                             for k, t in enumerate(self.out_types))
        # (no node where no output gets a history: torch's integer casts and comparisons of
        # a tensor that requires grad ask nothing of its history)
        self.may_record = opdef.vjp is not None and True in self.needs and True in self.history
        # (torch saves an input only for the gradients of inputs whose edges lead somewhere: not
        # for a view made under no_grad, `x @ v` saves v only)
        node_name = name or _default_name(op)
        self.in_slots, self.out_slots = (saved_slots(op, self.frozen, self.in_types,
                                                     _saving_needs(inputs, self.needs, node_name, self.in_types),
                                                     node_name)
                                         if self.may_record else ((), ()))
        self.consts_at = tuple(i for i, x in enumerate(inputs) if type(x) is np.ndarray)
        self.no_consts = (None,) * len(inputs)
        # The saved-values dict's (index, key) pairs: tensor inputs and outputs the VJP reads.
        self.saved_inputs = tuple((i, ("in", i)) for i in self.in_slots if i not in self.consts_at)
        self.saved_outputs = tuple((k, ("out", k)) for k in self.out_slots)
        self.saves = bool(self.saved_inputs or self.saved_outputs)
        # torch wraps a Python scalar operand in a tensor and saves it (x * 2, x / 2): a
        # second backward through a node that saves only such a constant raises, as there.
        saves_tensor = bool(self.out_slots) or any(i not in self.consts_at for i in self.in_slots)
        self.marks_saved = not saves_tensor and _reads_a_constant(opdef, self.consts_at, self.in_slots)
        self.node_class = node_class(name or _default_name(op))
        self.view = op in _VIEW_OPS
        self.part_views = part_views(opdef, self.in_types, attrs)
        self.row_major = row_major_result(opdef)
        self.result_order = opdef.extra.get("result_order")     # (see OpDef.extra)
        # (composites too: lerp's reference computes in steps, and NumPy lays out each step's
        # result its own way where the operands' layouts differ)
        self.elementwise = opdef.pointwise
        # An operand's size-1 dim that the result broadcasts, or a size-1 dim of a result that
        # some operand broadcasts to (a number's 0-d one included): its stride, which NumPy's
        # c_contiguous flag ignores, takes part in torch's layout (see odd_unit_strides;
        # 2 * x.t() of a (3, 1) x has strides (1, 1), as x.t(); where all operands have the
        # result's shape, torch's TensorIterator takes its fast path, row-major: x.t().exp())
        shape = self.out_types[0].shape
        self.unit_broadcast = self.elementwise and len(self.out_types) == 1 and (
            broadcasts_a_unit_dim(shape, [t.shape for t in self.in_types])
            or len(shape) > 1 and 1 in shape and any(t.shape != shape for t in self.in_types))
        self.out_dtype = self.out_types[0].dtype if len(self.out_types) == 1 else None


def with_row_major_unit_strides(result: np.ndarray) -> np.ndarray:
    """A row-major `result` whose size-1 dims have row-major strides too (NumPy's keepdims
    reduction of a permuted array leaves them the input's: x.t().sum(0, keepdim=True) had
    strides (1, 1) where torch's are (4, 1))."""
    return result.reshape(-1).reshape(result.shape)


def row_major_result(opdef) -> bool:
    """Whether torch allocates the op's eager results row-major whatever its inputs' layout (a
    reduction's: NumPy's follow the input's order, so the sum over a permute's dim kept the
    permute's layout, and .view(-1) of it raised)."""
    return opdef.group == REDUCE or opdef.extra.get("row_major_result", False)


_PLANS: dict = {}
MAX_PLANS = 8192


def _make_plan(key, op, inputs, attrs, name):
    """The plan of a signature seen for the first time. A shape rule that raises
    raises here (nothing is memoised); an opaque op's plan is used once, not kept."""
    plan = _Plan(op, inputs, attrs or {}, name)
    if OPS[op].group == OPAQUE:         # per-call attributes (a compiled call's backward): never kept
        return plan
    if len(_PLANS) >= MAX_PLANS:
        _PLANS.clear()
    _PLANS[key] = plan
    return plan


def _run_plan(plan: _Plan, inputs, attrs):
    """Eager dispatch of a call whose signature has a plan (the hot path of eager mode)."""
    n = len(inputs)
    if n == 2:
        a, b = inputs
        arrays = [a if type(a) is np.ndarray else a._data, b if type(b) is np.ndarray else b._data]
    elif n == 1:
        a = inputs[0]
        arrays = [a if type(a) is np.ndarray else a._data]
    else:
        arrays = [x if type(x) is np.ndarray else x._data for x in inputs]
    if plan.pooled is not None and (not plan.elementwise or len(plan.out_types[0].shape) < 2
                                    or all([a.flags.c_contiguous for a in arrays])
                                    and not (plan.unit_broadcast and odd_unit_strides(arrays))):
        # (an elementwise op over a transpose takes the plain path below: NumPy loops in the
        # operands' memory order into a result laid out as torch's, where a row-major pooled
        # buffer was written one element a page and then copied into that layout)
        result = apply_ref_into(plan.pooled, arrays, POOL.empty(plan.out_types[0].shape, plan.want), attrs)
        out = object.__new__(Tensor)
        out._init(result, plan.out_types[0].dtype)
        outs = (out,)
    elif plan.small:
        direct = plan.direct
        result = direct(*arrays) if direct is not None else apply_ref_small(plan.ref, arrays, attrs, plan.want)
        if result.ndim > 1:
            if result.flags.c_contiguous:
                # a row-major result of a strided operand (relu writes a fresh array): torch's
                # elementwise results follow their operands' layout
                if plan.elementwise and (not (arrays[0].flags.c_contiguous if n == 1 else
                                              arrays[0].flags.c_contiguous and arrays[1].flags.c_contiguous
                                              if n == 2 else all([a.flags.c_contiguous for a in arrays]))
                                         or plan.unit_broadcast and odd_unit_strides(arrays)):
                    result = elementwise_layout(result, arrays)     # (unrolled: the hot path)
                elif plan.row_major and 1 in result.shape:
                    result = with_row_major_unit_strides(result)
            elif plan.row_major:
                result = np.ascontiguousarray(result)
            elif plan.elementwise:
                # (rare: NumPy laid the result out by its own rule, from strided operands or an
                # expand's; torch's TensorIterator may order the dims otherwise: p + q of two
                # permutes follows p)
                result = elementwise_layout(result, arrays)
            if plan.result_order is not None:
                result = in_result_order(result, plan.result_order, arrays, attrs)
        out = object.__new__(Tensor)
        # (Tensor._init, written out: one call fewer per op)
        out._data, out._dtype, out._requires_grad, out._grad_fn, out._vbox, out._sym = \
            result, plan.out_dtype, False, None, [0], None
        if INFERENCE_DEPTH[0] and is_inference_mode_enabled():
            mark_inference(out)
        outs = (out,)
    else:
        outs = []
        for r, t in zip(apply_ref(plan.ref, arrays, attrs or {}, plan.out_types), plan.out_types):
            if plan.row_major and not r.flags.c_contiguous:
                r = np.ascontiguousarray(r)
            elif plan.row_major and r.ndim > 1 and 1 in r.shape:
                r = with_row_major_unit_strides(r)
            elif plan.elementwise and r.ndim > 1 and (not all([a.flags.c_contiguous for a in arrays])
                                                      or plan.unit_broadcast and odd_unit_strides(arrays)):
                r = elementwise_layout(r, arrays)
            if plan.result_order is not None and r.ndim > 1:
                r = in_result_order(r, plan.result_order, arrays, attrs)
            wrapped = object.__new__(Tensor)
            wrapped._init(r, t.dtype)
            outs.append(wrapped)
    if plan.view and type(inputs[0]) is not np.ndarray:
        if plan.part_views is None:
            if _same_memory(outs[0]._data, arrays[0]):
                _make_view(outs[0], inputs[0], plan.op, plan.frozen)
        else:
            _make_part_views(outs, inputs[0], plan.part_views)
    if plan.may_record and _grad_state.enabled:       # is_grad_enabled(), inlined (hot)
        saved = {}
        if plan.saves:
            for i, slot in plan.saved_inputs:
                x = inputs[i]
                if INFERENCE_MADE[0]:
                    check_inference_saved(x)
                saved[slot] = SavedTensor(x._data, x._vbox, x)
            for k, slot in plan.saved_outputs:
                saved[slot] = SavedTensor(outs[k]._data, outs[k]._vbox)
        needs = plan.needs
        # (edge_of's common case written out: an input with a history that is no view)
        if n == 2:
            if needs[0]:
                e0 = (a._grad_fn, a._output_nr) if a._base is None and a._grad_fn is not None else edge_of(a)
            else:
                e0 = None
            if needs[1]:
                e1 = (b._grad_fn, b._output_nr) if b._base is None and b._grad_fn is not None else edge_of(b)
            else:
                e1 = None
            edges = (e0, e1)
            consts = (a if type(a) is np.ndarray else None, b if type(b) is np.ndarray else None) \
                if plan.consts_at else plan.no_consts
        elif n == 1:
            # it needs a gradient, or nothing would record
            edges = ((a._grad_fn, a._output_nr) if a._base is None and a._grad_fn is not None else edge_of(a),)
            consts = plan.no_consts
        else:
            edges = tuple([edge_of(x) if need else None for x, need in zip(inputs, needs)])
            consts = tuple([x if type(x) is np.ndarray else None for x in inputs]) if plan.consts_at else \
                plan.no_consts
        node = plan.node_class(plan.op, plan.frozen, plan.in_types, plan.out_types, edges, consts, saved)
        if plan.marks_saved:
            node._had_saved = True
        history = plan.history
        if len(outs) == 1:
            if history[0]:
                t = outs[0]
                if t._base is None:         # a fresh result: set_history without its checks
                    t._grad_fn, t._requires_grad = node, True
                else:
                    set_history(t, node, 0)
            if SAVED_HOOKS:                 # saved_tensors_hooks: the node keeps what pack_hook gives
                pack_node(node, outs)
            return outs[0]
        k = 0
        for t in outs:
            if history[k]:
                if t._base is None:         # a fresh result: set_history without its checks
                    t._grad_fn, t._requires_grad = node, True
                    if k:
                        t._output_nr = k
                else:
                    set_history(t, node, k)
            k += 1
        if SAVED_HOOKS:
            pack_node(node, outs)
    return outs[0] if len(outs) == 1 else tuple(outs)


def part_views(opdef, in_types: tuple, attrs: dict):
    """For a view op with several outputs (split), per output the single-output view op that
    derives it from operand 0, (op, frozen attributes): how its view chain records it (a write
    through its base re-derives it so); None for other ops."""
    rule = opdef.extra.get("part_views")
    return None if rule is None else rule(in_types[0].shape, attrs)


def _make_part_views(outs, src, views: tuple) -> None:
    """The outputs of a view op with several (split's parts) are views of `src`, each derived
    from it by its own single-output view op (`views`)."""
    for out, (op, frozen) in zip(outs, views):
        if _same_memory(out._data, src._data):
            _make_view(out, src, op, frozen)


def propagate_multi_output(view, src) -> None:
    """A view made with grad enabled of a part of split/chunk/unbind (or of a view of one) is
    such a view too, and of a part of a tensor without grad as that part is (torch's
    propagate_creation_meta: "Output 0 of Select"; a view made under no_grad takes that mode's
    meta instead). Eagerly (_make_view) and in a trace (Trace._mark_view)."""
    if src._multi_output is not None and _grad_state.enabled:
        view._multi_output = 0
        if src.__dict__.get("_multi_output_no_grad"):
            view.__dict__["_multi_output_no_grad"] = True


def _make_view(view, src, op: str, frozen: tuple) -> None:
    """`view` (the result of view op `op` on `src`) shares `src`'s memory: give it the
    base, the version counter and the chain of view ops that derive it from the base."""
    view._vbox = src._vbox
    if is_inference_tensor(src):
        mark_inference(view)        # (a view of an inference tensor is one, outside inference_mode too)
    elif INFERENCE_MADE[0]:
        view.__dict__.pop("_inference", None)   # (a view of a normal tensor is one, inside inference_mode too)
    view._base = src._base if src._base is not None else src
    # How to recompute this view from its base, for in-place writes through it.
    view._view_chain = (src._view_chain if src._base is not None else ()) + ((op, frozen),)
    view._view_version = src._vbox[0]
    propagate_multi_output(view, src)
    if (src._no_grad_view or (view._base._requires_grad and not _grad_state.enabled)) and not INTERNAL_VIEWS[0]:
        # torch: a view made under no_grad of a base that requires grad requires grad too,
        # as a leaf without a gradient of its own (edge_of: its edges lead nowhere); an
        # in-place op on it, or on a view of it, with grad enabled raises.
        view._no_grad_view = True
        if not _grad_state.enabled:
            view._requires_grad = True
    elif (not _grad_state.enabled or src.__dict__.get("_no_grad_mode")) and not INTERNAL_VIEWS[0]:
        # torch marks every view made under no_grad (its creation_meta), also of a base that
        # needs no grad: once the base gains a history in place, the view's history cannot be
        # regenerated (refresh_view_history) and an in-place op on it with history raises.
        # A view of such a view inherits the mark (torch's propagate_creation_meta).
        view.__dict__["_no_grad_mode"] = True
    elif not view._base._requires_grad and not INTERNAL_VIEWS[0]:
        # A view of a base that needs no grad has no node in torch (its grad_fn_ is null) until
        # something asks for it after the base gained a history: reading .grad_fn or .is_leaf,
        # or an op recording a node that reads the view (gradient_edge). Until then torch's
        # in-place check, which reads the node as it is, takes the view for a leaf that requires
        # grad (inplace.check_inplace).
        view.__dict__["_nodeless"] = True


_PARTIAL_OVERLAP = ("unsupported operation: some elements of the input tensor and the written-to tensor refer to "
                    "a single memory location. Please clone() the tensor before performing the operation.")


def _check_no_partial_overlap(target: np.ndarray, arrays: list, full_too: bool = False) -> None:
    """torch's error for an in-place op reading memory that its output partly overlaps
    (`a.add_(a[0])`, `x.sub_(x[1, 1])`, `x.copy_(x.t())`): the result would depend on the
    order of the writes. torch's rule (get_overlap_status): the same memory in the same
    layout (`h.mul_(h)`) is fine, unless `full_too` (index_put_'s assert_no_overlap:
    `v[[2, 0, 1]] = v`), and so is any pair where one is not dense (a strided slice: too
    costly to decide). `target`: the memory written."""
    if target.size == 0 or not dense(target):
        return
    for a in arrays:
        if a.size == 0 or not np.may_share_memory(a, target) or not dense(a):
            continue
        if a is target and not full_too:
            continue
        (a0, a1), (t0, t1) = byte_range(a), byte_range(target)
        if (a0, a1) == (t0, t1) and a.strides == target.strides and not full_too:
            continue        # (torch's Full overlap: same bytes, same strides, those of size-1 dims too)
        if a0 < t1 and t0 < a1:
            raise RuntimeError(_PARTIAL_OVERLAP)


def _apply_general(op: str, inputs: list, attrs: dict, name, out):
    """apply_op for in-place calls and unhashable attributes (and the reference for
    what `_run_plan` does)."""
    opdef = OPS[op]
    # One pass over the inputs: types, arrays, which need grad, constants (the hot path).
    in_types, arrays, needs, consts = [], [], [], []
    for x in inputs:
        if type(x) is np.ndarray:
            t = ZERO_DIM_TYPES.get(x.dtype) if not x.shape else None
            in_types.append(t if t is not None else TensorType(x.shape, from_numpy_dtype(x.dtype)))
            arrays.append(x)
            needs.append(False)
            consts.append(x)
        else:
            if x._base is not None and x is not out and x._view_version != x._vbox[0] and _grad_state.enabled:
                # an operand that is a view whose base was written since (t2 = s[:, 0]; s.add_(w);
                # c.add_(t2)): its history is regenerated first, as in _run_plan, so the write
                # records a node when the base gained a history (it silently recorded none)
                refresh_view_history(x, deferring=True)
            in_types.append(TensorType(x._data.shape, x._dtype))
            arrays.append(x._data)
            needs.append(x._requires_grad)
            consts.append(None)
    in_types, needs = tuple(in_types), tuple(needs)
    if out is not None and opdef.group == ELEMENTWISE:
        _check_no_partial_overlap(out._data, arrays)    # (before the shapes: torch checks this first)
    frozen = freeze_attrs(attrs)
    out_types = infer_types(opdef, in_types, attrs, frozen)
    results = apply_ref(eager_form(opdef), arrays, attrs, out_types)
    record = opdef.vjp is not None and True in needs and is_grad_enabled()
    if out is not None and out._base is not None and is_grad_enabled() and (record or out._base._requires_grad):
        return _inplace_on_view(op, inputs, attrs, name, out)

    saved = {}
    if record:
        node_name = name or _default_name(op)
        in_slots, out_slots = saved_slots(op, frozen, in_types, _saving_needs(inputs, needs, node_name, in_types),
                                          node_name)
        for i in in_slots:
            x = inputs[i]
            if isinstance(x, Tensor):
                if x is out and i == 0:     # in-place: keep self's value from before the write
                    x = x._snapshot()       # (another operand that is self too, as in h.mul_(h),
                                            # is saved as it is: the write makes backward raise, as torch)
                if INFERENCE_MADE[0]:
                    check_inference_saved(x)
                saved[("in", i)] = SavedTensor(x._data, x._vbox, x)
        # The edges before an in-place write: an operand that is a view of the tensor written
        # (b.add_(b.view(3))) reaches the gradient of the value it had, and is regenerated
        # from the new history later; taken after the write, it was regenerated from the old
        # node then and kept that history for good (its gradient silently lost the write).
        if len(inputs) == 2:            # unrolled: most ops are binary, and a comprehension costs more
            edges = (edge_of(inputs[0]) if needs[0] else None, edge_of(inputs[1]) if needs[1] else None)
        else:
            edges = tuple([edge_of(x) if need else None for x, need in zip(inputs, needs)])
    else:
        out_slots = ()

    if out is not None:
        _write_inplace(out, results[0], opdef.name, name in _FILLS)
        outs = (out,)
    else:
        outs = []
        for r, t in zip(results, out_types):
            wrapped = object.__new__(Tensor)
            if not r.flags.c_contiguous and row_major_result(opdef):
                r = np.ascontiguousarray(r)
            elif opdef.extra.get("result_order") is not None and r.ndim > 1:
                r = in_result_order(r, opdef.extra["result_order"], arrays, attrs)
            wrapped._init(r, t.dtype)
            outs.append(wrapped)
        if op in _VIEW_OPS and isinstance(inputs[0], Tensor):
            views = part_views(opdef, in_types, attrs)
            if views is not None:
                _make_part_views(outs, inputs[0], views)
            elif _same_memory(results[0], arrays[0]):
                _make_view(outs[0], inputs[0], op, frozen)
    if record:
        for k in out_slots:
            saved[("out", k)] = SavedTensor(outs[k]._data, outs[k]._vbox)
        node = node_class(name or _default_name(op))(op, frozen, in_types, tuple(out_types), edges, tuple(consts),
                                                      saved)
        if not saved and in_slots and _reads_a_constant(opdef, [i for i, c in enumerate(consts) if c is not None],
                                                        in_slots):
            # torch wraps a Python scalar operand in a tensor and saves it (x * 2, x / 2):
            # a second backward through such a node raises, as it does there.
            node._had_saved = True
        for k, t in enumerate(outs):
            # Integer and bool results never require grad (torch).
            if k not in opdef.nondiff_outputs and t._dtype.is_floating_point:
                set_history(t, node, k)
        if SAVED_HOOKS:
            pack_node(node, outs)
    return outs[0] if len(outs) == 1 else tuple(outs)


def _reads_a_constant(opdef, consts_at, in_slots) -> bool:
    """Whether the VJP reads a Python scalar operand (at `consts_at`) that torch saves as a
    tensor (x * 2 wraps 2); not one torch's node keeps as a Scalar attribute
    (OpDef.extra["scalar_attributes"]: lerp's weight), which no backward frees."""
    attributes = opdef.extra.get("scalar_attributes", ())
    return any(i in consts_at and i not in attributes for i in in_slots)


def set_history(t, node, output_nr: int) -> None:
    """Make `t` output `output_nr` of `node` (keeping a retain_grad() request)."""
    t._grad_fn, t._output_nr, t._requires_grad = node, output_nr, True
    if t._base is not None:
        t.__dict__.pop("_nodeless", None)       # (the view has its node now: see _make_view)
    if t._retains_grad and node is not None:
        # (with no node yet, a view regenerated under no_grad inside a compiled call's finish,
        # the request stays for the node the call gives it)
        t._retains_grad = False
        t._retain()
    if t._base is not None:
        t._view_version = t._vbox[0]


# fill_ and zero_ (their nodes' names): torch writes them through a view whose elements share
# memory (an expand's broadcast: every alias gets the value); other in-place ops refuse one.
_FILLS = frozenset({"FillBackward2", "FillBackward3", "ZeroBackward0"})
_OVERLAP_MSG = ("unsupported operation: more than one element of the written-to tensor refers to a single memory "
                "location. Please clone() the tensor before performing the operation.")


def _writable_memory(a: np.ndarray):
    """`a`'s elements as a writable array: `a` itself, or, for a read-only view of writable
    memory (NumPy's broadcast_to makes an expand's view read-only), a writable view of the
    same memory with a's layout; None when the memory itself is read-only."""
    if a.flags.writeable:
        return a
    if a.size == 0:
        return np.empty(a.shape, a.dtype)      # (no element to write; its strides may span no memory)
    root = a
    while isinstance(root.base, np.ndarray) and not root.flags.writeable:
        root = root.base
    if not root.flags.writeable:
        return None
    if not root.flags.c_contiguous:
        # a dense root in another order (a transposed result): its memory as one row-major run
        if min(root.strides, default=0) < 0:
            return None
        flat = root.ravel(order="K")
        if flat.__array_interface__["data"][0] != root.__array_interface__["data"][0] or \
                not np.may_share_memory(flat, root):
            return None                 # (not dense: ravel copied)
        root = flat
    offset = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return np.ndarray(a.shape, a.dtype, buffer=root, offset=offset, strides=a.strides)


MASKED_FILL_EXPANDED = ("Use of masked_fill_ on expanded tensors is deprecated. Please clone() the tensor before "
                        "performing this operation. This also applies to advanced indexing e.g. tensor[mask] = scalar")


def writes_expanded_memory(t: Tensor, value=None) -> bool:
    """Whether a masked_fill_ / index_put_ of `value` into `t` writes memory that several of
    t's elements share (an expand's), eagerly and with no history to record: torch 2.13 does
    that write, with a deprecation warning (tensors that need a gradient take the overlap error)."""
    if t._data is None or trace_state.current() is not None or not _overlaps_itself(t._data):
        return False
    return not (_grad_state.enabled and (t._requires_grad or (isinstance(value, Tensor) and value._requires_grad)))


def write_aliased(t: Tensor, write) -> None:
    """`write(memory)` into memory that several of t's elements share (an expand's), given as
    a writable array of t's layout; bumps t's version. A location takes the last value
    written to any of its replicas, as in torch's kernels."""
    target = _writable_memory(t._data)
    if target is None:
        raise RuntimeError(READ_ONLY_MEMORY)
    write(target)
    t._vbox[0] += 1


def _overlaps_itself(a: np.ndarray) -> bool:
    """Do two elements of `a` share memory (a stride 0 over more than one element)? (An empty
    array has none, whatever strides NumPy gave it.)"""
    return a.size > 0 and any(stride == 0 and size > 1 for stride, size in zip(a.strides, a.shape))


def result_cast_error(result: str, target: str) -> RuntimeError:
    """torch's error for an in-place op whose result type its tensor cannot hold (each type
    named as torch names it there: "Float", "Long", or C++'s "long int" for number operands)."""
    return RuntimeError(f"result type {result} can't be cast to the desired output type {target}")


def broadcast_shape_error(shape, broadcast) -> RuntimeError:
    """torch's error for an in-place op whose operands broadcast beyond its tensor's shape."""
    return RuntimeError(f"output with shape [{', '.join(map(str, shape))}] doesn't match the broadcast shape "
                        f"[{', '.join(map(str, broadcast))}]")


READ_ONLY_MEMORY = ("fusegrad: this tensor's memory is a read-only NumPy array (fg.from_numpy of an array that "
                    "is not writable), which fusegrad does not write; copy the array, or make it writable, first")


def _write_inplace(t, result: np.ndarray, op: str, fill: bool = False) -> None:
    target = _writable_memory(t._data)
    if target is None and not _overlaps_itself(t._data):
        raise RuntimeError(READ_ONLY_MEMORY)
    if target is None or (target is not t._data and not fill and _overlaps_itself(t._data)):
        raise RuntimeError(_OVERLAP_MSG)
    if not np.can_cast(result.dtype, t._data.dtype, casting="same_kind"):
        raise result_cast_error(_torch_name(result.dtype), _torch_name(t._data.dtype))
    if result.shape != t._data.shape:
        raise broadcast_shape_error(t._data.shape, result.shape)
    np.copyto(target, result, casting="unsafe")
    t._vbox[0] += 1


def _fill_through_expand(src, expanded, rest, value):
    """`src` after a fill (of `value`, one value everywhere) through `rest` views of an expand of
    it (`expanded`): the memory of an element takes the value where the write reached any of
    its replicas, as eagerly (they are one memory location)."""
    reached = _scatter(np.zeros(tuple(expanded.shape), np.bool_), rest, np.ones(tuple(value.shape), np.bool_),
                       fill=True)       # (a position that another expand replicates is reached too)
    shape, axes = tuple(src.shape), _replicated_axes(src, expanded)
    if axes:
        reached = apply_op("amax", [reached], {"axes": axes, "keepdim": False})
    reached = apply_op("reshape", [reached], {"shape": shape})
    if 0 in tuple(value.shape):         # an empty write reaches nothing (and has no max)
        return apply_op("where", [reached, src, src], None, "CopySlices")
    # the fill's one value: its first element (a getitem saves nothing for its backward, where
    # amax saved the filled view, so a later write to the base made the backward raise; a
    # tensor's fill_ gives that element the whole region's gradient, which FillBackward sums)
    constant = apply_op("getitem", [value], {"index": (("i", 0),) * len(value.shape)})
    return apply_op("where", [reached, apply_op("expand", [constant], {"shape": shape}), src], None, "CopySlices")


def _write_through_expand(src, expanded_shape: tuple, rest, value):
    """`src` after a write of `value` into the region that the views `rest` select of an expand
    of it: allowed where the region holds each element of src at most once (a row of
    x.expand(2, 3)), as torch's copy into it; torch's overlap error otherwise."""
    ids = replay_on_ids(np.broadcast_to(np.arange(src.numel()).reshape(tuple(src.shape)), expanded_shape),
                        rest).reshape(-1)
    if np.unique(ids).size != ids.size:
        raise RuntimeError(_OVERLAP_MSG)
    flat = apply_op("reshape", [src], {"shape": (src.numel(),)})
    values = apply_op("reshape", [value], {"shape": (ids.size,)})
    written = apply_op("index_put_at", [flat, values, ids.astype(np.int64)], {"dims": (0,), "accumulate": False})
    return apply_op("reshape", [written], {"shape": tuple(src.shape)}, "CopySlices")


def _unexpand(src, value, fill: bool):
    """`value`, of the shape of an expand of `src`, written back to `src`'s shape: one of the
    positions the expand replicated each (they hold one value only after a fill; any other
    write there is torch's overlap error)."""
    # (src and value are tensors, or NumPy arrays where a fill's reach is worked out)
    value_size, src_size = math.prod(value.shape), math.prod(src.shape)
    if value_size == 0 and src_size != 0:
        # an expand to an empty shape: the write reaches no element of src (torch still records it)
        return apply_op("cast", [src], {"dtype": src.dtype}, "CopySlices")
    replicated = _replicated_axes(src, value)
    if replicated:
        if not fill and value_size > 0:      # (an empty expand has no element twice)
            raise RuntimeError(_OVERLAP_MSG)
        index = tuple(("s", 0, 1 if k in replicated else size, 1) for k, size in enumerate(value.shape))
        value = apply_op("getitem", [value], {"index": index})
    if isinstance(src, np.ndarray):
        return apply_op("reshape", [value], {"shape": tuple(src.shape)}, "CopySlices")
    # (put over src, as a reshape's or permute's write: see _scatter_through)
    whole = apply_op("reshape", [value], {"shape": tuple(src.shape)})
    return apply_op("index_put", [src, whole], {"index": _full_slices(src.shape)}, "CopySlices")


def _replicated_axes(src, expanded) -> tuple:
    """The axes of `expanded` (an expand of `src`, or a value of its shape) over which the
    expand repeats src's elements: new leading axes and size-1 axes grown, of size > 1."""
    shape, target = tuple(src.shape), tuple(expanded.shape)
    lead = len(target) - len(shape)
    return tuple(k for k in range(len(target)) if target[k] > 1 and (k < lead or shape[k - lead] == 1))


def _torch_name(dt) -> str:
    return TORCH_SCALAR_NAMES.get(np.dtype(dt).name, str(dt))


def _inplace_on_view(op, inputs, attrs, name, view):
    """An in-place op on a view: write through to the base's memory, then give
    the base a CopySlices history (its old value with the view's region
    replaced) and the view a history as a view of the new base, as torch does."""
    base, chain = view._base, relaid_chain(view)
    if view.__dict__.get("_no_grad_mode") and is_grad_enabled() and any(
            isinstance(x, Tensor) and x._requires_grad for x in inputs):
        raise no_grad_view_error(view)  # (a view made under no_grad given a history in place)
    refresh_view_history(view)          # if the base was written since, the view's history is the base's now
    base_edge = edge_of(base) if base._requires_grad else None
    # torch's CopySlices hands the gradient of the values overwritten to the base's node
    # through a view of the base's gradient: no node of the view's own history sees it (a
    # hook registered on `w` does not fire after `w[1:].zero_()`). So the old values take a
    # history regenerated from the base where a hook could tell the difference.
    regenerate = ANY_NODE_HOOKS[0] and base_edge is not None and view._grad_fn is not None
    old = (view_of(base, chain) if regenerate else view)._snapshot()
    # Only self is read from the snapshot: another operand that is the view (t.mul_(t)) is saved
    # as the view, so the write makes its backward raise, as torch's (and as h.mul_(h) does).
    result = apply_op(op, [old if k == 0 else x for k, x in enumerate(inputs)], attrs, name)
    fill = name in _FILLS
    _write_inplace(view, result._data, op, fill)
    node = result._grad_fn
    if node is not None and ("out", 0) in node.saved and not SAVED_HOOKS:
        # an op that saves its output (exp_, tanh_, sigmoid_, relu_, sqrt_) saves the view itself
        # in torch: a later write to the view or its base makes the backward raise
        node.saved[("out", 0)] = SavedTensor(view._data, view._vbox)
    new_base = _scatter(base, chain, result, fill)
    if new_base._grad_fn is not None:
        set_history(base, new_base._grad_fn, new_base._output_nr)
        if type(new_base._grad_fn).__name__ == "CopySlices":
            display_edges(new_base._grad_fn, (base_edge,) + (node.next_functions[1:] if node else ()))
    again = view_of(base, chain)
    if again._grad_fn is not None:
        set_history(view, again._grad_fn, again._output_nr)
    return view


def relaid_chain(view) -> tuple:
    """The view's chain of view ops from its base as the base is laid out now: where the
    base changed shape in place since the view was made (`b.t_()`, `b.unsqueeze_(0)`:
    inplace_views.py records each in `_relayouts` with the inverse op), those inverses come
    first, so the view still reads the memory it was made over (torch regenerates it as an
    as_strided of that memory)."""
    relayouts = view._base.__dict__.get("_relayouts")
    if relayouts:
        seen = view.__dict__.get("_relaid", 0)
        pending = [(op, attrs) for version, op, attrs in relayouts[seen:] if version > view._view_version]
        view.__dict__["_relaid"] = len(relayouts)
        if pending:
            view._view_chain = tuple(reversed(pending)) + tuple(view._view_chain)
    return view._view_chain


def refresh_view_history(view, deferring: bool = False) -> None:
    """A view whose base was written in place since its history was recorded is
    re-derived from the base (torch regenerates such a view's grad_fn too). `deferring`: an
    op is about to read the view, and may not record a node (a comparison, an integer cast):
    a part of split/chunk/unbind, whose history torch will not regenerate, raises only where
    its history is asked for (edge_of, grad_fn)."""
    base = view._base
    if view._view_version == view._vbox[0]:
        return
    relaid_chain(view)
    if view.__dict__.get("_transform_input"):
        # fg.grad's stand-in for an argument with history (runtime.transforms._as_input): torch.func's
        # wrapper is no view, so a write through its memory keeps its node (and what saved it raises)
        view._view_version = view._vbox[0]
        return
    if view._no_grad_view and view._multi_output is None:
        # torch will not regenerate the history of a view made under no_grad (nor of a view of one;
        # a part of split made of one with grad on is the split's: its error below)
        raise no_grad_view_rebased_error(view._grad_fn, view._output_nr)
    if not base._requires_grad:
        if view._requires_grad and view._grad_fn is not None:
            # a view (with history) of a leaf that is itself a view of a tensor without grad
            # (x = base.t().requires_grad_(); p = x[0]): torch regenerates it from the base, as
            # one as_strided whose gradient reaches nothing (p.grad_fn AsStridedBackward0, its
            # next function None), and p still requires grad
            view_type = TensorType(tuple(view.shape), view._dtype)
            node = node_class("AsStridedBackward0")("cast", freeze_attrs({"dtype": view._dtype}), (view_type,),
                                                     (view_type,), (None,), (None,), {})
            set_history(view, node, 0)
        view._view_version = view._vbox[0]
        return
    if view.__dict__.get("_no_grad_mode"):
        raise no_grad_view_rebased_error(None, 0)   # (its base gained a history since)
    if view._multi_output is not None:
        if deferring:
            view._requires_grad = True      # (as its base: an op that records then raises, in edge_of)
            return
        from .splitting import multi_output_rebased_error
        # (named by the node that made it: one a compiled call noted before giving the view the
        # call's node as its history, trace_writes._rebase_outside)
        raise multi_output_rebased_error(view, view.__dict__.get("_view_node") or view._grad_fn)
    # (a leaf base too: torch regenerates the view's node, AsStridedBackward0, after a write
    # to the leaf under no_grad)
    again = view_of(base, view._view_chain)
    nodeless = deferring and view.__dict__.get("_nodeless")
    set_history(view, again._grad_fn, again._output_nr)
    if nodeless:
        # (an op about to read it: torch gives the view its node only where that op records one,
        # edge_of; until then its in-place check takes it for a leaf, see _make_view)
        view.__dict__["_nodeless"] = True


def view_of(base, chain):
    """`base` seen through a chain of view ops (recorded ops); the last step is named
    AsStridedBackward0, as torch names a view it regenerates from its base, and shows the
    base's node as its next function (torch's is one as_strided of the base)."""
    again = base
    # (a base whose shape changed in place: the steps its inverse adds are named so too, as
    # one as_strided node, which is what a backward's shape error then names)
    relaid = "_relayouts" in base.__dict__
    INTERNAL_VIEWS[0] += 1
    try:
        for k, (view_op, view_attrs) in enumerate(chain):
            last = k == len(chain) - 1
            again = apply_op(view_op, [again], dict(view_attrs), "AsStridedBackward0" if last or relaid else None)
    finally:
        INTERNAL_VIEWS[0] -= 1
    if len(chain) > 1 and again._grad_fn is not None and again._data is not None:
        display_edges(again._grad_fn, (edge_of(base),))
    return again


def _scatter(base, chain, value, fill: bool = False):
    """`base` with the region that `chain` selects replaced by `value` (recorded ops). `fill`:
    the write gave every element one value (fill_, zero_), so positions an expand replicated
    may be written: they all hold it."""
    if not chain:
        return value
    INTERNAL_VIEWS[0] += 1
    try:
        return _scatter_through(base, chain, value, fill)
    finally:
        INTERNAL_VIEWS[0] -= 1


def _full_slices(shape) -> tuple:
    """The basic index of every element of a tensor of `shape`, slice by slice."""
    return tuple(("s", 0, n, 1) for n in shape)


def _scatter_through(base, chain, value, fill: bool):
    (op, attrs), rest = chain[0], chain[1:]
    attrs = dict(attrs)
    inner = apply_op(op, [base], attrs) if rest else None
    if op == "expand" and fill and rest:
        return _fill_through_expand(base, inner, rest, value)
    if op == "expand" and rest:
        return _write_through_expand(base, tuple(inner.shape), rest, value)
    new_inner = _scatter(inner, rest, value, fill) if rest else value
    if op == "expand":
        return _unexpand(base, new_inner, fill)
    if op == "getitem":
        return apply_op("index_put", [base, new_inner], {"index": attrs["index"]}, "CopySlices")
    # A view of the whole base (reshape, permute): the new base is the value written, put over
    # the old one through full slices, so that it keeps torch's CopySlices edge to the base's
    # history, which a gradient reaches as zeros computed from it (a create_graph gradient
    # keeps a history: `v.t().zero_()` on v = 3 * x gives x the zeros of MulBackward0, as
    # `v[:].zero_()` does; an empty index is a copy_'s, whose zeros have none)
    if op == "reshape":
        whole = apply_op("reshape", [new_inner], {"shape": tuple(base.shape)})
        return apply_op("index_put", [base, whole], {"index": _full_slices(base.shape)}, "CopySlices")
    if op == "permute":
        inverse = [0] * len(attrs["dims"])
        for i, d in enumerate(attrs["dims"]):
            inverse[d] = i
        whole = apply_op("permute", [new_inner], {"dims": tuple(inverse)})
        return apply_op("index_put", [base, whole], {"index": _full_slices(base.shape)}, "CopySlices")
    if "write_back" in OPS[op].extra:       # a strided view op's own write-back (diagonal, unfold)
        return apply_op(OPS[op].extra["write_back"], [base, new_inner], attrs, "CopySlices")
    raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a single "
                       "memory location. Please clone() the tensor before performing the operation.")
