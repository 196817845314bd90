"""The CPU backend's fused SGD and Adam steps (one Rust pass per parameter) give exactly the
values of the optimizers' NumPy formulation, which the parity tests hold against torch; arrays
the kernels do not take (float16, non-contiguous) still run the NumPy formulation."""

from __future__ import annotations

from typing import Any, Callable, Dict, List

import numpy as np
import pytest
import rustgrad
from rustgrad._backends import cpu

SGD_CASES: List[Dict[str, Any]] = [
    {},
    {"momentum": 0.9},
    {"momentum": 0.9, "dampening": 0.3, "weight_decay": 0.01},
    {"momentum": 0.9, "nesterov": True, "weight_decay": 0.1},
    {"weight_decay": 0.05, "maximize": True},
]
ADAM_CASES: List[Dict[str, Any]] = [
    {},
    {"amsgrad": True},
    {"weight_decay": 0.1},
    {"weight_decay": 0.1, "maximize": True, "betas": (0.3, 0.8)},  # lerp's far-end formula
]


def _train(make_opt: Callable[[Any], Any], dtype: Any, shape: tuple = (7, 5),
           transpose: bool = False) -> List[np.ndarray]:
    rng = np.random.default_rng(0)
    w = rustgrad.tensor(rng.standard_normal(shape).astype(dtype))
    if transpose:  # a non-contiguous parameter
        w = w.t().detach()
    w.requires_grad_(True)
    b = rustgrad.tensor(rng.standard_normal(w.shape[1]).astype(dtype), requires_grad=True)
    opt = make_opt([w, b])
    x = rustgrad.tensor(rng.standard_normal((4, w.shape[0])).astype(dtype))
    for _ in range(6):
        opt.zero_grad()
        ((x @ w + b) ** 2).sum().backward()
        opt.step()
    return [w.detach().numpy().copy(), b.detach().numpy().copy()]


def _unfused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu.kernels, "sgd_step", lambda *a: False)
    monkeypatch.setattr(cpu.kernels, "adam_step", lambda *a: False)


def _case_id(case: Dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in case.items()) or "defaults"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", SGD_CASES, ids=_case_id)
def test_sgd_fused_equals_numpy_formulation(monkeypatch: pytest.MonkeyPatch, dtype: Any,
                                            case: Dict[str, Any]) -> None:
    def make(ps: Any) -> Any:
        return rustgrad.optim.SGD(ps, lr=0.05, **case)

    fused = _train(make, dtype)
    _unfused(monkeypatch)
    plain = _train(make, dtype)
    for a, b in zip(fused, plain):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(fused[0], _train(lambda ps: make(ps), dtype, (7, 6))[0][:, :5])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
@pytest.mark.parametrize("case", ADAM_CASES, ids=_case_id)
def test_adam_fused_equals_numpy_formulation(monkeypatch: pytest.MonkeyPatch, dtype: Any,
                                             cls: str, case: Dict[str, Any]) -> None:
    def make(ps: Any) -> Any:
        return getattr(rustgrad.optim, cls)(ps, lr=0.01, **case)

    fused = _train(make, dtype)
    _unfused(monkeypatch)
    plain = _train(make, dtype)
    for a, b in zip(fused, plain):
        np.testing.assert_array_equal(a, b)


def test_kernels_take_contiguous_float_arrays_only() -> None:
    from rustgrad import _core

    p = np.ones((3, 4), np.float32)
    g = np.full((3, 4), 2, np.float32)

    class Args:
        lr, weight_decay, momentum, dampening = 0.5, 0.0, 0.0, 0.0
        nesterov = maximize = init_buffer = False

    assert _core._sgd_step(p, g, None, Args())
    np.testing.assert_array_equal(p, np.zeros((3, 4), np.float32))
    pt = np.ones((4, 3), np.float32).T
    assert not _core._sgd_step(pt, g, None, Args())  # non-contiguous: NumPy's path
    np.testing.assert_array_equal(pt, 1)
    assert not _core._sgd_step(p.astype(np.float16), g.astype(np.float16), None, Args())
    assert not _core._sgd_step(p, g[:, :2], None, Args())  # shapes differ


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_non_contiguous_params_match_torch(dtype: Any) -> None:
    torch = pytest.importorskip("torch")
    got = _train(lambda ps: rustgrad.optim.Adam(ps, lr=0.01), dtype, transpose=True)
    rng = np.random.default_rng(0)
    w = torch.tensor(rng.standard_normal((7, 5)).astype(dtype)).t().detach().requires_grad_(True)
    b = torch.tensor(rng.standard_normal(7).astype(dtype), requires_grad=True)
    opt = torch.optim.Adam([w, b], lr=0.01)
    x = torch.tensor(rng.standard_normal((4, 5)).astype(dtype))
    for _ in range(6):
        opt.zero_grad()
        ((x @ w + b) ** 2).sum().backward()
        opt.step()
    np.testing.assert_allclose(got[0], w.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_where_kernel_matches_numpy() -> None:
    rng = np.random.default_rng(1)
    for dtype in (np.float32, np.float64):
        a = rng.standard_normal((33, 17)).astype(dtype)
        a[0, 0] = np.nan
        mask = rng.standard_normal((33, 17)) > 0
        other = rng.standard_normal((33, 17)).astype(dtype)
        for o in (dtype(0), 0.25, other):
            got = cpu.kernels.where(mask, a, o)
            want = np.where(mask, a, o)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
    # layouts and dtypes the kernel does not take fall back to NumPy
    np.testing.assert_array_equal(cpu.kernels.where(mask.T, a.T, 1.0), np.where(mask.T, a.T, 1.0))
    np.testing.assert_array_equal(cpu.kernels.where(mask[:1], a, 0.0), np.where(mask[:1], a, 0.0))
