"""The IR ops pow_number and number_pow (ir/ops/elementwise.py): a Python number kept a
double, as torch's Scalar. Compiled kernels against the reference executor, with and without
gradients, float32 (both tail rules) and float64; their shape rule's refusals."""
import numpy as np
import pytest

from fusegrad.ir import float32, float64, int64
from fusegrad.ir.ops import OPS
from fusegrad.ir.types import TensorType
from test_codegen_support import build, check


@pytest.mark.parametrize("dtype", [float32, float64])
@pytest.mark.parametrize("tail", [True, False])
@pytest.mark.parametrize("grad", [False, True])
def test_pow_number_compiled_is_the_reference(dtype, tail, grad):
    program = build(lambda e, x, n: e.op("pow_number", x, n, tail=tail), ((7, 5), dtype), ((), float64), grad=grad)
    rng = np.random.default_rng(1)
    x = rng.uniform(0.1, 3.0, (7, 5)).astype(dtype.np)
    x[0, :3] = [0.0, -1.0, np.inf]
    for number in (1.00000001, 2.7, -1.5, 0.5, 3.0):
        args = [x, np.float64(number)] + ([np.ones((7, 5), dtype.np)] if grad else [])
        check(program, args, rtol=4e-6 if dtype is float32 else 1e-12, atol=0)


@pytest.mark.parametrize("dtype", [float32, float64])
@pytest.mark.parametrize("grad", [False, True])
def test_number_pow_compiled_is_the_reference(dtype, grad):
    program = build(lambda e, n, x: e.op("number_pow", n, x), ((), float64), ((6, 4), dtype), grad=grad)
    rng = np.random.default_rng(2)
    x = rng.uniform(-4.0, 4.0, (6, 4)).astype(dtype.np)
    for number in (1.0001, 2.5, 0.0, 1e-5):
        args = [np.float64(number), x] + ([np.ones((6, 4), dtype.np)] if grad else [])
        check(program, args, rtol=4e-6 if dtype is float32 else 1e-12, atol=0)


@pytest.mark.parametrize("op,types", [
    ("pow_number", (TensorType((3,), int64), TensorType((), float64))),
    ("pow_number", (TensorType((3,), float32), TensorType((), float32))),
    ("pow_number", (TensorType((3,), float32), TensorType((3,), float64))),
    ("number_pow", (TensorType((), float64), TensorType((3,), int64))),
])
def test_a_number_op_refuses_what_the_tracer_never_makes(op, types):
    with pytest.raises(TypeError, match=f"{op}: expected a floating point tensor and a float64 0-d number"):
        OPS[op].infer(list(types), {"tail": True})
