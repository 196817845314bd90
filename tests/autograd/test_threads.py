"""Backward from several Python threads: every gradient reaches a shared leaf (torch's
guarantee, AccumulateGrad holds a per-leaf lock), independent graphs give the single-thread
results, and grad mode is per thread."""

from __future__ import annotations

import threading
import time
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


# ---- a backward racing an in-place write ------------------------------------------------------
INPLACE_PHRASE = "modified by an inplace operation"
RACE_ROUNDS = 12
RACE_BACKWARDS = 16


def _saved_input(lib: ModuleType) -> tuple[object, object, object, float]:
    # MulBackward0 saves `a` for x's gradient; the writer scales `a` in place.
    x = lib.full(SHAPE, 3.0, requires_grad=True)
    a = lib.full(SHAPE, 2.0, requires_grad=True)
    return x, a, (x * a).sum(), 2.0


def _saved_output(lib: ModuleType) -> tuple[object, object, object, float]:
    # ExpBackward0 saves its result; the writer scales that result in place.
    x = lib.zeros(SHAPE, requires_grad=True)
    out = x.exp()
    return x, out, out.sum(), 1.0


def _race_once(lib: ModuleType, graph: Callable, delay: float) -> list[str]:
    """One thread runs backward over the graph again and again while another writes in place."""
    x, saved, loss, expected = graph(lib)
    outcomes: list[str] = []
    first_done = threading.Event()

    def backwards() -> None:
        for _ in range(RACE_BACKWARDS):
            try:
                (gx,) = lib.autograd.grad(loss, x, retain_graph=True)
            except RuntimeError as e:
                assert INPLACE_PHRASE in str(e), str(e)
                outcomes.append("inplace")
            else:
                assert gx.min().item() == gx.max().item() == expected
                outcomes.append("ok")
            first_done.set()

    def writer() -> None:
        first_done.wait(60)
        time.sleep(delay)
        for _ in range(3):
            with lib.no_grad():
                saved.mul_(1.0)

    _run_threads(lambda i: (backwards if i == 0 else writer)(), n=2)
    with pytest.raises(RuntimeError, match=INPLACE_PHRASE):
        lib.autograd.grad(loss, x, retain_graph=True)
    return outcomes


@pytest.mark.parametrize("graph", [_saved_input, _saved_output], ids=["saved_input", "saved_output"])
def test_backward_racing_an_inplace_write_to_a_saved_tensor(lib: ModuleType, graph: Callable) -> None:
    # The write multiplies by 1.0: the values never change, so a backward that passes the version
    # check has exactly one right answer, and one that fails it names the in-place write.
    rng = np.random.default_rng(0)
    for _ in range(RACE_ROUNDS):
        outcomes = _race_once(lib, graph, float(rng.uniform(0.0, 0.002)))
        # The version counter only moves forward: once a backward saw the write, all later do.
        assert outcomes[0] == "ok"
        k = outcomes.index("inplace") if "inplace" in outcomes else len(outcomes)
        assert outcomes == ["ok"] * k + ["inplace"] * (len(outcomes) - k), outcomes
