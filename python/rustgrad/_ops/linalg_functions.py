"""The rest of torch.linalg: the functions of matrices built on the decompositions (cond,
tensorinv, tensorsolve, matrix_sqrth, polar) and its own names for ops torch has elsewhere
(vander, matmul, diagonal).

cond, tensorinv and tensorsolve are compositions of recorded ops, as torch's are, so their graphs
(and grad_fn names) are torch's. matrix_sqrth and polar record nodes of their own: the principal
square root X = V sqrt(L) V^T of a symmetric matrix from its eigendecomposition (negative
eigenvalues taken as 0), and the polar factors A = U H from the SVD A = W S V^T (U = W V^T,
H = V S V^T). Their backward formulas solve the Sylvester equations the factors' differentials
satisfy, in the eigenbasis (derived here and written in rustgrad ops, so double backward records
a graph of its own).

torch.linalg.eig and eigvals are not here: their results are complex tensors, which rustgrad
does not have.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Tuple

from .. import _dtype, return_types
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._util import const, quiet_fp
from .decompositions import (
    _SINGULAR_INV,
    INV,
    _check_float,
    _check_matrix,
    _check_square_float,
    _inv_array,
    _la,
    _multi,
    _raise_info,
    _type_name,
    linalg_eigh,
    linalg_inv_ex,
    linalg_matrix_norm,
    linalg_solve,
    linalg_svdvals,
)
from .joins import cat
from .linalg import matmul as _matmul
from .reduce import cumprod
from .views import diagonal as _diagonal
from .views import movedim


# ---- vander, matmul, diagonal ---------------------------------------------------------------------
@op(linalg="vander", grad_fn="CatBackward0")
def linalg_vander(x: Tensor, *, N: Optional[int] = None) -> Tensor:  # noqa: N803
    """The Vandermonde matrices of x's last dim: the powers x**0, x**1, ..., x**(N-1) of each
    entry along a new last dim (increasing, unlike torch.vander), batched.

    Args:
        x (Tensor): the entries (..., n), floating or integer (integers give int64).
        N (int, optional): keyword-only; the number of powers, N > 1. Default: n.

    Example::

        >>> rustgrad.linalg.vander(rustgrad.tensor([1., 2., 3.]))
        tensor([[1., 1., 1.],
                [1., 2., 4.],
                [1., 3., 9.]])
    """
    dt = x._data.dtype
    if not ((_dtype.is_floating_np(dt) and dt.itemsize >= 4) or dt.kind in "iu"):
        raise NotImplementedError("linalg.vander supports floating point, complex, and integer tensors, but got "
                                  f"{_type_name(x._data)}")
    x_ = x.unsqueeze(-1) if x._data.ndim == 0 else x
    n = int(x_.shape[-1]) if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    # the powers past the first as a running product, after a column of ones
    powers = cumprod(x_.unsqueeze(-1).expand(*x_.shape, n - 1), -1)
    return cat([powers.new_ones((*x_.shape, 1)), powers], -1)


@op(linalg="matmul", grad_fn=("DotBackward0", "MmBackward0", "MvBackward0", "UnsafeViewBackward0",
                              "SqueezeBackward4", "TransposeBackward0", "CloneBackward0"))
def linalg_matmul(input: Tensor, other: Tensor) -> Tensor:
    """The matrix product (torch.matmul: 1-D operands as vectors, batch dims broadcast).

    Args:
        input (Tensor): the left operand.
        other (Tensor): the right operand.

    Example::

        >>> rustgrad.linalg.matmul(rustgrad.tensor([[1., 2.]]), rustgrad.tensor([[3.], [4.]]))
        tensor([[11.]])
    """
    for i, (name, t) in enumerate((("input", input), ("other", other))):
        if not isinstance(t, Tensor):
            raise TypeError(f"linalg_matmul(): argument '{name}' (position {i + 1}) must be Tensor, not "
                            f"{type(t).__name__}")
    return _matmul(input, other)


@op(linalg="diagonal", grad_fn="DiagonalBackward0")
def linalg_diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:  # noqa: N803
    """A view of the diagonals of A's matrices (torch.diagonal with the last two dims by default).

    Args:
        A (Tensor): a tensor of at least 2 dims.
        offset (int, optional): keyword-only; the diagonal taken: 0 the main one, > 0 above
            it, < 0 below it. Default: 0.
        dim1 (int, optional): keyword-only; the rows' dim. Default: -2.
        dim2 (int, optional): keyword-only; the columns' dim. Default: -1.

    Example::

        >>> rustgrad.linalg.diagonal(rustgrad.arange(8.).reshape(2, 2, 2))
        tensor([[0., 3.],
                [4., 7.]])
    """
    return _diagonal(A, offset, dim1, dim2)


# ---- tensorinv, tensorsolve -----------------------------------------------------------------------
@op(linalg="tensorinv", grad_fn=("ReshapeAliasBackward0", "ViewBackward0", "LinalgInvExBackward0"),
    autocast=dict(cpu="fp32"))
def linalg_tensorinv(A: Tensor, ind: int = 2) -> Tensor:  # noqa: N803
    """The inverse of A for tensordot over its first ind dims: A's shape[:ind] and shape[ind:]
    taken as the rows and columns of a square matrix, inverted, and shaped shape[ind:] +
    shape[:ind].

    Args:
        A (Tensor): a tensor with prod(A.shape[:ind]) == prod(A.shape[ind:]).
        ind (int, optional): the number of leading dims that index the rows, > 0. Default: 2.

    A singular matrix raises rustgrad.linalg.LinAlgError, as torch.

    Example::

        >>> A = rustgrad.eye(4).reshape(4, 2, 2) * 2
        >>> rustgrad.linalg.tensorinv(A, ind=1).shape
        torch.Size([2, 2, 4])
    """
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    shape = tuple(A._data.shape)
    rows, cols = math.prod(shape[:ind]), math.prod(shape[ind:])
    if rows != cols:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    square = A.reshape(rows, cols)
    _check_square_float("linalg.inv", square)
    out, info = _inv_array(square)
    if info is not None:
        _raise_info("inv", info, False, _SINGULAR_INV.format)
    # LAPACK's inverse is column-major, as torch's: the result is a strided view of it
    res = const(square._backend.asfortranarray(out))
    inverse = _multi(INV, (res,), (square,), (res,))[0]
    return inverse.reshape(shape[ind:] + shape[:ind])


@op(linalg="tensorsolve", grad_fn=("ViewBackward0", "LinalgSolveExBackward0", "UnsafeViewBackward0"),
    autocast=dict(cpu="fp32"))
def linalg_tensorsolve(A: Tensor, B: Tensor, dims: Optional[Sequence[int]] = None) -> Tensor:  # noqa: N803
    """X with tensordot(A, X, X.ndim) = B: A's first B.ndim dims taken as the rows and the rest
    as the columns of a square matrix, solved for B, shaped as A's last dims.

    Args:
        A (Tensor): a tensor with prod(A.shape[B.ndim:]) == B.numel() (after moving dims).
        B (Tensor): the right-hand side, of A's dtype.
        dims (sequence of ints, optional): dims of A moved to its end first. Default: None.

    A singular matrix raises rustgrad.linalg.LinAlgError, as torch.

    Example::

        >>> A = rustgrad.eye(6).reshape(2, 3, 6) * 2
        >>> rustgrad.linalg.tensorsolve(A, rustgrad.ones(2, 3)).shape
        torch.Size([6])
    """
    if dims is not None:
        nd = A._data.ndim
        dims = list(dims)
        A = movedim(A, dims, list(range(nd - len(dims), nd)))
    shape = tuple(A._data.shape[B._data.ndim:])
    n = math.prod(shape)
    if n != B._data.size:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {n} != {B._data.size}")
    return linalg_solve(A.reshape(n, n), B.reshape(n)).reshape(shape)


# ---- cond ----------------------------------------------------------------------------------------
_COND_NUMBERS = (2, -2, 1, -1, math.inf, -math.inf)


def _ord_text(p: Any) -> str:
    """p as torch's Scalar prints it in its messages (3.0 as 3)."""
    return str(int(p)) if isinstance(p, float) and p.is_integer() else str(p)


