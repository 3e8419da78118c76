"""Custom autograd functions (fg.autograd.Function) as torch's: forward with grad mode off,
one `<Name>Backward` grad_fn that is also the ctx, saved tensors with version checks and
freeing, torch's checks of what backward returns, non-differentiable outputs,
setup_context, create_graph (higher derivatives) and fg.grad; refused inside fg.compile."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")


def define(L):
    F = L.autograd.Function
    class Cube(F):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_backward(x); ctx.k = k
            return x ** 3
        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 3 * x ** 2 * g, None
    class WrongCount(F):
        @staticmethod
        def forward(ctx, x): return x * 2
        @staticmethod
        def backward(ctx, g): return g, g
    class WrongShape(F):
        @staticmethod
        def forward(ctx, x): return x * 2
        @staticmethod
        def backward(ctx, g): return L.ones(2)
    class NoneGrad(F):
        @staticmethod
        def forward(ctx, x, y): return x * y
        @staticmethod
        def backward(ctx, g): return g, None
    class NonTensorGrad(F):
        @staticmethod
        def forward(ctx, x, k): return x * k
        @staticmethod
        def backward(ctx, g): return g, g
    class Ident(F):
        @staticmethod
        def forward(ctx, x): return x
        @staticmethod
        def backward(ctx, g): return g * 5
    class Two(F):
        @staticmethod
        def forward(ctx, x): return x * 2, x * 3
        @staticmethod
        def backward(ctx, g1, g2): return g1 + g2
    class Setup(F):
        @staticmethod
        def forward(x): return x.exp()
        @staticmethod
        def setup_context(ctx, inputs, output): ctx.save_for_backward(output)
        @staticmethod
        def backward(ctx, g): (y,) = ctx.saved_tensors; return g * y
    class NoBack(F):
        @staticmethod
        def forward(ctx, x): return x * 2
    class Dbl(F):
        @staticmethod
        def forward(ctx, x): return x * 2
        @staticmethod
        def backward(ctx, g): return g.double()
    class ND(F):
        @staticmethod
        def forward(ctx, x):
            i = x.argmax(); ctx.mark_non_differentiable(i); return x * 2, i
        @staticmethod
        def backward(ctx, g, gi): return g * 2
    class GM(F):
        @staticmethod
        def forward(ctx, x): ctx.fwd_mode = L.is_grad_enabled(); return x * 2
        @staticmethod
        def backward(ctx, g): return g * (10 if L.is_grad_enabled() else 1)
    class Needs(F):
        @staticmethod
        def forward(ctx, x, y, k): ctx.seen = ctx.needs_input_grad; return x * y * k
        @staticmethod
        def backward(ctx, g): return g, g, None
    class Legendre(F):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return 0.5 * (5 * input ** 3 - 3 * input)
        @staticmethod
        def backward(ctx, grad_output):
            input, = ctx.saved_tensors
            return grad_output * 1.5 * (5 * input ** 2 - 1)
    class NoMat(F):
        @staticmethod
        def forward(ctx, x): ctx.set_materialize_grads(False); return x * 2, x * 3
        @staticmethod
        def backward(ctx, g1, g2): return g1 if g2 is None else g1 + g2
    return locals()
x = lambda L: L.arange(1., 4., requires_grad=True)
def run(L, name, *extra, out=lambda y: y.sum()):
    F = define(L)[name]
    a = x(L); y = F.apply(a, *extra); o = y if not isinstance(y, tuple) else y[0]
    out(y).backward(); return [a.grad, type(o.grad_fn).__name__, o.grad_fn.name()]
def nf(L, name, *extra):
    F = define(L)[name]; y = F.apply(x(L), *extra); y = y[0] if isinstance(y, tuple) else y
    return [[type(n).__name__ if n is not None else None for n, _ in y.grad_fn.next_functions]]
cases = {
 "cube": lambda L: run(L, "Cube", 2), "count": lambda L: run(L, "WrongCount"), "shape": lambda L: run(L, "WrongShape"),
 "none": lambda L: (lambda a, b: (define(L)["NoneGrad"].apply(a, b).sum().backward(), [a.grad, b.grad])[1])(x(L), x(L)),
 "nontensor": lambda L: run(L, "NonTensorGrad", 2.0), "ident": lambda L: run(L, "Ident"),
 "ident same": lambda L: (lambda a: [define(L)["Ident"].apply(a) is a])(x(L)),
 "two": lambda L: run(L, "Two", out=lambda y: (y[0] + y[1]).sum()), "two first": lambda L: run(L, "Two", out=lambda y: y[0].sum()),
 "two second": lambda L: run(L, "Two", out=lambda y: y[1].sum()), "setup": lambda L: run(L, "Setup"), "noback": lambda L: run(L, "NoBack"),
 "dbl": lambda L: run(L, "Dbl"), "nd": lambda L: run(L, "ND", out=lambda y: y[0].sum()), "nd req": lambda L: [define(L)["ND"].apply(x(L))[1].requires_grad],
 "no grad input": lambda L: [define(L)["Cube"].apply(L.ones(2), 2).grad_fn],
 "gm": lambda L: (lambda F, a: (F.apply(a).sum().backward(), [a.grad])[1])(define(L)["GM"], x(L)),
 "needs": lambda L: (lambda y: [y.grad_fn.seen])(define(L)["Needs"].apply(x(L), L.ones(3), 2.0)),
 "saved": lambda L: (lambda y: [y.grad_fn.saved_tensors[0], y.grad_fn.k])(define(L)["Cube"].apply(x(L), 2)),
 "next": lambda L: nf(L, "Cube", 2), "next needs": lambda L: [[type(n).__name__ if n is not None else None for n, _ in define(L)["Needs"].apply(x(L), L.ones(3), 2.0).grad_fn.next_functions]],
 "legendre": lambda L: run(L, "Legendre"), "nomat": lambda L: run(L, "NoMat", out=lambda y: y[0].sum()),
}
def twice(L):
    a = x(L); y = define(L)["Cube"].apply(a, 2); y.sum().backward(); y.sum().backward()
def twice_retain(L):
    a = x(L); y = define(L)["Cube"].apply(a, 2); y.sum().backward(retain_graph=True); y.sum().backward(); return [a.grad]
def modified(L):
    a = x(L); b = a * 1; y = define(L)["Cube"].apply(b, 2); b.add_(1); y.sum().backward()
def cg(L):
    a = x(L); y = define(L)["Cube"].apply(a, 2); (g,) = L.autograd.grad(y.sum(), a, create_graph=True); g.sum().backward(); return [g, a.grad]
def cg2(L):
    a = x(L); y = define(L)["Legendre"].apply(a); (g,) = L.autograd.grad(y.sum(), a, create_graph=True); (h,) = L.autograd.grad(g.sum(), a); return [g, h]
def instance(L): define(L)["Cube"]()(x(L), 2)
def chain(L):
    a = x(L); F = define(L)
    y = F["Legendre"].apply(F["Cube"].apply(a * 2, 2).sin()); y.sum().backward(); return [a.grad]
cases.update({"twice": twice, "twice retain": twice_retain, "modified": modified, "create_graph": cg, "second derivative": cg2, "instance": instance, "chain": chain})


def _comparable(v):
    if hasattr(v, "detach"):
        return ("tensor", v.detach().numpy().round(5).tolist(), str(v.dtype).split(".")[-1])
    if isinstance(v, (list, tuple)):
        return [_comparable(u) for u in v]
    return v


def _outcome(lib, case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # (instantiating a Function: torch's DeprecationWarning)
        try:
            return ("values", _comparable(case(lib)))
        except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
            return ("error", type(exc).__name__, str(exc))


@pytest.mark.parametrize("name", list(cases))
def test_matches_torch(name):
    assert _outcome(fg, cases[name]) == _outcome(torch, cases[name])


def test_fg_grad_composes_with_a_custom_function():
    legendre = define(fg)["Legendre"]
    x = fg.arange(1.0, 4.0)
    np.testing.assert_allclose(fg.grad(lambda t: legendre.apply(t).sum())(x).numpy(),
                               (1.5 * (5 * x ** 2 - 1)).numpy())
    assert fg.grad(fg.grad(lambda t: legendre.apply(t).sum()))(fg.tensor(2.0)).item() == 30.0


def test_inside_compile_it_is_refused_clearly():
    legendre = define(fg)["Legendre"]
    with pytest.raises(NotImplementedError, match=r"custom autograd.Function \(Legendre\) cannot run inside"):
        fg.compile(lambda t: legendre.apply(t).sum())(fg.ones(2, requires_grad=True))


def test_explain_names_the_function():
    y = define(fg)["Legendre"].apply(fg.ones(2, requires_grad=True))
    text = fg.autograd.explain(y.sum())
    assert "custom_call[fn=Legendre.forward] a" in text and "fn=Legendre.backward" in text


def _more(lib):
    F = lib.autograd.Function

    class Keyword(F):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Defaulted(F):
        @staticmethod
        def forward(ctx, x, k=2.0):
            ctx.k = k
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    class NonTensorOutput(F):
        @staticmethod
        def forward(ctx, x):
            return x * 2, 5

        @staticmethod
        def backward(ctx, g, g2):
            assert g2 is None
            return g * 2

    class Summable(F):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return lib.ones(3)

    class ReturnsFloat(F):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return 1.0
    return locals()


MORE = {
    "keyword argument": lambda lib: (lambda x: (_more(lib)["Keyword"].apply(x=x).sum().backward(), x.grad)[1])(
        lib.tensor([1.0, 2.0], requires_grad=True)),
    "defaulted argument": lambda lib: (lambda x: (_more(lib)["Defaulted"].apply(x).sum().backward(), x.grad)[1])(
        lib.tensor([1.0, 2.0], requires_grad=True)),
    "non-tensor output": lambda lib: (lambda x: (_more(lib)["NonTensorOutput"].apply(x)[0].sum().backward(),
                                                 x.grad)[1])(lib.tensor([1.0], requires_grad=True)),
    "gradient summed to the input": lambda lib: (lambda x: (_more(lib)["Summable"].apply(x).sum().backward(),
                                                            x.grad)[1])(lib.tensor([1.0], requires_grad=True)),
    "float gradient": lambda lib: (lambda x: (_more(lib)["ReturnsFloat"].apply(x).sum().backward(), x.grad)[1])(
        lib.tensor([1.0], requires_grad=True)),
}


@pytest.mark.parametrize("name", list(MORE))
def test_argument_binding_and_gradient_checks_match_torch(name):
    assert _outcome(fg, MORE[name]) == _outcome(torch, MORE[name])


def test_node_repr_is_qualified_as_torch_makes_the_class_in_autograd_function():
    """torch creates a Function's node class in torch.autograd.function, so its repr is
    `<torch.autograd.function.SqBackward object at 0x...>` (fusegrad: `fg.` for `torch.`);
    the tensor's repr and name() are the bare class name."""
    class Sq(fg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, g):
            return g
    y = Sq.apply(fg.ones(2, requires_grad=True))
    assert re.fullmatch(r"<fg\.autograd\.function\.SqBackward object at 0x[0-9a-f]+>", repr(y.grad_fn))
    assert y.grad_fn.name() == "SqBackward" and repr(y) == "tensor([1., 1.], grad_fn=<SqBackward>)"
