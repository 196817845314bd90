"""The CPU backend's float32 erf and exact-GELU kernels (one Rust pass, vectorized): within a
couple of units in the last place of the exact values and of torch's, specials as torch, and the
fused GELU gradient equal to the formula it replaces (which double backward still records)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import rustgrad
from rustgrad._backends import cpu

torch = pytest.importorskip("torch")


def _grid() -> np.ndarray:
    return np.linspace(-7, 7, 200_001).astype(np.float32)


def test_erf_float32_is_within_two_ulp_of_exact() -> None:
    x = _grid()
    got = rustgrad.erf(rustgrad.tensor(x)).numpy().astype(np.float64)
    exact = np.array([math.erf(v) for v in x.astype(np.float64)])
    # one unit in the last place of float32 at |erf| <= 1 is at most 2**-24 * 2 = 1.2e-7
    assert np.abs(got - exact).max() <= 1.5e-7
    want = torch.erf(torch.from_numpy(x)).numpy()
    assert np.abs(got - want).max() <= 1.5e-7


def test_erf_specials_and_odd_symmetry() -> None:
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30, 3.0, -3.0], np.float32)
    got = rustgrad.erf(rustgrad.tensor(x)).numpy()
    want = torch.erf(torch.from_numpy(x)).numpy()
    np.testing.assert_array_equal(got[:5], want[:5])  # nan, +-1 at +-inf, signed zeros
    np.testing.assert_allclose(got[5:], want[5:], rtol=2.4e-7)  # two units in the last place
    assert np.signbit(got[4]) and not np.signbit(got[3])
    y = _grid()
    np.testing.assert_array_equal(cpu.kernels.erf(y), -cpu.kernels.erf(-y))


def test_erf_float64_stays_libm() -> None:
    x = np.linspace(-5, 5, 1001)
    exact = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(cpu.kernels.erf(x), exact, rtol=0, atol=1e-15)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_forward_and_fused_backward_match_torch(dtype) -> None:
    x = np.random.default_rng(0).standard_normal(4099).astype(dtype) * 3
    g = np.random.default_rng(1).standard_normal(4099).astype(dtype)
    r = rustgrad.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    ro = rustgrad.nn.functional.gelu(r)
    to = torch.nn.functional.gelu(t)
    ro.backward(rustgrad.tensor(g))
    to.backward(torch.tensor(g))
    # float32: erf's 1.5e-7 cancels in 1 + erf(x) for x << 0, an absolute error below
    # |x| * 1.5e-7 (torch's own erf is within 6e-8, the same cancellation)
    tol = 1.2e-6 if dtype == np.float32 else 1e-15
    np.testing.assert_allclose(ro.detach().numpy(), to.detach().numpy(), rtol=4e-7, atol=tol)
    np.testing.assert_allclose(r.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=2 * tol)


def test_fused_gelu_backward_equals_the_recorded_formula(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.random.default_rng(2).standard_normal((33, 17))

    def grad() -> np.ndarray:
        r = rustgrad.tensor(x, requires_grad=True)
        rustgrad.nn.functional.gelu(r).sum().backward()
        return r.grad.numpy()

    fused = grad()
    monkeypatch.setattr(cpu.kernels, "gelu_backward", None)
    monkeypatch.setattr(cpu.kernels, "gelu", None)
    np.testing.assert_allclose(fused, grad(), rtol=1e-14, atol=1e-15)


def test_gelu_double_backward_records_the_formula() -> None:
    x = rustgrad.tensor(np.linspace(-3, 3, 13), requires_grad=True)
    assert rustgrad.autograd.gradgradcheck(rustgrad.nn.functional.gelu, (x,))
    (g,) = rustgrad.autograd.grad(rustgrad.nn.functional.gelu(x).sum(), x, create_graph=True)
    assert g.grad_fn is not None


def test_kernels_decline_other_layouts() -> None:
    from rustgrad import _core

    a = np.ones((4, 6), np.float32)
    assert _core._gelu(a.T) is None
    assert _core._gelu(a.astype(np.float16)) is None
    assert _core._gelu_backward(a, a[:, :3]) is None
    np.testing.assert_array_equal(cpu.kernels.erf(a.T), cpu.kernels.erf(np.ascontiguousarray(a.T)))


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_kernel_matches_torch(log: bool, dtype) -> None:
    x = np.random.default_rng(5).standard_normal((37, 129)).astype(dtype) * 4
    x[3, :50] = -np.inf  # a masked row: exactly 0 there (log: -inf)
    x[4, 7] = np.nan  # a NaN poisons its row, as torch's
    g = np.random.default_rng(6).standard_normal(x.shape).astype(dtype)
    name = "log_softmax" if log else "softmax"
    r = rustgrad.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    ro, to = getattr(r, name)(-1), getattr(t, name)(-1)
    ro.backward(rustgrad.tensor(g))
    to.backward(torch.tensor(g))
    tol = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(ro.detach().numpy(), to.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(r.grad.numpy(), t.grad.numpy(), rtol=10 * tol, atol=10 * tol)
    if not log:
        assert (ro.detach().numpy()[3, :50] == 0).all()
    assert np.isnan(ro.detach().numpy()[4]).all()


@pytest.mark.parametrize("log", [False, True])
def test_fused_softmax_equals_the_formula(monkeypatch: pytest.MonkeyPatch, log: bool) -> None:
    x = np.random.default_rng(7).standard_normal((9, 31))
    name = "log_softmax" if log else "softmax"

    def run() -> tuple:
        r = rustgrad.tensor(x, requires_grad=True)
        out = getattr(r, name)(-1)
        (out * rustgrad.tensor(np.arange(31.0))).sum().backward()
        return out.detach().numpy(), r.grad.numpy()

    fused = run()
    monkeypatch.setattr(cpu.kernels, "softmax", None)
    monkeypatch.setattr(cpu.kernels, "softmax_backward", None)
    plain = run()
    for a, b in zip(fused, plain):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-14)


def test_softmax_other_dims_and_double_backward() -> None:
    x = rustgrad.tensor(np.random.default_rng(8).standard_normal((4, 5, 6)), requires_grad=True)
    t = torch.tensor(x.detach().numpy(), requires_grad=True)
    np.testing.assert_allclose(x.softmax(1).detach().numpy(), t.softmax(1).detach().numpy(),
                               rtol=1e-14)
    y = rustgrad.tensor(np.random.default_rng(9).standard_normal((3, 7)), requires_grad=True)
    assert rustgrad.autograd.gradgradcheck(lambda v: v.log_softmax(-1), (y,))
    assert rustgrad.autograd.gradgradcheck(lambda v: v.softmax(-1), (y,))


@pytest.mark.parametrize("exponent", [3, -2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_integer_pow_kernel_is_torchs_products_bit_for_bit(exponent: int, dtype) -> None:
    x = np.random.default_rng(10).standard_normal(5001).astype(dtype) * 3
    x[:3] = [0.0, -0.0, np.inf]
    got = (rustgrad.tensor(x) ** exponent).numpy()
    want = (torch.tensor(x) ** exponent).numpy()
    np.testing.assert_array_equal(got, want)
    assert cpu.kernels.powi(x[::2], exponent) is None  # strided: the NumPy products run instead
    np.testing.assert_array_equal((rustgrad.tensor(x)[::2] ** exponent).numpy(), want[::2])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_kernel_matches_the_formulation_and_torch(dtype: type) -> None:
    x = np.concatenate([np.linspace(-120, 120, 100_001), [np.nan, np.inf, -np.inf, 0.0, -0.0]])
    x = x.astype(dtype)
    got = cpu.kernels.sigmoid(x)
    assert got.dtype == dtype and got.shape == x.shape
    # the NumPy formulation it replaces (exp of -|x| only), within two units in the last place
    with np.errstate(all="ignore"):
        e = np.exp(-np.abs(x))
        want = np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(dtype)
    ulp = np.spacing(np.abs(want).astype(dtype))
    finite = np.isfinite(x)
    assert (np.abs(got - want)[finite] <= 2 * ulp[finite]).all()
    assert np.isnan(got[-5]) and got[-4] == 1 and got[-3] == 0 and got[-2] == got[-1] == 0.5
    # torch's 1 / (1 + exp(-x)) gives 0 once exp(-x) overflows (x < -88.7 in float32); rustgrad
    # keeps the subnormal value there, as its formulation always did
    ref = torch.sigmoid(torch.from_numpy(x)).numpy()
    near = finite & (x > -88)
    assert (np.abs(got - ref)[near] <= 4 * ulp[near]).all()
    # the op takes it; a strided array falls back on the formulation
    np.testing.assert_array_equal(rustgrad.tensor(x).sigmoid().numpy(), got)
    assert cpu.kernels.sigmoid(x[::2]) is None
