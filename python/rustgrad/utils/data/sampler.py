"""Samplers, as torch.utils.data.sampler: iterables of dataset indices (or of index lists, for
BatchSampler). Random orders come from rustgrad's generators (`rustgrad.randperm`,
`rustgrad.randint`, `rustgrad.rand` with `generator=`), so `manual_seed` or an explicit
`rustgrad.Generator` makes them reproducible; they are not torch's numbers (another RNG)."""

from __future__ import annotations

import itertools
import warnings
from typing import Any, Generic, Iterable, Iterator, List, Optional, Sequence, Sized, TypeVar, Union

import numpy as np

import rustgrad

__all__ = [
    "BatchSampler",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
]

_T_co = TypeVar("_T_co", covariant=True)

_INT64_MAX = 2**63 - 1


def _draw_seed(generator: Any = None) -> int:
    """A fresh 63-bit seed drawn from `generator` (rustgrad's default one when None)."""
    return int(rustgrad.randint(0, _INT64_MAX, (), dtype=rustgrad.int64,
                                generator=generator).item())


def _seeded_generator(seed: int) -> Any:
    """A new rustgrad.Generator seeded with `seed`."""
    g = rustgrad.Generator()
    g.manual_seed(seed)
    return g


class Sampler(Generic[_T_co]):
    """Base class of samplers: an iterable of indices (or of lists of them), with an optional
    __len__."""

    def __init__(self, data_source: Optional[Sized] = None) -> None:
        if data_source is not None:
            warnings.warn(
                "`data_source` argument is not used and will be removed in 2.2.0."
                "You may still have custom implementation that utilizes it.", stacklevel=2)

    def __iter__(self) -> Iterator[_T_co]:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """Indices 0 .. len(data_source) - 1 in order."""

    data_source: Sized

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """Indices in a random order (a fresh permutation per pass), or `num_samples` indices drawn
    with replacement."""

    data_source: Sized
    replacement: bool

    def __init__(self, data_source: Sized, replacement: bool = False,
                 num_samples: Optional[int] = None, generator: Any = None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError("replacement should be a boolean value, but got "
                            f"replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        """How many indices one pass yields (len(data_source) unless given)."""
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        if self.generator is None:
            # a private generator seeded from the global one: one draw per pass, as torch
            generator = _seeded_generator(_draw_seed())
        else:
            generator = self.generator
        if self.replacement:
            # in blocks of 32, as torch draws them
            for _ in range(self.num_samples // 32):
                yield from rustgrad.randint(0, n, (32,), dtype=rustgrad.int64,
                                            generator=generator).tolist()
            yield from rustgrad.randint(0, n, (self.num_samples % 32,), dtype=rustgrad.int64,
                                        generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from rustgrad.randperm(n, generator=generator).tolist()
            yield from rustgrad.randperm(n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given indices in a random order, without replacement."""

    indices: Sequence[int]

    def __init__(self, indices: Sequence[int], generator: Any = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in rustgrad.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


def _check_weights(w: np.ndarray, num_samples: int, replacement: bool) -> None:
    """torch.multinomial's errors for a 1-d weight vector (its wording differs by replacement)."""
    if not replacement:
        if not np.all(np.isfinite(w) & (w >= 0)):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if num_samples > w.shape[0]:
            raise RuntimeError(
                "cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    elif np.any(np.isnan(w) | (w < 0)):
        raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0)")
    elif np.any(np.isinf(w)):
        raise RuntimeError(
            "invalid multinomial distribution (encountering probability entry = infinity or NaN)")
    if not w.sum() > 0:
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")


def _multinomial(weights: Any, num_samples: int, replacement: bool, generator: Any) -> List[int]:
    """Indices drawn with probabilities proportional to a 1-d float64 `weights`, with torch's
    multinomial errors; the randomness comes from rustgrad's generator."""
    w = np.asarray(weights.tolist(), dtype=np.float64)
    _check_weights(w, num_samples, replacement)
    if hasattr(rustgrad, "multinomial"):
        return rustgrad.multinomial(weights, num_samples, replacement,
                                    generator=generator).tolist()
    n = w.shape[0]
    u = np.asarray(rustgrad.rand(num_samples if replacement else n, dtype=rustgrad.float64,
                                 generator=generator).tolist(), dtype=np.float64)
    if replacement:
        # inverse CDF: zero-weight indices own an empty interval and are never drawn
        idx = np.searchsorted(np.cumsum(w), u * w.sum(), side="right")
        return np.minimum(idx, n - 1).tolist()
    # exponential race: the k largest w / E (E ~ Exp(1)) are a weighted draw without replacement;
    # zero weights come last, in index order, as torch's
    e = np.maximum(-np.log1p(-u), np.finfo(np.float64).tiny)
    return np.argsort(-(w / e), kind="stable")[:num_samples].tolist()


class WeightedRandomSampler(Sampler[int]):
    """`num_samples` indices of 0 .. len(weights) - 1 drawn with probabilities proportional to
    `weights`."""

    weights: Any
    num_samples: int
    replacement: bool

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Any = None) -> None:
        if (not isinstance(num_samples, int) or isinstance(num_samples, bool)
                or num_samples <= 0):
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError("replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        weights_tensor = rustgrad.as_tensor(weights, dtype=rustgrad.float64)
        if len(weights_tensor.shape) != 1:
            raise ValueError("weights should be a 1d sequence but given "
                             f"weights have shape {tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        yield from _multinomial(self.weights, self.num_samples, self.replacement, self.generator)

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[List[int]]):
    """Groups the indices of `sampler` into lists of `batch_size` (the last one shorter unless
    `drop_last`)."""

    def __init__(self, sampler: Union[Sampler[int], Iterable[int]], batch_size: int,
                 drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError("batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[List[int]]:
        it = iter(self.sampler)
        while True:
            batch = list(itertools.islice(it, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        if self.drop_last:
            return n // self.batch_size
        return (n + self.batch_size - 1) // self.batch_size
