"""Round 18 of torch parity: what this session's probes found (each test names the behaviour
and checks it against torch 2.13)."""
import warnings

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch")


def _edges(t):
    return [(type(n).__name__ if n is not None else None, i) for n, i in t.grad_fn.next_functions]


@pytest.mark.parametrize("method", ["add_", "sub_"])
@pytest.mark.parametrize("other", ["leaf", "detached", "int tensor", "number"])
def test_in_place_add_and_sub_with_alpha_show_torchs_edges(method, other):
    """torch scales inside AddBackward0 / SubBackward0: next_functions holds self's and
    other's edges, not the MulBackward0 of alpha * other."""
    found = []
    for lib in (torch, fg):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        operand = {"leaf": x, "detached": x.detach(), "int tensor": lib.tensor([1, 2, 3]), "number": 2.0}[other]
        y = x * 1
        getattr(y, method)(operand, alpha=2)
        y.sum().backward()
        found.append((y.grad_fn.name(), _edges(y), x.grad.tolist(), y.tolist()))
    assert found[0] == found[1]


@pytest.mark.parametrize("call", [lambda lib, x: x.clamp_min(1), lambda lib, x: lib.clamp_max(x, 2),
                                  lambda lib, x: x.clamp_min(lib.tensor(1.0)), lambda lib, x: x.clamp(min=1)])
def test_one_bound_clamps_show_torchs_edges(call):
    found = []
    for lib in (torch, fg):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = call(lib, x)
        found.append((y.grad_fn.name(), _edges(y)))
    assert found[0] == found[1]


@pytest.mark.parametrize("dtype,becomes", [(np.int32, "int64"), (np.int16, "int64"), (np.int8, "int64"),
                                           (np.uint8, "int64"), (np.uint16, "int64"), (np.uint32, "int64"),
                                           (np.float16, "float32")])
def test_from_numpy_of_a_dtype_fusegrad_lacks_warns_that_it_copies(dtype, becomes):
    """torch shares these arrays' memory; fusegrad has no such dtype, so its copy says so."""
    a = np.zeros(3, dtype=dtype)
    with pytest.warns(UserWarning, match=f"fusegrad has no {np.dtype(dtype).name} dtype: from_numpy made a "
                                         f"{becomes} copy of the array, which does not share its memory"):
        t = fg.from_numpy(a)
    assert t.dtype.name == becomes
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # where a tensor is merely taken (an operand, a compiled function's argument), no warning
        assert fg.exp(a).tolist() == [1.0, 1.0, 1.0]
        assert fg.compile(lambda x: x + 1)(a).tolist() == [1, 1, 1]
        fg.from_numpy(np.zeros(2, np.float32))


@pytest.mark.parametrize("dtype", [np.uint64, np.complex64, np.complex128])
def test_from_numpy_of_a_dtype_torch_has_but_fusegrad_lacks_says_so(dtype):
    with pytest.raises(TypeError, match=f"can't convert np.ndarray of type numpy.{np.dtype(dtype).type.__name__}: "
                                        f"fusegrad has no {np.dtype(dtype).name} dtype"):
        fg.from_numpy(np.zeros(2, dtype))


def test_from_numpy_of_a_dtype_torch_lacks_raises_torchs_text():
    a = np.array(["a"])
    with pytest.raises(TypeError) as theirs:
        torch.from_numpy(a)
    with pytest.raises(TypeError) as ours:
        fg.from_numpy(a)
    assert str(ours.value) == str(theirs.value)