def _cond_of_inverse(A: Tensor, p: Any) -> Tensor:
    """norm(A) norm(A^{-1}), the inverse of a singular matrix taken as inf, and 0 * inf (a zero
    matrix) as inf: torch's (and NumPy's) condition number in the norms other than 2 and nuc."""
    inverse, info = linalg_inv_ex(A)
    inverse.masked_fill_(info.unsqueeze(-1).unsqueeze(-1) > 0, math.inf)
    result = linalg_matrix_norm(A, p) * linalg_matrix_norm(inverse, p)
    return result.nan_to_num_(math.inf, math.inf, -math.inf)


@op(linalg="cond", grad_fn=("SqueezeBackward1", "NanToNumBackward0", "MulBackward0"), autocast=dict(cpu="fp32"))
def linalg_cond(A: Tensor, p: Any = None) -> Tensor:  # noqa: N803
    """The condition number of each matrix of A in the norm p: norm(A) * norm(A^{-1}), the
    ratio of the largest to the smallest singular value for p = None or 2.

    Args:
        A (Tensor): matrices (..., m, n); square unless p is None, 2 or -2.
        p (int, float, inf, -inf, 'fro' or 'nuc', optional): the norm: 2 (None), -2 (the
            smallest over the largest singular value), 'fro', 'nuc', inf, -inf, 1 or -1.
            Default: None.

    A singular matrix gives inf (0 with p=-2; NaN for a zero matrix with p None, ±2 or 'nuc');
    an empty one 0, as torch. With p 'fro', ±1 or ±inf the backward raises, as torch's (it
    writes in place the inverse its gradient needs).

    Example::

        >>> rustgrad.linalg.cond(rustgrad.tensor([[4., 0.], [0., 2.]]))
        tensor(2.)
    """
    d = A._data
    if isinstance(p, str):
        _check_matrix(f"linalg.cond(ord={p})", A)
        if p not in ("fro", "nuc"):
            raise ValueError(f"linalg.cond got an invalid norm type: {p}")
    else:
        if d.ndim < 2:
            raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
        if p is not None and p not in _COND_NUMBERS:
            raise ValueError(f"linalg.cond got an invalid norm type: {_ord_text(p)}")
    if d.size == 0:  # NumPy has no condition number of an empty matrix: torch gives 0 (filled in place)
        return const(A._backend.empty(d.shape[:-2], dtype=d.dtype)).zero_()
    if p is not None and p not in (2, -2) and not isinstance(p, str):
        # torch prints the order as C++'s to_string: 1 as 1, 1.0 as 1.000000
        _check_matrix(f"linalg.cond(ord={f'{p:f}' if isinstance(p, float) else p})", A)
    with quiet_fp(A._backend):  # a singular matrix's inf and NaN come silently, as torch's
        if p is None or p in (2, -2):
            s = linalg_svdvals(A)
            s_max, s_min = s.narrow(-1, 0, 1), s.narrow(-1, -1, 1)
            return (s_min / s_max if p == -2 else s_max / s_min).squeeze(-1)
        if p == "nuc":
            s = linalg_svdvals(A)
            return s.sum(-1) * s.reciprocal().sum(-1)
        return _cond_of_inverse(A, p)


