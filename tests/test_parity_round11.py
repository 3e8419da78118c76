"""Parity round 11: create_graph gradients against torch 2.13, eagerly and inside fg.compile.

- a gradient of another dtype than its output (float32 ones for a float64 output) is cast
  as the first op of the gradient's history, as torch's validate_outputs does;
- a create_graph gradient that reads nothing requiring grad (d(2x)/dx) is a plain tensor
  inside fg.compile too (it carried the compiled call's history).
"""
from __future__ import annotations

import warnings

import numpy as np

import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")
from parity_support import assert_same  # noqa: E402


def _name(t):
    return None if t.grad_fn is None else t.grad_fn.name()


# --------------------------------------------------------------------- seeds of another dtype
@pytest.mark.parametrize("out_dtype,seed_dtype", [("float64", "float32"), ("float32", "float64")])
def test_autograd_grad_create_graph_casts_the_seed(out_dtype, seed_dtype):
    def run(lib):
        x = lib.tensor([1.0, 2.0, -0.5], dtype=getattr(lib, out_dtype), requires_grad=True)
        v = lib.tensor([0.5, 3.0, 2.0], dtype=getattr(lib, seed_dtype), requires_grad=True)
        (g,) = lib.autograd.grad(x * x, x, v, create_graph=True)
        (g * x).sum().backward()
        return g, x.grad, v.grad

    for ours, theirs in zip(run(fg), run(torch)):
        assert_same(ours, theirs)
    assert _name(run(fg)[0]) == _name(run(torch)[0])


def test_backward_create_graph_with_a_float32_gradient_of_a_float64_output():
    def run(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # torch's reference-cycle warning
            (x * x).backward(lib.ones(2), create_graph=True)
        return x.grad

    ours, theirs = run(fg), run(torch)
    assert_same(ours, theirs)
    assert _name(ours) == _name(theirs) == "torch::autograd::CopyBackwards"
    assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__ == "CopyBackwards"


def test_compiled_create_graph_seed_of_another_dtype():
    def f(lib, x, v):
        (g,) = lib.autograd.grad(x * x, x, v, create_graph=True)
        (g * x).sum().backward()
        return g

    def make(lib):
        return (lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True),
                lib.tensor([0.5, 3.0], requires_grad=True))

    (x, v), (tx, tv) = make(fg), make(torch)
    g = fg.compile(lambda a, b: f(fg, a, b))(x, v)
    tg = f(torch, tx, tv)
    for ours, theirs in ((g, tg), (x.grad, tx.grad), (v.grad, tv.grad)):
        assert_same(ours, theirs)


# --------------------------------------------------------------------- gradients that read nothing requiring grad
def _linear_grad(lib, x):
    (g,) = lib.autograd.grad((x * 2).sum(), x, create_graph=True)
    return g


def _quadratic_grad(lib, x):
    (g,) = lib.autograd.grad((x * x).sum(), x, create_graph=True)
    return g


def _transform_grad(lib, x):
    grad = fg.grad if lib is fg else torch.func.grad
    return grad(lambda t: (t * 3).sum())(x)


@pytest.mark.parametrize("fn", [_linear_grad, _quadratic_grad, _transform_grad])
@pytest.mark.parametrize("compiled", [False, True])
def test_create_graph_gradient_requires_grad_as_torch(fn, compiled):
    x, tx = fg.tensor([1.0, 2.0], requires_grad=True), torch.tensor([1.0, 2.0], requires_grad=True)
    call = fg.compile(lambda a: fn(fg, a)) if compiled else (lambda a: fn(fg, a))
    ours, theirs = call(x), fn(torch, tx)
    assert_same(ours, theirs)
    assert ours.requires_grad == theirs.requires_grad
    assert (ours.grad_fn is None) == (theirs.grad_fn is None)
    if not compiled:
        assert _name(ours) == _name(theirs)
    if theirs.requires_grad:            # and it differentiates on, as torch's does
        ours.sum().backward()
        theirs.sum().backward()
        assert_same(x.grad, tx.grad)


