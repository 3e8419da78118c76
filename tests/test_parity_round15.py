"""Parity round 15 (an nn/optim probe against torch 2.13; torch is the oracle):
nn.functional's softmax and log_softmax with an integer or bool `dtype` raise torch's error,
Module.train() calls each child's own train(), eager mse_loss sums in torch's order, and
the optimizers refuse `fused=True` with `foreach` or `differentiable` as torch's do."""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")


def outcome(fn):
    """A call's result (dtype and values) or its error's class and text."""
    try:
        result = fn()
    except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
        return ("error", type(exc).__name__, str(exc))
    return ("value", str(result.dtype).split(".")[-1], np.asarray(result.detach().numpy()).tolist())


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", ["int64", "bool", "float64", "float32"])
@pytest.mark.parametrize("dim", [0, 1])
def test_functional_softmax_with_a_dtype_as_torch(name, dtype, dim):
    def call(L):
        x = L.tensor([[1.0, 2.0], [3.0, 5.0]], requires_grad=True)
        return getattr(L.nn.functional, name)(x, dim, dtype=getattr(L, dtype))
    expected = outcome(lambda: call(torch))
    got = outcome(lambda: call(fg))
    assert got[:2] == expected[:2]
    if expected[0] == "value":
        np.testing.assert_allclose(got[2], expected[2], rtol=1e-6)
    else:
        assert got == expected


