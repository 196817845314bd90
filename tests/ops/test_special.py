"""torch.special and the rest of the elementwise math against torch: lgamma, digamma/psi,
polygamma, mvlgamma/multigammaln, erfinv, erfc, erfcx, i0/i0e/i1/i1e, sinc, logit, expit, xlogy,
xlog1py, entr, ndtr, ndtri, log_ndtr, special's aliases; hypot, logaddexp(2), copysign,
heaviside, gcd/lcm, float_power, nextafter, frexp/ldexp, sgn; nansum/nanmean; the in-place forms
(lgamma_ ... sgn_, fmod_, remainder_, nan_to_num_): values (float32/float64/float16, integer
inputs promoted), grad_fn names, gradients, double backward, gradcheck, errors, on every
device."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import check, check_double_backward, check_error, grad_ok, ints, parity, same_error

SHAPES = [(3, 4), (), (0, 3), (2, 1, 3)]


def S(lib: Any) -> Any:
    """The program's torch.special."""
    return lib.special


# name -> (program, low, high); each program is the op under one of its spellings
UNARY = {
    "lgamma": (lambda L, a: L.lgamma(a), 0.1, 5.0),
    "lgamma_method": (lambda L, a: a.lgamma(), -3.9, -3.1),
    "gammaln": (lambda L, a: S(L).gammaln(a), 0.1, 5.0),
    "digamma": (lambda L, a: L.digamma(a), 0.1, 5.0),
    "digamma_method": (lambda L, a: a.digamma(), -2.9, -2.1),
    "psi": (lambda L, a: S(L).psi(a), 0.1, 5.0),
    "special_digamma": (lambda L, a: S(L).digamma(a), 0.1, 5.0),
    "polygamma0": (lambda L, a: L.polygamma(0, a), 0.2, 4.0),
    "polygamma1": (lambda L, a: L.polygamma(1, a), 0.2, 4.0),
    "polygamma2_method": (lambda L, a: a.polygamma(2), 0.2, 4.0),
    "polygamma3_special": (lambda L, a: S(L).polygamma(3, a), 0.2, 4.0),
    "mvlgamma1": (lambda L, a: L.mvlgamma(a, 1), 0.1, 4.0),
    "mvlgamma3_method": (lambda L, a: a.mvlgamma(3), 1.1, 4.0),
    "multigammaln": (lambda L, a: S(L).multigammaln(a, 2), 0.6, 4.0),
    "erfinv": (lambda L, a: L.erfinv(a), -0.95, 0.95),
    "erfinv_special": (lambda L, a: S(L).erfinv(a), -0.95, 0.95),
    "erfc": (lambda L, a: a.erfc(), -3.0, 3.0),
    "erfc_special": (lambda L, a: S(L).erfc(a), -3.0, 3.0),
    "erfcx": (lambda L, a: S(L).erfcx(a), -2.0, 5.0),
    "i0": (lambda L, a: L.i0(a), -5.0, 5.0),
    "i0_special": (lambda L, a: S(L).i0(a), -5.0, 5.0),
    "i0e": (lambda L, a: S(L).i0e(a), -5.0, 5.0),
    "i1": (lambda L, a: S(L).i1(a), -5.0, 5.0),
    "i1e": (lambda L, a: S(L).i1e(a), -5.0, 5.0),
    "sinc": (lambda L, a: L.sinc(a), -3.0, 3.0),
    "sinc_special": (lambda L, a: S(L).sinc(a), -3.0, 3.0),
    "logit": (lambda L, a: a.logit(), 0.05, 0.95),
    "logit_eps": (lambda L, a: L.logit(a, eps=0.2), 0.0, 1.0),
    "logit_special": (lambda L, a: S(L).logit(a, 0.1), -0.2, 1.2),
    "expit": (lambda L, a: S(L).expit(a), -4.0, 4.0),
    "entr": (lambda L, a: S(L).entr(a), 0.05, 3.0),
    "ndtr": (lambda L, a: S(L).ndtr(a), -3.0, 3.0),
    "ndtri": (lambda L, a: S(L).ndtri(a), 0.02, 0.98),
    "log_ndtr": (lambda L, a: S(L).log_ndtr(a), -6.0, 3.0),
    # (torch's gradient of sgn is a ZeroTensor, which it cannot compare: a second output adds to it)
    "sgn": (lambda L, a: (L.sgn(a), a * 1), -2.0, 2.0),
    "sgn_method": (lambda L, a: (a.sgn(), a * 1), -2.0, 2.0),
    "special_round": (lambda L, a: S(L).round(a), -3.0, 3.0),
    "special_round_decimals": (lambda L, a: S(L).round(a, decimals=1), -3.0, 3.0),
    "special_erf": (lambda L, a: S(L).erf(a), -2.0, 2.0),
    "special_exp2": (lambda L, a: S(L).exp2(a), -2.0, 2.0),
    "special_expm1": (lambda L, a: S(L).expm1(a), -2.0, 2.0),
    "special_log1p": (lambda L, a: S(L).log1p(a), -0.5, 2.0),
    "special_softmax": (lambda L, a: S(L).softmax(a, -1), -2.0, 2.0),
    "special_log_softmax": (lambda L, a: S(L).log_softmax(a, 0), -2.0, 2.0),
}
# torch.special.softmax over dim 0 / -1 of a 0-d or empty input is fine too, except that
# log_softmax over dim 0 of a (0, 3) input has nothing to reduce: both agree on that as well


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_values_gradients_and_names_match_torch(op, shape, device):
    fn, low, high = UNARY[op]
    check(fn, shape, low=low, high=high, device=device)


