"""torch's process-wide switches, type queries, memory placement and torch.jit, against torch:
set_warn_always, set_flush_denormal, typename, is_storage, get_device_module, from_file,
Stream/Event, the error classes, GradScaler; Tensor.layout, share_memory_, pin_memory,
dim_order, module_load, as_subclass, apply_/map_/map2_, volatile/reinforce; rustgrad.jit."""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np
import pytest
import rustgrad
import torch

from .parity import same_error


def test_warn_always_repeats_once_per_process_warnings() -> None:
    before = rustgrad.is_warn_always_enabled()
    assert before is torch.is_warn_always_enabled() is False
    x = rustgrad.tensor([1.5], requires_grad=True)
    try:
        rustgrad.set_warn_always(True)
        assert rustgrad.is_warn_always_enabled()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            float(x)
            float(x)
        assert sum("requires_grad=True to a scalar" in str(w.message) for w in caught) == 2
    finally:
        rustgrad.set_warn_always(False)
    from rustgrad import _warn_once

    _warn_once._seen.discard("float() of a tensor that requires grad")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        float(x)
        float(x)
    assert len(caught) == 1  # once per process again


def test_flush_denormal_and_threads() -> None:
    assert rustgrad.set_flush_denormal(True) is False  # NumPy keeps denormals
    tiny = rustgrad.tensor([1e-310], dtype=rustgrad.float64)
    assert tiny.item() == 1e-310
    assert rustgrad.init_num_threads() is None


def test_typename_as_torch() -> None:
    for make in (lambda L: L.zeros(2), lambda L: L.zeros(2, dtype=L.int64),
                 lambda L: L.zeros(2, dtype=L.float64)[0], lambda L: L.nn.Linear(1, 1),
                 lambda L: 1.0, lambda L: [1]):
        assert rustgrad.typename(make(rustgrad)) == torch.typename(make(torch))


def test_storage_and_tensor_queries() -> None:
    x = rustgrad.zeros(2, 3)
    assert rustgrad.is_storage(x.untyped_storage()) and not rustgrad.is_storage(x)
    assert rustgrad.is_nonzero(rustgrad.tensor([2.0])) is torch.is_nonzero(torch.tensor([2.0]))
    assert rustgrad.is_inference(x) is False
    with rustgrad.inference_mode():
        assert rustgrad.is_inference(rustgrad.zeros(1))
    assert x.layout is rustgrad.strided and repr(x.layout) == repr(torch.zeros(1).layout)
    assert x.name is None and x.is_meta is False and x.is_distributed() is False
    assert x.t().dim_order() == torch.zeros(2, 3).t().dim_order()
    assert torch.zeros(2, 3, 4).permute(2, 0, 1).dim_order() == \
        rustgrad.zeros(2, 3, 4).permute(2, 0, 1).dim_order()
    assert x.const_data_ptr() == x.data_ptr()


def test_get_device_module() -> None:
    assert rustgrad.get_device_module("cpu") is rustgrad.cpu
    assert rustgrad.get_device_module(rustgrad.device("cuda:0")) is rustgrad.cuda
    expected = rustgrad.cuda if rustgrad.cuda.is_available() else rustgrad.cpu
    assert rustgrad.get_device_module() is expected
    with pytest.raises(RuntimeError, match="does not have a corresponding module"):
        rustgrad.get_device_module("mtia")


def test_error_classes_and_grad_scaler() -> None:
    for name in ("OutOfMemoryError", "AcceleratorError"):
        assert issubclass(getattr(rustgrad, name), RuntimeError)
        assert issubclass(getattr(torch, name), RuntimeError)
    assert rustgrad.OutOfMemoryError is rustgrad.cuda.OutOfMemoryError
    assert rustgrad.GradScaler is rustgrad.amp.GradScaler


def test_stream_and_event_need_the_accelerator() -> None:
    if rustgrad.cuda.is_available():
        s = rustgrad.Stream()
        assert isinstance(s, rustgrad.cuda.Stream)
        e = rustgrad.Event(enable_timing=True)
        assert isinstance(e, rustgrad.cuda.Event)
    else:
        with pytest.raises(RuntimeError, match="only accelerator is CUDA"):
            rustgrad.Stream()
    with pytest.raises(RuntimeError, match="got device cpu"):
        rustgrad.Event("cpu")


