"""Tensor.to / .cuda / .cpu / Module.to with torch's call forms (device moves on the strict CuPy
double's two simulated GPUs, the forms checked against torch on the CPU), __cuda_array_interface__ refused off
CUDA as torch refuses it, and DLPack capsules that say which device they hold."""

import ctypes

import numpy as np
import pytest
import rustgrad
import torch

from . import fake_cupy


@pytest.mark.parametrize("form", [
    lambda lib, t: t.to("cpu", lib.float64, True, True),
    lambda lib, t: t.to(lib.float64, True),
    lambda lib, t: t.to(lib.float64, False, True),
    lambda lib, t: t.to(lib.ones(1, dtype=lib.float16), True, True),
    lambda lib, t: t.to(lib.ones(1, dtype=lib.float16), non_blocking=True),
    lambda lib, t: t.to(device="cpu", dtype=lib.float64),
    lambda lib, t: t.to(lib.device("cpu"), non_blocking=True, copy=True),
    lambda lib, t: t.to(dtype=lib.int32, copy=False),
])
def test_to_call_forms_match_torch(form):
    outs = [form(lib, lib.tensor([1.5, -2.0])) for lib in (torch, rustgrad)]
    assert str(outs[1].dtype) == str(outs[0].dtype)
    np.testing.assert_array_equal(outs[1].numpy(), outs[0].numpy())


@pytest.mark.parametrize("lib", [torch, rustgrad])
def test_copy_true_always_copies_and_false_returns_self(lib):
    t = lib.tensor([1.0, 2.0])
    for out in (t.to("cpu", copy=True), t.to(lib.float32, copy=True), t.to(t, copy=True),
                t.to("cpu", lib.float32, False, True)):
        assert out is not t
        out.add_(1)
        assert t.tolist() == [1.0, 2.0]
    assert t.to("cpu") is t and t.to(lib.float32) is t and t.to(t) is t and t.cpu() is t
    assert t.to("cpu", non_blocking=True) is t


def test_int_device_is_a_gpu_as_in_torch():
    assert rustgrad.device(1) == "cuda:1" and str(torch.device(1)) == "cuda:1"
    with pytest.raises(RuntimeError, match="Device index must not be negative"):
        rustgrad.device(-1)


@pytest.mark.xfail(strict=True, raises=(ValueError, AssertionError),
                   reason="no device guard: an op on cuda:1 runs on CuPy's current device "
                          "(clone of a cuda:1 tensor lands on cuda:0, as CuPy's copy() does)")
def test_moves_between_simulated_gpus(sim_cuda):
    x = rustgrad.tensor([1.0, 2.0])
    y = x.to("cuda:1")
    assert y.device == rustgrad.device("cuda", 1) and y.is_cuda and not x.is_cuda
    z = y.to(rustgrad.ones(1, device="cuda:0", dtype=rustgrad.float64))  # to(other)
    assert z.device == "cuda:0" and z.dtype == rustgrad.float64
    assert y.to("cuda:1") is y
    c = y.to("cuda:1", copy=True)
    assert c is not y and c.device == "cuda:1"
    c.add_(1)
    assert y.cpu().tolist() == [1.0, 2.0]
    assert y.cpu().device == "cpu" and y.cpu().tolist() == [1.0, 2.0]
    w = y.to("cuda:0", rustgrad.float16, True)
    assert (w.device, w.dtype) == (rustgrad.device("cuda:0"), rustgrad.float16)


@pytest.mark.xfail(strict=True, raises=ValueError,
                   reason="no device guard: an op on cuda:1 runs on CuPy's current device")
def test_module_to_moves_parameters_buffers_and_grads(sim_cuda):
    m = rustgrad.nn.Sequential(rustgrad.nn.Linear(3, 2), rustgrad.nn.BatchNorm1d(2))
    m(rustgrad.randn(4, 3)).sum().backward()
    assert m.to("cuda:1") is m
    for t in list(m.parameters()) + list(m.buffers()):
        assert t.device == "cuda:1", t
    assert all(p.grad.device == "cuda:1" for p in m.parameters())
    assert all(p.is_leaf for p in m.parameters())
    m.to(rustgrad.float64)
    assert m[0].weight.dtype == rustgrad.float64 and m[1].num_batches_tracked.dtype == rustgrad.int64
    out = m(rustgrad.randn(4, 3, device="cuda:1", dtype=rustgrad.float64))
    assert out.device == "cuda:1"
    m.cpu()
    assert all(p.device == "cpu" for p in m.parameters())


