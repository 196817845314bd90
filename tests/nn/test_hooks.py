"""Module forward (pre-)hooks and full backward hooks: call order, arguments, replacement
results and handles, compared with torch."""

from __future__ import annotations

import numpy as np
import pytest


def _tree(lib, log):
    nn = lib.nn
    inner = nn.Linear(2, 2)
    outer = nn.Sequential(inner, nn.ReLU())
    for name, m in (("outer", outer), ("inner", inner)):
        m.register_forward_pre_hook(lambda mod, args, n=name: log.append(f"pre:{n}"))
        m.register_forward_hook(lambda mod, args, out, n=name: log.append(f"post:{n}"))
    return outer


def test_forward_hooks_call_order_equals_torch():
    import rustgrad
    import torch

    logs = {}
    for lib in (torch, rustgrad):
        log = []
        _tree(lib, log)(lib.ones(1, 2))
        logs[lib.__name__] = log

    assert logs["rustgrad"] == logs["torch"] == ["pre:outer", "pre:inner", "post:inner",
                                                 "post:outer"]


def test_forward_pre_hook_replaces_input(lib):
    lin = lib.nn.Identity()
    lin.register_forward_pre_hook(lambda m, args: args[0] * 2)

    assert lin(lib.tensor([1.0, 2.0])).tolist() == [2.0, 4.0]


def test_forward_hook_replaces_output(lib):
    lin = lib.nn.Identity()
    lin.register_forward_hook(lambda m, args, out: out + 1)

    assert lin(lib.tensor([1.0])).tolist() == [2.0]


def test_forward_hooks_with_kwargs_receive_kwargs(lib):
    class M(lib.nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale

    m = M()
    seen = []
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"scale": 3.0}),
                                with_kwargs=True)
    m.register_forward_hook(lambda mod, args, kwargs, out: seen.append(kwargs["scale"]),
                            with_kwargs=True)

    assert m(lib.tensor([1.0]), scale=2.0).tolist() == [3.0]
    assert seen == [3.0]


def test_forward_hook_prepend_runs_first(lib):
    m = lib.nn.Identity()
    log = []
    m.register_forward_hook(lambda *a: log.append("a"))
    m.register_forward_hook(lambda *a: log.append("b"), prepend=True)

    m(lib.ones(1))

    assert log == ["b", "a"]


def test_hook_handle_remove_stops_calls(lib):
    m = lib.nn.Identity()
    log = []
    h1 = m.register_forward_hook(lambda *a: log.append(1))
    h2 = m.register_forward_pre_hook(lambda *a: log.append(0))

    m(lib.ones(1))
    h1.remove()
    h2.remove()
    m(lib.ones(1))

    assert log == [0, 1]


def test_hook_handle_as_context_manager_removes_on_exit(lib):
    m = lib.nn.Identity()
    log = []
    with m.register_forward_hook(lambda *a: log.append(1)):
        m(lib.ones(1))
    m(lib.ones(1))

    assert log == [1]


def test_forward_hook_always_call_runs_when_forward_raises(lib):
    class Boom(lib.nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m = Boom()
    log = []
    m.register_forward_hook(lambda *a: log.append("always"), always_call=True)
    m.register_forward_hook(lambda *a: log.append("normal"))

    with pytest.raises(ValueError, match="boom"):
        m(lib.ones(1))
    assert log == ["always"]


def _backward_hook_record(lib):
    lib.manual_seed(0)
    lin = lib.nn.Linear(3, 2)
    with lib.no_grad():
        lin.weight.copy_(lib.tensor([[1.0, -2.0, 0.5], [0.0, 1.0, 3.0]]))
        lin.bias.fill_(0.1)
    seen = {}

    def hook(mod, grad_input, grad_output):
        seen["gi"] = [None if g is None else g.tolist() for g in grad_input]
        seen["go"] = [g.tolist() for g in grad_output]

    lin.register_full_backward_hook(hook)
    x = lib.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    out = lin(x)
    (out * lib.tensor([[2.0, -1.0]])).sum().backward()
    seen["xgrad"] = x.grad.tolist()
    seen["name"] = out.grad_fn.name()
    return seen


def test_full_backward_hook_sees_grad_input_and_output_as_torch():
    import rustgrad
    import torch

    t, r = _backward_hook_record(torch), _backward_hook_record(rustgrad)

    assert r == t
    assert r["name"] == "BackwardHookFunctionBackward"


def test_full_backward_hook_replacement_changes_input_grad(lib):
    lin = lib.nn.Linear(2, 2)
    lin.register_full_backward_hook(lambda m, gi, go: (gi[0] * 0,))
    x = lib.ones(1, 2, requires_grad=True)

    lin(x).sum().backward()

    assert x.grad.tolist() == [[0.0, 0.0]]
    assert lin.weight.grad is not None


def test_full_backward_hook_without_input_grad_gets_none(lib):
    lin = lib.nn.Linear(2, 2)
    seen = []
    lin.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go[0].shape)))

    with pytest.warns(UserWarning, match="Full backward hook is firing"):
        lin(lib.ones(1, 2)).sum().backward()

    assert len(seen) == 1 and seen[0][0] == (None,)
    assert tuple(seen[0][1]) == (1, 2)


def test_full_backward_pre_hook_replaces_grad_output(lib):
    lin = lib.nn.Linear(2, 1)
    with lib.no_grad():
        lin.weight.fill_(1.0)
    lin.register_full_backward_pre_hook(lambda m, go: (go[0] * 10,))
    x = lib.ones(1, 2, requires_grad=True)

    lin(x).sum().backward()

    np.testing.assert_allclose(x.grad.numpy(), [[10.0, 10.0]])
