"""Print tensors exactly as torch does (`repr(torch.tensor(a))`), NumPy only.

This follows torch 2.13's `torch/_tensor_str.py` step by step, so that
`format_tensor(a)` equals `repr(torch.from_numpy(a))` with `torch.` spelled
`fg.` (as API.md spells `fg.Size`):

- one `_Formatter` per tensor decides, from the nonzero finite values, between
  integer mode (`3.`), fixed point with `precision` digits (`3.1416`) and
  scientific notation (`3.1416e+00`), and the common column width;
- values are formatted by Python's own `format` on Python floats/ints, the way
  torch formats `tensor.tolist()` items, so rounding and `-0.`, `nan`, `inf`
  come out identical;
- 1-d rows wrap at `linewidth`, n-d tensors nest brackets with one blank line
  per extra dimension, tensors with more than `threshold` elements are
  summarised to `edgeitems` rows/columns per edge around `...`;
- suffixes (`size=`, `dtype=`, then the caller's `requires_grad=True` or
  `grad_fn=<...>`) are appended, wrapping to a new line past `linewidth`.

Print options are module state, set by `set_printoptions` like torch's.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

__all__ = ["format_tensor", "set_printoptions", "get_printoptions", "printoptions"]

# torch's default dtypes print no `dtype=` suffix on non-empty tensors.
_DEFAULT_FLOAT = np.dtype(np.float32)
_DTYPES_WITHOUT_SUFFIX = (np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.bool_))
_PREFIX = "tensor("


@dataclasses.dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


_OPTS = _PrintOptions()

_PROFILES = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """Set the options `format_tensor` prints with, as `torch.set_printoptions`.

    Options left as None keep their value, except `sci_mode`, which torch
    always resets: None lets each tensor choose scientific notation itself.
    `profile` ("default", "short", "full") sets the others first; torch ignores any other name.
    """
    if profile is not None:
        for name, value in (_PROFILES.get(profile, {}) if isinstance(profile, str) else {}).items():
            setattr(_OPTS, name, value)
    if precision is not None:
        _OPTS.precision = precision
    if threshold is not None:
        _OPTS.threshold = threshold
    if edgeitems is not None:
        _OPTS.edgeitems = edgeitems
    if linewidth is not None:
        _OPTS.linewidth = linewidth
    _OPTS.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    """The current print options, as keyword arguments for `set_printoptions`."""
    return dataclasses.asdict(_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs: Any) -> Iterator[None]:
    """Change the print options inside a `with` block, restoring them after."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


class _Formatter:
    """Chooses one number style and column width for all elements of a tensor."""

    def __init__(self, values: np.ndarray):
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not self.floating:
            for value in flat.tolist():
                self.max_width = max(self.max_width, len(f"{value}"))
            return

        nonzero_finite = flat[np.isfinite(flat) & (flat != 0)]
        if nonzero_finite.size == 0:
            # Nothing to measure: zeros, nan and inf print in integer mode.
            return
        # torch compares magnitudes in double precision.
        magnitudes = np.abs(nonzero_finite).astype(np.float64)
        smallest, largest = magnitudes.min(), magnitudes.max()
        self.int_mode = bool(np.all(nonzero_finite == np.ceil(nonzero_finite)))
        if _OPTS.sci_mode is None:
            with np.errstate(over="ignore"):  # an infinite ratio is simply > 1000
                ratio = largest / smallest
            self.sci_mode = bool(ratio > 1000.0 or largest > 1.0e8 or smallest < 1.0e-4)
        else:
            self.sci_mode = _OPTS.sci_mode

        precision = _OPTS.precision
        for value in nonzero_finite.tolist():
            if self.sci_mode:
                width = len(f"{value:.{precision}e}")
            elif self.int_mode:
                width = len(f"{value:.0f}") + 1  # the trailing "." of integral floats
            else:
                width = len(f"{value:.{precision}f}")
            self.max_width = max(self.max_width, width)

    def width(self) -> int:
        return self.max_width

    def format(self, value: Any) -> str:
        """One element (a Python float, int or bool), right-aligned to the width."""
        if not self.floating:
            text = f"{value}"
        elif self.sci_mode:
            text = f"{value:{self.max_width}.{_OPTS.precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}"
            if not (math.isinf(value) or math.isnan(value)):
                text += "."
        else:
            text = f"{value:.{_OPTS.precision}f}"
        return text.rjust(self.max_width)


def _summarized_data(a: np.ndarray) -> np.ndarray:
    """The elements a summarised print shows (torch's get_summarized_data)."""
    edge = _OPTS.edgeitems
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        # With edgeitems == 0, `a[-0:]` is all of `a`, in torch as in NumPy.
        return np.concatenate((a[:edge], a[-edge:])) if a.shape[0] > 2 * edge else a
    if not edge:
        return np.empty((0,) * a.ndim, dtype=a.dtype)
    rows = list(a[:edge]) + list(a[len(a) - edge :]) if a.shape[0] > 2 * edge else list(a)
    return np.stack([_summarized_data(row) for row in rows])


