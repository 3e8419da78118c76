"""The op table's declaration type and registry.

Every op is declared exactly once, as an `OpDef`: its name, its group (which
the compiler's passes branch on, never the name), its shape/dtype rule, its
NumPy reference implementation, its VJP written in IR ops, and, for
elementwise ops, the scalar expression the code generator inlines.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

# Groups: how passes treat an op.
ELEMENTWISE = "elementwise"   # broadcasting map over one iteration space
REDUCE = "reduce"             # reduces `axes` of its one input
MOVEMENT = "movement"         # reshape/permute/expand/index: index arithmetic
SOURCE = "source"             # no inputs: constants, iota
MATMUL = "matmul"             # BLAS call
COMPOSITE = "composite"       # decomposes into the groups above for codegen
OPAQUE = "opaque"             # runs only by its reference implementation

# OpDef.extra["unpack_order"] of a binary op whose torch node saves both operands: generated
# nodes unpack their saved tensors by name, `other` before `self`
OTHER_THEN_SELF = (("in", 1), ("in", 0))


class NoDerivativeError(RuntimeError):
    """Raised by a VJP that torch does not define (its NotImplemented node): at backward
    time, not when a node probes which values its VJP would save (tracer.node.saved_slots)."""


class NoDerivativeNotImplementedError(NoDerivativeError, NotImplementedError):
    """A NoDerivativeError that torch raises as NotImplementedError (its derivatives.yaml's
    `not_implemented("unique_consecutive")`: "the derivative for '...' is not implemented.")."""


@dataclass
class OpDef:
    """One op of the table. See ARCHITECTURE.md, "How to add an op"."""

    name: str
    group: str
    # infer(in_types, attrs) -> list of output TensorTypes; raises torch's errors.
    infer: Callable
    # ref(*arrays, **attrs) -> array or tuple of arrays (the reference executor); it runs with
    # NumPy's floating-point warnings silenced (ir.interpreter.apply_ref), as torch never warns.
    ref: Callable
    # vjp(e, xs, ys, gs, attrs, needs) -> per-input gradient Value or None.
    # `e` is an ir.emit.Emitter; gs[i] is None where output i gets no gradient.
    vjp: Callable | None = None
    # Elementwise ops: scalar expression template over "{0}", "{1}", ...
    expr: str | None = None
    # Composite ops: decompose(e, xs, attrs) -> list of output Values in simpler ops.
    decompose: Callable | None = None
    # Output indices that carry no gradient (indices of max, comparisons...).
    nondiff_outputs: tuple = ()
    # Input indices the VJP never gives a gradient, whatever needs one (graft's value: its
    # gradient path is the source's), so activity analysis does not pass through them.
    nondiff_inputs: tuple = ()
    # Movement ops a loop kernel performs as index arithmetic: index_map(in_shape,
    # out_shape, attrs) -> a function from the index an output element is read at
    # to the operand's index (see movement.py, "Index maps"), or None when this
    # instance moves data (a general reshape). `view`: NumPy makes it a view.
    index_map: Callable | None = None
    view: bool = False
    # Algebraic identity (ir.passes.rewrite_identities, run before codegen):
    # rewrite(e, xs, attrs, graph) -> output Values computing the same thing more
    # cheaply, or None to keep the instruction; graph.producer(v) is the instruction
    # defining v (None for program inputs), graph.readers(v) how many instructions
    # and program outputs read v, graph.returned(k) whether the program returns output k
    # of the instruction being rewritten.
    rewrite: Callable | None = None
    # Runs by its reference implementation in compiled programs by design (a data-dependent
    # gather or scatter): the scheduler says so without warning of a missing kernel rule.
    reference_only: bool = False
    doc: str = ""
    # Further facts, by name. extra["reciprocal_of"] = k (div): where operand k is the same
    # for every step of a kernel's innermost loop but not for the whole kernel (a row's norm
    # or sum, not a Python scalar) and the other operand is not, the kernel multiplies by
    # its reciprocal, computed once outside the loop, and corrects the product to the
    # correctly rounded quotient (exact division where that reciprocal is not a normal
    # number): codegen/kernel_source.py, _by_reciprocal.
    # extra["declined_why"](instr) -> str or None: why a composite's decompose declines this
    # instruction (it runs by its reference implementation), for explain(); e.g. "of 4096
    # elements a result adds them up in torch's order".
    # extra["result_order"](shape, arrays, attrs) -> dims slowest first (index_take): the
    # order in which torch lays out the op's result from its inputs' strides (`arrays`: the
    # inputs, or stand-ins with their strides), where an input is not row-major; eager
    # results and traced ones (so a compiled call's outputs) take it.
    # Facts the kernel generator reads to split a loop at cat's seams (codegen/segments.py):
    # extra["position_along"] = attribute name (iota): the value at an index is the loop
    # position along the dim that attribute names; extra["monotone"] (lt, le, gt, ge): the
    # result is monotone in each operand, so one that holds at both ends of a range of
    # positions holds over the whole range; extra["select"] (where): operand 0 picks
    # operand 1 (true) or operand 2 (false).
    extra: dict = field(default_factory=dict)
    # Maps its operands element by element, broadcasting (an elementwise op, or a composite
    # whose shape rule is the elementwise one: reciprocal, silu, rsqrt...), or is marked
    # extra["takes_operand_layout"] (flip): its traced result takes the layout torch's
    # TensorIterator gives it. Set by `register`.
    pointwise: bool = False

    @property
    def differentiable(self) -> bool:
        """Does the op have a VJP rule (so autograd can differentiate through it)?"""
        return self.vjp is not None


OPS: dict[str, OpDef] = {}
# Ops whose reference raises on some input values (an index out of range, an integer division
# by zero): OpDef.extra["value_checks"], True or a predicate of the instruction. A traced call
# runs them even when nothing reads their result, so it raises where eager execution does.
VALUE_CHECKED: set = set()


# Faster eager forms of some ops' references, lent by a higher layer (codegen/eager_loops.py
# lends Numba loops of its vectorised math): op name -> a callable with the reference's
# signature, which falls back to the reference where it does not apply. Eager dispatch and
# the eager backward call them (`eager_form`); the reference executor never does, so compiled
# kernels are still checked against the references themselves.
EAGER_FORMS: dict[str, Callable] = {}


def eager_form(opdef: OpDef) -> Callable:
    """The callable eager execution runs for `opdef`: its lent eager form, else its reference."""
    return EAGER_FORMS.get(opdef.name, opdef.ref)


# The same for ops whose references also write into given memory (OpDef.extra["ref_into"],
# which eager execution calls for large results, into buffers of the pool): op name -> a
# callable with ref_into's signature (out, *arrays, **attrs), lent with the EAGER_FORMS entry.
EAGER_INTO_FORMS: dict[str, Callable] = {}


def eager_into_form(opdef: OpDef) -> Callable | None:
    """What eager execution calls to write `opdef`'s result into given memory: its lent form,
    else its reference's `ref_into` (None where it has none)."""
    return EAGER_INTO_FORMS.get(opdef.name) or opdef.extra.get("ref_into")


