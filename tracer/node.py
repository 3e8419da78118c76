"""grad_fn nodes: one recorded instruction of the eager autograd graph.

A `Node` remembers the op, its attributes, where each input's gradient goes
(`edges`), and only the tensors its VJP reads (`saved`). Which ones those are
is not declared by hand: `saved_slots` runs the op's VJP rule once on
placeholder values and records which forward values it touched, so the
version-counter check fires for exactly the tensors the backward needs
(exp, tanh and sigmoid read their output; mul reads its inputs).
Node classes are named as torch names them (`AddBackward0`, `RsubBackward1`).
"""
from __future__ import annotations

import functools
import itertools
import re
import weakref

from fusegrad.ir import OPS, Builder, Emitter, Value
from fusegrad.ir.ops.registry import NoDerivativeError

_FREED_MSG = ("Trying to backward through the graph a second time (or directly access saved tensors after they "
              "have already been freed). Saved intermediate values of the graph are freed when you call "
              ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
              "graph a second time or if you need to access saved tensors after calling backward.")


@functools.lru_cache(maxsize=8192)
def saved_slots(op: str, attrs: tuple, in_types: tuple, needs: tuple, name: str | None = None):
    """(input indices, output indices) of the values a node saves, given which inputs need
    grad: the inputs op's VJP reads for those, and the outputs it reads for any input (torch's
    generated nodes save an input only for the gradients that need it, but an output they
    use always: x ** e saves its result though e needs no gradient). "Any input" is any that
    torch's node takes as a tensor: not an operand that its signature takes as a Scalar
    (`name`'s entry in _NEXT_INPUTS: x ** 1.7, PowBackward0, saves x only)."""
    inputs, outputs = _read_slots(op, attrs, in_types, needs)
    if False in needs:
        listed = _NEXT_INPUTS.get(name) if name is not None else None
        probe = (True,) * len(needs) if listed is None else tuple(need or k in listed for k, need in enumerate(needs))
        outputs = _read_slots(op, attrs, in_types, probe)[1]
    also = OPS[op].extra.get("always_saves")
    if also and True in needs:
        # (torch's node saves these whatever its backward formula reads for these attributes:
        # norm saves self and result, also for p=0 and p=1, which read one or neither)
        inputs = tuple(sorted(set(inputs) | {i for kind, i in also if kind == "in"}))
        outputs = tuple(sorted(set(outputs) | {k for kind, k in also if kind == "out"}))
    return inputs, outputs


def guards_saved_inputs(name: str, in_types: tuple) -> bool:
    """Whether torch's node `name` saves an input only for the gradients that need it: its
    generated code guards a saved input by `should_compute_output` only where the op has two or
    more inputs with a derivative formula (gen_variable_type's guard_for). With one (x.pow(2),
    x.sigmoid(), x.abs()) it saves what its formula reads whether or not that input's edge leads
    anywhere (a view made under no_grad: tracer/dispatch._saving_needs). The inputs torch takes
    as tensors are _NEXT_INPUTS's where listed, else the floating-point ones (not indices)."""
    listed = _NEXT_INPUTS.get(name)
    if listed is not None:
        return len(listed) > 1
    return sum(1 for t in in_types if t.dtype.is_floating_point) > 1


def checking_order(op: str, attrs: tuple, in_types: tuple, needs: tuple, name: str | None = None) -> tuple:
    """The saved slots (("in", i) / ("out", k), as saved_slots gives them) in the order the
    op's VJP first reads them: the order the eager engine checks their versions in, which the
    op table makes torch's (its node unpacks saved tensors by name: `other` before `self`)."""
    inputs, outputs = saved_slots(op, attrs, in_types, needs, name)
    saved = {("in", i) for i in inputs} | {("out", k) for k in outputs}
    # (an op whose VJP cannot read them in torch's order says it: OpDef.extra["unpack_order"])
    order = OPS[op].extra.get("unpack_order") or _first_reads(op, attrs, in_types, needs)
    first = [slot for slot in order if slot in saved]
    return tuple(first) + tuple(sorted(saved - set(first)))


