"""nn.utils: clip_grad_norm_, clip_grad_value_, parameters_to_vector against torch."""

from __future__ import annotations

import math

import numpy as np
import pytest
import rustgrad
import torch

from ..models import assert_close, mlp, twin


def _with_grads():
    tm, rm = twin(mlp)
    x = np.random.default_rng(0).standard_normal((6, 8)).astype(np.float32)
    (tm(torch.tensor(x)) ** 2).sum().backward()
    (rm(rustgrad.tensor(x)) ** 2).sum().backward()
    return tm, rm


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 3.0])
def test_clip_grad_norm_returns_total_norm_and_scales_like_torch(norm_type):
    tm, rm = _with_grads()

    tn = torch.nn.utils.clip_grad_norm_(tm.parameters(), 0.5, norm_type)
    rn = rustgrad.nn.utils.clip_grad_norm_(rm.parameters(), 0.5, norm_type)

    assert abs(rn.item() - tn.item()) <= 1e-5 * tn.item()
    for tp, rp in zip(tm.parameters(), rm.parameters()):
        assert_close(rp.grad, tp.grad, 1e-5, 1e-7)


def test_clip_grad_norm_below_max_leaves_grads_unchanged():
    _, rm = _with_grads()
    before = [p.grad.numpy().copy() for p in rm.parameters()]

    rustgrad.nn.utils.clip_grad_norm_(rm.parameters(), 1e9)

    for b, p in zip(before, rm.parameters()):
        np.testing.assert_array_equal(b, p.grad.numpy())


def test_clip_grad_norm_nonfinite_raises_when_asked(lib):
    p = lib.nn.Parameter(lib.ones(2))
    p.grad = lib.tensor([math.inf, 1.0])

    with pytest.raises(RuntimeError, match="non-finite"):
        lib.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)


def test_clip_grad_value_clamps_like_torch():
    tm, rm = _with_grads()

    torch.nn.utils.clip_grad_value_(tm.parameters(), 0.05)
    rustgrad.nn.utils.clip_grad_value_(rm.parameters(), 0.05)

    for tp, rp in zip(tm.parameters(), rm.parameters()):
        assert_close(rp.grad, tp.grad, 1e-5, 1e-7)
        assert float(rp.grad.abs().max()) <= np.float32(0.05)


def test_clip_grad_bumps_grad_version(lib):
    p = lib.nn.Parameter(lib.ones(2))
    p.grad = lib.tensor([3.0, 4.0])
    v = p.grad._version

    lib.nn.utils.clip_grad_norm_(p, 1.0)

    assert p.grad._version > v
    np.testing.assert_allclose(p.grad.numpy(), [0.6, 0.8], rtol=1e-5)


def test_parameters_to_vector_and_back_like_torch():
    tm, rm = twin(mlp)

    tv = torch.nn.utils.parameters_to_vector(tm.parameters())
    rv = rustgrad.nn.utils.parameters_to_vector(rm.parameters())
    assert_close(rv, tv, 0, 0)
    assert rv.grad_fn.name() == tv.grad_fn.name() == "CatBackward0"

    rustgrad.nn.utils.vector_to_parameters(rv.detach() * 0 + 1, rm.parameters())
    assert all(float(p.detach().min()) == 1.0 for p in rm.parameters())
