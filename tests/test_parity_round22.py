"""Round 22 of torch parity: what the random-program probe (seeds 120000-150449) found about
fg.compile's memory semantics (each test checks against torch 2.13, eagerly and compiled)."""
import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch")
from parity_support import outcome, value_and_grad_of  # noqa: E402  (after the skip)

MODES = ["eager", "compiled"]


def _run(lib, mode, f, *args):
    return (fg.compile(f) if lib is fg and mode == "compiled" else f)(*args)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("ret", ["x[...]", "x[0]", "x.t()", "x.view(2, 3)", "x[:, 1:]"])
@pytest.mark.parametrize("layout", ["transposed", "contiguous"])
def test_a_view_of_an_argument_written_in_the_call_is_that_arguments_memory(layout, ret, mode):
    """A view of an argument the call wrote in place, returned, is a view of the argument's
    memory (its strides, and a write through it reaches the argument), also for an argument
    that is itself a view (a transpose)."""
    def case(lib):
        ns = {}
        exec(f"def f(x):\n    x.mul_(1.5)\n    return {ret}", ns)
        a = np.arange(6.0).reshape(3, 2)
        x = lib.tensor(a).t() if layout == "transposed" else lib.tensor(a.reshape(2, 3))
        r = _run(lib, mode, ns["f"], x)
        seen = (r.stride(), r.tolist())
        r.zero_()
        return seen, x.tolist()
    assert case(fg) == case(torch)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("where", ["inside", "after"])
@pytest.mark.parametrize("order", ["save, write", "write, save", "save, write, save"])
@pytest.mark.parametrize("write", ["v.mul_(2)", "v.exp_()", "v.zero_()", "w.detach().mul_(2)"])
def test_a_leaf_made_in_the_call_from_a_detach_stays_a_leaf_when_its_source_is_written(write, order, where, mode):
    """w = v.detach().requires_grad_() shares v's memory and version counter: a write through v
    makes what saved w stale (torch's version error at the backward, in the call or after it),
    and w's gradient sums the uses of every value it held."""
    def case(lib):
        steps = {"save": "s = s + (w * w).sum()", "write": write}
        body = "\n    ".join(steps[step] for step in order.split(", "))
        ns = {}
        exec(f"def f(x):\n    v = x * 2\n    w = v.detach().requires_grad_()\n    s = 0\n    {body}\n"
             f"    {'s.backward()' if where == 'inside' else ''}\n    return s, w", ns)

        def go():
            s, w = _run(lib, mode, ns["f"], lib.tensor([0.5, 1.0]))
            if where == "after":
                s.backward()
            return w.grad.tolist()
        return outcome(go)
    assert case(fg) == case(torch)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("write", [False, True])
@pytest.mark.parametrize("loss", ["(w * 2).sum()", "(w * w).sum()", "w.sum()", "(w * y).sum()"])
def test_a_retained_non_leaf_gets_a_contiguous_gradient(loss, write, create_graph, mode):
    """torch's retain_grad hook stores clone(memory_format=contiguous_format): a transposed
    non-leaf's .grad is row-major (its view(-1) works), after one backward and after two."""
    def case(lib):
        def f(x, y):
            w = (x * 1).t()
            if write:
                w[..., -1] = y[:, 0]
            w.retain_grad()
            for _ in range(2):
                eval(loss).backward(create_graph=create_graph, retain_graph=True)
            return w.grad
        g = _run(lib, mode, f, lib.ones(3, 4, requires_grad=True), lib.ones(3, 4).t())
        return g.stride(), g.view(-1).tolist(), g.requires_grad
    assert case(fg) == case(torch)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("value", ["lib.tensor(2.0)", "y", "2.0", "y.item()"])
@pytest.mark.parametrize("expanded", ["(x * 1).expand(2, 3)", "x.expand(2, 3)", "x[None].expand(2, 3)",
                                      "(x * 1).expand(1, 3)"])
def test_fill_with_a_tensor_refuses_an_expanded_tensor(expanded, value, mode):
    """torch's fill_.Tensor refuses memory that several elements share; fill_(number) fills it."""
    def case(lib):
        def f(x, y):
            e = eval(expanded)
            e.fill_(eval(value))
            return e
        return outcome(lambda: _run(lib, mode, f, lib.tensor([-1.0, 2.0, 3.0]), lib.tensor(2.0)).tolist())
    assert case(fg) == case(torch)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("write", [False, True])
