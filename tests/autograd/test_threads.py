"""Backward from several Python threads: every gradient reaches a shared leaf (torch's
guarantee, AccumulateGrad holds a per-leaf lock), independent graphs give the single-thread
results, and grad mode is per thread."""

from __future__ import annotations

import threading
from types import ModuleType
from typing import Callable

import numpy as np
import pytest

N_THREADS = 8
STEPS = 4
# Big enough that NumPy releases the GIL inside the additions, where the race lived.
SHAPE = (512, 512)


def _run_threads(target: Callable[[int], None], n: int = N_THREADS) -> None:
    errors: list[BaseException] = []
    barrier = threading.Barrier(n)

    def body(i: int) -> None:
        try:
            barrier.wait()
            target(i)
        except BaseException as e:  # noqa: BLE001  (re-raised in the main thread)
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "a backward thread hung (deadlock?)"
    if errors:
        raise errors[0]


@pytest.mark.parametrize("trials", [12])
def test_shared_leaf_accumulates_every_gradient(lib: ModuleType, trials: int) -> None:
    # The first backward of each trial finds `.grad` unset (the steal / copy path), the others
    # add into it; thread i contributes (i + 1) per element each step, exactly representable.
    W = lib.ones(SHAPE, requires_grad=True)
    x = lib.ones(SHAPE)
    expected = float(STEPS * sum(range(1, N_THREADS + 1)))
    for _ in range(trials):
        W.grad = None

        def work(i: int) -> None:
            for _ in range(STEPS):
                (W * x * float(i + 1)).sum().backward()

        _run_threads(work)
        got = np.asarray(W.grad.tolist())
        assert got.min() == expected and got.max() == expected


def test_shared_leaf_across_threads_with_create_graph(lib: ModuleType) -> None:
    # create_graph=True: `.grad` is replaced out of place (`.grad + g`), which must be atomic too.
    W = lib.ones(SHAPE, requires_grad=True)
    for _ in range(4):
        W.grad = None

        def work(i: int) -> None:
            for _ in range(3):
                (W * float(i + 1)).sum().backward(create_graph=True)

        _run_threads(work)
        got = np.asarray(W.grad.detach().tolist())
        assert got.min() == got.max() == float(3 * sum(range(1, N_THREADS + 1)))


def test_shared_leaf_through_a_shared_retained_graph(lib: ModuleType) -> None:
    # Every thread runs backward through the same graph (retain_graph=True) into the same leaves.
    W = lib.ones(SHAPE, requires_grad=True)
    b = lib.ones(SHAPE[1], requires_grad=True)
    loss = (W * 2.0 + b).sum()
    for _ in range(4):
        W.grad = None
        b.grad = None

        def work(i: int) -> None:
            for _ in range(STEPS):
                loss.backward(retain_graph=True)

        _run_threads(work)
        n = N_THREADS * STEPS
        assert np.asarray(W.grad.tolist()).min() == np.asarray(W.grad.tolist()).max() == 2.0 * n
        assert b.grad.tolist() == [float(SHAPE[0] * n)] * SHAPE[1]


def test_post_accumulate_hooks_may_run_backward_into_the_same_leaf(lib: ModuleType) -> None:
    # The per-leaf lock is released before post-accumulate-grad hooks run: a hook that runs a
    # backward into its own leaf does not deadlock.
    W = lib.ones(3, requires_grad=True)
    calls = []

    def hook(p: object) -> None:
        calls.append(1)
        if len(calls) == 1:
            with lib.enable_grad():  # hooks run under the backward's grad mode (off)
                (W * 2.0).sum().backward()

    W.register_post_accumulate_grad_hook(hook)
    (W * 1.0).sum().backward()
    assert W.grad.tolist() == [3.0, 3.0, 3.0]
    assert len(calls) == 2


def test_independent_graphs_on_threads_match_one_thread(lib: ModuleType) -> None:
    def program(seed: int) -> tuple[list[float], list[float]]:
        rng = np.random.default_rng(seed)
        a = lib.tensor(rng.standard_normal((6, 5)).tolist(), requires_grad=True)
        b = lib.tensor(rng.standard_normal((5, 4)).tolist(), requires_grad=True)
        out = (a @ b).tanh()
        (out * out).sum().backward()
        return a.grad.flatten().tolist(), b.grad.flatten().tolist()

    alone = [program(i) for i in range(N_THREADS)]
    results: dict[int, tuple[list[float], list[float]]] = {}

    def work(i: int) -> None:
        for _ in range(5):
            results[i] = program(i)

    for _ in range(3):
        results.clear()
        _run_threads(work)
        assert [results[i] for i in range(N_THREADS)] == alone


def test_grad_mode_is_per_thread(lib: ModuleType) -> None:
    seen: dict[str, bool] = {}
    inside = threading.Event()
    checked = threading.Event()

    def other() -> None:
        inside.wait(10)
        seen["other"] = lib.is_grad_enabled()
        x = lib.ones(2, requires_grad=True)
        seen["other_records"] = (x * 2).requires_grad
        checked.set()

    t = threading.Thread(target=other)
    t.start()
    with lib.no_grad():
        inside.set()
        checked.wait(10)
        seen["main"] = lib.is_grad_enabled()
    t.join()
    assert seen == {"main": False, "other": True, "other_records": True}
