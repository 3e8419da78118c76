"""fg.compile's tracing side: programs, graph breaks, in-place write-back,
autograd across the compiled boundary, training steps, explain(), errors.

Values are checked against eager fusegrad (itself checked against torch in
test_ops / test_autograd) and against finite differences where eager is not
the point. Small programs run on the reference executor (the cost model), so
tests that must exercise kernels use sizes above SMALL_PROGRAM_ELEMENTS.
"""
import warnings

import numpy as np
import pytest

import fusegrad as fg
from fusegrad.runtime.tiered import SMALL_PROGRAM_ELEMENTS

BIG = SMALL_PROGRAM_ELEMENTS  # elements in a vector large enough to compile


@pytest.fixture(autouse=True)
def _synchronous_compiles(monkeypatch):
    """Counters and paths are asserted call by call: compile on first use, not in the background."""
    monkeypatch.setenv("FUSEGRAD_ASYNC_COMPILE", "0")


def chain(x):
    return (fg.tanh(x) * fg.sigmoid(x) + fg.exp(-x * x)).sum()


def test_value_and_grad_compiled_equals_eager():
    x = fg.randn(BIG)
    cv, cg = fg.compile(fg.value_and_grad(chain))(x)
    ev, eg = fg.value_and_grad(chain)(x)
    np.testing.assert_allclose(cv.item(), ev.item(), rtol=1e-5)
    np.testing.assert_allclose(cg.numpy(), eg.numpy(), rtol=1e-5, atol=1e-6)
    assert cg.grad_fn is None and not cg.requires_grad


def test_compiled_function_runs_kernels_and_reports_path():
    compiled = fg.compile(chain)
    text = compiled.explain(fg.randn(BIG))
    assert "execution path: compiled kernels" in text
    assert "= tanh a" in text


def test_small_programs_use_the_cache_like_any_other():
    """By default every program compiles on its first call: a second call is a hit and compiles nothing."""
    f = fg.compile(lambda t: (t * 2 + 1).exp())
    x = fg.randn(3)
    before = fg.cache_info()
    f(x)
    first = fg.cache_info()
    out = f(x)
    second = fg.cache_info()
    assert first.misses == before.misses + 1
    assert second.hits == first.hits + 1 and second.misses == first.misses
    assert second.kernels_compiled == first.kernels_compiled
    np.testing.assert_allclose(out.numpy(), np.exp(x.numpy() * 2 + 1), rtol=1e-6)


def test_small_programs_run_by_reference_under_tiered_execution(monkeypatch):
    monkeypatch.setenv("FUSEGRAD_ASYNC_COMPILE", "1")
    f = fg.compile(lambda t: (t * 3).exp())
    f(fg.randn(4))
    assert "reference executor (small program)" in f.last_run.path


def test_second_call_with_same_shapes_compiles_nothing():
    compiled = fg.compile(fg.value_and_grad(chain))
    x = fg.randn(BIG)
    compiled(x)
    before = fg.cache_info()
    compiled(fg.randn(BIG))
    after = fg.cache_info()
    assert after.kernels_compiled == before.kernels_compiled
    assert after.hits == before.hits + 1
    assert after.misses == before.misses


def test_new_size_compiles_no_new_kernel():
    compiled = fg.compile(fg.value_and_grad(chain))
    compiled(fg.randn(BIG))
    before = fg.cache_info()
    compiled(fg.randn(BIG + 123))
    after = fg.cache_info()
    assert after.misses == before.misses + 1          # a new shape signature ...
    assert after.kernels_compiled == before.kernels_compiled   # ... reuses the kernel


def test_outputs_carry_history_into_eager_backward():
    x = fg.randn(BIG, requires_grad=True)
    y = fg.compile(lambda t: (t * t).exp())(x)
    assert type(y.grad_fn).__name__ == "CompiledFunctionBackward"
    y.sum().backward()
    expected = (2 * x.detach() * (x.detach() * x.detach()).exp()).numpy()
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-5)


def test_outputs_without_grad_inputs_have_no_history():
    y = fg.compile(lambda t: t * 2)(fg.randn(8))
    assert y.grad_fn is None and not y.requires_grad


