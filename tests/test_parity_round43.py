"""Round 43 of torch parity (alias fuzzer, seeds 94399 and 94469): a compiled call whose
backward meets two changed saved values, one replaced by an in-place write inside the call
(checked from the trace: Trace.stale_saved) and one changed after the call (checked by its
version counter when the backward runs). torch's engine raises for the one whose node it
meets first, going from the last op back; the compiled backward always raised the in-call
one first, naming another tensor than torch. Each case compiles kernels once."""
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")

from parity_support import runtime_error as _error  # noqa: E402


def _later_product_changed_after_the_call(L, compiled: bool, write_after: bool):
    """maximum saves s0, a write under no_grad then changes s0 inside the call; c0 * c0, the
    last op, saves c0, which the caller changes after the call (seed 94399)."""
    s0 = L.tensor([[1.25, 0.25, -1.0], [0.0, 0.75, -1.5]], requires_grad=True)
    s1 = s0 * -0.5

    def f(a0, a1, a2):
        t1 = L.maximum(a2, a2)
        with L.no_grad():
            a1[0:] = t1.sigmoid()
        s1.zero_()
        s1.div_(t1.sigmoid().abs() + 1)
        return (a0 * a0).sum() + a0.tanh().sum() + (s1 * s1).sum()
    out = (fg.compile(f) if compiled else f)(s0, s0, s0)
    if write_after:
        s1.mul_(2.0)
    return lambda: (s1, out.backward())       # (s1 alive: torch's node holds it, and names it by its grad_fn)


def _saved_view_changed_after_the_call(L, compiled: bool, write_after: bool):
    """abs saves a0, which div_ then changes inside the call; t1 * t1, in the return
    expression, saves a view of s0 that the caller changes after the call (seed 94469)."""
    s0 = L.tensor([[-2.0, 0.75], [-1.5, -1.25], [1.5, 0.5]], requires_grad=True)
    s2 = L.tensor([[1.25, 1.75], [0.5, -0.25], [-1.0, -1.0]])

    def f(a0):
        a0.add_(s0.sigmoid(), alpha=-1.0)
        t1 = s0[2:]
        t2 = t1 * 2
        with L.no_grad():
            s0.add_(t2.sum(), alpha=3.0)
        a0.div_(a0.abs() + 1)
        return (t1 * t1).sum() + a0.sum() + (s0 * 2.0).sum()
    out = (fg.compile(f) if compiled else f)(s2)
    if write_after:
        with L.no_grad():
            s0.add_(-1.0)
    return lambda: (s0, out.backward())


@pytest.mark.parametrize("case", [_later_product_changed_after_the_call, _saved_view_changed_after_the_call])
@pytest.mark.parametrize("write_after", [True, False])
def test_compiled_backward_raises_for_the_changed_value_met_first(case, write_after):
    want = _error(case(torch, False, write_after))
    assert want is not None and "modified by an inplace operation" in want
    assert _error(case(fg, False, write_after)) == want
    assert _error(case(fg, True, write_after)) == want


def _saved_view_of_a_data_alias(L, compiled: bool, after: str):
    """`t1 = a1.data` made in the call and written there, then `a0 @ t1.t()` saves a view of
    t1: it is on t1's counter, not on a1's over the same memory (seed 95324). `after` writes
    a1's memory after the call through a view of a1 (its counter: no error) or through t1
    (t1's: torch's error)."""
    s1 = L.tensor([[2.0, 0.5, -1.0]], requires_grad=True)
    s2 = L.tensor([[0.25, -1.0, 0.5], [0.75, 1.25, -0.75], [-0.5, 1.25, -0.75]])
    s3 = s2.view(-1)

    def f(a0, a1):
        t1 = a1.data
        a1.zero_()
        t1.add_(1.5)
        return (a0 @ t1.t() * -1.0).sum(), t1
    out, t1 = (fg.compile(f) if compiled else f)(s1, s2)
    exec(after, {"s3": s3, "t1": t1})

    def backward():
        out.backward()
        return s1.grad.tolist()
    return backward


@pytest.mark.parametrize("after", ["s3.add_(0.5)", "t1.add_(0.5)"])
def test_compiled_saved_view_of_a_data_alias_made_in_the_call_is_on_its_counter(after):
    def outcome(run):
        try:
            return run()
        except RuntimeError as error:
            return str(error)
    want = outcome(_saved_view_of_a_data_alias(torch, False, after))
    assert outcome(_saved_view_of_a_data_alias(fg, False, after)) == want
    assert outcome(_saved_view_of_a_data_alias(fg, True, after)) == want
