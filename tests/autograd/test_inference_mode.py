"""inference_mode: grad mode as user code sees it inside (enable_grad and set_grad_enabled flip
it, yet ops record nothing), inference_mode(False) turning grad mode on, nesting and threads.
(Inference tensors themselves: test_inference_tensors.py.)"""

from __future__ import annotations

import threading

import pytest


def _records(lib, x):
    return (x * 2).requires_grad


def test_enable_grad_inside_flips_the_flag_but_records_nothing(lib):
    x = lib.ones(2, requires_grad=True)
    with lib.inference_mode():
        assert not lib.is_grad_enabled()
        with lib.enable_grad():
            assert lib.is_grad_enabled() and lib.is_inference_mode_enabled()
            y = x * 2
            assert not y.requires_grad and y.grad_fn is None
            with lib.no_grad():
                assert not lib.is_grad_enabled()
            assert lib.is_grad_enabled()
        assert not lib.is_grad_enabled()
    assert lib.is_grad_enabled() and _records(lib, x)


def test_set_grad_enabled_inside_records_nothing_and_is_undone_on_exit(lib):
    x = lib.ones(2, requires_grad=True)
    with lib.inference_mode():
        lib.set_grad_enabled(True)
        assert lib.is_grad_enabled()
        assert not _records(lib, x)
    assert lib.is_grad_enabled() and _records(lib, x)
    with lib.no_grad():
        with lib.inference_mode():
            lib.set_grad_enabled(True)
        assert not lib.is_grad_enabled()


def test_inference_mode_false_enables_grad(lib):
    x = lib.ones(2, requires_grad=True)
    with lib.no_grad():
        with lib.inference_mode(False):
            assert lib.is_grad_enabled() and not lib.is_inference_mode_enabled()
            assert _records(lib, x)
        assert not lib.is_grad_enabled()
    with lib.inference_mode():
        with lib.inference_mode(False):
            assert lib.is_grad_enabled() and not lib.is_inference_mode_enabled()
            assert _records(lib, x)
        assert lib.is_inference_mode_enabled() and not lib.is_grad_enabled()
        assert not _records(lib, x)


def test_nested_inference_mode_restores_each_level(lib):
    with lib.inference_mode():
        with lib.enable_grad():
            with lib.inference_mode():
                assert not lib.is_grad_enabled()
            assert lib.is_grad_enabled()
        assert not lib.is_grad_enabled()
    assert lib.is_grad_enabled() and not lib.is_inference_mode_enabled()


@pytest.mark.parametrize("form", ["decorator", "bare_decorator", "called_false"])
def test_decorator_forms(lib, form):
    x = lib.ones(2, requires_grad=True)

    def body():
        with lib.enable_grad():
            return lib.is_grad_enabled(), _records(lib, x), lib.is_inference_mode_enabled()

    if form == "decorator":
        f = lib.inference_mode()(body)
        assert f() == (True, False, True)
    elif form == "bare_decorator":
        f = lib.inference_mode(body)
        assert f() == (True, False, True)
    else:
        f = lib.inference_mode(False)(body)
        assert f() == (True, True, False)


def test_grad_mode_inside_is_per_thread(lib):
    seen = {}
    x = lib.ones(2, requires_grad=True)

    def other():
        seen["other"] = (lib.is_grad_enabled(), lib.is_inference_mode_enabled(), _records(lib, x))

    with lib.inference_mode():
        with lib.enable_grad():
            t = threading.Thread(target=other)
            t.start()
            t.join()
            seen["main"] = (lib.is_grad_enabled(), _records(lib, x))
    assert seen == {"other": (True, False, True), "main": (True, False)}
