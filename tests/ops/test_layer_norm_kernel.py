"""The CPU backend's fused layer_norm kernels (one Rust pass per row, float64 statistics: the CUDA
kernel's formulas): within a unit in the last place of float64 math, the op's gradients as
torch's, the NumPy formulation's results within its own rounding, and arrays the kernels do not
take declined. Also: the kernels split over Rayon's threads (GELU, softmax, layer_norm) give
the bits of the unsplit pass."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad
from rustgrad import _core
from rustgrad._backends import cpu

torch = pytest.importorskip("torch")


def _data(dtype, n: int = 300, d: int = 128, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, d)) * 3 + 1).astype(dtype)
    w = rng.standard_normal(d).astype(dtype)
    b = rng.standard_normal(d).astype(dtype)
    g = rng.standard_normal((n, d)).astype(dtype)
    return x, w, b, g


def _forward_backward(x, w, b, g):
    """layer_norm's output and the input, weight and bias gradients for upstream gradient g."""
    xt = rustgrad.tensor(x, requires_grad=True)
    wt, bt = rustgrad.tensor(w, requires_grad=True), rustgrad.tensor(b, requires_grad=True)
    y = rustgrad.nn.functional.layer_norm(xt, (128,), wt, bt)
    y.backward(rustgrad.tensor(g))
    return [t.detach().numpy() for t in (y, xt.grad, wt.grad, bt.grad)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm_kernel_is_float64_math_rounded_once(dtype, affine: bool) -> None:
    x, w, b, _ = _data(dtype)
    got = cpu.kernels.layer_norm(x, w if affine else None, b if affine else None, 1e-5)
    assert got.dtype == dtype and got.shape == x.shape
    x64 = x.astype(np.float64)
    mean = x64.mean(-1, keepdims=True)
    rstd = 1 / np.sqrt(((x64 - mean) ** 2).mean(-1, keepdims=True) + 1e-5)
    want = (x64 - mean) * rstd
    if affine:
        want = want * w.astype(np.float64) + b.astype(np.float64)
    if dtype == np.float32:
        np.testing.assert_array_max_ulp(got, want.astype(np.float32), maxulp=1)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_op_and_gradients_match_torch(dtype) -> None:
    x, w, b, g = _data(dtype, n=64)
    x3 = x.reshape(4, 16, 128)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-11)
    outs = []
    for lib in (rustgrad, torch):
        xt = lib.tensor(x3, requires_grad=True)
        wt, bt = lib.tensor(w, requires_grad=True), lib.tensor(b, requires_grad=True)
        y = lib.nn.functional.layer_norm(xt, (128,), wt, bt, 1e-5)
        y.backward(lib.tensor(g.reshape(x3.shape)))
        outs.append([t.detach().numpy() for t in (y, xt.grad, wt.grad, bt.grad)])
    for got, want in zip(*outs):
        np.testing.assert_allclose(got, want, **tol)


