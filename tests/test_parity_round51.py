"""Round 51 of torch parity: a view of a part of split/chunk/unbind (an expand, an unsqueeze, a
view of it), given to a compiled call that writes the part's base under no_grad. Its next use
with grad raises torch's multi-output error, naming the node that made the view ("Expand"); it
named the call's node ("CompiledFunction"), which the call gives such a view as its history
(alias fuzzer seeds 204707, 207552, 207820, 207889, 208075; tracer/dispatch.refresh_view_history
takes the node noted when the call rebased it)."""
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")

VIEWS = {
    "expand": lambda part: part.expand(3, 3),
    "unsqueeze": lambda part: part.unsqueeze(0),
    "view": lambda part: part.view(3, 1),
    "transpose": lambda part: part.t(),
}


def _error(L, make_view, split, compile_fn, use):
    base = L.tensor([[-1.5, -0.25, -0.5], [-0.25, -1.0, -1.5]], requires_grad=True)
    part = base.chunk(2, 0)[0] if split == "chunk" else base.unbind(0)[0].unsqueeze(0)
    view = make_view(part)

    def f(a0, a1):
        t = a1.reshape(-1)
        with L.no_grad():
            a0.copy_(t.abs().sum())
        return (a0 * 2).sum()
    compile_fn(f)(base, view)
    try:
        if use == "grad_fn":
            view.grad_fn
        else:
            (view * 2).sum().backward()
    except RuntimeError as error:
        return str(error)
    return None


@pytest.mark.parametrize("use", ["grad_fn", "op"])
@pytest.mark.parametrize("split", ["chunk", "unbind"])
@pytest.mark.parametrize("view", list(VIEWS))
def test_a_rebased_view_of_a_part_is_named_by_its_own_node_after_a_compiled_call(view, split, use):
    want = _error(torch, VIEWS[view], split, lambda f: f, use)
    assert want is not None and "is a view and its base or another view of its base has been modified" in want
    assert _error(fg, VIEWS[view], split, fg.compile, use) == want
    assert _error(fg, VIEWS[view], split, lambda f: f, use) == want
