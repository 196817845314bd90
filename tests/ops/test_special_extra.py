"""torch.special's Bessel, Airy and zeta functions and orthogonal polynomials against torch:
bessel_j0/j1/y0/y1, modified_bessel_i0/i1/k0/k1, scaled_modified_bessel_k0/k1,
spherical_bessel_j0, airy_ai, zeta; chebyshev_polynomial_t/u/v/w, their shifted forms,
hermite_polynomial_h/he, laguerre_polynomial_l, legendre_polynomial_p: values (float32/float64,
integer and bool inputs promoted, numbers as operands, broadcasting, the edge values, torch's
handling of negative, fractional, NaN and huge degrees), grad_fn names, gradients (where torch
has them: gradcheck, double backward; elsewhere results that never require grad), errors, on
every device.

Where the values differ from torch's by more than rounding it is torch that strays: its float64
J0, J1, Y0, Y1 are off by up to ~1e-6 near |x| = 5 and its Ai by ~3e-6 near x = -2.09 (SciPy's,
which rustgrad gives, agree with mpmath there), and its float32 Chebyshev trigonometric forms
take glibc's float acos/cos, a few ulps from rustgrad's: those comparisons have a tolerance
(`WIDE`, `test_chebyshev_float32_trigonometric_form_is_close_to_torch`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import check, check_double_backward, check_error, grad_ok, ints, parity, same_error


def S(lib: Any) -> Any:
    """The program's torch.special."""
    return lib.special


SHAPES = [(3, 4), (), (0, 3), (2, 1, 3)]

# ---- the unary functions -----------------------------------------------------------------------
# name -> (low, high): a range where torch's values are exact to its dtype's tolerance
WITH_GRAD = {
    "bessel_j0": (-3.5, 3.5),
    "bessel_j1": (-3.5, 3.5),
    "bessel_y0": (0.1, 3.5),
    "bessel_y1": (0.1, 3.5),
    "modified_bessel_i0": (-5.0, 5.0),
    "modified_bessel_i1": (-5.0, 5.0),
    "modified_bessel_k0": (0.05, 6.0),
    "modified_bessel_k1": (0.05, 6.0),
}
WITHOUT_GRAD = {
    "scaled_modified_bessel_k0": (0.05, 20.0),
    "scaled_modified_bessel_k1": (0.05, 20.0),
    "spherical_bessel_j0": (-10.0, 10.0),
    "airy_ai": (-2.0, 6.0),
}
UNARY = {**WITH_GRAD, **WITHOUT_GRAD}
NODES = {
    "bessel_j0": "SpecialBesselJ0Backward0", "bessel_j1": "SpecialBesselJ1Backward0",
    "bessel_y0": "SpecialBesselY0Backward0", "bessel_y1": "SpecialBesselY1Backward0",
    "modified_bessel_i0": "SpecialModifiedBesselI0Backward0",
    "modified_bessel_i1": "SpecialModifiedBesselI1Backward0",
    "modified_bessel_k0": "SpecialModifiedBesselK0Backward0",
    "modified_bessel_k1": "SpecialModifiedBesselK1Backward0",
}


def _op(name: str) -> Any:
    return lambda L, a: getattr(S(L), name)(a)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values_gradients_and_names_match_torch(name, shape, device):
    low, high = UNARY[name]
    check(_op(name), shape, low=low, high=high, device=device)


def test_grad_fn_names_and_no_grad_results(device):
    lib = rustgrad
    x = lib.tensor([0.5, 1.5], device=device, requires_grad=True)
    for name, node in NODES.items():
        out = getattr(lib.special, name)(x)
        assert out.grad_fn.name() == node and out.requires_grad
        assert out.grad_fn._saved_self is x or bool((out.grad_fn._saved_self == x).all())
    for name in WITHOUT_GRAD:
        out = getattr(lib.special, name)(x)
        assert out.grad_fn is None and not out.requires_grad
    for name in ("bessel_j1", "bessel_y1", "modified_bessel_i1", "modified_bessel_k1"):
        out = getattr(lib.special, name)(x)
        assert out.grad_fn._saved_result.tolist() == out.tolist()


