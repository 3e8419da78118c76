"""Round 37 of torch parity (findings of a tensor-API probe against torch 2.13): keyword
forms of Tensor.flip / repeat / tile; a bool is no first element of a list of dims; norm's
dim texts; Tensor.new_zeros / new_ones / new_empty under their own names (and `size=`);
a p-norm over the last dim is a fresh row-major tensor, and a size-1 dim of a reduction's
result has torch's stride, not NumPy's 0."""
import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch")


def _outcome(L, text: str):
    """What `text` gives with library L as `M` and a = arange(6.).reshape(2, 3): its values
    and dtype name, or the exception's class and first line."""
    a = L.arange(6.).reshape(2, 3)
    try:
        r = eval(text, {"M": L, "a": a})
    except Exception as exc:
        return type(exc).__name__, str(exc).split("\n")[0]
    if isinstance(r, (L.Tensor,)):
        return r.tolist(), str(r.dtype).split(".")[-1], tuple(r.shape)
    return r


KEYWORD_FORMS = [       # keyword forms of flip, repeat and tile
    "a.flip(dims=(0,))", "a.flip(dims=[0, 1])", "a.flip(dims=0)", "a.flip(0, dims=(0,))",
    "a.flip(dim=(0,))", "a.flip(0, dim=1)",
    "a.repeat(repeats=(1, 2))", "a.repeat(repeats=[2, 1, 1])", "a.repeat(repeats=2)",
    "a.repeat(1, repeats=2)", "a.repeat(sizes=(1, 2))",
    "a.tile(dims=(1, 2))", "a.tile(dims=[2])", "a.tile(dims=2)", "a.tile(dims=(2,), x=1)",
]
BOOL_DIMS = [           # a bool is no first dim (after the first it is an int)
    "a.sum((True,))", "a.sum([True])", "a.sum(dim=(True,))", "M.sum(a, (True,))",
    "a.mean((False, True))", "a.mean(dim=(False,))", "a.var((True,))", "a.std(dim=(True,))",
    "a.amax((True,))", "a.amin(dim=(True,))", "a.logsumexp((True,))", "M.logsumexp(a, (True,))",
    "a.squeeze((True,))",
    "a.sum(dim=(0, True))", "a.amax((1, False))", "a.var(True)",
    "a.norm(dim=(True,))", "M.norm(a, 2, (True,))", "a.norm(dim=(1.5,))", "a.norm(2, (1.5,))",
    "a.norm(dim=('x',))", "a.norm(dim='x')", "a.norm(dim=(0, 1.5))", "a.norm(dim=[0, True])",
]
NEW_FACTORIES = [       # Tensor.new_zeros / new_ones / new_empty speak under their own names
    "a.new_zeros(-1)", "a.new_ones(2, -1)", "a.new_empty(-1)", "a.new_zeros('x')",
    "a.new_ones((2, 'a'))", "a.new_zeros(size=(2,))", "a.new_zeros(size=2)", "a.new_zeros(2, size=(2,))",
    "a.new_zeros()", "a.new_ones(2, requires_grad=1)", "M.zeros(-1)", "M.ones(-1)",
]


@pytest.mark.parametrize("text", KEYWORD_FORMS + BOOL_DIMS + NEW_FACTORIES)
def test_calls_give_torchs_values_and_errors(text):
    assert _outcome(fg, text) == _outcome(torch, text)


@pytest.mark.parametrize("shape, dim", [((2, 2), 1), ((2, 3, 4), (0, 2)), ((3, 4), 0), ((2, 3, 4), (1, 2)),
                                        ((5,), 0), ((1, 5), 1), ((5, 1), 0), ((2, 1, 3), (0, 2))])
@pytest.mark.parametrize("p", [1, 3, 1.5, 2, float("inf")])
@pytest.mark.parametrize("keepdim", [False, True])
def test_norm_results_have_torch_strides(shape, dim, p, keepdim):
    n = int(np.prod(shape))
    got = fg.arange(float(n)).reshape(*shape).norm(p=p, dim=dim, keepdim=keepdim)
    want = torch.arange(float(n)).reshape(*shape).norm(p=p, dim=dim, keepdim=keepdim)
    assert (got.stride(), got.is_contiguous()) == (want.stride(), want.is_contiguous())
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    assert got.view(-1).shape[0] == want.numel()       # (a view of it works, as of torch's)


@pytest.mark.parametrize("fn", ["sum", "mean", "amax", "amin"])
@pytest.mark.parametrize("compiled", [False, True])
def test_a_reduction_to_one_element_has_torch_strides(fn, compiled):
    # (a short row's sum came back as a 0-d value indexed [None]: stride 0)
    def f(x):
        return getattr(x, fn)(1)
    got = (fg.compile(f) if compiled else f)(fg.arange(5.).reshape(1, 5))
    want = f(torch.arange(5.).reshape(1, 5))
    assert got.stride() == want.stride() == (1,)


