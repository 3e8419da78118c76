"""Round 48 of torch parity (alias fuzzer, seeds 110418 and 110420): an in-place op on a view
made while its base needed no grad, after the base gained a history in place. torch's view
has no node (its grad_fn_ is null) until something asks for it: reading `.grad_fn` or
`.is_leaf` (or printing it), or an op that records a node reading the view (gradient_edge),
or a write of the view with history. Until then torch's in-place check, which reads the node
as it is, takes the view for a leaf that requires grad (through its base) and raises "a leaf
Variable that requires grad is being used in an in-place operation." fusegrad regenerated the
view's history first and let the write through. Now a view made so carries `_nodeless`
(dispatch._make_view, Trace._mark_view) until torch would have given it its node."""
import warnings

import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")

ACCESSES = {
    "nothing": lambda L, v: None,
    "requires_grad": lambda L, v: v.requires_grad,          # (no node asked for)
    "is_leaf": lambda L, v: v.is_leaf,
    "grad_fn": lambda L, v: v.grad_fn,
    "an op with grad": lambda L, v: v * 2,
    "repr": lambda L, v: repr(v),
    "a view of it": lambda L, v: v[0],
    "clone": lambda L, v: v.clone(),
    "detach": lambda L, v: v.detach(),
    "data": lambda L, v: v.data,
    "shape": lambda L, v: v.shape,
    "a comparison": lambda L, v: v > 0,                      # (records nothing: no node asked for)
    "grad": lambda L, v: v.grad,
}
WRITES = {
    "mul_": lambda v: v.mul_(3.0),
    "setitem": lambda v: v.__setitem__(0, 1.0),             # (through v[0], whose node reads v's)
    "zero_": lambda v: v.zero_(),
    "fill_": lambda v: v.fill_(2.0),
}
VIEWS = {
    "permute": lambda s: s.permute(0, 1),
    "t": lambda s: s.t(),
    "row": lambda s: s[0],
    "view": lambda s: s.view(6),
}


def _written_after_its_base_gained_history(L, kind, access, write, where):
    """where: "eager"; "compiled-outside" (the view made before the call, the rest in it);
    "compiled-inside" (all in the call)."""
    s0 = L.tensor([[0.25, 1.75, -0.25], [0.5, -1.0, -1.5]])
    s3 = L.ones(2, 3, requires_grad=True)
    outside = VIEWS[kind](s0) if where != "compiled-inside" else None

    def f(s0, s3):
        v = outside if outside is not None else VIEWS[kind](s0)
        s0.add_(s3)                         # the base gains a history in place
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ACCESSES[access](L, v)
        WRITES[write](v)
        return (v * 1).sum()
    run = fg.compile(f) if where != "eager" and L is fg else f
    try:
        return "ok", round(run(s0, s3).item(), 4)
    except RuntimeError as exc:
        return "error", str(exc)


@pytest.mark.parametrize("write", list(WRITES))
@pytest.mark.parametrize("access", list(ACCESSES))
@pytest.mark.parametrize("kind", list(VIEWS))
def test_an_in_place_op_on_a_view_without_a_node_is_refused_as_torch(kind, access, write):
    want = _written_after_its_base_gained_history(torch, kind, access, write, "eager")
    refused = want[0] == "error"
    # (torch refuses exactly where nothing asked for the view's node)
    assert refused == (access in ("nothing", "requires_grad", "detach", "data", "shape", "a comparison", "grad")
                       and write != "setitem"), want
    assert _written_after_its_base_gained_history(fg, kind, access, write, "eager") == want


@pytest.mark.parametrize("where", ["compiled-outside", "compiled-inside"])
@pytest.mark.parametrize("write", ["mul_", "setitem"])
@pytest.mark.parametrize("access", list(ACCESSES))
def test_the_same_inside_fg_compile(access, write, where, monkeypatch):
    monkeypatch.setenv("FUSEGRAD_ASYNC_COMPILE", "1")       # (tiny programs: the reference executor)
    want = _written_after_its_base_gained_history(torch, "row", access, write, "eager")
    assert _written_after_its_base_gained_history(fg, "row", access, write, where) == want


def test_seed_110418_a_view_written_after_a_call_gave_its_base_a_history():
    def run(L, compiled):
        s0 = L.tensor([[0.25, 1.75, -0.25], [0.5, -1.0, -1.5]])
        s1 = s0.permute(0, 1)
        s3 = L.tensor([[1.25, 1.0, 0.75], [0.75, 0.25, 1.5]], requires_grad=True)

        def f(c0, c1, a1):
            t1 = c1 * 2                     # (read before the base needed grad: no node)
            c0.add_(a1)
            with L.no_grad():
                c1.mul_(a1)
            return (a1.tanh().sum() + t1.sum(),)
        (fg.compile(f) if compiled else f)(s0, s1, s3)
        try:
            s1.mul_(3.0)
            return "ok"
        except RuntimeError as exc:
            return str(exc)
    want = run(torch, False)
    assert want == "a leaf Variable that requires grad is being used in an in-place operation."
    for compiled in (False, True):
        assert run(fg, compiled) == want, compiled
