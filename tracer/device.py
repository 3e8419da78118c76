"""torch.device, for code that names the CPU: `fg.zeros(2, device="cpu")`, `x.device.type`.

fusegrad runs on the CPU only. Creation functions and `Tensor.to` accept a device as
torch does (a string, a `fg.device` or an index) and refuse any other device type.
"""
from __future__ import annotations

import re

# torch's device types, in the order its device-string error lists them.
DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
                "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")


_NO_ACCELERATOR = "Cannot access accelerator device when none is available."


# c10::Device's string form: letters and underscores, then ":" and an index without leading zeros
_DEVICE_STRING = re.compile(r"([a-zA-Z_]+)(?::([1-9][0-9]*|0))?")


class device:  # noqa: N801 (torch's name)
    """torch.device: a device type and an optional index; `device("cpu")`, `device("cpu", 0)`."""

    __slots__ = ("type", "index")

    def __init__(self, type, index: int | None = None):  # noqa: A002 (torch's argument name)
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        if isinstance(type, int) and not isinstance(type, bool):
            raise RuntimeError(_NO_ACCELERATOR)        # a bare index names an accelerator
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments - got ({_name(type)})")
        parsed = _DEVICE_STRING.fullmatch(type)
        if parsed is None:          # torch's parser: a type name, then an optional ":index"
            raise RuntimeError(f"Invalid device string: '{type}'")
        kind, number = parsed.group(1), parsed.group(2)
        if kind not in DEVICE_TYPES:
            raise RuntimeError(f"Expected one of {', '.join(DEVICE_TYPES)} device type at start of device "
                               f"string: {type}")
        if number:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was passed "
                                   f"explicitly: {type}")
            index = int(number)
        if index is not None and index < 0:
            raise RuntimeError("Device index must not be negative")
        self.type, self.index = kind, index

    def __repr__(self) -> str:
        return f"device(type='{self.type}')" if self.index is None else \
            f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other) -> bool:
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))


CPU = device("cpu")


def check_device(value) -> None:
    """Raise torch's errors for a device argument that is not the CPU (None means the default)."""
    if value is None:
        return
    d = value if isinstance(value, device) else device(value)
    if d.type != "cpu":
        raise AssertionError(f"fusegrad runs on the CPU only (got device {str(d)!r})")


def check_cuda(index=None) -> None:
    """torch's errors for `.cuda(index)` (Tensor's and Module's): the AssertionError of
    `.to("cuda")`, and for an index torch's accelerator error, as check_device gives them."""
    check_device("cuda" if index is None else index)


def _name(x) -> str:
    return type(x).__name__
