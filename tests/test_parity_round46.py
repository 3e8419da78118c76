"""Round 46 of torch parity (alias fuzzer, seed 101341): which of two changed saved values a
compiled call's backward raises for, where one changed inside the call and one after it,
and the one changed after it was saved by a node whose saved memory a `.data` write in the
call rewrote. torch's engine unpacks the saved tensors node by node from the last: the first
it meets that changed raises. The compiled backward orders the two kinds of check by where
it meets their nodes (Trace.checked_at); the value read through the `.data` write (what the
node's VJP reads, Trace.vjp_reads) had no position, so the check of the value changed in
the call raised first. And (seed 99295) a view made under no_grad, read in the call, then
written through a detach() of it: the write's counter owner was the trace's stand-in for
the view, so the view was not marked rebased, and its next use with grad raised nothing. And (seed 102912) a view from outside the call whose
memory a detach() of it read first, used after the call wrote its base with a history: it
kept the memory's value without that history (no gradient)."""
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")

from parity_support import runtime_error as _error, without_node_name as _version_part  # noqa: E402


def _assert_as_torch(case, *args):
    """case(fg, compiled, *args), eager and compiled, gives what case(torch, False, *args) does."""
    want = case(torch, False, *args)
    for compiled in (False, True):
        assert case(fg, compiled, *args) == want, compiled


def _written_after_then_backward(L, out, x0, s, after: str):
    """After the call, x0 written through its .data (`after` "data") or in place; then out's
    backward: its error, or s.grad (rounded)."""
    with L.no_grad():
        if after == "data":
            x0.data.add_(1.0)
        else:
            x0.mul_(2.0)
    error = _error(out.backward)
    return error if error is not None else [round(v, 4) for row in s.grad.tolist() for v in row]


def _seed_101341(L, compiled: bool, data_write: bool, write_after: bool):
    x = L.tensor([-0.25, 1.5, -0.75], requires_grad=True)
    c = L.tensor([1.0, -2.0, 0.5], requires_grad=True) * 1

    def f(x):
        c.div_(x.abs() + 1)             # AbsBackward0 saves x (version 0)
        t = c.data
        with L.no_grad():
            x.clamp_(-0.5, 1.0)         # x is at version 1: the abs's saved x is stale
        y = c * x                       # MulBackward0 saves c (version 1) and x (version 1)
        if data_write:
            t.copy_(x * x)              # rewrites c's memory, bumps no counter
        return y.sum()
    out = (fg.compile(f) if compiled else f)(x)
    if write_after:
        with L.no_grad():
            c.mul_(-1.0)                # c is at version 2: the mul's saved c changed
    return lambda: (out.backward(), x.grad)


@pytest.mark.parametrize("data_write", [True, False], ids=["memory-rewritten-by-data", "no-data-write"])
@pytest.mark.parametrize("write_after", [True, False], ids=["written-after", "not-written-after"])
def test_the_first_changed_saved_value_met_raises_as_torch(data_write, write_after):
    want = _error(_seed_101341(torch, False, data_write, write_after))
    assert want is not None
    assert ("is at version 2; expected version 1" in want) == write_after, want
    for compiled in (False, True):
        got = _error(_seed_101341(fg, compiled, data_write, write_after))
        assert _version_part(got) == _version_part(want), (compiled, got, want)


def _seed_99295(L, compiled: bool, read_first: str):
    # a0 is a view made under no_grad of a leaf; the call reads it, then writes its memory
    # through a detach() of it (one version counter): its next use with grad raises, as
    # torch's regeneration of its history does. The writes before the error stay.
    s0 = L.tensor([[1.5, 0.0], [0.5, -1.75]], requires_grad=True)
    with L.no_grad():
        a0 = s0.T

    def f(a0):
        t1 = a0.detach()
        if read_first == "under-no_grad":
            with L.no_grad():
                t1.div_((a0 * 2).abs() + 1)
        elif read_first == "with-grad":
            t1.div_((a0 * 2).abs() + 1)
        else:
            t1.mul_(2.0)
        t1.add_(1.0)
        return a0.sum()
    error = _error(lambda: (fg.compile(f) if compiled else f)(a0))
    return error, sum(s0.tolist(), []), s0._version


@pytest.mark.parametrize("read_first", ["under-no_grad", "with-grad", "not-read"])
def test_a_no_grad_view_read_then_written_through_its_detach_raises_at_its_next_use(read_first):
    want = _seed_99295(torch, False, read_first)
    assert want[0].startswith("A view was created in no_grad mode"), want
    for compiled in (False, True):
        got = _seed_99295(fg, compiled, read_first)
        assert got[0] == want[0] and got[2] == want[2], (compiled, got, want)
        assert got[1] == pytest.approx(want[1], abs=1e-6), (compiled, got, want)


