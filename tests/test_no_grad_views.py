"""Views and autograd history, as torch: views made under no_grad of a tensor that requires
grad require grad, are leaves with no gradient of their own (their edges lead nowhere), and an
in-place op on one (or on a view of one) with grad enabled raises torch's error, eagerly and
inside fg.compile; a view made before its base gains history in place has that history too."""
from __future__ import annotations

import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle for views made under no_grad")


def _error(fn):
    try:
        fn()
    except Exception as e:          # noqa: BLE001 - the class and text are what is compared
        return type(e).__name__, str(e)
    return "ok"


def _observe(lib, x):
    """What a user sees of views of x made under no_grad (x: [3, 3], requires grad)."""
    seen = []
    with lib.no_grad():
        v = x[0:2]
    seen.append(("flags", v.requires_grad, v.is_leaf, v.grad_fn is None))
    y = v * 2
    seen.append(("use", y.requires_grad, [n is None for n, _ in y.grad_fn.next_functions]))
    seen.append(("v.mul_", _error(lambda: v.mul_(2))))
    seen.append(("v[0] =", _error(lambda: v.__setitem__(0, 5.0))))
    seen.append(("v[0:1].add_", _error(lambda: v[0:1].add_(1))))
    seen.append(("v.t().add_", _error(lambda: v.t().add_(1))))
    with lib.no_grad():
        w = v[0:1]
        d = x.detach()[0:2]
        v.mul_(3)                    # allowed under no_grad
    seen.append(("nested", w.requires_grad, d.requires_grad))
    # written since (under no_grad): torch will not regenerate their history
    seen.append(("after a write", _error(lambda: w.is_leaf), _error(lambda: v.grad_fn), _error(lambda: v * 2)))
    # an in-place op on one with grad enabled names the view as made (not its regenerated history)
    seen.append(("in place after a write", _error(lambda: v.add_(1)), _error(lambda: w.add_(1))))
    z = x * 1
    with lib.no_grad():
        u = z[0:2]
    seen.append(("of a non-leaf", u.requires_grad, u.is_leaf, u.grad_fn is None))
    loss = (y * y).sum() + (u * 3).sum() + (x * x).sum()
    return seen, loss


def _run(lib, compiled):
    x = lib.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]], requires_grad=True)
    fn = (lambda t: _observe(lib, t))
    seen, loss = (fg.compile(fn) if compiled else fn)(x)
    loss.backward()
    seen.append(("grads", x.grad.tolist(), round(loss.item(), 4)))
    return seen


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_views_made_under_no_grad_behave_as_torchs(compiled):
    want = _run(torch, False)
    got = _run(fg, compiled)
    for g, w in zip(got, want):
        assert g == w


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_a_returned_view_made_under_no_grad_is_a_leaf_without_gradient(compiled):
    def f(lib):
        def g(x):
            with lib.no_grad():
                v = x[0:2]
            return v, (v * 2).sum()
        return g
    results = {}
    for lib in (torch, fg):
        x = lib.ones(3, requires_grad=True)
        run = fg.compile(f(fg)) if lib is fg and compiled else f(lib)
        v, s = run(x)
        s.backward()
        results[lib] = (v.requires_grad, v.is_leaf, v.grad_fn is None, v.grad, x.grad,
                        _error(lambda: v.add_(1))[1][:40])
    assert results[fg] == results[torch]


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_a_view_of_a_leaf_view_follows_the_base_that_does_not_require_grad(compiled):
    """x = arange(9.).reshape(3, 3).requires_grad_() is a view of a base without grad: torch's
    view of x made under no_grad does not require grad."""
    def f(lib):
        def g(x):
            with lib.no_grad():
                v = x[0:2]
            y = v * 2
            return v.requires_grad, v.is_leaf, y.requires_grad
        return g
    results = {}
    for lib in (torch, fg):
        x = lib.arange(9.0).reshape(3, 3).requires_grad_()
        results[lib] = (fg.compile(f(fg)) if lib is fg and compiled else f(lib))(x)
    assert results[fg] == results[torch]


