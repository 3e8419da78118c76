"""Parity round 8: differences from torch 2.13 found by a sweep of the API contract.

Each test runs the same code on torch and fusegrad and compares values, memory layouts,
printed forms and exception texts.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import fusegrad as fg

from parity_support import outcome as _outcome

torch = pytest.importorskip("torch", reason="torch is the oracle")


# --------------------------------------------------------------------- result layouts
LAYOUTS = {
    "sum over a permute's dim": lambda L: L.arange(24.).reshape(2, 3, 4).permute(2, 0, 1).sum(1),
    "mean of a transpose": lambda L: L.arange(24.).reshape(2, 3, 4).transpose(0, 2).mean(0),
    "amax of a permute": lambda L: L.arange(24.).reshape(2, 3, 4).permute(2, 0, 1).amax(1),
    "norm of a permute": lambda L: L.arange(24.).reshape(2, 3, 4).permute(2, 0, 1).norm(dim=1),
    "max values of a permute": lambda L: L.arange(24.).reshape(2, 3, 4).permute(2, 0, 1).max(1)[0],
    "max indices of a permute": lambda L: L.arange(24.).reshape(2, 3, 4).permute(2, 0, 1).max(1)[1],
    "cat of transposes": lambda L: L.cat([L.arange(6.).reshape(2, 3).t()] * 2),
    "stack of transposes": lambda L: L.stack([L.arange(6.).reshape(2, 3).t()] * 2),
    "sum of a large permute": lambda L: L.arange(2. * 300 * 400).reshape(2, 300, 400).permute(2, 0, 1).sum(1),
}


@pytest.mark.parametrize("case", LAYOUTS)
def test_reductions_cat_and_stack_allocate_row_major_results(case):
    """torch allocates these results row-major whatever the input's layout (NumPy followed the
    input's order, so .view(-1) of them raised where torch's works)."""
    def run(lib):
        y = LAYOUTS[case](lib)
        return y.stride(), y.is_contiguous(), y.view(-1).numpy().tolist()
    assert run(fg) == run(torch)


ELEMENTWISE_LAYOUTS = {
    "relu of a transpose": lambda L, t: t.relu(),
    "int relu of a transpose": lambda L, t: t.long().relu(),
    "sum of a transpose and a copy": lambda L, t: t + t.contiguous(),
    "sum of a copy and a transpose": lambda L, t: t.contiguous() + t,
    "where on a transpose": lambda L, t: L.where(t > 2, t, 0.0),
    "zeros_like": lambda L, t: L.zeros_like(t),
    "ones_like, by keyword": lambda L, t: L.ones_like(input=t),
    "empty_like": lambda L, t: L.empty_like(t).fill_(1.0),
    "full_like": lambda L, t: L.full_like(t, 2.0),
    "zeros_like float64": lambda L, t: L.zeros_like(t, dtype=L.float64),
}


@pytest.mark.parametrize("case", ELEMENTWISE_LAYOUTS)
def test_elementwise_and_like_results_keep_a_strided_operands_layout(case):
    """torch's elementwise results and *_like tensors (preserve_format) take a dense operand's
    strides (relu and *_like were row-major, so .view(-1) of them worked where torch raises)."""
    def run(lib):
        y = ELEMENTWISE_LAYOUTS[case](lib, lib.arange(6.).reshape(2, 3).t())
        return y.stride(), y.is_contiguous(), y.numpy().tolist(), _outcome(lambda: y.view(-1).shape[0])
    assert run(fg) == run(torch)


# --------------------------------------------------------------------- ranges
LINSPACES = [(-1, 1, 11), (0, 1, 4), (0, 10, 7), (0, 1, 100), (3, 3, 4), (1, 0, 3), (-2.5, 7.25, 33), (0, 1, 1),
             (0, 1, 0)]
ARANGES = [(-1, 1, 0.1), (0, 2, 0.1), (1, 3, 0.1), (-3, 3, 0.3), (-0.5, 0.5, 0.1), (0.5, 10.25, 0.25),
           (0, 1, 0.01), (5, -5, -0.7), (0, 5.0)]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("args", LINSPACES)
def test_linspace_is_torchs_bit_for_bit(args, dtype):
    """torch counts the first half up from start and the second down from end, one fused
    multiply-add a value (its linspace(-1, 1, 11) holds -1.49e-08, and prints so)."""
    def run(lib):
        y = lib.linspace(*args, dtype=getattr(lib, dtype))
        return y.tolist(), repr(y).replace("torch.", "").replace("fg.", "")
    assert run(fg) == run(torch)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("args", ARANGES)
def test_floating_arange_is_torchs_bit_for_bit(args, dtype):
    """torch's kernel is vectorised over blocks of two 32-byte vectors (arange(-1, 1, 0.1) holds
    -2.98e-09 where the exact value is 0)."""
    def run(lib):
        y = lib.arange(*args, dtype=getattr(lib, dtype))
        return y.tolist(), repr(y).replace("torch.", "").replace("fg.", "")
    assert run(fg) == run(torch)


def test_range_ends_may_be_0d_tensors():
    assert fg.linspace(fg.tensor(0.0), fg.tensor(1.0), 3).tolist() == \
        torch.linspace(torch.tensor(0.0), torch.tensor(1.0), 3).tolist()


# --------------------------------------------------------------------- conversions
@pytest.mark.parametrize("target", ["float", "int", "bool", "dtype=float"])
def test_to_takes_python_types_as_dtypes(target):
    def run(lib):
        t = lib.tensor([1.5, 0.0])
        y = t.to(dtype=float) if target == "dtype=float" else t.to(eval(target))
        return str(y.dtype).split(".")[-1], y.tolist()
    assert run(fg) == run(torch)


# --------------------------------------------------------------------- autograd
def test_grad_under_no_grad_differentiates_and_returns_plain_values():
    """fg.grad is a transformation: it differentiates under no_grad too (it raised a TypeError),
    and its results carry no history there, as torch.func.grad's."""
    for lib, grad in ((fg, fg.grad), (torch, torch.func.grad)):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        w = lib.tensor([3.0, 4.0], requires_grad=True)
        with lib.no_grad():
            g1 = grad(lambda a: (a * a).sum())(x)
            g2 = grad(lambda a: (a * w).sum())(x)
            g3 = grad(grad(lambda a: (a * a * a).sum()))(lib.tensor(2.0))
        got = [(g.tolist(), g.requires_grad, g.grad_fn is None) for g in (g1, g2, g3)]
        if lib is fg:
            fg_got = got
    assert fg_got == got


