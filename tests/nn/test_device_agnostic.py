"""nn, optim and save/load on the NumPy-backed fake device (tests/fake_backend.py):
every array stays on the device, as CuPy arrays would stay on a GPU."""

from __future__ import annotations

import io

import rustgrad


def _on_fake(t) -> bool:
    return str(t.device) == "fake:0" and type(t._data).__name__ == "FakeArray"


def test_training_step_on_fake_device_keeps_everything_there():
    nn = rustgrad.nn
    rustgrad.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                      nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.1), nn.Linear(16, 3)).to("fake")
    opt = rustgrad.optim.Adam(m.parameters(), lr=1e-2)
    x = rustgrad.randn(5, 1, 4, 4).to("fake")
    y = rustgrad.tensor([0, 1, 2, 0, 1]).to("fake")

    for _ in range(2):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(m(x), y, label_smoothing=0.1)
        loss.backward()
        nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()

    assert _on_fake(loss)
    assert all(_on_fake(p) and _on_fake(p.grad) for p in m.parameters())
    assert all(_on_fake(b) for b in m.buffers())
    assert all(_on_fake(t) for s in opt.state.values() for k, t in s.items() if k != "step")


def test_save_load_restores_fake_device():
    t = rustgrad.ones(3).to("fake")
    buf = io.BytesIO()
    rustgrad.save({"t": t}, buf)
    buf.seek(0)

    r = rustgrad.load(buf)["t"]
    c = rustgrad.load(io.BytesIO(buf.getvalue()), map_location="cpu")["t"]

    assert _on_fake(r) and r.tolist() == [1.0, 1.0, 1.0]
    assert str(c.device) == "cpu"
