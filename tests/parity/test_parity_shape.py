"""Parity of the view and shape ops with torch: reshape/view, transpose/t, permute,
unsqueeze/squeeze, expand, flatten, cat, stack, clone, contiguous, to(dtype)."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import check

RESHAPES = [
    ((2, 3, 4), (6, 4)),
    ((2, 3, 4), (-1,)),
    ((2, 3, 4), (4, -1, 2)),
    ((), (1,)),
    ((), (1, 1)),
    ((1,), ()),
    ((0, 3), (3, 0)),
    ((0, 3), (-1, 3)),
    ((6,), (2, 3)),
]


@pytest.mark.parametrize("src,dst", RESHAPES, ids=str)
def test_reshape_view_contiguous_input_match_torch(src, dst):
    check(lambda lib, a: a.reshape(dst), src)
    check(lambda lib, a: lib.reshape(a, dst), src)
    check(lambda lib, a: a.view(dst), src)
    check(lambda lib, a: a.view(*dst) if dst else a.view(()), src)


def test_reshape_non_contiguous_input_copies_like_torch():
    check(lambda lib, a: a.t().reshape(-1), (3, 4))
    check(lambda lib, a: a.transpose(0, 2).reshape(4, 6), (2, 3, 4))


def test_view_as_reshape_as_match_torch():
    check(lambda lib, a, b: (a.view_as(b), a.reshape_as(b)), (2, 6), (3, 4))


TRANSPOSES = [((3, 4), 0, 1), ((2, 3, 4), 0, 2), ((2, 3, 4), -1, 1), ((3,), 0, 0), ((), 0, -1)]


@pytest.mark.parametrize("shape,d0,d1", TRANSPOSES, ids=str)
def test_transpose_dims_match_torch(shape, d0, d1):
    check(lambda lib, a: a.transpose(d0, d1), shape)
    check(lambda lib, a: lib.transpose(a, d0, d1), shape)


@pytest.mark.parametrize("shape", [(3, 4), (3,), (), (0, 2)], ids=str)
def test_t_up_to_2d_matches_torch(shape):
    check(lambda lib, a: (a.t(), lib.t(a)), shape)


def test_T_property_2d_values_and_grad_match_torch():
    check(lambda lib, a: a.T.sum(0), (3, 4))


def test_T_property_2d_grad_fn_is_permute_like_torch():
    check(lambda lib, a: a.T, (3, 4))


@pytest.mark.parametrize("shape,dims", [
    ((2, 3, 4), (2, 0, 1)),
    ((2, 3, 4), (-1, -3, 1)),
    ((2, 3), (1, 0)),
    ((), ()),
    ((1, 0, 2), (2, 1, 0)),
], ids=str)
def test_permute_orders_match_torch(shape, dims):
    check(lambda lib, a: a.permute(dims), shape)
    if dims:  # torch's a.permute() with no dims is a TypeError
        check(lambda lib, a: a.permute(*dims), shape)
    check(lambda lib, a: lib.permute(a, dims), shape)


@pytest.mark.parametrize("shape,dim", [((3, 4), 0), ((3, 4), 2), ((3, 4), -1), ((), 0), ((), -1),
                                       ((0,), 1)], ids=str)
def test_unsqueeze_positions_match_torch(shape, dim):
    check(lambda lib, a: (a.unsqueeze(dim), lib.unsqueeze(a, dim)), shape)


@pytest.mark.parametrize("shape,kw", [
    ((1, 3, 1, 4), {}),
    ((1, 3, 1, 4), {"dim": 0}),
    ((1, 3, 1, 4), {"dim": -2}),
    ((1, 3, 1, 4), {"dim": 1}),  # not size 1: unchanged
    ((1, 3, 1, 4), {"dim": (0, 2)}),
    ((1, 1), {}),
    ((), {}),
    ((), {"dim": 0}),
    ((1, 0), {}),
], ids=str)
def test_squeeze_dims_match_torch(shape, kw):
    check(lambda lib, a: a.squeeze(**kw), shape)
    check(lambda lib, a: lib.squeeze(a, **kw), shape)


@pytest.mark.parametrize("shape,size", [
    ((3, 1), (3, 4)),
    ((3, 1), (2, 3, 5)),
    ((1,), (4,)),
    ((), (2, 3)),
    ((3, 1), (-1, 4)),
    ((1, 4), (0, 4)),
    ((2, 3), (2, 3)),
], ids=str)
def test_expand_sizes_match_torch(shape, size):
    check(lambda lib, a: a.expand(size), shape)
    check(lambda lib, a: a.expand(*size), shape)


def test_expand_as_then_reduce_gradient_sums_like_torch():
    check(lambda lib, a, b: a.expand_as(b) * b, (3, 1), (2, 3, 4))


@pytest.mark.parametrize("shape,args", [
    ((2, 3, 4), ()),
    ((2, 3, 4), (1,)),
    ((2, 3, 4), (0, 1)),
    ((2, 3, 4), (-2, -1)),
    ((2, 3, 4), (1, 1)),
    ((), ()),
    ((3,), ()),
    ((2, 0, 3), (1,)),
], ids=str)
def test_flatten_ranges_match_torch(shape, args):
    check(lambda lib, a: a.flatten(*args), shape)
    check(lambda lib, a: lib.flatten(a, *args), shape)


@pytest.mark.parametrize("shapes,dim", [
    (((2, 3), (4, 3)), 0),
    (((2, 3), (2, 1), (2, 2)), 1),
    (((2, 3), (2, 5)), -1),
    (((2, 3, 4), (2, 1, 4)), 1),
    (((0, 3), (2, 3)), 0),
    (((3,), (0,)), 0),
    (((2, 3),), 0),
], ids=str)
def test_cat_dims_match_torch(shapes, dim):
    check(lambda lib, *ts: lib.cat(ts, dim), *shapes)
    check(lambda lib, *ts: lib.cat(list(ts), dim=dim), *shapes)


def test_cat_mixed_dtypes_promotes_like_torch():
    ints = np.arange(6).reshape(2, 3)
    check(lambda lib, a, b: lib.cat([a, b]), (2, 3), ints)
    check(lambda lib, a, b: lib.cat([a, b.double()]), (2, 3), (2, 3), dtypes=(np.float32,))


def test_cat_legacy_empty_1d_skipped_like_torch():
    check(lambda lib, a, b: lib.cat([a, b], 1), (2, 3), (0,))


@pytest.mark.parametrize("shapes,dim", [
    (((2, 3), (2, 3)), 0),
    (((2, 3), (2, 3), (2, 3)), 1),
    (((2, 3), (2, 3)), 2),
    (((2, 3), (2, 3)), -1),
    (((), ()), 0),
    (((0, 2), (0, 2)), 1),
    (((4,),), 0),
], ids=str)
def test_stack_dims_match_torch(shapes, dim):
    check(lambda lib, *ts: lib.stack(ts, dim), *shapes)
    check(lambda lib, *ts: lib.stack(list(ts), dim=dim), *shapes)


@pytest.mark.parametrize("shape", [(3, 4), (), (0,)], ids=str)
def test_clone_copies_and_passes_gradient_like_torch(shape):
    check(lambda lib, a: (a.clone(), lib.clone(a)), shape)


def test_contiguous_on_contiguous_returns_self_like_torch():
    def fn(lib, a):
        b = a * 2
        c = b.contiguous()
        assert c is b
        return c

    check(fn, (3, 4))


def test_contiguous_on_transposed_copies_like_torch():
    def fn(lib, a):
        c = a.t().contiguous()
        assert c.is_contiguous()
        return c

    check(fn, (3, 4))


@pytest.mark.parametrize("conv", ["float", "double", "half", "to32", "to64", "to_same", "to16",
                                  "to_other"])
def test_to_dtype_conversions_match_torch(conv):
    convs = {
        "float": lambda lib, a: a.float(),
        "double": lambda lib, a: a.double(),
        "half": lambda lib, a: a.half(),
        "to32": lambda lib, a: a.to(lib.float32),
        "to64": lambda lib, a: a.to(dtype=lib.float64),
        "to_same": lambda lib, a: a.to(a.dtype),
        "to16": lambda lib, a: a.to(lib.float16),
        "to_other": lambda lib, a: a.to(lib.zeros(1, dtype=lib.float64)),
    }
    check(convs[conv], (3, 2), rtol=1e-3, atol=1e-3)


def test_to_same_dtype_returns_self_copy_true_copies_like_torch():
    def fn(lib, a):
        assert a.to(a.dtype) is a and a.float().dtype == lib.float32
        c = a.to(a.dtype, copy=True)
        assert c is not a
        return c

    check(fn, (2, 2))


def test_to_integer_dtype_cuts_gradient_like_torch():
    check(lambda lib, a: (a.to(lib.int64), a.long(), a.int(), a.bool()), (3, 3), low=-5, high=5)