# the ops torch computes for float16 (erfcx, ndtri and log_ndtr have no Half CPU kernel)
HALF = ["lgamma", "digamma", "polygamma1", "mvlgamma1", "erfinv", "erfc", "i0", "i0e", "i1",
        "i1e", "sinc", "logit", "entr", "ndtr", "sgn", "expit"]


@pytest.mark.parametrize("op", HALF)
def test_unary_float16_matches_torch(op, device):
    fn, low, high = UNARY[op]
    check(fn, (3, 4), low=low, high=high, dtypes=(np.float16,), rtol=2e-2, atol=2e-2,
          device=device)


def _as_float(out: Any) -> Any:
    return tuple(o.float() for o in out) if isinstance(out, tuple) else out.float()


@pytest.mark.parametrize("op", HALF + ["polygamma3_special", "special_round"])
def test_unary_bfloat16_matches_torch(op):
    # computed in float32 and rounded once, as torch's CPU kernels (the CPU only: CuPy has no
    # bfloat16); compared as float32 (torch's bfloat16 has no NumPy form)
    fn, low, high = UNARY[op]
    check(lambda L, a: _as_float(fn(L, a.to(L.bfloat16))), (3, 4), low=low, high=high,
          dtypes=(np.float32,), rtol=1e-2, atol=1e-2)


INT_INPUT = ["lgamma", "digamma", "polygamma1", "mvlgamma1", "erfinv", "erfc", "erfcx", "i0",
             "i0e", "i1", "i1e", "sinc", "logit", "entr", "ndtr", "ndtri", "log_ndtr", "sgn"]


@pytest.mark.parametrize("op", INT_INPUT)
def test_unary_integral_and_bool_inputs_match_torch(op, device):
    fn = UNARY[op][0]
    check(fn, ints([[1, 2], [3, 0]]), dtypes=(np.float64,), device=device)
    if op != "mvlgamma1":  # refused for bool (ERRORS)
        check(fn, np.array([True, False]), dtypes=(np.float64,), device=device)


EDGES = np.array([0.0, -0.0, -1.0, -2.5, 1e-8, 0.5, 1.0, 30.0, np.inf, -np.inf, np.nan])
EDGE_OPS = {
    "lgamma": lambda L, a: L.lgamma(a),
    "digamma": lambda L, a: L.digamma(a),
    "polygamma1": lambda L, a: L.polygamma(1, a.abs() + 0.5),
    "polygamma2": lambda L, a: L.polygamma(2, a),
    "polygamma3": lambda L, a: L.polygamma(3, a),
    "erfinv": lambda L, a: L.erfinv(a),
    "erfc": lambda L, a: L.erfc(a),
    "erfcx": lambda L, a: S(L).erfcx(a),
    "i0": lambda L, a: L.i0(a),
    "i0e": lambda L, a: S(L).i0e(a),
    "i1": lambda L, a: S(L).i1(a),
    "i1e": lambda L, a: S(L).i1e(a),
    "sinc": lambda L, a: L.sinc(a),
    "logit": lambda L, a: L.logit(a),
    "logit_eps": lambda L, a: L.logit(a, 0.25),
    "entr": lambda L, a: S(L).entr(a),
    "ndtr": lambda L, a: S(L).ndtr(a),
    "ndtri": lambda L, a: S(L).ndtri(a),
    "log_ndtr": lambda L, a: S(L).log_ndtr(a),
    "sgn": lambda L, a: L.sgn(a),
}


@pytest.mark.parametrize("op", sorted(EDGE_OPS))
def test_unary_edge_values_match_torch(op, device):
    # zeros of both signs, poles, the domain's ends, infinities and NaN
    check(EDGE_OPS[op], EDGES, backward=False, device=device)


