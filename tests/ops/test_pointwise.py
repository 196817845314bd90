"""Pointwise ops against torch: unary math (exp, log, sqrt, abs, relu, sigmoid, tanh, clamp,
trigonometry, erf, rounding), activations (softplus, gelu, silu, leaky_relu, elu, hardtanh),
atan2 / lerp / fmod / addcmul / addcdiv, nan_to_num, float tests and logical ops, frac,
clamp_min / clamp_max, the in-place forms (log_ ... square_, lerp_, clamp_min_ / clamp_max_):
values, grad_fn names, gradients, subgradients at kinks, dtypes of integral inputs, errors, and
gradcheck."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import rustgrad

from ..parity import F, check, check_double_backward, check_error, grad_ok, ints, parity, same_error

SHAPES = [(3, 4), (), (1,), (0, 3), (2, 1, 3)]



# name -> (program, low, high); every op here exists as torch.<name> and Tensor.<name>
TORCH_UNARY = {
    "sin": (-3.0, 3.0), "cos": (-3.0, 3.0), "tan": (-1.2, 1.2), "asin": (-0.9, 0.9),
    "acos": (-0.9, 0.9), "atan": (-3.0, 3.0), "sinh": (-2.0, 2.0), "cosh": (-2.0, 2.0),
    "exp2": (-2.0, 2.0), "expm1": (-2.0, 2.0), "log2": (0.1, 3.0), "log10": (0.1, 3.0),
    "log1p": (-0.9, 3.0), "rsqrt": (0.2, 3.0), "square": (-2.0, 2.0), "erf": (-3.0, 3.0),
    "floor": (-3.0, 3.0), "ceil": (-3.0, 3.0), "round": (-3.0, 3.0), "trunc": (-3.0, 3.0),
    "arcsin": (-0.9, 0.9), "arccos": (-0.9, 0.9), "arctan": (-3.0, 3.0), "fix": (-3.0, 3.0),
}

# name -> (program, low, high) for torch.nn.functional-only activations
ACTIVATIONS = {
    "softplus": (lambda lib, a: F(lib).softplus(a), -3.0, 3.0),
    "softplus_beta": (lambda lib, a: F(lib).softplus(a, beta=2.0, threshold=3.0), -3.0, 3.0),
    "gelu": (lambda lib, a: F(lib).gelu(a), -3.0, 3.0),
    "gelu_tanh": (lambda lib, a: F(lib).gelu(a, approximate="tanh"), -3.0, 3.0),
    "silu": (lambda lib, a: F(lib).silu(a), -3.0, 3.0),
    "leaky_relu": (lambda lib, a: F(lib).leaky_relu(a), -3.0, 3.0),
    "leaky_relu_slope": (lambda lib, a: F(lib).leaky_relu(a, 0.2), -3.0, 3.0),
    "elu": (lambda lib, a: F(lib).elu(a), -3.0, 3.0),
    "elu_alpha": (lambda lib, a: F(lib).elu(a, alpha=0.5), -3.0, 3.0),
    "hardtanh": (lambda lib, a: F(lib).hardtanh(a), -3.0, 3.0),
    "hardtanh_bounds": (lambda lib, a: F(lib).hardtanh(a, -0.5, 2.0), -3.0, 3.0),
}


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", sorted(TORCH_UNARY))
def test_unary_method_and_function_random_inputs_match_torch(op, shape, device):
    low, high = TORCH_UNARY[op]
    check(lambda lib, a: getattr(a, op)(), shape, low=low, high=high, device=device)
    check(lambda lib, a: getattr(lib, op)(a), shape, low=low, high=high, device=device)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", sorted(ACTIVATIONS))
def test_activation_random_inputs_match_torch(op, shape, device):
    fn, low, high = ACTIVATIONS[op]
    check(fn, shape, low=low, high=high, device=device)


@pytest.mark.parametrize("op", sorted(TORCH_UNARY))
def test_unary_gradcheck_away_from_kinks_passes(op):
    low, high = TORCH_UNARY[op]
    x = np.linspace(low + 0.05, high - 0.05, 6).reshape(2, 3) + 0.013
    assert grad_ok(lambda lib, a: getattr(lib, op)(a), x)


@pytest.mark.parametrize("op", sorted(ACTIVATIONS))
def test_activation_gradcheck_away_from_kinks_passes(op):
    fn, low, high = ACTIVATIONS[op]
    x = np.array([[-2.7, -1.3, -0.4], [0.35, 1.1, 2.6]])
    assert grad_ok(fn, x)


@pytest.mark.parametrize("op", ["gelu", "gelu_tanh", "softplus", "silu", "elu"])
def test_activation_double_backward_matches_torch(op, device):
    fn, low, high = ACTIVATIONS[op]
    check_double_backward(fn, (2, 3), low=low, high=high, device=device)


@pytest.mark.parametrize("op", ["sin", "tan", "asin", "atan", "erf", "rsqrt", "log1p", "exp2"])
def test_unary_double_backward_matches_torch(op, device):
    low, high = TORCH_UNARY[op]
    check_double_backward(lambda lib, a: getattr(lib, op)(a), (2, 3), low=low, high=high,
                          device=device)


KINKS = {
    # torch: leaky_relu'(0) = slope, elu'(0) = alpha, hardtanh' is 0 at the bounds
    "leaky_relu": (lambda lib, a: F(lib).leaky_relu(a, 0.3), [-1.0, 0.0, 1.0]),
    "elu": (lambda lib, a: F(lib).elu(a, alpha=0.7), [-1.0, 0.0, 1.0]),
    "hardtanh": (lambda lib, a: F(lib).hardtanh(a), [-1.0, 1.0, -2.0, 0.0, 2.0]),
    "softplus_threshold": (lambda lib, a: F(lib).softplus(a, beta=1.0, threshold=1.0),
                           [0.999, 1.0, 1.001, 30.0]),
    "floor": (lambda lib, a: a.floor(), [-1.0, 0.0, 1.5, 2.0]),
    "round_half_even": (lambda lib, a: a.round(), [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5]),
}


@pytest.mark.parametrize("op", sorted(KINKS))
def test_activation_at_kinks_matches_torch_subgradient(op, device):
    fn, x = KINKS[op]
    check(fn, np.array(x), device=device)


@pytest.mark.parametrize("decimals", [1, 2, -1])
def test_round_with_decimals_matches_torch(decimals, device):
    check(lambda lib, a: a.round(decimals=decimals), (3, 4), low=-30.0, high=30.0, device=device)
    check(lambda lib, a: lib.round(a, decimals=decimals), (), low=-30.0, high=30.0, device=device)


def test_erf_tails_and_specials_match_torch(device):
    x = np.array([-30.0, -6.0, -2.51, -2.5, -1e-8, 0.0, 1e-300, 0.7, 2.5, 2.49, 4.0, 9.0])
    check(lambda lib, a: a.erf(), x, device=device)
    check(lambda lib, a: a.erf(), np.array([np.inf, -np.inf, np.nan]), backward=False,
          device=device)


def test_gelu_large_inputs_match_torch(device):
    x = np.array([-40.0, -10.0, 10.0, 40.0])
    check(lambda lib, a: (F(lib).gelu(a), F(lib).gelu(a, approximate="tanh")), x, device=device)


@pytest.mark.parametrize("op", ["sin", "exp2", "log2", "rsqrt", "erf", "atan", "expm1"])
def test_unary_integral_input_gives_default_float(op, device):
    ints = np.array([[1, 2], [3, 4]], dtype=np.int64)
    check(lambda lib, a: getattr(lib, op)(a), ints, dtypes=(np.float64,), device=device)
    check(lambda lib, a: getattr(lib, op)(a), np.array([True, False]), dtypes=(np.float64,),
          device=device)


@pytest.mark.parametrize("op", ["floor", "ceil", "round", "trunc", "square"])
def test_rounding_and_square_integral_input_keeps_integer_dtype(op, device):
    ints = np.array([[1, -2], [3, 4]], dtype=np.int64)
    check(lambda lib, a: getattr(a, op)(), ints, dtypes=(np.float64,), device=device)


def test_square_bool_gives_int64(device):
    check(lambda lib, a: a.square(), np.array([True, False]), dtypes=(np.float64,), device=device)


# ---- binary: atan2, lerp, fmod -----------------------------------------------------------
BINARY_SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 3), (4, 1)), ((), (2,)), ((0, 2), (2,))]


@pytest.mark.parametrize("shapes", BINARY_SHAPES, ids=str)
def test_atan2_broadcast_matches_torch(shapes, device):
    check(lambda lib, a, b: lib.atan2(a, b), *shapes, device=device)
    check(lambda lib, a, b: a.atan2(b), *shapes, device=device)


@pytest.mark.parametrize("shapes", BINARY_SHAPES, ids=str)
@pytest.mark.parametrize("weight", [0.3, 0.7, -0.4, 1.5])
def test_lerp_scalar_weight_broadcast_matches_torch(shapes, weight, device):
    check(lambda lib, a, b: lib.lerp(a, b, weight), *shapes, device=device)
    check(lambda lib, a, b: a.lerp(b, weight), *shapes, device=device)


@pytest.mark.parametrize("shapes", [((3, 4), (3, 4), (3, 4)), ((3, 4), (4,), (3, 1)),
                                    ((2,), (2,), ()), ((), (), ())], ids=str)
def test_lerp_tensor_weight_broadcast_matches_torch(shapes, device):
    check(lambda lib, a, b, w: lib.lerp(a, b, w), *shapes, low=-1.0, high=1.5, device=device)


@pytest.mark.parametrize("shapes", BINARY_SHAPES, ids=str)
def test_fmod_tensor_divisor_matches_torch(shapes, device):
    # divisors away from 0 and quotients away from integers (the kinks)
    check(lambda lib, a, b: lib.fmod(a * 3.1, b.abs() + 0.55), *shapes, device=device)


@pytest.mark.parametrize("divisor", [0.7, -1.3, 2])
def test_fmod_scalar_divisor_matches_torch(divisor, device):
    check(lambda lib, a: lib.fmod(a, divisor), (3, 4), low=-5.0, high=5.0, device=device)
    check(lambda lib, a: a.fmod(divisor), (), low=-5.0, high=5.0, device=device)


def test_fmod_integral_inputs_match_torch(device):
    a = np.array([[7, -7], [5, -3]], dtype=np.int64)
    b = np.array([[3, 3], [-2, 2]], dtype=np.int64)
    check(lambda lib, x, y: (lib.fmod(x, y), lib.fmod(x, 2), lib.fmod(x, 2.5)), a, b,
          dtypes=(np.float64,), device=device)


def test_binary_gradcheck_away_from_kinks_passes():
    a, b = np.array([[0.3, -1.2, 2.0]]), np.array([[1.1], [-0.7]])
    assert grad_ok(lambda lib, x, y: lib.atan2(x, y), a, b)
    assert grad_ok(lambda lib, x, y: lib.lerp(x, y, 0.35), a, b)
    assert grad_ok(lambda lib, x, y, w: lib.lerp(x, y, w), a, b, np.array([0.2, 0.9, 0.6]))
    assert grad_ok(lambda lib, x, y: lib.fmod(x * 3.1, y.abs() + 0.55), a, b)
    assert grad_ok(lambda lib, x: lib.fmod(x, 0.7), np.array([0.3, -1.2, 2.0]))


def test_lerp_double_backward_matches_torch(device):
    check_double_backward(lambda lib, a, b, w: lib.lerp(a, b, w), (2, 3), (2, 3), (3,),
                          device=device)


# ---- bool results ------------------------------------------------------------------------
SPECIAL = np.array([[0.0, np.nan, np.inf], [-np.inf, -1.5, 2.0]])


@pytest.mark.parametrize("op", ["isnan", "isinf", "isfinite", "isposinf", "isneginf"])
def test_float_tests_give_bool_without_grad(op, device):
    check(lambda lib, a: getattr(lib, op)(a), SPECIAL, device=device)
    check(lambda lib, a: getattr(a, op)(), np.array([[1, 2]], dtype=np.int64), device=device)


LOGICAL_INPUTS = [
    (np.array([True, False, True, False]), np.array([True, True, False, False])),
    (np.array([[0.0, 1.5, -2.0]]), np.array([[3], [0]], dtype=np.int64)),
    (np.array(0.0), np.array([1, 0, 2], dtype=np.uint8)),
]


@pytest.mark.parametrize("inputs", range(len(LOGICAL_INPUTS)))
@pytest.mark.parametrize("op", ["logical_and", "logical_or", "logical_xor"])
def test_logical_binary_any_dtypes_give_bool(op, inputs, device):
    a, b = LOGICAL_INPUTS[inputs]
    check(lambda lib, x, y: getattr(lib, op)(x, y), a, b, device=device)
    check(lambda lib, x, y: getattr(x, op)(y), a, b, device=device)


def test_logical_not_any_dtype_gives_bool(device):
    check(lambda lib, x: lib.logical_not(x), np.array([[0.0, 1.5], [-2.0, 0.0]]), device=device)
    check(lambda lib, x: x.logical_not(), np.array([3, 0], dtype=np.int64), device=device)


# ---- errors ------------------------------------------------------------------------------
ERRORS = {
    "softplus_int": (lambda lib, a: F(lib).softplus(a.long()), "not implemented for 'Long'"),
    "gelu_int": (lambda lib, a: F(lib).gelu(a.long()), "not implemented for 'Long'"),
    "silu_int": (lambda lib, a: F(lib).silu(a.long()), "not implemented for 'Long'"),
    "elu_int": (lambda lib, a: F(lib).elu(a.long()), "not implemented for 'Long'"),
    "leaky_int": (lambda lib, a: F(lib).leaky_relu(a.long()), "not implemented for 'Long'"),
    "gelu_approximate": (lambda lib, a: F(lib).gelu(a, approximate="fast"),
                         "approximate argument must be either none or tanh"),
    "hardtanh_bounds": (lambda lib, a: F(lib).hardtanh(a, 1.0, -1.0),
                        "min_val cannot be greater than max_val"),
    "atan2_scalar": (lambda lib, a: lib.atan2(a, 2.0), "must be Tensor, not float"),
    "lerp_end_dtype": (lambda lib, a: lib.lerp(a, a.float(), 0.5),
                       "expected dtype double for `end` but got dtype float"),
    "lerp_weight_dtype": (lambda lib, a: lib.lerp(a, a, a.float()),
                          "expected dtype double for `weight` but got dtype float"),
    "fmod_int_zero": (lambda lib, a: lib.fmod(a.long(), 0), "ZeroDivisionError"),
    "fmod_int_tensor_zero": (lambda lib, a: lib.fmod(a.long(), lib.zeros(3, 4).long()),
                             "ZeroDivisionError"),
    "floor_bool": (lambda lib, a: (a > 0).floor(), "not implemented for 'Bool'"),
    "logical_and_scalar": (lambda lib, a: lib.logical_and(a, 1), "must be Tensor, not int"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_pointwise_invalid_arguments_raise_torch_error(case, device):
    fn, phrase = ERRORS[case]
    check_error(fn, (3, 4), phrase=phrase, device=device)


def test_pointwise_functions_are_exported_like_torch():
    for name in TORCH_UNARY:
        assert callable(getattr(rustgrad, name)) and hasattr(rustgrad.Tensor, name)
    assert not hasattr(rustgrad, "gelu") and not hasattr(rustgrad, "softplus")
    assert math.isclose(rustgrad.erf(rustgrad.tensor(0.5)).item(), math.erf(0.5), rel_tol=1e-6)


# ---- exp, log, sqrt, abs, relu, sigmoid, tanh, clamp ---------------------------------------------
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
def test_unary_method_and_function_match_torch(op, shape, device):
    method, function, low, high = UNARY[op]
    check(method, shape, low=low, high=high, device=device)
    check(function, shape, low=low, high=high, device=device)


def test_unary_at_kinks_zero_matches_torch_subgradient(device):
    # torch: abs'(0) = 0, relu'(0) = 0
    x = np.array([-1.0, 0.0, 1.0, 0.0])
    check(lambda lib, a: (a.abs(), a.relu()), x, device=device)


def test_sigmoid_tanh_exp_large_inputs_match_torch(device):
    x = np.array([-50.0, -20.0, 0.0, 20.0, 50.0])
    check(lambda lib, a: (a.sigmoid(), a.tanh()), x, device=device)
    check(lambda lib, a: a.exp(), np.array([-700.0, 300.0]), dtypes=(np.float64,), device=device)


def test_log_sqrt_at_zero_match_torch_inf(device):
    check(lambda lib, a: a.log(), np.array([0.0, 1.0]), rtol=1e-7, device=device)
    check(lambda lib, a: a.sqrt(), np.array([0.0, 4.0]), rtol=1e-7, device=device)


def test_log_div_sqrt_at_singularities_emit_no_warning_like_torch():
    import warnings

    import rustgrad

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rustgrad.tensor([0.0]).log().item() == float("-inf")
        assert rustgrad.tensor([1.0]) / rustgrad.tensor([0.0]) == float("inf")
        assert np.isnan(rustgrad.tensor([-1.0]).sqrt().item())
        assert rustgrad.tensor([0.0]).reciprocal().item() == float("inf")
        assert np.isnan((rustgrad.tensor([-1.0]) ** 0.5).item())
        assert (rustgrad.tensor([0.0]) ** -1).item() == float("inf")
        assert (rustgrad.tensor([0.0], dtype=rustgrad.float64) ** -3).item() == float("inf")


CLAMP = [
    {"min": -0.5},
    {"max": 0.7},
    {"min": -0.5, "max": 0.5},
    {"min": -1, "max": 1},
    {"min": 2.0, "max": -2.0},  # min > max: torch gives max everywhere
]


@pytest.mark.parametrize("kw", CLAMP, ids=str)
@pytest.mark.parametrize("shape", [(4, 5), (), (0,)], ids=str)
def test_clamp_bounds_match_torch(kw, shape, device):
    check(lambda lib, a: a.clamp(**kw), shape, device=device)
    check(lambda lib, a: lib.clamp(a, **kw), shape, device=device)
    check(lambda lib, a: a.clip(**kw), shape, device=device)


def test_clamp_positional_bounds_match_torch(device):
    check(lambda lib, a: (a.clamp(-0.5), a.clamp(-0.5, 0.5), a.clamp(None, 0.5)), (3, 3),
          device=device)


def test_clamp_at_bounds_gradient_passes_like_torch(device):
    x = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
    check(lambda lib, a: a.clamp(-0.5, 0.5), x, device=device)


def test_clamp_tensor_bounds_match_torch(device):
    check(lambda lib, a, lo, hi: a.clamp(lo, hi), (3, 4), (4,), (3, 1), seed=3, device=device)
    check(lambda lib, a, lo: a.clamp(min=lo), (3, 4), (3, 4), seed=4, device=device)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_unary_nan_input_values_and_grads_match_torch(device):
    # torch: abs'(nan) = sgn(nan) = 0; relu passes nan's gradient (threshold_backward: x <= 0)
    x = np.array([np.nan, -1.0, 2.0])
    check(lambda lib, a: (a.abs(), a.relu(), a.clamp(0, 1), a.sigmoid(), a.tanh(), a.exp()), x,
          device=device)


def test_clamp_int_tensor_float_bound_gives_default_float_like_torch(device):
    ints = np.array([1, 5, -3])
    check(lambda lib, a: (a.clamp(0.5), a.clamp(2, 3.5), a.clamp(max=3.5), a.clamp(0, 2)), ints,
          device=device)
    check(lambda lib, a: a.clamp(-1, 1), np.array([1.0, 5.0], dtype=np.float16), dtypes=(None,),
          device=device)


# ---- addcmul / addcdiv ----------------------------------------------------------------------
@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
def test_addc_matches_torch(op, device):
    check(lambda lib, a, b, c: getattr(lib, op)(a, b, c), (3, 4), (3, 4), (3, 4), low=0.5,
          device=device)
    check(lambda lib, a, b, c: getattr(a, op)(b, c, value=-0.5), (3, 1), (4,), (3, 4),
          low=0.5, device=device)
    assert grad_ok(lambda lib, a, b, c: getattr(lib, op)(a, b, c, value=2.0), (3,), (3,), (3,),
                   low=0.5)
    check_error(lambda lib, a, b, c: getattr(lib, op)(a, b, c), (3,), (4,), (3,),
                phrase="must match the size", device=device)


# ---- nan_to_num ----------------------------------------------------------------------------
def test_nan_to_num_matches_torch(device):
    arr = np.array([1.0, np.nan, np.inf, -np.inf, -2.0])
    check(lambda lib, a: lib.nan_to_num(a), arr, device=device)
    check(lambda lib, a: a.nan_to_num(nan=1.5, posinf=9.0, neginf=-9.0), arr, device=device)
    check(lambda lib, a: lib.nan_to_num(a), ints([1, 2]), device=device)


# ---- more unary in-place forms (on a non-leaf, a view, as functions), frac -------------------
UNARY_INPLACE = [
    ("log_", 0.5, 2.0), ("log2_", 0.5, 2.0), ("log10_", 0.5, 2.0), ("log1p_", -0.5, 2.0),
    ("exp2_", -2.0, 2.0), ("expm1_", -2.0, 2.0), ("sin_", -2.0, 2.0), ("cos_", -2.0, 2.0),
    ("tan_", -1.0, 1.0), ("asin_", -0.9, 0.9), ("arcsin_", -0.9, 0.9), ("acos_", -0.9, 0.9),
    ("atan_", -2.0, 2.0), ("sinh_", -2.0, 2.0), ("cosh_", -2.0, 2.0), ("rsqrt_", 0.5, 2.0),
    ("reciprocal_", 0.5, 2.0), ("floor_", -2.0, 2.0), ("ceil_", -2.0, 2.0),
    ("round_", -2.0, 2.0), ("trunc_", -2.0, 2.0), ("fix_", -2.0, 2.0), ("frac_", -2.0, 2.0),
    ("sign_", -2.0, 2.0), ("erf_", -2.0, 2.0), ("exp_", -2.0, 2.0), ("sigmoid_", -2.0, 2.0),
    ("tanh_", -2.0, 2.0), ("sqrt_", 0.5, 2.0), ("abs_", -2.0, 2.0), ("neg_", -2.0, 2.0),
    ("square_", -2.0, 2.0),
]


def _inplace(method: str) -> Any:
    def fn(lib: Any, x: Any) -> Any:
        y = x * 1
        out = getattr(y, method)()
        assert out is y
        return y
    return fn


@pytest.mark.parametrize("method,low,high", UNARY_INPLACE, ids=[m for m, _, _ in UNARY_INPLACE])
def test_unary_inplace_matches_torch(method, low, high):
    check(_inplace(method), (3, 4), low=low, high=high)


@pytest.mark.parametrize("method,low,high", UNARY_INPLACE[:18], ids=[m for m, _, _ in UNARY_INPLACE[:18]])
def test_unary_inplace_on_a_view_matches_torch(method, low, high):
    def fn(lib: Any, x: Any) -> Any:
        y = x * 1
        getattr(y[1], method)()
        return y
    check(fn, (3, 4), low=low, high=high)


@pytest.mark.parametrize("method,low,high", UNARY_INPLACE[:18], ids=[m for m, _, _ in UNARY_INPLACE[:18]])
def test_unary_inplace_gradcheck(method, low, high):
    assert grad_ok(_inplace(method), (2, 3), low=low, high=high)


@pytest.mark.parametrize("name", ["log_", "sin_", "cos_", "rsqrt_", "reciprocal_", "floor_",
                                  "log1p_", "expm1_", "round_", "trunc_", "frac_"])
def test_unary_inplace_function_form(lib, name):
    x = lib.tensor([0.5, 1.25, 2.0], dtype=lib.float64)
    out = getattr(lib, name)(x)
    assert out is x
    assert x._version == 1
    parity(lambda L: getattr(L, name)(L.tensor([0.5, 1.25, 2.0], dtype=L.float64)))


def test_unary_inplace_refusals():
    same_error(lambda L: L.ones(3, requires_grad=True).log_(), "a leaf Variable that requires grad")
    same_error(lambda L: L.tensor([1, 2]).log_(), "can't be cast to the desired output type")
    same_error(lambda L: L.tensor([1, 2]).frac(), "not implemented for 'Long'")
    parity(lambda L: L.tensor([-3, 2]).sign_())
    parity(lambda L: L.tensor([-3, 2]).floor_())
    parity(lambda L: L.tensor([1.26, -2.5]).round_(decimals=1))


def test_inplace_under_no_grad_keeps_leaf(lib):
    x = lib.tensor([0.5, 2.0], requires_grad=True)
    with lib.no_grad():
        x.log_()
    assert x.is_leaf and x.grad_fn is None and x._version == 1


def test_frac_matches_torch():
    check(lambda L, x: L.frac(x * 3), (3, 4))
    assert grad_ok(lambda L, x: x.frac(), (3,), low=0.1, high=0.9)


# ---- lerp_ -----------------------------------------------------------------------------------
def test_lerp_inplace_matches_torch():
    check(lambda L, x, e: (x * 1).lerp_(e, 0.3), (3, 4), (3, 4))
    check(lambda L, x, e: (x * 1).lerp_(e, 0.8), (3, 4), (4,))
    check(lambda L, x, e, w: (x * 1).lerp_(e, w), (3, 4), (3, 4), (4,))
    assert grad_ok(lambda L, x, e, w: (x * 1).lerp_(e, w), (2, 3), (2, 3), (2, 3))
    same_error(lambda L: L.zeros(3).lerp_(L.ones(2, 3), 0.5), "doesn't match the broadcast shape")
    same_error(lambda L: L.zeros(3).lerp_(L.ones(3, dtype=L.float64), 0.5), "expected dtype")


# ---- clamp_min, clamp_max ------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["clamp_min", "clamp_max"])
def test_clamp_side_matches_torch(name):
    check(lambda L, x: getattr(L, name)(x, 0.25), (3, 4))
    check(lambda L, x: getattr(x, name)(0), (3, 4))
    check(lambda L, x, b: getattr(x, name)(b), (3, 4), (4,))
    check(lambda L, x: getattr(x * 1, name + "_")(0.1), (3, 4))
    check(lambda L, x, b: getattr(x * 1, name + "_")(b), (3, 4), (4,))
    # a value sitting on the bound keeps its gradient
    check(lambda L, x: getattr(x, name)(0.5), np.array([0.5, 1.0, 0.0]))
    assert grad_ok(lambda L, x, b: getattr(x, name)(b), (3, 4), (4,))
    parity(lambda L: getattr(L.tensor([1, 5, 9]), name)(4))


# ---- declared on rustgrad; the ops above and others on every device --------------------------
def test_declared_on_rustgrad():
    for name in ("lerp_", "addcmul_", "addcdiv_", "clamp_min", "index_fill_", "bincount", "diff"):
        assert hasattr(rustgrad.Tensor, name), name


def test_new_ops_on_every_device(device):
    check(lambda L, x, e, w: (x * 1).lerp_(e, w), (3, 4), (3, 4), (4,), device=device)
    check(lambda L, x: (x * 1).log_(), (3, 4), low=0.5, device=device)
    check(lambda L, x, b: x.clamp_min(b), (3, 4), (4,), device=device)
    check(lambda L, x, i: x.index_fill(1, i, -1.5), (3, 4), ints([0, 2]), device=device)
    check(lambda L, x, a, b: (x * 1).addcdiv_(a, b, value=2), (3, 4), (3, 4), (4,), low=0.5,
          device=device)
    check(lambda L, x, p: L.diff(x, n=2, prepend=p), (3, 4), (3, 1), device=device)
    check(lambda L, x, w: L.nn.functional.prelu(x, w), (2, 3, 4), (3,), device=device)
    check(lambda L, x: L.pixel_shuffle(x, 2), (1, 8, 2, 3), device=device)
    check(lambda L, x: L.nn.functional.pad(x, (1, 2, 2, 1), mode="reflect"), (1, 2, 4, 5),
          device=device)
    check(lambda L, x: L.nn.functional.pad(x, (1, 2), mode="replicate"), (2, 4, 5),
          device=device)
    L = rustgrad
    s = L.tensor([1, 3, 5, 7], device=device)
    assert L.searchsorted(s, L.tensor([3, 6], device=device)).tolist() == [1, 3]
    assert L.bincount(L.tensor([1, 1, 3], device=device)).tolist() == [0, 2, 0, 1]
    w = L.tensor([0.5, 1.0, 2.0], device=device)
    assert L.bincount(L.tensor([1, 1, 3], device=device), w).device.type == device
    assert L.count_nonzero(L.tensor([[0, 1], [2, 0]], device=device), dim=0).tolist() == [1, 1]
