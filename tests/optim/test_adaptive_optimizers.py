"""Adadelta, Adamax, NAdam and RAdam against torch: every parameter after each of 20 steps
(float32 and float64, same initial weights and data), state_dict layout and round trips, param
groups, schedulers, and torch's argument errors (LBFGS's among them; its own tests are in
test_lbfgs.py)."""

from __future__ import annotations

import copy
from types import ModuleType
from typing import Any, Callable, List, Tuple

import numpy as np
import pytest
import rustgrad
import torch

from ..models import mlp, twin
from ._common import X, Y, _assert_trajectories_close, _to_rustgrad

CONFIGS = [
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1, maximize=True)),
    ("Adamax", dict(lr=1e-2)),
    ("Adamax", dict(lr=1e-2, betas=(0.8, 0.95), weight_decay=0.1, maximize=True)),
    ("NAdam", dict(lr=1e-2)),
    ("NAdam", dict(lr=1e-2, weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=1e-2)),
    ("RAdam", dict(lr=1e-2, betas=(0.8, 0.9), weight_decay=0.1)),
    ("RAdam", dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
]
IDS = [f"{n}-{'-'.join(k) or 'defaults'}" for n, k in CONFIGS]


def _train(lib: ModuleType, model: Any, opt: Any, steps: int, dtype: str,
           after_step: Callable[[], None] = lambda: None) -> List[List[np.ndarray]]:
    """Cross-entropy steps on the fixed data; the parameters after every step."""
    F = lib.nn.functional
    x, y = lib.tensor(X, dtype=getattr(lib, dtype)), lib.tensor(Y)
    trajectory = []
    for _ in range(steps):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        after_step()
        trajectory.append([p.detach().numpy().copy() for p in model.parameters()])
    return trajectory


