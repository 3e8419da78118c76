"""Masked row reductions that read one element: gathers written as reductions.

The op table has no gather along a dim; decompositions write one as a reduction of a
select against the position along the reduced dim (an `iota`):

    nll_loss's picked log-probability   sum(where(target == i, log_probs, 0))
    nll_loss's per-sample weight        sum(where(target == i, weight, 0))
    max(x, dim)'s values                amax(where(i == index, x, lowest))

At most one element of a row matches (the positions along the dim are distinct), and
the select's other operand is the reduction's identity, so the reduction is that one
element, or the identity when the position lies outside the row. A row kernel reads
the element directly: one load per row at the position, clamped into the row so that
the read is always in bounds, instead of a compare, a select and an accumulation per
element (measured on W3's kernel: ~14% of its serial time). `match` recognises the
pattern; codegen/kernel_source.py builds the element's expression at a `Picked` index.
"""
from __future__ import annotations

from dataclasses import dataclass

from fusegrad.ir.ops import MOVEMENT, OPS, REDUCE, SOURCE
from fusegrad.ir.types import int64

from .indexing import inlinable_movement, operand_index

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


@dataclass(frozen=True, eq=False)
class Picked:
    """Index entry: the element at a computed position, `node` (an expression node of
    the kernel holding an int64 already clamped into the dim's range)."""
    node: object


@dataclass(frozen=True)
class Match:
    """A masked row reduction that reads one element: where its parts are read."""
    position: object               # the int64 value compared with the iota (one per row)
    position_index: tuple
    value: object                  # the value selected at the position
    value_index: tuple
    fallback: object               # the select's other operand: the reduction's identity
    fallback_index: tuple


def match(ins, producer: dict, index: tuple, dim: int) -> Match | None:
    """`ins` (a row reduction over kernel dim `dim`, its operand read at `index`) as a
    Match, or None. `producer`: value id -> the kernel's instruction computing it."""
    combine = OPS[ins.op].expr
    where = producer.get(ins.inputs[0].id)
    if where is None or where.op != "where":
        return None
    cond, value, fallback = where.inputs
    if not _is_identity(_source_through_movement(fallback, producer), combine):
        return None
    eq = producer.get(cond.id)
    if eq is None or eq.op != "eq":
        return None
    eq_index = operand_index(where, index, 0)
    for side in (0, 1):
        if _is_iota_along(eq.inputs[side], operand_index(eq, eq_index, side), dim, producer):
            other = eq.inputs[1 - side]
            if other.dtype is not int64:
                return None
            return Match(other, operand_index(eq, eq_index, 1 - side), value, operand_index(where, index, 1),
                         fallback, operand_index(where, index, 2))
    return None


def cone_is_pickable(value, producer: dict, tails: dict) -> bool:
    """Can `value` be computed at a Picked index? Its cone in the kernel may hold
    elementwise ops, constants, index-map movement ops without shifts, and results of
    row reductions (one per row); not tails, iotas or pad_edge (their index entries
    are loop variables or shifts of them)."""
    stack, seen = [value], set()
    while stack:
        v = stack.pop()
        if v.id in seen:
            continue
        seen.add(v.id)
        ins = producer.get(v.id)
        if ins is None:                 # an operand in memory: a load
            continue
        group = OPS[ins.op].group
        if group == REDUCE:
            if id(ins) in tails:
                return False
            continue                    # a row reduction's result: one value per row
        if group == SOURCE:
            if ins.op != "const":
                return False
            continue
        if group == MOVEMENT and (ins.op == "pad_edge" or not inlinable_movement(ins)):
            return False
        stack.extend(ins.inputs)
    return True


def _is_identity(ins, combine: str) -> bool:
    """Is `ins` a constant equal to the identity of reduction `combine` (add: 0; max: the
    lowest value; min: the highest)?"""
    if ins is None or ins.op != "const":
        return False
    value = dict(ins.attrs)["value"]
    if combine == "add":
        return value == 0
    if combine == "max":
        return value is False or value == float("-inf") or value == _INT64_MIN
    if combine == "min":
        return value is True or value == float("inf") or value == _INT64_MAX
    return False


def _source_through_movement(v, producer: dict):
    """The instruction producing `v` once movement ops (expand, reshape...) are looked through."""
    ins = producer.get(v.id)
    while ins is not None and OPS[ins.op].group == MOVEMENT:
        ins = producer.get(ins.inputs[0].id)
    return ins


def _is_iota_along(v, index: tuple, dim: int, producer: dict) -> bool:
    """Is `v`, read at `index`, the position along kernel dim `dim` (an int64 iota whose
    axis reads that dim's loop variable, through index-map movement ops)?"""
    ins = producer.get(v.id)
    while ins is not None and OPS[ins.op].group == MOVEMENT and inlinable_movement(ins) and ins.op != "pad_edge":
        index = operand_index(ins, index, 0)
        v = ins.inputs[0]
        ins = producer.get(v.id)
    if ins is None or ins.op != "iota":
        return False
    attrs = dict(ins.attrs)
    return attrs["dtype"] is int64 and index[attrs["axis"]] == dim
