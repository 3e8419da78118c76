"""The eager autograd engine.

`backward` and `grad` walk the recorded graph behind their outputs. Without
`create_graph`, node by node in reverse order: each node's VJP is evaluated as
it is emitted the first time its signature is seen, then run as its
signature's cached program (`ir.autodiff.VJPS`), on the arrays the node saved
(after their version checks). With `create_graph`, the graph
becomes one SSA program (each node one instruction), `ir.autodiff` emits its
backward program, and that runs op by op on Tensors so that the result has a
history of its own.
"""
from __future__ import annotations

import itertools
import warnings
from typing import NamedTuple

import numpy as np

from fusegrad.ir import (OPS, Builder, Program, TensorType, Value, backward as emit_backward, from_numpy_dtype,
                         run_program)
from fusegrad.ir.autodiff import VJPS, InstrVjp, emit_instr_vjp
from fusegrad.ir.buffers import POOL
from fusegrad.ir.interpreter import apply_ref, ufunc_into, ufunc_result
from fusegrad.ir.ops import broadcast_shapes, eager_form, infer_types
from fusegrad.ir.program import Instr, freeze_attrs
from fusegrad.ir.passes import simplify

from . import hooks, trace_state
from .dispatch import _OVERLAP_MSG, broadcast_shape_error, edge_of
from .grad_mode import TRANSFORMS_RUNNING, enable_grad, no_grad
from .layout import elementwise_layout
from .ready_queue import ReadyQueue
from .hooks import ANY_LEAF_HOOKS, ANY_NODE_HOOKS, NODE_HOOKS
from .saved_hooks import PackedSaved
from .node import ANOMALY, SHAPES_CHANGED, AccumulateGrad, SavedTensor, StatefulNode, _FREED_MSG
from .parser_errors import type_name
from .tensor import Tensor
from .create_graph import SCALAR_OPERANDS, _sums_kept, _tensor_apply
from .saved_checks import (_MODIFIED_PREFIX, _UNPACK_ORDER, _bind, _check_idle, _check_in_unpack_order, _check_saved,
                           _check_unread, _checked_array, _saved_value, check_dead_leaf_paths, check_unreached,
                           transform_level_only)
from .user_frame import user_stacklevel


# Ops whose VJP's instructions are named by the forward node (see GraphProgram)
_NAMED_BY_FORMULA = frozenset({"permute", "reshape", "maximum", "minimum", "amax", "amin", "max_dim", "min_dim",
                               "masked_fill"})


def _took_scalars(node) -> bool:
    """Is `node` one of torch's Scalar overloads: did it take a Python number where torch's
    signature has a Scalar (OpDef.extra["scalar_attributes"]: lerp's weight, the alpha
    add/sub scale by)? Those numbers are Scalars in its formula (MulBackward1 under
    create_graph)."""
    attributes = OPS[node.op].extra.get("scalar_attributes") if node.op in OPS else None
    return bool(attributes) and any(node.consts[i] is not None for i in attributes if i < len(node.consts))


class GraphProgram:
    """The forward graph behind some roots, as IR: one value per node output and leaf."""

    def __init__(self, root_edges, nodes=None):
        self.nodes = nodes if nodes is not None else _topological_nodes([n for n, _ in root_edges])
        self.values: dict = {}            # (node, output_nr) -> Value
        self.instrs = []
        self.bindings: dict = {}          # value id -> SavedTensor or constant array
        self.owner: dict = {}             # value id -> node that would have saved it
        self.output_nr: dict = {}         # value id of a node's output -> its index among them
        for node in self.nodes:
            if isinstance(node, AccumulateGrad):
                v = self.values[(node, 0)] = Value(TensorType(tuple(node.variable.shape), node.variable.dtype))
                continue
            outs = [Value(t) for t in node.out_types]
            for k, v in enumerate(outs):
                self.values[(node, k)] = v
            ins = []
            for i, (edge, const, t) in enumerate(zip(node.edges, node.consts, node.in_types)):
                v = self.values[edge] if edge is not None else Value(t)
                if edge is not None and v.type.shape != t.shape:
                    v = self._as_recorded(v, t, node, i)
                if const is not None:
                    # A freed node's scalar operand is gone too (torch saved it as a tensor).
                    if not node._freed:
                        self.bindings[v.id] = const
                elif ("in", i) in node.saved:
                    saved, held = node.saved[("in", i)], self.bindings.get(v.id)
                    if isinstance(held, SavedTensor) and type(saved) is not PackedSaved and \
                            (held.box is not saved.box or held.version != saved.version):
                        # The node saved a copy of its own (an in-place op's self from before its
                        # write), or the tensor at another version (a leaf written under no_grad
                        # between two nodes that saved it): its VJP reads that, through an
                        # identity of its own, not what another node saved of the value
                        # (log_softmax's result, which the write made stale for that node only)
                        w = Value(v.type)
                        self.instrs.append(Instr("cast", (v,), (w,), freeze_attrs({"dtype": v.type.dtype})))
                        v = w
                    self.bindings.setdefault(v.id, saved)
                ins.append(v)
                self.owner.setdefault(v.id, node)
            for k, v in enumerate(outs):
                if ("out", k) in node.saved:
                    self.bindings[v.id] = node.saved[("out", k)]
                self.owner.setdefault(v.id, node)
                self.output_nr[v.id] = k
            # (a permute's VJP, a permute, is named under create_graph by the forward node's
            # formula: t() and transpose() give TBackward0 and TransposeBackward0; so are a
            # reshape's (view's: ViewBackward0) and the selection that ends a max's or maximum's
            # (create_graph._selection_name); the loc carries the name to the instructions its
            # VJP emits)
            name = type(node).__name__
            scalar_overload = _took_scalars(node)
            loc = name if node.op in _NAMED_BY_FORMULA else SCALAR_OPERANDS if scalar_overload else None
            self.instrs.append(Instr(node.op, ins, outs, node.attrs, loc))

    def _as_recorded(self, v: Value, t: TensorType, node, i: int) -> Value:
        """Input `i` of `node`, recorded with type `t`, where the value its edge leads to has
        another shape: the tensor changed shape in place under no_grad since its producer
        ran (`v.unsqueeze_(0)`). torch's engine (validate_outputs) sums a gradient of a
        shape the producer's output expands to back to that shape, and raises otherwise:
        here an expand into the recorded shape, whose gradient is that sum."""
        shape, target = tuple(v.type.shape), tuple(t.shape)
        if not _expands_to(shape, target):
            raise _invalid_gradient(node, i, target, shape)
        w = Value(TensorType(target, v.type.dtype))
        self.instrs.append(Instr("expand", (v,), (w,), freeze_attrs({"shape": target})))
        return w

    def value(self, edge) -> Value:
        """The IR value standing for `edge`, a (node, output_nr) pair of the graph."""
        return self.values[edge]


def _topological_nodes(roots) -> list:
    """Nodes reachable from `roots`, inputs before their consumers (iterative DFS)."""
    order, seen = [], set()         # (nodes hash by identity)
    mark, finish = seen.add, order.append
    for root in roots:
        if root in seen:
            continue
        stack = [(root, iter(root.edges))]
        push, pop = stack.append, stack.pop
        mark(root)
        while stack:
            node, it = stack[-1]
            for edge in it:
                if edge is not None:
                    child = edge[0]
                    if child not in seen:
                        mark(child)
                        push((child, iter(child.edges)))
                        break
            else:
                pop()
                finish(node)
    return order


def _engine_order(root_edges, nodes, live: set) -> list:
    """The live nodes in the order torch's engine runs them: a node is ready once every node
    that sends it a gradient has run, and of the ready nodes the one with the largest sequence
    number runs first, a leaf's AccumulateGrad (or a NotImplemented node) having the largest
    (ties broken as torch's std::priority_queue breaks them: tracer/ready_queue.py). Ready
    nodes are queued in the order of the roots, then of each node's edges, as torch's.
    `_run_nodes` runs nodes in the reverse of a depth-first order instead, which gives the
    same gradients for less work; this order decides which error a failing backward raises
    first, which leaves had their gradient accumulated before it (see _run), and the order
    of leaves' hooks where they have effects (see _ordered_leaves)."""
    pending: dict = {}
    for node in nodes:
        if node in live:
            for edge in node.edges:
                if edge is not None and edge[0] in live:
                    pending[edge[0]] = pending.get(edge[0], 0) + 1
    ready, order = ReadyQueue(), []
    for node in dict.fromkeys(edge[0] for edge in root_edges):
        if node in live and not pending.get(node):
            ready.push(_priority(node), node)
    while ready:
        node = ready.pop()
        order.append(node)
        for edge in node.edges:
            if edge is not None and edge[0] in live:
                child = edge[0]
                pending[child] -= 1
                if not pending[child]:
                    ready.push(_priority(child), child)
    return order


