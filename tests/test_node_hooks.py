"""grad_fn.register_prehook / register_hook (a node's own hooks) against torch 2.13: what they
see, what their results replace, removal, and torch's errors for bad results."""
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch")
from parity_support import outcome  # noqa: E402  (after the skip)


def _rounded(values):
    return [None if v is None else [round(e, 4) for e in v.reshape(-1).tolist()] for v in values]


def _pre_and_post(lib, remove):
    x = lib.ones(2, requires_grad=True)
    z = (x * 3).exp()
    seen = []
    pre = z.grad_fn.register_prehook(lambda go: seen.append(("pre", _rounded(go))) or (go[0] * 2,))
    post = z.grad_fn.register_hook(
        lambda gi, go: seen.append(("post", _rounded(gi), _rounded(go))) or (gi[0] + 1,))
    if remove:
        pre.remove()
        post.remove()
    z.sum().backward()
    return _rounded([x.grad]), seen


@pytest.mark.parametrize("remove", [False, True])
def test_pre_and_post_hooks_see_and_replace_gradients(remove):
    """The pre-hook doubles the incoming gradient, the post-hook sees it and adds 1 to what
    ExpBackward0 passes on; removed, neither runs."""
    assert outcome(lambda: _pre_and_post(fg, remove)) == outcome(lambda: _pre_and_post(torch, remove))


def _post_hook_inputs(lib):
    x, w = lib.ones(2, requires_grad=True), lib.ones(2)
    m = x * w
    seen = []
    m.grad_fn.register_hook(lambda gi, go: seen.append([g is None for g in gi]))
    m.sum().backward()
    v, _ = (x * 2).max(0)
    v.grad_fn.register_prehook(lambda go: seen.append(len(go)))
    v.backward()
    return seen


def test_hooks_get_none_for_inputs_without_gradient_and_only_differentiable_outputs():
    """An input that needs no gradient is None among grad_inputs; max's indices are no output
    of its node."""
    assert outcome(lambda: _post_hook_inputs(fg)) == outcome(lambda: _post_hook_inputs(torch))


@pytest.mark.parametrize("register, hook", [
    ("register_prehook", lambda go: (go[0], go[0])),
    ("register_hook", lambda gi, go: 5),
    ("register_prehook", lambda go: (go[0].sum(),)),
    ("register_prehook", lambda go: (go[0].double(),)),
], ids=["wrong-count", "not-a-tuple", "wrong-shape", "wrong-dtype"])
def test_bad_hook_results_raise_torchs_errors(register, hook):
    def run(lib):
        z = (lib.ones(2, requires_grad=True) * 3).exp()
        getattr(z.grad_fn, register)(hook)
        z.sum().backward()
    theirs, ours = outcome(lambda: run(torch)), outcome(lambda: run(fg))
    assert theirs[0] in ("RuntimeError", "TypeError")
    assert ours == theirs


def test_hooks_on_a_compiled_calls_node_run_and_are_refused_inside_the_call():
    x = fg.ones(2, requires_grad=True)
    y = fg.compile(lambda u: u.exp() * 2)(x)
    seen = []
    y.grad_fn.register_prehook(lambda go: seen.append("pre"))
    y.grad_fn.register_hook(lambda gi, go: seen.append("post") or (gi[0] * 0,))
    y.sum().backward()
    assert seen == ["pre", "post"] and x.grad.tolist() == [0.0, 0.0]

    def inside(u):
        v = u.exp()
        v.grad_fn.register_hook(lambda gi, go: None)
        return v
    with pytest.raises(NotImplementedError, match="registering a hook on a grad_fn node inside fg.compile"):
        fg.compile(inside)(x)

