"""Shared helpers of the torch-parity tests: run one call on torch and fusegrad and compare.

Import after `pytest.importorskip("torch")` (the caller skips when torch is missing)."""
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
