"""Parity of where, maximum and minimum with torch (broadcasting, scalars, ties)."""

from __future__ import annotations

import numpy as np
import pytest

from ..parity import check

WHERE_SHAPES = [
    ((3, 4), (3, 4), (3, 4)),
    ((3, 4), (4,), (3, 1)),
    ((3, 1), (1, 4), ()),
    ((), (), ()),
    ((2, 3), (0, 2, 3), (1,)),
]


@pytest.mark.parametrize("shapes", WHERE_SHAPES, ids=str)
def test_where_broadcast_tensors_match_torch(shapes, device):
    def fn(lib, c, a, b):
        return lib.where(c > 0, a, b)

    check(fn, *shapes, device=device)
    check(lambda lib, c, a, b: a.where(c > 0, b), *shapes, device=device)


@pytest.mark.parametrize("scalar", [0.0, 2, -1.5])
def test_where_python_scalar_operand_matches_torch(scalar, device):
    check(lambda lib, a: lib.where(a > 0, a, scalar), (3, 4), device=device)
    check(lambda lib, a: lib.where(a > 0, scalar, a), (3, 4), device=device)


def test_where_mixed_float_dtypes_promotes_like_torch(device):
    check(lambda lib, a, b: lib.where(a > 0, a, b.double()), (3,), (3,), dtypes=(np.float32,),
          device=device)


def test_where_condition_only_returns_index_tuple_like_torch(device):
    # torch's index tensors are views (unbind of nonzero's result), rustgrad's are not
    check(lambda lib, a: lib.where(a > 0), (3, 4), views=False, device=device)


@pytest.mark.parametrize("op", ["maximum", "minimum"])
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 2)),
                                    ((), (3,)), ((), ()), ((0, 2), (2,))], ids=str)
def test_maximum_minimum_broadcast_match_torch(op, shapes, device):
    check(lambda lib, a, b: getattr(lib, op)(a, b), *shapes, device=device)
    check(lambda lib, a, b: getattr(a, op)(b), *shapes, device=device)


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_maximum_minimum_ties_split_gradient_like_torch(op, device):
    a = np.array([1.0, 2.0, -3.0, 0.5])
    b = np.array([1.0, 0.0, -3.0, 4.0])
    check(lambda lib, x, y: getattr(lib, op)(x, y), a, b, device=device)


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_with_tensor_other_is_elementwise_like_torch(op, device):
    check(lambda lib, a, b: getattr(lib, op)(a, b), (3, 4), (4,), device=device)


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_maximum_minimum_nan_passes_gradient_to_both_like_torch(op, device):
    a = np.array([1.0, np.nan, np.nan, 3.0])
    b = np.array([np.nan, 2.0, np.nan, 1.0])
    check(lambda lib, x, y: getattr(lib, op)(x, y), a, b, device=device)
