"""Device dispatch, written once and run per device (cpu, the simulated GPU of the strict CuPy
double, and cuda where CuPy sees a GPU)."""

import numpy as np
import pytest
import rustgrad


def _slot(device):
    return {"cpu": 0, "cuda": 1}[device]


def test_device_factories_place_tensors_on_the_device(device):
    t = rustgrad.ones(2, 3, device=device)
    assert t.device.type == device
    assert rustgrad.zeros(2, device=device).device.type == device
    assert rustgrad.randn(4, device=device).device.type == device


def test_device_ops_and_backward_stay_on_the_device(device):
    x = rustgrad.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    w = rustgrad.tensor([[1.0], [0.5], [-1.0]], device=device, requires_grad=True)
    y = ((x * 2 + 1).exp().log() @ w).sum()
    assert y.device.type == device
    y.backward()
    assert x.grad.device.type == device and w.grad.device.type == device
    np.testing.assert_allclose(x.grad.cpu().numpy(), [2.0, 1.0, -2.0], rtol=1e-6)
    np.testing.assert_allclose(w.grad.cpu().numpy().ravel(), [3.0, 5.0, 7.0], rtol=1e-6)


def test_device_transfer_is_differentiable_back_to_the_source(device):
    x = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    y = x.to(device) * 3
    assert y.device.type == device
    y.sum().backward()
    assert x.grad.device.type == "cpu"
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_device_cross_device_op_raises_and_changes_nothing(device, request):
    if device == "cpu":
        request.getfixturevalue("sim_cuda")
        other = "cuda"
    else:
        other = "cpu"
    a = rustgrad.tensor([1.0, 2.0], device=device)
    b = rustgrad.tensor([3.0, 4.0], device=other)
    before = (a.cpu().numpy().copy(), b.cpu().numpy().copy(), a._version, b._version)
    for op in (lambda: a + b, lambda: a * b, lambda: a.add_(b), lambda: a @ b):
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            op()
    np.testing.assert_array_equal(a.cpu().numpy(), before[0])
    np.testing.assert_array_equal(b.cpu().numpy(), before[1])
    assert (a._version, b._version) == before[2:]


def test_device_storage_accounting_counts_per_device(device):
    slot = _slot(device)
    n0, b0 = rustgrad._core.live_storages(slot)
    t = rustgrad.zeros(256, device=device)
    n1, b1 = rustgrad._core.live_storages(slot)
    assert (n1 - n0, b1 - b0) == (1, 256 * 4)
    d = t.detach()
    assert rustgrad._core.live_storages(slot) == (n1, b1)  # detach never copies
    del t, d
    assert rustgrad._core.live_storages(slot) == (n0, b0)


def test_device_repr_names_non_cpu_devices(device):
    t = rustgrad.tensor([1.0], device=device)
    if device == "cpu":
        assert "device=" not in repr(t)
    else:
        assert f"device='{device}:0'" in repr(t) or f"device='{device}'" in repr(t)