def test_fused_layer_norm_is_the_numpy_formulation_within_its_rounding(
        monkeypatch: pytest.MonkeyPatch) -> None:
    x, w, b, g = _data(np.float32, n=64)

    def run():
        return _forward_backward(x, w, b, g)

    fused = run()
    for name in ("layer_norm", "layer_norm_backward", "layer_norm_stats",
                 "layer_norm_backward_stats"):
        monkeypatch.setattr(cpu.kernels, name, None)
    plain = run()
    for a, p in zip(fused, plain):
        np.testing.assert_allclose(a, p, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_statistics_kept_by_the_forward_give_the_recomputed_bits(
        dtype, monkeypatch: pytest.MonkeyPatch) -> None:
    x, w, b, g = _data(dtype, n=700)  # 89,600 elements: split over threads where there are 2+
    kept = []
    stats_kernel = cpu.kernels.layer_norm_stats

    def spy(*args):
        out = stats_kernel(*args)
        kept.append(out[1])
        return out

    def run():
        return _forward_backward(x, w, b, g)

    backward_stats = cpu.kernels.layer_norm_backward_stats
    read = []

    def backward_spy(*args):
        read.append(args[-1])
        return backward_stats(*args)

    monkeypatch.setattr(cpu.kernels, "layer_norm_stats", spy)
    monkeypatch.setattr(cpu.kernels, "layer_norm_backward_stats", backward_spy)
    kept_run = run()
    (stats,) = kept
    assert len(read) == 1 and read[0] is stats  # the backward read what the forward kept
    assert stats.shape == (700, 2) and stats.dtype == np.float64
    a = x.astype(np.float64)
    np.testing.assert_allclose(stats[:, 0], a.mean(axis=1), rtol=1e-12)
    np.testing.assert_allclose(stats[:, 1], 1 / np.sqrt(a.var(axis=1) + 1e-5), rtol=1e-12)
    monkeypatch.setattr(cpu.kernels, "layer_norm_stats", None)  # the backward recomputes them
    recomputed = run()
    for k, r in zip(kept_run, recomputed):
        np.testing.assert_array_equal(k, r)
    # without a graph to record, nothing is kept
    monkeypatch.setattr(cpu.kernels, "layer_norm_stats", spy)
    with rustgrad.no_grad():
        rustgrad.nn.functional.layer_norm(rustgrad.tensor(x), (128,), rustgrad.tensor(w))
    assert len(kept) == 1


def test_layer_norm_kernels_decline_other_arrays() -> None:
    x, w, b, g = _data(np.float32, n=8)
    assert cpu.kernels.layer_norm(x[:, ::2], None, None, 1e-5) is None  # strided
    assert cpu.kernels.layer_norm(x.astype(np.float16), None, None, 1e-5) is None
    assert cpu.kernels.layer_norm(x, w.astype(np.float64), None, 1e-5) is None  # mixed dtypes
    assert cpu.kernels.layer_norm(x, w[:5], None, 1e-5) is None  # wrong length
    assert cpu.kernels.layer_norm_backward(g[:4], x, w, 1e-5, False) is None  # shapes differ
    dx, xhat = cpu.kernels.layer_norm_backward(g, x, None, 1e-5, False)
    assert xhat is None and dx.shape == x.shape
    _, stats = cpu.kernels.layer_norm_stats(x, None, None, 1e-5)
    assert cpu.kernels.layer_norm_backward_stats(g, x, None, 1e-5, False, stats[:4]) is None
    assert cpu.kernels.layer_norm_backward_stats(g, x, None, 1e-5, False,
                                                 stats.astype(np.float32)) is None


def test_split_kernels_give_the_unsplit_bits() -> None:
    # above PAR_MIN_ELEMS (65536), so at 2+ threads the pass is split; each half alone is the
    # unsplit pass over its elements
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1024, 160)).astype(np.float32)
    g = rng.standard_normal((1024, 160)).astype(np.float32)
    halves = (x[:512], x[512:]), (g[:512], g[512:])
    np.testing.assert_array_equal(
        _core._gelu(x), np.concatenate([_core._gelu(h) for h in halves[0]]))
    np.testing.assert_array_equal(
        _core._gelu_backward(g, x),
        np.concatenate([_core._gelu_backward(gh, xh) for gh, xh in zip(halves[1], halves[0])]))
    for log in (False, True):
        whole = _core._softmax(x, log)
        np.testing.assert_array_equal(
            whole, np.concatenate([_core._softmax(h, log) for h in halves[0]]))
        back = _core._softmax_backward(g, whole, log)
        np.testing.assert_array_equal(back, np.concatenate(
            [_core._softmax_backward(g[s], whole[s], log) for s in (slice(0, 512),
                                                                    slice(512, None))]))
    w = rng.standard_normal(160).astype(np.float32)
    whole = _core._layer_norm(x, w, w, 1e-5)
    np.testing.assert_array_equal(
        whole, np.concatenate([_core._layer_norm(h, w, w, 1e-5) for h in halves[0]]))
    dx, xhat = _core._layer_norm_backward(g, x, w, 1e-5, True)
    for s in (slice(0, 512), slice(512, None)):
        d2, h2 = _core._layer_norm_backward(g[s], x[s], w, 1e-5, True)
        np.testing.assert_array_equal(dx[s], d2)
        np.testing.assert_array_equal(xhat[s], h2)
