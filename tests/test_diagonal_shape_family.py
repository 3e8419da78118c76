"""torch's diagonal and shape functions (tracer/shape_functions.py, ir/ops/diagonal.py) against
torch 2.13: values, dtypes, grad_fn names, gradients, views and their writes, errors, fg.compile."""
import warnings

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch 2.13 is the oracle of these cases")

from parity_support import assert_same_outcome, distinct_values, lib_outcome  # noqa: E402


def _lib_tensor(lib, array, grad=False):
    t = lib.tensor(array)
    return t.requires_grad_() if grad else t


def _name(t):
    return None if t.grad_fn is None else type(t.grad_fn).__name__


def _compare(fn, *arrays, grad=True, strides=False):
    """fn(lib, *tensors) on torch and fusegrad: results (a tensor or a tuple of them) equal in
    shape, dtype, values and grad_fn name, and the inputs' gradients of a weighted sum equal."""
    results = {}
    for lib in (torch, fg):
        xs = [_lib_tensor(lib, a, grad and a.dtype.kind == "f") for a in arrays]
        out = fn(lib, *xs)
        outs = out if isinstance(out, tuple) else (out,)
        got = [(tuple(o.shape), str(o.dtype).split(".")[-1], o.detach().numpy().copy(), _name(o),
                o.stride() if strides else None) for o in outs]
        grads = []
        live = [o for o in outs if o.requires_grad]
        if live:
            total = sum((o * lib.arange(o.numel(), dtype=o.dtype).reshape(o.shape).sin()).sum() for o in live)
            total.backward()
            grads = [None if x.grad is None else x.grad.numpy().copy() for x in xs]
        results[lib] = got, grads
    (theirs, tgrads), (ours, ograds) = results[torch], results[fg]
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert o[0] == t[0] and o[1] == t[1] and o[3] == t[3] and o[4] == t[4], (o, t)
        np.testing.assert_allclose(o[2], t[2], rtol=1e-6, atol=1e-6)
    assert len(ograds) == len(tgrads)
    for o, t in zip(ograds, tgrads):
        assert (o is None) == (t is None)
        if o is not None:
            np.testing.assert_allclose(o, t, rtol=1e-6, atol=1e-6)


def _same_error(fn, *arrays):
    outcomes = [lib_outcome(lib, lambda lib: fn(lib, *[_lib_tensor(lib, a) for a in arrays])) for lib in (fg, torch)]
    assert outcomes[1][0] == "error", outcomes[1]
    assert_same_outcome(*outcomes)


X = distinct_values((3, 4))
X3 = distinct_values((2, 3, 4))
V = distinct_values((4,))


# --------------------------------------------------------------------- diagonals
@pytest.mark.parametrize("args", [(), (1,), (-1,), (2, 1, 0), (0, -1, -2), (5,), (-5,), (0, 0, 2), (1, 2, 0)])
def test_diagonal(args):
    arrays = (X3,) if len(args) == 3 else (X,)
    _compare(lambda lib, x: x.diagonal(*args), *arrays, strides=True)
    _compare(lambda lib, x: lib.diagonal(x, *args), *arrays)


def test_diagonal_keywords_and_dtypes():
    _compare(lambda lib, x: lib.diagonal(x, offset=1, dim1=1, dim2=0), X)
    _compare(lambda lib, x: x.diagonal(), distinct_values((3, 3), "i64"))
    _compare(lambda lib, x: x.diagonal(), distinct_values((3, 3), "bool"))


def test_diagonal_is_a_view_both_ways():
    for lib in (torch, fg):
        b = lib.zeros(3, 4)
        d = b.diagonal(1)
        assert d._base is b
        d.add_(5)                               # through the view ...
        b[0, 1] = 7.0                           # ... and through the base
        assert d.tolist() == [7.0, 5.0, 5.0]
        assert b.sum().item() == 17.0


def test_diagonal_write_gradients_and_names():
    def f(lib, x):
        y = x * 2
        y.diagonal(-1).mul_(3)
        return y
    _compare(f, X)

    def g(lib, x):
        y = x * 3
        d = y.diagonal()
        y.add_(1)                               # the view regenerates from the written base
        return d
    _compare(g, X)


@pytest.mark.parametrize("fn", [
    lambda lib, x: lib.diag(x), lambda lib, x: lib.diag(x, 1), lambda lib, x: x.diag(-2),
    lambda lib, x: lib.diag_embed(x), lambda lib, x: lib.diag_embed(x, 1, 0, -1), lambda lib, x: x.diag_embed(-1, 1, 0),
    lambda lib, x: lib.diagflat(x), lambda lib, x: x.diagflat(2), lambda lib, x: lib.diagflat(x.t()),
])
@pytest.mark.parametrize("array", [V, X], ids=["1d", "2d"])
def test_diag_family(fn, array):
    _compare(fn, array)


