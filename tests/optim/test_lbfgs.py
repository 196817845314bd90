"""LBFGS against torch: closure steps on a least-squares problem and on Rosenbrock, with and
without the strong-Wolfe line search (float64 and float32, maximize), its state_dict structure and
resuming from torch's, its return value, early stop, and torch's argument errors."""

from __future__ import annotations

from types import ModuleType
from typing import Any, Callable, List, Tuple

import numpy as np
import pytest
import rustgrad
import torch

from ._common import TOL, A, B, _assert_trajectories_close, _to_rustgrad


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
