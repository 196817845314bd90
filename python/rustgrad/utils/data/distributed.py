"""DistributedSampler, as torch.utils.data.distributed: each of `num_replicas` processes reads its
own interleaved share of the indices (padded by repeating the first indices, or trimmed with
drop_last, so every share has the same length); set_epoch reshuffles."""

from __future__ import annotations

import math
from typing import Any, Iterator, Optional, TypeVar

import rustgrad

from .dataset import Dataset
from .sampler import Sampler, _seeded_generator

__all__ = ["DistributedSampler"]

_T_co = TypeVar("_T_co", covariant=True)


def _dist() -> Any:
    """rustgrad.distributed where it exists and is available, else torch's RuntimeError."""
    try:
        from ... import distributed as dist  # import-time cost: deferred to the first sampler
    except ImportError:
        dist = None
    if dist is None or not dist.is_available():
        raise RuntimeError("Requires distributed package to be available")
    return dist


class DistributedSampler(Sampler[_T_co]):
    """The indices of `dataset` that replica `rank` of `num_replicas` reads, shuffled by
    `seed + epoch` when `shuffle`."""

    def __init__(self, dataset: Dataset, num_replicas: Optional[int] = None,
                 rank: Optional[int] = None, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False) -> None:
        if num_replicas is None:
            num_replicas = _dist().get_world_size()
        if rank is None:
            rank = _dist().get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(self.dataset)  # type: ignore[arg-type]
        if self.drop_last and n % self.num_replicas != 0:
            # drop the tail so that every replica gets the same number of samples
            self.num_samples = math.ceil((n - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[_T_co]:
        n = len(self.dataset)  # type: ignore[arg-type]
        if self.shuffle:
            # the same seed on every replica, so they all see the same permutation
            g = _seeded_generator(self.seed + self.epoch)
            indices = rustgrad.randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        assert len(indices) == self.total_size
        indices = indices[self.rank:self.total_size:self.num_replicas]
        assert len(indices) == self.num_samples
        return iter(indices)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch, which (with seed) picks this pass's shuffle on every replica."""
        self.epoch = epoch
