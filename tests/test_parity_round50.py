"""Round 50 of torch parity: a view of a view made under no_grad, made with grad on (`s3 =
s2.t()` for `s2 = s0.T` made under no_grad of a leaf s0 that requires grad), given to a compiled
call. It has a node of its own (TBackward0, whose edge leads nowhere), which torch's engine
runs: the call's nodes save what its gradient reads (`s3 @ s2` saves s2) and check it, so a
write of s0's memory after the call makes the backward raise torch's rebased-view error. The
call's node took s3's edge for one leading nowhere, as s2's (it looked at the view's no_grad
mark alone): its backward ran nothing and raised nothing (alias fuzzer seed 127158). Fixed in
runtime/compile.py (_boundary_edge, _leads_nowhere). Later sections: one node's saved values,
one stale from a write in the call and one changed after it, raise in torch's unpacking order
(seed 129150); a copy_ from a view of a `.data` of the tensor written (seed 129199); a view of
a `.data` of a view, beside its memory's base (seed 200110: a silently wrong value compiled); the
order of setitem's checks, the written part before the value (seed 200411). Seeds from 200000
draw parts of split/chunk/unbind too (test_alias_fuzz.PARTS_FROM)."""
import itertools

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")

USES = {
    "mm-other-view": lambda a0, a2: (a2 @ a0).tanh().sum(),      # saves a0 (s2) for a2's gradient
    "mm-itself": lambda a0, a2: (a2 @ a2.t()).sum(),
    "mul-view": lambda a0, a2: (a2 * a0.t()).sum(),
    "alone": lambda a0, a2: (a2 * 2).exp().sum(),
}

AFTER = {
    "nothing": lambda s0, s1: None,
    "base-under-no-grad": lambda s0, s1: s0.mul_(2),
    "other-view-under-no-grad": lambda s0, s1: s1.add_(1.5),
}


def _run(L, use, after, compiled):
    s0 = L.tensor([[0.5, 0.0, -1.75], [-1.0, 2.0, 0.5]], requires_grad=True)
    s1 = s0[:, -2]
    with L.no_grad():
        s2 = s0.T
    s3 = s2.t()
    f = USES[use]
    if compiled:
        f = fg.compile(f)
    out = f(s2, s3)
    edges = sorted("None" if n is None else type(n).__name__ for n, _ in _node_edges(out.grad_fn))
    prehook_calls = []
    s3.grad_fn.register_prehook(lambda grads: prehook_calls.append([g.tolist() for g in grads]))
    with L.no_grad():
        AFTER[after](s0, s1)
    try:
        out.backward()
    except RuntimeError as error:
        return edges, ("error", str(error)), prehook_calls
    return edges, ("grad", None if s0.grad is None else s0.grad.tolist()), prehook_calls


def _node_edges(node):
    """The edges of the node that reads the call's inputs: below the sums and tanh/exp."""
    while node is not None and type(node).__name__ in ("SumBackward0", "TanhBackward0", "ExpBackward0"):
        node = node.next_functions[0][0]
    return node.next_functions


@pytest.mark.parametrize("use,after", list(itertools.product(USES, AFTER)))
def test_a_view_of_a_no_grad_view_keeps_its_node_in_a_compiled_call(use, after):
    expected = _run(torch, use, after, False)
    eager = _run(fg, use, after, False)
    compiled = _run(fg, use, after, True)
    for got in (eager, compiled):
        assert got[1] == expected[1]
        assert len(got[2]) == len(expected[2])      # (TBackward0 ran as often: its prehook's calls)
        for mine, theirs in zip(got[2], expected[2]):
            np.testing.assert_allclose(np.array(mine), np.array(theirs), rtol=1e-5, atol=1e-6)
    # (the compiled call's node lists each input it read once, where torch's nodes inside it differ)
    assert "TBackward0" in compiled[0] and "TBackward0" in expected[0]


def test_the_node_runs_and_gives_no_gradient_to_the_base():
    """No write after the call: TBackward0 runs (its prehook sees the gradient), s0 gets none."""
    for L, compiled in ((torch, False), (fg, False), (fg, True)):
        edges, result, calls = _run(L, "alone", "nothing", compiled)
        assert result == ("grad", None)
        np.testing.assert_allclose(np.array(calls[0][0]), 2 * np.exp(2 * np.array(
            [[0.5, -1.0], [0.0, 2.0], [-1.75, 0.5]]).T), rtol=1e-6)


