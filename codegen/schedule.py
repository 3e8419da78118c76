"""Fusion scheduling: partition a program into kernels and library steps.

Rules (each refusal is recorded with its reason, for `explain()`):

1. The op table's algebraic identities are applied (ir.passes.rewrite_identities:
   exp(log_softmax(x)) is softmax(x); a reduction drops its axes of size 1),
   before and again after decomposition, ops with a `decompose` rule are
   decomposed (codegen/decompose.py: composites; max_dim/min_dim as three
   reductions; cat/stack as a select between operands read through clamped
   shifts, `pad_edge`; index_put (t[i] = v, copy_, fill_) as a select over
   the indexed box; addmm, mse_loss, nll_loss into their ops), permutes move
   past elementwise ops and reductions so loops run in memory order
   (ir/permute_sinking.py), then common subexpressions are merged and dead
   code is dropped (ir.passes.simplify).
   float32 sin/cos become their near forms, each distinct argument with a
   guard output (codegen/trig_guard.py; `Schedule.guards` counts them).
2. Every instruction gets a kind from its op group:
   - elementwise ops and reductions with a combine expression (sum, amax,
     amin) are *fusible*: they join loop kernels;
   - sources (const, iota) and movement ops that are index arithmetic
     (expand, permute, reshapes that move size-1 dims, pad_edge) over values
     already in memory are *free*: every kernel that reads them recomputes
     them inline, so they are never written;
   - matmul is a BLAS call (np.matmul);
   - getitem and general reshapes are NumPy views between kernels, as is any
     movement op whose result goes to a non-kernel step or is an output;
   - anything else runs by its reference implementation: opaque ops,
     ops whose decomposition declined (norm with p other than 1 or 2,
     cat/stack of more than MAX_CAT_OPERANDS operands, index_put of an
     empty box) and any op with an empty operand.
3. Fusible instructions are visited in program order. Each tries to join the
   kernel(s) that compute its operands, all of them at once if possible,
   else the one holding most operands:
   - an elementwise op joins a pointwise kernel over its output shape; the
     kernel's loops move to a broadcast (or permuted) output shape when
     every value the kernel stores has that shape;
   - a reduction joins the kernel computing its operand (a reduction absorbs
     its producers): over the trailing dims it is a *row* reduction, and
     elementwise ops that consume its result join the same kernel in a later
     phase; over other dims it is a *tail* reduction, accumulated where its
     operand is computed and finished after the loops (codegen/loopnest.py);
   - the kernel's stored values must have its full, outer or a tail's shape,
     a reduction's result can be read only where it is computed, and a
     fusion never creates a cycle between steps.
   Otherwise the instruction starts a new kernel. Finally kernels over the
   same loops that read a common value are merged (horizontal fusion).
4. A value is written to memory only when something outside its kernel
   reads it (another step, or the program's outputs).
5. A cheap elementwise value (no fg_* math) that a kernel would write only for
   one other kernel, computed from values in memory anyway, is recomputed by
   that kernel instead (a relu's backward mask is computed from the stored
   activation where the backward reads it, not written by the forward).
6. A kernel holds at most MAX_KERNEL_MATH (64) instructions that call fg_*
   math (exp, tanh, sin...), and at most MAX_KERNEL_INSTRS (128) instructions
   in all: compile time grows faster than a kernel's body.
7. Horizontal fusion stops at MAX_MERGED_ARRAYS (64) arrays read and written
   by the merged kernel: merging independent work (an optimizer's updates of
   many parameters, which share only their scalar settings) saves a dispatch
   per kernel, but LLVM's time grows faster than the kernel (Adam over 32
   parameters in one loop: 7.3 s cold, over 8: 0.7 s), and kernels of equal
   size have one source, compiled once.
8. Vertical fusion stops at MAX_JOINED_ARRAYS (16) arrays (not 0-d values) a
   kernel reads from memory: a long sum of separately computed terms (an
   unrolled loop's weight gradient over its steps) becomes several kernels,
   each compiled quickly, with fewer terms alive at once.

Canonical kernel counts (asserted in tests/test_codegen_schedule.py and, for
max_dim and cat, tests/test_codegen_cat_max.py):
  a chain of 20 elementwise ops                       1 kernel
  ... with its loss and backward                      1 kernel
  softmax (max, sum of exp, divide)                   1 kernel, 3 phases; with backward 1 kernel, 4 phases
  layernorm, forward / forward and backward           1 kernel / 1 kernel (2 tail reductions: dw, db)
  log_softmax cross-entropy, forward and backward     1 kernel
  max(x, dim=-1) values and indices, with backward    1 kernel, 3 phases
  exp(cat(tanh(x), y)) / its backward                 1 kernel / kernels and views (no reference step)
  MLP 784-256-10 training step (loss + all grads)     3 kernels, 6 BLAS calls, transposes as views
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fusegrad.ir import Program
from fusegrad.ir.ops import COMPOSITE, ELEMENTWISE, MATMUL, MOVEMENT, OPS, REDUCE, SOURCE
from fusegrad.ir.passes import rewrite_identities, simplify
from fusegrad.ir.permute_sinking import sink_permutes

from .decompose import decompose_composites
from .indexing import inlinable_movement, is_view
from .layout_copy import MIN_COPY_ELEMENTS, reads_across_memory
from .loopnest import Analysis, LoopNest, NotFusable, is_reduction, reductions_of, recursion_room, row_axes_ok
from .nonpositive_forms import nonpositive_forms
from .trig_guard import guard_near_forms

KERNEL, MATMUL_CALL, VIEW, REFERENCE, FILL = "kernel", "matmul", "view", "reference", "fill"
REDUCE_COMBINES = ("add", "max", "min")


@dataclass(eq=False)
class Kernel:
    """A fused loop kernel: its space, reduction axes and instructions."""
    id: int
    space: tuple
    axes: tuple
    instrs: list = field(default_factory=list)     # computed here, in program order (free ones included)
    stores: list = field(default_factory=list)     # values written to memory
    inlined: list = field(default_factory=list)    # free instructions it recomputes (constants, views)
    analysis: Analysis | None = None
    # While scheduling: id() of its non-free instructions, the LoopNest that
    # checks new members incrementally (None: rebuild), its latest member's position.
    members: set = field(default_factory=set)
    nest: LoopNest | None = None
    last: int = -1
    reduces: bool = False                          # has a reduction
    present: set = field(default_factory=set)      # id() of every instruction in `instrs`
    math: int = 0                                  # instructions that call fg_* math (MAX_KERNEL_MATH)

    @property
    def layout(self) -> str:
        """The kernel's loop layout ("pointwise", "row" or "column"); "?" before it is analysed."""
        return self.analysis.layout if self.analysis is not None else "?"


