"""DistributedSampler against torch's: the same index lists for every replica, epoch, seed,
shuffle and drop_last (num_replicas and rank given, so no process group is needed).

rustgrad's random streams are its own (NumPy's PCG64), so torch's sampler is given rustgrad's
permutation for the same seed: what is compared is everything the sampler does with it
(seed + epoch, padding, trimming, interleaving)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import rustgrad
from rustgrad.utils.data import TensorDataset
from rustgrad.utils.data.distributed import DistributedSampler

torch = pytest.importorskip("torch")
from torch.utils.data.distributed import DistributedSampler as TorchSampler  # noqa: E402


class Sized:
    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> Any:
        return i


@pytest.mark.parametrize("n,replicas", [(10, 2), (11, 2), (7, 3), (2, 4), (1, 5), (100, 8)])
@pytest.mark.parametrize("shuffle,drop_last", list(itertools.product([True, False], repeat=2)))
def test_indices_like_torch(n: int, replicas: int, shuffle: bool, drop_last: bool,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    def rustgrad_randperm(size: int, generator: Any) -> Any:
        g = rustgrad.Generator()
        g.manual_seed(generator.initial_seed())
        return torch.tensor(rustgrad.randperm(size, generator=g).tolist())

    monkeypatch.setattr(torch, "randperm", rustgrad_randperm)
    for seed, epoch in [(0, 0), (0, 3), (17, 1)]:
        for rank in range(replicas):
            ours = DistributedSampler(Sized(n), num_replicas=replicas, rank=rank,
                                      shuffle=shuffle, seed=seed, drop_last=drop_last)
            theirs = TorchSampler(Sized(n), num_replicas=replicas, rank=rank,
                                  shuffle=shuffle, seed=seed, drop_last=drop_last)
            ours.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs), (seed, epoch, rank)
            assert len(ours) == len(theirs)
            assert (ours.num_samples, ours.total_size) == (theirs.num_samples,
                                                             theirs.total_size)


def test_epochs_reshuffle_and_shares_cover_the_data() -> None:
    ds = TensorDataset(torch.arange(12))  # any sized dataset will do
    shares = [list(DistributedSampler(ds, num_replicas=3, rank=r, seed=1)) for r in range(3)]
    assert sorted(i for s in shares for i in s) == list(range(12))
    s = DistributedSampler(ds, num_replicas=3, rank=0, seed=1)
    first = list(s)
    assert list(s) == first  # no set_epoch: the same order again
    s.set_epoch(1)
    assert list(s) != first


@pytest.mark.parametrize("rank", [-1, 2])
def test_invalid_rank_like_torch(rank: int) -> None:
    with pytest.raises(ValueError) as theirs:
        TorchSampler(Sized(4), num_replicas=2, rank=rank)
    with pytest.raises(ValueError) as ours:
        DistributedSampler(Sized(4), num_replicas=2, rank=rank)
    assert str(ours.value) == str(theirs.value)