def test_train_calls_each_childs_own_train():
    """A child that overrides train() (to keep a frozen backbone in eval mode) is obeyed."""
    def modes(L):
        class Frozen(L.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = L.nn.Linear(2, 2)

            def train(self, mode=True):
                return super().train(False)

        model = L.nn.Sequential(L.nn.Linear(2, 2), Frozen(), L.nn.ReLU())
        model.train()
        return [m.training for m in model.modules()]
    assert modes(fg) == modes(torch) == [True, True, False, False, True]


@pytest.mark.parametrize("shape", [(10,), (1000,), (40000,), (30, 70), (3, 400, 50), (0,), ()])
@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mse_loss_sums_bit_for_bit_as_torch(shape, reduction, dtype):
    rng = np.random.default_rng(sum(shape) + len(shape))
    a, b = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
    expected = torch.nn.functional.mse_loss(torch.tensor(a), torch.tensor(b), reduction=reduction).numpy()
    got = fg.nn.functional.mse_loss(fg.tensor(a), fg.tensor(b), reduction=reduction).numpy()
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
@pytest.mark.parametrize("flags", [dict(fused=True, foreach=True), dict(fused=True, differentiable=True),
                                   dict(fused=True, foreach=True, differentiable=True), dict(fused=True),
                                   dict(foreach=True, differentiable=True)])
def test_fused_optimizer_flag_checks_as_torch(name, flags):
    def make(L):
        return getattr(L.optim, name)([L.zeros(2, requires_grad=True)], lr=0.1, **flags)
    def result(L):
        try:
            make(L)
        except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
            return type(exc).__name__, str(exc)
        return "ok"
    assert result(fg) == result(torch)


def _hooked_run(L) -> list:
    """Forward pre-hooks and hooks (prepend, with_kwargs, replacing inputs and outputs, removal,
    deepcopy) on a small model; what they saw and the outputs."""
    import copy
    seen = []
    L.manual_seed(0)
    model = L.nn.Sequential(L.nn.Linear(3, 2), L.nn.ReLU())
    handles = [
        model[0].register_forward_pre_hook(lambda mod, args: (args[0] * 2,)),
        model[0].register_forward_hook(lambda mod, args, out: out + 1),
        model[0].register_forward_hook(lambda mod, args, out: seen.append(("first", tuple(out.shape))), prepend=True),
        model.register_forward_hook(lambda mod, args, kwargs, out: seen.append(("kwargs", sorted(kwargs))),
                                    with_kwargs=True),
        model[1].register_forward_pre_hook(lambda mod, args, kwargs: ((args[0] - 0.5,), kwargs), with_kwargs=True),
        model[1].register_forward_pre_hook(lambda mod, args: args[0] * 3),     # one input, not a tuple
    ]
    x = L.ones(4, 3)
    seen.append(model(x).detach().numpy().tolist())
    seen.append(copy.deepcopy(model)(x).detach().numpy().tolist())
    for handle in handles:
        handle.remove()
    handles[0].remove()             # (again: nothing happens)
    seen.append(model(x).detach().numpy().tolist())
    with model[0].register_forward_hook(lambda mod, args, out: out * 2):
        seen.append(model(x).detach().numpy().tolist())
    seen.append(model(x).detach().numpy().tolist())
    return seen


def test_module_forward_hooks_as_torch():
    assert _hooked_run(fg) == _hooked_run(torch)


def test_calculate_gain_of_linear_is_the_int_one():
    for name in ("linear", "conv2d", "sigmoid"):
        got, expected = fg.nn.init.calculate_gain(name), torch.nn.init.calculate_gain(name)
        assert (type(got), got) == (type(expected), expected)


# ---- fg.compile: an op whose result nothing reads still raises where eagerly it does
DEAD_RAISING = {
    "max_dim_empty": (lambda L, x, i: (x.max(0), x * 2)[1], (0, 4)),
    "min_dim_empty": (lambda L, x, i: (x.min(0), x * 2)[1], (0, 4)),
    "max_dim_empty_then_amin": (lambda L, x, i: (x.max(0), x.amin(0), x * 2)[2], (0, 4)),
    "index_out_of_range": (lambda L, x, i: (x[i], x * 2)[1], (3,)),
    "embedding_out_of_range": (lambda L, x, i: (L.nn.functional.embedding(i, x), x * 2)[1], (3, 2)),
    "integer_floor_division_by_zero": (lambda L, x, i: (i // (i - 5), x * 2)[1], (3,)),
    "integer_remainder_by_zero": (lambda L, x, i: (i % (i - 5), x * 2)[1], (3,)),
    "float_floor_division_by_zero": (lambda L, x, i: (x // 0.0, x * 2)[1], (3,)),      # no error: inf
    "index_in_range": (lambda L, x, i: (x[i - 5], x * 2)[1], (6,)),                    # no error
}


@pytest.mark.parametrize("case", sorted(DEAD_RAISING))
@pytest.mark.parametrize("transform", ["compile", "compile_value_and_grad"])
def test_compiled_call_raises_for_an_op_nothing_reads(case, transform):
    fn, shape = DEAD_RAISING[case]

    def run(L, compiled):
        x = L.ones(shape)
        index = L.tensor([5, 7, 6])
        if transform == "compile":
            call = lambda x: fn(L, x, index)        # noqa: E731
        else:
            call = lambda x: fn(L, x, index).sum()  # noqa: E731
            call = (fg.value_and_grad(call) if L is fg else torch.func.grad_and_value(call))
        if compiled:
            call = fg.compile(call)
        try:
            result = call(x)
        except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
            return ("error", type(exc).__name__, str(exc))
        return ("value",)
    expected = run(torch, False)
    assert run(fg, False) == expected
    assert run(fg, True) == expected


# ---- in-place ops over memory their operand shares: torch's overlap rule (the same bytes with
# the same strides is a full overlap, allowed), then its shape check
OVERLAPS = {
    "t_mul": lambda L, x: x.t().mul_(x), "t_add_t": lambda L, x: x.t().add_(x.t()),
    "sub_element": lambda L, x: x.sub_(x[1, 0]), "copy_t": lambda L, x: x.copy_(x.t()),
    "mul_self": lambda L, x: x.mul_(x), "view_mul": lambda L, x: x.view(1, 3).mul_(x),
    "reshape_mul": lambda L, x: x.reshape(3).mul_(x.reshape(3)), "flat_add": lambda L, x: x.view(-1).add_(x.view(3, 1)),
}


@pytest.mark.parametrize("case", sorted(OVERLAPS))
@pytest.mark.parametrize("compiled", [False, True])
def test_in_place_overlap_and_shape_checks_as_torch(case, compiled):
    def run(L, compiled):
        return _table_call(lambda x: OVERLAPS[case](L, x), compiled, L.arange(3.0).reshape(3, 1))
    assert run(fg, compiled) == run(torch, False)


def _table_call(fn, compiled: bool, argument):
    """fn(argument), compiled or not: the result's shape and values (or None), or the error's
    class and text."""
    try:
        result = (fg.compile(fn) if compiled else fn)(argument)
    except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
        return ("error", type(exc).__name__, str(exc))
    return ("value",) if result is None else ("value", tuple(result.shape), result.tolist())


# ---- version-error texts (the compile and transform probe)
def _error_text(fn):
    try:
        fn()
    except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
        return type(exc).__name__, str(exc)
    return "ok"


@pytest.mark.parametrize("argument", ["view", "plain", "non-leaf"])
@pytest.mark.parametrize("compiled", [False, True])
def test_version_error_names_a_saved_view_written_since_as_torch(argument, compiled):
    """A view argument filled (no history), saved, then written with a value that requires
    grad: the error names it as the view torch regenerates (output 0 of AsStrided)."""
    def f(x1, s):
        x1.fill_(-2)
        saved = s * x1
        x1[None] = s
        return saved

    def run(L, compiled):
        x = L.zeros(2, 3)[1] if argument == "view" else L.zeros(3) if argument == "plain" else \
            L.zeros(3, requires_grad=True) * 1
        s = L.ones((), requires_grad=True)
        return _error_text(lambda: (fg.compile(f) if compiled else f)(x, s).sum().backward())
    expected = run(torch, False)
    assert expected[0] == "RuntimeError"
    assert run(fg, compiled) == expected


@pytest.mark.parametrize("how", ["create_graph", "grad_of_grad"])
def test_create_graph_version_error_names_the_tensor_as_torchs_engine_meets_it(how):
    """A value two nodes saved (pow's result, amax's input), then written: the first node
    torch's engine runs (amax) unpacks it and names its history now (Add), also when the
    backward records a graph."""
    def f(x):
        v2 = 0.5 ** x
        v3 = v2.amax(-1)
        v2.add_(x)
        return v3.sum()

    def run(L):
        if how == "create_graph":
            x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
            return _error_text(lambda: L.autograd.grad(f(x), x, create_graph=True))
        grad = fg.grad if L is fg else torch.func.grad
        return _error_text(lambda: grad(lambda y: grad(f)(y).sum())(L.tensor([1.0, 2.0, 3.0])))
    expected = run(torch)
    assert "output 0 of Add" in expected[1]
    assert run(fg) == expected


@pytest.mark.parametrize("compiled", [False, True])
def test_in_place_write_to_an_argument_in_grad_of_grad_is_torch_funcs_leaf_error(compiled):
    def f(x):
        x.mul_(2)
        return (x * x).sum()

    def run(L, compiled):
        grad = fg.grad if L is fg else torch.func.grad
        call = grad(lambda y: grad(f)(y).sum())
        return _error_text(lambda: (fg.compile(call) if compiled else call)(L.tensor([1.0, 2.0, 3.0])))
    expected = run(torch, False)
    assert expected == ("RuntimeError", "a leaf Variable that requires grad is being used in an in-place operation.")
    assert run(fg, compiled) == expected


# ---- error paths under fg.compile (the error-path probe)
ERROR_PATHS = {
    "clamp_tensor_bound_wider": lambda L, x: (x[:1] * 1).clamp_(L.zeros(2, 3)),
    "clamp_max_bound_wider": lambda L, x: (x[:1] * 1).clamp_(max=L.zeros(2, 3)),
    "clamp_both_bounds_wider": lambda L, x: (x[:1] * 1).clamp_(L.zeros(2, 3), L.ones(2, 3)),
    "clamp_bound_fits": lambda L, x: (x * 1).clamp_(L.zeros(3)),
    "dead_setitem_out_of_range": lambda L, x: ((x * 1).__setitem__(L.tensor([0, 3]), 2.0), x * 2)[1],
    "dead_setitem_list_out_of_range": lambda L, x: ((x * 1).__setitem__([0, 3], 2.0), x * 2)[1],
    "index_of_empty_rows": lambda L, x: L.ones(2, 0)[L.tensor([5])],
    "index_of_empty_rows_3d": lambda L, x: L.ones(2, 0, 4)[L.tensor([4])],
    "index_of_empty": lambda L, x: L.ones(0)[L.tensor([5])],
    "setitem_of_empty_rows": lambda L, x: L.ones(2, 0).__setitem__(L.tensor([5]), 1.0),
    "empty_integer_floor_division_by_zero": lambda L, x: L.ones(0, 3, dtype=L.int64) // L.tensor([1, 0, 2]),
    "empty_integer_remainder_by_zero": lambda L, x: L.ones(0, 3, dtype=L.int64) % L.tensor([1, 0, 2]),
}


@pytest.mark.parametrize("case", sorted(ERROR_PATHS))
@pytest.mark.parametrize("compiled", [False, True])
def test_error_paths_as_torch(case, compiled):
    def run(L, compiled):
        return _table_call(lambda x: ERROR_PATHS[case](L, x), compiled, L.ones(3))
    assert run(fg, compiled) == run(torch, False)


@pytest.mark.parametrize("compiled", [False, True])
def test_a_view_returned_from_a_no_grad_call_that_wrote_its_base_raises_at_use(compiled):
    """Under no_grad, a call returns x[0] and then writes x in place: torch's view is stale
    (its history cannot be regenerated), so its grad_fn, is_leaf and backward raise; a
    compiled call gave it a node and filled x.grad through a call made under no_grad."""
    def f(x):
        v = x[0]
        x.add_(1)
        return v

    def run(L, compiled):
        x = L.ones(3, 2, requires_grad=True)
        with L.no_grad():
            out = (fg.compile(f) if compiled else f)(x)
        return (out.requires_grad, _error_text(lambda: out.grad_fn), _error_text(lambda: out.is_leaf),
                _error_text(lambda: out.sum().backward()), x.grad)
    expected = run(torch, False)
    assert expected[1][0] == "RuntimeError"
    assert run(fg, compiled) == expected


# An op that raises on values whose inputs are known while tracing is checked then: the call
# raises where eager execution does, before a later error, with the writes made before it kept.
KNOWN_VALUES = {
    "gather_then_leaf_write": lambda L, x, w: (x[L.tensor([0, 3])], w.add_(1)),
    "write_then_gather": lambda L, x, w: ((w * 1).add_(1), x.add_(1), x[L.tensor([0, 3])]),
    "copy_then_gather": lambda L, x, w: (x.copy_(x * 2), x[L.tensor([0, 3])]),
    "write_then_setitem": lambda L, x, w: (x.mul_(2), (x * 1).__setitem__(L.tensor([3]), 1.0)),
    "write_then_integer_division": lambda L, x, w: (x.mul_(2), L.tensor([4, 6]) // L.tensor([1, 0])),
    "write_then_embedding": lambda L, x, w: (x.mul_(2), L.nn.functional.embedding(L.tensor([5]), L.ones(3, 2))),
}


@pytest.mark.parametrize("case", sorted(KNOWN_VALUES))
def test_value_errors_known_while_tracing_raise_in_eager_order(case):
    def run(L, compiled):
        x, w = L.ones(3), L.ones(3, requires_grad=True)
        fn = (lambda x, w: KNOWN_VALUES[case](L, x, w))       # noqa: E731
        outcome = _error_text(lambda: (fg.compile(fn) if compiled else fn)(x, w))
        return outcome, x.tolist(), x._version
    expected = run(torch, False)
    assert expected[0][0] in ("IndexError", "RuntimeError")
    assert run(fg, False) == expected
    assert run(fg, True) == expected


@pytest.mark.parametrize("shapes", [((2, 3, 4), (2, 4, 5)), ((3, 4), (2, 4, 5)), ((2, 3, 4), (4, 5)), ((4,), (2, 4, 5))])
@pytest.mark.parametrize("dtypes", [("bool", "float32"), ("float32", "bool"), ("bool", "bool"), ("int64", "float32")])
def test_batched_matmul_dtype_errors_as_torch(shapes, dtypes):
    """torch's bmm refuses a bool first operand (NotImplementedError) before it compares dtypes."""
    def run(L):
        a = L.ones(*shapes[0], dtype=getattr(L, dtypes[0]))
        b = L.ones(*shapes[1], dtype=getattr(L, dtypes[1]))
        return _error_text(lambda: a @ b)
    assert run(fg) == run(torch)


@pytest.mark.parametrize("case", ["expand_as_copy", "expand_same_add", "expand_same_fill", "expand_wider_add",
                                  "expand_same_mul_self"])
def test_expand_that_expands_nothing_overlaps_fully_as_torch(case):
    """NumPy gives a size-1 dim of an expand a zero stride; torch keeps its stride, so writing
    x.expand_as(x) from x is a full overlap (allowed), as torch's."""
    calls = {"expand_as_copy": lambda x: x.expand_as(x).copy_(x), "expand_same_add": lambda x: x.expand(1, 4).add_(1),
             "expand_same_fill": lambda x: x.expand(1, 4).fill_(2), "expand_wider_add": lambda x: x.expand(2, 4).add_(1),
             "expand_same_mul_self": lambda x: x.expand(1, 4).mul_(x)}

    def run(L):
        x = L.ones(1, 4)
        return _error_text(lambda: calls[case](x)), x.tolist(), x._version
    assert run(fg) == run(torch)


_EXTREMUM_CALLS = [((a,), {}) for a in ((0, 1), [0, 1], 1.5, "a", None, (0, "a"), (), (0,))] + \
    [((), kw) for kw in (dict(dim=(0, 1)), dict(dim=1.5, keepdim=True), dict(keepdim=True), dict(dim=1.5))] + \
    [(((0, 1), True), {}), ((0, 1.5), {}), ((1.5, True), {}), ((0,), dict(keepdim=1.5))]


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("call", range(len(_EXTREMUM_CALLS)))
def test_max_min_method_argument_errors_as_torch(name, call):
    """The method forms list the method's own overloads (`()`, `(Tensor other)`, `(int dim, bool
    keepdim = False)`), with torch's parser's reasons; two arguments give the dim overload's error."""
    args, kwargs = _EXTREMUM_CALLS[call]

    def run(L):
        return _error_text(lambda: getattr(L.ones(3, 4), name)(*args, **kwargs))
    assert run(fg) == run(torch)


@pytest.mark.parametrize("write", ["detach", "no_grad", "view_detach"])
@pytest.mark.parametrize("compiled", [False, True])
def test_grad_of_an_argument_with_history_written_outside_autograd_raises_as_torch_func(write, compiled):
    """fg.grad's stand-in for an argument that has history is a leaf of its level, as torch.func's
    wrapper: a write through its memory outside autograd (detach, no_grad) makes the saved value
    stale, and the gradient raises torch's version error (it was zeros: the path was lost)."""
    def f_of(L):
        def f(x):
            v = x.sin().sum()
            if write == "detach":
                x.detach().mul_(2)
            elif write == "no_grad":
                with L.no_grad():
                    x.mul_(2)
            else:
                x[0:2].detach().zero_()
            return v
        return f

    def run(L, compiled):
        y = L.tensor([0.5, 1.2, -0.3], requires_grad=True) * 1
        grad = fg.grad(f_of(L)) if L is fg else torch.func.grad(f_of(L))
        return _error_text(lambda: (fg.compile(grad) if compiled else grad)(y))
    expected = run(torch, False)
    assert expected[0] == "RuntimeError"
    assert run(fg, compiled) == expected


@pytest.mark.parametrize("op", ["sign", "floor_div", "trunc_div"])
def test_create_graph_checks_saved_values_behind_a_zero_derivative(op):
    """A node behind sign (or a rounding division), whose derivative is zero, still unpacks (so
    checks) what it saved under create_graph, as torch's engine runs it."""
    def run(L):
        x = L.tensor([0.5, -1.2, 0.3], requires_grad=True)
        v = x.sign() * 1 if op == "sign" else L.div(x * 3, 2, rounding_mode=op.split("_")[0]) * 1
        m = (v * v).sum()
        v.mul_(2)
        return _error_text(lambda: L.autograd.grad(m, x, create_graph=True))
    expected = run(torch)
    assert expected[0] == "RuntimeError"
    assert run(fg) == expected


@pytest.mark.parametrize("case", ["backward_then_index", "write_then_index", "write_then_division", "grad_set_then_index"])
def test_a_call_failing_on_values_computed_in_it_keeps_what_came_before(case):
    """A compiled call whose program raises on values it computed (an index, a divisor) keeps
    the writes and the .grad made before the failing op, as eagerly; the .grad stays usable."""
    def run(L, compiled):
        x, w = L.ones(2, requires_grad=True), L.ones(2)
        z = L.tensor([1.0])

        def f(x, w, z):
            if case == "backward_then_index":
                (x.sum() * 1.0).backward()
            elif case == "grad_set_then_index":
                x.grad = L.full((2,), 5.0)
            else:
                w.add_(1)
            if case == "write_then_division":
                return L.tensor([4, 6]) // (z * 0).long()
            return x[(z * 3).long()]
        outcome = _error_text(lambda: (fg.compile(f) if compiled else f)(x, w, z))
        grad = None if x.grad is None else x.grad.tolist()
        (x * 2).sum().backward()
        return outcome, w.tolist(), w._version, grad, x.grad.tolist()
    expected = run(torch, False)
    assert expected[0][0] in ("IndexError", "RuntimeError")
    assert run(fg, True) == expected


@pytest.mark.parametrize("op", ["zero_", "fill_", "mul_"])
@pytest.mark.parametrize("compiled", [False, True])
def test_in_place_op_through_an_expand_to_an_empty_shape_writes_nothing(op, compiled):
    """torch writes nothing (and records a CopySlices on the base); fusegrad raised a reshape error."""
    def f_of(L):
        def f(x):
            y = x * 1
            view = y.expand(0, 4)
            if op == "zero_":
                view.zero_()
            elif op == "fill_":
                view.fill_(2.0)
            else:
                view.mul_(3.0)
            return y
        return f

    def run(L, compiled):
        x = L.ones(1, 4, requires_grad=True)
        y = (fg.compile(f_of(L)) if compiled else f_of(L))(x)
        (y * 3).sum().backward()
        return y.tolist(), y._version, x.grad.tolist()
    assert run(fg, compiled) == run(torch, False)
