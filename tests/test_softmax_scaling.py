"""Softmax's last step as torch's CPU kernels take it: along the last dim the row's exps are
multiplied by the reciprocal of their sum (aten's _vec_softmax_lastdim: 1 / sum once, then a
product an element); along any other dim they are divided by the sum (_vec_softmax). The two
differ by an ulp in places, so each is checked bit for bit against its formula: in the
reference, in eager's row loop and in a compiled kernel, each with its own exps and sums."""
import numpy as np
import pytest

import fusegrad as fg
from fusegrad.codegen import eager_loops_jit as loops
from fusegrad.ir import OPS


def _exps_and_sums(x, axis):
    ex = np.exp(x - np.maximum.reduce(x, axis=axis, keepdims=True))
    return ex, np.add.reduce(ex, axis=axis, keepdims=True, dtype=x.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reference_softmax_last_dim_multiplies_by_the_reciprocal(dtype):
    x = (np.random.default_rng(3).standard_normal((6, 37)) * 3).astype(dtype)
    ex, total = _exps_and_sums(x, 1)
    product, quotient = ex * np.reciprocal(total), ex / total
    assert (product != quotient).any()          # (the case tells the two apart)
    for dim in (1, -1):
        np.testing.assert_array_equal(OPS["softmax"].ref(x, axis=dim), product)
    # a 1-d input's only dim is its last
    np.testing.assert_array_equal(OPS["softmax"].ref(x[2], axis=0), product[2])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reference_softmax_other_dims_divide(dtype):
    x = (np.random.default_rng(4).standard_normal((37, 6)) * 3).astype(dtype)
    ex, total = _exps_and_sums(x, 0)
    quotient = ex / total
    assert (ex * np.reciprocal(total) != quotient).any()
    np.testing.assert_array_equal(OPS["softmax"].ref(x, axis=0), quotient)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_eager_row_loop_multiplies_by_the_reciprocal(dtype):
    """Large eager softmaxes run a row at a time (codegen/eager_loops_jit.py, the vectorised
    exp): each row's exps times the reciprocal of their sum, rounded once in x's dtype."""
    x = (np.random.default_rng(6).standard_normal((5, 300)) * 3).astype(dtype)
    ex = np.empty_like(x)
    totals = [loops._exp_into_and_sum(x, r, dtype(loops._row_max(x, r)), ex, dtype(0)) for r in range(len(x))]
    total = np.array(totals, dtype=dtype)[:, None]
    product = ex * np.reciprocal(total)
    assert (product != ex / total).any()
    got = np.empty_like(x)
    loops.softmax_rows_into(x, got)
    np.testing.assert_array_equal(got, product)


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
