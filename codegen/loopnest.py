"""The loop structure of a kernel and the rules that make a fusion legal.

A kernel loops over an iteration space S (a shape). Its *row axes* A (maybe
none) are reduced dims that come after every kept dim; the other dims are
its *outer* dims. The loop nest is:

    for each outer index (the first outer loop is the parallel one):
        phase 0: inner loops over A  - row reductions of stage 0, values stored
        phase 1: inner loops over A  - reductions that read a stage-0 result ...
        ...
    then, after the whole nest, one epilogue loop nest per group of tail reductions

- A *row reduction* reduces exactly A of a value over S. It is computed in
  phase k, where k is the number of row reductions chained before it, and
  its result can then be read by anything in a later phase (softmax: max in
  phase 0, sum of exp(x - max) in phase 1, the output written in phase 2),
  so values that consume a reduction's result need no extra pass.
- A *tail reduction* has any other axes (a sum over the batch axis, a mean
  of per-row losses): wherever its operand is computed it accumulates into
  an array over its kept dims, and its result exists only after the nest,
  in the epilogue nest over its kept dims, where values that read it are
  computed and stored. Tail reductions over the parallel loop's dim
  accumulate per block of that dim and are combined after the nest. A value
  stored in an epilogue is indexed by that epilogue's kept dims only (`c *
  total`, over the columns, is not stored in the total's epilogue, which
  loops over nothing: it gets a kernel of its own).

`analyse` checks a set of fused instructions against these rules (a
reduction's result can be read only at the index where it is computed; a
stored value must have the full, outer or a tail's shape) and describes the
result. The scheduler calls it to decide whether a fusion is legal, the
source generator to lay out the loops.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import dataclass

from fusegrad.ir.ops import OPS, REDUCE

from .indexing import canonical, identity, index_dims, operand_index, reduction_home

POINTWISE, ROW, COLUMN = "pointwise", "row", "column"
EPILOGUE = 1 << 30          # depth of a value that needs a tail reduction's result


class NotFusable(Exception):
    """A proposed kernel breaks a rule; the message says which (for explain)."""


@contextmanager
def recursion_room(instructions: int):
    """Let the recursive walks over a program of `instructions` instructions recurse
    as deep as its longest chain (Python-to-Python calls use no C stack in 3.11+)."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 8 * instructions + 1000))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def live_dims(space: tuple) -> list:
    """Dims of the space that get a loop (size-1 dims always read index 0)."""
    return [d for d, s in enumerate(space) if s != 1]


def row_axes_ok(space: tuple, axes) -> bool:
    """Can `axes` be a kernel's row axes (every reduced dim after every kept dim)?"""
    live = live_dims(space)
    kept = [d for d in live if d not in axes]
    red = [d for d in live if d in axes]
    return not kept or not red or max(kept) < min(red)


def outer_shapes(space: tuple, axes: tuple) -> tuple:
    """(kept shape, kept shape with size-1 reduced dims): shapes of a row reduction's result."""
    return (tuple(s for d, s in enumerate(space) if d not in axes),
            tuple(1 if d in axes else s for d, s in enumerate(space)))


def is_reduction(ins) -> bool:
    """Is instruction `ins` a reduction (an op of the REDUCE group)?"""
    return OPS[ins.op].group == REDUCE


def reductions_of(instrs) -> list:
    """The reductions among `instrs`, in their order."""
    return [ins for ins in instrs if is_reduction(ins)]


@dataclass
class Tail:
    """A tail reduction: where its operand is read, where its result lives."""
    instr: object
    level: int            # phase whose loop computes its operand (full) / after which it is ready (outer)
    full: bool            # operand read inside the inner loops (else at the outer level)
    in_index: tuple       # index of the operand
    kept: tuple           # kernel dims its accumulator is indexed by (its epilogue's loops)
    out_index: tuple      # index of the result in the epilogue