@dataclass(eq=False)
class Step:
    """One step of the executor: a kernel, a BLAS call, a view, a fill or a reference op."""
    kind: str
    kernel: Kernel | None = None
    instr: object = None
    why: str = ""
    missing_rule: bool = False     # a reference step for an op codegen cannot compile (warned once)
    # a view only kernels read, across its memory: the executor hands them one contiguous copy
    # of it (made in tiles, codegen/layout_copy.py) instead of each kernel copying it again
    copied: bool = False


@dataclass
class Schedule:
    """The steps that implement a program, in order, and the notes on fusions refused (for explain)."""
    program: Program          # the program the steps implement (decomposed, dead code removed)
    steps: list
    notes: list               # (instruction, kernel or None, reason) for refused fusions
    guards: int = 0           # the last `guards` outputs of `program` are trig guards (trig_guard.py)

    @property
    def kernels(self) -> list:
        """The fused kernels among the steps, in order."""
        return [s.kernel for s in self.steps if s.kind == KERNEL]


def schedule(program: Program) -> Schedule:
    """Partition `program` into steps (see the module docstring for the rules)."""
    # (identities again after decomposing: a softmax over a unit dim decomposes into reductions over it)
    program = simplify(sink_permutes(rewrite_identities(decompose_composites(rewrite_identities(program)))))
    program, guards = guard_near_forms(nonpositive_forms(program))
    with recursion_room(len(program.instrs)):
        result = _Scheduler(program).run()
    result.guards = guards
    return result


# Rule 6: a kernel holds at most this many instructions that call fg_* math. LLVM's
# time grows faster than a kernel's body (a chain of 300 tanh, one kernel: 10 s cold);
# splitting it costs one store and load of a value per 64 transcendental evaluations.
MAX_KERNEL_MATH = 64
# Rule 6 too: a kernel holds at most this many instructions (not counting the free ones it
# recomputes inline). Numba's typing and LLVM's passes grow faster than a kernel's body
# whatever its instructions are. A chain of 200 x * 0.99 + 0.01 * tanh(x) steps on a 4x6
# tensor, cold, forward then backward: 10 + 21 s in kernels of up to ~1400 instructions,
# 11 + 11 s at most 256, 4 + 3 s at most 128 (its kernels are then mostly alike, and alike
# kernels compile once). W1-W4's kernels hold 1-38.
MAX_KERNEL_INSTRS = 128

