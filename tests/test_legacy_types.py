"""torch's legacy tensor types fg.FloatTensor, DoubleTensor, LongTensor, BoolTensor
(tracer/legacy_types.py) against torch: construction, isinstance, Tensor.type, dtype, repr."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle")

import fusegrad as fg  # noqa: E402

CASES = {
    "sizes": lambda T: T.FloatTensor(2, 3),
    "data": lambda T: T.FloatTensor([1, 2]),
    "double-data": lambda T: T.DoubleTensor([1, 2]),
    "long-truncates": lambda T: T.LongTensor([1.7, 2]),
    "bool": lambda T: T.BoolTensor([1, 0]),
    "empty": lambda T: T.FloatTensor(),
    "tuple-is-data": lambda T: T.FloatTensor((2, 3)),
    "size-is-shape": lambda T: T.FloatTensor(T.Size([2, 3])),
    "tensor": lambda T: T.FloatTensor(T.ones(2)),
    "long-size": lambda T: tuple(T.LongTensor(3).shape),
    "isinstance-float": lambda T: isinstance(T.ones(2), T.FloatTensor),
    "isinstance-double": lambda T: isinstance(T.ones(2), T.DoubleTensor),
    "isinstance-double-of-double": lambda T: isinstance(T.ones(2, dtype=T.float64), T.DoubleTensor),
    "type-cast": lambda T: T.ones(2).type(T.DoubleTensor),
    "type-cast-long": lambda T: T.ones(2).type(T.LongTensor),
    "dtype": lambda T: str(T.FloatTensor.dtype).split(".")[1],
    "repr": lambda T: repr(T.FloatTensor),
    "number": lambda T: T.FloatTensor(2.5),
    "not-a-subclass": lambda T: issubclass(T.FloatTensor, T.Tensor),
    "shares-memory": lambda T: (lambda t: (T.FloatTensor(t) is t, T.FloatTensor(t).data_ptr() == t.data_ptr()))(T.ones(2)),
    # (one parser for the three legacy constructors: tracer/creation.legacy_array)
    "string": lambda T: T.FloatTensor("ab"),
    "tensor-string": lambda T: T.Tensor("ab"),
    "new-string": lambda T: T.ones(1).new("ab"),
    "numpy-scalar": lambda T: T.FloatTensor(np.float64(2.5)),
    "tensor-numpy-scalar": lambda T: T.Tensor(np.float64(2.5)),
    "new-numpy-scalar": lambda T: T.ones(1).new(np.float64(2.5)),
    "tensor-of-a-double": lambda T: T.Tensor(T.ones(2, dtype=T.float64)),
    "new-of-another-dtype": lambda T: T.ones(1).new(T.ones(2, dtype=T.float64)),
}


def _outcome(T, make):
    try:
        r = make(T)
    except Exception as error:       # noqa: BLE001  (compared with torch's)
        return ("raised", type(error).__name__, str(error))
    if isinstance(r, (torch.Tensor, fg.Tensor)):
        values = r.tolist() if r.dtype not in (torch.float32, fg.float32) or r.numel() == 0 else None
        return tuple(r.shape), str(r.dtype).split(".")[1], values, r.requires_grad
    return r


@pytest.mark.parametrize("case", sorted(CASES))
def test_as_torch(case):
    assert _outcome(fg, CASES[case]) == _outcome(torch, CASES[case])


@pytest.mark.parametrize("given", ["torch.Foo", 3, "torch.LongTensor", "FloatTensor", "torch.FloatTensor"])
def test_set_default_tensor_type_as_torch(given):
    import warnings

    # (the deprecation warning is torch's once per process: not compared)
    def run(T):
        value = T.FloatTensor if given == "FloatTensor" else given
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                T.set_default_tensor_type(value)
                return str(T.get_default_dtype()).split(".")[1]
            except Exception as error:       # noqa: BLE001
                return type(error).__name__, str(error)
    assert run(fg) == run(torch)


def test_set_default_tensor_type_double_is_refused_as_set_default_dtype():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(NotImplementedError, match="default float dtype is always float32"):
            fg.set_default_tensor_type(fg.DoubleTensor)