def _priority(node) -> float:
    """A node's place in torch's ready queue: its sequence number; the largest of all for a
    leaf's AccumulateGrad and a NotImplemented node (an op without a derivative)."""
    numbered = node.op is not None and type(node).__name__ != "NotImplemented"
    return node._seq if numbered else float("inf")


def leaves_behind(t: Tensor) -> list:
    """The leaf tensors that require grad and that `t`'s recorded history reads."""
    if t._grad_fn is None:
        return [t] if t._requires_grad else []
    return [node.variable for node in _topological_nodes([t._grad_fn]) if isinstance(node, AccumulateGrad)]


class GradientEdge(NamedTuple):
    """torch.autograd.graph.GradientEdge: where a gradient flows, output `output_nr` of `node` (a
    grad_fn, or a leaf's AccumulateGrad and 0); fg.autograd.graph.get_gradient_edge makes one.
    autograd.grad and backward take one among their `inputs`: the gradient flowing into that edge
    (backward accumulates it into .grad only for a leaf's node). `ownership_token` as torch's."""

    node: object
    output_nr: int
    ownership_token: object = None


def _edge_target(t):
    """The edge an input of grad / backward(inputs=...) names: a GradientEdge's own, a tensor's edge_of."""
    return (t.node, t.output_nr) if type(t) is GradientEdge else edge_of(t)