def test_gradients_at_the_guarded_points_match_torch(device):
    # i1 / i1e at 0 (0.5), sinc at 0 (0), logit at and outside [0, 1] and at the eps bounds,
    # entr at 0 (inf), copysign at 0 (0), xlogy at x == 0
    x = np.array([0.0, 1e-20, -1.0, 0.5])
    check(lambda L, a: (S(L).i1(a), S(L).i1e(a), L.sinc(a)), x, device=device)
    p = np.array([0.0, 0.1, 0.5, 0.9, 1.0, -0.1, 1.1])
    check(lambda L, a: L.logit(a), p, device=device)
    check(lambda L, a: L.logit(a, 0.1), p, device=device)
    check(lambda L, a: S(L).entr(a), np.array([0.0, 0.5, 2.0]), device=device)
    check(lambda L, a, b: L.copysign(a, b), np.array([0.0, -0.0, 2.0]), np.array([-1.0, 1.0, -1.0]),
          device=device)
    check(lambda L, a, b: L.xlogy(a, b), np.array([0.0, 0.0, 0.5, 1.0]),
          np.array([0.0, 2.0, 0.0, 2.0]), device=device)
    check(lambda L, a, b: S(L).xlog1py(a, b), np.array([0.0, 0.0, 0.5, 1.0]),
          np.array([-1.0, 2.0, -1.0, 2.0]), device=device)
    for y in (0.0, 2.0, -1.0):
        check(lambda L, a, y=y: (L.xlogy(a, y), S(L).xlog1py(a, y)), np.array([0.0, 0.5]),
              device=device)


def test_xlogy_xlog1py_edge_values_match_torch(device):
    # NaN wins over x == 0, which wins over inf and the log's domain
    x = np.array([0.0, 0.0, 0.0, 1.0, -1.0, 0.0])
    y = np.array([np.inf, np.nan, -1.0, np.inf, 0.0, -2.0])
    check(lambda L, a, b: (L.xlogy(a, b), S(L).xlog1py(a, b)), x, y, backward=False, device=device)
    check(lambda L, b: (L.xlogy(0, b), S(L).xlog1py(0.0, b), L.xlogy(2, b)), y, backward=False,
          device=device)
    check(lambda L, a: (L.xlogy(a, float("inf")), S(L).xlog1py(a, -1)), x, backward=False,
          device=device)


GRADCHECK = {
    "lgamma": (lambda L, a: L.lgamma(a), 0.2, 4.0),
    "digamma": (lambda L, a: L.digamma(a), 0.2, 4.0),
    "polygamma2": (lambda L, a: L.polygamma(2, a), 0.3, 4.0),
    "mvlgamma": (lambda L, a: L.mvlgamma(a, 3), 1.2, 4.0),
    "erfinv": (lambda L, a: L.erfinv(a), -0.9, 0.9),
    "erfc": (lambda L, a: L.erfc(a), -2.0, 2.0),
    "erfcx": (lambda L, a: S(L).erfcx(a), -2.0, 3.0),
    "i0": (lambda L, a: L.i0(a), -3.0, 3.0),
    "i0e": (lambda L, a: S(L).i0e(a), 0.1, 3.0),
    "i1": (lambda L, a: S(L).i1(a), -3.0, 3.0),
    "i1e": (lambda L, a: S(L).i1e(a), 0.1, 3.0),
    "sinc": (lambda L, a: L.sinc(a), 0.1, 2.0),
    "logit": (lambda L, a: L.logit(a), 0.1, 0.9),
    "entr": (lambda L, a: S(L).entr(a), 0.1, 2.0),
    "ndtr": (lambda L, a: S(L).ndtr(a), -2.0, 2.0),
    "ndtri": (lambda L, a: S(L).ndtri(a), 0.1, 0.9),
    "log_ndtr": (lambda L, a: S(L).log_ndtr(a), -4.0, 2.0),
    "xlogy": (lambda L, a, b: L.xlogy(a, b.abs() + 0.1), -2.0, 2.0),
    "xlog1py": (lambda L, a, b: S(L).xlog1py(a, b.abs()), -2.0, 2.0),
    "hypot": (lambda L, a, b: L.hypot(a, b), 0.5, 2.0),
    "logaddexp": (lambda L, a, b: L.logaddexp(a, b), -2.0, 2.0),
    "logaddexp2": (lambda L, a, b: L.logaddexp2(a, b), -2.0, 2.0),
    "copysign": (lambda L, a, b: L.copysign(a, b), 0.5, 2.0),
    "ldexp": (lambda L, a, b: L.ldexp(a, b), -2.0, 2.0),
    "float_power": (lambda L, a, b: L.float_power(a, b), 0.5, 2.0),
    "nansum": (lambda L, a: L.nansum(a, 1), -2.0, 2.0),
    "nanmean": (lambda L, a: L.nanmean(a, 0, keepdim=True), -2.0, 2.0),
}


@pytest.mark.parametrize("op", sorted(GRADCHECK))
def test_gradcheck_in_float64_passes(op):
    fn, low, high = GRADCHECK[op]
    n = fn.__code__.co_argcount - 1
    assert grad_ok(fn, *[(2, 3)] * n, low=low, high=high)


