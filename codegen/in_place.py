"""Which outputs of a kernel may be written over one of its operands (in-place outputs).

A kernel's output normally gets a fresh array. When an operand of the same shape and
dtype dies at this kernel (nothing reads it afterwards: an intermediate, or a
parameter whose new value the call writes back into its memory), the output can be
written into the operand's memory instead: one buffer fewer at the call's high-water
mark, and no copy-back of an updated parameter. This module answers the kernel's half
of that question, whether its loop nest stays correct when an output and an operand
are one array; the executor (runtime/executor.py) answers the other half, whether the
operand's memory is free to take at run time.

The answer is read from the generated source itself, the code that will run, so it
holds whatever the generator's phases, hoisting and tiling did. Output `o<k>` may take
operand `a<j>`'s memory when:

- every element of `o<k>` is stored once over the kernel's whole iteration space (a
  "full" store at the identity index, which the generator reports), with the operand's
  shape and dtype, by one statement, or by one statement in each segment of a loop cut
  at cat's seams (codegen/segments.py), all with one subscript;
- every use of `a<j>` is a subscripted read with exactly the store's subscript, so
  each iteration reads only the element it writes;
- every such read comes before a store, or is on its line (the right-hand side is
  evaluated first), and inside the same loop body as that store: no line between the
  read and the store is less indented than the store. So within one iteration
  all reads of an element happen before it is overwritten, and no other iteration
  reads it (a read in an earlier phase loop of the same row, which would be safe too,
  is refused: the rule stays simple).

Vectorisation keeps this correct: a vector of elements is loaded before the vector
computed from it is stored to the same addresses. The kernel that runs in place is a
variant (`in_place_source`) whose store goes through the operand's own argument, so that
LLVM sees one address and keeps the loop vectorised.
"""
from __future__ import annotations

import re
from dataclasses import replace

_STORE = re.compile(r"^\s*o(\d+)\[")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _subscripts(line: str, name: str):
    """The subscript texts of every `name[...]` in `line`, and whether `name` also appears
    unsubscripted (passed whole to a call, for instance)."""
    found, bare = [], False
    for m in re.finditer(rf"\b{name}\b", line):
        at = m.end()
        if at >= len(line) or line[at] != "[":
            bare = True
            continue
        depth, end = 0, at
        while end < len(line):
            if line[end] == "[":
                depth += 1
            elif line[end] == "]":
                depth -= 1
                if depth == 0:
                    break
            end += 1
        found.append(line[at + 1:end])
    return found, bare


def in_place_pairs(function_text: str, loads: list, stores: list, full_stores: set) -> tuple:
    """(k, j) pairs: output o<k> may be written over operand a<j> (see the module docstring),
    every eligible pair, in order; the executor gives each output at most one operand.

    `function_text` is the kernel's serial function; `loads` and `stores` the values passed
    as a<j> and o<k>; `full_stores` the output positions stored once per element over the
    whole iteration space."""
    lines = function_text.splitlines()[1:]          # (the body: the signature names every argument)
    store_lines: dict = {}
    for n, line in enumerate(lines):
        m = _STORE.match(line)
        if m is not None:
            store_lines.setdefault(int(m.group(1)), []).append(n)
    uses = _operand_uses(lines)
    outer = _enclosing_lines(lines)
    pairs = []
    for k, store in enumerate(stores):
        if k not in full_stores or not store_lines.get(k):
            continue
        subscripts = set()
        for at in store_lines[k]:
            found, _ = _subscripts(lines[at], f"o{k}")
            subscripts.add(found[0] if lines[at].lstrip().startswith(f"o{k}[{found[0]}] = ") else None)
        if len(subscripts) != 1 or None in subscripts:
            continue
        subscript = subscripts.pop()
        for j, load in enumerate(loads):
            if load.type.ndim and load.type == store.type and \
                    _reads_only_before(outer, uses.get(f"a{j}", ()), store_lines[k], subscript):
                pairs.append((k, j))
    return tuple(pairs)


_OPERAND = re.compile(r"\ba\d+\b")


def _operand_uses(lines: list) -> dict:
    """For each operand name a<j>: (line number, its subscripts there, whether it is also used
    bare there) for every line that uses it. One scan of the source, where testing each
    (output, operand) pair against every line cost time cubic in a kernel's size (a fused
    optimizer step over 40 layers: seconds per first call)."""
    uses: dict = {}
    for n, line in enumerate(lines):
        for name in set(_OPERAND.findall(line)):
            found, bare = _subscripts(line, name)
            uses.setdefault(name, []).append((n, found, bare))
    return uses


def _enclosing_lines(lines: list) -> list:
    """For each line, the number of the last non-blank line before it that is less indented
    (-1 if none): the line that opens the loop body it sits in. One pass with a stack, so
    that testing "no line between a read and the store leaves the store's loop body" is one
    comparison per (output, operand) pair instead of a scan of the lines between them."""
    enclosing, stack = [], []                 # stack: (indent, line number), indents increasing
    for n, line in enumerate(lines):
        if not line.strip():
            enclosing.append(stack[-1][1] if stack else -1)
            continue
        depth = _indent(line)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        enclosing.append(stack[-1][1] if stack else -1)
        stack.append((depth, n))
    return enclosing


def _reads_only_before(enclosing: list, uses, stores: list, subscript: str) -> bool:
    """Whether every use of an operand (`uses`: its entries of _operand_uses) is a read at
    `subscript` in the loop body of one of the store lines `stores` (in order), on that line
    or before it (`enclosing`: from _enclosing_lines)."""
    read = False
    for n, found, bare in uses:
        if bare or any(s != subscript for s in found):
            return False
        if found:
            # the first store at or after the read, in the read's loop body: no line from the
            # read to the store is less indented than the store
            at = next((at for at in stores if at >= n), None)
            if at is None or enclosing[at] >= n:
                return False
            read = True
    return read


def in_place_source(source, pairs: dict):
    """The kernel `source` with output o<k> stored into operand a<j> for each k -> j of `pairs`
    (pairs that in_place_pairs allowed). The signature is unchanged (o<k> is still passed and
    no longer used): the caller passes a<j>'s array for both.

    Why a variant rather than the same kernel called with one array for both: kernels take
    their arrays as noalias (codegen/noalias.py), a promise that one array passed as both
    operand and output would break (before that, LLVM's runtime overlap test sent such a
    call to the scalar loop: 2.7x slower on an L2-resident update). Reading and writing
    through the same argument, the load and the store are one address."""
    functions = []
    for name, parallel, text in source.functions:
        for k, j in pairs.items():
            text, count = re.subn(rf"^(\s*)o{k}\[", rf"\g<1>a{j}[", text, flags=re.MULTILINE)
            assert count >= 1, "an in-place output is stored (in_place_pairs)"
        functions.append((name, parallel, text))
    return replace(source, functions=functions, in_place=())
