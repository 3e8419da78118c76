"""Softmax's last step as torch's CPU kernels take it: along the last dim the row's exps are
multiplied by the reciprocal of their sum (aten's _vec_softmax_lastdim: 1 / sum once, then a
product an element); along any other dim they are divided by the sum (_vec_softmax). The two
differ by an ulp in places, so each is checked bit for bit against its formula, in the
reference (eager) and in a compiled kernel fed the same exps and sums."""
import numpy as np
import pytest

import fusegrad as fg


def _exps_and_sums(x, axis):
    ex = np.exp(x - np.maximum.reduce(x, axis=axis, keepdims=True))
    return ex, np.add.reduce(ex, axis=axis, keepdims=True, dtype=x.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_eager_softmax_last_dim_multiplies_by_the_reciprocal(dtype):
    x = (np.random.default_rng(3).standard_normal((6, 37)) * 3).astype(dtype)
    ex, total = _exps_and_sums(x, 1)
    product, quotient = ex * np.reciprocal(total), ex / total
    assert (product != quotient).any()          # (the case tells the two apart)
    for dim in (1, -1):
        np.testing.assert_array_equal(fg.from_numpy(x).softmax(dim).numpy(), product)
    # a 1-d input's only dim is its last
    np.testing.assert_array_equal(fg.from_numpy(x[2]).softmax(0).numpy(), product[2])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_eager_softmax_other_dims_divide(dtype):
    x = (np.random.default_rng(4).standard_normal((37, 6)) * 3).astype(dtype)
    ex, total = _exps_and_sums(x, 0)
    quotient = ex / total
    assert (ex * np.reciprocal(total) != quotient).any()
    np.testing.assert_array_equal(fg.from_numpy(x).softmax(0).numpy(), quotient)


def test_compiled_softmax_last_dim_is_the_product_of_its_own_exps_and_reciprocal():
    """The kernel's exps and sum are its own (the vectorised exp, a chunked sum), so the
    product is checked against them: the softmax over a row of exps of zero-shifted values
    whose maximum is 0, so the kernel's exp(x - max) is exp(x)."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((8, 300)) * 2).astype(np.float32)
    x -= x.max(axis=1, keepdims=True)           # (exactly: each row's maximum becomes 0)
    compiled = fg.compile(lambda t: (t.exp(), t.exp().sum(1, keepdim=True), t.softmax(1)))
    ex, total, probs = (r.numpy() for r in compiled(fg.from_numpy(x)))
    np.testing.assert_array_equal(probs, ex * np.reciprocal(total))
    assert (ex / total != probs).any()
