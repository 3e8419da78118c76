"""Advanced indexing (int tensors, lists, NumPy arrays, bool masks, Python bools, mixed with
basic items) against torch at run time: values, shapes, dtypes, whether the result is a copy,
grad_fn names, gradients (duplicate indices included), error classes and texts; eagerly and
inside fg.compile; plus finite differences of the two IR ops' VJPs and a hypothesis sweep."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fusegrad as fg

torch = pytest.importorskip("torch")

from gradcheck import check_grads  # noqa: E402  (after the skip)
from parity_support import assert_tensor_same, distinct_values, errors_match  # noqa: E402

DTYPES = {"f32": np.float32, "f64": np.float64, "i64": np.int64, "bool": np.bool_}


@pytest.fixture(autouse=True)
def _quiet_torch():
    # torch warns about non-tuple sequences read as tuples (x[[0, [1]]]); the behaviour is compared
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


data = distinct_values


def make(L, shape, dtype="f32", offset=0.0, grad=False):
    return L.tensor(data(shape, dtype, offset), requires_grad=grad)


def weights(L, shape):
    return L.tensor(np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.float32).reshape(shape) * 0.25 + 1)


def run(fn):
    try:
        return fn(), None
    except Exception as exc:       # noqa: BLE001  (the outcome is compared with torch's)
        return None, exc


def grad_fn_name(t):
    return None if t.grad_fn is None else type(t.grad_fn).__name__


def same_outcome(cell, ours, theirs) -> bool:
    """True when both succeeded; asserts the same error when torch raised."""
    (value, error), (tvalue, terror) = ours, theirs
    if terror is not None:
        errors_match(cell, error, terror, value)
        return False
    assert error is None, f"{cell}: fusegrad raises {type(error).__name__}({error}), torch returns {tvalue!r}"
    return True


# ================================================================ getitem
def T(*values, dtype=None):
    """An index tensor built by the library under test."""
    return lambda L: L.tensor(list(values) if len(values) != 1 else values[0], dtype=dtype and getattr(L, dtype))


def MASK(shape, offset=0):
    return lambda L: make(L, shape, "bool", offset)


S = slice(None)
# (name, shape, key(L)): every key is built by the library it indexes.
GET_KEYS = [
    ("list", (3, 4), lambda L: [0, 2]),
    ("list_dup", (3, 4), lambda L: [2, 0, 2, 2]),
    ("list_neg", (3, 4), lambda L: [-1, -3]),
    ("list_empty", (3, 4), lambda L: []),
    ("list_floats", (3, 4), lambda L: [0.5, 2.7]),
    ("list_bool_int", (3, 4), lambda L: [True, False, 1]),
    ("tensor", (3, 4), lambda L: L.tensor([1, 0])),
    ("tensor_2d", (3, 4), lambda L: L.tensor([[1, 0], [2, 2]])),
    ("tensor_0d", (3, 4), lambda L: L.tensor(2)),
    ("numpy", (3, 4), lambda L: np.array([2, 1, 2])),
    ("numpy_int32", (3, 4), lambda L: np.array([0, 2], dtype=np.int32)),
    ("numpy_2d", (3, 4), lambda L: np.array([[0, 1], [1, 0]])),
    ("numpy_0d", (3, 4), lambda L: np.array(1)),
    ("tuple_in_tuple", (3, 4), lambda L: ((0, 2),)),
    ("all_list", (3, 4), lambda L: (S, [3, 0, 3])),
    ("list_list", (3, 4), lambda L: ([0, 2, 1], [3, 3, 0])),
    ("list_list_bcast", (3, 4), lambda L: (L.tensor([[0], [2]]), L.tensor([1, 3, 0]))),
    ("list_of_lists", (3, 4), lambda L: [[0, 1], [1, 2]]),
    ("list_with_none", (3, 4), lambda L: [0, None]),
    ("slice_list", (3, 4), lambda L: (slice(1, None), [1, 0])),
    ("list_step", (3, 4), lambda L: ([2, 0], slice(None, None, 2))),
    ("mask_full", (3, 4), MASK((3, 4))),
    ("mask_rows", (3, 4), MASK((3,))),
    ("mask_cols", (3, 4), lambda L: (S, make(L, (4,), "bool", 1))),
    ("mask_list", (3, 4), lambda L: [True, False, True]),
    ("mask_numpy", (3, 4), lambda L: np.array([False, True, True])),
    ("mask_none", (3, 4), lambda L: L.zeros(3, 4, dtype=L.bool)),
    ("mask_then_list", (2, 3, 4), lambda L: (make(L, (2, 3), "bool"), [1, 3, 0])),
    ("True", (3, 4), lambda L: True),
    ("False", (3, 4), lambda L: False),
    ("None_True", (3, 4), lambda L: (None, True)),
    ("True_list", (3, 4), lambda L: (True, [0, 1])),
    ("list_True", (3, 4), lambda L: ([0, 1], True)),
    ("bool_tensor_0d", (3, 4), lambda L: L.tensor(True)),
    ("bool_tensor_0d_false", (3, 4), lambda L: L.tensor(False)),
    # where the advanced dims go: adjacent ones stay, separated ones move to the front
    ("adjacent", (2, 3, 4), lambda L: (S, [0, 2], [1, 3])),
    ("separated", (2, 3, 4), lambda L: ([1, 0], S, [1, 3])),
    ("separated_2d", (2, 3, 4), lambda L: (L.tensor([[1], [0]]), S, L.tensor([0, 1, 3]))),
    ("int_slice_list", (2, 3, 4), lambda L: (1, S, [0, 1])),       # torch: the int selects first
    ("list_slice_int", (2, 3, 4), lambda L: ([0, 1], S, 1)),
    ("list_int_list", (2, 3, 4), lambda L: ([0, 1], 2, [0, 3])),
    ("none_list_none_list", (2, 3, 4), lambda L: (None, [1], None, [2])),
    ("ellipsis_list", (2, 3, 4), lambda L: (Ellipsis, [3, 1])),
    ("list_ellipsis_list", (2, 3, 4), lambda L: ([1], Ellipsis, [2])),
    ("ellipsis_list_all", (2, 3, 4), lambda L: (Ellipsis, [1], S)),
    ("tensor0d_list", (2, 3, 4), lambda L: (L.tensor(1), [0, 2])),
    ("slice_mask_slice", (2, 3, 4), lambda L: (slice(0, 1), make(L, (3,), "bool"), slice(1, 3))),
    ("scalar_tensor_index", (), lambda L: True),
    ("scalar_none_true", (), lambda L: (None, True)),
    ("scalar_bool_tensor", (), lambda L: L.tensor(False)),
    ("vector", (5,), lambda L: [4, 4, 0, -5]),
    ("empty_dim", (2, 0), lambda L: (S, [])),
    ("empty_rows", (0, 3), lambda L: ([], [])),
    # errors
    ("oob", (3, 4), lambda L: [5]),
    ("oob_neg", (3, 4), lambda L: [0, -4]),
    ("oob_second_dim", (3, 4), lambda L: (S, [7])),
    ("oob_after_select", (3, 4), lambda L: (1, [-5])),
    ("oob_two_lists", (3, 4), lambda L: ([0, 9, -7], [0, 8, 2])),
    ("oob_mask_then_list", (2, 3, 4), lambda L: (make(L, (2, 3), "bool"), [5])),
    ("oob_empty_dim", (2, 0), lambda L: (S, [0])),
    ("oob_tensor_0d", (3, 4), lambda L: L.tensor(5)),
    ("mask_shape", (3, 4), MASK((2,))),
    ("mask_shape_cols", (2, 3, 4), lambda L: (slice(1, None), L.tensor([True, False]))),
    ("mask_too_many_dims", (3, 4), lambda L: make(L, (1, 3, 4), "bool")),
    ("bcast_mismatch", (3, 4), lambda L: ([0, 1], [0, 1, 2])),
    ("bcast_three", (2, 3, 4), lambda L: ([0, 1], [0, 1, 2], [1])),
    ("False_list", (3, 4), lambda L: (False, [0, 1])),
    ("float_tensor", (3, 4), lambda L: L.tensor([0.5])),
    ("float_numpy", (3, 4), lambda L: np.array([0.5])),
    ("too_many", (3, 4), lambda L: ([0], [0], [0])),
    ("scalar_list", (), lambda L: [0]),
    ("ragged", (3, 4), lambda L: (S, [[0, 1], [1]])),
    ("ragged_scalar", (3, 4), lambda L: (S, [[0, 1], 1])),
    ("ragged_list", (3, 4), lambda L: (S, [0, [1]])),
    ("none_in_list", (3, 4), lambda L: (S, [0.5, None])),
    ("str_in_list", (3, 4), lambda L: (S, [0, "a"])),
    ("numpy_bool_scalar", (3, 4), lambda L: np.True_),
    ("scalar_int_tensor", (), lambda L: L.tensor(0)),
]


def compare_getitem(cell, shape, key, dtype="f32"):
    """`y[key]` on both libraries, y a non-leaf: outcome, value, grad_fn, copy, gradient."""
    out = {}
    grad = dtype in ("f32", "f64")
    for L in (torch, fg):
        x = make(L, shape, dtype, grad=grad)
        y = x * 1 if grad else x
        out[L] = (x, run(lambda y=y, L=L: y[key(L)]))
    (xt, theirs), (xo, ours) = out[torch], out[fg]
    if not same_outcome(cell, ours, theirs):
        return
    rt, ro = theirs[0], ours[0]
    assert_tensor_same(cell, ro, rt)
    assert grad_fn_name(ro) == grad_fn_name(rt), f"{cell}: grad_fn {grad_fn_name(ro)} != {grad_fn_name(rt)}"
    assert (ro._base is None) == (rt._base is None), f"{cell}: view or copy differs from torch"
    if rt.requires_grad:
        (rt * weights(torch, rt.shape)).sum().backward()
        (ro * weights(fg, ro.shape)).sum().backward()
        assert_tensor_same(cell, xo.grad, xt.grad, "gradient")


@pytest.mark.parametrize("shape,key", [pytest.param(s, k, id=n) for n, s, k in GET_KEYS])
def test_getitem(request, shape, key):
    compare_getitem(request.node.callspec.id, shape, key)


@pytest.mark.parametrize("dtype", ["f64", "i64", "bool"])
def test_getitem_dtypes(dtype):
    compare_getitem(f"getitem-{dtype}", (3, 4), lambda L: ([2, 0, 2], slice(1, None)), dtype)
    compare_getitem(f"getitem-mask-{dtype}", (3, 4), MASK((3, 4), 1), dtype)


def test_result_is_a_copy():
    for L in (torch, fg):
        x = make(L, (3, 4))
        r = x[[0, 1]]
        r += 100
        assert x.tolist() == data((3, 4)).tolist()


def test_leaf_getitem_and_saved_index():
    """x[idx] on a leaf: IndexBackward0 straight to AccumulateGrad; duplicates add."""
    for L in (torch, fg):
        x = make(L, (4,), grad=True)
        idx = L.tensor([3, 3, 0, 3])
        r = x[idx]
        assert type(r.grad_fn).__name__ == "IndexBackward0"
        (r * weights(L, (4,))).sum().backward()
        if L is torch:
            want = x.grad.tolist()
    assert x.grad.tolist() == want


def test_next_functions_list_only_differentiable_inputs():
    lengths = []
    for L in (torch, fg):
        x = make(L, (3, 4), grad=True)
        y = x * 1
        taken = y[[0, 1], [2, 3]]
        y[[0]] = make(L, (4,), grad=True)
        lengths.append((len(taken.grad_fn.next_functions), len(y.grad_fn.next_functions)))
    assert lengths[1] == lengths[0]


# ================================================================ setitem
SET_KEYS = [
    ("list", lambda L: [0, 2]),
    ("list_dup", lambda L: [1, 1]),
    ("tensor_2d", lambda L: L.tensor([[2], [0]])),
    ("mask", MASK((3, 4))),
    ("mask_rows", lambda L: L.tensor([True, False, True])),
    ("int_list", lambda L: (1, [0, 3])),
    ("slice_list", lambda L: (slice(1, None), [3, 1])),
    ("list_list", lambda L: ([0, 2, 2], [1, 1, 3])),
    ("True", lambda L: True),
    ("oob", lambda L: [5]),
    ("mask_shape", lambda L: L.tensor([True, False])),
]
SET_VALUES = [
    ("float", lambda L, r: 5.5), ("int", lambda L, r: 7), ("bool", lambda L, r: True),
    ("t0d", lambda L, r: L.tensor(2.5)), ("full", lambda L, r: make(L, r, offset=10)),
    ("bcast", lambda L, r: make(L, r[-1:], offset=3)), ("lead_1", lambda L, r: make(L, (1, 1) + r, offset=3)),
    ("inner_1", lambda L, r: make(L, r[:1] + (1,) + r[1:], offset=3)),
    ("wrong", lambda L, r: make(L, (int(np.prod(r)) + 1,))),
    ("f64", lambda L, r: make(L, r, "f64")), ("i64", lambda L, r: make(L, r, "i64")),
]


def _region(shape, key):
    try:
        return tuple(torch.empty(shape)[key(torch)].shape)
    except Exception:       # noqa: BLE001  (an invalid key: the value's shape does not matter)
        return (1,)


def compare_setitem(cell, shape, key, value, mode, dtype="f32"):
    """`base[key] = value`, the base a plain tensor, a leaf requiring grad or a non-leaf (the
    value then requiring grad too), or a plain tensor given a value that requires grad
    ('value_grad'): outcome, the base's value and grad_fn, both gradients."""
    region = _region(shape, key)
    out = {}
    for L in (torch, fg):
        x = make(L, shape, dtype, grad=mode in ("leaf", "nonleaf"))
        v = value(L, region)
        if mode in ("nonleaf", "value_grad") and isinstance(v, L.Tensor) and v.dtype.is_floating_point:
            v.requires_grad_(True)
        base = x * 1 if mode == "nonleaf" else x
        out[L] = (x, v, base, run(lambda base=base, L=L, v=v: base.__setitem__(key(L), v)))
    (xt, vt, bt, theirs), (xo, vo, bo, ours) = out[torch], out[fg]
    same = same_outcome(cell, ours, theirs)
    assert_tensor_same(cell, bo.detach(), bt.detach(), "base after the assignment")
    if not same:
        return
    assert grad_fn_name(bo) == grad_fn_name(bt), f"{cell}: grad_fn {grad_fn_name(bo)} != {grad_fn_name(bt)}"
    if bt.requires_grad:
        (bt * weights(torch, bt.shape)).sum().backward()
        (bo * weights(fg, bo.shape)).sum().backward()
        assert_tensor_same(cell, xo.grad, xt.grad, "gradient of the base's leaf")
        if isinstance(vt, torch.Tensor) and vt.requires_grad:
            assert_tensor_same(cell, vo.grad, vt.grad, "gradient of the value")