@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1, 0)])
@pytest.mark.parametrize("loss", ["(u * u * w).sum()", "(u * w).sum()", "(u.abs() * w).sum()"])
def test_a_backward_from_a_transforms_value_stops_at_the_callers_leaves(loss, argnums, write, mode):
    """The value fg.value_and_grad returns keeps history only to the caller's tensors that
    require grad: a backward from it (in the call or not) neither reaches nor checks what the
    transform's own leaf for an argument without grad saved (x1 written after)."""
    def case(lib):
        def f(x1, x2):
            value = value_and_grad_of(lib, lambda u, w: eval(loss), argnums)(x1, x2)[0]
            if write:
                with lib.no_grad():
                    x1.mul_(1.5)
            value.backward()
            return value
        x1 = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)
        x2 = lib.tensor([0.5, 1.0, 2.0], dtype=lib.float64, requires_grad=True)

        def go():
            v = _run(lib, mode, f, x1, x2)
            return v.item(), x2.grad.tolist(), x1.grad
        return outcome(go)
    assert case(fg) == case(torch)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", ["logsumexp(0)", "prod()", "norm()", "amax(0)", "std()", "pow(v)", "softmax(0)",
                                "exp()", "div(v)", "atan2(v)"])
def test_a_version_error_names_the_saved_tensor_torchs_node_unpacks_first(op, mode):
    """Where an op's input and result were both written after it saved them, the error names
    the one torch's node unpacks first (LogsumexpBackward0: self, then result)."""
    def case(lib):
        def f(x):
            v = x * 1
            w = eval("v." + op)
            w.mul_(2)
            v.mul_(2)
            w.sum().backward()
            return x.grad
        return outcome(lambda: _run(lib, mode, f, lib.tensor([0.3, 0.5, 0.7], requires_grad=True)).tolist())
    assert case(fg) == case(torch)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [None, "float64", "int64"])
@pytest.mark.parametrize("source", ["lib.ones(2, 3).t()", "lib.ones(4, 6)[:, ::2]", "lib.ones(3).expand(2, 3)",
                                    "lib.ones(2, 3, 4).permute(2, 0, 1)", "lib.ones(2, 3)"])
def test_tensor_of_a_tensor_keeps_a_dense_layout(source, dtype, mode):
    """torch.tensor(t) is t.detach().clone(): a dense layout (a transpose) is kept, any other is
    made row-major."""
    def case(lib):
        def f(x):
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return lib.tensor(eval(source), dtype=None if dtype is None else getattr(lib, dtype))
        t = _run(lib, mode, f, lib.ones(1))
        return t.stride(), t.tolist(), str(t.dtype).split(".")[-1]
    assert case(fg) == case(torch)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("written", ["in the call", "after the call"])
@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1, 0)])
@pytest.mark.parametrize("dtypes", [("float64", "float32"), ("float32", "float64"), ("float32", "float32")])
def test_a_transforms_value_saves_its_promoted_operand_under_the_arguments_counter(dtypes, argnums, written, mode):
    """The value of fg.value_and_grad over mixed dtypes saved the float32 argument (promoted): a
    write of that argument before the backward raises torch's version error."""
    def case(lib):
        def write(x2):
            with lib.no_grad():
                x2.mul_(1.5)

        def f(x1, x2):
            value = value_and_grad_of(lib, lambda u, w: (u * w).sum(), argnums)(x1, x2)[0]
            if written == "in the call":
                write(x2)
            return value
        x1 = lib.tensor([1.0, 2.0, 3.0], dtype=getattr(lib, dtypes[0]), requires_grad=True)
        x2 = lib.tensor([0.5, 1.0, 2.0], dtype=getattr(lib, dtypes[1]), requires_grad=True)

        def go():
            value = _run(lib, mode, f, x1, x2)
            if written == "after the call":
                write(x2)
            value.backward()
            return x1.grad.tolist(), x2.grad.tolist()
        return outcome(go)
    assert case(fg) == case(torch)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("returned", [True, False])
@pytest.mark.parametrize("saved", ["w * w", "(w * 3).exp()", "w.sigmoid() * x"])
@pytest.mark.parametrize("write", ["v.exp_()", "v.zero_()", "v.mul_(2)", "v.copy_(x)", "w.detach().mul_(2)",
                                   "v[0] = 1.0"])
