"""Writes through a detach() or .data of an expand (every row is the same memory), inside
fg.compile, against torch and fusegrad's eager mode: the function's results, its gradients and
the caller's tensors after the call.

A compiled call holds values, not memory: a write through row 2 of `x.expand(3, 3).detach()`
gave the detach a new row 2, and passing that whole value back through the expand kept row 0
(an expand's write-back reads one replica), so the write was lost. The write now reaches the
expand's base through the part it wrote (TraceViews._region_write)."""
import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch")
from parity_support import outcome  # noqa: E402  (after the skip)

ROW = [[0.8, -0.7, 0.2]]

WRITES = [
    "c[-1, 1:].zero_()",
    "c[1].fill_(3.0)",
    "c[-1, 1:].mul_(2)",
    "c[2, 1:].add_(1)",
    "c[1, 0] = 5.0",
    "c[2] = L.tensor([1.0, 2.0, 3.0])",
    "c[-1].copy_(L.tensor([4.0, 5.0, 6.0]))",
    "c[2].clamp_(max=0.0)",
    "c[1:2, ::2].mul_(-1)",
    "c.t()[0].mul_(2)",             # column 0: one memory location three times (torch's overlap error)
    "c.zero_()",                    # a fill of the whole expand: every replica gets the one value
    "c.mul_(2)",                    # torch's overlap error
]


def _rounded(t):
    return np.round(np.asarray(t.tolist(), dtype=np.float64), 5).tolist()


def _detached_argument(L, kind):
    base = L.tensor(ROW)
    if kind == "detach":
        return base, base.expand(3, 3).detach()
    if kind == "data":
        return base, base.expand(3, 3).data
    if kind == "base gone":
        return None, L.tensor(ROW).expand(3, 3).detach()
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["detach", "data", "base gone"])
@pytest.mark.parametrize("write", WRITES)
def test_a_write_through_a_detached_expand_argument_reaches_every_row(write, kind):
    def run(L, wrap):
        def f(c):
            exec(write, {"c": c, "L": L})
            return c * 1, c.sum(0)
        base, c = _detached_argument(L, kind)

        def call():
            out, total = wrap(f)(c)
            caller = [_rounded(c)] + ([] if base is None else [_rounded(base)])
            return _rounded(out), _rounded(total), caller
        return outcome(call)
    expected = run(torch, lambda fn: fn)
    assert run(fg, lambda fn: fn) == expected
    assert run(fg, fg.compile) == expected


@pytest.mark.parametrize("write", WRITES)
def test_a_write_through_a_detached_expand_made_in_the_call_reaches_every_row(write):
    """The expand and its detach made inside the compiled function, of a value with history."""
    def run(L, wrap):
        def f(x):
            c = (x * 1).expand(3, 3).detach()
            exec(write, {"c": c, "L": L})
            return c * 1 + x
        x = L.tensor(ROW, requires_grad=True)

        def call():
            out = wrap(f)(x)
            out.sum().backward()
            return _rounded(out), _rounded(x.grad), _rounded(x)
        return outcome(call)
    expected = run(torch, lambda fn: fn)
    assert run(fg, lambda fn: fn) == expected
    assert run(fg, fg.compile) == expected


@pytest.mark.parametrize("write", ["d[2, 1:].zero_()", "d[1].fill_(2.0)", "d[2, :2].mul_(3)", "d[0, 2] = 9.0"])
def test_a_write_through_the_detach_of_an_expand_of_an_argument_changes_the_argument(write):
    """`x.expand(3, 3).detach()` written through a row: x's memory (the caller's) changes."""
    def run(L, wrap):
        def f(x):
            d = x.expand(3, 3).detach()
            exec(write, {"d": d})
            return x * 1
        x = L.tensor(ROW)
        return outcome(lambda: (_rounded(wrap(f)(x)), _rounded(x)))
    expected = run(torch, lambda fn: fn)
    assert run(fg, lambda fn: fn) == expected
    assert run(fg, fg.compile) == expected


def test_a_write_with_history_through_a_detached_expand_is_refused_in_a_compiled_call():
    """d[2, 1:].mul_(w) with w requiring grad: torch computes the values and its backward raises
    (CopySlices over memory that overlaps itself). A compiled call cannot give d's other rows
    the write while d keeps its own history, so it raises torch's error at the write instead of
    returning wrong values (fusegrad's eager mode computes them, and its backward does not raise:
    a known difference)."""
    def run(L, wrap):
        def f(x, w):
            d = x.expand(3, 3).detach()
            d[2, 1:].mul_(w)
            return (d * 1).sum() + (x * 1).sum()
        x = L.tensor(ROW, requires_grad=True)
        w = L.tensor([2.0, -3.0], requires_grad=True)

        def call():
            wrap(f)(x, w).backward()
        return outcome(call)
    torch_error = run(torch, lambda fn: fn)
    assert torch_error[0] == "RuntimeError"
    assert run(fg, fg.compile) == torch_error


SELECT_WRITES = [
    "c[-1].zero_()",
    "c.fill_(1.5)",
    "c.mul_(2)",
    "c.t().add_(1)",
    "c[0, 1] = 7.0",
    "c.copy_(L.ones(3, 4))",
    "c.clamp_(max=4.0)",
    "c.view(-1)[-1] = -1.0",
    "c[c > 5] = 0.0",
]


@pytest.mark.parametrize("write", SELECT_WRITES)
def test_a_row_of_a_detached_expand_is_plain_memory_to_write(write):
    """`b.unsqueeze(0).expand(2, 3, 4).detach()[1]` is b's memory laid out plainly (strides
    (4, 1)); NumPy marks every view of a broadcast read-only, which the compiled call took for
    a read-only array of the user's (fg.from_numpy) and refused to write."""
    def run(L, wrap):
        b = L.arange(12.0).reshape(3, 4)
        c = b.unsqueeze(0).expand(2, 3, 4).detach()[1]

        def f(c):
            exec(write, {"c": c, "L": L})
            return c.sum()
        return outcome(lambda: (float(wrap(f)(c)), _rounded(b), _rounded(c)))
    expected = run(torch, lambda fn: fn)
    assert run(fg, lambda fn: fn) == expected
    assert run(fg, fg.compile) == expected


def test_a_read_only_numpy_array_is_still_refused():
    """The read-only check still holds for memory the user made read-only."""
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    a.flags.writeable = False
    x = fg.from_numpy(a)

    def f(x):
        x[1].zero_()
        return x.sum()
    with pytest.raises(RuntimeError, match="read-only NumPy array"):
        fg.compile(f)(x)
    assert a.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