# ---- matrix_sqrth --------------------------------------------------------------------------------
def _matrix_sqrth_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # X X = A for symmetric X: X dX + dX X = dA, solved in A's eigenbasis (V^T dX V)_ij =
    # (V^T dA V)_ij / (s_i + s_j); its adjoint, for the symmetric part of the gradient
    lam, V = linalg_eigh(saved.self)
    s = lam.clamp_min(0).sqrt()
    inner = V.mT @ ((g + g.mT) * 0.5) @ V
    return V @ (inner / (s.unsqueeze(-1) + s.unsqueeze(-2))) @ V.mT


MATRIX_SQRTH = node("LinalgMatrixSqrthBackward0", _matrix_sqrth_bw, saved=("self",))


@op(linalg="matrix_sqrth", grad_fn="LinalgMatrixSqrthBackward0")
def linalg_matrix_sqrth(A: Tensor) -> Tensor:  # noqa: N803
    """The principal square root of each symmetric positive-(semi)definite matrix of A: the
    symmetric X with X X = A, from A's eigendecomposition (negative eigenvalues taken as 0).

    Args:
        A (Tensor): symmetric matrices (..., n, n), float32 or float64; only the lower triangle
            is read.

    The gradient is that of the symmetric part (as linalg.eigh's).

    Example::

        >>> rustgrad.linalg.matrix_sqrth(rustgrad.tensor([[4., 0.], [0., 9.]]))
        tensor([[2., 0.],
                [0., 3.]])
    """
    _check_square_float("linalg.matrix_sqrth", A)
    xp, d = A._backend, A._data
    with quiet_fp(xp):
        lam, V = _la(A).eigh(d, UPLO="L")
        s = xp.sqrt(xp.maximum(lam, 0)).astype(d.dtype)
        out = (V * s[..., None, :]) @ V.swapaxes(-1, -2)
    return MATRIX_SQRTH.record(xp.ascontiguousarray(out.astype(d.dtype, copy=False)), (A,), self=A)


