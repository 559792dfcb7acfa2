"""``flow.nn.utils.rnn``: variable-length sequences for the recurrent layers (``PackedSequence``,
``pack_padded_sequence``, ``pad_packed_sequence``, ``pad_sequence``, ...), with PyTorch's signatures.

Note [Packed sequences]
A ``PackedSequence`` stores a batch of sequences sorted by decreasing length, time step
after time step: ``data`` holds, for each step ``t``, the rows of the ``batch_sizes[t]``
sequences still running at ``t`` (so ``batch_sizes`` never increases and ``data`` has
``sum(batch_sizes)`` rows). ``sorted_indices[i]`` is the original position of the i-th
sorted sequence and ``unsorted_indices`` its inverse (both None when the input was already
sorted). ``batch_sizes`` is an int64 CPU tensor of Python-known values: packing and padding
are index computations on the host followed by one differentiable ``index_select``, so
gradients flow from the packed data back to the padded input and vice versa.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

from oneflow_lite import functional as F
from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.functors.creation import tensor as _tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pack_sequence", "pad_packed_sequence",
           "pad_sequence", "unpack_sequence", "unpad_sequence"]


class PackedSequence_(NamedTuple):  # PyTorch's name
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(PackedSequence_):
    """Sequences of different lengths packed time step after time step (Note [Packed sequences]); made by
    ``pack_padded_sequence`` / ``pack_sequence`` and accepted by ``nn.RNN``, ``nn.LSTM`` and ``nn.GRU``."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        if batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                             "created manually. They should be instantiated by functions like pack_sequence and "
                             "pack_padded_sequences in nn.utils.rnn.")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> PackedSequence:
        """The same sequences with ``data`` converted by ``Tensor.to`` (the indices follow its device)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self

        def move(t):
            return None if t is None else t.to(data.device)

        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def cpu(self) -> PackedSequence:
        return self.to("cpu")

    def double(self) -> PackedSequence:
        return self.to(dtype=dt.float64)

    def float(self) -> PackedSequence:
        return self.to(dtype=dt.float32)

    def half(self) -> PackedSequence:
        return self.to(dtype=dt.float16)

    def long(self) -> PackedSequence:
        return self.to(dtype=dt.int64)

    def int(self) -> PackedSequence:
        return self.to(dtype=dt.int32)

    @property
    def is_cuda(self) -> bool:
        return self.data.device.type == "cuda"

    def is_pinned(self) -> bool:
        return False


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The permutation ``q`` with ``q[permutation[i]] == i`` (None for None)."""
    if permutation is None:
        return None
    return F.argsort(permutation)


