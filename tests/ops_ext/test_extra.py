"""The ops of rustgrad._ops.extra against torch: in-place unary methods, index_add / index_put,
the in-place random fills (shape, dtype, range, version, determinism under manual_seed),
broadcast_to, hstack / vstack, addcmul / addcdiv, nan_to_num, randperm, median, unique."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad

from .helpers import check, check_error, grad_ok


def ints(x):
    return np.array(x, dtype=np.int64)


# ---- in-place unary ------------------------------------------------------------------------
UNARY = ["exp", "sigmoid", "tanh", "sqrt", "abs", "neg", "square", "relu"]


@pytest.mark.parametrize("name", UNARY)
def test_inplace_unary_matches_torch(name):
    low = 0.1 if name == "sqrt" else -2.0
    check(lambda lib, a: getattr(a * 1, name + "_")(), (3, 4), low=low)
    # on a view: the base's history becomes CopySlices
    check(lambda lib, a: (lambda b: (getattr(b[1], name + "_")(), b)[1])(a * 1), (3, 4),
          low=low)


@pytest.mark.parametrize("name", UNARY)
def test_inplace_unary_refuses_leaf(name):
    check_error(lambda lib, a: getattr(a, name + "_")(), (3,), requires_grad=True,
                phrase="a leaf Variable that requires grad")


def test_inplace_unary_without_grad_bumps_version():
    x = rustgrad.tensor([1.0, 4.0])
    y = x.sqrt_()
    assert y is x and x._version == 1 and x.tolist() == [1.0, 2.0]


def test_inplace_unary_int_cast_error():
    check_error(lambda lib, a: a.exp_(), ints([1, 2]), phrase="can't be cast")


# ---- index_add / index_put -----------------------------------------------------------------
@pytest.mark.parametrize("dim,idx,src", [
    (0, ints([2, 0, 2]), (3, 4)),
    (1, ints([3, 1]), (3, 2)),
    (-1, ints([0]), (3, 1)),
])
def test_index_add_matches_torch(dim, idx, src):
    check(lambda lib, a, i, s: lib.index_add(a, dim, i, s), (3, 4), idx, src)
    check(lambda lib, a, i, s: a.index_add(dim, i, s, alpha=2.5), (3, 4), idx, src)
    check(lambda lib, a, i, s: (a * 1).index_add_(dim, i, s), (3, 4), idx, src)
    assert grad_ok(lambda lib, a, i, s: a.index_add(dim, i, s, alpha=2.0), (3, 4), idx, src)


def test_index_add_refuses_leaf():
    check_error(lambda lib, a, i, s: a.index_add_(0, i, s), (3, 4), ints([0]), (1, 4),
                requires_grad=True, phrase="a leaf Variable")


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_matches_torch(accumulate):
    i0, i1 = ints([0, 2, 1]), ints([1, 3, 1])
    check(lambda lib, a, x, y, v: lib.index_put(a, (x, y), v, accumulate), (3, 4), i0, i1, (3,))
    check(lambda lib, a, x, y, v: (a * 1).index_put_((x, y), v, accumulate=accumulate),
          (3, 4), i0, i1, (3,))
    check(lambda lib, a, x, v: a.index_put((x,), v, accumulate), (3, 4), ints([2, 0]), (4,))
    assert grad_ok(lambda lib, a, x, y, v: a.index_put((x, y), v, accumulate), (3, 4), i0, i1,
                   (3,))


def test_index_put_accumulate_repeats():
    check(lambda lib, a, x, v: a.index_put((x,), v, accumulate=True), (4,), ints([1, 1, 3]),
          (3,))


# ---- random fills --------------------------------------------------------------------------
@pytest.mark.parametrize("fill", ["normal_", "uniform_", "bernoulli_"])
def test_random_fill_deterministic_and_versioned(fill):
    args = {"normal_": (1.0, 0.5), "uniform_": (-3.0, -1.0), "bernoulli_": (0.3,)}[fill]
    outs = []
    for _ in range(2):
        rustgrad.manual_seed(7)
        x = rustgrad.zeros(200, 3, dtype=rustgrad.float32)
        y = getattr(x, fill)(*args)
        assert y is x and x._version == 1
        assert x.dtype == rustgrad.float32 and tuple(x.shape) == (200, 3)
        outs.append(x.numpy().copy())
    np.testing.assert_array_equal(outs[0], outs[1])
    v = outs[0]
    if fill == "uniform_":
        assert v.min() >= -3.0 and v.max() < -1.0
    elif fill == "bernoulli_":
        assert set(np.unique(v)) <= {0.0, 1.0} and 0.15 < v.mean() < 0.45
    else:
        assert abs(v.mean() - 1.0) < 0.1 and abs(v.std() - 0.5) < 0.1


@pytest.mark.parametrize("fill", ["normal_", "uniform_", "bernoulli_"])
def test_random_fill_refuses_leaf(fill):
    check_error(lambda lib, a: getattr(a, fill)(), (3,), requires_grad=True,
                phrase="a leaf Variable that requires grad")


def test_random_fill_no_grad_on_leaf():
    x = rustgrad.zeros(3, requires_grad=True)
    with rustgrad.no_grad():
        x.uniform_(0.0, 1.0)
    assert x._version == 1 and x.requires_grad and x.grad_fn is None


# ---- broadcast_to, hstack, vstack -----------------------------------------------------------
def test_broadcast_to_matches_torch():
    check(lambda lib, a: lib.broadcast_to(a, (2, 3, 4)), (3, 1))
    check(lambda lib, a: a.broadcast_to((3, -1)), (4,))
    check_error(lambda lib, a: lib.broadcast_to(a, (2, 3)), (4,))


@pytest.mark.parametrize("shapes", [((3,), (2,)), ((2, 3), (2, 1)), ((), (2,))])
def test_hstack_matches_torch(shapes):
    check(lambda lib, a, b: lib.hstack([a, b]), *shapes)


@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (3,)), ((1, 4), (2, 4))])
def test_vstack_matches_torch(shapes):
    check(lambda lib, a, b: lib.vstack([a, b]), *shapes)


# ---- addcmul / addcdiv ----------------------------------------------------------------------
@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
def test_addc_matches_torch(op):
    check(lambda lib, a, b, c: getattr(lib, op)(a, b, c), (3, 4), (3, 4), (3, 4), low=0.5)
    check(lambda lib, a, b, c: getattr(a, op)(b, c, value=-0.5), (3, 1), (4,), (3, 4),
          low=0.5)
    assert grad_ok(lambda lib, a, b, c: getattr(lib, op)(a, b, c, value=2.0), (3,), (3,), (3,),
                   low=0.5)
    check_error(lambda lib, a, b, c: getattr(lib, op)(a, b, c), (3,), (4,), (3,),
                phrase="must match the size")


# ---- nan_to_num ----------------------------------------------------------------------------
def test_nan_to_num_matches_torch():
    arr = np.array([1.0, np.nan, np.inf, -np.inf, -2.0])
    check(lambda lib, a: lib.nan_to_num(a), arr)
    check(lambda lib, a: a.nan_to_num(nan=1.5, posinf=9.0, neginf=-9.0), arr)
    check(lambda lib, a: lib.nan_to_num(a), ints([1, 2]))


# ---- randperm ------------------------------------------------------------------------------
def test_randperm():
    rustgrad.manual_seed(3)
    a = rustgrad.randperm(10)
    rustgrad.manual_seed(3)
    b = rustgrad.randperm(10)
    assert a.dtype == rustgrad.int64 and a.tolist() == b.tolist()
    assert sorted(a.tolist()) == list(range(10))
    assert rustgrad.randperm(0).shape == (0,)
    assert rustgrad.randperm(4, dtype=rustgrad.float32).dtype == rustgrad.float32


# ---- median --------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(5,), (4,), (3, 4), ()])
def test_median_all_matches_torch(shape):
    check(lambda lib, a: lib.median(a), shape)
    check(lambda lib, a: a.median(), shape)


@pytest.mark.parametrize("shape,dim,keepdim", [((3, 4), 1, False), ((3, 4), 0, True),
                                               ((2, 3, 5), -1, False), ((), 0, False)])
def test_median_dim_matches_torch(shape, dim, keepdim):
    check(lambda lib, a: tuple(lib.median(a, dim, keepdim)), shape)
    check(lambda lib, a: a.median(dim=dim, keepdim=keepdim).values, shape)
    assert grad_ok(lambda lib, a: lib.median(a, dim, keepdim).values, shape)


def test_median_lower_for_even():
    x = rustgrad.tensor([4.0, 1.0, 3.0, 2.0])
    assert x.median().item() == 2.0
    assert x.median(0).indices.item() == 3


# ---- unique --------------------------------------------------------------------------------
@pytest.mark.parametrize("inv", [False, True])
@pytest.mark.parametrize("counts", [False, True])
def test_unique_matches_torch(inv, counts):
    arr = ints([[3, 1, 3], [2, 1, 0]])
    check(lambda lib, a: lib.unique(a, return_inverse=inv, return_counts=counts), arr)
    check(lambda lib, a: a.unique(sorted=True, return_inverse=inv, return_counts=counts),
          np.array([2.0, -1.0, 2.0, 0.5]), requires_grad=False)


# ---- errors ----------------------------------------------------------------------------------
ERRORS = {
    "index_add_out_of_range": (lambda lib, a, i, s: a.index_add(0, i, s), ((3, 4), ints([5]),
                               (1, 4)), "index 5 is out of bounds for dimension 0 with size 3"),
    "index_add_matrix_index": (lambda lib, a, i, s: a.index_add(0, i, s),
                               ((3, 4), ints([[0]]), (1, 4)), "Index is supposed to be a vector"),
    "index_add_dtype": (lambda lib, a, i, s: a.index_add(0, i, s.float()),
                        ((3, 4), ints([0]), (1, 4)), "must have the same scalar type"),
    "index_put_dtype": (lambda lib, a, i, v: a.index_put((i,), v.float()),
                        ((3, 4), ints([0]), (4,)), "Index put requires the source and destination"),
    "normal_std": (lambda lib, a: a.normal_(0.0, -1.0), ((3,),), "normal expects std >= 0.0"),
    "uniform_range": (lambda lib, a: a.uniform_(2.0, 1.0), ((3,),), "uniform_ expects to return"),
    "median_empty_dim": (lambda lib, a: a.median(0), ((0, 3),), "to have non-zero size"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_match_torch(case):
    fn, specs, phrase = ERRORS[case]
    check_error(fn, *specs, phrase=phrase)


def test_median_nan_matches_torch():
    arr = np.array([[1.0, np.nan, 3.0, np.nan], [4.0, 2.0, 0.5, 1.0]])
    check(lambda lib, a: lib.median(a), arr)
    check(lambda lib, a: tuple(lib.median(a, 1)), arr)