def test_backward_inside_compiled_function_fills_leaf_grads():
    w = fg.randn(BIG, requires_grad=True)
    x = fg.randn(BIG)

    @fg.compile
    def step(x):
        loss = (fg.tanh(x * w) ** 2).mean()
        loss.backward()
        return loss

    loss = step(x)
    w2 = w.detach().clone().requires_grad_()
    eager_loss = (fg.tanh(x * w2) ** 2).mean()
    eager_loss.backward()
    np.testing.assert_allclose(loss.item(), eager_loss.item(), rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), w2.grad.numpy(), rtol=1e-5, atol=1e-7)
    step(x)   # gradients accumulate across calls, as in eager
    np.testing.assert_allclose(w.grad.numpy(), 2 * w2.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_value_dependent_while_loop_is_right_with_graph_breaks():
    @fg.compile
    def doubling(x):
        y = x * 2
        while y.norm() < 1000:
            y = y * 2
        return y

    x = fg.tensor([1.0, 2.0, 3.0])
    out = doubling(x)
    expected = x * 2
    while expected.norm() < 1000:
        expected = expected * 2
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
    text = doubling.explain(x)
    assert "## graph breaks" in text and "test_compile.py" in text


def test_tutorial_loop_backward_through_compiled_function():
    x = fg.randn(3, requires_grad=True)

    @fg.compile
    def f(x):
        y = x * 2
        k = 1
        while y.data.norm() < 1000:
            y = y * 2
            k += 1
        return y, k

    y, k = f(x)
    v = fg.tensor([0.1, 1.0, 0.0001])
    y.backward(v)
    np.testing.assert_allclose(x.grad.numpy(), (v * 2.0 ** k).numpy(), rtol=1e-6)


def test_inplace_updates_are_written_back():
    p = fg.randn(BIG)
    before = p.numpy().copy()

    @fg.compile
    def update(g):
        p.sub_(0.5 * g)
        p.mul_(2.0)
        return p.sum()

    g = fg.randn(BIG)
    total = update(g)
    expected = (before - 0.5 * g.numpy()) * 2.0
    np.testing.assert_allclose(p.numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(total.item(), expected.sum(dtype=np.float64), rtol=1e-4)


def test_numpy_arrays_and_python_floats_are_accepted():
    f = fg.compile(lambda a, s: (a * s).sum())
    out = f(np.arange(4, dtype=np.float32), 2.5)
    assert isinstance(out, fg.Tensor) and out.item() == pytest.approx(15.0)


def test_scalars_are_runtime_arguments_not_cache_keys():
    f = fg.compile(lambda a, s: (a * s + 1.0).exp())
    x = fg.randn(BIG)
    f(x, 1.5)
    before = fg.cache_info()
    out = f(x, 0.25)
    after = fg.cache_info()
    assert after.misses == before.misses and after.hits == before.hits + 1
    np.testing.assert_allclose(out.numpy(), np.exp(x.numpy() * 0.25 + 1.0), rtol=1e-5)


def test_error_inside_compiled_function_leaves_state_usable():
    p = fg.randn(8, requires_grad=True)
    p.grad = fg.ones(8)

    @fg.compile
    def bad(x):
        (x * p).sum().backward()
        return x + fg.ones(3)     # broadcasting error after the backward

    x = fg.randn(8)
    with pytest.raises(RuntimeError, match="must match the size of tensor b"):
        bad(x)
    # as eagerly: the backward before the error accumulated into p.grad
    np.testing.assert_allclose(p.grad.numpy(), 1 + x.numpy(), rtol=1e-6)
    good = fg.compile(lambda x: (x * p).sum())(fg.ones(8))
    assert good.item() == pytest.approx(p.detach().sum().item(), rel=1e-6)


def test_nested_compiled_functions_inline():
    inner = fg.compile(lambda t: t.exp())
    outer = fg.compile(lambda t: inner(t) * 2)
    x = fg.randn(5)
    np.testing.assert_allclose(outer(x).numpy(), 2 * np.exp(x.numpy()), rtol=1e-6)


def test_compiled_grad_of_grad():
    f = fg.compile(fg.grad(fg.grad(lambda t: (t ** 3).sum())))
    np.testing.assert_allclose(f(fg.tensor(2.0)).item(), 12.0)


def test_explain_shows_forward_backward_kernels_and_source():
    w = fg.randn(64, 32, requires_grad=True)

    @fg.compile
    def step(x):
        loss = fg.tanh(x @ w).pow(2).mean()
        loss.backward()
        return loss

    text = step.explain(fg.randn(128, 64))
    assert "## forward program" in text and "## backward program" in text
    assert "= matmul" in text and "= tanh" in text
    assert "def kernel(" in text            # generated Numba source
    assert "## graph breaks\nnone" in text


def test_compiled_mlp_training_step_matches_eager_for_five_steps():
    def make():
        fg.manual_seed(0)
        model = fg.nn.Sequential(fg.nn.Linear(20, 32), fg.nn.ReLU(), fg.nn.Linear(32, 4))
        return model, fg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(model, opt, x, y):
        opt.zero_grad()
        loss = fg.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    x, y = fg.randn(64, 20), fg.randint(0, 4, (64,))
    (m1, o1), (m2, o2) = make(), make()
    compiled = fg.compile(step)
    for _ in range(5):
        eager_loss, compiled_loss = step(m1, o1, x, y), compiled(m2, o2, x, y)
        np.testing.assert_allclose(compiled_loss.item(), eager_loss.item(), rtol=1e-5)
    for p1, p2 in zip(m1.parameters(), m2.parameters()):
        np.testing.assert_allclose(p2.detach().numpy(), p1.detach().numpy(), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ a step that calls backward inside
def _training_step(lib, body, retain):
    w = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)

    def step(x):
        loss = body(w, x)
        loss.backward(retain_graph=retain)
        return loss
    return w, step


BODIES = {"tanh": lambda w, x: (w * x).tanh().sum(),      # saves tensors: a second backward raises
          "add": lambda w, x: (w + x).sum()}               # saves nothing: a second backward works


@pytest.mark.parametrize("retain", [False, True])
@pytest.mark.parametrize("body", sorted(BODIES))
def test_backward_through_a_step_that_already_ran_backward_matches_torch(body, retain):
    """The returned loss of a compiled step whose backward ran inside the call: a second
    backward raises torch's 'backward through the graph a second time' exactly when
    torch does (and otherwise accumulates the same gradients)."""
    torch = pytest.importorskip("torch", reason="torch is the oracle for this behaviour")
    outcomes = []
    for lib, wrap in ((fg, fg.compile), (torch, lambda f: f)):
        w, step = _training_step(lib, BODIES[body], retain)
        loss = wrap(step)(lib.tensor([0.5, 0.1, -0.2]))
        try:
            loss.backward()
        except RuntimeError as exc:
            outcomes.append(("raises", str(exc)))
        else:
            outcomes.append(("ok", np.asarray(w.grad.detach().numpy()).round(6).tolist()))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] == ("raises" if body == "tanh" and not retain else "ok")


def _inplace_on_intermediates(a):
    y = a * 1
    y.add_(1)
    y[0] = 5.0
    y.mul_(y * 1)          # (y.mul_(y) raises at backward, as in torch: mul saved y)
    w = fg.zeros(3)
    w.add_(y)             # a tensor without history written with one that has it
    w.mul_(2)
    return w.sum(), (y.is_leaf, a.is_leaf, y.detach().is_leaf)


def test_inplace_on_intermediates_inside_compile_matches_eager():
    """In-place ops (and t[i] = v) on tensors the function made are fine inside fg.compile, as
    eagerly; a leaf that requires grad still refuses them, with torch's text."""
    results = []
    for wrap in (lambda f: f, fg.compile):
        x = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)      # index_put runs by reference
            loss, leaves = wrap(_inplace_on_intermediates)(x)
        loss.backward()
        results.append((loss.item(), x.grad.numpy().tolist(), leaves))
    assert results[0] == results[1] and results[0][2] == (False, True, True)

    def leaf_inplace(a):
        a.add_(1)
        return a
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        fg.compile(leaf_inplace)(fg.tensor([1.0], requires_grad=True))


