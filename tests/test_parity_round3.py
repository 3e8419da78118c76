"""Third torch-parity probe: adversarial and less common calls from API.md,
each compared with torch at run time (values, dtypes, grads, error texts)."""
import math
import warnings

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch")

from parity_support import assert_same, both, same_error  # noqa: E402  (after the skip)

INF, NAN = float("inf"), float("nan")


# ----------------------------------------------------------------- norms
@pytest.mark.parametrize("p", [INF, -INF, -1.0, 3.0])
def test_norm_orders_value_and_grad(p):
    def run(L):
        x = L.tensor([[-1.0, 2.0, -1.0], [0.5, 4.0, -9.0]], requires_grad=True)
        y = x.norm(p, dim=1)
        y.sum().backward()
        z = L.tensor([-1.0, 2.0, -0.25], requires_grad=True)
        w = z.norm(p)
        w.backward()
        return y, x.grad, w, z.grad
    for a, b in zip(*both(run)):
        assert_same(b, a)


@pytest.mark.parametrize("p,shape,dim", [(INF, (0,), None), (-INF, (2, 0), None), (-0.5, (2, 0), None),
                                         (INF, (2, 0), 1), (-1.0, (0, 3), 0)])
def test_norm_without_identity_of_empty_raises(p, shape, dim):
    same_error(lambda L: L.zeros(*shape).norm(p, dim=dim))


@pytest.mark.parametrize("p", [INF, -INF, -1.0])
def test_norm_without_identity_of_empty_result_is_empty(p):
    t, o = both(lambda L: L.zeros(2, 0).norm(p, dim=0))
    assert_same(o, t)


# ------------------------------------------------------- max/min gradients
@pytest.mark.parametrize("data", [[1.0, NAN, NAN], [1.0, NAN, 3.0], [1.0, 3.0, 3.0], [-INF, 2.0, INF]])
@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_all_gradient_goes_to_nan_and_ties(data, name):
    def run(L):
        x = L.tensor(data, requires_grad=True)
        y = getattr(x, name)()
        y.backward()
        return y, x.grad
    for a, b in zip(*both(run)):
        assert_same(b, a)


# ------------------------------------------------------------ empty means
@pytest.mark.parametrize("shape,dim", [((0,), None), ((2, 0), 1), ((2, 0), 0), ((2, 0), (0, 1))])
def test_mean_of_empty_is_nan_without_warning(shape, dim):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t, o = both(lambda L: L.zeros(*shape).mean() if dim is None else L.zeros(*shape).mean(dim))
    assert_same(o, t)


# ------------------------------------------------------------------ matmul
MATMUL_SHAPES = [((5, 2, 3), (4,)), ((5, 2, 3), (2, 4)), ((1, 3, 4), (2, 3)), ((2, 1, 2, 3), (4, 2)),
                 ((3,), (5, 1, 3)), ((2, 2, 3), (3, 3, 4)), ((2, 3), (5, 4, 4)), ((3,), (5, 4, 4)),
                 ((2, 3), (4,)), ((3,), (4, 2)), ((2, 3), (2, 3)), ((3,), (4,))]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_shape_errors(sa, sb):
    same_error(lambda L: L.ones(*sa) @ L.ones(*sb))


BOOL_MATMUL = [((3,), (3,)), ((0,), (0,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 3), (3, 2)), ((2, 2, 3), (3, 2)),
               ((2, 2, 3), (3,)), ((2, 2, 3), (2, 3, 2)), ((3,), (2, 3, 2)), ((3,), (2, 1, 3))]


@pytest.mark.parametrize("sa,sb", BOOL_MATMUL)
def test_matmul_of_bools_raises(sa, sb):
    same_error(lambda L: L.ones(*sa, dtype=L.bool) @ L.ones(*sb, dtype=L.bool))


@pytest.mark.parametrize("sa,sb", [((2, 0), (0, 3)), ((2, 0), (0,)), ((0, 2, 3), (3, 2)), ((2, 3), (4, 2))])
def test_matmul_of_bools_empty_or_misshapen(sa, sb):
    # An empty product never reaches a kernel; a shape error comes before the dtype's.
    try:
        expected = torch.ones(*sa, dtype=torch.bool) @ torch.ones(*sb, dtype=torch.bool)
    except RuntimeError:
        same_error(lambda L: L.ones(*sa, dtype=L.bool) @ L.ones(*sb, dtype=L.bool))
        return
    assert_same(fg.ones(*sa, dtype=fg.bool) @ fg.ones(*sb, dtype=fg.bool), expected)


