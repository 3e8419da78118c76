"""The backward programs of compiled calls kept by structure (runtime/backward_cache.py): a
second call of the same structure reuses the first call's backward program, binds this call's
saved values in their places, and computes what eager execution (and torch) computes."""
import numpy as np
import pytest

import fusegrad as fg
from fusegrad.runtime import backward_cache

torch = pytest.importorskip("torch")


def _mlp(L):
    L.manual_seed(0)
    return L.nn.Sequential(L.nn.Linear(4, 8), L.nn.ReLU(), L.nn.Linear(8, 3))


def _copy_weights(source, target):
    with torch.no_grad():
        for (_, p), (_, q) in zip(source.named_parameters(), target.named_parameters()):
            q.copy_(torch.tensor(p.detach().numpy()))


def test_a_second_call_reuses_the_backward_program_and_computes_torchs_gradients():
    model = _mlp(fg)
    reference = _mlp(torch)
    _copy_weights(model, reference)
    f = fg.compile(lambda x: model(x).tanh().sum())
    rng = np.random.default_rng(1)
    hits = []
    for call in range(3):
        x = rng.standard_normal((5, 4)).astype(np.float32)
        out = f(fg.tensor(x))
        expected = reference(torch.tensor(x)).tanh().sum()
        model.zero_grad()
        reference.zero_grad()
        out.backward()
        expected.backward()
        np.testing.assert_allclose(out.item(), expected.item(), rtol=1e-5)
        for (_, p), (_, q) in zip(model.named_parameters(), reference.named_parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
        hits.append(backward_cache.PROGRAMS.hits)
    # the first call kept its program; each later call found it
    assert hits[1] == hits[0] + 1 and hits[2] == hits[1] + 1


@pytest.mark.parametrize("needs", [(True, True), (True, False), (False, True)])
def test_which_inputs_need_a_gradient_is_part_of_the_key(needs):
    """The same function with other inputs requiring grad differentiates other values: its
    backward program is another one, and each call's gradients are torch's."""
    def f(L):
        return lambda a, b: (a * b + a.exp()).sum()
    rng = np.random.default_rng(2)
    compiled = fg.compile(f(fg))
    for _ in range(2):
        for flags in (needs, (True, True)):
            a0, b0 = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
            got = [fg.tensor(a0, requires_grad=flags[0]), fg.tensor(b0, requires_grad=flags[1])]
            want = [torch.tensor(a0, requires_grad=flags[0]), torch.tensor(b0, requires_grad=flags[1])]
            compiled(*got).backward()
            f(torch)(*want).backward()
            for g, w in zip(got, want):
                assert (g.grad is None) == (w.grad is None)
                if w.grad is not None:
                    np.testing.assert_allclose(g.grad.numpy(), w.grad.numpy(), rtol=1e-6)


def test_a_second_order_gradient_through_a_kept_backward_program():
    """create_graph re-emits the call's forward and its backward program: the kept program's
    saved values are this call's values, not the first call's."""
    def f(L):
        return lambda x, w: (x * w).sin().sum()
    compiled = fg.compile(f(fg))
    for scale in (1.0, 2.5, -0.5):
        x0, w0 = np.array([0.3, -1.2, 0.7]) * scale, np.array([1.5, 0.4, -2.0])
        results = []
        for L, fn in ((fg, compiled), (torch, f(torch))):
            x, w = L.tensor(x0, requires_grad=True), L.tensor(w0, requires_grad=True)
            (gx,) = L.autograd.grad(fn(x, w), [x], create_graph=True)
            (gx * gx).sum().backward()
            results.append([gx.detach().numpy(), x.grad.numpy(), w.grad.numpy()])
        for got, want in zip(*results):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


def test_a_version_check_of_a_kept_program_names_this_calls_tensor():
    """The version checks of saved values are made per call: a write after the second call
    raises torch's error there too."""
    compiled = fg.compile(lambda x: x.exp())
    for _ in range(2):
        x = fg.tensor([0.5, 1.0], requires_grad=True)
        y = compiled(x)
        y.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_clear_caches_forgets_the_kept_programs():
    compiled = fg.compile(lambda x: (x * x).sum())
    compiled(fg.tensor([1.0, 2.0], requires_grad=True)).backward()
    assert backward_cache.PROGRAMS.entries
    fg.clear_caches()
    assert not backward_cache.PROGRAMS.entries and backward_cache.PROGRAMS.hits == 0


@pytest.mark.parametrize("seed", range(12))
def test_random_programs_compiled_twice_give_torchs_gradients(seed):
    """The fuzzer's random programs (tests/fuzz_programs.py), each compiled and run twice: the
    second run takes the first one's kept backward program (where the first kept one), and both
    match torch (values, errors and every leaf's .grad)."""
    import os
    import sys
    sys.path.insert(0, os.path.dirname(__file__))
    from fuzz_programs import differences, generate, outcome
    program = generate(seed)
    want = outcome(torch, program, "compiled")
    for run in range(2):
        got = outcome(fg, program, "compiled")
        assert not differences(want, got, "compiled"), (run, program.source())


@pytest.mark.parametrize("seed", range(12))
def test_random_programs_differentiated_inside_a_compiled_call_twice(seed):
    """autograd.grad inside the compiled call (the tracer's backward, replayed from its template
    on the second run: ir/backward_templates), against torch's eager gradients."""
    import os
    import sys
    import warnings
    sys.path.insert(0, os.path.dirname(__file__))
    from fuzz_programs import _weight, generate
    program = generate(seed)

    def differentiated(L):
        fn = program.function(L)

        def run(*inputs):
            outs = [o for o in fn(*inputs) if o.dtype.is_floating_point and o.requires_grad]
            leaves = [t for t in inputs if t.requires_grad]
            if not outs or not leaves:
                return ()
            loss = sum((o * _weight(L, o)).sum().double() for o in outs)
            return tuple(g for g in L.autograd.grad(loss, leaves, allow_unused=True) if g is not None)
        return run

    def results(L, wrap):
        inputs = [i.make(L, float64=False) for i in program.inputs]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return [np.asarray(g.detach().numpy(), dtype=np.float64) for g in wrap(differentiated(L))(*inputs)]
            except Exception as exc:    # noqa: BLE001 (torch's failures are skipped below)
                return type(exc).__name__
    want = results(torch, lambda fn: fn)
    if isinstance(want, str):
        pytest.skip(f"torch raises {want} for this program")
    for run in range(2):
        got = results(fg, fg.compile)
        assert not isinstance(got, str) and len(got) == len(want), (run, got, program.source())
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=2e-4, atol=1e-5, equal_nan=True)
