"""Result layouts torch gives that fusegrad got wrong (found by the random-program probe): the
strides of a result decide whether `.view(-1)` of it works, so each case checks the strides,
the values and the view's outcome against torch 2.13, eagerly and inside fg.compile."""
import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch")
from parity_support import outcome  # noqa: E402  (after the skip)

MODES = ["eager", "compiled"]

CASES = {
    # torch's pow(Scalar, Tensor) allocates its result row-major; tensor ** number keeps x's layout
    "number ** transposed": lambda T, x, y: 3 ** x,
    "pow(number, transposed)": lambda T, x, y: T.pow(2.5, x),
    "float_power(number, transposed)": lambda T, x, y: T.float_power(2, x),
    "transposed ** number": lambda T, x, y: x ** 3,
    "0-d tensor ** transposed": lambda T, x, y: T.tensor(3.0) ** x,
    # flip allocates empty_like(x): x's layout, inside fg.compile too
    "flip of transposed": lambda T, x, y: x.flip(0),
    "flip(0, 1) of transposed": lambda T, x, y: x.flip(0, 1),
    # composites whose eager steps each laid out their result NumPy's way: the first operand's layout
    "lerp(transposed, row-major)": lambda T, x, y: T.lerp(x, y, 0.5),
    "lerp(row-major, transposed)": lambda T, x, y: T.lerp(y, x, 0.25),
    "logaddexp(transposed, row-major)": lambda T, x, y: T.logaddexp(x, y),
    "xlogy(transposed, row-major)": lambda T, x, y: T.xlogy(x, y),
    "heaviside(transposed, row-major)": lambda T, x, y: T.heaviside(x - 0.5, y),
    "add(transposed, row-major)": lambda T, x, y: x + y,
    "bernoulli of transposed": lambda T, x, y: x.bernoulli() * 0,
    # an op with its own shape rule that is elementwise for reduction="none"
    "mse_loss(transposed, row-major, none)": lambda T, x, y: T.nn.functional.mse_loss(x, y, reduction="none"),
    "mse_loss(transposed, row-major, sum)": lambda T, x, y: T.nn.functional.mse_loss(x, y, reduction="sum"),
}


def _operands(T, rows):
    a = (np.arange(1, 3 * rows + 1, dtype=np.float32).reshape(rows, 3) / (3 * rows))
    return T.tensor(a).t(), T.tensor(a.T.copy() + 1)       # (3, rows): column-major, row-major


def _observe(T, mode, case, rows):
    x, y = _operands(T, rows)
    f = (lambda x, y: case(T, x, y))
    if T is fg and mode == "compiled":
        f = fg.compile(f)
    r = f(x, y)
    viewed = outcome(lambda: r.view(-1).tolist())
    return r.stride(), np.asarray(r.tolist()), viewed


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rows", [2, 700], ids=["small", "large"])
@pytest.mark.parametrize("name", list(CASES))
def test_result_layout_matches_torch(name, rows, mode):
    if mode == "compiled" and rows != 2:
        pytest.skip("the compiled layout rule does not depend on size; one size keeps the compiles few")
    theirs = _observe(torch, "eager", CASES[name], rows)
    ours = _observe(fg, mode, CASES[name], rows)
    assert ours[0] == theirs[0], "strides"
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)
    if isinstance(theirs[2], list):         # (a compiled float64 pow may differ by an ulp)
        np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-6)
    else:
        assert ours[2] == theirs[2], "view(-1)"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("call", ["x.logsumexp(1)", "x.prod(1)", "x.logsumexp(1, keepdim=True)",
                                  "x.prod(1, keepdim=True)", "x.sum(1)"])
def test_reductions_of_a_permute_are_row_major(call, mode):
    """torch allocates a reduction's result row-major; eager logsumexp and prod kept the
    permute's layout (strides (1, 4)), so view(-1) of them raised."""
    def observe(T, mode):
        x = T.tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7).permute(2, 1, 0)
        f = eval("lambda x: " + call)
        r = (fg.compile(f) if T is fg and mode == "compiled" else f)(x)
        return r.stride(), r.tolist(), outcome(lambda: r.view(-1).shape[0])
    theirs, ours = observe(torch, "eager"), observe(fg, mode)
    assert ours[0] == theirs[0] and ours[2] == theirs[2]
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)


def test_gradient_through_a_relaid_pow_result():
    """The row-major copy of 3 ** x keeps the saved result and its version counter: the
    gradient is torch's, and a write to the result still makes backward raise."""
    def run(T):
        x = T.tensor([[0.5, 1.0, 1.5], [2.0, 2.5, 3.0]]).t().requires_grad_()
        r = 3 ** x
        r.sum().backward()
        y = 3 ** x
        y.mul_(2)
        return x.grad.tolist(), outcome(lambda: y.sum().backward())
    theirs, ours = run(torch), run(fg)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    assert ours[1][0] == theirs[1][0] == "RuntimeError"
    assert "modified by an inplace operation" in ours[1][1]
