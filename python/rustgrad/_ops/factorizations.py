"""The triangular, LU, LDL and Householder factorizations and their solvers: torch.linalg's
solve_triangular, lu_factor(_ex), lu, lu_solve, ldl_factor(_ex), ldl_solve and
householder_product, and torch's older functions over the same kernels (triangular_solve,
cholesky_solve, cholesky_inverse, lu, lu_solve, lu_unpack, geqrf, orgqr, ormqr); the functions
torch removed and still exposes to raise (eig, symeig, lstsq, solve, matrix_rank); and the
randomized low-rank ones, svd_lowrank and pca_lowrank, with lobpcg.

The kernels are written here over the input's array namespace (NumPy on the CPU, CuPy on CUDA),
batched over leading dims: triangular substitution (blocked, so the work is matrix products),
LU with partial pivoting as LAPACK's getrf (the first largest magnitude of the column is the
pivot; a zero pivot is reported in `info` and the factorization goes on), the symmetric
indefinite LDL^T factorization as LAPACK's sytrf (Bunch-Kaufman's 1x1 and 2x2 pivots, packed and
numbered as LAPACK's), Householder QR as LAPACK's geqrf (dlarfg's reflectors: beta = -sign(alpha)
* norm, tau = (beta - alpha) / beta) and the application of the reflectors (orgqr, ormqr). The
backward formulas are derived for these factorizations and written in rustgrad ops, so double
backward records a graph of its own (LDL has none, as torch's)."""

from __future__ import annotations

import math
import warnings
from typing import Any, List, Optional, Tuple

from .. import _core, _creation, _dtype, return_types
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._util import NOT_IMPLEMENTED, check_broadcastable, const, quiet_fp, same_device
from .compare import where
from .decompositions import (
    _first_failure,
    _raise_info,
    _removed,
    _type_name,
    linalg_eigh,
    linalg_qr,
    linalg_svd,
)
from .joins import cat

# ---- shared checks -------------------------------------------------------------------------------
_WARNED: List[str] = []


def _warn_once(key: str, message: str) -> None:
    """torch's TORCH_WARN_ONCE: a deprecation said once per process."""
    if key not in _WARNED:
        _WARNED.append(key)
        warnings.warn(message, UserWarning, stacklevel=3)


def _no_kernel(kernel: str, t: Tensor) -> NotImplementedError:
    return NotImplementedError(
        f"\"{kernel}_{t._backend.DEVICE_TYPE}\" not implemented for '{_type_name(t._data)}'")


def _float_kernel(kernel: str, t: Tensor) -> None:
    """torch's dispatch refusal of a dtype its LAPACK kernel has no loop for (all but float32
    and float64 here: rustgrad has no complex tensors)."""
    d = t._data
    if not (_dtype.is_floating_np(d.dtype) and d.dtype.itemsize >= 4):
        raise _no_kernel(kernel, t)


def _check_square(t: Tensor, prefix: str = "") -> None:
    """torch's squareCheckInputs (its messages carry the function's name as prefix where torch's do)."""
    d = t._data
    if d.ndim < 2:
        raise RuntimeError(f"{prefix}The input tensor A must have at least 2 dimensions.")
    if d.shape[-1] != d.shape[-2]:
        raise RuntimeError(f"{prefix}A must be batches of square matrices, but they are {d.shape[-2]} by "
                           f"{d.shape[-1]} matrices")


def _batch(xp: Any, a: Any, b: Any) -> Tuple[int, ...]:
    """The broadcast batch shape of two stacks of matrices (torch's message when they do not)."""
    check_broadcastable(tuple(b.shape[:-2]), tuple(a.shape[:-2]))
    return tuple(xp.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2])))


def _eye_const(xp: Any, m: int, n: int, dt: Any) -> Tensor:
    return const(xp.eye(m, n, dtype=dt))


def _zeros_const(xp: Any, shape: Tuple[int, ...], dt: Any) -> Tensor:
    return const(xp.zeros(shape, dtype=dt))


# ---- triangular substitution ---------------------------------------------------------------------
_BLOCK = 16


def _trsm_arrays(xp: Any, t: Any, b: Any, upper: bool, unit: bool) -> Any:
    """x with T x = b, T the upper (lower) triangle of t, its diagonal taken as ones if unit;
    t (..., n, n) and b (..., n, k) of one batch shape. Only T's triangle is read. A zero on the
    diagonal gives inf and NaN, as LAPACK's trsm."""
    n = t.shape[-1]
    if n == 0:
        return b.copy()
    if n <= _BLOCK:
        x = b.copy()
        order = range(n - 1, -1, -1) if upper else range(n)
        with quiet_fp(xp):
            for i in order:
                lo, hi = (i + 1, n) if upper else (0, i)
                row = x[..., i:i + 1, :]
                if hi > lo:
                    row = row - xp.matmul(t[..., i:i + 1, lo:hi], x[..., lo:hi, :])
                if not unit:
                    row = row / t[..., i:i + 1, i:i + 1]
                x[..., i:i + 1, :] = row
        return x
    h = n // 2
    with quiet_fp(xp):
        if upper:
            x2 = _trsm_arrays(xp, t[..., h:, h:], b[..., h:, :], upper, unit)
            x1 = _trsm_arrays(xp, t[..., :h, :h], b[..., :h, :] - xp.matmul(t[..., :h, h:], x2), upper, unit)
        else:
            x1 = _trsm_arrays(xp, t[..., :h, :h], b[..., :h, :], upper, unit)
            x2 = _trsm_arrays(xp, t[..., h:, h:], b[..., h:, :] - xp.matmul(t[..., h:, :h], x1), upper, unit)
    return xp.concatenate([x1, x2], axis=-2)


def _solve_tri(xp: Any, a: Any, b: Any, upper: bool, transpose: bool, unit: bool) -> Any:
    """x with op(T) x = b (op: transpose or not), broadcasting the batch dims of a and b."""
    batch = tuple(xp.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2])))
    t = xp.broadcast_to(a, batch + tuple(a.shape[-2:]))
    bb = xp.ascontiguousarray(xp.broadcast_to(b, batch + tuple(b.shape[-2:])))
    if transpose:
        t, upper = t.swapaxes(-1, -2), not upper
    return xp.ascontiguousarray(_trsm_arrays(xp, t, bb, upper, unit))


# ---- triangular_solve --------------------------------------------------------------------------
def _triangular_solve_bw(grads: Any, saved: Any, ctx: Any) -> Any:
    gX, gM = grads
    upper, transpose, unit = ctx
    A, X = saved.A, saved.solution
    gb = gA = None
    if gX is None:  # torch materializes the solution's gradient: b's is zeros
        gb = const(X._backend.zeros(X._data.shape, dtype=X._data.dtype))
    else:
        gb = _trsm(gX, A, upper, not transpose, unit)
        gA = -(X @ gb.mT) if transpose else -(gb @ X.mT)
        gA = gA.triu(int(unit)) if upper else gA.tril(-int(unit))
    if gM is not None:
        gA = gM if gA is None else gA + gM
    return gb, gA


TRIANGULAR_SOLVE = node("TriangularSolveBackward0", _triangular_solve_bw, saved=("self", "A", "solution"),
                        getters={"upper": lambda saved, ctx: ctx[0], "transpose": lambda saved, ctx: ctx[1],
                                 "unitriangular": lambda saved, ctx: ctx[2]})


def _trsm(b: Tensor, A: Tensor, upper: bool, transpose: bool = False, unit: bool = False) -> Tensor:
    """The solution of triangular_solve (recorded with its node): the differentiable solve the
    backward formulas here are written with."""
    return _triangular_solve(b, A, upper, transpose, unit)[0]


def _triangular_solve(b: Tensor, A: Tensor, upper: bool, transpose: bool, unit: bool) -> Tuple[Tensor, Tensor]:
    xp = b._backend
    x = _solve_tri(xp, A._data, b._data, upper, transpose, unit)
    batch = tuple(x.shape[:-2])
    m = xp.ascontiguousarray(xp.broadcast_to(A._data, batch + tuple(A._data.shape[-2:])))
    X, M = const(x), const(m)
    return _core_multi(TRIANGULAR_SOLVE, (X, M), (b, A), (upper, transpose, unit), self=b, A=A, solution=X)


def _core_multi(spec: Any, outputs: Tuple[Tensor, ...], inputs: Tuple[Tensor, ...], ctx: Any,
                **saved: Any) -> Any:
    """One node for several outputs (each output its own slot), saving outputs as outputs."""
    return spec.record_multi(outputs, inputs, ctx, **saved)


def _check_solver(fname: str, b: Tensor, A: Tensor, bname: str = "b") -> None:
    """The checks triangular_solve and cholesky_solve share after their rank checks: one dtype,
    square A, sizes that agree, batch dims that broadcast."""
    bd, ad = b._data, A._data
    same_device(bd, ad)
    if bd.dtype != ad.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {_type_name(bd)} "
                           f"and A of type {_type_name(ad)} instead.")
    _check_square(A)
    if ad.shape[-1] != bd.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for {fname}: each A matrix is {ad.shape[-1]} by "
                           f"{ad.shape[-1]} but each {bname} matrix is {bd.shape[-2]} by {bd.shape[-1]}")
    check_broadcastable(tuple(bd.shape[:-2]), tuple(ad.shape[:-2]))


@op(method="triangular_solve", function="triangular_solve", grad_fn="TriangularSolveBackward0",
    autocast=dict(cpu="fp32"))
def triangular_solve(input: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,  # noqa: N803
                     unitriangular: bool = False) -> Any:
    """(solution, cloned_coefficient): X with op(A) X = input for triangular A (deprecated in
    torch for linalg.solve_triangular), batched and broadcast.

    Args:
        input (Tensor): the right-hand sides (..., n, k).
        A (Tensor): the triangular matrices (..., n, n); only the triangle named by upper is read.
        upper (bool, optional): A is upper triangular. Default: True.
        transpose (bool, optional): solve A^T X = input. Default: False.
        unitriangular (bool, optional): A's diagonal is taken as ones. Default: False.

    Returns torch.return_types.triangular_solve; cloned_coefficient is a copy of A (broadcast).

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     rustgrad.triangular_solve(rustgrad.tensor([[2.], [4.]]), rustgrad.tensor([[1., 1.], [0., 2.]])).solution
        tensor([[0.],
                [2.]])
    """
    _warn_once("triangular_solve", (
        "torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangularand will be removed "
        "in a future PyTorch release.\ntorch.linalg.solve_triangular has its arguments reversed and does not "
        "return a copy of one of the inputs.\nX = torch.triangular_solve(B, A).solution\nshould be replaced "
        "with\nX = torch.linalg.solve_triangular(A, B)."))
    for name, t in (("b", input), ("A", A)):
        if t._data.ndim < 2:
            raise RuntimeError(f"torch.triangular_solve: Expected {name} to have at least 2 dimensions, but it "
                               f"has {t._data.ndim} dimensions instead")
    _check_solver("triangular_solve", input, A)
    _float_kernel("triangular_solve", A)
    return return_types.triangular_solve(*_triangular_solve(input, A, upper, transpose, unitriangular))


