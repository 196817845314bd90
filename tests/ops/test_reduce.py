"""Reductions and scans against torch: sum, mean, max, min (dims, keepdim, ties), softmax /
log_softmax / logsumexp, prod, cumsum, cumprod, var, std, norm, dist, amax / amin, all / any,
argmax / argmin, topk, sort, median, unique, bincount, count_nonzero, diff: values, grad_fn
names, gradients (zeros in prod/cumprod, ties in max and amax and the inf-norm, norm at zero),
dtypes, errors, gradcheck and double backward."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import F, check, check_double_backward, check_error, grad_ok, ints, parity, rustgrad_on, same_error

DIM_CASES = [((3, 4), 0), ((3, 4), 1), ((3, 4), -1), ((), 0), ((1,), 0), ((0, 3), 1),
             ((2, 3, 4), 1)]



# ---- softmax, log_softmax, logsumexp ---------------------------------------------------
@pytest.mark.parametrize("shape,dim", DIM_CASES, ids=str)
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_family_dims_match_torch(op, shape, dim, device):
    check(lambda lib, a: getattr(a, op)(dim), shape, device=device)
    check(lambda lib, a: getattr(lib, op)(a, dim), shape, device=device)
    check(lambda lib, a: getattr(F(lib), op)(a, dim=dim), shape, device=device)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_family_large_and_masked_inputs_match_torch(op, device):
    x = np.array([[1000.0, 999.0, -1000.0], [-np.inf, 2.0, 1.0], [5.0, -np.inf, -np.inf]])
    check(lambda lib, a: getattr(a, op)(1), x, device=device)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_family_dtype_argument_casts_first(op, device):
    check(lambda lib, a: getattr(lib, op)(a.float(), 1, dtype=lib.float64), (3, 4),
          dtypes=(np.float64,), device=device)
    ints = np.array([[1, 2], [3, 4]], dtype=np.int64)
    check(lambda lib, a: getattr(lib, op)(a, 0, dtype=lib.float64), ints, dtypes=(np.float64,),
          device=device)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_family_implicit_dim_warns_like_torch(op, device):
    for lib in (torch, rustgrad_on(device)):
        x = lib.tensor([[1.0, 2.0], [3.0, 5.0]])
        with pytest.warns(UserWarning, match="Implicit dimension choice"):
            out = getattr(F(lib), op)(x)
        assert np.allclose(out.cpu().numpy(), getattr(torch.nn.functional, op)(
            torch.tensor([[1.0, 2.0], [3.0, 5.0]]), dim=1).numpy())


LSE_CASES = [((3, 4), 1, False), ((3, 4), (0, 1), False), ((3, 4), 0, True),
             ((2, 3, 4), (0, 2), True), ((), 0, False), ((1,), 0, True), ((0, 3), 1, False),
             ((3, 0), 1, False)]


@pytest.mark.parametrize("shape,dim,keepdim", LSE_CASES, ids=str)
def test_logsumexp_dims_match_torch(shape, dim, keepdim, device):
    check(lambda lib, a: a.logsumexp(dim, keepdim=keepdim), shape, device=device)
    check(lambda lib, a: lib.logsumexp(a, dim, keepdim), shape, device=device)


def test_logsumexp_infinities_match_torch(device):
    x = np.array([[np.inf, 1.0], [-np.inf, -np.inf], [-np.inf, 2.0], [1000.0, 1000.0]])
    check(lambda lib, a: a.logsumexp(1), x, backward=False, device=device)
    check(lambda lib, a: a.logsumexp(1), x[2:], device=device)


def test_logsumexp_integral_input_gives_default_float(device):
    check(lambda lib, a: lib.logsumexp(a, 0), np.array([[1, 2], [3, 4]], dtype=np.int64),
          dtypes=(np.float64,), device=device)


# ---- prod, cumsum, cumprod ----------------------------------------------------------------
PROD_SHAPES = [(3, 4), (), (1,), (0, 3), (2, 1, 3)]


@pytest.mark.parametrize("shape", PROD_SHAPES, ids=str)
def test_prod_all_matches_torch(shape, device):
    check(lambda lib, a: a.prod(), shape, low=0.5, high=1.5, device=device)


@pytest.mark.parametrize("shape,dim", DIM_CASES, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_prod_dim_matches_torch(shape, dim, keepdim, device):
    check(lambda lib, a: a.prod(dim, keepdim=keepdim), shape, low=0.5, high=1.5, device=device)
    check(lambda lib, a: lib.prod(a, dim, keepdim), shape, low=0.5, high=1.5, device=device)


PROD_ZEROS = {
    "one_zero": np.array([[2.0, 0.0, 3.0], [1.5, 2.0, -1.0]]),
    "two_zeros_one_row": np.array([[0.0, 0.0, 3.0], [1.5, 2.0, -1.0]]),
    "zeros_in_each_row": np.array([[0.0, 2.0, 3.0], [1.5, 0.0, -1.0]]),
    "all_zero": np.zeros((2, 3)),
}


@pytest.mark.parametrize("case", sorted(PROD_ZEROS))
def test_prod_with_zeros_gradient_matches_torch(case, device):
    x = PROD_ZEROS[case]
    check(lambda lib, a: (a.prod(), a.prod(1), a.prod(0, keepdim=True)), x, device=device)


def test_prod_integral_input_gives_int64(device):
    ints = np.array([[1, 2], [3, 4]], dtype=np.int32)
    check(lambda lib, a: (a.prod(), a.prod(0), lib.prod(a, dtype=lib.float64)), ints,
          dtypes=(np.float64,), device=device)
    check(lambda lib, a: a.prod(), np.array([True, False]), dtypes=(np.float64,), device=device)


@pytest.mark.parametrize("shape,dim", DIM_CASES, ids=str)
@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_scan_dims_match_torch(op, shape, dim, device):
    check(lambda lib, a: getattr(a, op)(dim), shape, low=0.5, high=1.5, device=device)
    check(lambda lib, a: getattr(lib, op)(a, dim), shape, low=0.5, high=1.5, device=device)


CUMPROD_ZEROS = {
    "one_zero": np.array([[2.0, 0.0, 3.0, 0.5], [1.5, 2.0, -1.0, 2.0]]),
    "two_zeros": np.array([[0.0, 2.0, 0.0, 0.5], [1.5, 2.0, -1.0, 0.0]]),
    "leading_zero": np.array([[0.0, 2.0, 3.0, 4.0]]),
}


@pytest.mark.parametrize("case", sorted(CUMPROD_ZEROS))
def test_cumprod_with_zeros_gradient_matches_torch(case, device):
    x = CUMPROD_ZEROS[case]
    check(lambda lib, a: (a.cumprod(1), a.cumprod(0)), x, device=device)


def test_scan_integral_input_and_dtype_match_torch(device):
    ints = np.array([[1, 2], [3, 4]], dtype=np.int32)
    check(lambda lib, a: (a.cumsum(0), a.cumprod(1), lib.cumsum(a, 1, dtype=lib.float64)), ints,
          dtypes=(np.float64,), device=device)
    check(lambda lib, a: a.cumsum(0), np.array([True, True, False]), dtypes=(np.float64,),
          device=device)
    check(lambda lib, a: lib.cumsum(a.float(), 1, dtype=lib.float64), (3, 4),
          dtypes=(np.float64,), device=device)


# ---- var, std ----------------------------------------------------------------------------
VAR_CALLS = {
    "all": lambda op, a: getattr(a, op)(),
    "dim": lambda op, a: getattr(a, op)(1),
    "dim_keepdim": lambda op, a: getattr(a, op)(0, keepdim=True),
    "dims": lambda op, a: getattr(a, op)((0, 1)),
    "biased": lambda op, a: getattr(a, op)(1, unbiased=False),
    "positional_unbiased": lambda op, a: getattr(a, op)(False),
    "correction0": lambda op, a: getattr(a, op)(1, correction=0),
    "correction2": lambda op, a: getattr(a, op)(dim=1, correction=2),
}


@pytest.mark.parametrize("call", sorted(VAR_CALLS))
@pytest.mark.parametrize("op", ["var", "std"])
def test_var_std_arguments_match_torch(op, call, device):
    fn = VAR_CALLS[call]
    check(lambda lib, a: fn(op, a), (3, 4), device=device)
    check(lambda lib, a: fn(op, a), (2, 5, 1), device=device)


@pytest.mark.parametrize("op", ["var", "std"])
def test_var_std_functional_and_3d_match_torch(op, device):
    check(lambda lib, a: getattr(lib, op)(a, (0, 2), keepdim=True), (2, 3, 4), device=device)
    check(lambda lib, a: getattr(lib, op)(a, 1, True, False), (2, 3), device=device)


@pytest.mark.parametrize("op", ["var", "std"])
def test_var_std_no_degrees_of_freedom_warn_and_give_nan(op, device):
    for lib in (torch, rustgrad_on(device)):
        x = lib.tensor([1.5], dtype=lib.float64)
        with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
            out = getattr(x, op)()
        assert np.isnan(out.item())


# ---- norm, dist --------------------------------------------------------------------------
NORM_PS = [2, 1, float("inf"), float("-inf"), 3, 0.5, 1.5, "fro", 0]


@pytest.mark.parametrize("p", NORM_PS, ids=str)
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), ((0, 1), True), (0, True)],
                         ids=str)
def test_norm_orders_and_dims_match_torch(p, dim, keepdim, device):
    check(lambda lib, a: a.norm(p, dim, keepdim), (3, 4), low=0.2, high=2.0, device=device)
    check(lambda lib, a: lib.norm(a - 1.1, p=p, dim=dim, keepdim=keepdim), (3, 4), low=0.2,
          high=2.0, device=device)


@pytest.mark.parametrize("shape", [(), (1,), (5,), (2, 1, 3)], ids=str)
def test_norm_shapes_match_torch(shape, device):
    check(lambda lib, a: (a.norm(), a.norm(1), a.norm(float("inf"))), shape, device=device)


@pytest.mark.parametrize("p", [2, 1, float("inf"), 3, 0.5, 1.5], ids=str)
def test_norm_at_zero_gives_torch_gradient(p, device):
    # torch: the 2-norm (and p > 1) at 0 gives a 0 gradient, 1-norm sign(0) = 0
    x = np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 0.0]])
    check(lambda lib, a: (a.norm(p, 1), a[0].norm(p)), x, device=device)


def test_inf_norm_ties_split_gradient_evenly(device):
    x = np.array([[2.0, -2.0, 1.0], [0.5, 3.0, -3.0]])
    check(lambda lib, a: (a.norm(float("inf")), a.norm(float("inf"), 1)), x, device=device)


def test_norm_empty_input_matches_torch(device):
    check(lambda lib, a: (a.norm(), a.norm(1)), (0, 3), device=device)
    check(lambda lib, a: a.norm(dim=0), (0, 3), device=device)


@pytest.mark.parametrize("p", [2, 1, float("inf"), 3, 0.5], ids=str)
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((), (2,))], ids=str)
def test_dist_orders_broadcast_match_torch(p, shapes, device):
    check(lambda lib, a, b: lib.dist(a, b, p), *shapes, device=device)
    check(lambda lib, a, b: a.dist(b, p), *shapes, device=device)


def test_dist_equal_inputs_give_zero_gradient(device):
    x = np.array([1.0, 2.0])
    check(lambda lib, a, b: lib.dist(a, b), x, x.copy(), device=device)
    # torch's own backward of dist(p=0) fails; forward only
    check(lambda lib, a, b: lib.dist(a, b, 0), x, x * 2, backward=False, device=device)


# ---- amax / amin, all / any, argmax / argmin ---------------------------------------------
AMAX_CASES = [((3, 4), ()), ((3, 4), 1), ((3, 4), (0, 1)), ((2, 3, 4), (0, 2)), ((), 0),
              ((1,), 0), ((0, 3), 1)]


@pytest.mark.parametrize("shape,dim", AMAX_CASES, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("op", ["amax", "amin"])
def test_amax_amin_dims_match_torch(op, shape, dim, keepdim, device):
    check(lambda lib, a: getattr(a, op)(dim, keepdim), shape, device=device)
    check(lambda lib, a: getattr(lib, op)(a, dim=dim, keepdim=keepdim), shape, device=device)


@pytest.mark.parametrize("op", ["amax", "amin"])
def test_amax_amin_ties_split_gradient_evenly(op, device):
    x = np.array([[1.0, 3.0, 3.0], [-1.0, -1.0, -1.0]])
    check(lambda lib, a: (getattr(a, op)(), getattr(a, op)(1), getattr(a, op)(0)), x, device=device)


def test_amax_integral_and_bool_inputs_match_torch(device):
    ints = np.array([[1, 5], [3, 2]], dtype=np.int64)
    check(lambda lib, a: (a.amax(0), a.amin()), ints, dtypes=(np.float64,), device=device)
    check(lambda lib, a: a.amax(), np.array([True, False]), dtypes=(np.float64,), device=device)


ANY_INPUTS = {
    "bool": np.array([[True, False, True], [True, True, True]]),
    "float": np.array([[0.0, 1.5, 0.0], [2.0, 3.0, -1.0]]),
    "uint8": np.array([[0, 1], [2, 3]], dtype=np.uint8),
    "empty": np.zeros((0, 3)),
    "scalar": np.array(0.0),
}


@pytest.mark.parametrize("case", sorted(ANY_INPUTS))
@pytest.mark.parametrize("op", ["all", "any"])
def test_all_any_match_torch(op, case, device):
    x = ANY_INPUTS[case]
    check(lambda lib, a: (getattr(a, op)(), getattr(lib, op)(a)), x, device=device)
    if x.ndim:
        check(lambda lib, a: (getattr(a, op)(0), getattr(a, op)(-1, keepdim=True)), x,
              device=device)


@pytest.mark.parametrize("kw", [{}, {"dim": 1}, {"dim": 0, "keepdim": True},
                                {"keepdim": True}], ids=str)
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argmax_argmin_match_torch(op, kw, device):
    x = np.array([[1.0, 3.0, 3.0, 0.0], [-1.0, 5.0, -2.0, -2.0], [4.0, np.nan, 1.0, 0.0]])
    check(lambda lib, a: getattr(a, op)(**kw), x, device=device)
    check(lambda lib, a: getattr(lib, op)(a, **kw), np.array([[2, 1], [0, 7]], dtype=np.int64),
          device=device)


def test_argmax_scalar_input_matches_torch(device):
    check(lambda lib, a: (a.argmax(), a.argmin(0), a.argmax(0, True)), (), device=device)


# ---- topk, sort, argsort -----------------------------------------------------------------
@pytest.mark.parametrize("shape,dim", [((3, 5), 1), ((3, 5), 0), ((4,), 0), ((2, 3, 4), -1)],
                         ids=str)
@pytest.mark.parametrize("k,largest", [(1, True), (2, True), (2, False), (3, False)])
def test_topk_matches_torch(shape, dim, k, largest, device):
    check(lambda lib, a: a.topk(k, dim, largest), shape, device=device)
    check(lambda lib, a: lib.topk(a, k, dim=dim, largest=largest), shape, device=device)


def test_topk_result_fields_and_edge_sizes_match_torch(device):
    check(lambda lib, a: (a.topk(2).values, a.topk(2).indices), (3, 4), device=device)
    check(lambda lib, a: a.topk(0), (3, 4), device=device)
    check(lambda lib, a: a.topk(1), (), device=device)


@pytest.mark.parametrize("shape,dim", [((3, 5), 1), ((3, 5), 0), ((4,), 0), ((), 0),
                                       ((0, 3), 1), ((2, 3, 4), 1)], ids=str)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort_match_torch(shape, dim, descending, device):
    check(lambda lib, a: a.sort(dim, descending), shape, device=device)
    check(lambda lib, a: lib.sort(a, dim=dim, descending=descending), shape, device=device)
    check(lambda lib, a: lib.argsort(a, dim, descending), shape, device=device)


@pytest.mark.parametrize("descending", [False, True])
def test_sort_stable_ties_and_nan_match_torch(descending, device):
    x = np.array([[2.0, 1.0, 2.0, np.nan, 1.0, 3.0, np.nan, 2.0]])
    check(lambda lib, a: a.sort(stable=True, dim=1, descending=descending), x, device=device)
    check(lambda lib, a: a.argsort(dim=1, descending=descending, stable=True), x, device=device)
    ints = np.array([3, 1, 3, 0, 1], dtype=np.int64)
    check(lambda lib, a: a.sort(stable=True, descending=descending), ints, device=device)
    check(lambda lib, a: a.sort(stable=True, descending=descending), ints > 1, device=device)


# ---- gradcheck and double backward -------------------------------------------------------
X = np.array([[0.3, -1.2, 2.0, 0.7], [1.1, -0.4, 0.9, -2.3], [0.55, 1.6, -0.8, 1.25]])
GRADCHECK = {
    "softmax": lambda lib, a: a.softmax(1),
    "log_softmax": lambda lib, a: a.log_softmax(0),
    "logsumexp": lambda lib, a: a.logsumexp((0, 1)),
    "prod": lambda lib, a: a.prod(),
    "prod_dim_zero": lambda lib, a: (a * (a > 0)).prod(1),
    "cumsum": lambda lib, a: a.cumsum(1),
    "cumprod": lambda lib, a: a.cumprod(1),
    "cumprod_zero": lambda lib, a: (a * (a.abs() > 0.5)).cumprod(1),
    "var": lambda lib, a: a.var(1),
    "std": lambda lib, a: a.std(0, correction=0),
    "norm2": lambda lib, a: a.norm(),
    "norm1": lambda lib, a: a.norm(1, 1),
    "norm_inf": lambda lib, a: a.norm(float("inf"), 0),
    "norm3": lambda lib, a: a.norm(3, 1),
    "norm_half": lambda lib, a: a.norm(0.5),
    "dist": lambda lib, a: lib.dist(a, a.flip(0) * 0.5, 3),
    "amax": lambda lib, a: a.amax(1),
    "amin": lambda lib, a: a.amin((0, 1)),
    "topk": lambda lib, a: a.topk(2, 1).values,
    "sort": lambda lib, a: a.sort(0, True).values,
}


@pytest.mark.parametrize("op", sorted(GRADCHECK))
def test_reduction_gradcheck_away_from_kinks_passes(op):
    assert grad_ok(GRADCHECK[op], X)


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "logsumexp", "prod", "prod_dim_zero",
                                "cumprod", "cumprod_zero", "var", "std", "norm2", "norm3",
                                "dist"])
def test_reduction_double_backward_matches_torch(op, device):
    check_double_backward(GRADCHECK[op], X, device=device)


def test_prod_with_one_zero_double_backward_matches_torch(device):
    check_double_backward(lambda lib, a: a.prod(), np.array([[2.0, 0.0, 3.0], [1.5, 2.0, -1.0]]),
                          device=device)


# ---- errors ------------------------------------------------------------------------------
ERRORS = {
    "softmax_int": (lambda lib, a: a.long().softmax(0), "not implemented for 'Long'"),
    "log_softmax_int": (lambda lib, a: a.long().log_softmax(0), "not implemented for 'Long'"),
    "softmax_dim": (lambda lib, a: a.softmax(2), "Dimension out of range"),
    "var_int": (lambda lib, a: a.long().var(), "std and var only support floating point"),
    "norm_int": (lambda lib, a: a.long().norm(), "Expected a floating point or complex tensor"),
    "norm_order": (lambda lib, a: a.norm("foo"), "Order foo not supported"),
    "norm_dtype": (lambda lib, a: a.norm(dtype=lib.float32), "convertible without narrowing"),
    "dist_int": (lambda lib, a: lib.dist(a.long(), a.long()),
                 "input dtype should be either floating point"),
    "amax_empty": (lambda lib, a: a[:0].amax(), "Expected reduction dim to be specified"),
    "amin_empty_dim": (lambda lib, a: a[:0].amin(0), "Expected reduction dim 0 to have non-zero"),
    "argmax_empty": (lambda lib, a: a[:0].argmax(), "Expected reduction dim to be specified"),
    "argmin_bool": (lambda lib, a: (a > 0).argmin(), "does not support bool input"),
    "topk_k": (lambda lib, a: a.topk(5), "selected index k out of range"),
    "topk_neg": (lambda lib, a: a.topk(-1), "selected index k out of range"),
    "prod_dim": (lambda lib, a: a.prod(3), "Dimension out of range"),
    "dims_twice": (lambda lib, a: a.logsumexp((1, -1)), "appears multiple times"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_reduction_invalid_arguments_raise_torch_error(case, device):
    fn, phrase = ERRORS[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_error(fn, (3, 4), phrase=phrase, device=device)


# ---- sum, mean, max, min -------------------------------------------------------------------------
REDUCE_CASES = [
    ((3, 4), {}),
    ((), {}),
    ((0, 3), {}),
    ((3, 4), {"dim": 0}),
    ((3, 4), {"dim": -1}),
    ((3, 4), {"dim": 1, "keepdim": True}),
    ((2, 3, 4), {"dim": (0, 2)}),
    ((2, 3, 4), {"dim": (-1, 0), "keepdim": True}),
    ((2, 3, 4), {"dim": -2, "keepdim": True}),
    ((1, 3), {"dim": 0}),
    ((0, 3), {"dim": 0}),
    ((0, 3), {"dim": 1}),
    ((), {"dim": 0}),
    ((), {"dim": -1, "keepdim": True}),
]


@pytest.mark.parametrize("op", ["sum", "mean"])
@pytest.mark.parametrize("shape,kw", REDUCE_CASES, ids=str)
def test_sum_mean_dims_match_torch(op, shape, kw, device):
    check(lambda lib, a: getattr(a, op)(**kw), shape, device=device)
    check(lambda lib, a: getattr(lib, op)(a, **kw), shape, device=device)


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("shape", [(3, 4), (), (1,), (2, 3, 4)], ids=str)
def test_max_min_whole_tensor_matches_torch(op, shape, device):
    check(lambda lib, a: getattr(a, op)(), shape, device=device)
    check(lambda lib, a: getattr(lib, op)(a), shape, device=device)


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_whole_tensor_ties_spread_gradient_evenly(op, device):
    ties = np.array([[1.0, 3.0, 3.0], [-1.0, 3.0, -1.0], [-1.0, 0.0, 2.0]])
    check(lambda lib, a: getattr(a, op)(), ties, device=device)


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("shape,dim,keepdim", [
    ((3, 4), 0, False),
    ((3, 4), 1, True),
    ((3, 4), -1, False),
    ((2, 3, 4), 1, False),
    ((2, 3, 4), -3, True),
    ((), 0, False),
    ((), -1, True),
    ((1, 5), 0, False),
], ids=str)
def test_max_min_dim_values_indices_match_torch(op, shape, dim, keepdim, device):
    def fn(lib, a):
        res = getattr(a, op)(dim, keepdim=keepdim)
        assert res.values is res[0] and res.indices is res[1]
        return res.values, res.indices

    check(fn, shape, device=device)
    check(lambda lib, a: tuple(getattr(lib, op)(a, dim=dim, keepdim=keepdim)), shape, device=device)


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_dim_ties_match_torch_index_choice(op, device):
    # torch (CPU) returns the first extreme index; the gradient goes only there.
    ties = np.array([[2.0, 2.0, 1.0], [0.0, -1.0, -1.0], [5.0, 5.0, 5.0]])
    check(lambda lib, a: tuple(getattr(a, op)(dim=1)), ties, device=device)
    check(lambda lib, a: tuple(getattr(a, op)(dim=0, keepdim=True)), ties, device=device)


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_with_nan_returns_nan_and_grads_nan_positions_like_torch(op, device):
    x = np.array([[1.0, np.nan, 2.0], [np.nan, 0.0, 5.0]])
    check(lambda lib, a: getattr(a, op)(), x, device=device)
    check(lambda lib, a: tuple(getattr(a, op)(1)), x, device=device)


# ---- median --------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(5,), (4,), (3, 4), ()])
def test_median_all_matches_torch(shape, device):
    check(lambda lib, a: lib.median(a), shape, device=device)
    check(lambda lib, a: a.median(), shape, device=device)


@pytest.mark.parametrize("shape,dim,keepdim", [((3, 4), 1, False), ((3, 4), 0, True),
                                               ((2, 3, 5), -1, False), ((), 0, False)])
def test_median_dim_matches_torch(shape, dim, keepdim, device):
    check(lambda lib, a: tuple(lib.median(a, dim, keepdim)), shape, device=device)
    check(lambda lib, a: a.median(dim=dim, keepdim=keepdim).values, shape, device=device)
    assert grad_ok(lambda lib, a: lib.median(a, dim, keepdim).values, shape)


def test_median_lower_for_even(device):
    x = rustgrad.tensor([4.0, 1.0, 3.0, 2.0], device=device)
    assert x.median().item() == 2.0
    assert x.median(0).indices.item() == 3


# ---- unique --------------------------------------------------------------------------------
@pytest.mark.parametrize("inv", [False, True])
@pytest.mark.parametrize("counts", [False, True])
def test_unique_matches_torch(inv, counts, device):
    arr = ints([[3, 1, 3], [2, 1, 0]])
    check(lambda lib, a: lib.unique(a, return_inverse=inv, return_counts=counts), arr,
          device=device)
    check(lambda lib, a: a.unique(sorted=True, return_inverse=inv, return_counts=counts),
          np.array([2.0, -1.0, 2.0, 0.5]), requires_grad=False, device=device)


def test_median_empty_dim_raises_like_torch(device):
    check_error(lambda lib, a: a.median(0), (0, 3), phrase="to have non-zero size", device=device)


def test_median_nan_matches_torch(device):
    arr = np.array([[1.0, np.nan, 3.0, np.nan], [4.0, 2.0, 0.5, 1.0]])
    check(lambda lib, a: lib.median(a), arr, device=device)
    check(lambda lib, a: tuple(lib.median(a, 1)), arr, device=device)


# ---- bincount, count_nonzero -----------------------------------------------------------------------
def test_bincount_matches_torch():
    parity(lambda L: L.bincount(L.tensor([1, 1, 3])))
    parity(lambda L: L.tensor([1, 1, 3]).bincount(minlength=6))
    parity(lambda L: L.bincount(L.tensor([], dtype=L.int64)))
    parity(lambda L: L.bincount(L.tensor([0, 2, 2], dtype=L.uint8)))
    parity(lambda L: L.bincount(L.tensor([1, 1, 3]), weights=L.tensor([0.5, 1.0, 2.0])))
    parity(lambda L: L.bincount(L.tensor([1, 1, 3]), L.tensor([0.5, 1.0, 2.0], dtype=L.float64)))
    parity(lambda L: L.bincount(L.tensor([1, 1, 3]), weights=L.tensor([1, 2, 3]), minlength=5))
    same_error(lambda L: L.bincount(L.tensor([-1])), "1-d non-negative integral inputs")
    same_error(lambda L: L.bincount(L.tensor([[1]])), "1-d non-negative integral inputs")
    same_error(lambda L: L.bincount(L.tensor([1.0])), "not implemented for 'Float'")
    same_error(lambda L: L.bincount(L.tensor([1]), minlength=-1), "minlength should be >= 0")
    same_error(lambda L: L.bincount(L.tensor([1]), weights=L.ones(2)), "same length as input")
    same_error(lambda L: L.bincount(L.tensor([1]), weights=L.ones(1, requires_grad=True))
               .sum().backward(), "derivative for aten::bincount is not implemented")


def test_count_nonzero_matches_torch():
    x = np.array([[0.0, 1.5, 2.0], [3.0, 0.0, 0.0]])
    parity(lambda L: L.count_nonzero(L.tensor(x)))
    parity(lambda L: L.tensor(x).count_nonzero(dim=1))
    parity(lambda L: L.count_nonzero(L.tensor(x), dim=(0, 1)))
    parity(lambda L: L.count_nonzero(L.tensor(x), 0))
    parity(lambda L: L.count_nonzero(L.tensor(3.0), dim=0))
    parity(lambda L: L.count_nonzero(L.zeros(0, 3), 0))
    parity(lambda L: L.count_nonzero(L.tensor([True, False, True])))
    same_error(lambda L: L.count_nonzero(L.ones(2, 2), dim=(0, 0)), "appears multiple times")


# ---- diff -------------------------------------------------------------------------------------
def test_diff_matches_torch():
    check(lambda L, x: L.diff(x), (4, 5))
    check(lambda L, x: x.diff(n=2, dim=0), (4, 5))
    check(lambda L, x: L.diff(x, n=3), (6,))
    check(lambda L, x, p, a: L.diff(x, dim=1, prepend=p, append=a), (4, 3), (4, 1), (4, 2))
    check(lambda L, x, p: L.diff(x, n=2, dim=0, prepend=p), (3, 2), (2, 2))
    check(lambda L, x: L.diff(x, n=5), (3,))
    assert grad_ok(lambda L, x, p: L.diff(x, n=2, prepend=p), (3, 4), (3, 2))
    parity(lambda L: L.diff(L.tensor([True, False, False, True])))
    parity(lambda L: L.diff(L.tensor([1, 3, 7, 20]), n=2))
    parity(lambda L: L.diff(L.tensor([1, 3, 7]), n=0))
    same_error(lambda L: L.diff(L.ones(3), n=-1), "order must be non-negative")
    same_error(lambda L: L.diff(L.tensor(1.0)), "at least one-dimensional")
    same_error(lambda L: L.diff(L.ones(4, 3), prepend=L.zeros(3)), "the same dimension as input")