DOUBLE = ["lgamma", "digamma", "polygamma2", "mvlgamma", "erfinv", "erfc", "erfcx", "i0", "i1",
          "i1e", "sinc", "logit", "ndtri", "log_ndtr", "xlogy", "hypot", "logaddexp", "ldexp"]


@pytest.mark.parametrize("op", DOUBLE)
def test_double_backward_matches_torch(op, device):
    fn, low, high = GRADCHECK[op]
    n = fn.__code__.co_argcount - 1
    check_double_backward(fn, *[(2, 3)] * n, low=low, high=high, device=device)


# ---- binary ops ----------------------------------------------------------------------------
BINARY_SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 3), (4, 1)), ((), (2,)), ((0, 2), (2,))]
BINARY = {
    "xlogy": (lambda L, a, b: L.xlogy(a, b), -2.0, 2.0),
    "xlogy_method": (lambda L, a, b: a.xlogy(b), -2.0, 2.0),
    "xlogy_special": (lambda L, a, b: S(L).xlogy(a, b), 0.0, 2.0),
    "xlog1py": (lambda L, a, b: S(L).xlog1py(a, b), -1.5, 2.0),
    "hypot": (lambda L, a, b: L.hypot(a, b), -2.0, 2.0),
    "hypot_method": (lambda L, a, b: a.hypot(b), -2.0, 2.0),
    "logaddexp": (lambda L, a, b: L.logaddexp(a, b), -3.0, 3.0),
    "logaddexp2_method": (lambda L, a, b: a.logaddexp2(b), -3.0, 3.0),
    "copysign": (lambda L, a, b: L.copysign(a, b), -2.0, 2.0),
    "nextafter": (lambda L, a, b: L.nextafter(a, b), -2.0, 2.0),
    "ldexp": (lambda L, a, b: L.ldexp(a, b), -3.0, 3.0),
    "float_power": (lambda L, a, b: L.float_power(a.abs() + 0.1, b), -2.0, 2.0),
    "float_power_method": (lambda L, a, b: a.float_power(b), 0.1, 2.0),
}


@pytest.mark.parametrize("shapes", BINARY_SHAPES, ids=str)
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_broadcast_matches_torch(op, shapes, device):
    fn, low, high = BINARY[op]
    check(fn, *shapes, low=low, high=high, device=device)


SCALAR_FORMS = {
    "xlogy_number_other": lambda L, a: L.xlogy(a, 2.5),
    "xlogy_number_other_zero": lambda L, a: a.xlogy(0.0),
    "xlogy_number_other_nan": lambda L, a: a.xlogy(float("nan")),
    "xlogy_number_self": lambda L, a: L.xlogy(3.0, a.abs()),
    "xlogy_number_self_zero": lambda L, a: L.xlogy(0, a),
    "special_xlogy_number_self": lambda L, a: S(L).xlogy(2.0, a.abs()),
    "xlog1py_number_other": lambda L, a: S(L).xlog1py(a, 3),
    "xlog1py_number_self": lambda L, a: S(L).xlog1py(2.0, a.abs()),
    "copysign_number": lambda L, a: L.copysign(a, -1.0),
    "copysign_int_number": lambda L, a: a.copysign(-0.0),
    "float_power_number": lambda L, a: L.float_power(a, 2),
    "float_power_number_float": lambda L, a: a.abs().float_power(0.5),
    "float_power_number_base": lambda L, a: L.float_power(2, a),
}


@pytest.mark.parametrize("form", sorted(SCALAR_FORMS))
def test_number_operand_forms_match_torch(form, device):
    check(SCALAR_FORMS[form], (3, 4), device=device)


@pytest.mark.parametrize("op", ["xlogy", "xlog1py", "hypot", "logaddexp", "logaddexp2_method",
                                "copysign", "nextafter", "ldexp"])
def test_binary_float16_and_mixed_dtypes_match_torch(op, device):
    fn, low, high = BINARY[op]
    check(fn, (3, 4), (4,), low=low, high=high, dtypes=(np.float16,), rtol=2e-2, atol=2e-2,
          device=device)
    a = np.random.default_rng(0).uniform(max(low, 0.1), high, (3, 4)).astype(np.float32)
    check(fn, a, np.array([0.5, 1.5, -0.5, 1.0]), dtypes=(None,), device=device)


def test_integer_operands_are_promoted_like_torch(device):
    x, y = ints([[1, 2], [0, 3]]), ints([2, 3])
    check(lambda L, a, b: (L.xlogy(a, b), S(L).xlog1py(a, b), L.copysign(a, -b), L.ldexp(a, b),
                           L.float_power(a, b), L.xlogy(a, 2.5), L.copysign(a, 2)), x, y,
          dtypes=(None,), device=device)
    check(lambda L, a, b: L.ldexp(a, b), np.array([1.0, 0.75], dtype=np.float16), ints([3, -1]),
          dtypes=(None,), device=device)


