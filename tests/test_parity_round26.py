"""Round 26 of torch parity (probe B's findings): cross_entropy with label smoothing over zero
classes; the strides torch gives *_like of non-dense tensors, elementwise results over permuted
size-1 dims, advanced indexing of permuted tensors and batched products, each compared with
torch eagerly and inside fg.compile (a stride decides whether `.view(-1)` works)."""
import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch")
from parity_support import outcome  # noqa: E402  (after the skip)


def _both_modes(run):
    """run(L, wrap) for torch, fusegrad eager and fg.compile: all three must agree."""
    expected = run(torch, lambda fn: fn)
    assert run(fg, lambda fn: fn) == expected
    assert run(fg, fg.compile) == expected
    return expected


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("shape", [(3, 0), (0,), (0, 0)])
def test_cross_entropy_with_label_smoothing_over_no_classes(shape, reduction):
    """Probability targets, label_smoothing > 0 and zero classes: torch divides the smoothing by
    the number of classes in C++ (inf, which meets only empty tensors); Python's division raised
    ZeroDivisionError."""
    def run(L, wrap):
        F = L.nn.functional
        x = L.zeros(shape, requires_grad=True)
        dim = 0 if len(shape) == 1 else 1

        def call():
            loss = wrap(lambda x: F.cross_entropy(x, x.detach().softmax(dim), label_smoothing=0.1,
                                                  reduction=reduction))(x)
            loss.sum().backward()
            return [repr(v) for v in np.asarray(loss.tolist(), dtype=np.float64).ravel()], tuple(x.grad.shape)
        return outcome(call)
    _both_modes(run)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_cross_entropy_with_label_smoothing_and_class_targets_over_no_samples(reduction):
    def run(L, wrap):
        F = L.nn.functional
        x = L.zeros(0, 4, requires_grad=True)
        loss = wrap(lambda x: F.cross_entropy(x, L.zeros(0, dtype=L.int64), label_smoothing=0.2,
                                              reduction=reduction))(x)
        return outcome(lambda: [repr(v) for v in np.asarray(loss.tolist(), dtype=np.float64).ravel()])
    _both_modes(run)


NON_DENSE_SOURCES = [     # (the tensor, the view of it that the *_like copies)
    ("L.arange(60.0).reshape(4, 5, 3)", "x.permute(1, 2, 0)[:, ::2]"),
    ("L.arange(60.0).reshape(4, 5, 3)", "x.permute(2, 0, 1)[..., ::2]"),
    ("L.arange(60.0).reshape(4, 5, 3)", "x[:, ::2]"),
    ("L.arange(12.0).reshape(3, 4)", "x.t()[::2]"),
    ("L.arange(24.0).reshape(2, 3, 4)", "x.transpose(0, 2)[::3]"),
    ("L.arange(3.0).reshape(3, 1)", "x.expand(3, 4)"),
]
LIKES = ["L.zeros_like(w)", "L.ones_like(w, dtype=L.float64)", "L.empty_like(w)", "L.full_like(w, 2.0)",
         "L.rand_like(w)", "L.randn_like(w)", "L.zeros_like(w * 2)"]


@pytest.mark.parametrize("like", LIKES)
@pytest.mark.parametrize("source", NON_DENSE_SOURCES)
def test_like_functions_keep_the_stride_order_of_a_non_dense_tensor(source, like):
    """torch's preserve_format lays a *_like of a tensor that does not fill its memory densely
    out densely in the order of its strides (infer_dense_strides): so `.view(-1)` of
    zeros_like(w.permute(1, 2, 0)[:, ::2]) raises there, as it now does here. The view is
    made inside the function (traced in fg.compile) and outside it (an argument)."""
    tensor, view = source

    def run(L, wrap, inside):
        def f(x):
            return eval(like, {"L": L, "w": eval(view, {"x": x}) if inside else x})
        x = eval(tensor, {"L": L})
        out = wrap(f)(x if inside else eval(view, {"x": x}))
        return out.stride(), outcome(lambda: tuple(out.view(-1).shape))
    for inside in (True, False):
        _both_modes(lambda L, wrap: run(L, wrap, inside))


