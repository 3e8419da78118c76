"""Source generation: one readable Numba function per fused kernel.

The generator walks back from what the kernel must produce (stored values
and reduction operands) and builds an expression for each value at the index
where it is read (codegen/indexing.py). A value read once is inlined into its
reader; a value read twice, or by a deeper loop, gets a named temporary
placed in the outermost loop where its indices are all bound (loop-invariant
values are hoisted). Loads index arrays with the loop variables (0 for
size-1 dims); 0-d operands arrive as scalars. A value a phase stores is read
back from its output by later phases of the same row, not recomputed; a
costly value (one that calls fg_* math) a later phase needs goes through a row
buffer (`rb<k>`, one per block of rows, so per thread). The loops follow
codegen/loopnest.py: outer loops, phases of inner loops, epilogues.

What keeps the hot loop vectorised (tests/test_codegen_kernels.py checks the
assembly of W1's kernel): a float32 sum over the innermost loop adds up in
float32 over chunks of CHUNK elements (`csum<n>`; one partial sum per vector
lane) and each chunk's sum in float64, since float64 arithmetic in the loop
would halve its vector width (measured: W1's kernel took 2.45 ms with its
operand staged in a buffer and summed in float64 after the loop, 1.96 ms so;
W2's 1.54 ms with float64 row sums, 1.24 ms so); a
tail reduction that does not move with the inner loops sums each row into a
local scalar (`lacc<n>`) instead of a memory cell; loop variables of ranges
that start at a block offset index arrays as `np.uintp`, because Numba's
negative-index wrap-around would otherwise make every load a gather.

Extents are arguments (`n0, n1, ...`), never constants, so one compiled
kernel serves every size with the same rank, size-1 pattern and dtypes.
Constants other than a few literals (0, 1, -1, 2, 0.5, inf, nan) are
arguments too (`c0, ...`): a mean's element count or a learning rate must
not make a new kernel. Argument order: extents, loads, constants, outputs.

Sums accumulate in float64 for floating dtypes (int64/bool otherwise;
float32 sums over the innermost loop, above, in float32 chunks first, and
float32 column sums in a row kernel in float32 over ROW_CHUNK rows first) through `fg_acc_add`, an addition LLVM may reassociate so that the loop
vectorises; float max/min use `fg_acc_max`/`fg_acc_min` (LLVM's NaN-
propagating maximum/minimum), which vectorise too (codegen/accumulate.py).
A reduction to one value (no outer loops) runs in blocks of about BLOCK
elements (BLOCK elements of a vector; whole rows of its first dim otherwise)
whose partial results are combined at the end; tail reductions over the parallel dim accumulate per block of rows.
Blocks are the unit of parallel work: the parallel variant of a kernel is
the same source with `prange` for its outermost loop.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from fusegrad.ir.ops import ELEMENTWISE, MOVEMENT, OPS, REDUCE, SOURCE
from fusegrad.ir.types import int64

from . import noalias, picks, segments
from .in_place import in_place_pairs
from .indexing import Clamped, identity, index_dims, operand_index
from .loopnest import live_dims, recursion_room
from .picks import Picked
from .schedule import Kernel, calls_math

BLOCK = 4096               # elements of the first dim per block of a reduction to one value
CHUNK = 1024               # elements of the innermost loop per float32 chunk sum (_accumulate)
MAX_BLOCKS = 32            # blocks of rows for tail reductions over the parallel dim
ROW_CHUNK = 64             # rows per float32 partial of a column sum inside a row kernel (_accumulate)
PLANE_ROWS = 4096          # elements of a plane-first kernel's accumulators, per chunk of its first kept dim
PLANE_SEGMENTS = 8         # parallel blocks a plane-first kernel makes up with segments of its reduced dim
MAX_SEGMENT_PARTIALS = 1 << 18   # cap on nseg * (plane size) for those segments' partial sums
MAX_PARTIALS = 1 << 22     # cap on nblocks * (accumulator size) for those blocks
MAX_NESTING = 6            # deeper expressions are split into named temporaries
TILE = 16                  # square tiles of a pointwise kernel that reads an operand transposed
_CTOR = {"bool": "np.bool_", "int64": "np.int64", "float32": "np.float32", "float64": "np.float64"}
_INIT = {
    "add": {"f": "0.0", "i": "0", "b": "False"},
    "max": {"f": "-np.inf", "i": "-9223372036854775808", "b": "False"},
    "min": {"f": "np.inf", "i": "9223372036854775807", "b": "True"},
}
# (noalias: codegen/noalias.py; the kernel module imports it before its decorators run)
_JIT_OPTIONS = 'error_model="numpy", nogil=True' + (", noalias=True" if noalias.SUPPORTED else "")


def _operand(text: str) -> str:
    """`text` made safe as an operand of a binary operator: a name, a number or one call or
    parenthesised group as it is, anything else (`i0 - 2`) in parentheses."""
    if re.fullmatch(r"[\w.]+", text):
        return text
    if text.endswith(")"):
        depth, opening = 0, text.find("(")
        if opening >= 0 and re.fullmatch(r"[\w.]*", text[:opening]):
            for k, c in enumerate(text):
                depth += c == "("
                depth -= c == ")"
                if depth == 0 and k >= opening:
                    return text if k == len(text) - 1 else f"({text})"
    return f"({text})"


def _shifted(source: str, offset: int, constant) -> str:
    """`source` moved back by `offset` (forward where it is negative: `i1 + 2` for a slice
    starting at 2); `constant` renders the amount (a literal or a kernel argument)."""
    if offset == 0:
        return source
    return f"{source} - {constant(offset)}" if offset > 0 else f"{source} + {constant(-offset)}"


def _literal(value) -> bool:
    """Constants written into the source; all others are passed as arguments."""
    if isinstance(value, bool) or value in (0, 1, -1, 2, 0.5, -0.5):
        return True
    try:
        return not math.isfinite(float(value))
    except (TypeError, ValueError, OverflowError):
        return True


def _kind(dtype) -> str:
    return "f" if dtype.is_floating_point else ("b" if dtype.name == "bool" else "i")


def ctor(dtype) -> str:
    """The NumPy scalar constructor that generated source uses for `dtype`, e.g. "np.float32"."""
    return _CTOR[dtype.name]


@dataclass(eq=False)
class _Node:
    """An expression: how to render it, which loop dims it reads, where it goes."""
    render: object                 # callable(list of child texts) -> str
    children: list
    deps: frozenset                # kernel dims whose loop variables it reads
    level: int                     # 1 + latest row-reduction phase it needs (0: none)
    region: tuple
    seq: int
    trivial: bool = False          # constants and scalar arguments: always inlined
    costly: bool = False           # calls fg_* math: worth a row buffer rather than a recomputation
    users: list = field(default_factory=list)   # scopes of its readers
    name: str | None = None
    scope: tuple | None = None
    pick: object = None            # callable() -> the one child to render instead (a select in a segment), or None


@dataclass(eq=False)
class _Reduction:
    """One reduction of the kernel: its accumulator and how it combines values."""
    n: int                         # numbers its variables: acc<n>, r<n>, tacc<n>, part<n>
    combine: str                   # "add", "max" or "min"
    kind: str                      # "f", "i" or "b": floating, integer or bool accumulation
    acc_ctor: str                  # constructor of the accumulator's dtype
    out_ctor: str                  # constructor of the result's dtype
    stage: int | None              # phase of a row reduction
    tail: object                   # loopnest.Tail of a tail reduction
    blocked: bool = False          # a tail accumulating per block of rows
    node: _Node | None = None      # a row reduction's result
    local: str | None = None       # a tail summed per row into this scalar, then flushed (see _accumulate)
    flush: str | None = None       # ... into this accumulator
    chunk_sum: str | None = None   # float32 sum of the operand over one chunk of the innermost loop
    picked: bool = False           # reads one element per row (codegen/picks.py): no accumulator
    row_chunked: bool = False      # a column sum added in float32 over ROW_CHUNK rows (cpart<n>), then folded
    plane_chunked: bool = False    # a plane-first chunk's sums added in float32 over ROW_CHUNK (cacc<n>)

    @property
    def acc(self) -> str:
        return f"acc{self.n}"

    @property
    def name(self) -> str:
        return f"r{self.n}"

    @property
    def fill(self) -> str:
        return _INIT[self.combine][self.kind]

    @property
    def init(self) -> str:
        return f"{self.acc_ctor}({self.fill})"


@dataclass
class KernelSource:
    """The generated function(s) of one kernel and their calling convention."""
    name: str
    functions: list                # (name, parallel?, undecorated definition)
    imports: dict                  # module -> sorted names
    extents: list                  # kernel dims passed as n<d>, in order
    loads: list                    # values passed after the extents, in order
    scalar_loads: list             # True where a load is passed as a scalar (0-d)
    params: list                   # (value, dtype) of constants passed after the loads
    stores: list                   # values written, passed last, in order
    parallel_loop: bool            # the kernel has a loop that prange parallelises
    in_place: tuple = ()           # (k, j): output k may be written over load j (codegen/in_place.py)
    cut: tuple = ()                # (dim, positions): the innermost loop cut there (codegen/segments.py)
    plane_dim: int | None = None   # a plane-first kernel's chunked kept dim (_Generator._plane_first)

    def module_text(self, header: str, cache: bool) -> str:
        """A complete Python module defining the jitted kernel(s)."""
        lines = [header.rstrip(), "import numpy as np", "from numba import njit, prange"]
        if noalias.SUPPORTED:
            lines.append("import fusegrad.codegen.noalias  # noqa: F401  (njit's noalias option)")
        lines += [f"from {mod} import {', '.join(names)}" for mod, names in sorted(self.imports.items())]
        parts = []
        for fname, parallel, text in self.functions:
            opts = f"cache={cache}, {_JIT_OPTIONS}" + (", parallel=True" if parallel else "")
            parts.append(f"@njit({opts})\n{text}")
        return "\n".join(lines) + "\n\n\n" + "\n\n\n".join(parts) + "\n"


def generate(kernel: Kernel, math_module: str, acc_module: str = "fusegrad.codegen.accumulate") -> KernelSource:
    """The source of `kernel`, calling fg_* math from `math_module`.

    A pointwise kernel that reads an operand transposed (its contiguous axis follows an
    outer loop while the innermost loop strides across it: `x.t() * 2`, a transposed
    weight's update, `x.permute(2, 0, 1)`) is generated again with those two loops tiled
    (TILE x TILE): row by row, each read touches a new cache line (and, for large rows, a new
    page), and the next row reads the neighbouring element of each; within a tile those
    lines are still cached. Measured on a [4096, 1024] float32 `x.t() * 2`: 15-18 ms untiled
    (as NumPy's own transposed copy), 6-7.5 ms in 16 x 16 tiles; 64 x 64 tiles took 14 ms (rows
    16 KiB apart fall into few cache sets, so a tall tile evicts its own lines)."""
    with recursion_room(len(kernel.instrs)):
        generator = _Generator(kernel)
        source = generator.build(math_module, acc_module)
        tile = generator.transposed_pair()
        if tile is None:
            return source
        return _Generator(kernel, tile).build(math_module, acc_module)


class _Generator:
    def __init__(self, kernel: Kernel, tile: tuple | None = None):
        self.k = kernel
        self.tile = tile                 # (a, b): loop a and the innermost loop b, tiled (see generate)
        self.an = kernel.analysis
        self.space = kernel.space
        self.axes = tuple(kernel.axes)
        self.live = live_dims(self.space)
        self.outer = [d for d in self.live if d not in self.axes]
        self.inner = [d for d in self.live if d in self.axes]
        self.whole = not self.outer and bool(self.inner)     # one value per row reduction: blocked phases
        self.producer = {v.id: ins for ins in kernel.instrs for v in ins.outputs}
        pos = {id(ins): k for k, ins in enumerate(kernel.instrs)}
        tails = sorted(self.an.tails.values(), key=lambda t: pos[id(t.instr)])
        self.groups = list(dict.fromkeys(t.kept for t in tails))     # epilogues, by kept dims
        # (a column kernel whose tails keep a plane: blocks and chunks of that dim first, _plane_first)
        # (and the reduced dim whose segments share its parallel work with those blocks)
        self.plane_dim, self.plane_mid = self._plane_first(tails) or (None, None)
        self.plane_first = self.plane_dim is not None
        # (the dim whose blocks are the parallel work, when tails accumulate per block of it)
        self.block_dim = d0 = self.plane_dim if self.plane_first else self.outer[0] if self.outer else None
        self.blocked = d0 is not None and any(d0 not in t.kept for t in tails)
        self.loads: dict = {}            # value id -> (arg name, value)
        self.params: dict = {}           # (repr(value), dtype) -> (arg name, value, dtype)
        self.memo: dict = {}             # node key + region -> node
        self.requests: dict = {}         # (value id, index, requested region) -> node
        self.nodes: list = []
        self.sinks: list = []            # (scope, seq, callable() -> lines)
        self.red: dict = {}              # id(reduction instruction) -> _Reduction
        self.seq = 0
        self.locals_by_phase: dict = {}  # phase -> tails summed per row into a local (_accumulate)
        self.column_locals: list = []    # tails summed over the innermost outer loop into a local
        self.chunk_sums: dict = {}       # phase -> (reduction, accumulator) summed per chunk in float32
        self.unsigned = {self.inner[0]} if self.whole else set()   # dims looped from a block start
        if tile is not None:
            self.unsigned |= set(tile)
        if self.plane_first:
            self.unsigned.add(self.plane_dim)       # (its loop runs over a chunk: from its start)
        # One loop, over a vector's elements (no rows, no reduction): it runs in blocks of
        # BLOCK elements, the unit of parallel work, as a reduction to one value does. Under
        # prange the whole vector as one loop vectorised worse: W1's gradient alone took 7.3-7.5
        # ms in two threads so, 4.1 in blocks (ARCHITECTURE.md, "Blocks of a vector").
        self.flat_blocks = len(self.outer) == 1 and not self.inner and not self.blocked and tile is None
        if self.flat_blocks:
            self.unsigned.add(self.outer[0])
        self.load_indices: list = []     # (value, index) of every array read
        # Row buffers carry values between the phases of one row (rows of one inner dim).
        self.row_buffers_ok = bool(self.outer) and len(self.inner) == 1
        self.row_buffers: dict = {}      # value id -> name of the row buffer holding it
        self.buffer_dtypes: dict = {}    # row buffer name -> dtype constructor
        self.buffer_writers: dict = {}   # value id -> phases that write its row buffer
        # The innermost loop cut at cat's seams (codegen/segments.py): its dim and segments,
        # set by _plan_segments; `knowledge` answers what values are over the segment whose
        # body is being rendered (none outside one).
        self.knowledge = segments.Knowledge(self.producer)
        self.tests: list = []            # (value, index) of monotone comparisons: seams
        self.split_dim = None
        self.segments = None
        self.cut_loop_holds_phases = False   # the cut loop's segments wrote the phases' depth-0 statements

    def _plane_first(self, tails):
        """(The dim whose blocks and chunks this column kernel loops over first, each chunk
        with its own accumulators and epilogue, for the tails that keep it first; the
        first dim those reduce), or None: blocks of the first dim, accumulators over
        everything a tail keeps.

        A sum over leading dims that keeps a plane (`x.sum(0)` of [R, K1, K2], the
        gradient of a [K1, K2] parameter broadcast over a batch, `stack(...).mean(0)`)
        would otherwise run its parallel blocks over the reduced dim and accumulate each
        block into partials over the whole kept plane: plane-sized float64 arrays per
        block, new memory every call. [3, 2048, 1024] summed over dim 0 took 29 ms so
        (torch 3.0). Instead the kernel loops over chunks of the plane's first kept dim
        (`for blk: for lo1 (chunks of about PLANE_ROWS elements of the plane): for i0:
        for i1 in the chunk: for i2`): each chunk accumulates in a small array that stays
        in cache, read as contiguous runs, and finishes its epilogue at once; no
        plane-sized memory besides the result (where the plane is small, segments of the
        reduced dim share the work: _plane_sizes). Only when every tail that keeps the
        innermost dim (a plane) keeps that dim first, and no other tail keeps it but
        first: the others (a loss summed beside a gradient) accumulate per block, as
        before. A decision of structure only, so one kernel still serves every size."""
        if self.inner or not tails or len(self.outer) < 2 or self.tile is not None:
            return None
        last = self.outer[-1]
        planes = [t for t in tails if last in t.kept]
        if not planes:
            return None
        first = planes[0].kept[0]
        if any((first in t.kept) != (t.kept[:1] == (first,)) or (last in t.kept and first not in t.kept)
               for t in tails):
            return None
        return first, next(d for d in self.outer if d not in planes[0].kept)

    def _row_local(self, info: _Reduction) -> bool:
        """A tail accumulated per chunk of a plane-first kernel's plane dim (_plane_first)."""
        return info.tail is not None and self._chunked_group(info.tail.kept)

    def _chunked_group(self, kept: tuple) -> bool:
        """Whether tails keeping `kept` are a plane-first kernel's per-chunk ones (the plane dim first)."""
        return self.plane_first and kept[:1] == (self.plane_dim,)

    # -------------------------------------------------------------- expressions
    def _next(self) -> int:
        self.seq += 1
        return self.seq

    def expr(self, v, index, region) -> _Node:
        key = (v.id, index, region)
        node = self.requests.get(key)
        if node is None:
            node = self.requests[key] = self._build(v, index, region)
        return node

    def _build(self, v, index, region) -> _Node:
        ins = self.producer.get(v.id)
        if ins is None:
            return self._load(v, index, region)
        written = self.written.get(v.id)
        if written is not None and self.inner and region[0] == "inner" and region[1] > written[0] \
                and index == self.identity:
            # Stored by an earlier phase of this row: read it back instead of recomputing.
            # (Not when every reduced dim has size 1: then no inner loops separate the
            # phases, they share one loop body, and the read would be placed before the store.)
            k = written[1]
            return self._node(("reread", v.id), lambda t: f"o{k}[{self._subscript(index)}]", [], region,
                              deps={i for i in index if i is not None})
        if region[0] == "inner" and index == self.identity and self.row_buffers_ok:
            for p in range(region[1]):
                earlier = self.requests.get((v.id, index, ("inner", p)))
                if earlier is not None and earlier.costly and earlier.region == ("inner", p):
                    return self._reuse(earlier, v, region)
        opdef = OPS[ins.op]
        if opdef.group == REDUCE:
            return self._reduction_result(ins, region)
        if opdef.group == MOVEMENT:
            return self.expr(ins.inputs[0], operand_index(ins, index, 0), region)
        if opdef.group == SOURCE:
            return self._source(ins, index, region)
        children = [self.expr(u, operand_index(ins, index, k), region) for k, u in enumerate(ins.inputs)]
        attrs = dict(ins.attrs)
        dtype = ins.outputs[0].dtype
        if isinstance(opdef.expr, str):
            def render(texts, template=opdef.expr):
                return template.format(*texts)
        else:
            def render(texts, fn=opdef.expr, attrs=attrs):
                return fn(texts, attrs)
        if not dtype.is_floating_point:
            # Numba types bool/int arithmetic its own way (True + True is 2):
            # state the IR's dtype.
            def render(texts, inner=render, c=ctor(dtype), alt=f"np.{dtype.np.name}("):
                text = inner(texts)
                return text if text.startswith(c + "(") or text.startswith(alt) else f"{c}({text})"
        if opdef.group == ELEMENTWISE and dtype.name == "bool":
            render = self._known_condition(render, v, index)
        if opdef.extra.get("monotone"):
            self.tests.append((v, index))
        divisor = opdef.extra.get("reciprocal_of")
        if divisor is not None and dtype.is_floating_point:
            hoisted = self._by_reciprocal(v, index, children, divisor, region, dtype)
            if hoisted is not None:
                return hoisted
        node = self._node(("op", v.id, index), render, children, region)
        node.costly = calls_math(opdef)
        if opdef.extra.get("select"):
            node.pick = self._picked_operand(ins, index)
        return node

    def _known_condition(self, render, v, index):
        """`render` of a condition, except inside a segment of a cut loop (codegen/segments.py)
        where its answer is the same over the whole segment: that answer."""
        def in_segment(texts):
            known = self.knowledge.value(v, index)
            if known is not None and known[0] == "c":
                return "True" if known[1] else "False"
            return render(texts)
        return in_segment

    def _picked_operand(self, ins, index):
        """For select `ins` read at `index`: a callable giving the operand it picks inside the
        segment being rendered where its condition is known there (1: true, 2: false), else None."""
        condition, at = ins.inputs[0], operand_index(ins, index, 0)

        def pick():
            known = self.knowledge.value(condition, at)
            return None if known is None or known[0] != "c" else 1 if known[1] else 2
        return pick

    def _by_reciprocal(self, v, index, children, k: int, region, dtype):
        """`x / y` where y is the same for every step of the innermost loop around the division,
        but not for the whole kernel, and x is not (a row's standard deviation or sum): `x * (1 / y)`, the reciprocal a named
        temporary outside that loop. A division costs 4-16 times a multiplication: W2's kernel
        (6 divisions an element) 5.7 -> 2.9 ms serial. The product, corrected by its residual
        (accumulate.fg_acc_quotient: two fused multiply-adds), is the correctly rounded
        quotient, so `x / x.amax()` is exactly 1 at the maximum. Where 1 / y is not a normal
        number (|y| below 2**-126 or above 2**126 in float32) the product could overflow or
        lose bits, so the loop divides then: the flag is loop-invariant and LLVM unswitches
        the loop on it. None where it does not apply."""
        x, y = children[1 - k], children[k]
        deps = frozenset().union(*(c.deps for c in children))
        probe = _Node(None, [], deps, max(c.level for c in children), self._region(deps, region), 0)
        loop = self._innermost_dim(self._scope(probe))
        # (not a divisor the same for the whole kernel, a Python scalar's `x / 7`: division by a
        # constant stays exact, as eagerly, where a row's statistic is computed differently
        # in a kernel anyway)
        if loop is None or not y.deps or loop in y.deps or loop not in x.deps:
            return None
        c, info = ctor(dtype), np.finfo(dtype.np)
        low, high = repr(float(info.tiny)), repr(float(2.0 ** (info.maxexp - 2)))
        # (keyed by the divisor's node: every division by it shares one reciprocal)
        inverse = self._node(("reciprocal", y.seq), lambda t: f"({c}(1.0) / {t[0]})", [y], region)
        normal = self._node(("reciprocal normal", y.seq),
                            lambda t: f"({c}({low}) <= abs({t[0]}) <= {c}({high}))", [y], region)
        node = self._node(("op by reciprocal", v.id, index),
                          lambda t: f"(fg_acc_quotient({c}({t[0]}), {c}({t[1]}), {c}({t[2]})) if {t[3]} else ({t[0]} / {t[1]}))",
                          [x, y, inverse, normal], region)
        x.users.append(node.scope)          # (read twice in the text: a named temporary)
        return node

    def _innermost_dim(self, scope):
        """The dim of the innermost loop a scope sits in (None at the top level)."""
        kind = scope[0]
        if kind == "inner" and scope[2]:
            return self.inner[scope[2] - 1]
        if kind == "outer" and scope[1]:
            return self.outer[scope[1] - 1]
        if kind == "epi" and scope[2]:
            return self.groups[scope[1]][scope[2] - 1]
        return None

    def _reuse(self, earlier: _Node, v, region) -> _Node:
        """A costly value an earlier phase of this row computed (softmax's exp(x - max),
        summed in one phase and divided in the next): that phase writes it into a
        row buffer, later phases read it back."""
        name = self.row_buffers.get(v.id)
        d = self.inner[-1]
        if name is None:
            name = self.row_buffers[v.id] = f"rb{len(self.row_buffers)}"
            self.buffer_dtypes[name] = ctor(v.dtype)
        # The phase that computed `earlier` writes the buffer, so this read (a later phase) finds
        # it filled. A value can be computed in several phases (requests are built in dependency
        # order, not phase order): a buffer a later phase already writes gets this earlier
        # writer too (both write the same values), or the read would see the previous row's.
        writers = self.buffer_writers.setdefault(v.id, set())
        phase = earlier.region[1]
        if phase not in writers:
            writers.add(phase)
            scope = ("inner", phase, len(self.inner))
            earlier.users.append(scope)
            earlier.users.append(scope)        # two readers: it gets a named temporary
            self.sinks.append((scope, self._next(),
                               lambda: [f"{name}[{self._subscript_entry(d)}] = {self._text(earlier)}"]))
        return self._node(("rowbuf", v.id), lambda t: f"{name}[{self._subscript_entry(d)}]", [], region, deps={d})

    def _node(self, key, render, children, region, deps=None, level=None, trivial=False) -> _Node:
        deps = frozenset().union(*(c.deps for c in children)) if deps is None else frozenset(deps)
        level = max((c.level for c in children), default=0) if level is None else level
        region = self._region(deps, region)
        full_key = key + (region,)
        node = self.memo.get(full_key)
        if node is None:
            node = _Node(render, children, deps, level, region, self._next(), trivial)
            node.scope = self._scope(node)
            for c in children:
                c.users.append(node.scope)
            self.memo[full_key] = node
            self.nodes.append(node)
        return node

    def _region(self, deps, region) -> tuple:
        """Nodes that read no inner loop variable live at the outer level, shared by all phases."""
        if region[0] == "inner" and not (deps & set(self.inner)):
            return ("main",)
        return region

    def _scope(self, node) -> tuple:
        deps, region = node.deps, node.region
        if region[0] == "epi":
            kept = self.groups[region[1]]
            return ("epi", region[1], 1 + max((kept.index(d) for d in deps if d in kept), default=-1))
        if region[0] == "inner":
            return ("inner", region[1], 1 + max(self.inner.index(d) for d in deps if d in self.inner))
        if node.level:
            return ("post", node.level - 1)
        return ("outer", 1 + max((self.outer.index(d) for d in deps if d in self.outer), default=-1))

    def _load(self, v, index, region) -> _Node:
        if v.id not in self.loads:
            self.loads[v.id] = (f"a{len(self.loads)}", v)
        self.load_indices.append((v, index))
        arg = self.loads[v.id][0]
        if v.type.ndim == 0:
            return self._node(("load", v.id, index), lambda t, arg=arg: arg, [], region, deps=(), trivial=True)
        picked = [e for e in index if isinstance(e, Picked)]
        if picked:
            # One element per row at a computed position (codegen/picks.py): the position
            # is a child, so it is computed (and named) before the read.
            position = picked[0].node
            rest = tuple(e for e in index if not isinstance(e, Picked))

            def render(t, arg=arg, index=index):
                return f"{arg}[" + ", ".join(f"np.uintp({t[0]})" if isinstance(e, Picked) else
                                             self._subscript_entry(e) for e in index) + "]"
            return self._node(("load", v.id, index), render, [position], region,
                              deps=index_dims(rest) | position.deps)
        return self._node(("load", v.id, index), lambda t: f"{arg}[{self._subscript(index)}]", [], region,
                          deps=index_dims(index))

    def _source(self, ins, index, region) -> _Node:
        attrs = dict(ins.attrs)
        if "value" in attrs and not _literal(attrs["value"]):
            # Constants become arguments: element counts (mean), learning
            # rates... must not make a new kernel for every new value.
            key = (repr(attrs["value"]), attrs["dtype"].name)
            if key not in self.params:
                self.params[key] = (f"c{len(self.params)}", attrs["value"], attrs["dtype"])
            name = self.params[key][0]
            return self._node(("param", key), lambda t, name=name: name, [], region, deps=(), trivial=True)
        text = OPS[ins.op].expr([], attrs)
        # (sources name their own dims i0, i1...: read at `index`; rendered when written, so
        # that inside a segment of a cut loop a clamped position is written as what it is there)
        read = [index[int(k)] for k in re.findall(r"\bi(\d+)\b", text)]
        used = set(index_dims(tuple(i for i in read if i is not None)))

        def render(t, text=text):
            return re.sub(r"\bi(\d+)\b", lambda m: "0" if index[int(m.group(1))] is None else
                          self._position(index[int(m.group(1))]), text)
        return self._node(("src", id(ins), index), render, [], region, deps=used, trivial=not used)

    def _reduction_result(self, ins, region) -> _Node:
        info = self.red[id(ins)]
        if info.tail is None:
            return info.node
        g = self.groups.index(info.tail.kept)
        node = self._node(("tail", id(ins)), lambda t, name=info.name: name, [], ("epi", g),
                          deps=set(info.tail.kept), level=0)
        node.name = info.name
        return node

    # -------------------------------------------------------------- the kernel
    def build(self, math_module: str, acc_module: str) -> KernelSource:
        self.identity = identity(self.space)
        self.written = {st.value.id: (st.phase, k) for k, st in enumerate(self.an.stores) if st.kind == "full"}
        reds = [ins for ins in self.k.instrs if OPS[ins.op].group == REDUCE]
        stages, tails = self.an.stages, self.an.tails
        for n, ins in enumerate(reds):
            self._declare_reduction(n, ins, stages.get(id(ins)), tails.get(id(ins)))
        # In phase order (a tail at the phase it accumulates in), so that a costly value is first
        # built in the earliest phase that computes it, and later phases read its row buffer.
        def phase_of(r):
            stage = stages.get(id(r))
            return stage if stage is not None else tails[id(r)].level if id(r) in tails else -1
        for ins in sorted(reds, key=phase_of):
            self._accumulate(ins)
        stores = []
        for st in self.an.stores:
            stores.append(st.value)
            self._store(len(stores) - 1, st)
        self._name_temporaries()
        body = self._emit()
        signature = ", ".join([f"n{d}" for d in self.live] + [a for a, _ in self.loads.values()] +
                              [p[0] for p in self.params.values()] + [f"o{k}" for k in range(len(stores))])
        parallel_loop = bool(self.outer) or self.whole
        functions = [("kernel", False, f"def kernel({signature}):\n" + body.replace("PRANGE", "range"))]
        if parallel_loop:
            functions.append(("kernel_parallel", True,
                              f"def kernel_parallel({signature}):\n" + body.replace("PRANGE", "prange")))
        imports = {}
        math_names = sorted(set(re.findall(r"\b(fg_(?!acc_)\w+)\(", body)))
        if math_names:
            imports[math_module] = math_names
        acc_names = sorted(set(re.findall(r"\b(fg_acc_\w+)\(", body)))
        if acc_names:
            imports[acc_module] = acc_names
        loads = [v for _, v in self.loads.values()]
        params = [(value, dtype) for _, value, dtype in self.params.values()]
        full = {k for k, st in enumerate(self.an.stores) if st.kind == "full" and st.index == self.identity}
        cut = (self.split_dim, tuple(lo for lo, _, _, _ in self.segments[1:])) if self.segments else ()
        return KernelSource("kernel", functions, imports, list(self.live), loads,
                            [v.type.ndim == 0 for v in loads], params, stores, parallel_loop,
                            in_place_pairs(functions[0][2], loads, stores, full), cut, self.plane_dim)

    def _declare_reduction(self, n: int, ins, stage, tail) -> None:
        combine = OPS[ins.op].expr
        dtype = ins.outputs[0].dtype
        kind = _kind(dtype)
        acc_ctor = "np.float64" if (kind == "f" and combine == "add") else ctor(dtype)
        red = _Reduction(n, combine, kind, acc_ctor, ctor(dtype), stage, tail)
        self.red[id(ins)] = red
        if tail is None:
            red.node = self._node(("red", id(ins)), lambda t, name=red.name: name, [], ("main",),
                                  deps=set(self.outer), level=stage + 1)
            red.node.name = red.name
        else:
            red.blocked = self.blocked and self.block_dim not in tail.kept

    def _accumulate(self, ins) -> None:
        """Fold the reduction's operand into its accumulator where the operand is computed.

        Two rewrites keep the innermost loop vectorisable:
        - a tail reduction whose accumulator does not move with the inner loops
          (a loss summed to one value inside a row kernel) sums each row into a
          local scalar, added to the accumulator after the row: an accumulator
          in memory would carry the loop through a store and a load;
        - a float32 sum over the innermost loop adds up in float32 over chunks
          of CHUNK elements, each chunk's sum then added in float64: float64
          arithmetic in the hot loop would halve its vector width (and that of
          everything else in it). The vectorised chunk sum keeps one partial
          sum per vector lane (and per unrolled copy), so each float32 partial
          adds up a few dozen values.
        """
        info = self.red[id(ins)]
        tail = info.tail
        inner_loop = bool(self.inner)
        if tail is None:
            phase = info.stage
            if self._pick(ins, info):
                return
            operand = self.expr(ins.inputs[0], identity(self.space), ("inner", phase))
            scope = ("inner", phase, len(self.inner))
            target = "b" + info.acc if self.whole else info.acc
            self.sinks.append((("finish", phase), self._next(),
                               lambda: [f"{info.name} = {info.out_ctor}({info.acc})"]))
        else:
            if tail.full:
                region, scope = ("inner", tail.level), ("inner", tail.level, len(self.inner))
            else:
                region = ("main",)
                scope = ("post", tail.level) if tail.level >= 0 else ("outer", len(self.outer))
                inner_loop = False
            operand = self.expr(ins.inputs[0], tail.in_index, region)
            target = self._tail_cell(info)
            if inner_loop and not set(tail.kept) & set(self.inner):
                info.local, info.flush = f"lacc{info.n}", target
                target = info.local
                self.locals_by_phase.setdefault(tail.level, []).append(info)
            else:
                inner_loop = False
                in_innermost = scope == ("outer", len(self.outer)) or scope[0] == "inner"
                if not self.inner and len(self.outer) >= 2 and in_innermost and self.outer[-1] not in tail.kept:
                    # The same rewrite for a kernel without row loops (a column sum, a loss
                    # summed to one value): a local over its innermost loop, flushed after it.
                    info.local, info.flush = f"lacc{info.n}", target
                    target = info.local
                    self.column_locals.append(info)
                    if _float32_sum(info, ins):
                        # ... added up in float32 over chunks of that loop first, as a sum over
                        # an innermost row loop is (_emit_main opens the chunks): a float64 add
                        # in the loop halves its vector width (sin(x) summed over dims (0, 2)
                        # of [64, 64, 1024]: see _emit_main)
                        info.chunk_sum = f"csum{info.n}"
                        self.unsigned.add(self.outer[-1])      # its loop starts at a chunk's offset
                        operand.users.append(scope)
                        self.sinks.append((scope, self._next(), lambda: [
                            f"{info.chunk_sum} = fg_acc_add({info.chunk_sum}, {self._text(operand)})"]))
                        return
        operand.users.append(scope)
        if inner_loop and _float32_sum(info, ins):
            info.chunk_sum = f"csum{info.n}"
            phase = info.stage if tail is None else tail.level
            self.chunk_sums.setdefault(phase, []).append((info, target))
            self.unsigned.add(self.inner[-1])          # its loop starts at a chunk's offset
            self.sinks.append((scope, self._next(), lambda: [
                f"{info.chunk_sum} = fg_acc_add({info.chunk_sum}, {self._text(operand)})"]))
            return
        if tail is not None and info.local is None and self._row_local(info) and \
                set(self.outer) - set(tail.kept) == {self.plane_mid} and _float32_sum(info, ins):
            # A plane-first sum over one dim ([R, K1, K2] -> [K1, K2], [K1, R, K2] -> [K1, K2]):
            # in float32 over ROW_CHUNK values of that loop, folded into the float64
            # accumulators after each run, as a blocked column sum's cpart (float64 in the
            # loop halves the vector width: [16, 512, 1024] exp(x).sum(0) took 6.9 ms so,
            # exp(x).sum(2) 3.0)
            info.plane_chunked = True
            self.sinks.append((scope, self._next(), lambda: [
                f"{self._cacc_cell(info)} += {self._text(operand)}"]))
            return
        if tail is not None and info.local is None:
            # A cell indexed by loop variables: rendered when emitted, when every loop that
            # runs in chunks is known (its variable indexes as unsigned).
            if scope[0] == "inner" and info.blocked and _float32_sum(info, ins):
                info.row_chunked = True
                self.sinks.append((scope, self._next(), lambda: [
                    f"{self._tail_cell(info, 'cpart')} += {self._text(operand)}"]))
                return
            self.sinks.append((scope, self._next(),
                               lambda: _update(info, self._tail_cell(info), self._text(operand), "v")))
            return
        self.sinks.append((scope, self._next(), lambda: _update(info, target, self._text(operand), "v")))

    def _tail_cell(self, info: _Reduction, blocked_array: str = "part") -> str:
        """The accumulator cell of tail reduction `info` at the current loop indices
        (`blocked_array` names the per-block array: part, or cpart for a row-chunked sum)."""
        if self._row_local(info):
            return self._row_cell(info)
        kept = ", ".join(self._subscript_entry(d) for d in info.tail.kept) or "0"
        return f"{blocked_array}{info.n}[blk, {kept}]" if info.blocked else f"tacc{info.n}[{kept}]"

    def _row_cell(self, info: _Reduction) -> str:
        """A plane-first chunk's accumulator cell (`tacc<n>`)."""
        return f"tacc{info.n}[" + ", ".join(map(self._chunk_entry, info.tail.kept)) + "]"

    def _cacc_dims(self, info: _Reduction) -> list:
        """The dims of a plane-chunked sum's float32 run accumulator (`cacc<n>`): those it
        keeps inside its reduced loop (the dims outside are bound while a run lasts)."""
        inside = self.outer[self.outer.index(self.plane_mid) + 1:]
        return [d for d in info.tail.kept if d in inside]

    def _cacc_cell(self, info: _Reduction) -> str:
        return f"cacc{info.n}[" + ", ".join(map(self._chunk_entry, self._cacc_dims(info))) + "]"

    # A plane-first chunk's arrays are indexed, sized and looped over by dim: the plane dim
    # counts from the chunk's start (`lo<p>`, at most `sub` indices), the others as usual.
    def _chunk_entry(self, d) -> str:
        p = self.plane_dim
        return f"np.uintp(i{p} - lo{p})" if d == p else self._subscript_entry(d)

    def _chunk_shape(self, dims) -> str:
        return "".join("sub, " if d == self.plane_dim else f"n{d}, " for d in dims)

    def _chunk_loop(self, d) -> str:
        if d != self.plane_dim:
            return self._loop(d)
        p = d
        return f"for i{p} in range(lo{p}, min(n{p}, pb * rows + rows, lo{p} + sub)):"

    def _pick(self, ins, info: _Reduction) -> bool:
        """Row reduction `ins` reads one element per row (codegen/picks.py): compute that
        element at its position, clamped into the row so that the read is always in
        bounds, and select the identity where the position lies outside the row."""
        if self.whole or not self.outer or len(self.inner) != 1:
            return False
        d = self.inner[0]
        found = picks.match(ins, self.producer, identity(self.space), d)
        if found is None or not picks.cone_is_pickable(found.value, self.producer, self.an.tails):
            return False
        region = ("inner", info.stage)
        position = self.expr(found.position, found.position_index, region)
        if d in position.deps:          # not one position per row
            return False
        clamped = self._node(("pick", id(ins)), lambda t, d=d: f"min(max({t[0]}, 0), n{d} - 1)", [position], region)
        at = tuple(Picked(clamped) if e == d else e for e in found.value_index)
        value = self.expr(found.value, at, region)
        fallback = self.expr(found.fallback, found.fallback_index, region)
        scope = ("finish", info.stage)
        for node in (position, value, fallback):
            node.users.append(scope)
        info.picked = True
        self.sinks.append((scope, self._next(), lambda: [
            f"{info.name} = {info.out_ctor}({self._text(value)} if 0 <= {self._text(position)} < n{d} "
            f"else {self._text(fallback)})"]))
        return True

    def _subscript(self, index) -> str:
        """Array subscript for `index`. Loop variables of ranges that do not start
        at 0 are cast to unsigned: Numba wraps negative indices around, and a
        select LLVM cannot fold turns the vectorised loop's loads and stores into
        gathers and scatters. So are Clamped entries (never negative)."""
        return ", ".join(self._subscript_entry(i) for i in index)

    def _subscript_entry(self, entry) -> str:
        if entry is None:
            return "0"
        if isinstance(entry, Clamped) or entry in self.unsigned:
            return f"np.uintp({self._position(entry)})"
        return f"i{entry}"

    def _position(self, entry) -> str:
        """The value of an index entry (not None): a loop variable, or a Clamped read
        (never negative; its offset and bound are arguments like other constants)."""
        if not isinstance(entry, Clamped):
            return f"i{entry}"
        segment = self.knowledge.segment
        over = segments.clamp_over(entry, segment) if segment is not None else None
        if over == "shift" or (entry.offset < 0 and entry.high is None and entry.step == 1):
            # (a negative offset with no upper bound, a slice's start: the clamp never acts)
            return _shifted(self._position(entry.source), entry.offset, self._int_constant)
        if over == "low":
            return "0"
        if over == "high":
            return self._int_constant(entry.high)
        text = self._position(entry.source)
        if entry.offset:
            text = f"max({text} - {self._int_constant(entry.offset)}, 0)"
        if entry.step != 1:
            # (a literal divisor: a shift or a multiply, where an argument would be a division;
            # a shifted source, `i0 - 2` in a cut loop's segment, is divided as a whole)
            text = f"({_operand(text)} // {entry.step})"
        if entry.high is not None:
            text = f"min({text}, {self._int_constant(entry.high)})"
        return text

    def _int_constant(self, value: int) -> str:
        """An integer in index arithmetic: a literal when small, else an argument
        (a cat's offsets change with the batch size; its kernel must not)."""
        if _literal(value):
            return str(value)
        key = (repr(value), int64.name)
        if key not in self.params:
            self.params[key] = (f"c{len(self.params)}", value, int64)
        return self.params[key][0]

    def _buffer_allocations(self) -> list:
        """Row buffers, allocated once per block of rows (each thread its own)."""
        d = self.inner[-1] if self.row_buffers else None
        return [f"{name} = np.empty(n{d}, {self.buffer_dtypes[name]})" for name in self.row_buffers.values()]

    def _store(self, k: int, st) -> None:
        if st.kind == "full":
            region, scope = ("inner", st.phase), ("inner", st.phase, len(self.inner))
        elif st.kind == "outer":
            region = ("main",)
            scope = ("post", st.phase) if st.phase >= 0 else ("outer", len(self.outer))
        else:
            g = self.groups.index(st.kept)
            region, scope = ("epi", g), ("epi", g, len(st.kept))
        node = self.expr(st.value, st.index, region)
        node.users.append(scope)
        self.sinks.append((scope, self._next(), lambda: [
            f"o{k}[{self._subscript(st.index) if st.index else '()'}] = {self._text(node)}"]))

    # -------------------------------------------------------------- naming and emission
    def _name_temporaries(self) -> None:
        """A node gets a named temporary when two readers share it, when its
        reader sits in a deeper loop (it was hoisted), or when inlining it would
        nest expressions more than MAX_NESTING deep; otherwise it is inlined."""
        count = 0
        nesting: dict = {}
        for node in self.nodes:          # children come before their readers
            nesting[id(node)] = 1 + max((nesting[id(c)] for c in node.children if c.name is None), default=0)
            if node.name is not None or node.trivial:
                continue
            where = self._loop_of(node.scope)
            if len(node.users) > 1 or any(self._loop_of(u) != where for u in node.users) or \
                    nesting[id(node)] >= MAX_NESTING:
                node.name = f"t{count}"
                nesting[id(node)] = 0
                count += 1

    def _loop_of(self, scope) -> tuple:
        """The loop body a scope sits in (scopes of one body may inline into each other)."""
        kind = scope[0]
        if kind == "outer":
            return ("O", scope[1])
        if kind == "inner" and scope[2]:
            return ("I", scope[1], scope[2])
        if kind == "epi":
            return ("E", scope[1], scope[2]) if scope[2] else ("O", 0)
        return ("O", len(self.outer))      # inner depth 0, post, finish: the innermost outer body

    def _text(self, node: _Node) -> str:
        if node.name is not None:
            return node.name
        return self._rendered(node)

    def _rendered(self, node: _Node) -> str:
        """The expression of `node` (its children by name or inlined)."""
        picked = node.pick() if node.pick is not None else None
        if picked is not None:
            return self._text(node.children[picked])
        return node.render([self._text(c) for c in node.children])

    def _named_nodes(self, scope) -> list:
        """The nodes whose named temporaries are assigned in `scope` (not reductions' r<n>)."""
        return [n for n in self.nodes if n.scope == scope and n.name is not None and not n.name.startswith("r")]

    def _statements(self, scope) -> list:
        self.written_scopes.add(scope)
        items = [(n.seq, [f"{n.name} = {self._rendered(n)}"]) for n in self._named_nodes(scope)]
        items += [(seq, make) for sc, seq, make in self.sinks if sc == scope]
        out = []
        for _, item in sorted(items, key=lambda x: x[0]):
            out.extend(item() if callable(item) else item)
        return out

    def _plan_segments(self) -> None:
        """Cut the innermost loop at cat's seams (codegen/segments.py) where a clamped read
        along it would keep it from vectorising: sets split_dim and segments."""
        if self.tile is not None:
            return
        if self.plane_first and self.plane_dim == self.outer[-1]:
            return                      # (its innermost loop runs over chunks: not cut)
        if self.inner:
            d = self.inner[-1]
        elif self.outer and (len(self.outer) > 1 or self.flat_blocks) and not any(
                self._has_statements((kind, p)) for kind in ("finish", "post") for p in range(self.an.phases)):
            # (a loop nest with nothing after its innermost body: _emit_main's last loop, plain,
            # in chunks or the flat blocks', writes the phases' depth-0 statements per segment)
            d = self.outer[-1]
        else:
            return
        size = self.space[d]
        seams = [p for _, index in self.load_indices for entry in index for p in segments.clamp_seams(entry, d)]
        if not seams:
            return
        seams += [p for v, index in self.tests for p in self.knowledge.seams(v, index, d, size)]
        cuts = segments.plan(seams, size)
        if cuts is None:
            return
        self.split_dim = d
        self.segments = [(lo, hi, None if lo == 0 else self._int_constant(lo),
                          None if hi == size else self._int_constant(hi)) for lo, hi in cuts]
        self.unsigned.add(d)            # (its segments' loops start past 0)

    def _has_statements(self, scope) -> bool:
        """Whether `scope` has statements (_statements), without rendering them."""
        return any(sc == scope for sc, _, _ in self.sinks) or bool(self._named_nodes(scope))

    def _segment_loops(self, put, depth: int, d, start: str, stop: str, scope) -> bool:
        """The loop over dim `d` from `start` to `stop` (texts) with the statements of `scope`
        as its body, written once per segment where the loop is cut (returns True), else
        nothing (returns False). The innermost outer loop of a kernel without row loops
        holds its phases' depth-0 statements too (_loop_of)."""
        if d != self.split_dim:
            return False
        scopes = [scope] + ([("inner", p, 0) for p in range(self.an.phases)] if scope[0] == "outer" else [])
        self.cut_loop_holds_phases = scope[0] == "outer"
        for lo, hi, lo_text, hi_text in self.segments:
            first = start if lo_text is None else (lo_text if start == "0" else f"max({start}, {lo_text})")
            last = stop if hi_text is None else hi_text if stop == f"n{d}" else \
                f"min({stop[4:-1] if stop.startswith('min(') else stop}, {hi_text})"
            put(depth, f"for i{d} in range({first}, {last}):")
            self.knowledge.over(segments.Segment(d, lo, hi))
            for stmt in [stmt for sc in scopes for stmt in self._statements(sc)]:
                put(depth + 1, stmt)
        self.knowledge.over(None)
        return True

    def _emit(self) -> str:
        lines: list = []
        self.written_scopes = set()
        self._plan_segments()

        def put(depth, text):
            lines.append("    " * (depth + 1) + text)

        self._emit_main(put)
        self._emit_epilogues(put)
        if self.plane_first:                # (the segments' partial sums, combined)
            put(0, "if nseg > 1:")
            self._emit_epilogues(put, 1, row_local=True, segments=True)
        # (every statement has a loop body that wrote it: a scope no loop asked for would drop
        # a store or an accumulation silently)
        unwritten = {sc for sc, _, _ in self.sinks} - self.written_scopes
        assert not unwritten, f"kernel statements of scopes {sorted(unwritten)} were not written"
        return "\n".join(lines) if lines else "    pass"

    def _emit_main(self, put) -> None:
        others = [f"n{d}" for d in self.live[1:]] if self.outer else []
        # Rows run in blocks when tails accumulate per block, or so that each
        # block (each thread) allocates its row buffers once.
        row_blocks = not self.plane_first and (self.blocked or (bool(self.outer) and bool(self.row_buffers)))
        chunked = [info for info in self.red.values() if info.row_chunked]
        assert not (chunked and self.plane_first), "row-chunked partials in a plane-first kernel"
        plane_chunks = [info for info in self.red.values() if info.plane_chunked]
        row_depth = middle_depth = 0
        if self.plane_first:
            self._plane_sizes(put)
        elif row_blocks:
            d0 = self.outer[0]
            size = " * ".join(others) or "1"
            put(0, f"nblocks = max(1, min(n{d0}, {MAX_BLOCKS}, {MAX_PARTIALS} // max(1, {size})))")
            put(0, f"rows = (n{d0} + nblocks - 1) // nblocks")
        if self.whole and len(self.inner) > 1:
            put(0, f"step = max(1, {BLOCK} // max(1, {' * '.join(f'n{d}' for d in self.inner[1:])}))")
            put(0, f"nblocks = (n{self.inner[0]} + step - 1) // step")
        elif self.whole:
            put(0, f"nblocks = (n{self.inner[0]} + {BLOCK - 1}) // {BLOCK}")
        for info in self.red.values():
            tail = info.tail
            if tail is None or self._row_local(info):      # (a chunk's accumulators: per block, below)
                continue
            shape = "".join(f"n{d}, " for d in tail.kept) or "1, "
            put(0, f"tacc{info.n} = np.full(({shape}), {info.fill}, {info.acc_ctor})")
            if info.blocked:
                put(0, f"part{info.n} = np.full((nblocks, {shape}), {info.fill}, {info.acc_ctor})")
            if info.row_chunked:
                put(0, f"cpart{info.n} = np.full((nblocks, {shape}), 0.0, np.float32)")
        for stmt in self._statements(("outer", 0)):
            put(0, stmt)
        depth = 0
        if self.plane_first:
            # blocks of the plane dim (each in chunks of `sub` indices with accumulators of
            # their own) times segments of its reduced dim
            p = self.plane_dim
            put(0, "for blk in PRANGE(nblocks):")
            put(1, "pb = blk // nseg")
            put(1, "sg = blk - pb * nseg")
            for info in filter(self._row_local, self.red.values()):
                put(1, f"tacc{info.n} = np.empty(({self._chunk_shape(info.tail.kept)}), {info.acc_ctor})")
                if info.plane_chunked:
                    put(1, f"cacc{info.n} = np.empty(({self._chunk_shape(self._cacc_dims(info))}), np.float32)")
            put(1, f"for lo{p} in range(pb * rows, min(n{p}, pb * rows + rows), sub):")
            for info in filter(self._row_local, self.red.values()):
                put(2, f"tacc{info.n}.fill({info.fill})")
            row_depth = depth = 2
        column_chunks = [info for info in self.column_locals if info.chunk_sum]
        for k, d in enumerate(self.outer):
            if k == len(self.outer) - 1 and k > 0:
                for info in self.column_locals:
                    put(depth, f"{info.local} = {info.init}")
            if self.plane_first and d == self.plane_dim:
                if k == len(self.outer) - 1:
                    for info in column_chunks:  # (the innermost loop's chunk is the plane's)
                        put(depth, f"{info.chunk_sum} = np.float32(0.0)")
                put(depth, self._chunk_loop(d))
                depth += 1
            elif self.plane_first and d == self.plane_mid and plane_chunks:
                # (a plane-first sum over the first dim, its segment in chunks: see _accumulate)
                put(depth, f"for rc in range(sg * segrows, min(n{d}, sg * segrows + segrows), {ROW_CHUNK}):")
                for info in plane_chunks:
                    put(depth + 1, f"cacc{info.n}.fill(0.0)")
                put(depth + 1, f"for i{d} in range(rc, min(n{d}, sg * segrows + segrows, rc + {ROW_CHUNK})):")
                middle_depth = depth + 1
                depth += 2
            elif self.plane_first and d == self.plane_mid:
                put(depth, f"for i{d} in range(sg * segrows, min(n{d}, sg * segrows + segrows)):")
                depth += 1
            elif k == 0 and row_blocks:
                put(depth, "for blk in PRANGE(nblocks):")
                for line in self._buffer_allocations():
                    put(depth + 1, line)
                if chunked:
                    put(depth + 1, f"for rc in range(blk * rows, min(n{d}, blk * rows + rows), {ROW_CHUNK}):")
                    put(depth + 2, f"for i{d} in range(rc, min(n{d}, blk * rows + rows, rc + {ROW_CHUNK})):")
                    depth += 1
                else:
                    put(depth + 1, f"for i{d} in range(blk * rows, min(n{d}, blk * rows + rows)):")
                row_depth = depth + 1
                depth += 2
            elif self.tile is not None and d in self.tile:
                depth = self._tiled_loops(put, depth, k, d)
            elif k == 0 and self.flat_blocks:
                put(depth, f"for blk in PRANGE((n{d} + {BLOCK - 1}) // {BLOCK}):")
                if self._segment_loops(put, depth + 1, d, f"blk * {BLOCK}", f"min(n{d}, blk * {BLOCK} + {BLOCK})",
                                       ("outer", k + 1)):
                    depth += 2
                    continue
                put(depth + 1, f"for i{d} in range(blk * {BLOCK}, min(n{d}, blk * {BLOCK} + {BLOCK})):")
                depth += 2
            elif k == len(self.outer) - 1 and k > 0 and column_chunks:
                # float32 chunk sums of the column locals (see _accumulate), folded after each chunk
                put(depth, f"for ch{d} in range(0, n{d}, {CHUNK}):")
                for info in column_chunks:
                    put(depth + 1, f"{info.chunk_sum} = np.float32(0.0)")
                if not self.inner and self._segment_loops(put, depth + 1, d, f"ch{d}", f"min(n{d}, ch{d} + {CHUNK})",
                                                          ("outer", k + 1)):
                    depth += 2
                    continue
                put(depth + 1, f"for i{d} in range(ch{d}, min(n{d}, ch{d} + {CHUNK})):")
                depth += 2
            else:
                if k > 0 and not self.inner and self._segment_loops(put, depth, d, "0", f"n{d}", ("outer", k + 1)):
                    depth += 1
                    continue
                put(depth, self._loop(d, parallel=(k == 0 and not self.plane_first)))
                depth += 1
            for stmt in self._statements(("outer", k + 1)):
                put(depth, stmt)
        rows_by_phase: dict = {}
        for info in self.red.values():
            if info.tail is None:
                rows_by_phase.setdefault(info.stage, []).append(info)
        for p in range(self.an.phases):
            infos = rows_by_phase.get(p, [])
            if self.whole and infos:
                self._emit_whole_phase(put, p, infos)
            else:
                for info in infos + self.locals_by_phase.get(p, []):
                    if not info.picked:
                        put(depth, f"{info.local or info.acc} = {info.init}")
                self._emit_inner(put, p, depth, parallel_first=self.whole)
                for info in self.locals_by_phase.get(p, []):
                    for line in _update(info, info.flush, info.local, "w"):
                        put(depth, line)
            for stmt in self._statements(("finish", p)) + self._statements(("post", p)):
                put(depth, stmt)
        if column_chunks:                           # after each chunk of the innermost loop
            for info in column_chunks:
                for line in _update(info, info.local, info.chunk_sum, "v"):
                    put(depth - 1, line)
            if not (self.plane_first and self.plane_dim == self.outer[-1]):
                depth -= 1                          # (out of the loop over chunks)
        for info in self.column_locals:             # after the innermost outer loop
            for line in _update(info, info.flush, info.local, "w"):
                put(depth - 1, line)
        for info in plane_chunks:                   # after each run of ROW_CHUNK of the reduced loop
            depth = middle_depth
            for d in self._cacc_dims(info):
                put(depth, self._chunk_loop(d))
                depth += 1
            for line in _update(info, self._row_cell(info), self._cacc_cell(info), "w"):
                put(depth, line)
        if self.plane_first:                        # after each chunk of the plane dim: its epilogues
            self._finish_chunk(put, row_depth)
        for info in chunked:                        # after each chunk of rows
            self._fold_row_chunk(put, row_depth, info)
        for info in self.red.values():
            if info.tail is not None and info.blocked:
                n, kept = info.n, info.tail.kept
                put(0, "for b in range(nblocks):")
                depth = 1
                for d in kept:
                    put(depth, self._loop(d))
                    depth += 1
                idx = ", ".join(f"i{d}" for d in kept) or "0"
                for line in _update(info, f"tacc{n}[{idx}]", f"part{n}[b, {idx}]", "w"):
                    put(depth, line)

    def _plane_sizes(self, put) -> None:
        """A plane-first kernel's work split: `sub` plane-dim indices a chunk (about
        PLANE_ROWS accumulator elements), `pblocks` blocks of chunks, and `nseg` segments
        of its reduced dim per block where there are few blocks (a small plane: [4096, 3,
        1024] summed over dim 0 has one chunk, whose sum the segments share; their partial
        sums, `seg<n>`, are combined after the loops). `nblocks` is the number of parallel
        blocks, for the partials of tails that accumulate per block."""
        p, m = self.plane_dim, self.plane_mid
        local = [info for info in self.red.values() if self._row_local(info)]
        widest = max((info.tail.kept[1:] for info in local), key=len)
        plane = " * ".join(f"n{d}" for d in widest) or "1"
        blocked = max((info.tail.kept for info in self.red.values() if info.blocked), key=len, default=())
        size = " * ".join(f"n{d}" for d in blocked) or "1"
        # (chunks of the innermost dim: CHUNK at most, as a float32 sum over it adds up in float32)
        put(0, f"sub = max(1, {min(PLANE_ROWS, CHUNK) if p == self.outer[-1] else PLANE_ROWS} // max(1, {plane}))")
        put(0, f"pblocks = max(1, min((n{p} + sub - 1) // sub, {MAX_BLOCKS}, {MAX_PARTIALS} // max(1, {size})))")
        put(0, f"rows = (n{p} + pblocks - 1) // pblocks")
        put(0, f"nseg = max(1, min(n{m}, {PLANE_SEGMENTS} // pblocks, {MAX_SEGMENT_PARTIALS} // max(1, n{p} * {plane})))")
        put(0, f"segrows = (n{m} + nseg - 1) // nseg")
        put(0, "nblocks = pblocks * nseg")
        for info in local:
            shape = "".join(f"n{d}, " for d in info.tail.kept)
            put(0, f"seg{info.n} = np.empty((nseg, {shape}), {info.acc_ctor})")

    def _finish_chunk(self, put, depth: int) -> None:
        """After a plane-first chunk's loops: its epilogues, or with segments its partial sums."""
        put(depth, "if nseg == 1:")
        self._emit_epilogues(put, depth + 1, row_local=True)
        put(depth, "else:")
        for info in filter(self._row_local, self.red.values()):
            at = depth + 1
            for d in info.tail.kept:
                put(at, self._chunk_loop(d))
                at += 1
            idx = ", ".join(f"i{d}" for d in info.tail.kept)
            put(at, f"seg{info.n}[sg, {idx}] = {self._row_cell(info)}")

    def _fold_row_chunk(self, put, depth: int, info: _Reduction) -> None:
        """Add a row-chunked column sum's float32 partials to its block's float64 ones, and
        clear them for the next chunk of rows."""
        for d in info.tail.kept:
            put(depth, self._loop(d))
            depth += 1
        idx = ", ".join(f"i{d}" for d in info.tail.kept) or "0"
        for line in _update(info, f"part{info.n}[blk, {idx}]", f"cpart{info.n}[blk, {idx}]", "w"):
            put(depth, line)
        put(depth, f"cpart{info.n}[blk, {idx}] = np.float32(0.0)")

    def _loop(self, d, parallel=False) -> str:
        return f"for i{d} in {'PRANGE' if parallel else 'range'}(n{d}):"

    def transposed_pair(self) -> tuple | None:
        """(a, b) when the kernel is pointwise and some operand's contiguous (last) axis is
        read by an outer loop a while loop b, the innermost, indexes another of its axes:
        a transposed read (see generate). Loops between a and b stay between them."""
        if self.inner or self.red or len(self.outer) < 2:
            return None
        b = self.outer[-1]
        for v, index in self.load_indices:
            if len(index) >= 2 and index[-1] in self.outer[:-1] and b in index[:-1]:
                return index[-1], b
        return None

    def _tiled_loops(self, put, depth: int, k: int, d) -> int:
        """The loop of dim `d` (the k-th outer loop) when loops a and b are tiled: dim a
        opens the tile loops and its loop within the tile, dim b (the innermost) its loop
        within the tile. Returns the depth of the loop body."""
        a, b = self.tile
        if d == a:
            put(depth, f"for ta in {'PRANGE' if k == 0 else 'range'}((n{a} + {TILE - 1}) // {TILE}):")
            put(depth + 1, f"for tb in range((n{b} + {TILE - 1}) // {TILE}):")
            put(depth + 2, f"for i{a} in range(ta * {TILE}, min(n{a}, ta * {TILE} + {TILE})):")
            return depth + 3
        put(depth, f"for i{b} in range(tb * {TILE}, min(n{b}, tb * {TILE} + {TILE})):")
        return depth + 1

    def _emit_inner(self, put, p, depth, parallel_first=False, first_range=None) -> None:
        """Phase p's inner loops. `first_range` bounds the first (a block of a whole phase).
        With float32 chunk sums (see _accumulate), the innermost loop runs in chunks of
        CHUNK elements, each chunk's sums added to their accumulators after it."""
        if self.cut_loop_holds_phases:
            return                      # (written in each segment of the cut loop: _segment_loops)
        for stmt in self._statements(("inner", p, 0)):
            put(depth, stmt)
        last = len(self.inner) - 1
        # (a loop cut into segments renders its body per segment: _segment_loops)
        bodies = [self._statements(("inner", p, k + 1)) if not (k == last and d == self.split_dim) else
                  self._has_statements(("inner", p, k + 1)) for k, d in enumerate(self.inner)]
        if not any(bodies):
            return                      # nothing left in this phase's loops (its reduction was picked)
        sums = self.chunk_sums.get(p, [])
        for k, (d, body) in enumerate(zip(self.inner, bodies)):
            start, stop = first_range if k == 0 and first_range is not None else ("0", f"n{d}")
            parallel = k == 0 and parallel_first
            if k == last and sums:
                # (A parallel loop's iterations would race on the accumulators: a kernel
                # with no outer loops sums in blocks, _emit_whole_phase.)
                assert not parallel, "float32 chunk sums in a parallel loop"
                put(depth, f"for ch{d} in range({start}, {stop}, {CHUNK}):")
                depth += 1
                for info, _ in sums:
                    put(depth, f"{info.chunk_sum} = np.float32(0.0)")
                if self._segment_loops(put, depth, d, f"ch{d}", f"min(n{d}, ch{d} + {CHUNK})", ("inner", p, k + 1)):
                    depth += 1
                    continue
                put(depth, f"for i{d} in range(ch{d}, min(n{d}, ch{d} + {CHUNK})):")
            elif k == last and not parallel and \
                    self._segment_loops(put, depth, d, start, stop, ("inner", p, k + 1)):
                depth += 1
                continue
            elif first_range is not None and k == 0:
                put(depth, f"for i{d} in range({start}, {stop}):")
            else:
                put(depth, self._loop(d, parallel=parallel))
            depth += 1
            for stmt in body if type(body) is list else self._statements(("inner", p, k + 1)):
                put(depth, stmt)
        for info, target in sums:
            for line in _update(info, target, info.chunk_sum, "v"):
                put(depth - 1, line)

    def _emit_whole_phase(self, put, p, infos) -> None:
        """A phase reducing everything to single values, in blocks of its first dim: BLOCK
        elements of a vector; with more dims, `step` rows of about BLOCK elements (at least
        one row), so that a (4096, 1024) sum has 4096 blocks to share between threads."""
        d0 = self.inner[0]
        rows = "step" if len(self.inner) > 1 else str(BLOCK)
        for info in infos:
            put(0, f"part{info.n} = np.empty(nblocks, {info.acc_ctor})")
        put(0, "for blk in PRANGE(nblocks):")
        put(1, f"lo = blk * {rows}")
        for info in infos:
            put(1, f"b{info.acc} = {info.init}")
        self._emit_inner(put, p, 1, first_range=("lo", f"min(n{d0}, lo + {rows})"))
        for info in infos:
            put(1, f"part{info.n}[blk] = b{info.acc}")
        for info in infos:
            put(0, f"{info.acc} = {info.init}")
            put(0, "for b in range(nblocks):")
            for line in _update(info, info.acc, f"part{info.n}[b]", "w"):
                put(1, line)

    def _emit_epilogues(self, put, base: int = 0, row_local: bool = False, segments: bool = False) -> None:
        """The loop nests over each group of tails' kept dims, after the main nest; with
        `row_local`, those of a plane-first kernel's row-local tails, inside its chunk
        loop at depth `base` over the chunk (with `segments`, after the main nest, each
        result combined from the segments' partial sums)."""
        chunk = row_local and not segments
        for g, kept in enumerate(self.groups):
            if self._chunked_group(kept) != row_local:
                continue
            for stmt in self._statements(("epi", g, 0)) if kept else []:
                put(base, stmt)
            depth = base
            for k, d in enumerate(kept):
                put(depth, self._chunk_loop(d) if chunk else self._loop(d))
                depth += 1
                if k + 1 < len(kept):
                    for stmt in self._statements(("epi", g, k + 1)):
                        put(depth, stmt)
            idx = ", ".join(f"i{d}" for d in kept) or "0"
            for info in self.red.values():
                if info.tail is None or info.tail.kept != kept:
                    continue
                if segments:
                    put(depth, f"w{info.n} = {info.init}")
                    put(depth, "for sj in range(nseg):")
                    for line in _update(info, f"w{info.n}", f"seg{info.n}[sj, {idx}]", f"v{info.n}"):
                        put(depth + 1, line)
                    cell = f"w{info.n}"
                else:
                    cell = self._row_cell(info) if chunk else f"tacc{info.n}[{idx}]"
                put(depth, f"{info.name} = {info.out_ctor}({cell})")
            for stmt in self._statements(("epi", g, len(kept))):
                put(depth, stmt)




def _float32_sum(info: _Reduction, ins) -> bool:
    """A float32 sum of float32 values, which may add up in float32 over short runs
    (chunks of a row, chunks of rows) before its float64 accumulator."""
    return info.combine == "add" and info.kind == "f" and info.acc_ctor == "np.float64" and \
        ins.inputs[0].dtype.name == "float32" and ins.outputs[0].dtype.name == "float32"


def _update(info: _Reduction, target: str, value: str, tmp: str) -> list:
    """Lines folding `value` into accumulator `target` (`tmp` names the operand)."""
    combine, kind = info.combine, info.kind
    if combine == "add":
        if kind == "f":
            return [f"{target} = fg_acc_add({target}, np.float64({value}))"]
        if kind == "b":
            return [f"{target} = {target} or {value}"]
        return [f"{target} += {value}"]
    if kind == "f":
        return [f"{target} = fg_acc_{combine}({target}, {value})"]
    if kind == "b":
        return [f"{target} = {target} {'or' if combine == 'max' else 'and'} {value}"]
    op = ">" if combine == "max" else "<"
    return [f"{tmp} = {value}", f"if {tmp} {op} {target}:", f"    {target} = {tmp}"]
