"""Layers real programs reached for, against torch: PReLU, the padding layers, PixelShuffle and
PixelUnshuffle, InstanceNorm1d/2d, RMSNorm, MultiLabelSoftMarginLoss, Conv2d with
padding='same' and a non-zeros padding_mode, Embedding(scale_grad_by_freq=True)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import rustgrad

from ..parity import check, check_double_backward, grad_ok, parity, same_error


def _x(shape: tuple, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _run(lib: Any, make: Any, x: np.ndarray, dtype: str = "float64") -> Any:
    """Module `make(lib)` with parameters copied from a seeded init, applied to x; returns the
    output and the gradients of the input and every parameter after a weighted sum."""
    dt = getattr(lib, dtype)
    m = make(lib).to(dt)
    rng = np.random.default_rng(7)
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor(rng.uniform(-1.0, 1.0, tuple(p.shape))))
    xt = lib.tensor(x, dtype=dt, requires_grad=True)
    out = m(xt)
    w = lib.tensor(np.random.default_rng(9).uniform(-1, 1, tuple(out.shape)), dtype=dt)
    (out * w).sum().backward()
    return (out, out.grad_fn.name() if out.grad_fn else None, xt.grad,
            [p.grad for p in m.parameters()], repr(m))


def _same(make: Any, x: np.ndarray, dtype: str = "float64", rtol: float = 1e-7) -> None:
    parity(lambda L: _run(L, make, x, dtype), rtol=rtol, atol=1e-6 if dtype == "float32" else 1e-9)


# ---- PReLU ------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 3, 4, 4), (4, 3), (5,)])
def test_prelu_module_matches_torch(shape):
    _same(lambda L: L.nn.PReLU(), _x(shape))
    if len(shape) > 1:
        _same(lambda L: L.nn.PReLU(3, init=0.1), _x(shape))
        _same(lambda L: L.nn.PReLU(3), _x(shape), "float32", 1e-5)


def test_prelu_functional_gradients():
    check(lambda L, x, w: L.nn.functional.prelu(x, w), (2, 3, 4), (3,))
    check(lambda L, x, w: L.prelu(x, w), (4,), (1,))
    check(lambda L, x, w: x.prelu(w), (), (1,))
    check_double_backward(lambda L, x, w: L.nn.functional.prelu(x, w) ** 2, (2, 3), (3,))
    assert grad_ok(lambda L, x, w: L.nn.functional.prelu(x, w), (2, 3, 2), (3,))
    same_error(lambda L: L.nn.functional.prelu(L.ones(2, 3, 4), L.ones(2)),
               "Mismatch of parameter numbers and input channel size")
    same_error(lambda L: L.nn.functional.prelu(L.ones(2, 3), L.ones(1, 3)),
               "Expected `weight` to be a scalar or 1D tensor")


# ---- padding layers --------------------------------------------------------------------------
PADS = [
    ("ZeroPad2d", (1, 2, 0, 1), (2, 3, 4, 5)),
    ("ZeroPad2d", 2, (3, 4, 5)),
    ("ZeroPad1d", (2, 1), (2, 3, 4)),
    ("ReflectionPad1d", 2, (2, 3, 5)),
    ("ReflectionPad1d", (3, 1), (3, 5)),
    ("ReflectionPad2d", 1, (2, 3, 4, 5)),
    ("ReflectionPad2d", (1, 2, 2, 0), (3, 4, 5)),
    ("ReplicationPad1d", (2, 3), (2, 3, 4)),
    ("ReplicationPad2d", 2, (1, 2, 3, 4)),
    ("ReplicationPad2d", (0, 1, 3, 2), (2, 3, 4)),
    ("CircularPad1d", 2, (2, 3, 4)),
    ("CircularPad2d", (1, 0, 2, 1), (1, 2, 3, 4)),
    ("ZeroPad3d", (1, 0, 2, 1, 0, 1), (1, 2, 3, 4, 2)),
    ("ReflectionPad3d", 1, (1, 2, 3, 4, 2)),
    ("ReplicationPad3d", (1, 0, 2, 1, 0, 1), (2, 3, 4, 2)),
    ("CircularPad3d", 1, (1, 1, 3, 4, 2)),
]


@pytest.mark.parametrize("name,padding,shape", PADS, ids=[f"{n}-{p}" for n, p, _ in PADS])
def test_padding_layers_match_torch(name, padding, shape):
    _same(lambda L: getattr(L.nn, name)(padding), _x(shape))


@pytest.mark.parametrize("name,n", [("ConstantPad1d", 1), ("ConstantPad2d", 2), ("ConstantPad3d", 3)])
def test_constant_pad_matches_torch(name, n):
    shape = (2, 3, 4, 5)
    _same(lambda L: getattr(L.nn, name)(2, 3.5), _x(shape))
    _same(lambda L: getattr(L.nn, name)((1, 2) * n, -1.0), _x(shape))


def test_reflection_pad_too_large_raises_like_torch():
    same_error(lambda L: L.nn.ReflectionPad1d(4)(L.ones(1, 2, 3)), "Padding size should be less")


# ---- PixelShuffle / PixelUnshuffle ------------------------------------------------------------
@pytest.mark.parametrize("shape,r", [((2, 8, 3, 4), 2), ((9, 2, 2), 3), ((2, 1, 4, 3, 2), 1)])
def test_pixel_shuffle_matches_torch(shape, r):
    _same(lambda L: L.nn.PixelShuffle(r), _x(shape))
    check(lambda L, x: L.nn.functional.pixel_shuffle(x, r), shape)
    assert grad_ok(lambda L, x: L.pixel_shuffle(x, r), shape)


@pytest.mark.parametrize("shape,r", [((2, 2, 4, 6), 2), ((1, 6, 3), 3)])
def test_pixel_unshuffle_matches_torch(shape, r):
    _same(lambda L: L.nn.PixelUnshuffle(r), _x(shape))
    check(lambda L, x: L.nn.functional.pixel_unshuffle(x, r), shape)
    check_double_backward(lambda L, x: L.pixel_unshuffle(x * x, r), shape)
    parity(lambda L: L.pixel_shuffle(L.pixel_unshuffle(L.tensor(_x(shape)), r), r))


def test_pixel_shuffle_errors_match_torch():
    F = "nn.functional"
    del F
    same_error(lambda L: L.nn.functional.pixel_shuffle(L.ones(1, 3, 2, 2), 2),
               "divisible by the square of upscale_factor")
    same_error(lambda L: L.nn.functional.pixel_unshuffle(L.ones(1, 3, 3, 3), 2),
               "pixel_unshuffle expects height to be divisible")
    same_error(lambda L: L.nn.functional.pixel_shuffle(L.ones(3, 2), 2),
               "expects input to have at least 3 dimensions")


# ---- InstanceNorm ---------------------------------------------------------------------------------
@pytest.mark.parametrize("cls,shape", [("InstanceNorm1d", (2, 3, 5)), ("InstanceNorm2d", (2, 3, 4, 5)),
                                       ("InstanceNorm1d", (3, 6)), ("InstanceNorm2d", (3, 4, 5)),
                                       ("InstanceNorm3d", (2, 3, 2, 3, 2))])
@pytest.mark.parametrize("affine", [False, True])
def test_instance_norm_matches_torch(cls, shape, affine):
    _same(lambda L: getattr(L.nn, cls)(3, affine=affine), _x(shape))
    _same(lambda L: getattr(L.nn, cls)(3, affine=affine), _x(shape), "float32", 1e-4)


@pytest.mark.parametrize("cls,shape", [("InstanceNorm1d", (2, 3, 5)), ("InstanceNorm2d", (2, 3, 4, 5))])
def test_instance_norm_running_stats_match_torch(cls, shape):
    def prog(L: Any) -> Any:
        m = getattr(L.nn, cls)(3, affine=True, track_running_stats=True).double()
        outs = [m(L.tensor(_x(shape, seed=k))) for k in range(3)]
        m.eval()
        outs.append(m(L.tensor(_x(shape, seed=5))))
        return outs, m.running_mean, m.running_var, m.num_batches_tracked, m.state_dict()
    parity(prog)


def test_instance_norm_functional_and_errors():
    check(lambda L, x: L.nn.functional.instance_norm(x), (2, 3, 4))
    check(lambda L, x, w, b: L.nn.functional.instance_norm(x, weight=w, bias=b), (2, 3, 4, 2),
          (3,), (3,))
    assert grad_ok(lambda L, x, w, b: L.nn.functional.instance_norm(x, weight=w, bias=b),
                   (2, 3, 4), (3,), (3,))
    same_error(lambda L: L.nn.functional.instance_norm(L.ones(2, 4, 1)),
               "Expected more than 1 spatial element when training")
    same_error(lambda L: L.nn.functional.instance_norm(L.ones(2, 4, 3), use_input_stats=False),
               "Expected running_mean and running_var to be defined")
    same_error(lambda L: L.nn.InstanceNorm1d(4)(L.ones(2, 3, 5, 6)), "expected 2D or 3D input")
    same_error(lambda L: L.nn.InstanceNorm2d(4, affine=True)(L.ones(2, 3, 5, 6)),
               "to match num_features (4), but got: 3")


def test_instance_norm_warns_on_feature_mismatch(lib):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        lib.nn.InstanceNorm1d(5)(lib.ones(2, 4, 3))
    assert any("does not match num_features" in str(x.message) for x in w)


# ---- RMSNorm ---------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,norm", [((2, 3, 4), 4), ((2, 3, 4), (3, 4)), ((5,), [5])])
def test_rms_norm_matches_torch(shape, norm):
    _same(lambda L: L.nn.RMSNorm(norm), _x(shape))
    _same(lambda L: L.nn.RMSNorm(norm, eps=1e-3, elementwise_affine=False), _x(shape))
    _same(lambda L: L.nn.RMSNorm(norm), _x(shape), "float32", 1e-5)


def test_rms_norm_functional():
    check(lambda L, x, w: L.nn.functional.rms_norm(x, [3], w, eps=1e-6), (2, 3), (3,))
    check(lambda L, x: L.nn.functional.rms_norm(x, (2, 3)), (4, 2, 3))
    assert grad_ok(lambda L, x, w: L.nn.functional.rms_norm(x, [3], w), (2, 3), (3,))
    same_error(lambda L: L.nn.functional.rms_norm(L.ones(2, 4, 3), (4,)),
               "Given normalized_shape=[4], expected input with shape [*")
    same_error(lambda L: L.nn.functional.rms_norm(L.ones(2, 3), (3,), weight=L.ones(2)),
               "Expected weight to be of same shape as normalized_shape")


# ---- MultiLabelSoftMarginLoss ---------------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multilabel_soft_margin_loss_matches_torch(reduction):
    target = (np.random.default_rng(3).uniform(size=(4, 5)) > 0.5).astype(np.float64)
    check(lambda L, x, t: L.nn.functional.multilabel_soft_margin_loss(x, t, reduction=reduction),
          (4, 5), target, requires_grad=True)
    check(lambda L, x, t, w: L.nn.MultiLabelSoftMarginLoss(weight=w, reduction=reduction)(x, t),
          (4, 5), target, (5,))
    assert grad_ok(lambda L, x: L.nn.functional.multilabel_soft_margin_loss(
        x, L.tensor(target), reduction=reduction), (4, 5))


def test_multilabel_soft_margin_loss_1d_and_errors():
    parity(lambda L: L.nn.functional.multilabel_soft_margin_loss(
        L.tensor([0.3, -1.2, 2.0]), L.tensor([1.0, 0.0, 1.0])))
    same_error(lambda L: L.nn.functional.multilabel_soft_margin_loss(L.ones(2, 4), L.ones(2, 3)),
               "must match the size of tensor b")


# ---- Conv2d padding='same' / padding_mode ------------------------------------------------------
CONVS = [
    dict(kernel_size=3, padding="same", padding_mode="reflect"),
    dict(kernel_size=(2, 4), padding="same", padding_mode="circular", dilation=(1, 2)),
    dict(kernel_size=(3, 2), padding="same", padding_mode="replicate"),
    dict(kernel_size=4, padding="same", padding_mode="zeros"),
    dict(kernel_size=3, padding="valid", padding_mode="reflect"),
    dict(kernel_size=3, padding=(1, 2), padding_mode="replicate", stride=2),
]


@pytest.mark.parametrize("kw", CONVS, ids=[f"{k['padding']}-{k['padding_mode']}" for k in CONVS])
def test_conv2d_padding_modes_match_torch(kw):
    _same(lambda L: L.nn.Conv2d(2, 3, **kw), _x((2, 2, 6, 9)))


def test_conv1d_same_padding_mode_matches_torch():
    _same(lambda L: L.nn.Conv1d(2, 3, 4, padding="same", padding_mode="reflect"), _x((2, 2, 7)))


# ---- Embedding(scale_grad_by_freq=True) ------------------------------------------------------------
@pytest.mark.parametrize("padding_idx", [None, 1])
def test_embedding_scale_grad_by_freq_matches_torch(padding_idx):
    idx = np.array([[0, 1, 2, 0], [2, 0, 4, 1]])

    def prog(L: Any) -> Any:
        e = L.nn.Embedding(5, 3, padding_idx=padding_idx, scale_grad_by_freq=True).double()
        with L.no_grad():
            e.weight.copy_(L.tensor(np.arange(15.0).reshape(5, 3)))
        out = e(L.tensor(idx))
        (out * L.tensor(np.arange(24.0).reshape(2, 4, 3))).sum().backward()
        return out, e.weight.grad, repr(e)
    parity(prog)
    parity(lambda L: L.nn.functional.embedding(
        L.tensor([3, 3, 1]), L.ones(4, 2, requires_grad=True), scale_grad_by_freq=True)
        .sum().backward() or 0)


def test_new_layers_exported():
    for name in ("PReLU", "ZeroPad2d", "PixelShuffle", "InstanceNorm2d", "RMSNorm",
                 "MultiLabelSoftMarginLoss"):
        assert name in rustgrad.nn.__all__ and hasattr(rustgrad.nn, name)