def _roots_and_seeds(outputs, grad_outputs, create_graph):
    roots, seeds = [], []
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    grad_outputs = list(grad_outputs)      # torch: "'float' object is not iterable"
    if len(grad_outputs) < len(outputs):    # (extra gradients are ignored, as torch's zip does)
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grad_outputs)} gradients")
    # torch's order: every gradient is checked (_make_grads) before the engine finds an output
    # that does not require grad (a wrong-shaped gradient of such an output names the shape)
    for k, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if not isinstance(out, Tensor):
            raise AssertionError("Expected output to be a torch.Tensor")     # (torch's _make_grads)
        if g is None:
            if out._requires_grad:
                if out.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                g = Tensor._wrap(np.ones(out._value_shape(), dtype=out.dtype.np))
        elif not isinstance(g, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")   # (torch's Python: bare)
        elif g._value_shape() != out._value_shape():     # (tuples: what .shape holds)
            raise RuntimeError(f"Mismatch in shape: grad_output[{k}] has a shape of {g.shape!r} and output[{k}] "
                               f"has a shape of {out.shape!r}.".replace("fg.Size", "torch.Size"))
        roots.append(out)
        seeds.append(g)
    for k, out in enumerate(roots):
        # (a view made under no_grad of a tensor that requires grad requires grad too, but has
        # no node and no accumulator: torch's engine finds no edge there either)
        if not out._requires_grad or (out._sym is None and out._no_grad_view and edge_of(out) is None):
            raise RuntimeError(f"element {k} of tensors does not require grad and does not have a grad_fn")
    return roots, seeds


# Whether the running backward is a backward() without `inputs` (torch's engine's
# checkpoint_valid: the reentrant checkpoint refuses autograd.grad and backward(inputs=...)).
CHECKPOINT_VALID = [True]

# The backward call running now, torch's "graph task" (fg.autograd.graph's multi-grad hooks key
# their state by it): GRAPH_TASK[0] is None outside a backward, else [number, roots, nodes,
# targets, every_node, captures, cache], set once per call by _run (a nested backward, one
# a hook starts, has its own, and gives the outer one back as it ends): nothing per node.
# current_graph_task_id() and will_execute_node() read it.
GRAPH_TASK: list = [None]
_GRAPH_TASK_IDS = itertools.count()


def _run(roots, seeds, targets, retain_graph, create_graph, nodes=None, retained=None, partial=None,
         every_node: bool = False, captures: bool = False, at_leaf=None):
    """_run_graph, with CHECKPOINT_VALID telling the nodes it runs whether every node runs, and
    GRAPH_TASK this backward call."""
    previous, previous_task = CHECKPOINT_VALID[0], GRAPH_TASK[0]
    CHECKPOINT_VALID[0] = every_node
    GRAPH_TASK[0] = [next(_GRAPH_TASK_IDS), roots, nodes, targets, every_node, captures, None]
    try:
        return _run_graph(roots, seeds, targets, retain_graph, create_graph, nodes, retained, partial, every_node,
                          captures, at_leaf)
    finally:
        CHECKPOINT_VALID[0] = previous
        GRAPH_TASK[0] = previous_task


def current_graph_task_id() -> int:
    """torch._C._current_graph_task_id(): the number of the backward call running now (one a
    process never gives twice), or -1 outside a backward."""
    task = GRAPH_TASK[0]
    return -1 if task is None else task[0]


def will_execute_node(node) -> bool:
    """torch._C._will_engine_execute_node(node): whether the backward running now runs `node`
    (a grad_fn or a leaf's AccumulateGrad). A backward() without `inputs` runs every node its
    roots reach; one with `inputs`, or autograd.grad, the nodes from which an input is reached
    (not the node of a root that leads to none, whose tensor hooks the engine still calls:
    torch answers False there too). As torch, asking about a leaf's node that an autograd.grad
    captures raises."""
    task = GRAPH_TASK[0]
    if task is None:
        raise RuntimeError("_get_should_execute_nodes should only be called during the backward pass")
    if task[6] is None:
        # (worked out on the first question of this backward: (nodes in the graph, live nodes))
        _, roots, nodes, targets, every_node, _, _ = task
        if nodes is None:
            nodes = _topological_nodes([e[0] for e in (edge_of(r) for r in roots) if e is not None])
        in_graph = set(nodes)
        live = in_graph if every_node else _live_nodes(nodes, [e for e in targets if e is not None])
        task[6] = (in_graph, live)
    in_graph, live = task[6]
    if node not in in_graph or node not in live:
        return False
    if task[5] and type(node) is AccumulateGrad and any(e is not None and e[0] is node for e in task[3]):
        raise RuntimeError("A leaf node was passed to _will_engine_execute_node but we are currently running "
                           "autograd.grad(). This is currently not supported.")
    return True


def _run_graph(roots, seeds, targets, retain_graph, create_graph, nodes=None, retained=None, partial=None,
               every_node: bool = False, captures: bool = False, at_leaf=None):
    """Gradients of roots (weighted by seeds) for each target edge (arrays, or
    Tensors with a history when create_graph); frees the graph's saved values
    unless retain_graph. Without create_graph, `retained` (a list) receives
    (tensor, gradient) for the retain_grad() tensors of the nodes that ran, and when
    the backward raises, `partial` (a list) receives per target the gradient torch's
    engine would have completed before the error, or None (see _raise_in_engine_order).
    `every_node` (backward() without inputs): every node the roots reach runs, as torch's
    engine runs them, also one whose gradients lead nowhere (relu of a view made under
    no_grad): it checks its saved outputs (see _check_idle), and is freed. `captures`
    (autograd.grad): the targets' gradients are captured as torch's engine does (see
    _run_nodes). `at_leaf` (backward() where a leaf's hooks have effects the order shows):
    the nodes run in torch's engine order, and `at_leaf(node, gradient)` does each leaf's
    AccumulateGrad as its turn comes (see _ordered_leaves)."""
    root_edges = [edge_of(r) for r in roots]
    if nodes is None:
        nodes = _topological_nodes([e[0] for e in root_edges])
    passed = []
    live = _live_nodes(nodes, targets, passed)
    if len(roots) == 1 and root_edges[0][0] not in live and not every_node and \
            (ANY_NODE_HOOKS[0] or ANY_LEAF_HOOKS[0] or root_edges[0][0].retained):
        _run_idle_root_hooks(root_edges[0], roots[0], seeds[0], create_graph)
    idle = ()
    if every_node and not create_graph and len(live) < len(nodes):
        # (not a node of a returned transform's level only: torch's caller level has none)
        idle = {node for node in nodes if node not in live and not _transform_leaf(node)
                and not transform_level_only(node)}
        live.update(idle)
        passed += idle
    if not create_graph:
        order = _engine_order(root_edges, nodes, live) if at_leaf is not None else None
        try:
            grads = _run_nodes(root_edges, roots, seeds, targets, nodes, retained, live, order, idle=idle,
                               every_node=every_node, captures=captures, at_leaf=at_leaf)
        except Exception as error:
            if at_leaf is not None or not _runs_again_safely(live):     # (already in torch's order)
                raise
            _raise_in_engine_order(error, root_edges, roots, seeds, targets, nodes, live, passed, retain_graph,
                                   partial, idle, every_node)
    else:
        if ANOMALY["enabled"] and ANOMALY["check_nan"] and not any(node in NODE_HOOKS for node in live):
            # (anomaly mode: the differentiable backward is one program; the arrays' node by
            # node run first raises torch's error for the first node that returns NaN; not where
            # a node's hooks, which would run twice, may change its gradients)
            _run_nodes(root_edges, roots, seeds, targets, nodes, None, live)
        hooked = _tensor_hooks(nodes, live) if ANY_NODE_HOOKS[0] else None
        graph = GraphProgram(root_edges, nodes)
        wrt = [graph.values.get(e) if e is not None else None for e in targets]
        present = [v for v in wrt if v is not None]
        root_values = [graph.value(e) for e in root_edges]
        # A gradient of another dtype is cast to its output's, as the first op of the
        # gradient's history (torch's validate_outputs: a differentiable .to(dtype))
        seeds = [s if s.dtype == r.dtype else _cast_seed(s, r.dtype) for s, r in zip(seeds, roots)]
        b = Builder(Program())
        b.differentiable = True
        seed_values = [b.input(TensorType(tuple(r.shape), r.dtype)) for r in roots]
        grad_values = emit_backward(b, graph.instrs, root_values, seed_values, present)
        b.program.outputs = [g for g in grad_values if g is not None]
        program = simplify(b.program)
        try:
            # Every value the nodes on the path saved is checked, also where a zero derivative
            # (sign, a rounding division) lets simplify drop the read: torch's nodes unpack theirs.
            _check_saved(graph, b.program)
            _check_freed_nodes(live)
            for node in passed:         # (also what no read of the program reaches: torch unpacks it)
                check_unreached(node, live)
            env = _bind(graph, program, create_graph)
        except RuntimeError as error:
            # A saved value changed in place: _bind checks them in the program's order. torch's
            # engine raises for the first node, in its order, whose saved values are stale,
            # naming the tensor as that node's unpack finds it (two nodes may save one value).
            # (No node has run here yet: hooks on non-leaf tensors run there for the first time,
            # as in torch's engine, up to the failing node.)
            if not str(error).startswith(_MODIFIED_PREFIX) or any(node.run_backward is not None for node in live):
                raise
            _raise_in_engine_order(error, root_edges, roots, seeds, targets, nodes, live, passed, retain_graph,
                                   partial)
        if hooked:
            # (the program above checked the saved values, raising as torch's engine does; the
            # hooks' values are seen only as the backward is evaluated)
            grads = _hooked_create_graph(graph, hooked, root_values, seeds, roots, wrt, present)
        else:
            with enable_grad():
                free = frozenset(env)       # (the saved forward values: see _create_graph_name)
                kept = _sums_kept(program)
                values = iter(run_program(program, seeds, lambda ins, args: _tensor_apply(ins, args, free, kept),
                                          env))
            by_id = {v.id: next(values) if g is not None else None for v, g in zip(present, grad_values)}
            grads = [by_id.get(v.id) if v is not None else None for v in wrt]
    if ANY_LEAF_HOOKS[0] and at_leaf is None:
        _run_leaf_hooks(targets, grads, create_graph)
    if not retain_graph:
        # Only the nodes the backward ran through, as torch (an autograd.grad for one input
        # leaves the rest of the graph usable): not a target's own node when nothing live
        # lies below it (autograd.grad(z, [y]) leaves y's grad_fn as it was)
        for node in passed:
            node.free_saved()
    return grads


def _run_idle_root_hooks(edge, root, seed, create_graph: bool) -> None:
    """torch's engine evaluates the node of a backward's one root (with several, a GraphRoot
    node feeds only the needed ones) also when no requested input is reachable from it
    (autograd.grad(y, [unrelated]), y.backward(inputs=[unrelated])): there the tensor hooks
    and retain_grad() of the root run on its gradient (evaluate_function calls the tensor
    pre-hooks of a node it will not execute), and the node does nothing else."""
    node, k = edge
    g = seed if create_graph else seed._concrete().astype(root.dtype.np, copy=False)
    if type(node) is AccumulateGrad:
        own = hooks.leaf_hooks(node.variable)
    else:
        own = hooks.node_hooks(node, k) if ANY_NODE_HOOKS[0] and node in NODE_HOOKS else None
    if own:
        g = hooks.run_on_tensor(own, g, True) if create_graph else hooks.run_on_array(own, g)
    if type(node) is not AccumulateGrad and node.retained:
        accumulate_into_grads([(t, g) for t, e in _retained_at(node) if e == edge], create_graph)


def _check_freed_nodes(live: set) -> None:
    """torch's freed-graph error for a node of a create_graph backward whose saved values a
    first backward freed. (_check_saved finds a freed value the gradient program reads only
    where no other node saved it too: `h = x.exp()` freed, and then `(h * w)` read by a
    gradient that requires grad, where MulBackward0 saved h as well.)"""
    for node in live:
        if node._freed and (node._had_saved or isinstance(node, StatefulNode)) and \
                any(edge is not None and edge[0] in live for edge in node.edges):
            raise RuntimeError(_FREED_MSG)


def _tensor_hooks(nodes, live: set) -> dict:
    """{(node, output_nr): hooks} of the non-leaf tensors whose hooks a backward through the
    `live` nodes runs; a node's own pre- or post-hooks are refused in a create_graph backward."""
    found = {}
    for node in nodes:
        per_output = NODE_HOOKS.get(node) if node in live else None
        if not per_output:
            continue
        for key, registered in per_output.items():
            if not registered:
                continue
            if not isinstance(key, int):
                raise NotImplementedError("fusegrad: a hook registered on a grad_fn node does not run in a "
                                          "create_graph backward yet (tensor hooks do)")
            found[(node, key)] = registered
    return found


def _run_leaf_hooks(targets, grads: list, create_graph: bool) -> None:
    """A leaf's hooks see its total gradient, before it is accumulated or returned (in place
    in `grads`, one per target edge)."""
    for k, edge in enumerate(targets):
        if edge is not None and grads[k] is not None and type(edge[0]) is AccumulateGrad:
            leaf_hooks = hooks.leaf_hooks(edge[0].variable)
            if leaf_hooks:
                grads[k] = (hooks.run_on_tensor(leaf_hooks, grads[k], True) if create_graph
                            else hooks.run_on_array(leaf_hooks, grads[k]))


def _runs_again_safely(live: set) -> bool:
    """Whether running the live nodes' backward a second time does nothing but compute: no
    hook on a non-leaf among them, and no custom autograd.Function (user code)."""
    for node in live:
        if node.run_backward is not None or (ANY_NODE_HOOKS[0] and node in NODE_HOOKS):
            return False
    return True


def _raise_in_engine_order(error, root_edges, roots, seeds, targets, nodes, live, passed, retain_graph, partial,
                           idle=(), every_node: bool = False):
    """The backward raised `error`. Run it again in the order torch's engine runs the nodes
    (_engine_order), and raise the error met first there, with torch's state at that point:
    a leaf's gradient that was complete before it is in `partial` (torch accumulates each as
    soon as it is complete), and without retain_graph the nodes that ran have freed what
    they saved. (Running again costs nothing on a backward that succeeds.)"""
    ran = []
    try:
        _run_nodes(root_edges, roots, seeds, targets, nodes, None, live, _engine_order(root_edges, nodes, live), ran,
                   idle, every_node)
    except Exception as first:
        done = dict(ran[:-1])           # (the last node is the one that raised)
        if partial is not None:
            # a retain_grad() output's hook ran as its node started, the failing one included
            started = dict(ran)
            partial[:] = [None if edge is None or edge[1] != 0 else
                          done.get(edge[0]) if edge[0].op is None else started.get(edge[0]) for edge in targets]
            if ANY_LEAF_HOOKS[0]:
                _run_leaf_hooks(targets, partial, False)
        if not retain_graph:
            below = set(passed)
            for node in done:
                if node in below:
                    node.free_saved()
        raise first from None
    raise error


def _cast_seed(seed: Tensor, dtype) -> Tensor:
    from .functional import to
    with enable_grad():
        return to(seed, dtype)


def _live_nodes(nodes, targets, passed: list | None = None) -> set:
    """The nodes (inputs first) from which a target edge is reachable: those a backward
    runs (a set of the nodes themselves: nodes hash by identity). `passed`, when given,
    receives the live nodes with a live node below them: those the backward runs through,
    whose saved values it frees (see _run)."""
    target_nodes = {e[0] for e in targets if e is not None}
    live = set()
    add = live.add
    for node in nodes:
        for edge in node.edges:
            if edge is not None and edge[0] in live:
                add(node)
                if passed is not None:
                    passed.append(node)
                break
        else:
            if node in target_nodes:
                add(node)
    return live


def _run_nodes(root_edges, roots, seeds, targets, nodes, retained, live: set, order=None, ran=None,
               idle=(), every_node: bool = False, captures: bool = False, at_leaf=None) -> list:
    """The backward without create_graph, node by node in reverse topological
    order: each node's VJP is its signature's cached program
    (`ir.autodiff.VJPS`, what a whole-graph backward would emit for it), run
    on the arrays it reads (evaluated as it is emitted the first time a
    signature is seen); gradients arriving at one edge are summed.
    Building, simplifying and interpreting a program for every call's graph
    cost several times more than the arithmetic on small tensors. `nodes`: the graph, inputs
    first; `live`: those that run (_live_nodes). With `order` (_engine_order), the nodes run in
    that order instead, and `ran` receives (node, its gradient for a leaf's AccumulateGrad,
    else None) for each node as it starts. `idle`: nodes that run though no gradient they
    compute is used (_run's every_node): see _check_idle. `every_node` (backward() without
    inputs): a compiled call's node also checks what it saved on the way to leaves the call
    made that died there, which torch's engine runs (see check_dead_leaf_paths). `captures`
    (autograd.grad's inputs): a target's gradient is taken before the tensor hooks of its
    node's output run where that node runs on (its VJP is needed further down), after them
    where it does not, as torch's engine captures them (evaluate_function). `at_leaf(node,
    gradient)` runs for each leaf's AccumulateGrad that gets a gradient, as its turn comes, and
    returns the gradient to keep for it (its hooks may replace it)."""
    keep = {e for e in targets if e is not None}
    captured = {} if captures and ANY_NODE_HOOKS[0] else None
    # (tensor, edge) of retain_grad() tensors on the nodes that run (a retained tensor that is
    # itself a target gets its .grad too, as in torch)
    hooked = _retained_tensors(nodes, live) if retained is not None else []
    keep.update(edge for _, edge in hooked)
    grads: dict = {}
    for index, (edge, root, seed) in enumerate(zip(root_edges, roots, seeds)):
        if edge[0] in live:
            g = seed._concrete()
            if g.dtype != root.dtype.np:
                g = g.astype(root.dtype.np)
            if SHAPES_CHANGED[0]:
                g = _validated(None, index, edge, g)
            _accumulate(grads, edge, g)
    # (the per-node work below is written out: it runs once per node of every eager backward)
    entries = VJPS.entries
    grads_get, grads_pop = grads.get, grads.pop
    for node in reversed(nodes) if order is None else order:
        if ran is not None:
            # (a leaf's gradient, and a retain_grad() output's as its node starts: torch's hook)
            ran.append((node, grads_get((node, 0)) if node.op is None or node.retained else None))
        if node.op is None or node not in live:         # AccumulateGrad: its gradient is a result
            if at_leaf is not None and node.op is None and node in live and (node, 0) in grads:
                grads[(node, 0)] = at_leaf(node, grads[(node, 0)])
            continue
        if len(node.out_types) == 1:
            edge = (node, 0)
            g = grads_pop(edge, None)
            if g is None:
                check_unreached(node, live)
                continue
            if ANY_NODE_HOOKS[0] and node in NODE_HOOKS:     # a non-leaf's register_hook (tracer/hooks.py)
                if captured is not None and edge in keep and \
                        any(e is not None and e[0] in live for e in node.edges):
                    captured[edge] = g
                g = hooks.run_on_array(hooks.node_hooks(node, 0), g)
            if edge in keep:
                grads[edge] = g
            gs = (g,)
            given = _GIVEN_ONE
        else:
            gs = tuple([grads_get((node, k)) if (node, k) in keep else grads_pop((node, k), None)
                        for k in range(len(node.out_types))])
            given = tuple([g is not None for g in gs])
            if True not in given:
                check_unreached(node, live)
                continue
            if ANY_NODE_HOOKS[0] and node in NODE_HOOKS:
                # (the node runs: the hooks of each output see its gradient, None where it got
                # none, as torch's tensor pre-hooks)
                gs = tuple([hooks.run_on_array(hooks.node_hooks(node, k), g) for k, g in enumerate(gs)])
                for k, g in enumerate(gs):
                    if g is not None and (node, k) in keep:
                        grads[(node, k)] = g
        own_hooks = ANY_NODE_HOOKS[0] and node in NODE_HOOKS
        if own_hooks and hooks.node_hooks(node, hooks.PRE_HOOKS):      # the node's own pre-hooks
            gs = hooks.run_prehooks(node, gs)
            given = tuple([g is not None for g in gs])
        edges = node.edges
        if len(edges) == 2:
            e0, e1 = edges
            needs = (e0 is not None and e0[0] in live, e1 is not None and e1[0] in live)
        elif len(edges) == 1:
            e0 = edges[0]
            needs = (e0 is not None and e0[0] in live,)
        else:
            needs = tuple([edge is not None and edge[0] in live for edge in edges])
        if True not in needs:
            if idle and node in idle:
                _check_idle(node, given)
            continue
        if node._freed and isinstance(node, StatefulNode):
            raise RuntimeError(_FREED_MSG)      # (a CopySlices: torch's raises though it reads nothing saved)
        if every_node and node.op == "custom_call":
            check_dead_leaf_paths(node, given, needs)
        key = (node.op, node.attrs, node.in_types, node.out_types, needs, given)
        try:
            vjp = entries.get(key)      # VJPS.get's hit, inlined (its other cases: VJPS.get)
        except TypeError:
            vjp = None
        try:
            if type(vjp) is InstrVjp:
                VJPS.hits += 1
            else:
                vjp = VJPS.get(key)
            if vjp is None:             # a signature's first backward: evaluate as the VJP is emitted
                results = _evaluate_vjp(node, needs, given, [g for g in gs if g is not None])
        except RuntimeError as exc:
            if getattr(exc, "no_derivative", False):
                _check_saved_first(node)
            raise
        if vjp is None:
            _check_unread(node, ())     # (what it read was checked as it read it)
            if own_hooks and hooks.node_hooks(node, hooks.POST_HOOKS):
                results = hooks.run_posthooks(node, list(results), gs)
            for index, (edge, g) in enumerate(zip(edges, results)):
                if g is not None:
                    _accumulate(grads, edge, _validated(node, index, edge, g) if SHAPES_CHANGED[0] else g)
            continue
        reads = vjp.reads
        if node.saved and node.op in _UNPACK_ORDER and not (node._freed and node._had_saved):
            # (where the VJP reads them in another order: what it saved, read or not, in
            # torch's order of unpacking, `x ** e`'s exponent, self, result)
            _check_in_unpack_order(node)
        if len(node.saved) > len(reads):
            _check_unread(node, reads)
        if reads:                   # _saved_operand for each slot, in the VJP's order of reading:
            if node._freed and node._had_saved:     # torch's order of checking (a node that saved
                # nothing, only numbers it keeps (lerp's weight), reads them again)
                raise RuntimeError(_FREED_MSG)
            consts = node.consts
            args = []
            for slot in reads:
                index = slot[1]
                if slot[0] == "in":
                    const = consts[index]
                    if const is not None:
                        args.append(const)
                        continue
                args.append(_checked_array(node.saved.get(slot), node, index))
            if len(gs) == 1:
                args.append(gs[0])
            else:
                args.extend([g for g in gs if g is not None])
        else:
            args = [g for g in gs if g is not None]
        run = vjp._run
        results = run(args) if run is not None else vjp.run(args)
        if own_hooks and hooks.node_hooks(node, hooks.POST_HOOKS):
            per_input = hooks.run_posthooks(node, [None if p is None else results[p] for p in vjp.grad_index], gs)
            for index, (edge, g) in enumerate(zip(edges, per_input)):
                if g is not None:
                    _accumulate(grads, edge, _validated(node, index, edge, g) if SHAPES_CHANGED[0] else g)
            continue
        if SHAPES_CHANGED[0]:
            for index, (edge, position) in enumerate(zip(edges, vjp.grad_index)):
                if position is not None:
                    _accumulate(grads, edge, _validated(node, index, edge, results[position]))
            continue
        for edge, position in zip(edges, vjp.grad_index):
            if position is not None:
                if edge in grads:
                    _accumulate(grads, edge, results[position])
                else:
                    grads[edge] = results[position]
    if retained is not None:
        retained.extend((t, grads[edge]) for t, edge in hooked if edge in grads)
    if captured:
        return [captured.get(e, grads.get(e)) if e is not None else None for e in targets]
    return [grads.get(e) if e is not None else None for e in targets]


_GIVEN_ONE = (True,)


def _check_saved_first(node) -> None:
    """Before a node's formula raises (pow with a bool tensor exponent): torch's node unpacks,
    and so checks, what it saved first."""
    if node._freed and node._had_saved:
        raise RuntimeError(_FREED_MSG)
    if node.op in _UNPACK_ORDER:
        _check_in_unpack_order(node)
    _check_unread(node, ())


def _saved_operand(node, slot):
    """What a node's VJP reads at `slot` (("in", i) or ("out", k)): a scalar
    operand, or a saved tensor's array after its version check."""
    if node._freed and node._had_saved:
        raise RuntimeError(_FREED_MSG)
    kind, index = slot
    if kind == "in":
        const = node.consts[index]
        if const is not None:
            return const
    return _checked_array(node.saved.get(slot), node, index)


def _evaluate_vjp(node, needs: tuple, given: tuple, seeds: list) -> list:
    """A node's VJP run as it is emitted (each instruction's reference as soon as
    it is emitted, forward values fetched when first read): per input, its
    gradient array or None. A node that runs its own backward (a custom autograd.Function's,
    tracer/custom_function.py) is called instead."""
    if node.run_backward is not None:
        return node.run_backward(needs, given, seeds)
    xs = [Value(t) for t in node.in_types]
    ys = [Value(t) for t in node.out_types]
    slots = {x.id: ("in", i) for i, x in enumerate(xs)}
    slots.update({y.id: ("out", k) for k, y in enumerate(ys)})
    evaluator = _Evaluator(lambda v: _saved_operand(node, slots[v.id]))
    seed_values = [evaluator.input_value(y.type, g) for y, g in zip([y for y, g in zip(ys, given) if g], seeds)]
    grads = emit_instr_vjp(evaluator, Instr(node.op, xs, ys, node.attrs), needs, given, seed_values)
    return [evaluator.array(g) if g is not None else None for g in grads]


class _Evaluator(Builder):
    """A Builder that runs each instruction's eager form (its NumPy reference, or the faster
    form a higher layer lent: ir.ops.eager_form) as it is emitted; `fetch(value)` supplies a value it reads that it did not compute."""

    def __init__(self, fetch):
        super().__init__(Program())
        self.env: dict = {}             # value id -> array
        self.fetch = fetch

    def input_value(self, type: TensorType, array) -> Value:
        v = Value(type)
        self.env[v.id] = array
        return v

    def array(self, v: Value):
        a = self.env.get(v.id)
        if a is None:
            a = self.env[v.id] = self.fetch(v)
        return a

    def emit(self, op: str, *inputs: Value, loc: str | None = None, **attrs):
        opdef = OPS[op]
        args = [self.array(v) for v in inputs]
        out_types = infer_types(opdef, tuple([v.type for v in inputs]), attrs, freeze_attrs(attrs))
        outs = tuple([Value(t) for t in out_types])
        for v, r in zip(outs, apply_ref(eager_form(opdef), args, attrs, out_types)):
            self.env[v.id] = r
        return outs[0] if len(outs) == 1 else outs


class _TensorEvaluator(_Evaluator):
    """A Builder that runs each instruction on Tensors as it is appended, with grad mode on:
    a create_graph backward through non-leaf tensors with hooks, which must see their
    gradient's value (and may change it) in the middle of the backward. Its env holds
    Tensors; `fetch(value)` supplies a forward value the backward reads (version-checked)."""

    emit = Builder.emit                 # (the shape rule, then append: evaluated below)

    def __init__(self, fetch, forward: frozenset):
        super().__init__(fetch)
        self.forward = forward          # (ids of the forward values: create_graph names them saved)

    def append(self, op: str, inputs, out_types, attrs: tuple = (), loc: str | None = None) -> tuple:
        outs = super().append(op, inputs, out_types, attrs, loc)
        results = _tensor_apply(self.program.instrs[-1], [self.array(v) for v in inputs], self.forward)
        for v, t in zip(outs, results):
            self.env[v.id] = t
        return outs

    def append_one(self, op: str, inputs: tuple, out_type: TensorType, attrs: tuple = (),
                   loc: str | None = None) -> Value:
        return self.append(op, inputs, (out_type,), attrs, loc)[0]


def _hooked_create_graph(graph: GraphProgram, hooked: dict, root_values, seeds, roots, wrt, present) -> list:
    """A create_graph backward that runs the hooks of non-leaf tensors (`hooked`, from
    _tensor_hooks): emitted and evaluated instruction by instruction on Tensors, each hook
    called on its tensor's total gradient where it is complete (ir.autodiff's on_gradient)."""
    forward = frozenset(v.id for v in graph.values.values())
    ev = _TensorEvaluator(lambda v: _saved_value(graph, v, True), forward)
    # (as the plain create_graph path's Builder: a compiled call's node then emits its backward
    # as ops, with history, where it would otherwise run it as a constant)
    ev.differentiable = True
    seed_values = [ev.input_value(TensorType(tuple(r.shape), r.dtype), s) for r, s in zip(roots, seeds)]

    def through(registered):
        def run(g: Value | None) -> Value | None:
            if g is None:       # (an output of a multi-output node that got no gradient)
                return hooks.run_on_tensor(registered, None, True)
            return ev.input_value(g.type, hooks.run_on_tensor(registered, ev.array(g), True))
        return run
    on_gradient = {graph.values[edge].id: through(registered) for edge, registered in hooked.items()
                   if edge in graph.values}
    with enable_grad():
        grad_values = emit_backward(ev, graph.instrs, root_values, seed_values, present, reuse=False,
                                    on_gradient=on_gradient)
    by_id = {v.id: ev.array(g) for v, g in zip(present, grad_values) if g is not None}
    return [by_id.get(v.id) if v is not None else None for v in wrt]


def _validated(node, index: int, edge, g):
    """Gradient `g` that `node` computed for its input `index`, checked against the shape
    the edge's producer recorded (torch's validate_outputs), where a tensor changed shape in
    place under no_grad, or had its `.data` replaced, since (SHAPES_CHANGED): a shape the
    recorded one expands to is summed back to it; any other is torch's error. `node` None:
    `g` is root `index`'s gradient (torch's GraphRoot)."""
    producer, k = edge
    if ANOMALY["enabled"] and ANOMALY["check_nan"] and node is not None:
        _check_no_nan(node, index, g)
    if producer.op is None or type(g) is not np.ndarray:
        return g
    shape = tuple(producer.out_types[k].shape)
    if g.shape == shape:
        return g
    if not _expands_to(shape, g.shape):
        raise _invalid_gradient(node, index, g.shape, shape)
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + d for d, s in enumerate(shape) if s == 1 and g.shape[lead + d] != 1)
    return np.asarray(np.sum(g, axis=axes, dtype=g.dtype).reshape(shape))


