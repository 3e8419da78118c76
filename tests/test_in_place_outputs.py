"""In-place outputs: a kernel writes an output over an operand that dies at it (an intermediate,
or a parameter whose update the call writes back), checked three ways: the rule read from
generated source (codegen/in_place.py), the executor's choice against the reference
executor (runtime/in_place.py), and compiled training steps against torch, with the
parameters' memory and everything viewing it behaving as eagerly."""
import re

import numpy as np
import pytest

import fusegrad as fg
from fusegrad.codegen.in_place import in_place_pairs
from fusegrad.ir import Builder, Program, TensorType, run_program
from fusegrad.ir.program import Value
from fusegrad.ir.types import float32, float64
from fusegrad.runtime import executor

torch = pytest.importorskip("torch")

M, N = 4, 3
F = TensorType((M, N), float32)


def _values(*types):
    return [Value(t) for t in types]


# ------------------------------------------------------------------ the rule, read from source
def _pairs(body: str, loads, stores, full=None):
    text = "def kernel(n0, n1, a0, a1, a2, o0, o1):\n" + body
    return in_place_pairs(text, loads, stores, set(range(len(stores))) if full is None else full)


def test_an_elementwise_store_may_take_any_operand_of_its_type_read_at_its_index():
    body = ("    for i0 in range(n0):\n"
            "        for i1 in range(n1):\n"
            "            o0[i0, i1] = (a0[i0, i1] + (a1[i0, i1] * a2))\n")
    loads = _values(F, F, TensorType((), float32))
    assert _pairs(body, loads, _values(F)) == ((0, 0), (0, 1))


def test_an_operand_of_another_shape_or_dtype_or_a_partial_store_is_not_taken():
    body = ("    for i0 in range(n0):\n"
            "        for i1 in range(n1):\n"
            "            o0[i0, i1] = (a0[i0, i1] + a1[i0, i1])\n")
    assert _pairs(body, _values(TensorType((M, N), float64), TensorType((1, N), float32)), _values(F)) == ()
    assert _pairs(body, _values(F, F), _values(F), full=set()) == ()


def test_a_read_after_the_store_in_another_statement_refuses_it():
    body = ("    for i0 in range(n0):\n"
            "        for i1 in range(n1):\n"
            "            o0[i0, i1] = (a0[i0, i1] * 2)\n"
            "            o1[i0, i1] = (a0[i0, i1] + a1[i0, i1])\n")
    # o0 over a0 would change what o1 reads; o1 may take either (its line reads before it stores)
    assert _pairs(body, _values(F, F), _values(F, F)) == ((1, 0), (1, 1))


def test_a_read_in_another_loop_or_at_another_index_refuses_it():
    phases = ("    for i0 in range(n0):\n"
              "        for i1 in range(n1):\n"
              "            t0 = a0[i0, i1]\n"
              "        for i1 in range(n1):\n"
              "            o0[i0, i1] = (a0[i0, i1] + 1)\n")
    assert _pairs(phases, _values(F), _values(F)) == ()
    shifted = ("    for i0 in range(n0):\n"
               "        for i1 in range(n1):\n"
               "            o0[i0, i1] = (a0[i0, i1] + a0[i0, 0])\n")
    assert _pairs(shifted, _values(F), _values(F)) == ()
    whole = ("    s = fg_sum(a0)\n"
             "    for i0 in range(n0):\n"
             "        for i1 in range(n1):\n"
             "            o0[i0, i1] = (a0[i0, i1] + s)\n")
    assert _pairs(whole, _values(F), _values(F)) == ()


def test_a_named_read_before_the_store_in_the_same_body_is_allowed():
    body = ("    for i0 in range(n0):\n"
            "        for i1 in range(n1):\n"
            "            t0 = a0[i0, i1]\n"
            "            o1[i0, i1] = (t0 * t0)\n"
            "            o0[i0, i1] = (t0 + a0[i0, i1])\n")
    # (o1 over a0 would change what o0's line reads after it)
    assert _pairs(body, _values(F), _values(F, F)) == ((0, 0),)


# ------------------------------------------------------------------ the executor's choice
def _linear_relu_program(extra_view_output: bool = False, intermediate_output: bool = False):
    b = Builder(Program())
    x = b.input(TensorType((256, 128), float32))
    w = b.input(TensorType((128, 96), float32))
    m = b.emit("matmul", x, w)
    r = b.emit("relu", m)
    outs = [r]
    if extra_view_output:
        outs.append(b.emit("permute", m, dims=(1, 0)))
    if intermediate_output:
        outs.append(m)
    b.program.outputs = outs
    return b.program


