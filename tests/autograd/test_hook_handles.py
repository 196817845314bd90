"""One handle class for every hook, as torch.utils.hooks.RemovableHandle: tensor, post-accumulate,
grad_fn, module and optimizer hooks all return it, and `remove()` works for each."""

from __future__ import annotations

import ast
import pathlib

import pytest


def _handles(lib):
    x = lib.ones(2, requires_grad=True)
    y = x * 2
    m = lib.nn.Linear(2, 2)
    opt = lib.optim.SGD(m.parameters(), lr=0.1)
    return {
        "tensor": x.register_hook(lambda g: None),
        "post_accumulate": x.register_post_accumulate_grad_hook(lambda t: None),
        "grad_fn": y.grad_fn.register_hook(lambda gi, go: None),
        "grad_fn_pre": y.grad_fn.register_prehook(lambda go: None),
        "module": m.register_forward_hook(lambda mod, i, o: None),
        "optimizer": opt.register_step_pre_hook(lambda o, a, k: None),
    }


def test_hook_handles_of_every_kind_are_one_class(lib):
    utils_hooks = lib.utils.hooks
    for kind, handle in _handles(lib).items():
        assert type(handle) is utils_hooks.RemovableHandle, kind
        assert isinstance(handle.id, int), kind


def test_hook_handle_remove_stops_the_tensor_hook(lib):
    x = lib.ones(2, requires_grad=True)
    calls = []
    handle = x.register_hook(lambda g: calls.append(1))
    (x * 2).sum().backward()

    handle.remove()
    handle.remove()  # twice is fine
    (x * 2).sum().backward()

    assert calls == [1]


def test_hook_handle_as_context_manager_removes_grad_fn_hook(lib):
    x = lib.ones(2, requires_grad=True)
    y = x * 2
    calls = []
    with y.grad_fn.register_prehook(lambda go: calls.append(1)):
        pass
    y.sum().backward()

    assert calls == []


def test_hook_handle_remove_stops_module_and_optimizer_hooks(lib):
    m = lib.nn.Linear(2, 1)
    opt = lib.optim.SGD(m.parameters(), lr=0.1)
    calls = []
    h1 = m.register_forward_hook(lambda mod, i, o: calls.append("forward"))
    h2 = opt.register_step_pre_hook(lambda o, a, k: calls.append("step"))
    h1.remove()
    h2.remove()

    m(lib.ones(1, 2)).sum().backward()
    opt.step()

    assert calls == []


def test_hook_handle_outliving_its_tensor_removes_nothing(rg):
    x = rg.ones(2, requires_grad=True)
    handle = x.register_hook(lambda g: None)
    del x

    handle.remove()  # the hook list is gone with the tensor: a no-op


def test_optim_imports_nothing_from_nn():
    root = pathlib.Path(__file__).resolve().parents[2] / "python" / "rustgrad" / "optim"
    for path in root.rglob("*.py"):
        if path.name == "swa_utils.py":
            continue  # where optim meets nn, as torch's (AveragedModel is a Module)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                module = "." * node.level + (node.module or "")
                assert not module.startswith("..nn") and "rustgrad.nn" not in module, path
            elif isinstance(node, ast.Import):
                assert all(not a.name.startswith("rustgrad.nn") for a in node.names), path


@pytest.mark.parametrize("path", ["nn/utils/hooks.py"])
def test_hook_handle_has_no_second_definition(path):
    root = pathlib.Path(__file__).resolve().parents[2] / "python" / "rustgrad"
    assert not (root / path).exists()