def test_a_saved_leaf_made_from_a_detach_is_named_as_a_leaf_when_written_through_its_source(write, saved, returned,
                                                                                            mode):
    """w = v.detach().requires_grad_() saved, then written through v: torch's version error names
    no node for it (a leaf), whether the backward runs after the call or w is gone."""
    def case(lib):
        def f(x):
            v = x * 2
            w = v.detach().requires_grad_()
            s = eval(saved)
            exec(write, {"v": v, "w": w, "x": x})
            return (s, w) if returned else (s,)
        x = lib.tensor([0.5, 1.0], requires_grad=True)
        return outcome(lambda: _run(lib, mode, f, x)[0].sum().backward())
    assert case(fg) == case(torch)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("ret", ["x[...]", "x.t()", "x.unsqueeze(0)", "x.transpose(0, 1)[0]", "x[1] * y"])
@pytest.mark.parametrize("write", ["x.data.mul_(2)", "x.detach().zero_()", "x.data.t()[0].zero_()",
                                   "x.detach()[0] = 3.0", "x.mul_(y)"])
@pytest.mark.parametrize("layout", ["transposed", "strided"])
def test_a_view_of_an_argument_written_through_an_alias_is_that_arguments_memory(layout, write, ret, mode):
    """x, a view of a non-leaf made before the call, written in the call through its .data or a
    detach(): a view of x returned is x's memory (strides, aliasing), with x's gradient path."""
    def case(lib):
        ns = {}
        exec(f"def f(x, y):\n    {write}\n    return {ret}", ns)
        leaf = lib.tensor(np.arange(6.0).reshape(3, 2) / 4, requires_grad=True)
        x = (leaf * 1).t() if layout == "transposed" else (lib.cat([leaf, leaf], 1) * 1)[:, ::2].t()
        y = lib.tensor([0.5, 2.0, 3.0], requires_grad=True)

        def go():
            out = _run(lib, mode, ns["f"], x, y)
            seen = (out.stride(), out.tolist(), out.requires_grad)
            (out * lib.arange(out.numel()).reshape(out.shape)).sum().backward()
            out.detach().mul_(0)
            return seen, x.tolist(), leaf.grad.tolist(), None if y.grad is None else y.grad.tolist()
        return outcome(go)
    assert case(fg) == case(torch)


def _softmax_loss(lib, z):
    return (z.softmax(1) * lib.arange(float(z.shape[1]))).sum()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", ["fg.grad", "autograd.grad(create_graph=True)"])
@pytest.mark.parametrize("loss", ["(u * w).sum()", "(u * w).exp().sum()", "(w.t() * u.t()).sum()", "(w * u).mean()",
                                  "(w[None] * u).sum()", "(w.exp() * u[0]).sum()", "(w * u).sum(0).pow(2).sum()",
                                  "_softmax_loss(lib, w * u)", "(w * 2).sum()"])
@pytest.mark.parametrize("layouts", [("transposed", "row-major"), ("transposed", "transposed"),
                                     ("row-major", "transposed")])
def test_a_gradient_taken_in_the_call_is_laid_out_as_torchs_backward_makes_it(layouts, loss, how, mode):
    """d/dw of (u * w).sum() is u: a transposed u gives a transposed gradient (strides (1, 3)),
    inside fg.compile as eagerly; an elementwise VJP follows its operands' layout."""
    def case(lib):
        def f(u, x):
            g = eval("lambda u, w: " + loss, {"lib": lib, "_softmax_loss": _softmax_loss})
            if how == "fg.grad":
                return (torch.func.grad if lib is torch else fg.grad)(g, argnums=1)(u, x)
            w = x * 1 if layouts[1] == "row-major" else (x.t() * 1).t()
            return lib.autograd.grad(g(u, w), [w], create_graph="create_graph" in how)[0]
        a = np.arange(6, dtype=np.float32)
        u = lib.tensor(a.reshape(2, 3)).t() if layouts[0] == "transposed" else lib.tensor(a.reshape(3, 2))
        x = lib.ones(2, 3).t().requires_grad_() if layouts[1] == "transposed" else lib.ones(3, 2, requires_grad=True)
        g = _run(lib, mode, f, u, x)
        return g.stride(), np.round(g.detach().numpy().astype(np.float64), 4).tolist()
    assert case(fg) == case(torch)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("write", ["zero_()", "mul_(2)"])
