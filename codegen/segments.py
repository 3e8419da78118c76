"""Index-set splitting: the innermost loop of a kernel cut at cat's seams.

`cat([x, y], dim=-1)` fused into a kernel reads, at every position of the innermost
loop, x through a clamped index and y through a shifted, clamped one, and selects
between them by comparing the position with x's width (ir/ops/movement.py: `pad_edge`,
`where(iota < k, ...)`). The clamps make each load's address a non-affine function of
the loop variable, so LLVM cannot vectorise the loop: a tanh over a [4096, 1024] cat of
two halves took 49 ms in one thread, one vectorised loop per half 7.2 ms. The same
selects come from `t[:, 2:5] = v` (index_put) and the other cat-like ops.

So the generator cuts the innermost loop into segments at the positions where a clamp
starts or stops acting and where a comparison of the position with a constant changes
its answer, and renders the loop body once per segment, knowing the range of positions
it runs over: a clamp that cannot act there is written as a plain shift
(`a1[i0, i1 - c0]`), one that always acts as its bound, a comparison whose answer is the
same over the segment as that answer, and a select with a known condition as the
operand it picks. Each segment's body is then a straight-line, affine loop.

The segment bounds are kernel arguments (cat's offsets change with the batch size), but
their order is decided from this program's values and written into the source; the
kernel cache keys kernels by their source, so a program whose seams fall in another
order gets a kernel of its own. At most MAX_SEGMENTS segments (each one is another copy
of the loop body to compile); beyond that the loop stays whole. Slices make seams too: the
gradient of `x[:, 2:] - 2 * x[:, 1:-1] + x[:, :-2]` adds three slice-gradients, each a
select over a clamped shift, in 5 segments (its kernel, [4096, 1024]: 5.1 -> 2.2 ms serially).

What is known over a segment is computed from the op table: a constant's value,
`iota`'s position (OpDef.extra["position_along"]), elementwise ops of known operands by
their NumPy reference, monotone comparisons (extra["monotone"]) of one position range
with constants from the answers at the range's two ends, and selects
(extra["select"]) with a known condition.
"""
from __future__ import annotations

import numpy as np

from fusegrad.ir.ops import ELEMENTWISE, MOVEMENT, OPS, SOURCE
from fusegrad.ir.ops.movement import Clamped

from .indexing import operand_index

MAX_SEGMENTS = 8


class Segment:
    """Positions lo .. hi - 1 of loop dim `dim` (this program's values)."""
    __slots__ = ("dim", "lo", "hi")

    def __init__(self, dim: int, lo: int, hi: int):
        self.dim, self.lo, self.hi = dim, lo, hi


def interval(entry, segment: Segment):
    """(lowest, highest) value of index entry `entry` (a loop dim, None for 0, or a Clamped)
    over `segment`, or None where it is not known (another loop's variable, a strided
    slice's clamp). A Clamped entry is a clamp of its source, so monotone in the position."""
    if entry is None:
        return (0, 0)
    if type(entry) is int:
        return (segment.lo, segment.hi - 1) if entry == segment.dim else None
    if entry.step != 1:
        return None
    source = interval(entry.source, segment)
    if source is None:
        return None

    def clamp(x):
        x = max(x - entry.offset, 0)
        return x if entry.high is None else min(x, entry.high)
    return clamp(source[0]), clamp(source[1])


def clamp_over(entry: Clamped, segment: Segment) -> str | None:
    """How Clamped `entry` reads over `segment`: "shift" where no clamp acts (its source
    minus the offset), "low" where it reads element 0 throughout, "high" where it reads
    its upper bound throughout; None where that is not known or the clamp acts over part
    of the segment."""
    source = interval(entry.source, segment) if entry.step == 1 else None
    if source is None:
        return None
    low, high = source
    if low >= entry.offset and (entry.high is None or high <= entry.offset + entry.high):
        return "shift"
    if high <= entry.offset:
        return "low"
    if entry.high is not None and low >= entry.offset + entry.high:
        return "high"
    return None


def clamp_seams(entry, dim: int) -> list:
    """The positions of loop dim `dim` where Clamped `entry` (or a clamp it reads through)
    starts or stops clamping. Extra or missing positions cost speed, never correctness:
    each segment's body is rendered from what is known over it (clamp_over, Knowledge)."""
    if not isinstance(entry, Clamped) or entry.step != 1:
        return []
    seams = clamp_seams(entry.source, dim)
    for value in [entry.offset] + ([entry.offset + entry.high + 1] if entry.high is not None else []):
        position = _position_of(entry.source, value, dim)
        if position is not None:
            seams.append(position)
    return seams


