"""torch.gradient: a tensor's derivative along each dim by finite differences, as torch computes
it (second-order central differences inside, first- or second-order one-sided ones at the ends,
for evenly spaced samples or given coordinates), in tensor ops: differentiable, each result one
`cat` of the edges and the inside (CatBackward0), as torch's."""
from __future__ import annotations

import numbers

from fusegrad.ir.ops import normalize_dim

from . import functional as F
from .functional import as_tensor
from .shape_functions import diff
from .splitting import narrow
from .parser_errors import type_name
from .tensor import Tensor


def _dims(t: Tensor, dim) -> tuple:
    """The dims asked for (all of them where `dim` is None), normalised, each once."""
    if dim is None:
        return tuple(range(t.dim())), False
    listed = [dim] if isinstance(dim, int) else list(dim)
    dims = tuple(normalize_dim(d, t.dim()) for d in listed)
    for d in dims:
        if dims.count(d) > 1:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return dims, True


def _spacings(spacing, t: Tensor, dims: tuple, dim_given: bool) -> list:
    """One spacing per dim: a number, or a 1-d tensor of coordinates."""
    if isinstance(spacing, (numbers.Number, Tensor)) and not (isinstance(spacing, Tensor) and spacing.dim() > 0):
        value = spacing.item() if isinstance(spacing, Tensor) else spacing
        return [value] * len(dims)
    spacing = list(spacing)
    if any(isinstance(s, Tensor) for s in spacing):
        for k, s in enumerate(spacing):
            if not isinstance(s, Tensor):
                raise TypeError(f"expected Tensor as element {k} in argument 1, but got {type_name(s)}")
    if len(spacing) != len(dims):
        if dim_given:
            raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                               f"arguments to have the same length, but got a spacing argument of length "
                               f"{len(spacing)} and a dim argument of length {len(dims)}.")
        raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar, or a list of length equal "
                           f"to 'self.dim() = {t.dim()}', since dim argument was not given, but got a list of "
                           f"length {len(spacing)}")
    for s in spacing:
        if isinstance(s, Tensor) and s.dim() != 1:
            raise RuntimeError("torch.gradient expected each element of spacing to have one dimension, but got an "
                               f"element with {s.dim()} dimensions!")
    return spacing


def _slice(t: Tensor, dim: int, start: int, stop: int | None = None) -> Tensor:
    """t[start:stop] along `dim` (torch's at::slice, negative bounds from the end)."""
    n = t.shape[dim]
    start = max(start + n, 0) if start < 0 else min(start, n)
    stop = n if stop is None else (max(stop + n, 0) if stop < 0 else min(stop, n))
    return narrow(t, dim, start, max(stop - start, 0))


def _evenly_spaced(t: Tensor, d: int, dx, edge_order: int) -> Tensor:
    center = (_slice(t, d, 2) - _slice(t, d, 0, -2)) / dx
    if edge_order == 1:
        prepend = (_slice(t, d, 1, 2) - _slice(t, d, 0, 1)) / dx
        append = (_slice(t, d, -1) - _slice(t, d, -2, -1)) / dx
    else:
        prepend = (_slice(t, d, 0, 1) * -1.5 + _slice(t, d, 1, 2) * 2 - _slice(t, d, 2, 3) * 0.5) / dx
        append = (_slice(t, d, -3, -2) * 0.5 + _slice(t, d, -2, -1) * -2 + _slice(t, d, -1) * 1.5) / dx
    return F.cat([prepend, center / 2, append], d)


def _at_coordinates(t: Tensor, d: int, coordinates: Tensor, edge_order: int) -> Tensor:
    dx = diff(coordinates)
    shape = [1] * t.dim()
    shape[d] = -1
    dx1, dx2 = _slice(dx, 0, 0, -1), _slice(dx, 0, 1)
    a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
    b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
    c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
    center = a * _slice(t, d, 0, -2) + b * _slice(t, d, 1, -1) + c * _slice(t, d, 2)
    if edge_order == 1:
        prepend = (_slice(t, d, 1, 2) - _slice(t, d, 0, 1)) / dx[0]
        append = (_slice(t, d, -1) - _slice(t, d, -2, -1)) / dx[-1]
    else:
        first, second, last, before_last = dx[0], dx[1], dx[-1], dx[-2]
        a = -(2.0 * first + second) / (first * (first + second))
        b = (first + second) / (first * second)
        c = -first / (second * (first + second))
        prepend = a * _slice(t, d, 0, 1) + b * _slice(t, d, 1, 2) + c * _slice(t, d, 2, 3)
        a = last / (before_last * (last + before_last))
        b = -(last + before_last) / (last * before_last)
        c = (2 * last + before_last) / (last * (last + before_last))
        append = a * _slice(t, d, -3, -2) + b * _slice(t, d, -2, -1) + c * _slice(t, d, -1)
    return F.cat([prepend, center, append], d)


def gradient(input, *, spacing=1, dim=None, edge_order: int = 1) -> tuple:
    """torch.gradient: per dim in `dim` (all where None), the derivative of `input` along it
    by finite differences, for samples `spacing` apart (a number, one per dim, or per dim a
    1-d tensor of the samples' coordinates); `edge_order` 1 or 2 at the ends."""
    t = as_tensor(input, "gradient")
    dims, dim_given = _dims(t, dim)
    spacings = _spacings(spacing, t, dims, dim_given)
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    for d in dims:
        if t.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    return tuple(_at_coordinates(t, d, s, edge_order) if isinstance(s, Tensor) else
                 _evenly_spaced(t, d, s, edge_order) for d, s in zip(dims, spacings))
