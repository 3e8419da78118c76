"""Memory formats (tracer/memory_format.py): `fg.contiguous_format` and `fg.preserve_format` in
clone, contiguous, to, cpu, is_contiguous and the `*_like` functions, against torch 2.13:
result strides, values, gradients and the errors for bad values, eagerly and compiled."""
import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle for strides and error texts")

CALLS = {
    "clone contiguous": lambda L, x: x.clone(memory_format=L.contiguous_format),
    "clone preserve": lambda L, x: x.clone(memory_format=L.preserve_format),
    "clone none": lambda L, x: x.clone(memory_format=None),
    "contiguous contiguous": lambda L, x: x.contiguous(memory_format=L.contiguous_format),
    "to dtype contiguous": lambda L, x: x.to(L.float64, memory_format=L.contiguous_format),
    "to dtype preserve": lambda L, x: x.to(L.float64, memory_format=L.preserve_format),
    "to copy contiguous": lambda L, x: x.to(copy=True, memory_format=L.contiguous_format),
    "to nothing contiguous": lambda L, x: x.to(memory_format=L.contiguous_format),
    "cpu": lambda L, x: x.cpu(memory_format=L.contiguous_format),
    "zeros_like contiguous": lambda L, x: L.zeros_like(x, memory_format=L.contiguous_format) + x,
    "zeros_like preserve": lambda L, x: L.zeros_like(x, memory_format=L.preserve_format) + x,
    "full_like contiguous": lambda L, x: L.full_like(x, 2.0, memory_format=L.contiguous_format) * x,
    "empty_like contiguous": lambda L, x: L.empty_like(x, memory_format=L.contiguous_format).fill_(1.0) * x,
}


def _leaf(L):
    base = L.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4) / 4)
    return base.t().detach().requires_grad_()        # a transposed leaf: strides (1, 4)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("name", list(CALLS))
def test_results_are_laid_out_as_torchs(name, compiled):
    outcomes = []
    for L in (torch, fg):
        x = _leaf(L)
        f = CALLS[name]
        if L is fg and compiled:
            f = fg.compile(f)
        y = f(L, x)
        (y.float() * 3).sum().backward()
        outcomes.append((y.stride(), y.detach().double().numpy().tolist(), x.grad.numpy().tolist()))
    assert outcomes[1] == outcomes[0]


@pytest.mark.parametrize("call", [
    "x.contiguous(memory_format=L.preserve_format)", "x.contiguous(memory_format=None)",
    "x.contiguous(memory_format='a')", "x.clone(memory_format='a')", "x.clone(L.contiguous_format)",
    "x.is_contiguous(memory_format=None)", "x.is_contiguous(L.contiguous_format)", "x.cpu(memory_format=1)",
    "x.to(memory_format=1)", "L.zeros_like(x, memory_format='a')", "L.randn_like(x, memory_format=3)",
    "L.full_like(x, 1.0, memory_format='a')",
])
def test_bad_memory_formats_raise_torchs_errors(call):
    outcomes = []
    for L in (torch, fg):
        x = L.ones(2, 3).t()
        with pytest.raises(Exception) as error:
            eval(call)      # noqa: S307 - test expressions
        outcomes.append((type(error.value).__name__, str(error.value).split("\n")[0]))
    assert outcomes[1] == outcomes[0]


def test_is_contiguous_takes_either_format():
    for L in (torch, fg):
        x = L.ones(2, 3)
        assert x.is_contiguous(memory_format=L.contiguous_format)
        assert not x.t().is_contiguous(memory_format=L.preserve_format)


def test_memory_formats_print_as_fusegrads():
    assert repr(fg.contiguous_format) == "fg.contiguous_format"
    assert str(fg.preserve_format) == "fg.preserve_format"
    assert isinstance(fg.contiguous_format, fg.memory_format)
