"""torch.memory_format (and torch.layout: fg.strided, the only one), for code that names one: `x.contiguous(memory_format=fg.contiguous_format)`,
`fg.zeros_like(x, memory_format=fg.preserve_format)`.

fusegrad has the two formats that apply to tensors of any rank: `contiguous_format` (row-major)
and `preserve_format` (the source's layout where its elements fill their memory densely,
torch's default for `clone` and the `*_like` functions). The channels-last formats, which
only convolutional layouts use, are not provided.
"""
from __future__ import annotations


class _Named:
    """A constant of torch's that prints as its name (`fg.contiguous_format`, `fg.strided`)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"fg.{self.name}"


class memory_format(_Named):  # noqa: N801 (torch's name)
    """A memory format; the instances are `fg.contiguous_format` and `fg.preserve_format`."""

    __slots__ = ()


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")


class layout(_Named):  # noqa: N801 (torch's name)
    """torch.layout: every fusegrad tensor is dense and strided, `fg.strided` (Tensor.layout)."""

    __slots__ = ()


strided = layout("strided")


def memory_format_arg(fn: str, value, optional: bool = True):
    """`value` of a `memory_format=` argument, or torch's TypeError for anything that is not
    one (None is refused where torch's parameter is not optional: contiguous, is_contiguous)."""
    if isinstance(value, memory_format) or (value is None and optional):
        return value
    from .parser_errors import type_name
    raise TypeError(f"{fn}(): argument 'memory_format' must be torch.memory_format, not {type_name(value)}")
