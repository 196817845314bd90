"""Datasets, as torch.utils.data.dataset: map-style `Dataset` (index -> sample) and
`IterableDataset` (a stream of samples), with TensorDataset, StackDataset, ConcatDataset,
ChainDataset, Subset and random_split."""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from typing import (
    Any,
    Dict,
    Generic,
    Iterable,
    Iterator,
    List,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
)

import rustgrad

__all__ = [
    "ChainDataset",
    "ConcatDataset",
    "Dataset",
    "IterableDataset",
    "StackDataset",
    "Subset",
    "TensorDataset",
    "random_split",
]

_T = TypeVar("_T")
_T_co = TypeVar("_T_co", covariant=True)


class Dataset(Generic[_T_co]):
    """A map from keys (usually 0 .. len - 1) to samples: subclasses define __getitem__ and
    usually __len__ (and may define __getitems__ to fetch a whole batch at once)."""

    def __getitem__(self, index: Any) -> _T_co:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset[_T_co]) -> ConcatDataset[_T_co]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[_T_co], Iterable[_T_co]):
    """A stream of samples: subclasses define __iter__. Under a DataLoader with workers each
    worker iterates its own copy (see get_worker_info to split the work)."""

    # __iter__ stays abstract (Iterable's): a subclass without one cannot be instantiated

    def __add__(self, other: Dataset[_T_co]) -> ChainDataset:  # type: ignore[override]
        return ChainDataset([self, other])


class TensorDataset(Dataset[Tuple[Any, ...]]):
    """Samples are the rows of the given tensors: item i is (t[i] for each tensor)."""

    tensors: Tuple[Any, ...]

    def __init__(self, *tensors: Any) -> None:
        assert all(tensors[0].size(0) == t.size(0) for t in tensors), \
            "Size mismatch between tensors"
        self.tensors = tensors

    def __getitem__(self, index: Any) -> Tuple[Any, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class StackDataset(Dataset[Any]):
    """Datasets of equal length side by side: item i is a tuple (positional datasets) or a dict
    (keyword datasets) of their items i."""

    datasets: Union[tuple, dict]

    def __init__(self, *args: Dataset[Any], **kwargs: Dataset[Any]) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or"
                             "``dict``- (via ``kwargs``) like input/output, but both types "
                             "are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        parts = list(args) if args else list(kwargs.values())
        self._length = len(parts[0])  # type: ignore[arg-type]
        if any(self._length != len(d) for d in parts):  # type: ignore[arg-type]
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else kwargs

    def __getitem__(self, index: Any) -> Any:
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list) -> list:
        def column(d: Any) -> list:
            if callable(getattr(d, "__getitems__", None)):
                items = d.__getitems__(indices)
                if len(items) != len(indices):
                    raise ValueError("Nested dataset's output size mismatch."
                                     f" Expected {len(indices)}, got {len(items)}")
                return list(items)
            return [d[i] for i in indices]

        if isinstance(self.datasets, dict):
            cols: Dict[Any, list] = {k: column(d) for k, d in self.datasets.items()}
            return [{k: cols[k][j] for k in cols} for j in range(len(indices))]
        tcols = [column(d) for d in self.datasets]
        return [tuple(c[j] for c in tcols) for j in range(len(indices))]

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset[_T_co]):
    """Map-style datasets one after another: indices run through the first, then the next."""

    datasets: List[Dataset[_T_co]]
    cumulative_sizes: List[int]

    @staticmethod
    def cumsum(sequence: Iterable[Any]) -> List[int]:
        """The running totals of the lengths of `sequence`'s items."""
        return list(itertools.accumulate(len(e) for e in sequence))

    def __init__(self, datasets: Iterable[Dataset[Any]]) -> None:
        super().__init__()
        self.datasets = list(datasets)
        assert len(self.datasets) > 0, "datasets should not be an empty iterable"
        for d in self.datasets:
            assert not isinstance(d, IterableDataset), \
                "ConcatDataset does not support IterableDataset"
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> _T_co:
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """Iterable datasets one after another, chained lazily."""

    def __init__(self, datasets: Iterable[Dataset[Any]]) -> None:
        super().__init__()
        self.datasets = datasets

    def __iter__(self) -> Iterator[Any]:
        for d in self.datasets:
            assert isinstance(d, IterableDataset), "ChainDataset only supports IterableDataset"
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            assert isinstance(d, IterableDataset), "ChainDataset only supports IterableDataset"
            total += len(d)  # type: ignore[arg-type]
        return total


class Subset(Dataset[_T_co]):
    """The items of `dataset` at `indices`, in that order."""

    dataset: Dataset[_T_co]
    indices: Sequence[int]

    def __init__(self, dataset: Dataset[_T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: List[int]) -> List[_T_co]:
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])  # type: ignore
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


def _lengths_of_fractions(n: int, fractions: Sequence[float]) -> List[int]:
    """floor(n * f) each, then the remainder handed out one by one from the first split."""
    lengths = []
    for i, frac in enumerate(fractions):
        if frac < 0 or frac > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        lengths.append(int(math.floor(n * frac)))
    for i in range(n - sum(lengths)):
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warnings.warn(f"Length of split at index {i} is 0. "
                          f"This might result in an empty dataset.", stacklevel=3)
    return lengths


def random_split(dataset: Dataset[_T], lengths: Sequence[Union[int, float]],
                 generator: Optional[Any] = None) -> List[Subset[_T]]:
    """Splits `dataset` at random into non-overlapping Subsets of the given lengths, or of the
    given fractions of its length (summing to 1)."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _lengths_of_fractions(len(dataset), lengths)  # type: ignore[arg-type]
    if sum(lengths) != len(dataset):  # type: ignore[arg-type]
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = rustgrad.randperm(sum(lengths), generator=generator).tolist()  # type: ignore
    out = []
    for end, length in zip(itertools.accumulate(lengths), lengths):
        out.append(Subset(dataset, indices[end - length:end]))  # type: ignore[operator]
    return out
