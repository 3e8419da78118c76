"""Tensor.register_post_accumulate_grad_hook against torch 2.13: when it runs, what it sees,
removal, and its errors."""
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch")
from parity_support import outcome  # noqa: E402  (after the skip)


def _runs(lib):
    x = lib.ones(2, requires_grad=True)
    seen = []
    handle = x.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.tolist()))
    (x * 2).sum().backward()
    (x * 3).sum().backward()                     # after accumulating: [5, 5]
    lib.autograd.grad((x * 4).sum(), x)          # accumulates nothing: no call
    handle.remove()
    (x * 1).sum().backward()
    return seen, x.grad.tolist()


def _optimizer_in_backward(lib):
    w = lib.ones(2, requires_grad=True)

    def step(p):
        with lib.no_grad():
            p.sub_(p.grad * 0.1)
        p.grad = None
    w.register_post_accumulate_grad_hook(step)
    (w * 3).sum().backward()
    return w.tolist(), w.grad


@pytest.mark.parametrize("case", [_runs, _optimizer_in_backward])
def test_post_accumulate_hooks_as_torchs(case):
    assert outcome(lambda: case(fg)) == outcome(lambda: case(torch))


@pytest.mark.parametrize("make, hook", [
    (lambda L: L.ones(2), lambda p: None),
    (lambda L: L.ones(2, requires_grad=True) * 2, lambda p: None),
    (lambda L: L.ones(2, requires_grad=True), lambda p: 5),
], ids=["no-grad", "non-leaf", "returns-a-number"])
def test_post_accumulate_hook_errors_as_torchs(make, hook):
    def run(lib):
        t = make(lib)
        t.register_post_accumulate_grad_hook(hook)
        (t * 2).sum().backward()
    assert outcome(lambda: run(fg)) == outcome(lambda: run(torch))


def test_compiled_calls_run_them_for_a_backward_outside_and_refuse_one_inside():
    c = fg.ones(2, requires_grad=True)
    seen = []
    c.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.tolist()))
    fg.compile(lambda u: (u * 4).sum())(c).backward()
    assert seen == [[4.0, 4.0]]

    def step(u):
        (u * 4).sum().backward()
    with pytest.raises(NotImplementedError, match="post-accumulate-grad hook"):
        fg.compile(step)(c)
