"""Rprop and ASGD against torch: every parameter after each of 25 steps (float32 and float64, same
initial weights and data), state_dict layout, state_dict resumes, argument errors (CyclicLR's
sequences are in test_lr_scheduler.py)."""

from __future__ import annotations

from types import ModuleType
from typing import Any, List, Optional

import numpy as np
import pytest
import rustgrad
import torch

from ..models import mlp, twin
from ..parity import parity, same_error

rng = np.random.default_rng(0)
X = rng.standard_normal((32, 8))
Y = rng.integers(0, 4, 32)
TOL = {"float32": dict(rtol=1e-5, atol=2e-6), "float64": dict(rtol=1e-10, atol=1e-12)}

CONFIGS = [
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-4, 0.02))),
    # (a small lr: maximizing saturates the softmax, and the signs of its vanishing gradients
    # are rounding noise that a sign-driven method then follows)
    ("Rprop", dict(lr=0.001, maximize=True)),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.1, lambd=1e-2, alpha=0.5, t0=5, weight_decay=0.1)),
    ("ASGD", dict(lr=0.05, t0=3, maximize=True)),
]
IDS = [f"{n}-{'-'.join(k) or 'defaults'}" for n, k in CONFIGS]


def _train(lib: ModuleType, model: Any, opt: Any, steps: int, dtype: str,
           sched: Any = None) -> List[List[np.ndarray]]:
    F = lib.nn.functional
    x, y = lib.tensor(X, dtype=getattr(lib, dtype)), lib.tensor(Y)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        if sched is not None:
            sched.step()
        out.append([p.detach().numpy().copy() for p in model.parameters()])
    return out


def _close(rt: List[List[np.ndarray]], tt: List[List[np.ndarray]], dtype: str,
           atol: Optional[float] = None) -> None:
    """(torch fuses a*b+c into one rounding where rustgrad rounds twice: _fma in optimizer.py)"""
    tol = dict(TOL[dtype], **({} if atol is None else {"atol": atol}))
    assert len(rt) == len(tt)
    for step, (rps, tps) in enumerate(zip(rt, tt), 1):
        for i, (rp, tp) in enumerate(zip(rps, tps)):
            assert rp.dtype == tp.dtype == np.dtype(dtype)
            np.testing.assert_allclose(rp, tp, **tol, err_msg=f"step {step} param {i}")


def _twins(dtype: str) -> Any:
    tm, rm = twin(mlp)
    if dtype == "float64":
        tm.double()
        rm.double()
    return tm, rm


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=IDS)
def test_optimizer_25_steps_match_torch(name: str, kwargs: dict, dtype: str) -> None:
    tm, rm = _twins(dtype)
    to = getattr(torch.optim, name)(tm.parameters(), **kwargs)
    ro = getattr(rustgrad.optim, name)(rm.parameters(), **kwargs)
    _close(_train(rustgrad, rm, ro, 25, dtype), _train(torch, tm, to, 25, dtype), dtype)


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=IDS)
def test_optimizer_state_dict_matches_torch(name: str, kwargs: dict) -> None:
    tm, rm = _twins("float64")
    to = getattr(torch.optim, name)(tm.parameters(), **kwargs)
    ro = getattr(rustgrad.optim, name)(rm.parameters(), **kwargs)
    _train(torch, tm, to, 4, "float64")
    _train(rustgrad, rm, ro, 4, "float64")
    ts, rs = to.state_dict(), ro.state_dict()
    assert rs["param_groups"] == ts["param_groups"]
    for i, tstate in ts["state"].items():
        assert list(rs["state"][i]) == list(tstate)
        for k, tv in tstate.items():
            rv = rs["state"][i][k]
            assert str(rv.dtype) == str(tv.dtype) and tuple(rv.shape) == tuple(tv.shape), k
            np.testing.assert_allclose(rv.numpy(), tv.numpy(), rtol=1e-9, atol=1e-12, err_msg=k)


@pytest.mark.parametrize("name,kwargs", CONFIGS[1::2], ids=IDS[1::2])
def test_optimizer_resumes_from_torchs_state_dict(name: str, kwargs: dict) -> None:
    tm, rm = _twins("float64")
    to = getattr(torch.optim, name)(tm.parameters(), **kwargs)
    _train(torch, tm, to, 5, "float64")
    rm.load_state_dict({k: rustgrad.tensor(v.numpy().copy()) for k, v in tm.state_dict().items()})
    ro = getattr(rustgrad.optim, name)(rm.parameters())

    def conv(o: Any) -> Any:
        if isinstance(o, torch.Tensor):
            return rustgrad.tensor(o.numpy().copy())
        if isinstance(o, dict):
            return {k: conv(v) for k, v in o.items()}
        if isinstance(o, list):
            return [conv(v) for v in o]
        return o
    ro.load_state_dict(conv(to.state_dict()))
    # torch resumed the same way (loading casts float state to the parameters' dtype)
    to2 = getattr(torch.optim, name)(tm.parameters())
    to2.load_state_dict(to.state_dict())
    _close(_train(rustgrad, rm, ro, 5, "float64"), _train(torch, tm, to2, 5, "float64"), "float64",
           atol=1e-11)


def test_optimizer_argument_errors_match_torch() -> None:
    p = lambda L: [L.nn.Parameter(L.ones(2))]  # noqa: E731
    same_error(lambda L: L.optim.Rprop(p(L), lr=-1), "Invalid learning rate: -1")
    same_error(lambda L: L.optim.Rprop(p(L), etas=(1.5, 1.2)), "Invalid eta values: 1.5, 1.2")
    same_error(lambda L: L.optim.ASGD(p(L), lr=-0.5), "Invalid learning rate: -0.5")
    same_error(lambda L: L.optim.ASGD(p(L), weight_decay=-1), "Invalid weight_decay value: -1")


def test_rprop_with_a_sign_change_and_zero_grad() -> None:
    # a quadratic whose gradient flips sign and one parameter whose gradient is always 0
    def prog(L: Any) -> Any:
        w = L.nn.Parameter(L.tensor([3.0, -2.0, 0.5], dtype=L.float64))
        opt = L.optim.Rprop([w], lr=1.0, step_sizes=(1e-3, 2.0))
        traj = []
        for _ in range(12):
            opt.zero_grad()
            ((w - L.tensor([1.0, 0.0, 0.5], dtype=L.float64)) ** 2 * L.tensor(
                [1.0, 1.0, 0.0], dtype=L.float64)).sum().backward()
            opt.step()
            traj.append(w.detach().clone())
        return traj, opt.state[w]["step_size"], opt.state[w]["prev"], opt.state[w]["step"]
    parity(prog)


def test_exports() -> None:
    assert "Rprop" in rustgrad.optim.__all__ and "ASGD" in rustgrad.optim.__all__
    assert "CyclicLR" in rustgrad.optim.lr_scheduler.__all__