# Rule 7: the most arrays (reads and writes) a horizontal merge may give a kernel.
MAX_MERGED_ARRAYS = 64
# Rule 8: vertical fusion stops at this many arrays read (a sum of 200 matmul products, an
# unrolled loop's weight gradient, made one kernel of 200 arguments: 12 s of Numba compile,
# and every product alive at once until it ran: +507 MiB where torch held two)
MAX_JOINED_ARRAYS = 16


# ------------------------------------------------------------------ classification
def calls_math(opdef) -> bool:
    """Does the op's kernel expression call fg_* math (exp, tanh, ...)? Such a value is
    costly: worth storing or buffering rather than recomputing."""
    return isinstance(opdef.expr, str) and "fg_" in opdef.expr


def _base_kind(ins) -> str:
    opdef = OPS[ins.op]
    if opdef.group == MATMUL:
        return MATMUL_CALL
    if opdef.group == COMPOSITE:
        return REFERENCE          # left by decompose_composites: no rule, or an empty operand
    if opdef.group == ELEMENTWISE and opdef.expr is not None and _kernel_dtype_ok(opdef, ins):
        return "fusible"
    if opdef.group == REDUCE and opdef.expr in REDUCE_COMBINES:
        axes = dict(ins.attrs)["axes"]
        empty = any(ins.inputs[0].shape[a] == 0 for a in axes)
        # max/min of nothing is an error: the reference raises torch's IndexError.
        return REFERENCE if empty and opdef.expr != "add" else "fusible"
    if opdef.group == SOURCE and opdef.expr is not None:
        return "source"
    if opdef.group == MOVEMENT and inlinable_movement(ins):
        return "movement"
    if is_view(ins):
        return VIEW
    return REFERENCE


def _kernel_dtype_ok(opdef, ins) -> bool:
    """False for an op whose kernel form covers floats only (extra["kernel_floats_only"]:
    integer division, whose zero divisor must raise) applied to integers."""
    return not opdef.extra.get("kernel_floats_only") or ins.outputs[0].dtype.is_floating_point


def reference_reason(ins) -> tuple:
    """(why `ins` runs by reference, whether that is a missing kernel rule worth a warning)."""
    opdef = OPS[ins.op]
    if not all(v.type.numel for v in list(ins.inputs) + list(ins.outputs)):
        return f"{ins.op} of an empty tensor runs by its reference implementation", False
    if not _kernel_dtype_ok(opdef, ins):
        return f"{ins.op} of integers runs by its reference implementation (a zero divisor raises)", False
    if opdef.group == REDUCE and opdef.expr in REDUCE_COMBINES:
        return f"{ins.op} over an empty dimension raises; the reference implementation reports it", False
    if opdef.reference_only:
        how = opdef.extra.get("reference_why", "NumPy's indexing")
        return f"{ins.op} runs by its reference implementation ({how})", False
    declined = opdef.extra.get("declined_why")
    if opdef.decompose is not None and declined is not None and declined(ins) is not None:
        return f"{ins.op} {declined(ins)}; it runs by its reference implementation", False
    if opdef.decompose is not None:
        # A decomposition that declines does so by design (index_put of an empty box, norm
        # with p=3, cat of many operands; the schedule docstring lists them): explain() says so,
        # but no warning (torch prints none, and it failed user code run with -W error)
        return f"{ins.op} with these attributes has no decomposition; it runs by its reference implementation", False
    return f"no kernel rule for {ins.op} ({opdef.group} op); it runs by its reference implementation", True