# torch's own float64 J and Y stray by up to ~1e-6 around |x| = 5, its Ai by ~3e-6 around -2.09
WIDE = {
    "bessel_j0": (-30.0, 30.0, 1e-6), "bessel_j1": (-30.0, 30.0, 1e-6),
    "bessel_y0": (0.01, 30.0, 2e-6), "bessel_y1": (0.05, 30.0, 2e-6),
    "modified_bessel_i0": (-80.0, 80.0, None), "modified_bessel_i1": (-80.0, 80.0, None),
    "modified_bessel_k0": (0.001, 80.0, None), "modified_bessel_k1": (0.001, 80.0, None),
    "scaled_modified_bessel_k0": (0.001, 500.0, None),
    "scaled_modified_bessel_k1": (0.001, 500.0, None),
    "spherical_bessel_j0": (-200.0, 200.0, None), "airy_ai": (-40.0, 100.0, 1e-5),
}


@pytest.mark.parametrize("name", sorted(WIDE))
def test_unary_values_over_a_wide_range_are_close_to_torch(name, device):
    low, high, atol = WIDE[name]
    x = np.linspace(low, high, 4001)
    check(_op(name), x, backward=False, atol=atol, device=device)


EDGES = np.array([0.0, -0.0, 1e-300, 1e-20, -1e-20, -1.5, 0.5, 2.0, 30.0, 200.0, 750.0, 1e10,
                  -1e10, np.inf, -np.inf, np.nan])


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_edge_values_match_torch(name, device):
    # the zeros of both signs, denormal-near and huge arguments, negatives (NaN for Y and K),
    # overflow (I), underflow (K, Ai), infinities and NaN
    x = EDGES if name != "airy_ai" else EDGES[np.abs(EDGES) < 1e5]  # torch's float Ai: garbage
    check(_op(name), x, backward=False, dtypes=(np.float64,), atol=1e-6, device=device)
    x32 = x[np.abs(x) < 1e5]  # float32 J and Y of 1e10: torch's phase is noise in float32
    check(_op(name), x32, backward=False, dtypes=(np.float32,), device=device)


def test_airy_ai_far_out_matches_torch(device):
    # 0 beyond 103.892 (NaN at +inf), the asymptotic form far to the left (SciPy's is NaN there)
    x = np.array([25.0, 103.0, 103.9, 1e3, 1e300, -1e3, -1e5, -2e6, np.inf, -np.inf])
    check(_op("airy_ai"), x, backward=False, dtypes=(np.float64,), atol=1e-6, device=device)


def test_modified_bessel_i_overflow_in_float32_matches_torch(device):
    # torch's float32 kernel multiplies exp(|x|): inf beyond 88.72 though I0(89) < FLT_MAX
    x = np.array([88.0, 88.72283, 88.72284, 89.0, -89.0, 100.0, -100.0])
    check(lambda L, a: (S(L).modified_bessel_i0(a), S(L).modified_bessel_i1(a)), x,
          backward=False, dtypes=(np.float32,), device=device)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_integer_and_bool_inputs_give_the_default_float(name, device):
    check(_op(name), ints([[1, 2], [3, 0]]), dtypes=(None,), device=device)
    check(_op(name), np.array([True, False]), dtypes=(None,), device=device)
    check(_op(name), np.array([1, 7], dtype=np.uint8), dtypes=(None,), device=device)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_half_precision_is_refused_as_torchs(name, device):
    for dt in ("float16", "bfloat16") if device == "cpu" else ("float16",):  # CuPy: no bfloat16
        def program(L: Any, dt: str = dt) -> Any:
            return getattr(S(L), name)(L.ones(2, device=device if L is rustgrad else "cpu",
                                              dtype=getattr(L, dt)))
        kind = "Half" if dt == "float16" else "BFloat16"
        same_error(program, f"not implemented for '{kind}'")
    et, er = check_error(_op(name), np.array([1.0]), dtype=np.float16, device=device,
                         phrase=f'"{name}_')
    assert f'"{name}_{rustgrad.ones(1, device=device).device.type}"' in str(er)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_non_tensor_input_is_refused(name):
    for value in (2.0, [1.0], None):
        same_error(lambda L, v=value: getattr(S(L), name)(v), "must be Tensor")


# ---- gradients -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(WITH_GRAD))
def test_gradcheck_in_float64_passes(name):
    low, high = WITH_GRAD[name]
    low = max(low, 0.1) if name.startswith(("bessel_y", "modified_bessel_k")) else low
    assert grad_ok(_op(name), (2, 3), low=low, high=high)


@pytest.mark.parametrize("name", sorted(WITH_GRAD))
def test_double_backward_matches_torch(name, device):
    low, high = WITH_GRAD[name]
    check_double_backward(_op(name), (2, 3), low=low, high=high, device=device)