# --------------------------------------------------------------------- backward(create_graph=True)'s warning
_WARNING_SCRIPT = """
import warnings

import numpy as np
import {lib} as lib
warnings.simplefilter("always")
x = lib.ones(2, requires_grad=True)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    lib.autograd.grad((x * x).sum(), x, create_graph=True)      # no warning: autograd.grad
    for _ in range(2):
        (x * x).sum().backward(create_graph=True)
        x.grad = None
print(len(caught), caught[0].category.__name__, str(caught[0].message).split(" (Triggered")[0])
"""


def test_backward_create_graph_warns_once_a_process_as_torch():
    """torch's TORCH_WARN_ONCE about the parameter/.grad reference cycle: backward() only,
    the first time in a process (so each library runs in a fresh interpreter)."""
    import subprocess
    import sys
    outputs = [subprocess.run([sys.executable, "-c", _WARNING_SCRIPT.format(lib=lib)], capture_output=True,
                              text=True, timeout=120, check=True).stdout for lib in ("fusegrad", "torch")]
    assert outputs[0] == outputs[1]
    assert outputs[0].startswith("1 UserWarning Using backward() with create_graph=True will create a reference cycle")


# --------------------------------------------------------------------- cross_entropy / nll_loss of (N, C, d1, ...)
def _graph(node, depth=3):
    """grad_fn names down `depth` levels (first edges), with the number of edges of each."""
    names = []
    while node is not None and depth:
        names.append((node.name(), len(node.next_functions)))
        node = node.next_functions[0][0] if node.next_functions else None
        depth -= 1
    return names


@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 3, 4, 5), (2, 3, 2, 2, 2), (0, 3, 4, 5)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("options", [{}, {"weight": [0.5, 2.0, 1.0]}, {"ignore_index": 1}],
                         ids=["plain", "weight", "ignore"])
@pytest.mark.parametrize("compiled", [False, True])
def test_cross_entropy_of_images_as_torch(shape, reduction, options, compiled):
    rng = np.random.default_rng(len(shape))
    logits = rng.standard_normal(shape).astype(np.float32)
    target = rng.integers(0, shape[1], (shape[0],) + shape[2:])

    def run(lib):
        x = lib.tensor(logits, requires_grad=True)
        kw = {k: lib.tensor(v) if k == "weight" else v for k, v in options.items()}

        def loss_fn(x):
            loss = lib.nn.functional.cross_entropy(x, lib.tensor(target), reduction=reduction, **kw)
            (loss * loss).sum().backward()
            return loss
        loss = (fg.compile(loss_fn) if compiled and lib is fg else loss_fn)(x)
        return loss, x.grad

    (loss, grad), (t_loss, t_grad) = run(fg), run(torch)
    assert_same(loss, t_loss, rtol=1e-5, atol=1e-6)
    assert_same(grad, t_grad, rtol=1e-5, atol=1e-6)
    if not compiled:
        assert _graph(loss.grad_fn) == _graph(t_loss.grad_fn)


def test_nll_loss_of_images_double_backward_as_torch():
    rng = np.random.default_rng(3)
    logits, target = rng.standard_normal((2, 3, 4, 5)), rng.integers(0, 3, (2, 4, 5))

    def run(lib):
        x = lib.tensor(logits, requires_grad=True)
        lp = lib.log_softmax(x, 1)
        loss = lib.nn.functional.nll_loss(lp, lib.tensor(target), reduction="sum")
        (g,) = lib.autograd.grad(loss, x, create_graph=True)
        (g * g).sum().backward()
        return g, x.grad

    for ours, theirs in zip(run(fg), run(torch)):
        assert_same(ours, theirs, rtol=1e-10, atol=1e-12)


def test_nll_loss_of_a_non_contiguous_image_batch():
    rng = np.random.default_rng(4)
    logits, target = rng.standard_normal((2, 4, 5, 3)).astype(np.float32), rng.integers(0, 3, (2, 4, 5))

    def run(lib):
        x = lib.tensor(logits, requires_grad=True)
        loss = lib.nn.functional.cross_entropy(x.permute(0, 3, 1, 2), lib.tensor(target), reduction="none")
        loss.sum().backward()
        return loss, x.grad

    for ours, theirs in zip(run(fg), run(torch)):
        assert_same(ours, theirs)