def test_rand_like_of_a_non_dense_tensor_draws_torchs_stream_in_its_memory_order():
    def draw(L):
        L.manual_seed(3)
        w = L.arange(60.0).reshape(4, 5, 3).permute(1, 2, 0)[:, ::2]
        return [np.round(np.asarray(L.rand_like(w).tolist()), 6).tolist(),
                np.round(np.asarray(L.randn_like(w).tolist()), 5).tolist()]
    assert draw(fg) == draw(torch)


@pytest.mark.parametrize("expression", ["c + L.ones(2, 4)", "c * L.ones(2, 1, 4)", "L.ones(3, 2, 4) - c",
                                        "L.where(L.ones(2, 4) > 0, c, 0.0)"])
def test_a_broadcast_size_one_dim_of_a_permute_orders_the_result_as_torch(expression):
    """`c` is a permute of a (4, 1, 1) tensor: its size-1 dims have stride 1, which NumPy's
    c_contiguous flag ignores and torch's TensorIterator reads where the dim is broadcast (the
    broadcast dim goes innermost, and `.view(-1)` of the result raises)."""
    def run(L, wrap):
        def f(c):
            return eval(expression, {"L": L, "c": c})
        out = wrap(f)(L.arange(4.0).reshape(4, 1, 1).permute(1, 2, 0))
        return [n == 1 or s for n, s in zip(out.shape, out.stride())], outcome(lambda: tuple(out.view(-1).shape)), \
            out.tolist()
    _both_modes(run)


INDEXING = ["a[i]", "a[:, i]", "a[..., L.tensor([1, 0])]", "a[j]", "a[i, :, L.tensor([1, 0])]", "b[i]",
            "b[:, L.tensor([1, 0])]", "b[j]", "a[L.tensor([True, False, True])]", "a[i, i]", "b[i][:, 1:]", "a[k]",
            "a[i] * 2", "c[k]"]


@pytest.mark.parametrize("expression", INDEXING)
def test_advanced_indexing_lays_its_result_out_as_torch(expression):
    """torch's index kernel iterates the source restrided to the result (stride 0 along the
    indexed dims) and the index tensors restrided likewise, so the result follows the source's
    order of the other dims, and a transposed index's order along the indexed ones; fusegrad's
    was row-major (so `.view(-1)` of a[i] worked where torch raises). Values and gradients too."""
    def run(L, wrap):
        def f(x):
            a = x.reshape(3, 2, 3).permute(0, 2, 1)
            b = x.reshape(3, 2, 3).permute(2, 1, 0)
            c = x.reshape(6, 3)
            i, j = L.tensor([2, 0]), L.tensor([[2, 0], [1, 1]])
            k = L.tensor([[0, 1], [2, 1]]).t()
            return eval(expression)
        x = L.arange(18.0, requires_grad=True)
        out = wrap(f)(x)
        (out * L.arange(float(out.numel())).reshape(out.shape)).sum().backward()
        return out.stride(), outcome(lambda: tuple(out.view(-1).shape)), out.tolist(), x.grad.tolist()
    _both_modes(run)


@pytest.mark.parametrize("expression", ["(v[0] @ v.transpose(-1, -2)).detach()", "(v[0] @ v.transpose(-1, -2)).data",
                                        "v.transpose(-1, -2).contiguous().detach()",
                                        "(v.transpose(-1, -2) * 2).contiguous().detach()"])
def test_a_detach_of_a_row_major_result_over_a_transposed_value_is_row_major(expression):
    """matmul folds `m @ batch.mT` into a product of transposes and copies it row-major
    (contiguous); the detach of that result, once the result itself was gone, took the
    transposed value's layout in a compiled call."""
    def run(L, wrap):
        def f(b, c):
            v = L.sub(b.clamp(-0.5, None), c, alpha=2)
            return eval(expression)
        b = L.arange(12.0).reshape(2, 2, 3).requires_grad_().permute(2, 0, 1)
        c = (L.arange(12.0).reshape(2, 2, 3) / 7).requires_grad_().permute(2, 1, 0)
        out = wrap(f)(b, c)
        return out.stride(), outcome(lambda: tuple(out.view(-1).shape)), out.tolist()
    _both_modes(run)