def test_gradients_at_the_guarded_points_match_torch(device):
    # J1 and I1 at |x| <= eps (1/2), Y1 at 0 (inf), K1 at +-0, the signed zeros and negatives
    x = np.array([0.0, -0.0, 1e-20, 2e-16, 3e-16, -1.5, 1.0, np.inf, np.nan])
    fns = [_op(n) for n in sorted(WITH_GRAD)]
    check(lambda L, a: tuple(f(L, a) for f in fns), x, dtypes=(np.float64,), device=device)
    x32 = np.array([0.0, 1e-8, 1.1920929e-07, 1.2e-7, 1.0])
    check(lambda L, a: tuple(f(L, a) for f in fns[:4]), x32, dtypes=(np.float32,),
          device=device)
    check_double_backward(lambda L, a: S(L).bessel_j1(a) + S(L).modified_bessel_i1(a),
                          np.array([0.0, 1e-20, 1.0]), device=device)


# ---- zeta ------------------------------------------------------------------------------------
ZETA_SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 3), (4, 1)), ((), (2,)), ((0, 2), (2,))]


@pytest.mark.parametrize("shapes", ZETA_SHAPES, ids=str)
def test_zeta_values_and_gradient_in_other_match_torch(shapes, device):
    # torch has no derivative in x: x is given as a constant, q's gradient is -x zeta(x + 1, q)
    check(lambda L, x, q: S(L).zeta(x.detach() + 1.5, q), *shapes, low=0.2, high=4.0,
          device=device)


def test_zeta_number_forms_match_torch(device):
    check(lambda L, q: S(L).zeta(2.5, q), (3, 4), low=0.2, high=4.0, device=device)
    check(lambda L, q: S(L).zeta(3, q), (3,), low=0.2, high=4.0, device=device)
    check(lambda L, x: S(L).zeta(x.detach() + 1.5, 2), (3,), low=0.2, high=4.0, device=device)
    check(lambda L, x: S(L).zeta(x.detach() + 1.5, 0.5), (3,), low=0.2, high=4.0,
          device=device)


def test_zeta_edge_values_match_torch(device):
    xs = np.array([-np.inf, -3.5, -2.0, -1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 30.0, 1e3, np.inf, np.nan])
    qs = np.array([-np.inf, -3.5, -3.0, -0.5, -0.0, 0.0, 1e-300, 0.5, 1.0, 10.0, 1e9, 1e20,
                   np.inf, np.nan])
    x, q = np.meshgrid(xs, qs, indexing="ij")
    check(lambda L, a, b: S(L).zeta(a, b), x, q, backward=False, device=device)


def test_zeta_integer_and_mixed_operands_are_promoted_like_torch(device):
    check(lambda L, a, b: S(L).zeta(a, b), ints([2, 3, 4]), ints([1, 2, 3]), dtypes=(None,),
          device=device)
    check(lambda L, a, b: S(L).zeta(a, b), np.array([2, 3], dtype=np.int32),
          np.array([1.5, 2.5], dtype=np.float64), dtypes=(None,), device=device)
    check(lambda L, a: (S(L).zeta(a, 2.5), S(L).zeta(a, True), S(L).zeta(3.5, a)), ints([2, 3]),
          dtypes=(None,), device=device)
    # a 0-d float64 tensor beside a 1-d float32 one: float32, as torch's result_type
    check(lambda L, a, b: S(L).zeta(a.detach(), b), np.array(2.0),
          np.array([1.0, 2.0], np.float32), dtypes=(None,), device=device)


def test_zeta_nodes_and_saved_values_match_torch():
    def program(L: Any) -> Any:
        x = L.tensor([2.0, 3.0], dtype=L.float64)
        q = L.tensor([1.5, 2.0], dtype=L.float64, requires_grad=True)
        xr = x.clone().requires_grad_()
        both, number_x, number_q = S(L).zeta(x, q), S(L).zeta(2.0, q), S(L).zeta(xr, 2.0)
        names = [t.grad_fn.name() for t in (both, number_x, number_q)]
        return (names, both.grad_fn._saved_self, both.grad_fn._saved_other,
                number_x.grad_fn._saved_self, number_x.grad_fn._saved_other)

    parity(program)


def test_zeta_backward_in_x_raises_as_torchs(device):
    def program(L: Any, form: int) -> Any:
        x = L.tensor([2.0, 3.0], device=device if L is rustgrad else "cpu", requires_grad=True)
        q = L.tensor([1.5, 2.0], device=device if L is rustgrad else "cpu", requires_grad=True)
        out = (S(L).zeta(x, q), S(L).zeta(x, 2.0), S(L).zeta(x, q.detach()))[form]
        out.sum().backward()

    for form in range(3):
        same_error(lambda L, f=form: program(L, f), "the derivative for 'zeta' is not implemented")


