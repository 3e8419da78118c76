"""Round 50 of torch parity: a view of a view made under no_grad, made with grad on (`s3 =
s2.t()` for `s2 = s0.T` made under no_grad of a leaf s0 that requires grad), given to a compiled
call. It has a node of its own (TBackward0, whose edge leads nowhere), which torch's engine
runs: the call's nodes save what its gradient reads (`s3 @ s2` saves s2) and check it, so a
write of s0's memory after the call makes the backward raise torch's rebased-view error. The
call's node took s3's edge for one leading nowhere, as s2's (it looked at the view's no_grad
mark alone): its backward ran nothing and raised nothing (alias fuzzer seed 127158). Fixed in
runtime/compile.py (_boundary_edge, _leads_nowhere)."""
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