# ------------------------------------------------------------------ seed 129150
def _mm_stale_and_changed_after(L, compiled):
    """`t1 @ a0` saves t1 (written in the call under no_grad: stale) and a0 (the caller's, written
    after the call): torch's MmBackward0 unpacks mat2 (a0) first, so a0's error is raised. The
    compiled node raised t1's: both met at one node, the after-call one raised only when met at
    a later node (Trace.checked_at now orders one node's values by its unpacking)."""
    c0 = L.tensor([[0.25, -0.25, 1.5], [0.25, 0.0, 0.0], [1.25, -1.5, -1.5]], requires_grad=True)
    x = L.tensor([[-1.5, 0.25], [-0.75, 0.25], [-0.25, 1.75]], requires_grad=True)

    def f(a0):
        t1 = c0.pow(3)
        t2 = t1 @ a0
        with L.no_grad():
            t1.fill_(3.0)
            t2.mul_(2)
        return t2.sum()
    if compiled:
        f = fg.compile(f)
    out = f(x)
    with L.no_grad():
        x.mul_(-1.0)
    with pytest.raises(RuntimeError) as info:
        out.backward()
    return str(info.value)


@pytest.mark.parametrize("compiled", [False, True])
def test_one_nodes_saved_values_raise_in_its_unpacking_order(compiled):
    text = _mm_stale_and_changed_after(fg, compiled)
    assert text == _mm_stale_and_changed_after(torch, False)
    assert "[torch.FloatTensor [3, 2]] is at version 1; expected version 0" in text


# ------------------------------------------------------------------ seed 129199
def _copy_from_a_view_of_data(L, compiled):
    """`c0.copy_(t1)` with t1 = a0[0, 2], a0 = c0.data given as an argument: t1 reads one
    element of the memory written, which torch refuses (partial overlap) before writing. In a
    trace the view of another tensor over that memory was not compared by memory: the copy went
    through (and the memory took it)."""
    s0 = L.tensor([[0.5, -0.75, 1.5]])

    def f(a0):
        t1 = a0[0, 2]
        s0.div_(s0.abs() + 1)
        s0.copy_(t1)
        return s0.sum()
    if compiled:
        f = fg.compile(f)
    with pytest.raises(RuntimeError) as info:
        f(s0.data)
    return str(info.value), s0.tolist(), s0._version


@pytest.mark.parametrize("compiled", [False, True])
def test_copy_from_a_view_of_the_same_memory_raises_before_writing(compiled):
    assert _copy_from_a_view_of_data(fg, compiled) == _copy_from_a_view_of_data(torch, False)


# ------------------------------------------------------------------ seed 200110
MAKERS = {"data-of-view": lambda s: s[1:2].data[:, 0:2], "detach-of-view": lambda s: s[1:2].detach()[:, 0:2],
          "data-then-view": lambda s: s.data[1, 0:2], "view": lambda s: s[1, 0:2]}
READS = {"data": lambda a: a.data, "detach": lambda a: a.detach(), "self": lambda a: a, "view": lambda a: a[0:1]}


def _view_of_detached_view(L, compiled, make, read, write_first):
    """A view of a `.data` (or detach()) of a view, `s[1:2].data[:, :2]`, given beside its memory's
    base, which the call writes: the view reads its part of the new memory. Compiled it was lifted
    from its own array, unlinked from the base (Trace._outside_view now links the detach()'s view
    first, Trace._origin_view): it read the memory as it came in, a silently wrong value."""
    s0 = L.tensor([[-0.75, 0.25, 1.0], [0.25, 2.0, -0.5]])
    s3 = MAKERS[make](s0)

    def f(a0, a1):
        if write_first:
            a0.mul_(3.0)
        t1 = READS[read](a1)
        a0.mul_(-1.5) if write_first else a0.mul_(3.0)
        return (t1 + t1).sum() + a1.sum()
    if compiled:
        f = fg.compile(f)
    return float(f(s0, s3)), s0.tolist(), s3.tolist()


@pytest.mark.parametrize("make,read,write_first", list(itertools.product(MAKERS, READS, (False, True))))
def test_a_view_of_a_detached_view_reads_its_base_writes(make, read, write_first):
    want = _view_of_detached_view(torch, False, make, read, write_first)
    assert _view_of_detached_view(fg, False, make, read, write_first) == want
    assert _view_of_detached_view(fg, True, make, read, write_first) == want


# ------------------------------------------------------------------ seed 200411
def _setitem_into_a_part(L, compiled, value_shape):
    """`t2[..., 0] = t1` with t2 a part of chunk and t1 a part of unbind whose memory was written
    under no_grad: torch's copy_to fills (a 0-d value) or copies (a value of the region's shape)
    and checks the written view first ("Output 0 of Select ..."); any other value it views first,
    which asks for its history (the rebased part raises). fusegrad fitted the value first."""
    s0 = L.tensor([-1.75, 2.0, 1.0, 0.75], requires_grad=True)
    s1 = s0.unsqueeze(-1)

    def f(a0):
        t1 = list(a0)[2] if value_shape == "0-d" else a0.unsqueeze(-1).chunk(2)[0][:, 0]
        with L.no_grad():
            t1.clamp_(min=0.25)
        t2 = s1.chunk(2, 0)[1]
        t2[..., 0] = t1 if value_shape != "broadcast" else t1[None]
        return s1.tanh().sum()
    if compiled:
        f = fg.compile(f)
    with pytest.raises(RuntimeError) as info:
        f(s0)
    return str(info.value)


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("value_shape", ["0-d", "region", "broadcast"])
def test_setitem_checks_the_written_part_before_the_value(value_shape, compiled):
    assert _setitem_into_a_part(fg, compiled, value_shape) == _setitem_into_a_part(torch, False, value_shape)


