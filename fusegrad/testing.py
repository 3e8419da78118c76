"""fg.testing: torch.testing.assert_close (and the deprecated assert_allclose) for fusegrad
tensors, NumPy arrays, numbers, None and nested sequences and mappings of them, with torch's
default tolerances per dtype, checks and failure texts (its types print as fusegrad's:
`fg.Size([2])`, `fg.float32`)."""
from __future__ import annotations

import cmath
import collections.abc
import contextlib
import warnings

import numpy as np

import fusegrad as fg
from fusegrad.tracer.tensor import Tensor

__all__ = ["assert_close", "assert_allclose"]

# torch's {dtype: (rtol, atol)}; other dtypes compare exactly
_PRECISIONS = {"float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7)}
_NUMBER_DTYPES = {int: "int64", float: "float64"}


class _Failure(Exception):
    """What a comparison found: the exception type to raise, its text and the item's path."""

    def __init__(self, kind, text: str, path: tuple = ()):
        super().__init__(text)
        self.kind, self.text, self.path = kind, text, path

    def error(self, msg=None) -> Exception:
        if isinstance(msg, str):
            return self.kind(msg)
        text = self.text
        if self.path:
            text += f"\n\nThe failure occurred for item {''.join(str([item]) for item in self.path)}"
        return self.kind(msg(text) if callable(msg) else text)


class _Unsupported(Exception):
    pass


def _tolerances(dtype_names, rtol, atol, path) -> tuple:
    if (rtol is None) ^ (atol is None):
        raise _Failure(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                                   f"{'rtol' if rtol is None else 'atol'}.", path)
    if rtol is not None:
        return rtol, atol
    pairs = [_PRECISIONS.get(name, (0.0, 0.0)) for name in dtype_names]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _mismatch_text(identifier: str, extra: str | None, abs_diff, abs_index, atol, rel_diff, rel_index, rtol) -> str:
    equality = rtol == 0 and atol == 0

    def line(kind: str, diff, index, tol) -> str:
        text = f"{kind.title()} difference: {diff}" if index is None else \
            f"Greatest {kind} difference: {diff} at index {index}"
        return text + ("" if equality else f" (up to {tol} allowed)") + "\n"
    text = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        text += f"{extra.strip()}\n"
    text += line("absolute", abs_diff, abs_index, atol) + line("relative", rel_diff, rel_index, rtol)
    return text.strip()


def _scalar_text(actual, expected, rtol, atol) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_text("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None, atol, rel_diff,
                          None, rtol)


def _compare_numbers(actual, expected, rtol, atol, equal_nan, path) -> None:
    if isinstance(actual, (bool, np.bool_)) and isinstance(expected, (bool, np.bool_)):
        if bool(actual) is not bool(expected):
            raise _Failure(AssertionError, f"Booleans mismatch: {bool(actual)} is not {bool(expected)}", path)
        return
    actual = actual.item() if isinstance(actual, np.number) else actual
    expected = expected.item() if isinstance(expected, np.number) else expected
    rtol, atol = _tolerances([_NUMBER_DTYPES.get(type(x), "complex") for x in (actual, expected)], rtol, atol, path)
    if actual == expected or (equal_nan and cmath.isnan(actual) and cmath.isnan(expected)):
        return
    abs_diff = abs(actual - expected)
    if cmath.isfinite(abs_diff) and abs_diff <= atol + rtol * abs(expected):
        return
    raise _Failure(AssertionError, _scalar_text(actual, expected, rtol, atol), path)


def _as_array(x) -> np.ndarray:
    return x.detach().numpy() if isinstance(x, Tensor) else np.asarray(x)


def _compare_tensors(actual, expected, rtol, atol, equal_nan, check_dtype, check_stride, path) -> None:
    a, e = (x if isinstance(x, Tensor) else fg.as_tensor(x) for x in (actual, expected))
    rtol, atol = _tolerances([a.dtype.name, e.dtype.name], rtol, atol, path)

    def mismatch(name, ours, theirs):
        raise _Failure(AssertionError, f"The values for attribute '{name}' do not match: {ours} != {theirs}.", path)
    if tuple(a.shape) != tuple(e.shape):
        mismatch("shape", a.shape, e.shape)
    if check_stride and a.stride() != e.stride():
        mismatch("stride()", a.stride(), e.stride())
    if check_dtype and a.dtype is not e.dtype:
        mismatch("dtype", a.dtype, e.dtype)
    if a.dtype is not e.dtype:
        common = fg.promote_types(a.dtype, e.dtype)
        a, e = a.to(common), e.to(common)
    x, y = _as_array(a), _as_array(e)
    floating = a.dtype.is_floating_point
    with np.errstate(all="ignore"):
        if floating or rtol or atol:
            matches = np.isclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan)
        else:
            matches = x == y
    if matches.all():
        return
    if x.ndim == 0:
        raise _Failure(AssertionError, _scalar_text(x.item(), y.item(), rtol, atol), path)
    total = matches.size
    mismatched = total - int(matches.sum())
    extra = f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})"
    xf, yf, mf = x.reshape(-1), y.reshape(-1), matches.reshape(-1)
    if not floating:
        xf, yf = xf.astype(np.int64), yf.astype(np.int64)
    with np.errstate(all="ignore"):
        abs_diff = np.abs(xf - yf)
        abs_diff[mf] = 0
        # (torch divides an integer difference in its default float dtype)
        rel_diff = abs_diff / np.abs(yf) if floating else (abs_diff.astype(np.float32) / np.abs(yf).astype(np.float32))
        rel_diff[mf] = 0
    k_abs, k_rel = int(np.argmax(abs_diff)), int(np.argmax(rel_diff))
    raise _Failure(AssertionError, _mismatch_text(
        "Tensor-likes", extra, abs_diff[k_abs].item(), tuple(int(i) for i in np.unravel_index(k_abs, x.shape)),
        atol, rel_diff[k_rel].item(),
        tuple(int(i) for i in np.unravel_index(k_rel, x.shape)), rtol), path)


