"""torch's functions of complex numbers, as they act on fusegrad's tensors, which are all real
(fusegrad has no complex dtypes): angle, isreal, real and imag.

torch defines each for real tensors too: angle is pi below 0 and 0 elsewhere (AngleBackward0,
whose gradient is zeros), isreal is all True, real is the tensor itself, and imag raises.
"""
from __future__ import annotations

from fusegrad.ir import bool_, float32

from .creation import ones_like, tensor
from .dispatch import apply_op
from .extra_functions import _no_argument_method, _one_tensor
from .functional import REQUIRED, cast
from .tensor import Tensor

_NO_IMAGINARY_PART = "imag is not implemented for tensors with non-complex dtypes."


def angle(input=REQUIRED, *surplus) -> Tensor:
    """torch.angle of a real tensor: pi where it is below 0, else 0, NaN kept (float32 for an
    integer or bool tensor); its gradient is zeros."""
    a = _one_tensor("angle")(input, *surplus)
    if not a._dtype.is_floating_point:
        a = cast(a, float32)
    return apply_op("angle", [a], None, "AngleBackward0")


def isreal(input=REQUIRED, *surplus) -> Tensor:
    """torch.isreal: True for every element (a bool tensor of input's shape, no history)."""
    return ones_like(_one_tensor("isreal")(input, *surplus), dtype=bool_)


def real(input=REQUIRED, *surplus) -> Tensor:
    """torch.real of a real tensor: the tensor itself."""
    return _one_tensor("real")(input, *surplus)


def imag(input=REQUIRED, *surplus) -> Tensor:
    """torch.imag: a real tensor has no imaginary part (torch's RuntimeError)."""
    _one_tensor("imag")(input, *surplus)
    raise RuntimeError(_NO_IMAGINARY_PART)


def _set_real(self, value) -> None:
    """`t.real = value`: torch copies `value` (a tensor, or a number made a tensor of t's dtype)
    into t's real part, here t itself (copy_: its version bumps, a leaf that requires grad
    refuses it)."""
    self.copy_(value if isinstance(value, Tensor) else tensor(value, dtype=self._dtype))


def _set_imag(self, value) -> None:
    """`t.imag = value`: torch's error (a real tensor has no imaginary part)."""
    raise RuntimeError(_NO_IMAGINARY_PART)


def _refuse_delete(name: str):
    def refuse(self):
        raise AttributeError(f"attribute '{name}' of 'torch._C.TensorBase' objects cannot be deleted")
    return refuse


METHODS = {"angle": _no_argument_method(angle, "angle"), "isreal": _no_argument_method(isreal, "isreal")}
# Tensor.real and Tensor.imag (tracer/methods.bind_methods installs them)
PROPERTIES = {"real": property(real, _set_real, _refuse_delete("real"), real.__doc__),
              "imag": property(imag, _set_imag, _refuse_delete("imag"), imag.__doc__)}