def _set_cells():
    for mode in ("plain", "leaf", "nonleaf", "value_grad"):
        for kname, key in SET_KEYS:
            for vname, value in SET_VALUES:
                yield pytest.param(key, value, mode, id=f"{mode}-{kname}-{vname}")


@pytest.mark.parametrize("key,value,mode", list(_set_cells()))
def test_setitem(request, key, value, mode):
    compare_setitem(request.node.callspec.id, (3, 4), key, value, mode)


@pytest.mark.parametrize("dtype", ["i64", "bool"])
def test_setitem_dtypes(dtype):
    compare_setitem(f"set-{dtype}-float", (3, 4), lambda L: [0, 2], lambda L, r: 2.5, "plain", dtype)
    compare_setitem(f"set-{dtype}-mask", (3, 4), MASK((3, 4)), lambda L, r: 1, "plain", dtype)


def test_numpy_value_is_cast_to_the_tensor_dtype():
    """API.md accepts NumPy arrays wherever a tensor is (torch takes none here): the array is
    cast to the tensor's dtype, as basic setitem does."""
    x, want = make(fg, (3, 4)), data((3, 4))
    x[[0, 2, 0]] = np.arange(4.0)
    want[[0, 2, 0]] = np.arange(4.0)
    assert x.dtype == fg.float32 and x.tolist() == want.tolist()