class _Scheduler:
    def __init__(self, program: Program):
        self.program = program
        self.pos = {id(ins): k for k, ins in enumerate(program.instrs)}
        self.producer = {v.id: ins for ins in program.instrs for v in ins.outputs}
        self.consumers: dict = {}
        for ins in program.instrs:
            for v in ins.inputs:
                self.consumers.setdefault(v.id, []).append(ins)
        self.outputs = {v.id for v in program.outputs}
        self.kind: dict = {}
        self.copied_views: set = set()    # id(ins) of views a kernel would read across memory (Step.copied)
        self.free: set = set()            # id(ins) of free instructions
        self.node_of: dict = {}           # value id -> Kernel or Step computing it
        self.preds: dict = {}             # node -> set of nodes it reads from
        self.nodes: list = []
        self.notes: list = []
        self._kernel_ids = 0

    # -------------------------------------------------------------- driver
    def run(self) -> Schedule:
        self._classify()
        for ins in self.program.instrs:
            kind = self.kind[id(ins)]
            if kind == "source":
                self.free.add(id(ins))
                if self._needs_memory(ins):
                    self._add_step(Step(FILL, instr=ins, why="a constant needed in memory (np.full)"), ins)
            elif kind == "movement" and not any(self._in_kernel(v) for v in ins.inputs):
                self.free.add(id(ins))
            elif kind in ("fusible", "movement"):
                self._place(ins)
            elif kind == MATMUL_CALL:
                self._add_step(Step(MATMUL_CALL, instr=ins, why="BLAS through np.matmul"), ins)
            elif kind == VIEW and id(ins) in self.copied_views:
                self._add_step(Step(VIEW, instr=ins, copied=True,
                                    why="read across its memory by kernels only: copied contiguous, in tiles"), ins)
            elif kind == VIEW:
                self._add_step(Step(VIEW, instr=ins, why="a NumPy view of values in memory (no copy)"), ins)
            else:
                why, missing = reference_reason(ins)
                self._add_step(Step(REFERENCE, instr=ins, why=why, missing_rule=missing), ins)
        self._merge_siblings()
        self._recompute_cheap_values()
        for k in self._kernels():
            self._finish_kernel(k)
        return Schedule(self.program, self._ordered_steps(), self.notes)

    def _classify(self) -> None:
        """Kinds, visiting consumers first: a movement op whose result must be in
        memory (read by a non-kernel step, or an output) becomes a view."""
        for ins in reversed(self.program.instrs):
            kind = _base_kind(ins)
            if kind == "movement" and self._needs_memory(ins):
                kind = VIEW
            elif kind == "movement" and self._transposes_memory(ins):
                kind = VIEW
                self.copied_views.add(id(ins))
            self.kind[id(ins)] = kind

    def _transposes_memory(self, ins) -> bool:
        """Is `ins` a view of a large value (a program input, or a value a step lays out
        row-major) that a kernel would read across the value's contiguous axis (`x.t()` in
        `(x.t() * y).sum()`; a softmax over axis 0 computed in memory order, then multiplied by
        a row-major weight)? As a view step, the executor copies it contiguous, in tiles, before
        a kernel reads it (codegen/layout_copy.py): measured on a [4096, 1024] float32
        `(x.t() * y).sum()` with both gradients, 34 ms read inline; `(softmax(x.t(), -1) * w)
        .sum()` with its gradient, 35 ms read inline, 7.5 ms copied."""
        x = ins.inputs[0] if ins.inputs else None
        if x is None or not is_view(ins) or x.type.numel < MIN_COPY_ELEMENTS:
            return False
        stand_in = np.empty(x.shape, np.int8)     # only its strides are looked at (pages untouched)
        return reads_across_memory(OPS[ins.op].ref(stand_in, **dict(ins.attrs)))

    def _needs_memory(self, ins) -> bool:
        for v in ins.outputs:
            if v.id in self.outputs:
                return True
            if any(self.kind[id(c)] in (MATMUL_CALL, VIEW, REFERENCE) for c in self.consumers.get(v.id, ())):
                return True
        return False

    def _in_kernel(self, v) -> bool:
        return isinstance(self.node_of.get(v.id), Kernel)

    # -------------------------------------------------------------- dependencies
    def _deps(self, v) -> set:
        """The steps whose results reading `v` depends on (through free instructions)."""
        node = self.node_of.get(v.id)
        if node is not None:
            return {node}
        ins = self.producer.get(v.id)
        if ins is None:
            return set()
        out = set()
        for u in ins.inputs:
            out |= self._deps(u)
        return out

    def _add_step(self, step: Step, ins) -> None:
        self.nodes.append(step)
        self.preds[step] = set().union(*(self._deps(v) for v in ins.inputs)) if ins.inputs else set()
        for v in ins.outputs:
            self.node_of[v.id] = step

    def _successors(self) -> dict:
        """Step -> the steps that depend on it (the inverse of `preds`, as it is now)."""
        succ: dict = {}
        for node, ps in self.preds.items():
            for p in ps:
                succ.setdefault(p, set()).add(node)
        return succ

    def _reaches(self, sources: set, targets: set, succ: dict | None = None) -> bool:
        """Is some node in `targets` reachable from `sources` by a path that leaves `sources`?
        `succ`: _successors() when the caller tests many pairs against one graph."""
        if succ is None:
            succ = self._successors()
        stack = [n for s in sources for n in succ.get(s, ()) if n not in sources]
        seen = set()
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            if n in targets:
                return True
            for m in succ.get(n, ()):
                if m in sources:
                    return True
                stack.append(m)
        return False

    def _closure(self) -> tuple:
        """(bit, ancestors, descendants): each node's bit, and the bits (Python ints) of the
        nodes above and below it, for the many pair tests of _merge_siblings: a pair's
        cycle test is then a few integer operations, where a search of the graph per pair
        made first calls cubic in an unrolled loop's length (an RNN of 200 steps: 13 s of
        scheduling, 400 steps: 88 s). The graph is a DAG (no merge makes a cycle): else an
        internal error, as when the steps are ordered."""
        succ = self._successors()
        waiting = {n: len(ps) for n, ps in self.preds.items()}
        nodes = set(self.nodes) | set(waiting) | set(succ)
        ready = [n for n in nodes if not waiting.get(n)]
        order = []
        while ready:
            n = ready.pop()
            order.append(n)
            for m in succ.get(n, ()):
                waiting[m] -= 1
                if not waiting[m]:
                    ready.append(m)
        if len(order) != len(nodes):
            raise AssertionError("internal error: the fusion schedule has a cycle")
        bit = {n: 1 << k for k, n in enumerate(order)}
        above = {}
        for n in order:
            acc = 0
            for p in self.preds.get(n, ()):
                acc |= above[p] | bit[p]
            above[n] = acc
        below = {}
        for n in reversed(order):
            acc = 0
            for m in succ.get(n, ()):
                acc |= below[m] | bit[m]
            below[n] = acc
        return bit, above, below

    # -------------------------------------------------------------- fusion
    def _kernels(self) -> list:
        return [n for n in self.nodes if isinstance(n, Kernel)]

    def _place(self, ins) -> None:
        groups = []
        for v in ins.inputs:
            node = self.node_of.get(v.id)
            if isinstance(node, Kernel) and node not in groups:
                groups.append(node)
        reasons = []
        if len(groups) > 1:
            try:
                return self._join(groups, ins)
            except NotFusable as exc:
                reasons.append((None, f"fusing all of kernels {[g.id for g in groups]}: {exc}"))
        share = {g: sum(self.node_of.get(v.id) is g for v in ins.inputs) for g in groups}
        for g in sorted(groups, key=lambda g: (-share[g], -g.last)):
            try:
                return self._join([g], ins)
            except NotFusable as exc:
                reasons.append((g, str(exc)))
        for g, why in reasons:
            self.notes.append((ins, g, why))
        self._new_kernel(ins)

    def _computed(self, members: set):
        """computed(value) for a kernel whose non-free instructions are `members`."""
        producer, free = self.producer, self.free

        def computed(v):
            ins = producer.get(v.id)
            if ins is not None and (id(ins) in members or id(ins) in free):
                return ins
            return None
        return computed

    def _new_kernel(self, ins) -> Kernel:
        self._kernel_ids += 1
        space, axes = _own_space(ins)
        axes = axes if row_axes_ok(space, axes) else ()
        k = Kernel(self._kernel_ids, space, axes, members={id(ins)})
        try:
            k.nest = LoopNest(space, axes, self._computed(k.members))
            k.nest.admit(ins, self._live_outputs(ins))
        except NotFusable:
            k.nest = None
        self.nodes.append(k)
        self.preds[k] = set()
        self._admit(k, ins)
        return k

    def _join(self, groups: list, ins) -> None:
        if sum(g.math for g in groups) + calls_math(OPS[ins.op]) > MAX_KERNEL_MATH:
            raise NotFusable(f"the kernel would hold more than {MAX_KERNEL_MATH} math calls")
        if sum(len(g.members) for g in groups) >= MAX_KERNEL_INSTRS:
            raise NotFusable(f"the kernel would hold more than {MAX_KERNEL_INSTRS} instructions")
        self._check_joined_arrays(groups, ins)
        space, axes = _joined_space(groups, ins)
        others = set().union(*(self._deps(v) for v in ins.inputs)) - set(groups)
        if self._reaches(set(groups), others):
            raise NotFusable("fusing would create a cycle through another step")
        g = groups[0]
        if len(groups) == 1 and g.nest is not None and (space, axes) == (g.space, g.axes):
            # The common case: one more instruction for a kernel whose loops stay.
            g.members.add(id(ins))
            try:
                g.nest.admit(ins, self._live_outputs(ins))
                self._admit(g, ins)
                return
            except NotFusable:
                g.members.discard(id(ins))
                g.nest = None
                if not axes:
                    raise
        members = set().union(*(k.members for k in groups)) | {id(ins)}
        instrs = [i for k in groups for i in k.instrs if id(i) not in self.free] + [ins]
        roots = self._roots(instrs)
        # Without row axes every reduction is a tail reduction: one pass, any axes
        # (a loss summed to a scalar plus bias gradients summed over the batch).
        for option in ([axes, ()] if axes else [()]):
            try:
                nest = LoopNest(space, option, self._computed(members))
                nest.analysis(roots, reductions_of(instrs))
                break
            except NotFusable as exc:
                failure = exc
        else:
            raise failure
        k = self._merge(groups, space, option)
        k.members, k.nest = members, nest
        self._admit(k, ins)

    def _live_outputs(self, ins) -> list:
        """Outputs of a newly scheduled instruction that something will read."""
        return [v for v in ins.outputs if v.id in self.outputs or self.consumers.get(v.id)]

    def _merge(self, groups: list, space: tuple, axes: tuple) -> Kernel:
        """Make the first of `groups` hold all of them, over `space` with row axes `axes`."""
        k = groups[0]
        k.space, k.axes = space, axes
        for g in groups[1:]:
            k.instrs.extend(i for i in g.instrs if id(i) not in k.present)
            k.present |= g.present
            k.members |= g.members
            k.reduces = k.reduces or g.reduces
            k.math += g.math
            k.last = max(k.last, g.last)
            for i in g.instrs:
                if id(i) not in self.free:
                    for v in i.outputs:
                        self.node_of[v.id] = k
            self.preds[k] |= self.preds.pop(g)
            self.nodes.remove(g)
            for ps in self.preds.values():
                if g in ps:
                    ps.discard(g)
                    ps.add(k)
        self.preds[k] -= set(groups)
        return k

    def _merge_siblings(self) -> None:
        """Horizontal fusion: kernels over one space that read a common value (or one
        reads the other's result) become one kernel when that is legal and acyclic.

        Kernels are taken in program order; each absorbs the later ones it can, and after
        each merge tries the later ones again (it reads more now). A pair that failed is not
        tried again until one of the two grows: a failure stays one (paths between steps
        only ever join, the kernels only grow). Passes repeat until one merges nothing.
        (Restarting from the first pair after every merge took time cubic in the kernels:
        a 100-layer Adam step, 56 s.)"""
        failed: set = set()
        reads = {k: self._reads(k) for k in self._kernels()}
        merged = True
        while merged:
            merged = False
            kernels = self._kernels()
            closure = self._closure()
            i = 0
            while i < len(kernels):
                a, j = kernels[i], i + 1
                while j < len(kernels):
                    b = kernels[j]
                    if (a, b) in failed or not self._may_merge_siblings(a, b, reads, closure):
                        failed.add((a, b))
                        j += 1
                        continue
                    self._merge([a, b], a.space, a.axes or b.axes).nest = None
                    kernels.pop(j)
                    reads.pop(b)
                    reads[a] = self._reads(a)
                    failed = {pair for pair in failed if a not in pair}
                    closure = self._closure()
                    merged = True
                    j = i + 1
                i += 1

    def _may_merge_siblings(self, a: Kernel, b: Kernel, reads: dict, closure: tuple) -> bool:
        """Whether `a` and `b` may become one kernel (rules 3, 6, 7 and 8), cheapest test first."""
        if a.space != b.space or (a.axes and b.axes and a.axes != b.axes):
            return False
        linked = b in self.preds[a] or a in self.preds[b]
        if (not (reads[a] & reads[b]) and not linked) or a.math + b.math > MAX_KERNEL_MATH or \
                len(a.members) + len(b.members) > MAX_KERNEL_INSTRS:
            return False
        if self._array_count((a, b)) > MAX_MERGED_ARRAYS or self._cycles_through(a, b, closure):
            return False
        if linked and self._arrays_read((a, b)) > MAX_JOINED_ARRAYS:
            return False            # (rule 8: one reads the other's result, a vertical fusion)
        members = a.members | b.members
        instrs = [i for k in (a, b) for i in k.instrs if id(i) not in self.free]
        try:
            LoopNest(a.space, a.axes or b.axes, self._computed(members)).analysis(
                self._roots(instrs), reductions_of(instrs))
        except NotFusable as exc:
            self.notes.append((None, (a, b), str(exc)))
            return False
        return True

    def _cycles_through(self, a: Kernel, b: Kernel, closure: tuple) -> bool:
        """Whether a path leaves {a, b} and comes back (merging them would make a cycle): some
        other node lies below one of them and above one of them (`closure`: _closure())."""
        bit, above, below = closure
        pair = bit[a] | bit[b]
        return bool((below[a] | below[b]) & (above[a] | above[b]) & ~pair)

    def _recompute_cheap_values(self) -> None:
        """Rule 5: a cheap elementwise value (no fg_* math) that one kernel computes only for
        one other kernel, from operands in memory anyway, is recomputed by its reader instead
        of being written and read back (a relu's backward mask from the stored activation)."""
        for k in self._kernels():
            for ins in [i for i in k.instrs if id(i) in k.members]:
                if k not in self.preds:
                    break                               # dropped: it held nothing else
                reader = self._sole_reader_elsewhere(ins, k)
                if reader is None:
                    continue
                trial = set(reader.members) | {id(ins)}
                instrs = [i for i in reader.instrs if id(i) not in self.free] + [ins]
                try:
                    LoopNest(reader.space, reader.axes, self._computed(trial)).analysis(
                        self._roots(instrs), reductions_of(instrs))
                except NotFusable:
                    continue
                self.free.add(id(ins))
                k.members.discard(id(ins))
                still = {id(f) for i in k.instrs if id(i) in k.members for f in self._free_cone(i)}
                k.instrs = [i for i in k.instrs if id(i) in k.members or id(i) in still]
                k.present = {id(i) for i in k.instrs}
                for v in ins.outputs:
                    self.node_of.pop(v.id, None)
                for f in [ins] + self._free_cone(ins):
                    if id(f) not in reader.present:
                        reader.instrs.append(f)
                        reader.present.add(id(f))
                self.preds[reader] |= set().union(*(self._deps(u) for u in ins.inputs)) - {reader}
                if not k.members:                      # it held only that value: nothing left to run
                    self._drop_kernel(k)

    def _drop_kernel(self, k: Kernel) -> None:
        """Remove an emptied kernel; whatever waited for it waits for what it waited for."""
        self.nodes.remove(k)
        before = self.preds.pop(k)
        for ps in self.preds.values():
            if k in ps:
                ps.discard(k)
                ps |= before

    def _sole_reader_elsewhere(self, ins, k: Kernel):
        """The kernel other than `k` that alone reads `ins`'s result, when `ins` is cheap
        elementwise and its operands are in memory anyway; else None."""
        opdef = OPS[ins.op]
        if opdef.group != ELEMENTWISE or not isinstance(opdef.expr, str) or calls_math(opdef):
            return None
        if len(ins.outputs) != 1 or self._needs_memory(ins):
            return None
        readers = {self.node_of.get(c.outputs[0].id) for c in self.consumers.get(ins.outputs[0].id, ())}
        reader = readers.pop() if len(readers) == 1 else None
        if not isinstance(reader, Kernel) or reader is k or any(
                id(c) not in reader.members for c in self.consumers[ins.outputs[0].id]):
            return None
        for u in ins.inputs:
            p = self.producer.get(u.id)
            if p is None or id(p) in self.free or not isinstance(self.node_of.get(u.id), Kernel):
                continue                      # a program input, recomputed itself, or a library step's
            if not self._needs_memory(p):
                return None                   # the reader would make its kernel write it
        return reader

    def _array_count(self, kernels) -> int:
        """The values one kernel holding all of `kernels` would read from outside it and
        write for readers outside it (its array arguments, near enough: a 0-d read counts)."""
        inside = {id(i) for k in kernels for i in k.instrs}
        reads, writes = set(), set()
        for k in kernels:
            for i in k.instrs:
                for v in i.inputs:
                    p = self.producer.get(v.id)
                    if p is None or id(p) not in inside:
                        reads.add(v.id)
                if id(i) in k.members:
                    for v in i.outputs:
                        if v.id in self.outputs or any(id(c) not in inside for c in self.consumers.get(v.id, ())):
                            writes.add(v.id)
        return len(reads) + len(writes)

    def _check_joined_arrays(self, groups: list, ins) -> None:
        """Rule 8: a kernel reads at most MAX_JOINED_ARRAYS arrays (not counting 0-d values)
        from memory. Counted only where `ins` brings a new one."""
        present = set().union(*(g.present for g in groups))
        if any(self._array_from_memory(v, present) for v in ins.inputs) and \
                self._arrays_read(groups, ins, present) > MAX_JOINED_ARRAYS:
            raise NotFusable(f"the kernel would read more than {MAX_JOINED_ARRAYS} arrays")

    def _arrays_read(self, kernels, ins=None, present: set | None = None) -> int:
        """How many arrays (not 0-d values) one kernel holding `kernels` (and `ins`) would
        read from memory (`present`: the ids of their instructions, if known)."""
        if present is None:
            present = set().union(*(k.present for k in kernels))
        instrs = [i for k in kernels for i in k.instrs] + ([ins] if ins is not None else [])
        return len({v.id for i in instrs for v in i.inputs if self._array_from_memory(v, present)})

    def _array_from_memory(self, v, present: set) -> bool:
        """Whether a kernel whose instructions' ids are `present` reads array `v` (not a 0-d
        value) from memory: nothing in it computes v."""
        p = self.producer.get(v.id)
        return bool(v.type.shape) and (p is None or id(p) not in present)

    def _reads(self, k: Kernel) -> set:
        inside = {id(i) for i in k.instrs}
        return {v.id for i in k.instrs for v in i.inputs
                if v.id not in self.producer or id(self.producer[v.id]) not in inside}

    def _admit(self, k: Kernel, ins) -> None:
        """Make `ins` a member of `k`, with the free instructions it reads."""
        for f in self._free_cone(ins):
            if id(f) not in k.present:
                k.instrs.append(f)
                k.present.add(id(f))
        k.instrs.append(ins)
        k.present.add(id(ins))
        k.members.add(id(ins))
        k.reduces = k.reduces or is_reduction(ins)
        k.math += calls_math(OPS[ins.op])
        k.last = max(k.last, self.pos[id(ins)])
        for v in ins.outputs:
            self.node_of[v.id] = k
        self.preds[k] |= set().union(*(self._deps(v) for v in ins.inputs)) - {k}

    def _free_cone(self, ins) -> list:
        out, stack = [], list(ins.inputs)
        while stack:
            v = stack.pop()
            p = self.producer.get(v.id)
            if p is not None and id(p) in self.free and p not in out:
                out.append(p)
                stack.extend(p.inputs)
        return out

    def _roots(self, members: list) -> list:
        """Values computed by `members` that something outside them reads (conservatively:
        instructions not yet scheduled count as outside)."""
        inside = {id(i) for i in members}
        roots = []
        for ins in sorted(members, key=lambda i: self.pos[id(i)]):
            for v in ins.outputs:
                if v.id in self.outputs or any(id(c) not in inside for c in self.consumers.get(v.id, ())):
                    roots.append(v)
        return roots

    def _finish_kernel(self, k: Kernel) -> None:
        k.instrs.sort(key=lambda i: self.pos[id(i)])
        members = [i for i in k.instrs if id(i) not in self.free]
        k.inlined = [i for i in k.instrs if id(i) in self.free]
        k.stores = self._roots(members)
        k.analysis = LoopNest(k.space, k.axes, self._computed(k.members)).analysis(k.stores, reductions_of(members))
        k.nest = None

    def _ordered_steps(self) -> list:
        """Steps in a dependency order, ties broken by program position."""
        import heapq

        def first(node):
            if isinstance(node, Kernel):
                return min(self.pos[id(i)] for i in node.instrs if id(i) not in self.free)
            return self.pos[id(node.instr)]

        waiting = {n: len(self.preds[n]) for n in self.nodes}
        succ: dict = {}
        for n, ps in self.preds.items():
            for p in ps:
                succ.setdefault(p, []).append(n)
        order = {n: k for k, n in enumerate(self.nodes)}
        ready = [(first(n), order[n], n) for n in self.nodes if waiting[n] == 0]
        heapq.heapify(ready)
        steps = []
        while ready:
            _, _, n = heapq.heappop(ready)
            steps.append(n if isinstance(n, Step) else Step(KERNEL, kernel=n))
            for m in succ.get(n, ()):
                waiting[m] -= 1
                if waiting[m] == 0:
                    heapq.heappush(ready, (first(m), order[m], m))
        if len(steps) != len(self.nodes):
            raise AssertionError("internal error: the fusion schedule has a cycle")
        return steps