def _twins(dtype: str) -> Tuple[Any, Any]:
    tm, rm = twin(mlp)
    if dtype == "float64":
        tm.double()
        rm.double()
    return tm, rm


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=IDS)
def test_optimizer_20_steps_match_torch(name: str, kwargs: dict, dtype: str) -> None:
    tm, rm = _twins(dtype)
    to = getattr(torch.optim, name)(tm.parameters(), **kwargs)
    ro = getattr(rustgrad.optim, name)(rm.parameters(), **kwargs)

    tt = _train(torch, tm, to, 20, dtype)
    rt = _train(rustgrad, rm, ro, 20, dtype)

    _assert_trajectories_close(rt, tt, dtype)


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=IDS)
def test_optimizer_state_dict_layout_equals_torch(name: str, kwargs: dict) -> None:
    tm, rm = _twins("float32")
    to = getattr(torch.optim, name)(tm.parameters(), **kwargs)
    ro = getattr(rustgrad.optim, name)(rm.parameters(), **kwargs)
    _train(torch, tm, to, 3, "float32")
    _train(rustgrad, rm, ro, 3, "float32")

    ts, rs = to.state_dict(), ro.state_dict()

    assert rs["param_groups"] == ts["param_groups"]
    assert list(rs["state"]) == list(ts["state"])
    for i, tstate in ts["state"].items():
        assert list(rs["state"][i]) == list(tstate)
        for k, tv in tstate.items():
            rv = rs["state"][i][k]
            assert str(rv.dtype) == str(tv.dtype) and tuple(rv.shape) == tuple(tv.shape), k
            np.testing.assert_allclose(rv.numpy(), tv.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("name,kwargs", CONFIGS[1::2], ids=IDS[1::2])
def test_optimizer_resumes_from_torchs_state_dict(name: str, kwargs: dict) -> None:
    tm, rm = _twins("float32")
    to = getattr(torch.optim, name)(tm.parameters(), **kwargs)
    _train(torch, tm, to, 5, "float32")
    rm.load_state_dict({k: rustgrad.tensor(v.numpy().copy())
                        for k, v in tm.state_dict().items()})
    ro = getattr(rustgrad.optim, name)(rm.parameters())

    ro.load_state_dict(_to_rustgrad(to.state_dict()))
    tt = _train(torch, tm, to, 5, "float32")
    rt = _train(rustgrad, rm, ro, 5, "float32")

    assert ro.param_groups[0]["lr"] == kwargs.get("lr", ro.defaults["lr"])
    _assert_trajectories_close(rt, tt, "float32")


@pytest.mark.parametrize("name,kwargs", CONFIGS[1::2], ids=IDS[1::2])
def test_optimizer_state_dict_round_trip_resumes_identically(name: str, kwargs: dict) -> None:
    _, a = _twins("float32")
    b = copy.deepcopy(a)
    oa = getattr(rustgrad.optim, name)(a.parameters(), **kwargs)
    _train(rustgrad, a, oa, 3, "float32")
    b.load_state_dict(a.state_dict())
    ob = getattr(rustgrad.optim, name)(b.parameters(), **kwargs)

    ob.load_state_dict(copy.deepcopy(oa.state_dict()))
    ta = _train(rustgrad, a, oa, 3, "float32")
    tb = _train(rustgrad, b, ob, 3, "float32")

    for pa, pb in zip(ta[-1], tb[-1]):
        np.testing.assert_array_equal(pa, pb)


@pytest.mark.parametrize("name", ["Adadelta", "Adamax", "NAdam", "RAdam"])
def test_optimizer_param_groups_with_own_options_match_torch(name: str) -> None:
    tm, rm = _twins("float32")

    def groups(m: Any) -> list:
        return [{"params": m[0].parameters(), "lr": 0.05, "weight_decay": 0.1},
                {"params": list(m[2].parameters()) + list(m[4].parameters())}]

    to = getattr(torch.optim, name)(groups(tm), lr=0.01)
    ro = getattr(rustgrad.optim, name)(groups(rm), lr=0.01)

    tt = _train(torch, tm, to, 10, "float32")
    rt = _train(rustgrad, rm, ro, 10, "float32")

    assert [g["lr"] for g in ro.param_groups] == [0.05, 0.01]
    _assert_trajectories_close(rt, tt, "float32")


@pytest.mark.parametrize("name", ["Adadelta", "Adamax", "NAdam", "RAdam"])
def test_optimizer_step_is_in_place_and_skips_params_without_grad(lib: ModuleType,
                                                                  name: str) -> None:
    used, unused = lib.nn.Linear(2, 1), lib.nn.Linear(2, 1)
    opt = getattr(lib.optim, name)(list(used.parameters()) + list(unused.parameters()),
                                   weight_decay=0.1)
    w = used.weight
    ptr, v = w.data_ptr(), w._version
    before = unused.weight.detach().clone()

    used(lib.ones(1, 2)).sum().backward()
    opt.step()

    assert used.weight is w and w.data_ptr() == ptr and w._version > v
    assert w.is_leaf and w.grad_fn is None
    assert unused.weight.tolist() == before.tolist()
    assert len(opt.state) == 2 and unused.weight not in opt.state


def test_steplr_on_nadam_matches_torch() -> None:
    tm, rm = _twins("float32")
    to = torch.optim.NAdam(tm.parameters(), lr=0.02)
    ro = rustgrad.optim.NAdam(rm.parameters(), lr=0.02)
    ts = torch.optim.lr_scheduler.StepLR(to, step_size=5, gamma=0.5)
    rs = rustgrad.optim.lr_scheduler.StepLR(ro, step_size=5, gamma=0.5)

    tt = _train(torch, tm, to, 20, "float32", ts.step)
    rt = _train(rustgrad, rm, ro, 20, "float32", rs.step)

    assert rs.get_last_lr() == ts.get_last_lr()
    assert rs.state_dict() == ts.state_dict()
    _assert_trajectories_close(rt, tt, "float32")


@pytest.mark.parametrize("name", ["Adadelta", "Adamax", "RAdam"])
def test_cosine_and_exponential_schedulers_drive_new_optimizers_as_torch(name: str) -> None:
    tm, rm = _twins("float32")
    to = getattr(torch.optim, name)(tm.parameters(), lr=0.05)
    ro = getattr(rustgrad.optim, name)(rm.parameters(), lr=0.05)
    tsch = torch.optim.lr_scheduler.CosineAnnealingLR(to, T_max=10)
    rsch = rustgrad.optim.lr_scheduler.CosineAnnealingLR(ro, T_max=10)

    tt = _train(torch, tm, to, 12, "float32", tsch.step)
    rt = _train(rustgrad, rm, ro, 12, "float32", rsch.step)

    np.testing.assert_allclose(rsch.get_last_lr(), tsch.get_last_lr(), rtol=1e-12)
    _assert_trajectories_close(rt, tt, "float32")


def test_new_optimizers_repr_equals_torch() -> None:
    for name in ["Adadelta", "Adamax", "NAdam", "RAdam", "LBFGS"]:
        t = getattr(torch.optim, name)([torch.zeros(1, requires_grad=True)])
        r = getattr(rustgrad.optim, name)([rustgrad.zeros(1, requires_grad=True)])
        assert repr(r) == repr(t)


ERRORS = [
    ("Adadelta", dict(lr=-1.0), "Invalid learning rate: -1.0"),
    ("Adadelta", dict(rho=1.5), "Invalid rho value: 1.5"),
    ("Adadelta", dict(eps=-1e-6), "Invalid epsilon value: -1e-06"),
    ("Adadelta", dict(weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
    ("Adamax", dict(lr=-1.0), "Invalid learning rate: -1.0"),
    ("Adamax", dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    ("Adamax", dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    ("Adamax", dict(eps=-1.0), "Invalid epsilon value: -1.0"),
    ("NAdam", dict(lr=-1.0), "Invalid learning rate: -1.0"),
    ("NAdam", dict(momentum_decay=-1.0), "Invalid momentum_decay value: -1.0"),
    ("NAdam", dict(weight_decay=-1.0), "Invalid weight_decay value: -1.0"),
    ("NAdam", dict(betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
    ("RAdam", dict(lr=-1.0), "Invalid learning rate: -1.0"),
    ("RAdam", dict(eps=-1.0), "Invalid epsilon value: -1.0"),
    ("RAdam", dict(betas=(-0.5, 0.9)), "Invalid beta parameter at index 0: -0.5"),
    ("LBFGS", dict(lr=-1.0), "Invalid learning rate: -1.0"),
]


@pytest.mark.parametrize("name,kwargs,message", ERRORS,
                         ids=[f"{n}-{m}" for n, _, m in ERRORS])
def test_invalid_arguments_raise_torchs_value_error(lib: ModuleType, name: str, kwargs: dict,
                                                     message: str) -> None:
    p = [lib.nn.Parameter(lib.zeros(2))]

    with pytest.raises(ValueError) as info:
        getattr(lib.optim, name)(p, **kwargs)

    assert str(info.value) == message


@pytest.mark.parametrize("name", ["Adadelta", "Adamax", "NAdam", "RAdam", "LBFGS"])
def test_tensor_lr_with_many_elements_raises_value_error(lib: ModuleType, name: str) -> None:
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        getattr(lib.optim, name)([lib.nn.Parameter(lib.zeros(2))], lr=lib.ones(2))
