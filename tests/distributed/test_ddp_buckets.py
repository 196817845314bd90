"""DDP's pieces that need no second process: the bucket assignment against
torch.distributed._compute_bucket_assignment_by_size, and the constructor's refusals."""

from __future__ import annotations

from typing import List, Optional

import pytest
import rustgrad
from rustgrad.nn.parallel import DistributedDataParallel
from rustgrad.nn.parallel.distributed import _compute_bucket_assignment_by_size

torch = pytest.importorskip("torch")
tdist = pytest.importorskip("torch.distributed")

KB = 1024


@pytest.mark.parametrize("numels", [
    [100_000, 300_000, 10, 200_000, 5, 400_000, 70_000],
    [401_408, 512, 262_144, 512, 5_120, 10],
    [1, 2, 3],
    [262_144],
    [262_144, 1],
])
@pytest.mark.parametrize("limits", [[KB * KB, 2 * KB * KB], [KB * KB], [4 * KB], [2 ** 63 - 1]])
@pytest.mark.parametrize("order", [None, "reversed", "shuffled"])
def test_bucket_assignment_like_torch(numels: List[int], limits: List[int],
                                      order: Optional[str]) -> None:
    n = len(numels)
    indices = None if order is None else (
        list(reversed(range(n))) if order == "reversed" else [(3 * i + 1) % n for i in range(n)])
    if indices is not None and len(set(indices)) != n:
        indices = list(reversed(range(n)))
    ours = _compute_bucket_assignment_by_size([rustgrad.zeros(k) for k in numels], limits,
                                              indices)
    args = ([torch.zeros(k) for k in numels], limits, [False] * n)
    theirs = tdist._compute_bucket_assignment_by_size(*args, *([indices] if indices else []))
    assert ours == (theirs[0], theirs[1])


def test_buckets_split_by_dtype_like_torch() -> None:
    sizes = [(300_000, "float32"), (300_000, "float64"), (10, "float32"), (10, "float64")]
    ours = _compute_bucket_assignment_by_size(
        [rustgrad.zeros(k, dtype=getattr(rustgrad, d)) for k, d in sizes], [KB * KB])
    theirs = tdist._compute_bucket_assignment_by_size(
        [torch.zeros(k, dtype=getattr(torch, d)) for k, d in sizes], [KB * KB], [False] * 4)
    assert ours == (theirs[0], theirs[1])


def test_needs_a_process_group_like_torch() -> None:
    import rustgrad.distributed as dist

    assert not dist.is_initialized(), "an earlier test left a process group initialized"
    with pytest.raises(ValueError) as theirs:
        torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError) as ours:
        DistributedDataParallel(rustgrad.nn.Linear(2, 2))
    assert str(ours.value) == str(theirs.value)