# ---- linalg.solve_triangular -----------------------------------------------------------------------
def _solve_triangular_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    upper, left, unit = ctx
    A, X = saved.self, saved.result
    # X = A^{-1} B (B A^{-1} unless left): B's gradient solves with A^T; A's, -gB X^T (-X^T gB),
    # is kept to the triangle A is read from (its strict part when the diagonal is taken as ones)
    gB = _solve_triangular(A.mT, g, not upper, left, unit)
    gA = -(gB @ X.mT) if left else -(X.mT @ gB)
    return (gA.triu(int(unit)) if upper else gA.tril(-int(unit))), gB


SOLVE_TRIANGULAR = node("LinalgSolveTriangularBackward0", _solve_triangular_bw, saved=("self",), result=True,
                        getters={"upper": lambda saved, ctx: ctx[0], "left": lambda saved, ctx: ctx[1],
                                 "unitriangular": lambda saved, ctx: ctx[2]})


def _solve_triangular(A: Tensor, B: Tensor, upper: bool, left: bool, unit: bool) -> Tensor:
    """X with A X = B (X A = B unless left) for triangular A, recorded with its node; B is taken
    in A's dtype, the batch dims broadcast."""
    xp = A._backend
    a, b = A._data, B._data
    if b.dtype != a.dtype:
        b = b.astype(a.dtype)
    if left:
        x = _solve_tri(xp, a, b, upper, False, unit)
    else:  # X A = B is A^T X^T = B^T
        x = _solve_tri(xp, a, b.swapaxes(-1, -2), upper, True, unit).swapaxes(-1, -2)
    return SOLVE_TRIANGULAR.record(xp.ascontiguousarray(x), (A, B), (upper, left, unit), self=A)


@op(linalg="solve_triangular", grad_fn="LinalgSolveTriangularBackward0")
def linalg_solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,  # noqa: N803
                            unitriangular: bool = False) -> Tensor:
    """X with A X = B (X A = B with left=False) for triangular A, batched and broadcast.

    Args:
        A (Tensor): triangular matrices (..., n, n); only the triangle named by upper is read.
        B (Tensor): the right-hand sides (..., n, k), or (..., k, n) with left=False; taken in
            A's dtype (the result's).
        upper (bool): keyword-only, required; A is upper (else lower) triangular.
        left (bool, optional): keyword-only; solve A X = B (True) or X A = B. Default: True.
        unitriangular (bool, optional): keyword-only; A's diagonal is taken as ones. Default:
            False.

    A zero on the diagonal gives inf and NaN, as LAPACK's trsm (no error).

    Example::

        >>> A = rustgrad.tensor([[2., 0.], [1., 1.]])
        >>> rustgrad.linalg.solve_triangular(A, rustgrad.tensor([[2.], [3.]]), upper=False)
        tensor([[1.],
                [2.]])
    """
    fname = "linalg.solve_triangular"
    ad, bd = A._data, B._data
    for name, d in (("A", ad), ("B", bd)):
        if d.ndim < 2:
            raise RuntimeError(f"{fname}: The input tensor {name} must have at least 2 dimensions.")
    _check_square(A, f"{fname}: ")
    n = ad.shape[-1]
    if (bd.shape[-2] if left else bd.shape[-1]) != n:
        raise RuntimeError(f"{fname}: Incompatible shapes of A and B for the equation {'AX = B' if left else 'XA = B'} "
                           f"({n}x{n} and {bd.shape[-2]}x{bd.shape[-1]})")
    check_broadcastable(tuple(bd.shape[:-2]), tuple(ad.shape[:-2]))
    same_device(ad, bd)
    _float_kernel("triangular_solve", A)
    return _solve_triangular(A, B, upper, left, unitriangular)


# ---- cholesky_solve, cholesky_inverse ------------------------------------------------------------
def _cholesky_solve_bw(g: Tensor, saved: Any, upper: bool) -> Any:
    L, X = saved.input2, saved.result
    gB = _cholesky_solve(g, L, upper)
    common = gB @ X.mT
    common = common + common.mT
    return gB, (-(L @ common) if upper else -(common @ L))


CHOLESKY_SOLVE = node("CholeskySolveBackward0", _cholesky_solve_bw, saved=("self", "input2"), result=True,
                      getters={"upper": lambda saved, ctx: ctx})


def _cholesky_solve(B: Tensor, L: Tensor, upper: bool) -> Tensor:
    xp = B._backend
    # A = L L^T (U^T U): solve with the factor, then with its transpose
    y = _solve_tri(xp, L._data, B._data, upper, upper, False)
    x = _solve_tri(xp, L._data, y, upper, not upper, False)
    return CHOLESKY_SOLVE.record(x, (B, L), upper, self=B, input2=L)


@op(method="cholesky_solve", function="cholesky_solve", grad_fn="CholeskySolveBackward0", autocast=dict(cpu="fp32"))
def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False) -> Tensor:
    """X with A X = input, A = L L^T given by its Cholesky factor input2 (U^T U with upper=True),
    batched and broadcast.

    Args:
        input (Tensor): the right-hand sides (..., n, k).
        input2 (Tensor): the Cholesky factors (..., n, n); only their triangle is read.
        upper (bool, optional): input2 is upper triangular. Default: False.

    Example::

        >>> L = rustgrad.tensor([[2., 0.], [1., 1.]])
        >>> rustgrad.cholesky_solve(L @ L.T @ rustgrad.tensor([[1.], [2.]]), L)
        tensor([[1.],
                [2.]])
    """
    for name, t in (("b", input), ("u", input2)):
        if t._data.ndim < 2:
            raise RuntimeError(f"{name} should have at least 2 dimensions, but has {t._data.ndim} dimensions "
                               "instead")
    _check_solver("cholesky_solve", input, input2)
    _float_kernel("cholesky_solve", input2)
    return _cholesky_solve(input, input2, upper)


def _cholesky_inverse_bw(g: Tensor, saved: Any, upper: bool) -> Any:
    L, inv = saved.self, saved.result
    common = inv @ ((g + g.mT) @ inv)
    return -(L @ common) if upper else -(common @ L)


CHOLESKY_INVERSE = node("CholeskyInverseBackward0", _cholesky_inverse_bw, saved=("self",), result=True,
                        getters={"upper": lambda saved, ctx: ctx})

_SINGULAR_INV = ("The diagonal element {} is zero, the inversion could not be completed because the input "
                 "matrix is singular.")


@op(method="cholesky_inverse", function="cholesky_inverse", grad_fn="CholeskyInverseBackward0",
    autocast=dict(cpu="fp32"))
def cholesky_inverse(input: Tensor, upper: bool = False) -> Tensor:
    """The inverse of A = L L^T (U^T U with upper=True) from its Cholesky factor, batched.

    Args:
        input (Tensor): the Cholesky factors (..., n, n); only their triangle is read.
        upper (bool, optional): input is upper triangular. Default: False.

    A zero on the factor's diagonal raises rustgrad.linalg.LinAlgError, as torch.

    Example::

        >>> rustgrad.cholesky_inverse(rustgrad.tensor([[2., 0.], [0., 1.]]))
        tensor([[0.2500, 0.0000],
                [0.0000, 1.0000]])
    """
    _check_square(input, "cholesky_inverse: ")
    _float_kernel("cholesky_inverse_out", input)
    xp, d = input._backend, input._data
    n = d.shape[-1]
    diag = xp.diagonal(d, 0, -2, -1)
    zero = diag == 0
    if n and bool(zero.any()):
        info = xp.where(zero.any(-1), xp.argmax(zero, -1) + 1, 0)
        _raise_info("cholesky_inverse", info, d.ndim > 2, _SINGULAR_INV.format)
    eye = xp.broadcast_to(xp.eye(n, dtype=d.dtype), d.shape)
    # the factor's inverse F (L^{-1}, or U^{-1}); A^{-1} = F^T F (F F^T for U)
    f = _solve_tri(xp, d, eye, upper, False, False)
    with quiet_fp(xp):
        out = f @ f.swapaxes(-1, -2) if upper else f.swapaxes(-1, -2) @ f
    return CHOLESKY_INVERSE.record(xp.ascontiguousarray(out), (input,), upper, self=input)


# ---- LU --------------------------------------------------------------------------------------------
def _getrf_arrays(xp: Any, a: Any, pivot: bool) -> Tuple[Any, Any, Any]:
    """(LU, pivots, info) of LAPACK's getrf for each matrix of `a` (..., m, n): L's strictly
    lower part and U packed into one array, the 1-based int32 row swaps, and info (the 1-based
    step of the first zero pivot, 0 when there is none)."""
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = tuple(a.shape[:-2])
    u = xp.ascontiguousarray(a.reshape((math.prod(batch), m, n))).copy()
    nb = u.shape[0]
    piv = xp.zeros((nb, k), dtype=xp.int32)
    info = xp.zeros(nb, dtype=xp.int32)
    rows = xp.arange(nb)
    with quiet_fp(xp):
        for j in range(k):
            if pivot:
                p = j + xp.argmax(xp.abs(u[:, j:, j]), axis=1)
                piv[:, j] = (p + 1).astype(xp.int32)
                top, low = u[rows, j, :].copy(), u[rows, p, :].copy()
                u[rows, p, :] = top
                u[rows, j, :] = low
            else:
                piv[:, j] = j + 1
            pv = u[:, j, j]
            zero = pv == 0
            info = xp.where((info == 0) & zero, j + 1, info).astype(xp.int32)
            if j + 1 < m:
                col = u[:, j + 1:, j]
                u[:, j + 1:, j] = xp.where(zero[:, None], col, col / xp.where(zero, 1, pv)[:, None])
                if j + 1 < n:
                    u[:, j + 1:, j + 1:] -= u[:, j + 1:, j:j + 1] * u[:, j:j + 1, j + 1:]
    return (u.reshape(batch + (m, n)), piv.reshape(batch + (k,)), info.reshape(batch))


def _permutation(xp: Any, piv: Any, m: int) -> Any:
    """perm (..., m) with A[perm] = L U: the row swaps of `piv` applied in order to 0..m-1."""
    batch = tuple(piv.shape[:-1])
    k = piv.shape[-1]
    p = piv.reshape((math.prod(batch), k)).astype(xp.int64) - 1
    nb = p.shape[0]
    perm = xp.ascontiguousarray(xp.broadcast_to(xp.arange(m), (nb, m))).copy()
    rows = xp.arange(nb)
    for j in range(k):
        a, b = perm[:, j].copy(), perm[rows, p[:, j]].copy()
        perm[rows, p[:, j]] = a
        perm[:, j] = b
    return perm.reshape(batch + (m,))


