"""rustgrad on a real GPU: placement, the rustgrad.cuda calls, memory statistics, zero-copy
exchange with CuPy and torch (DLPack and __cuda_array_interface__), devices by index, autocast."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad
import torch

pytestmark = pytest.mark.cuda

cuda = rustgrad.cuda


def test_tensors_ops_and_backward_stay_on_the_gpu():
    x = rustgrad.randn(4, 3, device="cuda", requires_grad=True)
    w = rustgrad.randn(3, 2, device="cuda:0", requires_grad=True)
    y = rustgrad.nn.functional.gelu(x @ w).sum()
    y.backward()
    assert x.is_cuda and x.grad.is_cuda and w.grad.device == rustgrad.device("cuda", 0)
    tx = torch.tensor(x.detach().cpu().numpy(), requires_grad=True)
    tw = torch.tensor(w.detach().cpu().numpy(), requires_grad=True)
    torch.nn.functional.gelu(tx @ tw).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_mixing_cpu_and_gpu_raises_torchs_error():
    a, b = rustgrad.ones(2, device="cuda"), rustgrad.ones(2)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but "
                                           "found at least two devices, cuda:0 and cpu!"):
        a + b
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        rustgrad.cat([b, a])


@pytest.mark.skipif("rustgrad.cuda.device_count() < 2")
def test_two_gpus_are_two_devices():
    a = rustgrad.ones(2, device="cuda:0")
    b = rustgrad.ones(2, device="cuda:1")
    assert b.device == "cuda:1"
    with pytest.raises(RuntimeError, match="found at least two devices, cuda:0 and cuda:1!"):
        a + b
    with cuda.device(1):  # CuPy launches kernels on its current device only
        assert (b * 2).device == "cuda:1"
        x = rustgrad.ones(2, device="cuda:0", requires_grad=True)
    with cuda.device(1):
        y = (x.to("cuda:1") * 3).sum()
        y.backward()
    assert x.grad.device == "cuda:0"


@pytest.mark.skipif("rustgrad.cuda.device_count() < 2")
@pytest.mark.xfail(strict=True, raises=ValueError, reason="ops on cuda:N need CuPy's current "
                   "device to be N (with torch.cuda.device(N)); torch needs no such block")
def test_ops_on_the_second_gpu_without_selecting_it():
    b = rustgrad.ones(2, device="cuda:1")
    assert (b * 2).device == "cuda:1"


def test_the_cuda_module():
    assert cuda.is_available() and cuda.device_count() >= 1 and cuda.is_initialized()
    assert cuda.current_device() == 0
    with cuda.device(0):
        assert cuda.current_device() == 0
    assert cuda.get_device_name() == torch.cuda.get_device_name()
    p = cuda.get_device_properties(0)
    assert p.total_memory == torch.cuda.get_device_properties(0).total_memory
    assert cuda.get_device_capability() == torch.cuda.get_device_capability()
    cuda.synchronize()


def test_events_time_a_matmul():
    a = rustgrad.randn(2048, 2048, device="cuda")
    start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
    s = cuda.Stream()
    with cuda.stream(s):
        assert cuda.current_stream() == s
        start.record()
        for _ in range(5):
            a @ a
        end.record()
    end.synchronize()
    assert 0.0 < start.elapsed_time(end) < 10_000.0


def test_memory_statistics():
    cuda.synchronize()
    base = cuda.memory_allocated()
    cuda.reset_peak_memory_stats()
    t = rustgrad.zeros(1 << 20, device="cuda")  # 4 MiB
    assert cuda.memory_allocated() - base == 4 << 20
    u = t * 2
    peak = cuda.max_memory_allocated()
    assert peak >= base + (8 << 20)
    del t, u
    assert cuda.memory_allocated() == base
    assert cuda.max_memory_allocated() == peak
    assert cuda.memory_reserved() >= 8 << 20
    cuda.empty_cache()
    assert cuda.memory_reserved() <= peak


def test_zero_copy_with_cupy_and_torch():
    import cupy as cp

    t = rustgrad.arange(6.0, device="cuda")
    c = cp.asarray(t)  # __cuda_array_interface__
    c[0] = 42
    assert t[0].item() == 42.0 and t.__cuda_array_interface__["data"][0] == t.data_ptr()
    tt = torch.from_dlpack(t)
    assert tt.device.type == "cuda"
    tt[1] = 7
    assert t[1].item() == 7.0
    back = rustgrad.from_dlpack(tt)
    assert back.is_cuda and back.data_ptr() == t.data_ptr()
    cap = rustgrad.utils.dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(tt))
    assert cap.is_cuda and cap.data_ptr() == t.data_ptr()
    from_cp = rustgrad.from_dlpack(cp.arange(3.0))
    assert from_cp.is_cuda and from_cp.tolist() == [0.0, 1.0, 2.0]
    tc = torch.ones(2, device="cuda")
    as_t = rustgrad.as_tensor(tc)  # __cuda_array_interface__: shared
    assert as_t.is_cuda and as_t.data_ptr() == tc.data_ptr()
    c = cp.arange(3.0)
    copied = rustgrad.tensor(c)
    assert copied.is_cuda and copied.data_ptr() != c.data.ptr and copied.tolist() == [0.0, 1.0, 2.0]
    assert rustgrad.as_tensor(c).data_ptr() == c.data.ptr
    assert t.__dlpack_device__() == (2, 0)
    with pytest.raises(RuntimeError, match="requires grad"):
        rustgrad.ones(2, device="cuda", requires_grad=True).__cuda_array_interface__  # noqa: B018


def test_module_cuda_and_cpu():
    m = rustgrad.nn.Linear(3, 2).cuda()
    assert m.weight.is_cuda and m(rustgrad.randn(4, 3).cuda()).is_cuda
    m.cpu()
    assert not m.weight.is_cuda


def test_autocast_float16_on_cuda():
    a = rustgrad.randn(8, 8, device="cuda")
    with rustgrad.autocast("cuda", dtype=rustgrad.float16):
        y = a @ a
        s = y.float().sum()
    assert y.dtype == rustgrad.float16 and s.dtype == rustgrad.float32
    with torch.autocast("cuda", dtype=torch.float16):
        ty = torch.randn(8, 8, device="cuda") @ torch.randn(8, 8, device="cuda")
    assert str(ty.dtype) == str(y.dtype)
