"""Variable-length sequences, as torch.nn.utils.rnn: padding a list of sequences, packing a padded
batch into a PackedSequence (time-major rows of the sequences still running at each step) and
back, composed from differentiable rustgrad ops (slices, cat, stack, index_select)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, List, NamedTuple, Optional, Sequence, Tuple, Union

from ... import _creation, _dtype
from ..._ops.joins import cat, stack
from ..._tensor import Tensor

__all__ = [
    "PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
    "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence",
]


class PackedSequence_(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Optional[Tensor]
    unsorted_indices: Optional[Tensor]


class PackedSequence(PackedSequence_):
    """The data and per-step batch sizes of a packed batch of sequences (made by the pack_*)."""

    def __new__(cls, data: Any, batch_sizes: Optional[Tensor] = None,
                sorted_indices: Optional[Tensor] = None,
                unsorted_indices: Optional[Tensor] = None) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is not None:
            if batch_sizes.device.type != "cpu":
                raise ValueError(
                    "batch_sizes should always be on CPU. Instances of PackedSequence should "
                    "never be created manually. They should be instantiated by functions like "
                    "pack_sequence and pack_padded_sequences in nn.utils.rnn. "
                    "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence"
                )
            return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)
        # PackedSequence((data, batch_sizes), sorted_indices=...)
        assert isinstance(data, (list, tuple)) and len(data) == 2
        return super().__new__(cls, data[0], data[1], sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """data.to(...); the indices follow data's device; batch_sizes stays on the CPU."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        kwargs = {k: v for k, v in kwargs.items() if k not in ("device", "dtype")}
        sorted_indices = (None if self.sorted_indices is None
                          else self.sorted_indices.to(data.device, **kwargs))
        unsorted_indices = (None if self.unsorted_indices is None
                            else self.unsorted_indices.to(data.device, **kwargs))
        return type(self)(data, self.batch_sizes, sorted_indices, unsorted_indices)

    def cpu(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """This packed sequence with its data on the CPU."""
        return self.to("cpu", *args, **kwargs)

    def cuda(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """This packed sequence with its data on a CUDA device."""
        if self.data.device.type == "cuda" and not args and "device" not in kwargs:
            return self
        if args or "device" in kwargs:
            return self.to(*args, **kwargs)
        return self.to("cuda", **kwargs)

    def double(self) -> PackedSequence:
        """data as float64."""
        return self.to(dtype=_dtype.float64)

    def float(self) -> PackedSequence:
        """data as float32."""
        return self.to(dtype=_dtype.float32)

    def half(self) -> PackedSequence:
        """data as float16."""
        return self.to(dtype=_dtype.float16)

    def long(self) -> PackedSequence:
        """data as int64."""
        return self.to(dtype=_dtype.int64)

    def int(self) -> PackedSequence:
        """data as int32."""
        return self.to(dtype=_dtype.int32)

    @property
    def is_cuda(self) -> bool:
        """Whether data is on a CUDA device."""
        return self.data.device.type == "cuda"


def invert_permutation(permutation: Optional[Tensor]) -> Optional[Tensor]:
    """The inverse of a permutation of 0..n-1 (None stays None)."""
    if permutation is None:
        return None
    positions = _creation.arange(permutation.numel(), device=permutation.device)
    return _creation.empty_like(permutation).scatter_(0, permutation, positions)


def _batch_sizes(lengths: List[int]) -> List[int]:
    """How many of the (decreasingly sorted) sequences are still running at each step."""
    return [sum(1 for n in lengths if n > t) for t in range(lengths[0] if lengths else 0)]


def pack_padded_sequence(input: Tensor, lengths: Union[Tensor, List[int]],
                         batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Packs a padded batch of variable-length sequences into a :class:`PackedSequence`, which
    the recurrent layers run over without computing the padded steps.

    Args:
        input (Tensor): ``(T, B, *)``, or ``(B, T, *)`` with ``batch_first``.
        lengths (Tensor or list of int): the length of each sequence.
        batch_first (bool): whether ``input`` is batch first. Default: ``False``.
        enforce_sorted (bool): require the lengths in decreasing order; otherwise the batch
            is sorted here and unsorted on unpacking. Default: ``True``.

    Example::

        >>> from rustgrad.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
        >>> packed = pack_padded_sequence(torch.ones(3, 2, 4), [3, 1])
        >>> packed.batch_sizes
        tensor([2, 1, 1])
        >>> padded, lengths = pad_packed_sequence(packed)
        >>> padded.shape, lengths
        (torch.Size([3, 2, 4]), tensor([3, 1]))
    """
    if isinstance(lengths, Tensor):
        lengths = lengths.to(dtype=_dtype.int64, device="cpu")
    else:
        lengths = _creation.as_tensor(lengths, dtype=_dtype.int64, device="cpu")
    sorted_indices = None
    if not enforce_sorted:
        lengths, sorted_indices = lengths.sort(descending=True)
        sorted_indices = sorted_indices.to(input.device)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    sizes = [int(n) for n in lengths.tolist()]
    if batch_first:
        input = input.transpose(0, 1)
    if len(sizes) != input.size(1):
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {len(sizes)} "
            f"(batch_size={input.size(1)})"
        )
    if any(n <= 0 for n in sizes):
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in 'lengths' "
            "that is <= 0"
        )
    if any(a < b for a, b in zip(sizes, sizes[1:])):
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
            "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
            "to sidestep this requirement if you do not need ONNX exportability."
        )
    if sizes[0] > input.size(0):
        raise RuntimeError(
            f"a sequence length {sizes[0]} exceeds the padded length {input.size(0)}"
        )
    batch_sizes = _batch_sizes(sizes)
    data = cat([input[t, :bs] for t, bs in enumerate(batch_sizes)], 0)
    bs_tensor = _creation.tensor(batch_sizes, dtype=_dtype.int64)
    return PackedSequence(data, bs_tensor, sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0,
                        total_length: Optional[int] = None) -> Tuple[Tensor, Tensor]:
    """Unpacks a :class:`PackedSequence` into a padded batch; the reverse of
    :func:`pack_padded_sequence`.

    Args:
        sequence (PackedSequence): the packed batch.
        batch_first (bool): return ``(B, T, *)`` instead of ``(T, B, *)``. Default: ``False``.
        padding_value (float): the value of the padded positions. Default: ``0.0``.
        total_length (int, optional): pad to this length instead of the longest sequence's.

    Returns:
        ``(padded, lengths)``, the lengths an int64 CPU tensor.
    """
    batch_sizes = [int(b) for b in sequence.batch_sizes.tolist()]
    max_seq_length = len(batch_sizes)
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{max_seq_length}"
            )
        max_seq_length = total_length
    data = sequence.data
    batch = batch_sizes[0]
    trailing = tuple(data.shape[1:])

    def padding(rows: int) -> Tensor:
        return _creation.full((rows, *trailing), padding_value, dtype=data.dtype,
                              device=data.device)

    steps: List[Tensor] = []
    offset = 0
    for bs in batch_sizes:
        rows = data[offset:offset + bs]
        offset += bs
        steps.append(rows if bs == batch else cat([rows, padding(batch - bs)], 0))
    steps.extend(padding(batch) for _ in range(max_seq_length - len(batch_sizes)))
    padded = stack(steps, 1 if batch_first else 0)
    lengths = _creation.tensor([sum(1 for bs in batch_sizes if bs > i) for i in range(batch)],
                               dtype=_dtype.int64)
    unsorted = sequence.unsorted_indices
    if unsorted is not None:
        padded = padded.index_select(0 if batch_first else 1, unsorted)
        lengths = lengths[unsorted.cpu()]
    return padded, lengths


def pad_sequence(sequences: Union[Tensor, Sequence[Tensor]], batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    """Stacks sequences of different lengths into one tensor, padding the shorter ones.

    Args:
        sequences (list of Tensor): tensors ``(L_i, *)`` with the same trailing shape.
        batch_first (bool): return ``(B, T, *)`` instead of ``(T, B, *)``. Default: ``False``.
        padding_value (float): the value of the padded positions. Default: ``0.0``.
        padding_side (str): ``'right'`` or ``'left'``. Default: ``'right'``.

    Example::

        >>> from rustgrad.nn.utils.rnn import pad_sequence
        >>> pad_sequence([torch.ones(3), torch.full((1,), 2.0)], batch_first=True)
        tensor([[1., 1., 1.],
                [2., 0., 0.]])
    """
    if not isinstance(sequences, Iterable):
        raise RuntimeError(
            "pad_sequence: Expected iterable for input sequences, but got arg of type: "
            f"{type(sequences)}"
        )
    seqs = tuple(sequences)
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(
            f"Expected padding_side to be one of left or right, but got {padding_side}."
        )
    max_len = max(s.size(0) for s in seqs)
    first = seqs[0]
    shape = ((len(seqs), max_len) if batch_first else (max_len, len(seqs))) + tuple(
        first.shape[1:])
    out = _creation.full(shape, padding_value, dtype=first.dtype, device=first.device)
    # writing each sequence into the padded block records CopySlices, as torch's does
    for i, s in enumerate(seqs):
        n = s.size(0)
        rows = slice(0, n) if padding_side == "right" else slice(max_len - n, max_len)
        if batch_first:
            out[i, rows] = s
        else:
            out[rows, i] = s
    return out


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor,
                   batch_first: bool = False) -> List[Tensor]:
    """Splits a padded batch back into its sequences, cut to their lengths."""
    if not batch_first:
        # torch transposes the caller's tensor in place here; rustgrad has no transpose_
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:int(n)] for seq, n in zip(padded_sequences, lengths.tolist())]


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Packs a list of sequences (longest first unless enforce_sorted=False)."""
    lengths = _creation.as_tensor([v.size(0) for v in sequences], dtype=_dtype.int64)
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> List[Tensor]:
    """The list of sequences a PackedSequence holds, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
