"""Every error of the API contract, and bad shapes, dims and dtypes for common
ops: fusegrad must raise torch's exception class with torch's text.

Each case runs the same call in torch and in fusegrad; the expected class and
text are taken from torch at test time, not hard-coded.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle for exception classes and texts")


def _raise_of(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return e
    return None


def _normalize(msg: str) -> str:
    # torch prints sizes as `torch.Size([2])`; fusegrad's Size prints `fg.Size([2])`.
    return re.sub(r"\b(torch|fg|fusegrad)\.Size\b", "Size", msg)


def assert_same_error(case, exact=True, prefix=None):
    """`case(L)` must raise in torch; fusegrad must raise the same class and text."""
    t_err = _raise_of(lambda: case(torch))
    assert t_err is not None, "test bug: torch does not raise here"
    f_err = _raise_of(lambda: case(fg))
    assert f_err is not None, f"torch raises {type(t_err).__name__}: {t_err}; fusegrad raises nothing"
    assert isinstance(f_err, type(t_err)), (
        f"torch raises {type(t_err).__name__}: {t_err}\nfusegrad raises {type(f_err).__name__}: {f_err}")
    if prefix is not None:
        assert str(t_err).startswith(prefix), "test bug: torch's text changed"
        assert str(f_err).startswith(prefix), f"fusegrad's text: {f_err}"
    elif exact:
        assert _normalize(str(f_err)) == _normalize(str(t_err))
    return f_err


# --------------------------------------------------------------------------- the contract's errors

BROADCAST = [
    ("2x3_plus_3x2", lambda L: L.ones(2, 3) + L.ones(3, 2)),
    ("empty_with_2x2", lambda L: L.empty((0,)) + L.empty(2, 2)),
    ("tutorial_5241_with_311", lambda L: L.empty(5, 2, 4, 1) + L.empty(3, 1, 1)),
    ("three_dims", lambda L: L.ones(2, 3) * L.ones(4, 1, 2)),
    ("sub", lambda L: L.ones(3) - L.ones(4)),
    ("div", lambda L: L.ones(2, 3) / L.ones(2, 2)),
    ("pow", lambda L: L.ones(2, 3) ** L.ones(2)),
    ("maximum", lambda L: L.maximum(L.ones(2, 3), L.ones(3, 3))),
    ("minimum", lambda L: L.minimum(L.ones(2), L.ones(3))),
    ("where", lambda L: L.where(L.ones(2, 3) > 0, L.ones(2, 3), L.ones(3, 2))),
    ("comparison", lambda L: L.ones(2) < L.ones(3)),
    ("requires_grad_input", lambda L: L.ones(2, requires_grad=True) * L.ones(3)),
    ("inplace_target_too_small", lambda L: L.ones(1, 3, 1).add_(L.ones(3, 1, 7))),
    ("inplace_mismatch", lambda L: L.ones(2, 3).mul_(L.ones(3, 3))),
]


@pytest.mark.parametrize("name,case", BROADCAST, ids=[b[0] for b in BROADCAST])
def test_broadcasting_mismatch(name, case):
    assert_same_error(case)


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("self_requires_grad", [False, True])
@pytest.mark.parametrize("op", ["div", "pow", "mul", "maximum", "mse_loss"])
def test_both_operands_modified_the_error_names_the_one_torch_unpacks_first(op, self_requires_grad, compiled):
    """Both saved operands written after the op: the error names the one torch's node unpacks
    first (div's other, pow's exponent), whatever the VJP reads first (div's gradient for
    other reads self first: the error named self)."""
    def case(L):
        a = L.tensor([1.0, 2.0], requires_grad=self_requires_grad) * 1 if self_requires_grad else L.tensor([1.0, 2.0])
        b = L.tensor([3.0, 4.0], requires_grad=True)

        def f(a, b):
            y = a ** b if op == "pow" else L.nn.functional.mse_loss(a, b) if op == "mse_loss" else getattr(L, op)(a, b)
            with L.no_grad():       # (different versions, so the text tells which is named)
                b.mul_(0.5)
                a.mul_(2)
                a.mul_(2)
            return y
        (fg.compile(f) if compiled and L is fg else f)(a, b).sum().backward()
    assert_same_error(case)


@pytest.mark.parametrize("op", ["div", "mul", "mse_loss", "maximum"])
def test_the_callers_non_leaf_written_without_history_is_named_by_its_node(op):
    """The caller's non-leaf (a leaf * 1) written under no_grad inside fg.compile, after an
    op saved it: torch names it by its grad_fn, which the write left as it was (fg.compile
    named it as a leaf)."""
    def case(L):
        a = L.tensor([1.0, 2.0], requires_grad=True) * 1
        b = L.tensor([3.0, 4.0], requires_grad=True)

        def f(a, b):
            y = L.nn.functional.mse_loss(a, b) if op == "mse_loss" else getattr(L, op)(a, b)
            with L.no_grad():
                a.mul_(2)
            return y
        (fg.compile(f) if L is fg else f)(a, b).sum().backward()
    assert_same_error(case)


def test_a_value_written_under_no_grad_is_named_by_its_own_node():
    """A gradient taken inside fg.compile (its last op recorded with no node name), saved, then
    written under no_grad: the error named the internal graft op ("output 0 of Graft")."""
    def case(L):
        grad = torch.func.grad if L is torch else fg.grad

        def f(a):
            v2 = grad(lambda q: (q * q).tanh().mean())(a)
            v4 = L.minimum(v2, a)
            with L.no_grad():
                v2.add_(-2)
            return v4
        a = L.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
        (fg.compile(f) if L is fg else f)(a).sum().backward()
    assert_same_error(case)


@pytest.mark.parametrize("create_graph", [False, True])
def test_an_inplace_ops_own_copy_of_self_is_what_its_backward_reads(create_graph):
    """log_softmax saves its result; v.div_(s) then keeps its own copy of v from before the
    write. A gradient for s alone runs only div_'s node, which reads its copy: with
    create_graph the engine read log_softmax's saved (now stale) result instead and raised."""
    results = []
    for L in (torch, fg):
        a = L.tensor([[0.5, -1.0, 2.0]], requires_grad=True)
        s = L.tensor(0.7, requires_grad=True)
        v = a.log_softmax(1)
        v.div_(s.exp())
        g, = L.autograd.grad(v.tanh().sum(), [s], create_graph=create_graph)
        results.append(g.item())
        error = _raise_of(lambda: v.sum().backward())
        results.append((type(error).__name__, _normalize(str(error))))
    assert results[2] == pytest.approx(results[0], rel=1e-6)
    assert results[3] == results[1]


