"""fg.utils.data: torch.utils.data's commonly used API, for map-style and iterable datasets.

Datasets (Dataset, IterableDataset, TensorDataset, StackDataset, ConcatDataset, ChainDataset,
Subset, random_split), samplers (Sampler, SequentialSampler, RandomSampler,
SubsetRandomSampler, WeightedRandomSampler, BatchSampler), default_collate / default_convert and
the DataLoader, with torch's argument checks and error texts.

Differences from torch, by choice:
- Loading always runs in this process: `num_workers > 0` is accepted with a UserWarning and runs
  as num_workers=0 (worker_init_fn is then never called; get_worker_info() returns None).
  pin_memory, timeout, prefetch_factor and persistent_workers are accepted and have no effect.
- Random orders come from fusegrad's generator (`fg.manual_seed` or `generator=` makes them
  reproducible). RandomSampler draws its seed and permutation as torch's CPU generator does,
  so after the same seed the order is torch's too.
- NumPy arrays of dtypes fusegrad lacks (int32, float16, ...) collate to fusegrad's int64 /
  float32 / float64 tensors, as fg.as_tensor converts them.
"""
from __future__ import annotations

import bisect
import collections.abc
import copy
import itertools
import math
import re
import warnings

import numpy as np

from fusegrad.ir import float64, int64
from fusegrad.tracer import Tensor
from fusegrad.tracer import generator as _generator
from fusegrad.tracer.creation import tensor as _tensor
from fusegrad.tracer.extra_functions import as_tensor_ as _as_tensor
from fusegrad.tracer.functional import stack as _stack
from fusegrad.tracer.random_extra import randperm as _randperm

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset",
           "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler",
           "TensorDataset", "WeightedRandomSampler", "default_collate", "default_convert", "get_worker_info",
           "random_split"]


# --------------------------------------------------------------------- datasets
class Dataset:
    """torch.utils.data.Dataset: a map from keys to samples; subclasses define __getitem__ (and
    usually __len__). `a + b` is their ConcatDataset."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])

    def __class_getitem__(cls, item):       # (Dataset[int] in annotations, as torch's Generic)
        return cls


class IterableDataset(Dataset):
    """torch.utils.data.IterableDataset: a stream of samples; subclasses define __iter__.
    `a + b` is their ChainDataset."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """torch.utils.data.TensorDataset: sample i is `tuple(t[i] for t in tensors)`; the tensors
    must agree in their first dim (AssertionError "Size mismatch between tensors", as torch)."""

    def __init__(self, *tensors) -> None:
        if any(tensors[0].size(0) != t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """torch.utils.data.StackDataset: datasets of one length side by side; sample i is the tuple
    (positional datasets) or dict (keyword datasets) of their samples i."""

    def __init__(self, *args, **kwargs) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        parts = list(args) or list(kwargs.values())
        self._length = len(parts[0])
        if any(self._length != len(d) for d in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args or kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset):
    """torch.utils.data.ConcatDataset: map-style datasets one after another (negative indices
    count from the end)."""

    @staticmethod
    def cumsum(sequence):
        return list(itertools.accumulate(len(e) for e in sequence))

    def __init__(self, datasets) -> None:
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """torch.utils.data.ChainDataset: iterable datasets streamed one after another."""

    def __init__(self, datasets) -> None:
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


class Subset(Dataset):
    """torch.utils.data.Subset: the samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """torch.utils.data.random_split: Subsets of the given lengths (ints summing to
    len(dataset), or fractions summing to 1: floor(frac * len) each, the remainder given out
    one by one from the first split on, a warning for an empty split) over one random
    permutation drawn from `generator` (the global generator when None, as torch's
    default_generator: `fg.manual_seed` makes it reproducible)."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        subset_lengths = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            subset_lengths.append(math.floor(len(dataset) * frac))
        remainder = len(dataset) - sum(subset_lengths)
        for i in range(remainder):
            subset_lengths[i % len(subset_lengths)] += 1
        lengths = subset_lengths
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = _randperm(sum(lengths), generator=generator).tolist()
    return [Subset(dataset, indices[offset - length:offset])
            for offset, length in zip(itertools.accumulate(lengths), lengths)]


# --------------------------------------------------------------------- samplers
class Sampler:
    """torch.utils.data.Sampler: an iterable of dataset indices (or of lists of them)."""

    def __init__(self, data_source=None) -> None:
        if data_source is not None:
            warnings.warn("`data_source` argument is not used and will be removed in 2.2.0."
                          "You may still have custom implementation that utilizes it.", stacklevel=2)

    def __iter__(self):
        raise NotImplementedError

    def __class_getitem__(cls, item):
        return cls


class SequentialSampler(Sampler):
    """torch.utils.data.SequentialSampler: 0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source) -> None:
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