# ------------------------------------------------------------------ expand
@pytest.mark.parametrize("shape,sizes", [((2, 1), (2, -3)), ((2, 1), (1, -1, -2)), ((2, 1), (-2, 3)),
                                         ((2, 0), (2, 3))])
def test_expand_to_negative_sizes_raises(shape, sizes):
    same_error(lambda L: L.ones(*shape).expand(*sizes))


# ------------------------------------------------------------ bool operands
@pytest.mark.parametrize("call", [lambda L, t: L.relu(t), lambda L, t: t.relu(), lambda L, t: L.abs(t),
                                  lambda L, t: t.abs(), lambda L, t: L.nn.functional.relu(t),
                                  lambda L, t: L.nn.ReLU()(t)])
def test_relu_and_abs_of_bool_raise(call):
    same_error(lambda L: call(L, L.tensor([True, False])))


def test_sign_of_bool_and_relu_abs_of_int():
    for call in (lambda L: L.tensor([True, False]).sign(), lambda L: L.tensor([3, -2, 0]).abs(),
                 lambda L: L.relu(L.tensor([3, -2, 0]))):
        t, o = both(call)
        assert_same(o, t)


@pytest.mark.parametrize("p,data", [(0.5, [0.0, 1.0, -2.0]), (0.5, [0.0, 0.0]), (-1.0, [0.0, 1.0]),
                                    (-1.0, [3.0, -1.0]), (-0.5, [2.0, -3.0]), (1.5, [0.0, 1.0, -2.0]),
                                    (3.0, [0.0, 0.0]), (3.0, [0.0, -2.0])])
def test_norm_gradient_at_zero_entries(p, data):
    def run(L):
        x = L.tensor(data, requires_grad=True)
        y = x.norm(p)
        y.backward()
        return y, x.grad
    for a, b in zip(*both(run)):
        assert_same(b, a)


def test_norm_zero_order_has_no_gradient():
    for L in (torch, fg):
        x = L.tensor([0.0, 1.0, 2.0], requires_grad=True)
        x.norm(0).backward()
        assert x.grad is None


# --------------------------------------------------------- in-place dtypes
@pytest.mark.parametrize("call", [lambda L: L.tensor([1, 2]).div_(2), lambda L: L.tensor([1, 2]).div_(L.tensor([2, 2])),
                                  lambda L: L.tensor([1, 2]).div_(L.tensor([1.0], dtype=L.float64)),
                                  lambda L: L.tensor([True]).div_(True), lambda L: L.tensor([1, 2]).sub_(True),
                                  lambda L: L.tensor([True]).sub_(L.tensor([True])),
                                  lambda L: L.tensor([1.0, 2.0]).sub_(L.tensor([True, False]))])
def test_inplace_integer_true_division_and_bool_subtraction_raise(call):
    same_error(call)


@pytest.mark.parametrize("call", [lambda L: L.tensor([1.0, 2.0]).div_(2), lambda L: L.tensor([1, 2]).mul_(2),
                                  lambda L: L.tensor([1, 2]).sub_(1, alpha=2), lambda L: L.tensor([True]).add_(True),
                                  lambda L: L.tensor([1.0, 2.0], dtype=L.float64).div_(L.tensor([2, 4]))])
def test_inplace_arithmetic_that_torch_allows(call):
    t, o = both(call)
    assert_same(o, t)


# ------------------------------------------------------------------ autograd
@pytest.mark.parametrize("op", [lambda x: x.exp(), lambda x: x.max(), lambda x: x ** x, lambda x: x.norm(dim=1),
                                lambda x: x.tanh(), lambda x: x.softmax(1)])
def test_version_error_names_the_node_as_torch(op):
    def run(L):
        x = L.tensor([[1.0, 2.0]], requires_grad=True)
        y = op(x)
        y.add_(1)
        y.sum().backward()
    same_error(run)


def test_backward_with_a_list_gradient_is_a_type_error():
    for L in (torch, fg):
        with pytest.raises(TypeError, match="gradients can be either Tensors or None, but got"):
            (L.tensor([1.0, 2.0], requires_grad=True) * 2).backward([1.0, 1.0])