def test_zeta_gradients_pass_gradcheck_and_double_backward(device):
    assert grad_ok(lambda L, q: S(L).zeta(3.0, q), (2, 3), low=0.3, high=3.0)
    assert grad_ok(lambda L, q: S(L).zeta(L.tensor([2.0, 3.5, 5.0], dtype=L.float64), q),
                   (2, 3), low=0.3, high=3.0)
    check_double_backward(lambda L, q: S(L).zeta(2.5, q), (2, 3), low=0.3, high=3.0,
                          device=device)
    check_double_backward(lambda L, x, q: S(L).zeta(x.detach() + 2, q), (2, 3), (3,), low=0.3,
                          high=3.0, device=device)


def test_zeta_errors_match_torch(device):
    check_error(lambda L, a, b: S(L).zeta(a, b), (2,), (3,), device=device,
                phrase="must match the size")
    check_error(lambda L, a: S(L).zeta(a, "q"), (2,), device=device,
                phrase="invalid combination of arguments")
    check_error(lambda L, a: S(L).zeta(a, None), (2,), device=device,
                phrase="invalid combination of arguments")
    check_error(lambda L, a, b: S(L).zeta(a, b), (2,), (2,), dtype=np.float16, device=device,
                phrase="not implemented for 'Half'")
    same_error(lambda L: S(L).zeta(2, 3), "invalid combination of arguments")
    same_error(lambda L: S(L).zeta([1.0], L.ones(1)), "invalid combination of arguments")


# ---- the orthogonal polynomials ---------------------------------------------------------------
POLYNOMIALS = [
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
    "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p",
]
RECURRENCE_ONLY = ["hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
                   "legendre_polynomial_p"]
# the largest degree each Chebyshev polynomial takes by its recurrence (above: cos/sin forms)
LAST_RECURRENCE = {"chebyshev_polynomial_t": 6, "chebyshev_polynomial_u": 8,
                   "chebyshev_polynomial_v": 8, "chebyshev_polynomial_w": 8,
                   "shifted_chebyshev_polynomial_t": 6, "shifted_chebyshev_polynomial_u": 6,
                   "shifted_chebyshev_polynomial_v": 6, "shifted_chebyshev_polynomial_w": 4}


def _poly(name: str) -> Any:
    return lambda L, x, n: getattr(S(L), name)(x, n)


# x: the ends of [-1, 1] and [0, 1] and values just inside, zeros of both signs, outside,
# infinities, NaN; n: negative, fractional (truncated), NaN, +-inf and beyond int64 (all 0)
X_EDGES = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 0.25, 2.0, -2.0, 1.0000001, 0.9999999,
                    -0.9999999, 1e-30, 3.0, np.inf, -np.inf, np.nan])
N_EDGES = np.array([-3.0, -1.0, -0.5, 0.0, 0.5, 0.9, 1.0, 1.7, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0,
                    9.0, 10.0, 17.0, 40.0, 100.0, np.nan, np.inf, -np.inf, 1e30, 2.0 ** 63,
                    -(2.0 ** 63)])


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_edge_grid_matches_torch_in_float64(name, device):
    x, n = np.meshgrid(X_EDGES, N_EDGES, indexing="ij")
    check(_poly(name), x, n, dtypes=(np.float64,), rtol=1e-12, atol=1e-13, device=device)


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_values_match_torch(name, device):
    rng = np.random.default_rng(1)
    low = 0.0 if name.startswith("shifted") else -1.0
    x = rng.uniform(low - 0.3, 1.3, (6, 1))
    n = np.arange(0, 24, dtype=np.float64)
    check(_poly(name), x, n, dtypes=(np.float64,), device=device)
    check(_poly(name), x[:, 0], np.full(6, 1000.0), dtypes=(np.float64,), rtol=1e-9,
          device=device)


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_recurrences_in_float32_are_torchs_to_the_bit(name, device):
    # torch's compiled recurrences fuse multiply-adds: rustgrad's float32 ones are the same
    rng = np.random.default_rng(2)
    low = 0.0 if name.startswith("shifted") else -1.0
    top = 41 if name in RECURRENCE_ONLY else LAST_RECURRENCE[name] + 1
    x = rng.uniform(low - 0.5, 1.5, (40, 1)).astype(np.float32)
    n = np.arange(-1, top, dtype=np.float32)
    check(_poly(name), x, n, dtypes=(np.float32,), rtol=1e-300, atol=1e-300, device=device)