@functools.lru_cache(maxsize=8192)
def _first_reads(op: str, attrs: tuple, in_types: tuple, needs: tuple) -> tuple:
    """The input and output slots (("in", i) / ("out", k)) op's VJP reads, given which inputs
    need grad, in the order of their first reads."""
    opdef = OPS[op]
    b = Builder()
    xs = [Value(t) for t in in_types]
    ys = [Value(t) for t in opdef.infer(list(in_types), dict(attrs))]
    gs = [None if k in opdef.nondiff_outputs else Value(y.type) for k, y in enumerate(ys)]
    try:
        opdef.vjp(Emitter(b), xs, ys, gs, dict(attrs), list(needs))
    except NoDerivativeError:
        # torch's NotImplemented node saves nothing, and its backward raises; a node whose
        # formula raises (pow with a bool tensor exponent) saved what it unpacks first
        return opdef.extra.get("unpack_order", ())
    slots = {v.id: ("in", i) for i, v in enumerate(xs)}
    slots.update({v.id: ("out", k) for k, v in enumerate(ys)})
    order = []
    for ins in b.program.instrs:
        for v in ins.inputs:
            slot = slots.get(v.id)
            if slot is not None and slot not in order:
                order.append(slot)
    return tuple(order)


@functools.lru_cache(maxsize=8192)
def _read_slots(op: str, attrs: tuple, in_types: tuple, needs: tuple):
    """(input indices, output indices) whose values op's VJP reads, given which inputs need grad."""
    reads = _first_reads(op, attrs, in_types, needs)
    return (tuple(sorted(i for kind, i in reads if kind == "in")),
            tuple(sorted(k for kind, k in reads if kind == "out")))


# Nodes whose torch signature takes a Scalar (not shown in next_functions) or a
# non-differentiable tensor (where's condition): the inputs torch does list.
_NEXT_INPUTS = {
    "SubBackward1": (0,),       # sub(x, number, alpha): the Scalar overload
    "RsubBackward0": (1, 0),    # rsub(x, y): IR sub(y, x), listed as torch's (self, other)
    "RsubBackward1": (1,),      # rsub(x, scalar): IR sub(scalar, x)
    "PowBackward0": (0,),       # pow(x, scalar)
    "PowBackward2": (1,),       # pow(scalar, x)
    "ClampBackward1": (0,),     # clamp(x, min, max) with number bounds
    "ClampMinBackward0": (0,),  # clamp_min(x, number): IR clamp(x, min, +inf)
    "ClampMaxBackward0": (0,),  # clamp_max(x, number)
    "ClampMinBackward1": (0, 1),    # clamp_min(x, tensor): IR clamp_min, which clamp(x, min=tensor)
    "ClampMaxBackward1": (0, 1),    # also records (torch_edges: ClampBackward0's three)
    "WhereBackward0": (1, 2),   # where(condition, x, y)
    "MaskedFillBackward0": (0,),    # masked_fill(x, mask, number)
    "MaskedFillBackward1": (0, 2),  # masked_fill(x, mask, 0-d tensor)
    "LeakyReluBackward0": (0,),     # leaky_relu(x, negative_slope): the slope is a Scalar
    "LeakyReluBackward1": (0,),
    "NllLossBackward0": (0,),   # nll_loss(log_probs, target, classes[, weight]): only log_probs is differentiable
    "NllLoss2DBackward0": (0,),     # nll_loss_nd, likewise
    "RemainderBackward0": (0,),     # remainder(x, scalar)
    "ZeroBackward0": (0,),      # zero_() / fill_(number): the fill value is a Scalar
    "FillBackward2": (0,),
    "FillBackward0": (0,),     # fill(x, number)
    "IndexBackward0": (0,),     # index_take(x, *indices): the index arrays are not listed
    "PackPaddedSequenceBackward0": (0,),    # pack_padded_sequence's index_take, likewise
    "ChannelShuffleBackward0": (0,),    # channel_shuffle(x, groups): IR gather(x, index)
    "MultilabelMarginLossBackward0": (0,),  # multilabel_margin_loss(x, target): the target is int64
    "LuUnpackBackward0": (0,),  # lu_unpack(LU, pivots): the pivots are integers
    "LinalgLuSolveBackward0": (0, 2),   # linalg.lu_solve(LU, pivots, B)
    "GatherBackward0": (0,),    # gather(x, index)
    "IndexSelectBackward0": (0,),   # index_select(x, dim, index): IR gather
    "IndexPutBackward0": (0, 1),    # index_put_at(x, v, *indices)
    "LerpBackward0": (0, 1),    # lerp(x, end, number weight)
    "AddcmulBackward0": (0, 1, 2),  # addcmul(x, t1, t2, value): the value is a Scalar
    "AddcdivBackward0": (0, 1, 2),
    "FmodBackward0": (0,),      # fmod(x, scalar)
    "EluBackward0": (0,),       # elu(x, alpha)
    "CopysignBackward1": (0,),  # copysign(x, scalar)
    "XlogyBackward2": (0,),     # xlogy(x, scalar)
    "XlogyBackward1": (1,),     # xlogy(scalar, x)
    # the scatter family (tracer/scattering.py): the index is not listed, nor a number value
    **{name: (0, 2) for name in ("ScatterBackward0", "ScatterAddBackward0", "ScatterReduceBackward0",
                                 "IndexAddBackward0", "IndexCopyBackward0", "IndexFillBackward1",
                                 "MaskedScatterBackward0")},
    **{name: (0,) for name in ("ScatterBackward1", "IndexFillBackward0", "MaskedSelectBackward0", "TakeBackward0")},
}