# ---- polar ---------------------------------------------------------------------------------------
def _polar_bw(grads: Any, saved: Any, ctx: Any) -> Any:
    gU, gH = grads
    U, H = saved.U, saved.H
    # A = U H, U^T U = I, H = V diag(s) V^T. With O = U^T dU (skew): O H + H O = U^T dA - dA^T U,
    # dH = U^T dA - O H, and dU = U O + (I - U U^T) dA H^{-1}. The adjoint:
    # gA = U gH + U (N - N^T) + (I - U U^T) gU H^{-1}, N = V ((V^T M V) / (s_i + s_j)) V^T,
    # M = U^T gU - gH H
    s, V = linalg_eigh(H)
    M = None
    gA = None
    if gU is not None:
        M = U.mT @ gU
    if gH is not None:
        M = -(gH @ H) if M is None else M - gH @ H
        gA = U @ gH
    K = V.mT @ (M - M.mT) @ V  # type: ignore[operator]
    term = U @ (V @ (K / (s.unsqueeze(-1) + s.unsqueeze(-2))) @ V.mT)
    gA = term if gA is None else gA + term
    m, n = U._data.shape[-2:]
    if gU is not None and m > n:
        perp = gU - U @ (U.mT @ gU)
        gA = gA + ((perp @ V) / s.unsqueeze(-2)) @ V.mT
    return gA


POLAR = node("LinalgPolarBackward0", _polar_bw, saved=("A", "U", "H"))


@op(linalg="polar", grad_fn="LinalgPolarBackward0")
def linalg_polar(A: Tensor) -> Any:  # noqa: N803
    """(U, H) with A = U H: the polar decomposition of each matrix of A (m >= n), U with
    orthonormal columns (the nearest such matrix to A) and H symmetric positive-semidefinite,
    from A's SVD.

    Args:
        A (Tensor): matrices (..., m, n), m >= n, float32 or float64.

    Returns torch.return_types.linalg_polar. The gradient is defined where A has full column
    rank.

    Example::

        >>> U, H = rustgrad.linalg.polar(rustgrad.tensor([[0., 2.], [3., 0.]]))
        >>> U
        tensor([[0., 1.],
                [1., 0.]])
        >>> H
        tensor([[3., 0.],
                [0., 2.]])
    """
    _check_matrix("linalg.polar", A, square=False)
    d = A._data
    m, n = d.shape[-2:]
    if m < n:
        raise RuntimeError(f"linalg.polar: input must have at least as many rows as columns, but got {m} by {n} "
                           "matrices")
    _check_float("linalg.polar", A, "linalg_svd")
    u, h = _polar_arrays(A)
    U, H = const(u), const(h)
    U, H = _multi(POLAR, (U, H), (A,), (A, U, H))
    return return_types.linalg_polar(U, H)


def _polar_arrays(A: Tensor) -> Tuple[Any, Any]:
    xp, d = A._backend, A._data
    m, n = d.shape[-2:]
    batch = tuple(d.shape[:-2])
    if n == 0:
        return xp.zeros(batch + (m, 0), dtype=d.dtype), xp.zeros(batch + (0, 0), dtype=d.dtype)
    with quiet_fp(xp):
        W, S, Vh = _la(A).svd(d, full_matrices=False)
        u = W @ Vh
        h = (Vh.swapaxes(-1, -2) * S[..., None, :]) @ Vh
    return xp.ascontiguousarray(u.astype(d.dtype, copy=False)), xp.ascontiguousarray(h.astype(d.dtype, copy=False))