def _check_no_nan(node, index: int, g) -> None:
    """Anomaly mode: torch's error where `node` returned NaN for its input `index` (after its
    warning, which in torch shows the forward call's traceback: fusegrad records none)."""
    array = g._concrete() if isinstance(g, Tensor) else np.asarray(g)
    if array.dtype.kind == "f" and np.isnan(array).any():
        name = type(node).__name__
        warnings.warn(f"Error detected in {name}. Traceback of forward call that caused the error:\n"
                      "  (fusegrad records no traceback of the forward call)", UserWarning, stacklevel=2)
        raise RuntimeError(f"Function '{name}' returned nan values in its {index}th output.")


def _expands_to(shape: tuple, target: tuple) -> bool:
    """Does `shape` broadcast to `target` (torch's is_expandable_to)?"""
    return len(shape) <= len(target) and all(s == t or s == 1 for s, t in zip(reversed(shape), reversed(target)))


def _invalid_gradient(node, index: int, got: tuple, expected: tuple) -> RuntimeError:
    """torch's validate_outputs error: `node` gave input `index` a gradient of shape `got`
    where the producer recorded `expected`, which does not expand to it (`node` None: a
    root's gradient, whose text names no function)."""
    where = "" if node is None else f"Function {type(node).__name__} returned an "
    return RuntimeError(f"{where}invalid gradient at index {index} - got {list(got)} but expected shape compatible "
                        f"with {list(expected)}")