def _fresh_generator():
    """torch's RandomSampler without a generator: a new generator seeded from one int64
    `random_()` draw of the global one (random64() mod 2**63)."""
    seed = int(_generator.DEFAULT.words64(1)[0]) % 2 ** 63
    return _generator.Generator().manual_seed(seed)


class RandomSampler(Sampler):
    """torch.utils.data.RandomSampler: a random permutation of the indices (repeated, then cut,
    for num_samples > len), or with replacement num_samples uniform draws. Without a
    `generator` each pass seeds a new one from the global generator, as torch does."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        gen = _fresh_generator() if self.generator is None else self.generator
        if self.replacement:
            from fusegrad.tracer.creation import randint
            for _ in range(self.num_samples // 32):
                yield from randint(high=n, size=(32,), dtype=int64, generator=gen).tolist()
            yield from randint(high=n, size=(self.num_samples % 32,), dtype=int64, generator=gen).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from _randperm(n, generator=gen).tolist()
            yield from _randperm(n, generator=gen).tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """torch.utils.data.SubsetRandomSampler: the given indices in a random order (a new one
    each pass), drawn from `generator` or the global generator."""

    def __init__(self, indices, generator=None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in _randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """torch.utils.data.WeightedRandomSampler: num_samples indices drawn with probabilities
    proportional to `weights` (with or without replacement). The draws come from fusegrad's
    generator by inverse-CDF sampling, not torch's multinomial: the same seed gives a
    reproducible sequence, but not torch's."""

    def __init__(self, weights, num_samples, replacement=True, generator=None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights = _as_tensor(weights, dtype=float64)
        if len(weights.shape) != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(weights.shape)}")
        self.weights = weights
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        gen = _generator.required(self.generator, "WeightedRandomSampler")
        w = self.weights.numpy().astype(np.float64).copy()
        if np.any(w < 0) or not np.all(np.isfinite(w)) or w.sum() <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if not self.replacement and self.num_samples > np.count_nonzero(w):
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
        out = []
        for u in gen.uniform(self.num_samples, np.float64):
            cdf = np.cumsum(w)
            k = min(int(np.searchsorted(cdf, u * cdf[-1], side="right")), len(w) - 1)
            while w[k] == 0:        # (a zero weight is never drawn)
                k -= 1
            out.append(k)
            if not self.replacement:
                w[k] = 0.0
        yield from out

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """torch.utils.data.BatchSampler: lists of `batch_size` indices from `sampler` (the last one
    shorter, or dropped with drop_last)."""

    def __init__(self, sampler, batch_size, drop_last) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        it = iter(self.sampler)
        if self.drop_last:
            for batch in zip(*[it] * self.batch_size):
                yield [*batch]
        else:
            batch = [*itertools.islice(it, self.batch_size)]
            while batch:
                yield batch
                batch = [*itertools.islice(it, self.batch_size)]

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


class _InfiniteConstantSampler(Sampler):
    """The sampler of an iterable dataset: None forever."""

    def __iter__(self):
        while True:
            yield None


# --------------------------------------------------------------------- collation
_STRING_OR_OBJECT = re.compile(r"[SaUO]")
default_collate_err_msg_format = ("default_collate: batch must contain tensors, numpy arrays, numbers, "
                                  "dicts or lists; found {}")


def _is_numpy_value(data) -> bool:
    kind = type(data)
    return kind.__module__ == "numpy" and kind.__name__ not in ("str_", "string_", "bytes_")


