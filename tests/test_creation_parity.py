"""Creation functions against torch at run time: how sizes, fill values, dtypes and seeds
are taken, and the exact errors for everything else (torch is the oracle)."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle for creation functions")
from parity_support import assert_same, same_error  # noqa: E402

import fusegrad as fg  # noqa: E402

SHAPES = [
    "zeros(())", "zeros([])", "zeros(0)", "zeros(2, 3)", "zeros((2, 3))", "zeros([2, 3])", "zeros((2, True))",
    "zeros(2, True)", "zeros(np.int64(3))", "zeros(L.tensor(3))", "zeros((L.tensor(2), 3))", "ones(L.Size([2, 1]))",
    "full([2], True)", "full((2,), np.int64(3))", "full((2,), np.float64(1.5))", "full((2,), L.tensor(1.5))",
    "full((2,), 1.5, dtype=L.bool)", "full((2,), True, dtype=L.float32)", "arange(L.tensor(3))",
    "arange(L.tensor(3.0))", "arange(0, L.tensor(3))", "arange(np.int64(3))", "arange(np.float64(3))",
    "arange(True)", "tensor([1e40])", "tensor(1e300, dtype=L.float32)", "tensor([-1e40, 1.0])",
    # a flat list of Python floats (copied_tensor's shortcut), at and beyond float32's range
    "tensor([0.1, -2.5, 3.0])", "tensor([float('nan'), 1e40])", "tensor([1.0, float('nan'), -1e40])",
    "tensor([3.4028235677973366e+38])", "tensor([3.4028235e38, -3.4028235e38])",
    "tensor([-0.0, float('inf')], requires_grad=True)", "tensor([1.0, 2])", "tensor([0.5], dtype=L.float64)",
]

ERRORS = [
    "zeros(2.5)", "ones(None)", "empty('a')", "zeros(True)", "randn(2.5)", "rand('a')",
    "zeros(2.5, 2)", "zeros(None, 2)", "zeros(True, 2)", "zeros(2, (3,))", "zeros(2, None)", "randn(2, 3.0)",
    "zeros((2.5,))", "zeros((True, 2))", "zeros([[2]])", "zeros((L.tensor(2.0),))", "zeros((2, L.tensor(2.0)))",
    "zeros((2, None))", "zeros([2, 'a'])", "zeros(L.tensor([2, 3]))", "zeros(L.tensor(2.5))",
    "full(2, 1.0)", "full(None, 1.0)", "full((2.5,), 1.0)", "full((2,), 'a')", "full((2,), None)", "full((2,), [1])",
    "randn(2, dtype=L.int64)", "randn(2, dtype=L.bool)", "rand(2, dtype=L.int64)", "rand(2, dtype=L.bool)",
    "randn(2, requires_grad=True, dtype=L.int64)", "randn_like(L.ones(2, dtype=L.int64))",
    "rand_like(L.ones(2, dtype=L.bool))", "zeros(2, -1)", "empty(-2)", "manual_seed('a')", "manual_seed(2 ** 64)",
    "ones(2, dtype=L.int64).mean(dtype=L.int64)", "ones(2).mean(dtype=L.bool)",
    # reshape/permute read sizes with the same parser as the creation functions
    "ones(2).reshape((True, 2))", "ones(2, 1).permute((True, 0))", "ones(2).reshape(True, 2)",
]


def _run(lib, expression):
    return eval("L." + expression, {"L": lib, "np": np})


@pytest.mark.parametrize("expression", SHAPES)
def test_values_shapes_and_dtypes_match_torch(expression):
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # e.g. NumPy's overflow warning for 1e40 as float32
        ours = _run(fg, expression)
    assert_same(ours, _run(torch, expression))


@pytest.mark.parametrize("expression", ERRORS)
def test_errors_match_torch(expression):
    same_error(lambda lib: _run(lib, expression))


@pytest.mark.parametrize("seed", [-1, 1.5, 0, 2 ** 63])
def test_manual_seed_takes_torchs_seeds(seed):
    fg.manual_seed(seed)
    first = fg.randn(4)
    fg.manual_seed(int(seed) % 2 ** 64)
    np.testing.assert_array_equal(first.numpy(), fg.randn(4).numpy())
    assert torch.manual_seed(seed).initial_seed() == int(seed) % 2 ** 64