def _accumulate(grads: dict, edge, g) -> None:
    """Sum gradient `g` into the one arriving at `edge` (a new array: either may be shared;
    a large row-major one comes from the buffer pool and is added in row blocks on threads).
    The sum is laid out as torch's add lays it out: two transposed contributions give a
    transposed sum (`fg.autograd.grad((a * a).sum(), a)` of a transposed `a`)."""
    prev = grads.get(edge)
    if prev is None:
        grads[edge] = g
    elif type(g) is np.ndarray and g.shape == prev.shape and g.dtype == prev.dtype and prev.ndim:
        out_type = TensorType(prev.shape, from_numpy_dtype(prev.dtype))
        if prev.flags.c_contiguous and g.flags.c_contiguous:
            grads[edge] = ufunc_into(np.add, [prev, g], out_type, POOL.empty(prev.shape, prev.dtype))
        else:
            # (two transposed contributions: added in their memory order, on threads)
            grads[edge] = elementwise_layout(ufunc_result(np.add, [prev, g], out_type), [prev, g])
    else:
        with np.errstate(all="ignore"):
            total = np.asarray(np.add(prev, g), dtype=prev.dtype)
        grads[edge] = elementwise_layout(total, [np.asarray(prev), np.asarray(g)]) if total.ndim else total


