"""Parity of sum, mean, max and min with torch: whole tensor, dim, tuple dim, keepdim,
negative dim, ties."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import check

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
def test_sum_mean_dims_match_torch(op, shape, kw):
    check(lambda lib, a: getattr(a, op)(**kw), shape)
    check(lambda lib, a: getattr(lib, op)(a, **kw), shape)


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("shape", [(3, 4), (), (1,), (2, 3, 4)], ids=str)
def test_max_min_whole_tensor_matches_torch(op, shape):
    check(lambda lib, a: getattr(a, op)(), shape)
    check(lambda lib, a: getattr(lib, op)(a), shape)


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_whole_tensor_ties_spread_gradient_evenly(op):
    ties = np.array([[1.0, 3.0, 3.0], [-1.0, 3.0, -1.0], [-1.0, 0.0, 2.0]])
    check(lambda lib, a: getattr(a, op)(), ties)


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
def test_max_min_dim_values_indices_match_torch(op, shape, dim, keepdim):
    def fn(lib, a):
        res = getattr(a, op)(dim, keepdim=keepdim)
        assert res.values is res[0] and res.indices is res[1]
        return res.values, res.indices

    check(fn, shape)
    check(lambda lib, a: tuple(getattr(lib, op)(a, dim=dim, keepdim=keepdim)), shape)


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_dim_ties_match_torch_index_choice(op):
    # torch (CPU) returns the first extreme index; the gradient goes only there.
    ties = np.array([[2.0, 2.0, 1.0], [0.0, -1.0, -1.0], [5.0, 5.0, 5.0]])
    check(lambda lib, a: tuple(getattr(a, op)(dim=1)), ties)
    check(lambda lib, a: tuple(getattr(a, op)(dim=0, keepdim=True)), ties)


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_with_nan_returns_nan_and_grads_nan_positions_like_torch(op):
    x = np.array([[1.0, np.nan, 2.0], [np.nan, 0.0, 5.0]])
    check(lambda lib, a: getattr(a, op)(), x)
    check(lambda lib, a: tuple(getattr(a, op)(1)), x)
