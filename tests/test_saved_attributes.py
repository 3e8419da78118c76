"""grad_fn's `_saved_*` attributes and `metadata`, against torch 2.13 (tracer/saved_attributes.py)."""
import numpy as np
import pytest

import fusegrad as fg
from fusegrad.tracer.saved_attributes import SAVED_ATTRIBUTES

FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after they "
         "have already been freed).")

# (x: a [2, 2] leaf that requires grad; c: a [2, 2] tensor that does not; L: the library)
EXPRESSIONS = [
    "x * 2", "x * 2.5", "x * c", "c * x", "x * x", "x / 2", "x / c", "2 / x", "x ** 2", "x ** 2.5", "x ** c",
    "2 ** x", "x.exp()", "x.relu()", "x.tanh()", "x.sigmoid()", "x.sqrt()", "x.log()", "x.abs()", "x.sin()",
    "x.cos()", "x.sum()", "x.sum(0)", "x.sum((0, 1), keepdim=True)", "x.mean()", "x.mean(1)",
    "L.where(x > 1, x, c)", "x.clamp(0, 1)", "x.clamp(min=0)", "x.clamp(max=1.5)", "x.softmax(0)",
    "x.log_softmax(1)", "x.norm()", "x.norm(dim=0)", "x.max()", "x.min()", "x.amax(0)", "x.max(0)[0]",
    "x.min(1)[0]", "x[0] @ x[1]", "x @ c", "c @ x", "x @ x", "L.maximum(x, c)", "L.minimum(x, x)",
    "x + c", "x - 2", "2 - x", "x.add(x, alpha=3)", "x.sub(c, alpha=2)", "(x * 1).add_(c, alpha=2.5)",
    "(x * 1).sub_(x, alpha=2)", "x.reshape(4)", "x.view(4)",
    "x.expand(3, 2, 2)", "x * float('inf')", "x ** float('inf')",
    "L.nn.functional.mse_loss(x, c)", "L.nn.functional.mse_loss(x, c, reduction='sum')",
    "L.nn.functional.cross_entropy(x, L.tensor([0, 1]))", "x.t()", "-x",
    "L.nn.functional.embedding(L.tensor([1, 0, 1]), x)",
    "L.nn.functional.embedding(L.tensor([[1], [1]]), x, padding_idx=-2, scale_grad_by_freq=True)",
]


def _described(value, lib, x, c, y, node):
    """A saved value as its relation to the call's tensors, plus its value."""
    if isinstance(value, lib.Tensor):
        for name, t in (("x", x), ("c", c), ("y", y)):
            if value is t:
                return name
        history = "own node" if value.grad_fn is node else value.grad_fn and value.grad_fn.name()
        dtype = str(value.dtype).split(".")[-1]
        return ("tensor", tuple(value.shape), dtype, value.requires_grad, history,
                np.round(value.detach().numpy().astype(np.float64), 5).tolist())
    return value


def _saved(lib, code):
    x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    c = lib.tensor([[3.0, 4.0], [1.0, 2.0]])
    y = eval(code, {"L": lib, "x": x, "c": c})
    node = y.grad_fn
    names = sorted(a for a in dir(node) if a.startswith("_saved_"))
    return type(node).__name__, {a: _described(getattr(node, a), lib, x, c, y, node) for a in names}


@pytest.mark.parametrize("code", EXPRESSIONS)
def test_saved_attributes_match_torch(code):
    """Every `_saved_*` attribute fusegrad offers is one torch's node has, with the same value:
    the very input tensor, a new tensor over the output with the node as its grad_fn, a Python
    scalar operand as a 0-d tensor, None where nothing was saved, shapes as tuples."""
    torch = pytest.importorskip("torch", reason="torch is the oracle of the saved attributes")
    torch_class, torch_saved = _saved(torch, code)
    fg_class, fg_saved = _saved(fg, code)
    assert fg_class == torch_class
    offered = {f"_saved_{name}" for name in SAVED_ATTRIBUTES.get(fg_class, {})}
    assert set(fg_saved) == offered
    assert offered <= set(torch_saved), f"{code}: torch's {fg_class} has no {offered - set(torch_saved)}"
    assert fg_saved == {a: torch_saved[a] for a in offered}


def test_a_saved_input_is_the_tensor_and_a_saved_result_shares_its_memory():
    """torch's documented example (autograd mechanics, saved tensors)."""
    x = fg.randn(5, requires_grad=True)
    y = x.pow(2)
    assert y.grad_fn._saved_self is x
    e = x.exp()
    saved = e.grad_fn._saved_result
    assert saved is not e and saved.equal(e) and saved.grad_fn is e.grad_fn
    e.detach().add_(1)          # shared memory, shared version counter
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0 instead"):
        e.grad_fn._saved_result


def test_saved_tensors_after_backward_raise_the_freed_graph_error():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.sum().backward()
    with pytest.raises(RuntimeError) as info:
        y.grad_fn._saved_result
    assert str(info.value).startswith(FREED)
    s = x.sum()
    s.backward()
    assert s.grad_fn._saved_self_sym_sizes == (2,)      # not a tensor: kept
    z = x * x
    z.sum().backward(retain_graph=True)
    assert z.grad_fn._saved_self is x


def test_a_saved_input_changed_in_place_raises_the_version_error():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1
    z = a * a
    a.add_(1)
    with pytest.raises(RuntimeError) as info:
        z.grad_fn._saved_self
    assert str(info.value).startswith(
        "one of the variables needed for gradient computation has been modified by an inplace operation: "
        "[torch.FloatTensor [2]], which is output 0 of Add, is at version 1; expected version 0 instead.")


def test_missing_attributes_and_metadata():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    node = (x + 1).grad_fn
    with pytest.raises(AttributeError, match="'AddBackward0' object has no attribute '_saved_self'"):
        node._saved_self
    with pytest.raises(AttributeError, match="'AddBackward0' object has no attribute 'nothing'"):
        node.nothing
    assert node.metadata == {}
    node.metadata["k"] = 1
    assert node.metadata == {"k": 1} and (x + 1).grad_fn.metadata == {}
    with pytest.raises(AttributeError):
        fg.compile(lambda t: t * 2)(x).grad_fn._saved_self      # a compiled call's node saves no such value


def test_a_saved_input_detached_in_place_can_still_be_read():
    """torch's attribute checks the version only; the detached-in-place error is a backward's."""
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1
    z = a * a
    a.detach_()
    assert z.grad_fn._saved_self is a
    with pytest.raises(RuntimeError, match="Trying to use a saved tensor that has been detached in-place"):
        z.sum().backward()
