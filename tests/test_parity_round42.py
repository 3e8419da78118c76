"""Round 42 of torch parity (alias fuzzer, seed 92552): an in-place op whose *operand* is a
view whose base gained a history after the view was made (`t = s[:, 0]; s.add_(w);
c.sub_(t)`). torch regenerates the view's history when the op reads it, so the write
records a node and the gradient reaches w through it. fusegrad's in-place dispatch read the
operand's stale requires_grad (False), recorded nothing, and a backward through `c` found no
history (or, beside another path, silently lost this one's share of the gradient)."""
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")

STATEMENTS = ["c[0] = t", "c.addcmul_(t, t)", "c.lerp_(t, 0.5)", "c.clamp_(min=t)", "c.copy_(t)", "c.sub_(t)",
              "c.mul_(t)", "c.pow_(t)", "c.add_(t, alpha=-0.25)"]


def _run(L, statement: str, compiled: bool):
    w = L.tensor([[0.75, -0.75, -1.5], [-1.0, 1.75, 0.0]], requires_grad=True)

    def f(w, s):
        t = s[:, 0]
        s.add_(w)
        c = L.ones(3, 2) * 2
        exec(statement, {"c": c, "t": t})
        return (t * -0.25).sum() + (c * 1.5).sum()
    if compiled:
        f = fg.compile(f)
    f(w, L.tensor([-1.75, 1.25, -0.5, -0.25, 1.0, -1.5]).reshape(2, 3)).backward()
    return w.grad.tolist()


@pytest.mark.parametrize("statement", STATEMENTS)
def test_in_place_op_reading_a_view_whose_base_gained_history(statement):
    assert _run(fg, statement, False) == _run(torch, statement, False)


def test_compiled_in_place_op_reading_such_a_view():
    """(fg.compile traces the same regeneration: one statement, each compiles kernels)"""
    assert _run(fg, "c.sub_(t)", True) == _run(torch, "c.sub_(t)", False)


def _data_write_then(L, after: str, compiled: bool, view: bool = False):
    """A call that saves its argument (a * a), then writes it through `.data` (no version
    bump: the saved tensor is the memory, read with its new value); `after` runs after it.
    `view`: the argument is a view of a leaf (a caller's non-leaf), not the leaf."""
    leaf = L.tensor([[-1.75, -1.75, -2.0], [-0.75, 0.5, 1.25]], requires_grad=True) if view else \
        L.tensor([-1.75, 0.5], requires_grad=True)
    a = leaf.t()[1] if view else leaf

    def f(x):
        y = x * x
        x.data.sub_(1.0)
        return (y * y).sum()
    out = (fg.compile(f) if compiled else f)(a)
    with L.no_grad():
        exec(after, {"a": a})
    try:
        out.backward()
    except RuntimeError as error:
        return "raises", str(error)[:80]
    return leaf.grad.tolist()


@pytest.mark.parametrize("view", [False, True], ids=["leaf", "view"])
@pytest.mark.parametrize("after", ["pass", "a.add_(1.5)", "a.data.add_(1.5)"])
def test_compiled_saved_argument_written_through_data_keeps_its_version_check(after, view):
    """(alias fuzzer, seed 92554) The compiled backward saved a copy of the memory's new value,
    so a write of the argument after the call went unchecked; it now saves the memory, checked
    by the argument's counter, which the `.data` writes never move (a.data.add_ passes)."""
    assert _data_write_then(fg, after, True, view) == _data_write_then(torch, after, False, view)


def _no_grad_view_then_write(L, writer: str, compiled: bool):
    """A view made under no_grad (v) and a view of it made in the call (t); then the memory
    written with grad enabled through a detach() of v's base or of v itself, then t used."""
    s = L.tensor([[-1.5, 0.25, 1.0], [-0.75, -1.0, 0.0], [0.0, 0.5, -0.75]], requires_grad=True)
    with L.no_grad():
        v = s.view(3, 3)

    def f(a0, a1):
        t = a0.transpose(0, 1)
        w = a1.detach() if writer == "base" else a0.detach()
        w.copy_(a1.sum())
        return t.tanh().sum()
    try:
        return (fg.compile(f) if compiled else f)(v, s).item()
    except RuntimeError as error:
        return "raises", str(error)


@pytest.mark.parametrize("writer", ["base", "view"])
def test_compiled_write_through_a_detach_makes_views_of_no_grad_views_raise(writer):
    """(alias fuzzer, seed 93180) torch raises where the call uses t: one counter, written with
    grad enabled, and t's history cannot be regenerated. The trace marked only the views of
    the written tensor itself, not those of other tensors from outside over that memory."""
    assert _no_grad_view_then_write(fg, writer, True) == _no_grad_view_then_write(torch, writer, False)


def _no_grad_view_written_under_no_grad(L, compiled: bool):
    s = L.tensor([0.25, 1.5, -1.0, 0.25, -1.75, 2.0], requires_grad=True)
    with L.no_grad():
        v = s[1:]

    def f(a0, a1):
        t = a1.view(1, 6)
        u = s.unsqueeze(1)
        with L.no_grad():
            u[:, ::2] = u * 2           # the base written (v is re-derived from it)
            a0.div_(3.0)                # then v itself
        return (-t).t()[3].sum()
    (fg.compile(f) if compiled else f)(v, s).backward()
    try:
        return v.is_leaf
    except RuntimeError as error:
        return "raises", str(error)


def test_compiled_no_grad_view_written_under_no_grad_gains_no_history():
    """(alias fuzzer, seed 92623) The call made v an output of its node (v's value, re-derived
    from its written base, had a producer), so reading v's history afterwards raised the text
    for a custom Function's output; torch's is the plain no_grad-view text."""
    assert _no_grad_view_written_under_no_grad(fg, True) == _no_grad_view_written_under_no_grad(torch, False)


def _saved_view_then_data_write(L, compiled: bool):
    s = L.tensor([[1.75, 1.25], [-1.25, -1.25], [0.75, 1.5]], requires_grad=True)
    data = s.data
    rows = data[::2]

    def f(row, d, whole):
        d.unsqueeze(1)
        e = row.expand(2, 2)            # saved by e * e: a view of s's memory on s's counter
        return (whole.sum() + (e * e).sum(),)
    out = (fg.compile(f) if compiled else f)(s[-1], data, s)
    rows.mul_(0.5)                      # the memory changes, s.data's counter moves, s's does not
    try:
        out[0].backward()
    except RuntimeError as error:
        return "raises", str(error)[:80]
    return s.grad.tolist()


def test_compiled_saved_view_is_guarded_by_its_own_counter_not_datas():
    """(alias fuzzer, seed 94403) The check of the saved expand took the first read tensor over
    its memory, `s.data` (one NumPy array with s, another counter), so a write through s.data
    after the call raised; torch's saved tensor is a view of s[-1], whose counter did not move,
    and its backward reads the new values."""
    assert _saved_view_then_data_write(fg, True) == _saved_view_then_data_write(torch, False)