def _as_tensor_grad(g) -> Tensor:
    if isinstance(g, Tensor):
        return g
    return Tensor._wrap(np.array(g, copy=True))


_CREATE_GRAPH_CYCLE = ("Using backward() with create_graph=True will create a reference cycle between the parameter "
                       "and its gradient which can cause a memory leak. We recommend using autograd.grad when "
                       "creating the graph to avoid this. If you have to use this function, make sure to reset the "
                       ".grad fields of your parameters to None after use to break the cycle and avoid the leak.")
_WARNED_CREATE_GRAPH: list = []


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph: bool = False, grad_variables=None,
             inputs=None) -> None:
    """Accumulate gradients of `tensors` into the `.grad` of the leaves (and retained non-leaves).
    `grad_variables` is torch's deprecated name of `grad_tensors`."""
    if grad_variables is not None:
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.", FutureWarning,
                      stacklevel=user_stacklevel())
        if grad_tensors is not None:
            raise RuntimeError("`grad_tensors` and `grad_variables` (deprecated) arguments both passed to "
                               "`backward()`. Please only use `grad_tensors`.")
        grad_tensors = grad_variables
    if TRANSFORMS_RUNNING[0]:
        raise RuntimeError("backward() called inside a functorch transform. This is not supported, please use "
                           "functorch.grad or functorch.vjp instead or call backward() outside of functorch "
                           "transforms.")
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    if isinstance(grad_tensors, Tensor):
        grad_tensors = [grad_tensors]
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        # (a dict's values, as torch's: autograd.grad's dict of inputs passed on)
        inputs = [inputs] if isinstance(inputs, (Tensor, GradientEdge)) else \
            list(inputs.values() if isinstance(inputs, dict) else inputs)
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        # (a GradientEdge to a leaf's AccumulateGrad: that leaf's .grad gets the gradient, as torch's
        # node runs; one to a grad_fn fills nothing, a target of its own: see _input_targets)
        inputs = [t.node.variable if type(t) is GradientEdge and type(t.node) is AccumulateGrad else t
                  for t in inputs]
        # a tensor (or edge) listed twice is accumulated once, as torch's (tied weights gathered from two modules)
        inputs = list({(id(t.node), t.output_nr) if type(t) is GradientEdge else id(t): t for t in inputs}.values())
    roots, seeds = _roots_and_seeds(list(tensors), grad_tensors, create_graph)
    _check_flags(retain_graph, create_graph)
    if inputs is not None:
        # (torch checks these after the gradients, the empty list before)
        for t in inputs:
            if not isinstance(t, (Tensor, GradientEdge)):
                raise RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got {type_name(t)}")
        for t in inputs:
            if type(t) is GradientEdge:
                continue
            if not t._requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            if not t.is_leaf and not t.retains_grad:
                # (torch's engine calls retain_grad() on each input: a non-leaf one keeps
                # collecting its .grad in later backwards too)
                t.retain_grad()
    if create_graph and not _WARNED_CREATE_GRAPH:
        _WARNED_CREATE_GRAPH.append(True)      # torch's TORCH_WARN_ONCE: once a process
        warnings.warn(_CREATE_GRAPH_CYCLE, UserWarning, stacklevel=user_stacklevel())
    trace = trace_state.current()
    if trace is not None:
        _refuse_edges_in_trace(inputs or ())
        trace.backward(roots, seeds, inputs, create_graph, retain_graph)
        return
    graph_nodes = _topological_nodes([edge_of(r)[0] for r in roots])
    targets = _every_target(graph_nodes) if inputs is None else _input_targets(graph_nodes, inputs)
    partial = []
    done = set() if not create_graph and _leaf_effects(targets) else None
    try:
        grads = _run(roots, seeds, [e for _, e in targets], retain_graph, create_graph, graph_nodes, partial=partial,
                     every_node=inputs is None, at_leaf=None if done is None else _ordered_leaves(done))
    except Exception:
        _accumulate_targets(targets, partial, create_graph)     # (what torch's engine completed first)
        raise
    if done:
        # (the leaves' gradients were accumulated as their nodes ran: the rest are retain_grad()'s)
        grads = [g for (_, e), g in zip(targets, grads) if e[0] not in done]
        targets = [(t, e) for t, e in targets if e[0] not in done]
    _accumulate_targets(targets, grads, create_graph)


def _leaf_effects(targets: list) -> bool:
    """Whether a leaf among a backward's targets has hooks whose effects show the order the
    leaves' AccumulateGrad nodes run in: tensor hooks, post-accumulate hooks (one may read
    another leaf's .grad: an optimizer step in backward), or hooks on the node itself."""
    if not (ANY_LEAF_HOOKS[0] or hooks.ANY_POST_ACCUMULATE_HOOKS[0] or ANY_NODE_HOOKS[0]):
        return False
    for t, (node, _) in targets:
        if type(node) is AccumulateGrad and (hooks.leaf_hooks(t) or hooks.post_accumulate_hooks(t)
                                             or (ANY_NODE_HOOKS[0] and node in NODE_HOOKS)):
            return True
    return False


def _ordered_leaves(done: set):
    """at_leaf for _run: what torch's AccumulateGrad does when the engine reaches it, for a
    leaf's gradient `g` (an array): the leaf's tensor hooks, then the node's pre-hooks, the
    accumulation into .grad (a leaf whose requires_grad was turned off gets none), the
    leaf's post-accumulate hooks, and the node's post-hooks (no gradients in, g out).
    Each node it handles goes into `done`."""
    def at_leaf(node: AccumulateGrad, g):
        t = node.variable
        own = hooks.leaf_hooks(t)
        if own:
            g = hooks.run_on_array(own, g)
        node_hooks = ANY_NODE_HOOKS[0] and node in NODE_HOOKS
        if node_hooks:
            g = hooks.run_prehooks(node, (g,))[0]
        if g is not None and t._requires_grad:
            accumulate_into_grads([(t, g)], False)
            if hooks.ANY_POST_ACCUMULATE_HOOKS[0]:
                hooks.run_post_accumulate([t])
        if node_hooks:
            hooks.run_posthooks(node, [], (g,))
        done.add(node)
        return g
    return at_leaf


def _captured_leaf(node: AccumulateGrad, g):
    """at_leaf for autograd.grad: torch's engine does not run a captured leaf's AccumulateGrad,
    but as the node's turn comes it calls the leaf's tensor hooks on the gradient and
    captures their result (evaluate_function)."""
    own = hooks.leaf_hooks(node.variable)
    return hooks.run_on_array(own, g) if own else g


def _every_target(graph_nodes: list) -> list:
    """(tensor, edge) for each leaf's AccumulateGrad among `graph_nodes` and each retain_grad()
    tensor whose node is among them: what a backward without `inputs` fills."""
    targets = []
    for node in graph_nodes:
        if isinstance(node, AccumulateGrad):
            if not _transform_leaf(node):
                targets.append((node.variable, (node, 0)))
        elif node.retained:
            targets += _retained_at(node)
    return targets


def _input_targets(graph_nodes: list, inputs: list) -> list:
    """(tensor, edge) for each of backward(inputs=...)'s `inputs`, and the retain_grad() tensors
    whose nodes the backward to them runs (torch fills their .grad too)."""
    targets = [(None, _edge_target(t)) if type(t) is GradientEdge else (t, edge_of(t)) for t in inputs]
    given = {id(t) for t in inputs}
    targets += [(t, e) for t, e in _retained_on_path(graph_nodes, [e for _, e in targets]) if id(t) not in given]
    return targets


