"""Sink permutes past elementwise ops and reductions, so loops run in memory order.

`permute` is index arithmetic: a kernel that reads `x.permute(2, 0, 1)` reads x with
its contiguous axis crossed by the innermost loop, one cache line (and, for long rows,
one page) per element, and without vectorising. Elementwise ops commute with a
permute, and a reduction of a permuted value is a permute of the reduction over the
corresponding axes, so

    y = exp(permute(x, D)) * 2;  s = sum(y)            (loops over permuted x)
becomes
    z = exp(x) * 2;  y = permute(z, D);  s = sum(z)    (loops over x as laid out)

which is what torch's TensorIterator achieves by ordering its loops by strides: the
result of `x.t() * 2` is a transposed view of a contiguous buffer, as torch's is.
Measured on W1's chain with its backward on `x.permute(2, 0, 1)` of a [64, 64, 1024]
float32 x: 85 ms before, about as fast as on x itself after.

The pass is conservative: a permuted value flows on only through ops whose other
operands need no transposed read (the same permute, 0-d values, broadcasts of a
single element); any other reader gets the permute back, emitted just before it, so
no program reads more transposed memory than before. A permute a reader needs is
emitted once; a value the program returns is returned as the permute (a NumPy view),
except a reduction's result (and what is computed from it), which torch lays out
contiguously: that is copied (a `cast` to its own dtype).
"""
from __future__ import annotations

from .ops import OPS
from .ops.registry import ELEMENTWISE, REDUCE
from .program import Builder, Instr, Program

MAX_CONE = 8        # instructions _unpermuted_cone recomputes for one operand


def sink_permutes(program: Program) -> Program:
    """`program` with permutes moved past elementwise ops and reductions (see the module doc)."""
    if not any(ins.op == "permute" for ins in program.instrs):
        return program
    return _Sinker(program).run()


def _inverse(dims: tuple) -> tuple:
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    return tuple(inv)


def _broadcasts_to(shape: tuple, full: tuple) -> bool:
    """Is `shape` `full` itself, or `full` with some sizes 1 (the same rank)?"""
    return len(shape) == len(full) and all(s == n or s == 1 for s, n in zip(shape, full))


def _unpermuted_shape(shape: tuple, dims: tuple) -> tuple:
    """The shape s with permute(s, dims).shape == shape."""
    return tuple(shape[i] for i in _inverse(dims))


