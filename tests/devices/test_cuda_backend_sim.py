"""rustgrad's CUDA backend (_backends/cuda.py) run over the strict CuPy double (strict_cupy):
placement on cuda:N, transfers, backward, device identity with CUDA's names, storage accounting
in slot 1+N, __cuda_array_interface__. What this cannot show is CuPy's own kernels and
asynchrony: tests/cuda does, on a GPU."""

import numpy as np
import pytest
import rustgrad
import torch

from . import strict_cupy

cuda = rustgrad.cuda


@pytest.fixture
def sim(monkeypatch):
    return strict_cupy.install(monkeypatch)


@pytest.mark.xfail(strict=True, raises=ValueError,
                   reason="no device guard: an op on cuda:1 runs on CuPy's current device")
def test_factories_and_moves_place_tensors_on_cuda_n(sim):
    assert cuda.is_available() and cuda.device_count() == 2
    for t in (rustgrad.ones(2, device="cuda"), rustgrad.randn(2, device="cuda:0"),
              rustgrad.tensor([1.0, 2.0], device=rustgrad.device("cuda", 0)),
              rustgrad.ones(2).cuda(), rustgrad.ones(2).to("cuda")):
        assert t.device == rustgrad.device("cuda", 0) and t.is_cuda
    for t in (rustgrad.zeros(2, device="cuda:1"), rustgrad.randn(2, device="cuda:1"),
              rustgrad.arange(3, device="cuda:1"), rustgrad.ones(2).cuda(1),
              rustgrad.ones(2).to("cuda:1"), rustgrad.ones(2).to(1)):
        assert t.device == "cuda:1" and (t * 2).device == "cuda:1"
    with cuda.device(1):
        assert rustgrad.ones(1, device="cuda").device == "cuda:1"  # the current device
    with pytest.raises(RuntimeError, match="cuda device index 2 is out of range"):
        rustgrad.ones(1, device="cuda:2")


@pytest.mark.xfail(strict=True, raises=ValueError,
                   reason="no device guard: an op on cuda:1 runs on CuPy's current device")
def test_backward_runs_and_gradients_land_on_each_leafs_device(sim):
    x = rustgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = rustgrad.tensor([0.5, -1.0, 2.0], device="cuda:1", requires_grad=True)
    y = rustgrad.nn.functional.gelu(x.cuda(1) * w).sum()
    y.backward()
    assert (x.grad.device, w.grad.device) == ("cpu", "cuda:1")
    tx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    tw = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    torch.nn.functional.gelu(tx * tw).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(w.grad.cpu().numpy(), tw.grad.numpy(), rtol=1e-6)


@pytest.mark.xfail(strict=True, raises=ValueError,
                   reason="no device guard: an op on cuda:1 runs on CuPy's current device")
def test_mixing_devices_raises_with_cudas_names(sim):
    a, b = rustgrad.ones(2, device="cuda:0"), rustgrad.ones(2, device="cuda:1")
    with pytest.raises(RuntimeError, match=r"^Expected all tensors to be on the same device, but "
                                           r"found at least two devices, cuda:0 and cuda:1!$"):
        a + b
    with pytest.raises(RuntimeError, match="cuda:0 and cpu!"):
        rustgrad.cat([a, rustgrad.ones(2)])
    lin = rustgrad.nn.Linear(2, 2).cuda(1)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        lin(a)
    assert lin(b).device == "cuda:1"


def test_memory_allocated_counts_tensors_on_each_gpu(sim):
    base0, base1 = cuda.memory_allocated(0), cuda.memory_allocated(1)
    t = rustgrad.zeros(256, device="cuda:1")
    assert cuda.memory_allocated(1) - base1 == 1024
    assert cuda.memory_allocated(0) == base0
    with cuda.device(1):
        assert cuda.memory_allocated() - base1 == 1024
    del t
    assert cuda.memory_allocated("cuda:1") == base1


def test_cuda_array_interface_and_module_moves(sim):
    t = rustgrad.arange(4.0, device="cuda")
    cai = t.__cuda_array_interface__
    assert cai["data"][0] == t.data_ptr() and cai["shape"] == (4,)
    with pytest.raises(RuntimeError, match="requires grad"):
        rustgrad.ones(2, device="cuda", requires_grad=True).__cuda_array_interface__  # noqa: B018
    m = rustgrad.nn.Sequential(rustgrad.nn.Linear(3, 2), rustgrad.nn.BatchNorm1d(2)).cuda()
    assert all(p.is_cuda for p in list(m.parameters()) + list(m.buffers()))
    out = m(rustgrad.randn(4, 3, device="cuda"))
    out.sum().backward()
    assert out.is_cuda and all(p.grad.is_cuda for p in m.parameters())
    m.cpu()
    assert not any(p.is_cuda for p in m.parameters())


def test_an_sgd_step_on_cuda(sim):
    model = rustgrad.nn.Linear(3, 1).to("cuda")
    opt = rustgrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    before = model.weight.detach().cpu().numpy().copy()
    loss = rustgrad.nn.functional.mse_loss(model(rustgrad.ones(2, 3, device="cuda")),
                                           rustgrad.zeros(2, 1, device="cuda"))
    loss.backward()
    opt.step()
    assert model.weight.is_cuda and not np.allclose(model.weight.detach().cpu().numpy(), before)


def test_the_gpu_bench_runs_its_cuda_path(sim, capsys, monkeypatch):
    import pathlib

    monkeypatch.syspath_prepend(str(pathlib.Path(__file__).resolve().parents[2] / "benches"))
    import bench_gpu

    assert bench_gpu.main(["--device", "cuda", "--quick", "--only", "rustgrad", "--rounds", "1",
                           "--budget", "1"]) == 0
    out, err = capsys.readouterr()
    assert "device: Fake GPU 0" in out and "failed" not in err, err
    rows = [ln for ln in out.splitlines() if ln.startswith(("op chain", "MLP", "GPT"))]
    assert len(rows) == 5 and all(float(r.split()[-3]) > 0 for r in rows)


def test_cuda_method_forms(sim):
    t = rustgrad.ones(2)
    assert t.cuda(1, True).device == "cuda:1"
    assert t.cuda(non_blocking=True).device == "cuda:0"
    assert t.cuda(rustgrad.device("cuda:1")).device == "cuda:1"
    assert t.cuda("cuda:1", memory_format=rustgrad.preserve_format).device == "cuda:1"
    c = t.cuda()
    assert c.cuda() is c and c.cpu().device == "cpu"


def test_a_move_between_gpus_copies_device_to_device(sim):
    x = rustgrad.tensor([1.0, 2.0], device="cuda:0", requires_grad=True)
    strict_cupy.LAUNCHES.clear()
    y = x.to("cuda:1")
    assert strict_cupy.LAUNCHES["copy"] == 1  # no trip through host memory
    assert strict_cupy.LAUNCHES["asnumpy"] == 0
    assert y.device == "cuda:1" and y.cpu().tolist() == [1.0, 2.0]
    assert strict_cupy.LAUNCHES["asnumpy"] == 1