def test_setitem_bumps_the_version_and_keeps_memory():
    x = make(fg, (3, 4))
    memory, version = x._data, x._version
    x[[0, 2]] = 1.0
    assert x._data is memory and x._version > version


def test_setitem_through_a_view_writes_the_base():
    for L in (torch, fg):
        x = make(L, (3, 4), grad=True)
        y = x * 1
        row = y[1]
        row[[0, 0, 3]] = 9.0
        assert type(y.grad_fn).__name__ == "CopySlices"
        (y * weights(L, (3, 4))).sum().backward()
        result = (y.tolist(), x.grad.tolist())
        if L is torch:
            want = result
    assert result == want


@pytest.mark.parametrize("form", ["iadd_dup", "mask_zero", "mask_iadd", "isub_tensor"])
def test_augmented_assignment(form):
    """`x[idx] += 1` (a gather, an add and a put: duplicates add once) and `x[x > 0] = 0`."""
    for L in (torch, fg):
        x = make(L, (3, 4), grad=True)
        y = x * 1
        if form == "iadd_dup":
            y[[0, 0, 2]] += 1
        elif form == "mask_zero":
            y[y > 0] = 0
        elif form == "mask_iadd":
            y[y < 0] += y[y < 0] * 2
        else:
            y[:, L.tensor([1, 1, 3])] -= make(L, (3, 3), offset=1)
        name = type(y.grad_fn).__name__
        (y * weights(L, (3, 4))).sum().backward()
        result = (name, y.tolist(), x.grad.tolist())
        if L is torch:
            want = result
    assert result[0] == want[0]
    np.testing.assert_allclose(result[1], want[1], rtol=1e-6)
    np.testing.assert_allclose(result[2], want[2], rtol=1e-6)


