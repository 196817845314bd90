"""no_grad, enable_grad, set_grad_enabled, inference_mode: forms, nesting, thread-locality."""

from __future__ import annotations

import threading

import pytest


def _records(lib):
    """Whether an op on a tensor requiring grad records a graph right now."""
    return (lib.ones(1, requires_grad=True) * 2).requires_grad


def test_grad_mode_enabled_by_default(lib):
    assert lib.is_grad_enabled()
    assert lib.autograd.no_grad is lib.no_grad
    assert lib.autograd.enable_grad is lib.enable_grad
    assert _records(lib)


def test_no_grad_context_manager_disables_and_restores(lib):
    with lib.no_grad():
        assert not lib.is_grad_enabled()
        assert not _records(lib)
    assert lib.is_grad_enabled() and _records(lib)


def test_no_grad_decorator_disables_inside_function(lib):
    @lib.no_grad()
    def f():
        return lib.is_grad_enabled(), _records(lib)

    assert f() == (False, False)
    assert lib.is_grad_enabled()


def test_no_grad_decorator_on_generator_applies_per_step(lib):
    @lib.no_grad()
    def gen():
        yield lib.is_grad_enabled()
        yield lib.is_grad_enabled()

    it = gen()
    first = next(it)
    between = lib.is_grad_enabled()
    second = next(it)

    assert (first, between, second) == (False, True, False)


def test_no_grad_restored_after_exception(lib):
    with pytest.raises(ValueError):
        with lib.no_grad():
            raise ValueError("inside")

    assert lib.is_grad_enabled()


def test_enable_grad_inside_no_grad_records(lib):
    with lib.no_grad():
        with lib.enable_grad():
            assert lib.is_grad_enabled() and _records(lib)
        assert not lib.is_grad_enabled()


def test_enable_grad_decorator_inside_no_grad(lib):
    @lib.enable_grad()
    def f():
        return _records(lib)

    with lib.no_grad():
        assert f() is True
        assert not lib.is_grad_enabled()


def test_set_grad_enabled_as_function_takes_effect_immediately(lib):
    lib.set_grad_enabled(False)
    try:
        assert not lib.is_grad_enabled() and not _records(lib)
    finally:
        lib.set_grad_enabled(True)
    assert lib.is_grad_enabled()


@pytest.mark.parametrize("mode", [True, False])
def test_set_grad_enabled_as_context_manager_sets_and_restores(lib, mode):
    with lib.no_grad():
        with lib.set_grad_enabled(mode):
            assert lib.is_grad_enabled() is mode
            assert _records(lib) is mode
        assert not lib.is_grad_enabled()
    assert lib.is_grad_enabled()


def test_set_grad_enabled_as_decorator(lib):
    @lib.set_grad_enabled(False)
    def f():
        return lib.is_grad_enabled()

    assert lib.is_grad_enabled()  # decorating alone changes nothing
    assert f() is False
    assert lib.is_grad_enabled()


def test_inference_mode_disables_recording(lib):
    with lib.inference_mode():
        assert lib.is_inference_mode_enabled()
        assert not lib.is_grad_enabled()
        assert not _records(lib)
    assert not lib.is_inference_mode_enabled()
    assert lib.is_grad_enabled()


def test_inference_mode_false_is_noop(lib):
    with lib.inference_mode(False):
        assert not lib.is_inference_mode_enabled()
        assert _records(lib)


def test_inference_mode_decorator(lib):
    @lib.inference_mode()
    def f():
        return lib.is_inference_mode_enabled(), _records(lib)

    assert f() == (True, False)


def test_grad_mode_in_new_thread_starts_enabled(lib):
    seen = []

    def worker():
        seen.append((lib.is_grad_enabled(), _records(lib)))

    with lib.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert not lib.is_grad_enabled()

    assert seen == [(True, True)]


def test_grad_mode_set_in_thread_does_not_leak_to_main(lib):
    entered, release = threading.Event(), threading.Event()
    seen = []

    def worker():
        with lib.no_grad():
            entered.set()
            release.wait(5)
            seen.append(lib.is_grad_enabled())

    t = threading.Thread(target=worker)
    t.start()
    try:
        assert entered.wait(5)
        main_view = (lib.is_grad_enabled(), _records(lib))
    finally:
        release.set()
        t.join()

    assert main_view == (True, True)
    assert seen == [False]


def test_backward_in_thread_uses_thread_graph(lib):
    results = []

    def worker(k):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        (x * k).sum().backward()
        results.append((k, x.grad.tolist()))

    threads = [threading.Thread(target=worker, args=(k,)) for k in (2.0, 3.0, 4.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert sorted(results) == [(2.0, [2.0, 2.0]), (3.0, [3.0, 3.0]), (4.0, [4.0, 4.0])]


def test_backward_under_no_grad_still_computes_grads(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()

    with lib.no_grad():
        loss.backward()

    assert x.grad.tolist() == [2.0, 4.0]
    assert not x.grad.requires_grad
