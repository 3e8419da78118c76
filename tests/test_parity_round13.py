"""Parity round 13 (two sweeps: an independent API.md suite and a bad-input fuzz), torch is
the oracle: in-place writes through views of an nn.Parameter inside fg.compile; a write
through a detach()/.data of a view of a leaf keeps the leaf a leaf inside fg.compile;
backward(inputs=) with a repeated tensor; dtype= spellings; argument parsing of softmax,
in-place add_/mul_, cat/stack dims and the factories' requires_grad."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")


def _outcome(fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = fn()
    except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
        return ("error", type(exc).__name__, str(exc))
    if hasattr(result, "detach"):
        return ("tensor", np.round(result.detach().numpy().astype(np.float64), 6).tolist(), str(result.dtype).split(".")[-1])
    return ("value", result)


VIEWS = {"[0]": lambda w: w[0], "[:,1]": lambda w: w[:, 1], "t()": lambda w: w.t(), "view(4)": lambda w: w.view(4)}
WRITES = {"mul_": lambda v: v.mul_(2), "zero_": lambda v: v.zero_(), "fill_": lambda v: v.fill_(3.0)}


@pytest.mark.parametrize("write", list(WRITES))
@pytest.mark.parametrize("view", list(VIEWS))
def test_a_compiled_write_through_a_parameter_view_reaches_the_parameter(view, write):
    def run(lib):
        p = lib.nn.Parameter(lib.tensor([[1.0, 2.0], [3.0, 4.0]]))

        def f(w):
            with lib.no_grad():
                WRITES[write](VIEWS[view](w))
            return w.sum()
        total = fg.compile(f)(p) if lib is fg else f(p)
        return p.detach().numpy().tolist(), total.item()
    assert run(fg) == run(torch)


def test_a_compiled_write_through_a_parameter_view_with_grad_raises_torchs_error():
    with pytest.raises(RuntimeError) as theirs:
        torch.nn.Parameter(torch.ones(2, 2))[0].mul_(2)
    with pytest.raises(RuntimeError) as ours:
        fg.compile(lambda p: (p[0].mul_(2), p.sum())[1])(fg.nn.Parameter(fg.ones(2, 2)))
    assert str(ours.value) == str(theirs.value)


def test_a_compiled_backward_through_a_modified_parameter_view_raises():
    def f(p, lib):
        y = (p[0] * p[0]).sum()
        with lib.no_grad():
            p.mul_(2)
        y.backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        f(torch.nn.Parameter(torch.tensor([[1.0, 2.0], [3.0, 4.0]])), torch)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        fg.compile(lambda p: f(p, fg))(fg.nn.Parameter(fg.tensor([[1.0, 2.0], [3.0, 4.0]])))


@pytest.mark.parametrize("alias", ["detach", "data"])
def test_a_write_through_a_detached_view_of_a_leaf_keeps_its_gradient_in_compile(alias):
    def f(lib, x):
        t = x.exp()
        view = x[0]
        (view.detach() if alias == "detach" else view.data).add_(1)
        t.sum().backward()
        return x.grad, x.detach().clone()
    data = [[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]]
    theirs = f(torch, torch.tensor(data, requires_grad=True))
    ours = fg.compile(lambda x: f(fg, x))(fg.tensor(data, requires_grad=True))
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-6)


def test_the_view_keeps_its_own_gradient_path_after_the_detached_write():
    def f(lib, w):
        v = w[0:2]
        t = v * 2
        v.detach().mul_(2)
        (t * t).sum().backward()
        return w.grad
    theirs = f(torch, torch.tensor([1.0, 2.0, -0.5], requires_grad=True))
    ours = fg.compile(lambda w: f(fg, w))(fg.tensor([1.0, 2.0, -0.5], requires_grad=True))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_an_in_place_op_on_the_view_after_a_detached_write_still_raises():
    def f(lib, x):
        v = x[0]
        v.detach().add_(1)
        v.mul_(2)
        return x * 1
    with pytest.raises(RuntimeError) as theirs:
        f(torch, torch.tensor([1.0, 2.0], requires_grad=True))
    with pytest.raises(RuntimeError) as ours:
        fg.compile(lambda x: f(fg, x))(fg.tensor([1.0, 2.0], requires_grad=True))
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_backward_counts_a_repeated_input_once(compiled):
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)

        def step(x):
            (x * 2).sum().backward(inputs=[x, x, x])
            return x * 1
        (fg.compile(step) if compiled and lib is fg else step)(x)
        return x.grad.numpy().tolist()
    assert run(fg) == run(torch)


CALLS = {
    "sum dtype=float": lambda L, x: L.tensor([[1, 2], [3, 4]]).sum(0, dtype=float),
    "sum dtype=int": lambda L, x: x.sum(dtype=int),
    "sum dtype=bool": lambda L, x: x.sum(dtype=bool),
    "mean dtype=float": lambda L, x: x.mean(0, dtype=float),
    "mean dtype=int": lambda L, x: x.mean(dtype=int),
    "softmax dtype=float": lambda L, x: x.softmax(0, dtype=float),
    "softmax dtype str": lambda L, x: x.softmax(0, dtype="a"),
    "softmax axis": lambda L, x: x.softmax(axis=1),
    "softmax 0-d dim": lambda L, x: x.softmax(L.tensor(0)),
    "softmax 1-d dim": lambda L, x: x.softmax(L.tensor([0])),
    "softmax method position": lambda L, x: x.softmax(1.5),
    "softmax function position": lambda L, x: L.softmax(x, 1.5),
    "softmax keyword": lambda L, x: x.softmax(dim=1.5),
    "softmax unknown keyword": lambda L, x: x.softmax(1, foo=2),
    "add_ positional alpha": lambda L, x: x.clone().add_(x, 10),
    "mul_ positional": lambda L, x: x.clone().mul_(x, 10),
    "mul_ alpha": lambda L, x: x.clone().mul_(x, alpha=2),
    "add_ 0-d alpha": lambda L, x: x.clone().add_(x, alpha=L.tensor(2.0)),
    "add 1-d alpha": lambda L, x: x.add(x, alpha=L.tensor([1.0, 2.0])),
    "add_ alpha None": lambda L, x: x.clone().add_(x, alpha=None),
    "cat 1-d dim": lambda L, x: L.cat([x, x], L.tensor([1])),
    "cat 0-d dim": lambda L, x: L.cat([x, x], L.tensor(1)),
    "zeros requires_grad=1": lambda L, x: L.zeros(2, requires_grad=1),
    "zeros requires_grad=None": lambda L, x: L.zeros(2, requires_grad=None),
    "tensor requires_grad=None": lambda L, x: L.tensor([1.0], requires_grad=None),
    "zeros_like requires_grad=1": lambda L, x: L.zeros_like(x, requires_grad=1),
    "zeros_like memory_format": lambda L, x: L.zeros_like(x, memory_format=None),
    "float(1)": lambda L, x: x.float(1),
    "double(1, 2)": lambda L, x: x.double(1, 2),
    "long(memory_format=None)": lambda L, x: x.long(memory_format=None),
    "bool(foo=)": lambda L, x: x.bool(foo=1),
    "cross_entropy weight=1": lambda L, x: L.nn.functional.cross_entropy(x, L.tensor([0, 1]), 1),
    "cross_entropy label_smoothing str": lambda L, x: L.nn.functional.cross_entropy(x, L.tensor([0, 1]),
                                                                                     label_smoothing="a"),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_argument_parsing_matches_torch(name):
    ours = _outcome(lambda: CALLS[name](fg, fg.tensor([[1.0, 2.0], [3.0, 4.0]])))
    theirs = _outcome(lambda: CALLS[name](torch, torch.tensor([[1.0, 2.0], [3.0, 4.0]])))
    if theirs[0] == "error" and "invalid combination" in theirs[2]:
        assert ours[:2] == theirs[:2] and ours[2].split(" - got")[0] == theirs[2].split(" - got")[0]
    else:
        assert ours == theirs


def test_a_bad_dtype_inside_compile_leaves_the_next_compile_working():
    x = fg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    with pytest.raises(TypeError):
        fg.compile(lambda a: fg.mean(a, 0, dtype=a))(x)
    assert fg.compile(lambda a: fg.mean(a, dtype=fg.float64))(x).item() == 3.5


def test_clear_caches_zeroes_the_counters_as_functools_cache_clear():
    square = fg.compile(lambda t: t * t + 1)
    square(fg.ones(3))
    fg.clear_caches()
    assert fg.cache_info() == fg.CacheInfo()
    square(fg.ones(3))
    square(fg.ones(3))
    info = fg.cache_info()
    assert (info.misses, info.hits) == (1, 1)


@pytest.mark.parametrize("options", [{}, {"dampening": 0.3}, {"nesterov": True}], ids=str)
def test_a_compiled_momentum_step_hits_the_cache_from_its_second_call(options):
    """The first momentum step (which makes the buffer) traces the same program as later ones."""
    fg.manual_seed(0)
    layer = fg.nn.Linear(3, 2)
    opt = fg.optim.SGD(layer.parameters(), lr=0.1, momentum=0.9, **options)
    x = fg.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))

    @fg.compile
    def step(x):
        opt.zero_grad()
        loss = (layer(x) ** 2).mean()
        loss.backward()
        opt.step()
        return loss
    step(x)
    before = fg.cache_info()
    step(x)
    after = fg.cache_info()
    assert (after.hits - before.hits, after.misses - before.misses, after.kernels_compiled - before.kernels_compiled) \
        == (1, 0, 0)


def test_the_first_momentum_step_makes_torchs_buffer():
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal((4, 3)).astype(np.float32) for _ in range(3)]
    grads[0][0, 0] = -0.0

    def run(lib):
        p = lib.tensor(np.ones((4, 3), np.float32), requires_grad=True)
        opt = lib.optim.SGD([p], lr=0.1, momentum=0.9, dampening=0.3)
        buffers = []
        for g in grads:
            p.grad = lib.tensor(g)
            opt.step()
            buffers.append(opt.state[p]["momentum_buffer"].numpy().copy())
        return buffers
    ours, theirs = run(fg), run(torch)
    np.testing.assert_array_equal(ours[0], theirs[0])                  # the gradient, undamped
    np.testing.assert_array_equal(np.signbit(ours[0]), np.signbit(theirs[0]))
    for o, t in zip(ours[1:], theirs[1:]):      # (torch's add with alpha is one FMA: an ulp apart)
        np.testing.assert_allclose(o, t, rtol=1e-6)


@pytest.mark.parametrize("transform", [fg.grad, fg.value_and_grad], ids=["grad", "value_and_grad"])
def test_a_multi_element_output_error_names_the_transform_called(transform):
    name = "fg.grad" if transform is fg.grad else "fg.value_and_grad"
    with pytest.raises(RuntimeError, match=f"^the function passed to {name} must return a tensor with one element"):
        transform(lambda x: x * 2)(fg.ones(3))


SEQUENCE_CALLS = {
    "backward([g])": lambda L, x: (x * 2).backward([L.ones(2)]) or x.grad,
    "backward((g,))": lambda L, x: (x * 2).backward((L.ones(2),)) or x.grad,
    "backward(2.0)": lambda L, x: (x * 2).sum().backward(2.0),
    "grad ndarray outputs": lambda L, x: L.autograd.grad(x * 2, x, np.ones(2)),
    "grad [2.0]": lambda L, x: L.autograd.grad((x * 2).sum(), x, [2.0]),
    "where other=": lambda L, x: x.detach().where(L.tensor([True, False]), other=L.zeros(2)),
    "== 1j": lambda L, x: x.detach() == 1j,
    "== 1+0j": lambda L, x: x.detach() == (1 + 0j),
    "!= 1j": lambda L, x: x.detach() != 1j,
    "nan == 1j": lambda L, x: L.tensor([float("nan")]) == 1j,
    "int == 2+0j": lambda L, x: L.tensor([1, 2]) == 2 + 0j,
}


@pytest.mark.parametrize("name", list(SEQUENCE_CALLS))
def test_gradient_sequences_and_complex_comparisons_match_torch(name):
    ours = _outcome(lambda: SEQUENCE_CALLS[name](fg, fg.tensor([1.0, 2.0], requires_grad=True)))
    theirs = _outcome(lambda: SEQUENCE_CALLS[name](torch, torch.tensor([1.0, 2.0], requires_grad=True)))
    assert ours == theirs


def test_autograd_grad_of_a_non_leaf_argument_itself_inside_compile():
    x = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (g,) = fg.compile(lambda a, c: fg.autograd.grad(c, [a], fg.ones(3)))(x, x * 2)
    np.testing.assert_array_equal(g.numpy(), [2.0, 2.0, 2.0])


@pytest.mark.parametrize("allow_unused", [False, True])
def test_create_graph_through_history_from_before_the_call_is_refused_clearly(allow_unused):
    x = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    step = fg.compile(lambda a, c: fg.autograd.grad((c * c).sum(), [a], create_graph=True, allow_unused=allow_unused))
    with pytest.raises(NotImplementedError, match="create_graph=True\\) inside fg.compile"):
        step(x, x * 2)


@pytest.mark.parametrize("exponent", [True, False])
def test_a_compiled_bool_power_runs_compiled_without_a_warning(exponent):
    import warnings as _warnings
    with _warnings.catch_warnings():
        _warnings.simplefilter("error")         # (a kernel that fails to compile warns)
        ours = fg.compile(lambda t: t ** exponent)(fg.tensor([True, False]))
    theirs = torch.tensor([True, False]) ** exponent
    assert ours.numpy().tolist() == theirs.numpy().tolist() and str(ours.dtype) == "fg.bool"


ONE_ELEMENT_REDUCTIONS = {
    "int sum": (lambda a: a.sum(), [2]),
    "int sum(0) over a unit dim": (lambda a: a.sum(0), [[1, 2, 3]]),
    "int max": (lambda a: a.max(), [2]),
    "float max": (lambda a: a.max(), [2.0]),
    "float min": (lambda a: a.min(), [2.0]),
}


@pytest.mark.parametrize("name", list(ONE_ELEMENT_REDUCTIONS))
def test_a_reduction_of_one_element_does_not_see_a_later_write_of_its_input(name):
    op, data = ONE_ELEMENT_REDUCTIONS[name]

    def f(a):
        v = op(a)
        a.add_(3)
        return v
    theirs = f(torch.tensor(data)).numpy().tolist()
    assert fg.compile(f)(fg.tensor(data)).numpy().tolist() == theirs


@pytest.mark.parametrize("alias", ["detach", "data"])
def test_a_write_with_history_through_a_detach_keeps_that_history_in_compile(alias):
    def f(lib, a0, a1):
        v0 = a0 * 2
        v1 = v0.detach() if alias == "detach" else v0.data
        v1.mul_(a1)
        v1.sum().backward()
        return v1
    def run(lib, compiled):
        a0, a1 = lib.tensor([[0.5, 1.5]], requires_grad=True), lib.tensor(2.0, requires_grad=True)
        out = (fg.compile(lambda a, b: f(fg, a, b)) if compiled else (lambda a, b: f(lib, a, b)))(a0, a1)
        return out.detach().numpy().tolist(), a1.grad.item(), a0.grad
    theirs = run(torch, False)
    ours = run(fg, True)
    assert ours[:2] == theirs[:2] and ours[2] is None and theirs[2] is None


def test_a_write_through_a_detach_of_a_leaf_does_not_leak_its_history_into_the_leaf():
    def f(a):
        v2 = a.view(a.shape)
        a.detach().mul_(a)
        return v2

    def run(lib, compiled):
        a = lib.tensor([[0.5, 1.5, -2.0]], requires_grad=True)
        v = (fg.compile(f) if compiled else f)(a)
        (v * lib.tensor([[1.0, 2.0, 3.0]])).sum().backward()
        return v.detach().numpy().tolist(), a.grad.numpy().tolist()
    assert run(fg, True) == run(torch, False)


def test_a_write_with_history_through_a_detach_gives_no_history_to_a_source_without_one():
    def f(a, b):
        v = a.exp()
        v.detach().add_(b)
        return v
    out = fg.compile(f)(fg.tensor([0.5, 1.5]), fg.tensor([1.0, 2.0], requires_grad=True))
    theirs = f(torch.tensor([0.5, 1.5]), torch.tensor([1.0, 2.0], requires_grad=True))
    assert out.requires_grad is theirs.requires_grad is False
    np.testing.assert_allclose(out.numpy(), theirs.numpy(), rtol=1e-6)


def _mixed_outputs(lib, a, b):
    v = lib.minimum(a, b)
    (v * v).mean().backward()           # frees v's graph
    return v, a * 2                     # the second output keeps a graph


def _derived_output(lib, a, b):
    v1 = a.exp().sum()
    v1.backward()                       # frees exp's saved result
    return v1, v1.sin()


@pytest.mark.parametrize("program", [_mixed_outputs, _derived_output], ids=["mixed outputs", "derived output"])
def test_a_backward_after_the_call_through_a_graph_freed_inside_it_raises(program):
    def run(lib, compiled):
        a, b = lib.tensor([0.5, 1.5], requires_grad=True), lib.tensor([1.0, 1.0])
        fn = fg.compile(lambda a, b: program(fg, a, b)) if compiled else (lambda a, b: program(lib, a, b))
        outs = fn(a, b)
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            sum(o.sum() for o in outs).backward()
        return a.grad.numpy().tolist()
    assert run(fg, True) == run(torch, False)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("values", [[0.5, 2.0], [-0.5, 2.0]], ids=["positive", "negative"])
def test_a_power_with_a_number_exponent_saves_its_base_only(values, compiled):
    """torch's PowBackward0 (a Scalar exponent) saves self, not its result: writing the result
    before the backward is allowed (PowBackward1, a tensor exponent, does save the result)."""
    def f(lib, a):
        v = lib.pow(a, 1.7)
        v[0] = 1.0
        return v

    def run(lib):
        a = lib.tensor(values, requires_grad=True)
        v = (fg.compile(lambda a: f(fg, a)) if compiled and lib is fg else (lambda a: f(lib, a)))(a)
        v.sum().backward()
        return a.grad.numpy()
    np.testing.assert_allclose(run(fg), run(torch), rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_backward_with_inputs_fills_the_retained_grads_on_its_way(compiled):
    def f(lib, x):
        h = x * 2
        z = h * 3
        z.retain_grad()
        (z * z).sum().backward(inputs=[h])
        return z.grad * 1, h.grad * 1
    theirs = f(torch, torch.tensor([1.0, 2.0], requires_grad=True))
    fn = fg.compile(lambda x: f(fg, x)) if compiled else (lambda x: f(fg, x))
    ours = fn(fg.tensor([1.0, 2.0], requires_grad=True))
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(o.numpy(), t.numpy())


NEW_FEATURE_CHECKS = {
    "var correction=True": lambda L, x: x.var(correction=True),
    "layer_norm mixed dtype": lambda L, x: L.nn.functional.layer_norm(x, (3,), L.ones(3, dtype=L.float64)),
    "softplus beta str": lambda L, x: L.nn.functional.softplus(x, beta="a"),
    "leaky_relu slope str": lambda L, x: L.nn.functional.leaky_relu(x, "a"),
    "layer_norm shape str": lambda L, x: L.nn.functional.layer_norm(x, "a"),
    "layer_norm weight list": lambda L, x: L.nn.functional.layer_norm(x, (3,), [1.0, 1.0, 1.0]),
    "layer_norm empty shape": lambda L, x: L.nn.functional.layer_norm(x, ()),
    "masked_fill overflow": lambda L, x: x.masked_fill(L.ones(2, 3, dtype=L.bool), 1e300),
}


@pytest.mark.parametrize("name", list(NEW_FEATURE_CHECKS))
def test_new_feature_argument_checks_match_torch(name):
    ours = _outcome(lambda: NEW_FEATURE_CHECKS[name](fg, fg.tensor([[1.0, 2.0, 4.0], [3.0, 5.0, 8.0]])))
    theirs = _outcome(lambda: NEW_FEATURE_CHECKS[name](torch, torch.tensor([[1.0, 2.0, 4.0], [3.0, 5.0, 8.0]])))
    assert ours == theirs


@pytest.mark.parametrize("alias", ["data", "detach"])
def test_a_write_through_an_alias_after_a_no_grad_write_of_the_leaf_is_read_in_compile(alias):
    def f(lib, a):
        s = a * 3
        with lib.no_grad():
            a.add_(1.0)
        (a.data if alias == "data" else a.detach()).copy_(s)
        return a + 0.0
    theirs = f(torch, torch.tensor([1.0, 2.0], requires_grad=True))
    ours = fg.compile(lambda a: f(fg, a))(fg.tensor([1.0, 2.0], requires_grad=True))
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())


@pytest.mark.parametrize("through_detach", [False, True], ids=["expand", "detach of an expand"])
def test_a_compiled_fill_through_an_expand_writes_every_alias(through_detach):
    def f(a):
        v = a.expand(2, *a.shape)
        (v.detach() if through_detach else v).fill_(1e-3)
        return v * 1.0

    def run(lib, compiled):
        a = lib.tensor([1.0, 2.0, 3.0])
        out = (fg.compile(f) if compiled else f)(a)
        return out.numpy().tolist(), a.numpy().tolist()
    assert run(fg, True) == run(torch, False)
