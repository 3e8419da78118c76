"""TensorType interning and the memoised shape rules (ir/types.py, ir/ops/registry.py)."""
from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest

import fusegrad as fg
from fusegrad.ir import OPS, TensorType, float32, float64, int64
from fusegrad.ir.ops import infer_types


def test_tensor_types_are_interned_and_compare_by_value():
    a = TensorType((2, 3), float32)
    assert TensorType((2, 3), float32) is a
    assert TensorType([2, 3], float32) is a            # a list of sizes is the same type
    assert TensorType((2, 3), float64) is not a and TensorType((3, 2), float32) is not a
    assert a == TensorType((2, 3), float32) and hash(a) == hash(TensorType((2, 3), float32))
    assert a.shape == (2, 3) and a.ndim == 2 and a.numel == 6 and str(a) == "f32[2,3]"
    assert pickle.loads(pickle.dumps(a)) is a and copy.deepcopy(a) is a and copy.copy(a) is a


def test_tensor_type_is_immutable():
    a = TensorType((4,), int64)
    with pytest.raises(AttributeError, match="immutable"):
        a.shape = (5,)
    assert a.shape == (4,)


def test_memoised_shape_rule_raises_every_time():
    x, y = TensorType((3,), float32), TensorType((4,), float32)
    for _ in range(2):
        with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of tensor b \(4\)"):
            infer_types(OPS["add"], (x, y), {}, ())


def test_memoised_shape_rule_gives_the_rules_answer():
    x, y = TensorType((5, 1), float32), TensorType((3,), float32)
    first = infer_types(OPS["mul"], (x, y), {}, ())
    assert first == OPS["mul"].infer([x, y], {}) == [TensorType((5, 3), float32)]
    assert infer_types(OPS["mul"], (x, y), {}, ()) == first
    attrs = {"axes": (1,), "keepdim": True}
    frozen = tuple(sorted(attrs.items()))
    assert infer_types(OPS["sum"], (TensorType((5, 3), float32),), attrs, frozen) == \
        [TensorType((5, 1), float32)]


def test_scalar_operand_overflow_becomes_inf_silently():
    """A Python float beyond float32's range becomes inf in a float32 op, as in torch (no warning)."""
    x = fg.tensor([1.0, -2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = x * 1e39
    assert y.dtype == fg.float32
    np.testing.assert_array_equal(y.numpy(), np.array([np.inf, -np.inf], dtype=np.float32))
    np.testing.assert_array_equal((x + 3.0).numpy(), np.array([4.0, 1.0], dtype=np.float32))


def test_one_node_ops_reject_bad_operands():
    """addmm, mse_loss and nll_loss (recorded by nn.functional after its own checks) still
    name what is wrong when built directly."""
    f32 = lambda *shape: TensorType(shape, float32)            # noqa: E731
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(4x3 and 2x5\)"):
        infer_types(OPS["addmm"], (f32(5), f32(4, 3), f32(2, 5)), {}, ())
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(5\) must match the existing size "
                                           r"\(3\) at non-singleton dimension 1"):
        infer_types(OPS["addmm"], (f32(3), f32(4, 3), f32(3, 5)), {}, ())
    with pytest.raises(TypeError, match="mse_loss: operands must share a shape"):
        infer_types(OPS["mse_loss"], (f32(2, 3), f32(3)), {"reduction": "mean"}, (("reduction", "mean"),))
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        infer_types(OPS["mse_loss"], (f32(3), f32(3)), {"reduction": "avg"}, (("reduction", "avg"),))
    attrs = {"reduction": "mean", "ignore_index": -100}
    with pytest.raises(TypeError, match="nll_loss: expected"):
        infer_types(OPS["nll_loss"], (f32(4, 3), f32(4), TensorType((3,), int64)), attrs,
                    tuple(sorted(attrs.items())))
