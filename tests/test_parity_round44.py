"""Round 44 of torch parity (alias fuzzer, seed 96076): a compiled call reads a caller's tensor
`x` through `x.data` first and through `x` after writing its memory under no_grad, and an op
saves `x`; the caller then writes that memory again. torch's backward raises the version
error for the saved `x`. The compiled call's saved value was the alias's own copy (the value
read through the tensor that requires grad, Trace.alias_counters), which shared no memory
with any tensor of the caller, so no version check guarded it and the backward ran."""
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")

from parity_support import runtime_error as _error, without_node_name as _version_part  # noqa: E402


def _program(L, compiled: bool, write_after: bool, read_before: bool):
    s0 = L.tensor([[-0.25, 1.5, 1.5], [-1.25, -1.75, 1.5], [0.25, -0.5, -1.75]], requires_grad=True)
    s2 = s0.permute(0, 1)

    def f(a0, a1):
        t1 = s2.data
        t1.exp()
        with L.no_grad():
            a0.div_(a1.abs() + 1 if read_before else 2.0)
        return (a1 * a1).sum()
    out = (fg.compile(f) if compiled else f)(s0, s2)
    if write_after:
        with L.no_grad():
            s0.mul_(2.0)
    return lambda: (out.backward(), s0.grad)


@pytest.mark.parametrize("read_before", [True, False], ids=["read-before-the-write", "read-after"])
@pytest.mark.parametrize("write_after", [True, False], ids=["written-after-the-call", "not-written"])
def test_a_value_read_through_data_and_the_tensor_keeps_its_version_check(write_after, read_before):
    want = _error(_program(torch, False, write_after, read_before))
    assert (want is not None) == write_after
    for compiled in (False, True):
        got = _error(_program(fg, compiled, write_after, read_before))
        assert _version_part(got) == _version_part(want), (compiled, got, want)


def test_the_gradient_without_a_later_write_is_torchs():
    grads = []
    for L, compiled in ((torch, False), (fg, True)):
        run = _program(L, compiled, False, True)
        grads.append(run()[1].detach().numpy())
    assert (abs(grads[0] - grads[1]) <= 1e-6).all()


def _written_through_data(L, compiled: bool):
    """Alias fuzzer seed 96312: `s3`, a view of s0 made under no_grad, is used in grad mode
    after the call wrote s0's memory through `s0.data` and a view of it. That moves the
    .data's version counter, not s0's: torch does not regenerate s3's history and raises
    nothing. The compiled call raised the no_grad view error (it keyed the rebase on the
    memory written, not on the counter)."""
    s0 = L.tensor([[1.25, 1.0, 1.75], [1.0, -0.5, -0.5]], requires_grad=True)
    s1 = s0.data
    s2 = s1[1, 2]
    with L.no_grad():
        s3 = s0.transpose(0, 1)

    def f(a0, a1):
        with L.no_grad():
            a1.clamp_(min=0.25)
        a0.T
        s2.mul_(s2.clone() * 2)
        return (a0 * a0).sum()
    out = (fg.compile(f) if compiled else f)(s3, s1)
    out.backward()
    # (no gradient reaches s0: torch leaves its .grad None, a compiled call's input may get zeros, README)
    no_gradient = s0.grad is None or not s0.grad.numpy().any()
    return out.detach().numpy(), s0.detach().numpy(), no_gradient, s1._version, s0._version


def test_a_no_grad_view_stays_usable_after_a_write_through_data():
    want = _written_through_data(torch, False)
    for compiled in (False, True):
        got = _written_through_data(fg, compiled)
        for ours, theirs in zip(got, want):
            assert (abs(ours - theirs) <= 1e-6).all() if hasattr(ours, "shape") else ours == theirs, compiled


def _original_self_of_an_in_place_op(L, compiled: bool):
    """Alias fuzzer seed 732 (a first version of the fix above broke it): `a0 = s0.detach()`
    divided in place by a value computed from s0. Torch's node saves the original a0 as a
    clone (an in-place op's original self), which the caller's later write of s0 does not
    reach: the backward raises nothing. The compiled call saved the same value, read through
    the detach (an alias of s0's memory), which the call then wrote: no counter check."""
    s0 = L.tensor([1.75, -1.5, -0.5, 1.0, 1.25, -1.75], requires_grad=True)
    s1 = s0.detach()

    def f(a0):
        t2 = -s0
        a0.div_((t2 * 2).abs() + 1)
        return (a0 * 2.0).sum() + t2.tanh().sum()
    out = (fg.compile(f) if compiled else f)(s1)
    with L.no_grad():
        s0.add_(0.5)
    out.backward()
    return s0.grad.numpy()


def test_an_in_place_ops_original_self_read_through_detach_is_not_version_checked():
    want = _original_self_of_an_in_place_op(torch, False)
    for compiled in (False, True):
        assert (abs(_original_self_of_an_in_place_op(fg, compiled) - want) <= 1e-6).all(), compiled