@pytest.mark.parametrize("call", [
    lambda L, x: L.autograd.grad(x * 2, x, grad_outputs=[[1.0, 1.0]]),
    lambda L, x: L.autograd.grad((x * 2).sum(), x, grad_outputs=2.0),
])
def test_gradient_arguments_that_are_not_tensors(call):
    same_error(lambda L: call(L, L.tensor([1.0, 2.0], requires_grad=True)))


# ------------------------------------------------------------------ creation
@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "randn", "rand"])
@pytest.mark.parametrize("size", [(-1,), (2, -1), ((2, -1),), (0, -2)])
def test_creation_with_a_negative_size(name, size):
    same_error(lambda L: getattr(L, name)(*size))


@pytest.mark.parametrize("args", [(0, 5, -1), (5, 0), (0, 5, 0), (0, 3, NAN), (INF,), (NAN,), (-INF, 3)])
def test_arange_bad_ranges(args):
    same_error(lambda L: L.arange(*args))


@pytest.mark.parametrize("args", [(5, 5), (5, 5, -1), (1, -3.5, -1), (0, 3, INF), (10, 0, -3), (0.0, 1.0, 0.3)])
def test_arange_edge_ranges(args):
    t, o = both(lambda L: L.arange(*args))
    assert_same(o, t)


def test_parameter_of_an_integer_tensor():
    same_error(lambda L: L.nn.Parameter(L.tensor([1, 2])))
    t, o = both(lambda L: L.nn.Parameter(L.tensor([1, 2]), requires_grad=False))
    assert_same(o, t)
    assert o.requires_grad is False


# ------------------------------------------------------------------ losses
def _chain(node):
    names = []
    while node is not None:
        names.append(type(node).__name__)
        nxt = [n for n, _ in node.next_functions if n is not None]
        node = nxt[0] if nxt else None
    return names


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weight", [None, [1.0, 2.0, 0.5]])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_with_probabilities_records_torch_nodes(reduction, weight, smoothing):
    def run(L):
        x = L.tensor([[1.0, 2.0, 0.5], [0.1, -1.0, 3.0]], requires_grad=True)
        y = L.nn.functional.cross_entropy(x, L.tensor([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]]),
                                          weight=None if weight is None else L.tensor(weight),
                                          reduction=reduction, label_smoothing=smoothing)
        y.sum().backward()
        return y, x.grad
    (ty, tg), (oy, og) = both(run)
    assert _chain(oy.grad_fn) == _chain(ty.grad_fn)
    assert_same(oy, ty)
    assert_same(og, tg)


def test_cross_entropy_with_probabilities_of_an_empty_batch():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t, o = both(lambda L: L.nn.functional.cross_entropy(L.zeros(0, 3, requires_grad=True), L.zeros(0, 3)))
    assert_same(o, t)
    assert _chain(o.grad_fn)[:2] == _chain(t.grad_fn)[:2]


@pytest.mark.parametrize("call", [lambda L: L.nn.functional.cross_entropy([[1.0, 2.0]], L.tensor([0])),
                                  lambda L: L.nn.functional.cross_entropy(L.tensor([[1.0, 2.0]]), [0]),
                                  lambda L: L.nn.functional.cross_entropy(L.tensor([[1.0, 2.0]]), 0)])
def test_cross_entropy_of_non_tensors(call):
    same_error(call)


@pytest.mark.parametrize("a,b", [([1, 2], [0, 4]), ([True], [False]), ([1, 2], [True, False])])
def test_mse_loss_of_integers_raises(a, b):
    same_error(lambda L: L.nn.functional.mse_loss(L.tensor(a), L.tensor(b)))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shapes", [((1, 2), (2, 1)), ((2,), ()), ((2, 3), (3,)), ((3,), (2, 3))])