def register(op: OpDef) -> OpDef:
    """Add `op` to the table; each name may be declared only once."""
    if op.name in OPS:
        raise ValueError(f"op {op.name!r} declared twice")
    OPS[op.name] = op
    # (an op whose eager result torch allocates row-major, masked_fill's, takes no operand's layout)
    op.pointwise = (op.group == ELEMENTWISE or getattr(op.infer, "elementwise_rule", False)
                    or op.extra.get("takes_operand_layout", False)) and not op.extra.get("row_major_result", False)
    if op.extra.get("value_checks"):
        VALUE_CHECKED.add(op.name)
    return op


def check_values_now(op: str, in_types: tuple, arrays: list, attrs: dict) -> None:
    """Run op's value check (OpDef.extra["check_now"]) on the inputs known now, for a tracer:
    `arrays` holds each input's array where its values are known, else None. It raises the
    op's error where eager execution would, before any later op of the call is traced."""
    check = OPS[op].extra.get("check_now")
    if check is not None:
        check(in_types, arrays, attrs)


def checks_values(ins) -> bool:
    """Whether instruction `ins` may raise on its input values (see VALUE_CHECKED)."""
    if ins.op not in VALUE_CHECKED:
        return False
    check = OPS[ins.op].extra["value_checks"]
    return check is True or check(ins)


