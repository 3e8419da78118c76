"""Calls missing required arguments, or passing keyword-only ones by position, raise
torch's TypeError texts; fg.compile takes Python floats as it takes NumPy arrays."""
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


def test_compile_takes_python_floats_as_tensors():
    """API.md: Python floats are accepted wherever a tensor is; a compiled function sees a
    0-d float32 tensor (jax.jit's arrays), ints stay Python ints."""
    assert repr(fg.compile(lambda a: a.exp())(1.0)) == "tensor(2.7183)"
    out = fg.compile(lambda a, b: a * b)(3.0, np.float32(2.0) * np.ones(2, np.float32))
    assert isinstance(out, fg.Tensor) and out.tolist() == [6.0, 6.0]
    np.testing.assert_array_equal(fg.compile(lambda a, n: a * n)(fg.ones(2), 3).numpy(), [3.0, 3.0])
    g = fg.compile(fg.grad(lambda a: (a * a).sum()))(3.0)
    assert g.item() == 6.0