def test_autograd_grad_frees_only_the_nodes_it_ran():
    """autograd.grad(z, x) runs (and frees) only the nodes on the way to x: a later backward
    through the rest of the graph works, as in torch (it raised 'a second time')."""
    def run(lib):
        w, x = lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True)
        a = w.exp()
        z = (x * a).sum()
        first = np.round(lib.autograd.grad(z, x)[0].numpy(), 5).tolist()
        a.sum().backward()
        y = x * 2
        z2 = (y * w).sum()
        lib.autograd.grad(z2, y)
        return first, np.round(w.grad.numpy(), 5).tolist(), _outcome(lambda: z2.backward())[0]
    assert run(fg) == run(torch)


def test_a_leaf_that_stops_requiring_grad_gets_no_gradient():
    def run(lib):
        x, w = lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True)
        y = (x * w * 2).sum()
        x.requires_grad = False
        y.backward()
        return x.grad, w.grad.tolist()
    assert run(fg) == run(torch)


# --------------------------------------------------------------------- nn
def test_a_parameter_shares_its_datas_version_counter():
    """Parameter(x) shares x's memory and version counter: a write to x after a forward that
    saved it raises at backward (fusegrad gave a silently wrong gradient)."""
    def run(lib):
        x = lib.ones(3)
        p = lib.nn.Parameter(x)
        y = (p * p).sum()
        x.add_(1)
        return _outcome(lambda: y.backward()), x._version, p._version
    got, want = run(fg), run(torch)
    assert got[1:] == want[1:] and got[0][0] == want[0][0]
    assert got[0][1].startswith("one of the variables needed for gradient computation has been modified")