def test_mse_loss_broadcasting_records_one_node(reduction, shapes):
    def run(L):
        x = L.tensor(np.linspace(-1, 1, int(np.prod(shapes[0]))).reshape(shapes[0]).tolist(), requires_grad=True)
        t = L.tensor(np.linspace(2, 0, int(np.prod(shapes[1]))).reshape(shapes[1]).tolist(), requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = L.nn.functional.mse_loss(x, t, reduction=reduction)
        y.sum().backward()
        return y, x.grad, t.grad
    (ty, *tg), (oy, *og) = both(run)
    assert type(oy.grad_fn).__name__ == type(ty.grad_fn).__name__ == "MseLossBackward0"
    assert [type(n).__name__ for n, _ in oy.grad_fn.next_functions] == \
        [type(n).__name__ for n, _ in ty.grad_fn.next_functions]
    assert_same(oy, ty)
    for a, b in zip(og, tg):
        assert_same(a, b)


def test_mse_loss_of_empty_tensors_is_nan_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t, o = both(lambda L: L.nn.functional.mse_loss(L.zeros(0), L.zeros(0)))
    assert_same(o, t)


# ------------------------------------------------------------------ indexing
@pytest.mark.parametrize("key", [lambda L: L.tensor(1), lambda L: (0, L.tensor(2)), lambda L: (L.tensor(-1),),
                                 lambda L: (slice(None), L.tensor(3))])
def test_a_0d_integer_tensor_indexes_as_an_int(key):
    def run(L):
        a = L.tensor(np.arange(12.0).reshape(3, 4).tolist(), requires_grad=True)
        y = a[key(L)]
        (y * 2).sum().backward()
        return y, a.grad, type(y.grad_fn).__name__
    (ty, tg, tn), (oy, og, on) = both(run)
    assert_same(oy, ty)
    assert_same(og, tg)
    assert on == tn


@pytest.mark.parametrize("key", [lambda L: L.tensor(5), lambda L: L.tensor([0.0, 1.0]), lambda L: L.tensor(1.0),
                                 lambda L: "a", lambda L: slice(None, None, 0), lambda L: (0, slice(0, 4, 0))])
@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence")     # torch's, for the str
def test_bad_indices(key):
    same_error(lambda L: L.ones(3, 4)[key(L)])


@pytest.mark.parametrize("key", [slice(None), (slice(0, 1),), (None, slice(None))])
def test_slicing_a_0d_tensor(key):
    same_error(lambda L: L.tensor(5.0)[key])


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("value", [[1.0, 2.0, 3.0, 4.0], (1, 2, 3, 4), "a", None])
def test_assigning_a_non_tensor_sequence(dtype, value):
    def run(L):
        L.ones(3, 4, dtype=getattr(L, dtype))[0] = value
    same_error(run)


# --------------------------------------------------------- fg.grad has_aux
def test_grad_with_aux_matches_torch_func():
    def f(L):
        return lambda x: ((x ** 3).sum(), {"double": x * 2})
    x = [0.5, -1.5, 2.0]
    tg, taux = torch.func.grad(f(torch), has_aux=True)(torch.tensor(x))
    og, oaux = fg.grad(f(fg), has_aux=True)(fg.tensor(x))
    assert_same(og, tg)
    assert_same(oaux["double"], taux["double"])
    assert oaux["double"].grad_fn is None
    _, aux = fg.grad(lambda x: (x.sum(), ("tag", 3)), has_aux=True)(fg.tensor(x))
    assert aux == ("tag", 3)


def test_value_and_grad_with_aux_is_jax_shaped():
    x = fg.tensor([0.5, -1.5, 2.0])
    (value, aux), g = fg.value_and_grad(lambda x: ((x * x).sum(), x.mean()), has_aux=True)(x)
    t = torch.tensor([0.5, -1.5, 2.0], requires_grad=True)
    (t * t).sum().backward()
    assert_same(value, (t * t).sum())
    assert_same(aux, t.mean())
    assert_same(g, t.grad)
    with pytest.raises(RuntimeError) as error:          # torch.func's text
        fg.grad(lambda x: x.sum(), has_aux=True)(x)
    assert str(error.value) == ("grad_and_value(f)(*args): output of function f should be a tuple: (output, aux) "
                                "if has_aux is True")


def test_grad_argument_type_errors():
    with pytest.raises(RuntimeError) as error:          # torch.func's text
        fg.grad(lambda x: x.sum(), argnums=1.0)(fg.tensor([1.0]))
    assert str(error.value) == "argnums must be int or Tuple[int, ...], got: <class 'float'>"
    with pytest.raises(TypeError, match="argument 0 is a Python int"):
        fg.grad(lambda x: x ** 3)(2)


# ----------------------------------------------------------------- shape-op edge cases (tracer/functional.py)
@pytest.mark.parametrize("call", [
    lambda lib, t: t.transpose(0, 1), lambda lib, t: t.squeeze(1), lambda lib, t: t.flatten(0, 1),
    lambda lib, t: lib.ones(6).reshape(-2, 3), lambda lib, t: lib.zeros(0, 3).reshape(0, -1),
    lambda lib, t: lib.ones(6).reshape(3.0), lambda lib, t: lib.ones(6).reshape((3.0, 2)),
    lambda lib, t: lib.ones(6).reshape(), lambda lib, t: lib.ones(3).softmax(),
    lambda lib, t: lib.ones(3).softmax((0,)), lambda lib, t: lib.ones(3).softmax(None),
    lambda lib, t: lib.ones(3).sum("a"), lambda lib, t: lib.ones(3).sum(0.5), lambda lib, t: lib.ones(3).mean(("a",)),
    lambda lib, t: lib.cat([[1, 2]]), lambda lib, t: lib.stack([[1, 2]]),
    lambda lib, t: lib.cat([lib.zeros(0), lib.ones(2, 3)], dim=2),
    lambda lib, t: bool(lib.zeros(0)), lambda lib, t: "a" in lib.ones(2),
    lambda lib, t: (lib.ones(2, requires_grad=True) * 2).backward(gradient=[1.0, 1.0]),
])
def test_shape_and_argument_errors_match_torch(call):
    same_error(lambda lib: call(lib, lib.tensor(1.0)))


@pytest.mark.parametrize("call", [
    lambda lib, t: t.transpose(0, 0), lambda lib, t: t.transpose(-1, 0), lambda lib, t: t.squeeze(0),
    lambda lib, t: t.squeeze(-1), lambda lib, t: t.flatten(), lambda lib, t: t.flatten(0, -1),
    lambda lib, t: lib.cat([lib.zeros(0), lib.ones(2, 3)]), lambda lib, t: lib.cat([lib.ones(2, 3), lib.zeros(0)], 1),
    lambda lib, t: lib.cat([lib.zeros(0, dtype=lib.float64), lib.ones(2, 3)]),
    lambda lib, t: lib.cat([lib.zeros(0), lib.zeros(0)]), lambda lib, t: lib.cat([lib.zeros(0), lib.ones(3)]),
    lambda lib, t: lib.ones(2, 3).sum([0, 1]), lambda lib, t: lib.ones(2, 3).sum(np.int64(1)),
])
def test_zero_dim_and_empty_operand_cases_match_torch(call):
    theirs, ours = both(lambda lib: call(lib, lib.tensor(1.0, requires_grad=True)))
    assert_same(ours, theirs)
    if theirs.grad_fn is not None:
        assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__


# torch 2.13's texts (it warns once per process, so a test cannot count on seeing them again).
_T_WARNINGS = {3: "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated "
                  "and it will throw an error in a future release.",
               0: "Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases."}


@pytest.mark.parametrize("shape", [(2, 3, 4), ()])
def test_T_warns_as_torch_off_two_dims(shape, monkeypatch):
    from fusegrad.tracer import functional
    monkeypatch.setattr(functional, "_WARNED_ONCE", set())     # (as in a fresh process)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = torch.ones(shape).T
    with pytest.warns(UserWarning) as ours:
        got = fg.ones(shape).T
    assert tuple(got.shape) == tuple(expected.shape)
    assert str(ours[0].message).startswith(_T_WARNINGS[len(shape)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fg.ones(2, 3).T                                       # two dims: no warning
        fg.ones(shape).T                                      # once a process, as torch's TORCH_WARN_ONCE


# ----------------------------------------------------------------- Tensor protocol (tracer/tensor.py)
def test_grad_of_a_non_leaf_warns_as_torch_unless_retained():
    def run(lib):
        x = lib.ones(2, requires_grad=True)
        y = x * 2
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert y.grad is None and x.grad is None
            y.retain_grad()
            assert y.grad is None
        return [str(w.message) for w in caught]
    theirs, ours = both(run)
    assert len(ours) == len(theirs) == 1
    assert theirs[0].startswith(ours[0])


def test_requires_grad_setter_on_a_non_leaf_raises_as_torch():
    for flag in (True, False):
        same_error(lambda lib: setattr(lib.ones(2, requires_grad=True) * 2, "requires_grad", flag))
    theirs, ours = both(lambda lib: (lib.ones(2, requires_grad=True) * 2).requires_grad_(True))
    assert ours.requires_grad and theirs.requires_grad


@pytest.mark.parametrize("element", [5.0, 3, True, 1])
def test_contains_matches_torch(element):
    theirs, ours = both(lambda lib: element in lib.tensor([1.0, 5.0]))
    assert ours == theirs
    theirs, ours = both(lambda lib: lib.tensor(5.0) in lib.tensor([[1.0, 5.0]]))
    assert ours == theirs
