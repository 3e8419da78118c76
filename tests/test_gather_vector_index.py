"""gather's reference for an index that repeats one vector over x's other axes (index_select's
expand): whole slices by np.take. Checked against the element-wise form and torch."""
import numpy as np
import pytest

import fusegrad as fg
from fusegrad.ir.ops.gather import _gather_ref, _region, _repeated_vector

torch = pytest.importorskip("torch", reason="torch is the oracle for index_select")


@pytest.mark.parametrize("shape,axis", [((6, 5), 0), ((6, 5), 1), ((3, 4, 5), 1), ((3, 4, 5), 2), ((7,), 0),
                                        ((1, 5), 0), ((4, 1), 1)])
def test_a_repeated_vector_index_gathers_as_the_elementwise_form(shape, axis):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    vector = rng.integers(0, shape[axis], 9)
    index_shape = shape[:axis] + (9,) + shape[axis + 1:]
    index = np.broadcast_to(vector.reshape((1,) * axis + (9,) + (1,) * (len(shape) - axis - 1)), index_shape)
    assert _repeated_vector(index, shape, axis) is not None
    expected = np.ascontiguousarray(x[_region(shape, index, axis)])
    np.testing.assert_array_equal(_gather_ref(x, index, axis), expected)
    np.testing.assert_array_equal(_gather_ref(x, np.ascontiguousarray(index), axis), expected)


def test_indexes_that_are_no_repeated_vector_take_the_elementwise_form():
    x = np.arange(12.0).reshape(3, 4)
    shorter = np.broadcast_to(np.array([[2], [0]]), (2, 2))         # spans less than x on axis 1
    assert _repeated_vector(shorter, x.shape, 0) is None
    varying = np.array([[0, 1, 2, 0], [2, 2, 1, 0]])
    assert _repeated_vector(varying, x.shape, 0) is None
    np.testing.assert_array_equal(_gather_ref(x, varying, 0), [[0, 5, 10, 3], [8, 9, 6, 3]])


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select_values_gradients_and_errors_match_torch(compiled, dim):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 6)).astype(np.float32)
    idx = np.array([4, 0, 0, 2])

    def f(L, t, i):
        return (L.index_select(t, dim, i) * 3).sum(0)
    ours = fg.compile(lambda t, i: f(fg, t, i)) if compiled else (lambda t, i: f(fg, t, i))
    w, tw = fg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y, ty = ours(w, fg.tensor(idx)), f(torch, tw, torch.tensor(idx))
    # (compiled sums add in float64: equal to torch's within float32 rounding, eagerly bit for bit)
    check = np.testing.assert_allclose if compiled else np.testing.assert_array_equal
    tolerance = {"rtol": 1e-6} if compiled else {}
    check(y.detach().numpy(), ty.detach().numpy(), **tolerance)
    y.sum().backward()
    ty.sum().backward()
    check(w.grad.numpy(), tw.grad.numpy(), **tolerance)
    with pytest.raises(IndexError, match="^index out of range in self$"):
        fg.tensor(x).index_select(0, fg.tensor([7]))


@pytest.mark.parametrize("shape,axis", [((50, 7), 0), ((6, 40), 1), ((3, 20, 5), 1), ((30,), 0), ((5, 3), 0)])
def test_scatter_add_of_a_repeated_vector_adds_in_index_order_as_add_at(shape, axis):
    """index_select's backward (torch's index_add_): slices added in rounds, each slice's
    additions in index order, bit for bit np.add.at's (duplicates included)."""
    from fusegrad.ir.ops.gather import _scatter_add_ref
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape).astype(np.float32)
    vector = rng.integers(0, shape[axis], 60)
    index_shape = shape[:axis] + (60,) + shape[axis + 1:]
    index = np.broadcast_to(vector.reshape((1,) * axis + (60,) + (1,) * (len(shape) - axis - 1)), index_shape)
    src = (rng.standard_normal(index_shape) * 100).astype(np.float32)
    expected = x.copy()
    np.add.at(expected, _region(shape, index, axis), src)
    np.testing.assert_array_equal(_scatter_add_ref(x, index, src, axis), expected)
    with pytest.raises(RuntimeError, match="out of bounds"):
        _scatter_add_ref(x, np.broadcast_to(np.full_like(index[..., :1] if axis != len(shape) - 1 else index,
                                                         shape[axis]), index.shape), src, axis)


def test_index_select_gradient_with_repeated_indices_matches_torch_bit_for_bit():
    x = np.random.default_rng(5).standard_normal((6, 300)).astype(np.float32)
    idx = np.array([5, 1, 5, 5, 0, 1, 3])
    g = (np.random.default_rng(6).standard_normal((7, 300)) * 10).astype(np.float32)
    w, tw = fg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    w.index_select(0, fg.tensor(idx)).backward(fg.tensor(g))
    tw.index_select(0, torch.tensor(idx)).backward(torch.tensor(g))
    np.testing.assert_array_equal(w.grad.numpy(), tw.grad.numpy())


@pytest.mark.parametrize("shape,dim", [((50, 7), 0), ((6, 40), 1), ((3, 20, 5), 2), ((30,), 0)])
def test_integer_index_gradient_with_duplicates_and_negatives_matches_torch_bit_for_bit(shape, dim):
    """x[idx]'s backward (index_put_at, accumulate) adds whole slices in index order."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape).astype(np.float32)
    idx = rng.integers(-shape[dim], shape[dim], 60)
    g = (rng.standard_normal(shape[:dim] + (60,) + shape[dim + 1:]) * 100).astype(np.float32)
    w, tw = fg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    w[(slice(None),) * dim + (fg.tensor(idx),)].backward(fg.tensor(g))
    tw[(slice(None),) * dim + (torch.tensor(idx),)].backward(torch.tensor(g))
    np.testing.assert_array_equal(w.grad.numpy(), tw.grad.numpy())
    w.grad = tw.grad = None
    (w[(slice(None),) * dim + (fg.tensor(idx),)] * 3).sum().backward()
    (tw[(slice(None),) * dim + (torch.tensor(idx),)] * 3).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), tw.grad.numpy())