# Nodes torch defines in C++ (not generated from derivatives.yaml): name() qualifies them.
_CPP_NAMES = {name: "torch::autograd::" + name
              for name in ("AccumulateGrad", "CopySlices", "CopyBackwards", "NotImplemented", "Error")}


def qualified_name(node_class_name: str) -> str:
    """What `name()` of a node of this class returns (see Node.name)."""
    return _CPP_NAMES.get(node_class_name, node_class_name)


class SavedTensor:
    """A tensor value saved for backward, with the version it had then."""

    __slots__ = ("array", "version", "box", "tensor")

    def __init__(self, array, box, tensor=None):
        self.array = array
        self.box = box            # the shared version counter (a one-item list)
        self.version = box[0]
        self.tensor = tensor      # the input tensor itself (None for outputs)


def short_name(node_name: str) -> str:
    """A node's name as torch's error texts give it: without "Backward0", or without "Backward"
    before another number or at the end (ExpBackward0 is "Exp", SqueezeBackward1 "Squeeze1", a
    custom Function's MyExpBackward "MyExp"; torch's CopyBackwards keeps its name)."""
    return re.sub(r"Backward(0$|(?=[0-9])|$)", "", node_name, count=1)


_SEQUENCE = itertools.count()


def next_sequence() -> int:
    """The next number of the sequence that orders nodes by creation (Node._seq)."""
    return next(_SEQUENCE)