def _position_of(entry, value: int, dim: int):
    """The first position of loop dim `dim` at which index entry `entry` reads `value`, or None."""
    if type(entry) is int:
        return value if entry == dim else None
    if not isinstance(entry, Clamped) or entry.step != 1 or value < 0 or \
            (entry.high is not None and value > entry.high):
        return None
    return _position_of(entry.source, value + entry.offset, dim)


class Knowledge:
    """What the values of one kernel are over a segment of its innermost loop:
    ("c", value) for a constant, ("i", lo, hi) for the loop position itself (lo..hi
    inclusive), None where nothing is known. Keyed by (value id, index), as the
    generator's expressions are."""

    def __init__(self, producer: dict):
        self.producer = producer
        self.segment: Segment | None = None
        self.memo: dict = {}

    def over(self, segment: Segment | None) -> None:
        """Answer for `segment` from now on (None: nothing is known)."""
        self.segment, self.memo = segment, {}

    def value(self, v, index):
        if self.segment is None:
            return None
        key = (v.id, index)
        if key not in self.memo:
            self.memo[key] = self._value(v, index)
        return self.memo[key]

    def _value(self, v, index):
        ins = self.producer.get(v.id)
        if ins is None:
            return None                 # an operand loaded from memory
        opdef, attrs = OPS[ins.op], dict(ins.attrs)
        if opdef.group == MOVEMENT:
            if opdef.index_map is None:
                return None
            return self.value(ins.inputs[0], operand_index(ins, index, 0))
        if opdef.group == SOURCE:
            along = opdef.extra.get("position_along")
            if along is not None:
                span = interval(index[attrs[along]] if index else None, self.segment)
                if span is None:
                    return None
                return ("c", span[0]) if span[0] == span[1] else ("i",) + span
            return ("c", attrs["value"]) if "value" in attrs else None
        if opdef.group != ELEMENTWISE:
            return None
        known = [self.value(u, operand_index(ins, index, k)) for k, u in enumerate(ins.inputs)]
        if opdef.extra.get("select") and known[0] is not None and known[0][0] == "c":
            return known[1 if known[0][1] else 2]
        if any(k is None for k in known):
            return None
        ranges = [k for k in known if k[0] == "i"]
        if not ranges:
            return ("c", _evaluate(opdef, ins, [k[1] for k in known]))
        if len(ranges) == 1 and opdef.extra.get("monotone"):
            # (monotone in its one varying operand: the same answer at both ends holds between)
            ends = [_evaluate(opdef, ins, [k[end] if k[0] == "i" else k[1] for k in known]) for end in (1, 2)]
            if ends[0] == ends[1]:
                return ("c", ends[0])
        return None

    def seams(self, v, index, dim: int, size: int) -> list:
        """The position of loop dim `dim` (0 .. size - 1) where monotone comparison `v`
        changes its answer, as a one-item list (empty where it does not change or its
        answer is not known position by position)."""
        saved = self.segment, self.memo
        try:
            def answer(position):
                self.over(Segment(dim, position, position + 1))
                known = self.value(v, index)
                return None if known is None or known[0] != "c" else known[1]
            first, last = answer(0), answer(size - 1)
            if first is None or last is None or first == last:
                return []
            lo, hi = 0, size - 1        # answer(lo) != last == answer(hi): bisect for the change
            while hi - lo > 1:
                mid = (lo + hi) // 2
                at = answer(mid)
                if at is None:
                    return []
                lo, hi = (mid, hi) if at != last else (lo, mid)
            return [hi]
        finally:
            self.segment, self.memo = saved


def _evaluate(opdef, ins, values):
    """The op's NumPy reference on scalar operands of its input dtypes, as a Python scalar."""
    operands = [np.asarray(x, dtype=u.dtype.np) for x, u in zip(values, ins.inputs)]
    with np.errstate(all="ignore"):
        return np.asarray(opdef.ref(*operands, **dict(ins.attrs))).item()


def plan(seams: list, size: int) -> list | None:
    """The segments of positions 0 .. size - 1 cut at `seams` (positions), as (lo, hi) pairs
    (hi exclusive), or None where there is nothing to cut or too much (MAX_SEGMENTS)."""
    cuts = sorted({p for p in seams if 0 < p < size})
    if not cuts or len(cuts) + 1 > MAX_SEGMENTS:
        return None
    bounds = [0] + cuts + [size]
    return list(zip(bounds, bounds[1:]))
