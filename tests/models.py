"""Shared helpers for the nn and optim tests: identical models in both libraries."""

from __future__ import annotations

from typing import Any, Dict

import numpy as np
import rustgrad
import torch


def copy_state(src: Any, dst: Any, lib: Any) -> None:
    """Loads src's state_dict (either library) into dst, converting through NumPy."""
    state = {k: lib.tensor(v.detach().numpy().copy()) for k, v in src.state_dict().items()}
    dst.load_state_dict(state)


def twin(build: Any, seed: int = 0) -> Any:
    """The same architecture in torch and rustgrad, with torch's initial weights in both."""
    torch.manual_seed(seed)
    tm = build(torch)
    rm = build(rustgrad)
    copy_state(tm, rm, rustgrad)
    return tm, rm


def state_arrays(m: Any) -> Dict[str, np.ndarray]:
    return {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}


def assert_close(r: Any, t: Any, rtol: float = 1e-5, atol: float = 1e-6, what: str = "") -> None:
    rv = r.detach().numpy() if hasattr(r, "detach") else np.asarray(r)
    tv = t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)
    assert rv.shape == tv.shape, f"{what}: shape {rv.shape} != {tv.shape}"
    np.testing.assert_allclose(rv, tv, rtol=rtol, atol=atol, err_msg=what)


def assert_states_close(rm: Any, tm: Any, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    rs, ts = state_arrays(rm), state_arrays(tm)
    assert list(rs) == list(ts)
    for k in ts:
        np.testing.assert_allclose(rs[k], ts[k], rtol=rtol, atol=atol, err_msg=k)


def mlp(lib: Any) -> Any:
    nn = lib.nn
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(),
                         nn.Linear(16, 4))


def cnn(lib: Any) -> Any:
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(),
        nn.MaxPool2d(2), nn.Conv2d(4, 6, 3), nn.ReLU(), nn.Flatten(), nn.Linear(6 * 2 * 2, 4))