def test_cuda_array_interface_is_refused_off_cuda_as_torch(sim_cuda):
    for lib in (torch, rustgrad):
        t = lib.ones(2)
        assert not hasattr(t, "__cuda_array_interface__")
        with pytest.raises(AttributeError, match="Can't get __cuda_array_interface__ on non-CUDA "
                                                 "tensor type: torch.FloatTensor If CUDA data"):
            t.__cuda_array_interface__  # noqa: B018
    assert hasattr(rustgrad.ones(2, device="cuda"), "__cuda_array_interface__")


def test_dlpack_on_the_cpu_shares_memory_with_torch_and_numpy():
    t = rustgrad.arange(4.0)
    tt = torch.from_dlpack(t)
    tt[0] = 10.0
    assert t[0].item() == 10.0 and t.__dlpack_device__() == (1, 0)
    back = rustgrad.from_dlpack(torch.arange(3.0))
    assert back.tolist() == [0.0, 1.0, 2.0]
    cap = rustgrad.utils.dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(tt))
    assert cap.tolist() == t.tolist()
    n = np.from_dlpack(t)
    n[1] = 7.0
    assert t[1].item() == 7.0
    with pytest.raises(BufferError, match="require gradient"):
        rustgrad.ones(2, requires_grad=True).__dlpack__()


def _cuda_capsule(versioned: bool, keep: list) -> object:
    # a DLPack capsule whose DLTensor says (kDLCUDA=2, device 1); nothing reads its data
    ptr = ctypes.sizeof(ctypes.c_void_p)
    head = 8 + 2 * ptr + 8 if versioned else 0  # version, manager_ctx, deleter, flags
    buf = ctypes.create_string_buffer(head + ptr + 8 + 64)
    (ctypes.c_int32 * 2).from_buffer(buf, head + ptr)[:] = [2, 1]
    name = b"dltensor_versioned" if versioned else b"dltensor"
    keep += [buf, name]
    new = ctypes.pythonapi.PyCapsule_New
    new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return new(ctypes.addressof(buf), name, None)


@pytest.mark.parametrize("versioned", [False, True])
def test_a_bare_cuda_capsule_goes_to_cuda(monkeypatch, versioned):
    from rustgrad.utils.dlpack import capsule_device

    keep: list = []
    cap = _cuda_capsule(versioned, keep)
    assert capsule_device(cap) == (2, 1)
    fake_cupy.install(monkeypatch, None)
    with pytest.raises(RuntimeError, match=r"install rustgrad\[cuda12\]|rustgrad\[cuda12\]"):
        rustgrad.from_dlpack(cap)
    assert capsule_device(torch.utils.dlpack.to_dlpack(torch.ones(1))) == (1, 0)


@pytest.mark.parametrize("lib", [torch, rustgrad])
def test_cuda_and_cpu_take_torchs_arguments(lib):
    t = lib.ones(2)
    assert t.cpu(memory_format=lib.preserve_format) is t
    with pytest.raises(RuntimeError, match="Invalid device, must be cuda device"):
        t.cuda("cpu")


def test_a_cpu_scalar_tensor_meets_a_device_tensor_as_torchs(device):
    # torch takes a 0-d CPU tensor beside a device tensor as a scalar; its gradient returns to
    # the CPU, the other's stays on the device
    x = rustgrad.ones(3, device=device, requires_grad=True)
    s = rustgrad.tensor(2.0, requires_grad=True)
    y = (x * s + s - s / x).sum()
    y.backward()
    assert y.device.type == device and x.grad.device.type == device
    assert s.grad.device.type == "cpu" and s.grad.item() == 3.0
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [4.0, 4.0, 4.0])
    if device != "cpu":
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            x + rustgrad.ones(3)  # a CPU tensor with dims is still refused, as torch's