def _p_matrix(xp: Any, perm: Any, dt: Any) -> Any:
    """The permutation matrix P (..., m, m) with P[perm[i], i] = 1 (A = P L U)."""
    m = perm.shape[-1]
    return (perm[..., :, None] == xp.arange(m)[None, :]).swapaxes(-1, -2).astype(dt)


def _unpack_LU(LU: Tensor) -> Tuple[Tensor, Tensor]:  # noqa: N802
    """L (unit lower, m x k) and U (upper, k x n) of a packed LU, differentiable in LU."""
    m, n = LU._data.shape[-2:]
    k = min(m, n)
    L = LU[..., :, :k].tril(-1) + _eye_const(LU._backend, m, k, LU._data.dtype)
    U = LU[..., :k, :].triu()
    return L, U


def _p_const(LU: Tensor, pivots: Tensor) -> Tensor:
    xp = LU._backend
    return const(_p_matrix(xp, _permutation(xp, pivots._data, LU._data.shape[-2]), LU._data.dtype))


def _lu_square_bw(L: Tensor, U: Tensor, gL: Optional[Tensor], gU: Optional[Tensor]) -> Tensor:
    """The gradient of A = L U (square, unpivoted) from those of L (strictly lower part) and U
    (upper part): L^{-T} (tril(L^T gL, -1) + triu(gU U^T)) U^{-T}."""
    K = None
    if gL is not None:
        K = (L.mT @ gL).tril(-1)
    if gU is not None:
        K2 = (gU @ U.mT).triu()
        K = K2 if K is None else K + K2
    Y = _solve_triangular(L.mT, K, True, True, True)  # type: ignore[arg-type]
    return _solve_triangular(U.mT, Y, False, False, False)


def _lu_grad(L: Tensor, U: Tensor, gL: Tensor, gU: Tensor) -> Tensor:
    """The gradient of P^T A = L U (L m x k unit lower, U k x n upper) from those of L's strictly
    lower part and U's upper part (gL, gU given as those parts)."""
    m, k = L._data.shape[-2:]
    n = U._data.shape[-1]
    if m == n:
        return _lu_square_bw(L, U, gL, gU)
    if m < n:
        # A = P L [U1 U2]: U2 = L^{-1} P^T A2 adds L^{-T} gU2 to A2 and -L^{-T} gU2 U2^T to L
        U1, U2 = U[..., :, :m], U[..., :, m:]
        gU1, gU2 = gU[..., :, :m], gU[..., :, m:]
        W = _solve_triangular(L.mT, gU2, True, True, True)
        return cat([_lu_square_bw(L, U1, (gL - W @ U2.mT).tril(-1), gU1), W], -1)
    # P^T A = [L1; L2] U: L2 = A2 U^{-1} adds gL2 U^{-T} to A2 and -L2^T gL2 U^{-T} to U
    L1, L2 = L[..., :n, :], L[..., n:, :]
    gL1, gL2 = gL[..., :n, :], gL[..., n:, :]
    W = _solve_triangular(U.mT, gL2, False, False, False)
    return cat([_lu_square_bw(L1, U, gL1, (gU - L2.mT @ W).triu()), W], -2)


def _lu_factor_bw(g: Tensor, saved: Any, pivot: bool) -> Any:
    LU, pivots = saved.LU, saved.pivots
    m, n = LU._data.shape[-2:]
    k = min(m, n)
    L, U = _unpack_LU(LU)
    gA = _lu_grad(L, U, g[..., :, :k].tril(-1), g[..., :k, :].triu())
    return _p_const(LU, pivots) @ gA if pivot else gA


LU_FACTOR = node("LinalgLuFactorExBackward0", _lu_factor_bw, saved=("LU", "pivots"),
                 getters={"pivot": lambda saved, ctx: ctx})


def _lu_checks(fname: str, A: Tensor, pivot: bool) -> None:
    d = A._data
    if d.ndim < 2:
        raise RuntimeError(f"{fname}: Expected tensor with 2 or more dimensions. Got size: {list(d.shape)} instead")
    if not pivot and A._backend.DEVICE_TYPE == "cpu":
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    _float_kernel("lu", A)


def _lu(A: Tensor, pivot: bool) -> Tuple[Tensor, Tensor, Tensor]:
    """(LU, pivots, info) of getrf, LU recorded as LinalgLuFactorExBackward0."""
    _lu_checks("torch.lu_factor", A, pivot)
    lu, piv, info = _getrf_arrays(A._backend, A._data, pivot)
    LU, pivots = const(lu), const(piv)
    LU = _core_multi(LU_FACTOR, (LU,), (A,), pivot, LU=LU, pivots=pivots)[0]
    return LU, pivots, const(info)


def _raise_lu_info(fname: str, info: Tensor, batched: bool) -> None:
    """torch's RuntimeError of lu_factor for the first matrix whose getrf found a zero pivot."""
    if not bool((info._data != 0).any()):
        return
    i, v = _first_failure(info._data)
    where_ = f"(Batch element {i}): " if batched else ""
    raise RuntimeError(f"{fname}: {where_}U[{v},{v}] is zero and using it on lu_solve would result in a division "
                       "by zero. If you still want to perform the factorization, consider calling linalg.lu(A, "
                       "pivot) or linalg.lu_factor_ex(A, pivot)")


@op(linalg="lu_factor", grad_fn="LinalgLuFactorExBackward0")
def linalg_lu_factor(A: Tensor, *, pivot: bool = True) -> Any:  # noqa: N803
    """(LU, pivots): the LU factorization with partial pivoting packed as LAPACK's getrf (L's
    strictly lower part and U in LU; the 1-based int32 row swaps), batched.

    Args:
        A (Tensor): matrices (..., m, n), float32 or float64.
        pivot (bool, optional): keyword-only; pivot rows (False is refused on the CPU, as
            torch). Default: True.

    A zero pivot (a singular square matrix) raises torch's RuntimeError; linalg.lu_factor_ex
    reports it instead. The gradient flows through LU.

    Example::

        >>> rustgrad.linalg.lu_factor(rustgrad.tensor([[1., 2.], [3., 4.]])).pivots
        tensor([2, 2], dtype=torch.int32)
    """
    LU, pivots, info = _lu(A, pivot)
    _raise_lu_info("torch.linalg.lu_factor", info, A._data.ndim > 2)
    return return_types.linalg_lu_factor(LU, pivots)


@op(linalg="lu_factor_ex", grad_fn="LinalgLuFactorExBackward0", args_like=linalg_lu_factor)
def linalg_lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False) -> Any:  # noqa: N803
    """(LU, pivots, info): linalg.lu_factor with getrf's int32 info per matrix (0, or the
    1-based step of the first zero pivot), raising for it only with check_errors.

    Args:
        check_errors (bool, optional): keyword-only; raise for a nonzero info. Default: False.

    Example::

        >>> rustgrad.linalg.lu_factor_ex(rustgrad.tensor([[1., 2.], [2., 4.]])).info
        tensor(2, dtype=torch.int32)
    """
    LU, pivots, info = _lu(A, pivot)
    if check_errors:
        _raise_lu_info("torch.linalg.lu_factor_ex", info, A._data.ndim > 2)
    return return_types.linalg_lu_factor_ex(LU, pivots, info)


def _linalg_lu_bw(grads: Any, saved: Any, pivot: bool) -> Any:
    gL, gU = grads
    P, L, U = saved.P, saved.L, saved.U
    xp, dt = L._backend, L._data.dtype
    gL = _zeros_const(xp, tuple(L._data.shape), dt) if gL is None else gL.tril(-1)
    gU = _zeros_const(xp, tuple(U._data.shape), dt) if gU is None else gU.triu()
    gA = _lu_grad(L, U, gL, gU)
    return P @ gA if pivot else gA


LINALG_LU = node("LinalgLuBackward0", _linalg_lu_bw, saved=("P", "L", "U"),
                 getters={"pivot": lambda saved, ctx: ctx})


@op(linalg="lu", grad_fn="LinalgLuBackward0")
def linalg_lu(A: Tensor, *, pivot: bool = True) -> Any:  # noqa: N803
    """(P, L, U) with A = P L U: the LU factorization with partial pivoting, unpacked (P the
    permutation matrix m x m, L unit lower m x k, U upper k x n, k = min(m, n)), batched.

    Args:
        A (Tensor): matrices (..., m, n), float32 or float64.
        pivot (bool, optional): keyword-only; pivot rows. False (on CUDA only, as torch) gives
            A = L U and an empty P. Default: True.

    A singular matrix does not raise (U has a zero on its diagonal). The gradient flows through
    L and U.

    Example::

        >>> P, L, U = rustgrad.linalg.lu(rustgrad.tensor([[1., 2.], [3., 4.]]))
        >>> P @ L @ U
        tensor([[1., 2.],
                [3., 4.]])
    """
    _lu_checks("linalg.lu", A, pivot)
    xp, d = A._backend, A._data
    m, n = d.shape[-2:]
    k = min(m, n)
    lu, piv, _ = _getrf_arrays(xp, d, pivot)
    if pivot:
        P = const(_p_matrix(xp, _permutation(xp, piv, m), d.dtype))
    else:
        P = const(xp.zeros((0,), dtype=d.dtype))
    low = xp.ascontiguousarray(xp.tril(lu[..., :, :k], -1) + xp.eye(m, k, dtype=d.dtype))
    up = xp.ascontiguousarray(xp.triu(lu[..., :k, :]))
    L, U = const(low), const(up)
    L, U = _core_multi(LINALG_LU, (L, U), (A,), pivot, P=P, L=L, U=U)
    return return_types.linalg_lu(P, L, U)


@op(function="lu", grad_fn="LinalgLuFactorExBackward0")
def lu(A: Tensor, pivot: bool = True, get_infos: bool = False) -> Any:  # noqa: N803
    """(LU, pivots), or (LU, pivots, info) with get_infos: the LU factorization with partial
    pivoting packed as LAPACK's getrf (deprecated in torch for linalg.lu_factor).

    Args:
        A (Tensor): matrices (..., m, n), float32 or float64.
        pivot (bool, optional): pivot rows (False is refused on the CPU, as torch). Default: True.
        get_infos (bool, optional): also return getrf's int32 info per matrix. Default: False.

    A singular matrix does not raise: its info is the step of the first zero pivot.

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     LU, pivots = rustgrad.lu(rustgrad.tensor([[1., 2.], [3., 4.]]))
        >>> pivots
        tensor([2, 2], dtype=torch.int32)
    """
    _warn_once("lu", (
        "torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will be "
        "removed in a future PyTorch release.\nLU, pivots = torch.lu(A, compute_pivots)\nshould be replaced "
        "with\nLU, pivots = torch.linalg.lu_factor(A, compute_pivots)\nand\nLU, pivots, info = torch.lu(A, "
        "compute_pivots, get_infos=True)\nshould be replaced with\nLU, pivots, info = "
        "torch.linalg.lu_factor_ex(A, compute_pivots)"))
    LU, pivots, info = _lu(A, pivot)
    return return_types._lu_with_info(LU, pivots, info) if get_infos else (LU, pivots)


