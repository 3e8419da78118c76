"""Shared helpers of the torch-parity tests: run one call on torch and fusegrad and compare.

Import after `pytest.importorskip("torch")` (the caller skips when torch is missing)."""
import re

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch")


def _np(t):
    return np.asarray(t.detach().tolist() if t.dim() else t.detach().item())


def assert_same(ours, theirs, rtol=1e-5, atol=1e-6):
    """Same shape, dtype name and values (NaN equal); None only where torch has None."""
    if theirs is None:
        assert ours is None
        return
    assert ours is not None
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(_np(ours), _np(theirs), rtol=rtol, atol=atol, equal_nan=True)


def value_and_grad_of(lib, f, argnums=0):
    """fg.value_and_grad(f, argnums), or torch's counterpart: torch.func.grad_and_value with
    its result in fusegrad's order, (value, grads)."""
    if lib is fg:
        return fg.value_and_grad(f, argnums=argnums)

    def run(*args):
        grads, value = torch.func.grad_and_value(f, argnums)(*args)
        return value, grads
    return run


def both(fn):
    """fn(lib) run on torch and fusegrad: (torch result, our result)."""
    return fn(torch), fn(fg)


def same_error(fn):
    """fn(lib) raises the same exception class and text on both."""
    with pytest.raises(Exception) as theirs:
        fn(torch)
    with pytest.raises(type(theirs.value)) as ours:
        fn(fg)
    assert str(ours.value) == str(theirs.value)


INVALID_COMBINATION = "received an invalid combination of arguments"


def errors_match(cell: str, ours_error, theirs_error, ours_value) -> None:
    """Assert that fusegrad raised what torch raised (`theirs_error`, not None): the same
    class and text. For torch's argument-parser TypeErrors only the words before " - got"
    are compared: the overload listing after them depends on how arguments were passed
    (positionally or by keyword, as a method or a function)."""
    oe, te = ours_error, theirs_error
    assert oe is not None, f"{cell}: torch raises {type(te).__name__}({te}), fusegrad returns {ours_value!r}"
    assert type(oe) is type(te) or isinstance(oe, type(te)), \
        f"{cell}: error class {type(oe).__name__}({oe}) != torch's {type(te).__name__}({te})"
    ours_text, torch_text = str(oe), str(te)
    if INVALID_COMBINATION in torch_text:
        ours_text, torch_text = ours_text.split(" - got")[0], torch_text.split(" - got")[0]
    assert ours_text == torch_text, f"{cell}: error text\n  ours:  {oe}\n  torch: {te}"


def _dtype_name(t) -> str:
    return str(t.dtype).split(".")[-1]


def assert_tensor_same(cell: str, ours, theirs, what: str = "result", rtol=1e-5, atol=1e-6):
    """Same type, shape, dtype and values (NaN positions and infinities equal; integers and
    bools exactly); `cell` names the case in the failure message."""
    if theirs is None:
        assert ours is None, f"{cell}: {what} is {ours!r}, torch has None"
        return
    assert isinstance(ours, fg.Tensor), f"{cell}: {what} is {type(ours).__name__}, torch gives a Tensor"
    assert tuple(ours.shape) == tuple(theirs.shape), f"{cell}: {what} shape {tuple(ours.shape)} != {tuple(theirs.shape)}"
    assert _dtype_name(ours) == _dtype_name(theirs), f"{cell}: {what} dtype {ours.dtype} != {theirs.dtype}"
    o, t = _np(ours), _np(theirs)
    if theirs.dtype.is_floating_point:
        np.testing.assert_allclose(o, t, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"{cell}: {what} values")
    else:
        np.testing.assert_array_equal(o, t, err_msg=f"{cell}: {what} values")


# NumPy dtype of each short dtype name the matrices use.
DTYPE_NAMES = {"f32": "float32", "f64": "float64", "i64": "int64", "bool": "bool"}


def distinct_values(shape, dtype: str = "f32", offset: float = 0.0) -> np.ndarray:
    """An array of `shape` whose entries all differ (so that a wrong gather or permutation
    shows), of dtype "f32", "f64", "i64" or "bool" (bools alternate unevenly)."""
    n = int(np.prod(shape, dtype=np.int64))
    values = np.arange(n, dtype=np.float64) * 0.5 - 1.25 + offset
    if dtype == "i64":
        values = np.arange(n) * 3 - 4 + int(offset)
    elif dtype == "bool":
        values = (np.arange(n) + int(offset)) % 3 == 1
    return values.reshape(shape).astype(DTYPE_NAMES[dtype])


def outcome(fn):
    """fn()'s result as comparable data, or its exception's class name and text."""
    try:
        return fn()
    except Exception as exc:     # noqa: BLE001 (the exception is the outcome)
        return type(exc).__name__, str(exc)


def exact_outcome(fn):
    """fn()'s tensor as ("value", dtype name, the repr of each value: NaN, inf and -0. compare
    exactly), or ("error", class name, text)."""
    try:
        result = fn()
    except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
        return ("error", type(exc).__name__, str(exc))
    values = np.asarray(result.detach().numpy(), dtype=np.float64)
    return ("value", str(result.dtype).split(".")[-1], [repr(v) for v in values.ravel().tolist()])


def lib_outcome(lib, case):
    """What `case(lib)` gives, comparable across torch and fusegrad: ("value", a bool) |
    ("tensor", array, dtype name, grad_fn name) | ("error", class name, text)."""
    try:
        r = case(lib)
    except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
        return ("error", type(exc).__name__, str(exc))
    if isinstance(r, bool):
        return ("value", r)
    return ("tensor", r.detach().numpy(), str(r.dtype).split(".")[-1],
            None if r.grad_fn is None else type(r.grad_fn).__name__)


def assert_same_outcome(ours, theirs, rtol=0.0, atol=0.0):
    """Two `lib_outcome`s agree: tensors of one shape, dtype and grad_fn with values within
    rtol/atol (exactly by default; NaN equal), or the same error (for torch's parser errors
    the words before " - got"), or the same value."""
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "tensor":
        assert ours[1].shape == theirs[1].shape and ours[2:] == theirs[2:], (ours, theirs)
        np.testing.assert_allclose(ours[1], theirs[1], rtol=rtol, atol=atol, equal_nan=True)
    elif ours[0] == "error" and INVALID_COMBINATION in theirs[2]:
        assert ours[:2] == theirs[:2] and ours[2].split(" - got")[0] == theirs[2].split(" - got")[0]
    else:
        assert ours == theirs


def assert_values_equal(ours, theirs):
    """Two tensors (fusegrad's, torch's) of one dtype and shape, equal bit for bit."""
    ours, theirs = ours.detach().numpy(), theirs.detach().numpy()
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)


def seeded_both(seed, make):
    """(make(fg), make(torch)), each library's generator seeded with `seed` first."""
    fg.manual_seed(seed)
    torch.manual_seed(seed)
    return make(fg), make(torch)


def runtime_error(run) -> str | None:
    """The text of the RuntimeError `run()` raises, or None when it raises none."""
    try:
        run()
    except RuntimeError as error:
        return str(error)
    return None


def without_node_name(message: str | None) -> str | None:
    """A version error without the name of the tensor's node (", which is output 0 of Op,"):
    a compiled call's names may differ from torch's (README)."""
    return None if message is None else re.sub(r", which is output \d+ of [\w:]+,", "", message)