def gradients_into_history(tensors: list, grad_tensors: list, retain_graph: bool, inputs=None) -> list:
    """backward(tensors, grad_tensors, inputs=inputs)'s gradients without their accumulation:
    (tensor, gradient) for each leaf (or each of `inputs`) and retain_grad() tensor it reaches
    (a leaf whose requires_grad was turned off since gets none). For a backward inside a
    compiled call that goes on into history from before the call: the call accumulates them
    itself (trace_autograd), so that what it does after the backward (an optimizer step) sees
    them, as eagerly."""
    roots, seeds = _roots_and_seeds(list(tensors), grad_tensors, False)
    graph_nodes = _topological_nodes([edge_of(r)[0] for r in roots])
    targets = _every_target(graph_nodes) if inputs is None else _input_targets(graph_nodes, inputs)
    grads = _run(roots, seeds, [e for _, e in targets], retain_graph, False, graph_nodes,
                 every_node=inputs is None)
    # (each in memory of its own, laid out as a first .grad of its tensor would be)
    return [(t, Tensor._wrap(grad_memory(g, t._data) if t._grad_fn is None and t._data is not None
                             else np.array(g, order="C", copy=True)))
            for (t, _), g in zip(targets, grads) if g is not None and t._requires_grad]


def filled_behind(tensors: list) -> set:
    """id() of the leaves (and retain_grad() tensors) a backward from `tensors` fills."""
    graph_nodes = _topological_nodes([edge_of(t)[0] for t in tensors if edge_of(t) is not None])
    return {id(t) for t, _ in _every_target(graph_nodes)}


def _transform_leaf(node) -> bool:
    """Whether `node` is the AccumulateGrad of a leaf fg.grad made for an argument, after the
    transform returned: at the caller's level (torch.func's) that argument needs no gradient,
    so a backward neither fills nor computes one for it."""
    return type(node) is AccumulateGrad and node.variable.__dict__.get("_transform_done", False)


def _accumulate_targets(targets: list, grads: list, create_graph: bool) -> None:
    """Each (tensor, edge) target's gradient (None: none reached it) into the tensor's .grad.
    A leaf whose requires_grad was turned off after the forward gets nothing: torch's
    AccumulateGrad checks it when it runs."""
    pairs = [(t, g) for (t, _), g in zip(targets, grads) if g is not None and t is not None and t._requires_grad]
    accumulate_into_grads(pairs, create_graph)
    if hooks.ANY_POST_ACCUMULATE_HOOKS[0]:
        hooks.run_post_accumulate([t for t, _ in pairs if t._grad_fn is None])


def grad_memory(g: np.ndarray, leaf: np.ndarray) -> np.ndarray:
    """A first `.grad`: `g`'s values in owned, writable memory laid out as the leaf's (torch's
    AccumulateGrad layout contract: a dense leaf's gradient has the leaf's strides, any
    other's is contiguous). A weight used as `w.t()` otherwise keeps the transposed
    (Fortran-order) layout of its product, and every later op on it mixes layouts."""
    if leaf.flags.c_contiguous:             # the common case, on every first backward
        return np.array(g, order="C", copy=True)
    dense = leaf.flags.f_contiguous or _dense(leaf)
    out = np.empty_like(leaf, dtype=g.dtype) if dense else np.empty(leaf.shape, g.dtype)
    np.copyto(out, g)
    return out


def has_grad_layout(g: np.ndarray, leaf: np.ndarray) -> bool:
    """Whether writable `g` already is laid out as grad_memory would lay it out for `leaf`."""
    if not g.flags.writeable:
        return False
    if leaf.flags.c_contiguous:
        return g.flags.c_contiguous
    if leaf.flags.f_contiguous:
        return g.flags.f_contiguous
    return g.strides == np.empty_like(leaf, dtype=g.dtype).strides if _dense(leaf) else g.flags.c_contiguous


def _dense(a: np.ndarray) -> bool:
    """Whether `a`'s elements fill its memory span without gaps (a permuted contiguous array)."""
    span = a.itemsize
    for n, stride in sorted(zip(a.shape, map(abs, a.strides)), key=lambda p: p[1]):
        if n == 1:
            continue
        if stride != span:
            return False
        span *= n
    return True


def accumulate_into_grads(pairs, create_graph: bool) -> None:
    """Add each gradient (an array, or a Tensor with create_graph) into its tensor's `.grad`."""
    if not create_graph:
        # (no op runs here: NumPy arrays only, so no grad mode to set)
        for t, g in pairs:
            if t._grad is None:
                if t._grad_fn is None and t._data is not None and g.shape != t._data.shape:
                    broadcast_shapes(t._data.shape, g.shape)    # (.data replaced since: torch's error)
                # (a retained non-leaf's first gradient is torch's contiguous clone of it)
                t._grad = Tensor._wrap(grad_memory(g, t._data) if t._grad_fn is None
                                       else np.array(g, order="C", copy=True))
            elif t._grad_fn is not None:
                # a retained non-leaf: torch's retain_grad hook makes a new tensor (grad + new),
                # so a .grad taken from an earlier backward keeps its value
                t._grad = Tensor._wrap(np.asarray(t._grad._concrete() + g, dtype=t._grad.dtype.np))
            else:
                data = t._grad._data
                if not data.flags.writeable and any(s == 0 and n > 1 for s, n in zip(data.strides, data.shape)):
                    raise RuntimeError(_OVERLAP_MSG)    # a .grad set to an expand: torch's in-place add refuses
                if data.shape != g.shape:
                    # (the variable's data was replaced by one of another shape: torch's in-place
                    # add raises its broadcast errors)
                    shape = broadcast_shapes(data.shape, g.shape)
                    if shape != data.shape:
                        raise broadcast_shape_error(data.shape, shape)
                data += g
                t._grad._vbox[0] += 1
        return
    with no_grad():
        for t, g in pairs:
            g = _as_tensor_grad(g)
            if t._grad is None and t._grad_fn is not None:
                # a retained non-leaf: torch's retain_grad hook stores a contiguous clone
                with enable_grad():
                    t._grad = _contiguous_clone(g)
            elif t._grad is None:
                # torch's AccumulateGrad copies a gradient with history into fresh memory
                # (never a view of another tensor), recorded as CopyBackwards.
                copy = Tensor._wrap(np.empty(g._value_shape(), g.dtype.np))
                with enable_grad():
                    copy.copy_(g)
                t._grad = copy
            else:
                with enable_grad():
                    t._grad = t._grad + g


def _contiguous_clone(g: Tensor) -> Tensor:
    """torch's g.clone(memory_format=torch.contiguous_format) (CloneBackward0, row-major)."""
    from .functional import _laid_out_row_major      # (functional imports this module's users)
    return _laid_out_row_major(g.clone())


def _retained_on_path(nodes, targets) -> list:
    """(tensor, edge) of the retain_grad() tensors whose nodes a backward to `targets` runs."""
    return _retained_tensors(nodes, _live_nodes(nodes, [e for e in targets if e is not None]))


def _retained_tensors(nodes, live: set) -> list:
    """(tensor, edge) of the retain_grad() tensors of the nodes in `live`."""
    found = []
    for node in nodes:
        if node.retained and node in live:
            found += _retained_at(node)
    return found


def _retained_at(node) -> list:
    """(tensor, edge) of the retain_grad() tensors at `node`'s outputs that the engine fills:
    alive, still that output, and not left to the node itself (fills_own_retained)."""
    found = []
    for k, ref in node.retained.items():
        t = ref()
        if t is not None and t._grad_fn is node and not fills_own_retained(node, k):
            found.append((t, (node, k)))
    return found


def fills_own_retained(node, k: int) -> bool:
    """Whether node's VJP gives its output k's retain_grad() tensor its gradient itself (the
    custom_call protocol's `fills_retained`: a compiled call's node, for an output the call's
    other outputs are computed from, whose total gradient only its backward program knows)."""
    if node.op != "custom_call":
        return False
    return k in getattr(dict(node.attrs).get("fn"), "fills_retained", ())