@op(method="lu", grad_fn="LinalgLuFactorExBackward0")
def lu_method(self: Tensor, pivot: bool = True, get_infos: bool = False) -> Any:
    """Tensor.lu: torch.lu of self, its results as a plain tuple (LU, pivots[, info]).

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     len(rustgrad.eye(2).lu(get_infos=True))
        3
    """
    out = lu(self, pivot, get_infos)
    return tuple(out)


# ---- lu_solve ------------------------------------------------------------------------------------------
def _lu_solve_arrays(xp: Any, lu: Any, piv: Any, b: Any, adjoint: bool) -> Any:
    """X with A X = b (A^T X = b with adjoint) for A = P L U given by getrf's packed lu and
    pivots, the batch dims broadcast."""
    n = lu.shape[-1]
    batch = tuple(xp.broadcast_shapes(tuple(lu.shape[:-2]), tuple(b.shape[:-2])))
    perm = xp.broadcast_to(_permutation(xp, piv, n), batch + (n,))
    rhs = xp.broadcast_to(b, batch + tuple(b.shape[-2:]))
    if not adjoint:  # X = U^{-1} L^{-1} P^T b
        y = _solve_tri(xp, lu, xp.take_along_axis(rhs, perm[..., :, None], axis=-2), False, False, True)
        return _solve_tri(xp, lu, y, True, False, False)
    # X = P L^{-T} U^{-T} b
    y = _solve_tri(xp, lu, rhs, True, True, False)
    z = _solve_tri(xp, lu, y, False, True, True)
    return xp.take_along_axis(z, xp.argsort(perm, axis=-1)[..., :, None], axis=-2)


def _lu_solve_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    left, adjoint = ctx
    LU, pivots, X = saved.LU, saved.pivots, saved.result
    # B's gradient solves the adjoint system; A's (A = P L U) is -gB X^T for A X = B, -X gB^T
    # for A^T X = B, -X^T gB for X A = B and -gB^T X for X A^T = B, taken to L's strictly
    # lower part and U's upper part
    gB = _lu_solve(LU, pivots, g, left, not adjoint)
    if left:
        gA = -(X @ gB.mT) if adjoint else -(gB @ X.mT)
    else:
        gA = -(gB.mT @ X) if adjoint else -(X.mT @ gB)
    L, U = _unpack_LU(LU)
    ptga = _p_const(LU, pivots).mT @ gA
    return (ptga @ U.mT).tril(-1) + (L.mT @ ptga).triu(), gB


LU_SOLVE = node("LinalgLuSolveBackward0", _lu_solve_bw, saved=("LU", "pivots"), result=True,
                getters={"left": lambda saved, ctx: ctx[0], "adjoint": lambda saved, ctx: ctx[1]})


def _lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, left: bool, adjoint: bool) -> Tensor:
    """linalg.lu_solve's solution, recorded with its node (its checks done)."""
    xp, lu, piv, b = B._backend, LU._data, pivots._data, B._data
    if left:
        x = _lu_solve_arrays(xp, lu, piv, b, adjoint)
    else:  # X A = B is A^T X^T = B^T (X A^T = B: A X^T = B^T)
        x = _lu_solve_arrays(xp, lu, piv, b.swapaxes(-1, -2), not adjoint).swapaxes(-1, -2)
    return LU_SOLVE.record(xp.ascontiguousarray(x), (LU, B), (left, adjoint), LU=LU, pivots=pivots)


def _lu_solve_checks(LU: Tensor, pivots: Tensor, B: Tensor, left: bool) -> None:
    """torch's checks of linalg.lu_solve's arguments, in its order."""
    ld, pd, bd = LU._data, pivots._data, B._data
    _check_square(LU, "torch.linalg.lu_solve: ")
    if not _dtype.is_floating_np(ld.dtype):
        raise NotImplementedError("torch.linalg.lu_solve: Expected a floating point or complex tensor as "
                                  f"input. Got {_type_name(ld)}")
    n = ld.shape[-1]
    if pd.ndim == 0 or pd.shape[-1] != n:
        raise RuntimeError("linalg.lu_solve: Number of pivots per batch should be same as the dimension of "
                           "the matrix")
    if pd.dtype.kind != "i" or pd.dtype.itemsize != 4:
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32")
    if tuple(pd.shape) != tuple(ld.shape[:-1]):
        raise RuntimeError("linalg.lu_solve: Expected LU.shape[:-1] and pivots.shape to be the same, but "
                           f"got pivots with shape {list(pd.shape)} instead")
    if bd.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    if (bd.shape[-2] if left else bd.shape[-1]) != n:
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {bd.shape[-2]}x{bd.shape[-1]})")
    same_device(ld, bd)
    if ld.dtype != bd.dtype:
        raise RuntimeError("linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type "
                           f"{_type_name(ld)} and B of type {_type_name(bd)} instead")
    _batch(B._backend, ld, bd)
    _float_kernel("linalg.lu_solve", LU)
    if pd.size:
        if bool((pd > n).any()):
            raise RuntimeError("Pivots given to lu_solve must all be smaller or equal to LU.size(-2). Did you "
                               "properly pass the result of lu_factor?")
        if bool((pd < 1).any()):
            raise RuntimeError("Pivots given to lu_solve must all be greater or equal to 1. Did you properly "
                               "pass the result of lu_factor?")


@op(method="lu_solve", function="lu_solve", grad_fn="LinalgLuSolveBackward0", autocast=dict(cpu="fp32"))
def lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:  # noqa: N803
    """X with A X = b from A's LU factorization (lu's LU and pivots), batched and broadcast
    (deprecated in torch for linalg.lu_solve).

    Args:
        b (Tensor): the right-hand sides (..., n, k).
        LU_data (Tensor): the packed LU factors (..., n, n).
        LU_pivots (Tensor): their int32 pivots (..., n).

    Example::

        >>> import warnings
        >>> A = rustgrad.tensor([[1., 2.], [3., 4.]])
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     rustgrad.lu_solve(A @ rustgrad.tensor([[1.], [1.]]), *rustgrad.lu(A))
        tensor([[1.0000],
                [1.0000]])
    """
    _warn_once("lu_solve", (
        "torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be removed in a future "
        "PyTorch release.\nNote that torch.linalg.lu_solve has its arguments reversed.\nX = "
        "torch.lu_solve(B, LU, pivots)\nshould be replaced with\nX = torch.linalg.lu_solve(LU, pivots, B)"))
    _lu_solve_checks(LU_data, LU_pivots, b, True)
    return _lu_solve(LU_data, LU_pivots, b, True, False)


@op(linalg="lu_solve", grad_fn="LinalgLuSolveBackward0")
def linalg_lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True,  # noqa: N803
                    adjoint: bool = False) -> Tensor:
    """X with A X = B (A^T X = B with adjoint; X A = B, X A^T = B with left=False) from A's
    LU factorization (linalg.lu_factor's LU and pivots), batched and broadcast.

    Args:
        LU (Tensor): the packed LU factors (..., n, n).
        pivots (Tensor): their int32 pivots (..., n).
        B (Tensor): the right-hand sides (..., n, k), or (..., k, n) with left=False.
        left (bool, optional): keyword-only; solve A X = B (True) or X A = B. Default: True.
        adjoint (bool, optional): keyword-only; solve with A's transpose. Default: False.

    The gradient flows to LU and B.

    Example::

        >>> A = rustgrad.tensor([[1., 2.], [3., 4.]])
        >>> LU, pivots = rustgrad.linalg.lu_factor(A)
        >>> rustgrad.linalg.lu_solve(LU, pivots, rustgrad.tensor([[5.], [11.]]))
        tensor([[1.],
                [2.]])
    """
    _lu_solve_checks(LU, pivots, B, left)
    return _lu_solve(LU, pivots, B, left, adjoint)


def _lu_unpack_bw(grads: Any, saved: Any, ctx: Any) -> Any:
    gL, gU = grads
    m, n = ctx
    k = min(m, n)
    out = None
    # (with unpack_data=False L and U are empty vectors, and triu/tril refuse their gradients)
    if gU is not None:
        part = gU.triu()
        if k < m:
            part = cat([part, _zeros_const(gU._backend, (*part.shape[:-2], m - k, n), gU._data.dtype)], -2)
        out = part
    if gL is not None:
        part = gL.tril(-1)
        if k < n:
            part = cat([part, _zeros_const(gL._backend, (*part.shape[:-1], n - k), gL._data.dtype)], -1)
        out = part if out is None else out + part
    return out


LU_UNPACK = node("LuUnpackBackward0", _lu_unpack_bw, getters={
    "LU_data_sym_argsize_minus_1": lambda saved, ctx: ctx[1],
    "LU_data_sym_argsize_minus_2": lambda saved, ctx: ctx[0]})


@op(function="lu_unpack", grad_fn="LuUnpackBackward0")
def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,  # noqa: N803
              unpack_pivots: bool = True) -> Any:
    """(P, L, U) with A = P L U, from lu's packed factors and pivots.

    Args:
        LU_data (Tensor): the packed factors (..., m, n).
        LU_pivots (Tensor): their int32 pivots (..., min(m, n)).
        unpack_data (bool, optional): return L and U (else empty tensors). Default: True.
        unpack_pivots (bool, optional): return P (else an empty tensor). Default: True.

    Returns torch.return_types.lu_unpack; L (m x k) and U (k x n) carry the gradient to LU_data.

    Example::

        >>> pivots = rustgrad.tensor([2, 2], dtype=rustgrad.int32)
        >>> P, L, U = rustgrad.lu_unpack(rustgrad.tensor([[3., 4.], [1/3, 2/3]]), pivots)
        >>> P @ L @ U
        tensor([[1., 2.],
                [3., 4.]])
    """
    LU, pivots = LU_data, LU_pivots
    ld, pd = LU._data, pivots._data
    if ld.ndim < 2:
        if _core.is_grad_enabled() and LU.requires_grad:  # torch's autograd reads the sizes first
            raise IndexError(f"Dimension out of range (expected to be in range of [{-max(ld.ndim, 1)}, "
                             f"{max(ld.ndim, 1) - 1}], but got -2)")
        raise RuntimeError(f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(ld.shape)} instead")
    if pd.dtype.kind != "i" or pd.dtype.itemsize != 4:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 "
                           "dtype.\nNote: this function is intended to be used with the output produced by "
                           "torch.linalg.lu_factor")
    m, n = ld.shape[-2:]
    k = min(m, n)
    expected = tuple(ld.shape[:-2]) + (k,)
    if tuple(pd.shape) != expected:
        raise ValueError(f"Expected LU_pivots to have shape {list(expected)} but got {list(pd.shape)} instead.")
    same_device(ld, pd)
    xp = LU._backend
    if unpack_pivots:
        if pd.size and bool(((pd < 1) | (pd > m)).any()):
            raise RuntimeError("pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive.Did you "
                               "properly pass the result of lu_factor?")
        P = const(_p_matrix(xp, _permutation(xp, pd, m), ld.dtype))
    else:
        P = const(xp.zeros((0,), dtype=ld.dtype))
    if unpack_data:
        eye = xp.eye(m, k, dtype=ld.dtype)
        low = xp.tril(ld[..., :, :k], -1) + eye
        up = xp.triu(ld[..., :k, :])
        low, up = xp.ascontiguousarray(low.astype(ld.dtype, copy=False)), xp.ascontiguousarray(up)
    else:
        low = xp.zeros((0,), dtype=ld.dtype)
        up = xp.zeros((0,), dtype=ld.dtype)
    L, U = _core_multi(LU_UNPACK, (const(low), const(up)), (LU,), (m, n))
    return return_types.lu_unpack(P, L, U)


