"""nll_loss's fast path (unweighted mean or sum, every target in range and none ignored) gives
the bits of the general formulation, which a weight of ones takes, and of torch."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad
import torch


def _both(x: np.ndarray, t: np.ndarray, reduction: str, weighted: bool) -> tuple:
    xt = rustgrad.tensor(x, requires_grad=True)
    w = rustgrad.ones(x.shape[-1], dtype=xt.dtype) if weighted else None
    loss = rustgrad.nn.functional.nll_loss(xt, rustgrad.tensor(t), weight=w, reduction=reduction)
    loss.backward()
    return loss.detach().numpy(), xt.grad.numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("shape", [(7,), (128, 10), (33, 5)])
def test_fast_path_bits_equal_general_and_torch(dtype: type, reduction: str, shape: tuple) -> None:
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape).astype(dtype)
    t = rng.integers(0, shape[-1], shape[:-1]).astype(np.int64)
    fast, general = _both(x, t, reduction, False), _both(x, t, reduction, True)
    assert fast[0].tobytes() == general[0].tobytes()
    assert fast[1].tobytes() == general[1].tobytes()
    xt = torch.tensor(x, requires_grad=True)
    loss = torch.nn.functional.nll_loss(xt, torch.tensor(t), reduction=reduction)
    loss.backward()
    np.testing.assert_allclose(fast[0], loss.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(fast[1], xt.grad.numpy())


def test_ignored_and_out_of_range_targets_still_take_the_general_path() -> None:
    x = rustgrad.randn(4, 3)
    t = rustgrad.tensor([0, 1, 2, 1])
    tt = torch.tensor(t.numpy())
    xx = torch.tensor(x.numpy())
    for ignore in (1, 2):
        got = rustgrad.nn.functional.nll_loss(x, t, ignore_index=ignore)
        want = torch.nn.functional.nll_loss(xx, tt, ignore_index=ignore)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    with pytest.raises(IndexError, match="Target 3 is out of bounds."):
        rustgrad.nn.functional.nll_loss(x, rustgrad.tensor([0, 1, 3, 1]))
    with pytest.raises(IndexError, match="Target -1 is out of bounds."):
        rustgrad.nn.functional.nll_loss(x, rustgrad.tensor([0, -1, 2, 1]))
