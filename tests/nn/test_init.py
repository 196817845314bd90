"""nn.init: in place under no_grad, returns the tensor, bumps the version, the distributions'
bounds and moments, and torch's fan/gain arithmetic."""

from __future__ import annotations

import math

import numpy as np
import pytest
import rustgrad
import torch
from rustgrad.nn import init


def _param(*shape):
    return rustgrad.nn.Parameter(rustgrad.zeros(*shape))


@pytest.mark.parametrize("fn,kwargs", [
    (init.uniform_, {"a": -0.5, "b": 0.5}), (init.normal_, {"std": 0.1}),
    (init.constant_, {"val": 0.3}), (init.ones_, {}), (init.zeros_, {}),
    (init.xavier_uniform_, {}), (init.xavier_normal_, {}), (init.kaiming_uniform_, {"a": 1.0}),
    (init.kaiming_normal_, {"mode": "fan_out", "nonlinearity": "relu"}), (init.orthogonal_, {}),
    (init.trunc_normal_, {"std": 0.5}), (init.eye_, {}),
])
def test_init_on_parameter_is_in_place_returns_tensor_and_records_nothing(fn, kwargs):
    p = _param(20, 30)
    v = p._version

    out = fn(p, **kwargs)

    assert out is p and p.is_leaf and p.requires_grad and p.grad_fn is None
    assert p._version > v


def test_init_calculate_gain_equals_torch():
    for nl, param in [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None),
                      ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None)]:
        assert init.calculate_gain(nl, param) == torch.nn.init.calculate_gain(nl, param)


def test_init_fan_in_fan_out_equal_torch():
    for shape in [(3, 4), (8, 4, 3, 3), (5, 2, 7)]:
        assert init._calculate_fan_in_and_fan_out(rustgrad.zeros(*shape)) == \
            torch.nn.init._calculate_fan_in_and_fan_out(torch.zeros(*shape))


def test_init_fan_of_1d_tensor_raises_value_error(lib):
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        lib.nn.init.xavier_uniform_(lib.zeros(3))


def test_init_uniform_bounds_and_kaiming_bound():
    rustgrad.manual_seed(0)
    w = init.kaiming_uniform_(rustgrad.empty(200, 50), a=math.sqrt(5)).numpy()
    bound = math.sqrt(6 / ((1 + 5) * 50))

    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.98 * bound


def test_init_normal_moments():
    rustgrad.manual_seed(0)
    w = init.normal_(rustgrad.empty(400, 100), mean=1.0, std=0.2).numpy()

    assert abs(w.mean() - 1.0) < 0.01 and abs(w.std() - 0.2) < 0.01


def test_init_trunc_normal_stays_in_bounds():
    rustgrad.manual_seed(0)
    w = init.trunc_normal_(rustgrad.empty(100, 100), std=1.0, a=-0.5, b=0.8).numpy()

    assert w.min() >= -0.5 and w.max() <= 0.8 and w.std() > 0.2


def test_init_orthogonal_rows_are_orthonormal():
    rustgrad.manual_seed(0)
    w = init.orthogonal_(rustgrad.empty(4, 6), gain=2.0).numpy()

    np.testing.assert_allclose(w @ w.T, 4 * np.eye(4), atol=1e-5)


def test_init_respects_manual_seed():
    rustgrad.manual_seed(7)
    a = init.normal_(rustgrad.empty(5)).numpy().copy()
    rustgrad.manual_seed(7)
    b = init.normal_(rustgrad.empty(5)).numpy()

    np.testing.assert_array_equal(a, b)


def test_init_keeps_dtype_float64():
    w = init.xavier_normal_(rustgrad.empty(3, 3, dtype=rustgrad.float64))

    assert w.dtype == rustgrad.float64