def test_an_in_place_add_through_an_unsqueezed_transpose_of_one_element_compiles():
    """Permute sinking met a one-element operand broadcast from more dims of size 1 than the
    value has (the write through `v12.T[None]`) and built an invalid expand: the call raised
    torch's expand error instead of running."""
    def run(L, wrap):
        def f(a):
            v6 = a.mean(0)[None, None]
            v8 = v6 @ v6.transpose(-1, -2)
            v12 = (v8 * 1).double()
            v12.T[None].add_(v8)
            return v12
        a = L.tensor([0.3, 0.6], requires_grad=True)
        out = wrap(f)(a)
        out.sum().backward()
        return np.round(out.tolist(), 6).tolist(), np.round(a.grad.tolist(), 6).tolist()
    _both_modes(run)


@pytest.mark.parametrize("body", [
    "w = v.expand(-1, 3)[..., :1]; w.fill_(0.5); u = (w + 1) * 2; v.t().zero_(); out = u * u",
    "w = v.expand(-1, 3)[..., :1]; w.fill_(t); out = v * L.tensor([[1.0], [2.0], [3.0]])",
    "v.expand(-1, 3)[1:, 1].fill_(t); v.t().zero_(); out = v * t",
    "v.expand(-1, 3)[:, 1].fill_(0.25); w = v * 3; out = w * v",
])
def test_a_fill_through_an_expand_saves_nothing_of_the_filled_view(body):
    """A fill through a view of an expand took its one value as the amax of the filled view,
    whose backward saved that view: a later write to the base made the compiled backward raise
    the version-counter error although torch's saves nothing there (probe R1). A tensor's fill
    still sends the region's whole gradient to it."""
    def run(L, wrap):
        def f(a, t):
            env = {"v": a * 1, "t": t, "L": L}
            exec(body, env)
            return env["out"]
        a = L.tensor([[1.0], [2.0], [3.0]], requires_grad=True)
        t = L.tensor(0.5, requires_grad=True)

        def call():
            out = wrap(f)(a, t)
            out.sum().backward()
            return out.tolist(), a.grad.tolist(), None if t.grad is None else t.grad.item()
        return outcome(call)
    _both_modes(run)


WHOLE_VIEW_WRITES = ["v.t().zero_()", "v.permute(0, 1).fill_(2.0)", "v.view(4).zero_()", "v.expand(2, 2).zero_()",
                     "v.unsqueeze(0).zero_()", "v.t().mul_(2)", "v.reshape(4).fill_(1.5)", "v[:].zero_()", "v.zero_()"]


@pytest.mark.parametrize("write", WHOLE_VIEW_WRITES)
def test_a_write_through_a_view_of_the_whole_base_keeps_the_gradient_path(write):
    """A fill through a view covering the whole base (`v.t().zero_()`) made the base's new value
    the fill alone: x's first-order gradient was a zero tensor without history, and a second
    derivative raised, where torch's CopySlices keeps the edge to v's node (zeros of
    MulBackward0; probe R5). A fill of v itself has no such edge in torch either."""
    def run(L):
        x = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        v = 3 * x
        exec(write, {"v": v})

        def grads():
            (g,) = L.autograd.grad((v ** 2).sum(), [x], create_graph=True)
            second = outcome(lambda: L.autograd.grad(g.sum(), [x])[0].tolist())
            return g.tolist(), g.requires_grad, type(g.grad_fn).__name__, second
        return outcome(grads)
    assert run(fg) == run(torch)


@pytest.mark.parametrize("write", WHOLE_VIEW_WRITES)
def test_a_compiled_write_through_a_view_of_the_whole_base(write):
    def run(L, wrap):
        def f(x):
            v = 3 * x
            exec(write, {"v": v})
            return (v ** 2 + x).sum()
        x = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        out = wrap(f)(x)
        out.backward()
        return out.item(), x.grad.tolist()
    _both_modes(run)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("expression", ["(x / x.amax(-1, keepdim=True)).floor()",
                                        "(x / x.max(-1, keepdim=True)[0] == 1).sum(-1)",
                                        "(x / x.amax(-1, keepdim=True)).long()",
                                        "x / x.amax(-1, keepdim=True)"])
