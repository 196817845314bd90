"""Saving and loading: a checkpoint resume that continues the run exactly, state_dict round
trips (buffers, strict and partial loads, optimizer state), and mixed objects through save/load."""

from __future__ import annotations

import io
import os
import tempfile
from types import ModuleType
from typing import Callable

import numpy as np
import pytest

from ._common import assert_matches_torch, data, err_head, params_of, program, programs_in, seed_params


@program
def checkpoint_resume(torch):
    nn = torch.nn
    x = torch.from_numpy(data((10, 4), 22))
    y = torch.from_numpy(data((10, 1), 23))

    def make():
        model = seed_params(torch, nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 1)), 24)
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
        sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
        return model, opt, sched

    def train(model, opt, sched, steps):
        out = []
        for _ in range(steps):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            sched.step()
            out.append(loss.item())
        return out

    model, opt, sched = make()
    straight = train(model, opt, sched, 6)

    model, opt, sched = make()
    first = train(model, opt, sched, 3)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ckpt.pt")
        torch.save({"model": model.state_dict(), "optim": opt.state_dict(),
                    "sched": sched.state_dict(), "epoch": 3}, path)
        ckpt = torch.load(path)
    model2, opt2, sched2 = make()
    model2.load_state_dict(ckpt["model"])
    opt2.load_state_dict(ckpt["optim"])
    sched2.load_state_dict(ckpt["sched"])
    resumed = first + train(model2, opt2, sched2, 3)
    matches = bool(np.allclose(straight, resumed, rtol=1e-6, atol=1e-7))
    return {"straight": straight, "resumed": resumed, "matches": matches, "epoch": ckpt["epoch"],
            "step": ckpt["optim"]["state"][0]["step"], "lr": sched2.get_last_lr(),
            "final": params_of(model2), "after_three": params_of(model)}


@program
def state_dict_round_trip(torch):
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))
            self.fc = nn.Linear(2, 2)
            self.register_buffer("scale", torch.tensor(2.0))
            self.register_buffer("cache", torch.zeros(2), persistent=False)

        def forward(self, x):
            return self.fc(self.features(x).mean((2, 3))) * self.scale

    src = seed_params(torch, Net(), 42)
    sd = src.state_dict()
    keys = list(sd.keys())
    shapes = {k: tuple(v.shape) for k, v in sd.items()}

    dst = Net()
    dst.load_state_dict(sd)
    x = torch.from_numpy(data((2, 1, 5, 5), 43))
    same_out = torch.allclose(src(x), dst(x))

    partial = {k: v for k, v in sd.items() if not k.startswith("fc.")}
    partial["extra.weight"] = torch.zeros(1)
    res = dst.load_state_dict(partial, strict=False)
    strict_err = err_head(lambda: dst.load_state_dict(partial), 6)
    shape_err = err_head(
        lambda: dst.load_state_dict({**sd, "fc.bias": torch.zeros(3)}), 5)

    buf = io.BytesIO()
    torch.save(src.state_dict(), buf)
    buf.seek(0)
    loaded = torch.load(buf)
    fresh = Net()
    fresh.load_state_dict(loaded)

    opt = torch.optim.SGD(src.parameters(), lr=0.1, momentum=0.9)
    src(x).sum().backward()
    opt.step()
    osd = opt.state_dict()
    return {"keys": keys, "shapes": shapes, "same_out": same_out, "missing": list(res.missing_keys),
            "unexpected": list(res.unexpected_keys), "strict_err": strict_err,
            "shape_err": shape_err, "loaded": dict(loaded), "fresh_out": fresh(x),
            "detached": [v.requires_grad for v in sd.values()],
            "opt_keys": list(osd.keys()), "opt_group_keys": sorted(osd["param_groups"][0].keys()),
            "opt_params": osd["param_groups"][0]["params"], "opt_state_keys": list(osd["state"]),
            "momentum": [osd["state"][i]["momentum_buffer"] for i in sorted(osd["state"])]}


@program
def save_load_mixed_objects(torch):
    nn = torch.nn
    # (whole modules: tests/nn/test_save_whole_module.py; state dicts use the safe format)
    model = seed_params(torch, nn.Sequential(nn.Linear(3, 2), nn.Tanh()), 108)
    x = torch.from_numpy(data((2, 3), 109))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "run.pt")
        torch.save({"w": model[0].weight, "step": 3, "name": "run1", "lst": [1.5, torch.ones(2)],
                    "nested": {"sd": model.state_dict(), "shape": (2, 3)}}, path)
        blob = torch.load(path)
    fresh = nn.Sequential(nn.Linear(3, 2), nn.Tanh())
    fresh.load_state_dict(blob["nested"]["sd"])
    return {"blob": blob, "blob_req": blob["w"].requires_grad, "out": fresh(x),
            "same": torch.equal(fresh(x), model(x))}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