# ---- LDL^T (Bunch-Kaufman) ---------------------------------------------------------------------
_BK_ALPHA = (1 + math.sqrt(17)) / 8  # Bunch-Kaufman's growth bound


def _sytf2(xp: Any, a: Any) -> Tuple[Any, List[int], int]:
    """LAPACK's unblocked sytrf (dsytf2, lower) of one symmetric matrix, from its lower
    triangle: (LD, pivots, info). LD holds D's 1x1 and 2x2 diagonal blocks and the multipliers
    below them; pivots are 1-based, k for a 1x1 block whose row and column k were swapped with
    k's, -k on both rows of a 2x2 block whose second row was swapped with k's; info is the first
    step whose pivot column is zero (the factorization goes on), 0 when there is none."""
    n = a.shape[-1]
    w = xp.tril(a).copy()
    piv = [0] * n
    info = 0
    k = 0
    with quiet_fp(xp):
        while k < n:
            kstep, kp = 1, k
            absakk = abs(float(w[k, k]))
            imax, colmax = k, 0.0
            if k + 1 < n:
                imax = k + 1 + int(xp.argmax(xp.abs(w[k + 1:, k])))
                colmax = abs(float(w[imax, k]))
            if max(absakk, colmax) == 0 or math.isnan(absakk):
                info = info or k + 1
            else:
                if absakk < _BK_ALPHA * colmax:
                    # the largest off-diagonal magnitude in row (and column) imax
                    rowmax = float(xp.abs(w[imax, k:imax]).max())
                    if imax + 1 < n:
                        rowmax = max(rowmax, float(xp.abs(w[imax + 1:, imax]).max()))
                    if absakk >= _BK_ALPHA * colmax * (colmax / rowmax):
                        kp = k
                    elif abs(float(w[imax, imax])) >= _BK_ALPHA * rowmax:
                        kp = imax
                    else:
                        kp, kstep = imax, 2
                kk = k + kstep - 1
                if kp != kk:  # swap rows and columns kk and kp of the trailing lower triangle
                    if kp + 1 < n:
                        w[kp + 1:, [kk, kp]] = w[kp + 1:, [kp, kk]]
                    seg = w[kk + 1:kp, kk].copy()
                    w[kk + 1:kp, kk] = w[kp, kk + 1:kp]
                    w[kp, kk + 1:kp] = seg
                    w[[kk, kp], [kk, kp]] = w[[kp, kk], [kp, kk]]
                    if kstep == 2:
                        w[[k + 1, kp], k] = w[[kp, k + 1], k]
                if kstep == 1:
                    if k + 1 < n:
                        # dsyr's rank-1 update A -= x x^T / d, then the multipliers x / d
                        d11 = 1 / w[k, k]
                        x = w[k + 1:, k].copy()
                        w[k + 1:, k + 1:] += x[:, None] * (-d11 * x)[None, :]
                        w[k + 1:, k] = d11 * x
                elif k + 2 < n:
                    d21 = w[k + 1, k]
                    d11 = w[k + 1, k + 1] / d21
                    d22 = w[k, k] / d21
                    t = 1 / (d11 * d22 - 1)
                    d21 = t / d21
                    c0, c1 = w[k + 2:, k].copy(), w[k + 2:, k + 1].copy()
                    wk = d21 * (d11 * c0 - c1)
                    wkp1 = d21 * (d22 * c1 - c0)
                    w[k + 2:, k + 2:] = w[k + 2:, k + 2:] - c0[:, None] * wk[None, :] - c1[:, None] * wkp1[None, :]
                    w[k + 2:, k] = wk
                    w[k + 2:, k + 1] = wkp1
            if kstep == 1:
                piv[k] = kp + 1
            else:
                piv[k] = piv[k + 1] = -(kp + 1)
            k += kstep
    return xp.tril(w), piv, info


def _ldl_arrays(xp: Any, a: Any) -> Tuple[Any, Any, Any]:
    """(LD, pivots, info) of sytrf for each matrix of the batch `a` (..., n, n)."""
    n = a.shape[-1]
    batch = tuple(a.shape[:-2])
    flat = a.reshape((math.prod(batch), n, n))
    lds, pivs, infos = [], [], []
    for i in range(flat.shape[0]):
        ld, piv, info = _sytf2(xp, flat[i])
        lds.append(ld)
        pivs.append(piv)
        infos.append(info)
    ld = xp.stack(lds) if lds else xp.zeros((0, n, n), dtype=a.dtype)
    piv_arr = xp.asarray(pivs, dtype=xp.int32).reshape(batch + (n,))
    return (xp.ascontiguousarray(ld.reshape(batch + (n, n))), piv_arr,
            xp.asarray(infos, dtype=xp.int32).reshape(batch))


def _sytrs(xp: Any, ld: Any, piv: Any, b: Any) -> Any:
    """LAPACK's sytrs (lower) for one factorization: X with A X = b, A = P L D L^T P^T given by
    sytrf's LD and pivots (a host list)."""
    n = ld.shape[-1]
    x = b.copy()
    with quiet_fp(xp):
        k = 0
        while k < n:  # L D y = P^T b, a block of D at a time
            if piv[k] > 0:
                kp = piv[k] - 1
                if kp != k:
                    x[[k, kp]] = x[[kp, k]]
                x[k + 1:] -= ld[k + 1:, k, None] * x[None, k]
                x[k] = x[k] / ld[k, k]
                k += 1
            else:
                kp = -piv[k] - 1
                if kp != k + 1:
                    x[[k + 1, kp]] = x[[kp, k + 1]]
                if k + 2 < n:
                    x[k + 2:] -= ld[k + 2:, k, None] * x[None, k]
                    x[k + 2:] -= ld[k + 2:, k + 1, None] * x[None, k + 1]
                akm1k = ld[k + 1, k]
                akm1 = ld[k, k] / akm1k
                ak = ld[k + 1, k + 1] / akm1k
                denom = akm1 * ak - 1
                bkm1 = x[k] / akm1k
                bk = x[k + 1] / akm1k
                x[k] = (ak * bkm1 - bk) / denom
                x[k + 1] = (akm1 * bk - bkm1) / denom
                k += 2
        k = n - 1
        while k >= 0:  # L^T P^T x = y
            if piv[k] > 0:
                if k + 1 < n:
                    x[k] -= ld[k + 1:, k] @ x[k + 1:]
                kp = piv[k] - 1
                if kp != k:
                    x[[k, kp]] = x[[kp, k]]
                k -= 1
            else:
                if k + 1 < n:
                    x[k] -= ld[k + 1:, k] @ x[k + 1:]
                    x[k - 1] -= ld[k + 1:, k - 1] @ x[k + 1:]
                kp = -piv[k] - 1
                if kp != k:
                    x[[k, kp]] = x[[kp, k]]
                k -= 2
    return x


def _ldl_factor(A: Tensor, check_errors: bool, fname: str) -> Tuple[Tensor, Tensor, Tensor]:
    _check_square(A, "torch.linalg.ldl_factor_ex: ")
    if not _dtype.is_floating_np(A._data.dtype):
        raise NotImplementedError("torch.linalg.ldl_factor_ex: Expected a floating point or complex tensor as "
                                  f"input. Got {_type_name(A._data)}")
    _float_kernel("ldl_factor_kernel", A)
    ld, piv, info = _ldl_arrays(A._backend, A._data)
    if check_errors and bool((info != 0).any()):
        # torch has no message for sytrf's positive info (a zero block of D): its check reports
        # the code as unknown
        v = _first_failure(info)[1]
        raise RuntimeError(f"{fname}: Unknown error code: {v}. (D[{v},{v}] is exactly zero: the matrix is "
                           "singular)")
    LD = NOT_IMPLEMENTED.record(ld, (A,), "linalg_ldl_factor_ex")
    return LD, const(piv), const(info)


@op(linalg="ldl_factor", grad_fn="torch::autograd::NotImplemented")
def linalg_ldl_factor(A: Tensor, *, hermitian: bool = False) -> Any:  # noqa: N803
    """(LD, pivots): the LDL^T factorization of symmetric matrices with Bunch-Kaufman pivoting,
    packed as LAPACK's sytrf (D's 1x1 and 2x2 blocks and L's multipliers in LD's lower
    triangle; pivots 1-based int32, negative on both rows of a 2x2 block), batched.

    Args:
        A (Tensor): symmetric matrices (..., n, n), float32 or float64; only the lower
            triangle is read.
        hermitian (bool, optional): keyword-only; A is Hermitian (the same for real
            matrices). Default: False.

    A zero block of D raises RuntimeError (torch reports it as an unknown error code). It has
    no derivative (backward raises, as torch).

    Example::

        >>> LD, pivots = rustgrad.linalg.ldl_factor(rustgrad.tensor([[4., 2.], [2., 3.]]))
        >>> LD
        tensor([[4.0000, 0.0000],
                [0.5000, 2.0000]])
        >>> pivots
        tensor([1, 2], dtype=torch.int32)
    """
    LD, pivots, _ = _ldl_factor(A, True, "torch.linalg.ldl_factor")
    return return_types.linalg_ldl_factor(LD, pivots)


@op(linalg="ldl_factor_ex", grad_fn="torch::autograd::NotImplemented", args_like=linalg_ldl_factor)
def linalg_ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False) -> Any:  # noqa: N803
    """(LD, pivots, info): linalg.ldl_factor with sytrf's int32 info per matrix (0, or the
    1-based index of the first zero block of D), raising for it only with check_errors.

    Args:
        check_errors (bool, optional): keyword-only; raise for a nonzero info. Default: False.

    Example::

        >>> rustgrad.linalg.ldl_factor_ex(rustgrad.tensor([[0., 1.], [1., 0.]])).pivots
        tensor([-2, -2], dtype=torch.int32)
    """
    return return_types.linalg_ldl_factor_ex(*_ldl_factor(A, check_errors, "torch.linalg.ldl_factor_ex"))


