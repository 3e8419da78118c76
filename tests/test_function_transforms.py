"""fg.autograd.functional (torch.autograd.functional) and fg.func (torch.func), with the
top-level JAX-style names fg.vmap/jacrev/jacfwd/hessian/jvp/vjp, against torch 2.13."""
import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch 2.13 is the oracle of these cases")

from parity_support import assert_same, both  # noqa: E402

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal(4).astype(np.float32)
C = RNG.standard_normal((2, 3)).astype(np.float32)


def T(lib, a, requires_grad=False):
    return lib.tensor(a, requires_grad=requires_grad)


def assert_tree(ours, theirs, rtol=1e-4, atol=1e-5):
    """Same pytree structure (tuples, lists, dicts) with the same tensors at the leaves."""
    if isinstance(theirs, (tuple, list)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs), (ours, theirs)
        for o, t in zip(ours, theirs):
            assert_tree(o, t, rtol, atol)
    elif isinstance(theirs, dict):
        assert isinstance(ours, dict) and list(ours) == list(theirs)
        for k in theirs:
            assert_tree(ours[k], theirs[k], rtol, atol)
    elif isinstance(theirs, torch.Tensor):
        assert isinstance(ours, fg.Tensor)
        assert_same(ours, theirs, rtol, atol)
    else:
        assert ours == theirs


def same_error(fn):
    """fn(lib) raises the same exception class and text on both (fusegrad prints fg.Size)."""
    with pytest.raises(Exception) as theirs:
        fn(torch)
    with pytest.raises(type(theirs.value)) as ours:
        fn(fg)
    assert str(ours.value) == str(theirs.value).replace("torch.Size", "fg.Size")


def compare(fn, rtol=1e-4, atol=1e-5):
    theirs, ours = both(fn)
    assert_tree(ours, theirs, rtol, atol)
    return ours, theirs


# ---------------------------------------------------------------- torch.autograd.functional

ONE_ONE = lambda lib: (lambda x: (x.sin() * x).exp(), (T(lib, B),))                         # noqa: E731
ONE_TWO = lambda lib: (lambda x: (x * 2, (x ** 2).sum()), (T(lib, B),))                     # noqa: E731
TWO_ONE = lambda lib: (lambda x, y: x.matmul(y).tanh(), (T(lib, A), T(lib, B)))             # noqa: E731
TWO_TWO = lambda lib: (lambda x, y: (x * y, x.sum(1) + 1), (T(lib, A), T(lib, B)))          # noqa: E731
CASES = {"one_one": ONE_ONE, "one_two": ONE_TWO, "two_one": TWO_ONE, "two_two": TWO_TWO}


def _inputs(inputs, as_tuple):
    return inputs if as_tuple or len(inputs) > 1 else inputs[0]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("as_tuple", [False, True])
def test_jacobian(case, as_tuple):
    def run(lib):
        f, inputs = CASES[case](lib)
        return lib.autograd.functional.jacobian(f, _inputs(inputs, as_tuple))
    compare(run)


@pytest.mark.parametrize("case", CASES)
def test_vjp_jvp(case):
    def run(lib):
        F = lib.autograd.functional
        f, inputs = CASES[case](lib)
        outs = f(*inputs)
        v_out = tuple(lib.ones_like(o) * 0.5 for o in outs) if isinstance(outs, tuple) else lib.ones_like(outs) * 0.5
        v_in = tuple(lib.ones_like(x) * 1.5 for x in inputs)
        inp = _inputs(inputs, False)
        return F.vjp(f, inp, v_out), F.jvp(f, inp, v_in if len(inputs) > 1 else v_in[0])
    compare(run)


SCALAR_ONE = lambda lib: (lambda x: (x.sin() * x ** 2).sum(), (T(lib, B),))                  # noqa: E731
SCALAR_TWO = lambda lib: (lambda x, y: (x.matmul(y).exp() * y.sum()).sum(), (T(lib, A), T(lib, B)))  # noqa: E731


@pytest.mark.parametrize("case", [SCALAR_ONE, SCALAR_TWO])
@pytest.mark.parametrize("as_tuple", [False, True])
def test_hessian_hvp_vhp(case, as_tuple):
    def run(lib):
        F = lib.autograd.functional
        f, inputs = case(lib)
        inp = _inputs(inputs, as_tuple)
        v = tuple(lib.ones_like(x) for x in inputs)
        v = v if as_tuple or len(inputs) > 1 else v[0]
        return F.hessian(f, inp), F.hvp(f, inp, v), F.vhp(f, inp, v)
    compare(run)