def _view_write_cases():
    def through_select(a):
        y = a * 1
        y[0].add_(10)
        return y

    def through_transpose(a):
        y = a * 1
        y.t()[0].mul_(0)
        return y

    def into_new_tensor(a):
        b = fg.zeros(2, 3)
        b[0].add_(a[0])
        return b

    def setitem_on_view(a):
        y = a.clone()
        y.view(-1)[1] = 7.0
        return y

    def view_sees_base_write(a):
        y = a * 1
        v = y[1]
        y.add_(1)
        return v * 1

    def chained_views_with_grad(a):
        y = a * 1
        y[:, 1:].mul_(2)
        y.t()[0].add_(100)
        return (y * y).sum()

    def into_argument(a):
        a.detach()[0].mul_(2)                # a view of the argument's memory: written back
        return a * 1
    return [through_select, through_transpose, into_new_tensor, setitem_on_view, view_sees_base_write,
            chained_views_with_grad, into_argument]


@pytest.mark.parametrize("fn", _view_write_cases(), ids=lambda f: f.__name__)
def test_inplace_writes_through_views_inside_compile_match_eager(fn):
    """A view is recorded as its base and a chain of view ops: a write through it writes the
    base (CopySlices), and the base's other views see it, as eagerly (shared memory)."""
    results = []
    for wrap in (lambda f: f, fg.compile):
        x = fg.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            out = wrap(fn)(x)
        grad = None
        if out.requires_grad and out.numel() == 1:
            out.backward()
            grad = x.grad.numpy().tolist()
        results.append((out.detach().numpy().tolist(), grad, x.detach().numpy().tolist()))
    assert results[0] == results[1]