def test_float_power_keeps_torch_graph_and_float64(device):
    # float32 in: ToCopyBackward0 under PowBackward0, float64 out
    def program(L: Any, a: Any) -> Any:
        out = L.float_power(a, 3)
        assert out.grad_fn.next_functions[0][0].name() == "ToCopyBackward0"
        return out

    check(program, (3,), dtypes=(np.float32,), device=device)
    check(lambda L, a, b: L.float_power(a.abs() + 0.5, b), (3,), (3,), dtypes=(np.float32,),
          device=device)


def test_heaviside_matches_torch_and_has_no_derivative(device):
    x = np.array([-1.5, 0.0, 2.0, np.nan, -0.0])
    check(lambda L, a, v: L.heaviside(a, v), x, np.array([0.5]), backward=False, device=device)
    check(lambda L, a, v: a.heaviside(v), x.reshape(5, 1), np.array([0.25, 0.75]),
          backward=False, device=device)
    check(lambda L, a, v: L.heaviside(a, v), ints([-2, 0, 3]), ints([7]), device=device)
    check(lambda L, a, v: L.heaviside(a, v), np.array([True, False]), np.array([True]),
          device=device)

    def backward(L: Any) -> Any:
        a = L.tensor([-1.0, 0.0], requires_grad=True)
        L.heaviside(a, L.tensor([0.5])).sum().backward()

    same_error(backward, "derivative for aten::heaviside is not implemented")


def test_gcd_lcm_match_torch(device):
    a = ints([[4, -6, 0, 12], [0, 9, -15, 7]])
    b = ints([6, 4, 5, -18])
    check(lambda L, x, y: (L.gcd(x, y), L.lcm(x, y), x.gcd(y), x.lcm(y)), a, b, device=device)
    check(lambda L, x, y: L.gcd(x, y), np.array([4, 6], dtype=np.uint8),
          np.array([6, 9], dtype=np.int8), device=device)


def test_frexp_matches_torch(device):
    x = np.array([8.0, 0.3, 0.0, -5.0, 1e-30, 3e10])
    check(lambda L, a: tuple(L.frexp(a)), x, device=device)
    check(lambda L, a: tuple(a.frexp()), x[:4], dtypes=(np.float16,), device=device)
    check(lambda L, a: L.frexp(a).mantissa * 2, (3, 4), device=device)
    for L in (torch, rustgrad):
        out = L.frexp(L.tensor([8.0]))
        assert out.exponent.dtype == L.int32 and out[0] is out.mantissa
    assert repr(rustgrad.frexp(rustgrad.tensor([8.0]))) == repr(torch.frexp(torch.tensor([8.0])))
    x = rustgrad.tensor([1.0, 8.0], requires_grad=True)
    assert rustgrad.frexp(x).mantissa.grad_fn._saved_exponent.tolist() == [1, 4]


def test_saved_attributes_match_torch():
    def saved(L: Any) -> Any:
        x = L.tensor([0.25, 0.5], dtype=L.float64, requires_grad=True)
        y = L.tensor([2.0, 3.0], dtype=L.float64, requires_grad=True)
        return (L.polygamma(2, x).grad_fn._saved_n, L.mvlgamma(x + 2, 3).grad_fn._saved_p,
                L.logit(x, 0.1).grad_fn._saved_eps, L.logit(x).grad_fn._saved_eps,
                L.xlogy(x, 2.0).grad_fn._saved_other, L.xlogy(2.0, y).grad_fn._saved_self,
                S(L).ndtr(x).grad_fn._saved_other, L.nansum(x, 0).grad_fn._saved_dim,
                L.nansum(x, 0).grad_fn._saved_keepdim, L.nansum(x).grad_fn._saved_dim,
                L.hypot(x, y).grad_fn._saved_result, L.ldexp(x, y).grad_fn._saved_other,
                S(L).erfcx(x).grad_fn._saved_result, L.copysign(x, -1.0).grad_fn._saved_self)

    parity(saved)
    x = rustgrad.tensor([0.25, 0.5], requires_grad=True)
    y = rustgrad.tensor([2.0, 3.0], requires_grad=True)
    node = rustgrad.xlogy(x, y).grad_fn
    assert node._saved_self is x and node._saved_other is y