def _kernel_steps(compiled):
    return [s for s in compiled.steps if isinstance(s, executor._KernelStep)]


@pytest.mark.parametrize("variant", ["plain", "view of the product is an output", "product is an output"])
def test_an_intermediate_is_written_over_only_when_nothing_reads_its_memory_later(variant):
    program = _linear_relu_program(extra_view_output=variant.startswith("view"),
                                   intermediate_output=variant.startswith("product"))
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((256, 128), dtype=np.float32), rng.standard_normal((128, 96), dtype=np.float32)]
    compiled = executor.compile_program(program)
    got = compiled(list(args))
    expected = run_program(program, list(args))
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
    (relu,) = _kernel_steps(compiled)
    assert relu.in_place_done == ({0: 0} if variant == "plain" else {})
    if variant == "plain":
        assert "written over" in compiled.explain()


def test_an_input_is_written_over_only_for_the_output_the_caller_writes_back():
    b = Builder(Program())
    p = b.input(TensorType((128, 160), float32))
    g = b.input(TensorType((128, 160), float32))
    half = b.emit("const", value=0.5, dtype=float32, shape=())
    new = b.emit("sub", p, b.emit("mul", g, half))
    b.program.outputs = [new, b.emit("sum", g, axes=(0, 1), keepdim=False)]
    compiled = executor.compile_program(b.program)
    rng = np.random.default_rng(1)
    param, grad = rng.standard_normal((128, 160), dtype=np.float32), rng.standard_normal((128, 160),
                                                                                         dtype=np.float32)
    expected = param - grad * np.float32(0.5)
    kept = param.copy()
    out = compiled([param, grad])                      # not donated: a fresh array, the input kept
    assert out[0] is not param
    np.testing.assert_array_equal(param, kept)
    np.testing.assert_array_equal(out[0], expected)
    out = compiled([param, grad], {1: 1})              # (written back from another output: nothing taken)
    assert out[0] is not param
    np.testing.assert_array_equal(param, kept)
    out = compiled([param, grad], {0: 0})
    assert out[0] is param
    np.testing.assert_array_equal(param, expected)
    # the variant that ran stores through the operand's own argument (one address for LLVM: its
    # loop keeps the vector path, which a runtime overlap test of o0 and a1 would leave)
    (step,) = _kernel_steps(compiled)
    ((k, j),) = step.in_place_done.items()
    serial = step.last_kernel.text.split("def kernel(")[1].split("@njit")[0]
    assert re.search(rf"^\s+a{j}\[[^\]]*\] = ", serial, re.M) and not re.search(rf"^\s+o{k}\[", serial, re.M)
    assert step.last_kernel is not step.compiled


# ------------------------------------------------------------------ compiled training steps
def _inputs_written_over(program) -> list:
    """The program inputs whose memory a kernel of the last call wrote an output over."""
    n_inputs = len(program.input_types)
    return [step.loads[j][0] for step in _kernel_steps(program) for j in step.in_place_done.values()
            if step.loads[j][0] < n_inputs]


def _models(hidden=160, seed=0):
    """The same two-layer model in fusegrad and torch; the first weight is 160 x 96 floats (60
    KiB), the others smaller: with hidden=192 it is 72 KiB, worth writing in place."""
    torch.manual_seed(seed)
    ref = torch.nn.Sequential(torch.nn.Linear(96, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 10))
    mine = fg.nn.Sequential(fg.nn.Linear(96, hidden), fg.nn.ReLU(), fg.nn.Linear(hidden, 10))
    with fg.no_grad():
        for p, q in zip(mine.parameters(), ref.parameters()):
            p.copy_(fg.tensor(q.detach().numpy()))
    return mine, ref


def _training_step(L, model, optimizer):
    """zero_grad, cross-entropy of the model's output, backward, step; returns the loss."""
    def step(x, y):
        optimizer.zero_grad()
        loss = L.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss
    return step


def _optimizers(name, mine, ref):
    if name == "sgd":
        return fg.optim.SGD(mine.parameters(), lr=0.1), torch.optim.SGD(ref.parameters(), lr=0.1)
    if name == "momentum":
        return (fg.optim.SGD(mine.parameters(), lr=0.1, momentum=0.9, weight_decay=0.01),
                torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9, weight_decay=0.01))
    return fg.optim.Adam(mine.parameters(), lr=0.01), torch.optim.Adam(ref.parameters(), lr=0.01)