def test_inplace_through_a_view_of_a_leaf_inside_compile_raises_as_eagerly():
    def f(a):
        a[0].add_(1)
        return a
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an "
                                           "in-place operation."):
        fg.compile(f)(fg.tensor([1.0, 2.0], requires_grad=True))


@pytest.mark.parametrize("key", ["1:", "...", "0, 1"])
def test_setitem_on_a_leaf_written_under_no_grad_in_the_call_raises_torchs_text(key):
    """A leaf written under no_grad inside the call is still a leaf: `a[1:] = v` writes
    through a view of it, and raises torch's "a view of a leaf" text (a[...] the leaf's own)."""
    torch = pytest.importorskip("torch", reason="torch is the oracle for the text")
    namespace = {}
    exec(f"def f(a, L):\n    with L.no_grad():\n        a.add_(0.5)\n    a[{key}] = 2.0\n    return a\n",
         namespace)
    f = namespace["f"]
    texts = []
    for lib, run in ((torch, f), (fg, fg.compile(f))):
        with pytest.raises(RuntimeError) as raised:
            run(lib.ones(2, 3, requires_grad=True), lib)
        texts.append(str(raised.value))
    assert texts[1] == texts[0]


def test_write_through_a_view_made_before_the_call():
    """A view created eagerly (p = W[0]) and written inside fg.compile: W and p both hold the
    new value inside the call and after it, as eagerly."""
    results = []
    for wrap in (lambda f: f, fg.compile):
        W = fg.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
        p = W[0]

        def f(x):
            p.add_(x)
            return p * 1, W * 1
        inside_p, inside_w = wrap(f)(fg.ones(3, requires_grad=True))
        results.append([t.detach().numpy().tolist() for t in (inside_p, inside_w, W, p)])
    assert results[0] == results[1]


@pytest.mark.parametrize("where", ["arguments", "inside"])
def test_two_leaves_over_one_memory_get_their_own_gradients(where):
    """Two `x.detach().requires_grad_()` of one tensor are separate variables (torch): each
    gets the gradient of its own uses, also when both are lifted from one memory in a trace."""
    torch = pytest.importorskip("torch", reason="torch is the oracle for this behaviour")
    grads = []
    for lib in (torch, fg):
        x = lib.tensor([1.0, 2.0])

        def step(a, b):
            (a * 2 + b * 3 + a * b).sum().backward()
            return a.grad, b.grad

        def inside(x):
            return step(x.detach().requires_grad_(), x.detach().requires_grad_())
        if where == "arguments":
            a, b = x.detach().requires_grad_(), x.detach().requires_grad_()
            (step if lib is torch else fg.compile(step))(a, b)
            grads.append((a.grad.tolist(), b.grad.tolist()))
        else:
            ga, gb = (inside if lib is torch else fg.compile(inside))(x)
            grads.append((ga.tolist(), gb.tolist()))
    assert grads[1] == grads[0]
