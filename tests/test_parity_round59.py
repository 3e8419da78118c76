"""Round 59 of torch parity.

- A compiled call's backward checks the views made under no_grad inside the call that torch's
  nodes saved though no gradient of the call needs them (`v ** 2` saves v, whose edge leads
  nowhere): a write of their base after the call raises torch's rebased-view error at the
  backward, as eagerly (alias fuzzer seed 240030).
"""
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle")

import fusegrad as fg  # noqa: E402


def _no_grad_view_bodies(L):
    """Functions of (a, x), both requiring grad, that make a view of `a` under no_grad and use
    it with grad: what torch's nodes save of it differs per op."""
    def view(a):
        with L.no_grad():
            return a[:, 1:]

    def pow_alone(a, x):                    # PowBackward0 saves v
        return (view(a) ** 2).sum()

    def mul_of_itself(a, x):                # MulBackward0 saves nothing for edges leading nowhere
        v = view(a)
        return (v * v).sum()

    def pow_beside_a_gradient(a, x):        # the call computes x's gradient; pow's node still checks v
        return (view(a) ** 2).sum() + (x * 2).sum()

    def exp_result(a, x):                   # saves its result, not v
        return view(a).exp().sum()

    def product_with_x(a, x):               # saves v for x's gradient (the program reads it)
        return (view(a) @ x[:2, :2]).sum()

    def sin_times_x(a, x):                  # sin saves v; x's gradient needs sin(v)
        return (view(a).sin() * x[:2, :2]).sum()

    def relu_result(a, x):
        return view(a).relu().sum()

    def written_in_the_call(a, x):          # the base written inside the call after the save
        y = view(a) ** 2
        with L.no_grad():
            a.add_(1)
        return y.sum()

    def two_outputs(a, x):
        return (view(a) ** 2).sum(), (x * x).sum()

    def chunk_parts(a, x):
        with L.no_grad():
            v, w = a.chunk(2, 1)
        return (w.tanh() + v.sum()).sum()

    def transposed_sqrt(a, x):
        with L.no_grad():
            v = a.t()
        return (v.sqrt() * 2).sum() + (x ** 3).sum()
    return [pow_alone, mul_of_itself, pow_beside_a_gradient, exp_result, product_with_x, sin_times_x,
            relu_result, written_in_the_call, two_outputs, chunk_parts, transposed_sqrt]


_BODY_NAMES = [f.__name__ for f in _no_grad_view_bodies(torch)]


def _no_grad_view_outcome(L, k: int, compiled: bool, write_after: bool):
    """Backward of each output of body k (retaining the graph), after writing `a` under no_grad
    where `write_after`: x's gradient, or the error's text."""
    a = L.tensor([[0.5, 1.0, 2.0], [3.0, 1.25, 1.5]], requires_grad=True)
    x = L.tensor([[0.5, 1.0, 2.0], [3.0, 1.25, 1.5]], requires_grad=True)
    f = _no_grad_view_bodies(L)[k]
    if compiled:
        f = fg.compile(f)
    try:
        outs = f(a, x)
        outs = outs if isinstance(outs, tuple) else (outs,)
        if write_after:
            with L.no_grad():
                a.add_(3.0)
        for out in outs:
            if out.requires_grad:
                out.backward(retain_graph=True)
        return "ok", None if x.grad is None else x.grad.reshape(-1).tolist()
    except RuntimeError as exc:
        return "RuntimeError", str(exc)


@pytest.mark.parametrize("write_after", [False, True], ids=["unchanged", "written-after"])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("k", range(len(_BODY_NAMES)), ids=_BODY_NAMES)
def test_saved_no_grad_views_are_checked_as_torch_checks_them(k, compiled, write_after):
    expected = _no_grad_view_outcome(torch, k, False, write_after)
    got = _no_grad_view_outcome(fg, k, compiled, write_after)
    if expected[0] == "ok":
        assert got[0] == "ok"
        assert (got[1] is None) == (expected[1] is None)
        if expected[1] is not None:
            assert got[1] == pytest.approx(expected[1], rel=1e-6)
    else:
        assert got == expected
