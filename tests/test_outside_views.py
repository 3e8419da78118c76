"""Views made before a compiled call share memory with their base inside it, as eagerly.

An argument that is itself a view (`arange(6).reshape(2, 3)`, `ones(3, 2).t()`,
`ones(3, 3)[1:]`) written through a further view inside `fg.compile` must read its new
value afterwards in the call (it once read its old memory: a silently wrong result);
a base and its view passed as two arguments see each other's writes; version counters
move once per in-place op. torch eager is the oracle.
"""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch eager is the oracle")

ARGUMENTS = {
    "reshape": lambda lib: lib.arange(6.0).reshape(2, 3),
    "t": lambda lib: lib.arange(6.0).reshape(3, 2).t(),
    "slice": lambda lib: lib.arange(9.0).reshape(3, 3)[1:],
    "fresh": lambda lib: lib.arange(6.0).reshape(2, 3).clone(),
}
VIEWS = {
    "x[0]": lambda x: x[0],
    "x[:, 1]": lambda x: x[:, 1],
    "x.t()": lambda x: x.t(),
    "x.t()[0]": lambda x: x.t()[0],
    "x[..., 0]": lambda x: x[..., 0],
    "x.unsqueeze(0)": lambda x: x.unsqueeze(0),
    "x.permute(1, 0)": lambda x: x.permute(1, 0),
    "x[:, 1:]": lambda x: x[:, 1:],
}
WRITES = {
    "fill_": lambda v: v.fill_(7.0),
    "add_": lambda v: v.add_(1.5),
    "mul_": lambda v: v.mul_(-2.0),
    "zero_": lambda v: v.zero_(),
    "setitem": lambda v: v.__setitem__(0, 4.0),
}


def _body(view, write):
    def body(x):
        write(view(x))
        return x.sum(), x * 1
    return body


@pytest.mark.parametrize("write", WRITES)
@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("argument", ARGUMENTS)
def test_a_write_through_a_view_of_a_view_argument(argument, view, write):
    body = _body(VIEWS[view], WRITES[write])
    x_fg, x_t = ARGUMENTS[argument](fg), ARGUMENTS[argument](torch)
    got = fg.compile(body)(x_fg)
    want = body(x_t)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    np.testing.assert_array_equal(x_fg.numpy(), x_t.numpy())          # the caller's tensor
    assert x_fg._version == x_t._version


def _pair(lib):
    base = lib.arange(6.0)
    return base, base.reshape(2, 3)


@pytest.mark.parametrize("case", ["write base, read view", "write view, read base",
                                  "write view part, read view", "two writes"])
def test_a_base_and_its_view_passed_as_two_arguments(case):
    def body(base, view):
        if case == "write base, read view":
            base.add_(1)
            return view.sum(), view * 1
        if case == "write view, read base":
            view.fill_(2)
            return base.sum(), base * 1
        if case == "write view part, read view":
            view[1].mul_(3)
            return view.sum(), base * 1
        base[0:2].fill_(-1)
        view[:, 2].add_(10)
        return base.sum(), view * 1
    b_fg, v_fg = _pair(fg)
    b_t, v_t = _pair(torch)
    got = fg.compile(body)(b_fg, v_fg)
    want = body(b_t, v_t)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    np.testing.assert_array_equal(b_fg.numpy(), b_t.numpy())
    assert b_fg._version == b_t._version and v_fg._version == v_t._version


def test_gradients_through_a_write_into_a_view_argument():
    """A non-leaf view argument, written through a view inside the call: the gradient
    reaches the leaf as eagerly (through the base's CopySlices)."""
    def body(x):
        x[0].mul_(3)
        return (x * x).sum()
    w_fg = fg.tensor(np.arange(6.0, dtype=np.float32), requires_grad=True)
    w_t = torch.arange(6.0, requires_grad=True)
    loss_fg = fg.compile(body)((w_fg * 1).reshape(2, 3))
    loss_t = body((w_t * 1).reshape(2, 3))
    loss_fg.backward()
    loss_t.backward()
    np.testing.assert_allclose(loss_fg.item(), loss_t.item())
    np.testing.assert_allclose(w_fg.grad.numpy(), w_t.grad.numpy())


ALIAS_CASES = {
    # a view, made in the call, of an argument's detach(): the argument is written afterwards
    "view of x.detach(), then x written": (
        lambda x, d, v: (lambda u: (x.fill_(-1.0), u * 1)[1])(x.detach()[None])),
    "view of x.data, then x written": (
        lambda x, d, v: (lambda u: (x.add_(2.0), u * 1)[1])(x.data.t())),
    # d = x.detach() made before the call is written: a view of x made before reads it
    "d written, view of x read": (lambda x, d, v: (d.fill_(5.0), v * 1)[1]),
    "d written through its view, view of x read": (lambda x, d, v: (d[1].mul_(3.0), v * 1)[1]),
    "x written, view of d made in the call read": (lambda x, d, v: (lambda u: (x.sub_(1.0), u * 1)[1])(d[:, 0])),
    # the detach() of a view made before the call, after the call wrote the view's base
    "x written, then v.detach() read": (lambda x, d, v: (x.zero_(), v.detach() * 1)[1]),
    "x written, then v.data read": (lambda x, d, v: (x.mul_(2.0), v.data + 1)[1]),
}


def _run_alias_case(body, make_x):
    def run(lib, fn):
        x = make_x(lib)
        d, v = x.detach(), x[0]
        out = fn(lambda: body(x, d, v))
        return out, x, d, v

    got = run(fg, lambda call: fg.compile(call)())
    want = run(torch, lambda call: call())
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())


