"""Parity of the pointwise unary ops with torch: exp, log, sqrt, abs, relu, sigmoid, tanh,
clamp."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import check

SHAPES = [(3, 4), (), (1,), (0, 3), (2, 1, 3)]

UNARY = {
    "exp": (lambda lib, a: a.exp(), lambda lib, a: lib.exp(a), -2.0, 2.0),
    "log": (lambda lib, a: a.log(), lambda lib, a: lib.log(a), 0.1, 3.0),
    "sqrt": (lambda lib, a: a.sqrt(), lambda lib, a: lib.sqrt(a), 0.1, 3.0),
    "abs": (lambda lib, a: a.abs(), lambda lib, a: lib.abs(a), -2.0, 2.0),
    "abs_op": (lambda lib, a: abs(a), lambda lib, a: abs(a), -2.0, 2.0),
    "relu": (lambda lib, a: a.relu(), lambda lib, a: lib.relu(a), -2.0, 2.0),
    "sigmoid": (lambda lib, a: a.sigmoid(), lambda lib, a: lib.sigmoid(a), -4.0, 4.0),
    "tanh": (lambda lib, a: a.tanh(), lambda lib, a: lib.tanh(a), -3.0, 3.0),
}


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_method_and_function_match_torch(op, shape):
    method, function, low, high = UNARY[op]
    check(method, shape, low=low, high=high)
    check(function, shape, low=low, high=high)


def test_unary_at_kinks_zero_matches_torch_subgradient():
    # torch: abs'(0) = 0, relu'(0) = 0
    x = np.array([-1.0, 0.0, 1.0, 0.0])
    check(lambda lib, a: (a.abs(), a.relu()), x)


def test_sigmoid_tanh_exp_large_inputs_match_torch():
    x = np.array([-50.0, -20.0, 0.0, 20.0, 50.0])
    check(lambda lib, a: (a.sigmoid(), a.tanh()), x)
    check(lambda lib, a: a.exp(), np.array([-700.0, 300.0]), dtypes=(np.float64,))


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
def test_log_sqrt_at_zero_match_torch_inf():
    check(lambda lib, a: a.log(), np.array([0.0, 1.0]), rtol=1e-7)
    check(lambda lib, a: a.sqrt(), np.array([0.0, 4.0]), rtol=1e-7)


@pytest.mark.xfail(strict=True, raises=RuntimeWarning,
                   reason="ops call NumPy without np.errstate, so log(0), x/0, sqrt(-1) emit "
                   "NumPy RuntimeWarnings that torch does not (errstate costs ~0.7us per op)")
def test_log_div_sqrt_at_singularities_emit_no_warning_like_torch():
    import warnings

    import rustgrad

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rustgrad.tensor([0.0]).log().item() == float("-inf")
        assert rustgrad.tensor([1.0]) / rustgrad.tensor([0.0]) == float("inf")
        assert np.isnan(rustgrad.tensor([-1.0]).sqrt().item())


CLAMP = [
    {"min": -0.5},
    {"max": 0.7},
    {"min": -0.5, "max": 0.5},
    {"min": -1, "max": 1},
    {"min": 2.0, "max": -2.0},  # min > max: torch gives max everywhere
]


@pytest.mark.parametrize("kw", CLAMP, ids=str)
@pytest.mark.parametrize("shape", [(4, 5), (), (0,)], ids=str)
def test_clamp_bounds_match_torch(kw, shape):
    check(lambda lib, a: a.clamp(**kw), shape)
    check(lambda lib, a: lib.clamp(a, **kw), shape)
    check(lambda lib, a: a.clip(**kw), shape)


def test_clamp_positional_bounds_match_torch():
    check(lambda lib, a: (a.clamp(-0.5), a.clamp(-0.5, 0.5), a.clamp(None, 0.5)), (3, 3))


def test_clamp_at_bounds_gradient_passes_like_torch():
    x = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
    check(lambda lib, a: a.clamp(-0.5, 0.5), x)


def test_clamp_tensor_bounds_match_torch():
    check(lambda lib, a, lo, hi: a.clamp(lo, hi), (3, 4), (4,), (3, 1), seed=3)
    check(lambda lib, a, lo: a.clamp(min=lo), (3, 4), (3, 4), seed=4)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_unary_nan_input_values_and_grads_match_torch():
    # torch: abs'(nan) = sgn(nan) = 0; relu passes nan's gradient (threshold_backward: x <= 0)
    x = np.array([np.nan, -1.0, 2.0])
    check(lambda lib, a: (a.abs(), a.relu(), a.clamp(0, 1), a.sigmoid(), a.tanh(), a.exp()), x)


def test_clamp_int_tensor_float_bound_gives_default_float_like_torch():
    ints = np.array([1, 5, -3])
    check(lambda lib, a: (a.clamp(0.5), a.clamp(2, 3.5), a.clamp(max=3.5), a.clamp(0, 2)), ints)
    check(lambda lib, a: a.clamp(-1, 1), np.array([1.0, 5.0], dtype=np.float16), dtypes=(None,))