def test_a_compiled_division_by_a_rows_value_is_exact(expression, dtype):
    """A division by a row's value runs as a multiplication by its reciprocal; uncorrected,
    the row maximum over itself was 0.99999994, so floor() gave 0 and `== 1` was False."""
    def run(L, wrap):
        x = L.tensor(np.random.default_rng(5).uniform(0.1, 200.0, (64, 37)), dtype=getattr(L, dtype))
        return wrap(lambda x: eval(expression, {"x": x}))(x).tolist()
    _both_modes(run)


@pytest.mark.parametrize("write", [True, False])
@pytest.mark.parametrize("no_grad", [True, False])
def test_retain_grad_in_a_compiled_call_survives_a_write_under_no_grad(write, no_grad):
    """retain_grad() on the caller's view inside the call, then a write to it, all under
    no_grad: the view's history regenerated without a node dropped the request, and its .grad
    stayed None after a backward (probe D N2)."""
    def run(L, wrap):
        lc = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        c = lc.t()

        def f(c):
            c.retain_grad()
            if write:
                with L.no_grad():
                    c[1:, ::2] = 0.5
            return c * 1 if not no_grad else c

        def call():
            if no_grad:
                with L.no_grad():
                    out = wrap(f)(c)
            else:
                out = wrap(f)(c)
            (out * 2).sum().backward()
            return None if c.grad is None else c.grad.tolist(), lc.grad.tolist(), c.tolist()
        return outcome(call)
    _both_modes(run)


@pytest.mark.parametrize("body", [
    "v = a.transpose(-1, -1)\nwith L.no_grad():\n    a[::2].sub_(L.tensor([0.5, 0.25, 0.0]))\nout = v",
    "v = a[0]\nwith L.no_grad():\n    a[1].mul_(2)\nout = v",
    "v = a.t()\nwith L.no_grad():\n    a[::2].sub_(L.tensor([0.5, 0.25, 0.0]))\nout = v * 1",
])
@pytest.mark.parametrize("grad_mode", [False, True])
def test_a_view_of_a_leaf_over_a_base_without_grad(body, grad_mode):
    """`a` is a leaf over memory that needs no grad (`t.t().requires_grad_()`); a view of it
    made under no_grad requires no grad, also after a write of a's memory in the call (the
    compiled call gave it a history: probe D N3). Made with grad on, the view keeps requiring
    grad after the write, as torch's regenerated AsStridedBackward0."""
    def run(L, wrap):
        a = L.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]).t().requires_grad_()

        def f(a):
            env = {"a": a, "L": L}
            exec(body, env)
            return env["out"]

        def call():
            if grad_mode:
                out = wrap(f)(a)
            else:
                with L.no_grad():
                    out = wrap(f)(a)
            return out.requires_grad, out.tolist(), a.tolist()
        return outcome(call)
    _both_modes(run)


@pytest.mark.parametrize("strides", [(4, 1, 4), (1, 1, 4), (12, 1, 4), (6, 1, 2), (1, 4, 1)])
@pytest.mark.parametrize("expression", ["z[:, i]", "z[:, :, j]", "z[k]", "z[:, i[:, None]]"])
def test_advanced_indexing_of_a_tensor_with_a_size_one_dim_orders_as_torch(strides, expression):
    """torch reshapes each index to the result's rank with size-1 dims, whose strides take part
    in the order where the result's dim has size 1 too: `z[:, i]` of a (1, 2, 3) view with
    strides (1, 1, 4) is row-major (probe D N5). Strides of size-1 dims are not compared."""
    def run(L, wrap):
        def f(base):
            z = base.as_strided((1, 2, 3), strides) if L is torch else base
            return eval(expression, {"z": z, "i": L.tensor([1, 0]), "j": L.tensor([2, 0]), "k": L.tensor([0, 0])})
        # (fusegrad has no as_strided: the same view made by NumPy, shared by from_numpy)
        base = L.arange(100.0) if L is torch else fg.from_numpy(
            np.lib.stride_tricks.as_strided(np.arange(100.0), (1, 2, 3), tuple(8 * s for s in strides)))
        out = wrap(f)(base)
        return [s for n, s in zip(out.shape, out.stride()) if n != 1], out.tolist()
    expected = run(torch, lambda fn: fn)
    assert run(fg, lambda fn: fn) == expected
    assert run(fg, fg.compile) == expected