# ------------------------------------------------------------------ seed 134106
def _partial_idle_backward(L, compiled):
    """A compiled call on a view made under no_grad (its edge leads nowhere) returns a loss and a
    view of a value whose saved result it overwrote in place (`t1 = a.relu(); t3 = t1[..., None];
    t1.copy_(...)`); a backward from the loss alone reaches nothing the overwrite touched. The
    call's idle node checked what every output reaches (the engine did not say which outputs had
    a gradient): a version error torch does not raise."""
    s0 = L.tensor([[[-1.5, 0.25, -1.0]], [[-0.75, 0.5, 1.75]]], requires_grad=True)
    with L.no_grad():
        s1 = s0.expand(2, 3, 3)

    def f(a0):
        t1 = a0.relu()
        t3 = t1[..., None]
        t1.copy_(a0 * 2)
        return (a0 * a0).sum(), t3
    if compiled:
        f = fg.compile(f)
    out = f(s1)
    out[0].backward()
    return s0.grad is None, out[1].detach().numpy().tolist()


@pytest.mark.parametrize("compiled", [False, True])
def test_an_idle_compiled_node_checks_only_what_the_given_outputs_reach(compiled):
    assert _partial_idle_backward(fg, compiled) == _partial_idle_backward(torch, False)


# ------------------------------------------------------------------ from seed 203977
def _original_self_of_a_data_write(L, compiled, mul, add, write_after):
    """`t1 = a.data` written through a view of it (`t3.copy_`: the memory's new value, which the
    nodes that saved `a` read), then `t1.mul_(a.sum())`: mul_'s node saves t1's original self, a
    clone torch makes, which no write after the call reaches. Compiled, that value was checked on
    `a`'s counter (read_as_counter), so a write of a's memory after the call (through a view
    made under no_grad) raised a version error torch does not (Trace.overwritten)."""
    s0 = L.tensor([[-1.75, 1.5], [-0.25, 1.75], [-0.75, -0.75]], requires_grad=True)
    with L.no_grad():
        s4 = s0[0, 0]

    def f(a0):
        t1 = a0.data
        t3 = t1.unsqueeze(0)
        t3.copy_(a0[::2].sum())
        if mul:
            t1.mul_(a0.sum())
        if add:
            with L.no_grad():
                t1.add_(t1)
        return (t3 * t3).sum()
    if compiled:
        f = fg.compile(f)
    out = f(s0)
    if write_after:
        with L.no_grad():
            s4.mul_(2.0)
    out.backward()
    return s0.grad.tolist()


@pytest.mark.parametrize("mul,add,write_after", list(itertools.product((False, True), repeat=3)))
def test_an_in_place_ops_original_self_is_no_check_after_the_call(mul, add, write_after):
    want = _original_self_of_a_data_write(torch, False, mul, add, write_after)
    for compiled in (False, True):
        np.testing.assert_allclose(_original_self_of_a_data_write(fg, compiled, mul, add, write_after), want,
                                   rtol=1e-6)


# ------------------------------------------------------------------ seed 136030
def _data_saved_then_written_with_history(L, compiled, first):
    """`d * x` of `d = x.data` (passed in), then `d.add_(...)` with history: mul's node saved d,
    on d's own counter, which the write moves: torch's backward raises. Compiled, the memory's
    value d read was taken as x's (the memory's owner, whose counter the write leaves), so the
    backward ran on the new values: a silently wrong gradient (Trace._replaced)."""
    s0 = L.tensor([-0.75, 1.0, -1.5, 1.5, -0.5, -1.5], requires_grad=True)
    d = s0.data

    def f(x):
        t1 = d * x if first == "data" else x * d
        d.add_(t1 * 2)
        return d.sum()
    if compiled:
        f = fg.compile(f)
    out = f(s0)
    try:
        out.backward()
    except RuntimeError as error:
        return str(error).split("Hint")[0]
    return s0.grad.tolist()


@pytest.mark.parametrize("first", ["data", "leaf"])
@pytest.mark.parametrize("compiled", [False, True])
def test_a_data_saved_then_written_with_history_is_stale(first, compiled):
    assert _data_saved_then_written_with_history(fg, compiled, first) == \
        _data_saved_then_written_with_history(torch, False, first)
