"""Ops that real programs reached for and rustgrad lacked, against torch: the remaining unary
in-place forms, frac, lerp_, addcmul_/addcdiv_, clamp_min/clamp_max (and in place), index_fill
(and in place), bincount, count_nonzero, diff, searchsorted and bucketize."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import rustgrad

from ..parity import check, check_error, grad_ok, ints, parity, same_error

# (method, low, high) for the unary in-place forms; the input is a non-leaf (x * 1)
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


# ---- lerp_, addcmul_, addcdiv_ ------------------------------------------------------------------
def test_lerp_inplace_matches_torch():
    check(lambda L, x, e: (x * 1).lerp_(e, 0.3), (3, 4), (3, 4))
    check(lambda L, x, e: (x * 1).lerp_(e, 0.8), (3, 4), (4,))
    check(lambda L, x, e, w: (x * 1).lerp_(e, w), (3, 4), (3, 4), (4,))
    assert grad_ok(lambda L, x, e, w: (x * 1).lerp_(e, w), (2, 3), (2, 3), (2, 3))
    same_error(lambda L: L.zeros(3).lerp_(L.ones(2, 3), 0.5), "doesn't match the broadcast shape")
    same_error(lambda L: L.zeros(3).lerp_(L.ones(3, dtype=L.float64), 0.5), "expected dtype")


@pytest.mark.parametrize("name", ["addcmul_", "addcdiv_"])
def test_addc_inplace_matches_torch(name):
    check(lambda L, x, a, b: getattr(x * 1, name)(a, b, value=0.5), (3, 4), (3, 4), (4,),
          low=0.5, high=2.0)
    check(lambda L, x, a, b: getattr(x * 1, name)(a, b), (3, 4), (1, 4), (3, 1), low=0.5, high=2.0)
    assert grad_ok(lambda L, x, a, b: getattr(x * 1, name)(a, b, value=-2), (2, 3), (2, 3), (3,),
                   low=0.5, high=2.0)
    same_error(lambda L: getattr(L.zeros(3), name)(L.ones(2, 3), L.ones(3)),
               "doesn't match the broadcast shape")


def test_addcmul_inplace_without_grad(lib):
    x = lib.zeros(3)
    x.addcmul_(lib.tensor([1.0, 2.0, 3.0]), lib.tensor([2.0, 2.0, 2.0]), value=0.5)
    assert x.tolist() == [1.0, 2.0, 3.0] and x._version == 1


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


# ---- index_fill ---------------------------------------------------------------------------------
INDEX_FILL = {
    "dim0": ((3, 4), 0, ints([0, 2])),
    "dim1": ((3, 4), 1, ints([3, 1])),
    "dim_neg": ((2, 3, 4), -1, ints([3])),
    "scalar_index": ((3, 4), 1, ints(2)),
    "repeats": ((3, 4), 0, ints([1, 1])),
    "empty_index": ((3, 4), 0, ints([])),
}


@pytest.mark.parametrize("case", sorted(INDEX_FILL))
def test_index_fill_matches_torch(case):
    shape, dim, idx = INDEX_FILL[case]
    check(lambda L, x, i: x.index_fill(dim, i, -1.5), shape, idx)
    check(lambda L, x, i, v: L.index_fill(x, dim, i, v), shape, idx, np.array(2.5))
    check(lambda L, x, i: (x * 1).index_fill_(dim, i, 3.0), shape, idx)
    assert grad_ok(lambda L, x, i, v: x.index_fill(dim, i, v), shape, idx, np.array(2.5))


def test_index_fill_negative_index_matches_torch():
    # (torch's own backward of IndexFillBackward1 rejects a negative index, so a scalar value here)
    check(lambda L, x, i: x.index_fill(1, i, -1.5), (3, 4), ints([-1, 1]))


def test_index_fill_errors_and_ints():
    parity(lambda L: L.tensor([1, 2, 3]).index_fill(0, L.tensor([0]), 2.5))
    parity(lambda L: L.tensor(5.0).index_fill(0, L.tensor([0]), 2.5))
    for bad, phrase in [(lambda L, x: x.index_fill(1, L.tensor([5]), 1.0), "out of bounds"),
                        (lambda L, x: x.index_fill(1, L.tensor([1.0]), 1.0), "Expected dtype int64"),
                        (lambda L, x: x.index_fill(1, L.tensor([[1]]), 1.0), "vector/scalar"),
                        (lambda L, x: x.index_fill(1, L.tensor([1]), L.ones(2)), "0-dimensional"),
                        (lambda L, x: x.index_fill(3, L.tensor([1]), 1.0), "Dimension out of range")]:
        check_error(bad, (3, 4), phrase=phrase)


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


# ---- searchsorted, bucketize ---------------------------------------------------------------------
def test_searchsorted_matches_torch():
    seq = [1, 3, 5, 7, 9]
    vals = [3, 6, 9, 0, 10]
    parity(lambda L: L.searchsorted(L.tensor(seq), L.tensor(vals)))
    parity(lambda L: L.searchsorted(L.tensor(seq), L.tensor(vals), right=True))
    parity(lambda L: L.searchsorted(L.tensor(seq), L.tensor(vals), side="right"))
    parity(lambda L: L.searchsorted(L.tensor(seq), L.tensor([[3, 4], [8, 1]])))
    parity(lambda L: L.searchsorted(L.tensor(seq), 5))
    parity(lambda L: L.searchsorted(L.tensor(seq), L.tensor(vals), out_int32=True))
    parity(lambda L: L.searchsorted(L.tensor([[1.0, 3, 5], [2, 4, 6]]), L.tensor([[3.0, 7], [3, 0]])))
    parity(lambda L: L.searchsorted(L.tensor([5.0, 1, 3]), L.tensor([2.0, 4.0]),
                                    sorter=L.tensor([1, 2, 0])))
    same_error(lambda L: L.searchsorted(L.tensor(seq), L.tensor([3]), side="left", right=True),
               "side and right can't be set to opposites")
    same_error(lambda L: L.searchsorted(L.tensor(seq), L.tensor([3]), side="x"),
               "side can only be 'left' or 'right'")
    same_error(lambda L: L.searchsorted(L.tensor([[1, 3, 5], [2, 4, 6]]), L.tensor([3])),
               "boundaries tensor should be 1 dimension or the first N-1 dimensions")


def test_bucketize_matches_torch():
    b = [1.0, 3.0, 5.0, 7.0]
    parity(lambda L: L.bucketize(L.tensor([[0.5, 3.0], [6.0, 9.0]]), L.tensor(b)))
    parity(lambda L: L.bucketize(L.tensor([0.5, 3.0, 7.0]), L.tensor(b), right=True))
    parity(lambda L: L.bucketize(L.tensor([3.0]), L.tensor(b), out_int32=True))
    parity(lambda L: L.bucketize(3, L.tensor(b)))
    same_error(lambda L: L.bucketize(L.tensor([1]), L.tensor([[1, 2]])), "must be 1 dimension")


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
