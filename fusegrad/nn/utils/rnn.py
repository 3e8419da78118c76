"""torch.nn.utils.rnn: `pad_sequence`, `unpad_sequence` and packed sequences (`PackedSequence`,
`pack_padded_sequence`, `pad_packed_sequence`, `pack_sequence`, `unpack_sequence`,
`invert_permutation`).

pad_sequence is torch's composition: a tensor full of the padding value, into which each
sequence is copied through a select and a narrow of it (its node a CopySlices, its dtype the
first sequence's).

A PackedSequence holds the valid steps of a batch of sequences time-major: step t of every
sequence longer than t, the longest first, so `data` is (sum of lengths, *) and `batch_sizes[t]`
(int64, on the CPU) counts the sequences still running at step t. The lengths and batch sizes
are read as Python ints (torch reads them on the CPU too): packing is a gather of the
padded input at index arrays worked out from them, one node named as torch's
(PackPaddedSequenceBackward0, whose backward scatters the gradient back into zeros of the
input's shape), and unpacking is torch's composite of `new_full` and copies into slices of it
(CopySlices). Inside fg.compile, lengths given as a Python list are constants, and the values of
a lengths tensor passed to the call are read without a break; lengths computed in the call
(also the sorted lengths of enforce_sorted=False, even from a list) are a value read, a graph
break (see ARCHITECTURE.md, "Reading a value is a graph break"). Either way the results and
gradients are eager's.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

import fusegrad as fg
from fusegrad.ir.types import TORCH_SCALAR_NAMES
from fusegrad.tracer.dispatch import apply_op
from fusegrad.tracer.tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]


class PackedSequence_(NamedTuple):
    """PackedSequence's fields, as torch's namedtuple base of the same name."""

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


def _bind(optional, fn):
    return None if optional is None else fn(optional)


class PackedSequence(PackedSequence_):
    """A packed batch of variable-length sequences: (data, batch_sizes, sorted_indices,
    unsorted_indices), a namedtuple as torch's. Made by pack_padded_sequence / pack_sequence
    (not by hand); the RNN modules take one as input and return one. `sorted_indices` orders
    the original batch by decreasing length, `unsorted_indices` is its inverse (None for a batch
    packed already sorted).

    PackedSequence(data, batch_sizes=None, sorted_indices=None, unsorted_indices=None), or
    PackedSequence((data, batch_sizes), sorted_indices=...), as torch's constructor."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        return super().__new__(cls, *_packed_sequence_init_args(data, batch_sizes, sorted_indices,
                                                                 unsorted_indices))

    def pin_memory(self):
        """The same sequence with its tensors' pinned copies (the CPU only: as Tensor.pin_memory)."""
        return type(self)(self.data.pin_memory(), self.batch_sizes, _bind(self.sorted_indices, lambda t: t.pin_memory()),
                          _bind(self.unsorted_indices, lambda t: t.pin_memory()))

    def to(self, *args, **kwargs):
        """`data.to(*args, **kwargs)`; self when that returns data itself, else a new sequence whose
        index tensors are moved to data's device (batch_sizes stays as it is, on the CPU)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        sorted_indices = _bind(self.sorted_indices, lambda t: t.to(data.device))
        unsorted_indices = _bind(self.unsorted_indices, lambda t: t.to(data.device))
        return type(self)(data, self.batch_sizes, sorted_indices, unsorted_indices)

    def cuda(self, *args, **kwargs):
        """`to` a CUDA device, as torch's: fusegrad has none, so this raises Tensor.to's error."""
        ex = fg.tensor((), dtype=self.data.dtype).to(*args, **kwargs)
        if ex.is_cuda:
            return self.to(*args, **kwargs)
        kwargs["device"] = "cuda"
        return self.to(*args, **kwargs)

    def cpu(self, *args, **kwargs):
        """`to` the CPU (self when already there and nothing else changes)."""
        ex = fg.tensor((), dtype=self.data.dtype).to(*args, **kwargs)
        if ex.device.type == "cpu":
            return self.to(*args, **kwargs)
        kwargs["device"] = "cpu"
        return self.to(*args, **kwargs)

    def double(self):
        """data as float64."""
        return self.to(dtype=fg.float64)

    def float(self):
        """data as float32."""
        return self.to(dtype=fg.float32)

    def long(self):
        """data as int64."""
        return self.to(dtype=fg.int64)

    @property
    def is_cuda(self) -> bool:
        """Whether data is on a GPU (never, here)."""
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        """Whether data is in pinned memory."""
        return self.data.is_pinned()


def _packed_sequence_init_args(data, batch_sizes=None, sorted_indices=None, unsorted_indices=None) -> tuple:
    """torch's constructor arguments: unsorted_indices defaults to the inverse of sorted_indices,
    and (data, batch_sizes) may come as one pair."""
    if unsorted_indices is None:
        unsorted_indices = invert_permutation(sorted_indices)
    if batch_sizes is not None:
        if batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                             "created manually. They should be instantiated by functions like pack_sequence and "
                             "pack_padded_sequences in nn.utils.rnn. "
                             "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return data, batch_sizes, sorted_indices, unsorted_indices
    if not (isinstance(data, (list, tuple)) and len(data) == 2):
        raise AssertionError("Expected data to be a list or tuple of length 2")
    return data[0], data[1], sorted_indices, unsorted_indices


def invert_permutation(permutation):
    """The inverse of the 1-d index tensor `permutation` (None for None): out[permutation[i]] = i."""
    if permutation is None:
        return None
    output = fg.empty_like(permutation)
    output.scatter_(0, permutation, fg.arange(0, permutation.numel()))
    return output


def _check_long_tensor(tensor, dims: int) -> None:
    """ATen's checkLongTensor (its text names the argument 'lengths' for batch_sizes too)."""
    if dims != 1 or tensor.dtype != fg.int64:
        kind = TORCH_SCALAR_NAMES[tensor.dtype.name]
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {dims}D cpu {kind} tensor")