@pytest.mark.parametrize("argnums", [0, 1, (1, 0)])
@pytest.mark.parametrize("loss", ["(u * u * w).sum()", "(u.exp() * w).sum()", "((u * 2) * (w * 3)).sum()"])
def test_a_transforms_value_reaches_only_the_callers_level_nodes(loss, argnums, write, mode):
    """At the caller's level (torch.func's) the nodes that lead only to the transform's own
    leaf for an argument without grad were never recorded: a backward from the value neither
    runs them nor checks what they saved (v written after the transform)."""
    def case(lib):
        def f(x, c):
            v = x * 2
            value = value_and_grad_of(lib, lambda u, w: eval(loss), argnums)(c, v)[0]
            getattr(v, write[:-3] + "_")(*(() if write == "zero_()" else (2,)))
            return value
        x = lib.tensor([1.0, 2.0], requires_grad=True)

        def go():
            _run(lib, mode, f, x, lib.tensor(3.0)).backward()
            return np.round(x.grad.numpy().astype(np.float64), 4).tolist()
        return outcome(go)
    assert case(fg) == case(torch)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("write", ["w.add_(y)", "w.mul_(y)", "w.copy_(y)", "w[0] = y[0]", "w[0].add_(y[0])",
                                   "w.add_(1.0)", "w.add_(y.detach())"])
@pytest.mark.parametrize("part", ["v.split(1, 0)[0]", "v.chunk(2, 0)[1]", "v.unbind(0)[0]", "v.narrow(0, 0, 1)"])
@pytest.mark.parametrize("base", ["x * 1", "x"])
def test_a_part_of_a_split_without_grad_refuses_a_write_that_requires_grad(base, part, write, mode):
    """A part of split/chunk/unbind of a tensor that needs no grad, written in place with grad
    enabled by a value that requires grad: torch's "A view was created in no_grad mode" error
    with the multiple-views tail (narrow, one view, takes the write)."""
    def case(lib):
        def f(x, y):
            v = eval(base)
            w = eval(part)
            exec(write, {"w": w, "y": y})
            return v

        def go():
            y = lib.tensor([1.0, 2.0], requires_grad=True)
            v = _run(lib, mode, f, lib.tensor([[1.0, 2.0], [3.0, 4.0]]), y)
            if v.requires_grad:
                v.sum().backward()
            return v.tolist(), None if y.grad is None else y.grad.tolist()
        return outcome(go)
    assert case(fg) == case(torch)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("write", ["v.mul_(2)", "v[0] = 1.0", "s.mul_(2)", ""])
@pytest.mark.parametrize("exponent", ["lib.tensor(True)", "lib.tensor([True, False])", "lib.tensor(2.0)"])
def test_pow_with_a_bool_exponent_checks_what_it_saved_before_its_formula_raises(exponent, write, mode):
    """torch's PowBackward1 unpacks exponent, result and self before its formula meets the bool
    subtraction: a saved value written in place raises the version error first."""
    def case(lib):
        def f(x):
            s = x.sin()
            v = s ** eval(exponent)
            exec(write, {"v": v, "s": s})
            v.sum().backward()
            return x.grad
        return outcome(lambda: np.round(_run(lib, mode, f, lib.tensor([0.5, 1.0], requires_grad=True)).numpy()
                                        .astype(np.float64), 4).tolist())
    assert case(fg) == case(torch)


@pytest.mark.parametrize("shape_op", [((), "w.flatten()"), ((), "w.view(1)"), ((), "w.reshape(-1)"), ((1,), "w.reshape(1, 1)"),
                                      ((), "w.unsqueeze(0)"), ((1,), "w.squeeze(0)"), ((2, 3), "w.view(6)"),
                                      ((2, 3), "w.reshape(3, 2)"), ((2, 1), "w.squeeze()"), ((3,), "w.unsqueeze(1)"),
                                      ((3,), "w.view(3, 1)"), ((2, 3), "w.flatten()")])
def test_a_create_graph_gradient_through_a_view_is_named_by_the_forward_nodes_formula(shape_op):
    """view/reshape/flatten's formula reshapes the gradient back (ViewBackward0), also where the
    shapes differ only in size-1 dims; unsqueeze's squeezes it, squeeze's unsqueezes it."""
    shape, op = shape_op

    def case(lib):
        w = lib.ones(shape, requires_grad=True)
        v = eval(op)
        c = lib.arange(1.0, 1.0 + v.numel()).reshape(v.shape).requires_grad_()
        g, = lib.autograd.grad((v * c).sum(), [w], create_graph=True)
        return type(g.grad_fn).__name__, g.shape == w.shape
    assert case(fg) == case(torch)