@pytest.mark.parametrize("optimizer", ["sgd", "momentum", "adam"])
def test_a_compiled_step_updates_parameters_in_their_memory_as_torch(optimizer):
    mine, ref = _models(hidden=192)
    opt, ref_opt = _optimizers(optimizer, mine, ref)
    weight = mine[0].weight
    memory = weight._data
    row_view = weight.data[3]              # a view the caller holds: it sees every update
    transposed = weight.detach().t()

    step = _training_step(fg, mine, opt)

    ref_step = _training_step(torch, ref, ref_opt)
    compiled = fg.compile(step)
    rng = np.random.default_rng(2)
    versions = weight._version, ref[0].weight._version
    # (Adam divides by the gradients' root mean square: where a gradient is near zero, the
    # matmuls' last bits, which depend on the BLAS and the CPU, move its step by ~1e-4 of lr)
    atol = 1e-5 if optimizer == "adam" else 1e-6
    for _ in range(4):
        x = rng.standard_normal((32, 96), dtype=np.float32)
        y = rng.integers(0, 10, 32)
        loss = compiled(fg.tensor(x), fg.tensor(y))
        expected = ref_step(torch.tensor(x), torch.tensor(y))
        np.testing.assert_allclose(loss.item(), expected.item(), rtol=1e-5)
        for p, q in zip(mine.parameters(), ref.parameters()):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=atol)
    assert weight._data is memory
    program = compiled.last_run.compiled
    assert _inputs_written_over(program)       # (the first weight's update: 72 KiB)
    np.testing.assert_array_equal(row_view.numpy(), weight.detach().numpy()[3])
    np.testing.assert_array_equal(transposed.numpy(), weight.detach().numpy().T)
    assert weight._version - versions[0] == ref[0].weight._version - versions[1]
    compiled.explain(fg.tensor(x), fg.tensor(y))      # (a dry run: writes over no input)
    assert _inputs_written_over(compiled.last_run.compiled) == []
    np.testing.assert_allclose(weight.detach().numpy(), ref[0].weight.detach().numpy(), rtol=1e-5, atol=atol)


def test_a_step_that_reads_the_parameter_after_its_update_or_keeps_its_old_value_matches_eager():
    def run(L, compiled):
        L.manual_seed(0)
        w = L.nn.Parameter(L.randn(128, 160))
        x = L.randn(160, 8)

        def step(x):
            loss = (w @ x).tanh().sum()
            loss.backward()
            old = w * 1                     # the value before the update, computed in the call
            with L.no_grad():
                w.sub_(0.1 * w.grad)
            after = (w @ x).sum()           # reads the updated memory
            return old.sum(), after

        f = fg.compile(step) if compiled else step
        results = []
        for _ in range(3):
            w.grad = None
            old, after = f(x)
            results.append((old.item(), after.item()))
        return results, w.detach().numpy().copy()

    (expected, w_torch), (eager, w_eager), (compiled, w_compiled) = run(torch, False), run(fg, False), \
        run(fg, True)
    np.testing.assert_allclose(eager, expected, rtol=1e-4)
    np.testing.assert_allclose(compiled, expected, rtol=1e-4)
    np.testing.assert_allclose(w_eager, w_torch, rtol=1e-5, atol=2e-5)    # (float32 sums: a few ulps)
    np.testing.assert_allclose(w_compiled, w_eager, rtol=1e-5, atol=2e-5)


def test_a_dry_run_leaves_a_large_parameter_as_it_was():
    mine, _ = _models(hidden=192)
    opt = fg.optim.SGD(mine.parameters(), lr=0.5)

    def step(x):
        opt.zero_grad()
        mine(x).square().mean().backward()
        opt.step()

    compiled = fg.compile(step)
    x = fg.randn(16, 96)
    compiled(x)
    before = mine[0].weight.detach().numpy().copy()
    compiled.explain(x)
    np.testing.assert_array_equal(mine[0].weight.detach().numpy(), before)


def test_a_program_with_trig_guards_takes_no_input_memory_and_reruns_right():
    # |w| >= 2**20 makes the near sin/cos forms rerun the program by reference from its
    # inputs: the input must still hold its old value then
    w_np = np.full((128, 160), 3.0, np.float32)
    w_np[0, 0] = 2.0 ** 21

    def update(L, w):
        with L.no_grad():
            w.sub_(0.25 * w.sin())

    mine, ref = fg.tensor(w_np.copy()), torch.tensor(w_np.copy())
    fg.compile(lambda w: update(fg, w))(mine)
    update(torch, ref)
    np.testing.assert_allclose(mine.numpy(), ref.numpy(), rtol=1e-6)