def _seed_102912(L, compiled: bool, view: str, detach_read: bool):
    # s4, a view made before the call of s3 (no grad then); the call reads s4's memory first
    # through a detach() of it (a stand-in for the view lifts it), then writes s3 with a value
    # that has a history: s4's next use is the view regenerated with that history, as torch's.
    s0 = L.tensor([[[-1.25, 0.0, 0.25]], [[-2.0, 0.25, 0.5]]], requires_grad=True)
    s3 = L.tensor([[-1.75, -1.0, -2.0], [1.25, -1.25, 0.5], [-0.75, 0.5, -0.5]])
    s4 = s3.expand(2, 3, 3) if view == "expand" else s3[1:]

    def f(a0, a1):
        t1 = s4.detach()
        if detach_read:
            t1 = t1 * 1.0
        a1.mul_(a0.sum())
        return t1.sum() + (s4 * 3.0).sum()
    out = (fg.compile(f) if compiled else f)(s0[::2], s3)
    assert out.requires_grad
    out.backward()
    return s0.grad.tolist(), s4.requires_grad, s4.tolist()


@pytest.mark.parametrize("view", ["expand", "slice"])
@pytest.mark.parametrize("detach_read", [True, False], ids=["detach-read-before-the-write", "detach-read-after"])
def test_a_view_read_first_through_its_detach_takes_its_bases_new_history(view, detach_read):
    _assert_as_torch(_seed_102912, view, detach_read)


def _seed_106494(L, compiled: bool, body: str, write: str):
    # a leaf whose memory the call writes through its .data or a detach() before its first
    # read, then writes under no_grad after an op saved (or only used) it
    s0 = L.tensor([-1.5, -0.5, -0.25, 0.5], requires_grad=True)

    def f(a0):
        t1 = a0.data
        if write == "data":
            t1.mul_(2.0)
        elif write == "detach":
            a0.detach().mul_(2.0)
        if body == "saved-then-filled":
            t2 = a0 * a0
            with L.no_grad():
                a0.fill_(0.5)
            return t2.sum()
        if body == "used-then-written":
            t2 = a0 * 3.0
            with L.no_grad():
                a0.add_(1.0)
            return t2.sum() + (a0 * 2.0).sum()
        t2 = a0 * 3.0                   # "two-data-writes"
        t1.add_(1.0)
        return t2.sum() + (a0 * a0).sum()
    out = (fg.compile(f) if compiled else f)(s0)
    error = _error(out.backward)
    if error is not None:
        return error
    return round(out.item(), 4), s0.grad.tolist(), s0.tolist(), s0._version


@pytest.mark.parametrize("body", ["saved-then-filled", "used-then-written", "two-data-writes"])
@pytest.mark.parametrize("write", ["data", "detach", "none"])
def test_a_leaf_read_first_after_a_write_of_its_memory_keeps_every_value_it_held(body, write):
    # (alias fuzzer seed 106494: after x.data.mul_(2), x * x, then x.fill_ under no_grad, the
    # compiled backward had no gradient for x and raised nothing where torch raises)
    _assert_as_torch(_seed_106494, body, write)


def _data_write_of_an_outside_view(L, compiled: bool, view: str, saved: str):
    # x, a view made before the call of a non-leaf; a view of x made in the call is saved, then
    # x's memory is written through x.data (no version bump): torch's saved tensors are that
    # memory, so the backward reads the new values through the view too
    s = L.tensor([[-1.5, -0.5], [0.25, 0.5]], requires_grad=True)
    base = s * 1
    x0 = base[0:2] if view == "slice" else base.view(2, 2)

    def f(x):
        t = x.t() * x if saved == "transpose" else x[1] * x[0]
        with L.no_grad():
            x.data.mul_(2.0)
        return t.sum()
    out = (fg.compile(f) if compiled else f)(x0)
    out.backward()
    return s.grad.tolist()


@pytest.mark.parametrize("view", ["slice", "view"])
@pytest.mark.parametrize("saved", ["transpose", "rows"])
def test_a_data_write_of_a_view_from_outside_reaches_the_views_of_it_saved_in_the_call(view, saved):
    # (found by an enumeration of writes around a saved use: the compiled backward read x.t()'s
    # old values and x's new ones, a silently wrong gradient)
    _assert_as_torch(_data_write_of_an_outside_view, view, saved)


def _saved_views_then_data_writes(L, compiled: bool, target: str, use: str, write: str, after: str):
    # views of x saved in the call (x.t(), x[0]), then x's memory written through x.data in the
    # call (no bump: the backward reads the new values), then after it through x.data again
    # (read too) or in place (a version error, as for x itself)
    s = L.tensor([[-1.5, -0.5], [0.25, 0.5]], requires_grad=True)
    x0 = s if target == "leaf" else s * 1

    def f(x):
        t = {"matmul": lambda: x.t() @ x, "row": lambda: x[0] * x, "exp": lambda: x.t().exp() * x.t()}[use]()
        with L.no_grad():
            if write == "whole":
                x.data.mul_(2.0)
            else:
                x.data[1] = 3.0
        return t.sum()
    return _written_after_then_backward(L, (fg.compile(f) if compiled else f)(x0), x0, s, after)