# --------------------------------------------------------------------- third derivatives inside fg.compile
_THIRD = [
    ("x^4", lambda L, x: x * x * x * x),
    ("sin*cos", lambda L, x: x.sin() * x.cos()),
    ("1/(1+x^2)", lambda L, x: 1 / (1 + x * x)),
    ("tanh*exp", lambda L, x: x.tanh() * x.exp()),
]


@pytest.mark.parametrize("name,f", _THIRD, ids=[n for n, _ in _THIRD])
def test_third_derivatives_compiled_as_torch(name, f):
    """A create_graph backward's instructions join the recorded-with-grad set for the next
    one (they were dropped from the producer map: third derivatives lost terms)."""
    from torch.func import grad as tgrad
    want = tgrad(tgrad(tgrad(lambda t: f(torch, t))))(torch.tensor(0.7, dtype=torch.float64))
    third = fg.grad(fg.grad(fg.grad(lambda t: f(fg, t))))
    x = fg.tensor(0.7, dtype=fg.float64)
    assert_same(fg.compile(third)(x), want, rtol=1e-10)
    assert_same(third(x), want, rtol=1e-10)

    def by_autograd(L, x):
        (g1,) = L.autograd.grad(f(L, x), x, create_graph=True)
        (g2,) = L.autograd.grad(g1, x, create_graph=True)
        (g3,) = L.autograd.grad(g2, x)
        return g3
    x = fg.tensor(0.7, dtype=fg.float64, requires_grad=True)
    assert_same(fg.compile(lambda t: by_autograd(fg, t))(x), want, rtol=1e-10)


# --------------------------------------------------------------------- nested fg.grad and history
def test_inner_grad_closing_over_the_outer_argument():
    from torch.func import grad as tgrad
    want = tgrad(lambda x: tgrad(lambda y: x * y * x)(torch.tensor(3.0)))(torch.tensor(2.0))
    f = fg.grad(lambda x: fg.grad(lambda y: x * y * x)(fg.tensor(3.0)))
    assert_same(f(fg.tensor(2.0)), want)
    assert_same(fg.compile(f)(fg.tensor(2.0)), want)


def test_grad_results_keep_history_only_where_they_read_outside():
    """torch.func.grad unwraps each result from its level: a gradient that reads no outer
    tensor requiring grad is plain, though another argument requires grad."""
    from torch.func import grad as tgrad, grad_and_value
    w, tw = fg.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    cases = [
        (fg.grad(lambda x, y: (x * x).sum() + y.sum())(fg.tensor([1.0, 2.0]), w),
         tgrad(lambda x, y: (x * x).sum() + y.sum())(torch.tensor([1.0, 2.0]), tw)),
        (fg.grad(lambda x: (x * x * w).sum())(fg.tensor([1.0, 2.0])),
         tgrad(lambda x: (x * x * tw).sum())(torch.tensor([1.0, 2.0]))),
        (fg.value_and_grad(lambda x: (x * x).sum() + w.sum())(fg.tensor([1.0, 2.0]))[1],
         grad_and_value(lambda x: (x * x).sum() + tw.sum())(torch.tensor([1.0, 2.0]))[0]),
        (fg.value_and_grad(lambda x: (x * x).sum() + w.sum())(fg.tensor([1.0, 2.0]))[0],
         grad_and_value(lambda x: (x * x).sum() + tw.sum())(torch.tensor([1.0, 2.0]))[1]),
    ]
    for ours, theirs in cases:
        assert_same(ours, theirs)
        assert ours.requires_grad == theirs.requires_grad
        assert _name(ours) == _name(theirs)