def _int_list(lengths) -> list:
    values = lengths.tolist() if isinstance(lengths, Tensor) else list(lengths)
    return [int(v) for v in values]


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack ``input`` (T, B, *) (or (B, T, *) with ``batch_first``) holding ``B`` padded sequences of the given
    ``lengths`` (a list or a CPU tensor). With ``enforce_sorted`` the lengths must be decreasing; otherwise the
    sequences are sorted here and ``sorted_indices`` records the order (Note [Packed sequences])."""
    lengths = _int_list(lengths)
    batch_dim = 0 if batch_first else 1
    if input.ndim < 2:
        raise RuntimeError(f"pack_padded_sequence: expected input of at least 2 dimensions (time and batch), got "
                           f"{input.ndim}")
    batch, steps = input.shape[batch_dim], input.shape[1 - batch_dim]
    if len(lengths) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
                           f"(batch_size={batch})")
    sorted_indices = None
    if enforce_sorted:
        if any(a < b for a, b in itertools.pairwise(lengths)):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                               "to sidestep this requirement if you do not need ONNX exportability.")
    else:
        order = sorted(range(batch), key=lambda i: -lengths[i])
        lengths = [lengths[i] for i in order]
        sorted_indices = _tensor(order, dtype=dt.int64, device=input.device)
        input = F.index_select(input, batch_dim, sorted_indices)
    if lengths and lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if lengths and lengths[0] > steps:
        raise RuntimeError(f"pack_padded_sequence: the longest length ({lengths[0]}) is larger than the padded "
                           f"input's time dimension ({steps})")
    batch_sizes = [sum(1 for n in lengths if n > t) for t in range(lengths[0] if lengths else 0)]
    if batch_first:
        input = F.transpose(input, 0, 1)
    flat = F.reshape(input, (steps * batch, *input.shape[2:]))
    rows = [t * batch + b for t, size in enumerate(batch_sizes) for b in range(size)]
    data = F.index_select(flat, 0, _tensor(rows, dtype=dt.int64, device=input.device))
    return PackedSequence(data, _tensor(batch_sizes, dtype=dt.int64), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """The inverse of ``pack_padded_sequence``: ``(padded, lengths)`` with ``padded`` (T, B, *) (or (B, T, *))
    in the original batch order, ``T`` the longest length (or ``total_length``), padding ``padding_value``."""
    data = sequence.data
    batch_sizes = sequence.batch_sizes.tolist()
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {steps}")
        steps = total_length
    batch = batch_sizes[0] if batch_sizes else 0
    pad_row = data.shape[0]
    rows, start = [], 0
    for t in range(steps):
        size = batch_sizes[t] if t < len(batch_sizes) else 0
        rows.extend(start + b if b < size else pad_row for b in range(batch))
        start += size
    padding = F.full((1, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    table = F.cat([data, padding])
    padded = F.index_select(table, 0, _tensor(rows, dtype=dt.int64, device=data.device))
    padded = F.reshape(padded, (steps, batch, *data.shape[1:]))
    if batch_first:
        padded = F.transpose(padded, 0, 1)
    lengths = [sum(1 for size in batch_sizes if size > b) for b in range(batch)]
    if sequence.unsorted_indices is not None:
        padded = F.index_select(padded, 0 if batch_first else 1, sequence.unsorted_indices)
        lengths = [lengths[i] for i in sequence.unsorted_indices.tolist()]
    return padded, _tensor(lengths, dtype=dt.int64)


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack sequences (L_i, *) of different lengths into (T, B, *) (or (B, T, *) with ``batch_first``),
    ``T = max L_i``, filling with ``padding_value`` after each sequence (before it with ``padding_side='left'``)."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = F.unbind(sequences, 0)
    try:
        sequences = tuple(sequences)
    except TypeError:
        raise RuntimeError(f"pad_sequence: Expected iterable for input sequences, but got arg of type: "
                           f"{type(sequences)}") from None
    if not sequences:
        raise RuntimeError("pad_sequence: received an empty list of sequences")
    trailing = tuple(sequences[0].shape[1:])
    for i, seq in enumerate(sequences):
        if tuple(seq.shape[1:]) != trailing:
            raise RuntimeError(f"pad_sequence: sequence {i} has shape {tuple(seq.shape)}; every sequence must have "
                               f"the trailing dimensions {trailing} of sequence 0")
    longest = max(seq.shape[0] for seq in sequences)
    padded = []
    for seq in sequences:
        missing = longest - seq.shape[0]
        if missing:
            fill = F.full((missing, *trailing), padding_value, dtype=seq.dtype, device=seq.device)
            seq = F.cat([seq, fill] if padding_side == "right" else [fill, seq])
        padded.append(seq)
    return F.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False) -> list:
    """The sequences of ``padded_sequences`` (T, B, *) (or (B, T, *)) cut to their ``lengths``."""
    lengths = _int_list(lengths)
    batch_dim = 0 if batch_first else 1
    columns = F.unbind(padded_sequences, batch_dim)
    return [F.narrow(seq, 0, 0, n) for seq, n in zip(columns, lengths)]


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences (L_i, *) (decreasing lengths unless ``enforce_sorted=False``)."""
    lengths = [seq.shape[0] for seq in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    """The list of sequences a ``PackedSequence`` holds, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)

