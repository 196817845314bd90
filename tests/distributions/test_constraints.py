"""Constraints: check(), repr, event_dim and is_discrete as torch's."""

from __future__ import annotations

import math

import numpy as np
import pytest
import rustgrad
import rustgrad.distributions as RD
import torch
import torch.distributions as TD

from ._util import compare

A = np.asarray
SCALARS = A([-1.0, 0.0, 0.5, 1.0, 2.0, 3.5, math.inf, -math.inf, math.nan])
VECTORS = A([[0.2, 0.3, 0.5], [0.0, 0.0, 1.0], [0.5, 0.5, 0.1], [-0.1, 0.6, 0.5], [1.0, 1.0, 0.0], [0.0, 2.0, 1.0]])
MATRICES = A([
    [[2.0, 0.0], [0.5, 1.0]],  # lower Cholesky
    [[2.0, 0.1], [0.5, 1.0]],  # not lower
    [[2.0, 0.5], [0.5, 1.0]],  # symmetric positive definite
    [[1.0, 2.0], [2.0, 1.0]],  # symmetric indefinite
    [[0.0, 0.0], [0.3, 1.0]],  # lower, zero diagonal
    [[1.0, 0.0], [0.0, 1.0]],  # identity: every one of them
    [[0.6, 0.0], [0.6, 0.8]],  # unit rows: a correlation Cholesky factor
    [[1.0, 1.0], [1.0, 1.0]],  # symmetric positive semidefinite (singular)
])

CONSTRAINTS = [
    ("real", SCALARS), ("positive", SCALARS), ("nonnegative", SCALARS), ("unit_interval", SCALARS),
    ("boolean", SCALARS), ("nonnegative_integer", SCALARS), ("positive_integer", SCALARS),
    ("integer_interval(0, 3)", SCALARS), ("interval(-1.0, 2.0)", SCALARS), ("half_open_interval(0.0, 1.0)", SCALARS),
    ("greater_than(0.5)", SCALARS), ("greater_than_eq(0.5)", SCALARS), ("less_than(1.0)", SCALARS),
    ("simplex", VECTORS), ("one_hot", VECTORS), ("multinomial(2)", VECTORS), ("real_vector", VECTORS),
    ("independent(C.positive, 1)", VECTORS), ("independent(C.unit_interval, 2)", MATRICES),
    ("lower_triangular", MATRICES), ("lower_cholesky", MATRICES), ("corr_cholesky", MATRICES),
    ("square", MATRICES), ("symmetric", MATRICES), ("positive_definite", MATRICES),
    ("positive_semidefinite", MATRICES), ("cat([C.positive, C.real], 0, [1, 2])", VECTORS.T),
    ("stack([C.positive, C.real, C.unit_interval], 1)", VECTORS),
]


@pytest.mark.parametrize("expr,values", CONSTRAINTS, ids=[c[0] for c in CONSTRAINTS])
def test_constraint_matches_torch(expr, values, device):
    outs = []
    for lib, D in ((torch, TD), (rustgrad, RD)):
        c = eval(f"C.{expr}", {"C": D.constraints})  # noqa: S307  (the expressions above)
        kw = {"device": device} if lib is rustgrad else {}
        v = lib.tensor(values, dtype=lib.float64, **kw)
        outs.append((repr(c), c.event_dim, c.is_discrete, c.check(v)))
    (tr, te, td, tc), (rr, re, rd, rc) = outs
    if not expr.startswith(("cat", "stack")):  # torch's repr hides their parts: Cat(), Stack()
        assert rr == tr
    assert (re, rd) == (te, td)
    compare(tc, rc, expr, np.float64, device)


def test_dependent_constraints_match_torch():
    for D in (TD, RD):
        C = D.constraints
        assert C.is_dependent(C.dependent) and not C.is_dependent(C.real)
        with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
            C.dependent.check(None)
        with pytest.raises(NotImplementedError, match="cannot be determined statically"):
            C.dependent.event_dim  # noqa: B018
        d = C.dependent(is_discrete=True, event_dim=1)
        assert (d.is_discrete, d.event_dim) == (True, 1)
        # on the class a dependent property is a dependent constraint; on an instance its value
        assert C.is_dependent(D.Uniform.support) and D.Uniform.support.event_dim == 0
        u = D.Uniform(0.0, 2.0)
        assert repr(u.support) == "Interval(lower_bound=0.0, upper_bound=2.0)"
        assert D.Categorical.support.is_discrete and repr(D.Categorical(torch.ones(3) if D is TD else
                                                                      rustgrad.ones(3)).support) == \
            "IntegerInterval(lower_bound=0, upper_bound=2)"


def test_independent_constraint_needs_enough_dims():
    for D in (TD, RD):
        with pytest.raises(ValueError, match="Expected value.dim"):
            D.constraints.independent(D.constraints.real, 2).check(
                (torch if D is TD else rustgrad).zeros(3))