NO_GRAD_MODE_VIEWS = [
    "v.grad_fn", "v * v", "v.sum().item()", "v.requires_grad", "v.detach() * 2", "v.mul_(w[1:])", "v.mul_(2.0)",
]


@pytest.mark.parametrize("use", NO_GRAD_MODE_VIEWS)
def test_a_view_made_under_no_grad_of_a_base_that_needs_none(use):
    """torch marks every view made under no_grad: once its base gains a history in place, the
    view's history cannot be regenerated, so using it where a history is needed raises, and an
    in-place op giving it one raises (fusegrad regenerated it as AsStridedBackward0)."""
    def case(L):
        base = L.ones(2, 3)
        with L.no_grad():
            v = base[1:]
        w = L.ones(2, 3, requires_grad=True)
        base.mul_(w)
        return eval(use, {"v": v, "w": w})
    t_err, f_err = _raise_of(lambda: case(torch)), _raise_of(lambda: case(fg))
    if t_err is None:
        assert f_err is None, f_err
        assert case(fg) == case(torch) if use == "v.requires_grad" else True
    else:
        assert_same_error(case)


@pytest.mark.parametrize("view", ["s0.permute(0, 1, 2)", "s0[:]", "s0.view(2, 3)"])
def test_a_view_saved_by_a_compiled_call_then_its_base_written_is_named_as_torch_regenerates_it(view):
    """A view from outside the call, saved by it, then written (its base's version moves): the
    error names the view as torch's engine regenerates it (AsStrided), not by its view op."""
    def case(L):
        s0 = L.tensor([[[-1.0, 1.75, 1.25]], [[0.5, -1.5, -0.25]]], requires_grad=True)
        s1 = eval(view, {"s0": s0})

        def f(a):
            return (s1 / (a.abs().reshape(s1.shape) + 1)).sum()
        out = (fg.compile(f) if L is fg else f)(s0)
        with L.no_grad():
            s1.add_(2.0)
        out.backward()
    assert_same_error(case)


# In-place ops check memory before shapes and types, as torch's TensorIterator: the written
# tensor has no element twice, an operand does not partly overlap it (these raised the
# broadcast or cast error instead).
OVERLAP_FIRST = [
    "v = x[1:]; v.sub_(x.reshape(4, 1))",
    "v = x[1:]; v.mul_(x[:2])",
    "v = x[1:]; v += x[:2]",
    "v = x[1:]; v.copy_(x[:2])",
    "v = x[1:]; v.clamp_(min=x[:2])",
    "v = x[1:]; v.pow_(x[:2])",
    "v = x[1:]; v.div_(x[:2], rounding_mode='floor')",
    "i = x.long(); w = i[1:]; w.div_(i[:3])",
    "e = x[:1].expand(2, 4); e.add_(x[:3])",
]


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("code", OVERLAP_FIRST)
def test_inplace_memory_checks_come_before_shape_and_type(code, compiled):
    def case(L):
        def f(x):
            exec(code, {"x": x})
        x = L.arange(4.0)
        return (fg.compile(f) if compiled and L is fg else f)(x)
    assert_same_error(case)