def _check_flags(*flags) -> None:
    """retain_graph / create_graph / allow_unused are bools (torch's engine takes ints too, a str is its
    TypeError, where Python's truth test would have taken anything)."""
    for flag in flags:
        if not isinstance(flag, (bool, int, np.bool_, np.integer)):
            raise TypeError(f"'{type(flag).__name__}' object cannot be interpreted as an integer")


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph: bool = False,
         allow_unused: bool = False, materialize_grads: bool = False):
    """The gradients of `outputs` with respect to `inputs`, returned as a tuple (no .grad is touched)."""
    single_out = isinstance(outputs, Tensor)
    outputs = [outputs] if single_out else list(outputs)
    inputs = [inputs] if isinstance(inputs, (Tensor, GradientEdge)) else list(inputs)
    if isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs]
    if retain_graph is None:
        retain_graph = create_graph
    roots, seeds = _roots_and_seeds(outputs, grad_outputs, create_graph)   # torch checks outputs first
    _check_flags(retain_graph, create_graph, allow_unused)
    for t in inputs:
        if not isinstance(t, (Tensor, GradientEdge)):
            raise RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got {type_name(t)}")
    if not all(t._requires_grad for t in inputs if type(t) is not GradientEdge):
        raise RuntimeError("One of the differentiated Tensors does not require grad")
    trace = trace_state.current()
    if trace is not None:
        _refuse_edges_in_trace(inputs)
        for root in roots:
            trace.value_of(root)        # (a root from outside the call, read by no op, joins the boundary)
        outside, behind = _upstream_boundary(trace, inputs)
        if create_graph and behind:
            # The gradient would go on through eager history from before the call with the traced
            # one as its seed; a seed read at a graph break has no history of its own, so the
            # result could not be differentiated again: refused rather than silently constant.
            raise NotImplementedError(
                "fusegrad: autograd.grad(create_graph=True) inside fg.compile with respect to a tensor "
                "that the call reaches only through history made before the call (a non-leaf "
                "argument's) is not supported; call it outside the compiled function, or pass the leaf")
        retained = []
        grads = trace.gradients(roots, seeds, inputs + outside, create_graph, retain_graph, retained, lay_out=True)
        if retained:
            trace.fill_retained(retained, create_graph)
        if outside:
            grads = _through_outside_history(trace, inputs, grads, outside, behind, retain_graph)
        if not (allow_unused or materialize_grads) and any(g is None for g in grads):
            raise RuntimeError(_unused_message([g is None for g in grads].index(True)))
        if materialize_grads and any(g is None for g in grads):
            from .functional import mul
            return tuple(mul(x, 0) if g is None else g for x, g in zip(inputs, grads))
        return tuple(grads)
    targets = [_edge_target(t) for t in inputs]
    graph_nodes = _topological_nodes([edge_of(r)[0] for r in roots])
    reachable = {id(n) for n in graph_nodes}
    targets = [e if e is not None and id(e[0]) in reachable else None for e in targets]
    retained = [] if not create_graph else None
    # torch fills the .grad of a retain_grad() tensor whose node this backward runs: without
    # create_graph _run_nodes collects them; with it they are extra targets (_retained_on_path)
    extra = _retained_on_path(graph_nodes, targets) if create_graph else []
    hooked_leaf = ANY_LEAF_HOOKS[0] and not create_graph and any(
        e is not None and type(e[0]) is AccumulateGrad and hooks.leaf_hooks(e[0].variable) for e in targets)
    grads = _run(roots, seeds, targets + [e for _, e in extra], retain_graph, create_graph, graph_nodes, retained,
                 captures=True, at_leaf=_captured_leaf if hooked_leaf else None)
    if extra:
        grads, extra_grads = grads[:len(targets)], grads[len(targets):]
        accumulate_into_grads([(t, g) for (t, _), g in zip(extra, extra_grads) if g is not None], True)
    if retained:
        accumulate_into_grads(retained, False)
    out = []
    # a seed passed through unchanged (autograd.grad(y, y, v)) is returned as the very tensor
    # given, as torch's engine returns it
    given_seeds = {id(s._data): s for s in seeds if type(s) is Tensor and s._data is not None} if grad_outputs \
        else {}
    for k, (t, g) in enumerate(zip(inputs, grads)):
        if g is None:
            if not (allow_unused or materialize_grads):
                raise RuntimeError(_unused_message(k))
            if materialize_grads and type(t) is GradientEdge:
                raise RuntimeError("materialize_grads cannot be used when the given input is a GradientEdge")
            out.append(Tensor._wrap(np.zeros(t._value_shape(), t.dtype.np)) if materialize_grads else None)
        elif isinstance(g, Tensor):
            out.append(g)
        elif id(g) in given_seeds:
            out.append(given_seeds[id(g)])
        else:
            out.append(Tensor._wrap(g if _handed_over(g, seeds, out) else np.array(g, copy=True)))
    return tuple(out)


def _refuse_edges_in_trace(inputs) -> None:
    """A GradientEdge among the inputs of a backward inside fg.compile: not supported."""
    if any(type(t) is GradientEdge for t in inputs):
        raise NotImplementedError("fusegrad: a GradientEdge among the inputs of autograd.grad or backward inside "
                                  "fg.compile is not supported; pass the tensor, or call it outside the compiled "
                                  "function")


def _handed_over(g: np.ndarray, seeds: list, given: list) -> bool:
    """Whether autograd.grad may return gradient array `g` itself rather than a copy: memory that
    only this backward made (a fresh array, or a buffer of the pool: ir/buffers.py), writable,
    not a seed's memory (a gradient passed through unchanged: the caller's grad_outputs) and not
    memory already returned for another input (an add's operands get one array). Copying W3's
    [8192, 512] float32 gradient cost 1.8 ms of fg.grad's 10 eagerly. (torch returns such arrays
    without a copy too, and even a seed's.)"""
    if not g.flags.writeable or not (g.base is None or POOL.holds(g.base)):
        return False
    return not any(np.may_share_memory(g, t._data) for t in seeds + given
                   if isinstance(t, Tensor) and t._data is not None)


def _upstream_boundary(trace, inputs) -> tuple:
    """(the tensors from outside a traced call with a history of their own (a non-leaf
    argument), the positions of `inputs` that may lie behind them: leaves of that history
    and non-leaves from outside) for autograd.grad inside fg.compile with respect to a tensor
    upstream of the call; ([], []) when there are none, the common case."""
    outside = list(trace.boundary.values())
    if not outside:
        return [], []
    leaves = {id(leaf) for t in outside for leaf in leaves_behind(t)}
    ids = {id(t) for t in outside}
    behind = [k for k, t in enumerate(inputs) if t._data is not None and id(t) not in ids and
              (id(t) in leaves or t._grad_fn is not None)]
    return (outside, behind) if behind else ([], [])


def _through_outside_history(trace, inputs, grads, outside, behind, retain_graph) -> list:
    """Gradients of the `inputs` at positions `behind`, which lie behind the call's `outside`
    tensors: their gradients in the call, read now (a graph break), go on through their eager
    history (create_graph off)."""
    from .functional import add
    grads, at_outside = list(grads[:len(inputs)]), grads[len(inputs):]
    reached = [(t, g) for t, g in zip(outside, at_outside) if g is not None]
    if not reached:
        return grads
    seeds = [Tensor._wrap(np.array(trace.materialize(g), copy=True)) for _, g in reached]
    with trace_state.eager_section():
        upstream = grad([t for t, _ in reached], [inputs[k] for k in behind], seeds,
                        retain_graph=retain_graph, allow_unused=True)
    with no_grad():
        for k, g in zip(behind, upstream):
            if g is not None:       # (an input the call also read directly: both parts)
                grads[k] = g if grads[k] is None else add(grads[k], g)
    return grads


def _unused_message(index: int) -> str:
    return (f"The differentiated Tensor at index {index} appears to not have been used in the graph. "
            "Set allow_unused=True if this is the desired behavior.")


def explain(outputs, grad_outputs=None) -> str:
    """The recorded forward graph behind `outputs` and the backward program that
    `backward()` would run for it, printed as IR (nothing is executed or freed)."""
    from fusegrad.ir.printer import Namer, format_program
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    if isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs]
    roots, _ = _roots_and_seeds(outputs, grad_outputs, False)
    root_edges = [edge_of(r) for r in roots]
    graph = GraphProgram(root_edges)
    leaves = [graph.values[(n, 0)] for n in graph.nodes if isinstance(n, AccumulateGrad)]
    forward = Program([v for v in leaves], graph.instrs, [graph.value(e) for e in root_edges])
    b = Builder(Program())
    seeds = [b.input(TensorType(tuple(r.shape), r.dtype)) for r in roots]
    grads = emit_backward(b, graph.instrs, forward.outputs, seeds, leaves)
    b.program.outputs = [g for g in grads if g is not None]
    names = Namer()
    return ("forward (recorded graph; leaves first):\n" + format_program(forward, names) +
            "\nbackward (seeds first, then forward values it reads):\n" + format_program(simplify(b.program), names))
