"""The backward programs of compiled calls, kept by the structure of what they differentiate.

A compiled call whose outputs require grad emits the backward program of its traced forward
(reverse mode, sums of fan-out, CSE and DCE) before it returns. Traced again on every call,
a forward of the same structure gives the same backward: this cache keeps it, keyed by the
differentiated instructions (ops, attributes, wiring and types), which outputs it starts from
and which values it differentiates. A hit hands out the same backward Program (its inputs:
the cotangents, then the forward values it reads, bound by position) and says which of this
call's values those saved ones are. Only the plain case is kept (see compile._finish): no
in-place rewrites of saved memory, no values held in turn by one tensor, no grafts.
"""
from __future__ import annotations

from fusegrad.ir import OPS
from fusegrad.ir.ops.registry import OPAQUE

from .stats import register_clearer

MAX_ENTRIES = 512
_PROGRAMS: dict = {}
HITS = [0]                      # programs handed out again (for tests and explain)


def backward_key(instrs: list, out_values: list, wrt: list):
    """(key, values) for the backward of `instrs` from `out_values` to `wrt`; `values` lists
    this trace's values by the slot the key gives them (a saved value is named by its slot).
    None where an instruction's attributes cannot be keyed by value (an opaque call's)."""
    slot: dict = {}
    values: list = []
    items: list = []

    def slot_of(v) -> int:
        s = slot.get(v.id)
        if s is None:           # a value the instructions read and do not make, first seen here
            s = slot[v.id] = len(values)
            values.append(v)
            items.append(v.type)
        return s
    for ins in instrs:
        if OPS[ins.op].group == OPAQUE:
            return None
        wiring = tuple([slot_of(v) for v in ins.inputs])
        for v in ins.outputs:
            slot[v.id] = len(values)
            values.append(v)
        items.append((ins.op, ins.attrs, wiring, tuple([v.type for v in ins.outputs])))
    items.append(tuple([slot_of(v) for v in out_values]))
    items.append(tuple([slot_of(v) for v in wrt]))
    key = tuple(items)
    try:
        hash(key)
    except TypeError:
        return None
    return key, values


def lookup(key):
    """(program, saved slots, which gradients are present) kept for `key`, or None."""
    found = _PROGRAMS.get(key)
    if found is not None:
        HITS[0] += 1
    return found


def entries() -> int:
    """How many backward programs are kept."""
    return len(_PROGRAMS)


def keep(key, program, saved: list, values: list, present: list) -> None:
    """Keep a backward `program` (reading the forward values `saved`) for `key`, whose
    trace's values by slot are `values`."""
    slots = {v.id: k for k, v in enumerate(values)}
    if any(v.id not in slots for v in saved):
        return                  # (reads a value outside the differentiated instructions: not kept)
    if len(_PROGRAMS) >= MAX_ENTRIES:
        _PROGRAMS.clear()
    _PROGRAMS[key] = (program, tuple(slots[v.id] for v in saved), tuple(present))


def clear() -> None:
    """Forget every kept backward program (fg.clear_caches)."""
    _PROGRAMS.clear()
    HITS[0] = 0


register_clearer(clear)