def test_broadcasting_error_text_of_the_contract():
    with pytest.raises(RuntimeError) as err:
        fg.ones(2, 2) + fg.ones(2, 3)
    assert str(err.value) == ("The size of tensor a (2) must match the size of tensor b (3) "
                              "at non-singleton dimension 1")


_dims = st.lists(st.integers(1, 4), min_size=0, max_size=4)


@settings(max_examples=25, deadline=None)
@given(a=_dims, b=_dims, op=st.sampled_from(["add", "mul", "maximum", "lt"]))
def test_random_shape_pairs_broadcast_or_fail_as_torch(a, b, op):
    def case(L):
        x, y = L.ones(a), L.ones(b)
        return {"add": lambda: x + y, "mul": lambda: x * y, "maximum": lambda: L.maximum(x, y),
                "lt": lambda: x < y}[op]()
    t_err = _raise_of(lambda: case(torch))
    if t_err is None:
        assert tuple(case(fg).shape) == tuple(case(torch).shape)
    else:
        assert_same_error(case)


def test_backward_of_non_scalar_without_gradient():
    def case(L):
        x = L.ones(2, 3, requires_grad=True)
        (x * 2).backward()
    err = assert_same_error(case)
    assert str(err) == "grad can be implicitly created only for scalar outputs"


def test_backward_of_tensor_without_history():
    assert_same_error(lambda L: L.ones(2).sum().backward())
    assert_same_error(lambda L: (L.ones(2, requires_grad=True).detach() * 2).sum().backward())
    with fg.no_grad():
        y = (fg.ones(2, requires_grad=True) * 2).sum()
    with pytest.raises(RuntimeError, match="^element 0 of tensors does not require grad and does not have a grad_fn$"):
        y.backward()


LEAF_INPLACE = [
    ("add_", lambda x: x.add_(1.0)),
    ("sub_", lambda x: x.sub_(1.0)),
    ("mul_", lambda x: x.mul_(2.0)),
    ("div_", lambda x: x.div_(2.0)),
    ("zero_", lambda x: x.zero_()),
    ("fill_", lambda x: x.fill_(3.0)),
    ("copy_", lambda x: x.copy_(x.detach() * 0)),
    ("setitem", lambda x: x.__setitem__(0, 5.0)),
    ("view_mul_", lambda x: x[1:].mul_(2.0)),
    ("iadd", lambda x: x.__iadd__(1.0)),
]


@pytest.mark.parametrize("name,op", LEAF_INPLACE, ids=[c[0] for c in LEAF_INPLACE])
def test_inplace_on_leaf_that_requires_grad(name, op):
    assert_same_error(lambda L: op(L.tensor([1.0, 2.0, 3.0], requires_grad=True)))


SAVED_OUTPUT_OR_INPUT = [
    ("exp_output", lambda L, x: x.exp(), "out"),
    ("tanh_output", lambda L, x: x.tanh(), "out"),
    ("sigmoid_output", lambda L, x: x.sigmoid(), "out"),
    ("mul_input", lambda L, x: x * x.detach().requires_grad_(), "in"),
    ("mul_self", lambda L, x: x * x, "in"),
]


@pytest.mark.parametrize("name,fwd,target", SAVED_OUTPUT_OR_INPUT, ids=[c[0] for c in SAVED_OUTPUT_OR_INPUT])
def test_saved_tensor_modified_in_place(name, fwd, target):
    def case(L):
        a = L.tensor([[0.5, 1.0, 2.0]], requires_grad=True) * 1
        out = fwd(L, a)
        (out if target == "out" else a).add_(1.0)
        out.sum().backward()
    assert_same_error(case, prefix="one of the variables needed for gradient computation has been "
                                   "modified by an inplace operation")
    assert_same_error(case)     # the whole text: ", which is output 0 of Exp," and the hint


# Where torch's text names the modified tensor's history: a saved output names the node
# that made it, a saved input its history now (here after an in-place op, under no_grad,
# through a view), a leaf nothing.
MODIFIED_HISTORY = [
    ("input_after_add_", "y = x * 1; z = (y * y).sum(); y.add_(1); z.backward()"),
    ("input_under_no_grad", "y = x * 1; z = (y * y).sum()\nwith L.no_grad():\n    y.add_(1)\nz.backward()"),
    ("leaf_through_detach", "a = x.detach(); z = (x * x).sum(); a.add_(1); z.backward()"),
    ("view_of_non_leaf", "y = x * 1; v = y[0:2]; z = (v * v).sum(); v.add_(1); z.backward()"),
    ("output_zeroed", "y = x.exp(); z = y.sum(); y.zero_(); z.backward()"),
    ("max_values", "v, i = (x * 1).reshape(1, 2).max(dim=1); w = v.exp(); w.add_(1); w.sum().backward()"),
    ("autograd_grad", "y = x.tanh(); z = y.sum(); y.mul_(2); L.autograd.grad(z, x)"),
]


