"""torch.multinomial: indices drawn from the rows of a tensor of (unnormalised) probabilities,
with torch's CPU algorithms and so its numbers for a seed.

Without replacement, or for one sample, torch draws q ~ Exp(1) in the input's dtype and layout
(Tensor.exponential_) and takes the argmax (the top k) of p / q, the Gumbel trick; with
replacement it normalises each row's running sum in the input's dtype and places one double
uniform per sample by binary search. The result is int64 and has no history; reading the
probabilities is a graph break inside fg.compile, as for nonzero.
"""
from __future__ import annotations

import operator

import numpy as np

from fusegrad.ir.types import TORCH_SCALAR_NAMES

from . import generator as random_generator
from .creation import empty_like, wrap_array
from .functional import argmax, as_tensor
from .grad_mode import no_grad
from .inplace import exponential_
from .parser_errors import type_name
from .sorting import topk
from .tensor import Tensor

__all__ = ["multinomial"]


def multinomial(input, num_samples, replacement: bool = False, *, generator=None) -> Tensor:
    """`num_samples` category indices per row of `input` (1-d: one row; 2-d: a row each), each
    drawn with probability proportional to its entry; without replacement an index comes once."""
    probabilities = as_tensor(input, "multinomial")
    if isinstance(num_samples, bool) or not hasattr(num_samples, "__index__"):
        raise TypeError(f"multinomial(): argument 'num_samples' (position 2) must be int, not {type_name(num_samples)}")
    num_samples = operator.index(num_samples)
    gen = random_generator.required(generator, "multinomial")
    if not 1 <= probabilities.dim() <= 2:
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not probabilities.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{TORCH_SCALAR_NAMES[probabilities.dtype.name]}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    categories = probabilities.shape[-1]
    if not replacement and num_samples > categories:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if categories > 1 << 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    with no_grad():
        p = probabilities.detach()
        if not replacement or num_samples == 1:
            return _by_exponential_race(p, num_samples, gen)
        return _by_running_sums(p, num_samples, gen)


def _by_exponential_race(p: Tensor, num_samples: int, gen) -> Tensor:
    """torch's path without replacement (or for one sample): argmax / top k of p / q, q ~ Exp(1)."""
    values = p.numpy()
    if not (np.all(values < np.inf) and np.all(values >= 0)):      # (NaN fails both)
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if np.any(values.sum(axis=-1) == 0):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    ratio = p / exponential_(empty_like(p), 1.0, gen)
    if num_samples == 1:
        return argmax(ratio, -1, keepdim=True)
    return topk(ratio, num_samples).indices


def _by_running_sums(p: Tensor, num_samples: int, gen) -> Tensor:
    """torch's path with replacement: per row, the running sums of its entries (in its dtype)
    divided by their total, the last made 1, and for each sample a double uniform's slot by
    binary search (the first running sum not below it)."""
    rows = p.numpy().reshape(-1, p.shape[-1])
    out = np.empty((rows.shape[0], num_samples), np.int64)
    for r, row in enumerate(rows):
        bad = np.flatnonzero(~((row >= 0) & np.isfinite(row)))
        if bad.size:        # (torch checks entry by entry, each for < 0 first: a NaN fails that)
            which = "< 0" if not row[bad[0]] >= 0 else "= infinity or NaN"
            raise RuntimeError(f"invalid multinomial distribution (encountering probability entry {which})")
        running = np.cumsum(row, dtype=row.dtype)       # (NumPy adds in turn, as torch's loop)
        total = running[-1]
        if not total > 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        running = (running / total).astype(row.dtype)        # (normalised in the row's dtype)
        running[-1] = 1
        # (torch's binary search finds the first running sum not below the uniform: NumPy's
        # left-side search of the sorted sums, compared in float64 as torch's double)
        out[r] = np.searchsorted(running.astype(np.float64), gen.uniform(num_samples, np.float64), side="left")
    return wrap_array(out.reshape(p.shape[:-1] + (num_samples,)))


def _multinomial_method(self, num_samples, replacement: bool = False, *, generator=None) -> Tensor:
    return multinomial(self, num_samples, replacement, generator=generator)


_multinomial_method.__name__ = _multinomial_method.__qualname__ = "multinomial"
_multinomial_method.__doc__ = multinomial.__doc__

METHODS = {"multinomial": _multinomial_method}
