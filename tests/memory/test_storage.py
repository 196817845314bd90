"""The Rust storage accounting (rustgrad.memory): training loops stay flat, detach never copies."""

from __future__ import annotations

import gc

import rustgrad as rg
from rustgrad import memory


def _train(iterations, on_iteration):
    rg.manual_seed(0)
    x, y = rg.randn(16, 4), rg.randn(16, 1)
    w = rg.randn(4, 1, requires_grad=True)
    losses = []
    for i in range(iterations):
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        with rg.no_grad():
            w -= 0.05 * w.grad
        w.grad = None
        losses.append(loss.item())
        on_iteration(i)
    return losses


def test_memory_training_loop_live_storages_stay_flat():
    gc.collect()
    snapshots = {}

    def snap(i):
        if i in (9, 999):
            snapshots[i] = (memory.live_storages(), memory.live_bytes())

    losses = _train(1000, snap)

    assert snapshots[999] == snapshots[9]
    assert losses[-1] < losses[0]  # the loop did train


def test_memory_training_loop_frees_everything_afterwards():
    gc.collect()
    before = memory.stats()

    _train(50, lambda i: None)
    gc.collect()

    assert memory.stats() == before


def test_memory_detach_never_copies():
    a = rg.randn(1000)
    n0, b0 = memory.live_storages(), memory.live_bytes()

    d = a.detach()

    assert (memory.live_storages(), memory.live_bytes()) == (n0, b0)
    assert d._storage_id() == a._storage_id()
    assert d.data_ptr() == a.data_ptr()


def test_memory_detach_of_non_leaf_never_copies():
    y = rg.randn(1000, requires_grad=True) * 2
    n0, b0 = memory.live_storages(), memory.live_bytes()

    d = y.detach()

    assert (memory.live_storages(), memory.live_bytes()) == (n0, b0)
    assert d._storage_id() == y._storage_id()


def test_memory_data_and_views_share_storage():
    a = rg.randn(10, 10, requires_grad=True)
    n0 = memory.live_storages()

    shared = [a.data, a.detach(), a.detach()[0:5], a.view(100)]

    assert memory.live_storages() == n0
    assert {t._storage_id() for t in shared} == {a._storage_id()}


def test_memory_clone_allocates_new_storage():
    a = rg.randn(1000)
    n0, b0 = memory.live_storages(), memory.live_bytes()

    c = a.clone()

    assert memory.live_storages() == n0 + 1
    assert memory.live_bytes() == b0 + 1000 * 4
    assert c._storage_id() != a._storage_id()


def test_memory_storage_freed_with_last_alias():
    gc.collect()
    n0, b0 = memory.live_storages(), memory.live_bytes()
    a = rg.zeros(256)
    d = a.detach()
    assert (memory.live_storages(), memory.live_bytes()) == (n0 + 1, b0 + 1024)

    del a
    assert memory.live_storages() == n0 + 1  # the detached alias keeps the storage
    del d

    assert (memory.live_storages(), memory.live_bytes()) == (n0, b0)


def test_memory_stats_reports_storages_and_bytes():
    s = memory.stats()

    assert s == {"live_storages": memory.live_storages(), "live_bytes": memory.live_bytes()}
    assert s["live_storages"] >= 0 and s["live_bytes"] >= 0
