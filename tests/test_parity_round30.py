"""Round 30 of torch parity: a pow whose exponent is one number for all elements (a Python
number, or a gradient's `exponent - 1`) takes sqrt for 0.5 and 1/sqrt for -0.5 in compiled
kernels as torch's pow(Tensor, Scalar) does ((-inf) ** 0.5 is nan, (-0.) ** 0.5 is -0.; C99
pow gives inf and 0.), while a tensor exponent keeps C99 pow per element, as torch's
pow(Tensor, Tensor). Values are chosen where every result is exact, so outcomes compare
bit for bit (signs of zero and NaN included)."""
import math

import pytest

import fusegrad as fg
from parity_support import exact_outcome

torch = pytest.importorskip("torch", reason="torch is the oracle")

VALUES = [-math.inf, -0.0, 0.0, 0.25, 1.0, 4.0, math.inf, math.nan, -4.0]
EXPONENTS = [1.5, 2.5, 0.5, -0.5, -1.5, 3.0]


def _grad(L, exponent, compiled):
    def loss(x):
        return (x ** exponent).sum()
    if L is torch:
        x = torch.tensor(VALUES, requires_grad=True)
        loss(x).backward()
        return x.grad
    grad = fg.grad(loss)
    return (fg.compile(grad) if compiled else grad)(fg.tensor(VALUES))


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("exponent", EXPONENTS)
def test_gradient_of_a_number_power_matches_torch_at_special_values(exponent, compiled):
    assert exact_outcome(lambda: _grad(fg, exponent, compiled)) == exact_outcome(lambda: _grad(torch, exponent, False))


@pytest.mark.parametrize("exponent", EXPONENTS)
def test_compiled_number_power_matches_torch_at_special_values(exponent):
    got = exact_outcome(lambda: fg.compile(lambda x: x ** exponent)(fg.tensor(VALUES)))
    assert got == exact_outcome(lambda: torch.tensor(VALUES) ** exponent)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_a_tensor_exponent_keeps_c99_pow_per_element(compiled):
    # torch's pow(Tensor, Tensor): (-inf) ** 0.5 is inf, (-0.) ** 0.5 is 0., (-0.) ** -0.5 is inf
    exponents = [0.5, 0.5, -0.5, 0.5, -0.5, 1.5, 0.5, 0.5, 0.5]

    def power(L):
        return L.tensor(VALUES) ** L.tensor(exponents)
    run = fg.compile(lambda: power(fg)) if compiled else (lambda: power(fg))
    assert exact_outcome(run) == exact_outcome(lambda: power(torch))