@op(linalg="ldl_solve", grad_fn="torch::autograd::NotImplemented")
def linalg_ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False) -> Tensor:  # noqa: N803
    """X with A X = B from A's LDL^T factorization (linalg.ldl_factor's LD and pivots), batched
    and broadcast: LAPACK's sytrs.

    Args:
        LD (Tensor): the packed factors (..., n, n).
        pivots (Tensor): their integer pivots (..., n).
        B (Tensor): the right-hand sides (..., n, k), of LD's dtype.
        hermitian (bool, optional): keyword-only; as given to ldl_factor. Default: False.

    It has no derivative (backward raises, as torch).

    Example::

        >>> A = rustgrad.tensor([[4., 2.], [2., 3.]])
        >>> LD, pivots = rustgrad.linalg.ldl_factor(A)
        >>> rustgrad.linalg.ldl_solve(LD, pivots, A @ rustgrad.tensor([[1.], [-1.]]))
        tensor([[ 1.],
                [-1.]])
    """
    fname = "torch.linalg.ldl_solve"
    ld, pd, bd = LD._data, pivots._data, B._data
    _check_square(LD, f"{fname}: ")
    if not _dtype.is_floating_np(ld.dtype):
        raise NotImplementedError(f"{fname}: Expected a floating point or complex tensor as input. Got "
                                  f"{_type_name(ld)}")
    if bd.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(bd.ndim, 1)}, "
                         f"{max(bd.ndim, 1) - 1}], but got -2)")
    if tuple(pd.shape) != tuple(ld.shape[:-1]):
        raise RuntimeError(f"{fname}: Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots "
                           f"with shape {list(pd.shape)} instead")
    if pd.dtype.kind not in "iu":
        raise RuntimeError(f"{fname}: Expected pivots to be integers. Got {_type_name(pd)}")
    _check_solver(fname, B, LD)
    same_device(ld, pd)
    _float_kernel("ldl_solve_kernel", LD)
    n = ld.shape[-1]
    if pd.size:
        if bool((abs(pd) > n).any()):
            raise RuntimeError("Pivots given to ldl_solve must all satisfy |pivot| <= LD.size(-2). Did you "
                               "properly pass the result of ldl_factor?")
        if bool((abs(pd) < 1).any()):
            raise RuntimeError("Pivots given to ldl_solve must all satisfy |pivot| >= 1. Did you properly pass "
                               "the result of ldl_factor?")
    xp = LD._backend
    batch = _batch(xp, ld, bd)
    lds = xp.broadcast_to(ld, batch + (n, n)).reshape((-1, n, n))
    pivs = xp.broadcast_to(pd, batch + (n,)).reshape((-1, n))
    rhs = xp.broadcast_to(bd, batch + tuple(bd.shape[-2:])).reshape((-1,) + tuple(bd.shape[-2:]))
    outs = [_sytrs(xp, lds[i], [int(p) for p in pivs[i].tolist()], rhs[i]) for i in range(rhs.shape[0])]
    x = xp.stack(outs) if outs else xp.zeros(rhs.shape, dtype=ld.dtype)
    x = xp.ascontiguousarray(x.reshape(batch + tuple(bd.shape[-2:])))
    return NOT_IMPLEMENTED.record(x, (LD, B), "linalg_ldl_solve")


# ---- geqrf, orgqr, ormqr -------------------------------------------------------------------------
def _geqrf_arrays(xp: Any, a: Any) -> Tuple[Any, Any]:
    """LAPACK geqrf of each matrix of `a` (..., m, n): R on and above the diagonal, the
    Householder vectors below it (their leading 1 implied), and tau (..., min(m, n))."""
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = tuple(a.shape[:-2])
    r = xp.ascontiguousarray(a.reshape((math.prod(batch), m, n))).copy()
    nb = r.shape[0]
    tau = xp.zeros((nb, k), dtype=a.dtype)
    with quiet_fp(xp):
        for j in range(k):
            alpha = r[:, j, j].copy()
            x = r[:, j + 1:, j]
            xnorm = xp.sqrt((x * x).sum(-1)) if m - j - 1 else xp.zeros_like(alpha)
            moves = xnorm != 0
            beta = -xp.copysign(xp.hypot(alpha, xnorm), alpha)
            t = xp.where(moves, (beta - alpha) / xp.where(moves, beta, 1), 0).astype(a.dtype)
            scale = xp.where(moves, 1 / xp.where(moves, alpha - beta, 1), 0).astype(a.dtype)
            v = x * scale[:, None]
            r[:, j + 1:, j] = v
            r[:, j, j] = xp.where(moves, beta, alpha)
            tau[:, j] = t
            if j + 1 < n:
                full = xp.concatenate([xp.ones((nb, 1), dtype=a.dtype), v], axis=1)[:, :, None]
                sub = r[:, j:, j + 1:]
                w = (full * sub).sum(1, keepdims=True)
                # LAPACK's dlarf: w = C^T v, then C + v (-tau w) (dger's order of the products)
                r[:, j:, j + 1:] = sub + full * (-t[:, None, None] * w)
    return r.reshape(batch + (m, n)), tau.reshape(batch + (k,))


def _geqrf_bw(grads: Any, saved: Any, ctx: Any) -> Any:
    raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


GEQRF = node("GeqrfBackward0", _geqrf_bw)


@op(method="geqrf", function="geqrf", grad_fn="GeqrfBackward0", autocast=dict(cpu="fp32"))
def geqrf(input: Tensor) -> Any:
    """(a, tau): the QR factorization as LAPACK's geqrf keeps it: R on and above the diagonal of
    a, the Householder vectors below it, and their scales tau (see orgqr, ormqr).

    Args:
        input (Tensor): matrices (..., m, n), float32 or float64.

    Returns torch.return_types.geqrf. It has no derivative (as torch: backward raises).

    Example::

        >>> rustgrad.geqrf(rustgrad.tensor([[3., 1.], [4., 2.]])).a
        tensor([[-5.0000, -2.2000],
                [ 0.5000,  0.4000]])
    """
    d = input._data
    if d.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    _float_kernel("geqrf", input)
    a, tau = _geqrf_arrays(input._backend, d)
    return return_types.geqrf(*_core_multi(GEQRF, (const(a), const(tau)), (input,), None))


def _reflectors(xp: Any, a: Any, k: int) -> Any:
    """V (..., m, k): the Householder vectors of `a`'s first k columns, their leading 1 in place."""
    m = a.shape[-2]
    return xp.tril(a[..., :, :k], -1) + xp.eye(m, k, dtype=a.dtype)


def _reflect_arrays(xp: Any, a: Any, tau: Any, c: Any, left: bool, transpose: bool) -> Any:
    """Q c (Q^T c; c Q, c Q^T unless left) for Q = H_1 ... H_k, H_i = I - tau_i v_i v_i^T."""
    k = tau.shape[-1]
    V = _reflectors(xp, a, k)
    x = c.swapaxes(-1, -2) if not left else c
    if not left:
        transpose = not transpose
    x = xp.ascontiguousarray(x).copy()
    with quiet_fp(xp):
        for i in (range(k) if transpose else range(k - 1, -1, -1)):
            v = V[..., :, i:i + 1]
            x = x - tau[..., i:i + 1, None] * v * xp.matmul(v.swapaxes(-1, -2), x)
    return xp.ascontiguousarray(x.swapaxes(-1, -2) if not left else x)


def _reflect_grads(a: Tensor, tau: Tensor, C: Tensor, G: Tensor, left: bool,
                   transpose: bool) -> Tuple[Tensor, Tensor, Tensor]:
    """The gradients of Y = op(Q) C (C op(Q) unless left) for a, tau and C, in rustgrad ops:
    Y applies the reflectors one by one, X_{t+1} = X_t - tau v (v^T X_t), and each step's
    adjoint gives v's and tau's share."""
    if not left:
        C, G, transpose = C.mT, G.mT, not transpose
    xp, dt = a._backend, a._data.dtype
    m, ncols = a._data.shape[-2:]
    k = tau._data.shape[-1]
    V = a[..., :, :k].tril(-1) + _eye_const(xp, m, k, dt)
    order = list(range(k)) if transpose else list(range(k - 1, -1, -1))
    states = [C]
    for i in order:
        v = V[..., :, i:i + 1]
        X = states[-1]
        states.append(X - tau[..., i:i + 1].unsqueeze(-1) * (v @ (v.mT @ X)))
    gX = G
    gv: List[Any] = [None] * k
    gt: List[Any] = [None] * k
    for step in range(len(order) - 1, -1, -1):
        i = order[step]
        v = V[..., :, i:i + 1]
        X = states[step]
        t = tau[..., i:i + 1].unsqueeze(-1)
        w, u = v.mT @ X, v.mT @ gX
        gt[i] = -(u * w).sum(-1)
        gv[i] = -t * (gX @ w.mT + X @ u.mT)
        gX = gX - t * (v @ u)
    lead = tuple(G._data.shape[:-2])
    if k:
        ga = cat(gv, -1).tril(-1)
        gtau = cat(gt, -1)
    else:
        ga = _zeros_const(xp, lead + (m, 0), dt)
        gtau = _zeros_const(xp, lead + (0,), dt)
    if ncols > k:
        ga = cat([ga, _zeros_const(xp, tuple(ga.shape[:-1]) + (ncols - k,), dt)], -1)
    return ga, gtau, (gX.mT if not left else gX)


def _householder_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, tau = saved.input, saved.tau
    m, n = a._data.shape[-2:]
    E = _eye_const(a._backend, m, n, a._data.dtype)
    ga, gtau, _ = _reflect_grads(a, tau, E, g, True, False)
    return ga, gtau


HOUSEHOLDER = node("LinalgHouseholderProductBackward0", _householder_bw, saved=("input", "tau"), result=True)


def _check_tau(fname: str, input: Tensor, tau: Tensor) -> None:
    nd, td = input._data.ndim, tau._data.ndim
    if nd - td != 1:
        raise RuntimeError(f"{fname}: Expected tau to have one dimension less than input, but got tau.ndim "
                           f"equal to {td} and input.ndim is equal to {nd}")
    if nd > 2 and tuple(tau._data.shape[:-1]) != tuple(input._data.shape[:-2]):
        raise RuntimeError(f"{fname}: Expected batch dimensions of tau to be equal to input.shape[:-2], but "
                           f"got {list(tau._data.shape[:-1])}")


def _last(t: Tensor) -> int:
    if t._data.ndim == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    return int(t._data.shape[-1])


