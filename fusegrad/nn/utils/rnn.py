"""torch.nn.utils.rnn's padding helpers: `pad_sequence` and `unpad_sequence`.

pad_sequence is torch's composition: a tensor full of the padding value, into which each
sequence is copied through a select and a narrow of it (its node a CopySlices, its dtype the
first sequence's). PackedSequence (pack_padded_sequence and kin) is not provided: fusegrad's
RNNs take padded batches only.
"""
from __future__ import annotations

import fusegrad as fg
from fusegrad.tracer.tensor import Tensor

__all__ = ["pad_sequence", "unpad_sequence"]


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