@pytest.mark.parametrize("name", sorted(LAST_RECURRENCE))
def test_chebyshev_float32_trigonometric_form_is_close_to_torch(name, device):
    # torch takes glibc's float acos and cos there: a few ulps of the angle, times n
    rng = np.random.default_rng(3)
    x = rng.uniform(0.0 if name.startswith("shifted") else -1.0, 1.0, (50, 1))
    n = np.arange(LAST_RECURRENCE[name] + 1, 30, dtype=np.float64)
    check(_poly(name), x, n, dtypes=(np.float32,), atol=2e-5, device=device)


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_forms_broadcast_and_promotion_match_torch(name, device):
    fn = _poly(name)
    check(fn, (3, 1), np.array([0.0, 2.0, 3.0, 5.0]), low=-1.0, high=1.0, device=device)
    check(fn, (2, 1, 3), (4, 1), low=0.0, high=1.0, device=device)
    check(fn, (), (0, 2), device=device)
    check(lambda L, x: (getattr(S(L), name)(x, 3), getattr(S(L), name)(x, 4.7),
                        getattr(S(L), name)(x, True), getattr(S(L), name)(x, -2)), (3, 4),
          low=-1.0, high=1.0, device=device)
    check(lambda L, n: (getattr(S(L), name)(0.3, n), getattr(S(L), name)(2, n)),
          np.array([0.0, 1.0, 3.0, 10.0]), device=device)
    # integer, bool and mixed-dtype operands (a 0-d float64 beside float32 gives float32)
    check(fn, ints([[2], [-1], [0]]), ints([0, 1, 2, 5]), dtypes=(None,), device=device)
    check(fn, np.array([True, False]), np.array([3, 2], dtype=np.int8), dtypes=(None,),
          device=device)
    check(fn, np.array([0.3, 0.7], np.float32), np.array([3.0, 9.0]), dtypes=(None,),
          device=device)
    check(fn, np.array(0.3), np.array([3.0, 9.0], np.float32), dtypes=(None,), device=device)
    check(fn, np.array([0.3, 0.7], np.float32), np.array(9.0), dtypes=(None,), device=device)


def test_polynomial_large_degrees_match_torch(device):
    # overflow to inf and NaN outside [-1, 1]; lanes of very different degrees in one call
    x = np.array([1.5, -1.5, 1.0000001, 0.3, -0.7, 2.0, 0.999])
    n = np.array([300.0, 5000.0, 20000.0, 7.0, 3000.0, 50000.0, 12000.0])
    for name in POLYNOMIALS:
        check(_poly(name), x, n, dtypes=(np.float64,), rtol=1e-6, atol=1e-9, backward=False,
              device=device)


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_have_no_gradient_and_refuse_what_torch_refuses(name, device):
    fn = _poly(name)
    x = rustgrad.tensor([0.3, 0.6], device=device, requires_grad=True)
    out = getattr(rustgrad.special, name)(x, x)
    assert out.grad_fn is None and not out.requires_grad
    check_error(fn, (2,), (3,), device=device, phrase="must match the size")
    check_error(fn, (2,), (2,), dtype=np.float16, device=device, phrase="not implemented for 'Half'")
    check_error(lambda L, a: getattr(S(L), name)(a, "n"), (2,), device=device,
                phrase="invalid combination of arguments")
    same_error(lambda L: getattr(S(L), name)(2, 3), "invalid combination of arguments")
    same_error(lambda L: getattr(S(L), name)(L.ones(2, dtype=L.bfloat16), 3),
               "not implemented for 'BFloat16'")
    assert getattr(torch.special, name)(x=torch.ones(2), n=3).tolist() == \
        getattr(rustgrad.special, name)(x=rustgrad.ones(2), n=3).tolist()


def test_a_cpu_scalar_tensor_goes_beside_a_device_tensor(device):
    # torch takes a 0-d CPU tensor beside a device tensor as a scalar; the result is there
    x = rustgrad.tensor([1.3, 1.6, 2.0], device=device)
    for fn in (S(rustgrad).zeta, S(rustgrad).chebyshev_polynomial_t,
               S(rustgrad).laguerre_polynomial_l):
        want = fn(rustgrad.tensor([2.5, 2.5, 2.5]), x.cpu()).tolist()
        out = fn(rustgrad.tensor(2.5), x)
        assert out.device == x.device and out.tolist() == want
        back = fn(x, rustgrad.tensor(3.0))
        assert back.device == x.device
        assert back.tolist() == fn(x.cpu(), rustgrad.tensor([3.0, 3.0, 3.0])).tolist()