@pytest.mark.parametrize("target", ["leaf", "nonleaf"])
@pytest.mark.parametrize("use", ["matmul", "row", "exp"])
@pytest.mark.parametrize("write", ["whole", "a-row"])
@pytest.mark.parametrize("after", ["data", "in-place"])
def test_saved_views_of_memory_a_data_write_rewrote_are_that_memory_after_the_call(target, use, write, after):
    # (found by an enumeration of writes around a saved use: the views re-derived from the
    # memory's new value were saved as arrays of their own, so a later .data write was not
    # read (a wrong gradient) and a later in-place write not checked (no error))
    _assert_as_torch(_saved_views_then_data_writes, target, use, write, after)


def _view_made_after_a_data_write(L, compiled: bool, write: str, after: str):
    # x (a non-leaf from outside) written through x.data in the call, then x[0] * x saves x and
    # its view x[0], both that memory; after the call x.data is written again (read by the
    # backward) or x in place (its version error)
    s = L.tensor([[-1.5, -0.5], [0.25, 0.5]], requires_grad=True)
    x0 = s * 1

    def f(x):
        if write == "a-row":
            x.data[0].fill_(0.25)
        else:
            x.data.mul_(2.0)
        return (x[0] * x).sum()
    return _written_after_then_backward(L, (fg.compile(f) if compiled else f)(x0), x0, s, after)


@pytest.mark.parametrize("write", ["a-row", "whole"])
@pytest.mark.parametrize("after", ["data", "in-place"])
def test_a_view_made_after_a_data_write_is_saved_as_the_memory_the_call_leaves(write, after):
    _assert_as_torch(_view_made_after_a_data_write, write, after)


def _overlap_after_a_write(L, compiled: bool, target: str, written_first: bool):
    # x.detach().t().add_(x.detach()): the write partly overlaps what it reads (torch refuses
    # it); after the call wrote x, its detach() holds a value of the call, not x's array, and
    # the check looked at no memory (the earlier write stays, as torch's)
    s = L.tensor([[-1.5, -0.5], [0.25, 0.5]], requires_grad=True)
    x0 = (s * 1).view(2, 2) if target == "view" else s * 1

    def f(x):
        if written_first:
            x.detach().mul_(2.0)
        t = x.t() @ x
        with L.no_grad():
            x.detach().t().add_(x.detach())
        return t.sum()
    error = _error(lambda: (fg.compile(f) if compiled else f)(x0))
    return error, x0.tolist(), x0._version


@pytest.mark.parametrize("target", ["view", "nonleaf"])
@pytest.mark.parametrize("written_first", [True, False], ids=["written-first", "not-written"])
def test_a_partly_overlapping_write_through_detaches_is_refused_after_a_write(target, written_first):
    want = _overlap_after_a_write(torch, False, target, written_first)
    assert want[0].startswith("unsupported operation: some elements of the input tensor")
    for compiled in (False, True):
        assert _overlap_after_a_write(fg, compiled, target, written_first) == want, compiled


def _no_grad_view_saved_by_a_one_input_op(L, compiled: bool, op: str, written: bool):
    # x, a view made under no_grad of a leaf (its edge leads nowhere): torch's node for an op
    # with one differentiable input guards no saved input (gen_variable_type's guard_for), so
    # x.pow(2) saves x, and its backward unpacks it: after x changed, torch's rebased-view
    # error; `x * x` (two inputs, each guarded) saved nothing and raises nothing
    s = L.tensor([[-1.5, -0.5], [0.25, 0.5]], requires_grad=True)
    with L.no_grad():
        x = s[0:2]

    def f(x):
        return {"pow": lambda: x.pow(2), "abs": lambda: x.abs(), "square": lambda: x * x,
                "sigmoid": lambda: x.sigmoid()}[op]().sum()
    out = (fg.compile(f) if compiled else f)(x)
    if written:
        with L.no_grad():
            x.mul_(2.0)
    return _error(out.backward), s.grad


@pytest.mark.parametrize("op", ["pow", "abs", "square", "sigmoid"])
@pytest.mark.parametrize("written", [True, False], ids=["written-after", "not-written"])
def test_a_one_input_op_saves_a_no_grad_view_as_torch(op, written):
    want = _no_grad_view_saved_by_a_one_input_op(torch, False, op, written)
    assert (want[0] is not None) == (written and op in ("pow", "abs")), want
    for compiled in (False, True):
        assert _no_grad_view_saved_by_a_one_input_op(fg, compiled, op, written) == want, compiled