class _Sinker:
    def __init__(self, program: Program):
        self.source = program
        self.out = Program(program.inputs, [], [])
        self.builder = Builder(self.out)
        self.alias: dict = {}          # value id -> the value standing for it in `out`
        # value id -> (value in `out`, dims, dense): it is permute(value, dims); `dense` when torch
        # lays it out contiguously (a reduction's result and elementwise ops on it), where a
        # permute's elementwise results keep the permuted layout (TensorIterator's rule)
        self.lazy: dict = {}
        self.made: dict = {}           # value id -> its permute, once a reader needed it
        self.producer: dict = {}       # value id in `out` -> its instruction there

    def run(self) -> Program:
        for ins in self.source.instrs:
            if not self._sink(ins):
                self._copy(ins)
        self.out.outputs = [self._output(v) for v in self.source.outputs]
        return self.out

    # -------------------------------------------------------------- values
    def _value(self, v):
        """The value `v` stands for in the new program, emitting its permute if it is lazy."""
        if v.id in self.lazy:
            made = self.made.get(v.id)
            if made is None:
                src, dims, _ = self.lazy[v.id]
                made = self.made[v.id] = self._emit("permute", (src,), {"dims": dims}, None)
                assert made.type == v.type, (made.type, v.type)
            return made
        return self.alias.get(v.id, v)

    def _output(self, v):
        """A program output: as `_value`, and laid out contiguously where torch's would be
        (a copy: the permute alone would return a strided view)."""
        made = self._value(v)
        if v.id in self.lazy and self.lazy[v.id][2]:
            made = self._emit("cast", (made,), {"dtype": made.dtype}, None)
        return made

    def _emit(self, op, inputs, attrs, loc):
        out = self.builder.emit(op, *inputs, loc=loc, **attrs)
        self.producer[out.id] = self.out.instrs[-1]
        return out

    def _copy(self, ins) -> None:
        inputs = tuple(self._value(v) for v in ins.inputs)
        if inputs != ins.inputs:
            ins = Instr(ins.op, inputs, ins.outputs, ins.attrs, ins.loc)
        self.out.instrs.append(ins)
        for v in ins.outputs:
            self.producer[v.id] = ins

    # -------------------------------------------------------------- rules
    def _sink(self, ins) -> bool:
        """Record `ins` with its permute moved past it; False to copy it as it is."""
        opdef = OPS[ins.op]
        if len(ins.outputs) != 1:
            return False
        if ins.op == "permute":
            return self._permute(ins)
        if opdef.group == ELEMENTWISE:
            return self._elementwise(ins)
        if opdef.group == REDUCE and opdef.expr is not None and set(dict(ins.attrs)) == {"axes", "keepdim"}:
            return self._reduce(ins)
        return False

    def _permute(self, ins) -> bool:
        (x,), (y,) = ins.inputs, ins.outputs
        dims = dict(ins.attrs)["dims"]
        if x.id in self.lazy:
            src, inner, dense = self.lazy[x.id]
            if dense:
                return False        # torch's result: a view of contiguous memory (keep it so)
            dims = tuple(inner[d] for d in dims)
        else:
            src = self.alias.get(x.id, x)
        if dims == tuple(range(len(dims))):
            self.alias[y.id] = src
        else:
            self.lazy[y.id] = (src, dims, False)
        return True

    def _elementwise(self, ins) -> bool:
        lazy = [self.lazy[v.id] for v in ins.inputs if v.id in self.lazy]
        if not lazy:
            return False
        (y,) = ins.outputs
        dims = lazy[0][1]
        # torch lays the result out as its operands of the result's full shape (a broadcast
        # operand, a reduction's [n, 1] with keepdim, has no say: its stride there is 0)
        full = [self.lazy[v.id][2] for v in ins.inputs if v.id in self.lazy and v.shape == y.shape]
        dense = full[0] if full else lazy[0][2]
        inputs = []
        for v in ins.inputs:
            if v.id in self.lazy:
                src, d, _ = self.lazy[v.id]
                # (one permuted the same way and broadcast the same way in the unpermuted loops:
                # `x.t() - x.t().amax(1, keepdim=True)`, a softmax of a transposed argument)
                if d != dims or not _broadcasts_to(v.shape, y.shape):
                    return False
                inputs.append(src)
                continue
            moved = self._unpermuted_cone(self.alias.get(v.id, v), dims, [MAX_CONE])
            if moved is None:
                return False
            inputs.append(moved)
        mark = len(self.out.instrs)
        result = self._emit(ins.op, inputs, dict(ins.attrs), ins.loc)
        if result.type.shape != _unpermuted_shape(y.shape, dims) or result.type.dtype is not y.dtype:
            del self.out.instrs[mark:]          # not the op we expected: keep the original
            return False
        self.lazy[y.id] = (result, dims, dense)
        return True

    def _unpermuted_cone(self, v, dims, budget: list):
        """An operand standing for `v` in the unpermuted loops (a value u with permute(u, dims)
        == v), where that reads no memory across: a 0-d value as it is, a single element
        broadcast (`expand` of a value of ones) broadcast to the unpermuted shape, a value
        whose permute moves only size-1 dims (a reshape), and elementwise ops and expands of
        such values, at most MAX_CONE instructions (`budget`). A mean's gradient over a
        permuted axis is such a cone (`expand(reshape(m, [a, b, 1])) / n` read beside
        `permute(k)`): recomputed, the backward runs in memory order instead of copying its
        operands across. None otherwise."""
        if v.type.ndim == 0:
            return v
        if v.type.ndim != len(dims):
            return None
        shape = _unpermuted_shape(v.shape, dims)
        if v.id in self.lazy:
            src, d, _ = self.lazy[v.id]
            return src if d == dims else None
        ins = self.producer.get(v.id)
        if ins is not None and ins.op == "expand" and all(n == 1 for n in ins.inputs[0].shape):
            single = ins.inputs[0]
            if single.type.ndim > len(shape):
                # (an expand's source may have more dims of size 1 than the value: the value of an
                # in-place write through `v.T[None]` is the expand of a [1, 1, 1] to [1, 1])
                single = self._emit("reshape", (single,), {"shape": (1,) * len(shape)}, None)
            return single if single.shape == shape else self._emit("expand", (single,), {"shape": shape}, None)
        moved = [dims[i] for i, n in enumerate(v.shape) if n != 1]
        if moved == sorted(moved):      # (only size-1 dims move: the same memory order)
            return v if shape == v.shape else self._emit("reshape", (v,), {"shape": shape}, None)
        if ins is None or budget[0] <= 0 or len(ins.outputs) != 1:
            return None
        budget[0] -= 1
        if ins.op == "expand":
            source = ins.inputs[0]
            if source.type.ndim != len(dims):
                return None
            inner = self._unpermuted_cone(source, dims, budget)
            return None if inner is None else self._emit("expand", (inner,), {"shape": shape}, None)
        if OPS[ins.op].group != ELEMENTWISE:
            return None
        inputs = []
        for u in ins.inputs:
            inner = self._unpermuted_cone(u, dims, budget) if u.type.ndim else u
            if inner is None:
                return None
            inputs.append(inner)
        result = self._emit(ins.op, inputs, dict(ins.attrs), ins.loc)
        return result if result.type.shape == shape and result.type.dtype is v.dtype else None

    def _reduce(self, ins) -> bool:
        (x,), (y,) = ins.inputs, ins.outputs
        if x.id not in self.lazy:
            return False
        src, dims, _ = self.lazy[x.id]
        attrs = dict(ins.attrs)
        n = len(dims)
        axes = tuple(sorted({dims[a % n] for a in attrs["axes"]}))
        reduced = self._emit(ins.op, (src,), {"axes": axes, "keepdim": attrs["keepdim"]}, ins.loc)
        if attrs["keepdim"]:
            order = dims
        else:
            kept = [d for d in range(n) if d not in axes]            # reduced's axes, in src order
            order = tuple(kept.index(dims[i]) for i in range(n) if dims[i] not in axes)
        if order == tuple(range(len(order))):
            self.alias[y.id] = reduced
        else:
            self.lazy[y.id] = (reduced, order, True)
        return True