# ---- in-place forms --------------------------------------------------------------------------
INPLACE = {
    "lgamma_": (lambda y: y.lgamma_(), 0.2, 4.0),
    "digamma_": (lambda y: y.digamma_(), 0.2, 4.0),
    "polygamma_": (lambda y: y.polygamma_(1), 0.2, 4.0),
    "mvlgamma_": (lambda y: y.mvlgamma_(2), 0.7, 4.0),
    "erfinv_": (lambda y: y.erfinv_(), -0.9, 0.9),
    "erfc_": (lambda y: y.erfc_(), -2.0, 2.0),
    "i0_": (lambda y: y.i0_(), -3.0, 3.0),
    "sinc_": (lambda y: y.sinc_(), -2.0, 2.0),
    "logit_": (lambda y: y.logit_(), 0.1, 0.9),
    "logit_eps_": (lambda y: y.logit_(0.3), 0.0, 1.0),
    "sgn_": (lambda y: y.sgn_(), -2.0, 2.0),
    "nan_to_num_": (lambda y: y.nan_to_num_(posinf=3.0), -2.0, 2.0),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_unary_inplace_matches_torch(name, device):
    fn, low, high = INPLACE[name]

    def program(L: Any, x: Any) -> Any:
        y = x * 1
        assert fn(y) is y
        return y, x * 1  # (the second output: sgn_'s gradient is torch's ZeroTensor)

    def on_a_view(L: Any, x: Any) -> Any:
        y = x * 1
        fn(y[1])
        return y, x * 1

    check(program, (3, 4), low=low, high=high, device=device)
    check(on_a_view, (3, 4), low=low, high=high, device=device)
    assert grad_ok(program, (2, 3), low=low, high=high)


BINARY_INPLACE = {
    "xlogy_": (lambda y, o: y.xlogy_(o), 0.1, 2.0),
    "hypot_": (lambda y, o: y.hypot_(o), -2.0, 2.0),
    "copysign_": (lambda y, o: y.copysign_(o), -2.0, 2.0),
    "nextafter_": (lambda y, o: y.nextafter_(o), -2.0, 2.0),
    "ldexp_": (lambda y, o: y.ldexp_(o), -2.0, 2.0),
    "fmod_": (lambda y, o: y.fmod_(o.abs() + 0.5), -2.0, 2.0),
    "remainder_": (lambda y, o: y.remainder_(o.abs() + 0.5), -2.0, 2.0),
    "imod": (lambda y, o: y.__imod__(o.abs() + 0.5), -2.0, 2.0),
}


@pytest.mark.parametrize("name", sorted(BINARY_INPLACE))
def test_binary_inplace_matches_torch(name, device):
    fn, low, high = BINARY_INPLACE[name]

    def program(L: Any, x: Any, o: Any) -> Any:
        y = x * 1
        assert fn(y, o) is y
        return y

    check(program, (3, 4), (4,), low=low, high=high, device=device)
    # a wider operand: computed in its dtype, written in self's, one node of the op
    a = np.random.default_rng(1).uniform(low, high, (3, 4)).astype(np.float32)
    b = np.random.default_rng(2).uniform(max(low, 0.1), high, (4,))
    check(program, a, b, dtypes=(None,), device=device)


@pytest.mark.parametrize("name", ["fmod_", "remainder_"])
def test_fmod_remainder_inplace_with_numbers_and_integers_match_torch(name, device):
    check(lambda L, x: getattr(x * 1, name)(0.75), (3, 4), low=-3.0, high=3.0, device=device)
    check(lambda L, x: getattr(x * 1, name)(-2), (3, 4), low=-3.0, high=3.0, device=device)
    check(lambda L, x, y: getattr(x.clone(), name)(y), ints([7, -7, 5, -3]), ints([3, 3, -2, 2]),
          device=device)
    same_error(lambda L: getattr(L.tensor([1, 2]), name)(1.5), "can't be cast to the desired")
    same_error(lambda L: getattr(L.tensor([1, 2]), name)(0), "ZeroDivisionError")


def test_inplace_function_forms_match_torch(lib):
    for name, args in (("erfc_", ()), ("i0_", ()), ("sinc_", ()), ("logit_", (0.1,)),
                       ("nan_to_num_", ())):
        x = lib.tensor([0.25, 0.5, 0.75], dtype=lib.float64)
        assert getattr(lib, name)(x, *args) is x and x._version == 1
    for name in ("gcd_", "lcm_"):
        x = lib.tensor([4, 6])
        assert getattr(lib, name)(x, lib.tensor([6, 4])) is x
    parity(lambda L: (L.erfc_(L.tensor([0.25, 1.0])), L.xlogy_(L.tensor([0.0, 2.0]), L.tensor(3.0)),
                      L.ldexp_(L.tensor([1.0, 3.0]), L.tensor([2, -1])),
                      L.gcd_(L.tensor([4, 6]), L.tensor([6, 4])), L.lcm_(L.tensor([4, 6]), L.tensor([6, 4])),
                      L.nan_to_num_(L.tensor([float("nan"), 1.0]))))


def test_float_power_inplace_matches_torch(device):
    check(lambda L, x: (x * 1).float_power_(2), (3, 4), dtypes=(np.float64,), device=device)
    check(lambda L, x, e: (x.abs() + 0.5).float_power_(e), (3, 4), (4,), dtypes=(np.float64,),
          device=device)
    same_error(lambda L: L.ones(3).float_power_(2), "the base given to float_power_ has dtype Float")


def test_inplace_refusals_match_torch():
    same_error(lambda L: L.tensor([1, 2]).lgamma_(), "result type Float can't be cast")
    same_error(lambda L: L.tensor([1, 2]).xlogy_(L.tensor([1.0, 2.0])), "result type Float can't be cast")
    same_error(lambda L: L.ones(2, requires_grad=True).digamma_(), "a leaf Variable that requires grad")
    same_error(lambda L: L.ones(2).hypot_(L.ones(3, 2)), "doesn't match the broadcast shape")
    parity(lambda L: L.tensor([1.0, 2.0]).xlogy_(L.tensor([1.0, 2.0], dtype=L.float64)))


# ---- nansum, nanmean -------------------------------------------------------------------------
NANS = np.array([[1.0, np.nan, 2.5], [np.nan, np.nan, np.nan], [-1.0, 3.0, 0.5]])


@pytest.mark.parametrize("kw", [{}, {"dim": 1}, {"dim": 0, "keepdim": True}, {"dim": (0, -1)},
                                {"dim": []}, {"axis": 1, "keepdims": True}], ids=str)
def test_nansum_nanmean_match_torch(kw, device):
    check(lambda L, a: (L.nansum(a, **kw), a.nanmean(**kw)), NANS, device=device)
    check(lambda L, a: (a.nansum(**kw), L.nanmean(a, **kw)), (3, 4), device=device)


def test_nansum_nanmean_dtypes_match_torch(device):
    check(lambda L, a: (L.nansum(a), L.nansum(a, 0), L.nansum(a, dtype=L.float32)),
          ints([[1, 2], [3, 4]]), device=device)
    check(lambda L, a: L.nansum(a), np.array([True, True, False]), device=device)
    check(lambda L, a: (L.nansum(a, dtype=L.float64), L.nanmean(a, 1, dtype=L.float64)), NANS,
          dtypes=(np.float32,), device=device)
    check(lambda L, a: (L.nansum(a), L.nanmean(a, 0)), NANS, dtypes=(np.float16,), device=device)
    check(lambda L, a: (L.nansum(a), L.nanmean(a)), np.zeros((0, 3)), device=device)
    check(lambda L, a: (L.nansum(a), L.nanmean(a, 0)), np.array(np.nan), device=device)


def test_nanmean_graph_is_torchs():
    for L in (torch, rustgrad):
        out = L.nanmean(L.tensor(NANS, requires_grad=True), 1)
        nexts = out.grad_fn.next_functions
        assert out.grad_fn.name() == "DivBackward0"
        assert nexts[0][0].name() == "NansumBackward0" and nexts[1][0] is None


# ---- errors ----------------------------------------------------------------------------------
ERRORS = {
    "polygamma_negative": (lambda L, a: L.polygamma(-1, a), "does not support negative n"),
    "polygamma_float_n": (lambda L, a: L.polygamma(1.5, a), "must be int, not float"),
    "polygamma_number": (lambda L, a: L.polygamma(1, 2.0), "must be Tensor, not float"),
    "lgamma_number": (lambda L, a: L.lgamma(2.0), "must be Tensor, not float"),
    "mvlgamma_p": (lambda L, a: L.mvlgamma(a, 0), "p has to be greater than or equal to 1"),
    "mvlgamma_float_p": (lambda L, a: a.mvlgamma(1.5), "must be int, not float"),
    "mvlgamma_bool": (lambda L, a: L.mvlgamma(a > 0, 1), "may not be a boolean tensor"),
    "erfcx_half": (lambda L, a: S(L).erfcx(a.half()), "not implemented for 'Half'"),
    "ndtri_half": (lambda L, a: S(L).ndtri(a.half()), "not implemented for 'Half'"),
    "log_ndtr_half": (lambda L, a: S(L).log_ndtr(a.half()), "not implemented for 'Half'"),
    "hypot_int": (lambda L, a: L.hypot(a.long(), a.long()), "not implemented for 'Long'"),
    "hypot_number": (lambda L, a: L.hypot(a, 2.0), "must be Tensor, not float"),
    "logaddexp_int": (lambda L, a: L.logaddexp(a.long(), a.long()), "not implemented for 'Long'"),
    "logaddexp2_int": (lambda L, a: L.logaddexp2(a.long(), a.long()), "not implemented for 'Long'"),
    "nextafter_int": (lambda L, a: L.nextafter(a.long(), a.long()), "not implemented for 'Long'"),
    "gcd_float": (lambda L, a: L.gcd(a, a), "not implemented for 'Double'"),
    "gcd_bool": (lambda L, a: L.gcd(a > 0, a > 0), "not implemented for 'Bool'"),
    "gcd_number": (lambda L, a: L.gcd(a.long(), 2), "must be Tensor, not int"),
    "heaviside_dtypes": (lambda L, a: L.heaviside(a, a.float()), "different dtypes"),
    "heaviside_number": (lambda L, a: L.heaviside(a, 2), "must be Tensor, not int"),
    "frexp_int": (lambda L, a: L.frexp(a.long()), "only supports floating-point dtypes"),
    "ldexp_number": (lambda L, a: L.ldexp(a, 2), "must be Tensor, not int"),
    "xlogy_broadcast": (lambda L, a: L.xlogy(a, a[:2, :3]), "must match the size"),
    "xlogy_numbers": (lambda L, a: L.xlogy(2.0, 3.0), "xlogy() received an invalid combination"),
    "nanmean_int": (lambda L, a: L.nanmean(a.long()), "expected input to have floating point"),
    "special_round_int": (lambda L, a: S(L).round(a.long()), "not implemented for 'Long'"),
    "float_power_numbers": (lambda L, a: L.float_power(2, 3), "received an invalid combination"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_invalid_arguments_raise_torch_error(case, device):
    fn, phrase = ERRORS[case]
    check_error(fn, (3, 4), phrase=phrase, device=device)


# ---- names, kernels, import cost -------------------------------------------------------------
SPECIAL_NAMES = ["digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1",
                 "gammaln", "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit",
                 "logsumexp", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round", "sinc",
                 "softmax", "xlog1py", "xlogy"]
FUNCTIONS = ["lgamma", "digamma", "polygamma", "mvlgamma", "erfinv", "erfc", "erfc_", "i0", "i0_",
             "sinc", "sinc_", "logit", "logit_", "xlogy", "xlogy_", "hypot", "logaddexp",
             "logaddexp2", "copysign", "heaviside", "gcd", "gcd_", "lcm", "lcm_", "float_power",
             "nextafter", "frexp", "ldexp", "ldexp_", "sgn", "nan_to_num_", "nansum", "nanmean"]
METHODS = ["lgamma", "lgamma_", "digamma", "digamma_", "polygamma", "polygamma_", "mvlgamma",
           "mvlgamma_", "erfinv", "erfinv_", "erfc", "erfc_", "i0", "i0_", "sinc", "sinc_", "logit",
           "logit_", "xlogy", "xlogy_", "hypot", "hypot_", "logaddexp", "logaddexp2", "copysign",
           "copysign_", "heaviside", "heaviside_", "gcd", "gcd_", "lcm", "lcm_", "float_power",
           "float_power_", "nextafter", "nextafter_", "frexp", "ldexp", "ldexp_", "sgn", "sgn_",
           "fmod_", "remainder_", "__imod__", "nan_to_num_", "nansum", "nanmean"]


def test_names_exist_where_torch_has_them():
    import rustgrad.special

    for name in SPECIAL_NAMES:
        assert hasattr(torch.special, name), name
        assert callable(getattr(rustgrad.special, name)), f"rustgrad.special.{name}"
    for name in FUNCTIONS:
        assert hasattr(torch, name), name
        assert callable(getattr(rustgrad, name)), f"rustgrad.{name}"
    for name in METHODS:
        assert hasattr(torch.Tensor, name), name
        assert callable(getattr(rustgrad.Tensor, name)), f"Tensor.{name}"
    # names torch does not have are not invented
    for name in ("erfcx", "i1", "ndtr", "entr", "xlog1py", "expit", "psi"):
        assert hasattr(rustgrad, name) is hasattr(torch, name), name
    for name in ("lgamma_", "erfinv_", "hypot_", "sgn_"):
        assert hasattr(rustgrad, name) is hasattr(torch, name), name
    assert rustgrad.special.expit is rustgrad.sigmoid and rustgrad.special.psi is rustgrad.digamma


@pytest.mark.parametrize("name", ["lgamma", "digamma", "erfinv", "erfc", "erfcx", "i0", "i0e", "i1",
                                  "i1e", "ndtri", "log_ndtr"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_cpu_kernels_keep_their_input_dtype(name, dtype):
    from rustgrad._backends import cpu

    x = np.array([0.25, 0.5], dtype=dtype)
    out = getattr(cpu.kernels, name)(x)
    assert out.dtype == dtype and out.shape == (2,)
    assert getattr(cpu.kernels, name)(np.array(0.5, dtype=dtype)).shape == ()
    assert cpu.kernels.polygamma(2, x).dtype == dtype


def test_import_rustgrad_does_not_import_scipy():
    code = ("import sys, rustgrad, rustgrad.special; a = 'scipy' in sys.modules; "
            "rustgrad.lgamma(rustgrad.ones(1)); print(a, 'scipy.special' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]
