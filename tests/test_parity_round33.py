"""Round 33 of torch parity (probes S, T, U and this session's own checks).

A backward's one root is evaluated by torch's engine even when no requested input is
reachable from it (`autograd.grad(y, [unrelated])`, `y.backward(inputs=[unrelated])`):
the root's tensor hooks and retain_grad() run on its gradient there. With several roots a
GraphRoot node feeds only the needed ones, so nothing runs. fusegrad ran nothing."""
import warnings

import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")

IDLE_ROOT_CASES = [
    "y=x*2; y.retain_grad(); y.register_hook(lambda g: g*10); "
    "L.autograd.grad(y,[z],L.ones(3),allow_unused=True); out.append(y.grad)",
    "y=x*2; y.retain_grad(); y.register_hook(lambda g: log.append(g.tolist())); "
    "L.autograd.grad([y,y],[z],[L.ones(3),L.ones(3)*2],allow_unused=True); out.append(y.grad)",
    "y=x*2; y.retain_grad()\ntry: L.autograd.grad(y,[z],L.ones(3))\nexcept RuntimeError as e: log.append(str(e)[:40])\n"
    "out.append(y.grad)",
    "y=x*2; w=z*3; y.retain_grad(); w.retain_grad(); L.autograd.grad([y,w],[z],[L.ones(3),L.tensor(5.)]); "
    "out.extend([y.grad, w.grad])",
    "y=x*2; y.register_hook(lambda g: log.append(g.requires_grad)); y.retain_grad(); "
    "L.autograd.grad(y,[z],L.ones(3),allow_unused=True,create_graph=True); out.append(y.grad)",
    "y=x*2; y.retain_grad(); y.backward(L.ones(3), inputs=[z]); y.backward(L.ones(3)*3, inputs=[z]); "
    "out.extend([y.grad, x.grad, z.grad])",
    "x.register_hook(lambda g: log.append(g.tolist())); L.autograd.grad(x,[z],L.ones(3),allow_unused=True); "
    "out.append(x.grad)",
    "y=(x*2)[1:]; y.retain_grad(); L.autograd.grad(y,[z],L.ones(2),allow_unused=True); out.append(y.grad)",
    "a,b=(x*2).split(2); a.retain_grad(); b.retain_grad(); "
    "L.autograd.grad([a,b],[z],[L.ones(2),L.ones(1)],allow_unused=True); out.extend([a.grad, b.grad])",
    "y=x*2; y.retain_grad(); y.sum().backward(inputs=[z]); out.append(y.grad)",
]


def _idle_root(L, case):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    z = L.tensor(1.0, requires_grad=True)
    log, out = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(case, {"L": L, "x": x, "z": z, "log": log, "out": out})
    return log, [None if t is None else t.tolist() for t in out]


@pytest.mark.parametrize("case", IDLE_ROOT_CASES)
def test_hooks_and_retain_grad_of_a_root_no_input_is_reachable_from(case):
    assert _idle_root(fg, case) == _idle_root(torch, case)


# torch.typename in nn's error texts names torch's module path for the classes fusegrad
# mirrors (probe R): 'torch.nn.modules.activation.ReLU', not 'fusegrad.nn.layers.ReLU'.
TYPENAME_CASES = [
    "m.bar = L.nn.ReLU()", "m.bar = L.nn.Sequential()", "m.bar = L.optim.SGD", "m.bar = L.ones(2)",
    "L.nn.utils.vector_to_parameters(L.nn.ReLU(), [])", "L.nn.utils.vector_to_parameters([1], [])",
    "m.register_parameter('q', L.nn.MSELoss())", "m.add_module('q', L.ones(1))", "m.add_module('q', L.Size([1]))",
    "m.register_buffer('bb', L.nn.Linear(1, 1))", "m.bar = Mine()",
]


def _typename_error(L, statement):
    m = L.nn.Linear(2, 2)
    m.bar = L.nn.Parameter(L.ones(1))

    class Mine(L.nn.Module):
        pass
    with pytest.raises(TypeError) as info:
        exec(statement, {"L": L, "m": m, "Mine": Mine})
    return str(info.value).replace("test_parity_round33.", "")