# ---------------------------------------------------------------------- a base that gains history
def _view_then_base_gains_history(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = lib.zeros(2)
    v, w, u = y[:], y[0], y[1:]
    y.add_(x)                      # y gains history in place: its views have it too (regenerated)
    flags = (u.is_leaf, w.requires_grad, v.requires_grad)
    s = (v * v).sum() + w * 3
    s.backward()
    return flags, s.requires_grad, type(v.grad_fn).__name__, x.grad.tolist()


def test_a_view_made_before_its_base_gains_history_requires_grad():
    assert _view_then_base_gains_history(fg) == _view_then_base_gains_history(torch)


@pytest.mark.parametrize("view", ["x.t()", "x[0]", "x.view(4)", "x[:, 1:]"])
def test_a_view_of_a_leaf_written_under_no_grad_gets_torchs_regenerated_node(view):
    """After an optimizer-style write to the leaf (under no_grad), torch regenerates the view's
    grad_fn as AsStridedBackward0 leading to the leaf; the gradient is unchanged. (A view made
    by several view ops is regenerated here as that chain, its last node AsStridedBackward0;
    torch makes one AsStridedBackward0 straight from the base.)"""
    def run(lib):
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        v = eval(view, {"x": x})
        before = type(v.grad_fn).__name__
        with lib.no_grad():
            x.mul_(2)
        after = type(v.grad_fn).__name__
        nxt = [type(n).__name__ for n, _ in v.grad_fn.next_functions]
        (v * v).sum().backward()
        return before, after, nxt, x.grad.tolist()
    assert run(fg) == run(torch)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("through_view", [False, True], ids=["tensor", "view"])
def test_an_in_place_op_reading_its_own_output_makes_backward_raise(through_view, compiled):
    """t.mul_(t): the other operand is saved as t, which the op itself then writes; torch's
    backward raises ("output 0 of AsStrided" through a view), and so does fusegrad's."""
    def body(x):
        y = x * 1
        t = y[:] if through_view else y
        t.mul_(t)
        return t.sum()
    results = {}
    for lib in (torch, fg):
        x = lib.ones(2, requires_grad=True)
        run = fg.compile(body) if lib is fg and compiled else body
        results[lib] = _error(lambda: run(x).backward())
    assert results[fg] == results[torch]


@pytest.mark.parametrize("write", [True, False], ids=["written", "not written"])
def test_a_node_whose_gradient_leads_nowhere_still_checks_what_it_saved(write):
    """relu of a view made under no_grad saves its result, and its gradient leads nowhere (the
    view's edge is None). torch's backward() still runs that node: a write of the result
    makes it raise the version error, and a second backward meets a freed graph (fusegrad
    skipped the node: no error, and a second backward ran)."""
    seen = []
    for lib in (torch, fg):
        x = lib.tensor([[-0.25, -1.0, 0.5], [1.5, -1.5, -1.25]], requires_grad=True)
        y = x * 1.5
        with lib.no_grad():
            v = y.T
        r = v.relu()
        if write:
            r[::2] = 3.0
        seen.append((_error(lambda: (r * 3.0).sum().backward()), _error(lambda: (r * 3.0).sum().backward())))
    assert seen[1] == seen[0]


@pytest.mark.parametrize("written", ["view", "base"])
def test_a_no_grad_view_written_since_reads_grad_as_none_and_prints_invalid(written):
    """torch's `.grad` getter checks the node the tensor has (none), not one it would regenerate,
    so it returns None where grad_fn raises; its repr catches that error and prints
    `grad_fn=<Invalid>`. fusegrad's .grad raised, and its repr printed requires_grad=True."""
    def run(L):
        s0 = L.tensor([1.75, 0.75, 1.0], requires_grad=True)
        with L.no_grad():
            s1 = s0[None]
            (s1 if written == "view" else s0).add_(1.5)
        with pytest.raises(RuntimeError) as raised:
            s1.grad_fn
        return s1.grad, repr(s1), str(raised.value)
    assert run(fg) == run(torch)


def test_a_view_whose_base_was_written_prints_the_node_torch_regenerates():
    def run(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 1
        v = y[0:2]
        y.add_(1)
        return repr(v)
    assert run(fg) == run(torch) == "tensor([2., 3.], grad_fn=<AsStridedBackward0>)"


@pytest.mark.parametrize("write", ["view", "base", "slice view"])
def test_a_no_grad_view_made_before_a_compiled_call_and_written_there_raises_at_its_use(write):
    """A view made under no_grad before the call (of a tensor that requires grad), whose memory
    the call writes under no_grad (through the view, or its base): its next use with grad
    raises torch's error, in the call as eagerly (alias fuzz seed 14451)."""
    def run(lib, compiled):
        base = lib.tensor([0.0, -1.75, 0.75], requires_grad=True)
        with lib.no_grad():
            view = base[1:] if write == "slice view" else base[-3]

        def f(v, b):
            with lib.no_grad():
                if write == "base":
                    b.mul_(2)
                else:
                    v.zero_()
            return (v * 0.5).sum()
        return _error(lambda: (fg.compile(f) if compiled else f)(view, base))

    expected = run(torch, False)
    assert expected[0] == "RuntimeError"
    assert run(fg, False) == expected
    assert run(fg, True) == expected


@pytest.mark.parametrize("view", ["select", "transpose_select"])
@pytest.mark.parametrize("read_first_under_no_grad", [False, True])
@pytest.mark.parametrize("compiled", [False, True])
def test_a_view_of_a_view_made_under_no_grad_inherits_its_mark(view, read_first_under_no_grad, compiled):
    """torch's propagate_creation_meta: a view made with grad on of a view made under no_grad
    (of a base that needs no grad) is marked too, so once the base gains a history in place
    its use with grad raises; also when the call first read it under no_grad (alias fuzz 14969)."""
    def run(lib, compiled):
        leaf = lib.tensor([[[0.5, -1.0, -0.75]], [[1.0, -1.0, 2.0]]], requires_grad=True)
        base = leaf.data
        with lib.no_grad():
            inner = base[-2]
        outer = inner.t()[2] if view == "transpose_select" else inner[0]

        def f(b, v):
            b.copy_(leaf.sigmoid())
            if read_first_under_no_grad:
                with lib.no_grad():
                    v.sum()
            return (v * v).sum()
        return _error(lambda: (fg.compile(f) if compiled else f)(base, outer))

    expected = run(torch, False)
    assert expected[0] == "RuntimeError"
    assert run(fg, compiled) == expected


@pytest.mark.parametrize("compiled", [False, True])
def test_a_view_made_under_no_grad_inside_a_call_raises_once_its_base_gains_history(compiled):
    """A view made under no_grad of a value that needs no grad, inside the function (and a view
    of it made with grad on): after the value gains a history in place, using the view with
    grad raises torch's error, compiled as eagerly (alias fuzz 15149)."""
    def run(lib, compiled):
        x = lib.tensor([1.5, -0.25, 0.0, -1.0, 0.5, -0.75], requires_grad=True)

        def f(a):
            with lib.no_grad():
                m = lib.maximum(a, a.abs())
                wide = m.expand(2, 6)
            row = wide[1]
            m.mul_(a.sigmoid())
            return (row * row).sum()
        return _error(lambda: (fg.compile(f) if compiled else f)(x))

    expected = run(torch, False)
    assert expected[0] == "RuntimeError"
    assert run(fg, compiled) == expected


def _stale_through_a_no_grad_view(lib, kind, compiled):
    """backward() of a call reading a view made under no_grad (its edge leads nowhere), after
    an in-place write replaced a value a node inside saved: the outcome (or error text)."""
    s0 = lib.tensor([[2.0, 1.75], [0.75, -0.75]], requires_grad=True)
    w = lib.tensor([[3.0, 4.0]])
    with lib.no_grad():
        s1 = s0.unsqueeze(1)

    def f(a0, w):
        if kind == "relu-copy":             # relu's saved result written over by a copy_
            v = a0.relu()
            v.copy_(w * 2)
            return v.tanh().sum()
        if kind == "saved-input":           # sin saves u; u is another node's result
            u = a0 * 1.5
            v = u.sin()
            u.copy_(a0 * 3)
            return v.sum() + u.sum()
        if kind == "idle-input":            # mul saved w, but its node's edges lead nowhere
            v = a0 * w
            w.add_(1)
            return v.sum()
        v = a0.exp()                        # "idle-output": an idle node checks its saved result
        v.add_(1)
        return v.sum()
    out = (fg.compile(f) if compiled else f)(s1, w)
    return _error(out.backward)


@pytest.mark.parametrize("kind", ["relu-copy", "saved-input", "idle-input", "idle-output"])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_a_backward_through_a_no_grad_view_checks_what_torchs_nodes_check(kind, compiled):
    """torch's backward() runs every node it reaches: one whose edges all lead nowhere is idle
    and checks only the outputs it saved; the others check all they saved. A compiled call's
    node checks the same (it used to check nothing when its only input was such a view)."""
    want = _stale_through_a_no_grad_view(torch, kind, False)
    assert _stale_through_a_no_grad_view(fg, kind, compiled) == want
    assert (want == "ok") == (kind == "idle-input")
