"""torch's spellings of ops fusegrad has under other names: ravel (contiguous().view(-1)),
movedim/moveaxis (a permute), swapaxes/swapdims (transpose), clamp_min/clamp_max (a one-bound
clamp with their own node names). Values, shapes, dtypes, contiguity, node names, gradients
and error texts against torch, eagerly and inside fg.compile."""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle for its method aliases")

EXPRESSIONS = [
    "x.ravel()", "x.t().ravel()", "L.ravel(x)",
    "x.movedim(0, -1)", "x.moveaxis((0, 1), (1, 0))", "x3.movedim(0, 2)", "x3.movedim((0, 2), (1, 0))",
    "L.movedim(x3, 1, 0)", "L.moveaxis(x3, -1, 0)",
    "x.swapaxes(0, 1)", "x.swapdims(1, 0)", "L.swapaxes(x3, 0, 2)", "L.swapdims(x3, 2, 1)",
    "x.clamp_min(0.5)", "x.clamp_max(0.5)", "L.clamp_min(x, t)", "x.clamp_max(t)", "L.clamp_max(x, 1)",
    "i.clamp_min(0.5)", "i.clamp_max(2)",
    # bad input: torch's classes and texts
    "x.clamp_min(None)", "x.clamp_max('a')", "x.movedim(0, 5)", "x.movedim((0, 0), (1, 0))",
    "x.movedim((0,), (1, 0))",
]


def _outcome(L, expr: str, compiled: bool, names: bool = True):
    x = L.tensor([[1.0, -2.0, 3.0], [0.25, 0.75, -1.5]], requires_grad=True)
    x3 = L.ones(2, 3, 4, requires_grad=True)
    t = L.tensor([0.0, 0.5, 1.0], requires_grad=True)
    i = L.tensor([1, 2, 3])

    def f(x, x3, t, i):
        return eval(expr, {"L": L, "x": x * 1, "x3": x3 * 1, "t": t, "i": i})  # noqa: S307 - test expressions
    try:
        y = (fg.compile(f) if compiled else f)(x, x3, t, i)
    except Exception as exc:  # noqa: BLE001 - the class and text are compared
        return type(exc).__name__, str(exc)
    seen = [tuple(y.shape), str(y.dtype).split(".")[-1], y.detach().numpy().round(6).tolist(), y.is_contiguous()]
    if y.requires_grad:
        if names:       # (a compiled output's node is CompiledFunctionBackward)
            seen.append(type(y.grad_fn).__name__)
        (y * L.arange(y.numel(), dtype=y.dtype).reshape(y.shape)).sum().backward()
        seen += [None if g is None else g.numpy().tolist() for g in (x.grad, x3.grad, t.grad)]
    return seen


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_method_alias_matches_torch(expr, compiled):
    assert _outcome(fg, expr, compiled, names=not compiled) == _outcome(torch, expr, False, names=not compiled)


@pytest.mark.parametrize("fn", ["clamp_min", "clamp_max"])
def test_a_numpy_bound_is_taken_as_a_tensor_bound(fn):
    """NumPy arrays are accepted wherever a tensor is (API.md), as clamp takes them: the same
    values and node as with the tensor bound (the array was once refused as no Tensor)."""
    x = fg.tensor([0.2, 0.8, -1.0])
    bound = np.array([0.5, 0.0, -2.0], dtype=np.float32)
    with_array, with_tensor = getattr(x, fn)(bound), getattr(x, fn)(fg.tensor(bound))
    np.testing.assert_array_equal(with_array.numpy(), with_tensor.numpy())
    assert with_array.dtype == with_tensor.dtype
