"""Pointwise ops against torch: unary math (exp, log, sqrt, abs, relu, sigmoid, tanh, clamp,
trigonometry, erf, rounding), activations (softplus, gelu, silu, leaky_relu, elu, hardtanh),
atan2 / lerp / fmod / addcmul / addcdiv, nan_to_num, float tests and logical ops: values, grad_fn
names, gradients, subgradients at kinks, dtypes of integral inputs, errors, and gradcheck."""

from __future__ import annotations

import math

import numpy as np
import pytest
import rustgrad

from ..parity import F, check, check_double_backward, check_error, grad_ok, ints

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


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
def test_log_sqrt_at_zero_match_torch_inf(device):
    check(lambda lib, a: a.log(), np.array([0.0, 1.0]), rtol=1e-7, device=device)
    check(lambda lib, a: a.sqrt(), np.array([0.0, 4.0]), rtol=1e-7, device=device)


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