# ----------------------------------------------------------------- shape rules
_INFERRED: dict = {}          # (op, input types, frozen attributes) -> output types
MAX_INFERRED = 65536


def infer_types(op: OpDef, in_types: tuple, attrs: dict, frozen: tuple) -> list:
    """`op.infer(in_types, attrs)`, memoised: tracing and eager dispatch call it once
    per op applied, mostly on types seen before. Types are interned, so the key
    hashes in C; rules that raise are not memoised (the next call raises again),
    nor are opaque ops (their attributes are per-call functions)."""
    key = (op.name, in_types, frozen)
    try:
        out = _INFERRED.get(key)
    except TypeError:                 # an unhashable attribute (a slice in an index)
        return op.infer(list(in_types), attrs)
    if out is None:
        out = op.infer(list(in_types), attrs)
        if op.group != OPAQUE:
            if len(_INFERRED) >= MAX_INFERRED:
                _INFERRED.clear()
            _INFERRED[key] = out
    return out


def broadcast_shapes(*shapes) -> tuple:
    """NumPy's broadcasting with torch's error text (pairwise, right to left, as torch's infer_size)."""
    out = tuple(shapes[0]) if shapes else ()
    for s in shapes[1:]:
        out = _broadcast_pair(out, tuple(s))
    return out


def expands_to(shape, target) -> bool:
    """Whether a tensor of `shape` broadcasts to `target` without growing it (trailing dims
    equal or 1): torch's expand rule, and the shapes a gradient may be summed back from."""
    shape, target = tuple(shape), tuple(target)
    if len(shape) > len(target):
        return False
    return all(s in (1, t) for s, t in zip(reversed(shape), reversed(target)))


def unbroadcast_axes(broadcast, shape) -> list:
    """The axes of a `broadcast`-shaped array to sum to undo broadcasting `shape` to it:
    the leading dims it gained and the dims where `shape` has 1 and `broadcast` does not."""
    broadcast, shape = tuple(broadcast), tuple(shape)
    lead = len(broadcast) - len(shape)
    return list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and broadcast[lead + i] != 1]


def _broadcast_pair(a: tuple, b: tuple) -> tuple:
    if a == b:
        return a
    ndim = max(len(a), len(b))
    out = [0] * ndim
    for i in range(ndim - 1, -1, -1):
        offset = ndim - 1 - i
        sa = a[len(a) - 1 - offset] if offset < len(a) else 1
        sb = b[len(b) - 1 - offset] if offset < len(b) else 1
        if sa != sb and sa != 1 and sb != 1:
            raise RuntimeError(f"The size of tensor a ({sa}) must match the size of tensor b ({sb}) at "
                               f"non-singleton dimension {i}")
        out[i] = sb if sa == 1 else sa
    return tuple(out)


def normalize_dim(dim: int, ndim: int) -> int:
    """A dimension index made non-negative, with torch's IndexError text."""
    lo, hi = (-ndim, ndim - 1) if ndim > 0 else (-1, 0)
    if not lo <= dim <= hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
    return dim % max(ndim, 1)


def shape_str(shape) -> str:
    """A shape as torch writes it in error messages: "[2, 3]"."""
    return "[" + ", ".join(str(s) for s in shape) + "]"
