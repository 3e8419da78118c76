"""torch.gather, index_select and flip (ir/ops/gather.py, tracer/gathering.py): values, gradients (repeated indices
add), double backward, bad calls, and compiled calls against eager ones."""
import numpy as np
import pytest

import fusegrad as fg
from gradcheck import check_grads

torch = pytest.importorskip("torch")


def _outcome(lib, expr):
    try:
        r = eval(expr, {"L": lib})
    except Exception as exc:     # noqa: BLE001 (the exception is the outcome)
        return type(exc).__name__, str(exc).replace("torch.", "fg.")
    return tuple(r.shape), str(r.dtype).split(".")[-1], r.tolist(), r.grad_fn.name() if r.grad_fn else None


CALLS = [
    'L.gather(L.arange(6.).reshape(2,3), 1, L.tensor([[0, 2], [1, 1]]))',
    'L.arange(6.).reshape(2,3).gather(0, L.tensor([[1, 0, 1]]))',
    'L.arange(6.).reshape(2,3).gather(1, L.tensor([[5]]))',
    'L.arange(6.).reshape(2,3).gather(1, L.tensor([0]))',
    'L.arange(6.).reshape(2,3).gather(1, L.tensor([[0.5]]))',
    'L.arange(6.).reshape(2,3).gather(0, L.tensor([[0],[1],[0]]))',
    'L.arange(6.).reshape(2,3).gather(2, L.tensor([[0]]))',
    'L.arange(6.).reshape(2,3).gather(-1, L.tensor([[0, 2], [1, 1]]))',
    'L.tensor(5.).gather(0, L.tensor(0))',
    'L.tensor(5.).gather(0, L.tensor([0, 0]))',
    'L.arange(6.).reshape(2,3).gather(1, L.empty(0, 0, dtype=L.long))',
    'L.arange(6.).reshape(2,3).gather(1, L.tensor([[-1]]))',
    'L.arange(6.).reshape(2,3).gather(1, L.tensor([[0]]), sparse_grad=False)',
    'L.arange(6.).reshape(2,3).gather(1, [[0]])',
    'L.arange(6.).reshape(2,3).gather("a", L.tensor([[0]]))',
    'L.arange(6.).reshape(2,3).gather(1, L.tensor([[0, 0, 0, 0]]))',
    'L.arange(6.).reshape(2,3).gather(1, L.tensor([[True]]))',
    'L.arange(6.).reshape(2,3).gather(1, L.tensor([[0], [0], [0]]))',
    'L.arange(6).reshape(2,3).gather(1, L.tensor([[2]]))',
    'L.gather(L.arange(6.), 0)',
    'L.arange(6.).gather(0)',
    'L.gather(L.arange(6.), 0, L.tensor([1]), 1)',
    'L.arange(6.).reshape(2,3).gather(1, L.tensor([[[0]]]))',
    'L.arange(6.).reshape(2,3).gather(1, L.tensor(0))',
    'L.tensor(5.).gather(0, L.tensor([1]))',
]


@pytest.mark.parametrize("expr", CALLS)
def test_gather_as_torch(expr):
    assert _outcome(fg, expr) == _outcome(torch, expr)


@pytest.mark.parametrize("dim,index", [(0, [[1, 0, 1], [1, 1, 0]]), (1, [[0, 2, 2, 0], [1, 1, 1, 1]]),
                                       (-1, [[2], [0]]), (0, [[0]])])
def test_gradient_adds_at_repeated_indices_as_torch(dim, index):
    data = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    found = []
    for lib in (torch, fg):
        x = lib.tensor(data, requires_grad=True)
        y = x.gather(dim, lib.tensor(index))
        seed = lib.tensor(np.arange(1, y.numel() + 1, dtype=np.float32).reshape(tuple(y.shape)))
        (y * seed).sum().backward()
        found.append((y.tolist(), x.grad.tolist(), [type(n).__name__ for n, _ in y.grad_fn.next_functions]))
    assert found[0] == found[1]


def test_double_backward_and_finite_differences():
    index = fg.tensor([[0, 2, 2], [1, 0, 1]])
    check_grads(lambda x: fg.gather(x, 1, index) ** 2, np.random.default_rng(1).standard_normal((2, 3)), order=2)


def test_compiled_gather_matches_eager_and_checks_bounds():
    def f(x, i):
        return (x.gather(1, i) * x.gather(1, i)).sum() + x.gather(0, x.argmax(0, keepdim=True)).sum()

    rng = np.random.default_rng(2)
    x = fg.tensor(rng.standard_normal((3, 4)).astype(np.float32))
    i = fg.tensor([[0, 3], [2, 2], [1, 0]])
    compiled = fg.compile(fg.value_and_grad(f))
    for _ in range(2):
        value, grad = compiled(x, i)
        want_value, want_grad = fg.value_and_grad(f)(x, i)
        np.testing.assert_allclose(value.item(), want_value.item(), rtol=1e-5)
        np.testing.assert_allclose(grad.numpy(), want_grad.numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="^index 4 is out of bounds for dimension 1 with size 4$"):
        compiled(x, fg.tensor([[0, 4], [2, 2], [1, 0]]))
    with pytest.raises(RuntimeError, match="^index -1 is out of bounds for dimension 1 with size 4$"):
        fg.compile(lambda x, i: x.gather(1, i - 1))(x, i)


