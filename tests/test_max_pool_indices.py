"""Max pooling's values, indices and gradient by torch's loop (ir/ops/pool.py, and its Numba
form in ir/reference_loops.py for large inputs): among NaNs the last one wins, and a window that
starts in the padding with no value above -inf names its first position inside the input."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle")

import fusegrad as fg  # noqa: E402
from fusegrad.ir import torch_order_jit  # noqa: E402

NAN, INF = float("nan"), float("inf")
CASES = {
    "nans": ([[[[NAN, 1., NAN, 2.]]]], dict(kernel_size=(1, 4))),
    "minus-inf-with-padding": ([[[[-INF, -INF, 3., 3.]]]], dict(kernel_size=(1, 2), padding=(0, 1))),
    "ties": ([[[[3., 3., 1., 3.]]]], dict(kernel_size=(1, 2), stride=(1, 1))),
    "dilated-padded-ceil": (None, dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), dilation=(1, 2),
                                       ceil_mode=True)),
}


def _input(values):
    if values is not None:
        return np.array(values)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 40, 41))
    x.flat[::7] = NAN
    x.flat[3::11] = x.flat[4::11]
    x.flat[5::13] = -INF
    return x


@pytest.mark.parametrize("loop", [False, True], ids=["numpy", "numba-loop"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_values_indices_and_gradient_as_torch(case, loop, monkeypatch):
    values, options = CASES[case]
    x = _input(values)
    # (the Numba loop serves inputs of LOOP_FROM elements or more, once it pays: forced here)
    monkeypatch.setattr(torch_order_jit, "LOOP_FROM", 1 if loop else 1 << 40)
    import fusegrad.ir.ops.pool as pool
    monkeypatch.setattr(pool, "LOOP_FROM", 1 if loop else 1 << 40)
    monkeypatch.setattr(torch_order_jit, "_LOOP_ELEMENTS", [1 << 40])

    def run(T):
        t = T.tensor(x, requires_grad=True)
        out, idx = T.nn.functional.max_pool2d_with_indices(t, **options)
        out.nan_to_num(0.0, 0.0, 0.0).sum().backward()
        return out.detach().numpy(), idx.numpy(), t.grad.numpy()
    ours, theirs = run(fg), run(torch)
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[1], theirs[1])
    np.testing.assert_array_equal(ours[2], theirs[2])
