"""Large elementwise reference calls split into row blocks on threads (ir/threaded.py):
bit-identical to one NumPy call, for every broadcasting pattern, with warnings silenced."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from fusegrad.ir import TensorType, bool_, float32, float64, threaded
from fusegrad.ir.interpreter import apply_ref

ROWS = 2 * threaded.MIN_ELEMENTS // 256 + 3     # an odd row count: uneven blocks


@pytest.fixture(autouse=True)
def two_threads(monkeypatch):
    monkeypatch.setenv("FUSEGRAD_REF_THREADS", "3")


@pytest.mark.parametrize("ufunc,shapes,dtype", [
    (np.multiply, [(ROWS, 256), (ROWS, 256)], np.float32),
    (np.add, [(ROWS, 256), (1, 256)], np.float32),           # a row broadcast
    (np.subtract, [(ROWS, 1), (ROWS, 256)], np.float64),     # a column broadcast
    (np.true_divide, [(), (ROWS, 256)], np.float32),         # a 0-d operand
    (np.maximum, [(256,), (ROWS, 256)], np.float32),         # fewer dims
    (np.tanh, [(ROWS, 256)], np.float32),
    (np.less, [(ROWS, 256), (ROWS, 256)], np.float32),       # a bool result
    (np.multiply, [(ROWS * 256,), ()], np.float32),          # 1-d
])
def test_blocks_equal_one_call(ufunc, shapes, dtype):
    rng = np.random.default_rng(len(shapes))
    arrays = [np.asarray(rng.standard_normal(s), dtype=dtype) for s in shapes]
    want = ufunc(*arrays)
    out_type = TensorType(want.shape, {np.dtype(np.float32): float32, np.dtype(np.float64): float64,
                                       np.dtype(np.bool_): bool_}[want.dtype])
    assert threaded.splittable(ufunc, arrays, out_type)
    (got,) = apply_ref(ufunc, arrays, {}, [out_type])
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_workers_silence_floating_point_warnings():
    x = np.zeros((ROWS, 256), np.float32)
    out_type = TensorType(x.shape, float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                      # any RuntimeWarning fails the test
        (got,) = apply_ref(np.true_divide, [x, x], {}, [out_type])      # 0/0 in every block
    assert np.isnan(got).all()


def test_small_mixed_or_reducing_calls_are_not_split():
    big = np.ones((ROWS, 256), np.float32)
    t = TensorType(big.shape, float32)
    assert not threaded.splittable(np.add, [big[:2], big[:2]], TensorType((2, 256), float32))
    assert not threaded.splittable(np.add, [big, big.astype(np.float64)], TensorType(big.shape, float64))
    assert not threaded.splittable(np.add.reduce, [big], t)
    assert not threaded.splittable(np.divmod, [big, big], t)             # two outputs


def test_one_thread_turns_it_off(monkeypatch):
    monkeypatch.setenv("FUSEGRAD_REF_THREADS", "1")
    assert threaded.thread_count() == 1
    x = np.arange(ROWS * 256, dtype=np.float32).reshape(ROWS, 256)
    (got,) = apply_ref(np.multiply, [x, x], {}, [TensorType(x.shape, float32)])
    np.testing.assert_array_equal(got, x * x)


def test_straight_line_steps_split_too():
    from fusegrad.ir import Builder, Emitter, run_program
    from fusegrad.ir.interpreter import StraightLine
    b = Builder()
    e = Emitter(b)
    x = b.input(TensorType((ROWS, 256), float32))
    col = b.input(TensorType((ROWS, 1), float32))
    t = e.tanh(x)                                # a new array (split)
    u = e.mul(t, col)                            # written into t's array (split)
    b.program.outputs = [e.sub(u, x), e.lt(u, 0.5)]
    line = StraightLine(b.program)
    assert {step[-1] for step in line.steps} >= {-1}          # a large ufunc step into a new array
    rng = np.random.default_rng(1)
    args = [rng.standard_normal((ROWS, 256)).astype(np.float32), rng.standard_normal((ROWS, 1)).astype(np.float32)]
    for got, want in zip(line(args), run_program(b.program, args)):
        np.testing.assert_array_equal(got, want)


def test_single_threaded_turns_splitting_off_on_this_thread():
    x = np.ones((ROWS, 256), np.float32)
    t = TensorType(x.shape, float32)
    with threaded.single_threaded():
        assert not threaded.splittable(np.multiply, [x, x], t)
        with threaded.single_threaded():
            pass
        assert not threaded.splittable(np.multiply, [x, x], t)     # still inside the outer one
    assert threaded.splittable(np.multiply, [x, x], t)


def _softmax_family_by_formula(op, arrays, axis):
    """The softmax references' formulas in one piece (as before they were split by rows)."""
    if op in ("softmax", "log_softmax"):
        x, = arrays
        shifted = x - np.maximum.reduce(x, axis=axis, keepdims=True)
        if op == "softmax":
            ex = np.exp(shifted)
            total = np.add.reduce(ex, axis=axis, keepdims=True, dtype=x.dtype)
            # (torch's last-dim softmax multiplies by the sum's reciprocal, other dims divide)
            return ex * np.reciprocal(total) if axis % x.ndim == x.ndim - 1 else ex / total
        return shifted - np.log(np.add.reduce(np.exp(shifted), axis=axis, keepdims=True, dtype=x.dtype))
    g, y = arrays
    if op == "softmax_backward_data":
        return (g - np.add.reduce(g * y, axis=axis, keepdims=True, dtype=y.dtype)) * y
    return g - np.exp(y) * np.add.reduce(g, axis=axis, keepdims=True, dtype=y.dtype)


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "softmax_backward_data", "log_softmax_backward_data"])
@pytest.mark.parametrize("axis,shape", [(1, (ROWS, 256)), (-1, (3, ROWS // 3, 256)), (0, (ROWS, 256))])
def test_softmax_family_in_row_blocks_equals_one_piece(op, axis, shape):
    """Split into rows on threads where the axis is the last (every row on its own), whole
    otherwise: bit for bit the one-piece formulas, in the reference and in the pooled writer."""
    from fusegrad.ir import OPS
    rng = np.random.default_rng(0)
    arrays = [(rng.standard_normal(shape) * 4).astype(np.float32)
              for _ in range(1 if op in ("softmax", "log_softmax") else 2)]
    arrays[-1][0, 0] = np.inf if op == "softmax" else arrays[-1][0, 0]       # a non-finite row too
    with np.errstate(all="ignore"):
        want = _softmax_family_by_formula(op, arrays, axis)
        got = OPS[op].ref(*arrays, axis=axis)
        out = np.full(shape, 7.0, np.float32)
        OPS[op].extra["ref_into"](out, *arrays, axis=axis)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(out, want)
    assert threaded.splittable_rows(out) and threaded.thread_count() == 3


@pytest.mark.parametrize("op", ["relu", "sigmoid", "tanh_backward", "sigmoid_backward", "threshold_backward"])
@pytest.mark.parametrize("shape", [(ROWS * 256,), (ROWS, 256)], ids=["1d", "2d"])
def test_elementwise_writers_in_row_blocks_equal_one_piece(op, shape):
    """The op table's writers that are not one ufunc call split into row blocks on threads
    (threaded.in_row_blocks), bit for bit (signed zeros, NaN and inf included)."""
    from fusegrad.ir import OPS
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(shape).astype(np.float32) for _ in range(1 if op in ("relu", "sigmoid") else 2)]
    flat = arrays[-1].reshape(-1)
    flat[:5] = [-0.0, 0.0, np.nan, np.inf, -np.inf]
    into = OPS[op].extra["ref_into"]
    out = np.full(shape, 7.0, np.float32)
    with np.errstate(all="ignore"):
        into(out, *arrays)
        with threaded.single_threaded():
            whole = np.full(shape, 7.0, np.float32)
            into(whole, *arrays)
    assert threaded.splittable_rows(out)
    np.testing.assert_array_equal(out, whole)
    assert np.array_equal(np.signbit(out), np.signbit(whole))


def test_split_results_come_from_the_buffer_pool(monkeypatch):
    # (a fresh result of 2**20 or more elements faulted in every page on every call)
    from fusegrad.ir import buffers
    monkeypatch.setattr(buffers.POOL, "limit_bytes", 512 << 20)
    x = np.random.default_rng(3).standard_normal((ROWS, 256)).astype(np.float32)
    out_type = TensorType(x.shape, float32)
    (kept,) = apply_ref(np.tanh, [x], {}, [out_type])
    assert buffers.POOL.holds(kept.base)
    before = buffers.POOL.reused
    for _ in range(3):
        apply_ref(np.exp, [x], {}, [out_type])          # dropped at once: its buffer is reused
    assert buffers.POOL.reused >= before + 2
    np.testing.assert_array_equal(kept, np.tanh(x))     # the kept result was never handed out again