def test_diag_of_a_matrix_is_a_copy():
    for lib in (torch, fg):
        x = lib.ones(3, 3)
        d = lib.diag(x)
        d.add_(1)
        assert x.sum().item() == 9.0 and d._base is None


@pytest.mark.parametrize("array", [X, X.T.copy(), distinct_values((3, 3), "i64"), distinct_values((0, 2)),
                                  distinct_values((2, 2), "f64")], ids=["wide", "tall", "int", "empty", "f64"])
def test_trace(array):
    _compare(lambda lib, x: lib.trace(x), array)
    _compare(lambda lib, x: x.trace(), array)


# --------------------------------------------------------------------- roll, rot90
@pytest.mark.parametrize("args", [(1,), (-3,), (1, 0), (5, 1), ((1, 2), (0, 1)), ([2, -1], [1, 1]), (1, -1),
                                  (7, None)])
def test_roll(args):
    _compare(lambda lib, x: lib.roll(x, *args), X)
    _compare(lambda lib, x: x.roll(*args), X, strides=True)


def test_roll_odd_shapes():
    _compare(lambda lib, x: lib.roll(x, 2), np.array(1.5, np.float32))
    _compare(lambda lib, x: lib.roll(x, 2, 0), distinct_values((0, 3)))
    _compare(lambda lib, x: lib.roll(x.t(), 1, 0), X, strides=True)
    _compare(lambda lib, x: lib.roll(x, shifts=1, dims=1), distinct_values((2, 3), "i64"))


@pytest.mark.parametrize("k", [-1, 0, 1, 2, 3, 6])
@pytest.mark.parametrize("dims", [(0, 1), (1, 0), (-1, 0)])
def test_rot90(k, dims):
    _compare(lambda lib, x: lib.rot90(x, k, dims), X, strides=True)


def test_diag_embed_of_3d():
    _compare(lambda lib, x: lib.diag_embed(x, 1, 0, 2), X3)
    _compare(lambda lib, x: x.diag_embed(-1, 3, 1), X3)


def test_rot90_of_3d_and_method():
    _compare(lambda lib, x: x.rot90(1, [0, 2]), X3, strides=True)
    _compare(lambda lib, x: x.rot90(), X3)


# --------------------------------------------------------------------- triangle indices, meshgrid
@pytest.mark.parametrize("args", [(3, 3), (3, 4, 1), (4, 3, -1), (0, 0), (3, 5, 10), (3, 5, -10), (1, 0)])
def test_triangle_indices(args):
    for name in ("tril_indices", "triu_indices"):
        ours, theirs = getattr(fg, name)(*args), getattr(torch, name)(*args)
        assert ours.dtype is fg.int64 and ours.tolist() == theirs.tolist()
    assert fg.tril_indices(3, 3, dtype=fg.int64).tolist() == torch.tril_indices(3, 3).tolist()


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(indexing):
    a, b, c = distinct_values((3,)), distinct_values((2,)), np.array(4.0, np.float32)
    _compare(lambda lib, x, y: lib.meshgrid(x, y, indexing=indexing), a, b)
    _compare(lambda lib, x, y, z: lib.meshgrid([x, y, z], indexing=indexing), a, b, c)
    _compare(lambda lib, x: lib.meshgrid(x, indexing=indexing), a)
    for lib in (torch, fg):
        grids = lib.meshgrid(lib.arange(3.0), lib.arange(2.0), indexing=indexing)
        assert grids[0]._base is not None


def test_meshgrid_warns_without_indexing():
    texts = []
    for lib in (torch, fg):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.meshgrid(lib.arange(2), lib.arange(3))
        texts.append([(w.category, str(w.message)) for w in caught])
    assert texts[0] == texts[1] and len(texts[0]) == 1


def test_cartesian_prod():
    a, b = distinct_values((3,)), distinct_values((2,))
    _compare(lambda lib, x, y: lib.cartesian_prod(x, y), a, b)
    _compare(lambda lib, x, y, z: lib.cartesian_prod(x, y, z), a, b, distinct_values((1,)))
    x = fg.arange(3)
    assert fg.cartesian_prod(x) is x