def test_a_class_given_to_sequential_is_named_as_torch_names_it():
    message = _outcome(lambda: fg.nn.Sequential(fg.nn.Linear(1, 1), fg.nn.ReLU))
    assert message == _outcome(lambda: torch.nn.Sequential(torch.nn.Linear(1, 1), torch.nn.ReLU))
    assert message == ("TypeError", "torch.nn.modules.activation.ReLU is not a Module subclass")


def test_max_over_dim_0_of_a_0d_tensor_is_a_copy():
    """x.max(0) of a 0-d x returned a view of x: a later write to x changed the values."""
    def run(lib):
        x = lib.tensor(2.0)
        v, i = x.max(0)
        w, j = x.min(0, keepdim=True)
        x.add_(1)
        return v.item(), w.item(), i.item(), v._base is None
    assert run(fg) == run(torch)


@pytest.mark.parametrize("outputs", ["1.0", "None", "[1.0]", "'a'", "(y, 2.0)"])
def test_autograd_grad_of_a_non_tensor(outputs):
    def run(lib):
        x = lib.ones(1, requires_grad=True)
        y = x.sum()
        return _outcome(lambda: lib.autograd.grad(eval(outputs), x))
    assert run(fg) == run(torch)


def test_a_saved_bool_tensor_is_named_as_torch_names_it():
    def run(lib):
        x = lib.ones(2, requires_grad=True)
        c = lib.ones(2, dtype=lib.bool)
        y = lib.where(c, x, 0.0)
        c.fill_(False)
        return _outcome(lambda: y.sum().backward())
    assert run(fg) == run(torch)


def test_a_mixed_partial_by_nested_grads_is_a_plain_value():
    """grad(grad(f, argnums=1), argnums=0) of numbers: the inner call's leaf is its own, so the
    result keeps no history (it had grad_fn=<AddBackward0>), as torch.func's."""
    f = lambda x, y: x * x * y * y * y  # noqa: E731
    got = fg.grad(lambda x, y: fg.grad(f, argnums=1)(x, y), argnums=0)(2.0, 3.0)
    want = torch.func.grad(lambda x, y: torch.func.grad(f, argnums=1)(x, y), argnums=0)(
        torch.tensor(2.0), torch.tensor(3.0))
    assert (repr(got), got.requires_grad) == (repr(want), want.requires_grad)


def test_enable_grad_inside_a_compiled_call_made_under_no_grad():
    """Outputs recorded under enable_grad inside the call keep their history (a compiled
    backward), as eagerly, though the call itself runs under no_grad."""
    def body(a):
        with fg.enable_grad():
            return a * 2
    x = fg.ones(2, requires_grad=True)
    with fg.no_grad():
        y = fg.compile(body)(x)
    assert y.requires_grad
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


@pytest.mark.parametrize("make", ["a.T", "a[:, ::2]", "a.T.astype(np.int32)", "a.T, dtype=L.float32", "a[::-1]",
                                  "np.ascontiguousarray(a.T)"])
def test_tensor_of_an_array_keeps_its_dense_layout(make):
    """torch.tensor of an array keeps a dense array's strides (so .view(-1) of a transposed one
    raises) and refuses negative strides, as from_numpy does."""
    a = np.arange(6.0).reshape(2, 3)

    def run(L):
        return _outcome(lambda: (lambda t: (t.stride(), t.tolist(), _outcome(lambda: t.view(-1).shape[0])))(
            eval(f"L.tensor({make})")))
    got, want = run(fg), run(torch)
    assert got[:1] == want[:1] if isinstance(want[0], str) else got == want


