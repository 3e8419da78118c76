"""The loop structure of a kernel and the rules that make a fusion legal.

A kernel loops over an iteration space S; a reduction kernel also has
reduction axes A, and its *outer* dims are the others. Three layouts:

pointwise  no reduction: one loop nest over S; each stored value is written
           in the innermost loop.
row        every reduced dim comes after every kept dim: the outer loops run
           over the kept dims, and inside them one or more *phases*, each an
           inner loop nest over the reduced dims. A reduction is computed in
           phase k where k is the number of reductions chained before it
           (softmax: max in phase 0, sum of exp(x - max) in phase 1, the
           normalised output written in phase 2), so values that consume a
           reduction's result join the same kernel instead of another pass.
column     a reduced dim comes before a kept dim (a sum over the batch axis):
           one loop nest over S in memory order accumulating into an array
           over the kept dims, then an epilogue loop over the kept dims.
           Single phase: nothing in the loop may consume a reduction.

`analyse` checks a set of fused instructions against these rules (a
reduction's result can be read only at the outer index where it is
computed; a stored value must have the kernel's full or outer shape) and
returns the phase of every reduction and stored value. The scheduler calls it
to decide whether a fusion is legal; the source generator to lay out loops.
"""
from __future__ import annotations

from dataclasses import dataclass

from fusegrad.ir.ops import OPS, REDUCE

from .indexing import identity, operand_index, reduction_home

POINTWISE, ROW, COLUMN = "pointwise", "row", "column"


class NotFusable(Exception):
    """A proposed kernel breaks a rule; the message says which (for explain)."""


def live_dims(space: tuple) -> list:
    """Dims of the space that get a loop (size-1 dims always read index 0)."""
    return [d for d, s in enumerate(space) if s != 1]


def layout(space: tuple, axes: tuple) -> str:
    if not axes:
        return POINTWISE
    live = live_dims(space)
    outer = [d for d in live if d not in axes]
    inner = [d for d in live if d in axes]
    if not outer or not inner or max(outer) < min(inner):
        return ROW
    return COLUMN


def outer_shapes(space: tuple, axes: tuple) -> tuple:
    """(kept shape, kept shape with size-1 reduced dims): shapes of reduction results."""
    return (tuple(s for d, s in enumerate(space) if d not in axes),
            tuple(1 if d in axes else s for d, s in enumerate(space)))


def is_reduction(ins) -> bool:
    return OPS[ins.op].group == REDUCE


@dataclass
class Store:
    """A value the kernel writes: `full` (shape S, written in the inner loop of
    `phase`) or outer (a reduction's shape, written once `phase` is done; -1
    means before phase 0)."""
    value: object
    full: bool
    index: tuple
    phase: int


@dataclass
class Analysis:
    layout: str
    stages: dict          # id(reduction instr) -> phase in which it is computed
    stores: list          # Store per stored value, in the order given
    phases: int           # number of phases (1 for pointwise)


def analyse(space: tuple, axes: tuple, computed, roots, reductions=()) -> Analysis:
    """Check the kernel and assign phases.

    computed(value) -> the instruction computing it inside the kernel, or
    None for a value the kernel loads from memory. `roots` are the values the
    kernel must store, `reductions` its reduction instructions. Raises
    NotFusable when the kernel breaks a rule.
    """
    lay = layout(space, axes)
    kept, kept_keepdim = outer_shapes(space, axes)
    memo: dict = {}
    stages: dict = {}

    def stage(red) -> int:
        key = id(red)
        if key not in stages:
            if red.inputs[0].shape != space or tuple(dict(red.attrs)["axes"]) != tuple(axes):
                raise NotFusable(f"{red.op} over axes {dict(red.attrs)['axes']} of {list(red.inputs[0].shape)} "
                                 f"does not match the kernel's reduction over axes {axes} of {list(space)}")
            stages[key] = depth(red.inputs[0], identity(space))
            if lay == COLUMN and stages[key] > 0:
                raise NotFusable(f"{red.op} consumes another reduction's result, which a column-layout "
                                 f"kernel (reduction over a leading axis) cannot do in one pass")
        return stages[key]

    def depth(v, index) -> int:
        """1 + the latest phase of a reduction that reading v at `index` needs (0: none)."""
        key = (v.id, index)
        if key in memo:
            return memo[key]
        ins = computed(v)
        if ins is None:
            d = 0
        elif is_reduction(ins):
            a = dict(ins.attrs)
            home = reduction_home(space, tuple(axes), v.shape, a["keepdim"])
            if index != home:
                raise NotFusable(f"the result of {ins.op} would be read at another index than the one "
                                 f"at which the kernel computes it")
            d = stage(ins) + 1
        else:
            d = max((depth(u, operand_index(ins, index, k)) for k, u in enumerate(ins.inputs)), default=0)
        memo[key] = d
        return d

    stores = []
    for v in roots:
        if v.shape == space:
            index = identity(space)
            d = depth(v, index)
            if lay == COLUMN and d > 0:
                raise NotFusable("a value over the full space consumes a reduction's result, which a "
                                 "column-layout kernel cannot do in one pass")
            stores.append(Store(v, True, index, d))
        elif axes and v.shape in (kept, kept_keepdim):
            index = reduction_home(space, tuple(axes), v.shape, v.type.ndim == len(space))
            stores.append(Store(v, False, index, depth(v, index) - 1))
        else:
            raise NotFusable(f"a value of shape {list(v.shape)} is needed outside the kernel, but the kernel "
                             f"loops over {list(space)}" + (f" reducing axes {axes}" if axes else ""))
    for red in reductions:
        stage(red)
    phases = max([s + 1 for s in stages.values()] + [s.phase + 1 for s in stores if s.full] + [1])
    return Analysis(lay, stages, stores, phases)


def reductions_of(instrs) -> list:
    return [ins for ins in instrs if is_reduction(ins)]