def test_create_graph_keeps_history():
    def run(lib):
        x = T(lib, B, requires_grad=True)
        jac = lib.autograd.functional.jacobian(lambda a: a.sin() * a, x, create_graph=True)
        _, vjp = lib.autograd.functional.vjp(lambda a: (a ** 3).sum(), x, create_graph=True)
        (jac.sum() + vjp.sum()).backward()
        return jac.requires_grad, x.grad
    compare(run)


def test_results_detached_and_vectorize_forward_mode():
    def run(lib):
        x = T(lib, B, requires_grad=True)
        F = lib.autograd.functional
        out, v = F.vjp(lambda a: a.exp().sum(), x)
        jac = F.jacobian(lambda a: a.exp(), x, vectorize=True, strategy="forward-mode")
        return out.requires_grad, v.requires_grad, jac
    compare(run)


@pytest.mark.parametrize("call", [
    lambda lib: lib.autograd.functional.vjp(lambda a: a * 2, T(lib, B)),
    lambda lib: lib.autograd.functional.vjp(lambda a: a * 2, T(lib, B), lib.ones(3)),
    lambda lib: lib.autograd.functional.vjp(lambda a, b: a * b, (T(lib, B), T(lib, B)), (lib.ones(4), lib.ones(4))),
    lambda lib: lib.autograd.functional.jvp(lambda a: a * 2, (T(lib, B), T(lib, B)), (lib.ones(4),)),
    lambda lib: lib.autograd.functional.jacobian(lambda a: a * 2, 3.0),
    lambda lib: lib.autograd.functional.jacobian(lambda a: a * 2, (T(lib, B), 3.0)),
    lambda lib: lib.autograd.functional.jacobian(lambda a: 3, T(lib, B)),
    lambda lib: lib.autograd.functional.jacobian(lambda a, b: a * 2, (T(lib, B), T(lib, B)), strict=True),
    lambda lib: lib.autograd.functional.jacobian(lambda a: a * 2, T(lib, B), strategy="forward-mode"),
    lambda lib: lib.autograd.functional.jacobian(lambda a: a * 2, T(lib, B), strategy="sideways"),
    lambda lib: lib.autograd.functional.hessian(lambda a: a * 2, T(lib, B)),
    lambda lib: lib.autograd.functional.hvp(lambda a: (a, a), T(lib, B), T(lib, B)),
    lambda lib: lib.autograd.functional.hessian(lambda a: (a * 2).sum(), T(lib, B), strict=True),
])
def test_autograd_functional_errors(call):
    same_error(call)