# ------------------------------------------------------------------ legality helpers
def _own_space(ins) -> tuple:
    """(space, reduction axes) of a kernel holding only `ins`."""
    if OPS[ins.op].group == REDUCE:
        return ins.inputs[0].shape, tuple(dict(ins.attrs)["axes"])
    return ins.outputs[0].shape, ()


def _joined_space(groups: list, ins) -> tuple:
    """(space, row axes) of `groups` fused with `ins`, or NotFusable.

    Kernels that reduce keep their loops (and must agree on them); pointwise
    kernels take the loops of the instruction that joins them (its broadcast
    or permuted output shape, or the reduction's operand shape). A reduction
    whose axes are the trailing dims of the space becomes the kernel's row
    reduction; any other is a tail reduction. Whether every value fits the
    loops is then checked by a LoopNest.
    """
    reducing = [g for g in groups if g.reduces]
    if not reducing:
        space, axes = _own_space(ins)
        return space, (axes if row_axes_ok(space, axes) else ())
    space = reducing[0].space
    axes = next((g.axes for g in reducing if g.axes), ())
    for g in reducing:
        if g.space != space or (g.axes and g.axes != axes):
            raise NotFusable(f"kernels over {list(space)} (row axes {axes}) and {list(g.space)} (row axes "
                             f"{g.axes}) have different loops")
    if is_reduction(ins) and not axes:
        a = tuple(dict(ins.attrs)["axes"])
        if ins.inputs[0].shape == space and row_axes_ok(space, a):
            axes = a
    return space, axes
