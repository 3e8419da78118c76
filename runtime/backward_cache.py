"""The backward programs of compiled calls, kept by the structure of what they differentiate.

A compiled call whose outputs require grad emits the backward program of its traced forward
(reverse mode, sums of fan-out, CSE and DCE) before it returns. Traced again on every call,
a forward of the same structure gives the same backward: this cache keeps it, keyed by the
differentiated instructions (ir/backward_templates.structure_key: ops, attributes, wiring and
types, which outputs it starts from and which values it differentiates). A hit hands out the
same backward Program (its inputs: the cotangents, then the forward values it reads, bound by
position) and says which of this call's values those saved ones are. Only the plain case is
kept (see compile._finish): no in-place rewrites of saved memory, no values held in turn by one
tensor, no grafts.
"""
from __future__ import annotations

from fusegrad.ir.backward_templates import GRADIENT_TEMPLATES, TemplateCache

from .stats import register_clearer

PROGRAMS = TemplateCache()

# (the tracer's templates of a backward() inside a call are emptied with these)
register_clearer(PROGRAMS.clear)
register_clearer(GRADIENT_TEMPLATES.clear)


def lookup(key):
    """(program, saved slots, which gradients are present, check ranks, the saved values only
    checked: BackwardFn.unread_reach) kept for `key`, or None."""
    return PROGRAMS.get(key)


def keep(key, program, saved: list, values: list, present: list, ranks: tuple, unread: tuple) -> None:
    """Keep a backward `program` (reading the forward values `saved`, met by a backward in the
    order of `ranks`: BackwardFn.check_ranks) for `key`, whose trace's values by slot are
    `values`."""
    slots = {v.id: k for k, v in enumerate(values)}
    if any(v.id not in slots for v in saved):
        return                  # (reads a value outside the differentiated instructions: not kept)
    PROGRAMS.put(key, (program, tuple(slots[v.id] for v in saved), tuple(present), ranks, unread))