@op(method="orgqr", function="orgqr", linalg="householder_product", grad_fn="LinalgHouseholderProductBackward0",
    autocast=dict(cpu="fp32"))
def orgqr(input: Tensor, tau: Tensor) -> Tensor:
    """The first n columns of Q = H_1 ... H_k from geqrf's Householder vectors (input's columns,
    below the diagonal) and scales tau: LAPACK's orgqr (torch.orgqr, torch.linalg.householder_product).

    Args:
        input (Tensor): the Householder vectors (..., m, n), m >= n.
        tau (Tensor): their scales (..., k), k <= n.

    Example::

        >>> a, tau = rustgrad.geqrf(rustgrad.tensor([[3., 1.], [4., 2.]]))
        >>> rustgrad.orgqr(a, tau)
        tensor([[-0.6000, -0.8000],
                [-0.8000,  0.6000]])
    """
    fname = "torch.linalg.householder_product"
    d = input._data
    if d.ndim < 2:
        raise RuntimeError(f"{fname}: input must have at least 2 dimensions.")
    m, n = d.shape[-2:]
    if m < n:
        raise RuntimeError(f"{fname}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if n < _last(tau):
        raise RuntimeError(f"{fname}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    _check_tau(fname, input, tau)
    same_device(d, tau._data)
    if tau._data.dtype != d.dtype:
        raise RuntimeError(f"{fname}: tau dtype {_type_name(tau._data)} does not match input dtype "
                           f"{_type_name(d)}")
    _float_kernel("orgqr", input)
    xp = input._backend
    eye = xp.broadcast_to(xp.eye(m, n, dtype=d.dtype), d.shape)
    out = _reflect_arrays(xp, d, tau._data, eye, True, False)
    return HOUSEHOLDER.record(out, (input, tau), input=input, tau=tau)


def _ormqr_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    left, transpose = ctx
    return _reflect_grads(saved.self, saved.input2, saved.input3, g, left, transpose)


ORMQR = node("OrmqrBackward0", _ormqr_bw, saved=("self", "input2", "input3"), result=True,
             getters={"left": lambda saved, ctx: ctx[0], "transpose": lambda saved, ctx: ctx[1]})


@op(method="ormqr", function="ormqr", grad_fn="OrmqrBackward0", autocast=dict(cpu="fp32"))
def ormqr(input: Tensor, input2: Tensor, input3: Tensor, left: bool = True, transpose: bool = False) -> Tensor:
    """Q @ input3 (Q^T with transpose; input3 @ Q unless left) for Q = H_1 ... H_k given by
    geqrf's Householder vectors and scales, without forming Q: LAPACK's ormqr.

    Args:
        input (Tensor): the Householder vectors (..., m, n) (geqrf's a).
        input2 (Tensor): their scales tau (..., k).
        input3 (Tensor): the matrices Q multiplies (..., m, p), or (..., p, m) unless left.
        left (bool, optional): Q on the left. Default: True.
        transpose (bool, optional): Q transposed. Default: False.

    Example::

        >>> a, tau = rustgrad.geqrf(rustgrad.tensor([[3., 1.], [4., 2.]]))
        >>> rustgrad.ormqr(a, tau, rustgrad.eye(2), transpose=True)
        tensor([[-0.6000, -0.8000],
                [-0.8000,  0.6000]])
    """
    a, tau, other = input, input2, input3
    ad, td, od = a._data, tau._data, other._data
    if ad.ndim < 2:
        raise RuntimeError("torch.ormqr: input must have at least 2 dimensions.")
    if od.ndim < 2:
        raise RuntimeError("torch.ormqr: other must have at least 2 dimensions.")
    side = -2 if left else -1
    if od.shape[side] != ad.shape[-2]:
        raise RuntimeError(f"torch.ormqr: other.shape[{side}] must be equal to input.shape[-2]")
    if _last(tau) != min(od.shape[side], ad.shape[-1]):
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be equal to min(other.shape[{side}], "
                           "input.shape[-1])")
    if od.ndim != ad.ndim:
        raise RuntimeError("torch.ormqr: Expected other to have the same number of dimensions as input, but "
                           f"got other.ndim equal to {od.ndim} and input.ndim is equal to {ad.ndim}")
    _check_tau("torch.ormqr", a, tau)
    if ad.ndim > 2 and tuple(od.shape[:-2]) != tuple(ad.shape[:-2]):
        raise RuntimeError("torch.ormqr: Expected batch dimensions of other to be equal to input.shape[:-2], "
                           f"but got {list(od.shape[:-2])}")
    same_device(ad, td)
    same_device(ad, od)
    for name, t in (("tau", td), ("other", od)):
        if t.dtype != ad.dtype:
            raise RuntimeError(f"torch.ormqr: Expected input and {name} to have the same dtype, but input has "
                               f"dtype{_type_name(ad)} and {name} has dtype {_type_name(t)}")
    _float_kernel("ormqr", a)
    out = _reflect_arrays(a._backend, ad, td, od, left, transpose)
    return ORMQR.record(out, (a, tau, other), (left, transpose), self=a, input2=tau, input3=other)


# ---- removed functions torch still exposes -----------------------------------------------------
@op(method="eig", function="eig")
def eig(input: Tensor, eigenvectors: bool = False, *, e: Any = None, v: Any = None) -> Any:
    """Removed from torch (since 1.9): raises torch's RuntimeError pointing to linalg.eig."""
    raise _removed(
        "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than real tensors "
        "mimicking complex tensors.\n\nL, _ = torch.eig(A) should be replaced with:\nL_complex = "
        "torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, eigenvectors=True) should be replaced with:\n"
        "L_complex, V_complex = torch.linalg.eig(A)")


@op(method="symeig", function="symeig")
def symeig(input: Tensor, eigenvectors: bool = False, upper: bool = True, *, out: Any = None) -> Any:
    """Removed from torch (since 1.9): raises torch's RuntimeError pointing to linalg.eigh."""
    raise _removed(
        "The default behavior has changed from using the upper triangular portion of the matrix by default "
        "to using the lower triangular portion.\n\nL, _ = torch.symeig(A, upper=upper) should be replaced "
        "with:\nL = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\nL, V = torch.symeig(A, "
        "eigenvectors=True) should be replaced with:\nL, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')")


@op(method="lstsq", function="lstsq")
def lstsq(input: Tensor, A: Tensor, *, out: Any = None) -> Any:  # noqa: N803
    """Removed from torch (since 1.9): raises torch's RuntimeError pointing to linalg.lstsq."""
    raise _removed(
        "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n`torch.linalg.lstsq` has reversed "
        "arguments and does not return the QR decomposition in the returned tuple (although it returns other "
        "information about the problem).\n\nTo get the QR decomposition consider using `torch.linalg.qr`.\n\n"
        "The returned solution in `torch.lstsq` stored the residuals of the solution in the last m - n "
        "columns of the returned value whenever m > n. In torch.linalg.lstsq, the residuals are in the field "
        "'residuals' of the returned named tuple.\n\nThe unpacking of the solution, as in\nX, _ = "
        "torch.lstsq(B, A).solution[:A.size(1)]\nshould be replaced with:\nX = torch.linalg.lstsq(A, "
        "B).solution")


@op(method="solve", function="solve")
def solve(input: Tensor, A: Tensor, *, out: Any = None) -> Any:  # noqa: N803
    """Removed from torch (since 1.9): raises torch's RuntimeError pointing to linalg.solve."""
    raise _removed(
        "`torch.solve` is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` has its arguments "
        "reversed and does not return the LU factorization.\n\nTo get the LU factorization see `torch.lu`, "
        "which can be used with `torch.lu_solve` or `torch.lu_unpack`.\nX = torch.solve(B, A).solution "
        "should be replaced with:\nX = torch.linalg.solve(A, B)")


@op(function="matrix_rank")
def matrix_rank(input: Tensor, tol: Any = None, symmetric: bool = False, *, out: Any = None) -> Any:
    """Removed from torch (since 1.9): raises torch's RuntimeError pointing to linalg.matrix_rank."""
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed.\nPlease use the "
        "`torch.linalg.matrix_rank` function instead. The parameter 'symmetric' was renamed in "
        "`torch.linalg.matrix_rank()` to 'hermitian'.")


# ---- randomized low-rank SVD and PCA (Halko, Martinsson and Tropp, 2009) ---------------------------
def _floating(A: Tensor) -> Any:
    d = A._data
    return _dtype.from_np(d.dtype) if _dtype.is_floating_np(d.dtype) else _dtype.get_default_dtype()


def _range_basis(A: Tensor, q: int, niter: int, M: Optional[Tensor]) -> Tensor:
    """Q with q orthonormal columns whose span nearly holds the range of A - M: a Gaussian sketch
    (A - M) R, sharpened by niter rounds of subspace iteration, each step orthonormalized by QR
    (the paper's algorithm 4.4)."""
    def times(B: Tensor, M_: Optional[Tensor], X: Tensor) -> Tensor:
        return B @ X if M_ is None else B @ X - M_ @ X

    R = _creation.randn(int(A._data.shape[-1]), q, dtype=_floating(A), device=A.device)
    Q = linalg_qr(times(A, M, R)).Q
    Mt = None if M is None else M.mH
    for _ in range(niter):
        Q = linalg_qr(times(A.mH, Mt, Q)).Q
        Q = linalg_qr(times(A, M, Q)).Q
    return Q


@op(function="svd_lowrank", grad_fn=("MmBackward0", "LinalgSvdBackward0", "TransposeBackward0",
                                      "UnsafeViewBackward0"))
def svd_lowrank(A: Tensor, q: Optional[int] = 6, niter: Optional[int] = 2,  # noqa: N803
                M: Optional[Tensor] = None) -> Tuple[Tensor, Tensor, Tensor]:  # noqa: N803
    """(U, S, V) with A - M ≈ U diag(S) V^T of rank at most q, found by randomized projection (a
    random sketch of A's range, then the SVD of A projected on it): exact for matrices of rank
    q or less. The draw takes rustgrad's global generator.

    Args:
        A (Tensor): matrices (..., m, n).
        q (int, optional): the rank sought (a slight overestimate of A's). Default: 6.
        niter (int, optional): the rounds of subspace iteration sharpening the sketch. Default: 2.
        M (Tensor, optional): subtracted from A (broadcast to its shape) first. Default: None.

    Example::

        >>> A = rustgrad.tensor([[1., 2.], [2., 4.], [3., 6.]])
        >>> U, S, V = rustgrad.svd_lowrank(A, q=1)
        >>> (U * S) @ V.mT
        tensor([[1.0000, 2.0000],
                [2.0000, 4.0000],
                [3.0000, 6.0000]])
    """
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    m, n = tuple(A._data.shape[-2:])
    if M is not None:
        M = M.broadcast_to(tuple(A._data.shape))
    wide = m < n
    if wide:  # work on the transpose: the sketch is then the smaller side
        A = A.mH
        M = None if M is None else M.mH
    Q = _range_basis(A, q, niter, M)
    B = Q.mH @ A if M is None else Q.mH @ A - Q.mH @ M
    U, S, Vh = linalg_svd(B, full_matrices=False)
    V = Vh.mH
    U = Q @ U
    return (V, S, U) if wide else (U, S, V)


@op(function="pca_lowrank", grad_fn=("MmBackward0", "LinalgSvdBackward0", "TransposeBackward0",
                                      "UnsafeViewBackward0"))
def pca_lowrank(A: Tensor, q: Optional[int] = None, center: bool = True,  # noqa: N803
                niter: int = 2) -> Tuple[Tensor, Tensor, Tensor]:
    """(U, S, V): the principal components of the rows of A, as svd_lowrank of A with its
    column means taken away (center=False: of A itself); the components are V's columns.

    Args:
        A (Tensor): matrices (..., m, n), a sample per row.
        q (int, optional): the number of components, 0 <= q <= min(m, n). Default: min(6, m, n).
        center (bool, optional): subtract the column means first. Default: True.
        niter (int, optional): the rounds of subspace iteration. Default: 2.

    Example::

        >>> A = rustgrad.tensor([[1., 1.], [2., 2.], [3., 3.]])
        >>> U, S, V = rustgrad.pca_lowrank(A, q=1)
        >>> S
        tensor([2.])
    """
    m, n = tuple(A._data.shape[-2:])
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return svd_lowrank(A, q, niter=niter)
    return svd_lowrank(A - A.mean(dim=-2, keepdim=True), q, niter=niter)


# ---- lobpcg --------------------------------------------------------------------------------------
def _lobpcg_bw(grads: Any, saved: Any, ctx: Any) -> Any:
    gE, gX = grads
    largest, with_b = ctx
    if with_b:
        raise ValueError("lobpcg.backward does not support backward with B != I yet.")
    A, X = saved.A, saved.X
    xp = A._backend
    m, k = X._data.shape[-2:]
    # the exact derivative of k eigenpairs of a symmetric A (their eigenvalues distinct from the
    # rest): gA = X diag(gE) X^T + sum_i (sum_{j != i} u_j u_j^T / (l_i - l_j)) gX_i x_i^T, the
    # u_j, l_j all of A's eigenpairs
    lam, U = linalg_eigh(A)
    sel = list(range(m - 1, m - 1 - k, -1)) if largest else list(range(k))
    gA = None
    if gE is not None:
        gA = (X * gE.unsqueeze(-2)) @ X.mT
    if gX is not None:
        mask = xp.zeros((m, k), dtype=bool)
        mask[sel, list(range(k))] = True
        mask_t = const(mask)
        gap = lam[..., sel].unsqueeze(-2) - lam.unsqueeze(-1)
        F = where(mask_t, 0.0, 1.0 / where(mask_t, 1.0, gap))
        term = U @ ((U.mT @ gX) * F) @ X.mT
        gA = term if gA is None else gA + term
    return gA


LOBPCG = node("LOBPCGAutogradFunctionBackward", _lobpcg_bw, saved=("A", "E", "X"))


def _svqb(xp: Any, la: Any, S: Any, BS: Any, tau: float) -> Tuple[Any, Any]:
    """A B-orthonormal basis of S's columns (and B times it): the Gram matrix's eigenvectors
    scaled, the directions whose eigenvalues fall below tau times the largest dropped."""
    G = S.T @ BS
    d = xp.sqrt(xp.abs(xp.diagonal(G)))
    d = xp.where(d > 0, 1 / xp.where(d > 0, d, 1), 0)
    theta, Z = la.eigh(G * d[:, None] * d[None, :])
    keep = theta > tau * max(float(theta.max()), 0.0) if theta.size else theta > 0
    T = (d[:, None] * Z[:, keep]) / xp.sqrt(theta[keep])[None, :]
    return S @ T, BS @ T


_UNTIL_CONVERGED = 100000  # niter <= 0: torch iterates until the eigenpairs converge


def _lobpcg_one(xp: Any, la: Any, A: Any, B: Any, X: Any, iK: Any, k: int, niter: int, tol: float,
                largest: bool) -> Tuple[Any, Any]:
    """The k extreme eigenpairs of A x = l B x from the start X (m, n): locally optimal block
    preconditioned conjugate gradients (Knyazev, 2001), each step a Rayleigh-Ritz on the span of
    the current vectors, their residuals and the last search directions, kept B-orthonormal."""
    n = X.shape[-1]
    tau = float(xp.finfo(A.dtype).eps) * 10

    def bmul(V: Any) -> Any:
        return V if B is None else B @ V

    def ritz(S: Any, BS: Any) -> Tuple[Any, Any, Any, Any]:
        S, BS = _svqb(xp, la, S, BS, tau)
        AS = A @ S
        T = S.T @ AS
        theta, C = la.eigh((T + T.T) / 2)
        order = xp.argsort(-theta if largest else theta)[:n]
        C = C[:, order]
        return theta[order], S @ C, AS @ C, BS @ C

    E, X, AX, BX = ritz(X, bmul(X))
    P = None
    norm_a = float(xp.linalg.norm(A))
    norm_b = 1.0 if B is None else float(xp.linalg.norm(B))
    for _ in range(niter if niter > 0 else _UNTIL_CONVERGED):
        R = AX - BX * E[None, :]
        scale = (norm_a + xp.abs(E) * norm_b) * xp.linalg.norm(X, axis=0)
        err = xp.linalg.norm(R, axis=0) / xp.where(scale > 0, scale, 1)
        if bool((err[:k] < tol).all()):
            break
        W = R if iK is None else iK @ R
        blocks = [X, W] if P is None else [X, W, P]
        S = xp.concatenate(blocks, axis=1)
        E_new, X_new, AX, BX_new = ritz(S, bmul(S))
        # the new search directions: what the step added outside the old vectors' span
        P = X_new - X @ (BX.T @ X_new)
        E, X, BX = E_new, X_new, BX_new
    return E[:k], X[:, :k]


@op(function="lobpcg", grad_fn="LOBPCGAutogradFunctionBackward")
def lobpcg(A: Tensor, k: Optional[int] = None, B: Optional[Tensor] = None,  # noqa: N803
           X: Optional[Tensor] = None, n: Optional[int] = None, iK: Optional[Tensor] = None,  # noqa: N803
           niter: Optional[int] = None, tol: Optional[float] = None, largest: Optional[bool] = None,
           method: Optional[str] = None, tracker: Any = None, ortho_iparams: Any = None,
           ortho_fparams: Any = None, ortho_bparams: Any = None) -> Tuple[Tensor, Tensor]:
    """(E, X): the k largest (smallest with largest=False) eigenvalues of the symmetric
    positive-definite A (of A x = E B x with B) and their eigenvectors, by LOBPCG, batched.

    Args:
        A (Tensor): symmetric matrices (..., m, m), m >= 3 n.
        k (int, optional): the eigenpairs returned. Default: X's columns, else 1.
        B (Tensor, optional): the symmetric positive-definite right-hand matrix. Default: None.
        X (Tensor, optional): the starting vectors (..., m, n). Default: random (the global
            generator).
        n (int, optional): the size of the block iterated, n >= k. Default: k.
        iK (Tensor, optional): a preconditioner applied to the residuals. Default: None.
        niter (int, optional): the most iterations (0 or less: until converged). Default: 1000.
        tol (float, optional): the relative residual at which an eigenpair has converged.
            Default: the square root of the dtype's machine epsilon.
        largest (bool, optional): the largest eigenvalues (False: the smallest). Default: True.
        method, tracker, ortho_iparams, ortho_fparams, ortho_bparams: taken for torch's
            signature; this implementation has one method.

    The gradient is the eigenpairs' exact derivative for A (torch refuses one for B), through
    the symmetric part of A.

    Example::

        >>> E, X = rustgrad.lobpcg(rustgrad.diag(rustgrad.arange(1., 7.)), k=1)
        >>> E.round(decimals=4)
        tensor([6.])
    """
    ad = A._data
    grad = _core.is_grad_enabled() and (A.requires_grad or (B is not None and B.requires_grad))
    if grad:  # as torch: the eigenpairs of the symmetric part, so that the gradient is symmetric
        A = (A + A.mT) / 2
        B = None if B is None else (B + B.mT) / 2
    elif ad.ndim < 2:
        raise IndexError("tuple index out of range")
    ad = A._data
    if ad.shape[-1] != ad.shape[-2]:
        raise AssertionError(f"A must be square, got shape torch.Size({list(ad.shape)})")
    if B is not None and tuple(B._data.shape) != tuple(ad.shape):
        raise AssertionError(f"A and B must have same shape, got torch.Size({list(ad.shape)}) vs "
                             f"torch.Size({list(B._data.shape)})")
    dt = _floating(A)
    if ad.dtype != dt.np:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_dtype.cpp_name(_dtype.from_np(ad.dtype))} != {_dtype.cpp_name(dt)}")
    if tol is None:
        tol = (1.2e-07 if ad.dtype.itemsize == 4 else 2.23e-16) ** 0.5
    m = int(ad.shape[-1])
    k = (1 if X is None else int(X._data.shape[-1])) if k is None else k
    n = (k if n is None else n) if X is None else int(X._data.shape[-1])
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) is smaller "
                         f"than 3 x the number of requested eigenpairs (={n})")
    niter = 1000 if niter is None else niter
    big = True if largest is None else largest
    xp, la = A._backend, A._backend.linalg
    batch = tuple(ad.shape[:-2])
    count = int(math.prod(batch))
    a3 = ad.reshape((count, m, m))
    b3 = None if B is None else B._data.reshape((count, m, m))
    x3 = None if X is None else X._data.reshape((count, m, n))
    Es, Xs = [], []
    with quiet_fp(xp):
        for i in range(count):
            x0 = (_creation.randn(m, n, dtype=dt, device=A.device)._data if x3 is None
                  else x3[i].astype(ad.dtype, copy=False))
            e, x = _lobpcg_one(xp, la, a3[i], None if b3 is None else b3[i], x0,
                               None if iK is None else iK._data, k, niter, tol, big)
            Es.append(e)
            Xs.append(x)
    E_arr = xp.stack(Es).reshape(batch + (k,)).astype(ad.dtype, copy=False)
    X_arr = xp.stack(Xs).reshape(batch + (m, k)).astype(ad.dtype, copy=False)
    E_t, X_t = const(xp.ascontiguousarray(E_arr)), const(xp.ascontiguousarray(X_arr))
    inputs = (A,) if B is None else (A, B)
    E_t, X_t = _core_multi(LOBPCG, (E_t, X_t), inputs, (big, B is not None), A=A, E=E_t, X=X_t)
    return E_t, X_t
