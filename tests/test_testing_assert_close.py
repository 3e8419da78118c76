"""fg.testing.assert_close / assert_allclose (fusegrad/testing.py) against torch.testing: which
pairs pass, and the exception and text of each failure (torch's type names read as fusegrad's)."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle")

import fusegrad as fg  # noqa: E402

NAN, INF = float("nan"), float("inf")
CASES = {
    "not-close": lambda T: ([1., 2., 3.], [1., 2.5, 3.], {}),
    "close": lambda T: ([1., 2., 3.], [1., 2., 3.000001], {}),
    "shape": lambda T: ([1., 2.], [1., 2., 3.], {}),
    "nan": lambda T: ([NAN], [NAN], {}),
    "nan-equal": lambda T: ([NAN], [NAN], {"equal_nan": True}),
    "inf": lambda T: ([0., 1.], [0., INF], {}),
    "2d-indices": lambda T: ([[1., 0., 3.], [4., 5., 0.]], [[1., 1e-3, 3.], [4.5, 5., 1.]], {}),
    "custom-tolerances": lambda T: ([[1., 2.], [3., 4.]], [[1., 2.], [3., 5.]], {"rtol": 0, "atol": 0.5}),
    "custom-message": lambda T: ([[1., 2.], [3., 4.]], [[1., 2.], [3., 5.]], {"msg": "custom"}),
    "message-function": lambda T: ([[1., 2.], [3., 4.]], [[1., 2.], [3., 5.]], {"msg": lambda m: "X " + m}),
    "rtol-alone": lambda T: ([1., 2.], [1., 2.], {"rtol": 1e-3}),
    "atol-alone": lambda T: ([1.], [1.], {"atol": 1.0}),
}


def _run(T, case):
    actual, expected, options = CASES[case](T)
    try:
        T.testing.assert_close(T.tensor(actual), T.tensor(expected), **options)
    except Exception as error:       # noqa: BLE001  (compared with torch's)
        return type(error).__name__, str(error).replace("torch.", "fg.")
    return "passed"


@pytest.mark.parametrize("case", sorted(CASES))
def test_tensors_as_torch(case):
    assert _run(fg, case) == _run(torch, case)


OTHER = {
    "dtype": lambda T: (T.tensor([1., 2.]), T.tensor([1., 2.], dtype=T.float64), {}),
    "dtype-unchecked": lambda T: (T.tensor([1., 2.]), T.tensor([1., 2.], dtype=T.float64), {"check_dtype": False}),
    "int": lambda T: (T.tensor([1, 2]), T.tensor([1, 3]), {}),
    "int-tolerance": lambda T: (T.tensor([1, 2, 3]), T.tensor([1, 2, 4]), {"rtol": 0.5, "atol": 0}),
    "bool": lambda T: (T.tensor([True]), T.tensor([False]), {}),
    "0-d": lambda T: (T.tensor(0.1), T.tensor(0.2), {}),
    "stride": lambda T: (T.ones(2, 3), T.ones(3, 2).t(), {"check_stride": True}),
    "floats": lambda T: (1.0, 1.0 + 1e-9, {}),
    "ints": lambda T: (1, 2, {}),
    "bools": lambda T: (True, False, {}),
    "none": lambda T: (None, 1, {}),
    "sequence": lambda T: ([T.tensor(1.)], [T.tensor(2.)], {}),
    "sequence-length": lambda T: ([T.tensor(1.)], [T.tensor(1.), T.tensor(2.)], {}),
    "tuple-and-list": lambda T: ((1.0, 2.0), [1.0, 2.5], {}),
    "mapping": lambda T: ({"a": T.tensor(1.)}, {"a": T.tensor(1.5)}, {}),
    "mapping-keys": lambda T: ({"a": T.tensor(1.)}, {"b": T.tensor(1.5)}, {}),
    "numpy": lambda T: (np.array([1., 2.]), np.array([1., 2.1]), {}),
}


@pytest.mark.parametrize("case", sorted(OTHER))
def test_other_inputs_as_torch(case):
    def run(T):
        actual, expected, options = OTHER[case](T)
        try:
            T.testing.assert_close(actual, expected, **options)
        except Exception as error:       # noqa: BLE001
            return type(error).__name__, str(error).replace("torch.", "fg.")
        return "passed"
    assert run(fg) == run(torch)


def test_tensor_and_number_cannot_pair():
    with pytest.raises(TypeError, match="No comparison pair was able to handle inputs of type"):
        fg.testing.assert_close(fg.tensor(1.), 1.0)


@pytest.mark.parametrize("expected", [[1., 2.0001], [1., 2.01]])
def test_assert_allclose_as_torch(expected):
    def run(T):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                T.testing.assert_allclose(T.tensor([1., 2.]), expected)
                outcome = "passed"
            except AssertionError as error:
                outcome = str(error)
        return outcome, [w.category.__name__ for w in caught]
    assert run(fg) == run(torch)
