"""Adadelta, Adamax, NAdam, RAdam and LBFGS against torch: every parameter after each of 20 steps
(float32 and float64, same initial weights and data), state_dict layout and round trips, param
groups, schedulers, and torch's argument errors. LBFGS runs with a closure on a least-squares
problem and on Rosenbrock, with and without the strong-Wolfe line search."""

from __future__ import annotations

import copy
from types import ModuleType
from typing import Any, Callable, List, Optional, Tuple

import numpy as np
import pytest
import rustgrad
import torch

from ..models import mlp, twin

rng = np.random.default_rng(0)
X = rng.standard_normal((32, 8))
Y = rng.integers(0, 4, 32)

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
TOL = {"float32": dict(rtol=1e-5, atol=2e-6), "float64": dict(rtol=1e-10, atol=1e-12)}


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


def _assert_trajectories_close(rt: List[List[np.ndarray]], tt: List[List[np.ndarray]],
                               dtype: str, tol: Optional[dict] = None) -> None:
    assert len(rt) == len(tt)
    for step, (rps, tps) in enumerate(zip(rt, tt), 1):
        for i, (rp, tp) in enumerate(zip(rps, tps)):
            assert rp.dtype == tp.dtype == np.dtype(dtype)
            np.testing.assert_allclose(rp, tp, **(tol or TOL[dtype]),
                                       err_msg=f"step {step} param {i}")


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


def _to_rustgrad(obj: Any) -> Any:
    """A torch state_dict with its tensors turned into rustgrad tensors."""
    if isinstance(obj, torch.Tensor):
        return rustgrad.tensor(obj.numpy().copy())
    if isinstance(obj, dict):
        return {k: _to_rustgrad(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_to_rustgrad(v) for v in obj]
    return obj


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


def test_lbfgs_with_param_groups_raises_value_error(lib: ModuleType) -> None:
    a, b = lib.nn.Parameter(lib.zeros(2)), lib.nn.Parameter(lib.zeros(2))

    with pytest.raises(ValueError, match=r"LBFGS doesn't support per-parameter options "
                                         r"\(parameter groups\)"):
        lib.optim.LBFGS([{"params": [a]}, {"params": [b]}])


def test_lbfgs_unknown_line_search_raises_runtime_error(lib: ModuleType) -> None:
    x = lib.nn.Parameter(lib.tensor([1.0, 2.0]))
    opt = lib.optim.LBFGS([x], line_search_fn="backtracking")

    def closure() -> Any:
        opt.zero_grad()
        loss = (x * x).sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)


# ---- LBFGS -----------------------------------------------------------------------------------

A = rng.standard_normal((20, 5))
B = rng.standard_normal(20)


def _least_squares(lib: ModuleType, dtype: str) -> Tuple[list, Callable[[], Any]]:
    w = lib.nn.Parameter(lib.zeros(5, dtype=getattr(lib, dtype)))
    c = lib.nn.Parameter(lib.zeros((), dtype=getattr(lib, dtype)))
    a, b = lib.tensor(A, dtype=w.dtype), lib.tensor(B, dtype=w.dtype)
    return [w, c], lambda: ((a @ w + c - b) ** 2).mean()


def _rosenbrock(lib: ModuleType, dtype: str) -> Tuple[list, Callable[[], Any]]:
    xy = lib.nn.Parameter(lib.tensor([-1.5, 2.0], dtype=getattr(lib, dtype)))
    return [xy], lambda: (1 - xy[0]) ** 2 + 100 * (xy[1] - xy[0] ** 2) ** 2


def _neg_least_squares(lib: ModuleType, dtype: str) -> Tuple[list, Callable[[], Any]]:
    params, f = _least_squares(lib, dtype)
    return params, lambda: -f()


PROBLEMS = {"least_squares": _least_squares, "rosenbrock": _rosenbrock,
            "neg_least_squares": _neg_least_squares}
LBFGS_CONFIGS = [
    dict(lr=0.5),
    dict(line_search_fn="strong_wolfe"),
    dict(lr=0.5, max_iter=4, history_size=3),
    dict(max_iter=5, history_size=2, line_search_fn="strong_wolfe"),
]
LBFGS_IDS = ["fixed", "wolfe", "fixed-short-history", "wolfe-short-history"]


