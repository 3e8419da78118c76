"""Round 35 of torch parity (probes of nn/optim and of the autograd engine against torch 2.13).

SGD's first momentum step came out NaN for a momentum not finite in the parameter's dtype
(the fused update made the buffer as -0.0 * momentum + g); a parameter listed twice shared
one new momentum buffer where torch makes two; step()'s argument errors named
`Optimizer._step()`; movedim of a 0-d tensor raised an IndexError of its own; a
post-accumulate-grad hook returning a tensor was not refused; backward(inputs=dict)
iterated the dict's keys."""
import warnings

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")

from parity_support import outcome  # noqa: E402  (after the skip: it imports torch)


def _sgd_trajectory(L, momentum, dtype_name, fuse, steps=3, **kw):
    """The parameter after each of `steps` SGD steps with a fixed gradient."""
    if L is fg:
        fg.optim.Optimizer._fuse_updates = fuse
    try:
        dtype = getattr(L, dtype_name)
        p = L.nn.Parameter(L.tensor([1.0, 2.0, -3.0], dtype=dtype))
        opt = L.optim.SGD([p], lr=0.1, momentum=momentum, **kw)
        out = []
        for _ in range(steps):
            p.grad = L.tensor([0.5, 0.0, -1.0], dtype=dtype)
            opt.step()
            out.append(p.detach().numpy().copy())
        return np.array(out), opt.state[p]["momentum_buffer"].numpy().copy()
    finally:
        fg.optim.Optimizer._fuse_updates = True


@pytest.mark.parametrize("fuse", [True, False], ids=["fused", "per-op"])
@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
@pytest.mark.parametrize("momentum", [float("inf"), float("nan"), 1e300, 0.9],
                         ids=["inf", "nan", "1e300", "0.9"])
@pytest.mark.parametrize("kw", [{}, {"dampening": 0.5}, {"nesterov": False, "weight_decay": 0.1}],
                         ids=["plain", "dampening", "weight-decay"])
def test_sgd_first_momentum_step_is_the_gradient_whatever_the_momentum(momentum, dtype_name, fuse, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ours, our_buf = _sgd_trajectory(fg, momentum, dtype_name, fuse, **kw)
        theirs, their_buf = _sgd_trajectory(torch, momentum, dtype_name, None, **kw)
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(our_buf, their_buf)
    assert np.isfinite(ours[0]).all()       # (the first step is p - lr * g: finite)


def test_sgd_non_finite_momentum_in_a_compiled_step_matches_eager_torch():
    def run(L, compile_fn):
        torch.manual_seed(0)
        p = L.nn.Parameter(L.tensor([1.0, -2.0]))
        opt = L.optim.SGD([p], lr=0.1, momentum=float("inf"))

        def step(x):
            opt.zero_grad()
            loss = (p * x).sum()
            loss.backward()
            opt.step()
            return loss
        step = compile_fn(step)
        return [float(step(L.tensor([0.5, 0.0])).detach()) for _ in range(3)], p.detach().numpy().copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ours = run(fg, fg.compile)
        theirs = run(torch, lambda f: f)
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[1], theirs[1])


@pytest.mark.parametrize("fuse", [True, False], ids=["fused", "per-op"])
@pytest.mark.parametrize("kw", [{"momentum": 0.9}, {"momentum": 0.9, "nesterov": True},
                                {"momentum": 0.5, "dampening": 0.3, "weight_decay": 0.01}],
                         ids=["momentum", "nesterov", "dampening"])
def test_sgd_parameter_listed_twice_starts_two_buffers_as_torchs(fuse, kw):
    def run(L):
        if L is fg:
            fg.optim.Optimizer._fuse_updates = fuse
        try:
            p = L.nn.Parameter(L.tensor([1.0, 2.0], dtype=L.float64))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)        # (the duplicate-parameter warning)
                opt = L.optim.SGD([p, p], lr=0.1, **kw)
            out = []
            for _ in range(3):
                p.grad = L.tensor([0.5, -1.0], dtype=L.float64)
                opt.step()
                out.append(p.detach().numpy().copy())
            return np.array(out), opt.state[p]["momentum_buffer"].numpy().copy()
        finally:
            fg.optim.Optimizer._fuse_updates = True
    ours, theirs = run(fg), run(torch)
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[1], theirs[1])


STEP_CALLS = ["opt.step(foo=1)", "opt.step(None, 2)", "opt.step(None, closure=None)",
              "opt.step(None, 2, foo=1)", "opt.step(closure=None, foo=1)"]


@pytest.mark.parametrize("optimizer", ["SGD", "Adam", "AdamW", "RMSprop"])
@pytest.mark.parametrize("call", STEP_CALLS)
def test_step_argument_errors_name_torchs_step(optimizer, call):
    def call_step(L):
        p = L.nn.Parameter(L.ones(2))
        p.grad = L.ones(2)
        exec(call, {"opt": getattr(L.optim, optimizer)([p], lr=0.1)})
    ours, theirs = outcome(lambda: call_step(fg)), outcome(lambda: call_step(torch))
    assert ours == theirs and theirs[0] == "TypeError"


def test_step_argument_errors_with_step_hooks_and_in_a_subclass():
    class Mine(fg.optim.SGD):
        pass
    p = fg.nn.Parameter(fg.ones(2))
    p.grad = fg.ones(2)
    opt = Mine([p], lr=0.1)
    opt.register_step_pre_hook(lambda o, args, kwargs: None)
    with pytest.raises(TypeError, match=r"^SGD\.step\(\) got an unexpected keyword argument 'foo'$"):
        opt.step(foo=1)
    assert opt.step(lambda: 3.0) == 3.0         # (the closure is still passed on)
    np.testing.assert_array_equal(p.detach().numpy(), np.float32([0.9, 0.9]))  # (one step ran)


