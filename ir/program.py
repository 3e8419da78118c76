"""The SSA program: values, instructions, programs, and a builder.

A `Program` is in A-normal form, like a jaxpr: every instruction applies one
op from the op table to input values and defines fresh output values. Values
carry only their `TensorType`; names are assigned by the printer. Attributes
are kept as a sorted tuple of (name, value) pairs so an instruction is
hashable and its structure can be keyed by caches.
"""
from __future__ import annotations

import itertools

from .ops import OPS, infer_types
from .types import TensorType

_ids = itertools.count()
_new = object.__new__


class Value:
    """One SSA variable: defined once, typed by shape and dtype."""

    __slots__ = ("type", "id", "__weakref__")

    def __init__(self, type: TensorType):
        # (written out in tracer.trace.Trace.record, the per-op hot path: keep it in step)
        self.type = type
        self.id = next(_ids)

    @property
    def shape(self) -> tuple:
        """The value's shape (from its type)."""
        return self.type.shape

    @property
    def dtype(self):
        """The value's dtype (from its type)."""
        return self.type.dtype

    def __repr__(self) -> str:
        return f"Value#{self.id}:{self.type}"


def freeze_attrs(attrs: dict) -> tuple:
    """Attributes as a hashable, order-independent tuple (most ops have none: the hot path)."""
    return tuple(sorted(attrs.items())) if attrs else ()


def _has_float(items) -> bool:
    for item in items:
        kind = type(item)
        if kind is float or (kind is tuple and _has_float(item)):
            return True
    return False


def _exact(value):
    if type(value) is float:
        return (float, repr(value))            # (repr keeps the sign of a zero)
    if type(value) is tuple:
        return tuple([_exact(item) for item in value])
    return value


def exact_attrs(attrs: tuple) -> tuple:
    """Frozen attributes as a dict key that tells apart what `==` merges: -0.0 and 0.0 (and
    the int 0), whose instructions differ (hardtanh(x, -0.0, 1.0) gives -0.0 below its bound).
    Attributes without a float value are returned as they are (the common case, one scan).
    Every cache or merge keyed by attributes goes through it (or, as the executor's program
    key, through their text)."""
    if not attrs or not _has_float(attrs):
        return attrs
    return tuple([(name, _exact(value)) for name, value in attrs])


class Instr:
    """`outputs = op(inputs; attrs)`, with the user's source location if known."""

    __slots__ = ("op", "inputs", "outputs", "attrs", "loc")

    def __init__(self, op: str, inputs, outputs, attrs: tuple = (), loc: str | None = None):
        # (written out in tracer.trace.Trace.record, the per-op hot path: keep it in step)
        self.op = op
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        self.attrs = attrs
        self.loc = loc

    @property
    def params(self) -> dict:
        """The instruction's attributes as a dict (they are stored frozen, as a tuple)."""
        return dict(self.attrs)

    def __repr__(self) -> str:
        return f"Instr({self.op}, {list(self.inputs)} -> {list(self.outputs)}, {dict(self.attrs)})"


class Program:
    """Inputs, a list of instructions in definition order, and outputs."""

    __slots__ = ("inputs", "instrs", "outputs")

    def __init__(self, inputs=(), instrs=(), outputs=()):
        self.inputs = list(inputs)
        self.instrs = list(instrs)
        self.outputs = list(outputs)

    def __str__(self) -> str:
        from .printer import format_program
        return format_program(self)

    def producers(self) -> dict:
        """Map from value id to the instruction that defines it."""
        return {v.id: ins for ins in self.instrs for v in ins.outputs}


class Builder:
    """Appends type-checked instructions to a program.

    `emit(op, *inputs, **attrs)` runs the op's shape/dtype rule (raising
    torch's errors for bad operands), records the instruction and returns its
    output value (or tuple of values for multi-output ops).
    """

    def __init__(self, program: Program | None = None):
        self.program = program if program is not None else Program()
        # True where the program will run on Tensors that record history (a create_graph
        # backward): an opaque op's VJP must then be IR its gradient can flow through
        # (custom_call's `expand`).
        self.differentiable = False

    def input(self, type: TensorType) -> Value:
        """Add a program input of type `type` and return its value."""
        v = Value(type)
        self.program.inputs.append(v)
        return v

    def emit(self, op: str, *inputs: Value, loc: str | None = None, **attrs):
        """Append `op` on `inputs` with `attrs`, its output types from the op's shape/dtype rule.
        Returns the output value, or a tuple of them for an op with several outputs."""
        frozen = freeze_attrs(attrs)
        out_types = infer_types(OPS[op], tuple([v.type for v in inputs]), attrs, frozen)
        outs = self.append(op, inputs, out_types, frozen, loc)
        return outs[0] if len(outs) == 1 else outs

    def append(self, op: str, inputs, out_types, attrs: tuple = (), loc: str | None = None) -> tuple:
        """Record `op` with outputs of the given types and frozen attributes, running
        no shape rule: for copying instructions whose types were checked when they
        were first emitted. Returns the output values."""
        outs = tuple([Value(t) for t in out_types])
        self.program.instrs.append(Instr(op, inputs, outs, attrs, loc))
        return outs

    def append_one(self, op: str, inputs: tuple, out_type: TensorType, attrs: tuple = (),
                   loc: str | None = None) -> Value:
        """`append` for one output, written out (the backward's copy of a cached VJP runs it
        once per instruction it emits): `inputs` a tuple; returns the output value."""
        out = _new(Value)
        out.type, out.id = out_type, next(_ids)
        ins = _new(Instr)
        ins.op, ins.inputs, ins.outputs, ins.attrs, ins.loc = op, inputs, (out,), attrs, loc
        self.program.instrs.append(ins)
        return out

