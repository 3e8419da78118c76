"""torch's legacy tensor types: FloatTensor, DoubleTensor, LongTensor, BoolTensor.

Each is a constructor with torch's legacy forms (`FloatTensor(2, 3)` or `FloatTensor(Size)`: a
new tensor of that shape, zeros here where torch leaves it uninitialised; `FloatTensor(data)`:
the data copied; `FloatTensor(t)`: a new tensor on t's memory, t of that dtype; `FloatTensor()`:
empty), a type that `isinstance` answers by dtype (`isinstance(x, fg.FloatTensor)` is
`x.dtype == fg.float32`), that `Tensor.type(...)` casts to, and whose `dtype` is its dtype.
fusegrad has only these four dtypes, so torch's other legacy types do not exist here.
"""
from __future__ import annotations

from fusegrad.ir import bool_, float32, float64, int64

from .tensor import Tensor


class _LegacyTensorType(type):
    """The metaclass of the legacy types (torch's `torch.tensortype`)."""

    def __call__(cls, *args, **kwargs):
        from .creation import legacy_array
        if kwargs.keys() - {"device"}:
            raise TypeError(f"new() received an invalid combination of arguments - got unexpected keyword "
                            f"argument(s) {sorted(kwargs.keys() - {'device'})}")
        # (a tensor given is taken as a new tensor on its memory, as Tensor(t))
        return Tensor._wrap(legacy_array(args, cls.dtype, cls.__name__, lambda t: TypeError(
            f"expected {cls.__name__} (got {t.type().split('.')[-1]})")))

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype

    def __repr__(cls) -> str:
        return f"<class 'torch.{cls.__name__}'>"


def _legacy(name: str, dtype):
    return _LegacyTensorType(name, (), {"dtype": dtype, "__doc__": f"torch.{name}: the legacy {dtype} type",
                                        "__module__": "fusegrad"})


FloatTensor = _legacy("FloatTensor", float32)
DoubleTensor = _legacy("DoubleTensor", float64)
LongTensor = _legacy("LongTensor", int64)
BoolTensor = _legacy("BoolTensor", bool_)
TYPES = {"FloatTensor": FloatTensor, "DoubleTensor": DoubleTensor, "LongTensor": LongTensor,
         "BoolTensor": BoolTensor}