def _run_lbfgs(lib: ModuleType, problem: str, dtype: str, kwargs: dict,
               steps: int) -> Tuple[List[float], List[List[np.ndarray]], Any]:
    params, f = PROBLEMS[problem](lib, dtype)
    opt = lib.optim.LBFGS(params, **kwargs)

    def closure() -> Any:
        opt.zero_grad()
        loss = f()
        loss.backward()
        return loss

    losses, trajectory = [], []
    for _ in range(steps):
        losses.append(opt.step(closure).item())
        trajectory.append([p.detach().numpy().copy() for p in params])
    return losses, trajectory, opt


def _lbfgs_state(opt: Any) -> dict:
    return opt.state[opt.param_groups[0]["params"][0]]


# torch fuses add_(alpha=) and its BLAS dot into fused multiply-adds, rustgrad rounds twice: the
# directions differ in the last bit, which L-BFGS's curvature pairs and line search carry on
# (by ~1e-7 in float64 on Rosenbrock's curved valley)
LBFGS_TOL = {"least_squares": dict(rtol=1e-10, atol=1e-12),
             "rosenbrock": dict(rtol=1e-6, atol=1e-9)}


@pytest.mark.parametrize("kwargs", LBFGS_CONFIGS, ids=LBFGS_IDS)
@pytest.mark.parametrize("problem", ["least_squares", "rosenbrock"])
def test_lbfgs_closure_steps_match_torch_float64(problem: str, kwargs: dict) -> None:
    tl, tt, to = _run_lbfgs(torch, problem, "float64", kwargs, 5)
    rl, rt, ro = _run_lbfgs(rustgrad, problem, "float64", kwargs, 5)

    np.testing.assert_allclose(rl, tl, **LBFGS_TOL[problem])
    _assert_trajectories_close(rt, tt, "float64", LBFGS_TOL[problem])
    assert _lbfgs_state(ro)["func_evals"] == _lbfgs_state(to)["func_evals"]
    assert _lbfgs_state(ro)["n_iter"] == _lbfgs_state(to)["n_iter"]


@pytest.mark.parametrize("kwargs", LBFGS_CONFIGS, ids=LBFGS_IDS)
def test_lbfgs_maximize_climbs_as_torch(kwargs: dict) -> None:
    kwargs = dict(kwargs, maximize=True)
    tl, tt, to = _run_lbfgs(torch, "neg_least_squares", "float64", kwargs, 5)
    rl, rt, ro = _run_lbfgs(rustgrad, "neg_least_squares", "float64", kwargs, 5)

    assert tl[-1] > tl[0]  # the concave loss goes up
    np.testing.assert_allclose(rl, tl, **LBFGS_TOL["least_squares"])
    _assert_trajectories_close(rt, tt, "float64", LBFGS_TOL["least_squares"])
    assert _lbfgs_state(ro)["func_evals"] == _lbfgs_state(to)["func_evals"]


@pytest.mark.parametrize("kwargs", LBFGS_CONFIGS, ids=LBFGS_IDS)
def test_lbfgs_least_squares_float32_matches_torch(kwargs: dict) -> None:
    tl, tt, _ = _run_lbfgs(torch, "least_squares", "float32", kwargs, 5)
    rl, rt, _ = _run_lbfgs(rustgrad, "least_squares", "float32", kwargs, 5)

    # float32 dots sum in another order than torch's BLAS; the history carries that forward
    np.testing.assert_allclose(rl, tl, rtol=1e-5)
    _assert_trajectories_close(rt, tt, "float32", dict(rtol=5e-3, atol=1e-4))


@pytest.mark.parametrize("kwargs", LBFGS_CONFIGS[:2], ids=LBFGS_IDS[:2])
def test_lbfgs_float32_rosenbrock_reaches_the_minimum_as_torch(kwargs: dict) -> None:
    tl, tt, _ = _run_lbfgs(torch, "rosenbrock", "float32", kwargs, 10)
    rl, rt, _ = _run_lbfgs(rustgrad, "rosenbrock", "float32", kwargs, 10)

    # float32 rounding steers the line search from the first step on; both reach the minimum
    assert rl[0] == tl[0] and rl[1] == pytest.approx(tl[1], rel=1e-4)
    np.testing.assert_allclose(tt[-1][0], [1.0, 1.0], atol=1e-3)
    np.testing.assert_allclose(rt[-1][0], [1.0, 1.0], atol=1e-3)