def default_convert(data):
    """torch.utils.data.default_convert (the DataLoader's collate_fn with batch_size=None): NumPy
    arrays and scalars become tensors (string and object arrays stay), inside mappings,
    namedtuples and sequences too (a tuple becomes a list, as torch's); anything else is kept."""
    if isinstance(data, Tensor):
        return data
    if _is_numpy_value(data):
        if isinstance(data, np.ndarray) and _STRING_OR_OBJECT.search(data.dtype.str) is not None:
            return data
        return _as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return type(data)({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def _collate_numpy_array(batch):
    if _STRING_OR_OBJECT.search(batch[0].dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(batch[0].dtype))
    return default_collate([_as_tensor(b) for b in batch])


def default_collate(batch):
    """torch.utils.data.default_collate: a list of samples as one batch. Tensors are stacked
    along a new dim 0; NumPy arrays become tensors and are stacked; NumPy scalars become one
    tensor; Python floats a float64 tensor, ints an int64 one (bools a bool one), as torch's
    torch.tensor(batch); strings and bytes stay a list; mappings, namedtuples and sequences
    are collated entry by entry (a tuple sample gives a list, as torch's). Sequences of
    unequal lengths raise RuntimeError, other types TypeError, with torch's texts."""
    elem = batch[0]
    kind = type(elem)
    if isinstance(elem, Tensor):
        return _stack(batch, 0)
    if isinstance(elem, np.ndarray):
        return _collate_numpy_array(batch)
    if isinstance(elem, (np.bool_, np.number, np.object_)):
        return _as_tensor(np.asarray(batch))
    if isinstance(elem, float):
        return _tensor(batch, dtype=float64)
    if isinstance(elem, int):
        return _tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({key: default_collate([d[key] for d in batch]) for key in elem})
                return clone
            return kind({key: default_collate([d[key] for d in batch]) for key in elem})
        except TypeError:
            return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return kind(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if not all(len(e) == size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = default_collate(samples)
                return clone
            return kind([default_collate(samples) for samples in transposed])
        except TypeError:
            return [default_collate(samples) for samples in transposed]
    raise TypeError(default_collate_err_msg_format.format(kind))


def get_worker_info():
    """torch.utils.data.get_worker_info: None, as in the main process (fusegrad loads there)."""
    return None


# --------------------------------------------------------------------- the loader
class DataLoader:
    """torch.utils.data.DataLoader: iterate over `dataset` in batches.

    Map-style datasets are read through `sampler` (SequentialSampler, or RandomSampler with
    shuffle=True, which draws from `generator` or the global generator) grouped by
    `batch_sampler` (BatchSampler(sampler, batch_size, drop_last) by default); iterable datasets
    are read in order, `batch_size` samples at a time. Each batch goes through `collate_fn`
    (default_collate; default_convert per sample with batch_size=None). len(loader) is the
    number of batches. Argument conflicts raise torch's ValueErrors.

    Not copied from torch: loading is always in this process. num_workers > 0 warns and runs as
    0; pin_memory, timeout, worker_init_fn, multiprocessing_context, prefetch_factor,
    persistent_workers, pin_memory_device and in_order are accepted and do nothing."""

    _initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if num_workers > 0:
            warnings.warn(f"fusegrad's DataLoader loads in the main process: num_workers={num_workers} runs as "
                          f"num_workers=0", UserWarning, stacklevel=2)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in {False, None}:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._initialized = True

    def __setattr__(self, attr, val) -> None:
        if self._initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                          "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        if self._iterable:
            stream = self._iterate_stream()
            self._draw_base_seed()
            return stream
        # torch's iterator makes the sampler's iterator (a generator: it draws nothing yet),
        # then draws a base seed for its workers from the loader's generator: the shuffle order
        # then comes from the generator's state after that draw, as torch's does
        indices = iter(self._index_sampler)
        self._draw_base_seed()
        return self._iterate_map(indices)

    def _draw_base_seed(self) -> None:
        """torch's `torch.empty((), dtype=int64).random_(generator=loader.generator)`: one 64-bit
        draw (no worker uses it here; drawn so that later draws are torch's)."""
        generator = _generator.chosen(self.generator)
        if generator is None:
            raise TypeError(f"random_(): argument 'generator' must be torch.Generator, not "
                            f"{type(self.generator).__name__}")
        generator.words64(1)

    def _iterate_map(self, indices):
        dataset, collate = self.dataset, self.collate_fn
        for index in indices:
            if self._auto_collation:
                if callable(getattr(dataset, "__getitems__", None)):
                    data = dataset.__getitems__(index)
                else:
                    data = [dataset[i] for i in index]
            else:
                data = dataset[index]
            yield collate(data)

    def _iterate_stream(self):
        it = iter(self.dataset)
        if not self._auto_collation:
            for sample in it:
                yield self.collate_fn(sample)
            return
        while True:
            batch = list(itertools.islice(it, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield self.collate_fn(batch)

    def __len__(self) -> int:
        if self._iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)
