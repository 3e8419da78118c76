"""The generated kernels themselves: their hot loops vectorise, and the code
paths that make them vectorise (row buffers for float32 sums, per-row local
accumulators for tail reductions, unsigned block indices) compute what the
reference executor computes.

The vectorisation check compiles a *generated* kernel (the W1 workload's value
and gradient: one kernel) straight from its source, without the disk cache, and
reads the assembly of its largest loop: it must be packed SIMD code on ymm/zmm
registers with no call and no gather or scatter (a gather means an index LLVM
could not prove contiguous).
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from fusegrad.codegen import generate, schedule
from fusegrad.codegen.kernel_source import CHUNK, MAX_BLOCKS, ROW_CHUNK
from fusegrad.ir import float32, float64, int64, run_program
from fusegrad.runtime.executor import compile_program
from test_codegen_support import build, check, random_args

PACKED = re.compile(r"\bv(?:fn?m(?:add|sub)\w*|mul|add|sub|div|max|min|blendv|blendm)ps\s[^\n]*\b[yz]mm\d")
JUMP = re.compile(r"^\s+j\w+\s+(\.LBB\w+)")
LABEL = re.compile(r"^(\.LBB\w+):")


def _w1(e, x):
    """W1: (tanh(x) * sigmoid(x) + exp(-x*x)).sum()."""
    return e.sum(e.add(e.mul(e.tanh(x), e.sigmoid(x)), e.exp(e.neg(e.mul(x, x)))), (0,))


def compile_source(kernel_source, parallel=False):
    """Compile a KernelSource's module text here (no disk cache, so Numba can show assembly)."""
    namespace: dict = {}
    exec(compile(kernel_source.module_text("# test", cache=False), "<kernel>", "exec"), namespace)
    return namespace["kernel_parallel" if parallel else "kernel"]


def innermost_loops(asm: str) -> list:
    """The instruction lines of each innermost loop (a label and a later jump back
    to it, with no other such loop inside)."""
    lines = asm.splitlines()
    where = {}
    spans = []
    for k, line in enumerate(lines):
        m = LABEL.match(line)
        if m:
            where[m.group(1)] = k
        m = JUMP.match(line)
        if m and m.group(1) in where:
            spans.append((where[m.group(1)], k))
    inner = [(a, b) for a, b in spans if not any(a <= c and d <= b and (c, d) != (a, b) for c, d in spans)]
    return [lines[a: b + 1] for a, b in inner]


def function_asm(dispatcher) -> str:
    sig = dispatcher.signatures[0]
    asm = dispatcher.inspect_asm(sig)
    name = dispatcher.overloads[sig].fndesc.mangled_name
    start = asm.index(f"\n{name}:")
    return asm[start: asm.index(".Lfunc_end", start)]


def test_generated_w1_kernel_hot_loop_vectorises():
    program = build(_w1, (1 << 14,), grad=True)
    (kernel,) = schedule(program).kernels
    source = generate(kernel, "fusegrad.codegen.vmath")
    fn = compile_source(source)
    x = np.linspace(-4, 4, 1 << 14, dtype=np.float32)
    value, grad = np.empty((), np.float32), np.empty_like(x)
    args = {v.id: a for v, a in zip(program.inputs, [x, np.float32(1.0)])}
    fn(*[x.shape[0]], *[args[v.id] for v in source.loads], *[p for p, _ in source.params], value, grad)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(value, np.sum(np.tanh(x64) / (1 + np.exp(-x64)) + np.exp(-x64 * x64)), rtol=1e-6)

    asm = function_asm(fn)
    hot = max(innermost_loops(asm), key=len)
    text = "\n".join(hot)
    assert len(hot) > 100, "the fused math is not in one loop"
    assert not re.search(r"\bcall", text), "a call is left in the hot loop"
    assert not re.search(r"scatter|gather", text), "the hot loop gathers or scatters (index not proven contiguous)"
    packed = PACKED.findall(text)
    assert len(packed) > 40, f"the hot loop is not packed SIMD code ({len(packed)} packed ops):\n{text[:3000]}"


def _updates(e, lr, eps, *arrays):
    """Adam-like updates of parameters sharing two 0-d settings (12 parameters: one kernel
    of 36 arrays read and 12 written)."""
    return [e.sub(w, e.mul(lr, e.div(g, e.add(e.op("sqrt", v), eps))))
            for w, g, v in zip(arrays[0::3], arrays[1::3], arrays[2::3])]


