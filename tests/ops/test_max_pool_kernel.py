"""max_pool2d's Rust kernel (the CPU backend's) against torch on window geometries, NaNs and
ties, and against the array-namespace path other backends take; double backward through the
kernel's scatter."""

from __future__ import annotations

from typing import Any, Dict

import numpy as np
import pytest
import rustgrad
from rustgrad._backends import cpu

torch = pytest.importorskip("torch")

GEOMETRIES = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": 3, "stride": 1, "padding": 1},  # overlapping windows: gradients add up
    {"kernel_size": (2, 3), "stride": (1, 2), "dilation": (2, 1)},
    {"kernel_size": 3, "stride": 2, "ceil_mode": True},
    {"kernel_size": 2, "stride": 2, "padding": 1, "ceil_mode": True},
]


def _input(dtype: Any, nan: bool = False, ties: bool = False) -> np.ndarray:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 7, 9)).astype(dtype)
    if ties:
        x = np.round(x)  # many equal maxima: the first one wins
    if nan:
        x[0, 1, 2, 3] = np.nan
        x[1, 0, 4, 4] = np.nan
        x[1, 0, 4, 5] = np.nan  # two NaNs in one window: the last one wins, as torch's
    return x


def _both(x: np.ndarray, kw: Dict[str, Any]) -> Any:
    r = rustgrad.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    ro, ri = rustgrad.nn.functional.max_pool2d(r, return_indices=True, **kw)
    to, ti = torch.nn.functional.max_pool2d(t, return_indices=True, **kw)
    g = np.random.default_rng(4).standard_normal(to.shape).astype(x.dtype)
    ro.backward(rustgrad.tensor(g))
    to.backward(torch.tensor(g))
    return (ro, ri, r.grad), (to, ti, t.grad)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", GEOMETRIES, ids=str)
@pytest.mark.parametrize("data", ["plain", "nan", "ties"])
def test_kernel_matches_torch(dtype: Any, kw: Dict[str, Any], data: str) -> None:
    x = _input(dtype, nan=data == "nan", ties=data == "ties")
    (ro, ri, rg), (to, ti, tg) = _both(x, kw)
    np.testing.assert_array_equal(ro.detach().numpy(), to.detach().numpy())
    np.testing.assert_array_equal(ri.numpy(), ti.numpy())
    np.testing.assert_allclose(rg.numpy(), tg.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kw", GEOMETRIES, ids=str)
def test_namespace_path_agrees(monkeypatch: pytest.MonkeyPatch, kw: Dict[str, Any]) -> None:
    x = _input(np.float64)
    (ko, ki, kg), _ = _both(x, kw)
    monkeypatch.setattr(cpu.kernels, "max_pool2d", None)
    monkeypatch.setattr(cpu.kernels, "max_pool2d_backward", None)
    (no, ni, ng), _ = _both(x, kw)
    np.testing.assert_array_equal(ko.detach().numpy(), no.detach().numpy())
    np.testing.assert_array_equal(ki.numpy(), ni.numpy())
    np.testing.assert_allclose(kg.numpy(), ng.numpy(), rtol=1e-12)


def test_kernel_declines_what_it_does_not_take() -> None:
    from rustgrad import _core

    x = np.ones((1, 1, 4, 4), np.float16)
    assert _core._max_pool2d(x, (2, 2), (2, 2), (0, 0), (1, 1), (2, 2)) is None
    xt = np.ones((1, 1, 4, 4), np.float32).transpose(0, 1, 3, 2)[:, :, ::2]
    assert _core._max_pool2d(xt, (2, 2), (2, 2), (0, 0), (1, 1), (1, 1)) is None
    g = np.ones((1, 1, 2, 2), np.float32)
    bad = np.full((1, 1, 2, 2), 16, np.int64)  # outside the 4x4 plane: passes nothing
    np.testing.assert_array_equal(_core._max_pool2d_backward(g, bad, [1, 1, 4, 4]),
                                  np.zeros((1, 1, 4, 4), np.float32))
    assert _core._max_pool2d(np.ones((1, 1, 0, 3), np.float32), (2, 2), (2, 2), (0, 0), (1, 1),
                             (0, 1)) is None  # an empty plane: the op refuses it


def test_double_backward_and_gradcheck() -> None:
    x = rustgrad.tensor(_input(np.float64)[:1, :2], requires_grad=True)
    assert rustgrad.autograd.gradcheck(
        lambda t: rustgrad.nn.functional.max_pool2d(t, 3, 2, 1), (x,))
    assert rustgrad.autograd.gradgradcheck(
        lambda t: rustgrad.nn.functional.max_pool2d(t, 3, 1, 1), (x,))


@pytest.mark.parametrize("fallback", [False, True])
def test_a_window_wholly_in_the_padding_passes_no_gradient(monkeypatch: pytest.MonkeyPatch,
                                                           fallback: bool) -> None:
    if fallback:
        monkeypatch.setattr(cpu.kernels, "max_pool2d_backward", None)
    x = np.array([[[[1.0, 2.0]]]])
    args = ((1, 2), 1, (0, 1), (1, 3))
    r = rustgrad.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    ro, ri = rustgrad.nn.functional.max_pool2d(r, *args, return_indices=True)
    to, ti = torch.nn.functional.max_pool2d(t, *args, return_indices=True)
    ro.sum().backward()
    to.sum().backward()
    np.testing.assert_array_equal(ro.detach().numpy(), to.detach().numpy())
    np.testing.assert_array_equal(ri.numpy(), ti.numpy())
    np.testing.assert_array_equal(r.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("shape", [(1, 1, 0, 3), (1, 0, 4, 4), (0, 4, 4)])
def test_empty_planes_are_refused_as_torch(shape: tuple) -> None:
    with pytest.raises(RuntimeError) as want:
        torch.nn.functional.max_pool2d(torch.zeros(*shape), 2)
    with pytest.raises(RuntimeError) as got:
        rustgrad.nn.functional.max_pool2d(rustgrad.zeros(*shape), 2)
    assert str(got.value) == str(want.value)
    assert rustgrad.nn.functional.max_pool2d(rustgrad.zeros(0, 1, 4, 4), 2).shape == (0, 1, 2, 2)
