"""nn, optim and save/load on the simulated GPU (the strict CuPy double, tests/devices/
strict_cupy.py): every array stays on the device, as CuPy arrays stay on a GPU."""

from __future__ import annotations

import io

import rustgrad

from ..devices import strict_cupy


def _on_sim_cuda(t) -> bool:
    return str(t.device) == "cuda:0" and isinstance(t._data, strict_cupy.ndarray)


def test_training_step_on_sim_cuda_device_keeps_everything_there(sim_cuda):
    nn = rustgrad.nn
    rustgrad.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                      nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.1), nn.Linear(16, 3)).to("cuda")
    opt = rustgrad.optim.Adam(m.parameters(), lr=1e-2)
    x = rustgrad.randn(5, 1, 4, 4).to("cuda")
    y = rustgrad.tensor([0, 1, 2, 0, 1]).to("cuda")

    for _ in range(2):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(m(x), y, label_smoothing=0.1)
        loss.backward()
        nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()

    assert _on_sim_cuda(loss)
    assert all(_on_sim_cuda(p) and _on_sim_cuda(p.grad) for p in m.parameters())
    assert all(_on_sim_cuda(b) for b in m.buffers())
    assert all(_on_sim_cuda(t) for s in opt.state.values() for k, t in s.items() if k != "step")


def test_save_load_restores_simulated_gpu(sim_cuda):
    t = rustgrad.ones(3).to("cuda")
    buf = io.BytesIO()
    rustgrad.save({"t": t}, buf)
    buf.seek(0)

    r = rustgrad.load(buf)["t"]
    c = rustgrad.load(io.BytesIO(buf.getvalue()), map_location="cpu")["t"]

    assert _on_sim_cuda(r) and r.tolist() == [1.0, 1.0, 1.0]
    assert str(c.device) == "cpu"