def test_saved_index_modified_in_place_raises():
    """The index tensor is saved for backward: writing it in place makes backward raise."""
    outcomes = []
    for L in (torch, fg):
        x = make(L, (4,), grad=True)
        idx = L.tensor([0, 2])
        r = x[idx]
        idx += 1
        outcomes.append(type(run(lambda r=r: r.sum().backward())[1]))
    assert outcomes[0] is outcomes[1] is RuntimeError


# ================================================================ finite differences
def test_vjps_against_finite_differences():
    """Both ops' VJPs, to second order (duplicates in both the take and the put)."""
    idx = np.array([2, 0, 2, 1])
    check_grads(lambda x: x[idx] ** 2, data((3, 2), "f64"), order=2)
    check_grads(lambda x: x[:, [1, 1]] * x[[0, 0, 2]][:, :1], data((3, 2), "f64"), order=2)

    def put(x, v):
        y = x * x
        y[idx[:2], [1, 0]] = v * v
        return y
    check_grads(put, data((3, 2), "f64"), data((2,), "f64", 1.0), order=2)


# ================================================================ the IR ops
def test_ir_ops_verify_and_match_numpy():
    """index_take and index_put_at in a program with its backward: the verifier accepts it and
    the reference interpreter gives NumPy's gather, put and np.add.at."""
    from fusegrad.ir import Builder, Program, TensorType, backward, float32, int64, verify
    from fusegrad.ir.interpreter import run_program
    b = Builder(Program())
    x = b.input(TensorType((3, 4), float32))
    i, j = b.input(TensorType((3,), int64)), b.input(TensorType((3,), int64))
    v = b.input(TensorType((1, 3), float32))
    taken = b.emit("index_take", x, i, j, dims=(0, 1))
    put = b.emit("index_put_at", x, v, i, j, dims=(0, 1), accumulate=False)
    seeds = [b.input(TensorType((3,), float32)), b.input(TensorType((3, 4), float32))]
    gx, gv = backward(b, list(b.program.instrs), [taken, put], seeds, [x, v])
    b.program.outputs = [taken, put, gx, gv]
    verify(b.program)
    xs, iv, jv = data((3, 4)), np.array([2, 0, 2]), np.array([-1, 1, 3])
    vs, s0, s1 = data((1, 3), offset=5), data((3,), offset=1), data((3, 4), offset=2)
    got = run_program(b.program, [xs, iv, jv, vs, s0, s1])
    want_put = xs.copy()
    want_put[iv, jv] = vs[0]
    want_gx = s1.copy()
    want_gx[iv, jv] = 0
    np.add.at(want_gx, (iv, jv), s0)
    for ours, want in zip(got, [xs[iv, jv], want_put, want_gx, s1[iv, jv][None]]):
        np.testing.assert_allclose(ours, want, rtol=1e-6)