@dataclass
class Store:
    """A value the kernel writes. kind "full": shape S, written in the inner loop of
    `phase`; "outer": a row reduction's shape, written once `phase` is done (-1:
    before phase 0); "epilogue": written in the epilogue nest over `kept`."""
    value: object
    kind: str
    index: tuple
    phase: int = 0
    kept: tuple = ()


@dataclass
class Analysis:
    """What `analyse` found for a legal kernel: its layout, each reduction's phase, each stored value's place."""
    layout: str
    stages: dict          # id(row reduction) -> its phase
    tails: dict           # id(tail reduction) -> Tail
    stores: list          # Store per stored value, in the order given
    phases: int           # number of phases of the main nest


class LoopNest:
    """The rules above for one kernel over `space` with row axes `axes`.

    computed(value) -> the instruction computing it inside the kernel, or
    None for a value the kernel loads from memory. Results are memoised, so
    the scheduler can keep a LoopNest while a kernel grows and check each new
    instruction in time proportional to what it adds (`admit`); any method
    raises NotFusable when the kernel would break a rule.
    """

    def __init__(self, space: tuple, axes: tuple, computed):
        self.space = space
        self.axes = tuple(axes)
        self.computed = computed
        self.outer = [d for d in live_dims(space) if d not in self.axes]
        if self.axes and not row_axes_ok(space, self.axes):
            raise NotFusable(f"row axes {self.axes} of {list(space)} are not the trailing dims")
        self.kept, self.kept_keepdim = outer_shapes(space, self.axes) if self.axes else (None, None)
        self.memo: dict = {}
        self.stages: dict = {}      # id(row reduction) -> phase
        self.tails: dict = {}       # id(tail reduction) -> Tail
        self._busy: set = set()

    # -------------------------------------------------------------- queries
    def admit(self, ins, roots) -> None:
        """Check a new member `ins` (a reduction gets its phase) and the stored values `roots`."""
        if is_reduction(ins):
            self.stage(ins)
        for v in roots:
            self.store(v)

    def analysis(self, roots, reductions) -> Analysis:
        """The whole kernel: every reduction's phase and every stored value's place."""
        for red in reductions:
            self.stage(red)
        stores = [self.store(v) for v in roots]
        phases = max([s + 1 for s in self.stages.values()] + [t.level + 1 for t in self.tails.values() if t.full] +
                     [s.phase + 1 for s in stores if s.kind == "full"] + [1])
        lay = ROW if self.axes else (COLUMN if self.tails else POINTWISE)
        return Analysis(lay, dict(self.stages), dict(self.tails), stores, phases)

    # -------------------------------------------------------------- rules
    def _is_row(self, red) -> bool:
        return bool(self.axes) and red.inputs[0].shape == self.space and \
            tuple(dict(red.attrs)["axes"]) == self.axes

    def _outer_index(self, shape) -> tuple:
        """Index of a value with a row reduction's result shape, at the current outer index."""
        return reduction_home(self.space, self.axes, shape, len(shape) == len(self.space))

    def stage(self, red):
        """A row reduction's phase, or a tail reduction's Tail record."""
        key = id(red)
        if key in self.stages:
            return self.stages[key]
        if key in self.tails:
            return self.tails[key]
        if key in self._busy:
            raise NotFusable("a reduction reads its own result")
        self._busy.add(key)
        try:
            return self._place_reduction(red)
        finally:
            self._busy.discard(key)

    def _place_reduction(self, red):
        a = dict(red.attrs)
        operand = red.inputs[0]
        if self._is_row(red):
            d, group = self.depth(operand, identity(self.space))
            if group is not None:
                raise NotFusable(f"{red.op} reads a tail reduction's result, which exists only after the loops")
            self.stages[id(red)] = d
            return d
        if operand.shape == self.space:
            full, index = True, identity(self.space)
        elif self.axes and operand.shape in (self.kept, self.kept_keepdim):
            full, index = False, self._outer_index(operand.shape)
        else:
            raise NotFusable(f"{red.op} of a {list(operand.shape)} value cannot run inside a kernel over "
                             f"{list(self.space)}" + (f" with row axes {self.axes}" if self.axes else ""))
        if not self.outer:
            raise NotFusable(f"{red.op} over axes {a['axes']} would need another loop nest in a kernel that "
                             "reduces everything to one value")
        d, group = self.depth(operand, index)
        if group is not None:
            raise NotFusable(f"{red.op} reads a tail reduction's result, which exists only after the loops")
        kept_dims = tuple(i for j, i in enumerate(index) if i is not None and j not in a["axes"])
        if a["keepdim"]:
            out = tuple(None if j in a["axes"] else i for j, i in enumerate(index))
        else:
            out = tuple(i for j, i in enumerate(index) if j not in a["axes"])
        tail = Tail(red, d if full else d - 1, full, index, kept_dims, canonical(out, red.outputs[0].shape))
        self.tails[id(red)] = tail
        return tail

    def depth(self, v, index) -> tuple:
        """(1 + the latest phase whose row reduction reading v at `index` needs (0: none),
        or EPILOGUE; the kept dims of the tail reductions it needs, or None)."""
        key = (v.id, index)
        result = self.memo.get(key)
        if result is not None:
            return result
        ins = self.computed(v)
        if ins is None:
            result = (0, None)
        elif is_reduction(ins):
            info = self.stage(ins)
            if isinstance(info, Tail):
                if index != info.out_index:
                    raise NotFusable(f"the result of {ins.op} would be read at another index than the one "
                                     "its epilogue computes")
                result = (EPILOGUE, info.kept)
            else:
                home = reduction_home(self.space, self.axes, v.shape, dict(ins.attrs)["keepdim"])
                if index != home:
                    raise NotFusable(f"the result of {ins.op} would be read at another index than the one "
                                     "at which the kernel computes it")
                result = (info + 1, None)
        else:
            level, group = 0, None
            for k, u in enumerate(ins.inputs):
                d, g = self.depth(u, operand_index(ins, index, k))
                if g is not None and group is not None and g != group:
                    raise NotFusable("a value reads tail reductions that finish in different epilogues")
                level, group = max(level, d), (g if g is not None else group)
            result = (level, group)
        self.memo[key] = result
        return result

    def store(self, v) -> Store:
        """Where stored value `v` is written (the first of its candidate places that works)."""
        candidates = []
        if v.shape == self.space:
            candidates.append(("full", identity(self.space)))
        if self.axes and v.shape in (self.kept, self.kept_keepdim):
            candidates.append(("outer", self._outer_index(v.shape)))
        for t in self.tails.values():
            if t.instr.outputs[0].shape == v.shape and ("epilogue", t.out_index) not in candidates:
                candidates.append(("epilogue", t.out_index))
        why = None
        for kind, index in candidates:
            try:
                d, group = self.depth(v, index)
            except NotFusable as exc:
                why = exc
                continue
            if kind == "epilogue" and group is not None:
                if not set(index_dims(index)) <= set(group):
                    # (v reads a tail reduction finished over fewer dims than v has: bu[i1] * a
                    # total sum is not written in the total's epilogue, which loops over nothing)
                    why = NotFusable(f"a value of shape {list(v.shape)} reads a reduction whose epilogue loops "
                                     f"over fewer dims")
                    continue
                return Store(v, kind, index, kept=group)
            if kind != "epilogue" and group is None:
                return Store(v, kind, index, d if kind == "full" else d - 1)
        if why is not None:
            raise why
        raise NotFusable(f"a value of shape {list(v.shape)} is needed outside the kernel, but the kernel loops "
                         f"over {list(self.space)}" + (f" reducing axes {self.axes}" if self.axes else ""))


def analyse(space: tuple, axes: tuple, computed, roots, reductions=()) -> Analysis:
    """Check a kernel over `space` with row axes `axes` and describe its loops
    (LoopNest's rules; raises NotFusable when the kernel breaks one)."""
    return LoopNest(space, axes, computed).analysis(roots, reductions)
