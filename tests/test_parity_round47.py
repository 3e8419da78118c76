"""Round 47 of torch parity: a compiled call's backward meeting a saved view made under
no_grad, or a view of one, that changed in place. torch's node saved the view itself;
unpacking it after its version counter moved asks for its history, which is regenerated
and raises the rebased-view error ("A view was created in no_grad mode ...", or for a view
of such a view "Output 0 of T is a view of a view which was created in no_grad mode ...")
before any version check. The compiled backward raised the version error's text where the
saved view was one from outside the call, or a view made in the call of one, and the write
came inside the call (after the saving op) or, for such a view of a view, after it
(Trace.no_grad_view_reads, NoGradViewSaved). A view of such a view made before the call is
named by its node (alias fuzzer seed 109895)."""
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")

from parity_support import runtime_error as _error  # noqa: E402

USES = {
    "pow": lambda x: x.pow(2),                          # PowBackward0 saves x
    "t-exp-times-t": lambda x: x.t().exp() * x.t(),     # MulBackward0 saves the second x.t()
    "t-matmul": lambda x: x.t() @ x,                    # MmBackward0 saves x.t() and x
}

WRITES_IN_CALL = {
    "none": None,
    "through-detach": lambda x: x.detach().t()[0].zero_(),
    "through-data": lambda x: x.data.mul_(2.0),         # (a .data write moves no counter)
    "through-view-data": lambda x: x[0].data.fill_(0.5),
}

WRITES_AFTER = {
    "none": None,
    "in-place": lambda x: x.mul_(2.0),
    "through-detach-view": lambda x: x.detach()[1].mul_(3.0),
    "through-data": lambda x: x.data.add_(1.0),
}


def _saved_no_grad_view_changed(L, compiled: bool, target: str, use: str, in_call: str, after: str):
    s = L.tensor([[-1.5, -0.5], [0.25, 0.5]], requires_grad=True)
    if target == "view-of-leaf":
        with L.no_grad():
            x0 = s[0:2]
    elif target == "view-of-a-view-of-leaf":
        with L.no_grad():
            v = s[0:2]
        x0 = v.view(2, 2)           # made with grad on: "Output 0 of View is a view of a view ..."
    else:
        y = s * 1
        with L.no_grad():
            x0 = y.view(2, 2)

    def f(x):
        t = USES[use](x)
        if WRITES_IN_CALL[in_call] is not None:
            with L.no_grad():
                WRITES_IN_CALL[in_call](x)
        return t.sum()
    out = (fg.compile(f) if compiled else f)(x0)
    if WRITES_AFTER[after] is not None:
        with L.no_grad():
            WRITES_AFTER[after](x0)
    error = _error(out.backward)
    grad = None if s.grad is None else [round(v, 4) for row in s.grad.tolist() for v in row]
    return error, grad, s.tolist()


@pytest.mark.parametrize("target", ["view-of-leaf", "view-of-non-leaf", "view-of-a-view-of-leaf"])
@pytest.mark.parametrize("use", list(USES))
@pytest.mark.parametrize("in_call", list(WRITES_IN_CALL))
@pytest.mark.parametrize("after", list(WRITES_AFTER))
def test_a_changed_saved_no_grad_view_raises_torchs_rebased_view_error(target, use, in_call, after):
    want = _saved_no_grad_view_changed(torch, False, target, use, in_call, after)
    # (a .data write moves no counter; the others move x's, so torch's unpack raises)
    moved = in_call == "through-detach" or after in ("in-place", "through-detach-view")
    assert (want[0] is not None) == moved and (not moved or "created in no_grad mode" in want[0]), want
    for compiled in (False, True):
        assert _saved_no_grad_view_changed(fg, compiled, target, use, in_call, after) == want, compiled