# ================================================================ compiled
def test_compiled_gather_loss_and_new_index_values():
    """`-logp[arange(n), y].mean()` with backward inside fg.compile; a new y of the same
    shape reuses the program (the indices are inputs, not attributes)."""
    def step(logp, y):
        loss = -logp[fg.arange(logp.shape[0]), y].mean()
        loss.backward()
        return loss

    compiled = fg.compile(step)
    for labels in ([1, 0, 4, 1], [3, 3, 2, 0]):
        logits = data((4, 5))
        ours = fg.tensor(logits, requires_grad=True)
        loss = compiled(ours, fg.tensor(labels))
        theirs = torch.tensor(logits, requires_grad=True)
        tloss = -theirs[torch.arange(4), torch.tensor(labels)].mean()
        tloss.backward()
        assert_tensor_same("compiled loss", loss, tloss.detach())
        assert_tensor_same("compiled grad", ours.grad, theirs.grad)
        if labels[0] == 1:
            misses = fg.cache_info().misses
    assert fg.cache_info().misses == misses


def test_compiled_mask_setitem_and_backward_outside():
    """A mask (a graph break), a put with duplicates and an augmented put inside the call;
    the gradient flows back through CompiledFunctionBackward."""
    def f(L, x, m):
        z = x * 2
        z[z > 0] = 0
        z[[0, 0], [1, 2]] += x[[2, 2], [3, 3]]
        return z[m] * 3

    compiled = fg.compile(lambda x, m: f(fg, x, m))
    mask = [True, False, True]
    ours = make(fg, (3, 4), grad=True)
    r = compiled(ours, fg.tensor(mask))
    theirs = make(torch, (3, 4), grad=True)
    rt = f(torch, theirs, torch.tensor(mask))
    assert_tensor_same("compiled masked", r, rt.detach())
    (r * weights(fg, r.shape)).sum().backward()
    (rt * weights(torch, rt.shape)).sum().backward()
    assert_tensor_same("compiled grad", ours.grad, theirs.grad)