def test_a_kernel_of_many_arrays_vectorises():
    """Kernels take their arrays as noalias (codegen/noalias.py): without it LLVM must test at
    run time that no output overlaps another array, gives up beyond some number of pointer
    pairs (here 12 outputs against 48 arrays), and runs the scalar loop."""
    from fusegrad.codegen import noalias
    if not noalias.SUPPORTED:
        pytest.skip("this Numba has no noalias flag (kernels are generated without it)")
    program = build(_updates, (), (), *[(1 << 12,)] * 36)
    sched = schedule(program)
    (kernel,) = sched.kernels
    source = generate(kernel, "fusegrad.codegen.vmath")
    assert len(source.loads) + len(source.stores) >= 48
    fn = compile_source(source)
    rng = np.random.default_rng(1)
    arrays = {v.id: (rng.uniform(0.1, 1, v.type.shape).astype(np.float32) if v.type.shape else np.float32(0.5))
              for v in program.inputs}
    outs = [np.empty(v.type.shape, np.float32) for v in source.stores]
    fn(1 << 12, *[arrays[v.id] for v in source.loads], *[p for p, _ in source.params], *outs)
    reference = run_program(sched.program, [arrays[v.id] for v in sched.program.inputs])
    want = {v.id: r for v, r in zip(sched.program.outputs, reference)}
    for out, v in zip(outs, source.stores):
        np.testing.assert_allclose(out, want[v.id], rtol=1e-6)
    # (the vector loop, beside its scalar remainder)
    hot = max(innermost_loops(function_asm(fn)), key=lambda loop: len(PACKED.findall("\n".join(loop))))
    packed = PACKED.findall("\n".join(hot))
    assert len(packed) > 8, f"the hot loop is not packed SIMD code ({len(packed)} packed ops):\n" + "\n".join(hot)[:3000]


# ---------------------------------------------------------------------- staged sums, local tails
def _row_sum_of_exp(e, x):
    return e.sum(e.exp(x), (1,))


def _row_sum_3d_two_axes(e, x):
    return e.sum(e.tanh(x), (1, 2))


def _whole_2d(e, x):
    return e.sum(e.mul(e.sigmoid(x), x), (0, 1))


def _softmax_and_loss(e, x, w):
    """Row phases with staged sums, plus a tail sum to one value inside the row kernel."""
    s = e.op("softmax", e.mul(x, w), axis=1)
    return [s, e.sum(e.mul(s, x), (0, 1))]


def _layernorm(e, x, w, b):
    m = e.op("mean", x, axes=(1,), keepdim=True)
    c = e.sub(x, m)
    v = e.op("mean", e.mul(c, c), axes=(1,), keepdim=True)
    y = e.add(e.mul(e.div(c, e.sqrt(e.add(v, e.const(1e-5, x)))), w), b)
    return e.sum(e.mul(y, y), (0, 1))


CASES = [
    ("row sum of exp", _row_sum_of_exp, [(37, 301)]),
    ("row sum of exp over chunks", _row_sum_of_exp, [(3, 2 * CHUNK + 77)]),
    ("row sum over two axes", _row_sum_3d_two_axes, [(5, 7, 129)]),
    ("whole 2-d sum", _whole_2d, [(9, 1000)]),
    ("whole 1-d sum over blocks", _w1, [(3 * 4096 + 77,)]),
    ("softmax and loss", _softmax_and_loss, [(67, 130), (130,)]),
    ("layernorm with grads", _layernorm, [(70, 96), (96,), (96,)]),
    ("column sum over dims 0 and 2 in chunks", lambda e, x: _column_sum_02(e, x), [(3, 5, 2 * CHUNK + 77)]),
]


def _column_sum_02(e, x):
    """exp(x) summed over dims 0 and 2, keeping 1 (per-channel statistics): a kernel without
    row loops whose column local sums its innermost loop."""
    return e.sum(e.exp(x), (0, 2))


@pytest.mark.parametrize("name,fn,types", CASES, ids=[c[0] for c in CASES])
def test_loops_run_in_chunks_index_arrays_unsigned(name, fn, types):
    """A loop that starts at a chunk's offset indexes every array (loads, stores, row buffers,
    tail accumulators) through np.uintp: Numba's negative-index wrap-around would otherwise
    stop the loop from vectorising (a column-sum cell indexed by a signed variable once made
    W2's kernel three times slower)."""
    program = build(fn, *types, grad=True)
    for kernel in schedule(program).kernels:
        text = generate(kernel, "fusegrad.codegen.vmath").functions[0][2]
        lines = text.splitlines()
        for k, line in enumerate(lines):
            loop = re.match(r"(\s*)for i(\d+) in range\(ch\d+, ", line)
            if loop is None:
                continue
            depth, var = len(loop.group(1)), loop.group(2)
            body = []
            for later in lines[k + 1:]:
                if len(later) - len(later.lstrip()) <= depth:
                    break
                body.append(later)
            assert body, text
            for subscript in re.findall(r"\w+\[([^\[\]]*)\]", "\n".join(body)):
                for entry in subscript.split(","):
                    if re.search(rf"\bi{var}\b", entry):
                        assert entry.strip().startswith("np.uintp("), (subscript, text)