def _batched_grad_outcomes(L):
    """fg.autograd.grad(..., is_grads_batched=True) calls: values (detached) or errors."""
    out = []
    x = L.tensor([0.5, 1.5, 2.5], requires_grad=True)
    w = L.ones(3, requires_grad=True)

    def attempt(f):
        try:
            r = f()
            out.append([None if g is None else g.detach().numpy().tolist() for g in r])
        except Exception as exc:
            out.append((type(exc).__name__, str(exc).replace("torch.Size", "fg.Size")))
    attempt(lambda: L.autograd.grad(x * x, x, grad_outputs=L.eye(3), is_grads_batched=True))
    attempt(lambda: L.autograd.grad(x * x, x, grad_outputs=L.ones(3), is_grads_batched=True))
    attempt(lambda: L.autograd.grad((x * x).sum(), x, is_grads_batched=True))
    attempt(lambda: L.autograd.grad(x * x, x, is_grads_batched=True))
    attempt(lambda: L.autograd.grad(x * x, [x, w], grad_outputs=L.eye(3)[:2], is_grads_batched=True,
                                    allow_unused=True))
    attempt(lambda: L.autograd.grad([x * x, (x * 3).sum()], x, grad_outputs=[L.eye(3), L.ones(3)],
                                    is_grads_batched=True))
    attempt(lambda: L.autograd.grad([x * x, (x * 3).sum()], x, grad_outputs=[L.eye(3), L.ones(2)],
                                    is_grads_batched=True))
    # create_graph: the batched gradient is differentiable
    g = L.autograd.grad(x ** 3, x, grad_outputs=L.eye(3), is_grads_batched=True, create_graph=True)[0]
    attempt(lambda: (g,) + L.autograd.grad(g.sum(), x))
    # the graph is kept between the batch's vectors and freed after the last one
    y = x * 2
    attempt(lambda: L.autograd.grad(y, x, grad_outputs=L.eye(3), is_grads_batched=True))
    attempt(lambda: L.autograd.grad(y, x, grad_outputs=L.eye(3), is_grads_batched=True))
    z = x * 2
    attempt(lambda: L.autograd.grad(z, x, grad_outputs=L.eye(3), is_grads_batched=True, retain_graph=True))
    attempt(lambda: L.autograd.grad(z, x, grad_outputs=L.eye(3)[:1], is_grads_batched=True))
    return out


def test_grads_batched_as_torch():
    for got, want in zip(_batched_grad_outcomes(fg), _batched_grad_outcomes(torch)):
        assert got == want


_TABLE = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)


@pytest.mark.parametrize("padding_idx", [None, 2, 0])
@pytest.mark.parametrize("compiled", [False, True])
def test_embedding_scale_grad_by_freq(padding_idx, compiled):
    # each gathered row's gradient divided by its index's count among the indices
    def grad(L, run):
        w = L.tensor(_TABLE.copy(), requires_grad=True)

        def f(w, i):
            return (L.nn.functional.embedding(i, w, padding_idx, scale_grad_by_freq=True) ** 2).sum()
        run(f)(w, L.tensor([[0, 2, 2], [5, 2, 0]])).backward()
        return w.grad.numpy()
    got = grad(fg, fg.compile if compiled else (lambda f: f))
    np.testing.assert_allclose(got, grad(torch, lambda f: f), rtol=1e-6)


def test_embedding_from_pretrained():
    def made(L, **kw):
        table = L.tensor(_TABLE.copy())
        e = L.nn.Embedding.from_pretrained(table, **kw)
        return repr(e), e.weight.requires_grad, e.weight.detach().numpy().tolist(), \
            np.shares_memory(e.weight.detach().numpy(), table.numpy())
    for kw in ({}, {"freeze": False, "padding_idx": 2}, {"max_norm": 1.0, "scale_grad_by_freq": True}):
        assert made(fg, **kw) == made(torch, **kw)
    for L in (fg, torch):
        with pytest.raises(AssertionError, match="^Embeddings parameter is expected to be 2-dimensional$"):
            L.nn.Embedding.from_pretrained(L.ones(3))


@pytest.mark.parametrize("value", [5, 2.5, None, [1, 2], "x", np.float32(2)])
def test_load_state_dict_refuses_what_is_no_tensor(value):
    def error(L):
        model = L.nn.Linear(3, 4)
        state = model.state_dict()
        state["weight"] = value
        with pytest.raises(RuntimeError) as info:
            model.load_state_dict(state)
        return str(info.value)
    assert error(fg) == error(torch)


@pytest.mark.parametrize("saves", ["output", "input"])
def test_custom_function_version_error_names_the_history_at_save_time(saves):
    def error(L):
        class MyExp(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                ctx.save_for_backward(y if saves == "output" else x)
                return y

            @staticmethod
            def backward(ctx, g):
                (s,) = ctx.saved_tensors
                return g * s
        x = L.tensor([1., 2.], requires_grad=True) * 2
        y = MyExp.apply(x)
        (y if saves == "output" else x).add_(1)      # now an AddBackward0's output
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
        return str(info.value)
    text = error(fg)
    assert text == error(torch)
    # (a saved output is named by the function's node; a saved input by its history now)
    assert (", which is output 0 of MyExp," if saves == "output" else ", which is output 0 of Add,") in text


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("data, dim", [([[3.0, float("nan")], [1.0, 2.0]], None),
                                       ([[[1.0, 1.0], [1.0, 2.0]], [[float("nan"), 0.0], [0.0, 1.0]]], (1, 2))])
def test_nuclear_norm_of_a_nan_matrix_raises_torch_linalg_error(data, dim, compiled):
    def f(t):
        return t.norm(p="nuc", dim=dim) if dim else t.norm(p="nuc")
    with pytest.raises(torch.linalg.LinAlgError) as want:
        f(torch.tensor(data))
    with pytest.raises(RuntimeError) as got:
        (fg.compile(f) if compiled else f)(fg.tensor(data))
    assert (type(got.value).__name__, str(got.value)) == (type(want.value).__name__, str(want.value))
    # an infinite element gives NaN, not an error, in both
    assert np.isnan(fg.tensor([[3.0, float("inf")], [1.0, 2.0]]).norm(p="nuc").item())
