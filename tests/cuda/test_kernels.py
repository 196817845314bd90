"""The CUDA kernels of rustgrad/_backends/cuda_kernels.py against NumPy references."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.cuda


@pytest.fixture
def k():
    from rustgrad._backends import cuda, cuda_kernels

    cuda.require()
    return cuda_kernels


@pytest.fixture
def cp():
    return pytest.importorskip("cupy")


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf)(x)


@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-6), (np.float64, 1e-12), (np.float16, 2e-3)])
def test_gelu_forward_and_backward(k, cp, dtype, tol):
    x = np.linspace(-6, 6, 1001).astype(dtype)
    g = np.random.default_rng(0).standard_normal(x.shape).astype(dtype)
    xd, gd = x.astype(np.float64), g.astype(np.float64)
    cdf = 0.5 * (1 + _erf(xd / math.sqrt(2)))
    pdf = np.exp(-0.5 * xd * xd) / math.sqrt(2 * math.pi)
    c = math.sqrt(2 / math.pi)
    t = np.tanh(c * (xd + 0.044715 * xd ** 3))
    want = {
        ("none", "fwd"): xd * cdf,
        ("none", "bwd"): gd * (cdf + xd * pdf),
        ("tanh", "fwd"): 0.5 * xd * (1 + t),
        ("tanh", "bwd"): gd * (0.5 * (1 + t) + 0.5 * xd * (1 - t * t) * c * (1 + 3 * 0.044715 * xd * xd)),
    }
    for approx in ("none", "tanh"):
        fwd = k.gelu(cp.asarray(x), approx)
        bwd = k.gelu_backward(cp.asarray(g), cp.asarray(x), approx)
        assert fwd.dtype == dtype and bwd.dtype == dtype
        np.testing.assert_allclose(cp.asnumpy(fwd).astype(np.float64), want[approx, "fwd"],
                                   rtol=tol, atol=tol)
        np.testing.assert_allclose(cp.asnumpy(bwd).astype(np.float64), want[approx, "bwd"],
                                   rtol=tol, atol=tol * 4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,c", [(1, 1), (5, 3), (7, 1000), (3, 50257)])
def test_softmax_cross_entropy(k, cp, dtype, n, c):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((n, c)) * 5).astype(dtype)
    t = rng.integers(0, c, n)
    t[0] = -100  # ignored
    lse = np.log(np.exp(x - x.max(1, keepdims=True)).sum(1)) + x.max(1)
    want = np.where(t == -100, 0.0, lse - x[np.arange(n), np.maximum(t, 0)])
    loss, got_lse = k.softmax_cross_entropy(cp.asarray(x), cp.asarray(t), -100)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(cp.asnumpy(got_lse), lse, rtol=tol)
    np.testing.assert_allclose(cp.asnumpy(loss), want, rtol=tol, atol=tol)
    grow = rng.standard_normal(n).astype(dtype)
    dx = k.softmax_cross_entropy_backward(cp.asarray(x), cp.asarray(t), got_lse, cp.asarray(grow))
    p = np.exp(x - lse[:, None])
    onehot = np.zeros_like(p)
    onehot[np.arange(n), np.maximum(t, 0)] = 1
    want_dx = np.where((t == -100)[:, None], 0.0, (p - onehot) * grow[:, None])
    np.testing.assert_allclose(cp.asnumpy(dx), want_dx, rtol=tol * 10, atol=tol)


def test_softmax_cross_entropy_matches_torch_on_the_gpu(k, cp):
    x = torch.randn(64, 1000, device="cuda", dtype=torch.float64)
    t = torch.randint(0, 1000, (64,), device="cuda")
    want = torch.nn.functional.cross_entropy(x, t, reduction="none")
    loss, _ = k.softmax_cross_entropy(cp.from_dlpack(x), cp.from_dlpack(t))
    np.testing.assert_allclose(cp.asnumpy(loss), want.cpu().numpy(), rtol=1e-12)


@pytest.mark.parametrize("kernel,stride,pad,dil,ceil", [
    ((2, 2), (2, 2), (0, 0), (1, 1), False),
    ((3, 3), (2, 2), (1, 1), (1, 1), True),
    ((3, 2), (1, 2), (1, 0), (2, 1), False),
])
def test_max_pool2d_with_indices_matches_torch(k, cp, kernel, stride, pad, dil, ceil):
    x = torch.randn(2, 3, 11, 9, dtype=torch.float64)
    x[0, 0, 0, 0] = float("nan")
    want, widx = torch.nn.functional.max_pool2d(x, kernel, stride, pad, dil, ceil, True)
    oh, ow = want.shape[2:]
    out, idx = k.max_pool2d_with_indices(cp.asarray(x.numpy()), kernel, stride, pad, dil, oh, ow)
    np.testing.assert_array_equal(cp.asnumpy(out), want.numpy())
    np.testing.assert_array_equal(cp.asnumpy(idx), widx.numpy())


@pytest.mark.parametrize("channels_first", [False, True])
def test_im2col_matches_the_numpy_im2col(k, cp, channels_first):
    from rustgrad._backends import cpu
    from rustgrad._ops.conv import im2col

    x = np.random.default_rng(2).standard_normal((2, 3, 8, 7)).astype(np.float32)
    args = ((3, 2), (2, 1), (1, 2, 0, 1), (2, 3))
    want = im2col(cpu, x, *args, fill=-1.5, channels_first=channels_first)
    got = k.im2col(cp.asarray(x), *args, fill=-1.5, channels_first=channels_first)
    np.testing.assert_array_equal(cp.asnumpy(got), want)


_OPTIMIZERS = {
    "adam": lambda o, ps: o.Adam(ps, lr=0.05),
    "adamw_amsgrad": lambda o, ps: o.AdamW(ps, lr=0.05, weight_decay=0.1, amsgrad=True),
    "adam_l2_maximize": lambda o, ps: o.Adam(ps, lr=0.05, weight_decay=0.1, maximize=True),
    "sgd": lambda o, ps: o.SGD(ps, lr=0.1),
    "sgd_momentum_nesterov": lambda o, ps: o.SGD(ps, lr=0.1, momentum=0.9, nesterov=True,
                                                 weight_decay=0.01),
    "sgd_dampening": lambda o, ps: o.SGD(ps, lr=0.1, momentum=0.5, dampening=0.3),
}


@pytest.mark.parametrize("name", sorted(_OPTIMIZERS))
@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-5), (np.float64, 1e-12)])
def test_fused_optimizer_steps_on_the_gpu_match_the_cpu(k, name, dtype, tol):
    import rustgrad

    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((7, 5)).astype(dtype)
    grads = [rng.standard_normal((7, 5)).astype(dtype) for _ in range(4)]
    results = {}
    for dev in ("cpu", "cuda"):
        w = rustgrad.tensor(w0, device=dev, requires_grad=True)
        opt = _OPTIMIZERS[name](rustgrad.optim, [w])
        for g in grads:
            w.grad = rustgrad.tensor(g, device=dev)
            opt.step()
        results[dev] = (w.detach().cpu().numpy(),
                        {key: v.cpu().numpy() for key, v in opt.state[w].items() if key != "step"})
    np.testing.assert_allclose(results["cuda"][0], results["cpu"][0], rtol=tol, atol=tol)
    for key, v in results["cpu"][1].items():
        np.testing.assert_allclose(results["cuda"][1][key], v, rtol=tol, atol=tol, err_msg=key)


def test_the_fused_gpu_step_is_one_launch_per_group(k, monkeypatch):
    import rustgrad

    calls = []
    kernel = k.adam_step_multi
    monkeypatch.setattr(rustgrad._backends.cuda.kernels, "adam_step_multi",
                        lambda *a: calls.append(len(a[0])) or kernel(*a))
    ws = [rustgrad.randn(4, device="cuda", requires_grad=True) for _ in range(3)]
    ws.append(rustgrad.randn(1000, 3, device="cuda", requires_grad=True))  # another size
    opt = rustgrad.optim.Adam(ws, lr=0.1)
    before = [w.detach().cpu().numpy() for w in ws]
    sum((w * w).sum() for w in ws).backward()
    opt.step()
    assert calls == [4]
    for w, b in zip(ws, before):  # x -> x - lr * sign-ish step: every element moved
        assert (w.detach().cpu().numpy() != b).all()


@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_kernels_forward_and_backward(k, cp, dtype, tol, log):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((5, 7, 300)) * 4).astype(dtype)  # rows of 300: two per thread
    x[0, 0, :] = -np.inf  # an all -inf row: nan, as NumPy's formulation
    x[1, 0, 3] = np.nan
    g = rng.standard_normal(x.shape).astype(dtype)
    xd = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        e = xd - xd.max(-1, keepdims=True)
        s = np.exp(e).sum(-1, keepdims=True)
        want = e - np.log(s) if log else np.exp(e) / s
    y = k.softmax(cp.asarray(x), log)
    np.testing.assert_allclose(cp.asnumpy(y), want, rtol=tol, atol=tol)
    yd = want[2:]  # finite rows for the gradient
    gd = g[2:].astype(np.float64)
    want_dx = gd - np.exp(yd) * gd.sum(-1, keepdims=True) if log else \
        (gd - (gd * yd).sum(-1, keepdims=True)) * yd
    dx = k.softmax_backward(cp.asarray(g[2:]), cp.asarray(yd.astype(dtype)), log)
    np.testing.assert_allclose(cp.asnumpy(dx), want_dx, rtol=10 * tol, atol=10 * tol)


def test_threshold_backward_kernel_passes_nan_outputs(k, cp):
    y = cp.asarray(np.array([-1.0, 0.0, 2.0, np.nan], dtype=np.float32))
    g = cp.asarray(np.array([5.0, 6.0, 7.0, 8.0], dtype=np.float32))
    assert cp.asnumpy(k.threshold_backward(g, y)).tolist() == [0.0, 0.0, 7.0, 8.0]
