"""F.affine_grid and F.grid_sample (2-D: a 4-D input), as compositions of existing ops.

affine_grid is torch's: the base grid of normalised pixel coordinates (x, y, 1) times theta's
transpose, one bmm. grid_sample reads the input at each grid point by torch's rules: the grid's
[-1, 1] coordinates mapped to pixels (align_corners: -1 and 1 are the corner pixels' centres,
else their outer edges), the coordinates of `border` padding clamped into the image and those
of `reflection` padding reflected at its edges, then `bilinear` interpolation of the four
neighbours (a neighbour outside the image reads 0) or the `nearest` pixel (ties to even, as
torch's nearbyint). Built of gathers and arithmetic, so the gradients for the input and the
grid are the composition's (torch's almost everywhere; nearest gives the grid none). Node
names are those of the composition, not torch's GridSampler2DBackward0 /
AffineGridGeneratorBackward0; bicubic and 3-D (5-D input) sampling raise NotImplementedError.
"""
from __future__ import annotations

import warnings

import fusegrad as fg
from fusegrad.ir.types import TORCH_SCALAR_NAMES
from fusegrad.tracer.user_frame import user_stacklevel

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                  "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                  "grid_sample for details.")


def _align(align_corners) -> bool:
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, UserWarning, stacklevel=user_stacklevel())
        return False
    return bool(align_corners)


def _linspace_from_neg_one(n: int, align_corners: bool, dtype):
    """torch's linspace_from_neg_one: n points over [-1, 1] (their centres shrunk by (n-1)/n
    without align_corners)."""
    if n <= 1:
        return fg.zeros(1, dtype=dtype)
    points = fg.linspace(-1, 1, n, dtype=dtype)
    return points if align_corners else points * ((n - 1) / n)


def affine_grid(theta, size, align_corners=None):
    """F.affine_grid for 2-D transforms: theta (N, 2, 3), size (N, C, H, W) -> grid (N, H, W, 2)."""
    align_corners = _align(align_corners)
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = tuple(size)
    if len(size) == 5:
        raise NotImplementedError("fusegrad: affine_grid for 3-D transforms (a 5-D size) is not supported")
    if len(size) != 4:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if theta.dim() != 3 or tuple(theta.shape[1:]) != (2, 3):
        raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got "
                         f"{theta.shape}.")
    n, _, h, w = size
    xs = _linspace_from_neg_one(w, align_corners, theta.dtype)
    ys = _linspace_from_neg_one(h, align_corners, theta.dtype)
    base = fg.stack([xs.reshape(1, -1).expand(h, w), ys.reshape(-1, 1).expand(h, w),
                     fg.ones(h, w, dtype=theta.dtype)], -1)
    base = base.reshape(1, h * w, 3).expand(n, h * w, 3)
    return fg.bmm(base, theta.transpose(1, 2)).reshape(n, h, w, 2)


def _unnormalize(coordinate, size: int, align_corners: bool):
    if align_corners:
        return (coordinate + 1) / 2 * (size - 1)
    return ((coordinate + 1) * size - 1) / 2


def _reflect(coordinate, twice_low: int, twice_high: int):
    """torch's reflect_coordinates: `coordinate` reflected into [twice_low / 2, twice_high / 2]."""
    if twice_low == twice_high:
        return fg.zeros_like(coordinate)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    distance = (coordinate - low).abs()
    extra = fg.fmod(distance, span)
    flips = (distance / span).floor()
    return fg.where(fg.fmod(flips, 2) == 0, extra + low, span - extra + low)


def _source_index(coordinate, size: int, padding_mode: str, align_corners: bool):
    """torch's grid_sampler_compute_source_index: a grid coordinate as a pixel position."""
    coordinate = _unnormalize(coordinate, size, align_corners)
    if padding_mode == "border":
        coordinate = coordinate.clamp(0, size - 1)
    elif padding_mode == "reflection":
        coordinate = _reflect(coordinate, 0, 2 * (size - 1)) if align_corners else _reflect(coordinate, -1, 2 * size - 1)
        coordinate = coordinate.clamp(0, size - 1)
    return coordinate


def _read(flat, ix, iy, width: int, height: int):
    """input[n, :, iy, ix] for integer-valued pixel positions (N, Ho, Wo), 0 outside the image:
    (N, C, Ho, Wo)."""
    n, c = flat.shape[0], flat.shape[1]
    inside = (ix >= 0) & (ix <= width - 1) & (iy >= 0) & (iy <= height - 1)
    index = (iy.clamp(0, height - 1) * width + ix.clamp(0, width - 1)).long()
    out_shape = tuple(ix.shape)
    gathered = flat.gather(2, index.reshape(n, 1, -1).expand(n, c, index[0].numel()))
    return gathered.reshape(n, c, *out_shape[1:]) * inside.unsqueeze(1).to(flat.dtype)


def grid_sample(input, grid, mode: str = "bilinear", padding_mode: str = "zeros", align_corners=None):
    """F.grid_sample of a 4-D input (N, C, H, W) at a grid (N, Ho, Wo, 2) of (x, y) in [-1, 1]."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    align_corners = _align(align_corners)
    if input.dtype is not grid.dtype:
        raise RuntimeError(f"expected scalar type {TORCH_SCALAR_NAMES[input.dtype.name]} but found "
                           f"{TORCH_SCALAR_NAMES[grid.dtype.name]}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != input.dim() - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.dim() - 2} in last dimension, but "
                           f"got grid with sizes {list(grid.shape)}")
    if input.dim() != 4 or grid.dim() != 4:
        raise NotImplementedError("fusegrad: grid_sample of a 5-D input (3-D sampling) is not supported")
    if mode == "bicubic":
        raise NotImplementedError("fusegrad: grid_sample's bicubic mode is not supported (bilinear and nearest are)")
    n, c, h, w = input.shape
    x = _source_index(grid[..., 0], w, padding_mode, align_corners)
    y = _source_index(grid[..., 1], h, padding_mode, align_corners)
    flat = input.reshape(n, c, h * w)
    if mode == "nearest":
        out = _read(flat, x.round(), y.round(), w, h)
        if grid.requires_grad:
            # (torch's grid gradient is zeros here, not none: the grid joins the graph with a
            # zero, nan_to_num keeping an infinite coordinate from making it NaN)
            out = out + (grid * 0).nan_to_num(0.0).sum()
        return out
    x0, y0 = x.floor(), y.floor()
    x1, y1 = x0 + 1, y0 + 1
    # torch's weights: each corner's by the opposite corner's distances
    nw, ne = ((x1 - x) * (y1 - y)).unsqueeze(1), ((x - x0) * (y1 - y)).unsqueeze(1)
    sw, se = ((x1 - x) * (y - y0)).unsqueeze(1), ((x - x0) * (y - y0)).unsqueeze(1)
    return (_read(flat, x0, y0, w, h) * nw + _read(flat, x1, y0, w, h) * ne
            + _read(flat, x0, y1, w, h) * sw + _read(flat, x1, y1, w, h) * se)