# --------------------------------------------------------------------- repeat_interleave
@pytest.mark.parametrize("fn", [
    lambda lib, x: x.repeat_interleave(2), lambda lib, x: lib.repeat_interleave(x, 3, dim=0),
    lambda lib, x: x.repeat_interleave(2, -1, output_size=8), lambda lib, x: x.repeat_interleave(0, 1),
    lambda lib, x: x.repeat_interleave(lib.tensor([1, 0, 2]), dim=0),
    lambda lib, x: x.repeat_interleave(lib.tensor(2)), lambda lib, x: x.repeat_interleave(lib.tensor([3]), dim=1),
    lambda lib, x: lib.repeat_interleave(x, repeats=lib.tensor([1, 2, 0, 1]), dim=1, output_size=4),
])
def test_repeat_interleave(fn):
    _compare(fn, X)


def test_repeat_interleave_odd_inputs():
    _compare(lambda lib, x: x.repeat_interleave(3), np.array(2.0, np.float32))
    _compare(lambda lib, x: x.repeat_interleave(2), distinct_values((3,), "i64"))
    for lib_call in (lambda lib: lib.repeat_interleave(lib.tensor([1, 2, 3])),
                     lambda lib: lib.repeat_interleave(lib.tensor([2, 0, 1]), output_size=3),
                     lambda lib: lib.tensor([1, 2]).repeat_interleave()):
        assert_same_outcome(lib_outcome(fg, lib_call), lib_outcome(torch, lib_call))


# --------------------------------------------------------------------- tensor_split and kin
@pytest.mark.parametrize("fn", [
    lambda lib, x: lib.tensor_split(x, 3, 1), lambda lib, x: x.tensor_split(5, 1), lambda lib, x: x.tensor_split(2),
    lambda lib, x: lib.tensor_split(x, [1, 3], 1), lambda lib, x: x.tensor_split((-1, 10), dim=1),
    lambda lib, x: x.tensor_split([3, 1], 1), lambda lib, x: x.tensor_split(lib.tensor(2), 1),
    lambda lib, x: x.tensor_split(lib.tensor([1, 2]), 1), lambda lib, x: lib.hsplit(x, 2),
    lambda lib, x: x.hsplit([1]), lambda lib, x: lib.vsplit(x, 3), lambda lib, x: x.vsplit([1, 2]),
])
def test_tensor_split_family(fn):
    _compare(fn, X)


def test_split_parts_are_views():
    _compare(lambda lib, x: lib.dsplit(x, 2), X3)
    _compare(lambda lib, x: lib.hsplit(x, 2), V)
    for lib in (torch, fg):
        x = lib.zeros(2, 4)
        left, right = lib.hsplit(x, 2)
        right.add_(1)                           # (not a multi-output view: torch allows it)
        assert x.sum().item() == 4.0


# --------------------------------------------------------------------- unfold
@pytest.mark.parametrize("args", [(0, 2, 1), (1, 2, 1), (1, 3, 2), (-1, 1, 3), (1, 4, 1), (1, 0, 1), (0, 3, 3)])
def test_unfold(args):
    _compare(lambda lib, x: x.unfold(*args), X, strides=True)


def test_unfold_odd_inputs():
    _compare(lambda lib, x: x.unfold(0, 1, 1), np.array(3.0, np.float32), strides=True)
    _compare(lambda lib, x: x.t().unfold(0, 2, 1), X, strides=True)
    _compare(lambda lib, x: x.unfold(2, 2, 2), X3, strides=True)


def test_unfold_is_a_view_both_ways():
    def f(lib, x):
        y = x * 1
        w = y.unfold(1, 2, 2)
        w[:, 1].mul_(10)                        # a write through non-overlapping windows
        y[0, 0] = 100.0
        return y, w
    _compare(f, X)
    for lib in (torch, fg):
        b = lib.zeros(6)
        w = b.unfold(0, 3, 1)
        assert w._base is b
        b[2] = 1.0
        assert w.sum().item() == 3.0


# --------------------------------------------------------------------- diff, kron, block_diag
@pytest.mark.parametrize("fn", [
    lambda lib, x: lib.diff(x), lambda lib, x: x.diff(2), lambda lib, x: lib.diff(x, dim=0),
    lambda lib, x: lib.diff(x, 10), lambda lib, x: lib.diff(x, 0),
    lambda lib, x: lib.diff(x, prepend=x[:, :1], append=x[:, :2] * 2),
    lambda lib, x: x.diff(1, 0, append=lib.ones(2, 4)),
    lambda lib, x: lib.diff(x, prepend=lib.ones(3, 1, dtype=lib.float64)),
])
def test_diff(fn):
    _compare(fn, X)


def test_diff_of_other_dtypes():
    _compare(lambda lib, x: lib.diff(x), distinct_values((5,), "bool"))
    _compare(lambda lib, x: lib.diff(x, 2), distinct_values((5,), "i64"))


