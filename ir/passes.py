"""Simplifying passes over programs: each takes a Program and returns one."""
from __future__ import annotations

from .emit import Emitter
from .ops import OPS
from .program import Builder, Instr, Program, exact_attrs


def dead_code_elimination(program: Program) -> Program:
    """Drop instructions none of whose outputs reach a program output."""
    live = {v.id for v in program.outputs}
    kept = []
    for ins in reversed(program.instrs):
        if any(v.id in live for v in ins.outputs):
            kept.append(ins)
            live.update(v.id for v in ins.inputs)
    kept.reverse()
    return Program(program.inputs, kept, program.outputs)


def common_subexpression_elimination(program: Program) -> Program:
    """Merge instructions with the same op, inputs and attributes (exact_attrs: a const -0.0
    is not a const 0)."""
    seen: dict = {}
    alias: dict = {}
    out_instrs = []
    for ins in program.instrs:
        inputs = tuple(alias.get(v.id, v) for v in ins.inputs)
        key = (ins.op, tuple(v.id for v in inputs), exact_attrs(ins.attrs))
        try:
            hash(key)
        except TypeError:
            key = None
        if key is not None and key in seen:
            for old, new in zip(ins.outputs, seen[key].outputs):
                alias[old.id] = new
            continue
        if inputs != ins.inputs:
            ins = type(ins)(ins.op, inputs, ins.outputs, ins.attrs, ins.loc)
        if key is not None:
            seen[key] = ins
        out_instrs.append(ins)
    outputs = [alias.get(v.id, v) for v in program.outputs]
    return Program(program.inputs, out_instrs, outputs)


def simplify(program: Program) -> Program:
    """CSE then DCE."""
    return dead_code_elimination(common_subexpression_elimination(program))


class _RewriteGraph:
    """What an OpDef.rewrite rule may ask about the program being rewritten."""

    def __init__(self, source: Program, out: Program):
        self._out = out
        self._producers: dict = {}        # value id -> defining instruction in `out`
        self._indexed = 0                 # how many of out.instrs `_producers` covers
        # value id -> readers in `source` (every value of `source` has an entry)
        self._readers: dict = {v.id: 0 for v in source.inputs}
        for ins in source.instrs:
            for v in ins.inputs:
                self._readers[v.id] = self._readers.get(v.id, 0) + 1
            for v in ins.outputs:
                self._readers[v.id] = 0
        for v in source.outputs:
            self._readers[v.id] = self._readers.get(v.id, 0) + 1
        self._returned = {v.id for v in source.outputs}
        self.instr = None                 # the instruction being rewritten (rewrite_identities)

    def producer(self, v):
        """The instruction defining `v` (None for a program input)."""
        for ins in self._out.instrs[self._indexed:]:
            for o in ins.outputs:
                self._producers[o.id] = ins
        self._indexed = len(self._out.instrs)
        return self._producers.get(v.id)

    def readers(self, v) -> int:
        """Instructions and program outputs reading `v` (a value made by a rewrite: unknown, so 2)."""
        return self._readers.get(v.id, 2)

    def returned(self, k: int = 0) -> bool:
        """Whether the program returns output `k` of the instruction being rewritten."""
        return self.instr.outputs[k].id in self._returned

    def forget_after(self, mark: int) -> None:
        """Instructions from `mark` on were withdrawn (a rule that did not apply)."""
        self._indexed = min(self._indexed, mark)


def rewrite_identities(program: Program) -> Program:
    """Apply the op table's algebraic identities (OpDef.rewrite), once per instruction.

    A rewritten instruction's outputs are replaced by the values its rule
    emits; what no longer has a reader is left for dead-code elimination."""
    if not any(OPS[ins.op].rewrite is not None for ins in program.instrs):
        return program
    alias: dict = {}
    out = Program(program.inputs, [], [])
    builder = Builder(out)
    graph = _RewriteGraph(program, out)
    for ins in program.instrs:
        inputs = tuple(alias.get(v.id, v) for v in ins.inputs)
        rule = OPS[ins.op].rewrite
        if rule is not None:
            mark = len(out.instrs)
            graph.instr = ins
            results = rule(Emitter(builder, ins.loc), list(inputs), dict(ins.attrs), graph)
            if results is not None and [r.type for r in results] == [v.type for v in ins.outputs]:
                for old, new in zip(ins.outputs, results):
                    alias[old.id] = new
                continue
            del out.instrs[mark:]
            graph.forget_after(mark)
        if inputs != ins.inputs:
            ins = Instr(ins.op, inputs, ins.outputs, ins.attrs, ins.loc)
        out.instrs.append(ins)
    out.outputs = [alias.get(v.id, v) for v in program.outputs]
    return out
