"""Calls missing required arguments, or passing keyword-only ones by position, raise
torch's TypeError texts; fg.compile passes Python floats on as they are."""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg

CALLS = [
    ("tensor()", 'tensor() missing 1 required positional arguments: "data"'),
    ("full((2,))", 'full() missing 1 required positional arguments: "fill_value"'),
    ("full()", 'full() missing 2 required positional argument: "size", "fill_value"'),
    ("full_like(L.ones(2))", 'full_like() missing 1 required positional arguments: "fill_value"'),
    ("full_like()", 'full_like() missing 2 required positional argument: "input", "fill_value"'),
    ("zeros_like()", 'zeros_like() missing 1 required positional arguments: "input"'),
    ("ones_like()", 'ones_like() missing 1 required positional arguments: "input"'),
    ("tensor([1.0, 2.0], L.float64)", "tensor() takes 1 positional argument but 2 were given"),
    ("full((2,), 1.0, L.float64)", "full() takes 2 positional arguments but 3 were given"),
    ("tensor([1.0], foo=1)", "tensor() got an unexpected keyword argument 'foo'"),
]


@pytest.mark.parametrize("call, text", CALLS)
def test_torchs_argument_texts(call, text):
    with pytest.raises(TypeError) as caught:
        eval("L." + call, {"L": fg})
    assert str(caught.value) == text


@pytest.mark.parametrize("call, text", CALLS)
def test_the_texts_are_torchs(call, text):
    torch = pytest.importorskip("torch", reason="torch is the oracle for its parser's texts")
    with pytest.raises(TypeError) as caught:
        eval("L." + call, {"L": torch})
    assert str(caught.value) == text


def test_a_type_error_inside_a_creation_call_is_kept():
    with pytest.raises(TypeError, match="^tensor\\(\\): argument 'dtype' must be torch.dtype, not str$"):
        fg.tensor([1.0], dtype="float32")


def test_compile_passes_python_floats_as_they_are():
    """A compiled function sees a Python float argument as a Python float, as eagerly and in
    torch.compile; it once saw a 0-d float32 tensor, which rounded 1e300 to inf and 0.1 to
    float32 in float64 arithmetic, and changed isinstance(s, float). NumPy arrays become
    tensors (API.md); fg.grad inside takes floats as leaves, as in JAX."""
    def scale(x, s):
        return x * s if isinstance(s, float) else x * 0
    for s in (1e300, 0.1, 1e-50):
        x64 = [1.0, 3.0]
        ours = fg.compile(scale)(fg.tensor(x64, dtype=fg.float64), s)
        assert ours.tolist() == (np.array(x64) * s).tolist()      # (eager torch's float64 products)
    assert fg.compile(lambda x, s: s)(fg.ones(1), 1.5) == 1.5
    with pytest.raises(AttributeError, match="'float' object has no attribute 'exp'"):
        fg.compile(lambda a: a.exp())(1.0)          # (as eagerly)
    out = fg.compile(lambda a, b: a * b)(3.0, np.float32(2.0) * np.ones(2, np.float32))
    assert isinstance(out, fg.Tensor) and out.tolist() == [6.0, 6.0]
    np.testing.assert_array_equal(fg.compile(lambda a, n: a * n)(fg.ones(2), 3).numpy(), [3.0, 3.0])
    g = fg.compile(fg.grad(lambda a: (a * a).sum()))(3.0)
    assert g.item() == 6.0


@pytest.mark.parametrize("call,text", [
    (lambda x: x.transpose(), 'transpose() missing 2 required positional argument: "dim0", "dim1"'),
    (lambda x: x.transpose(0), 'transpose() missing 1 required positional arguments: "dim1"'),
    (lambda x: x.unsqueeze(), 'unsqueeze() missing 1 required positional arguments: "dim"'),
])
def test_a_method_missing_arguments_raises_torchs_parser_text(call, text):
    """torch's parser words it so (its number agreement reversed); Python's binding said
    `missing 1 required positional argument: 'dim1'`."""
    with pytest.raises(TypeError) as raised:
        call(fg.ones(2, 3))
    assert str(raised.value) == text