@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (2,)), ((2,), (2, 3)), ((), (3,)), ((2, 1, 2), (2, 2))])
def test_kron(shapes):
    _compare(lambda lib, a, b: lib.kron(a, b), distinct_values(shapes[0]), distinct_values(shapes[1], offset=1.0))
    _compare(lambda lib, a, b: a.kron(b), distinct_values(shapes[0], "i64"), distinct_values(shapes[1]))


def test_block_diag():
    _compare(lambda lib, a, b, c: lib.block_diag(a, b, c), X, V, np.array(2.0, np.float32))
    _compare(lambda lib, a, b: lib.block_diag(a, b), distinct_values((0, 3)), distinct_values((2, 0)))
    _compare(lambda lib, a, b: lib.block_diag(a, b), distinct_values((2,), "i64"), distinct_values((1, 2), "f64"))
    _compare(lambda lib, a: lib.block_diag(a), X)
    assert tuple(fg.block_diag().shape) == (1, 0) and fg.block_diag().dtype is fg.float32


# --------------------------------------------------------------------- errors
@pytest.mark.parametrize("fn,array", [
    (lambda lib, x: x.diagonal(0, 0, 0), X), (lambda lib, x: x.diagonal(0, 0, 2), X),
    (lambda lib, x: x.diagonal(), np.array(1.0, np.float32)), (lambda lib, x: x.diagonal(), V),
    (lambda lib, x: lib.diag(x), X3), (lambda lib, x: lib.diag(x), np.array(1.0, np.float32)),
    (lambda lib, x: lib.diag_embed(x), np.array(1.0, np.float32)), (lambda lib, x: lib.diag_embed(x, 0, 0, 0), V),
    (lambda lib, x: lib.trace(x), V), (lambda lib, x: lib.trace(x), X3),
    (lambda lib, x: lib.trace(x), distinct_values((2, 2), "bool")),
    (lambda lib, x: lib.roll(x, 1, 5), X), (lambda lib, x: lib.roll(x, (1, 2), 0), X),
    (lambda lib, x: lib.roll(x, [], []), X), (lambda lib, x: lib.roll(x, 1, 0), np.array(1.0, np.float32)),
    (lambda lib, x: lib.rot90(x, 1, [0]), X), (lambda lib, x: lib.rot90(x, 1, [0, 0]), X),
    (lambda lib, x: lib.rot90(x, 1, [0, 5]), X), (lambda lib, x: lib.rot90(x), V),
    (lambda lib, x: lib.rot90(x, 1, [0, -2]), X),
    (lambda lib, x: lib.meshgrid(x, x, indexing="foo"), V), (lambda lib, x: lib.meshgrid(x, x.double(), indexing="ij"), V),
    (lambda lib, x: lib.cartesian_prod(x), X), (lambda lib, x: lib.cartesian_prod(x, x.double()), V),
    (lambda lib, x: x.repeat_interleave(-1), X), (lambda lib, x: x.repeat_interleave(lib.tensor([1, 2]), dim=0), X),
    (lambda lib, x: x.repeat_interleave(lib.tensor([1.0, 2, 3]), dim=0), X),
    (lambda lib, x: x.repeat_interleave(lib.tensor([1, -2, 3]), dim=0), X),
    (lambda lib, x: x.repeat_interleave(lib.tensor([[1, 2, 3]]), dim=0), X),
    (lambda lib, x: x.repeat_interleave(2, dim=0, output_size=7), X),
    (lambda lib, x: x.repeat_interleave(lib.tensor([1, 2, 3]), dim=0, output_size=7), X),
    (lambda lib, x: x.repeat_interleave(lib.tensor(2), dim=5), X),
    (lambda lib, x: lib.tensor_split(x, 0), X), (lambda lib, x: lib.tensor_split(x, 2), np.array(1.0, np.float32)),
    (lambda lib, x: lib.tensor_split(x, lib.tensor([1.0, 2]), 1), X),
    (lambda lib, x: lib.tensor_split(x, lib.tensor([[1, 2]]), 1), X), (lambda lib, x: lib.tensor_split(x, 2.0, 1), X),
    (lambda lib, x: lib.hsplit(x, 3), V), (lambda lib, x: lib.hsplit(x, 1), np.array(1.0, np.float32)),
    (lambda lib, x: lib.vsplit(x, 2), V), (lambda lib, x: lib.dsplit(x, 2), X), (lambda lib, x: lib.hsplit(x, 3), X),
    (lambda lib, x: lib.hsplit(x, 0), X),
    (lambda lib, x: x.unfold(1, 5, 1), X), (lambda lib, x: x.unfold(1, 2, 0), X), (lambda lib, x: x.unfold(3, 2, 1), X),
    (lambda lib, x: x.unfold(0, 2, 1), np.array(1.0, np.float32)), (lambda lib, x: x.unfold(1, -1, 1), X),
    (lambda lib, x: lib.diff(x), np.array(1.0, np.float32)), (lambda lib, x: lib.diff(x, -1), X),
    (lambda lib, x: lib.diff(x, 1, dim=3), X), (lambda lib, x: lib.diff(x, prepend=x[0]), X),
    (lambda lib, x: lib.diff(x, dim=0, prepend=lib.ones(1, 3)), X),
    (lambda lib, x: lib.block_diag(x), X3), (lambda lib, x: lib.kron(x.t(), x), X),
])
def test_errors(fn, array):
    _same_error(fn, array)


