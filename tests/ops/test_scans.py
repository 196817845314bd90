"""Scans and their relatives against torch: cummax/cummin (values, indices, ties, NaN, integer
and bool inputs), logcumsumexp (stability, -inf/inf), the in-place cumsum_/cumprod_ (on leaves'
clones, views and integer tensors), aminmax and renorm: values, dtypes, grad_fn names, saved
attributes, gradients, double backward, gradcheck and errors, on every device."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad

from ..parity import check, check_double_backward, check_error, grad_ok, ints

SHAPES = [(5,), (3, 4), (2, 3, 4), (), (0, 3)]


# ---- cummax / cummin -------------------------------------------------------------------------
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_cummin_match_torch(name, shape, device):
    dims = [0, -1] if len(shape) <= 1 else [0, 1, -1]
    for dim in dims:
        check(lambda L, a, dim=dim: tuple(getattr(L, name)(a, dim)), shape, device=device)
        check(lambda L, a, dim=dim: tuple(getattr(a, name)(dim=dim)), shape, device=device)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_cummin_ties_and_nan_match_torch(name, device):
    # ties move the index to the latest equal entry; a NaN propagates and each NaN is its index
    ties = np.array([[1.0, 3.0, 3.0, 2.0, 3.0, 5.0], [0.0, 0.0, -1.0, -1.0, 2.0, 2.0]])
    check(lambda L, a: tuple(getattr(L, name)(a, 1)), ties, device=device)
    nans = np.array([1.0, np.nan, 3.0, np.nan, -5.0])
    check(lambda L, a: tuple(getattr(L, name)(a, 0)), nans, device=device)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_cummin_integer_and_bool_inputs_match_torch(name, device):
    check(lambda L, a: tuple(getattr(L, name)(a, 1)), ints([[1, 3, 2, 3], [5, -1, 5, 0]]),
          dtypes=(None,), device=device)
    check(lambda L, a: tuple(getattr(L, name)(a, 0)), np.array([True, False, True, False]),
          dtypes=(None,), device=device)


def test_cummax_result_is_torch_named_tuple_with_saved_attributes():
    x = rustgrad.tensor([[1.0, 3.0], [2.0, 0.0]], requires_grad=True)
    r = x.cummax(0)
    assert type(r).__name__ == "cummax" and r.values is r[0] and r.indices is r[1]
    assert repr(r).startswith("torch.return_types.cummax(")
    fn = r.values.grad_fn
    assert fn.name() == "CummaxBackward0"
    assert fn._saved_dim == 0
    assert fn._saved_indices.tolist() == [[0, 0], [1, 0]]
    assert fn._saved_self is x or fn._saved_self.tolist() == x.tolist()
    assert rustgrad.cummin(x, 1).values.grad_fn.name() == "CumminBackward0"


def test_cummax_cummin_double_backward_and_gradcheck():
    check_double_backward(lambda L, a: L.cummax(a, 1).values * a, (3, 5))
    assert grad_ok(lambda L, a: L.cummin(a, 0).values, (4, 3))


# ---- logcumsumexp ----------------------------------------------------------------------------
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_logcumsumexp_matches_torch(shape, device):
    dims = [0, -1] if len(shape) <= 1 else [0, 1, -1]
    for dim in dims:
        check(lambda L, a, dim=dim: L.logcumsumexp(a, dim), shape, device=device)
        check(lambda L, a, dim=dim: a.logcumsumexp(dim), shape, low=-30.0, high=30.0,
              device=device)


def test_logcumsumexp_is_stable_and_keeps_infinities_like_torch(device):
    check(lambda L, a: L.logcumsumexp(a, 0), np.array([-1000.0, 0.0, 1000.0, 999.0]),
          device=device)
    check(lambda L, a: L.logcumsumexp(a, 0), np.array([-np.inf, -np.inf, 1.0, np.inf, 2.0]),
          backward=False, device=device)


def test_logcumsumexp_float16_matches_torch(device):
    check(lambda L, a: L.logcumsumexp(a, 1), (3, 6), dtypes=(np.float16,), rtol=1e-2, atol=1e-2,
          device=device)


def test_logcumsumexp_saved_attributes_double_backward_and_gradcheck():
    x = rustgrad.randn(3, 4, dtype=rustgrad.float64, requires_grad=True)
    y = x.logcumsumexp(1)
    assert y.grad_fn.name() == "LogcumsumexpBackward0"
    assert y.grad_fn._saved_dim == 1
    assert y.grad_fn._saved_result.tolist() == y.tolist()
    check_double_backward(lambda L, a: L.logcumsumexp(a, 1), (3, 4))
    assert grad_ok(lambda L, a: L.logcumsumexp(a, 0), (5, 2))


def test_logcumsumexp_refuses_integers_like_torch(device):
    check_error(lambda L, a: L.logcumsumexp(a, 0), ints([1, 2]), device=device,
                phrase="not implemented for 'Long'")


# ---- cumsum_ / cumprod_ ----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["cumsum_", "cumprod_"])
def test_inplace_scans_match_torch(name, device):
    def program(L, a):
        b = a * 1
        out = getattr(b, name)(1)
        assert out is b
        return b

    check(program, (3, 4), device=device)

    def on_view(L, a):
        b = a * 1
        getattr(b[1:], name)(0)
        return b

    check(on_view, (4, 3), device=device)


@pytest.mark.parametrize("name", ["cumsum_", "cumprod_"])
def test_inplace_scans_keep_integer_dtype_like_torch(name, device):
    def program(L, a):
        b = a.to(L.int32)
        getattr(b, name)(0)
        return b

    check(program, ints([1, 2, 3, 4]), dtypes=(None,), device=device)


def test_inplace_scans_refuse_leaves_and_gradcheck(device):
    check_error(lambda L, a: a.cumsum_(0), (3,), requires_grad=True, device=device,
                phrase="a leaf Variable that requires grad")
    assert grad_ok(lambda L, a: (a * 1).cumprod_(1), (3, 4), low=0.5, high=2.0)


# ---- aminmax ---------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 4), (5,), ()], ids=str)
def test_aminmax_matches_torch(shape, device):
    check(lambda L, a: tuple(L.aminmax(a)), shape, device=device)
    check(lambda L, a: tuple(a.aminmax(keepdim=True)), shape, device=device)
    check(lambda L, a: tuple(L.aminmax(a, dim=0)), shape, device=device)
    check(lambda L, a: tuple(L.aminmax(a, dim=-1, keepdim=True)), shape, device=device)


def test_aminmax_ties_share_the_gradient_like_torch(device):
    check(lambda L, a: tuple(L.aminmax(a, dim=1)), np.array([[1.0, 3.0, 3.0, 1.0], [2.0, 2.0, 2.0, 2.0]]),
          device=device)
    check(lambda L, a: L.aminmax(a).max, np.array([1.0, 3.0, 3.0]), device=device)


def test_aminmax_named_tuple_saved_attributes_and_errors(device):
    x = rustgrad.tensor([[1.0, 5.0], [3.0, 0.0]], requires_grad=True)
    r = rustgrad.aminmax(x, dim=1)
    assert type(r).__name__ == "aminmax" and r.min is r[0] and r.max is r[1]
    assert r.min.grad_fn is r.max.grad_fn and r.min.grad_fn.name() == "AminmaxBackward0"
    assert r.min.grad_fn._saved_dim == 1 and r.min.grad_fn._saved_keepdim is False
    assert r.max.grad_fn._saved_max.tolist() == [5.0, 3.0]
    check_error(lambda L, a: L.aminmax(a), (0,), device=device, phrase="aminmax")
    check_error(lambda L, a: L.aminmax(a, dim=1), (2, 0), device=device,
                phrase="Expected reduction dim 1 to have non-zero size")


# ---- renorm ----------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [2, 1, 3.5, float("inf")])
def test_renorm_matches_torch(p, device):
    for dim in (0, 1, -1):
        check(lambda L, a, dim=dim: a.renorm(p, dim, 1.5), (3, 4), device=device)
    check(lambda L, a: L.renorm(a, p, 1, 0.8), (2, 3, 2), device=device)


def test_renorm_saved_attributes_double_backward_and_gradcheck():
    x = rustgrad.randn(3, 4, dtype=rustgrad.float64, requires_grad=True)
    y = x.renorm(2, 0, 0.5)
    fn = y.grad_fn
    assert fn.name() == "RenormBackward0"
    assert (fn._saved_p, fn._saved_dim, fn._saved_maxnorm) == (2.0, 0, 0.5)
    check_double_backward(lambda L, a: a.renorm(2, 1, 1.0), (3, 4))
    assert grad_ok(lambda L, a: a.renorm(3, 0, 1.0), (3, 4))


@pytest.mark.parametrize("program,phrase", [
    (lambda L, a: a.renorm(2, 0, 1.0), "input needs at least 2 dimensions"),
    (lambda L, a: a.reshape(3, 1).renorm(0, 0, 1.0), "non-positive-norm"),
    (lambda L, a: a.reshape(3, 1).renorm(2, 0, -1.0), "expected maxnorm to be >= 0"),
])
def test_renorm_errors_match_torch(program, phrase, device):
    check_error(program, (3,), device=device, phrase=phrase)


# ---- ops that already existed: checked here against torch ------------------------------------
def test_var_std_correction_count_nonzero_diff_bincount_match_torch(device):
    check(lambda L, a: (a.var(correction=0), a.std(dim=1, correction=2), L.var(a, 0, correction=1)),
          (3, 5), device=device)
    check(lambda L, a: (L.count_nonzero(a), a.count_nonzero(dim=1)),
          np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]]), backward=False, device=device)
    check(lambda L, a: (a.diff(), L.diff(a, n=2, dim=0)), (4, 3), device=device)
    check(lambda L, a: (L.bincount(a), a.bincount(minlength=6)), ints([0, 1, 1, 3, 2, 1]),
          dtypes=(None,), device=device)
