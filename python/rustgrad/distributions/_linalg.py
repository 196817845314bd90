"""The dense linear algebra the Gaussian distributions need: the Cholesky factorization is
rustgrad.linalg's (LAPACK's, with torch's LinAlgError); triangular solves, which rustgrad.linalg
does not offer yet, are written in rustgrad's differentiable ops, one row per step, so autograd
differentiates them like any composite. That costs O(n) recorded steps for n x n matrices, which
suits the event sizes distributions meet (tens, not thousands); rustgrad.linalg.solve_triangular,
when it comes, is the one function to swap in."""

from __future__ import annotations

from typing import Any, List

from .._ops.decompositions import linalg_cholesky, linalg_cholesky_ex, linalg_eigvalsh
from . import _rg as rg
from ._rg import Tensor


def cholesky_ok(a: Tensor) -> Tensor:
    """A bool tensor of a's batch shape: whether each matrix has a Cholesky factorization."""
    with rg.no_grad():
        return linalg_cholesky_ex(a).info == 0


def cholesky(a: Tensor) -> Tensor:
    """The lower Cholesky factor L of symmetric positive-definite `a` (L @ L.mT == a); torch's
    LinAlgError (a RuntimeError) for a matrix that is not positive definite."""
    return linalg_cholesky(a)


def eigvalsh(a: Tensor) -> Tensor:
    """The eigenvalues of symmetric `a`, ascending."""
    return linalg_eigvalsh(a)


def solve_triangular(a: Tensor, b: Tensor, *, upper: bool) -> Tensor:
    """X with a @ X == b for triangular `a` (..., n, n) and `b` (..., n, k), batch dims
    broadcast: substitution one row at a time, subtracting each solved row from the rest."""
    n = a.shape[-1]
    order = range(n - 1, -1, -1) if upper else range(n)
    rest = b
    solved: List[Any] = [None] * n
    for i in order:
        x = rest[..., i, :] / a[..., i, i].unsqueeze(-1)
        solved[i] = x
        rest = rest - a[..., :, i].unsqueeze(-1) * x.unsqueeze(-2)
    return rg.stack(solved, -2)


def solve_lower_vec(l: Tensor, v: Tensor) -> Tensor:
    """y with l @ y == v for lower-triangular `l` (..., n, n) and vectors `v` (..., n), batch
    dims broadcast (v may carry more of them than l, as samples do)."""
    n = l.shape[-1]
    rest = v
    solved = []
    for i in range(n):
        y = rest[..., i] / l[..., i, i]
        solved.append(y)
        if i + 1 < n:
            rest = rest - l[..., :, i] * y.unsqueeze(-1)
    return rg.stack(solved, -1)


def tril_inverse(l: Tensor) -> Tensor:
    """The inverse of lower-triangular `l`."""
    eye = rg.eye(l.shape[-1], dtype=l.dtype, device=l.device)
    return solve_triangular(l, eye.expand(l.shape), upper=False)


def cholesky_inverse(l: Tensor) -> Tensor:
    """The inverse of l @ l.mT from its lower Cholesky factor l."""
    inv = tril_inverse(l)
    return inv.mT @ inv


def precision_to_scale_tril(p: Tensor) -> Tensor:
    """The lower Cholesky factor of inverse(p) for symmetric positive-definite `p`, without
    inverting p: with J the order-reversing permutation, cholesky(J p J) = Lf gives p = U U.mT
    for the upper-triangular U = J Lf J, so inverse(p) = U^-T U^-1 and U^-T is the factor."""
    lf = cholesky(p.flip(-2, -1))
    u = lf.flip(-2, -1)
    eye = rg.eye(p.shape[-1], dtype=p.dtype, device=p.device)
    # U^-T = solve(U^T, I), and U^T is lower triangular
    return solve_triangular(u.mT, eye.expand(p.shape), upper=False)