@pytest.mark.parametrize("statement", TYPENAME_CASES)
def test_type_names_in_nn_errors_are_torchs(statement):
    assert _typename_error(fg, statement) == _typename_error(torch, statement)


# pow with a Python number (probe T): torch keeps the number a double. x ** number: a float32
# tensor of fewer than 32 elements is computed with the double exponent (its kernel's tail),
# and the gradient takes exponent - 1 in double; number ** x: the gradient takes the log of
# the double number. And float32 pow is correctly rounded, as torch's (NumPy's float32 power
# is an ulp off in about 1 of 5 elements).
POW_CASES = [
    "x=L.tensor([-1.0,-0.0,1e20,3e38,-2.0,0.5],requires_grad=True); y=x**1.00000001; y.backward(L.ones(6))",
    "x=L.tensor([-1.0,-0.0,1e20,3e38,-2.0],requires_grad=True); y=x**1e-50; y.sum().backward()",
    "x=L.tensor([1e20, 7.0, 0.3],requires_grad=True); y=x**(1/3); y.sum().backward()",
    "x=L.tensor([1e20, 7.0, 0.3],requires_grad=True); y=L.pow(x, 1.7); y.sum().backward()",
    "x=L.tensor([0.0, 30.0, -2.0],requires_grad=True); y=1.0001**x; y.sum().backward()",
    "x=L.tensor([0.0, 30.0, -2.0],requires_grad=True); y=1.00000001**x; y.sum().backward()",
    "x=L.tensor([0.0, 30.0, -2.0],requires_grad=True); y=1e39**x; y.sum().backward()",
    "x=L.tensor([0.0, 30.0, -2.0],requires_grad=True); y=1e-50**x; y.sum().backward()",
    "x=L.tensor([0.0, 3.0, -2.0],requires_grad=True); y=0.0**x; y.sum().backward()",
    "x=L.tensor([0.0, 3.0, -2.0],requires_grad=True); y=L.pow(2.5, x); y.sum().backward()",
    "x=L.tensor([0.0, 3.0, -2.0],requires_grad=True); y=x**-1.5; y.sum().backward()",
    "x=L.tensor([-1.0,-0.0,1e20,3e38,-2.0],requires_grad=True); y=x*1; y.pow_(1.00000001); y.sum().backward()",
    "x=L.tensor([1., 2., 3.], dtype=L.float64, requires_grad=True); y=x**1.00000001; y.sum().backward()",
    "x=L.tensor([0.5, 3.0, 2.0],requires_grad=True); y=x**1.5; g,=L.autograd.grad(y.sum(), x, create_graph=True); "
    "g.sum().backward()",
    "x=L.tensor([0.5, 3.0, 2.0],requires_grad=True); y=2.5**x; g,=L.autograd.grad(y.sum(), x, create_graph=True); "
    "g.sum().backward()",
]


def _pow(L, case):
    scope = {"L": L}
    exec(case, scope)
    x, y = scope["x"], scope["y"]
    return [(v.detach().numpy().tobytes(), v.dtype == (L.float64 if v.dtype == L.float64 else L.float32))
            for v in (y, x.grad)], type(y.grad_fn).__name__