def test_a_retained_non_leafs_grad_with_create_graph_is_a_clone():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.retain_grad()
        (y ** 3).sum().backward(create_graph=True)
        first = repr(y.grad)
        (y ** 3).sum().backward(create_graph=True)
        return first, repr(y.grad), repr(x.grad)
    got = run(fg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # torch warns of the leaf's reference cycle
        want = run(torch)
    assert got == want


COPY_SLICES_WRITES = ["a[0].mul_(2)", "a[0].add_(y)", "a[0].zero_()", "a[0].fill_(3.)", "a[:, 1].copy_(y2)",
                      "a.t()[0].mul_(y2)", "a[0] += y", "a.view(6)[1:].div_(2.)", "a[0][1:].sub_(y[:2])",
                      "a[0].mul_(2); a[1].add_(y)"]


@pytest.mark.parametrize("write", COPY_SLICES_WRITES)
def test_copy_slices_next_functions_are_torchs(write):
    """torch's CopySlices wraps the in-place op: its next_functions are the base's history and
    then the op's other inputs (fusegrad listed the op's own node)."""
    def names(node):
        return [(type(n).__name__ if n is not None else None, k) for n, k in node.next_functions]

    def run(lib):
        x = lib.ones(2, 3, requires_grad=True)
        y, y2 = lib.ones(3, requires_grad=True), lib.ones(2, requires_grad=True)
        a = x * 1
        exec(write)
        shown = names(a.grad_fn)
        (a * a).sum().backward()
        return shown, x.grad.tolist(), y.grad.tolist() if y.grad is not None else None
    assert run(fg) == run(torch)


# --------------------------------------------------------------------- indexing and in-place
def test_inplace_power_runs_in_place():
    """`t **= k` is pow_ (there was no __ipow__: Python rebound t, and aliases never saw it)."""
    def run(lib):
        a = lib.tensor([1.0, 2.0, 3.0])
        b, v = a, a[1:]
        b **= 2
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 1
        w = y[1:]
        w **= 2
        y.sum().backward()
        return a.tolist(), v.tolist(), a._version, x.grad.tolist()
    assert run(fg) == run(torch)


@pytest.mark.parametrize("key", ["[:, [0, 2]]", "[..., [1, 3]]", "[:, 1, [0, 2]]", "[:, L.tensor([True, False, True])]",
                                 "[[1, 0]]", "[:, [[0], [2]], [1, 3]]"])
def test_advanced_index_results_are_row_major(key):
    def run(L):
        y = eval(f"L.arange(24.).reshape(2, 3, 4){key}")
        return y.stride(), y.view(-1).tolist()
    assert run(fg) == run(torch)


@pytest.mark.parametrize("write", ["x[L.tensor([True, False, True])] = L.tensor(5)", "x[x == 0] = L.tensor([[5]])",
                                   "x[x == 0] = L.tensor([5, 6])", "x[:, L.tensor([True, False])] = L.tensor(5)",
                                   "x[L.tensor([True, False, True]), 0] = L.tensor(5)",
                                   "x[L.tensor(True)] = L.tensor(5)", "x[L.tensor([0, 2])] = L.tensor(7)",
                                   "x[L.tensor([0, 1])] = L.tensor([1, 2, 3, 4])"])
def test_setitem_through_a_mask_casts_a_one_element_value(write):
    """torch writes a one-element value through a bool mask by masked_fill_ (a cast); an index
    put of a tensor value must match the dtype, and a shape mismatch is reported first."""
    def run(L):
        x = L.zeros(3, 2)
        return _outcome(lambda: (exec(write), x.tolist())[1])
    assert run(fg) == run(torch)


@pytest.mark.parametrize("write", ["x.add_(1)", "x.zero_()", "x[...] = 1.0", "x[[0]] = 1.0", "x[0] = 1.0"])
def test_inplace_on_a_leaf_that_is_a_view_names_it_a_view(write):
    def run(L):
        x = L.arange(6.0).reshape(2, 3).requires_grad_()
        return _outcome(lambda: exec(write))
    assert run(fg) == run(torch)


@pytest.mark.parametrize("write", ["a.pow_(t)", "a.pow_(2)", "a.remainder_(t)", "a.remainder_(2)", "a.clamp_(min=t)",
                                   "a.clamp_(min=0.5)", "a.clamp_(t, t + 1)", "a.clamp_(max=t)",
                                   "a.div_(t, rounding_mode='floor')", "a.div_(2, rounding_mode='trunc')",
                                   "a.div_(2, rounding_mode='x')", "a /= t"])
def test_inplace_ops_with_tensor_arguments_as_torch(write):
    """torch's nodes for the tensor overloads (PowBackward1, RemainderBackward1, ClampBackward0,
    which crashed), and div_'s rounding_mode."""
    def run(L):
        x = L.tensor([1.0, 2.5, 3.0], requires_grad=True)
        t = L.tensor([1.5, 0.5, 2.0], requires_grad=True)
        a = x * 1

        def go():
            exec(write)
            (a * a).sum().backward()
            return (type(a.grad_fn).__name__, np.round(a.detach().numpy(), 5).tolist(),
                    np.round(x.grad.numpy(), 4).tolist(), None if t.grad is None else np.round(t.grad.numpy(), 4).tolist())
        return _outcome(go)
    assert run(fg) == run(torch)


@pytest.mark.parametrize("writes", ["y.exp_(); y.add_(1)", "y.tanh_(); a.add_(1)", "y.sigmoid_(); y[0].mul_(2)",
                                    "y.exp_()", "y.relu_(); y.add_(1)", "y.sqrt_(); y.add_(1)",
                                    "y.exp_(); x.data.add_(1)"])
def test_an_output_saving_inplace_op_on_a_view_saves_the_view(writes):
    """exp_ (tanh_, sigmoid_, relu_, sqrt_) on a view saves the view itself, as torch: a later
    write to it or its base makes the backward raise (it used a private copy)."""
    def run(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        a = x * 1
        y = a[1:]
        return _outcome(lambda: (exec(writes), y.sum().backward(), np.round(x.grad.numpy(), 4).tolist())[2])
    assert run(fg) == run(torch)


LEAVES_MADE_INSIDE = {
    "detach().requires_grad_()": lambda L, x: (lambda y: ((y.exp()).sum(), y))((x * 2).detach().requires_grad_()),
    "requires_grad = True": lambda L, x: (lambda y: (setattr(y, "requires_grad", True), ((y * y).sum(), y))[1])(
        (x * 2).detach()),
    "exp().requires_grad_()": lambda L, x: (lambda y: ((y * 2).sum(), y))(x.exp().requires_grad_()),
    "beside a created leaf": lambda L, x: (lambda y, w: ((y * w).sum(), y, w))(
        (x * 2).detach().requires_grad_(), L.ones(2, requires_grad=True)),
}


@pytest.mark.parametrize("case", LEAVES_MADE_INSIDE)
def test_outputs_of_a_leaf_made_inside_a_compiled_call_keep_their_history(case):
    """A leaf made by requires_grad_() inside fg.compile: outputs computed from it require grad
    and a backward fills its .grad, as eagerly (they came back as plain values)."""
    body = LEAVES_MADE_INSIDE[case]

    def run(L, compiled):
        x = L.tensor([1.0, 2.0])
        out = fg.compile(lambda x: body(fg, x))(x) if compiled else body(L, x)
        out[0].backward()
        return out[0].requires_grad, [(o.requires_grad, np.round(o.grad.numpy(), 4).tolist()) for o in out[1:]]
    assert run(fg, True) == run(torch, False)


@pytest.mark.parametrize("call", ["x.sum(dtype=L.int64)", "x.sum(dtype=L.bool)", "x.sum(0, dtype=L.int64)",
                                  "x.detach().sum(dtype=L.int64)", "x.sum(dtype=L.float64)"])
def test_sum_to_an_integer_dtype_of_a_tensor_that_requires_grad(call):
    def run(L):
        x = L.tensor([1.5, 2.5], requires_grad=True)
        return _outcome(lambda: (lambda r: (r.item(), r.requires_grad))(eval(call)))
    assert run(fg) == run(torch)


EXPAND_WRITES = ["e[0].add_(1)", "e[0, 1] = 5.", "e[0][1:] = 5.", "e[1].mul_(w)", "e[0].copy_(w)", "e[:, 0].add_(1)",
                 "e.add_(1)", "e[0:2].add_(1)", "e.t()[0].add_(1)", "e[1] = w * 2"]


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("write", EXPAND_WRITES)
def test_a_write_into_a_part_of_an_expand_that_holds_each_element_once(write, compiled):
    """torch allows an in-place write into a region of an expand (of a tensor with history) that
    holds each element once, a row of x.expand(2, 3), and refuses one that holds an element
    twice (fusegrad refused both)."""
    def body(L, a, w):
        e = a.expand(2, 3)
        exec(write)
        return (a * a).sum()

    def run(L, compiled):
        x = L.ones(3, requires_grad=True)
        w = L.tensor([1.0, 2.0, 3.0], requires_grad=True)

        def go():
            fn = fg.compile(lambda a, w: body(fg, a, w)) if compiled else (lambda a, w: body(L, a, w))
            fn(x * 1, w).backward()
            return np.round(x.grad.numpy(), 5).tolist(), None if w.grad is None else np.round(w.grad.numpy(), 5).tolist()
        return _outcome(go)
    assert run(fg, compiled) == run(torch, False)


def test_a_compiled_write_into_a_view_of_an_expand_argument():
    """s.expand(2, 3, 3)[-1] is read-only in NumPy (every view of a broadcast is); a compiled
    call that writes it writes s, as eagerly (the write-back raised 'read-only')."""
    def body(a2):
        a2.div_(a2.abs() + 1)
        return (a2 * -1.0).sum()

    def run(L, fn):
        s0 = L.tensor([[-1.25, -0.75, 1.0], [-0.25, 0.25, -0.75], [-1.25, -1.75, -1.5]])
        out = fn(s0.expand(2, 3, 3)[-1])
        return round(out.item(), 4), np.round(s0.numpy(), 4).tolist(), s0._version
    assert run(fg, fg.compile(body)) == run(torch, body)


OVERLAPPING_WRITES = ["x.sub_(x[1, 1])", "x.add_(x[0])", "x[0].add_(x[1])", "x.mul_(x)", "x[0].add_(x[0])",
                      "x[:, ::2].add_(x[:, 1:2])", "x.t().add_(x)", "x[0].mul_(x[0, 1])", "x.copy_(x.t())",
                      "x[0].copy_(x[1])", "x.copy_(x)", "e = x[0].expand(2, 3); e[...] = x.sum()",
                      "e = x[0].expand(2, 3); e[0] = 1.", "x[0:2] = x[1:3]", "x[...] = x.t()", "x[0] = x[1]",
                      "x[...] = x", "x[0:2] = x[0:2] * 2", "x[1:] = x[:2].clone()"]


@pytest.mark.parametrize("write", OVERLAPPING_WRITES)
def test_compiled_in_place_writes_check_overlap_as_torch(write):
    """Inside fg.compile views have no memory yet: torch's overlap checks (an in-place op reading
    memory its output partly overlaps, a copy into an expand's aliases) run on the views'
    element indices, so a compiled call raises where eager torch does (it ran)."""
    def body(a):
        x = a * 1
        exec(write)
        return x

    def run(L, fn):
        return _outcome(lambda: fn(L.arange(9.0).reshape(3, 3)).tolist())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # (index_put by reference inside compiled programs)
        got = run(fg, fg.compile(body))
    assert got == run(torch, body)


def test_a_leaf_written_through_its_detach_inside_a_compiled_call_stays_a_leaf():
    """A leaf that requires grad, written under no_grad and through its detach() inside the call,
    is still a leaf afterwards (it became an output with CompiledFunctionBackward: bug L)."""
    def body(L, a):
        t = a.detach()
        with L.no_grad():
            a.mul_(2)
        t.fill_(-1.0)
        return a.sum(), (a * a).sum()

    def run(L, compiled):
        a = L.ones(3, requires_grad=True)
        out = fg.compile(lambda a: body(fg, a))(a) if compiled else body(L, a)
        (out[0] + out[1]).backward()
        return a.is_leaf, a.grad_fn is None, a.tolist(), a.grad.tolist(), a._version
    assert run(fg, True) == run(torch, False)