def test_from_file_private_and_shared(tmp_path: Any) -> None:
    path = str(tmp_path / "v.bin")
    np.arange(6, dtype=np.float32).tofile(path)
    got = rustgrad.from_file(path, size=6, dtype=rustgrad.float32)
    want = torch.from_file(path, size=6, dtype=torch.float32)
    assert got.tolist() == want.tolist()
    got[0] = 100.0  # private mapping: the file keeps its values
    assert np.fromfile(path, dtype=np.float32)[0] == 0.0
    shared = rustgrad.from_file(path, shared=True, size=6, dtype=rustgrad.float32)
    assert shared.is_shared()
    shared[1] = 7.0
    del shared
    assert np.fromfile(path, dtype=np.float32)[1] == 7.0
    new = str(tmp_path / "new.bin")
    made = rustgrad.from_file(new, shared=True, size=3, dtype=rustgrad.float64)
    assert os.path.getsize(new) == 24 and made.tolist() == [0.0, 0.0, 0.0]
    same_error(lambda L: L.from_file(path, size=100), "is smaller than the required mapping size")


def test_share_memory_is_seen_by_a_forked_child() -> None:
    x = rustgrad.zeros(3)
    assert not x.is_shared()
    version = x._version
    assert x.share_memory_() is x and x.is_shared()
    assert x._version == version  # torch's share_memory_ does not count as a write
    pid = os.fork()
    if pid == 0:  # the child writes; the parent reads it back
        x[1] = 5.0
        os._exit(0)
    os.waitpid(pid, 0)
    assert x.tolist() == [0.0, 5.0, 0.0]


def test_pin_memory_needs_cuda() -> None:
    x = rustgrad.ones(2)
    assert x.is_pinned() is False
    if rustgrad.cuda.is_available():
        p = x.pin_memory()
        assert p.is_pinned() and p.tolist() == [1.0, 1.0]
    else:
        with pytest.raises(RuntimeError, match="Found no NVIDIA driver"):
            x.pin_memory()


def test_module_load_as_torch() -> None:
    for lib in (rustgrad, torch):
        p = lib.nn.Parameter(lib.zeros(2))
        other = lib.ones(2)
        with lib.no_grad():  # as load_state_dict calls it
            out = p.module_load(other)
        assert out is not p and out.tolist() == [1.0, 1.0] and p.tolist() == [1.0, 1.0]
        assigned = p.module_load(lib.full((2,), 3.0), assign=True)
        assert assigned.tolist() == [3.0, 3.0] and not assigned.requires_grad


def test_as_subclass_keeps_the_graph() -> None:
    class Tagged(rustgrad.Tensor):
        pass

    x = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2).as_subclass(Tagged)
    assert type(y) is Tagged and y.grad_fn.name() == "AliasBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    same_error(lambda L: L.ones(1).as_subclass(int), "does not inherit from Tensor")


def test_apply_and_map_as_torch() -> None:
    def run(L: Any) -> Any:
        a = L.tensor([[1.0, 2.0], [3.0, 4.0]])
        a.apply_(lambda v: v * 10)
        a.map_(L.tensor([1.0, 2.0]), lambda u, v: u + v)
        a.map2_(L.tensor([1.0]), L.tensor([[2.0], [3.0]]), lambda u, v, w: u - v * w)
        return a.tolist()

    assert run(rustgrad) == run(torch)
    v = rustgrad.zeros(2)
    before = v._version
    v.apply_(lambda u: u + 1)
    assert v._version > before
    same_error(lambda L: L.ones(2, requires_grad=True).apply_(abs), "Use var.detach().apply_()")


def test_module_load_outside_no_grad_refuses_as_torch() -> None:
    same_error(lambda L: L.nn.Parameter(L.zeros(2)).module_load(L.ones(2)),
               "a leaf Variable that requires grad is being used in an in-place operation")


def test_removed_variable_api() -> None:
    with pytest.warns(UserWarning, match="volatile was removed"):
        assert rustgrad.zeros(1).volatile is False
    same_error(lambda L: L.zeros(1).reinforce(1), "reinforce() was removed")


def test_jit_returns_code_unchanged_and_warns_once() -> None:
    from rustgrad import _warn_once

    _warn_once._seen.discard("jit.script")
    net = rustgrad.nn.Linear(2, 1)
    with pytest.warns(UserWarning, match="compiles nothing"):
        assert rustgrad.jit.script(net) is net
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rustgrad.jit.script(len) is len  # once per process
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert rustgrad.jit.trace(net, rustgrad.zeros(1, 2)) is net
    assert rustgrad.jit.is_scripting() is False and rustgrad.jit.is_tracing() is False

    @rustgrad.jit.ignore
    def helper(x: Any) -> Any:
        return x + 1

    @rustgrad.jit.ignore(drop=False)
    def other(x: Any) -> Any:
        return x

    assert helper(1) == 2 and other(3) == 3
    assert rustgrad.jit.wait(rustgrad.jit.fork(lambda a, b: a * b, 3, 4)) == 12
    assert rustgrad.jit.annotate(list, [1]) == [1]
    assert rustgrad.jit.isinstance([1], list)
    with pytest.raises(RuntimeError, match="state_dict"):
        rustgrad.jit.save(net, "x.pt")