# --------------------------------------------------------------------- add/sub with alpha: alpha is a Scalar
@pytest.mark.parametrize("expr", [
    lambda L, x, w: x.add(w, alpha=2).sum(),
    lambda L, x, w: L.sub(x, w, alpha=0.5).sum(),
    lambda L, x, w: (x + 0).sub_(w, alpha=2).sum(),
    lambda L, x, w: (x * 2).sum(),
])
@pytest.mark.parametrize("compiled", [False, True])
def test_second_backward_through_add_with_alpha_as_torch(expr, compiled):
    def run(lib):
        x, w = lib.ones(3, requires_grad=True), lib.ones(3, requires_grad=True)

        def twice(x, w):
            y = expr(lib, x, w)
            y.backward()
            try:
                y.backward()
            except RuntimeError as e:
                return str(e)
            return None
        fn = fg.compile(twice) if compiled and lib is fg else twice
        return fn(x, w), x.grad, w.grad

    ours, theirs = run(fg), run(torch)
    assert ours[0] == theirs[0]
    assert_same(ours[1], theirs[1])
    assert_same(ours[2], theirs[2])


# --------------------------------------------------------------------- nn texts
def test_module_to_an_integer_dtype_and_parameter_of_an_array_texts():
    from parity_support import same_error
    same_error(lambda L: L.nn.Linear(2, 2).to(L.int64))
    same_error(lambda L: L.nn.Parameter(np.ones(2)))