def test_compiled_out_of_bounds_raises_torch_text():
    compiled = fg.compile(lambda x, i: x[i] * 2)
    with pytest.raises(IndexError, match="^index 7 is out of bounds for dimension 0 with size 3$"):
        compiled(make(fg, (3, 4)), fg.tensor([0, 7]))


# ================================================================ hypothesis sweep
@st.composite
def _index_case(draw):
    """A shape and a key of ints, slices, int lists, a mask over one dim and None."""
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    items, consumers = [], []          # consumers: positions of the items that index a dim
    for size in shape[:draw(st.integers(1, ndim))]:
        kind = draw(st.sampled_from(["int", "slice", "list", "list", "mask", "none"]))
        if kind == "none":
            items.append(("none",))
            kind = draw(st.sampled_from(["slice", "list"]))
        consumers.append(len(items))
        if kind == "int":
            items.append(("int", draw(st.integers(-size, size - 1))))
        elif kind == "slice":
            items.append(("slice", draw(st.integers(0, size)), draw(st.integers(1, 2))))
        elif kind == "mask":
            items.append(("mask", tuple(draw(st.lists(st.booleans(), min_size=size, max_size=size)))))
        else:
            # one length for every list of the key, so that they broadcast
            items.append(("list", draw(st.integers(-size, size - 1)), draw(st.integers(-size, size - 1))))
    if not any(item[0] in ("list", "mask") for item in items):
        items[consumers[-1]] = ("list", 0, -1)
    return shape, items


def _key(L, items):
    key = []
    for item in items:
        if item[0] == "none":
            key.append(None)
        elif item[0] == "int":
            key.append(item[1])
        elif item[0] == "slice":
            key.append(slice(item[1], None, item[2]))
        elif item[0] == "mask":
            key.append(L.tensor(list(item[1])))
        else:
            key.append(L.tensor([item[1], item[2]]))
    return tuple(key)


@settings(max_examples=40)
@given(_index_case())
def test_hypothesis_getitem_and_setitem(case):
    shape, items = case
    compare_getitem(f"get {shape} {items}", shape, lambda L: _key(L, items))
    compare_setitem(f"set {shape} {items}", shape, lambda L: _key(L, items), lambda L, r: L.tensor(7.5), "nonleaf")


def test_compiled_indexing_runs_by_reference_without_a_missing_rule_warning():
    # index_take/index_put_at are reference ops by design (OpDef.reference_only): the first
    # compiled use must not warn about a missing kernel rule.
    import warnings
    f = fg.compile(lambda x, i: (x[i] * 2).sum())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert f(fg.arange(5.0), fg.tensor([1, 3])).item() == 8.0