@pytest.mark.parametrize("kwargs", LBFGS_CONFIGS[:2], ids=LBFGS_IDS[:2])
def test_lbfgs_converges_on_rosenbrock_as_torch(kwargs: dict) -> None:
    tl, tt, _ = _run_lbfgs(torch, "rosenbrock", "float64", kwargs, 20)
    rl, rt, _ = _run_lbfgs(rustgrad, "rosenbrock", "float64", kwargs, 20)

    np.testing.assert_allclose(tt[-1][0], [1.0, 1.0], atol=1e-4)
    np.testing.assert_allclose(rt[-1][0], tt[-1][0], rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(rl[:5], tl[:5], rtol=1e-6, atol=1e-12)


def _describe(v: Any) -> Any:
    """A state value's structure: containers, Python types, tensor dtype and shape."""
    if isinstance(v, (torch.Tensor, rustgrad.Tensor)):
        return ("tensor", str(v.dtype), tuple(v.shape))
    if isinstance(v, list):
        return [_describe(x) for x in v]
    return type(v).__name__


@pytest.mark.parametrize("kwargs", LBFGS_CONFIGS, ids=LBFGS_IDS)
def test_lbfgs_state_dict_structure_equals_torch(kwargs: dict) -> None:
    *_, to = _run_lbfgs(torch, "least_squares", "float64", kwargs, 2)
    *_, ro = _run_lbfgs(rustgrad, "least_squares", "float64", kwargs, 2)

    ts, rs = to.state_dict(), ro.state_dict()

    assert rs["param_groups"] == ts["param_groups"]
    assert list(rs["state"]) == list(ts["state"]) == [0]
    assert list(rs["state"][0]) == list(ts["state"][0])
    for k, tv in ts["state"][0].items():
        assert _describe(rs["state"][0][k]) == _describe(tv), k


@pytest.mark.parametrize("kwargs", LBFGS_CONFIGS[2:], ids=LBFGS_IDS[2:])
def test_lbfgs_resumes_from_torchs_state_dict(kwargs: dict) -> None:
    tparams, tf = _least_squares(torch, "float64")
    to = torch.optim.LBFGS(tparams, **kwargs)

    def tclosure() -> Any:
        to.zero_grad()
        loss = tf()
        loss.backward()
        return loss

    to.step(tclosure)
    rparams, rf = _least_squares(rustgrad, "float64")
    with rustgrad.no_grad():
        for r, t in zip(rparams, tparams):
            r.copy_(rustgrad.tensor(t.detach().numpy().copy()))
    ro = rustgrad.optim.LBFGS(rparams, **kwargs)
    ro.load_state_dict(_to_rustgrad(to.state_dict()))

    def rclosure() -> Any:
        ro.zero_grad()
        loss = rf()
        loss.backward()
        return loss

    for _ in range(2):
        to.step(tclosure)
        ro.step(rclosure)

    for r, t in zip(rparams, tparams):
        np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), **TOL["float64"])


def test_lbfgs_returns_first_loss_and_moves_params_in_place(lib: ModuleType) -> None:
    params, f = _least_squares(lib, "float32")
    w = params[0]
    v = w._version
    opt = lib.optim.LBFGS(params)

    def closure() -> Any:
        opt.zero_grad()
        loss = f()
        loss.backward()
        return loss

    with lib.no_grad():
        loss = opt.step(closure)

    assert loss.requires_grad and abs(loss.item() - float((B**2).mean())) < 1e-5
    assert params[0] is w and w._version > v and w.is_leaf


def test_lbfgs_stops_at_once_when_gradient_is_below_tolerance(lib: ModuleType) -> None:
    x = lib.nn.Parameter(lib.zeros(3))
    opt = lib.optim.LBFGS([x])

    def closure() -> Any:
        opt.zero_grad()
        loss = (x * x).sum()
        loss.backward()
        return loss

    opt.step(closure)

    assert opt.state[x] == {"func_evals": 1, "n_iter": 0}