# --------------------------------------------------------------------- no warning where torch prints none
def test_compiled_backward_through_a_strided_slice_warns_nothing():
    """index_put of a strided slice runs by reference by design: no RuntimeWarning."""
    x = fg.ones(4, 3, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = fg.compile(lambda a: a[::2] * 2)(x)
        y.sum().backward()
    assert x.grad.tolist() == [[2.0] * 3, [0.0] * 3, [2.0] * 3, [0.0] * 3]


# --------------------------------------------------------------------- torch.compile's keyword arguments
def test_compile_takes_torch_compiles_keyword_arguments():
    @fg.compile(fullgraph=True, dynamic=True, backend="inductor", mode="max-autotune")
    def double(x):
        return x * 2
    assert isinstance(double, fg.compile(lambda x: x).__class__)
    assert double(fg.ones(2)).tolist() == [2.0, 2.0]
    plain = lambda x: x + 1  # noqa: E731
    assert fg.compile(plain, disable=True) is plain
    assert fg.compile(disable=True)(plain) is plain


@pytest.mark.parametrize("kwargs", [
    dict(mode="bad"), dict(mode=3), dict(options="a"), dict(mode="max-autotune", options={}), dict(dynamic="a"),
    dict(backend="nonexistent"), dict(mode="bad", disable=True), dict(backend="eager", mode="bad"),
    dict(options={"max_autotune": True}), dict(backend=3), dict(mode="reduce-overhead"), dict(dynamic=False),
], ids=str)
def test_compile_refuses_the_keyword_values_torch_compile_refuses(kwargs):
    outcomes = []
    for lib in (torch, fg):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lib.compile(lambda x: x * 2, **kwargs)
            outcomes.append("accepted")
        except Exception as exc:  # noqa: BLE001 - the class and text are what is compared
            outcomes.append((type(exc).__name__, str(exc)))
    assert outcomes[1] == outcomes[0]


def test_explain_gives_back_a_grad_that_zero_grad_cleared():
    """explain()'s call is a dry run: opt.zero_grad() inside it leaves `.grad` as it was."""
    model = fg.nn.Linear(3, 2)
    opt = fg.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = model(x).sum()
        loss.backward()
        opt.step()
        return loss

    compiled, x = fg.compile(step), fg.ones(4, 3)
    compiled(x)
    grads = [p.grad for p in model.parameters()]
    weights = [p.detach().clone() for p in model.parameters()]
    compiled.explain(x)
    assert all(p.grad is g for p, g in zip(model.parameters(), grads))
    assert all(np.array_equal(p.detach().numpy(), w.numpy()) for p, w in zip(model.parameters(), weights))


def test_grad_argnums_repeat_text_is_normalised_and_complex_is_a_type_error():
    from parity_support import same_error
    for argnums in ((0, -2), (1, -1)):
        same_error(lambda L: (fg.grad if L is fg else torch.func.grad)(
            lambda x, y: (x * y).sum(), argnums=argnums)(L.ones(2), L.ones(2)))
    with pytest.raises(TypeError, match="argument 0 of type complex is not a valid differentiable input"):
        fg.grad(lambda x: x * 2)(complex(1, 2))


# --------------------------------------------------------------------- NotImplemented nodes: floor_divide, number % tensor
_NO_DERIVATIVE = [
    ("x // 2", lambda L, x: x // 2),
    ("2 // x", lambda L, x: 2 // x),
    ("x // (x + 1)", lambda L, x: x // (x + 1)),
    ("floor_divide", lambda L, x: L.floor_divide(x, 2)),
    ("floor_divide_", lambda L, x: (x * 1).floor_divide_(2)),
    ("2 % x", lambda L, x: 2 % x),
    ("x % 2", lambda L, x: x % 2),                        # (these two have derivatives)
    ("div floor", lambda L, x: L.div(x, 2, rounding_mode="floor")),
]


@pytest.mark.parametrize("name,f", _NO_DERIVATIVE, ids=[n for n, _ in _NO_DERIVATIVE])
@pytest.mark.parametrize("compiled", [False, True])
def test_backward_through_a_not_implemented_node_raises_as_torch(name, f, compiled):
    def run(lib):
        x = lib.tensor([1.5, 2.5], requires_grad=True)
        y = f(lib, x)
        names = (y.grad_fn.name(), [n.name() if n is not None else None for n, _ in y.grad_fn.next_functions])

        def backward(y):
            y.sum().backward()
        try:
            if compiled and lib is fg:
                fg.compile(lambda t: backward(f(fg, t)))(x)
            else:
                backward(y)
        except RuntimeError as e:
            return names, (type(e).__name__, str(e)), None
        return names, None, x.grad

    ours, theirs = run(fg), run(torch)
    if not compiled:
        assert ours[0] == theirs[0]
    assert ours[1] == theirs[1]
    if theirs[2] is not None:
        assert_same(ours[2], theirs[2])


# --------------------------------------------------------------------- writes through .data / detach() of a used leaf
def _data_write_after_use(L, x):
    y = x * 3
    x.data.add_(1)
    y.sum().backward()


def _data_write_between_uses(L, x):
    y = x * 3
    x.data.add_(1)
    (y + x * 5).sum().backward()


def _detach_write_after_use(L, x):
    y = x * 3
    x.detach()[0] = 4.0
    y.sum().backward()


def _clip_between_forward_and_backward(L, x):
    loss = (x * L.tensor([1.0, 2.0])).sum()
    x.data.clamp_(-1, 1)
    loss.backward()


def _saved_then_written_through_detach(L, x):
    d = x.detach()
    y = x * x
    d.add_(1)           # shares x's version counter: torch's error at backward
    y.sum().backward()


def _returned_then_detach_written(L, x):
    y = x * 3
    x.detach()[0] = 4.0
    return y            # backward outside the call


@pytest.mark.parametrize("f", [_data_write_after_use, _data_write_between_uses, _detach_write_after_use,
                               _clip_between_forward_and_backward, _saved_then_written_through_detach,
                               _returned_then_detach_written])
def test_compiled_write_through_an_alias_of_a_used_leaf_as_torch(f):
    def run(lib, compiled):
        x = lib.tensor([0.5, -1.5], requires_grad=True)
        try:
            out = (fg.compile(lambda t: f(fg, t)) if compiled else (lambda t: f(lib, t)))(x)
            if out is not None:
                out.sum().backward()
        except RuntimeError as e:
            return str(e).split(":")[0], None, None
        return None, x.grad, x.detach()

    theirs = run(torch, False)
    for ours in (run(fg, False), run(fg, True)):
        assert ours[0] == theirs[0]
        assert_same(ours[1], theirs[1])
        assert_same(ours[2], theirs[2])


# --------------------------------------------------------------------- a backward in a compiled call goes on into earlier history
def _outside_cases(L, C):
    """(name, run) pairs: each run returns the gradients to compare."""
    def nonleaf_argument():
        a = L.tensor([1.0, 2.0, 3.0], requires_grad=True)

        def step(h):
            loss = (h * h).sum()
            loss.backward()
            return loss
        C(step)(a * 2)
        return [a.grad]

    def closure_over_a_nonleaf():
        a = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        h = a.exp()
        C(lambda: (h * h).sum().backward())()
        return [a.grad]

    def fed_by_an_eager_module():
        L.manual_seed(0)
        lin = L.nn.Linear(3, 2)
        with L.no_grad():
            lin.weight.copy_(L.tensor([[1.0, 0.0, -1.0], [0.5, 0.5, 0.5]]))
            lin.bias.fill_(0.1)
        a = L.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
        C(lambda f: (f.tanh() ** 2).sum().backward())(lin(a))
        return [a.grad, lin.weight.grad, lin.bias.grad]

    def second_order_split_across_calls():
        x = L.tensor([0.3, -1.2, 0.8], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (x ** 3).sum().backward(create_graph=True)
        C(lambda t, v: (t.grad * v).sum().backward())(x, L.tensor([1.0, 2.0, -1.0]))
        return [x.grad]

    return [nonleaf_argument, closure_over_a_nonleaf, fed_by_an_eager_module, second_order_split_across_calls]


@pytest.mark.parametrize("case", range(4))
def test_compiled_backward_continues_into_history_from_before_the_call(case):
    theirs = _outside_cases(torch, lambda f: f)[case]()
    for compile_ in (lambda f: f, fg.compile):
        ours = _outside_cases(fg, compile_)[case]()
        for o, t in zip(ours, theirs):
            assert_same(o, t)


@pytest.mark.parametrize("compiled", [False, True])
def test_a_retained_non_leaf_grad_is_a_new_tensor_each_backward(compiled):
    def f(L, x):
        y = x * 1
        y.retain_grad()
        z = (y * y).sum()
        z.backward(retain_graph=True)
        first = y.grad
        z.backward()
        return first, y.grad

    theirs = f(torch, torch.tensor([1.0, -2.0, 4.0], requires_grad=True))
    x = fg.tensor([1.0, -2.0, 4.0], requires_grad=True)
    ours = (fg.compile(lambda t: f(fg, t)) if compiled else (lambda t: f(fg, t)))(x)
    for o, t in zip(ours, theirs):
        assert_same(o, t)
    assert ours[1].grad_fn is None and not ours[1].requires_grad


@pytest.mark.parametrize("which", ["upstream only", "upstream and direct", "two inputs"])
def test_compiled_autograd_grad_reaches_leaves_behind_a_non_leaf_argument(which):
    def f(L, h, a):
        if which == "upstream only":
            return L.autograd.grad((h * h).sum(), a)
        if which == "upstream and direct":
            return L.autograd.grad((h * h).sum() + (a * a).sum(), a)
        return L.autograd.grad((h.exp() * h).sum(), [a, h])

    def run(lib, compiled):
        a = lib.tensor([0.5, 1.0, -1.5], requires_grad=True)
        call = fg.compile(lambda x, y: f(fg, x, y)) if compiled else (lambda x, y: f(lib, x, y))
        return call(a * 2, a)

    theirs = run(torch, False)
    for ours in (run(fg, False), run(fg, True)):
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            assert_same(o, t)


def test_a_compiled_module_returns_itself_from_eval_and_train():
    """torch.compile(model).eval() is the OptimizedModule again (Module.eval returns self)."""
    model = fg.nn.Sequential(fg.nn.Linear(3, 2), fg.nn.ReLU())
    compiled = fg.compile(model)
    assert compiled.eval() is compiled and not model.training
    assert compiled.train() is compiled and model.training
    assert [p is q for p, q in zip(compiled.parameters(), model.parameters())] == [True, True]
    np.testing.assert_allclose(compiled(fg.ones(2, 3)).detach().numpy(), model(fg.ones(2, 3)).detach().numpy(),
                               rtol=1e-6)


@pytest.mark.parametrize("compiled", [False, True])
def test_autograd_grad_to_an_intermediate_leaves_the_graph_below_it_usable(compiled):
    """torch frees the nodes a backward ran through; an intermediate's own node did not run."""
    def f(L, x):
        y = x.exp()
        (g,) = L.autograd.grad((y * 2).sum(), [y])
        y.sum().backward()
        try:
            (y * y).sum().backward()
            (y * y).sum().backward()            # this one frees: y * y saved y
        except RuntimeError as e:
            return g, str(e)
        return g, None

    def run(lib):
        x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        call = fg.compile(lambda t: f(fg, t)) if compiled and lib is fg else (lambda t: f(lib, t))
        g, error = call(x)
        return g, error, x.grad

    (g, error, grad), (tg, terror, tgrad) = run(fg), run(torch)
    assert_same(g, tg)
    assert error == terror
    assert_same(grad, tgrad)


# --------------------------------------------------------------------- version counter through views, compiled
_VIEW_WRITES = [
    lambda x: _ret(lambda y: (y[0].sqrt_(), y[0].mul_(2)), x),         # sqrt_ saves its output; written again
    lambda x: _ret(lambda y: (y[0].sigmoid_(), y.add_(1)), x),         # through the base
    lambda x: _ret(lambda y: (y[:, 1].exp_(), y[:, 1].mul_(3)), x),
    lambda x: _saved_between_view_writes(x),
]


def _saved_between_view_writes(x):
    v = (x + 1)[:, 1]
    v.mul_(2)
    z = v * x           # saves v as re-derived after the first write
    v.add_(1)
    return z


def _ret(writes, x):
    y = x + 1
    writes(y)
    return y


@pytest.mark.parametrize("k", range(len(_VIEW_WRITES)))
def test_compiled_version_error_after_a_second_write_through_a_view(k):
    def run(lib, compiled):
        x = lib.ones(2, 2, requires_grad=True) if lib is torch else fg.ones(2, 2, requires_grad=True)
        f = _VIEW_WRITES[k]
        try:
            y = (fg.compile(f) if compiled else f)(x)
            y.sum().backward()
        except RuntimeError as e:
            return type(e).__name__, str(e).split(":")[0]
        return None, x.grad.tolist()

    theirs = run(torch, False)
    assert theirs[0] == "RuntimeError"
    assert run(fg, False) == theirs
    assert run(fg, True) == theirs


# --------------------------------------------------------------------- nll_loss_nd: compiled vs reference, bad input
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_nd_program_compiled_equals_the_reference(reduction, weighted):
    """The op itself (and its VJP) as an IR program: kernels against the reference executor."""
    from fusegrad.ir import int64
    from test_codegen_support import build, check
    shapes = [(2, 3, 4, 5), ((2, 4, 5), int64), ((3,), int64)] + ([(3,)] if weighted else [])

    def loss(e, lp, target, classes, *weight):
        return e.op("nll_loss_nd", lp, target, classes, *weight, reduction=reduction, ignore_index=1)
    p = build(loss, *shapes, grad=True)
    rng = np.random.default_rng(7)
    args = [rng.standard_normal((2, 3, 4, 5)).astype(np.float32), rng.integers(0, 3, (2, 4, 5)),
            np.arange(3)] + ([rng.random(3).astype(np.float32) + 0.5] if weighted else [])
    args += [rng.standard_normal(p.inputs[k].shape).astype(np.float32) for k in range(len(args), len(p.inputs))]
    check(p, args)


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("case", ["target shape", "target dtype", "class out of range"])
def test_cross_entropy_of_images_bad_input_as_torch(case, compiled):
    from parity_support import same_error

    def call(lib):
        x = lib.ones(2, 3, 4, 5)
        target = {"target shape": lib.zeros(2, 4, 4, dtype=lib.int64),
                  "target dtype": lib.zeros(2, 4, 5),
                  "class out of range": lib.full((2, 4, 5), 3, dtype=lib.int64)}[case]
        f = lambda a, t: lib.nn.functional.cross_entropy(a, t)  # noqa: E731
        return (fg.compile(f) if compiled and lib is fg else f)(x, target)
    same_error(call)
