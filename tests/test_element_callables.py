"""Tensor.apply_, map_, share_memory_/is_shared and _is_view (tracer/element_callables.py) against torch."""
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle")

import fusegrad as fg  # noqa: E402


def _outcome(T, make):
    try:
        r = make(T)
    except Exception as error:       # noqa: BLE001  (compared with torch's)
        return ("raised", type(error).__name__, str(error))
    return r.tolist() if isinstance(r, (torch.Tensor, fg.Tensor)) else r


CASES = {
    "apply_-float": lambda T: T.arange(4.).apply_(lambda v: v * 2),
    "apply_-keeps-version": lambda T: T.arange(4.).apply_(lambda v: v + 1)._version,
    "apply_-returns-self": lambda T: (lambda x: x.apply_(abs) is x)(T.arange(3.)),
    "apply_-int-truncates": lambda T: T.arange(3).apply_(lambda v: v + 0.7),
    "apply_-bool": lambda T: T.tensor([True, False]).apply_(lambda v: not v),
    "apply_-transposed-memory": lambda T: T.arange(6.).view(2, 3).t().apply_(lambda v: v + 1),
    "apply_-requires-grad": lambda T: T.ones(2, requires_grad=True).apply_(lambda v: v),
    "apply_-non-leaf": lambda T: (T.ones(2, requires_grad=True) * 1).apply_(lambda v: v),
    "apply_-not-a-number": lambda T: T.arange(3.).apply_(lambda v: "a"),
    "apply_-not-callable": lambda T: T.arange(3.).apply_(3),
    "map_": lambda T: T.arange(3.).map_(T.arange(3.), lambda p, q: p * 10 + q),
    "map_-broadcast": lambda T: T.arange(3.).map_(T.tensor(1.), lambda p, q: p + q),
    "map_-size": lambda T: T.arange(3.).map_(T.arange(2.), lambda p, q: p),
    "share_memory_": lambda T: (lambda x: (x.is_shared(), x.share_memory_() is x, x.is_shared()))(T.arange(3.)),
    "_is_view": lambda T: (lambda x: (x._is_view(), x[1:]._is_view(), x.t()._is_view()))(T.ones(2, 2)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_as_torch(case):
    assert _outcome(fg, CASES[case]) == _outcome(torch, CASES[case])


def test_apply_inside_compile_is_refused():
    f = fg.compile(lambda x: (x * 2).apply_(lambda v: v))
    with pytest.raises(NotImplementedError, match="apply_"):
        f(fg.ones(2))


def test_as_subclass_to_dense_pin_memory():
    def run(T):
        class Sub(T.Tensor):
            pass
        x = T.ones(2, requires_grad=True)
        y = x.as_subclass(Sub)
        (y * 2).sum().backward()
        z = (x * 3).as_subclass(Sub)
        try:
            x.pin_memory()
            pinned = None
        except RuntimeError as error:
            pinned = str(error)
        return (type(y).__name__, type(y.grad_fn).__name__, y.is_leaf, y.requires_grad, y._base is x,
                x.grad.tolist(), type(z.grad_fn).__name__, x.to_dense() is x, pinned,
                type(T.ones(2).as_subclass(Sub)).__name__, T.ones(2).as_subclass(Sub).grad_fn)
    assert run(fg) == run(torch)
