"""The rest of torch's elementwise surface against torch, on every device: acosh/asinh/atanh (and
their arc* aliases and in-place forms), deg2rad/rad2deg, angle, signbit, isreal, positive,
absolute; floor_divide and `//`; fmax/fmin; igamma/igammac (torch.special.gammainc/gammaincc);
the bitwise ops and their operators (& | ^ ~ << >>, reflected and in place); the comparison
aliases (greater ...) and in-place comparisons (eq_ ...); the logical ops in place; the in-place
aliases (multiply_, divide_, subtract_, true_divide_, atan2_/arctan2_); torch.clamp_/clip_/erf_/
exp2_/fill/fill_; the complex API on real tensors (conj ..., real, imag); isin. Values, dtypes,
grad_fn names, gradients, gradcheck and double backward where differentiable, and torch's
errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import check, check_double_backward, check_error, grad_ok, ints, parity, same_error

SHAPES = [(3, 4), (), (0, 3), (2, 1, 3)]
NAN, INF = float("nan"), float("inf")


def arr(*values: Any, dtype: Any = np.float64) -> np.ndarray:
    return np.array(values, dtype=dtype)


# ---- unary ops -------------------------------------------------------------------------------
# name -> (low, high) of the random inputs; each is torch.<name> and Tensor.<name>
UNARY = {
    "acosh": (1.1, 4.0), "arccosh": (1.1, 4.0), "asinh": (-3.0, 3.0), "arcsinh": (-3.0, 3.0),
    "atanh": (-0.9, 0.9), "arctanh": (-0.9, 0.9), "deg2rad": (-360.0, 360.0),
    "rad2deg": (-4.0, 4.0), "angle": (-2.0, 2.0), "absolute": (-2.0, 2.0),
}


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_values_gradients_and_names_match_torch(op, shape, device):
    low, high = UNARY[op]
    check(lambda L, a: getattr(L, op)(a), shape, low=low, high=high, device=device)
    check(lambda L, a: getattr(a, op)(), shape, low=low, high=high, device=device)


UNARY_EDGES = arr(0.0, -0.0, 0.5, 1.0, -1.0, 2.0, -3.5, 1e-8, 30.0, INF, -INF, NAN)


@pytest.mark.parametrize("op", ["acosh", "asinh", "atanh", "deg2rad", "rad2deg", "angle", "absolute"])
def test_unary_edge_values_and_gradients_match_torch(op, device):
    # the domains' ends (acosh at 1, atanh at +-1: infinite gradients), NaN, infinities, -0.
    check(lambda L, a: getattr(L, op)(a), UNARY_EDGES, device=device)


@pytest.mark.parametrize("op", ["acosh", "asinh", "atanh", "deg2rad", "rad2deg", "angle"])
def test_unary_integral_and_bool_inputs_give_the_default_float(op, device):
    check(lambda L, a: getattr(L, op)(a), ints([[1, -2], [3, 0]]), dtypes=(None,), device=device)
    check(lambda L, a: getattr(L, op)(a), np.array([True, False]), dtypes=(None,), device=device)


@pytest.mark.parametrize("op", ["acosh", "asinh", "atanh", "deg2rad", "rad2deg", "angle"])
def test_unary_float16_matches_torch(op, device):
    low, high = UNARY[op]
    check(lambda L, a: getattr(L, op)(a), (3, 4), low=low, high=high, dtypes=(np.float16,),
          rtol=1e-2, atol=1e-2, device=device)


@pytest.mark.parametrize("op", ["acosh", "asinh", "atanh", "deg2rad", "rad2deg"])
def test_unary_bfloat16_matches_torch(op):
    low, high = UNARY[op]
    check(lambda L, a: getattr(L, op)(a.to(L.bfloat16)).float(), (3, 4), low=low, high=high,
          dtypes=(np.float32,), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("op", ["acosh", "asinh", "atanh", "deg2rad", "rad2deg", "angle"])
def test_unary_gradcheck_and_double_backward(op, device):
    low, high = UNARY[op]
    if device == "cpu":
        assert grad_ok(lambda L, a: getattr(L, op)(a), (2, 3), low=low, high=high)
    check_double_backward(lambda L, a: getattr(L, op)(a), (2, 3), low=low, high=high,
                          device=device)


def test_angle_gradient_is_zero_even_for_nan_gradients(device):
    # torch's AngleBackward0 of a real input: zeros, whatever the incoming gradient holds
    def fn(L, a):
        y = L.angle(a)
        return L.autograd.grad(y, a, L.full_like(y, float("nan")))[0]
    check(fn, arr(-1.0, 0.0, 2.0, NAN), backward=False, device=device)
    same_error(lambda L: L.angle(3.0), "must be Tensor, not float")


INPLACE_UNARY = {
    "acosh_": (1.1, 4.0), "arccosh_": (1.1, 4.0), "asinh_": (-3.0, 3.0), "arcsinh_": (-3.0, 3.0),
    "atanh_": (-0.9, 0.9), "arctanh_": (-0.9, 0.9), "deg2rad_": (-360.0, 360.0),
    "rad2deg_": (-4.0, 4.0), "absolute_": (-2.0, 2.0),
}
# torch's in-place acosh/asinh/atanh record <Name>Backward1, which has no derivative
NO_DERIVATIVE = {"acosh_", "arccosh_", "asinh_", "arcsinh_", "atanh_", "arctanh_"}


def _written(name: str, view: bool = False) -> Any:
    def fn(L: Any, a: Any) -> Any:
        y = a * 1
        target = y[1] if view else y
        out = getattr(target, name)()
        assert out is target
        return y
    return fn


@pytest.mark.parametrize("name", sorted(INPLACE_UNARY))
def test_unary_inplace_forms_match_torch(name, device):
    low, high = INPLACE_UNARY[name]
    backward = name not in NO_DERIVATIVE
    check(_written(name), (3, 4), low=low, high=high, backward=backward, device=device)
    check(_written(name, view=True), (3, 4), low=low, high=high, backward=backward, device=device)
    # without autograd (nothing requires grad) the values are written all the same
    check(lambda L, a: getattr(a.detach().clone(), name)(), (3,), low=low, high=high,
          device=device)


@pytest.mark.parametrize("name", sorted(NO_DERIVATIVE))
def test_inplace_hyperbolic_inverse_backward_raises_as_torch(name, device):
    low, high = INPLACE_UNARY[name]
    check_error(lambda L, a: getattr(a * 1, name)().sum().backward(), (3,), requires_grad=True,
                phrase=f"the derivative for 'inplace version of {name.rstrip('_').replace('arc', 'a')}'"
                       " is not implemented", device=device)
    check(lambda L, a: getattr(L, name)(a.detach().clone()) * 1, arr(1.5, 2.0) * 0.4 + 0.5,
          device=device)


@pytest.mark.parametrize("name", ["acosh_", "asinh_", "atanh_", "arccosh_", "arcsinh_",
                                  "arctanh_", "deg2rad_", "rad2deg_"])
def test_unary_inplace_function_forms_and_refusals(name, device):
    check(lambda L, a: getattr(L, name)(a.detach().clone()), arr(1.25, 0.5) * 0.5 + 0.5,
          device=device)
    check_error(lambda L, a: getattr(a, name)(), (3,), requires_grad=True,
                phrase="a leaf Variable that requires grad", device=device)
    check_error(lambda L, a: getattr(a, name)(), ints([1, 2]), dtype=None,
                phrase="can't be cast to the desired output type Long", device=device)
    assert not hasattr(torch, "absolute_") and not hasattr(rustgrad, "absolute_")


def test_signbit_matches_torch(device):
    check(lambda L, a: L.signbit(a), arr(-1.0, -0.0, 0.0, 2.0, -INF, INF, NAN, -NAN),
          device=device)
    check(lambda L, a: a.signbit(), (3, 4), device=device, dtypes=(np.float32, np.float16))
    for dt in (np.int64, np.int8, np.uint8, np.bool_):
        check(lambda L, a: L.signbit(a), np.array([1, 0, 1], dtype=np.int64).astype(dt) *
              (1 if dt in (np.uint8, np.bool_) else -1), dtypes=(None,), device=device)
    same_error(lambda L: L.signbit([1.0]), "must be Tensor")


def test_isreal_matches_torch(device):
    for spec in (arr(1.0, NAN, -INF), ints([[1, 2]]), np.array([True]), np.zeros((0, 2))):
        check(lambda L, a: (L.isreal(a), a.isreal()), spec, dtypes=(None,), device=device)
    same_error(lambda L: L.isreal(1.0), "must be Tensor, not float")


def test_positive_is_the_tensor_itself_as_torchs(lib):
    x = lib.tensor([1.0, -2.0], requires_grad=True)
    assert lib.positive(x) is x and x.positive() is x and (+x) is x
    i = lib.tensor([1, 2])
    assert lib.positive(i) is i
    same_error(lambda L: L.positive(L.tensor([True])), "The `+` operator, on a bool tensor")
    same_error(lambda L: +L.tensor([True]), "The `+` operator, on a bool tensor is not supported")
    same_error(lambda L: L.positive(1), "must be Tensor, not int")


# ---- floor_divide ----------------------------------------------------------------------------
FLOOR_DIVIDE = {
    "function": lambda L, a, b: L.floor_divide(a, b),
    "method": lambda L, a, b: a.floor_divide(b),
    "operator": lambda L, a, b: a // b,
}


@pytest.mark.parametrize("form", sorted(FLOOR_DIVIDE))
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((), (2,)), ((0, 2), (2,))],
                         ids=str)
def test_floor_divide_values_and_node_match_torch(form, shapes, device):
    # torch has no derivative: the node is torch::autograd::NotImplemented (checked below)
    check(lambda L, a, b: FLOOR_DIVIDE[form](L, a * 3, b + 2.5), *shapes, backward=False,
          device=device)


def test_floor_divide_numbers_integers_and_edges_match_torch(device):
    check(lambda L, a: (L.floor_divide(a, 2), a // -2.5, L.floor_divide(a, True), 7 // a.clamp(1),
                        L.floor_divide(9, a.clamp(1))),
          ints([7, -7, 5, 0, 1]), dtypes=(None,), device=device)
    check(lambda L, a, b: (L.floor_divide(a, b), a // b), ints([7, -7, 5, -5]), ints([2, 2, -3, -3]),
          dtypes=(None,), device=device)
    for dt in (np.int8, np.uint8, np.int32):
        check(lambda L, a: (a // 3, L.floor_divide(a, a.clamp(1))),
              np.array([5, 100, 7, 1], dtype=dt), dtypes=(None,), device=device)
    # float division by zero and by infinity, -0. results
    check(lambda L, a, b: L.floor_divide(a, b), arr(5.0, -5.0, 0.0, 5.0, -5.0, -1.0, 0.0, NAN),
          arr(0.0, 0.0, 0.0, INF, INF, INF, -3.0, 1.0), backward=False, device=device)
    check(lambda L, a: (L.floor_divide(a, 2), a // 0.75), (3, 4), dtypes=(np.float16,),
          backward=False, rtol=1e-2, atol=1e-2, device=device)


def test_floor_divide_inplace_matches_torch(device):
    def fn(L, a, b):
        y = a * 1
        assert y.floor_divide_(b) is y
        z = a * 1
        z //= 2
        return y, z
    check(fn, (3, 4), (4,), low=0.5, high=3.0, backward=False, device=device)
    check(lambda L, a: a.clone().floor_divide_(2), ints([7, -7]), dtypes=(None,), device=device)


FLOOR_DIVIDE_ERRORS = {
    "backward": (lambda L, a: L.floor_divide(a, 2).sum().backward(), (3,), np.float64,
                 "derivative for aten::floor_divide is not implemented", True),
    "backward_operator": (lambda L, a: (a // a.detach()).sum().backward(), (3,), np.float64,
                          "derivative for aten::floor_divide is not implemented", True),
    "int_zero": (lambda L, a: L.floor_divide(a, 0), ints([1, 2]), None, "ZeroDivisionError", False),
    "int_zero_tensor": (lambda L, a: a // L.tensor([0, 1]), ints([1, 2]), None,
                        "ZeroDivisionError", False),
    "bool": (lambda L, a: L.floor_divide(a > 0, a > 1), (3,), np.float64,
             "\"div_floor_cpu\" not implemented for 'Bool'", False),
    "string": (lambda L, a: L.floor_divide(a, "x"), (3,), np.float64,
               "received an invalid combination of arguments", False),
    "operator_string": (lambda L, a: a // "x", (3,), np.float64, "unsupported operand type", False),
    "inplace_cast": (lambda L, a: a.floor_divide_(2.5), ints([1, 2]), None,
                     "result type Float can't be cast to the desired output type Long", False),
    "inplace_shape": (lambda L, a: (a * 1).floor_divide_(L.ones(2, 3)), (3,), np.float64,
                      "doesn't match the broadcast shape", False),
    "inplace_leaf": (lambda L, a: a.floor_divide_(2), (3,), np.float64,
                     "a leaf Variable that requires grad", True),
    "broadcast": (lambda L, a: L.floor_divide(a, L.ones(4)), (3,), np.float64,
                  "The size of tensor a (3) must match the size of tensor b (4)", False),
}


@pytest.mark.parametrize("case", sorted(FLOOR_DIVIDE_ERRORS))
def test_floor_divide_errors_match_torch(case, device):
    fn, spec, dtype, phrase, grad = FLOOR_DIVIDE_ERRORS[case]
    check_error(fn, spec, dtype=dtype, phrase=phrase, requires_grad=grad, device=device)


def test_floor_divide_records_torchs_not_implemented_node(lib):
    x = lib.tensor([7.0, -7.0], requires_grad=True)
    for y in (lib.floor_divide(x, 2), x // lib.tensor([2.0, 2.0]), 5 // x):
        assert y.grad_fn.name() == "torch::autograd::NotImplemented"
    assert lib.floor_divide(lib.tensor([1.0]), lib.tensor([1])).grad_fn is None


def test_div_rounding_refuses_integer_zero_and_bool_as_torch(device):
    for mode in ("trunc", "floor"):
        check_error(lambda L, a, mode=mode: L.div(a, 0, rounding_mode=mode), ints([1, 2]), dtype=None,
                    phrase="ZeroDivisionError", device=device)
        check_error(lambda L, a, mode=mode: L.div(a > 0, a > 1, rounding_mode=mode), (3,),
                    phrase=f"\"div_{mode}_cpu\" not implemented for 'Bool'", device=device)
    # trunc of integers exact beyond float64's 53 bits
    check(lambda L, a, b: L.div(a, b, rounding_mode="trunc"),
          ints([2 ** 62 + 3, -(2 ** 62) - 3, 7, -7, 6]), ints([3, 3, -2, 2, -3]), dtypes=(None,),
          device=device)


# ---- fmax / fmin -------------------------------------------------------------------------------
FMAXMIN_A = arr(1.0, NAN, 3.0, NAN, 2.0, -0.0, INF, -INF, 5.0)
FMAXMIN_B = arr(2.0, 1.0, NAN, NAN, 2.0, 0.0, INF, 1.0, -5.0)


@pytest.mark.parametrize("op", ["fmax", "fmin"])
def test_fmax_fmin_nan_ties_and_gradients_match_torch(op, device):
    # NaN loses to a number (both NaN: NaN, the gradient to self); ties split the gradient
    check(lambda L, a, b: getattr(L, op)(a, b), FMAXMIN_A, FMAXMIN_B, device=device)
    check(lambda L, a, b: getattr(a, op)(b), FMAXMIN_B, FMAXMIN_A, device=device)


@pytest.mark.parametrize("op", ["fmax", "fmin"])
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 3), (4, 1)),
                                    ((), (2,)), ((0, 2), (2,))], ids=str)
def test_fmax_fmin_broadcast_match_torch(op, shapes, device):
    check(lambda L, a, b: getattr(L, op)(a, b), *shapes, device=device)


@pytest.mark.parametrize("op", ["fmax", "fmin"])
def test_fmax_fmin_dtypes_match_torch(op, device):
    check(lambda L, a, b: getattr(L, op)(a, b), ints([1, 5, -3]), ints([3, 2, -3]),
          dtypes=(None,), device=device)
    check(lambda L, a, b: getattr(L, op)(a, b), ints([1, 5, -3]), arr(3.0, NAN, -3.5),
          dtypes=(None,), device=device)
    check(lambda L, a, b: getattr(L, op)(a, b), np.array([True, False]),
          np.array([False, False]), dtypes=(None,), device=device)
    check(lambda L, a, b: getattr(L, op)(a.half(), b), (3, 4), (3, 4), dtypes=(np.float32,),
          device=device)


@pytest.mark.parametrize("op", ["fmax", "fmin"])
def test_fmax_fmin_gradcheck_double_backward_and_errors(op, device):
    a, b = arr(0.3, -1.2, 2.5, 0.7), arr(-0.4, 1.1, 2.0, 1.9)
    if device == "cpu":
        assert grad_ok(lambda L, x, y: getattr(L, op)(x, y), a, b)
    check_double_backward(lambda L, x, y: getattr(L, op)(x, y) * x, a, b, device=device)
    check_error(lambda L, x: getattr(L, op)(x, 2.0), (3,), phrase="must be Tensor, not float",
                device=device)
    check_error(lambda L, x: getattr(L, op)(x, L.ones(4)), (3,),
                phrase="The size of tensor a (3) must match the size of tensor b (4)", device=device)
    assert not hasattr(torch.Tensor, op + "_") and not hasattr(rustgrad.Tensor, op + "_")


# ---- igamma / igammac -----------------------------------------------------------------------------
def S(L: Any) -> Any:
    return L.special


IGAMMA = {
    "igamma": lambda L, a, x: L.igamma(a, x),
    "igammac": lambda L, a, x: L.igammac(a, x),
    "igamma_method": lambda L, a, x: a.igamma(x),
    "igammac_method": lambda L, a, x: a.igammac(x),
    "gammainc": lambda L, a, x: S(L).gammainc(a, x),
    "gammaincc": lambda L, a, x: S(L).gammaincc(a, x),
}


@pytest.mark.parametrize("op", sorted(IGAMMA))
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((), (2,)), ((0, 2), (2,))],
                         ids=str)
def test_igamma_values_and_gradient_in_other_match_torch(op, shapes, device):
    # torch has a derivative in x only: a is taken detached here (see the error test)
    check(lambda L, a, x: IGAMMA[op](L, a.detach(), x), *shapes, low=0.05, high=6.0,
          device=device)


IGAMMA_A = arr(0.5, 1.0, 2.0, 1e4, 1e4, 500.0, 3.0, 30.0, 1.0, 0.1, 1e-3, 50.0, 7.5, 100.0,
               0.0, 0.0, 1e-3, 2.0, -0.0, INF, 0.0, 1.0, NAN, -1.0, INF, 0.0)
IGAMMA_X = arr(1.0, 0.0, 3.0, 1e4, 9900.0, 520.0, 1e-300, 1.0, 50.0, 200.0, 1e-3, 40.0, 7.0,
               90.0, 1.0, 0.0, 0.0, -0.0, 1.0, 0.0, -1.0, NAN, 0.0, 0.0, INF, INF)


@pytest.mark.parametrize("op", ["igamma", "igammac"])
def test_igamma_across_its_range_and_at_the_edges_matches_torch(op, device):
    # the series and the continued fraction on both sides of a + 1, large a, the tails, and
    # torch's values at a == 0, x == 0, infinities and NaN
    check(lambda L, a, x: IGAMMA[op](L, a, x), IGAMMA_A, IGAMMA_X, backward=False, device=device)
    check(lambda L, a, x: IGAMMA[op](L, a, x), IGAMMA_A[:14], IGAMMA_X[:14],
          dtypes=(np.float32, np.float16), backward=False, rtol=2e-3, atol=1e-3, device=device)


def test_igamma_promotes_and_broadcasts_as_torch(device):
    check(lambda L, a, x: (L.igamma(a, x), L.igammac(x, a)), ints([1, 2, 3]), arr(0.5, 2.0, 4.0),
          dtypes=(None,), backward=False, device=device)
    check(lambda L, a, x: L.igamma(a.detach().float(), x), (2, 1), (3,), low=0.5, high=3.0,
          dtypes=(np.float64,), device=device)


@pytest.mark.parametrize("op", ["igamma", "igammac"])
def test_igamma_gradcheck_and_double_backward_in_other(op, device):
    a = arr(0.7, 1.5, 3.0, 6.0)
    x = arr(0.4, 2.5, 1.0, 7.0)
    if device == "cpu":
        assert grad_ok(lambda L, xi: IGAMMA[op](L, L.tensor(a), xi), x)
    check_double_backward(lambda L, ai, xi: IGAMMA[op](L, ai.detach(), xi), a, x, device=device)


def test_igamma_inplace_matches_torch(device):
    def fn(L, a, x):
        y = a.detach() * 1
        z = a.detach() * 1
        assert y.igamma_(x) is y and z.igammac_(x) is z
        return y, z
    check(fn, (3, 4), (4,), low=0.2, high=4.0, device=device)
    check(lambda L, a, x: a.detach().float().igamma_(x), (3,), (3,), low=0.2, high=4.0,
          dtypes=(np.float64,), backward=False, device=device)


IGAMMA_ERRORS = {
    "input_grad": (lambda L, a, x: L.igamma(a, x).sum().backward(),
                   "the derivative for 'igamma: input' is not implemented"),
    "input_grad_c": (lambda L, a, x: S(L).gammaincc(a, x).sum().backward(),
                     "the derivative for 'igammac: input' is not implemented"),
    "integers": (lambda L, a, x: L.igamma(a.long(), x.long()),
                 "\"igamma_cpu\" not implemented for 'Long'"),
    "integers_c": (lambda L, a, x: L.igammac(a.long(), x.long()),
                   "\"igammac_cpu\" not implemented for 'Long'"),
    "number": (lambda L, a, x: L.igamma(a, 2.0), "argument 'other' (position 2) must be Tensor"),
    "special_number": (lambda L, a, x: S(L).gammainc(a, 2.0),
                       "special_gammainc(): argument 'other' (position 2) must be Tensor"),
    "broadcast": (lambda L, a, x: L.igamma(a, L.ones(4)),
                  "The size of tensor a (3) must match the size of tensor b (4)"),
    "inplace_cast": (lambda L, a, x: a.detach().long().igamma_(x),
                     "result type Double can't be cast to the desired output type Long"),
}


@pytest.mark.parametrize("case", sorted(IGAMMA_ERRORS))
def test_igamma_errors_match_torch(case, device):
    fn, phrase = IGAMMA_ERRORS[case]
    check_error(fn, (3,), (3,), requires_grad=True, phrase=phrase, device=device)


# ---- bitwise ops --------------------------------------------------------------------------------
INT_DTYPES = (np.int64, np.int32, np.int16, np.int8, np.uint8)
BITWISE = {
    "and": lambda L, a, b: (L.bitwise_and(a, b), a.bitwise_and(b), a & b),
    "or": lambda L, a, b: (L.bitwise_or(a, b), a.bitwise_or(b), a | b),
    "xor": lambda L, a, b: (L.bitwise_xor(a, b), a.bitwise_xor(b), a ^ b),
}


def _ints(dt: Any, values: Any) -> np.ndarray:
    return np.array(values, dtype=np.int64).astype(dt)


@pytest.mark.parametrize("dt", INT_DTYPES + (np.bool_,), ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", sorted(BITWISE))
def test_bitwise_binary_ops_match_torch(op, dt, device):
    a = _ints(dt, [[5, -3, 12, 0], [7, 1, -128, 100]])
    b = _ints(dt, [3, 6, 2, 1])
    check(BITWISE[op], a, b, dtypes=(None,), device=device)
    check(lambda L, x: BITWISE[op](L, x, 1) + BITWISE[op](L, x, True), a, dtypes=(None,),
          device=device)


def test_bitwise_numbers_reflected_and_promotion_match_torch(device):
    i8 = _ints(np.int8, [1, 2, -5])
    u8 = _ints(np.uint8, [1, 2, 250])
    check(lambda L, a, b: (3 & a, 3 | a, 3 ^ a, True & a, L.bitwise_and(3, a), L.bitwise_or(-1, a),
                           L.bitwise_xor(5, a), a & -1, a | 300, a ^ (1 << 63)),
          i8, u8, dtypes=(None,), device=device)
    check(lambda L, a, b: (a & b, b | a, L.bitwise_xor(a, b)), i8, u8, dtypes=(None,),
          device=device)
    check(lambda L, a, b: (a & b, a | 2, True ^ b), ints([5, 6]), np.array([True, False]),
          dtypes=(None,), device=device)
    check(lambda L, a: (a & L.tensor(3), L.bitwise_or(a, L.tensor(3, dtype=L.uint8))), i8,
          dtypes=(None,), device=device)


def test_bitwise_not_and_invert_match_torch(device):
    for dt in INT_DTYPES + (np.bool_,):
        check(lambda L, a: (L.bitwise_not(a), a.bitwise_not(), ~a), _ints(dt, [0, 5, -1, 100]),
              dtypes=(None,), device=device)


SHIFT_AMOUNTS = [0, 1, 3, 7, 8, 15, 16, 31, 32, 63, 64, 65, 200, -1, -64]


@pytest.mark.parametrize("dt", INT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_shifts_match_torch_for_every_amount(dt, device):
    # amounts past the dtype's width or negative: 0, or -1 for a negative value shifted right
    values = _ints(dt, [[1, -1, 5, -128, 100, 3, 0, 127, -7, 64, 2, 9, -3, 1, 50]])
    amounts = _ints(dt, [SHIFT_AMOUNTS])
    check(lambda L, a, b: (L.bitwise_left_shift(a, b), a.bitwise_right_shift(b), a << b, a >> b),
          values, amounts, dtypes=(None,), device=device)
    for s in (0, 1, 7, 8, 63, 64, 300, -1):
        check(lambda L, a, s=s: (a << s, a >> s, L.bitwise_left_shift(a, s),
                                 L.bitwise_right_shift(a, s)), values, dtypes=(None,),
              device=device)


def test_shifts_reflected_and_number_first_match_torch(device):
    u8 = _ints(np.uint8, [1, 2, 7, 9])
    i64 = ints([1, 2, -3, 70])
    check(lambda L, a, b: (2 << a, 64 >> a, 300 << a, 2 << b, -64 >> b, L.bitwise_left_shift(2, a),
                           L.bitwise_right_shift(256, b)), u8, i64, dtypes=(None,), device=device)
    check(lambda L, a, b: (a << b, b >> a, a << True), i64, _ints(np.int8, [1, 2, 3, 4]),
          dtypes=(None,), device=device)


INPLACE_BITWISE = {
    "and_": lambda y, o: y.bitwise_and_(o), "or_": lambda y, o: y.bitwise_or_(o),
    "xor_": lambda y, o: y.bitwise_xor_(o), "lshift_": lambda y, o: y.bitwise_left_shift_(o),
    "rshift_": lambda y, o: y.bitwise_right_shift_(o),
    "iand": lambda y, o: y.__iand__(o), "ior": lambda y, o: y.__ior__(o),
    "ixor": lambda y, o: y.__ixor__(o), "ilshift": lambda y, o: y.__ilshift__(o),
    "irshift": lambda y, o: y.__irshift__(o),
}


@pytest.mark.parametrize("op", sorted(INPLACE_BITWISE))
def test_bitwise_inplace_forms_match_torch(op, device):
    def fn(L, a, b):
        y, z = a.clone(), a.clone()
        assert INPLACE_BITWISE[op](y, b) is y and INPLACE_BITWISE[op](z, 3) is z
        return y, z
    check(fn, ints([[5, -3, 12], [7, 1, 9]]), ints([3, 6, 2]), dtypes=(None,), device=device)
    if op.endswith(("and_", "or_", "xor_", "iand", "ior", "ixor")):
        check(lambda L, a, b: INPLACE_BITWISE[op](a.clone(), b), np.array([True, False, True]),
              np.array([True, True, False]), dtypes=(None,), device=device)


def test_bitwise_inplace_operators_keep_the_tensor(lib):
    x = lib.tensor([1, 6])
    y = x
    y &= lib.tensor([3, 2])
    y |= 8
    y ^= 1
    y <<= 1
    y >>= lib.tensor([1, 2])
    assert y is x and x.tolist() == [8, 5] and x._version == 5
    n = lib.tensor([5, 6])
    n.bitwise_not_()
    assert n.tolist() == [-6, -7]


BITWISE_ERRORS = {
    "float_and": (lambda L, a, b: L.bitwise_and(a, b), "\"bitwise_and_cpu\" not implemented for 'Double'"),
    "float_or_number": (lambda L, a, b: a.bitwise_or(1), "\"bitwise_or_cpu\" not implemented for 'Double'"),
    "int_and_float": (lambda L, a, b: L.bitwise_xor(a.long(), b.float()),
                      "\"bitwise_xor_cpu\" not implemented for 'Float'"),
    "int_and_float_number": (lambda L, a, b: a.long() & 2.5,
                             "\"bitwise_and_cpu\" not implemented for 'Float'"),
    "bf16": (lambda L, a, b: a.bfloat16() | 1, "\"bitwise_or_cpu\" not implemented for 'BFloat16'"),
    "not_float": (lambda L, a, b: L.bitwise_not(a), "\"bitwise_not_cpu\" not implemented for 'Double'"),
    "invert_float": (lambda L, a, b: ~a, "~ (operator.invert) is only implemented on integer"),
    "not_number": (lambda L, a, b: L.bitwise_not(3), "argument 'input' (position 1) must be Tensor"),
    "shift_float": (lambda L, a, b: a << 1, "\"lshift_cpu\" not implemented for 'Double'"),
    "shift_bool": (lambda L, a, b: L.bitwise_right_shift(a > 0, b > 0),
                   "\"rshift_cpu\" not implemented for 'Bool'"),
    "shift_float_number": (lambda L, a, b: a.long() >> 1.5, "\"rshift_cpu\" not implemented for 'Float'"),
    "rshift_float_number": (lambda L, a, b: 2.0 << a.long(), "\"lshift_cpu\" not implemented for 'Float'"),
    "string": (lambda L, a, b: L.bitwise_and(a.long(), "a"), "received an invalid combination of arguments"),
    "operator_string": (lambda L, a, b: a.long() & "a", "unsupported operand type(s) for &"),
    "shift_string": (lambda L, a, b: a.long() << "a", "unsupported operand type(s) for <<"),
    "broadcast": (lambda L, a, b: a.long() & L.ones(4).long(),
                  "The size of tensor a (3) must match the size of tensor b (4)"),
    "int_too_big": (lambda L, a, b: a.long() & (1 << 64), "int too big to convert"),
    "inplace_cast": (lambda L, a, b: (a > 0).bitwise_and_(b.long()),
                     "result type Long can't be cast to the desired output type Bool"),
    "inplace_float_number": (lambda L, a, b: a.long().bitwise_or_(2.5),
                             "result type Float can't be cast to the desired output type Long"),
    "inplace_shape": (lambda L, a, b: a.long().bitwise_xor_(L.ones(2, 3).long()),
                      "doesn't match the broadcast shape"),
    "inplace_expanded": (lambda L, a, b: a.long()[:1].expand(3).bitwise_not_(),
                         "more than one element of the written-to tensor refers to a single memory"),
    "operator_inplace_string": (lambda L, a, b: a.long().__ilshift__("a") + 1,
                                "unsupported operand type(s) for +"),
}


@pytest.mark.parametrize("case", sorted(set(BITWISE_ERRORS) - {"bf16"}))
def test_bitwise_errors_match_torch(case, device):
    fn, phrase = BITWISE_ERRORS[case]
    check_error(fn, (3,), (3,), phrase=phrase, device=device)


def test_bitwise_bfloat16_error_matches_torch():  # CPU only: CuPy has no bfloat16
    fn, phrase = BITWISE_ERRORS["bf16"]
    check_error(fn, (3,), (3,), phrase=phrase, device="cpu")


# ---- comparisons: aliases and in-place forms ---------------------------------------------------------
ALIASES = {"greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le",
           "not_equal": "ne"}


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_comparison_aliases_match_torch(alias, device):
    def fn(L, a, b):
        return (getattr(L, alias)(a, b), getattr(a, alias)(b), getattr(L, alias)(a, 0.5),
                getattr(a, alias)(b) == getattr(a, ALIASES[alias])(b))
    check(fn, arr(0.5, 1.0, NAN, 2.0, -1.0), arr(0.5, 2.0, 1.0, NAN, -3.0), device=device)
    assert getattr(rustgrad, alias) is getattr(rustgrad, ALIASES[alias])


INPLACE_COMPARISONS = ["eq_", "ne_", "lt_", "le_", "gt_", "ge_", "greater_", "greater_equal_",
                       "less_", "less_equal_", "not_equal_"]


@pytest.mark.parametrize("name", INPLACE_COMPARISONS)
def test_inplace_comparisons_match_torch(name, device):
    # the truth written in self's dtype; <Op>Backward0 for a number, <Op>Backward1 for a
    # tensor, both with zero gradients
    def by_tensor(L, a, b):
        y = a * 1
        assert getattr(y, name)(b) is y
        return y

    def by_number(L, a):
        y = a * 1
        return getattr(y, name)(0.25)

    check(by_tensor, arr(0.5, 1.0, NAN, 2.0, -1.0), arr(0.5, 2.0, 1.0, NAN, -3.0), device=device)
    check(by_tensor, (3, 4), (4,), device=device)
    check(by_number, (3, 4), device=device)
    check(lambda L, a, b: getattr(a.detach() * 1, name)(b), (3,), (3,), device=device)
    check(lambda L, a: (getattr(a.clone(), name)(1.5), getattr(a.clone(), name)(a.flip(0))),
          ints([1, 2, 3]), dtypes=(None,), device=device)
    check(lambda L, a: getattr(a.clone(), name)(1), np.array([True, False]), dtypes=(None,),
          device=device)
    check(lambda L, a: getattr((a * 1)[1], name)(0.0), (3, 4), device=device)  # a view


@pytest.mark.parametrize("name", ["eq_", "gt_", "less_equal_"])
def test_inplace_comparisons_refusals_match_torch(name, device):
    check_error(lambda L, a: getattr(a, name)(0.0), (3,), requires_grad=True,
                phrase="a leaf Variable that requires grad", device=device)
    check_error(lambda L, a: getattr(a, name)(L.ones(2, 3)), (3,),
                phrase="output with shape [3] doesn't match the broadcast shape [2, 3]",
                device=device)
    check_error(lambda L, a: getattr(a, name)("x"), (3,),
                phrase="received an invalid combination of arguments", device=device)


# ---- logical ops in place ------------------------------------------------------------------------
LOGICAL_INPLACE = {
    "logical_and_": lambda y, o: y.logical_and_(o), "logical_or_": lambda y, o: y.logical_or_(o),
    "logical_xor_": lambda y, o: y.logical_xor_(o), "logical_not_": lambda y, o: y.logical_not_(),
}


@pytest.mark.parametrize("name", sorted(LOGICAL_INPLACE))
def test_logical_inplace_matches_torch(name, device):
    # torch writes them without autograd: self's history stays (even on a leaf that requires
    # grad), the version moves, a view's history becomes AsStridedBackward0
    def fn(L, a, b):
        y = a * 2
        assert LOGICAL_INPLACE[name](y, b) is y
        return y
    check(fn, arr(0.0, 2.0, 0.0, -1.5), arr(1.0, 0.0, 0.0, 3.0), device=device)

    def on_view(L, a, b):
        y = a * 2
        LOGICAL_INPLACE[name](y[1:], b[1:])
        return y, y[1:]
    check(on_view, arr(0.0, 2.0, 0.0, -1.5), arr(1.0, 0.0, 0.0, 3.0), device=device)
    check(lambda L, a, b: LOGICAL_INPLACE[name](a, b), arr(0.0, 2.0, 0.5), arr(1.0, 0.0, 0.0),
          backward=False, device=device)
    check(lambda L, a, b: LOGICAL_INPLACE[name](a.clone(), b), ints([0, 5, 3]),
          np.array([True, False, False]), dtypes=(None,), device=device)


def test_logical_inplace_errors_match_torch(device):
    check_error(lambda L, a: a.logical_or_(3), (3,), phrase="must be Tensor, not int", device=device)
    check_error(lambda L, a: a.logical_and_(L.ones(2, 3)), (3,),
                phrase="output with shape [3] doesn't match the broadcast shape [2, 3]",
                device=device)
    check_error(lambda L, a: a[:1].expand(3).logical_not_(), (3,),
                phrase="more than one element of the written-to tensor", device=device)


# ---- in-place arithmetic aliases, atan2_ ------------------------------------------------------------
def test_inplace_arithmetic_aliases_match_torch(device):
    def fn(L, a, b):
        outs = []
        for name, args, kw in (("multiply_", (b,), {}), ("divide_", (b,), {}),
                               ("true_divide_", (b,), {}), ("subtract_", (b,), {"alpha": 2}),
                               ("divide_", (b,), {"rounding_mode": "floor"}),
                               ("div_", (2.5,), {"rounding_mode": "trunc"})):
            y = a * 1
            assert getattr(y, name)(*args, **kw) is y
            outs.append(y)
        return tuple(outs)
    check(fn, (3, 4), (4,), low=0.5, high=2.0, device=device)
    check(lambda L, a: (a.clone().div_(2, rounding_mode="floor"),
                        a.clone().divide_(L.tensor([2, -3, 2]), rounding_mode="trunc")),
          ints([7, -7, 5]), dtypes=(None,), device=device)
    check_error(lambda L, a: a.divide_(2), ints([1, 2]), dtype=None,
                phrase="result type Float can't be cast to the desired output type Long",
                device=device)
    check_error(lambda L, a: a.subtract_(L.tensor([True, False])), (2,),
                phrase="Subtraction, the `-` operator, with a bool tensor", device=device)


@pytest.mark.parametrize("name", ["atan2_", "arctan2_"])
def test_atan2_inplace_matches_torch(name, device):
    def fn(L, a, b):
        y = a * 1
        assert getattr(y, name)(b) is y
        return y
    check(fn, (3, 4), (4,), device=device)
    check(lambda L, a, b: getattr(a * 1, name)(b.double()), (3,), (3,), dtypes=(np.float32,),
          device=device)
    check(lambda L, a: getattr(a.detach().clone(), name)(L.tensor([1, -2, 3])), (3,),
          device=device)
    if device == "cpu":
        assert grad_ok(lambda L, a, b: getattr(a * 1, name)(b), (2, 3), (3,))
    check_error(lambda L, a: getattr(a, name)(L.tensor([1, 2])), ints([1, 2]), dtype=None,
                phrase="result type Float can't be cast to the desired output type Long",
                device=device)
    check_error(lambda L, a: getattr(a * 1, name)(1.0), (2,),
                phrase="argument 'other' (position 1) must be Tensor, not float", device=device)


# ---- torch.* function forms: clamp_, clip_, erf_, exp2_, fill, fill_ -------------------------------
@pytest.mark.parametrize("name", ["clamp_", "clip_", "erf_", "exp2_"])
def test_inplace_function_forms_match_torch(name, device):
    args = {"clamp_": (-0.5, 0.5), "clip_": (None, 0.25)}.get(name, ())

    def fn(L, a):
        y = a * 1
        assert getattr(L, name)(y, *args) is y
        return y
    check(fn, (3, 4), device=device)
    check_error(lambda L, a: getattr(L, name)(a, *args), (3,), requires_grad=True,
                phrase="a leaf Variable that requires grad", device=device)


def test_fill_matches_torch(device):
    # FillBackward0 (a number: zero gradient), FillBackward1 (a 0-d tensor: the sum of g)
    check(lambda L, a: L.fill(a, 3.5), (3, 4), device=device)
    check(lambda L, a, v: L.fill(a, v), (3, 4), np.array(2.0), device=device)
    check(lambda L, a, v: L.fill(a[:1].expand(3, 4), v.float()), (1, 4), np.array(-1.0),
          dtypes=(np.float64,), device=device)
    check(lambda L, a: (L.fill(a, 2.7), L.fill(a, True), L.fill(a > 1, 2)), ints([1, 2, 3]),
          dtypes=(None,), device=device)
    check_error(lambda L, a: L.fill(a, L.ones(2)), (3,),
                phrase="fill_ only supports 0-dimension value tensor but got tensor with 1 dimensions",
                device=device)
    check_error(lambda L, a: L.fill(a, "x"), (3,),
                phrase="fill() received an invalid combination of arguments", device=device)
    same_error(lambda L: L.fill(3, 3), "fill() received an invalid combination of arguments")


def test_fill__function_matches_torch(device):
    def fn(L, a, v):
        y, z = a * 1, a * 1
        assert L.fill_(y, 4) is y and L.fill_(z, v) is z
        return y, z
    check(fn, (3,), np.array(1.5), device=device)
    check_error(lambda L, a: L.fill_(a, 1.0), (3,), requires_grad=True,
                phrase="a leaf Variable that requires grad", device=device)


# ---- the complex API on real tensors -----------------------------------------------------------------
SELF_RETURNING = ["conj", "conj_physical", "resolve_conj", "resolve_neg"]


@pytest.mark.parametrize("name", SELF_RETURNING)
def test_complex_api_returns_the_real_tensor_itself(lib, name):
    for x in (lib.tensor([1.0, -2.0], requires_grad=True), lib.tensor([1, 2]), lib.tensor([True])):
        assert getattr(lib, name)(x) is x and getattr(x, name)() is x
    same_error(lambda L: getattr(L, name)(3), f"{name}(): argument 'input' (position 1) must be Tensor")


def test_real_imag_is_conj_is_neg_match_torch(lib):
    x = lib.tensor([1.0, -2.0], requires_grad=True)
    assert x.real is x and lib.real(x) is x
    assert x.is_conj() is False and x.is_neg() is False
    assert lib.is_conj(x) is False and lib.is_neg(x) is False
    same_error(lambda L: L.tensor([1.0]).imag, "imag is not implemented for tensors with non-complex dtypes.")
    same_error(lambda L: L.imag(L.tensor([1])), "imag is not implemented for tensors with non-complex dtypes.")
    same_error(lambda L: L.real(3), "real(): argument 'input' (position 1) must be Tensor, not int")
    same_error(lambda L: L.is_conj(3), "is_conj(): argument 'input' (position 1) must be Tensor")


def test_conj_physical_inplace_matches_torch(device):
    # the values stay; the version moves; autograd records ConjPhysicalBackward1 (identity)
    def fn(L, a):
        y = a * 1
        assert y.conj_physical_() is y and L.conj_physical_(y) is y
        v = (a * 1)[1:]
        v.conj_physical_()
        return y, v
    check(fn, (3, 4), device=device)
    check(lambda L, a: a.clone().conj_physical_(), ints([1, 2]), dtypes=(None,), device=device)
    check_error(lambda L, a: a.conj_physical_(), (3,), requires_grad=True,
                phrase="a leaf Variable that requires grad", device=device)


# ---- isin -----------------------------------------------------------------------------------------
def test_isin_matches_torch(device):
    e, t = ints([[1, 2], [3, 4]]), ints([2, 3, 7])
    check(lambda L, a, b: (L.isin(a, b), L.isin(a, b, invert=True),
                           L.isin(a, b, assume_unique=True), L.isin(a, b.reshape(3, 1)),
                           L.isin(elements=a, test_elements=b), L.isin(a, 3), L.isin(3, b),
                           L.isin(a, 2.5), L.isin(2.0, b)),
          e, t, dtypes=(None,), device=device)
    check(lambda L, a, b: (L.isin(a, b), L.isin(b, a), L.isin(a, b, invert=True)),
          arr(1.0, NAN, 2.0, -0.0, INF), arr(NAN, 2.0, 0.0, INF), device=device)
    # the promoted dtype decides: uint8 1 is not int64 -1
    check(lambda L, a, b: (L.isin(a, b), L.isin(b, a)), _ints(np.uint8, [1, 2, 255]),
          ints([-1, 2, 257]), dtypes=(None,), device=device)
    check(lambda L, a, b: L.isin(a, b.half()), arr(1.0, 2.5), arr(2.5), dtypes=(np.float32,),
          device=device)
    check(lambda L, a, b: L.isin(a, b), np.zeros((0, 3)), arr(1.0), device=device)
    check(lambda L, a, b: L.isin(a, b), np.array(2.0), np.zeros(0), device=device)


ISIN_ERRORS = {
    "bool_elements": (lambda L, a, b: L.isin(a > 0, b), "Unsupported input type encountered for isin(): Bool"),
    "bool_test": (lambda L, a, b: L.isin(a, b > 0), "Unsupported input type encountered for isin(): Bool"),
    "bool_number": (lambda L, a, b: L.isin(a, True), "Unsupported input type encountered for isin(): Bool"),
    "two_numbers": (lambda L, a, b: L.isin(3, 3), "isin() received an invalid combination of arguments"),
    "string": (lambda L, a, b: L.isin(a, "x"), "isin() received an invalid combination of arguments"),
}


@pytest.mark.parametrize("case", sorted(ISIN_ERRORS))
def test_isin_errors_match_torch(case, device):
    fn, phrase = ISIN_ERRORS[case]
    check_error(fn, (3,), (2,), phrase=phrase, device=device)


def test_new_names_are_bound_like_torchs():
    functions = ["acosh", "acosh_", "arccosh", "arccosh_", "asinh", "asinh_", "arcsinh",
                 "arcsinh_", "atanh", "atanh_", "arctanh", "arctanh_", "deg2rad", "deg2rad_",
                 "rad2deg", "rad2deg_", "signbit", "positive", "absolute", "angle", "isreal",
                 "floor_divide", "fmax", "fmin", "igamma", "igammac", "bitwise_and", "bitwise_or",
                 "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift",
                 "greater", "greater_equal", "less", "less_equal", "not_equal", "clamp_", "clip_",
                 "erf_", "exp2_", "fill", "fill_", "conj", "conj_physical", "conj_physical_",
                 "resolve_conj", "resolve_neg", "is_conj", "is_neg", "real", "imag", "isin"]
    for name in functions:
        assert hasattr(torch, name), name
        assert callable(getattr(rustgrad, name)), name
    methods_only = ["absolute_", "floor_divide_", "igamma_", "igammac_", "bitwise_and_",
                    "bitwise_or_", "bitwise_xor_", "bitwise_not_", "bitwise_left_shift_",
                    "bitwise_right_shift_", "greater_", "greater_equal_", "less_", "less_equal_",
                    "not_equal_", "multiply_", "divide_", "subtract_", "true_divide_", "atan2_",
                    "arctan2_", "eq_", "ne_", "ge_", "gt_", "le_", "lt_", "logical_and_",
                    "logical_or_", "logical_xor_", "logical_not_"]
    for name in methods_only:
        assert hasattr(torch.Tensor, name) and not hasattr(torch, name), name
        assert hasattr(rustgrad.Tensor, name) and not hasattr(rustgrad, name), name
    for name in ["__lshift__", "__rshift__", "__ilshift__", "__irshift__", "__rlshift__",
                 "__rrshift__", "__rxor__", "__iand__", "__ior__", "__ixor__", "__ifloordiv__"]:
        assert hasattr(rustgrad.Tensor, name), name
    assert rustgrad.special.gammainc is not rustgrad.igamma  # its own name in torch's errors
    assert not hasattr(rustgrad.Tensor, "isin") and not hasattr(rustgrad.Tensor, "fill")


def test_program_with_the_new_surface_matches_torch():
    # a small program over several of the new names, compared whole
    def program(L):
        x = L.tensor([[0.5, -1.5, 2.0], [3.0, -0.25, 1.25]], dtype=L.float64, requires_grad=True)
        y = L.fmax(x.asinh(), x.deg2rad()) + L.fmin(x, x.flip(1)).angle()
        k = L.floor_divide(L.tensor([7, -7, 9]), 2) << 1
        m = (k & 6) | L.bitwise_not(L.tensor([0, 1, 2]))
        y.sum().backward()
        return y.detach(), x.grad, k, m, L.isin(k, m), x.detach().greater(0.4)
    parity(program)
