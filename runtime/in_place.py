"""Which operands' memory a compiled program's kernels may write their outputs into.

A kernel whose generated loop allows it (codegen/in_place.py: output o<k> read and
written element by element with operand a<j>) writes o<k> into a<j>'s array instead
of a fresh one when a<j>'s memory is free to take at that point of the program:

- an intermediate (the output of an earlier kernel or BLAS product) whose every alias
  inside the program (NumPy views made by view steps, results of reference steps that
  may be views) is read for the last time before this kernel, and which is not a
  program output; or
- a program input whose memory the call writes back afterwards (a parameter updated in
  place by an optimizer step, runtime/compile.py), given for the output holding exactly
  that written-back value, and read by nothing after this kernel. The caller vouches
  that no other input overlaps that memory; a program with trig guards (which reruns
  the whole program by reference from its inputs on a far argument) never takes an
  input's memory.

`plan` works out the candidates once per compiled program (from the steps' reads and
outputs); `choose` decides per call, from the arrays actually there: each must be
C-contiguous, writable, of the output's shape and dtype, and passed to the kernel
itself (not a contiguous copy of it). An intermediate is never taken after a kernel of
the program fell back to the reference implementation, whose results may be views.
What runs is the kernel's in-place variant (codegen/in_place.in_place_source), one per
set of pairs taken; a tiered warm-up (CompiledProgram.warm_up) compiles the one that its
call's write-backs will ask for.
"""
from __future__ import annotations

import os

import numpy as np


# Smallest input memory a call lets a kernel write over (runtime/compile.py): below, its
# copy-back costs less than the checks.
MIN_INPUT_BYTES = 1 << 16


def enabled() -> bool:
    """FUSEGRAD_IN_PLACE=0 turns in-place outputs off (read when a program is compiled)."""
    return os.environ.get("FUSEGRAD_IN_PLACE", "1").strip().lower() not in ("0", "false", "no", "off")


def plan(steps: list, n_inputs: int, keep: set, reads, outputs, fresh, pairs, inputs_ok: bool = True) -> list:
    """Per step, the candidates [(output position k, load position j, operand slot, input index
    or None)].

    `reads(step)` and `outputs(step)` give a step's slots; `fresh(step)` whether its
    outputs are new memory (kernels, BLAS products into pooled buffers); `pairs(step)`
    its kernel's pairs as (output position k, load position j, operand slot), empty for
    other steps.
    Slots 0..n_inputs-1 are the program's inputs; `keep` holds the slots that must
    survive the call (outputs, guards); `inputs_ok`: whether an input may be a candidate
    at all (the caller then decides per call)."""
    roots: dict = {slot: frozenset((slot,)) for slot in range(n_inputs)}
    last: dict = {}
    for n, step in enumerate(steps):
        read = reads(step)
        for slot in read:
            last[slot] = n
        own = fresh(step)
        shared = frozenset().union(*(roots.get(slot, frozenset()) for slot in read)) if not own else frozenset()
        for slot in outputs(step):
            roots[slot] = shared | {slot}
    # root slot -> the slots over its memory (an index, so that the test below looks at
    # the slots sharing a candidate's memory, not at every slot of the program)
    sharing: dict = {}
    for other, roots_ in roots.items():
        for root in roots_:
            sharing.setdefault(root, []).append(other)
    plans = []
    for n, step in enumerate(steps):
        candidates = []
        for k, j, slot in pairs(step):
            if slot in keep or last.get(slot) != n:
                continue                    # read later, or an output of the program
            mine = roots[slot]
            # every other slot over this memory is dead before this kernel (a view of it
            # that this kernel reads too, at another index, would see the writes)
            if any(other != slot and (other in keep or last.get(other, -1) >= n)
                   for root in mine for other in sharing[root]):
                continue
            inputs = [s for s in mine if s < n_inputs]
            if not inputs:
                candidates.append((k, j, slot, None))
            elif inputs_ok and mine == {slot}:
                candidates.append((k, j, slot, slot))
        plans.append(candidates)
    return plans


class Candidates:
    """One kernel step's candidates from `plan`, indexed the way `choose` asks for them: a
    fused optimizer step over many parameters has thousands of (output, operand) pairs,
    and walking them all on every call cost more than the kernel (40 layers: 0.6 ms a call).

    `intermediates`: output position k -> [(load position j, slot)] of dead intermediates,
    in j order; `inputs`: (input index, output slot) -> [(k, j, slot)], the outputs that
    may be written into that input when the call writes that output's value back there."""
    __slots__ = ("intermediates", "inputs")

    def __init__(self, candidates: list, stores: list):
        self.intermediates: dict = {}
        self.inputs: dict = {}
        for k, j, slot, input_index in candidates:
            if input_index is None:
                self.intermediates.setdefault(k, []).append((j, slot))
            else:
                self.inputs.setdefault((input_index, stores[k][0]), []).append((k, j, slot))

    def __bool__(self) -> bool:
        return bool(self.intermediates or self.inputs)


def choose(candidates: Candidates, args: list, first_load: int, env: list, stores: list,
           donated: dict | None, intermediates_ok: bool) -> dict:
    """Output position -> (the operand array it is written into, its load position j), for this call.

    `args[first_load + j]` is the array passed as load j; `stores[k]` is (slot, shape, dtype);
    `donated` maps an input index to the output slot whose value the caller writes back into
    that input's memory. A written-back input is taken first (that saves the copy back as
    well as a buffer), then dead intermediates; each output takes one operand's memory, each
    operand's memory goes to one output."""
    chosen, used = {}, set()

    def take(k: int, j: int, slot: int) -> bool:
        array = env[slot]
        _, shape, dtype = stores[k]
        if (args[first_load + j] is array and type(array) is np.ndarray and array.flags.c_contiguous
                and array.flags.writeable and array.dtype == dtype and array.shape == shape):
            chosen[k] = (array, j)
            used.add(slot)
            return True
        return False

    if donated and candidates.inputs:
        for pair in donated.items():
            for k, j, slot in candidates.inputs.get(pair, ()):
                if k not in chosen and slot not in used and take(k, j, slot):
                    break
    if intermediates_ok:
        for k, options in candidates.intermediates.items():
            if k in chosen:
                continue
            for j, slot in options:
                if slot not in used and take(k, j, slot):
                    break
    return chosen