class Node:
    """Base of all grad_fn classes."""

    __slots__ = ("op", "attrs", "in_types", "out_types", "edges", "consts", "saved", "retained",
                 "_freed", "_had_saved", "_seq", "__weakref__")

    def __init__(self, op, attrs, in_types, out_types, edges, consts, saved):
        # the order nodes were made in: among nodes ready to run, torch's engine runs the
        # one made last first (see engine._engine_order)
        self._seq = next(_SEQUENCE)
        self.op = op
        self.attrs = attrs
        self.in_types = in_types
        self.out_types = out_types
        self.edges = edges          # per input: (node, output_nr) or None
        self.consts = consts        # per input: numpy value of an input that is a Python scalar, else None
        self.saved = saved          # {("in", i) | ("out", k): SavedTensor}
        self.retained = None        # {output_nr: weakref to a tensor that called retain_grad()}
        self._freed = False
        self._had_saved = bool(saved)

    # A node that runs its own backward on arrays: run_backward(needs, given, seeds) -> per
    # input, a gradient array or None (a custom autograd.Function's node defines it).
    run_backward = None

    def name(self) -> str:
        """torch's name of this node: its class name ("MulBackward0"), or for the nodes torch
        implements in C++ the qualified name ("torch::autograd::CopySlices")."""
        return qualified_name(type(self).__name__)

    def register_prehook(self, hook):
        """torch's Node.register_prehook: hook(grad_outputs) -> tuple or None, run before this
        node's backward (see tracer/hooks.py); returns a handle whose remove() unregisters it."""
        from . import hooks
        return hooks.register_node_hook(self, hook, hooks.PRE_HOOKS)

    def register_hook(self, hook):
        """torch's Node.register_hook: hook(grad_inputs, grad_outputs) -> tuple or None, run on
        the gradients this node computed for its inputs (see tracer/hooks.py)."""
        from . import hooks
        return hooks.register_node_hook(self, hook, hooks.POST_HOOKS)

    @property
    def next_functions(self) -> tuple:
        """((node, output_nr) or (None, 0)) for each differentiable input of torch's signature."""
        displayed = DISPLAYED_EDGES.get(self) if DISPLAYED_EDGES else None
        if displayed is not None:
            return _through_hidden(displayed) if HIDDEN_NODES else displayed
        edges = self._torch_edges()
        return _through_hidden(edges) if HIDDEN_NODES else edges

    def _torch_edges(self) -> tuple:
        """next_functions before looking through the hidden nodes (HIDDEN_NODES)."""
        shown = _NEXT_INPUTS.get(type(self).__name__)
        if shown is None and type(self).__name__ == "NotImplemented":
            # torch's NotImplemented node lists the operands that require grad only (x // 2,
            # 2 % x, x // c, ctc_loss's backward under create_graph: not its targets or lengths)
            shown = [i for i, e in enumerate(self.edges) if e is not None]
        if shown is None:
            # the op table's torch_edges: torch's inputs by position, None for one the op lacks
            opdef = OPS.get(self.op)
            shown = opdef.extra.get("torch_edges") if opdef is not None else None
            if shown is None:
                shown = range(len(self.edges))
        return tuple(self.edges[i] if i is not None and self.edges[i] is not None else (None, 0) for i in shown)

    def _sequence_nr(self) -> int:
        """torch's Node._sequence_nr(): the number that orders nodes by creation (later made,
        larger). fusegrad's sequence also numbers a few other events, so the values grow as
        torch's but are not torch's."""
        return self._seq

    def free_saved(self) -> None:
        """Drop the saved tensors (after a backward without retain_graph); a later use raises torch's error."""
        self.saved = {}
        self._freed = True

    def check_not_freed(self) -> None:
        """Raise torch's "backward through the graph a second time" error if the saved tensors
        this node had were freed."""
        if self._freed and self._had_saved:
            raise RuntimeError(_FREED_MSG)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    def __getattr__(self, name):
        """torch's `_saved_<name>` attributes: the values this node kept for its backward
        (tracer/saved_attributes.py); any other missing name is an AttributeError."""
        if name.startswith("_saved_"):
            from .saved_attributes import saved_attribute
            return saved_attribute(self, name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __dir__(self):
        from .saved_attributes import saved_attribute_names
        return sorted(set(super().__dir__()) | set(saved_attribute_names(self)))

    @property
    def metadata(self) -> dict:
        """torch's Node.metadata: a dict for the caller's own use, one per node."""
        from .saved_attributes import node_metadata
        return node_metadata(self)


class AccumulateGrad(Node):
    """The node every leaf that requires grad feeds; `variable` is the leaf."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        super().__init__(None, (), (), (), (), (), {})
        self.variable = variable

    @property
    def next_functions(self) -> tuple:
        """Empty: a leaf's node has no inputs to go back to."""
        return ()

    def _sequence_nr(self) -> int:
        """torch's AccumulateGrad has the largest sequence number (UINT64_MAX): run last."""
        return 2 ** 64 - 1


# Nodes whose torch counterpart does in one node what fusegrad records as several -> the
# next_functions torch shows for it (the graph the engine runs is unchanged):
# - the CopySlices of an in-place op through a view: torch's wraps the op, and shows the base's
#   history then the op's other inputs; here the op is a node of its own behind it (and a chain
#   of views writes back through a CopySlices per step);
# - add/sub with alpha: torch's AddBackward0 scales inside; here a MulBackward0 scales b first.
# Set once a tensor with history changed shape in place under no_grad (`v.unsqueeze_(0)`):
# its node's recorded output shape then differs from what its consumers recorded, and the
# engine checks each gradient's shape from then on, as torch's validate_outputs (engine.py).
# Anomaly mode sets it too: the engine's check of each gradient then looks for NaN as well.
SHAPES_CHANGED = [False]
# torch's anomaly mode (fg.autograd.detect_anomaly / set_detect_anomaly): whether it is on, and
# whether a backward then raises where a node returns NaN (check_nan)
ANOMALY = {"enabled": False, "check_nan": True}
DISPLAYED_EDGES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


# One-input nodes recorded for work torch does inside another node, which next_functions
# looks through (the engine runs them as any other): the ToCopyBackward0 of an operand promoted
# to an op's result dtype (x32 * y64: torch promotes inside the op's kernel and casts the
# gradient back in its engine), and the broadcast of a 0-d value that `t[1:] = v` fills with.
HIDDEN_NODES: "weakref.WeakSet" = weakref.WeakSet()


def _through_hidden(edges: tuple) -> tuple:
    shown = []
    for e in edges:
        while e[0] is not None and e[0] in HIDDEN_NODES:
            e = e[0].edges[0] or (None, 0)
        shown.append(e)
    return tuple(shown)


def hide_node(t) -> None:
    """Leave the node that made tensor `t` out of next_functions (see HIDDEN_NODES)."""
    if t._grad_fn is not None:
        HIDDEN_NODES.add(t._grad_fn)


def display_edges(node, edges: tuple) -> None:
    """Show `edges` ((node, output_nr) or (None, 0) each) as `node`'s next_functions."""
    DISPLAYED_EDGES[node] = tuple(e if e is not None else (None, 0) for e in edges)


_CLASSES: dict[str, type] = {}


# Nodes that hold state a backward without retain_graph releases even when they save no
# tensor: torch's CopySlices drops the function it wraps, so a second backward through any
# CopySlices raises "backward through the graph a second time" (v = -x; v[0] = 2.0); torch's
# MaxBackward0 / MinBackward0 always save their indices, also for a 0-d input, where
# fusegrad's node is an identity that saves nothing; torch's AddcdivBackward0 saves tensor2
# and the value whatever needs a gradient (a second backward raises for the self-only one).
RELEASES_STATE = frozenset({"CopySlices", "MaxBackward0", "MinBackward0", "AddcdivBackward0"})


class StatefulNode(Node):
    """A node of RELEASES_STATE: a freed one raises on any later backward through it."""

    __slots__ = ()

    def __init__(self, *args):
        super().__init__(*args)
        self._had_saved = True


def node_class(name: str) -> type:
    """The Node subclass called `name` (created once, so type(...).__name__ is torch's)."""
    cls = _CLASSES.get(name)
    if cls is None:
        cls = type(name, (StatefulNode if name in RELEASES_STATE else Node,), {"__slots__": ()})
        _CLASSES[name] = cls
    return cls


def grad_accumulator(leaf) -> AccumulateGrad:
    """The one AccumulateGrad node of a leaf tensor (shared by every edge to it)."""
    ref = leaf._grad_acc
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(leaf)
        leaf._grad_acc = weakref.ref(node)
    return node
