"""Backward programs kept by the structure of what they differentiate, and replayed.

Reverse mode over the same instructions (ops, attributes, wiring, types), from the same
outputs to the same values, emits the same instructions every time. A compiled call traces
its function again on every call, so its backward would be emitted again and again: the
callers (runtime/backward_cache.py for a compiled call's backward program, and the tracer's
backward() inside a call) key what they differentiate with `structure_key`, keep what they
emitted as a template of slots, and replay it onto this trace's values.
"""
from __future__ import annotations

from .ops import OPS
from .ops.registry import OPAQUE
from .program import Instr, Value, exact_attrs


def structure_key(instrs: list, outputs: list, wrt: list, seeds: list = ()):
    """(key, values) for a backward of `instrs` from `outputs` (with cotangents `seeds`, when
    they are values of the same program) to `wrt`; `values` lists the values by the slot the
    key gives them. None where an instruction's attributes cannot be keyed by value (an opaque
    call's, or unhashable ones)."""
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
        items.append((ins.op, exact_attrs(ins.attrs), wiring, tuple([v.type for v in ins.outputs])))
    for group in (outputs, seeds, wrt):
        items.append(tuple([slot_of(v) for v in group]))
    key = tuple(items)
    try:
        hash(key)
    except TypeError:
        return None
    return key, values


def template_of(emitted: list, values: list, results: list):
    """The instructions `emitted` (appended after the differentiated ones) and their `results`
    (Values or None) in terms of slots of `values` and of the instructions' own outputs; None
    where one reads a value outside both."""
    ref = {v.id: (0, k) for k, v in enumerate(values)}
    items = []
    for j, ins in enumerate(emitted):
        refs = []
        for v in ins.inputs:
            r = ref.get(v.id)
            if r is None:
                return None
            refs.append(r)
        items.append((ins.op, ins.attrs, tuple(refs), tuple([v.type for v in ins.outputs]), ins.loc))
        for k, v in enumerate(ins.outputs):
            ref[v.id] = (j + 1, k)
    out = []
    for g in results:
        if g is None:
            out.append(None)
        elif g.id in ref:
            out.append(ref[g.id])
        else:
            return None
    return tuple(items), tuple(out)


def replay(template, values: list, instrs: list) -> list:
    """Append `template`'s instructions to `instrs` over this program's `values` (by slot);
    returns its results as this program's Values (or None)."""
    items, out = template
    made = [values]             # made[0]: the slots; made[j + 1]: the j-th instruction's outputs
    for op, attrs, refs, out_types, loc in items:
        outs = tuple([Value(t) for t in out_types])
        instrs.append(Instr(op, tuple([made[r[0]][r[1]] for r in refs]), outs, attrs, loc))
        made.append(outs)
    return [None if r is None else made[r[0]][r[1]] for r in out]


class TemplateCache:
    """A bounded map from structure keys to what was emitted for them."""

    def __init__(self, max_entries: int = 512):
        self.entries: dict = {}
        self.max_entries = max_entries
        self.hits = 0

    def get(self, key):
        """What is kept for `key`, or None."""
        found = self.entries.get(key)
        if found is not None:
            self.hits += 1
        return found

    def put(self, key, entry) -> None:
        """Keep `entry` for `key` (everything is forgotten when the cache is full)."""
        if len(self.entries) >= self.max_entries:
            self.entries.clear()
        self.entries[key] = entry

    def clear(self) -> None:
        """Forget everything (fg.clear_caches)."""
        self.entries.clear()
        self.hits = 0


# The gradients a backward() (or autograd.grad, fg.grad) inside a traced call emits.
GRADIENT_TEMPLATES = TemplateCache()
