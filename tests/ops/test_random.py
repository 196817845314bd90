"""The in-place random fills (shape, dtype, range, version, determinism under manual_seed) and
randperm, against torch's contracts."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad

from ..parity import check_error


# ---- random fills --------------------------------------------------------------------------
@pytest.mark.parametrize("fill", ["normal_", "uniform_", "bernoulli_"])
def test_random_fill_deterministic_and_versioned(fill, device):
    args = {"normal_": (1.0, 0.5), "uniform_": (-3.0, -1.0), "bernoulli_": (0.3,)}[fill]
    outs = []
    for _ in range(2):
        rustgrad.manual_seed(7)
        x = rustgrad.zeros(200, 3, dtype=rustgrad.float32, device=device)
        y = getattr(x, fill)(*args)
        assert y is x and x._version == 1
        assert x.dtype == rustgrad.float32 and tuple(x.shape) == (200, 3)
        assert x.device.type == device
        outs.append(x.cpu().numpy().copy())
    np.testing.assert_array_equal(outs[0], outs[1])
    v = outs[0]
    if fill == "uniform_":
        assert v.min() >= -3.0 and v.max() < -1.0
    elif fill == "bernoulli_":
        assert set(np.unique(v)) <= {0.0, 1.0} and 0.15 < v.mean() < 0.45
    else:
        assert abs(v.mean() - 1.0) < 0.1 and abs(v.std() - 0.5) < 0.1


@pytest.mark.parametrize("fill", ["normal_", "uniform_", "bernoulli_"])
def test_random_fill_refuses_leaf(fill, device):
    check_error(lambda lib, a: getattr(a, fill)(), (3,), requires_grad=True,
                phrase="a leaf Variable that requires grad", device=device)


def test_random_fill_no_grad_on_leaf():
    x = rustgrad.zeros(3, requires_grad=True)
    with rustgrad.no_grad():
        x.uniform_(0.0, 1.0)
    assert x._version == 1 and x.requires_grad and x.grad_fn is None


RANDOM_ERRORS = {
    "normal_std": (lambda lib, a: a.normal_(0.0, -1.0), "normal expects std >= 0.0"),
    "uniform_range": (lambda lib, a: a.uniform_(2.0, 1.0), "uniform_ expects to return"),
}


@pytest.mark.parametrize("case", sorted(RANDOM_ERRORS))
def test_random_fill_bad_arguments_raise_like_torch(case, device):
    fn, phrase = RANDOM_ERRORS[case]
    check_error(fn, (3,), phrase=phrase, device=device)


# ---- randperm ------------------------------------------------------------------------------
def test_randperm(device):
    rustgrad.manual_seed(3)
    a = rustgrad.randperm(10, device=device)
    rustgrad.manual_seed(3)
    b = rustgrad.randperm(10, device=device)
    assert a.device.type == device
    assert a.dtype == rustgrad.int64 and a.tolist() == b.tolist()
    assert sorted(a.tolist()) == list(range(10))
    assert rustgrad.randperm(0).shape == (0,)
    assert rustgrad.randperm(4, dtype=rustgrad.float32).dtype == rustgrad.float32