FLIP_AND_INDEX_SELECT_CALLS = [
    'L.arange(6.).reshape(2,3).flip(0)',
    'L.arange(6.).reshape(2,3).flip(0, 1)',
    'L.arange(6.).reshape(2,3).flip((0, 1))',
    'L.arange(6.).reshape(2,3).flip([1])',
    'L.flip(L.arange(6.).reshape(2,3), [0])',
    'L.flip(L.arange(6.).reshape(2,3), 0)',
    'L.arange(6.).reshape(2,3).flip(0, 0)',
    'L.arange(6.).reshape(2,3).flip(2)',
    'L.arange(6.).reshape(2,3).flip()',
    'L.tensor(1.).flip(0)',
    'L.tensor(1.).flip([])',
    'L.arange(6.).reshape(2,3).flip([])',
    'L.arange(6.).reshape(2,3).flip("a")',
    'L.flip(L.arange(6.).reshape(2,3))',
    'L.arange(6.).reshape(2,3).fliplr()',
    'L.arange(6.).reshape(2,3).flipud()',
    'L.arange(3.).fliplr()',
    'L.tensor(1.).flipud()',
    'L.arange(6.).reshape(2,3).fliplr(1)',
    'L.arange(6.).reshape(2,3).index_select(1, L.tensor([2, 0, 2]))',
    'L.arange(6.).reshape(2,3).index_select(1, L.tensor([3]))',
    'L.arange(6.).reshape(2,3).index_select(1, L.tensor([-1]))',
    'L.arange(6.).reshape(2,3).index_select(1, L.tensor([[0]]))',
    'L.arange(6.).reshape(2,3).index_select(1, L.tensor(1))',
    'L.arange(6.).reshape(2,3).index_select(1, L.tensor([0.]))',
    'L.arange(6.).reshape(2,3).index_select(2, L.tensor([0]))',
    'L.tensor(5.).index_select(0, L.tensor([0, 0]))',
    'L.tensor(5.).index_select(0, L.tensor([0]))',
    'L.arange(6.).reshape(2,3).index_select(1, [0])',
    'L.arange(6.).reshape(2,3).index_select(0, L.tensor([], dtype=L.int64))',
    'L.index_select(L.arange(6.).reshape(2,3), 0, L.tensor([1, 1, 0]))',
    'L.arange(24).reshape(2,3,4).index_select(-1, L.tensor([3, 0]))',
]


@pytest.mark.parametrize("expr", FLIP_AND_INDEX_SELECT_CALLS)
def test_flip_and_index_select_as_torch(expr):
    assert _outcome(fg, expr) == _outcome(torch, expr)


@pytest.mark.parametrize("case", ["x.flip(0, 1)", "x.fliplr()", "x.index_select(1, L.tensor([2, 0, 2]))",
                                  "x.index_select(0, L.tensor([1, 1]))"])
def test_flip_and_index_select_gradients_and_compiled(case):
    data = np.arange(12.0, dtype=np.float32).reshape(3, 4) / 7
    found = []
    for lib in (torch, fg):
        x = lib.tensor(data, requires_grad=True)
        y = eval(case, {"L": lib, "x": x})
        (y * y).sum().backward()
        found.append((y.tolist(), x.grad.tolist(), y.grad_fn.name(),
                      [type(n).__name__ for n, _ in y.grad_fn.next_functions]))
    assert found[0] == found[1]

    def f(x):
        return (eval(case, {"L": fg, "x": x}) ** 2).sum()
    x = fg.tensor(data)
    value, grad = fg.compile(fg.value_and_grad(f))(x)
    want_value, want_grad = fg.value_and_grad(f)(x)
    np.testing.assert_allclose(value.item(), want_value.item(), rtol=1e-5)
    np.testing.assert_allclose(grad.numpy(), want_grad.numpy(), rtol=1e-5)


@pytest.mark.parametrize("code", [
    "z = x * 1; y = L.gather(z, 1, L.tensor([[0, 2], [1, 1], [3, 0]])); z.mul_(2); (y * y).sum().backward(); r = x.grad",
    "z = x * 1; y = z.index_select(1, L.tensor([0, 2])); z.mul_(2); (y * y).sum().backward(); r = x.grad",
    "r = L.gather(x.detach().t(), 0, L.zeros(0, 4, dtype=L.int64))",
])
def test_gather_saves_its_input_index_select_does_not(code):
    """GatherBackward0 saves self (a later in-place change raises), IndexSelectBackward0 only
    its sizes; an empty index is checked for no size."""
    def outcome(lib):
        env = {"L": lib, "x": lib.arange(12.0).reshape(3, 4).requires_grad_()}
        try:
            exec(code, env)
        except RuntimeError as exc:
            return str(exc)
        return tuple(env["r"].shape), env["r"].tolist()
    assert outcome(fg) == outcome(torch)