@pytest.mark.parametrize("case", ALIAS_CASES)
def test_writes_reach_the_views_of_a_detached_alias(case):
    """x, d = x.detach() and a view v = x[0] share memory: a write through any of them inside
    fg.compile is read through the others' views, as eagerly (these once read old values)."""
    _run_alias_case(ALIAS_CASES[case], lambda lib: lib.arange(6.0).reshape(2, 3).clone())


def test_a_write_through_the_detach_of_a_view_argument():
    """x is a view, so d = x.detach() is x's base's memory too: d's write reaches x's view."""
    _run_alias_case(ALIAS_CASES["d written, view of x read"], lambda lib: lib.arange(6.0).reshape(2, 3))


VERSION_CASES = {
    "zero_, then a write through .data": "x.zero_(); x.data.fill_(1.5)",
    "a write through .data, then add_": "x.data.fill_(1.5); x.add_(1)",
    "a write through detach(), then mul_": "x.detach().fill_(1.5); x.mul_(2)",
    "a write into an empty view of a view": "v = x[2:][..., None]; v[...] = 0.5",
    "a write into an empty reshape": "v = x[2:].reshape(3, 0); v.fill_(1)",
}


@pytest.mark.parametrize("case", VERSION_CASES)
def test_version_counters_count_every_write(case):
    """Each in-place op moves the version counter it writes, as eagerly: one through `.data`
    moves only .data's own (the two once lost the other's writes), one into an empty view
    still counts (it was once traced as a copy, not a view)."""
    namespace = {}
    exec(f"def body(x):\n    {VERSION_CASES[case]}\n    return x * 1", namespace)
    body = namespace["body"]
    x_fg, x_t = fg.ones(2, 3), torch.ones(2, 3)
    got, want = fg.compile(body)(x_fg), body(x_t)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(x_fg.numpy(), x_t.numpy())
    assert x_fg._version == x_t._version


# Two tensors from outside the call over one memory where neither is the other's view: a
# detach() or .data of a view (torch's has no _base), made before the call or inside it,
# beside its base or another view. A write through one is read through the others, and
# counts only on the counter of the tensor written (these once read the old memory).
SHARED_MEMORY_CASES = {
    "x[0].detach() written, x read": ("A = X[0].detach(); B = X", "a.fill_(7.0); r = b * 1"),
    "x written, x[0].detach() read": ("A = X; B = X[0].detach()", "a.fill_(7.0); r = b * 1"),
    "x[1].data written, x.T read": ("A = X[1].data; B = X.T", "a.zero_(); r = b * 1"),
    "x[1].detach() written, x[:, 1].detach() read before and after": (
        "A = X[1].detach(); B = X[:, 1].detach()", "r1 = b * 1; a.zero_(); r = b * 1 + r1"),
    "detach of the view argument written, the base read": ("A = X.T; B = X", "a.detach().mul_(2.0); r = b * 1"),
    ".data of the view argument written, another view read": ("A = X.T; B = X[0]", "a.data.mul_(2.0); r = b * 1"),
    "detach of one view argument written, another read before and after": (
        "A = X.T; B = X[0]", "r0 = b * 1; a.detach().mul_(2.0); r = b * 1 + r0"),
    "a view's detach written with history, the base read": (
        "A = X[0].detach(); B = X", "a.mul_(W); r = b * 1 + a.sum()"),
    "the base written after the detach's own write": (
        "A = X[0].detach(); B = X", "a.mul_(W); b.add_(1.0); r = a * 1"),
}


@pytest.mark.parametrize("case", SHARED_MEMORY_CASES)
def test_writes_reach_other_tensors_over_a_views_memory(case):
    setup, body = SHARED_MEMORY_CASES[case]

    def run(lib, compiled):
        namespace = {"L": lib}
        exec("X = L.arange(6.0).reshape(2, 3); W = L.tensor([1.5, -2.0, 0.5], requires_grad=True); " + setup,
             namespace)
        W = namespace["W"]

        def f(a, b):
            local = {"a": a, "b": b, "W": W}
            exec(body, local)
            return local["r"]
        out = (fg.compile(f) if compiled else f)(namespace["A"], namespace["B"])
        if out.requires_grad:
            out.sum().backward()
        tensors = [out, namespace["X"], namespace["A"], namespace["B"]]
        return ([t.detach().numpy().copy() for t in tensors], [t._version for t in tensors[1:]],
                None if W.grad is None else W.grad.numpy().copy())

    got, want = run(fg, True), run(torch, False)
    for g, w in zip(got[0], want[0]):
        np.testing.assert_array_equal(g, w)
    assert got[1] == want[1]
    if want[2] is None:
        assert got[2] is None
    else:
        np.testing.assert_allclose(got[2], want[2])


@pytest.mark.parametrize("write", ["a.clamp_(max=0.0)", "a.add_(1.0)", "a.mul_(a)", "a[...] = 2.0"])
def test_a_write_through_an_empty_expand(write):
    """An expand with a size-0 dim has no element twice: torch writes it (a no-op that bumps the
    version); inside fg.compile the write back through the expand raised torch's overlap error
    (alias-fuzz 11787)."""
    def run(lib, compiled):
        x = lib.tensor([[-0.25, 1.25, 0.25]])
        a = x[1:].unsqueeze(0).expand(3, 0, 3)

        def f(a):
            exec(write, {"a": a})
            return a * 1
        out = (fg.compile(f) if compiled else f)(a)
        return tuple(out.shape), x._version, a._version, x.numpy().tolist()
    assert run(fg, True) == run(torch, False)
    assert run(fg, False) == run(torch, False)