def test_triangle_index_errors():
    for call in (lambda lib: lib.tril_indices(-1, 3), lambda lib: lib.triu_indices(3, -2),
                 lambda lib: lib.tril_indices(3, 3, dtype=lib.float32), lambda lib: lib.triu_indices(3, 3, dtype=lib.bool),
                 lambda lib: lib.meshgrid(indexing="ij"), lambda lib: lib.cartesian_prod()):
        assert_same_outcome(lib_outcome(fg, call), lib_outcome(torch, call))


# --------------------------------------------------------------------- double backward, fg.compile
def test_create_graph_through_diagonal_and_unfold():
    def f(lib, x):
        y = (x.diagonal(1) ** 2).sum() + (x.unfold(1, 2, 1) ** 3).sum() + lib.trace(x) * x.sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        return g
    _compare(f, X)


def test_compiled_matches_eager():
    def f(x):
        y = x * 2
        y.diagonal().add_(1)                    # a write through a view inside the call
        z = fg.roll(y, 1, 0) + fg.rot90(y, 1).t() + y.unfold(1, 2, 2).sum(-1).repeat_interleave(2, 1)
        return (z * z).sum() + fg.trace(y) + fg.diff(y).sum()

    eager_x = fg.tensor(X, requires_grad=True)
    f(eager_x).backward()
    compiled = fg.compile(fg.value_and_grad(f))
    for _ in range(2):
        value, grad = compiled(fg.tensor(X, requires_grad=True))
        np.testing.assert_allclose(value.item(), f(fg.tensor(X)).item(), rtol=1e-6)
        np.testing.assert_allclose(grad.detach().numpy(), eager_x.grad.numpy(), rtol=1e-6)


def test_compiled_view_writes_reach_the_argument():
    def f(x):
        x.diagonal(1).mul_(0)
        x.unfold(1, 2, 2)[..., 0].add_(1)
        return x.diagonal().clone()

    compiled = fg.compile(f)
    for _ in range(2):
        ours, theirs = fg.tensor(X), torch.tensor(X)
        got, want = compiled(ours), f(theirs)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("case", [
    lambda L: L.roll(L.zeros((2, 0), requires_grad=True), (1, 1), (5, 7)),     # empty: no dims read
    lambda L: L.roll(L.zeros(()), (1, 1), (0, 3)),
    lambda L: L.roll(L.zeros(3), (1, 1), (0, 3)),
    lambda L: L.diff(L.zeros(3), n=0, dim=5),                                  # n=0: no dim read
    lambda L: L.diff(L.zeros(3), n=0, dim=5, append=L.zeros(2, 2)),
    lambda L: L.diff(L.zeros(3), n=1, dim=5),
    lambda L: L.repeat_interleave(L.zeros(()), 2, 0),                          # unsqueeze(dim + 1)
    lambda L: L.repeat_interleave(L.zeros(()), 2, -1),
    lambda L: L.repeat_interleave(L.zeros(()), L.tensor(2), 0),
    lambda L: L.repeat_interleave(L.zeros((), requires_grad=True), 2),
    lambda L: L.rot90(L.zeros(2, 3), 1, (0, 2)),                                # dims wrapped first
    lambda L: L.rot90(L.zeros(2, 3), 1, (0, -2)),
    lambda L: L.rot90(L.zeros(2, 3), 1, (-3, -3)),
    lambda L: L.rot90(L.zeros(2, 3, 4), 1, (0, -3)),
], ids=lambda case: "")
def test_edge_cases_check_in_torchs_order(case):
    """Empty, 0-d and out-of-range arguments: torch's result or error, in torch's check order
    (found by a fuzz against torch 2.13)."""
    assert_same_outcome(lib_outcome(fg, case), lib_outcome(torch, case))
