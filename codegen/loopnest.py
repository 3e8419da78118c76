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
  accumulate per block of that dim and are combined after the nest.

`analyse` checks a set of fused instructions against these rules (a
reduction's result can be read only at the index where it is computed; a
stored value must have the full, outer or a tail's shape) and describes the
result. The scheduler calls it to decide whether a fusion is legal, the
source generator to lay out the loops.
"""
from __future__ import annotations

from dataclasses import dataclass

from fusegrad.ir.ops import OPS, REDUCE

from .indexing import canonical, identity, operand_index, reduction_home

POINTWISE, ROW, COLUMN = "pointwise", "row", "column"
EPILOGUE = 1 << 30          # depth of a value that needs a tail reduction's result


class NotFusable(Exception):
    """A proposed kernel breaks a rule; the message says which (for explain)."""


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
    return OPS[ins.op].group == REDUCE


def reductions_of(instrs) -> list:
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
    layout: str
    stages: dict          # id(row reduction) -> its phase
    tails: dict           # id(tail reduction) -> Tail
    stores: list          # Store per stored value, in the order given
    phases: int           # number of phases of the main nest


def analyse(space: tuple, axes: tuple, computed, roots, reductions=()) -> Analysis:
    """Check a kernel over `space` with row axes `axes` and describe its loops.

    computed(value) -> the instruction computing it inside the kernel, or
    None for a value the kernel loads from memory. `roots` are the values the
    kernel must store, `reductions` its reduction instructions. Raises
    NotFusable when the kernel breaks a rule.
    """
    axes = tuple(axes)
    live = live_dims(space)
    outer = [d for d in live if d not in axes]
    if axes and not row_axes_ok(space, axes):
        raise NotFusable(f"row axes {axes} of {list(space)} are not the trailing dims")
    kept, kept_keepdim = outer_shapes(space, axes) if axes else (None, None)
    memo: dict = {}
    stages: dict = {}
    tails: dict = {}
    busy: set = set()

    def is_row(red) -> bool:
        return bool(axes) and red.inputs[0].shape == space and tuple(dict(red.attrs)["axes"]) == axes

    def outer_index(shape):
        """Index of a value with a row reduction's result shape, at the current outer index."""
        return reduction_home(space, axes, shape, len(shape) == len(space))

    def stage(red):
        """Row reduction: its phase. Tail reduction: its Tail record."""
        key = id(red)
        if key in stages:
            return stages[key]
        if key in tails:
            return tails[key]
        if key in busy:
            raise NotFusable("a reduction reads its own result")
        busy.add(key)
        a = dict(red.attrs)
        operand = red.inputs[0]
        if is_row(red):
            d, group = depth(operand, identity(space))
            if group is not None:
                raise NotFusable(f"{red.op} reads a tail reduction's result, which exists only after the loops")
            stages[key] = d
            return d
        if operand.shape == space:
            full, index = True, identity(space)
        elif axes and operand.shape in (kept, kept_keepdim):
            full, index = False, outer_index(operand.shape)
        else:
            raise NotFusable(f"{red.op} of a {list(operand.shape)} value cannot run inside a kernel over "
                             f"{list(space)}" + (f" with row axes {axes}" if axes else ""))
        if not outer:
            raise NotFusable(f"{red.op} over axes {a['axes']} would need another loop nest in a kernel that "
                             "reduces everything to one value")
        d, group = depth(operand, index)
        if group is not None:
            raise NotFusable(f"{red.op} reads a tail reduction's result, which exists only after the loops")
        kept_dims = tuple(i for j, i in enumerate(index) if i is not None and j not in a["axes"])
        if a["keepdim"]:
            out = tuple(None if j in a["axes"] else i for j, i in enumerate(index))
        else:
            out = tuple(i for j, i in enumerate(index) if j not in a["axes"])
        tails[key] = Tail(red, d if full else d - 1, full, index, kept_dims,
                          canonical(out, red.outputs[0].shape))
        return tails[key]

    def depth(v, index) -> tuple:
        """(1 + latest phase whose row reduction reading v at `index` needs (0: none),
        or EPILOGUE; the kept dims of the tail reductions it needs, or None)."""
        key = (v.id, index)
        if key in memo:
            return memo[key]
        ins = computed(v)
        if ins is None:
            result = (0, None)
        elif is_reduction(ins):
            info = stage(ins)
            if isinstance(info, Tail):
                if index != info.out_index:
                    raise NotFusable(f"the result of {ins.op} would be read at another index than the one "
                                     "its epilogue computes")
                result = (EPILOGUE, info.kept)
            else:
                home = reduction_home(space, axes, v.shape, dict(ins.attrs)["keepdim"])
                if index != home:
                    raise NotFusable(f"the result of {ins.op} would be read at another index than the one "
                                     "at which the kernel computes it")
                result = (info + 1, None)
        else:
            level, group = 0, None
            for k, u in enumerate(ins.inputs):
                d, g = depth(u, operand_index(ins, index, k))
                if g is not None and group is not None and g != group:
                    raise NotFusable("a value reads tail reductions that finish in different epilogues")
                level, group = max(level, d), (g if g is not None else group)
            result = (level, group)
        memo[key] = result
        return result

    for red in reductions:
        stage(red)

    stores = []
    for v in roots:
        stores.append(_store(v, space, axes, kept, kept_keepdim, tails, depth, outer_index))
    phases = max([s + 1 for s in stages.values()] + [t.level + 1 for t in tails.values() if t.full] +
                 [s.phase + 1 for s in stores if s.kind == "full"] + [1])
    lay = ROW if axes else (COLUMN if tails else POINTWISE)
    return Analysis(lay, stages, tails, stores, phases)


def _store(v, space, axes, kept, kept_keepdim, tails, depth, outer_index) -> Store:
    """Where a stored value is written (the first of its candidate places that works)."""
    candidates = []
    if v.shape == space:
        candidates.append(("full", identity(space)))
    if axes and v.shape in (kept, kept_keepdim):
        candidates.append(("outer", outer_index(v.shape)))
    for t in tails.values():
        if t.instr.outputs[0].shape == v.shape and ("epilogue", t.out_index) not in candidates:
            candidates.append(("epilogue", t.out_index))
    why = None
    for kind, index in candidates:
        try:
            d, group = depth(v, index)
        except NotFusable as exc:
            why = exc
            continue
        if kind == "epilogue" and group is not None:
            return Store(v, kind, index, kept=group)
        if kind != "epilogue" and group is None:
            return Store(v, kind, index, d if kind == "full" else d - 1)
    if why is not None:
        raise why
    raise NotFusable(f"a value of shape {list(v.shape)} is needed outside the kernel, but the kernel loops over "
                     f"{list(space)}" + (f" reducing axes {axes}" if axes else ""))