def _pack_padded(input, lengths, batch_first: bool):
    """ATen's _pack_padded_sequence: (data, batch_sizes) of a sorted batch, with its checks in
    its order. Lengths beyond the input's time steps pack the steps there are, and still count
    in batch_sizes (torch's slices clamp, its batch sizes do not)."""
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if batch_first:
        input.size(1)       # (torch transposes here: a 1-d input raises its IndexError before any check)
    _check_long_tensor(lengths, lengths.dim())
    time_dim, batch_dim = (1, 0) if batch_first else (0, 1)
    batch_size = input.size(batch_dim)
    steps = input.size(time_dim)
    values = [int(v) for v in lengths.tolist()]
    if len(values) != batch_size:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(values)} "
                           f"(batch_size={batch_size})")
    if values[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if any(later > earlier for earlier, later in zip(values, values[1:])):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                           "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                           "sidestep this requirement if you do not need ONNX exportability.")
    batch_sizes = [sum(1 for v in values if v > t) for t in range(values[0])]
    # time-major: step t of the first batch_sizes[t] sequences (torch's blocks, concatenated)
    times = np.concatenate([np.full(n, t, np.int64) for t, n in enumerate(batch_sizes[:steps])])
    rows = np.concatenate([np.arange(n, dtype=np.int64) for n in batch_sizes[:steps]])
    index = (rows, times) if batch_first else (times, rows)
    data = apply_op("index_take", [input, *index], {"dims": (0, 1)}, "PackPaddedSequenceBackward0")
    return data, fg.tensor(batch_sizes, dtype=fg.int64)


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch (T, B, *), or (B, T, *) with `batch_first`, of sequences of the given
    `lengths` (a list or a tensor, read as int64) into a PackedSequence. With `enforce_sorted`
    the lengths must be decreasing (torch's RuntimeError otherwise); without, the batch is
    sorted first (stably, longest first) and the permutation kept in sorted_indices."""
    if not isinstance(lengths, Tensor):
        lengths = fg.as_tensor(lengths, dtype=fg.int64)
    else:
        lengths = lengths.to(dtype=fg.int64)
    if enforce_sorted:
        sorted_indices = None
    else:
        lengths, sorted_indices = fg.sort(lengths, descending=True)
        sorted_indices = sorted_indices.to(input.device)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    data, batch_sizes = _pack_padded(input, lengths, batch_first)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple:
    """The inverse of pack_padded_sequence: (padded (T, B, *) or (B, T, *), lengths int64), in the
    batch's original order; T is the longest length, or `total_length` (which may not be less:
    torch's ValueError)."""
    max_seq_length = sequence.batch_sizes.size(0)
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, but "
                             f"got total_length={total_length} and max sequence length being {max_seq_length}")
        max_seq_length = total_length
    padded_output, lengths = _pad_packed(sequence.data, sequence.batch_sizes, batch_first, padding_value,
                                         max_seq_length)
    unsorted_indices = sequence.unsorted_indices
    if unsorted_indices is not None:
        batch_dim = 0 if batch_first else 1
        return padded_output.index_select(batch_dim, unsorted_indices), lengths[unsorted_indices.cpu()]
    return padded_output, lengths


def _pad_packed(data, batch_sizes_t, batch_first: bool, padding_value, total_length: int) -> tuple:
    """ATen's _pad_packed_sequence: a tensor full of padding_value, each run of steps with one
    batch size copied into its block (narrows of it: CopySlices), and the lengths."""
    _check_long_tensor(batch_sizes_t, batch_sizes_t.dim())
    batch_sizes = [int(v) for v in batch_sizes_t.tolist()]
    max_batch_size = batch_sizes[0]
    steps = len(batch_sizes)
    output = data.new_full((total_length, max_batch_size, *data.shape[1:]), padding_value)
    lengths = [0] * max_batch_size
    offset, prev_batch_size, prev_i = 0, max_batch_size, 0
    for i in range(steps + 1):
        batch_size = batch_sizes[i] if i != steps else 0
        if batch_size != prev_batch_size:
            count = prev_batch_size * (i - prev_i)
            block = data.narrow(0, offset, count).view(i - prev_i, prev_batch_size, *data.shape[1:])
            output.narrow(0, prev_i, i - prev_i).narrow(1, 0, prev_batch_size).copy_(block)
            offset += count
            prev_i = i
        for j in range(batch_size, prev_batch_size):
            lengths[j] = i
        prev_batch_size = batch_size
    if batch_first:
        output = output.transpose(0, 1)
    return output, fg.tensor(lengths, dtype=fg.int64)


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack sequences of lengths L_i (each (L_i, *)) into (max L, B, *), or (B, max L, *) with
    `batch_first`, padded with `padding_value` after each sequence (before it, with
    padding_side="left")."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    sequences = tuple(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.shape[0] for s in sequences)
    trailing = tuple(sequences[0].shape[1:])
    shape = (len(sequences), longest, *trailing) if batch_first else (longest, len(sequences), *trailing)
    out = fg.full(shape, padding_value, dtype=sequences[0].dtype)
    for i, sequence in enumerate(sequences):
        length = sequence.shape[0]
        start = longest - length if padding_side == "left" else 0
        out.select(0 if batch_first else 1, i).narrow(0, start, length).copy_(sequence)
    return out


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor, batch_first: bool = False) -> list:
    """The sequences pad_sequence stacked, each cut to its length (an index by a mask, as torch's)."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    positions = fg.arange(padded_sequences.shape[1])
    return [sequence[positions < length] for sequence, length in zip(padded_sequences, lengths)]


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences (each (L_i, *)): pad_sequence then pack_padded_sequence."""
    lengths = fg.as_tensor([v.size(0) for v in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    """The list of sequences a PackedSequence holds, in their original order."""
    padded_sequences, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded_sequences, lengths, batch_first=True)