@pytest.mark.parametrize("name,fn,types", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("policy", ["never", "always"])
def test_staged_and_local_reductions_match_reference(monkeypatch, name, fn, types, policy):
    monkeypatch.setenv("FUSEGRAD_PARALLEL", policy)
    program = build(fn, *types, grad=True)
    check(program, random_args(program, np.random.default_rng(0)), rtol=1e-4, atol=1e-5)


def test_float64_and_int_sums_are_not_chunked():
    """Only float32 sums add up in float32 chunks; float64 and int64 sums accumulate directly."""
    for types, fn in [([((8, 50), float64)], _row_sum_of_exp),
                      ([((8, 50), int64)], lambda e, x: e.sum(e.mul(x, x), (1,)))]:
        program = build(fn, *types)
        (kernel,) = schedule(program).kernels
        text = generate(kernel, "fusegrad.codegen.vmath").functions[0][2]
        assert "np.empty" not in text, text
        check(program, random_args(program, np.random.default_rng(1)))


def _row_sum(e, x):
    return e.sum(x, (1,))


@pytest.mark.parametrize("shape", [(4, 5000), (2, 1 << 20)])
@pytest.mark.parametrize("fn,exact", [(_row_sum_of_exp, np.exp), (_row_sum, lambda x: x)], ids=["exp", "plain"])
def test_float32_row_sum_is_chunked_and_accurate(shape, fn, exact):
    """A float32 sum adds up in float32 over chunks of CHUNK elements and the chunks'
    sums in float64: within an ulp of the exact sum, however long the row (a float32
    running sum of 2**20 values near 1 would be off by about 1e-3)."""
    program = build(fn, shape)
    (kernel,) = schedule(program).kernels
    text = generate(kernel, "fusegrad.codegen.vmath").functions[0][2]
    assert f"for ch1 in range(0, n1, {CHUNK}):" in text and "csum0 = fg_acc_add(csum0, " in text, text
    assert "np.empty" not in text, text
    x = (1 + np.random.default_rng(3).random(shape) * 0.01).astype(np.float32)
    compiled = check(program, [x])
    got = compiled([x])[0].astype(np.float64)
    want = exact(x.astype(np.float64)).sum(axis=1)
    ulp = np.spacing(want.astype(np.float32)).astype(np.float64)
    assert np.all(np.abs(got - want) <= ulp), (got - want) / ulp


@pytest.mark.parametrize("policy", ["never", "always"])
def test_softmax_computes_exp_once_per_element(monkeypatch, policy):
    """exp(x - max) is summed in one phase and divided in the next: a row buffer
    carries it instead of a second exp."""
    program = build(lambda e, x: e.op("softmax", x, axis=1), (33, 257))
    (kernel,) = schedule(program).kernels
    text = generate(kernel, "fusegrad.codegen.vmath").functions[0][2]
    # (exp of x - max(x): the form for an argument at most 0, codegen/nonpositive_forms.py)
    assert text.count("fg_exp_small(") == 1 and "fg_exp(" not in text, text
    monkeypatch.setenv("FUSEGRAD_PARALLEL", policy)
    check(program, random_args(program, np.random.default_rng(4), low=-30, high=30))


@pytest.mark.parametrize("policy", ["never", "always"])
def test_log_softmax_backward_computes_exp_once_per_element(monkeypatch, policy):
    """log_softmax's VJP reads exp(log_softmax(x)); the rewrite to softmax(x) lets
    the backward share the forward's exp(x - max), carried in a row buffer."""
    def loss_and_grad(e, x, onehot):
        ls = e.op("log_softmax", x, axis=1)
        return e.sum(e.mul(ls, onehot), (0, 1))
    program = build(loss_and_grad, (40, 129), (40, 129), grad=True)
    (kernel,) = schedule(program).kernels
    text = generate(kernel, "fusegrad.codegen.vmath").functions[0][2]
    assert text.count("fg_exp_small(") == 1 and "fg_exp(" not in text, text
    monkeypatch.setenv("FUSEGRAD_PARALLEL", policy)
    args = random_args(program, np.random.default_rng(5), low=-30, high=30)
    args[1] = np.eye(129, dtype=np.float32)[np.arange(40) % 129]
    check(program, args)


# ---------------------------------------------------------------------- reductions to one value
def _whole_3d(e, x):
    return e.sum(e.mul(e.tanh(x), x), (0, 1, 2))


@pytest.mark.parametrize("fn,shape", [(_whole_2d, (4097, 3)), (_whole_2d, (3, 5000)), (_whole_2d, (600, 1000)),
                                      (_whole_3d, (5, 7, 129)), (_whole_3d, (300, 2, 40))],
                         ids=["many short rows", "rows longer than a block", "many blocks", "3-d", "3-d many"])
@pytest.mark.parametrize("policy", ["never", "always"])
def test_a_sum_of_everything_splits_its_rows_into_blocks(monkeypatch, fn, shape, policy):
    """A reduction of a 2-d or 3-d tensor to one value blocks whole rows of about BLOCK
    elements (so its parallel variant has blocks to share); the result is the reference's."""
    monkeypatch.setenv("FUSEGRAD_PARALLEL", policy)
    program = build(fn, shape, grad=True)
    (kernel,) = schedule(program).kernels
    text = generate(kernel, "fusegrad.codegen.vmath").functions[0][2]
    assert "step = max(1, 4096 // max(1, " in text and "for i0 in range(lo, min(n0, lo + step)):" in text, text
    check(program, random_args(program, np.random.default_rng(9)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("policy", ["never", "always"])
def test_a_float32_column_local_adds_up_in_float32_chunks_and_accurately(monkeypatch, policy):
    """A float32 sum kept in a column local (no row loops: exp summed over dims 0 and 2) adds
    up in float32 over chunks of its innermost loop and the chunks in float64, as a row sum
    does: float64 adds in the loop halved its vector width (sin summed so over [64, 64, 1024]:
    the serial kernel took 11.4 ms, 4.3 in chunks). Within an ulp of the exact sums."""
    monkeypatch.setenv("FUSEGRAD_PARALLEL", policy)
    shape = (40, 6, 2 * CHUNK + 77)
    program = build(_column_sum_02, shape)
    (kernel,) = schedule(program).kernels
    text = generate(kernel, "fusegrad.codegen.vmath").functions[0][2]
    assert f"for ch2 in range(0, n2, {CHUNK}):" in text and "csum0 = fg_acc_add(csum0, " in text, text
    assert "lacc0 = fg_acc_add(lacc0, np.float64(csum0))" in text, text
    x = (np.random.default_rng(4).random(shape) * 0.01).astype(np.float32)
    compiled = check(program, [x])
    got = compiled([x])[0].astype(np.float64)
    want = np.exp(x.astype(np.float64)).sum(axis=(0, 2))
    ulp = np.spacing(want.astype(np.float32)).astype(np.float64)
    assert np.all(np.abs(got - want) <= ulp), (got - want) / ulp


def _column_loss(e, x, g):
    """softmax over dim 0: its backward kernel has no row loops and sums a loss to one value."""
    return e.sum(e.mul(e.op("softmax", x, axis=0), g), tuple(range(x.type.ndim)))


@pytest.mark.parametrize("shape", [(33, 130), (5, 3, 40)])
@pytest.mark.parametrize("policy", ["never", "always"])
def test_a_sum_in_a_kernel_without_row_loops_accumulates_in_a_local(monkeypatch, shape, policy):
    """A tail summed to one value inside a kernel whose loops are all outer (a column
    kernel) adds each innermost loop into a local scalar, flushed after the loop: an
    accumulator in memory would carry the loop through a store and a load."""
    monkeypatch.setenv("FUSEGRAD_PARALLEL", policy)
    program = build(_column_loss, shape, shape, grad=True)
    texts = [generate(k, "fusegrad.codegen.vmath").functions[0][2] for k in schedule(program).kernels]
    loss_kernel = next(t for t in texts if "part0[blk, 0]" in t or "tacc0[0]" in t)
    assert "lacc0 = fg_acc_add(lacc0," in loss_kernel, loss_kernel
    check(program, random_args(program, np.random.default_rng(10)), rtol=1e-4, atol=1e-5)


def _row_and_column_sums(e, x):
    """A row kernel (the sums of exp over the last axis) that also sums over the first (a column sum)."""
    return e.sum(e.exp(x), (x.type.ndim - 1,)), e.sum(e.mul(x, x), (0,))


@pytest.mark.parametrize("shape", [(5, 3), (MAX_BLOCKS * ROW_CHUNK * 2 + 37, 3), ((1 << 16) + 5, 3),
                                   (MAX_BLOCKS * ROW_CHUNK + 9, 2, 7)])
@pytest.mark.parametrize("policy", ["never", "always"])
def test_a_column_sum_in_a_row_kernel_adds_up_in_float32_chunks_of_rows(monkeypatch, shape, policy):
    """A float32 column sum inside a row kernel adds each block's rows in float32 over
    ROW_CHUNK rows (`cpart`), folded into the block's float64 partials after each chunk:
    float64 cells in the hot loop halved its vector width (W2's kernel, 2.25 -> 1.89 ms).
    The result stays within an ulp of the exact sum however many rows there are (a float32
    running sum of 65,541 values near 1 would be off by hundreds of ulps)."""
    monkeypatch.setenv("FUSEGRAD_PARALLEL", policy)
    program = build(_row_and_column_sums, shape)
    (kernel,) = schedule(program).kernels
    text = generate(kernel, "fusegrad.codegen.vmath").functions[0][2]
    assert f"for rc in range(blk * rows, min(n0, blk * rows + rows), {ROW_CHUNK}):" in text, text
    assert re.search(r"cpart1\[blk, [^\]]*\] \+= ", text), text
    x = np.sqrt(1 + np.random.default_rng(4).random(shape) * 0.01).astype(np.float32)
    compiled = check(program, [x])
    got = compiled([x])[1].astype(np.float64)
    want = np.square(x.astype(np.float64)).sum(axis=0)
    ulp = np.spacing(want.astype(np.float32)).astype(np.float64)
    assert np.all(np.abs(got - want) <= ulp), (got - want) / ulp


# ---------------------------------------------------------------------- transposed reads
def _total_and_columns(e, x, b, c):
    """A total and column sums of one value, and a vector scaled by the total."""
    d = e.add(x, b)
    total = e.sum(e.mul(d, d), (0, 1))
    return total, e.sum(e.mul(d, c), (0,)), e.mul(c, total)


@pytest.mark.parametrize("shape", [(2, 2), (3, 2), (5, 7)])
@pytest.mark.parametrize("policy", ["never", "always"])
def test_a_vector_reading_a_total_is_not_written_in_the_totals_epilogue(monkeypatch, shape, policy):
    """c * total has the column sums' shape, so it was stored in the kernel that sums both, in
    the total's epilogue, which loops over nothing: it wrote one element (garbage elsewhere;
    sweep 49211, a vector times an MSE loss beside a Linear's bias gradient)."""
    monkeypatch.setenv("FUSEGRAD_PARALLEL", policy)
    program = build(_total_and_columns, shape, shape[1:], shape[1:])
    check(program, random_args(program, np.random.default_rng(11)), rtol=1e-5, atol=1e-5)


def _transposed_mul(e, x, y):
    # y is read in order, so the permute stays (ir/permute_sinking.py sinks it past a 0-d operand)
    return e.mul(e.op("permute", x, dims=(1, 0)), y)


def _swap_last_two_plus_bias(e, x, b):
    return e.tanh(e.add(e.op("permute", x, dims=(0, 2, 1)), b))


def _rotate_dims(e, x, y):
    return e.mul(e.op("permute", x, dims=(2, 0, 1)), y)


@pytest.mark.parametrize("fn,types", [
    (_rotate_dims, [(5, 19, 34), (34, 1, 19)]),
    (_transposed_mul, [(37, 50), (50, 37)]),
    (_transposed_mul, [(64, 16), (16, 64)]),
    (_transposed_mul, [(1, 40), (40, 1)]),
    (_swap_last_two_plus_bias, [(3, 33, 17), (33,)]),
], ids=["permute(2, 0, 1): a loop between the tiled ones", "ragged tiles", "whole tiles", "one row",
        "3-d with a broadcast operand"])
@pytest.mark.parametrize("policy", ["never", "always"])
def test_a_pointwise_kernel_reading_an_operand_transposed_is_tiled(monkeypatch, fn, types, policy):
    """The two innermost loops of a pointwise kernel that reads an operand across its
    contiguous axis run in TILE x TILE tiles (edges included); values are the reference's,
    and with the backward (whose kernels read the cotangent transposed) too."""
    monkeypatch.setenv("FUSEGRAD_PARALLEL", policy)
    program = build(fn, *types)
    texts = [generate(k, "fusegrad.codegen.vmath").functions[0][2] for k in schedule(program).kernels]
    live = [n for n in program.inputs[0].shape if n > 1]
    assert any("for tb in range(" in t for t in texts) == (len(live) >= 2), texts
    check(program, random_args(program, np.random.default_rng(11)))
    program = build(fn, *types, grad=True)
    check(program, random_args(program, np.random.default_rng(12)), rtol=1e-5, atol=1e-5)


def test_a_kernel_reading_in_order_is_not_tiled():
    program = build(lambda e, x, y: e.mul(x, y), (40, 30), (40, 1))
    program2 = build(lambda e, x, y: e.add(e.exp(x), y), (40, 30), (30,))
    for p in (program, program2):
        texts = [generate(k, "fusegrad.codegen.vmath").functions[0][2] for k in schedule(p).kernels]
        assert texts and not any("for tb in" in t for t in texts), texts


# ---------------------------------------------------------------------- vector width (codegen/target.py)
def _host_has_avx512() -> bool:
    import llvmlite.binding as llvm
    return "+avx512f" in llvm.get_host_cpu_features().flatten().split(",")


@pytest.mark.skipif(not _host_has_avx512(), reason="512-bit vectors need an AVX-512 CPU")
def test_on_avx512_the_w1_kernel_runs_on_512_bit_vectors():
    """fusegrad was imported before Numba compiled anything (this session's conftest), so
    Numba's target features drop LLVM's 256-bit preference and the hot loop uses zmm."""
    from numba.core import config
    from fusegrad.codegen.target import STATE
    if STATE["vector_width"] != "512-bit":
        pytest.skip(f"vector width left to LLVM here: {STATE['vector_width']}")
    assert config.CPU_FEATURES.endswith(",-prefer-256-bit")
    program = build(_w1, (1 << 14,), grad=True)
    (kernel,) = schedule(program).kernels
    fn = compile_source(generate(kernel, "fusegrad.codegen.vmath"))
    x = np.linspace(-4, 4, 1 << 14, dtype=np.float32)
    fn(x.shape[0], x, np.float32(1.0), np.empty((), np.float32), np.empty_like(x))
    hot = "\n".join(max(innermost_loops(function_asm(fn)), key=len))
    assert len(re.findall(r"\bv\w+ps\s[^\n]*\bzmm\d", hot)) > 40, hot[:3000]


@pytest.mark.parametrize("dtype", [float32, float64])
def test_exp_scales_by_two_to_the_k_with_one_instruction_where_the_cpu_has_one(dtype):
    """vmath's _ldexp_k is LLVM's ldexp on AVX-512 (vscalefps/pd in the hot loop), and two
    factors built from bits elsewhere: never a libm call per lane, which is what LLVM makes
    of a vector ldexp without AVX-512. Both give the reference's values."""
    from fusegrad.codegen.target import has_avx512
    program = build(lambda e, x: e.exp(x), ((1 << 12,), dtype))
    (kernel,) = schedule(program).kernels
    fn = compile_source(generate(kernel, "fusegrad.codegen.vmath"))
    x = np.linspace(-800, 800, 1 << 12).astype(dtype.np)
    out = np.empty_like(x)
    fn(x.shape[0], x, out)
    with np.errstate(over="ignore"):
        want = np.exp(x.astype(np.float64)).astype(dtype.np)
    assert np.allclose(out, want, rtol=4e-7 if dtype is float32 else 1e-15, atol=0), \
        np.max(np.abs(out - want) / np.maximum(want, 1e-300))
    check(program, [x])
    asm = function_asm(fn)
    hot = "\n".join(max(innermost_loops(asm), key=len))
    assert ("vscalef" in hot) == has_avx512(), hot[:2000]
    assert "ldexp" not in asm


_SCALING_PROBE = """
import sys, numpy as np
from numba import njit
from fusegrad.codegen.target import has_avx512
from fusegrad.codegen.vmath import fg_exp, fg_expm1

@njit(error_model="numpy")
def both(x, e, m):
    for i in range(x.size):
        e[i] = fg_exp(x[i])
        m[i] = fg_expm1(x[i])

out = [str(has_avx512())]
for dt, top in ((np.float32, 110.0), (np.float64, 760.0)):
    x = np.concatenate([np.linspace(-top, top, 40001), [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30]]).astype(dt)
    e, m = np.empty_like(x), np.empty_like(x)
    both(x, e, m)
    out += [e.tobytes().hex(), m.tobytes().hex()]
print("\\n".join(out))
"""


def test_exp_is_the_same_bits_with_and_without_avx512():
    """The two ways of _ldexp_k (see the test above) give the same bits: exp and expm1 over
    their whole range, overflow, gradual underflow and specials, compiled in a process whose
    target has no AVX-512 (NUMBA_CPU_NAME=haswell) and in one for this host."""
    import os
    import subprocess
    import sys
    import tempfile

    def run(cpu):
        environment = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CPU_FEATURES", "NUMBA_CPU_NAME")}
        if cpu:
            environment["NUMBA_CPU_NAME"] = cpu
        with tempfile.TemporaryDirectory() as cache:
            environment["NUMBA_CACHE_DIR"] = cache
            return subprocess.run([sys.executable, "-c", _SCALING_PROBE], env=environment, capture_output=True,
                                  text=True, timeout=300, check=True).stdout.split()
    haswell, host = run("haswell"), run(None)
    assert haswell[0] == "False" and host[0] == str(_host_has_avx512())
    assert haswell[1:] == host[1:]


_TARGET_PROBE = ("import fusegrad.codegen.target as t, numba.core.config as c; "
                 "print(t.STATE['vector_width']); print(c.CPU_FEATURES)")


@pytest.mark.parametrize("env,before,want", [
    ({"FUSEGRAD_VECTOR_WIDTH": "256"}, "", "LLVM's default (FUSEGRAD_VECTOR_WIDTH=256)"),
    ({"NUMBA_CPU_FEATURES": "+sse2"}, "", "LLVM's default (NUMBA_CPU_FEATURES is set)"),
    ({"NUMBA_CPU_NAME": "haswell"}, "", "LLVM's default (NUMBA_CPU_NAME is set)"),
    ({}, "import numba; numba.njit(lambda: 1)(); ",
     "LLVM's default (Numba compiled before fusegrad was imported)"),
], ids=["opted out", "features chosen", "cpu chosen", "numba started first"])
def test_the_vector_width_is_left_alone_where_something_else_chose(env, before, want):
    import os
    import subprocess
    import sys
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("FUSEGRAD_VECTOR_WIDTH", "NUMBA_CPU_FEATURES", "NUMBA_CPU_NAME")}
    environment.update(env)
    out = subprocess.run([sys.executable, "-c", before + _TARGET_PROBE], env=environment, capture_output=True,
                         text=True, timeout=120, check=True).stdout.splitlines()
    assert out[0] == want
    assert out[1] == env.get("NUMBA_CPU_FEATURES", "None")


def test_importing_fusegrad_compiles_nothing_before_the_target_is_chosen():
    """ir/ is imported before codegen/target.py chooses Numba's target features: a Numba
    function made at import there (torch_order_jit's loops once were) started the code
    generator first, and every kernel was compiled for 256-bit vectors (W3 1.86 -> 2.45 ms;
    the 512-bit test above then skipped). The loops load on first use; nothing has been
    compiled or loaded right after the import."""
    import os
    import subprocess
    import sys
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("FUSEGRAD_VECTOR_WIDTH", "NUMBA_CPU_FEATURES", "NUMBA_CPU_NAME")}
    probe = ("import sys, fusegrad.codegen.target as t\n"
             "from fusegrad.ir import torch_order_jit as j\n"
             "print(t.STATE['vector_width']); print(j.numba_set_up()); "
             "print('fusegrad.ir.torch_order_loops' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], env=environment, capture_output=True, text=True,
                         timeout=120, check=True).stdout.splitlines()
    assert out[0] == ("512-bit" if _host_has_avx512() else "LLVM's default (no AVX-512)"), out
    assert out[1:] == ["False", "False"]


# ---------------------------------------------------------------------- division by a row's value
def _softmax_rows(e, x):
    ex = e.exp(x)
    return e.div(ex, e.sum(ex, (1,), keepdim=True))


def _loop_depth(line: str) -> int:
    return (len(line) - len(line.lstrip())) // 4


def test_a_division_by_a_rows_sum_multiplies_by_a_reciprocal_made_once_a_row():
    program = build(_softmax_rows, (64, 300))
    (kernel,) = schedule(program).kernels
    text = generate(kernel, "fusegrad.codegen.vmath").functions[0][2]
    lines = text.splitlines()
    (made,) = [line for line in lines if "(np.float32(1.0) / " in line]
    name = made.split("=")[0].strip()
    readers = [line for line in lines if f"np.float32({name}))" in line and "fg_acc_quotient(" in line]
    assert readers and all(_loop_depth(r) > _loop_depth(made) for r in readers), text
    rng = np.random.default_rng(11)
    check(program, [rng.uniform(-3, 3, (64, 300)).astype(np.float32)], rtol=1e-6, atol=0)   # (exp: within ulps)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_division_by_a_rows_value_is_the_correctly_rounded_quotient(dtype):
    """x * (1 / y) alone is within an ulp, not exact: the row maximum divided by itself gave
    0.99999994 (then floor() 0, `== 1` False). The kernel corrects the product by its residual
    (accumulate.fg_acc_quotient): bit-identical to NumPy's division, over many magnitudes."""
    ft = float32 if dtype is np.float32 else float64
    program = build(lambda e, x, y: e.div(x, y), ((64, 1000), ft), ((64, 1), ft))
    (kernel,) = schedule(program).kernels
    assert "fg_acc_quotient(" in generate(kernel, "fusegrad.codegen.vmath").functions[0][2]
    rng = np.random.default_rng(13)
    x = (rng.standard_normal((64, 1000)) * np.exp(rng.uniform(-30, 30, (64, 1000)))).astype(dtype)
    y = (rng.standard_normal((64, 1)) * np.exp(rng.uniform(-30, 30, (64, 1)))).astype(dtype)
    x[:, :10] = y                       # quotients of exactly 1
    x[:, 10:20] = y * np.arange(-5, 5)  # small integers, exactly representable
    (got,) = compile_program(program)([x, y])
    np.testing.assert_array_equal(got, x / y)
    assert (got[:, :10] == 1).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_division_by_a_rows_value_keeps_infinities_overflows_and_signed_zeros(dtype):
    """Where x * (1 / y) is infinite its residual is NaN and the result is x * (1 / y): an infinite
    numerator and an overflowing quotient are IEEE's +-inf (they were NaN), NaN stays NaN, and
    -0 / y keeps its sign (the correction made it +0), bit-identical to NumPy's division."""
    info = np.finfo(dtype)
    ft = float32 if dtype is np.float32 else float64
    program = build(lambda e, x, y: e.div(x, y), ((4, 9), ft), ((4, 1), ft))
    row = [np.inf, -np.inf, np.nan, -0.0, 0.0, info.max, -info.max, 1.0, 3.0]
    x = np.array([row, row, row, row], dtype)
    y = np.array([[0.5], [-0.25], [3.0], [-1e-3]], dtype)
    (got,) = compile_program(program)([x, y])
    with np.errstate(all="ignore"):
        want = x / y
    np.testing.assert_array_equal(got, want)
    assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all()


def test_a_division_by_a_scalar_or_by_values_varying_along_the_loop_stays_a_division():
    for fn, types in ((lambda e, x, s: e.div(x, s), [(64, 300), ((), float32)]),
                      (lambda e, x, y: e.div(x, y), [(64, 300), (1, 300)])):
        program = build(fn, *types)
        (kernel,) = schedule(program).kernels
        assert "(np.float32(1.0) / " not in generate(kernel, "fusegrad.codegen.vmath").functions[0][2]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rows_whose_reciprocal_is_not_normal_are_divided_exactly(dtype):
    """1 / y overflows for a subnormal y and is subnormal for a huge one: those rows (and
    0, inf, nan divisors) take the exact division; the others are within an ulp."""
    info = np.finfo(dtype)
    divisors = np.array([info.tiny / 4, -info.tiny / 3, info.max / 2, 2.0 ** (info.maxexp - 1), 0.0, -0.0,
                         np.inf, np.nan, 3.0, -7.5, info.tiny, 2.0 ** (info.maxexp - 2)], dtype)
    ft = float32 if dtype is np.float32 else float64
    program = build(lambda e, x, y: e.div(x, y), ((12, 257), ft), ((12, 1), ft))
    rng = np.random.default_rng(12)
    x = (rng.uniform(0.5, 2.0, (12, 257)) * np.where(rng.random((12, 257)) < 0.5, -1, 1)).astype(dtype)
    x[:, 0] = [info.tiny / 8, info.max / 4] * 6
    compiled = compile_program(program)
    (got,) = compiled([x, divisors[:, None]])
    with np.errstate(all="ignore"):
        want = x / divisors[:, None]
    exact = ~((np.abs(divisors) >= info.tiny) & (np.abs(divisors) <= 2.0 ** (info.maxexp - 2)))
    np.testing.assert_array_equal(got[exact], want[exact])
    np.testing.assert_allclose(got[~exact], want[~exact], rtol=2 * info.eps, atol=0)