@pytest.mark.parametrize("case", POW_CASES)
def test_pow_with_a_python_number_as_torch_bit_for_bit(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _pow(fg, case) == _pow(torch, case)


def test_float32_pow_is_torchs_correctly_rounded_value():
    """Below one block of torch's vectorised loop (31 elements with AVX-512, 15 with AVX2:
    ir/torch_cpu.py) torch's float32 pow is its scalar one, correctly rounded; whole blocks
    take Sleef's vector powf, within an ulp of it."""
    import numpy as np
    from fusegrad.ir.torch_cpu import block_elements
    n = block_elements(np.float32) - 1
    rng = np.random.default_rng(3)
    base = np.abs(rng.standard_normal(n)).astype(np.float32) * 3
    exponent = (rng.standard_normal(n) * 5).astype(np.float32)
    for ours, theirs in [(fg.tensor(base) ** fg.tensor(exponent), torch.tensor(base) ** torch.tensor(exponent)),
                         (fg.tensor(base) ** 2.7, torch.tensor(base) ** 2.7),
                         (1.7 ** fg.tensor(exponent), 1.7 ** torch.tensor(exponent))]:
        assert ours.numpy().tobytes() == theirs.numpy().tobytes()


def test_compiled_pow_with_a_number_is_eagers_and_a_new_number_compiles_nothing():
    import numpy as np

    def f(x):
        return (x.abs() ** (1 / 3)).sum() + (1.0001 ** x).sum() + (x ** 1.00000001).sum()

    def parts(x):
        return x.abs() ** (1 / 3), 1.0001 ** x, x ** 1.00000001
    for n in (5, 40):                   # (all tail, and blocks of 32 with the float32 exponent)
        x = fg.tensor(np.linspace(-3, 3, n, dtype=np.float32))
        for got, want in zip(fg.compile(parts)(x) + (fg.compile(fg.grad(f))(x),),
                             parts(x) + (fg.grad(f)(x),)):
            torch.testing.assert_close(torch.from_numpy(got.numpy()), torch.from_numpy(want.numpy()),
                                       rtol=2e-7, atol=0, equal_nan=True)
    power = fg.compile(lambda x, p: x ** p)
    x = fg.tensor([1.0, 2.0, 3.0])
    power(x, 2.7)
    before = fg.cache_info()
    assert power(x, 2.9).tolist() == (x ** 2.9).tolist()
    assert (fg.cache_info().misses, fg.cache_info().hits) == (before.misses, before.hits + 1)


# A create_graph backward through a compiled call re-runs the call from its inputs' memory
# (probe U). A tensor the call read and that changed in place since used to give the
# gradient at its new values, silently; it is refused now, and a value the call's nodes
# saved raises torch's in-place error, as eagerly.
def _double_backward(change):
    f = fg.compile(lambda x, w: (x * w).tanh())
    x = fg.tensor([0.1, 0.2])
    w = fg.tensor([0.3, 0.4], requires_grad=True)
    y = f(x, w)
    change(x, w, y)
    return fg.autograd.grad(y.sum(), w, create_graph=True)[0]


def test_double_backward_through_a_compiled_call_at_the_values_of_the_call():
    g = _double_backward(lambda x, w, y: None)
    x, w = torch.tensor([0.1, 0.2]), torch.tensor([0.3, 0.4], requires_grad=True)
    want, = torch.autograd.grad((x * w).tanh().sum(), w, create_graph=True)
    torch.testing.assert_close(torch.from_numpy(g.detach().numpy()), want.detach())
    assert g.requires_grad


def _in_no_grad(fn):
    with fg.no_grad():
        fn()


@pytest.mark.parametrize("change,message", [
    (lambda x, w, y: _in_no_grad(lambda: w.add_(1.0)), "cannot differentiate this call's backward again"),
    (lambda x, w, y: y.add_(1.0), "modified by an inplace operation"),     # (tanh saved y)
    (lambda x, w, y: x.add_(1.0), "modified by an inplace operation"),     # (mul saved x)
], ids=["weight stepped", "output written", "saved input written"])
def test_double_backward_refuses_inputs_changed_since_the_call(change, message):
    with pytest.raises(RuntimeError, match=message):
        _double_backward(change)


def test_double_backward_refuses_a_read_constant_changed_since_the_call():
    shift = fg.tensor([0.5, 0.5])
    f = fg.compile(lambda w: (w + shift).sin().sum())
    w = fg.tensor([0.3, 0.4], requires_grad=True)
    y = f(w)
    shift.fill_(5.0)                    # (torch's graph saved w + shift, not shift: its gradient is cos(0.8))
    with pytest.raises(RuntimeError, match="a tensor the call read was changed in place since the call"):
        fg.autograd.grad(y, w, create_graph=True)
    y.backward()                        # (a plain backward uses the values the call saved)
    torch.testing.assert_close(torch.from_numpy(w.grad.numpy()), torch.tensor([0.8, 0.9]).cos())


@pytest.mark.parametrize("exponent", [1.5, 4.0, 2.5, -1.0, 0.5, 5.0, -1.5])
def test_second_derivative_of_a_power_at_special_points(exponent):
    """torch's pow(Tensor, Scalar) takes sqrt, rsqrt, reciprocal and multiplies for 0.5, -0.5,
    -1, 2, 3 and -2 (the powers the derivatives of x ** 1.5 or x ** 5 meet): rsqrt(-0.) is
    -inf where C's pow(-0., -0.5) is inf (probe T)."""
    import math
    for v in (-0.0, -math.inf, 0.0, 2.0, -2.0, 3.3, math.inf):
        ours = fg.grad(fg.grad(lambda t: t ** exponent))(fg.tensor(v)).item()
        x = torch.tensor(v, requires_grad=True)
        g, = torch.autograd.grad(x ** exponent, x, create_graph=True)
        theirs = torch.autograd.grad(g, x)[0].item()
        assert ours == theirs or (math.isnan(ours) and math.isnan(theirs)), (v, ours, theirs)


@pytest.mark.parametrize("wrap", [fg.grad, fg.value_and_grad])
def test_compiled_transform_writing_a_closed_over_tensor_can_be_called_again(wrap):
    """probe U: a compiled fg.grad whose function updates a closed-over running statistic
    from its argument left that tensor a leaf requiring grad, so the next call's write raised
    torch's leaf error; its gradients are eager's, call after call."""
    def run(compiled):
        running = fg.zeros(())

        def loss(x):
            running.mul_(0.9).add_(0.1 * x.mean())
            return ((x - running) ** 2).sum()
        g = fg.compile(wrap(loss)) if compiled else wrap(loss)
        out = [g(fg.tensor([1.0, 2.0, 3.0])) for _ in range(3)]
        running.zero_()
        return [o[1] if isinstance(o, tuple) else o for o in out], running
    eager, compiled = run(False), run(True)
    for a, b in zip(eager[0], compiled[0]):
        torch.testing.assert_close(torch.from_numpy(b.numpy()), torch.from_numpy(a.numpy()))
    assert not compiled[1].requires_grad and compiled[1].is_leaf


def test_gradient_penalty_through_a_compiled_call_with_dropout():
    """probe U: dropout drew its mask in place (bernoulli_, div_), so the compiled call counted
    as writing memory and refused a second derivative; torch's and eager's w.grad here."""
    def run(L, compiled):
        f = lambda x, w: L.nn.functional.dropout((x * w).sin(), 0.5, True)     # noqa: E731
        f = fg.compile(f) if compiled else f
        x, w = L.ones(4) * 0.5, L.arange(1.0, 5.0).requires_grad_(True)
        L.manual_seed(0)
        g, = L.autograd.grad(f(x, w).sum(), w, create_graph=True)
        g.sum().backward()
        return w.grad.numpy().tolist()
    want = run(torch, False)
    assert run(fg, False) == want
    torch.testing.assert_close(torch.tensor(run(fg, True)), torch.tensor(want))


# torch's texts for the parts of split/chunk/unbind (probe Q): the parts of a tensor that
# needs no grad "were created in no_grad mode" once their base gains a history in place, and
# the message of an in-place op on a part whose base was written reads the part's node as
# recorded (it named the rebased error).
MULTI_OUTPUT_CASES = [
    "a=L.tensor([1.,2.,3.,4.],requires_grad=True); b=L.ones(4); v2=b.chunk(2)[0]; b.add_(a); v2*1",
    "a=L.tensor([1.,2.,3.,4.],requires_grad=True); b=L.ones(4); v2=b.chunk(2)[0]; b.add_(a); v2.add_(1)",
    "a=L.tensor([1.,2.,3.,4.],requires_grad=True); b=L.ones(4); v2=b.chunk(2)[0][0:1]; b.add_(a); v2.add_(1)",
    "a=L.tensor([1.,2.,3.,4.],requires_grad=True); b=L.ones(4); v2=b.chunk(2)[0][0:1]; b.add_(a); v2*1",
    "a=L.tensor([1.,2.,3.,4.],requires_grad=True); b=L.ones(4); v2=b.unbind()[1]; v2.add_(a)",
    "a=L.tensor([1.,2.,3.,4.],requires_grad=True); b=L.ones(4); v2=b.chunk(2)[1]; v2.mul_(a[:2])",
    "a=L.tensor([1.,2.,3.,4.],requires_grad=True); v1=a.data; v2=v1.chunk(2)[0]; v1.add_(a); v2*1",
    "a=L.tensor([1.,2.,3.,4.],requires_grad=True); b=L.ones(4); v2=b.unbind(0)[1]; b.add_(a); v2.sum()",
    "a=L.tensor([1.,2.,3.],requires_grad=True); v1=(a+0).chunk(1,0)[0]\nwith L.no_grad(): v1.add_(1)\nv1.add_(1)",
    "a=L.tensor([1.,2.,3.,4.],requires_grad=True); b=a*1; v2=b.chunk(2)[0]; b.add_(a); v2*1",
]


@pytest.mark.parametrize("case", MULTI_OUTPUT_CASES)
def test_errors_about_parts_of_split_chunk_unbind(case):
    def run(L):
        try:
            exec(case, {"L": L})
        except RuntimeError as error:
            return str(error)
        return None
    assert run(fg) == run(torch)


# Tensor.view(dtype), torch's other overload of view (probe V).
VIEW_DTYPE_CASES = [
    "x=L.tensor([[1.5, 2.0],[3.0, -1.0]]); out=[x.view(L.int64), x.view(L.float64), x.view(L.bool), x.view(L.float32)]",
    "x=L.tensor([[1.5, 2.0],[3.0, -1.0]], requires_grad=True); v=x.view(L.int64); "
    "out=[v.requires_grad, v.grad_fn is None, v.is_leaf, x.view(L.float32).requires_grad]",
    "out=[L.ones(3).view(L.int64)]", "out=[L.ones(3).view(L.float64)]", "out=[L.ones(4,2).t().view(L.float64)]",
    "out=[L.ones(2, dtype=L.float64).view(L.float32)]", "out=[L.tensor(1.0).view(L.float32)]",
    "out=[L.tensor(1.0).view(L.int64)]",
    "out=[L.tensor([True, False, True, True, False, False, False, False]).view(L.float64)]",
    "out=[L.tensor([1, -2]).view(L.float64)]", "x=L.zeros(4); v=x.view(L.int64); v[0]=1; out=[x, x._version]",
    "out=[L.zeros(3,4)[:, 1:3].view(L.float64).shape]", "out=[L.zeros(5)[1:].view(L.float64)]",
    "out=[L.zeros(3,5)[:, :4].view(L.float64).shape]", "out=[L.zeros(2,3)[:, :2].view(L.float64)]",
    "out=[L.zeros(2,2).view(dtype=L.int64)]",
    "out=[L.zeros(4,3).t()[:, 0:1].view(L.float64)]", "out=[L.zeros(4,3).t().view(L.bool)]",
    "out=[L.zeros(0,4).view(L.float64).shape]", "out=[L.zeros(4,0).view(L.float64).shape]",
    "out=[L.ones(4)[1:].view(L.bool).shape]", "out=[L.ones(5)[1:].view(L.float64)]",
    "out=[L.ones(2,5)[:, 1:].view(L.float64)]",
]


@pytest.mark.parametrize("case", VIEW_DTYPE_CASES)
def test_view_as_another_dtype(case):
    import numpy as np

    def run(L):
        scope = {"L": L}
        try:
            exec(case, scope)
        except RuntimeError as error:
            return str(error)
        return [np.asarray(v).tobytes() + str(v.dtype).split(".")[-1].encode() if hasattr(v, "numpy")
                else tuple(v) if hasattr(v, "__len__") else v for v in scope["out"]]
    assert run(fg) == run(torch)


def test_view_dtype_of_a_value_computed_inside_fg_compile_is_refused():
    assert fg.compile(lambda x: x.view(fg.int64))(fg.ones(2)).tolist() == torch.ones(2).view(torch.int64).tolist()
    with pytest.raises(NotImplementedError, match="view\\(dtype\\) inside fg.compile"):
        fg.compile(lambda x: (x * 2).view(fg.int64))(fg.ones(2))


# probe W: a create_graph backward with a non-leaf hook anywhere in the graph runs the hooked
# path, which ran a compiled call's backward as a constant: its second-derivative terms were
# silently dropped.
@pytest.mark.parametrize("hook_on", ["eager branch", "compiled output"])
def test_second_derivative_through_a_compiled_call_with_a_non_leaf_hook(hook_on):
    def run(L, compile_fn):
        x = L.tensor([0.5, -0.9, 0.3], requires_grad=True)
        y = compile_fn(lambda t: t ** 3)(x)
        z = x * x
        (z if hook_on == "eager branch" else y).register_hook(lambda g: g * 2)
        g, = L.autograd.grad(y.sum() + z.sum(), x, create_graph=True)
        ((g ** 2).sum() + x.sum()).backward()
        return g.detach().numpy().tolist(), x.grad.numpy().tolist()
    want = run(torch, lambda f: f)
    for got in (run(fg, fg.compile), run(fg, lambda f: f)):
        torch.testing.assert_close(torch.tensor(got[0]), torch.tensor(want[0]))
        torch.testing.assert_close(torch.tensor(got[1]), torch.tensor(want[1]))


def test_grad_of_grad_through_a_compiled_grad_with_a_hook():
    def f(x):
        y = x * x
        y.register_hook(lambda g: g * 1)
        return (fg.compile(lambda t: t ** 3)(x) + y).sum()
    assert fg.grad(fg.grad(f))(fg.tensor(0.5)).item() == pytest.approx(5.0)


@pytest.mark.parametrize("first", ["retain_graph=False", "then y.backward()"])
def test_a_freed_compiled_call_refuses_the_second_derivative(first):
    """probe W / U: the second-derivative graph of a compiled call is a re-run of it, which
    did not see the call's node freed: torch raises "backward through the graph a second
    time" there, as eager fusegrad does."""
    def run(L, compile_fn):
        x = L.tensor([0.5, -0.9, 0.3], requires_grad=True)
        y = compile_fn(lambda t: (t.exp() * t).sum())(x)
        if first == "retain_graph=False":
            g, = L.autograd.grad(y, x, create_graph=True, retain_graph=False)
        else:
            g, = L.autograd.grad(y, x, create_graph=True, retain_graph=True)
            y.backward()
        try:
            return L.autograd.grad(g.sum(), x)[0].tolist()
        except RuntimeError as error:
            return str(error)[:60]
    want = run(torch, lambda f: f)
    assert want.startswith("Trying to backward through the graph a second time")
    assert run(fg, fg.compile) == want and run(fg, lambda f: f) == want


def test_the_second_derivative_of_a_compiled_call_kept_alive_is_torchs():
    def run(L, compile_fn):
        x = L.tensor([0.5, -0.9, 0.3], requires_grad=True)
        y = compile_fn(lambda t: (t.exp() * t).sum())(x)
        g, = L.autograd.grad(y, x, create_graph=True)
        h1 = L.autograd.grad(g.sum(), x, retain_graph=True)[0]
        h2 = L.autograd.grad(g.sum(), x)[0]
        return (h1 + h2).tolist()
    torch.testing.assert_close(torch.tensor(run(fg, fg.compile)), torch.tensor(run(torch, lambda f: f)))


@pytest.mark.parametrize("expr", ["L.heaviside(t, L.tensor(.5)) * t", "(t // 0.3) * t", "(2.0 % t) * t"])
def test_a_compiled_call_without_a_derivative_gives_torchs_error_under_create_graph(expr):
    def run(L, compile_fn):
        x = L.tensor([0.5, -0.9, 0.3], requires_grad=True)
        y = compile_fn(lambda t: eval(expr, {"L": L, "t": t}).sum())(x)
        with pytest.raises(RuntimeError) as info:
            L.autograd.grad(y, x, create_graph=True)
        return str(info.value)
    assert run(fg, fg.compile) == run(torch, lambda f: f)