def _writes(L):
    """Calls that write a large argument in place (written back by the compiled call, so its
    update may be written over it) while reading it, its views or its old value around the
    write."""
    return {
        "read transposed between two writes": lambda p, x: (p.mul_(2), p.t().sum(), p.add_(1))[1],
        "old value used after the write": lambda p, x: (lambda a: (p.sub_(1), a + p)[1])(p * 2),
        "write through a flat view": lambda p, x: (lambda q: (p.mul_(3), q.add_(1), q.sum())[2])(p.view(-1)),
        "detach read after the write": lambda p, x: (lambda d: (p.sub_(0.5 * p.tanh()), d.sum() + p.sum())[1])(
            p.detach()),
        "product before and after": lambda p, x: (lambda y: (p.sub_(0.1 * (p - 1)), y.sum() + (p @ x).sum())[1])(
            (p @ x).relu()),
        "transpose view read after": lambda p, x: (lambda t: (p.add_(t.t() * 0.5), t.sum())[1])(p.t()),
        "clone kept": lambda p, x: (lambda old: (p.copy_(p * 0.5 + 1), old.sum() - p.sum())[1])(p.clone()),
        "row write then whole": lambda p, x: (p[1:].mul_(2), p.add_(1), p.sum())[2],
        "three writes, returned": lambda p, x: (p.add_(1), p.mul_(2), p.sub_(p.mean()))[2],
        "reshape view read after": lambda p, x: (lambda r: (p.mul_(2), r + 1)[1])(p.reshape(160, 128)),
    }


@pytest.mark.parametrize("case", list(_writes(fg)))
def test_calls_writing_a_large_argument_match_torch(case):
    rng = np.random.default_rng(0)
    p0 = rng.standard_normal((128, 160)).astype(np.float32)
    x0 = rng.standard_normal((160, 8)).astype(np.float32)
    results = {}
    for name, L, wrap in (("torch", torch, lambda f: f), ("compiled", fg, fg.compile)):
        p, x = L.tensor(p0.copy()), L.tensor(x0)
        f = wrap(_writes(L)[case])
        with L.no_grad():
            outs = [np.array(f(p, x).numpy()) for _ in range(3)]
        results[name] = outs + [p.numpy().copy()]
    for got, expected in zip(results["compiled"], results["torch"]):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-4)


def test_with_tiered_execution_the_warm_up_compiles_the_variants_a_training_step_runs(tmp_path, monkeypatch):
    """FUSEGRAD_ASYNC_COMPILE=1: the first calls run by reference while the kernels compile in
    the background; the warm-up also compiles the variants that write the parameters in place,
    so the first compiled call, and a new batch size, compile nothing."""
    from fusegrad.runtime import background
    background.wait_for_compiles()
    monkeypatch.setenv("FUSEGRAD_ASYNC_COMPILE", "1")
    monkeypatch.setenv("FUSEGRAD_CACHE_DIR", str(tmp_path))
    fg.clear_caches()
    try:
        mine, ref = _models(hidden=192)
        opt, ref_opt = _optimizers("adam", mine, ref)

        compiled = fg.compile(_training_step(fg, mine, opt))
        rng = np.random.default_rng(3)
        paths, compiles = [], []
        for call in range(5):
            batch = 16 if call < 4 else 24
            x, y = rng.standard_normal((batch, 96), dtype=np.float32), rng.integers(0, 10, batch)
            before = fg.cache_info().kernels_compiled
            loss = compiled(fg.tensor(x), fg.tensor(y))
            compiles.append(fg.cache_info().kernels_compiled - before)
            paths.append(compiled.last_run.path)
            if call == 0:
                background.wait_for_compiles()
            ref_opt.zero_grad()
            expected = torch.nn.functional.cross_entropy(ref(torch.tensor(x)), torch.tensor(y))
            expected.backward()
            ref_opt.step()
            np.testing.assert_allclose(loss.item(), expected.item(), rtol=1e-5)
        for p, q in zip(mine.parameters(), ref.parameters()):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)
        assert paths[0].startswith("reference executor") and paths[1:] == ["compiled kernels"] * 4
        assert compiles[1:] == [0, 0, 0, 0]
        assert _inputs_written_over(compiled.last_run.compiled)
    finally:
        background.wait_for_compiles()
        fg.clear_caches()