def test_autograd_functional_compiled():
    f = lambda a: a.sin() * a.sum()                     # noqa: E731
    F = fg.autograd.functional
    x = fg.tensor(B)
    eager = F.jacobian(f, x)
    compiled = fg.compile(lambda a: F.jacobian(f, a))(x)
    np.testing.assert_allclose(compiled.numpy(), eager.numpy(), rtol=1e-5, atol=1e-6)
    theirs = torch.autograd.functional.jacobian(lambda a: a.sin() * a.sum(), torch.tensor(B))
    np.testing.assert_allclose(compiled.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- torch.func

def mlp_params(lib):
    rng = np.random.default_rng(1)
    return {"0.weight": T(lib, rng.standard_normal((5, 4)).astype(np.float32) * 0.5),
            "0.bias": T(lib, rng.standard_normal(5).astype(np.float32) * 0.1),
            "2.weight": T(lib, rng.standard_normal((2, 5)).astype(np.float32) * 0.5),
            "2.bias": T(lib, rng.standard_normal(2).astype(np.float32) * 0.1)}


def mlp(lib):
    return lib.nn.Sequential(lib.nn.Linear(4, 5), lib.nn.Tanh(), lib.nn.Linear(5, 2))


def test_grad_and_value_has_aux_argnums():
    def run(lib):
        f = lambda x, y: ((x.sin() * y).sum(), {"s": x.cos()})          # noqa: E731
        x, y = T(lib, A), T(lib, B)
        return (lib.func.grad(f, argnums=(0, 1), has_aux=True)(x, y),
                lib.func.grad_and_value(f, argnums=1, has_aux=True)(x, y))
    compare(run)


def test_vjp_and_jvp():
    def run(lib):
        f = lambda x, y: ((x * y).sin(), (x ** 2).sum(0), x.sum())       # noqa: E731
        x, y = T(lib, A), T(lib, B)
        out, vjp_fn = lib.func.vjp(f, x, y)
        grads = vjp_fn((lib.ones(3, 4), lib.ones(4) * 2, lib.tensor(3.0)))
        jv = lib.func.jvp(f, (x, y), (lib.ones(3, 4), lib.ones(4) * 0.5))
        g = lambda x: (x.exp(), {"aux": x * 2})                              # noqa: E731
        out2, fn2, aux = lib.func.vjp(g, T(lib, B), has_aux=True)
        jv2 = lib.func.jvp(g, (T(lib, B),), (lib.ones(4),), has_aux=True)
        return out, grads, jv, out2, fn2(lib.ones(4)), aux, jv2
    compare(run)


@pytest.mark.parametrize("name", ["jacrev", "jacfwd"])
def test_jacobians(name):
    def run(lib):
        jac = getattr(lib.func, name)
        f = lambda x, y: ((x * y).sin(), (x ** 2).sum())                     # noqa: E731
        x, y = T(lib, A), T(lib, B)
        # (not argnums=-1: torch's jacfwd gives zeros for a negative argnum; fusegrad's are right)
        return (jac(f)(x, y), jac(f, argnums=(0, 1))(x, y), jac(f, argnums=1)(x, y),
                jac(lambda a: ({"u": a.exp()}, a.sum()), has_aux=True)(y),
                jac(lambda d: d["p"] * d["q"].sum())({"p": y, "q": y * 2}))
    compare(run)


def test_hessian_of_mlp():
    def run(lib):
        params = mlp_params(lib)
        x = T(lib, B)

        def loss(w1, b1, w2):
            h = (x.matmul(w1.t()) + b1).tanh()
            return (h.matmul(w2.t()) ** 2).sum()
        h_x = lib.func.hessian(lambda v: (mlp_apply(lib, params, v) ** 2).sum())(x)
        h_b = lib.func.hessian(loss, argnums=1)(params["0.weight"], params["0.bias"], params["2.weight"])
        j = lib.func.jacrev(lambda v: mlp_apply(lib, params, v))(x)
        return h_x, h_b, j
    compare(run)


def mlp_apply(lib, params, x):
    h = (x.matmul(params["0.weight"].t()) + params["0.bias"]).tanh()
    return h.matmul(params["2.weight"].t()) + params["2.bias"]


def test_per_example_gradients_functional_call():
    def run(lib):
        model = mlp(lib)
        params = mlp_params(lib)
        xs = T(lib, np.linspace(-1, 1, 24, dtype=np.float32).reshape(6, 4))
        ys = T(lib, np.linspace(0, 1, 12, dtype=np.float32).reshape(6, 2))

        def loss(p, x, y):
            out = lib.func.functional_call(model, p, (x.unsqueeze(0),))
            return ((out - y) ** 2).mean()
        per_example = lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
        return per_example
    compare(run)


def test_functional_call_restores_and_differentiates():
    def run(lib):
        model = lib.nn.Linear(2, 2)
        w = lib.ones(2, 2, requires_grad=True)
        out = lib.func.functional_call(model, ({"weight": w}, {"bias": lib.zeros(2)}), lib.tensor([1.0, 2.0]))
        out.sum().backward()
        return out, w.grad, isinstance(model.weight, lib.nn.Parameter), tuple(model.weight.shape)
    compare(run)


@pytest.mark.parametrize("call", [
    lambda lib: lib.func.functional_call(lib.nn.Linear(2, 2), ({"weight": lib.ones(2, 2)}, {"weight": lib.ones(2, 2)}),
                                         lib.ones(2)),
    lambda lib: lib.func.functional_call(lib.nn.Linear(2, 2), {"weight": lib.ones(2, 2), "foo": lib.ones(1)},
                                         lib.ones(2), strict=True),
])
def test_functional_call_errors(call):
    same_error(call)


VMAP_DIMS = {
    "default": (lambda a, b: a * b, 0, 0, [(3, 4), (3, 4)]),
    "in1": (lambda a, b: a.sum() * b, 1, 0, [(4, 3), (2, 3)]),
    "none_out1": (lambda a, b: a.exp() + b, (0, None), 1, [(3, 4), (4,)]),
    "negative": (lambda a, b: a * b, (-1, 0), -1, [(4, 3), (3, 4)]),
    "tuple_out": (lambda a, b: (a * b, a.sum()), (None, 1), (0, None), [(4,), (4, 3)]),
    "list_out": (lambda a, b: [a * 2, b], (0, 0), [1, 0], [(3, 2, 2), (3,)]),
}


@pytest.mark.parametrize("case", VMAP_DIMS)
def test_vmap_dims(case):
    f, in_dims, out_dims, shapes = VMAP_DIMS[case]
    arrays = [np.arange(int(np.prod(s)), dtype=np.float32).reshape(s) / 7 for s in shapes]
    compare(lambda lib: lib.func.vmap(f, in_dims=in_dims, out_dims=out_dims)(*[T(lib, a) for a in arrays]))


def test_vmap_nested_in_dims_kwargs_and_empty_batch():
    def run(lib):
        f = lambda d, s, scale=1.0: (d["a"] * d["b"] + s[0].sum()) * scale        # noqa: E731
        x, y = T(lib, A), T(lib, B)
        nested = lib.func.vmap(f, in_dims=({"a": 0, "b": None}, (0,)))({"a": x, "b": y}, (x,), scale=2.0)
        empty = lib.vmap(lambda a: a.sum(0) * 2)(lib.zeros(0, 3, 2))
        nested_vmap = lib.vmap(lib.vmap(lambda a, b: a * b), in_dims=(0, None))(x, y)
        return nested, empty, nested_vmap
    compare(run)


def test_vmap_of_jacrev_and_jacrev_of_vmap():
    def run(lib):
        f = lambda a: (a.sin() * a.sum(), a.prod())                               # noqa: E731
        x = T(lib, A)
        return lib.func.vmap(lib.func.jacrev(f))(x), lib.func.jacrev(lib.func.vmap(lambda a: a.exp() * 2))(x)
    compare(run)


@pytest.mark.parametrize("call", [
    lambda lib: lib.func.vmap(lib.sin, in_dims=2)(T(lib, A)),
    lambda lib: lib.func.vmap(lib.sin, in_dims=[0])(T(lib, A)),
    lambda lib: lib.func.vmap(lib.sin, in_dims="a")(T(lib, A)),
    lambda lib: lib.func.vmap(lib.sin, in_dims=None)(T(lib, A)),
    lambda lib: lib.func.vmap(lib.sin, in_dims=(None,))(T(lib, A)),
    lambda lib: lib.func.vmap(lib.add, in_dims=(0, 0))(T(lib, A), T(lib, B)),
    lambda lib: lib.func.vmap(lib.sin, in_dims=(1.5,))(T(lib, A)),
    lambda lib: lib.func.vmap(lambda a: a, in_dims=0)(3.0),
    lambda lib: lib.func.vmap(lambda a: a)(),
    lambda lib: lib.func.vmap(lambda a: a)(T(lib, np.float32(1.0))),
    lambda lib: lib.func.vmap(lambda a: 3)(T(lib, A)),
    lambda lib: lib.func.vmap(lambda a: a, out_dims=1.0)(T(lib, A)),
    lambda lib: lib.func.vmap(lambda a: a, out_dims=2)(T(lib, A)),
    lambda lib: lib.func.vmap(lambda a: a, randomness="foo"),
    lambda lib: lib.func.vmap(lambda a: a, chunk_size=0),
    lambda lib: lib.func.jvp(lib.sin, T(lib, A), T(lib, A)),
    lambda lib: lib.func.jvp(lib.sin, (T(lib, A),), (T(lib, B),)),
    lambda lib: lib.func.jvp(lib.sin, (3.0,), (3.0,)),
    lambda lib: lib.func.vjp(lib.sin, 3.0),
    lambda lib: lib.func.vjp(lambda a: (a, 3), T(lib, A)),
    lambda lib: lib.func.vjp(lambda a: a, T(lib, A), has_aux=True),
    lambda lib: lib.func.vjp(lib.sin, T(lib, A))[1](T(lib, B)),
    lambda lib: lib.func.jacrev(lambda a: a.sum(), has_aux=True)(T(lib, A)),
    lambda lib: lib.func.jacrev(lambda a: a.sum())(lib.arange(3)),
])
def test_func_errors(call):
    same_error(call)


def test_vmap_structure_mismatch_errors():
    with pytest.raises(ValueError, match="in_dims is not compatible with the structure of `inputs`"):
        fg.vmap(lambda d: d["a"], in_dims=({"a": 0},))({"a": fg.ones(2), "b": fg.ones(2)})
    with pytest.raises(ValueError, match="out_dims is not compatible with the structure of `outputs`"):
        fg.vmap(fg.sin, out_dims=(0, 0))(fg.ones(2, 2))
    with pytest.raises(RuntimeError, match="Expected pytree structure of cotangents"):
        fg.vjp(fg.sin, fg.ones(2))[1]((fg.ones(2),))


def test_top_level_aliases():
    assert fg.vmap is fg.func.vmap and fg.jacrev is fg.func.jacrev and fg.jacfwd is fg.func.jacfwd
    assert fg.hessian is fg.func.hessian and fg.jvp is fg.func.jvp and fg.vjp is fg.func.vjp
    assert fg.func.grad(lambda a: (a ** 2).sum())(fg.tensor([1.0, 2.0])).tolist() == [2.0, 4.0]


def test_compiled_vmap_and_backward():
    f = lambda a, b: (a.sin() * b).sum()                   # noqa: E731
    x = fg.tensor(A, requires_grad=True)
    y = fg.tensor(B)
    compiled = fg.compile(fg.vmap(f, in_dims=(0, None)))
    out = compiled(x, y)
    out.sum().backward()
    tx = torch.tensor(A, requires_grad=True)
    tout = torch.func.vmap(lambda a, b: (a.sin() * b).sum(), in_dims=(0, None))(tx, torch.tensor(B))
    tout.sum().backward()
    assert_same(out, tout, 1e-5, 1e-6)
    assert_same(x.grad, tx.grad, 1e-5, 1e-6)


def test_compiled_per_example_grad_and_jacrev():
    f = lambda a: (a.tanh() * a).sum()                     # noqa: E731
    x = fg.tensor(A)
    per_example = fg.compile(fg.vmap(fg.grad(f)))(x)
    jac = fg.compile(fg.jacrev(lambda a: a.exp() * a.sum()))(fg.tensor(B))
    tf = torch.func
    assert_same(per_example, tf.vmap(tf.grad(lambda a: (a.tanh() * a).sum()))(torch.tensor(A)), 1e-5, 1e-6)
    assert_same(jac, tf.jacrev(lambda a: a.exp() * a.sum())(torch.tensor(B)), 1e-5, 1e-6)


def test_compiled_hessian_and_jvp():
    f = lambda a: (a.sin() * a).sum()                      # noqa: E731
    g = lambda a: a.exp() * a                              # noqa: E731
    x = fg.tensor(B)
    assert_same(fg.compile(fg.hessian(f))(x), torch.func.hessian(f)(torch.tensor(B)), 1e-5, 1e-6)
    jv = fg.compile(lambda v: fg.jvp(g, (v,), (fg.ones(4),))[1])(x)
    assert_same(jv, torch.func.jvp(g, (torch.tensor(B),), (torch.ones(4),))[1], 1e-5, 1e-6)


def test_composition_and_history():
    def run(lib):
        f = lambda a: a.sin() * a                          # noqa: E731
        t = lib.ones(4)
        grad_of_jvp = lib.func.grad(lambda v: lib.func.jvp(f, (v,), (t,), strict=True)[1].sum())(T(lib, B))
        x = T(lib, B, requires_grad=True)
        out, fn = lib.func.vjp(f, x)
        (ct,) = fn(lib.ones(4))
        w = lib.tensor([2.0], requires_grad=True)
        jac_closure = lib.func.jacrev(lambda a: a * w)(T(lib, B))
        (jac_closure.sum() + ct.sum()).backward()
        same = lib.func.vmap(lambda a: lib.rand(()) + a, randomness="same")(lib.zeros(3))
        return (grad_of_jvp, out.requires_grad, type(out.grad_fn).__name__, ct.requires_grad, x.grad, w.grad,
                bool((same == same[0]).all()))
    compare(run)
