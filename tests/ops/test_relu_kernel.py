"""relu's Rust pass (contiguous float32/float64) and its fallback (other dtypes, strided) give
torch's bits, signed zero and NaN included, and refuse what torch refuses."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad
import torch

SPECIAL = [-0.0, 0.0, float("nan"), -1.5, 2.0, float("inf"), -float("inf"), 1e-40, -1e-40]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64"])
@pytest.mark.parametrize("strided", [False, True])
def test_relu_bits_match_torch(dtype: str, strided: bool) -> None:
    vals = SPECIAL * 8 if dtype != "int64" else [-3, 0, 5, -1] * 8
    t = torch.tensor(vals).to(getattr(torch, dtype))
    r = rustgrad.tensor(vals).to(getattr(rustgrad, dtype))
    if strided:
        t, r = t[::3], r[::3]
    want, got = torch.relu(t), rustgrad.relu(r)
    assert got.dtype == getattr(rustgrad, dtype)
    if dtype == "bfloat16":
        want, got = want.float(), got.float()
    w, g = want.numpy(), got.numpy()
    np.testing.assert_array_equal(g, w)  # NaN where torch has NaN (payloads aside)
    numbers = ~np.isnan(w)
    assert np.signbit(g[numbers]).tolist() == np.signbit(w[numbers]).tolist()


def test_relu_gradient_and_in_place_keep_torch_s_signed_zero() -> None:
    x = rustgrad.tensor([-0.0, -1.0, 3.0], requires_grad=True)
    y = x.relu()
    y.sum().backward()
    assert np.signbit(y.detach().numpy()).tolist() == [True, False, False]
    assert x.grad.tolist() == [0.0, 0.0, 1.0]
    z = rustgrad.tensor([-0.0, -2.0, 1.0])
    z.relu_()
    assert np.signbit(z.numpy()).tolist() == [True, False, False]


def test_relu_refuses_complex_and_bool_as_torch() -> None:
    for bad, msg in (([1 + 1j], "clamp is not supported for complex types"),
                     ([True], "Boolean inputs not supported for relu")):
        with pytest.raises(NotImplementedError, match=msg):
            torch.relu(torch.tensor(bad))
        with pytest.raises(NotImplementedError, match=msg):
            rustgrad.relu(rustgrad.tensor(bad))