@pytest.mark.parametrize("args", [(0, -1), (0, 0), (-1, 0), ([0], [0]), ((), ()), ([-1], [0])])
def test_movedim_of_a_0d_tensor_is_its_alias(args):
    for name in ("movedim", "moveaxis"):
        x = fg.tensor(0.7, requires_grad=True)
        tx = torch.tensor(0.7, requires_grad=True)
        y, ty = getattr(x, name)(*args), getattr(tx, name)(*args)
        assert repr(y) == repr(ty)
        assert type(y.grad_fn).__name__ == type(ty.grad_fn).__name__ == "AliasBackward0"
        assert y._base is x
        (y * 3).backward()
        assert x.grad.item() == 3.0


@pytest.mark.parametrize("args", [(1, 0), (0, 1), ([0, 0], [0, 0]), ([0], [0, -1])])
def test_movedim_of_a_0d_tensor_bad_dims_raise_torchs_error(args):
    ours = outcome(lambda: fg.tensor(0.7).movedim(*args))
    theirs = outcome(lambda: torch.tensor(0.7).movedim(*args))
    assert ours == theirs and theirs[0] in ("IndexError", "RuntimeError")


def test_movedim_of_a_0d_tensor_compiled():
    f = fg.compile(lambda t: t.movedim(0, -1) * 2)
    x = fg.tensor(0.7, requires_grad=True)
    y = f(x)
    y.backward()
    assert y.item() == pytest.approx(1.4) and x.grad.item() == 2.0


@pytest.mark.parametrize("returns", ["p.grad", "p * 1", "1"])
def test_post_accumulate_grad_hook_returning_a_value_raises_as_torchs(returns):
    def outcome(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        x.register_post_accumulate_grad_hook(eval(f"lambda p: {returns}"))
        try:
            (x * 2).sum().backward()
        except (RuntimeError, TypeError) as e:
            return type(e).__name__, str(e), x.grad.tolist()
        return None
    assert outcome(fg) == outcome(torch) is not None


@pytest.mark.parametrize("backward", ["method", "function"])
def test_backward_inputs_dict_takes_its_values(backward):
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = L.tensor([3.0, 4.0], requires_grad=True)
        loss = (x * y).sum()
        inputs = {"a": x}
        if backward == "method":
            loss.backward(inputs=inputs)
        else:
            L.autograd.backward(loss, inputs=inputs)
        return x.grad.tolist(), y.grad
    assert run(fg) == run(torch) == ([3.0, 4.0], None)


def test_backward_inputs_dict_of_non_tensors_raises_torchs_error():
    def backward(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward(inputs={x: 1})
    assert outcome(lambda: backward(fg)) == outcome(lambda: backward(torch)) == \
        ("RuntimeError", "all inputs have to be Tensors or GradientEdges, but got int")


# (probe D: zero-size and integer corners) torch's TensorIterator checks an in-place result's
# shape and type before the kernel's dtype dispatch; index_select of a matrix along an empty dim.
CORNER_CASES = [
    "a = L.tensor([1, 2]); a &= 2.5",
    "a = L.tensor([1, 2]); a &= L.tensor(2.5)",
    "a = L.tensor([True]); a |= 2.5",
    "a = L.tensor([1, 2]); a <<= 2.5",
    "a = L.tensor([1, 2]); a >>= 2.5",
    "a = L.tensor([1, 2]); a ^= L.tensor([1.0, 2.0], dtype=L.float64)",
    "a = L.tensor([1, 2]); a.bitwise_and_(2.5)",
    "a = L.tensor([True]); a &= 3",
    "a = L.tensor(2.0); a &= L.tensor([1.0, 2.0])",
    "a = L.tensor(2); a &= L.tensor([1, 2])",
    "a = L.tensor([1.0, 2.0]); a &= 1",
    "a = L.tensor([1, 2]); a &= L.tensor([1, 2, 3])",
    "L.zeros(0, 3).index_select(0, L.tensor([0]))",
    "L.zeros(0, 3).index_select(0, L.tensor(0))",
    "L.zeros(3, 0).index_select(1, L.tensor([0]))",
    "L.zeros(2, 0, 3).index_select(1, L.tensor([7]))",
    "L.zeros(0).index_select(0, L.tensor([0]))",
]


@pytest.mark.parametrize("case", CORNER_CASES)
def test_corner_errors_raise_torchs_class_and_text(case):
    ours, theirs = outcome(lambda: exec(case, {"L": fg})), outcome(lambda: exec(case, {"L": torch}))
    assert ours == theirs is not None


def test_in_place_bitwise_checks_hold_in_a_compiled_function():
    f = fg.compile(lambda a: a.__iand__(2.5))
    with pytest.raises(RuntimeError, match="^result type Float can't be cast to the desired output type Long$"):
        f(fg.tensor([1, 2]))
    g = fg.compile(lambda a: a.__iand__(6))
    assert g(fg.tensor([3, 12])).tolist() == [2, 4]


@pytest.mark.parametrize("index", [[], [0, 2]])
def test_index_select_of_an_empty_matrix_along_a_full_dim(index):
    for L in (fg, torch):
        y = L.zeros(0, 3).index_select(1, L.tensor(index, dtype=L.long))
        assert tuple(y.shape) == (0, len(index))
