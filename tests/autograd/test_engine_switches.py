"""torch.autograd's engine switches against torch's: set_multithreading_enabled /
is_multithreading_enabled, enforce_grad_layout_policy, _force_original_view_tracking /
is_view_replay_enabled: defaults, set on construction, restored on exit, as decorators,
per thread, torch's TypeError for a non-bool; and that backward gives torch's values under each
setting."""

from __future__ import annotations

import threading
from typing import Any, Callable, List

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import same_error


def _layout(lib: Any) -> bool:
    """Whether the grad layout policy is enforced (torch keeps the flag in torch._C)."""
    if lib is torch:
        return torch._C._is_grad_layout_enforcement_enabled()
    return rustgrad.autograd._switches._flag("grad_layout", True)


def _multithreading(lib: Any) -> bool:
    return lib.autograd.is_multithreading_enabled()


def _replay(lib: Any) -> bool:
    return lib.autograd.is_view_replay_enabled()


SWITCHES = {
    "multithreading": (lambda lib, mode: lib.autograd.set_multithreading_enabled(mode),
                       _multithreading, True),
    "grad_layout": (lambda lib, mode: lib.autograd.enforce_grad_layout_policy(mode),
                    _layout, True),
    "view_replay": (lambda lib, mode: lib.autograd._force_original_view_tracking(mode),
                    _replay, False),
}


def _in_thread(fn: Callable[[], Any]) -> Any:
    out: List[Any] = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


@pytest.mark.parametrize("name", list(SWITCHES))
def test_switch_as_a_context_manager_and_a_function(lib, name):
    make, read, default = SWITCHES[name]
    assert read(lib) is default
    with make(lib, not default):
        assert read(lib) is (not default)
        assert _in_thread(lambda: read(lib)) is default  # thread-local
        with make(lib, default):
            assert read(lib) is default
        assert read(lib) is (not default)
    assert read(lib) is default
    switch = make(lib, not default)  # a plain call sets it
    assert read(lib) is (not default)
    switch.__exit__(None, None, None)
    assert read(lib) is default


@pytest.mark.parametrize("name", ["grad_layout", "view_replay"])
def test_switch_as_a_decorator_sets_it_only_during_calls(lib, name):
    make, read, default = SWITCHES[name]
    seen = []

    @make(lib, not default)
    def f() -> None:
        seen.append(read(lib))

    assert read(lib) is default
    f()
    assert seen == [not default] and read(lib) is default
    switch = make(lib, not default)
    copy = switch.clone()
    assert copy.mode is (not default) and read(lib) is (not default)
    copy.__exit__(None, None, None)
    switch.__exit__(None, None, None)
    assert read(lib) is default


def test_set_multithreading_enabled_as_a_decorator_stays_set_as_torch(lib):
    # torch's class sets the flag when constructed and has no __call__ of its own, so
    # decorating leaves it set for the thread; rustgrad's does the same
    try:
        @lib.autograd.set_multithreading_enabled(False)
        def f() -> bool:
            return lib.autograd.is_multithreading_enabled()

        assert f() is False
        assert lib.autograd.is_multithreading_enabled() is False
    finally:
        lib.autograd.set_multithreading_enabled(True)
    assert lib.autograd.is_multithreading_enabled() is True


def test_enforce_grad_layout_policy_defaults_to_enforcing(lib):
    with lib.autograd.enforce_grad_layout_policy(False):
        with lib.autograd.enforce_grad_layout_policy():
            assert _layout(lib) is True
        assert _layout(lib) is False


@pytest.mark.parametrize("call,phrase", [
    (lambda lib: lib.autograd.set_multithreading_enabled("x"),
     "set_multithreading_enabled(): argument 'enabled' (position 1) must be bool, not str"),
    (lambda lib: lib.autograd.set_multithreading_enabled(None),
     "set_multithreading_enabled(): argument 'enabled' (position 1) must be bool, not "
     "NoneType"),
    (lambda lib: lib.autograd.enforce_grad_layout_policy(1),
     "set_grad_layout_enforcement_enabled(): argument 'enabled' (position 1) must be bool, "
     "not int"),
    (lambda lib: lib.autograd._force_original_view_tracking(np.bool_(True)),
     "set_view_replay_enabled(): argument 'enabled' (position 1) must be bool, not numpy.bool"),
    (lambda lib: lib.autograd.set_multithreading_enabled(),
     "missing 1 required positional argument: 'mode'"),
], ids=["str", "none", "int", "numpy-bool", "missing"])
def test_switch_errors(call, phrase):
    same_error(call, phrase)
    for lib in (torch, rustgrad):  # a refused value leaves every flag as it was
        assert [read(lib) for _, read, _ in SWITCHES.values()] == [True, True, False]


@pytest.mark.parametrize("device_switch", [
    lambda lib: lib.autograd.set_multithreading_enabled(False),
    lambda lib: lib.autograd.enforce_grad_layout_policy(False),
    lambda lib: lib.autograd._force_original_view_tracking(True),
], ids=["multithreading-off", "layout-relaxed", "view-replay"])
def test_backward_values_under_each_setting(device, device_switch):
    results = []
    for lib, dev in ((torch, "cpu"), (rustgrad, device)):
        with device_switch(lib):
            p = lib.tensor(np.arange(24.0).reshape(2, 3, 4), device=dev).permute(2, 0, 1)
            p = p.detach().requires_grad_()
            base = (p * 1.0).clone()
            view = base.transpose(0, 1)[1:]
            view.mul_(2)
            (base.sin() * p).sum().backward()
            results.append((p.grad.cpu().numpy(), tuple(p.grad.shape)))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-12)
    assert results[1][1] == results[0][1]