def _compare(actual, expected, path: tuple, options: dict) -> None:
    sequence = collections.abc.Sequence
    if isinstance(actual, sequence) and not isinstance(actual, str) and \
            isinstance(expected, sequence) and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _Failure(AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
                           path)
        for k in range(len(actual)):
            _compare(actual[k], expected[k], path + (k,), options)
        return
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        keys_a, keys_e = set(actual.keys()), set(expected.keys())
        if keys_a != keys_e:
            raise _Failure(AssertionError, "The keys of the mappings do not match:\nMissing keys in the actual "
                                           f"mapping: {sorted(keys_e - keys_a)}\nAdditional keys in the actual "
                                           f"mapping: {sorted(keys_a - keys_e)}", path)
        keys = keys_a
        with contextlib.suppress(Exception):
            keys = sorted(keys)
        for key in keys:
            _compare(actual[key], expected[key], path + (key,), options)
        return
    rtol, atol, equal_nan = options["rtol"], options["atol"], options["equal_nan"]
    if actual is None or expected is None:
        if not (actual is None and expected is None):
            raise _Failure(AssertionError, f"None mismatch: {actual} is not {expected}", path)
        return
    numbers = (bool, int, float, complex, np.number, np.bool_)
    if isinstance(actual, numbers) and isinstance(expected, numbers) and \
            isinstance(actual, (bool, np.bool_)) == isinstance(expected, (bool, np.bool_)):
        _compare_numbers(actual, expected, rtol, atol, equal_nan, path)
        return
    related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
    if related and isinstance(actual, (Tensor, np.ndarray)) and \
            (options["allow_subclasses"] or type(actual) is type(expected)):
        _compare_tensors(actual, expected, rtol, atol, equal_nan, options["check_dtype"], options["check_stride"],
                         path)
        return
    raise _Failure(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} and "
                              f"{type(expected)}.", path)


def assert_close(actual, expected, *, allow_subclasses: bool = True, rtol=None, atol=None, equal_nan: bool = False,
                 check_device: bool = True, check_dtype: bool = True, check_layout: bool = True,
                 check_stride: bool = False, msg=None) -> None:
    """torch.testing.assert_close: raise AssertionError (torch's text) unless `actual` and
    `expected` are close: tensors of one shape (and dtype, with `check_dtype`) whose elements
    satisfy |a - e| <= atol + rtol * |e| (defaults per dtype: float32 1.3e-6 / 1e-5, float64
    1e-7 / 1e-7, else exact), numbers likewise, or sequences and mappings of them, item by item.
    `msg`: a text replacing torch's, or a function of torch's text."""
    options = {"rtol": rtol, "atol": atol, "equal_nan": equal_nan, "check_dtype": check_dtype,
               "check_stride": check_stride, "allow_subclasses": allow_subclasses}
    try:
        _compare(actual, expected, (), options)
    except _Failure as failure:
        raise failure.error(msg) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan: bool = True, msg: str = "") -> None:
    """torch.testing.assert_allclose (deprecated, as torch's: a FutureWarning): assert_close with
    its older tolerances (float32 1e-4 / 1e-5, float64 1e-5 / 1e-8), dtypes not checked, NaNs equal."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future release. "
                  "Please use `torch.testing.assert_close()` instead. You can find detailed upgrade instructions in "
                  "https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    if not isinstance(actual, Tensor):
        actual = fg.tensor(actual)
    if not isinstance(expected, Tensor):
        expected = fg.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        older = {"float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}
        pairs = [older.get(t.dtype.name, (0.0, 0.0)) for t in (actual, expected)]
        rtol, atol = max(p[0] for p in pairs), max(p[1] for p in pairs)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=False, msg=msg or None)