def _vector_str(a: np.ndarray, indent: int, summarize: bool, formatter: _Formatter) -> str:
    """A 1-d row: elements joined by ", ", wrapped to fit the line width."""
    element_length = formatter.width() + 2  # with ", "
    per_line = max(1, math.floor((_OPTS.linewidth - indent) / element_length))
    edge = _OPTS.edgeitems
    if summarize and not edge:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * edge:
        data = (
            [formatter.format(v) for v in a[:edge].tolist()]
            + [" ..."]
            + [formatter.format(v) for v in a[-edge:].tolist()]
        )
    else:
        data = [formatter.format(v) for v in a.tolist()]
    lines = [", ".join(data[i : i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str_with_formatter(a: np.ndarray, indent: int, summarize: bool, formatter: _Formatter) -> str:
    """Nested brackets; slices of an n-d tensor are separated by n - 1 newlines."""
    if a.ndim == 0:
        return formatter.format(a.item())
    if a.ndim == 1:
        return _vector_str(a, indent, summarize, formatter)
    edge = _OPTS.edgeitems
    if summarize and a.shape[0] > 2 * edge:
        slices = (
            [_tensor_str_with_formatter(a[i], indent + 1, summarize, formatter) for i in range(edge)]
            + ["..."]
            + [
                _tensor_str_with_formatter(a[i], indent + 1, summarize, formatter)
                for i in range(len(a) - edge, len(a))
            ]
        )
    else:
        slices = [_tensor_str_with_formatter(a[i], indent + 1, summarize, formatter) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _tensor_str(a: np.ndarray, indent: int) -> str:
    if a.size == 0:
        return "[]"
    summarize = a.size > _OPTS.threshold
    formatter = _Formatter(_summarized_data(a) if summarize else a)
    return _tensor_str_with_formatter(a, indent, summarize, formatter)


def _torch_len(suffix: str) -> int:
    """Length of `suffix` as torch spells it: `torch.float64`, not `fg.float64`.

    Wrapping is decided on torch's spelling so that the output equals torch's
    repr with the module name replaced, even where the longer name would have
    made torch break the line.
    """
    return len(suffix) + suffix.count("fg.") * (len("torch.") - len("fg."))


def _add_suffixes(tensor_str: str, suffixes: Sequence[str], indent: int) -> str:
    """Append `, suffix` items, starting a new indented line past the line width."""
    parts = [tensor_str]
    # torch's measure (it counts two more than the last line's length when
    # there is no newline, one more otherwise); kept for identical wrapping.
    last_line_len = len(tensor_str) - tensor_str.rfind("\n") + 1
    for suffix in suffixes:
        suffix_len = _torch_len(suffix)
        if last_line_len + suffix_len + 2 > _OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + suffix_len
        else:
            parts.append(", " + suffix)
            last_line_len += suffix_len + 2
    parts.append(")")
    return "".join(parts)


def _dtype_name(dtype: np.dtype) -> str:
    return "fg." + dtype.name


def format_tensor(array: np.ndarray, suffixes: Sequence[str] = ()) -> str:
    """`repr` of a tensor holding `array`, exactly as torch prints it.

    `array` may be float16/32/64, signed or unsigned integer, or bool.
    A `dtype=fg.<name>` suffix is added where torch adds `dtype=torch.<name>`
    (non-default dtypes; any dtype but float32 on an empty tensor), and
    `size=(...)` for empty tensors that are not 1-d. `suffixes` (for example
    `"requires_grad=True"` or `"grad_fn=<AddBackward0>"`) follow them.
    """
    array = np.asarray(array)
    if array.dtype.kind not in "fiub":
        raise TypeError(f"format_tensor: unsupported dtype {array.dtype}")
    indent = len(_PREFIX)
    extra: list[str] = []
    if array.size == 0:
        # NumPy-like: the shape is shown unless it is (0,), and so is any
        # dtype but the default float one, as nothing else would reveal it.
        if array.ndim != 1:
            extra.append(f"size={tuple(array.shape)}")
        if array.dtype != _DEFAULT_FLOAT:
            extra.append("dtype=" + _dtype_name(array.dtype))
        tensor_str = "[]"
    else:
        if not _OPTS.edgeitems:
            extra.append(f"size={tuple(array.shape)}")
        if array.dtype not in _DTYPES_WITHOUT_SUFFIX:
            extra.append("dtype=" + _dtype_name(array.dtype))
        tensor_str = _tensor_str(array, indent)
    return _add_suffixes(_PREFIX + tensor_str, [*extra, *suffixes], indent)