@pytest.mark.parametrize("name,code", MODIFIED_HISTORY, ids=[c[0] for c in MODIFIED_HISTORY])
def test_modified_saved_tensor_text_names_its_history(name, code):
    def case(L):
        exec(code, {"L": L, "x": L.tensor([1.0, 2.0], requires_grad=True)})
    assert_same_error(case)


@pytest.mark.parametrize("expr", ["x * 2", "2 * x", "x / 2", "x * 2.5 + 1", "x + 2", "2 - x", "x - 2", "-x"])
def test_second_backward_through_an_op_with_a_python_scalar(expr):
    """torch saves a Python scalar operand as a tensor where the VJP reads it (mul, div):
    a second backward raises there and works where it does not (add, sub, neg)."""
    outcomes = []
    for L in (torch, fg):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = eval(expr, {"x": x}).sum()
        y.backward()
        err = _raise_of(y.backward)
        outcomes.append(None if err is None else (type(err), str(err)))
        if err is None:
            outcomes.append(x.grad.tolist())
    assert outcomes[:len(outcomes) // 2] == outcomes[len(outcomes) // 2:]


@pytest.mark.parametrize("how", ["backward", "autograd.grad"])
def test_second_backward_through_freed_graph(how):
    def case(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x).exp().sum()
        if how == "backward":
            y.backward()
            y.backward()
        else:
            L.autograd.grad(y, x)
            L.autograd.grad(y, x)
    assert_same_error(case, prefix="Trying to backward through the graph a second time")
    assert_same_error(case)


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("code", ["x.max(dim=0)[0]", "x.min(dim=0, keepdim=True).values", "x.max(dim=-1)[0] * 2"])
def test_second_backward_through_a_0d_max_over_a_dim(code, compiled):
    """torch's MaxBackward0 saves its indices also for a 0-d input; fusegrad's node there is an
    identity that saved nothing, so a second backward ran (sweep 49415)."""
    def case(L):
        x = L.tensor(0.7, requires_grad=True)
        f = (lambda x: eval(code, {"x": x}))
        y = (fg.compile(f) if compiled and L is fg else f)(x)
        y.sum().backward()
        y.sum().backward()
    assert_same_error(case)


def test_second_backward_through_a_copyslices_of_a_compiled_call():
    """torch's CopySlices releases the function it wraps: a second backward raises though
    nothing was saved (a compiled call's node has no saved array there, and ran again)."""
    def case(L):
        def f(x):
            v = -x
            v[0] = 2.0
            return v
        y = (fg.compile(f) if L is fg else f)(L.tensor([1.0, 2.0], requires_grad=True))
        y.sum().backward()
        y.sum().backward()
    assert_same_error(case)


# --------------------------------------------------------------------------- fg.grad / fg.value_and_grad

@pytest.mark.parametrize("transform", ["grad", "value_and_grad"])
@pytest.mark.parametrize("shape", [(3,), (2, 3), (0,)], ids=str)
def test_grad_of_function_with_more_than_one_element(transform, shape):
    f = getattr(fg, transform)(lambda x: x * 2)
    with pytest.raises(RuntimeError) as err:
        f(fg.ones(shape))
    msg = str(err.value)
    assert re.search(r"one[- ]element", msg), msg
    dims = r"\D+".join(str(d) for d in shape)
    assert re.search(r"[\[(]" + dims + r",?[\])]", msg), f"shape {shape} not in: {msg}"


@pytest.mark.parametrize("transform", ["grad", "value_and_grad"])
@pytest.mark.parametrize("output", [3.0, None, (1.0, 2.0), "text", np.float64(1.0)],
                         ids=["float", "None", "tuple", "str", "numpy_scalar"])
def test_grad_of_function_with_non_tensor_output(transform, output):
    f = getattr(fg, transform)(lambda x: output)
    with pytest.raises(TypeError):
        f(fg.ones(1))


@pytest.mark.parametrize("transform", ["grad", "value_and_grad"])
@pytest.mark.parametrize("arg", ["abc", None, {"a": 1.0}, object()], ids=["str", "None", "dict", "object"])
def test_grad_with_non_tensor_argument(transform, arg):
    f = getattr(fg, transform)(lambda x: (x * 2).sum())
    with pytest.raises(TypeError):
        f(arg)


@pytest.mark.parametrize("transform", ["grad", "value_and_grad"])
def test_grad_with_integer_argument_is_a_clear_error(transform):
    f = getattr(fg, transform)(lambda x: (x * 2).sum())
    for arg in [fg.tensor([1, 2]), fg.tensor([True])]:
        with pytest.raises((TypeError, RuntimeError, ValueError)):
            f(arg)


@pytest.mark.parametrize("transform", ["grad", "value_and_grad"])
@pytest.mark.parametrize("argnums,nargs", [(1, 1), (2, 2), ((0, 2), 2), (-3, 2), ((0, 0, 5), 3)],
                         ids=["1_of_1", "2_of_2", "tuple_0_2_of_2", "minus_3_of_2", "tuple_5_of_3"])
def test_grad_with_argnums_out_of_range(transform, argnums, nargs):
    f = getattr(fg, transform)(lambda *xs: sum(((x * x).sum() for x in xs), fg.tensor(0.0)), argnums=argnums)
    with pytest.raises(ValueError):
        f(*[fg.ones(2) for _ in range(nargs)])


# --------------------------------------------------------------------------- bad shapes, dims and dtypes

# (id, case(L), exact text?) -- exact=False where torch's text names its internals
# (sparse layouts, C++ kernels), which the contract does not ask fusegrad to copy.
BAD_INPUTS = [
    # matmul
    ("mm_shapes", lambda L: L.ones(2, 3) @ L.ones(2, 3), True),
    ("dot_sizes", lambda L: L.ones(3) @ L.ones(4), True),
    ("mv_sizes", lambda L: L.ones(2, 3) @ L.ones(4), True),
    ("vm_sizes", lambda L: L.ones(3) @ L.ones(4, 2), True),
    ("batch_broadcast", lambda L: L.ones(5, 2, 3) @ L.ones(4, 3, 2), True),
    ("batched_inner", lambda L: L.ones(5, 2, 3) @ L.ones(5, 4, 2), True),
    ("zero_dim_matmul", lambda L: L.tensor(1.0) @ L.ones(2), True),
    ("matmul_function", lambda L: L.matmul(L.ones(2, 3), L.ones(2, 3)), True),
    # reshape / view
    ("view_size", lambda L: L.ones(2, 3).view(4), True),
    ("reshape_size", lambda L: L.ones(2, 3).reshape(4), True),
    ("reshape_two_inferred", lambda L: L.ones(2, 3).reshape(-1, -1), True),
    ("reshape_infer_impossible", lambda L: L.ones(2, 3).reshape(4, -1), True),
    ("view_non_contiguous", lambda L: L.ones(2, 3).t().view(6), True),
    # dims out of range
    ("sum_dim", lambda L: L.ones(2, 3).sum(2), True),
    ("sum_neg_dim", lambda L: L.ones(2, 3).sum(-3), True),
    ("sum_tuple_dim", lambda L: L.ones(2, 3).sum((0, 2)), True),
    ("sum_duplicate_dims", lambda L: L.ones(2, 3).sum((0, 0)), True),
    ("sum_duplicate_neg_dims", lambda L: L.ones(2, 3).sum((1, -1)), True),
    ("mean_dim", lambda L: L.ones(2, 3).mean(5), True),
    ("max_dim", lambda L: L.ones(2, 3).max(2), True),
    ("min_dim", lambda L: L.ones(2, 3).min(-3), True),
    ("norm_dim", lambda L: L.ones(2, 3).norm(dim=2), True),
    ("softmax_dim", lambda L: L.ones(2, 3).softmax(2), True),
    ("log_softmax_dim", lambda L: L.ones(2, 3).log_softmax(-3), True),
    ("unsqueeze_dim", lambda L: L.ones(2, 3).unsqueeze(3), True),
    ("squeeze_dim", lambda L: L.ones(2, 3).squeeze(2), True),
    ("transpose_dim", lambda L: L.ones(2, 3).transpose(0, 2), True),
    ("flatten_dim", lambda L: L.ones(2, 3).flatten(3), True),
    ("cat_dim", lambda L: L.cat([L.ones(2, 3), L.ones(2, 3)], dim=2), True),
    ("stack_dim", lambda L: L.stack([L.ones(2, 3), L.ones(2, 3)], dim=4), True),
    ("scalar_sum_dim", lambda L: L.tensor(1.0).sum(1), True),
    # permute / expand / t
    ("permute_length", lambda L: L.ones(2, 3).permute(0, 1, 2), False),
    ("permute_duplicate", lambda L: L.ones(2, 3).permute(0, 0), True),
    ("expand_mismatch", lambda L: L.ones(2, 3).expand(2, 4), True),
    ("expand_mismatch_in_two_dims", lambda L: L.ones(2, 3).expand(3, 4), True),      # torch reports the last
    ("expand_fewer_dims", lambda L: L.ones(2, 3).expand(3), False),
    ("expand_new_dim_minus_one", lambda L: L.ones(2, 3).expand(-1, 2, 3), True),
    ("t_of_3d", lambda L: L.ones(2, 3, 4).t(), True),
    # cat / stack
    ("cat_sizes", lambda L: L.cat([L.ones(2, 3), L.ones(2, 2)]), True),
    ("cat_ndim", lambda L: L.cat([L.ones(2, 3), L.ones(3)]), True),
    ("cat_empty_list", lambda L: L.cat([]), True),
    ("cat_zero_dim", lambda L: L.cat([L.tensor(1.0), L.tensor(2.0)]), True),
    ("stack_sizes", lambda L: L.stack([L.ones(2, 3), L.ones(3, 2)]), True),
    ("stack_empty_list", lambda L: L.stack([]), True),
    # indexing
    ("index_out_of_range", lambda L: L.ones(2, 3)[5], True),
    ("index_negative_out_of_range", lambda L: L.ones(2, 3)[-3], True),
    ("index_dim1_out_of_range", lambda L: L.ones(2, 3)[:, 3], True),
    ("too_many_indices", lambda L: L.ones(2, 3)[0, 0, 0], True),
    ("index_zero_dim", lambda L: L.tensor(1.0)[0], True),
    ("setitem_shape", lambda L: L.ones(2, 3).__setitem__(0, L.ones(2)), True),
    # conversions
    ("item_many", lambda L: L.ones(2, 3).item(), True),
    ("float_many", lambda L: float(L.ones(2, 3)), True),
    ("int_many", lambda L: int(L.ones(2)), True),
    ("bool_many", lambda L: bool(L.ones(2)), True),
    ("numpy_requires_grad", lambda L: L.ones(2, requires_grad=True).numpy(), True),
    # requires_grad
    ("int_tensor_requires_grad", lambda L: L.tensor([1, 2], requires_grad=True), True),
    ("int_requires_grad_setter", lambda L: setattr(L.tensor([1, 2]), "requires_grad", True), True),
    ("int_requires_grad_", lambda L: L.tensor([1, 2]).requires_grad_(), True),
    ("non_leaf_requires_grad_false", lambda L: setattr(L.ones(2, requires_grad=True) * 2, "requires_grad", False), True),
    ("non_leaf_requires_grad__false", lambda L: (L.ones(2, requires_grad=True) * 2).requires_grad_(False), True),
    # dtypes
    ("where_float_condition", lambda L: L.where(L.ones(2), L.ones(2), L.ones(2)), True),
    ("mean_of_int", lambda L: L.tensor([1, 2]).mean(), True),
    ("norm_of_int", lambda L: L.tensor([1, 2]).norm(), True),
    ("softmax_of_int", lambda L: L.tensor([1, 2]).softmax(0), False),
    ("log_softmax_of_int", lambda L: L.tensor([1, 2]).log_softmax(0), False),
    ("neg_of_bool", lambda L: -L.tensor([True]), True),
    ("sub_bools", lambda L: L.tensor([True]) - L.tensor([True]), True),
    ("sub_float_bool", lambda L: L.tensor([1.5]) - L.tensor([True]), True),
    ("int_pow_negative_int", lambda L: L.tensor([1, 2]) ** -2, True),
    ("int_inplace_mul_float", lambda L: L.tensor([1, 2]).mul_(1.5), True),
    ("int_inplace_add_float_tensor", lambda L: L.tensor([1, 2]).add_(L.ones(2)), True),
    ("clamp_without_bounds", lambda L: L.ones(2).clamp(), True),
    ("max_of_empty", lambda L: L.ones(0).max(), True),
    # non-tensor operands
    ("add_str", lambda L: L.ones(2) + "a", True),
    ("add_none", lambda L: L.ones(2) + None, True),
    ("matmul_int", lambda L: L.ones(2) @ 2, True),
    ("mul_list_of_str", lambda L: L.ones(2) * "ab", False),
    # creation
    ("zeros_negative", lambda L: L.zeros(-1), True),
    ("tensor_ragged", lambda L: L.tensor([[1, 2], [3]]), True),
    ("tensor_of_str", lambda L: L.tensor("abc"), False),
    # in-place shape and memory errors
    ("copy_shape", lambda L: L.ones(2, 3).copy_(L.ones(2)), True),
    ("inplace_into_expanded", lambda L: L.ones(1, 3).expand(2, 3).add_(1.0), True),
]


@pytest.mark.parametrize("name,case,exact", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_raises_torch_error(name, case, exact):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same_error(case, exact=exact)


BACKWARD_MISUSE = [
    ("gradient_shape", lambda L: (L.ones(2, 3, requires_grad=True) * 2).backward(L.ones(3)), True),
    ("gradient_shape_transposed", lambda L: (L.ones(2, 3, requires_grad=True) * 2).backward(L.ones(3, 2)), True),
    ("grad_of_constant_input", lambda L: L.autograd.grad((L.ones(2, requires_grad=True) * 2).sum(), [L.ones(2)]), True),
    ("grad_unused_input", lambda L: L.autograd.grad((L.ones(2, requires_grad=True) * 2).sum(),
                                                    [L.ones(2, requires_grad=True)]), True),
    ("grad_non_scalar_output", lambda L: L.autograd.grad(L.ones(2, requires_grad=True) * 2,
                                                         [L.ones(2, requires_grad=True)]), True),
    ("assign_grad_of_wrong_shape", lambda L: setattr(L.zeros(2, requires_grad=True), "grad", L.ones(3)), True),
    ("grad_output_without_history", lambda L: L.autograd.grad(L.ones(2).sum(), [L.ones(2, requires_grad=True)]), True),
]


@pytest.mark.parametrize("name,case,exact", BACKWARD_MISUSE, ids=[b[0] for b in BACKWARD_MISUSE])
def test_backward_misuse_raises_torch_error(name, case, exact):
    assert_same_error(case, exact=exact)


def test_failed_op_leaves_tensors_usable():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError):
        x * fg.ones(3)
    with pytest.raises(RuntimeError):
        x.add_(1.0)
    assert x.tolist() == [1.0, 2.0]
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_nan_and_inf_are_values_not_errors():
    x = fg.tensor([0.0, -1.0, float("nan"), float("inf")], requires_grad=True)
    y = x.log() + x.sqrt() + 1.0 / x
    y.sum().backward()
    assert np.isnan(y.detach().numpy()[1]) and np.isnan(y.detach().numpy()[2])
    assert x.grad.shape == (4,)


UNUSED_OR_NO_GRAD = [
    ("second_input_unused", lambda L, x, z: L.autograd.grad((x * 2).sum(), [x, z])),
    ("first_input_unused", lambda L, x, z: L.autograd.grad((x * 2).sum(), [z, x])),
    ("output_without_history", lambda L, x, z: L.autograd.grad(x.detach().sum(), [x])),
    ("input_without_grad", lambda L, x, z: L.autograd.grad((x * 2).sum(), [x.detach()])),
    ("neither", lambda L, x, z: L.autograd.grad(x.detach().sum(), [x.detach()])),
]


@pytest.mark.parametrize("name,call", UNUSED_OR_NO_GRAD, ids=[c[0] for c in UNUSED_OR_NO_GRAD])
def test_autograd_grad_unused_or_non_differentiable(name, call):
    assert_same_error(lambda L: call(L, L.tensor([1.0, 2.0], requires_grad=True),
                                     L.tensor([1.0], requires_grad=True)))


@pytest.mark.parametrize("call", [
    lambda lib: lib.cat([lib.ones(2), lib.ones(2)], dim=1.0),
    lambda lib: lib.cat([lib.ones(2), lib.ones(2)], 1.0),
    lambda lib: lib.stack([lib.ones(2)], dim="a"),
    lambda lib: lib.stack([lib.ones(2)], None),
    lambda lib: lib.ones(2, 3).argmin(1.5),
    lambda lib: lib.ones(2, 3).argmin(dim=1.5),
    lambda lib: lib.argmin(lib.ones(2, 3), 1.5),
    lambda lib: lib.argmax(lib.ones(2, 3), dim="a"),
    lambda lib: lib.ones(2, 3).argmax(True),
    lambda lib: lib.ones(2, 3).unsqueeze(dim=1.5),
    lambda lib: lib.unsqueeze(lib.ones(2, 3), 1.5),
    lambda lib: lib.ones(2, 3).transpose(dim0=1.5, dim1=0),
    lambda lib: lib.transpose(lib.ones(2, 3), 0, dim1="a"),
    lambda lib: lib.ones(2, 3).flatten(start_dim=0.5),
    lambda lib: lib.flatten(lib.ones(2, 3), 0.5),
    lambda lib: lib.ones(2, 3).norm(dim="a"),
    lambda lib: lib.ones(2, 3).norm([2], 1, True),
    lambda lib: lib.cat([lib.ones(2), lib.ones(2)], axis=1.5),
    lambda lib: lib.cat([lib.ones(2), lib.ones(2)], dim=0, axis=0),
    lambda lib: lib.ones(2, 3).transpose(np.float64(1.0), 1),
    lambda lib: lib.zeros_like(lib.ones(2), foo=1),
    lambda lib: lib.ones_like(lib.ones(2), size=(2,)),
])
def test_an_argument_is_named_with_its_position_only_when_given_by_position(call):
    """torch's parser names an argument's position only for a positional one."""
    with pytest.raises(TypeError) as theirs:
        call(torch)
    with pytest.raises(TypeError) as ours:
        call(fg)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("call", [
    "t.sum(1.5)", "L.sum(t, 1.5)", "t.sum(dim=1.5)", "L.sum(t, dim=1.5)", "L.sum(input=t, dim=1.5)",
    "t.mean('a')", "L.mean(t, 'a')", "t.all(1.5)", "L.all(t, 1.5)", "t.any(dim=1.5)",
    "t.max(1.5)", "L.max(t, 1.5)", "t.max(dim=1.5)", "L.max(t, dim=1.5, keepdim=True)",
    "t.var(1.5)", "L.var(t, 1.5)", "t.std(dim=1.5)",
    "t.amax(1.5)", "L.amax(t, 1.5)", "t.amax(dim=1.5)",
])
def test_a_bad_reduction_dim_lists_the_call_as_torch_does(call):
    """torch's parser lists the call's own arguments (without self for a method, keywords as
    name=type); the overloads it lists after ", but expected one of:" are one form's here."""
    def first_line(lib):
        t = lib.ones(2, 3)
        with pytest.raises(TypeError) as info:
            eval(call, {"L": lib, "t": t})
        return str(info.value).split(", but expected one of")[0]

    assert first_line(fg) == first_line(torch)


@pytest.mark.parametrize("dim", ["L.tensor(1)", "L.tensor([1])", "L.tensor(True)", "L.tensor([[1]])"])
@pytest.mark.parametrize("call", ["x.sum(d)", "x.sum(d, True)", "L.mean(x, d)", "x.amax(d)", "x.var(d)",
                                  "x.std(d, keepdim=True)", "x.norm(2, d, True)", "L.norm(x, 2, d)"])
def test_a_one_element_integer_tensor_is_a_reduction_dim(call, dim):
    """torch's int-list parser takes a one-element integer or bool tensor of any rank as an int."""
    def result(lib):
        x = lib.tensor([[1.0, 2.0], [3.0, 5.0]])
        return eval(call, {"L": lib, "x": x, "d": eval(dim, {"L": lib})}).detach().numpy()

    np.testing.assert_allclose(result(fg), result(torch), rtol=1e-6)


@pytest.mark.parametrize("call", ["x.squeeze(L.tensor([0]))", "L.squeeze(x, L.tensor(0))", "x.squeeze(L.tensor([[2]]))",
                                  "x.squeeze(L.tensor(True))", "L.squeeze(x, L.tensor([0]))", "L.squeeze(x, L.tensor(True))"])
def test_squeeze_takes_a_one_element_integer_tensor_as_its_dim(call):
    """The method's parser takes a one-element integer or bool tensor; torch.squeeze, a 0-d integer one only."""
    def result(lib):
        try:
            return tuple(eval(call, {"L": lib, "x": lib.ones(1, 2, 1)}).shape)
        except TypeError as exc:
            return str(exc).split(" - got")[0]

    assert result(fg) == result(torch)


def test_from_numpy_of_a_tensor_names_its_type_bare():
    for lib in (fg, torch):
        with pytest.raises(TypeError, match=r"^expected np.ndarray \(got Tensor\)$"):
            lib.from_numpy(lib.ones(2))


def test_norm_with_its_default_p_refuses_a_0d_tensor_dim_as_torch_does():
    """torch's norm takes len(dim) when p is a string (its default "fro")."""
    for lib in (fg, torch):
        with pytest.raises(TypeError, match=r"^len\(\) of a 0-d tensor$"):
            lib.norm(lib.ones(2, 3), dim=lib.tensor(1))


@pytest.mark.parametrize("fn", ["cat", "stack"])
def test_cat_and_stack_with_a_third_positional_argument_raise_pythons_text(fn):
    """They take `axis` as NumPy's spelling, but have no keepdim to check (the text named one)."""
    for lib in (fg, torch):
        with pytest.raises(TypeError, match=rf"^{fn}\(\) takes from 1 to 2 positional arguments but 3 were given$"):
            getattr(lib, fn)([lib.ones(2)], 0, 0)


def test_cat_and_stack_take_numpys_axis_as_torch_does():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for fn in ("cat", "stack"):
        ours = getattr(fg, fn)([fg.tensor(x), fg.tensor(x)], axis=1)
        theirs = getattr(torch, fn)([torch.tensor(x), torch.tensor(x)], axis=1)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
