"""Deterministic, jaxpr-like printing: one SSA instruction a line.

    { lambda a:f32[4,3] b:f32[3] .
      c:f32[4,3] = mul a b
      d:f32[] = sum[axes=(0, 1) keepdim=False] c
      in (d) }

Names are given in order of definition, so printing the same structure twice
gives the same text (golden files and diffs work).
"""
from __future__ import annotations

from .program import Program


def _name(k: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    s = ""
    k += 1
    while k:
        k, r = divmod(k - 1, 26)
        s = letters[r] + s
    return s


def _attr(v) -> str:
    if hasattr(v, "short"):          # a DType
        return v.short
    return repr(v)


class Namer:
    """Gives each value a short name the first time it is seen."""

    def __init__(self):
        self.names: dict[int, str] = {}

    def __call__(self, v) -> str:
        if v.id not in self.names:
            self.names[v.id] = _name(len(self.names))
        return self.names[v.id]

    def decl(self, v) -> str:
        """The value's name with its type, as a declaration: "a:f32[2,3]"."""
        return f"{self(v)}:{v.type}"


def format_instr(ins, name: Namer) -> str:
    """One instruction as text: "outputs = op[attrs] inputs", naming values with `name`."""
    outs = " ".join(name.decl(v) for v in ins.outputs)
    attrs = " ".join(f"{k}={_attr(v)}" for k, v in ins.attrs)
    head = f"{ins.op}[{attrs}]" if attrs else ins.op
    args = " ".join(name(v) for v in ins.inputs)
    return f"{outs} = {head} {args}".rstrip()


def format_program(program: Program, name: Namer | None = None) -> str:
    """The whole program as text, one instruction a line: "{ lambda inputs . instructions in (outputs) }".
    Values read but never defined (a backward program's forward refs) join the inputs line."""
    name = name or Namer()
    lines = ["{ lambda " + " ".join(name.decl(v) for v in program.inputs) + " ."]
    defined = {v.id for v in program.inputs}
    for ins in program.instrs:
        for v in ins.inputs:      # free values (a backward program's forward refs)
            if v.id not in defined and v.id not in name.names:
                lines[0] = lines[0][:-2] + f" {name.decl(v)} ."
                defined.add(v.id)
        lines.append("  " + format_instr(ins, name))
        defined.update(v.id for v in ins.outputs)
    lines.append("  in (" + ", ".join(name(v) for v in program.outputs) + ") }")
    return "\n".join(lines)
